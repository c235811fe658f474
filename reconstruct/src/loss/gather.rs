//! The signals a run gathers, each from the facts that prove it: a table's counts, the
//! file's survey, the placeholders made or not, and each table's status and loss bounds.

use std::collections::{BTreeMap, BTreeSet};

use pager::{Finding, PageClass, PageNo, Survey};
use serde::{Deserialize, Serialize};

use super::{LossSignal, TableLoss};
use crate::bounds::LossBounds;
use crate::placeholders::PlaceholderOutcome;
use crate::table::TableStatus;

/// The signals one filled table gives from its counts.
pub fn table_signals(table: &str, t: &TableLoss) -> Vec<LossSignal> {
    let name = || table.to_string();
    let mut out = Vec::new();
    if t.root_lost {
        out.push(LossSignal::RootUnreadable { table: name() });
    }
    let counted = [
        (
            t.lost_subtrees,
            LossSignal::SubtreesLost {
                table: name(),
                pointers: t.lost_subtrees,
            },
        ),
        (
            t.from_orphans,
            LossSignal::RowsFromOrphans {
                table: name(),
                rows: t.from_orphans,
            },
        ),
        (
            t.damaged_rows,
            LossSignal::DamagedFields {
                table: name(),
                rows: t.damaged_rows,
            },
        ),
        (
            t.unreadable_cells,
            LossSignal::UndecodableCells {
                table: name(),
                cells: t.unreadable_cells,
            },
        ),
        (
            t.conflicts,
            LossSignal::KeyConflicts {
                table: name(),
                rows: t.conflicts,
            },
        ),
        (
            t.rejected,
            LossSignal::RowsRefused {
                table: name(),
                rows: t.rejected,
            },
        ),
        (
            t.unwritable,
            LossSignal::RowsUnwritable {
                table: name(),
                rows: t.unwritable,
            },
        ),
    ];
    out.extend(counted.into_iter().filter(|(n, _)| *n > 0).map(|(_, s)| s));
    if t.tree_findings > 0 && t.lost_subtrees == 0 && !t.root_lost {
        out.push(LossSignal::TreeFindings {
            table: name(),
            findings: t.tree_findings,
        });
    }
    out
}

/// The sign that SQLite's own integrity check of the source (`problems`, as it words
/// them) finds what nothing else the recovery found accounts for: `None` when SQLite
/// finds nothing, or when the recovery already gives a sign of loss (`signals`) or a
/// finding of the file (`findings`) that says where the file is damaged.
///
/// A full-text index's problems are accounted for by the recovery itself: every
/// full-text index is rebuilt on the output from its table's content, never copied (a
/// rebuild that fails is a sign of its own).
///
/// SQLite refusing the schema ("malformed database schema (NAME)") is accounted for when
/// the run noted what it made of the schema rows (`schema_noted`: a row whose name
/// disagrees with its statement, say, recovered under the statement's name).
///
/// A table's CHECK constraint failing ("CHECK constraint failed in NAME") is accounted
/// for by the rows SQLite reads that fail it (`failing`, found by their expressions): the
/// file holds them so, every one is read and kept as it holds them, and the report names
/// them. None found, it stays unexplained.
pub fn sqlite_check_signal(
    problems: &[String],
    failing: &[FailingCheck],
    signals: &[LossSignal],
    (findings, schema_noted): (usize, bool),
) -> Option<LossSignal> {
    let unexplained: Vec<&String> = problems
        .iter()
        .filter(|p| !of_full_text_index(p))
        .filter(|p| !(schema_noted && p.starts_with("malformed database schema")))
        .filter(|p| {
            check_failed_in(p).is_none_or(|t| !failing.iter().any(|f| f.table == t && f.rows > 0))
        })
        .collect();
    let first = unexplained.first()?;
    (signals.is_empty() && findings == 0).then(|| LossSignal::SqliteCheckUnexplained {
        problems: unexplained.len() as u64,
        first: (*first).clone(),
    })
}

/// The rows SQLite reads that fail their table's CHECK constraint, as the file holds
/// them: written with the checks off (`PRAGMA ignore_check_constraints`), judged otherwise
/// by the SQLite that wrote them (a function's answer changed between versions), or a
/// value changed since by damage that left its record whole, which looks no different.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailingCheck {
    /// The table, as its schema names it.
    pub table: String,
    /// How many of its rows fail one of its CHECK constraints.
    pub rows: u64,
    /// The first of their rowids, in order (none for a WITHOUT ROWID table).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rowids: Vec<i64>,
}

impl FailingCheck {
    /// Whether the rows found agree with SQLite's check, which gives a line for each row
    /// failing (`lines` of them for this table; `whole`: its list was not cut short): as
    /// many rows as lines, or, the list cut, at least as many. More rows found than SQLite
    /// lists means the expressions were read otherwise than SQLite reads them.
    pub fn agrees(&self, lines: u64, whole: bool) -> bool {
        self.rows > 0 && (self.rows == lines || (!whole && self.rows >= lines))
    }
}

/// How many rowids a [`FailingCheck`] lists.
pub const FAILING_ROWIDS_LISTED: usize = 20;

/// The table SQLite's problem says fails its CHECK constraint ("CHECK constraint failed
/// in NAME"), if that is the problem.
pub fn check_failed_in(problem: &str) -> Option<&str> {
    problem.strip_prefix("CHECK constraint failed in ")
}

/// The rows SQLite's check says an index lacks ("row 2 missing from index
/// messages_by_contact"), as `(rowid, index)`: rows whose values their index entry may
/// contradict, to be looked up in that index. Other problems name no row.
pub fn rows_missing_from_index(problems: &[String]) -> Vec<(i64, String)> {
    problems
        .iter()
        .filter_map(|p| {
            let rest = p.strip_prefix("row ")?;
            let (rowid, index) = rest.split_once(" missing from index ")?;
            Some((rowid.parse().ok()?, index.to_string()))
        })
        .collect()
}

/// Of the rows SQLite's check says an index lacks (`named`), those whose own page
/// vouches that it is the table's: most of its rows are rows the check does not name,
/// which the index does hold (`cells`: every row of the table's tree as `(page, rowid)`).
/// Only such a row is damaged in place, its values for its index entries to correct; a
/// page whose rows are named as often as not may be another table's (a child pointer
/// crossed into it, a stray row of the page read in range), its rows not this index's
/// to judge.
/// `complete`: whether the check listed every problem (a list cut short vouches for no
/// row it leaves out).
pub fn rows_in_place(
    cells: impl IntoIterator<Item = (PageNo, i64)>,
    named: &BTreeSet<i64>,
    complete: bool,
) -> BTreeSet<i64> {
    if !complete {
        return BTreeSet::new();
    }
    // Per page: how many rows it holds that the check does not name, and its named rows.
    let mut pages: BTreeMap<PageNo, (usize, Vec<i64>)> = BTreeMap::new();
    for (page, rowid) in cells {
        let entry = pages.entry(page).or_default();
        if named.contains(&rowid) {
            entry.1.push(rowid);
        } else {
            entry.0 += 1;
        }
    }
    pages
        .into_values()
        .filter(|(held, rows)| *held > rows.len())
        .flat_map(|(_, rows)| rows)
        .collect()
}

/// Whether SQLite's problem is one of a full-text table's index, as SQLite words it
/// ("malformed inverted index for FTS5 table …", "fts5: corruption found reading blob
/// … from table …").
fn of_full_text_index(problem: &str) -> bool {
    let p = problem.to_ascii_lowercase();
    p.contains("inverted index for fts")
        || p.starts_with("fts5: ")
        || p.starts_with("fts3: ")
        || p.starts_with("fts4: ")
}

/// Whether a pointer of the file reaches past its `pages` pages: a child pointer, an
/// overflow chain, a freelist trunk or leaf, a schema row's root page. Only such a pointer
/// shows that pages once past the file's end held something.
pub fn reaches_past_end(survey: &Survey, pages: u32) -> bool {
    survey.all_findings().any(|f| match f {
        Finding::ChildPointerPastEnd { .. }
        | Finding::OverflowPastEnd { .. }
        | Finding::FreelistTrunkPastEnd { .. } => true,
        Finding::FreelistLeafInvalid { leaf, .. } => *leaf > pages,
        Finding::SchemaRootPageInvalid { rootpage, .. } => *rootpage > i64::from(pages),
        _ => false,
    })
}

/// The signals of the file as a whole: rows in `lost_and_found`, unreadable pages (but
/// those in `vouched`, shown to have held nothing a reader needs), a damaged schema, a
/// file shorter than its header says.
pub fn file_signals(
    survey: &Survey,
    lost_and_found: (u64, usize),
    header_findings: &[Finding],
    vouched: &BTreeSet<PageNo>,
) -> Vec<LossSignal> {
    let mut out = Vec::new();
    let (rows, groups) = lost_and_found;
    if rows > 0 {
        out.push(LossSignal::LostAndFound {
            rows,
            groups: groups as u64,
        });
    }
    let unclaimed = survey
        .page_map
        .counts()
        .into_iter()
        .filter(|(c, _)| matches!(c, PageClass::Zeroed | PageClass::Unrecognised))
        .map(|(_, n)| u64::from(n))
        .sum::<u64>()
        .saturating_sub(
            vouched
                .iter()
                .filter(|p| survey.page_map.class(**p) == Some(PageClass::Zeroed))
                .count() as u64,
        );
    if unclaimed > 0 {
        out.push(LossSignal::PagesUnreadable { pages: unclaimed });
    }
    if let Some(schema) = survey.trees.first().filter(|s| !s.findings.is_empty()) {
        out.push(LossSignal::SchemaDamaged {
            findings: schema.findings.len() as u64,
        });
    }
    for f in header_findings {
        if matches!(f, Finding::FileNotPageMultiple { .. }) {
            out.push(LossSignal::FileCutShort {
                finding: f.to_string(),
            });
        }
        if let Finding::DatabaseSizeMismatch { declared, actual } = f {
            // Pages are missing only where something of the file points at one: a header
            // count larger than the file, alone, is a finding and a warning.
            if actual < declared && reaches_past_end(survey, *actual) {
                out.push(LossSignal::PagesMissing {
                    present: *actual,
                    declared: *declared,
                });
            }
        }
    }
    out
}

/// One signal per parent/child pair of placeholders: children kept under placeholders
/// (the parents' own data is gone), and children whose parent could not be rebuilt.
pub fn placeholder_signals(outcome: &PlaceholderOutcome) -> Vec<LossSignal> {
    use std::collections::BTreeMap;
    let mut made: BTreeMap<(&str, &str), (u64, u64)> = BTreeMap::new();
    for m in &outcome.made {
        let e = made.entry((&m.table, &m.child_table)).or_default();
        e.0 += 1;
        e.1 += m.children;
    }
    let mut blocked: BTreeMap<(&str, &str), (u64, u64, String)> = BTreeMap::new();
    for b in &outcome.blocked {
        let e = blocked.entry((&b.table, &b.child_table)).or_default();
        e.0 += 1;
        e.1 += b.children;
        e.2 = b.why.to_string();
    }
    let mut out: Vec<LossSignal> = made
        .into_iter()
        .map(
            |((parent, child), (n, children))| LossSignal::PlaceholdersMade {
                parent: parent.into(),
                child: child.into(),
                placeholders: n,
                children,
            },
        )
        .collect();
    out.extend(
        blocked
            .into_iter()
            .map(
                |((parent, child), (n, children, reason))| LossSignal::ParentsNotRebuilt {
                    parent: parent.into(),
                    child: child.into(),
                    keys: n,
                    children,
                    reason,
                },
            ),
    );
    out
}

/// What a table contributes to the run's signals beyond its counts.
#[derive(Clone, Copy, Debug)]
pub struct TableFacts<'a> {
    /// The table's name.
    pub name: &'a str,
    /// What became of it.
    pub status: TableStatus,
    /// Why, for a table not recovered.
    pub reason: Option<&'a str>,
    /// Its counts (all zero for a table not filled).
    pub loss: &'a TableLoss,
    /// Its loss bounds, when anything says it lost rows.
    pub bounds: Option<&'a LossBounds>,
}

/// The signals of a table beyond its counts, in the report's order: partial rows, then
/// its loss bounds, then whether it is inferred or failed. (Grouped by kind across the
/// tables: [`signals_after_counts`].)
pub fn signals_after_counts(tables: &[TableFacts<'_>], registry: Option<&str>) -> Vec<LossSignal> {
    let registry = registry.unwrap_or("salvage_partial_rows").to_string();
    let mut out = Vec::new();
    for t in tables {
        let loss = t.loss;
        if loss.partial_rows > 0 {
            out.push(LossSignal::PartialRowsRebuilt {
                table: t.name.into(),
                rows: loss.partial_rows,
                registry: registry.clone(),
            });
        }
        if loss.partial_refused > 0 {
            out.push(LossSignal::PartialRowsRefused {
                table: t.name.into(),
                rows: loss.partial_refused,
                registry: registry.clone(),
            });
        }
    }
    for t in tables {
        if let Some(b) = t.bounds.filter(|b| b.lower > 0 || b.upper != Some(0)) {
            out.push(LossSignal::RowsLost {
                table: t.name.into(),
                lower: b.lower,
                upper: b.upper,
                by_index: b.proven_by_index,
                by_text: b.proven_by_text,
            });
        }
    }
    for t in tables.iter().filter(|t| t.status == TableStatus::Inferred) {
        out.push(LossSignal::TableInferred {
            table: t.name.into(),
            rows: t.loss.written(),
        });
    }
    for t in tables.iter().filter(|t| t.status == TableStatus::Failed) {
        out.push(LossSignal::TableNotRecovered {
            table: t.name.into(),
            reason: t.reason.unwrap_or_default().into(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use pager::{survey, Database};

    use super::*;
    use crate::placeholders::{Blocked, Made, Unbuilt};
    use crate::testing::{file, leaf, named_row, schema_row, zeroed};

    #[test]
    fn only_a_page_most_of_whose_rows_are_unnamed_vouches_for_the_others() {
        let p = |n| PageNo::new(n).unwrap();
        let cells = [
            (p(3), 1),
            (p(3), 2),
            (p(3), 3),
            (p(4), 4),
            (p(4), 5),
            (p(5), 6),
            (p(5), 7),
        ];
        let named: BTreeSet<i64> = [2, 4, 5, 6].into();
        // Page 3 holds rows 1 and 3, which the index holds: row 2 is damaged in place.
        // Every row of page 4 is named, and half of page 5's: either may be another
        // table's page.
        assert_eq!(rows_in_place(cells, &named, true), [2].into());
        assert!(rows_in_place(cells, &named, false).is_empty());
    }

    #[test]
    fn sqlite_names_the_rows_an_index_lacks() {
        let problems = [
            "*** in database main ***".to_string(),
            "row 2 missing from index messages_by_contact".to_string(),
            "row -7 missing from index odd name".to_string(),
            "wrong # of entries in index messages_by_contact".to_string(),
            "row x missing from index i".to_string(),
        ];
        assert_eq!(
            rows_missing_from_index(&problems),
            vec![
                (2, "messages_by_contact".to_string()),
                (-7, "odd name".to_string())
            ]
        );
    }

    #[test]
    fn sqlite_s_problems_are_loss_only_where_nothing_else_explains_them() {
        let problems = [
            "row 7 missing from index t_k".to_string(),
            "wrong # of entries in index t_k".to_string(),
        ];
        assert_eq!(
            sqlite_check_signal(&problems, &[], &[], (0, false)),
            Some(LossSignal::SqliteCheckUnexplained {
                problems: 2,
                first: "row 7 missing from index t_k".into()
            })
        );
        let other = [LossSignal::PagesUnreadable { pages: 1 }];
        assert_eq!(
            sqlite_check_signal(&problems, &[], &other, (0, false)),
            None
        );
        assert_eq!(sqlite_check_signal(&problems, &[], &[], (1, false)), None);
        assert_eq!(sqlite_check_signal(&[], &[], &[], (0, false)), None);
        // The recovery rebuilds every full-text index from its content.
        let fts = [
            "malformed inverted index for FTS5 table main.docs".to_string(),
            "fts5: corruption found reading blob 137438953473 from table \"docs\"".to_string(),
        ];
        assert_eq!(sqlite_check_signal(&fts, &[], &[], (0, false)), None);
        let schema = ["malformed database schema (idx_x)".to_string()];
        assert!(sqlite_check_signal(&schema, &[], &[], (0, false)).is_some());
        assert_eq!(sqlite_check_signal(&schema, &[], &[], (0, true)), None);
        // A CHECK constraint's failure is explained by the rows found failing it, in
        // that table; none found, or another table's, it is not.
        let check = ["CHECK constraint failed in t".to_string()];
        let failing = |table: &str, rows| FailingCheck {
            table: table.into(),
            rows,
            rowids: vec![],
        };
        assert_eq!(
            sqlite_check_signal(&check, &[failing("t", 2)], &[], (0, false)),
            None
        );
        for other in [failing("t", 0), failing("u", 2)] {
            assert!(sqlite_check_signal(&check, &[other], &[], (0, false)).is_some());
        }
        // As many rows as SQLite's lines; at least as many when its list was cut short.
        assert!(failing("t", 2).agrees(2, true));
        assert!(!failing("t", 3).agrees(2, true));
        assert!(!failing("t", 1).agrees(2, false));
        assert!(failing("t", 3).agrees(2, false));
        assert!(!failing("t", 0).agrees(0, true));
    }

    #[test]
    fn table_read_whole_gives_no_signal() {
        // Placeholders, partial rows and texts kept as stored are said elsewhere
        // (`placeholder_signals`, `signals_after_counts`, the warnings).
        let t = TableLoss {
            from_tree: 10,
            placeholders: 2,
            partial_rows: 1,
            partial_refused: 1,
            rejected_unproven: 1,
            texts_not_in_encoding: 3,
            ..TableLoss::default()
        };
        assert_eq!(table_signals("a", &t), vec![]);
    }

    #[test]
    fn each_count_gives_its_signal_in_report_order() {
        let t = TableLoss {
            root_lost: true,
            lost_subtrees: 2,
            from_orphans: 3,
            damaged_rows: 4,
            unreadable_cells: 5,
            conflicts: 6,
            rejected: 7,
            unwritable: 8,
            tree_findings: 9,
            ..TableLoss::default()
        };
        let table = || "a".to_string();
        assert_eq!(
            table_signals("a", &t),
            vec![
                LossSignal::RootUnreadable { table: table() },
                LossSignal::SubtreesLost {
                    table: table(),
                    pointers: 2,
                },
                LossSignal::RowsFromOrphans {
                    table: table(),
                    rows: 3,
                },
                LossSignal::DamagedFields {
                    table: table(),
                    rows: 4,
                },
                LossSignal::UndecodableCells {
                    table: table(),
                    cells: 5,
                },
                LossSignal::KeyConflicts {
                    table: table(),
                    rows: 6,
                },
                LossSignal::RowsRefused {
                    table: table(),
                    rows: 7,
                },
                LossSignal::RowsUnwritable {
                    table: table(),
                    rows: 8,
                },
                // No TreeFindings: the lost root says more.
            ]
        );
    }

    #[test]
    fn tree_findings_are_a_signal_only_where_nothing_else_was_lost() {
        let findings = TableLoss {
            tree_findings: 3,
            ..TableLoss::default()
        };
        assert_eq!(
            table_signals("a", &findings),
            vec![LossSignal::TreeFindings {
                table: "a".into(),
                findings: 3,
            }]
        );
        let subtree_lost = TableLoss {
            lost_subtrees: 1,
            ..findings.clone()
        };
        assert!(!table_signals("a", &subtree_lost)
            .iter()
            .any(|s| matches!(s, LossSignal::TreeFindings { .. })));
        let root_lost = TableLoss {
            root_lost: true,
            ..findings
        };
        assert_eq!(
            table_signals("a", &root_lost),
            vec![LossSignal::RootUnreadable { table: "a".into() }]
        );
    }

    /// Table `a` rooted at page 2, a leaf of one row, and `extra` pages after it.
    fn file_with(extra: &[Vec<u8>]) -> Vec<u8> {
        let sql = "CREATE TABLE a(id INTEGER PRIMARY KEY, name TEXT)";
        let mut pages = vec![leaf(&[&named_row(1, b'a')])];
        pages.extend_from_slice(extra);
        file(&[&schema_row(1, "a", 2, sql)], &pages)
    }

    fn signals_of(bytes: &[u8], lost_and_found: (u64, usize)) -> Vec<LossSignal> {
        let db = Database::open(bytes).unwrap();
        file_signals(
            &survey(&db),
            lost_and_found,
            db.findings(),
            &BTreeSet::new(),
        )
    }

    #[test]
    fn sound_file_gives_no_signal() {
        assert_eq!(signals_of(&file_with(&[]), (0, 0)), vec![]);
        // Groups with no row in them are no loss either.
        assert_eq!(signals_of(&file_with(&[]), (0, 2)), vec![]);
    }

    #[test]
    fn rows_in_lost_and_found_are_a_signal() {
        assert_eq!(
            signals_of(&file_with(&[]), (5, 2)),
            vec![LossSignal::LostAndFound { rows: 5, groups: 2 }]
        );
    }

    #[test]
    fn zeroed_and_unrecognisable_pages_may_have_held_rows() {
        let garbage = vec![0xa5u8; 512];
        assert_eq!(
            signals_of(&file_with(&[zeroed(), garbage]), (0, 0)),
            vec![LossSignal::PagesUnreadable { pages: 2 }]
        );
    }

    #[test]
    fn damaged_schema_may_have_lost_tables() {
        // A second schema row names root page 99 of a 2-page file.
        let bytes = file(
            &[
                &schema_row(
                    1,
                    "a",
                    2,
                    "CREATE TABLE a(id INTEGER PRIMARY KEY, name TEXT)",
                ),
                &schema_row(2, "z", 99, "CREATE TABLE z(v)"),
            ],
            &[leaf(&[&named_row(1, b'a')])],
        );
        assert_eq!(
            signals_of(&bytes, (0, 0)),
            vec![LossSignal::SchemaDamaged { findings: 1 }]
        );
    }

    #[test]
    fn file_cut_short_in_a_page_is_a_signal() {
        let mut bytes = file_with(&[zeroed()]);
        bytes.truncate(512 * 2 + 256);
        // The zeroed part of page 3 is an unreadable page too.
        assert_eq!(
            signals_of(&bytes, (0, 0)),
            vec![
                LossSignal::PagesUnreadable { pages: 1 },
                LossSignal::FileCutShort {
                    finding: "file length is not a multiple of the page size 512: 1280 bytes"
                        .into(),
                },
            ]
        );
    }

    #[test]
    fn fewer_pages_than_the_header_declares_are_missing_only_where_a_pointer_says_so() {
        // In-header database size 3, of a file of 2 pages, and nothing points at page 3:
        // a finding, not loss.
        let mut bytes = file_with(&[]);
        bytes[31] = 3;
        assert_eq!(signals_of(&bytes, (0, 0)), vec![]);
        // The schema names page 3 as a root: it is missing.
        let sql = "CREATE TABLE a(id INTEGER PRIMARY KEY, name TEXT)";
        let mut bytes = file(
            &[&schema_row(1, "a", 3, sql)],
            &[leaf(&[&named_row(1, b'a')])],
        );
        bytes[31] = 3;
        assert!(
            signals_of(&bytes, (0, 0)).contains(&LossSignal::PagesMissing {
                present: 2,
                declared: 3,
            })
        );
        // More pages than it declares: nothing is missing.
        let mut bytes = file_with(&[leaf(&[&named_row(2, b'b')])]);
        bytes[31] = 2;
        assert!(!signals_of(&bytes, (0, 0))
            .iter()
            .any(|s| matches!(s, LossSignal::PagesMissing { .. })));
    }

    fn made(parent: &str, child: &str, children: u64) -> Made {
        Made {
            table: parent.into(),
            rowid: 1,
            key: "1".into(),
            child_table: child.into(),
            children,
            filled: Vec::new(),
            origin: "foreign key".into(),
        }
    }

    fn blocked(parent: &str, child: &str, children: u64, why: Unbuilt) -> Blocked {
        Blocked {
            table: parent.into(),
            key: "7".into(),
            child_table: child.into(),
            children,
            why,
        }
    }

    #[test]
    fn placeholders_give_one_signal_per_parent_and_child_table() {
        let outcome = PlaceholderOutcome {
            made: vec![
                made("users", "sessions", 1),
                made("sessions", "messages", 3),
                made("sessions", "messages", 2),
            ],
            blocked: vec![
                blocked("sessions", "tool_calls", 4, Unbuilt::NotAsked),
                blocked(
                    "sessions",
                    "tool_calls",
                    1,
                    Unbuilt::Refused("NOT NULL constraint failed: sessions.model".into()),
                ),
            ],
            ..PlaceholderOutcome::default()
        };
        assert_eq!(
            placeholder_signals(&outcome),
            vec![
                LossSignal::PlaceholdersMade {
                    parent: "sessions".into(),
                    child: "messages".into(),
                    placeholders: 2,
                    children: 5,
                },
                LossSignal::PlaceholdersMade {
                    parent: "users".into(),
                    child: "sessions".into(),
                    placeholders: 1,
                    children: 1,
                },
                LossSignal::ParentsNotRebuilt {
                    parent: "sessions".into(),
                    child: "tool_calls".into(),
                    keys: 2,
                    children: 5,
                    // The last reason given.
                    reason:
                        "the output refused the row: NOT NULL constraint failed: sessions.model"
                            .into(),
                },
            ]
        );
        assert_eq!(placeholder_signals(&PlaceholderOutcome::default()), vec![]);
    }

    fn facts<'a>(
        name: &'a str,
        status: TableStatus,
        loss: &'a TableLoss,
        bounds: Option<&'a LossBounds>,
    ) -> TableFacts<'a> {
        TableFacts {
            name,
            status,
            reason: None,
            loss,
            bounds,
        }
    }

    #[test]
    fn partial_rows_then_bounds_then_inferred_then_failed_tables() {
        let partial = TableLoss {
            partial_rows: 2,
            partial_refused: 1,
            ..TableLoss::default()
        };
        let inferred = TableLoss {
            from_orphans: 4,
            ..TableLoss::default()
        };
        let none = TableLoss::default();
        let lost = LossBounds {
            lower: 3,
            upper: Some(5),
            proven_by_index: 2,
            proven_by_text: 1,
            evidence: Vec::new(),
        };
        let tables = [
            TableFacts {
                reason: Some("no CREATE statement SQLite accepts"),
                ..facts("f", TableStatus::Failed, &none, None)
            },
            facts("i", TableStatus::Inferred, &inferred, None),
            facts("p", TableStatus::Recovered, &partial, Some(&lost)),
        ];
        let registry = || "salvage_partial_rows".to_string();
        assert_eq!(
            signals_after_counts(&tables, None),
            vec![
                LossSignal::PartialRowsRebuilt {
                    table: "p".into(),
                    rows: 2,
                    registry: registry(),
                },
                LossSignal::PartialRowsRefused {
                    table: "p".into(),
                    rows: 1,
                    registry: registry(),
                },
                LossSignal::RowsLost {
                    table: "p".into(),
                    lower: 3,
                    upper: Some(5),
                    by_index: 2,
                    by_text: 1,
                },
                LossSignal::TableInferred {
                    table: "i".into(),
                    rows: 4,
                },
                LossSignal::TableNotRecovered {
                    table: "f".into(),
                    reason: "no CREATE statement SQLite accepts".into(),
                },
            ]
        );
        // The registry the run named.
        let named = signals_after_counts(&tables[2..], Some("registry_x"));
        assert!(matches!(
            &named[0],
            LossSignal::PartialRowsRebuilt { registry, .. } if registry == "registry_x"
        ));
    }

    #[test]
    fn bounds_say_loss_unless_they_prove_none() {
        let none = TableLoss::default();
        let bounded = |lower: u64, upper: Option<u64>| LossBounds {
            lower,
            upper,
            ..LossBounds::default()
        };
        let nothing_lost = bounded(0, Some(0));
        let unknown = bounded(0, None);
        let tables = [
            facts("zero", TableStatus::Recovered, &none, Some(&nothing_lost)),
            facts("unknown", TableStatus::Recovered, &none, Some(&unknown)),
        ];
        assert_eq!(
            signals_after_counts(&tables, None),
            vec![LossSignal::RowsLost {
                table: "unknown".into(),
                lower: 0,
                upper: None,
                by_index: 0,
                by_text: 0,
            }]
        );
    }

    #[test]
    fn failed_table_without_a_reason_and_other_statuses() {
        let none = TableLoss::default();
        let mut tables = vec![facts("f", TableStatus::Failed, &none, None)];
        for status in [
            TableStatus::Recovered,
            TableStatus::Skipped,
            TableStatus::Missing,
            TableStatus::Rebuilt,
            TableStatus::Lost,
        ] {
            tables.push(facts("other", status, &none, None));
        }
        assert_eq!(
            signals_after_counts(&tables, None),
            vec![LossSignal::TableNotRecovered {
                table: "f".into(),
                reason: String::new(),
            }]
        );
    }
}
