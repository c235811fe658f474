//! The loss report of a recovery. Schema: `docs/report.md`. Field order is the document's;
//! lists are in a stable order (schema order, page order). Absolute paths live only in
//! `run`. It serializes and deserializes: `salvage report` and the tests read it typed.

use reconstruct::{LossSignal, TableStatus, Verdict};
use serde::{Deserialize, Serialize};

use super::common::{FindingList, PageSizeEvidenceReport, Tool};

/// Version of the loss report's schema.
pub const FORMAT_VERSION: u32 = 1;

/// Entries listed per list at most; the counts beside each list are always complete.
pub const LISTED: usize = 1000;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LossReport {
    pub format_version: u32,
    pub tool: Tool,
    pub source: SourceProof,
    pub wal: WalReport,
    pub journal: JournalReport,
    pub geometry: Geometry,
    pub pages: PageSummary,
    pub schema: SchemaSource,
    pub tables: Vec<TableReport>,
    pub lost_and_found: LostAndFoundReport,
    pub placeholders: PlaceholderReport,
    pub partial_rows: PartialRowsReport,
    pub schema_objects: Vec<SchemaObject>,
    pub conflicts: Listed<ConflictReport>,
    pub flags: Verdict,
    pub evidence: FlagEvidence,
    pub warnings: Vec<String>,
    pub output: OutputState,
    pub run: RunPaths,
}

/// Proof that the source was not changed: size and SHA-256 before and after the run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SourceProof {
    pub size: u64,
    pub sha256_before: String,
    pub sha256_after: String,
    pub unchanged: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WalReport {
    /// Whether a write-ahead log was read.
    pub used: bool,
    /// What was done with it, as a sentence.
    pub note: String,
    pub frames_present: u32,
    pub frames_committed: u32,
    pub pages_from_wal: u64,
    /// The log is evidence too: hashed before and after the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256_before: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256_after: Option<String>,
    pub findings: FindingList,
}

/// What the run did with a rollback journal beside the source.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JournalReport {
    /// Whether a hot journal was rolled back (its original page images read instead of
    /// the main file's pages).
    pub rolled_back: bool,
    /// What was done with it, as a sentence.
    pub note: String,
    /// The journal has a valid header: its transaction never committed.
    pub hot: bool,
    pub records_valid: u32,
    pub records_ignored: u32,
    pub pages_restored: u64,
    /// The database size in pages before the interrupted transaction.
    pub pages_before: Option<u32>,
    /// The super-journal a multi-database transaction named, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub super_journal: Option<String>,
    /// The journal is evidence too: hashed before and after the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256_before: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256_after: Option<String>,
    pub findings: FindingList,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Geometry {
    pub page_size: u32,
    /// "header", "wal", "journal" or "inferred".
    pub page_size_source: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub page_size_evidence: Vec<PageSizeEvidenceReport>,
    pub reserved_space: u8,
    pub text_encoding: String,
    /// "header" or "inferred".
    pub text_encoding_source: String,
    pub page_count: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PageSummary {
    pub by_class: std::collections::BTreeMap<String, u32>,
    pub orphan_btree_pages: u32,
    pub damaged: Listed<DamagedPage>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DamagedPage {
    pub page: u32,
    pub class: String,
    pub why: Vec<String>,
}

/// A list with its complete count; at most [`LISTED`] entries are listed.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Listed<T> {
    pub count: u64,
    pub listed: Vec<T>,
}

impl<T> Default for Listed<T> {
    fn default() -> Self {
        Listed {
            count: 0,
            listed: Vec::new(),
        }
    }
}

impl<T> Listed<T> {
    pub fn push(&mut self, item: T) {
        self.count += 1;
        if self.listed.len() < LISTED {
            self.listed.push(item);
        }
    }
}

/// Where the schema came from.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SchemaSource {
    /// Schema rows used.
    pub rows: usize,
    /// Of those, rows found by scanning the file's table leaf pages, because the schema
    /// b-tree on page 1 is damaged.
    pub rows_found_by_scan: usize,
    /// Damage in the schema b-tree.
    pub findings: FindingList,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TableReport {
    pub name: String,
    /// "recovered": created and filled; "inferred": a table whose schema row is lost,
    /// created from its records' shape; "failed": present in the schema but its CREATE
    /// statement failed on the output; "skipped": not copied as data (internal or derived);
    /// "missing": a table the detected profile expects, absent from the schema.
    pub status: TableStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub root: Option<u32>,
    pub rows_written: u64,
    pub rows_from_tree: u64,
    pub rows_from_orphans: u64,
    pub rows_damaged: u64,
    pub cells_unreadable: u64,
    pub conflicts: u64,
    pub rejected_to_lost_and_found: u64,
    /// Placeholder rows synthesized in this table (listed under `placeholders`).
    pub placeholders: u64,
    /// Lost rows rebuilt from index entries and full-text copies alone (listed in
    /// `partial_rows.registry`).
    pub rows_partial: u64,
    /// Lost rows so proven that the table's constraints refused.
    pub partial_refused: u64,
    /// How many rows the table lost, when anything says it lost some.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_rows: Option<LostRows>,
    pub lost_subtrees: Vec<LostSubtree>,
    pub orphan_groups: Vec<OrphanGroupReport>,
    pub findings: FindingList,
}

/// Rows a table lost, as bounds with the evidence behind each number.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LostRows {
    /// At least this many rows are lost.
    pub lower_bound: u64,
    /// At most this many; `null` when nothing bounds it (an open rowid range, a lost root).
    pub upper_bound: Option<u64>,
    /// Rows whose rowid an index entry names but the output lacks: proven lost.
    pub proven_by_index: u64,
    /// Rows that only a full-text table's copy of their text names, missing from the
    /// output: proven lost.
    pub proven_by_text: u64,
    pub evidence: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LostSubtree {
    pub parent: u32,
    pub child: u32,
    pub rowid_above: Option<i64>,
    pub rowid_up_to: Option<i64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OrphanGroupReport {
    pub top: u32,
    pub pages: usize,
    pub cells: u64,
    pub rowids: Option<[i64; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<String>,
    pub evidence: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LostAndFoundReport {
    /// Name of the table in the output, when it has rows.
    pub table: Option<String>,
    pub rows: u64,
    /// Orphan groups no evidence could give a table.
    pub groups: Vec<OrphanGroupReport>,
    /// Orphan index-page groups: index data, rebuilt from the tables instead.
    pub index_groups: u64,
}

/// Lost rows rebuilt from their surviving index entries and full-text copies: those columns are known,
/// every other column is NULL. They are still counted in `lost_rows`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PartialRowsReport {
    /// The registry table in the output (`salvage_partial_rows`), when any row was made.
    pub registry: Option<String>,
    pub rows: u64,
    pub refused: u64,
}

/// Parent rows synthesized for children whose parent row is lost. Every one is fabricated:
/// it is also listed in the output's registry table.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PlaceholderReport {
    /// Profiles that applied: name and description.
    pub profiles: Vec<[String; 2]>,
    /// The registry table in the output (`salvage_placeholders`), when any row was made.
    pub registry: Option<String>,
    pub made: Listed<PlaceholderEntry>,
    /// Missing parents no placeholder could be made for.
    pub blocked: Listed<BlockedEntry>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PlaceholderEntry {
    pub table: String,
    pub rowid: i64,
    pub key: String,
    pub child_table: String,
    pub children: u64,
    pub filled_columns: Vec<String>,
    /// "foreign key", "profile NAME", or a declared key filled by a profile.
    pub relationship: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BlockedEntry {
    pub table: String,
    pub key: String,
    pub child_table: String,
    pub children: u64,
    pub reason: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SchemaObject {
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
    pub status: ObjectStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConflictReport {
    pub table: String,
    pub rowid: Option<i64>,
    /// The cell that was not written.
    pub dropped: String,
    pub reason: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FlagEvidence {
    /// Every sign of loss, with real counts, as a sentence; empty when none.
    pub loss: Vec<String>,
    /// The same signs, typed: `kind` and the counts, in the same order.
    #[serde(default)]
    pub signals: Vec<LossSignal>,
    /// What the output was checked against.
    pub verified: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OutputState {
    /// Whether DEST now exists, holding this run's output.
    pub committed: bool,
    /// Where the output is.
    pub location: OutputLocation,
}

/// Where a run's output is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputLocation {
    /// Committed: at DEST.
    Dest,
    /// Kept as DEST.incomplete, not committed.
    Incomplete,
    /// Nowhere yet.
    None,
}

/// What became of a schema object other than a table's rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjectStatus {
    /// Created on the output.
    Created,
    /// A virtual table refilled from canonical rows.
    Rebuilt,
    /// Its CREATE statement failed on the output.
    Failed,
    /// Not created (its table was not).
    Skipped,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunPaths {
    pub source_path: String,
    pub dest_path: String,
    pub report_path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_path: Option<String>,
}
