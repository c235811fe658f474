//! What in a file looks deliberate or abnormal, graded by severity with its evidence
//! (`inspect --audit`): wiped free space, header fields that disagree with the file,
//! pointers that loop or that two structures share, roots that do not fit, counters that
//! disagree with the rows, an older generation of the write-ahead log. Each concern says
//! what was seen, not what was done: a wipe and `secure_delete` look the same.

use std::collections::BTreeMap;

use pager::{
    Database, Finding, PageNo, PageType, SchemaKind, StrayKind, Survey, TreeItem, Value, Wal,
};
use serde::Serialize;

/// How much a concern weighs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The file contradicts itself where SQLite never would: an edit, or damage.
    High,
    /// Content removed beyond what SQLite does by default.
    Medium,
    /// Unusual, with innocent explanations.
    Low,
    /// A fact an examiner wants to know.
    Info,
}

/// One thing the audit saw.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Concern {
    /// How much it weighs.
    pub severity: Severity,
    /// What kind of thing it is (stable, for scripts).
    pub kind: &'static str,
    /// What was seen, as a sentence.
    pub what: String,
    /// Pages it was seen on (the first [`PAGES_LISTED`]).
    pub pages: Vec<u32>,
}

/// Pages listed per concern at most.
pub const PAGES_LISTED: usize = 20;

fn concern(severity: Severity, kind: &'static str, what: String, pages: &[PageNo]) -> Concern {
    Concern {
        severity,
        kind,
        what,
        pages: pages.iter().take(PAGES_LISTED).map(|p| p.get()).collect(),
    }
}

/// Audits `db` (with its `survey`, and the write-ahead log read with it, if any).
/// Concerns come most severe first.
pub fn audit(db: &Database<'_>, survey: &Survey, wal: Option<&Wal<'_>>) -> Vec<Concern> {
    let mut out = Vec::new();
    wiped_free_pages(db, survey, &mut out);
    wiped_freeblocks(db, survey, &mut out);
    contradictions(db, survey, &mut out);
    roots(db, survey, &mut out);
    counters(db, survey, &mut out);
    if let Some(w) = wal {
        log(w, &mut out);
    }
    out.sort_by_key(|c| c.severity);
    out
}

/// Freed pages whose bytes are all zeros: SQLite leaves a freed page's content unless
/// `secure_delete` is on.
fn wiped_free_pages(db: &Database<'_>, survey: &Survey, out: &mut Vec<Concern>) {
    let leaves = &survey.freelist.leaves;
    let zeroed: Vec<PageNo> = leaves
        .iter()
        .copied()
        .filter(|p| db.page(*p).is_some_and(|page| page.is_zeroed()))
        .collect();
    let Some(severity) = wiped(zeroed.len() as u64, leaves.len() as u64) else {
        return;
    };
    let what = if severity == Severity::Info {
        format!(
            "all {} freed pages are zeros: secure_delete was on (the default of some builds: Debian's, Android's), they were freed in the transaction that made them, or they were wiped; nothing deleted can be carved from them",
            leaves.len()
        )
    } else {
        format!(
            "{} of {} freed pages are zeros while the others keep their old content: some may have been wiped",
            zeroed.len(),
            leaves.len()
        )
    };
    out.push(concern(severity, "wiped_free_pages", what, &zeroed));
}

/// How much `zeroed` of `all` freed places weigh. SQLite itself leaves zero pages (freed
/// in the transaction that made them, never written) and builds of it zero every freed
/// place (`secure_delete` on by default): all of them, at least two, is a fact to know;
/// a quarter or more, at least four, while the others keep their bytes, is unusual; fewer
/// is nothing.
fn wiped(zeroed: u64, all: u64) -> Option<Severity> {
    if zeroed >= 2 && zeroed == all {
        Some(Severity::Info)
    } else if zeroed >= 4 && zeroed * 4 >= all {
        Some(Severity::Low)
    } else {
        None
    }
}

/// Freeblocks of live b-tree pages whose bytes after their 4-byte header are all zeros:
/// SQLite leaves a freed cell's bytes unless `secure_delete` is on.
fn wiped_freeblocks(db: &Database<'_>, survey: &Survey, out: &mut Vec<Concern>) {
    let (mut blocks, mut zeroed) = (0u64, 0u64);
    let mut pages: Vec<PageNo> = Vec::new();
    for (first, count, class, owner) in survey.page_map.runs() {
        let live = matches!(
            class,
            pager::PageClass::TableLeaf
                | pager::PageClass::TableInterior
                | pager::PageClass::IndexLeaf
                | pager::PageClass::IndexInterior
        );
        if !live || owner.is_none() {
            continue;
        }
        for no in (first.get()..first.get().saturating_add(count)).filter_map(PageNo::new) {
            let Some(page) = db.page(no) else { continue };
            let Ok(header) = page.btree_header() else {
                continue;
            };
            let mut wiped_here = false;
            for block in page.freeblocks(&header).flatten() {
                // A freed record of NULLs is zeros after its first 4 bytes too: only a
                // block longer than such small records says anything.
                let body = block.bytes.get(4..).unwrap_or_default();
                if body.len() < 12 {
                    continue;
                }
                blocks += 1;
                if body.iter().all(|b| *b == 0) {
                    zeroed += 1;
                    wiped_here = true;
                }
            }
            if wiped_here {
                pages.push(no);
            }
        }
    }
    let Some(severity) = wiped(zeroed, blocks) else {
        return;
    };
    let what = if severity == Severity::Info {
        format!(
            "all {blocks} freed cells inside live pages are zeros: secure_delete was on (the default of some builds), or they were wiped"
        )
    } else {
        format!(
            "{zeroed} of {blocks} freed cells inside live pages are zeros: some may have been wiped"
        )
    };
    out.push(concern(severity, "wiped_freeblocks", what, &pages));
}

/// Header fields that disagree with the file, and structures that contradict each other.
fn contradictions(db: &Database<'_>, survey: &Survey, out: &mut Vec<Concern>) {
    let mut loops: Vec<PageNo> = Vec::new();
    let mut shared: Vec<PageNo> = Vec::new();
    for f in db.findings().iter().chain(survey.all_findings()) {
        match f {
            Finding::DatabaseSizeMismatch { declared, actual } => out.push(concern(
                Severity::High,
                "header_page_count",
                format!("the header says {declared} pages, the file holds {actual}"),
                &[],
            )),
            Finding::FreelistCountMismatch { .. } => out.push(concern(
                Severity::High,
                "header_freelist_count",
                format!("the header's freelist count disagrees with the freelist: {f}"),
                &[],
            )),
            Finding::BtreeCycle { page, .. } | Finding::OverflowCycle { repeated: page, .. } => {
                loops.push(*page)
            }
            Finding::FreelistCycle { .. } => out.push(concern(
                Severity::High,
                "pointer_loop",
                format!("the freelist loops: {f}"),
                &[],
            )),
            Finding::PageInTwoTrees { page, .. } => shared.push(*page),
            _ => {}
        }
    }
    loops.sort();
    loops.dedup();
    if !loops.is_empty() {
        out.push(concern(
            Severity::High,
            "pointer_loop",
            format!(
                "{} pointers lead back to a page already on their path (a b-tree or an overflow chain loops)",
                loops.len()
            ),
            &loops,
        ));
    }
    shared.sort();
    shared.dedup();
    if !shared.is_empty() {
        out.push(concern(
            Severity::High,
            "page_in_two_structures",
            format!("{} pages are claimed by two structures", shared.len()),
            &shared,
        ));
    }
}

/// Roots in the schema that do not fit their objects: a table whose root is no table
/// page, an index whose root is no index page, two objects with one root.
fn roots(db: &Database<'_>, survey: &Survey, out: &mut Vec<Concern>) {
    let mut by_root: BTreeMap<PageNo, Vec<&str>> = BTreeMap::new();
    for row in &survey.schema.rows {
        let Some(root) = row.rootpage.filter(|_| row.has_btree()) else {
            continue;
        };
        by_root.entry(root).or_default().push(&row.name);
        let kind = db
            .page(root)
            .and_then(|p| p.btree_header().ok())
            .map(|h| h.page_type());
        let table = row.kind == SchemaKind::Table && !row.is_without_rowid();
        let fits = match kind {
            Some(PageType::TableLeaf | PageType::TableInterior) => table,
            Some(PageType::IndexLeaf | PageType::IndexInterior) => !table,
            None => false,
        };
        if !fits {
            let is = kind.map_or_else(|| "no b-tree page".to_string(), |k| format!("a {k} page"));
            out.push(concern(
                Severity::High,
                "root_does_not_fit",
                format!(
                    "the schema gives {} `{}` root page {}, which is {is}",
                    row.kind.as_str(),
                    row.name,
                    root.get()
                ),
                &[root],
            ));
        }
    }
    for (root, names) in by_root.into_iter().filter(|(_, n)| n.len() > 1) {
        out.push(concern(
            Severity::High,
            "root_shared",
            format!(
                "{} name the same root page {}",
                names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(" and "),
                root.get()
            ),
            &[root],
        ));
    }
}

/// `sqlite_sequence` against the rows of its tables: an AUTOINCREMENT rowid is never
/// reused, so rowids below the counter that no row has were deleted, and a counter below
/// the largest rowid was edited.
fn counters(db: &Database<'_>, survey: &Survey, out: &mut Vec<Concern>) {
    let Some(seq_root) = survey
        .schema
        .get("sqlite_sequence")
        .and_then(|r| r.rootpage)
    else {
        return;
    };
    let (rows, _) = pager::read_tree(db, seq_root);
    for row in rows {
        let [Value::Text(name), Value::Integer(seq)] = row.values.as_slice() else {
            continue;
        };
        let name = db
            .encoding()
            .decode(name)
            .unwrap_or_else(|| String::from_utf8_lossy(name).into_owned());
        let Some(root) = survey.schema.get(&name).and_then(|r| r.rootpage) else {
            continue;
        };
        let (mut count, mut max) = (0i64, 0i64);
        for item in pager::BtreeWalk::new(db, root).flatten() {
            if let TreeItem::Cell(cell) = item {
                if let Some(rowid) = cell.cell.rowid() {
                    count += 1;
                    max = max.max(rowid);
                }
            }
        }
        if max > *seq {
            out.push(concern(
                Severity::Low,
                "sequence_behind_rows",
                format!(
                    "`{name}`: sqlite_sequence says {seq}, but a row has rowid {max}: an UPDATE (or upsert) of the rowid does this, and so does an edit of the counter (an INSERT keeps it at the largest rowid given)"
                ),
                &[seq_root],
            ));
        } else if *seq > 0 && count < *seq {
            let gone = seq - count;
            out.push(concern(
                Severity::Info,
                "autoincrement_gaps",
                format!(
                    "`{name}`: rowids up to {seq} were given and {count} rows remain: {gone} were deleted (AUTOINCREMENT never gives a rowid twice){}",
                    if *seq > max {
                        format!(", {} of them after the last remaining row", seq - max)
                    } else {
                        String::new()
                    }
                ),
                &[root],
            ));
        }
    }
}

/// The write-ahead log's frames outside the database.
fn log(wal: &Wal<'_>, out: &mut Vec<Concern>) {
    let older = wal
        .strays
        .iter()
        .filter(|s| matches!(s.kind, StrayKind::OlderGeneration { .. }))
        .count();
    if older > 0 {
        out.push(concern(
            Severity::Info,
            "wal_older_generation",
            format!(
                "{older} frames of the write-ahead log belong to an earlier generation (before a checkpoint reset it): older versions of pages (`recover --history`)"
            ),
            &[],
        ));
    }
    let uncommitted = wal
        .strays
        .iter()
        .filter(|s| s.kind == StrayKind::Uncommitted)
        .count();
    if uncommitted > 0 {
        out.push(concern(
            Severity::Info,
            "wal_uncommitted",
            format!(
                "{uncommitted} frames of the write-ahead log belong to a transaction that never committed"
            ),
            &[],
        ));
    }
    if wal
        .findings
        .iter()
        .any(|f| matches!(f, Finding::WalFrameChecksumMismatch { .. }))
    {
        out.push(concern(
            Severity::Low,
            "wal_broken_frame",
            "a frame of the write-ahead log fails its checksum: the log was cut or changed there, and what follows is not read".into(),
            &[],
        ));
    }
}
