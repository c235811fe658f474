//! Exports of a salvaged database: a Chroma store as JSON lines ready to re-upsert
//! ([`chroma`]), and any table as CSV ([`csv`]). Both read the database with SQLite,
//! read-only.

pub mod chroma;
pub mod csv;

pub use chroma::{Export, ExportSummary};
