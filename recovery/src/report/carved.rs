//! The `carved` section of the loss report (`recover --carve`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What the carving found, for the report.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CarvedReport {
    /// The table holding the carved records in the output (`salvage_carved`).
    pub registry: Option<String>,
    /// Records written to it.
    pub rows: u64,
    /// Per table the records are attributed to (`null`: unattributed) and source.
    pub by_source: Vec<CarvedCount>,
    /// Of the rows written, older versions of a live row (its rowid, other values).
    pub previous_versions: u64,
    /// Records found that are live rows as recovered: not deleted, not written.
    pub live_copies: u64,
    /// Records found more than once (the same table, rowid and values): written once.
    pub duplicates: u64,
    /// Per table with carved records, a view of them with the table's column names
    /// (`salvage_carved_TABLE`), by table.
    #[serde(default)]
    pub views: BTreeMap<String, String>,
}

/// Carved records of one table from one source.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CarvedCount {
    /// The table they are attributed to; `null` when unattributed.
    pub table: Option<String>,
    /// Where they were found: `freeblock`, `unallocated` or `freelist`.
    pub source: String,
    /// How many.
    pub rows: u64,
}
