//! Exports of a salvaged database: a Chroma store as JSON lines ready to re-upsert
//! ([`chroma`]), any table as CSV ([`csv`]), every BLOB as a file ([`blobs`]), and a timeline of its stored times in the
//! CSV Timesketch imports ([`timeline`]). Both read the database with SQLite,
//! read-only.

pub mod blobs;
pub mod chroma;
pub mod csv;
pub mod timeline;
pub mod xlsx;

/// The registries a run wrote in its output, found by the list it made last, never by the
/// names a source's tables may share.
pub use crate::base::output::{registries, Registries, REGISTRY_LIST};
pub use chroma::{Export, ExportSummary};
