//! The history of a write-ahead log: a step per commit, one for the frames that never
//! committed, the pages already checkpointed, and the rows only an older generation holds.

use std::collections::BTreeSet;
use std::rc::Rc;

use pager::{Database, FrameNo, Journal, Observe, PageNo, StrayKind, Value, Wal};
use reconstruct::{RowEvent, TableRows};

use crate::state::{first_step, State};
use crate::{History, Owners, Step, StepKind, Stray};

/// The history of `wal` over the main file `main` (rolled back by `journal` first, when
/// it is hot, as SQLite opens it).
/// `observe` is told of each page image read, from the main file or the log, as it is
/// read ([`Database::observed`]): the pages a commit changed lie one here and one there
/// in both files, and a caller that maps them keeps their resident pages bounded by it.
pub fn wal_history<'a>(
    main: &'a [u8],
    journal: Option<&Journal<'a>>,
    wal: &Wal<'a>,
    observe: &'a Observe<'a>,
) -> History {
    let mut steps = Vec::new();
    let mut history = wal_history_each(main, journal, wal, observe, &mut |step| steps.push(step));
    history.steps = steps;
    history
}

/// [`wal_history`], each step given to `each` as it is read instead of kept: memory holds
/// one step's rows, whatever the length of the log (and, for a log with an older
/// generation, a 16-byte key of each version). The history returned has no steps.
pub fn wal_history_each<'a>(
    main: &'a [u8],
    journal: Option<&Journal<'a>>,
    wal: &Wal<'a>,
    observe: &'a Observe<'a>,
    each: &mut dyn FnMut(Step),
) -> History {
    let mut history = History::default();
    // The versions an older generation's rows are checked against: only for a log that
    // has one.
    let mut known = wal
        .strays
        .iter()
        .any(|s| matches!(s.kind, StrayKind::OlderGeneration { .. }))
        .then(std::collections::HashSet::new);
    let mut give = |step: Step| {
        if let Some(known) = &mut known {
            for c in &step.changes {
                for v in [&c.before, &c.after].into_iter().flatten() {
                    known.insert(version_key(&c.table, c.rowid, v));
                }
            }
        }
        each(step);
    };
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
    let base = Database::open_with_logs(main, journal, Some(&wal.as_of(0)))
        .ok()
        .map(|db| db.observed(observe));
    let Some(shared) = base
        .as_ref()
        .cloned()
        .or_else(|| {
            Database::open_with_logs(main, journal, Some(&wal.as_of(1)))
                .ok()
                .map(|db| db.observed(observe))
        })
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
        let next = match state.take() {
            Some(s) => {
                let (step, next) = s.step(kind, db, pages);
                give(step);
                next
            }
            None => {
                let next = State::new(db);
                give(first_step(kind, &next, pages));
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
        give(step);
    }
    if let (Some(db), Some(owners)) = (&base, &base_owners) {
        history.checkpointed = checkpointed(db, wal, observe);
        if let Some(known) = known {
            history.strays = strays(db, owners, wal, known);
        }
    }
    history
}

/// A version's key: two 64-bit hashes (of differently salted input) of its table, rowid
/// and values, value by value as stored (a real by its bits).
fn version_key(table: &str, rowid: i64, values: &[Value]) -> u128 {
    use std::hash::{Hash, Hasher};
    let half = |salt: u8| {
        let mut h = std::hash::DefaultHasher::new();
        (salt, table, rowid, values.len()).hash(&mut h);
        for v in values {
            match v {
                Value::Null => 0u8.hash(&mut h),
                Value::Integer(i) => (1u8, i).hash(&mut h),
                Value::Real(r) => (2u8, r.to_bits()).hash(&mut h),
                Value::Text(t) => (3u8, t).hash(&mut h),
                Value::Blob(b) => (4u8, b).hash(&mut h),
            }
        }
        h.finish()
    };
    (u128::from(half(1)) << 64) | u128::from(half(2))
}

/// Pages the log wrote whose image in `base` (the main file) equals one of the log's.
/// `observe` is told of each frame's image (`base` tells of its own pages).
fn checkpointed(base: &Database<'_>, wal: &Wal<'_>, observe: &Observe<'_>) -> Vec<PageNo> {
    let mut out = BTreeSet::new();
    for (page, _, image) in wal.commits.iter().flat_map(|c| &c.frames) {
        observe(image);
        if base.page(*page).is_some_and(|p| p.bytes() == *image) {
            out.insert(*page);
        }
    }
    out.into_iter().collect()
}

/// The rows of the older generation's frames that no state of the history holds: not in
/// the main file's table, and no version a step shows (`known`, by [`version_key`]).
fn strays(
    base: &Database<'_>,
    owners: &Rc<Owners>,
    wal: &Wal<'_>,
    mut known: std::collections::HashSet<u128>,
) -> Vec<Stray> {
    let key = version_key;
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
        for ((_, rowid), (place, at)) in rows {
            let Some(values) = crate::state::values(&then.db, &place) else {
                continue;
            };
            if known.insert(key(table, rowid, &values)) {
                out.push(Stray {
                    table: table.to_string(),
                    rowid,
                    values,
                    frame: frame.no,
                    page,
                    offset: at.offset,
                    chained,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    //! Logs of one table `t(x TEXT)` whose rows live on page 2 (see [`crate::testing`]).

    use pager::read_wal;

    use super::*;
    use crate::testing::{
        change, frame, interior, leaf, main_ab, p, page_one, row, summary, table_t, wal, x,
        OLDER_SALTS, SALTS,
    };
    use crate::{At, Op, SCHEMA_TABLE};

    fn history_of(main: &[u8], log: &[u8]) -> History {
        let wal = read_wal(log).unwrap();
        wal_history(main, None, &wal, &|_| {})
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
        // Each version says where it was read: row 1 "a" in frame 1's image of page 2,
        // "A" in frame 2's, at the cell's offset in each; row 3 "c" in frame 1's.
        let first_cell = |image: &[u8]| u32::from(u16::from_be_bytes([image[8], image[9]]));
        let update = &h.steps[1].changes[0];
        let at = |image: &[u8], frame| At {
            page: p(2),
            offset: first_cell(image),
            frame: Some(FrameNo(frame)),
        };
        let one = leaf(&[&row(1, b'a'), &row(2, b'b'), &row(3, b'c')]);
        let two = leaf(&[&row(1, b'A'), &row(3, b'c')]);
        assert_eq!(
            (update.before_at, update.after_at),
            (Some(at(&one, 1)), Some(at(&two, 2)))
        );
        let third = u32::from(u16::from_be_bytes([one[12], one[13]]));
        assert_eq!(
            h.steps[0].changes[0].after_at,
            Some(At {
                page: p(2),
                offset: third,
                frame: Some(FrameNo(1))
            })
        );
        // The main file's version is read from the main file: no frame.
        let main = history_of(&main_ab(), &wal(&two_commits()[1..]));
        assert_eq!(
            main.steps[0].changes[0].before_at.map(|a| a.frame),
            Some(None)
        );
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
        // The second cell pointer of the older frame's leaf (header of 8 bytes).
        let older = leaf(&[&row(1, b'a'), &row(2, b'o')]);
        let offset = u32::from(u16::from_be_bytes([older[10], older[11]]));
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
                offset,
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
    fn observer_is_told_of_each_page_image_as_it_is_read() {
        let log = wal(&two_commits());
        let wal = read_wal(&log).unwrap();
        let main = main_ab();
        // Each image told, by the addresses of its first byte and of the byte past it.
        let span = |bytes: &[u8]| {
            let r = bytes.as_ptr_range();
            (r.start.addr(), r.end.addr())
        };
        let told = std::sync::Mutex::new(Vec::new());
        let observe = |image: &[u8]| told.lock().unwrap().push(span(image));
        wal_history(&main, None, &wal, &observe);
        let told = told.into_inner().unwrap();
        // Images in place, in the main file or the log: what a caller maps.
        let within = |(start, end): (usize, usize), bytes: &[u8]| {
            let (first, past) = span(bytes);
            start >= first && end <= past
        };
        assert!(
            told.iter().all(|t| within(*t, &main) || within(*t, &log)),
            "{told:?}"
        );
        // Every frame's image (each commit's state reads its pages from the log), and
        // the main file's pages the states before the commits read.
        for (_, _, image) in wal.commits.iter().flat_map(|c| &c.frames) {
            assert!(told.contains(&span(image)), "{told:?}");
        }
        assert!(told.iter().any(|t| within(*t, &main)), "{told:?}");
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
}
