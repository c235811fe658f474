//! Which table each leaf page belongs to, in one state of the database: the schema read
//! in that state, and each rowid table's tree walked through its interior pages (a leaf's
//! header is read, never its cells). From one state to the next the trees are not walked
//! again: only the children an interior page written by the step gained or lost are
//! (see [`Owners::update`]).

use std::collections::{BTreeMap, BTreeSet};

use pager::{Database, PageNo, PageType, SchemaKind};

/// The name the schema table is known by in a history.
pub const SCHEMA_TABLE: &str = "sqlite_schema";

/// The pages of every rowid table in one state.
#[derive(Clone, Debug, Default)]
pub struct Owners {
    /// The tables, by index: `sqlite_schema` first.
    pub tables: Vec<String>,
    /// Their root pages, by the same index.
    pub roots: Vec<PageNo>,
    /// Each table leaf reached, with its table's index. A page two trees reach is the
    /// first's.
    pub leaf_of: Leaves,
    /// Each interior page reached, with its table's index.
    pub interior_of: BTreeMap<PageNo, usize>,
    /// While an update runs: each leaf it touched, with its table before (`None`: none).
    touched: BTreeMap<PageNo, Option<usize>>,
}

/// Table leaves, each with its table's index, and the schema's (index 0) apart: page 1
/// is written at every commit that grows the file, and its leaves were found by a pass
/// over every table's (a quarter of `recover --history`'s time on a 2 GB store with a log
/// of 10,000 commits).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Leaves {
    of: BTreeMap<PageNo, usize>,
    schema: BTreeSet<PageNo>,
}

impl Leaves {
    /// The table of leaf `page`.
    pub fn get(&self, page: &PageNo) -> Option<&usize> {
        self.of.get(page)
    }

    /// Whether `page` is a leaf held.
    pub fn contains_key(&self, page: &PageNo) -> bool {
        self.of.contains_key(page)
    }

    /// Holds `page` as a leaf of `table`.
    fn insert(&mut self, page: PageNo, table: usize) {
        if self.of.insert(page, table) == Some(0) && table != 0 {
            self.schema.remove(&page);
        }
        if table == 0 {
            self.schema.insert(page);
        }
    }

    /// Lets go of leaf `page`: its table, if it was held.
    fn remove(&mut self, page: &PageNo) -> Option<usize> {
        let table = self.of.remove(page);
        if table == Some(0) {
            self.schema.remove(page);
        }
        table
    }

    /// Lets go of the schema's leaves: them.
    fn remove_schema(&mut self) -> BTreeSet<PageNo> {
        let schema = std::mem::take(&mut self.schema);
        for p in &schema {
            self.of.remove(p);
        }
        schema
    }

    /// Every leaf, in page order.
    pub fn keys(&self) -> impl Iterator<Item = &PageNo> + '_ {
        self.of.keys()
    }

    /// Every leaf with its table, in page order.
    pub fn as_map(&self) -> &BTreeMap<PageNo, usize> {
        &self.of
    }
}

/// A leaf whose table changed from one state to the next (its rows left or joined a
/// table without the page being written: a freed leaf keeps its bytes), with its table
/// before, by name.
pub type Moved = Vec<(PageNo, Option<String>)>;

/// A page's type and, for an interior table page, its children, in `db`.
fn read(db: &Database<'_>, no: PageNo) -> Option<(PageType, Vec<PageNo>)> {
    let page = db.page(no)?;
    let header = page.btree_header().ok()?;
    let kind = header.page_type();
    let children = if kind == PageType::TableInterior {
        page.cells(&header)
            .flatten()
            .filter_map(|c| c.cell.left_child())
            .chain(header.right_most_pointer())
            .filter_map(|c| db.page_no(c))
            .collect()
    } else {
        Vec::new()
    };
    Some((kind, children))
}

impl Owners {
    /// Reads the schema of `db` and walks each rowid table's tree.
    pub fn of(db: &Database<'_>) -> Owners {
        let schema = pager::read_schema(db);
        let mut owners = Owners::default();
        let mut roots = vec![(SCHEMA_TABLE.to_string(), PageNo::FIRST)];
        roots.extend(schema.rows.iter().filter_map(|r| {
            let plain = r.kind == SchemaKind::Table && !r.is_without_rowid();
            Some((r.name.clone(), r.rootpage.filter(|_| plain)?))
        }));
        for (name, root) in roots {
            let table = owners.tables.len();
            owners.tables.push(name);
            owners.roots.push(root);
            owners.add(db, root, table);
        }
        owners
    }

    /// Adds the subtree under `top` in `db` to `table`; pages another tree holds stay
    /// its. A b-tree is balanced: when an interior page's first child is a leaf, its other
    /// children are taken for leaves without being read, so that a walk reads the interior
    /// pages only (and a page in memory a leaf is not brought there for). A child that is
    /// no leaf after all reads as none when its rows are read.
    fn add(&mut self, db: &Database<'_>, top: PageNo, table: usize) {
        let mut stack = vec![(top, 0u32)];
        while let Some((no, depth)) = stack.pop() {
            let held = self.leaf_of.contains_key(&no) || self.interior_of.contains_key(&no);
            if depth > pager::walk::MAX_DEPTH || held {
                continue;
            }
            match read(db, no) {
                Some((PageType::TableLeaf, _)) => {
                    self.touched.entry(no).or_insert(None);
                    self.leaf_of.insert(no, table);
                }
                Some((PageType::TableInterior, children)) => {
                    self.interior_of.insert(no, table);
                    let first = children.first().and_then(|c| read(db, *c));
                    if matches!(first, Some((PageType::TableLeaf, _))) {
                        for c in children {
                            let held = self.interior_of.contains_key(&c)
                                || self.leaf_of.contains_key(&c)
                                || c == no;
                            if !held {
                                self.touched.entry(c).or_insert(None);
                                self.leaf_of.insert(c, table);
                            }
                        }
                    } else {
                        stack.extend(children.into_iter().map(|c| (c, depth + 1)));
                    }
                }
                _ => {}
            }
        }
    }

    /// Takes the subtree under `top` in `db` (a state where it is held) out.
    fn remove(&mut self, db: &Database<'_>, top: PageNo) {
        let mut stack = vec![(top, 0u32)];
        while let Some((no, depth)) = stack.pop() {
            if depth > pager::walk::MAX_DEPTH {
                continue;
            }
            if let Some(table) = self.leaf_of.remove(&no) {
                self.touched.entry(no).or_insert(Some(table));
                continue;
            }
            if self.interior_of.remove(&no).is_some() {
                if let Some((_, children)) = read(db, no) {
                    stack.extend(children.into_iter().map(|c| (c, depth + 1)));
                }
            }
        }
    }

    /// The table whose leaf `page` is, by name.
    pub fn table_of(&self, page: PageNo) -> Option<&str> {
        let i = *self.leaf_of.get(&page)?;
        self.tables.get(i).map(String::as_str)
    }

    /// Whether writing `pages` (which made `next` of this state) can have changed which
    /// table owns which leaf: when one was an interior page or a schema leaf, is a table
    /// page now and was no known leaf, or was a leaf and is not one now. Index, overflow
    /// and freelist pages written change no table's leaves: a leaf added or freed writes
    /// its parent, a table dropped or created writes the schema.
    pub fn moved_by(&self, pages: &BTreeSet<PageNo>, next: &Database<'_>) -> bool {
        pages.iter().any(|p| {
            let now = next
                .page(*p)
                .and_then(|page| page.btree_header().ok())
                .map(|h| h.page_type());
            let table_page = matches!(now, Some(PageType::TableLeaf | PageType::TableInterior));
            let leaf = self.leaf_of.contains_key(p);
            self.interior_of.contains_key(p)
                || self.leaf_of.get(p) == Some(&0)
                || (table_page && !leaf)
                || (leaf && now != Some(PageType::TableLeaf))
        })
    }

    /// Brings the owners of state `old` to state `new`, which writing `pages` made, and
    /// returns the leaves whose table changed. A change of the schema's rows reads
    /// everything again; otherwise each written page that was or is a table's interior
    /// page gives the children it lost (their old subtrees taken out) and gained (their
    /// new subtrees added to its table), all losses before all gains, so that a child
    /// moved between two written parents ends up under its new one.
    pub fn update(
        &mut self,
        old: &Database<'_>,
        new: &Database<'_>,
        pages: &BTreeSet<PageNo>,
    ) -> Moved {
        let schema_written = pages
            .iter()
            .any(|p| self.leaf_of.get(p) == Some(&0) || self.interior_of.get(p) == Some(&0));
        // Page 1 is written whenever the header changes (the database grew, the freelist
        // moved): only a change of the schema's rows reads everything again.
        let rows = |db: &Database<'_>| {
            pager::read_schema(db)
                .rows
                .into_iter()
                .map(|r| (r.kind, r.name, r.rootpage, r.sql))
                .collect::<Vec<_>>()
        };
        if schema_written && rows(old) != rows(new) {
            let next = Owners::of(new);
            let pages: BTreeSet<PageNo> = self
                .leaf_of
                .keys()
                .chain(next.leaf_of.keys())
                .copied()
                .collect();
            let moved = pages
                .into_iter()
                .filter_map(|p| {
                    let before = self.table_of(p);
                    (before != next.table_of(p)).then(|| (p, before.map(str::to_string)))
                })
                .collect();
            *self = next;
            return moved;
        }
        self.touched.clear();
        if schema_written {
            for p in self.leaf_of.remove_schema() {
                self.touched.insert(p, Some(0));
            }
            self.interior_of.retain(|_, t| *t != 0);
            self.add(new, PageNo::FIRST, 0);
        }
        self.change(old, new, pages);
        let touched = std::mem::take(&mut self.touched);
        let name = |t: Option<usize>| t.and_then(|t| self.tables.get(t)).cloned();
        touched
            .into_iter()
            .filter(|(p, before)| self.leaf_of.get(p).copied() != *before)
            .map(|(p, before)| (p, name(before)))
            .collect()
    }

    /// The children written interior pages lost and gained, followed (see
    /// [`Owners::update`]).
    fn change(&mut self, old: &Database<'_>, new: &Database<'_>, pages: &BTreeSet<PageNo>) {
        let mut lost: Vec<PageNo> = Vec::new();
        // Each child gained, with the page that gained it.
        let mut gained: Vec<(PageNo, PageNo)> = Vec::new();
        let mut changed: Vec<(PageNo, usize, Option<PageType>)> = Vec::new();
        for p in pages {
            let Some(table) = self
                .interior_of
                .get(p)
                .or_else(|| self.leaf_of.get(p))
                .copied()
                .filter(|t| *t != 0)
            else {
                continue;
            };
            let before: BTreeSet<PageNo> = read(old, *p)
                .map(|(_, c)| c.into_iter().collect())
                .unwrap_or_default();
            let (kind, after) = match read(new, *p) {
                Some((kind, c)) => (Some(kind), c.into_iter().collect::<BTreeSet<_>>()),
                None => (None, BTreeSet::new()),
            };
            lost.extend(before.difference(&after));
            gained.extend(after.difference(&before).map(|c| (*c, *p)));
            changed.push((*p, table, kind));
        }
        for c in lost {
            self.remove(old, c);
        }
        // A written page still held may have changed kind: a root leaf that split, an
        // interior page emptied to a leaf, a page no table's any more.
        for (p, table, kind) in changed {
            let leaf = self.leaf_of.remove(&p);
            if let Some(t) = leaf {
                self.touched.entry(p).or_insert(Some(t));
            }
            if leaf.is_none() && self.interior_of.remove(&p).is_none() {
                continue;
            }
            match kind {
                Some(PageType::TableLeaf) => {
                    self.touched.entry(p).or_insert(None);
                    self.leaf_of.insert(p, table);
                }
                Some(PageType::TableInterior) => {
                    self.interior_of.insert(p, table);
                }
                _ => {}
            }
        }
        // A child joins the table its parent is in now: a page freed from one table and
        // taken as an interior page of another in the same step is added, with its
        // children, under its new parent; its own gains wait for that.
        for (c, parent) in gained {
            if let Some(table) = self.interior_of.get(&parent).copied() {
                self.add(new, c, table);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! States of small files of 512-byte pages (see [`crate::testing`]): `t(x TEXT)`
    //! rooted at page 2.

    use super::*;
    use crate::testing::{
        interior, leaf, main_file, page_one, page_one_over, row, schema_row, table_t,
    };

    fn p(n: u32) -> PageNo {
        PageNo::new(n).unwrap()
    }

    fn pages(list: &[u32]) -> BTreeSet<PageNo> {
        list.iter().map(|n| p(*n)).collect()
    }

    /// A file of page 1 (the schema of `t`) and `rest` (pages 2, 3, …).
    fn file(rest: &[Vec<u8>]) -> Vec<u8> {
        let mut out = page_one(1 + rest.len() as u8, &[&table_t()]);
        for page in rest {
            out.extend_from_slice(page);
        }
        out
    }

    /// `t`'s root 2 over leaves 3 (row 1) and 4 (row 5), and `page_five` beside them.
    fn two_leaves(page_five: Vec<u8>) -> Vec<u8> {
        file(&[
            interior(&[(3, 2)], 4),
            leaf(&[&row(1, b'a')]),
            leaf(&[&row(5, b'e')]),
            page_five,
        ])
    }

    #[test]
    fn schema_table_first_then_each_rowid_table_with_its_leaves() {
        let main = main_file(&leaf(&[&row(1, b'a')]));
        let owners = Owners::of(&Database::open(&main).unwrap());
        assert_eq!(owners.tables, [SCHEMA_TABLE, "t"]);
        assert_eq!(owners.roots, [p(1), p(2)]);
        assert_eq!(
            owners.leaf_of.as_map(),
            &BTreeMap::from([(p(1), 0), (p(2), 1)])
        );
        assert_eq!(owners.interior_of, BTreeMap::new());
        assert_eq!(owners.table_of(p(1)), Some(SCHEMA_TABLE));
        assert_eq!(owners.table_of(p(2)), Some("t"));
        assert_eq!(owners.table_of(p(3)), None);
    }

    #[test]
    fn index_and_without_rowid_table_own_no_table_leaf() {
        let mut main = page_one(
            4,
            &[
                &table_t(),
                &schema_row(2, b"index", b'i', b't', 3, b"CREATE INDEX i ON t(x)"),
                &schema_row(
                    3,
                    b"table",
                    b'w',
                    b'w',
                    4,
                    b"CREATE TABLE w(k PRIMARY KEY)WITHOUT ROWID",
                ),
            ],
        );
        main.extend_from_slice(&leaf(&[&row(1, b'a')]));
        // Index b-tree leaves ("B-tree Pages"): page type 10, no cell.
        for _ in 0..2 {
            let mut index_leaf = vec![0u8; 512];
            index_leaf[..8].copy_from_slice(&[0x0a, 0, 0, 0, 0, 0x02, 0x00, 0]);
            main.extend_from_slice(&index_leaf);
        }
        let owners = Owners::of(&Database::open(&main).unwrap());
        assert_eq!(owners.tables, [SCHEMA_TABLE, "t"]);
        assert_eq!(owners.table_of(p(3)), None);
        assert_eq!(owners.table_of(p(4)), None);
    }

    #[test]
    fn children_of_an_interior_page_over_leaves_are_taken_for_leaves_unread() {
        // Page 4 is zeroed: the first child, page 3, is a leaf, so page 4 is taken for
        // one without being read (its rows, when read, are none).
        let main = file(&[
            interior(&[(3, 2)], 4),
            leaf(&[&row(1, b'a'), &row(2, b'b')]),
            vec![0u8; 512],
        ]);
        let owners = Owners::of(&Database::open(&main).unwrap());
        assert_eq!(owners.interior_of, BTreeMap::from([(p(2), 1)]));
        assert_eq!(
            owners.leaf_of.as_map(),
            &BTreeMap::from([(p(1), 0), (p(3), 1), (p(4), 1)])
        );
    }

    #[test]
    fn only_pages_that_can_move_a_leaf_between_tables_call_for_an_update() {
        let main = two_leaves(vec![0u8; 512]);
        let db = Database::open(&main).unwrap();
        let owners = Owners::of(&db);
        let after = |page: u32, image: &[u8]| {
            let mut bytes = main.clone();
            bytes[(page as usize - 1) * 512..page as usize * 512].copy_from_slice(image);
            bytes
        };
        let moved = |list: &[u32], bytes: &[u8]| {
            owners.moved_by(&pages(list), &Database::open(bytes).unwrap())
        };
        // A leaf written as a leaf of the same table: no.
        let leaf_rewritten = after(3, &leaf(&[&row(1, b'A')]));
        assert!(!moved(&[3], &leaf_rewritten));
        // A page no tree holds, written as something other than a table page: no.
        assert!(!moved(&[5], &main));
        // An interior page, whatever it is now (here: freed, zeroed): yes.
        assert!(moved(&[2], &main));
        assert!(moved(&[2], &after(2, &[0u8; 512])));
        // The schema's leaf: yes.
        assert!(moved(&[1], &main));
        // A page no tree held that is a table leaf now: yes.
        let new_leaf = after(5, &leaf(&[&row(9, b'z')]));
        assert!(moved(&[5], &new_leaf));
        // A leaf that is no leaf now: yes.
        let zeroed = after(4, &[0u8; 512]);
        assert!(moved(&[4], &zeroed));
    }

    #[test]
    fn table_created_reads_the_owners_again() {
        let main = main_file(&leaf(&[&row(1, b'a')]));
        let old = Database::open(&main).unwrap();
        let schema = page_one(
            3,
            &[
                &table_t(),
                &schema_row(2, b"table", b'u', b'u', 3, b"CREATE TABLE u(x TEXT)"),
            ],
        );
        let u_leaf = leaf(&[&row(1, b'u')]);
        let new = old.with_images(&[(p(1), &schema), (p(3), &u_leaf)], Some(3));
        let mut owners = Owners::of(&old);
        let moved = owners.update(&old, &new, &pages(&[1, 3]));
        assert_eq!(moved, vec![(p(3), None)]);
        assert_eq!(owners.tables, [SCHEMA_TABLE, "t", "u"]);
        assert_eq!(owners.table_of(p(3)), Some("u"));
    }

    #[test]
    fn schema_leaf_moved_with_its_rows_unchanged_is_followed() {
        // The schema's root, page 1, over one leaf: page 3, then page 4 holding the same
        // rows (as auto-vacuum moves a page at a commit), page 3 freed.
        let schema_leaf = leaf(&[&table_t()]);
        let main = [
            page_one_over(4, 3),
            leaf(&[&row(1, b'a')]),
            schema_leaf.clone(),
            vec![0u8; 512],
        ]
        .concat();
        let old = Database::open(&main).unwrap();
        let (root, freed) = (page_one_over(4, 4), vec![0u8; 512]);
        let new = old.with_images(&[(p(1), &root), (p(3), &freed), (p(4), &schema_leaf)], None);
        let mut owners = Owners::of(&old);
        assert_eq!(owners.table_of(p(3)), Some(SCHEMA_TABLE));
        let moved = owners.update(&old, &new, &pages(&[1, 3, 4]));
        assert_eq!(
            moved,
            vec![(p(3), Some(SCHEMA_TABLE.to_string())), (p(4), None)]
        );
        assert_eq!(owners.table_of(p(3)), None);
        assert_eq!(owners.table_of(p(4)), Some(SCHEMA_TABLE));
        assert_eq!(owners.table_of(p(2)), Some("t"));
    }

    #[test]
    fn children_an_interior_page_lost_and_gained_are_followed() {
        // Page 2 loses leaf 4 and gains leaf 5; neither leaf is written.
        let main = two_leaves(leaf(&[&row(6, b'f')]));
        let old = Database::open(&main).unwrap();
        let root = interior(&[(3, 2)], 5);
        let new = old.with_images(&[(p(2), &root)], None);
        let mut owners = Owners::of(&old);
        assert!(owners.moved_by(&pages(&[2]), &new));
        let moved = owners.update(&old, &new, &pages(&[2]));
        assert_eq!(moved, vec![(p(4), Some("t".to_string())), (p(5), None)]);
        assert_eq!(owners.table_of(p(4)), None);
        assert_eq!(owners.table_of(p(5)), Some("t"));
        assert_eq!(owners.table_of(p(3)), Some("t"));
    }

    #[test]
    fn root_leaf_that_split_becomes_an_interior_page_over_new_leaves() {
        let main = file(&[
            leaf(&[&row(1, b'a'), &row(2, b'b')]),
            vec![0u8; 512],
            vec![0u8; 512],
        ]);
        let old = Database::open(&main).unwrap();
        let (root, left, right) = (
            interior(&[(3, 1)], 4),
            leaf(&[&row(1, b'a')]),
            leaf(&[&row(2, b'b')]),
        );
        let new = old.with_images(&[(p(2), &root), (p(3), &left), (p(4), &right)], None);
        let mut owners = Owners::of(&old);
        let moved = owners.update(&old, &new, &pages(&[2, 3, 4]));
        assert_eq!(
            moved,
            vec![(p(2), Some("t".to_string())), (p(3), None), (p(4), None)]
        );
        assert_eq!(owners.interior_of, BTreeMap::from([(p(2), 1)]));
        assert_eq!(owners.table_of(p(3)), Some("t"));
        assert_eq!(owners.table_of(p(4)), Some("t"));
    }
}
