//! The `provenance` section of the loss report (`recover --provenance`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Where the rows of the output came from, for the report.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProvenanceReport {
    /// The table saying, of every row of a recovered rowid table, what it is and where it
    /// was read (`salvage_provenance`).
    pub registry: Option<String>,
    /// Rows it holds.
    pub rows: u64,
    /// Of those, rows read from the file (a page and a cell offset).
    pub rows_placed: u64,
    /// Per rowid table, the view of its live, rebuilt, carved and logged rows together,
    /// each with its status and provenance (`salvage_rows_TABLE`), by table.
    pub views: BTreeMap<String, String>,
    /// The time columns the views decode, each with the span of its tables' times.
    #[serde(default)]
    pub times: Vec<TimeSpan>,
}

/// A time column of a recovered table and the times its rows hold.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeSpan {
    /// The table.
    pub table: String,
    /// The column.
    pub column: String,
    /// Its epoch and unit (`unix_ms`, `webkit_us`, …).
    pub epoch: String,
    /// Why it is a time: `catalogue PROFILE`, or `inferred: …`.
    pub why: String,
    /// Rows holding a time in it (not NULL, not zero).
    pub values: u64,
    /// The earliest, as UTC ISO 8601 to the millisecond.
    pub first: Option<String>,
    /// The latest.
    pub last: Option<String>,
    /// Times outside 1980 to 2099, which an application cannot have written: a value in
    /// another unit, or a made-up one.
    pub implausible: u64,
}
