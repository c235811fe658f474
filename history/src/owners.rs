//! Which table each leaf page belongs to, in one state of the database: the schema read
//! in that state, and each rowid table's tree walked through its interior pages only
//! (a leaf is never decoded here).

use std::collections::{BTreeMap, BTreeSet};

use pager::{Database, PageNo, PageType, SchemaKind};

/// The name the schema table is known by in a history.
pub const SCHEMA_TABLE: &str = "sqlite_schema";

/// The leaves of every rowid table in one state.
#[derive(Clone, Debug, Default)]
pub struct Owners {
    /// The tables, by index: `sqlite_schema` first.
    pub tables: Vec<String>,
    /// Their root pages, by the same index.
    pub roots: Vec<PageNo>,
    /// Each table leaf reached, with its table's index. A page two trees reach is the
    /// first's.
    pub leaf_of: BTreeMap<PageNo, usize>,
    /// Every other page the walks read: interior pages, and the schema's own leaves
    /// (whose change can change every tree).
    pub structural: BTreeSet<PageNo>,
}

impl Owners {
    /// Reads the schema of `db` and walks each rowid table's interior pages.
    pub fn of(db: &Database<'_>) -> Owners {
        let schema = pager::read_schema(db);
        let mut owners = Owners::default();
        let mut roots = vec![(SCHEMA_TABLE.to_string(), PageNo::FIRST)];
        roots.extend(schema.rows.iter().filter_map(|r| {
            let plain = r.kind == SchemaKind::Table && !r.is_without_rowid();
            Some((r.name.clone(), r.rootpage.filter(|_| plain)?))
        }));
        let mut seen: BTreeSet<PageNo> = BTreeSet::new();
        for (name, root) in roots {
            let table = owners.tables.len();
            owners.tables.push(name);
            owners.roots.push(root);
            let mut stack = vec![(root, 0u32)];
            while let Some((no, depth)) = stack.pop() {
                if depth > pager::walk::MAX_DEPTH || !seen.insert(no) {
                    continue;
                }
                let Some(page) = db.page(no) else { continue };
                let Ok(header) = page.btree_header() else {
                    continue;
                };
                match header.page_type() {
                    PageType::TableLeaf => {
                        owners.leaf_of.insert(no, table);
                        if table == 0 {
                            owners.structural.insert(no);
                        }
                    }
                    PageType::TableInterior => {
                        owners.structural.insert(no);
                        let children = page
                            .cells(&header)
                            .flatten()
                            .filter_map(|c| c.cell.left_child())
                            .chain(header.right_most_pointer());
                        stack.extend(
                            children
                                .filter_map(|c| db.page_no(c))
                                .map(|c| (c, depth + 1)),
                        );
                    }
                    _ => {}
                }
            }
        }
        owners
    }

    /// The table whose leaf `page` is, by name.
    pub fn table_of(&self, page: PageNo) -> Option<&str> {
        let i = *self.leaf_of.get(&page)?;
        self.tables.get(i).map(String::as_str)
    }

    /// Whether writing `pages` can have changed which table owns which leaf: unless every
    /// one is a known leaf of a table other than the schema, it can.
    pub fn moved_by(&self, pages: &BTreeSet<PageNo>) -> bool {
        pages
            .iter()
            .any(|p| self.structural.contains(p) || !self.leaf_of.contains_key(p))
    }
}
