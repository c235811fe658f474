//! Test helpers: real databases from `fixtures`, and byte edits at offsets that the
//! fixtures' own reader computed (a second reading of the format, not this crate's).

use crate::classify::{survey, Survey};
use crate::database::Database;
use crate::finding::Finding;
use crate::types::PageNo;

/// A healthy catalog fixture's bytes and its table roots.
pub struct Db {
    pub bytes: Vec<u8>,
    pub fixture: fixtures::Fixture,
}

impl Db {
    pub fn named(name: &str) -> Db {
        let fixture = fixtures::build_named(name).unwrap_or_else(|| panic!("no fixture {name}"));
        Db {
            bytes: fixture.bytes.clone(),
            fixture,
        }
    }

    pub fn page_size(&self) -> usize {
        self.fixture.options.page_size as usize
    }

    pub fn root(&self, table: &str) -> u32 {
        self.fixture.roots[table]
    }

    /// File offset of `offset` within page `page`.
    pub fn at(&self, page: u32, offset: usize) -> usize {
        (page as usize - 1) * self.page_size() + offset
    }

    pub fn set_u8(&mut self, page: u32, offset: usize, v: u8) {
        let at = self.at(page, offset);
        self.bytes[at] = v;
    }

    pub fn set_u16(&mut self, page: u32, offset: usize, v: u16) {
        let at = self.at(page, offset);
        self.bytes[at..at + 2].copy_from_slice(&v.to_be_bytes());
    }

    pub fn set_u32(&mut self, page: u32, offset: usize, v: u32) {
        let at = self.at(page, offset);
        self.bytes[at..at + 4].copy_from_slice(&v.to_be_bytes());
    }

    /// Page `no` as the fixtures' own reader sees it (a b-tree page of the healthy file).
    pub fn btree_page(&self, no: u32) -> fixtures::format::BtreePage<'_> {
        let h = fixtures::format::DatabaseHeader::read(&self.bytes).expect("header");
        fixtures::format::BtreePage::read(&self.bytes, &h, no).expect("a b-tree page")
    }

    /// Cell `index` of page `no`, as the fixtures' own reader sees it.
    pub fn cell(&self, no: u32, index: u16) -> fixtures::format::Cell {
        self.btree_page(no).cell(index).expect("a cell")
    }

    /// The findings of a walk of the b-tree rooted at `root`, in walk order.
    pub fn walk_findings(&self, root: u32) -> Vec<Finding> {
        let db = Database::open(&self.bytes).expect("opens");
        let root = crate::types::PageNo::new(root).expect("a page");
        crate::walk::BtreeWalk::new(&db, root)
            .filter_map(Result::err)
            .collect()
    }

    pub fn walk(&self, table: &str) -> fixtures::format::BtreeWalk {
        fixtures::format::walk_btree(&self.bytes, self.root(table)).0
    }

    /// Every finding of a full survey, header findings included.
    pub fn findings(&self) -> Vec<Finding> {
        let db = Database::open(&self.bytes).expect("opens");
        let s: Survey = survey(&db);
        db.findings()
            .iter()
            .chain(s.all_findings())
            .cloned()
            .collect()
    }
}

pub fn no(n: u32) -> PageNo {
    PageNo::new(n).unwrap()
}

/// agent-4096-utf8's `messages` b-tree: an interior root over leaves.
pub fn messages() -> (Db, u32) {
    let db = Db::named("agent-4096-utf8");
    let root = db.root("messages");
    assert_eq!(
        db.bytes[db.at(root, 0)],
        0x05,
        "root is a table interior page"
    );
    assert_eq!(
        db.walk("messages").depth,
        2,
        "the root's children are leaves"
    );
    (db, root)
}
