//! The loss report of a recovery. Schema: `docs/report.md`. Field order is the document's;
//! lists are in a stable order (schema order, page order). Absolute paths live only in
//! `run`. It serializes and deserializes: `salvage report` and the tests read it typed.

use reconstruct::{LossSignal, TableStatus, Verdict};
use serde::{Deserialize, Serialize};

use super::common::{FindingList, PageSizeEvidenceReport, Tool};

/// Version of the loss report's schema.
pub const FORMAT_VERSION: u32 = 2;

/// Entries listed per list at most; the counts beside each list are always complete.
pub const LISTED: usize = 1000;

/// The whole loss report `salvage recover` writes to `DEST.report.json` (or `--report
/// PATH`), whatever the outcome.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LossReport {
    /// Version of the report's schema ([`FORMAT_VERSION`]); changes whenever a field
    /// changes meaning or is removed.
    pub format_version: u32,
    /// The tool that wrote the report.
    pub tool: Tool,
    /// Proof that the evidence was not changed.
    pub source: SourceProof,
    /// What the run did with the write-ahead log.
    pub wal: WalReport,
    /// What the run did with a rollback journal beside the source (`SRC-journal`, or
    /// `--journal PATH`).
    pub journal: JournalReport,
    /// The page geometry and text encoding used, and where each came from.
    pub geometry: Geometry,
    /// Pages per class, orphan b-tree pages and the damaged pages.
    pub pages: PageSummary,
    /// Where the schema came from.
    pub schema: SchemaSource,
    /// The applications whose database this is, by the catalogue of application schemas:
    /// by the schema's tables, or by tables named from their records (page 1 lost).
    #[serde(default)]
    pub applications: Vec<crate::report::common::Identified>,
    /// Every table of `sqlite_schema` in schema order, then the inferred tables, then the
    /// tables a profile expects that the schema lacks (`missing`).
    pub tables: Vec<TableReport>,
    /// Rows no table could be given, and the orphan page groups they came from.
    pub lost_and_found: LostAndFoundReport,
    /// Parent rows synthesized for children whose parent row is lost.
    pub placeholders: PlaceholderReport,
    /// Lost rows rebuilt from surviving index entries and full-text copies.
    pub partial_rows: PartialRowsReport,
    /// Deleted records carved from free space (`recover --carve` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carved: Option<crate::report::carved::CarvedReport>,
    /// Every version of every row the write-ahead log and the journal hold (`recover
    /// --history` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<crate::report::history::HistoryReport>,
    /// What every row of a recovered rowid table is and where it was read, and the views
    /// of each table's rows with their provenance (`recover --provenance` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<crate::report::provenance::ProvenanceReport>,
    /// Values of written rows that are not in their tables as read (NULL there instead),
    /// registered with their reasons.
    #[serde(default)]
    pub damaged_fields: DamagedFieldsReport,
    /// What became of each index, view, trigger and virtual table.
    pub schema_objects: Vec<SchemaObject>,
    /// Rows not written because another row already held their key.
    pub conflicts: Listed<ConflictReport>,
    /// The verdict: `complete`, `partial`, `loss_detected` and `verified`.
    pub flags: Verdict,
    /// The evidence behind the flags: every sign of loss and what the output was checked
    /// against.
    pub evidence: FlagEvidence,
    /// Every warning of the run as a sentence (objects that could not be re-created, rows
    /// refused by a constraint, a rolled-back hot journal, …), then each sentence of
    /// `evidence.loss`.
    pub warnings: Vec<String>,
    /// Whether the output was committed, and where it is.
    pub output: OutputState,
    /// What `salvage repair` did with this recovery; absent for `salvage recover`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repair: Option<RepairRecord>,
    /// The paths of the run, which differ between runs: the only place they appear.
    pub run: RunPaths,
}

/// Proof that the source was not changed: its size, its SHA-256 before the run, and its
/// BLAKE3 before and after.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SourceProof {
    /// Size of the source file in bytes.
    pub size: u64,
    /// SHA-256 of the source file, hex: the digest that names the evidence, read whole
    /// during the run (beside the load); when `unchanged`, of the file as the run opened
    /// it.
    pub sha256_before: String,
    /// BLAKE3 of the source file, hex, from the same read.
    pub blake3_before: String,
    /// BLAKE3 of the source file, hex, re-read from disk after the output was verified.
    pub blake3_after: String,
    /// The source, its log and its journal hashed the same (BLAKE3) before and after,
    /// and none of them is in `changed_under_the_run`; `false`: nothing is committed
    /// (exit 1).
    pub unchanged: bool,
    /// The files (`source`, `wal`, `journal`) the file system says changed during the
    /// run, whatever their hashes say: cut short, replaced, or given a new length or
    /// modification time (how, in `warnings`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed_under_the_run: Vec<String>,
    /// What SQLite's own integrity check says of the source as read.
    #[serde(default)]
    pub sqlite_check: crate::report::common::SqliteCheck,
}

/// The hashes of a log read with the source (each absent when no log was read): its
/// SHA-256 and BLAKE3 before the run, and its BLAKE3 re-read after the output was
/// verified, equal to the one before when the log did not change.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LogHashes {
    /// SHA-256, hex, before the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256_before: Option<String>,
    /// BLAKE3, hex, before the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blake3_before: Option<String>,
    /// BLAKE3, hex, after the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blake3_after: Option<String>,
}

/// What the run did with the write-ahead log (`SRC-wal`, or `--wal PATH`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WalReport {
    /// Whether a write-ahead log was read.
    pub used: bool,
    /// What was done with it, as a sentence.
    pub note: String,
    /// Whole frames in the log; 0 when no usable log was read.
    pub frames_present: u32,
    /// Valid frames up to and including the last valid commit frame; 0 when no usable log
    /// was read.
    pub frames_committed: u32,
    /// Distinct pages, within the database size read, whose image was read from a
    /// committed frame of the log instead of the file.
    pub pages_from_wal: u64,
    /// The log's hashes (the log is evidence too).
    #[serde(flatten)]
    pub hashes: LogHashes,
    /// Damage in the log: why frames were ignored, or why the log is unusable.
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
    /// Records with a valid checksum whose original page image was read; 0 when the
    /// journal is not hot.
    pub records_valid: u32,
    /// Records ignored: a wrong checksum or a record cut short, and every record after it.
    pub records_ignored: u32,
    /// Distinct pages restored from the journal's original images (pages within the
    /// database size read that the write-ahead log does not supersede); 0 when nothing
    /// was rolled back.
    pub pages_restored: u64,
    /// The database size in pages before the interrupted transaction, from the journal
    /// header; `null` when the journal is not hot.
    pub pages_before: Option<u32>,
    /// The super-journal a multi-database transaction named, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub super_journal: Option<String>,
    /// The journal's hashes (the journal is evidence too).
    #[serde(flatten)]
    pub hashes: LogHashes,
    /// Damage in the journal: why records were ignored.
    pub findings: FindingList,
}

/// The page geometry and text encoding used, as in `inspect` (`docs/inspect.md`): values
/// used and their source.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Geometry {
    /// The page size in use, in bytes.
    pub page_size: u32,
    /// "header", "wal", "journal" or "inferred".
    pub page_size_source: String,
    /// When the page size was inferred: one entry per candidate size; absent otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub page_size_evidence: Vec<PageSizeEvidenceReport>,
    /// Reserved bytes at the end of each page, as used (0 when the header's value was
    /// impossible).
    pub reserved_space: u8,
    /// The text encoding in use: "UTF-8", "UTF-16le" or "UTF-16be".
    pub text_encoding: String,
    /// "header" or "inferred".
    pub text_encoding_source: String,
    /// Pages in the database as read: the file's (a cut-short last page counts), or the
    /// database size the write-ahead log or hot journal gives.
    pub page_count: u32,
    /// What the header says that the file or SQLite contradicts (a field out of its range,
    /// a size the file does not have), as `inspect` lists them; absent when none.
    #[serde(default, skip_serializing_if = "FindingList::is_empty")]
    pub findings: FindingList,
}

/// What the pages of the database as read are.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PageSummary {
    /// Pages per class (`docs/pager.md`), every class listed.
    pub by_class: std::collections::BTreeMap<String, u32>,
    /// B-tree pages that no b-tree of the schema reaches.
    pub orphan_btree_pages: u32,
    /// The damaged pages, in page order: every page a finding names, every orphan b-tree
    /// page, and every zeroed or unrecognised page that no structure claims.
    pub damaged: Listed<DamagedPage>,
    /// Every page by class and by the b-tree that holds it, in runs of at most
    /// [`super::map::MAP_CELLS`] cells.
    #[serde(default)]
    pub map: super::map::PageMapReport,
}

/// One damaged page, or a run of pages one after another of one class damaged for the
/// same reasons, and why they count as damaged.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DamagedPage {
    /// The page number (the run's first).
    pub page: u32,
    /// The run's last page; absent for a single page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<u32>,
    /// Its page class (`docs/pager.md`), or "past_end" for a page beyond the database's
    /// last page.
    pub class: String,
    /// The reasons, one sentence each: up to eight findings that name the page, then
    /// "orphan …" or "… that no structure claims".
    pub why: Vec<String>,
}

/// A list with its complete count; at most [`LISTED`] entries are listed.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Listed<T> {
    /// How many there are in all, however many are listed.
    pub count: u64,
    /// The first [`LISTED`] of them, in a stable order.
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
    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Counts `item`, and lists it while fewer than [`LISTED`] are listed.
    pub fn push(&mut self, item: T) {
        self.push_counting(item, 1);
    }

    /// Counts `n` (an item standing for `n`, a run of pages), and lists it while fewer
    /// than [`LISTED`] are listed.
    pub fn push_counting(&mut self, item: T, n: u64) {
        self.count += n;
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
    /// Collations the schema names that this build lacks (an application's own, such as
    /// Android's `PHONEBOOK`): each had a stand-in comparing bytes on the output, so that
    /// its tables and indexes were made with their declared SQL. A note, not loss; an
    /// index on one is in binary order (a warning says so).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stand_in_collations: Vec<String>,
    /// FTS3/FTS4 tokenizers the schema names that this build lacks (an application's own,
    /// such as Thunderbird's `mozporter`): each had a stand-in (a copy of `simple`) on the
    /// output, so that its full-text tables were made with their declared SQL, and their
    /// shadow tables were copied as stored, the application's index. A note, not loss.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stand_in_tokenizers: Vec<String>,
}

/// What became of one table: its rows, what was lost, and the evidence.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TableReport {
    /// The table's name, as the schema spells it (`salvage_inferred_N` for an inferred
    /// table).
    pub name: String,
    /// "recovered": created and filled; "inferred": a table whose schema row is lost,
    /// created from its records' shape; "failed": present in the schema but its CREATE
    /// statement failed on the output; "skipped": not copied as data (internal or derived);
    /// "missing": a table the detected profile expects, absent from the schema.
    pub status: TableStatus,
    /// Why, as a sentence: for failed, skipped and missing tables, and for an inferred
    /// table the columns' storage classes and the pages; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The table's root page in the source; `null` when it has none (an inferred, missing
    /// or virtual table).
    pub root: Option<u32>,
    /// Rows the output table holds at the end of the run: `rows_written` +
    /// `placeholders` + `rows_partial` for a table filled with rows, the rows refilled
    /// for a rebuilt virtual table; `null` for a table not filled (skipped, failed,
    /// missing, or a full-text table rebuilt from an external content table, whose rows
    /// are that table's).
    #[serde(default)]
    pub rows_in_output: Option<u64>,
    /// Rows read from the file and written: `rows_from_tree` + `rows_from_orphans`
    /// (placeholders and partial rows apart).
    pub rows_written: u64,
    /// Rows read from the table's own b-tree and written.
    pub rows_from_tree: u64,
    /// Rows from orphan pages attributed to the table and written.
    pub rows_from_orphans: u64,
    /// Written rows with at least one damaged field stored as NULL (a record cut short),
    /// or with values beyond the table's columns, which are dropped.
    pub rows_damaged: u64,
    /// Cells whose record could not be decoded at all.
    pub cells_unreadable: u64,
    /// Rows not written because another row already held their key (listed under
    /// `conflicts`).
    pub conflicts: u64,
    /// Rows refused by a constraint (NOT NULL on a damaged field), kept in
    /// `lost_and_found` instead.
    pub rejected_to_lost_and_found: u64,
    /// Rows read whole that neither the table nor `lost_and_found` would take: not in the
    /// output.
    #[serde(default)]
    pub rows_unwritable: u64,
    /// Placeholder rows synthesized in this table (listed under `placeholders`).
    pub placeholders: u64,
    /// Lost rows rebuilt from index entries and full-text copies alone (listed in
    /// `partial_rows.registry`).
    pub rows_partial: u64,
    /// Lost rows so proven that the table's constraints refused.
    pub partial_refused: u64,
    /// Text values written byte for byte as the file holds them though not valid in its
    /// text encoding: SQLite stores whatever bytes an application binds as text, so they
    /// are no loss (a warning says how many).
    #[serde(default)]
    pub texts_not_in_encoding: u64,
    /// The kinds of its BLOB values, by column: how many of each column's BLOBs begin
    /// with a file's signature (`jpeg`, `png`, `gif`, `webp`, `heic`, `mp4`, `pdf`, `zip`,
    /// `gzip`, `nskeyedarchiver`, `bplist`, `sqlite`, `other_file`), parse as a protocol
    /// buffer's fields (`protobuf_like`, a guess), or neither (`unknown`); counted as the
    /// rows were written. Absent when the table holds no BLOB.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub blob_kinds: std::collections::BTreeMap<String, std::collections::BTreeMap<String, u64>>,
    /// How many rows the table lost, when anything says it lost some.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_rows: Option<LostRows>,
    /// Child pointers of the table's b-tree that could not be followed, with the rowid
    /// range each lost.
    pub lost_subtrees: Vec<LostSubtree>,
    /// Orphan page groups attributed to this table, with the evidence for each.
    pub orphan_groups: Vec<OrphanGroupReport>,
    /// Damage met walking the table's b-tree.
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
    /// One sentence per source of evidence, with its numbers.
    pub evidence: Vec<String>,
}

/// A child pointer of a table's b-tree that could not be followed, and the rowid range
/// the subtree below it held: `rowid_above < rowid <= rowid_up_to`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LostSubtree {
    /// The interior page holding the pointer.
    pub parent: u32,
    /// The raw pointer value (0 or garbage when damaged).
    pub child: u32,
    /// Exclusive lower rowid bound (the divider key to the left); `null` when none bounds
    /// it.
    pub rowid_above: Option<i64>,
    /// Inclusive upper rowid bound (the pointer's own divider key); `null` when none
    /// bounds it.
    pub rowid_up_to: Option<i64>,
}

/// A group of orphan b-tree pages: an orphan interior page and the orphans below it, or a
/// single orphan page.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OrphanGroupReport {
    /// The group's top page.
    pub top: u32,
    /// Pages in the group.
    pub pages: usize,
    /// Cells carrying a payload: rows of a table.
    pub cells: u64,
    /// Smallest and largest rowid of its cells; `null` when it has none.
    pub rowids: Option<[i64; 2]>,
    /// How strongly the evidence gives the group to its table: "high", "medium" or
    /// "low"; absent for a group no table was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<String>,
    /// Why the group was given to its table, strongest first, one sentence each; empty
    /// for a group no table was given.
    pub evidence: Vec<String>,
}

/// Rows no table could be given, kept in the output's `lost_and_found` table.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LostAndFoundReport {
    /// Name of the table in the output, when it has rows.
    pub table: Option<String>,
    /// Rows written to it: rows of unattributed orphan groups plus rows refused by a
    /// constraint.
    pub rows: u64,
    /// Orphan groups no evidence could give a table.
    pub groups: Vec<OrphanGroupReport>,
    /// Orphan index-page groups: index data, rebuilt from the tables instead.
    pub index_groups: u64,
    /// The most values a record kept there holds (its first 1,000 are columns, the rest
    /// one JSON array in `rest`); absent when no row is there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub widest_record: Option<u64>,
}

/// Lost rows rebuilt from their surviving index entries and full-text copies: those columns are known,
/// every other column is NULL. They are still counted in `lost_rows`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PartialRowsReport {
    /// The registry table in the output (`salvage_partial_rows`), when any row was made.
    pub registry: Option<String>,
    /// Partial rows written into their tables.
    pub rows: u64,
    /// Partial rows their table refused, kept in the registry only.
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
    /// The placeholders written, in relationship then key order.
    pub made: Listed<PlaceholderEntry>,
    /// Lost parents no placeholder was made for.
    pub blocked: Listed<BlockedEntry>,
    /// Per relationship, child keys that no parent row holds where the parent table lost
    /// no row that could hold them: references the source already held dangling (legal
    /// with foreign keys off, SQLite's default). A finding, never loss: the children are
    /// kept as read, no placeholder is made, and a warning says so. Absent when there is
    /// none.
    #[serde(default, skip_serializing_if = "Listed::is_empty")]
    pub dangling: Listed<reconstruct::placeholders::Dangling>,
}

/// One placeholder parent row synthesized for the children of a lost parent.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PlaceholderEntry {
    /// The parent table it was written into.
    pub table: String,
    /// The rowid it got in the output.
    pub rowid: i64,
    /// The key its children reference, as text: `a`, or `(a, b)` for a composite key.
    pub key: String,
    /// The table of the children that reference it.
    pub child_table: String,
    /// Surviving children under it.
    pub children: u64,
    /// The columns filled beyond the key, by name.
    pub filled_columns: Vec<String>,
    /// The relationship it stands in: "foreign key", "profile NAME", or "foreign key,
    /// filled by profile NAME" for a declared key a profile gives fill rules.
    pub relationship: String,
}

/// A lost parent no placeholder was made for: its children keep their dangling
/// reference.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BlockedEntry {
    /// The parent table.
    pub table: String,
    /// The key its children reference, as text.
    pub key: String,
    /// The table of the children that reference it.
    pub child_table: String,
    /// Surviving children that reference it.
    pub children: u64,
    /// Why no placeholder was made, as a sentence (e.g. a NOT NULL column without a
    /// default that nothing fills, or "placeholders were not asked for").
    pub reason: String,
}

/// What became of one index, view, trigger or virtual table.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SchemaObject {
    /// What kind of object it is.
    #[serde(rename = "type")]
    pub kind: ObjectKind,
    /// Its name in the schema.
    pub name: String,
    /// Created, rebuilt, failed or skipped.
    pub status: ObjectStatus,
    /// Why it failed or was skipped, or how a virtual table was rebuilt or left empty, as
    /// a sentence; absent for an object simply created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What kind of schema object an entry of `schema_objects` is, as the report spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ObjectKind {
    /// An index.
    #[serde(rename = "index")]
    Index,
    /// A view.
    #[serde(rename = "view")]
    View,
    /// A trigger.
    #[serde(rename = "trigger")]
    Trigger,
    /// A virtual table (full-text, R*Tree).
    #[serde(rename = "virtual table")]
    VirtualTable,
    /// A table's own CREATE statement, which failed, the table made plain instead.
    #[serde(rename = "table definition")]
    TableDefinition,
}

impl ObjectKind {
    /// The kind of a schema row's object: an index, a view or a trigger (a table is none).
    pub fn of(kind: &pager::SchemaKind) -> Option<ObjectKind> {
        match kind {
            pager::SchemaKind::Index => Some(ObjectKind::Index),
            pager::SchemaKind::View => Some(ObjectKind::View),
            pager::SchemaKind::Trigger => Some(ObjectKind::Trigger),
            _ => None,
        }
    }

    /// Its name, as the report spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectKind::Index => "index",
            ObjectKind::View => "view",
            ObjectKind::Trigger => "trigger",
            ObjectKind::VirtualTable => "virtual table",
            ObjectKind::TableDefinition => "table definition",
        }
    }
}

impl std::fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The registry of values not in their tables as read (`salvage_damaged_fields`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DamagedFieldsReport {
    /// The registry table in the output; `null` when no value was registered.
    pub registry: Option<String>,
    /// Values registered.
    pub fields: u64,
}

/// A row not written into its table because another row already held its key.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConflictReport {
    /// The table it belongs to.
    pub table: String,
    /// Its rowid; `null` for a WITHOUT ROWID table.
    pub rowid: Option<i64>,
    /// The cell not written into its table.
    pub dropped: String,
    /// SQLite's constraint error, e.g. "UNIQUE constraint failed: t.id".
    pub reason: String,
    /// The output table that keeps the row with its values (`lost_and_found`); `null`
    /// when that table refused it too and it is not in the output.
    #[serde(default)]
    pub kept_in: Option<String>,
}

/// The evidence behind the report's flags.
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

/// Whether the output was committed, and where it is.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OutputState {
    /// Whether DEST now exists, holding this run's output.
    pub committed: bool,
    /// Where the output is.
    pub location: OutputLocation,
    /// SHA-256 of the output file as verified (at DEST, or at `DEST.incomplete` when
    /// withheld), hex; absent when there is no output file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Present when a withheld output was committed later by `salvage commit`, which
    /// accepted the loss this report records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted: Option<Accepted>,
}

/// What a repair did with its recovery, as it stands: the repair rewrites it at each
/// decision (withheld, put in place, rolled back, abandoned).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepairRecord {
    /// Where the repair stands.
    pub state: RepairState,
    /// The recovery was put in write-ahead-log mode, as the original was: what is at the
    /// database's path then differs from `output.sha256` in its header.
    #[serde(default)]
    pub wal_mode: bool,
    /// SHA-256 of the recovery as the repair put it at the database's path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256_in_place: Option<String>,
    /// Whether the archive (`run.repair.archive_path`) held the original when the state
    /// was recorded: a repair files the original there as it puts the recovery in place,
    /// and a rollback that puts it back removes it (a repair begun by an older build
    /// copied the original there first, and kept it; a report without the field is one
    /// of those).
    #[serde(default = "archived_by_default")]
    pub archived: bool,
    /// When the state was recorded (UTC, RFC 3339).
    pub utc: String,
}

/// A repair's record written before `archived` was: its archive was made first, and kept.
fn archived_by_default() -> bool {
    true
}

/// Where a repair stands with its recovery.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RepairState {
    /// Recovered and not yet in place: the repair stopped, or is running.
    Pending,
    /// Withheld for its loss: the original is untouched.
    Withheld,
    /// Put at the database's path; the original and its sidecars are in the archive.
    InPlace,
    /// Rolled back: the original is back at the database's path; the recovery is not
    /// kept (the archive recovers into it again).
    RolledBack,
    /// Ended without touching the database's path, which the application had written to
    /// since the repair read it.
    Abandoned,
}

/// The paths of a repair, in the report's `run`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepairPaths {
    /// The database repaired: the file itself.
    pub db_path: String,
    /// The path the repair was asked for, when it is a symbolic link to `db_path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_link: Option<String>,
    /// The archive of the original and its sidecars.
    pub archive_path: String,
}

/// A withheld output committed later, its loss accepted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accepted {
    /// When (UTC, RFC 3339).
    pub utc: String,
    /// The command line that committed it.
    pub command_line: Vec<String>,
    /// Who accepted the loss (`salvage commit --examiner`); absent when not given, and in
    /// reports committed before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub examiner: Option<String>,
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

/// What differs between runs (so tests filter it): the paths, made absolute, the times,
/// the command line, the case and the build.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunPaths {
    /// When the run began, UTC (RFC 3339, seconds).
    #[serde(default)]
    pub started_utc: String,
    /// When the report was written, UTC.
    #[serde(default)]
    pub finished_utc: String,
    /// The command line that asked for the run; absent when a program called the library.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command_line: Vec<String>,
    /// A case number or name (`--case`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    /// Who ran it (`--examiner`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub examiner: Option<String>,
    /// The build of the tool: version, target and profile.
    #[serde(default)]
    pub build: String,
    /// The source database: the file itself, every symbolic link on the way resolved
    /// (its logs are read from beside it, where SQLite keeps them).
    pub source_path: String,
    /// The source's path as given, when it is a symbolic link to `source_path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_link: Option<String>,
    /// The output database (DEST).
    pub dest_path: String,
    /// This report.
    pub report_path: String,
    /// The write-ahead log read; absent when none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal_path: Option<String>,
    /// The rollback journal read; absent when none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_path: Option<String>,
    /// The repair this recovery is part of (`salvage repair`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repair: Option<RepairPaths>,
    /// The archive member the source was spooled from (`salvage scan` over a `.tar` or
    /// `.zip`): `source_path` is then the scan's private copy, removed when the scan
    /// ends, and the evidence is this member of this archive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_member: Option<crate::report::common::ArchiveMember>,
}
