//! A state of the database, with the owners of its leaves, and the step between two states:
//! the rows of the pages written, before and after, compared by table and rowid. A row is
//! found by its cell and read only when it is compared, its bytes first: a leaf written for
//! one row holds others whose values (a megabyte each, joined from overflow pages) never
//! need decoding, and memory holds one row's two versions at a time, not the leaves'.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use pager::{Database, FrameNo, PageNo, PageType, Value};
use reconstruct::{RowEvent, RowPlace, TableRows};

use crate::{At, Change, Owners, Step, StepKind};

/// A state of the database and who owns its leaves. Owners are shared between the states
/// no structural page separates.
pub(crate) struct State<'a> {
    pub(crate) db: Database<'a>,
    pub(crate) owners: Rc<Owners>,
}

impl<'a> State<'a> {
    pub(crate) fn new(db: Database<'a>) -> State<'a> {
        let owners = Rc::new(Owners::of(&db));
        State { db, owners }
    }

    /// The state `db` that writing `pages` made of this one: its owners are this one's
    /// unless the pages can have moved a leaf to another table.
    /// The step from this state to `db`, which writing `written` made: the rows that
    /// changed, on the pages written and on the leaves that left or joined a table without
    /// being written (a freed leaf keeps its bytes, its rows gone all the same).
    pub(crate) fn step(
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
        let (changes, gone) = diff((&self.db, before), (&next.db, after));
        let step = Step {
            kind,
            changes,
            pages: pages.into_iter().collect(),
            unreadable: unreadable + n + gone,
        };
        (step, next)
    }

    /// The rows on `pages` in this state, by table and rowid; and how many cells on them
    /// could not be read.
    pub(crate) fn rows(&self, pages: &BTreeSet<PageNo>) -> Rows {
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
                    let at = At {
                        page: row.raw.location.page,
                        offset: row.raw.location.offset,
                        frame: db.frame_of(row.raw.location.page).map(FrameNo),
                    };
                    rows.insert((table.to_string(), rowid), (row.place(), at));
                }
                RowEvent::Unreadable { .. } => unreadable += 1,
            }
        }
    }
    (rows, unreadable)
}

/// The rows that differ between `before` and `after`, each version read from its state's
/// database; and how many cells could not be read again (none, unless the state's bytes
/// changed under it). Two versions whose bytes are equal are the same row; otherwise
/// their values are compared (a record written again in another encoding of the same
/// values is no change).
fn diff(
    (old_db, mut before): (&Database<'_>, Versions),
    (new_db, after): (&Database<'_>, Versions),
) -> (Vec<Change>, u64) {
    let mut changes = Vec::new();
    let mut unreadable = 0;
    for ((table, rowid), (place, at)) in after {
        let old = before.remove(&(table.clone(), rowid));
        let Some(new) = raw(new_db, &place) else {
            unreadable += 1;
            continue;
        };
        let (before, before_at) = match old {
            Some((place, at)) => {
                let Some(old) = raw(old_db, &place) else {
                    unreadable += 1;
                    continue;
                };
                if old.payload == new.payload {
                    continue;
                }
                (Some(old.decode().values), Some(at))
            }
            None => (None, None),
        };
        let after = new.decode().values;
        if before.as_ref() == Some(&after) {
            continue;
        }
        changes.push(Change {
            table,
            rowid,
            before,
            after: Some(after),
            before_at,
            after_at: Some(at),
        });
    }
    for ((table, rowid), (place, at)) in before {
        let Some(old) = raw(old_db, &place) else {
            unreadable += 1;
            continue;
        };
        changes.push(Change {
            table,
            rowid,
            before: Some(old.decode().values),
            after: None,
            before_at: Some(at),
            after_at: None,
        });
    }
    changes.sort_by(|a, b| (&a.table, a.rowid).cmp(&(&b.table, b.rowid)));
    (changes, unreadable)
}

/// The row whose cell is at `place` in `db`, its payload joined.
fn raw<'a>(db: &Database<'a>, place: &RowPlace) -> Option<pager::RawRow<'a>> {
    match place.read(db) {
        RowEvent::Row(row) => Some(row.raw),
        RowEvent::Unreadable { .. } => None,
    }
}

/// The values of the row whose cell is at `place` in `db`.
pub(crate) fn values(db: &Database<'_>, place: &RowPlace) -> Option<Vec<Value>> {
    raw(db, place).map(|r| r.decode().values)
}

/// Rows by table and rowid: where their cells are, and where they were read.
type Versions = BTreeMap<(String, i64), (RowPlace, At)>;

/// Rows by table and rowid, and how many cells could not be read.
type Rows = (Versions, u64);

/// The first step of a log over an empty main file: every row on its pages is new.
pub(crate) fn first_step(kind: StepKind, to: &State<'_>, pages: BTreeSet<PageNo>) -> Step {
    let (after, unreadable) = to.rows(&pages);
    let (changes, gone) = diff((&to.db, BTreeMap::new()), (&to.db, after));
    Step {
        kind,
        changes,
        pages: pages.into_iter().collect(),
        unreadable: unreadable + gone,
    }
}
