//! What in a file looks deliberate or abnormal, graded by severity with its evidence
//! (`inspect --audit`): wiped free space, header fields that disagree with the file,
//! pointers that loop or that two structures share, roots that do not fit, counters that
//! disagree with the rows, an older generation of the write-ahead log. Each concern says
//! what was seen, not what was done: a wipe and `secure_delete` look the same.

use std::collections::BTreeMap;

use pager::{
    Database, Finding, PageNo, PageType, Schema, SchemaKind, StrayKind, Survey, TreeItem, Value,
    Wal,
};
use serde::Serialize;

use crate::N;

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
    zeroed_live_pages(db, survey, &mut out);
    wiped_freeblocks(db, survey, &mut out);
    contradictions(db, survey, &mut out);
    roots(db, survey, &mut out);
    counters(db, survey, &mut out);
    nul_in_text(db, survey, &mut out);
    if let Some(w) = wal {
        log(w, &mut out);
    }
    out.sort_by_key(|c| c.severity);
    out
}

/// What SQLite's own integrity check of the file (`problems`, as it words them) says
/// beyond the file's structure as read: that it finds problems at all (with the pages it
/// names), the rows an index lacks, by index (`schema` names each index's table), and the
/// rows that fail their table's CHECK constraint (`failing`). A file SQLite wrote with its
/// checks on never gives any.
pub fn sqlite_concerns(
    problems: &[String],
    failing: &[crate::FailingCheck],
    schema: &Schema,
) -> Vec<Concern> {
    // A table's CHECK failing is said by its rows, below.
    let explained =
        |p: &str| crate::check_failed_in(p).is_some_and(|t| failing.iter().any(|f| f.table == t));
    let mut out = Vec::new();
    let unexplained: Vec<String> = problems.iter().filter(|p| !explained(p)).cloned().collect();
    if let Some(first) = unexplained.first() {
        out.push(structure_concern(&unexplained, first));
    }
    let mut by_index: BTreeMap<(&str, &str), Vec<i64>> = BTreeMap::new();
    for (rowid, index) in crate::rows_missing_from_index(problems) {
        if let (Some(row), Some(table)) = (schema.get(&index), schema.table_of_index(&index)) {
            by_index
                .entry((row.name.as_str(), table))
                .or_default()
                .push(rowid);
        }
    }
    for ((index, table), rowids) in by_index {
        let shown: Vec<String> = rowids.iter().take(10).map(i64::to_string).collect();
        let more = if rowids.len() > shown.len() {
            ", …"
        } else {
            ""
        };
        out.push(concern(
            Severity::High,
            "index_lacks_rows",
            format!(
                "SQLite finds {} of `{table}` that its index `{index}` does not hold as {} read (rowid {}{more}): a value of the row, its record header, the index entry or the table's root page was changed",
                N(rowids.len() as u64, "row"),
                if rowids.len() == 1 { "it" } else { "they" },
                shown.join(", ")
            ),
            &[],
        ));
    }
    for f in failing {
        out.push(concern(
            Severity::Low,
            "rows_fail_check",
            f.to_string(),
            &[],
        ));
    }
    out
}

/// That SQLite's check finds problems at all, the `first` of them and the pages they name.
fn structure_concern(problems: &[String], first: &str) -> Concern {
    let mut pages: Vec<PageNo> = problems
        .iter()
        .flat_map(|p| p.split("page ").skip(1))
        .filter_map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            PageNo::new(digits.parse().ok()?)
        })
        .collect();
    pages.sort();
    pages.dedup();
    concern(
        Severity::High,
        "sqlite_check",
        format!(
            "SQLite's own integrity check reports {} (the first: {first})",
            N(problems.len() as u64, "problem")
        ),
        &pages,
    )
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

/// Pages a live b-tree points to whose bytes are all zeros: SQLite never writes one (a
/// page it frees leaves the tree first), so each is an edit or damage.
fn zeroed_live_pages(db: &Database<'_>, survey: &Survey, out: &mut Vec<Concern>) {
    let mut zeroed: Vec<PageNo> = db
        .findings()
        .iter()
        .chain(survey.all_findings())
        .filter_map(|f| match f {
            Finding::InvalidPageType { page, raw: 0 } => Some(*page),
            Finding::ChildNotBtreePage {
                child, raw_type: 0, ..
            } => Some(*child),
            _ => None,
        })
        .filter(|p| db.page(*p).is_some_and(|page| page.is_zeroed()))
        .collect();
    zeroed.sort();
    zeroed.dedup();
    if zeroed.is_empty() {
        return;
    }
    let what = format!(
        "{} page{} that live b-trees point to {} all zeros: SQLite never leaves a zeroed page in a tree, so {} wiped or damaged, and the rows {} held are gone",
        zeroed.len(),
        if zeroed.len() == 1 { "" } else { "s" },
        if zeroed.len() == 1 { "is" } else { "are" },
        if zeroed.len() == 1 { "it was" } else { "they were" },
        if zeroed.len() == 1 { "it" } else { "they" },
    );
    out.push(concern(Severity::High, "zeroed_live_pages", what, &zeroed));
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
            Finding::PageInTwoTrees { page, .. } | Finding::TreePageOnFreelist { page, .. } => {
                shared.push(*page)
            }
            _ => {}
        }
    }
    rewritten(db, survey, out);
    loops.sort();
    loops.dedup();
    if !loops.is_empty() {
        out.push(concern(
            Severity::High,
            "pointer_loop",
            if loops.len() == 1 {
                "1 pointer leads back to a page already on its path (a b-tree or an overflow chain loops)".to_string()
            } else {
                format!(
                    "{} pointers lead back to a page already on their path (a b-tree or an overflow chain loops)",
                    loops.len()
                )
            },
            &loops,
        ));
    }
    shared.sort();
    shared.dedup();
    if !shared.is_empty() {
        out.push(concern(
            Severity::High,
            "page_in_two_structures",
            format!(
                "{} {} claimed by two structures (two b-trees, or a b-tree and the freelist)",
                N(shared.len() as u64, "page"),
                if shared.len() == 1 { "is" } else { "are" }
            ),
            &shared,
        ));
    }
}

/// A part of the file that SQLite keeps consistent with another, found not to be, by
/// what was changed: `(kind, what was seen, whether a finding shows it)`.
type Rewrite = (&'static str, &'static str, fn(&Finding) -> bool);

/// The parts of pages and records an edit changes, each checked against what it must
/// agree with.
const REWRITES: [Rewrite; 5] = [
    (
        "cell_pointers_rewritten",
        "cell pointer arrays that do not match their cells (pointers into other cells or outside the content area, cells no pointer names)",
        |f| {
            matches!(
                f,
                Finding::CellPointerIntoCell { .. }
                    | Finding::CellPointerAstray { .. }
                    | Finding::CellsUnlisted { .. }
                    | Finding::CellOverlap { .. }
                    | Finding::CellPointerOutOfRange { .. }
            )
        },
    ),
    (
        "freeblocks_rewritten",
        "freeblock chains that loop, leave the content area or cover a live cell",
        |f| {
            matches!(
                f,
                Finding::FreeblockOutOfOrder { .. }
                    | Finding::FreeblockOutOfRange { .. }
                    | Finding::FreeblockOverCell { .. }
            )
        },
    ),
    (
        "record_headers_rewritten",
        "records whose header describes more or fewer bytes than the cell holds, or a serial type SQLite never writes",
        |f| {
            matches!(
                f,
                Finding::RecordSizeMismatch { .. }
                    | Finding::InvalidSerialType { .. }
                    | Finding::RecordHeaderSizeInvalid { .. }
            )
        },
    ),
    (
        "overflow_chains_redirected",
        "overflow chains that run into a page that is not theirs (another chain's, a b-tree's, the freelist's) or whose length does not match the payload",
        |f| {
            matches!(
                f,
                Finding::OverflowIntoNonOverflowPage { .. }
                    | Finding::OverflowChainShort { .. }
                    | Finding::OverflowChainTooLong { .. }
            )
        },
    ),
    (
        "child_pointers_crossed",
        "b-tree pages whose keys lie outside the range their parent's pointer assigns, or of another kind than their parent's (a child pointer leads into another part of the tree, or another tree)",
        |f| {
            matches!(
                f,
                Finding::KeyOutOfRange { .. } | Finding::ChildPageKindMismatch { .. }
            )
        },
    ),
];

/// Pages and records whose parts disagree where SQLite keeps them in step ([`REWRITES`]):
/// a concern per kind, with the pages it was seen on.
fn rewritten(db: &Database<'_>, survey: &Survey, out: &mut Vec<Concern>) {
    for (kind, what, shows) in REWRITES {
        let mut pages: Vec<PageNo> = db
            .findings()
            .iter()
            .chain(survey.all_findings())
            .filter(|f| shows(f))
            .filter_map(Finding::page)
            .collect();
        if pages.is_empty() {
            continue;
        }
        pages.sort();
        pages.dedup();
        out.push(concern(
            Severity::High,
            kind,
            format!("{} with {what}", N(pages.len() as u64, "page")),
            &pages,
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

/// Text values of the tables that hold a NUL character. SQLite stores and returns
/// every byte of a text, NULs included; a reader that takes text as a C string shows it
/// cut at the first NUL, which hides what follows from such a reader.
fn nul_in_text(db: &Database<'_>, survey: &Survey, out: &mut Vec<Concern>) {
    let utf8 = db.encoding() == pager::TextEncoding::Utf8;
    let holds_nul = |t: &[u8]| {
        if utf8 {
            t.contains(&0)
        } else {
            t.chunks_exact(2).any(|c| c == [0, 0])
        }
    };
    let (mut values, mut pages, mut tables) = (0u64, Vec::new(), Vec::new());
    for row in survey
        .schema
        .rows
        .iter()
        .filter(|r| r.kind == SchemaKind::Table)
    {
        let Some(root) = row.rootpage else { continue };
        let before = values;
        for item in pager::BtreeWalk::new(db, root).flatten() {
            let TreeItem::Cell(cell) = item else { continue };
            let Ok(decoded) = pager::decode_cell(db, &cell) else {
                continue;
            };
            let here = decoded
                .values
                .iter()
                .filter(|v| matches!(v, Value::Text(t) if holds_nul(t)))
                .count() as u64;
            if here > 0 {
                values += here;
                pages.push(cell.location.page);
            }
        }
        if values > before {
            tables.push(format!("`{}`", row.name));
        }
    }
    if values == 0 {
        return;
    }
    pages.sort();
    pages.dedup();
    out.push(concern(
        Severity::Info,
        "nul_in_text",
        format!(
            "{} of {} a NUL character: SQLite keeps every byte, but a reader that takes text as a C string shows it cut at the first NUL (some applications write one on purpose; an edit can hide text behind one)",
            N(values, "text value"),
            tables.join(", ") + if values == 1 { " holds" } else { " hold" }
        ),
        &pages,
    ));
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
    // A break with no commit past it is an open transaction's (`Wal::commits_past_break`),
    // said above when its frames before the break are counted; after the break nothing
    // committed is lost.
    if wal.commits_past_break > 0
        && wal
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
