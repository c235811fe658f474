//! Exports of a salvaged database: a Chroma store as JSON lines ready to re-upsert
//! ([`chroma`]), any table as CSV ([`csv`]), every BLOB as a file ([`blobs`]), and a timeline of its stored times in the
//! CSV Timesketch imports ([`timeline`]). Both read the database with SQLite,
//! read-only.

pub mod blobs;
pub mod chroma;
pub mod csv;
pub mod timeline;
pub mod xlsx;

pub use chroma::{Export, ExportSummary};
