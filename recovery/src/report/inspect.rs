//! The `inspect` JSON document. Schema: `docs/inspect.md`. Field order is the document's
//! order; every list is in a stable order (page order, schema order).
//!
//! `format_version` changes whenever a field changes meaning or is removed. Absolute
//! paths and anything that differs between two runs over the same bytes live only in `run`.

use std::collections::BTreeMap;

use pager::{Database, EncodingSource, Finding, PageClass, PageNo, Survey};
use serde::Serialize;

/// Version of the inspect document's schema.
pub const FORMAT_VERSION: u32 = 1;

use super::common::{
    damaged_page_reasons, page_size_decision, FindingList, PageSizeEvidenceReport, Tool,
};

/// The whole `salvage inspect --json` document.
#[derive(Debug, Serialize)]
pub struct InspectReport {
    pub format_version: u32,
    pub tool: Tool,
    pub source: SourceInfo,
    pub sidecars: Sidecars,
    pub header: HeaderReport,
    pub pages: PagesReport,
    pub schema: Vec<SchemaEntry>,
    pub trees: Vec<TreeReport>,
    pub freelist: FreelistReport,
    pub damaged_pages: Vec<DamagedPage>,
    pub findings: FindingList,
    pub verdict: Verdict,
    pub run: RunInfo,
}

#[derive(Debug, Serialize)]
pub struct SourceInfo {
    pub size: u64,
    /// Present with `--sha256`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct RunInfo {
    /// The source path as given on the command line.
    pub source_path: String,
}

#[derive(Debug, Serialize)]
pub struct HeaderReport {
    pub declared: DeclaredHeader,
    pub in_use: InUse,
}

/// Raw header fields as stored.
#[derive(Debug, Serialize)]
pub struct DeclaredHeader {
    pub header_string_valid: bool,
    pub page_size: u16,
    pub write_version: u8,
    pub read_version: u8,
    pub reserved_space: u8,
    pub payload_fractions: [u8; 3],
    pub file_change_counter: u32,
    pub database_size: u32,
    pub database_size_valid: bool,
    pub first_freelist_trunk: u32,
    pub freelist_count: u32,
    pub schema_cookie: u32,
    pub schema_format: u32,
    pub default_cache_size: u32,
    pub largest_root_page: u32,
    pub text_encoding: u32,
    pub user_version: u32,
    pub incremental_vacuum: u32,
    pub application_id: u32,
    pub version_valid_for: u32,
    pub sqlite_version: u32,
}

/// The geometry the reader used, and where each value came from.
#[derive(Debug, Serialize)]
pub struct InUse {
    pub page_size: u32,
    /// "header" or "inferred".
    pub page_size_source: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub page_size_evidence: Vec<PageSizeEvidenceReport>,
    pub reserved_space: u8,
    pub usable_size: usize,
    pub text_encoding: String,
    /// "header" or "inferred".
    pub text_encoding_source: &'static str,
    /// Occurrences of "CREATE " in UTF-8, UTF-16le, UTF-16be, when inferred.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_encoding_evidence: Option<[u64; 3]>,
    pub page_count: u32,
    pub auto_vacuum: bool,
    pub incremental_vacuum: bool,
}

#[derive(Debug, Serialize)]
pub struct PagesReport {
    pub total: u32,
    /// Pages per class, every class listed.
    pub by_class: BTreeMap<&'static str, u32>,
    /// B-tree pages that no b-tree of the schema reaches.
    pub orphan_btree_pages: u32,
    /// Overflow pages hanging off those orphan pages.
    pub orphan_overflow_pages: usize,
}

#[derive(Debug, Serialize)]
pub struct SchemaEntry {
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
    pub tbl_name: String,
    pub rootpage: Option<u32>,
    pub sql: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct TreeReport {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub root: u32,
    pub pages: u32,
    pub overflow_pages: u32,
    pub depth: u32,
    /// Rows of a table, entries of an index.
    pub cells: u64,
    /// Child pointers that could not be followed.
    pub lost_children: Vec<LostChildReport>,
    pub findings: FindingList,
}

#[derive(Debug, Serialize)]
pub struct LostChildReport {
    pub parent: u32,
    pub child: u32,
    /// Exclusive lower rowid bound of the lost subtree, if known.
    pub rowid_above: Option<i64>,
    /// Inclusive upper rowid bound, if known.
    pub rowid_up_to: Option<i64>,
}

#[derive(Debug, Serialize)]
pub struct FreelistReport {
    pub first_trunk: u32,
    pub declared_count: u32,
    pub trunk_pages: usize,
    pub leaf_pages: usize,
    pub findings: FindingList,
}

#[derive(Debug, Serialize)]
pub struct DamagedPage {
    pub page: u32,
    pub class: &'static str,
    /// Reasons, one sentence each.
    pub why: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct Verdict {
    /// No finding anywhere and no damaged page.
    pub healthy: bool,
    pub finding_count: usize,
    pub damaged_page_count: usize,
    pub summary: String,
}

/// The write-ahead log and rollback journal beside the file (`SRC-wal`, `SRC-journal`),
/// when there: part of the database's state, though the survey reads the main file alone.
#[derive(Debug, Default, Serialize)]
pub struct Sidecars {
    pub wal: Option<WalSidecar>,
    pub journal: Option<JournalSidecar>,
}

#[derive(Debug, Serialize)]
pub struct WalSidecar {
    pub size: u64,
    /// The header is usable.
    pub usable: bool,
    pub page_size: Option<u32>,
    pub frames_present: u32,
    pub frames_committed: u32,
    /// Distinct pages with a committed image newer than the file's.
    pub pages_committed: usize,
    /// The database size in pages after the last valid commit.
    pub database_size: Option<u32>,
    pub findings: FindingList,
}

#[derive(Debug, Serialize)]
pub struct JournalSidecar {
    pub size: u64,
    /// Its header is valid: an interrupted transaction, rolled back by `recover`.
    pub hot: bool,
    pub records_valid: u32,
    pub records_ignored: u32,
    /// Distinct pages its records restore.
    pub pages_restored: usize,
    /// The database size in pages before the transaction.
    pub pages_before: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub super_journal: Option<String>,
    pub findings: FindingList,
}

impl WalSidecar {
    pub fn of(bytes: &[u8]) -> WalSidecar {
        match pager::read_wal(bytes) {
            Ok(w) => WalSidecar {
                size: bytes.len() as u64,
                usable: true,
                page_size: Some(w.header.page_size),
                frames_present: w.frames_present,
                frames_committed: w.frames_committed,
                pages_committed: w.pages.len(),
                database_size: w.db_size,
                findings: FindingList::new(&w.findings),
            },
            Err(f) => WalSidecar {
                size: bytes.len() as u64,
                usable: false,
                page_size: None,
                frames_present: 0,
                frames_committed: 0,
                pages_committed: 0,
                database_size: None,
                findings: FindingList::new(std::slice::from_ref(&f)),
            },
        }
    }
}

impl JournalSidecar {
    pub fn of(bytes: &[u8]) -> JournalSidecar {
        let j = pager::read_journal(bytes);
        JournalSidecar {
            size: bytes.len() as u64,
            hot: j.header.is_some(),
            records_valid: j.records_valid,
            records_ignored: j.records_ignored,
            pages_restored: j.pages.len(),
            pages_before: j.original_pages(),
            super_journal: j.super_journal.clone(),
            findings: FindingList::new(&j.findings),
        }
    }
}

/// Builds the report from the reader's results.
pub fn build(
    db: &Database<'_>,
    survey: &Survey,
    source: SourceInfo,
    run: RunInfo,
) -> InspectReport {
    let h = db.header();
    let declared = DeclaredHeader {
        header_string_valid: h.has_header_string(),
        page_size: h.page_size_raw,
        write_version: h.write_version,
        read_version: h.read_version,
        reserved_space: h.reserved_space,
        payload_fractions: [
            h.max_payload_fraction,
            h.min_payload_fraction,
            h.leaf_payload_fraction,
        ],
        file_change_counter: h.file_change_counter,
        database_size: h.database_size,
        database_size_valid: h.database_size_valid(),
        first_freelist_trunk: h.first_freelist_trunk,
        freelist_count: h.freelist_count,
        schema_cookie: h.schema_cookie,
        schema_format: h.schema_format,
        default_cache_size: h.default_cache_size,
        largest_root_page: h.largest_root_page,
        text_encoding: h.text_encoding_raw,
        user_version: h.user_version,
        incremental_vacuum: h.incremental_vacuum,
        application_id: h.application_id,
        version_valid_for: h.version_valid_for,
        sqlite_version: h.sqlite_version,
    };
    let (page_size_source, page_size_evidence) = page_size_decision(db);
    let (text_encoding_source, text_encoding_evidence) = match db.encoding_source() {
        EncodingSource::Header => ("header", None),
        EncodingSource::Inferred { counts } => ("inferred", Some(*counts)),
    };
    let in_use = InUse {
        page_size: db.page_size().get(),
        page_size_source,
        page_size_evidence,
        reserved_space: db.reserved_space(),
        usable_size: db.usable_size(),
        text_encoding: db.encoding().to_string(),
        text_encoding_source,
        text_encoding_evidence,
        page_count: db.page_count(),
        auto_vacuum: h.auto_vacuum(),
        incremental_vacuum: h.incremental_vacuum != 0,
    };

    let map = &survey.page_map;
    let by_class = map
        .counts()
        .into_iter()
        .map(|(c, n)| (c.name(), n))
        .collect();
    let orphans: Vec<(PageNo, PageClass)> = map.orphans().collect();

    let trees = survey
        .trees
        .iter()
        .map(|t| TreeReport {
            name: t.name.clone(),
            kind: t.kind.as_str().to_string(),
            root: t.root.get(),
            pages: t.pages,
            overflow_pages: t.overflow_pages,
            depth: t.depth,
            cells: t.cells,
            lost_children: t
                .lost
                .iter()
                .map(|l| LostChildReport {
                    parent: l.parent.get(),
                    child: l.child,
                    rowid_above: l.bounds.lower,
                    rowid_up_to: l.bounds.upper,
                })
                .collect(),
            findings: FindingList::new(&t.findings),
        })
        .collect();

    let why = damaged_page_reasons(db, survey);
    let all_findings = db.findings().iter().chain(survey.all_findings());
    let damaged_pages: Vec<DamagedPage> = why
        .into_iter()
        .map(|(page, why)| DamagedPage {
            page: page.get(),
            class: Some(page)
                .and_then(|p| map.class(p))
                .map_or("past_end", PageClass::name),
            why,
        })
        .collect();

    let damaged_page_count = damaged_pages.len();
    let file_findings: Vec<&Finding> = db.findings().iter().chain(&survey.findings).collect();
    let finding_count = all_findings.count();
    let healthy = finding_count == 0 && damaged_pages.is_empty();
    let summary = if healthy {
        format!(
            "healthy: {} pages, {} tables and indexes read without a finding",
            db.page_count(),
            survey.trees.len().saturating_sub(1)
        )
    } else {
        format!(
            "damaged: {finding_count} findings, {} damaged pages, {} orphan b-tree pages",
            damaged_page_count,
            orphans.len()
        )
    };

    InspectReport {
        format_version: FORMAT_VERSION,
        tool: Tool::this(),
        source,
        sidecars: Sidecars::default(),
        header: HeaderReport { declared, in_use },
        pages: PagesReport {
            total: db.page_count(),
            by_class,
            orphan_btree_pages: orphans.len() as u32,
            orphan_overflow_pages: map.orphan_overflow_pages(),
        },
        schema: survey
            .schema
            .rows
            .iter()
            .map(|r| SchemaEntry {
                kind: r.kind.as_str().to_string(),
                name: r.name.clone(),
                tbl_name: r.tbl_name.clone(),
                rootpage: r.rootpage.map(PageNo::get),
                sql: r.sql.clone(),
            })
            .collect(),
        trees,
        freelist: FreelistReport {
            first_trunk: h.first_freelist_trunk,
            declared_count: h.freelist_count,
            trunk_pages: survey.freelist.trunks.len(),
            leaf_pages: survey.freelist.leaves.len(),
            findings: FindingList::new(&survey.freelist.findings),
        },
        damaged_pages,
        findings: FindingList::new(file_findings),
        verdict: Verdict {
            healthy,
            finding_count,
            damaged_page_count,
            summary,
        },
        run,
    }
}

