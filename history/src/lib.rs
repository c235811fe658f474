//! `history`: every version of every row that a write-ahead log or a rollback journal
//! still holds. Pure: it reads the bytes the caller gives and decides; it writes nothing.
//!
//! A write-ahead log is a sequence of committed transactions, each a set of page images
//! ("The WAL File Format"). The database after commit `k` is the main file with the images
//! of commits `1..=k` read over it. A row changes only on a page its commit wrote, so the
//! rows of those pages before and after each commit, compared by table and rowid, are
//! that commit's inserts, updates and deletes: a row that moved to another page (a split)
//! was written there by the same commit and is no change. Which table a leaf belongs to
//! is read from the schema and the trees of the state it is read in ([`Owners`]), again
//! only when a commit wrote more than leaves.
//!
//! Beyond the commits, a log holds frames of a transaction that never committed and
//! frames of an earlier generation of the log, overwritten from the start since: their
//! rows are evidence too, labelled so ([`StepKind::Uncommitted`], [`Stray`]).
//!
//! A rollback journal holds the images of the pages its transaction changed, as they were
//! before it ("The Rollback Journal"): a hot one (the transaction never committed) and a
//! persisted one (`journal_mode=PERSIST`: committed, header zeroed, records left) give
//! one step each, from the journal's images to the main file's.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use pager::{Database, FrameNo, Journal, PageNo, PageType, StrayKind, Value, Wal};
use reconstruct::{RowEvent, TableRows};

mod owners;
#[cfg(test)]
mod testing;

pub use owners::{Owners, SCHEMA_TABLE};

/// What a change did to a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Op {
    /// The row was not there before.
    Insert,
    /// The row was there with other values.
    Update,
    /// The row is not there after.
    Delete,
}

impl Op {
    /// The name the output and the report use.
    pub fn name(self) -> &'static str {
        match self {
            Op::Insert => "insert",
            Op::Update => "update",
            Op::Delete => "delete",
        }
    }
}

/// One row changed by one step.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    /// Its table.
    pub table: String,
    /// Its rowid.
    pub rowid: i64,
    /// Its values before the step, in record order; `None` when it was not there.
    pub before: Option<Vec<Value>>,
    /// Its values after the step; `None` when it is not there.
    pub after: Option<Vec<Value>>,
}

impl Change {
    /// What the step did to the row.
    pub fn op(&self) -> Op {
        match (&self.before, &self.after) {
            (None, _) => Op::Insert,
            (Some(_), Some(_)) => Op::Update,
            (Some(_), None) => Op::Delete,
        }
    }
}

/// What a step of a history is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepKind {
    /// A committed transaction of the log: its number in commit order (1-based), its
    /// frames, and the database size after it.
    Commit {
        /// Its number.
        no: u32,
        /// Its first frame.
        first: FrameNo,
        /// Its commit frame.
        last: FrameNo,
        /// Pages in the database after it.
        db_size: u32,
    },
    /// Frames after the last commit: a transaction that never committed.
    Uncommitted {
        /// The first of them.
        first: FrameNo,
        /// The last.
        last: FrameNo,
    },
    /// A rollback journal's transaction: from the journal's images to the main file's.
    /// `hot`: it never committed (SQLite rolls it back; the main file's versions were
    /// never committed); otherwise a persisted journal of a committed transaction.
    Journal {
        /// Whether the journal is hot.
        hot: bool,
    },
}

/// One step of a history: the pages it wrote and the rows that changed.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// What it is.
    pub kind: StepKind,
    /// The pages it wrote, in page order.
    pub pages: Vec<PageNo>,
    /// The rows it changed, by table and rowid.
    pub changes: Vec<Change>,
    /// Cells on its pages (before or after) whose record could not be read.
    pub unreadable: u64,
}

/// A row on a page image of an earlier generation of the log that no state of the
/// history holds: a version from before the main file's.
#[derive(Clone, Debug, PartialEq)]
pub struct Stray {
    /// The table the page number belongs to now.
    pub table: String,
    /// Its rowid.
    pub rowid: i64,
    /// Its values, in record order.
    pub values: Vec<Value>,
    /// The frame holding it.
    pub frame: FrameNo,
    /// The page the frame is of.
    pub page: PageNo,
    /// Whether the frame's checksum follows from the frame before it.
    pub chained: bool,
}

/// The history of a log.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    /// The steps, in order: each commit, then the uncommitted frames if any.
    pub steps: Vec<Step>,
    /// Rows only an earlier generation of the log holds.
    pub strays: Vec<Stray>,
    /// Pages the log wrote whose main-file image is one of the log's images: the main
    /// file was checkpointed past the log's start, so their state before the first
    /// commit that wrote them is not known (that commit shows no change for them).
    pub checkpointed: Vec<PageNo>,
}

/// A state of the database and who owns its leaves. Owners are shared between the states
/// no structural page separates.
struct State<'a> {
    db: Database<'a>,
    owners: Rc<Owners>,
}

impl<'a> State<'a> {
    fn new(db: Database<'a>) -> State<'a> {
        let owners = Rc::new(Owners::of(&db));
        State { db, owners }
    }

    /// The state `db` that writing `pages` made of this one: its owners are this one's
    /// unless the pages can have moved a leaf to another table.
    /// The step from this state to `db`, which writing `written` made: the rows that
    /// changed, on the pages written and on the leaves that left or joined a table without
    /// being written (a freed leaf keeps its bytes, its rows gone all the same).
    fn step(
        self,
        kind: StepKind,
        db: Database<'a>,
        written: BTreeSet<PageNo>,
    ) -> (Step, State<'a>) {
        let (mut before, mut unreadable) = self.rows(&written);
        let mut owners = self.owners;
        let mut moved = Vec::new();
        if owners.moved_by(&written, &db) {
            // Copied only while an earlier state still shares them.
            moved = Rc::make_mut(&mut owners).update(&self.db, &db, &written);
        }
        let mut pages = written;
        for (page, table) in moved {
            if !pages.insert(page) {
                continue;
            }
            if let Some(table) = table {
                let (rows, n) = rows_on(&self.db, [(page, table.as_str())]);
                before.extend(rows);
                unreadable += n;
            }
        }
        let next = State { db, owners };
        let (after, n) = next.rows(&pages);
        let step = Step {
            kind,
            changes: diff(before, after),
            pages: pages.into_iter().collect(),
            unreadable: unreadable + n,
        };
        (step, next)
    }

    /// The rows on `pages` in this state, by table and rowid; and how many cells on them
    /// could not be read.
    fn rows(&self, pages: &BTreeSet<PageNo>) -> Rows {
        rows_on(
            &self.db,
            pages
                .iter()
                .filter_map(|p| Some((*p, self.owners.table_of(*p)?))),
        )
    }
}

/// The rows of each table leaf of `pages` in `db`, attributed to the table named with it.
fn rows_on<'t>(db: &Database<'_>, pages: impl IntoIterator<Item = (PageNo, &'t str)>) -> Rows {
    let mut rows = BTreeMap::new();
    let mut unreadable = 0;
    for (page, table) in pages {
        let leaf = db
            .page(page)
            .and_then(|p| p.btree_header().ok())
            .is_some_and(|h| h.page_type() == PageType::TableLeaf);
        if !leaf {
            continue;
        }
        for event in TableRows::new(db, Some(page), std::iter::empty()) {
            match event {
                RowEvent::Row(row) => {
                    let Some(rowid) = row.rowid() else { continue };
                    rows.insert((table.to_string(), rowid), row.record().0);
                }
                RowEvent::Unreadable { .. } => unreadable += 1,
            }
        }
    }
    (rows, unreadable)
}

/// The rows that differ between `before` and `after`.
fn diff(
    mut before: BTreeMap<(String, i64), Vec<Value>>,
    after: BTreeMap<(String, i64), Vec<Value>>,
) -> Vec<Change> {
    let mut changes = Vec::new();
    for ((table, rowid), values) in after {
        let old = before.remove(&(table.clone(), rowid));
        if old.as_ref() != Some(&values) {
            changes.push(Change {
                table,
                rowid,
                before: old,
                after: Some(values),
            });
        }
    }
    changes.extend(before.into_iter().map(|((table, rowid), values)| Change {
        table,
        rowid,
        before: Some(values),
        after: None,
    }));
    changes.sort_by(|a, b| (&a.table, a.rowid).cmp(&(&b.table, b.rowid)));
    changes
}

/// Rows by table and rowid, and how many cells could not be read.
type Rows = (BTreeMap<(String, i64), Vec<Value>>, u64);

/// The first step of a log over an empty main file: every row on its pages is new.
fn first_step(kind: StepKind, to: &State<'_>, pages: BTreeSet<PageNo>) -> Step {
    let (after, unreadable) = to.rows(&pages);
    Step {
        kind,
        changes: diff(BTreeMap::new(), after),
        pages: pages.into_iter().collect(),
        unreadable,
    }
}

/// The history of `wal` over the main file `main` (rolled back by `journal` first, when
/// it is hot, as SQLite opens it).
/// `read` is told about how many bytes of the files each step read (to keep mapped files'
/// resident pages bounded).
pub fn wal_history<'a>(
    main: &'a [u8],
    journal: Option<&Journal<'a>>,
    wal: &Wal<'a>,
    read: &mut dyn FnMut(u64),
) -> History {
    let mut history = History::default();
    let uncommitted: Vec<(PageNo, FrameNo, &'a [u8])> = wal
        .strays
        .iter()
        .filter(|s| s.kind == StrayKind::Uncommitted)
        .filter_map(|s| Some((PageNo::new(s.header.page_no)?, s.no, s.image)))
        .collect();
    // Every image the log holds, once: each state is a frame limit over them.
    let versions: Vec<(PageNo, u32, &'a [u8])> = wal
        .commits
        .iter()
        .flat_map(|c| &c.frames)
        .chain(&uncommitted)
        .map(|(p, f, image)| (*p, f.0, *image))
        .collect();
    // Before the first commit: the main file alone, at the log's page size. A log whose
    // main file is empty (never checkpointed) starts from its first commit.
    let base = Database::open_with_logs(main, journal, Some(&wal.as_of(0))).ok();
    let Some(shared) = base
        .as_ref()
        .cloned()
        .or_else(|| Database::open_with_logs(main, journal, Some(&wal.as_of(1))).ok())
        .map(|db| db.with_versions(versions))
    else {
        return history;
    };
    let mut state = base.as_ref().map(|db| State::new(db.clone()));
    let base_owners = state.as_ref().map(|s| Rc::clone(&s.owners));
    let mut size = None;
    for (i, commit) in wal.commits.iter().enumerate() {
        let pages: BTreeSet<PageNo> = commit.frames.iter().map(|(p, _, _)| *p).collect();
        let db = shared.at_frame(commit.last.0, Some(commit.db_size));
        let kind = StepKind::Commit {
            no: u32::try_from(i + 1).unwrap_or(u32::MAX),
            first: commit.first,
            last: commit.last,
            db_size: commit.db_size,
        };
        // Each page before and after, its overflow pages and the trees' pages, roughly.
        read(u64::from(wal.header.page_size) * (4 * pages.len() as u64 + 1));
        let next = match state.take() {
            Some(s) => {
                let (step, next) = s.step(kind, db, pages);
                history.steps.push(step);
                next
            }
            None => {
                let next = State::new(db);
                history.steps.push(first_step(kind, &next, pages));
                next
            }
        };
        state = Some(next);
        size = Some(commit.db_size);
    }
    if let (Some(s), Some(first), Some(last)) = (state, uncommitted.first(), uncommitted.last()) {
        let pages: BTreeSet<PageNo> = uncommitted.iter().map(|(p, _, _)| *p).collect();
        let kind = StepKind::Uncommitted {
            first: first.1,
            last: last.1,
        };
        let (step, _) = s.step(kind, shared.at_frame(last.1 .0, size), pages);
        history.steps.push(step);
    }
    if let (Some(db), Some(owners)) = (&base, &base_owners) {
        history.checkpointed = checkpointed(db, wal);
        history.strays = strays(db, owners, wal, &history.steps);
    }
    history
}

/// Pages the log wrote whose image in `base` (the main file) equals one of the log's.
fn checkpointed(base: &Database<'_>, wal: &Wal<'_>) -> Vec<PageNo> {
    let mut out = BTreeSet::new();
    for (page, _, image) in wal.commits.iter().flat_map(|c| &c.frames) {
        if base.page(*page).is_some_and(|p| p.bytes() == *image) {
            out.insert(*page);
        }
    }
    out.into_iter().collect()
}

/// The rows of the older generation's frames that no state of the history holds: not in
/// the main file's table, and no version a step shows.
fn strays(base: &Database<'_>, owners: &Rc<Owners>, wal: &Wal<'_>, steps: &[Step]) -> Vec<Stray> {
    let mut known: BTreeSet<(String, i64, String)> = BTreeSet::new();
    let key = |t: &str, r: i64, v: &[Value]| (t.to_string(), r, format!("{v:?}"));
    for c in steps.iter().flat_map(|s| &s.changes) {
        for v in [&c.before, &c.after].into_iter().flatten() {
            known.insert(key(&c.table, c.rowid, v));
        }
    }
    // The main file's rows of each table an older frame is of, read once.
    let mut read: BTreeSet<usize> = BTreeSet::new();
    let mut out = Vec::new();
    for frame in &wal.strays {
        let StrayKind::OlderGeneration { chained } = frame.kind else {
            continue;
        };
        let Some(page) = PageNo::new(frame.header.page_no) else {
            continue;
        };
        let Some(table) = owners.table_of(page) else {
            continue;
        };
        let pages = BTreeSet::from([page]);
        let index = owners.leaf_of.get(&page).copied().unwrap_or(0);
        if read.insert(index) {
            let root = owners.roots.get(index).copied();
            for event in TableRows::new(base, root, std::iter::empty()) {
                if let RowEvent::Row(row) = event {
                    if let Some(rowid) = row.rowid() {
                        known.insert(key(table, rowid, &row.record().0));
                    }
                }
            }
        }
        let then = State {
            db: base.with_images(&[(page, frame.image)], None),
            owners: Rc::clone(owners),
        };
        let (rows, _) = then.rows(&pages);
        for ((_, rowid), values) in rows {
            if known.insert(key(table, rowid, &values)) {
                out.push(Stray {
                    table: table.to_string(),
                    rowid,
                    values,
                    frame: frame.no,
                    page,
                    chained,
                });
            }
        }
    }
    out
}

/// The step a rollback journal holds: from its images (the pages before its transaction)
/// to the main file's. `None` when the journal holds no page.
pub fn journal_history<'a>(main: &'a [u8], journal: &Journal<'a>) -> Option<Step> {
    if journal.pages.is_empty() {
        return None;
    }
    let after = Database::open(main).ok()?;
    let images: Vec<(PageNo, &'a [u8])> = journal.pages.iter().map(|(p, i)| (*p, *i)).collect();
    let before = State::new(after.with_images(&images, journal.original_pages()));
    let pages: BTreeSet<PageNo> = journal.pages.keys().copied().collect();
    let kind = StepKind::Journal {
        hot: journal.header.is_some(),
    };
    Some(before.step(kind, after, pages).0)
}

#[cfg(test)]
mod tests {
    //! Logs of one table `t(x TEXT)` whose rows live on page 2 (see [`crate::testing`]).

    use pager::{read_journal, read_persisted_journal, read_wal, PageSize};

    use super::*;
    use crate::testing::{
        frame, interior, journal, leaf, main_file, page_one, row, table_t, wal, x, OLDER_SALTS,
        SALTS,
    };

    fn p(n: u32) -> PageNo {
        PageNo::new(n).unwrap()
    }

    /// The changes of a step as (table, rowid, op, before, after).
    type Summary = Vec<(String, i64, Op, Option<Vec<Value>>, Option<Vec<Value>>)>;

    fn summary(step: &Step) -> Summary {
        step.changes
            .iter()
            .map(|c| {
                let (before, after) = (c.before.clone(), c.after.clone());
                (c.table.clone(), c.rowid, c.op(), before, after)
            })
            .collect()
    }

    fn change(
        rowid: i64,
        op: Op,
        before: Option<u8>,
        after: Option<u8>,
    ) -> (String, i64, Op, Option<Vec<Value>>, Option<Vec<Value>>) {
        ("t".to_string(), rowid, op, before.map(x), after.map(x))
    }

    fn history_of(main: &[u8], log: &[u8]) -> History {
        let wal = read_wal(log).unwrap();
        wal_history(main, None, &wal, &mut |_| {})
    }

    /// The main file: rows 1 "a" and 2 "b".
    fn main_ab() -> Vec<u8> {
        main_file(&leaf(&[&row(1, b'a'), &row(2, b'b')]))
    }

    /// Commit 1 inserts row 3 "c"; commit 2 updates row 1 to "A" and deletes row 2.
    fn two_commits() -> Vec<Vec<u8>> {
        vec![
            frame(
                2,
                2,
                SALTS,
                &leaf(&[&row(1, b'a'), &row(2, b'b'), &row(3, b'c')]),
            ),
            frame(2, 2, SALTS, &leaf(&[&row(1, b'A'), &row(3, b'c')])),
        ]
    }

    #[test]
    fn two_commits_are_diffed_page_by_page() {
        let h = history_of(&main_ab(), &wal(&two_commits()));
        assert_eq!(h.steps.len(), 2);
        assert_eq!(
            h.steps[0].kind,
            StepKind::Commit {
                no: 1,
                first: FrameNo(1),
                last: FrameNo(1),
                db_size: 2,
            }
        );
        assert_eq!(h.steps[0].pages, [p(2)]);
        assert_eq!(
            summary(&h.steps[0]),
            vec![change(3, Op::Insert, None, Some(b'c'))]
        );
        assert_eq!(
            h.steps[1].kind,
            StepKind::Commit {
                no: 2,
                first: FrameNo(2),
                last: FrameNo(2),
                db_size: 2,
            }
        );
        assert_eq!(
            summary(&h.steps[1]),
            vec![
                change(1, Op::Update, Some(b'a'), Some(b'A')),
                change(2, Op::Delete, Some(b'b'), None),
            ]
        );
        assert_eq!(h.steps[1].unreadable, 0);
        assert_eq!((h.strays.len(), h.checkpointed.len()), (0, 0));
    }

    #[test]
    fn frames_after_the_last_commit_are_a_step_that_never_committed() {
        let mut frames = two_commits();
        frames.push(frame(
            2,
            0, // no commit: the transaction never finished
            SALTS,
            &leaf(&[&row(1, b'A'), &row(3, b'c'), &row(4, b'd')]),
        ));
        let h = history_of(&main_ab(), &wal(&frames));
        assert_eq!(h.steps.len(), 3);
        assert_eq!(
            h.steps[2].kind,
            StepKind::Uncommitted {
                first: FrameNo(3),
                last: FrameNo(3),
            }
        );
        assert_eq!(
            summary(&h.steps[2]),
            vec![change(4, Op::Insert, None, Some(b'd'))]
        );
    }

    #[test]
    fn older_generations_frames_give_the_rows_no_state_holds() {
        // After the current generation's commit, a frame the log held before its last
        // reset: its salts are the older ones. Row 1 "a" is the main file's; row 2 "o"
        // is a version no state of the history holds.
        let frames = vec![
            frame(
                2,
                2,
                SALTS,
                &leaf(&[&row(1, b'a'), &row(2, b'b'), &row(3, b'c')]),
            ),
            frame(2, 2, OLDER_SALTS, &leaf(&[&row(1, b'a'), &row(2, b'o')])),
        ];
        let h = history_of(&main_ab(), &wal(&frames));
        assert_eq!(h.steps.len(), 1);
        assert_eq!(
            h.strays,
            vec![Stray {
                table: "t".into(),
                rowid: 2,
                values: x(b'o'),
                frame: FrameNo(2),
                page: p(2),
                // The first frame of its generation here: no checksum to follow from.
                chained: false,
            }]
        );
    }

    #[test]
    fn log_never_checkpointed_starts_from_its_first_commit() {
        // An empty main file: the first commit wrote the schema and the table's leaf, and
        // every row on them is new.
        let frames = vec![
            frame(1, 0, SALTS, &page_one(2, &[&table_t()])),
            frame(2, 2, SALTS, &leaf(&[&row(1, b'a')])),
        ];
        let h = history_of(&[], &wal(&frames));
        assert_eq!(h.steps.len(), 1);
        assert_eq!(h.steps[0].pages, [p(1), p(2)]);
        let ops: Vec<(String, i64, Op)> = h.steps[0]
            .changes
            .iter()
            .map(|c| (c.table.clone(), c.rowid, c.op()))
            .collect();
        assert_eq!(
            ops,
            [
                (SCHEMA_TABLE.to_string(), 1, Op::Insert),
                ("t".to_string(), 1, Op::Insert),
            ]
        );
        // With no main file, nothing is checkpointed and no older version is known.
        assert_eq!(h.checkpointed, []);
        assert_eq!(h.strays, []);
    }

    #[test]
    fn log_with_no_commit_over_an_empty_main_file_has_no_history() {
        let frames = vec![frame(2, 0, SALTS, &leaf(&[&row(1, b'a')]))];
        assert_eq!(history_of(&[], &wal(&frames)), History::default());
    }

    #[test]
    fn page_the_main_file_already_holds_is_checkpointed() {
        // The commit wrote page 2 as the main file holds it: the main file was
        // checkpointed past it, and its state before the commit is not known.
        let main = main_ab();
        let frames = vec![frame(2, 2, SALTS, &main[512..])];
        let h = history_of(&main, &wal(&frames));
        assert_eq!(h.checkpointed, [p(2)]);
        assert_eq!(h.steps[0].changes, []);
    }

    #[test]
    fn read_is_told_the_bytes_each_commit_reads() {
        let log = wal(&two_commits());
        let wal = read_wal(&log).unwrap();
        let mut told = Vec::new();
        wal_history(&main_ab(), None, &wal, &mut |n| told.push(n));
        // Each commit wrote 1 page: 4 reads of it and 1 more, of 512 bytes.
        assert_eq!(told, [5 * 512, 5 * 512]);
    }

    #[test]
    fn unreadable_cell_on_a_written_page_is_counted() {
        // The commit's image of page 2 holds row 2 with a reserved serial type: its
        // record cannot be read, and the step counts it.
        #[rustfmt::skip]
        let damaged = [
            0x03, // payload length: 3
            0x02, // rowid: 2
            0x02, // record header size: 2
            0x0a, // serial type 10: reserved, no record holds it
            b'b',
        ];
        let image = leaf(&[&row(1, b'a'), &damaged]);
        let h = history_of(&main_ab(), &wal(&[frame(2, 2, SALTS, &image)]));
        assert_eq!(h.steps[0].unreadable, 1);
    }

    #[test]
    fn leaf_that_left_its_tree_unwritten_loses_its_rows() {
        // t's root 2 is an interior page over leaves 3 (rows 1, 2) and 4 (row 5). The
        // commit rewrites page 2 with leaf 3 alone; page 4 is not written, its bytes
        // unchanged, but its row is no longer t's.
        let mut main = page_one(4, &[&table_t()]);
        main.extend_from_slice(&interior(&[(3, 2)], 4));
        main.extend_from_slice(&leaf(&[&row(1, b'a'), &row(2, b'b')]));
        main.extend_from_slice(&leaf(&[&row(5, b'e')]));
        let frames = vec![frame(2, 4, SALTS, &interior(&[], 3))];
        let h = history_of(&main, &wal(&frames));
        assert_eq!(h.steps[0].pages, [p(2), p(4)]);
        assert_eq!(
            summary(&h.steps[0]),
            vec![change(5, Op::Delete, Some(b'e'), None)]
        );
    }

    #[test]
    fn hot_journal_gives_the_step_from_its_images_to_the_main_file() {
        // The transaction changed page 2 of the main file, and crashed: the journal holds
        // the page as it was before.
        let before = leaf(&[&row(1, b'a'), &row(2, b'b')]);
        let main = main_file(&leaf(&[&row(1, b'A'), &row(3, b'c')]));
        let bytes = journal(2, &[(2, &before)]);
        let step = journal_history(&main, &read_journal(&bytes)).unwrap();
        assert_eq!(step.kind, StepKind::Journal { hot: true });
        assert_eq!(step.pages, [p(2)]);
        assert_eq!(
            summary(&step),
            vec![
                change(1, Op::Update, Some(b'a'), Some(b'A')),
                change(2, Op::Delete, Some(b'b'), None),
                change(3, Op::Insert, None, Some(b'c')),
            ]
        );
    }

    #[test]
    fn persisted_journal_of_a_committed_transaction_is_not_hot() {
        // journal_mode=PERSIST commits by zeroing the header; the records stay.
        let before = leaf(&[&row(1, b'a')]);
        let main = main_file(&leaf(&[&row(1, b'A')]));
        let mut bytes = journal(2, &[(2, &before)]);
        bytes[..28].fill(0);
        let persisted = read_persisted_journal(&bytes, PageSize::new(512).unwrap(), 2);
        let step = journal_history(&main, &persisted).unwrap();
        assert_eq!(step.kind, StepKind::Journal { hot: false });
        assert_eq!(
            summary(&step),
            vec![change(1, Op::Update, Some(b'a'), Some(b'A'))]
        );
    }

    #[test]
    fn journal_holding_no_page_gives_no_step() {
        let main = main_ab();
        assert_eq!(
            journal_history(&main, &read_journal(&journal(2, &[]))),
            None
        );
        assert_eq!(journal_history(&main, &read_journal(&[])), None);
    }

    #[test]
    fn change_says_what_the_step_did_to_the_row() {
        let c = |before: Option<u8>, after: Option<u8>| Change {
            table: "t".into(),
            rowid: 1,
            before: before.map(x),
            after: after.map(x),
        };
        assert_eq!(c(None, Some(b'a')).op(), Op::Insert);
        assert_eq!(c(Some(b'a'), Some(b'b')).op(), Op::Update);
        assert_eq!(c(Some(b'a'), None).op(), Op::Delete);
        let names: Vec<&str> = [Op::Insert, Op::Update, Op::Delete]
            .iter()
            .map(|o| o.name())
            .collect();
        assert_eq!(names, ["insert", "update", "delete"]);
    }
}
