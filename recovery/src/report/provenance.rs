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
}
