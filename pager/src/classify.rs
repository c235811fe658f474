//! Page classes: what each page of the file is. Every page gets exactly one class, known
//! by its content and position ([`classify_by_content`]) or by the structure that reaches
//! it, which overrides the content (a freelist leaf may still look like the b-tree page it
//! once was):
//!
//! ```text
//! class                                  known by
//! table_interior, table_leaf,            page type 5, 13, 2, 10 ("B-tree Pages") and a
//! index_interior, index_leaf             b-tree header that fits; a tree's walk owns it
//! overflow                               a cell's chain ("Cell Payload Overflow Pages")
//! freelist_trunk, freelist_leaf          the freelist's chain ("The Freelist")
//! ptrmap                                 position, in auto-vacuum files ("Pointer Map or
//!                                        Ptrmap Pages")
//! lock_byte                              position: holds byte 2^30 ("The Lock-Byte Page")
//! zeroed                                 every byte zero, and no structure claims it
//! unrecognised                           no b-tree page, and no structure claims it
//! ```
//!
//! The survey ([`survey()`], module `survey`) classifies every page and walks every
//! structure; its result holds a [`PageMap`] (module `page_map`) of every page's class and
//! owning b-tree. B-tree pages no tree reaches are orphans, the raw material of recovery.

use std::fmt;

use crate::btree::PageType;
use crate::database::Database;
use crate::types::PageNo;

mod page_map;
mod survey;

pub use page_map::PageMap;
pub use survey::{
    survey, survey_observed, survey_with, survey_with_schema, Survey, SurveyChecks, TreeSurvey,
    OBSERVE_EVERY,
};

/// What a page is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PageClass {
    /// Interior page of a table b-tree.
    TableInterior,
    /// Leaf page of a table b-tree.
    TableLeaf,
    /// Interior page of an index b-tree.
    IndexInterior,
    /// Leaf page of an index b-tree.
    IndexLeaf,
    /// Overflow page of some cell's payload.
    Overflow,
    /// Freelist trunk page.
    FreelistTrunk,
    /// Freelist leaf page.
    FreelistLeaf,
    /// Pointer-map page (auto-vacuum databases).
    Ptrmap,
    /// The lock-byte page (holds file offset 2^30; never used by SQLite).
    LockByte,
    /// Every byte zero, and no structure claims the page.
    Zeroed,
    /// Not a b-tree page, and no structure claims it.
    Unrecognised,
}

impl PageClass {
    /// Every class, in report order.
    pub const ALL: [PageClass; 11] = [
        PageClass::TableInterior,
        PageClass::TableLeaf,
        PageClass::IndexInterior,
        PageClass::IndexLeaf,
        PageClass::Overflow,
        PageClass::FreelistTrunk,
        PageClass::FreelistLeaf,
        PageClass::Ptrmap,
        PageClass::LockByte,
        PageClass::Zeroed,
        PageClass::Unrecognised,
    ];

    /// The class of a b-tree page of type `t`.
    pub fn of_btree(t: PageType) -> PageClass {
        match t {
            PageType::IndexInterior => PageClass::IndexInterior,
            PageType::TableInterior => PageClass::TableInterior,
            PageType::IndexLeaf => PageClass::IndexLeaf,
            PageType::TableLeaf => PageClass::TableLeaf,
        }
    }

    /// Whether this is one of the four b-tree page classes.
    pub fn is_btree(self) -> bool {
        matches!(
            self,
            PageClass::TableInterior
                | PageClass::TableLeaf
                | PageClass::IndexInterior
                | PageClass::IndexLeaf
        )
    }

    /// The snake_case name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            PageClass::TableInterior => "table_interior",
            PageClass::TableLeaf => "table_leaf",
            PageClass::IndexInterior => "index_interior",
            PageClass::IndexLeaf => "index_leaf",
            PageClass::Overflow => "overflow",
            PageClass::FreelistTrunk => "freelist_trunk",
            PageClass::FreelistLeaf => "freelist_leaf",
            PageClass::Ptrmap => "ptrmap",
            PageClass::LockByte => "lock_byte",
            PageClass::Zeroed => "zeroed",
            PageClass::Unrecognised => "unrecognised",
        }
    }
}

impl fmt::Display for PageClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PageClass::TableInterior => "table interior page",
            PageClass::TableLeaf => "table leaf page",
            PageClass::IndexInterior => "index interior page",
            PageClass::IndexLeaf => "index leaf page",
            PageClass::Overflow => "overflow page",
            PageClass::FreelistTrunk => "freelist trunk page",
            PageClass::FreelistLeaf => "freelist leaf page",
            PageClass::Ptrmap => "pointer-map page",
            PageClass::LockByte => "lock-byte page",
            PageClass::Zeroed => "zeroed page",
            PageClass::Unrecognised => "unrecognised page",
        })
    }
}

/// Classifies one page by position and content alone.
pub fn classify_by_content(db: &Database<'_>, no: PageNo) -> PageClass {
    if let Some(c) = db.positional_class(no) {
        return c;
    }
    let Some(page) = db.page(no) else {
        return PageClass::Unrecognised;
    };
    match page.btree_header() {
        Ok(h) if (h.cell_content_area() as usize) >= h.cell_pointers_end() => {
            PageClass::of_btree(h.page_type())
        }
        _ if page.is_zeroed() => PageClass::Zeroed,
        _ => PageClass::Unrecognised,
    }
}
