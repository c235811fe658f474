//! The `inspect` JSON document. Schema: `docs/inspect.md`. Field order is the document's
//! order; every list is in a stable order (page order, schema order).
//!
//! `format_version` changes whenever a field changes meaning or is removed. Absolute
//! paths and anything that differs between two runs over the same bytes live only in `run`.

use std::collections::BTreeMap;

use serde::Serialize;

/// Version of the inspect document's schema.
pub const FORMAT_VERSION: u32 = 1;

use super::common::{FindingList, PageSizeEvidenceReport, Tool};

/// The whole `salvage inspect --json` document.
#[derive(Debug, Serialize)]
pub struct InspectReport {
    /// Version of the document's schema ([`FORMAT_VERSION`]); changes whenever a field
    /// changes meaning or is removed.
    pub format_version: u32,
    /// The tool that wrote the document.
    pub tool: Tool,
    /// The file inspected: its size, and its SHA-256 when asked for.
    pub source: SourceInfo,
    /// The write-ahead log and rollback journal beside the file, read-only facts; the rest
    /// of the document is the main file alone.
    pub sidecars: Sidecars,
    /// The 100-byte database header as stored, and the geometry the reader used.
    pub header: HeaderReport,
    /// Page counts per class and the orphan pages.
    pub pages: PagesReport,
    /// The `sqlite_schema` rows read from page 1, in b-tree order.
    pub schema: Vec<SchemaEntry>,
    /// The applications whose database this is, by the catalogue of application schemas:
    /// by the schema's tables or, when the schema holds no table, by orphan pages whose
    /// records fit an application's tables (`docs/profiles.md`).
    #[serde(default)]
    pub applications: Vec<crate::report::common::Identified>,
    /// `sqlite_schema` first, then every table and index with a root page, in schema
    /// order.
    pub trees: Vec<TreeReport>,
    /// The freelist as the header declares it and as walked.
    pub freelist: FreelistReport,
    /// The damaged pages, in page order: every page a finding names, every orphan b-tree
    /// page, and every zeroed or unrecognised page that no structure claims.
    pub damaged_pages: Vec<DamagedPage>,
    /// Header and whole-file findings, and pages claimed by two b-trees (trees and the
    /// freelist carry their own).
    pub findings: FindingList,
    /// Whether the file is healthy, with the counts and a one-line summary.
    pub verdict: Verdict,
    /// What SQLite's own integrity check says of the file (the main file alone, as the
    /// survey reads it).
    #[serde(default)]
    pub sqlite_check: crate::report::common::SqliteCheck,
    /// What looks deliberate or abnormal, most severe first (`inspect --audit` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit: Option<Vec<reconstruct::Concern>>,
    /// What differs between two runs over the same bytes: the path as given.
    pub run: RunInfo,
}

/// The file inspected.
#[derive(Debug, Serialize)]
pub struct SourceInfo {
    /// Size of the file in bytes.
    pub size: u64,
    /// SHA-256 of the file, hex; present with `--sha256`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// The only run-dependent part of the document.
#[derive(Debug, Serialize)]
pub struct RunInfo {
    /// The source: the file itself, every symbolic link on the way resolved (its log and
    /// journal are read from beside it, where SQLite keeps them).
    pub source_path: String,
    /// The path as given, when it is a symbolic link to `source_path`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_link: Option<String>,
    /// The archive member the file was spooled from (`salvage scan` over an archive):
    /// `source_path` is then the scan's private copy of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archive_member: Option<crate::report::common::ArchiveMember>,
}

/// The database header: what it declares, and what the reader used.
#[derive(Debug, Serialize)]
pub struct HeaderReport {
    /// Raw values as stored in the 100-byte header.
    pub declared: DeclaredHeader,
    /// What the reader used, and why.
    pub in_use: InUse,
}

/// Raw header fields as stored ("The Database Header"); a file shorter than 100 bytes
/// reads the missing bytes as zero.
#[derive(Debug, Serialize)]
pub struct DeclaredHeader {
    /// The header string (offset 0) is `"SQLite format 3\0"`.
    pub header_string_valid: bool,
    /// The page size field (offset 16), raw: 1 means 65536; 0 or garbage when damaged.
    pub page_size: u16,
    /// File format write version (offset 18): 1 legacy, 2 WAL.
    pub write_version: u8,
    /// File format read version (offset 19): 1 legacy, 2 WAL.
    pub read_version: u8,
    /// Bytes of unused reserved space at the end of each page (offset 20).
    pub reserved_space: u8,
    /// Maximum embedded payload fraction, minimum embedded payload fraction and leaf
    /// payload fraction (offsets 21..24; must be 64, 32, 32).
    pub payload_fractions: [u8; 3],
    /// File change counter (offset 24).
    pub file_change_counter: u32,
    /// In-header database size, in pages (offset 28).
    pub database_size: u32,
    /// Whether the in-header database size can be trusted: non-zero and the file change
    /// counter equals the version-valid-for number.
    pub database_size_valid: bool,
    /// Page number of the first freelist trunk page (offset 32); 0 when the freelist is
    /// empty.
    pub first_freelist_trunk: u32,
    /// Total number of freelist pages (offset 36).
    pub freelist_count: u32,
    /// The schema cookie (offset 40).
    pub schema_cookie: u32,
    /// The schema format number (offset 44): 1 to 4.
    pub schema_format: u32,
    /// Default page cache size (offset 48).
    pub default_cache_size: u32,
    /// Page number of the largest root b-tree page (offset 52); non-zero in auto-vacuum
    /// and incremental-vacuum mode (pointer-map pages), else 0.
    pub largest_root_page: u32,
    /// The database text encoding (offset 56), raw: 1 UTF-8, 2 UTF-16le, 3 UTF-16be.
    pub text_encoding: u32,
    /// The user version (offset 60), as `PRAGMA user_version` sets it.
    pub user_version: u32,
    /// Incremental-vacuum mode flag (offset 64): non-zero for incremental vacuum.
    pub incremental_vacuum: u32,
    /// The application ID (offset 68), as `PRAGMA application_id` sets it.
    pub application_id: u32,
    /// The version-valid-for number (offset 92): the change counter value when the
    /// SQLite version number was stored.
    pub version_valid_for: u32,
    /// SQLITE_VERSION_NUMBER of the library that most recently modified the file (offset
    /// 96).
    pub sqlite_version: u32,
}

/// The geometry the reader used, and where each value came from.
#[derive(Debug, Serialize)]
pub struct InUse {
    /// The page size in use, in bytes.
    pub page_size: u32,
    /// "header" or "inferred".
    pub page_size_source: &'static str,
    /// When the page size was inferred: one entry per candidate size, smallest first;
    /// absent otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub page_size_evidence: Vec<PageSizeEvidenceReport>,
    /// Reserved bytes at the end of each page, as used (0 when the header's value leaves
    /// fewer than 480 usable bytes).
    pub reserved_space: u8,
    /// The usable size U: page size less reserved space, in bytes.
    pub usable_size: usize,
    /// The text encoding in use: "UTF-8", "UTF-16le" or "UTF-16be".
    pub text_encoding: String,
    /// "header" or "inferred".
    pub text_encoding_source: &'static str,
    /// When inferred, the votes for UTF-8, UTF-16le and UTF-16be: schema records on page 1
    /// whose `type` reads as a schema type word in that encoding, or, when none is
    /// readable, occurrences of "CREATE " in it; absent when the header's value is used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_encoding_evidence: Option<[u64; 3]>,
    /// Pages in the file (a cut-short last page counts).
    pub page_count: u32,
    /// Auto-vacuum or incremental-vacuum mode: the largest root b-tree page is non-zero,
    /// so the file has pointer-map pages.
    pub auto_vacuum: bool,
    /// Incremental-vacuum mode: the header's incremental-vacuum flag is non-zero.
    pub incremental_vacuum: bool,
}

/// What the file's pages are.
#[derive(Debug, Serialize)]
pub struct PagesReport {
    /// Pages in the file (a cut-short last page counts).
    pub total: u32,
    /// Pages per class, every class listed.
    pub by_class: BTreeMap<&'static str, u32>,
    /// B-tree pages that no b-tree of the schema reaches.
    pub orphan_btree_pages: u32,
    /// Overflow pages of the cells on those orphan pages, which no b-tree of the schema
    /// reaches.
    pub orphan_overflow_pages: usize,
}

/// One row of `sqlite_schema`, decoded from the database encoding.
#[derive(Debug, Serialize)]
pub struct SchemaEntry {
    /// The `type` column: "table", "index", "view" or "trigger".
    #[serde(rename = "type")]
    pub kind: String,
    /// The `name` column: the object's name.
    pub name: String,
    /// The `tbl_name` column: the table the object belongs to.
    pub tbl_name: String,
    /// The `rootpage` column: the object's root b-tree page; `null` for views, triggers
    /// and virtual tables (0 as stored), or a value that is not a page of the file.
    pub rootpage: Option<u32>,
    /// The `sql` column: the CREATE statement; `null` for automatic indexes.
    pub sql: Option<String>,
}

/// What a walk of one b-tree found.
#[derive(Debug, Serialize)]
pub struct TreeReport {
    /// Its name from the schema (`sqlite_schema` for the tree rooted at page 1).
    pub name: String,
    /// "table" or "index".
    #[serde(rename = "type")]
    pub kind: String,
    /// Its root page.
    pub root: u32,
    /// B-tree pages reached.
    pub pages: u32,
    /// Overflow pages reached from its cells.
    pub overflow_pages: u32,
    /// Greatest depth reached (root = 1).
    pub depth: u32,
    /// Rows of a table, entries of an index.
    pub cells: u64,
    /// Child pointers that could not be followed.
    pub lost_children: Vec<LostChildReport>,
    /// Damage met in this tree (for `sqlite_schema`, malformed schema rows too).
    pub findings: FindingList,
}

/// A child pointer that could not be followed: the subtree below it is lost to the walk.
#[derive(Debug, Serialize)]
pub struct LostChildReport {
    /// The interior page holding the pointer.
    pub parent: u32,
    /// The raw pointer value (0 or garbage when damaged).
    pub child: u32,
    /// Exclusive lower rowid bound of the lost subtree, if known.
    pub rowid_above: Option<i64>,
    /// Inclusive upper rowid bound, if known.
    pub rowid_up_to: Option<i64>,
}

/// The freelist ("The Freelist"): what the header declares and what a walk of the trunk
/// chain found.
#[derive(Debug, Serialize)]
pub struct FreelistReport {
    /// The header's first freelist trunk page; 0 when the freelist is empty.
    pub first_trunk: u32,
    /// The header's total number of freelist pages.
    pub declared_count: u32,
    /// Freelist trunk pages reached.
    pub trunk_pages: usize,
    /// Freelist leaf pages the trunks reached list.
    pub leaf_pages: usize,
    /// Damage met walking the freelist.
    pub findings: FindingList,
}

/// One damaged page, or a run of pages one after another of one class damaged for the
/// same reasons, and why they count as damaged.
#[derive(Debug, Serialize)]
pub struct DamagedPage {
    /// The page number (the run's first).
    pub page: u32,
    /// The run's last page; absent for a single page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last: Option<u32>,
    /// Its page class (`docs/pager.md`), or "past_end" for a page a finding names beyond
    /// the file's last page.
    pub class: &'static str,
    /// Reasons, one sentence each.
    pub why: Vec<String>,
}

/// The inspection's verdict.
#[derive(Debug, Serialize)]
pub struct Verdict {
    /// No finding anywhere, no damaged page, and no problem in SQLite's own check.
    pub healthy: bool,
    /// All findings: header, whole-file, pages claimed twice, freelist and trees.
    pub finding_count: usize,
    /// Damaged pages, as listed in `damaged_pages`.
    pub damaged_page_count: u64,
    /// One line: "healthy: …" or "damaged: N findings, N damaged pages, N orphan b-tree
    /// pages", followed by " Beside it: …" when a log with committed frames or a hot
    /// journal lies beside the file.
    pub summary: String,
}

/// The write-ahead log and rollback journal beside the file (`SRC-wal`, `SRC-journal`),
/// when there: part of the database's state, though the survey reads the main file alone.
#[derive(Debug, Default, Serialize)]
pub struct Sidecars {
    /// `SRC-wal`; `null` when absent or empty.
    pub wal: Option<WalSidecar>,
    /// `SRC-journal`; `null` when absent or empty.
    pub journal: Option<JournalSidecar>,
}

/// The write-ahead log beside the file, read-only facts.
#[derive(Debug, Serialize)]
pub struct WalSidecar {
    /// Size of the log in bytes.
    pub size: u64,
    /// The header is usable.
    pub usable: bool,
    /// The page size in the WAL header, in bytes; `null` when the log is unusable.
    pub page_size: Option<u32>,
    /// Whole frames in the log; 0 when it is unusable.
    pub frames_present: u32,
    /// Valid frames up to and including the last valid commit frame; 0 when it is
    /// unusable.
    pub frames_committed: u32,
    /// Distinct pages with a committed image newer than the file's.
    pub pages_committed: usize,
    /// The database size in pages after the last valid commit; `null` when no commit is
    /// valid.
    pub database_size: Option<u32>,
    /// The timeline: every committed transaction in commit order, the frames that never
    /// committed, with the rows each changed (see `recover --history`).
    pub timeline: Vec<crate::report::history::StepReport>,
    /// Frames of an earlier generation of the log (before a checkpoint reset it),
    /// overwritten from the start since: evidence of older versions.
    pub older_generation_frames: usize,
    /// Damage in the log: why frames were ignored, or why it is unusable.
    pub findings: FindingList,
}

/// The rollback journal beside the file, read-only facts.
#[derive(Debug, Serialize)]
pub struct JournalSidecar {
    /// Size of the journal in bytes.
    pub size: u64,
    /// Its header is valid: an interrupted transaction, rolled back by `recover`.
    pub hot: bool,
    /// Hot, but its header's page size disagrees with the database's and no page 1 image
    /// in it proves it (finding `journal_page_size_disagrees`): `recover` does not roll it
    /// back, and restores none of its pages.
    pub refused: bool,
    /// Records with a valid checksum whose original page image is restored.
    pub records_valid: u32,
    /// Records ignored: a wrong checksum or a record cut short, and every record after it.
    pub records_ignored: u32,
    /// Distinct pages its records restore.
    pub pages_restored: usize,
    /// The database size in pages before the transaction; `null` when the journal is not
    /// hot.
    pub pages_before: Option<u32>,
    /// The super-journal a multi-database transaction named; absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub super_journal: Option<String>,
    /// Damage in the journal: why records were ignored.
    pub findings: FindingList,
}
