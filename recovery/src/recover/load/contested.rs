//! Overflow pages two chains claim. In a file SQLite wrote, every overflow page belongs to
//! one chain; when the survey finds a chain running into a page another chain already
//! holds, one of the two next-page pointers is damaged and nothing in the file says which.
//! The bytes of that page (and of the pages after it) may be either row's, so in both rows
//! the fields read from them are suspect: NULL in the table and kept in
//! `salvage_damaged_fields` (`overflow_page_suspect`), never silently wrong.

use std::collections::BTreeSet;

use pager::{Database, Finding, PageClass, PageNo, PageSet, Survey};
use reconstruct::RecoveredRow;

/// The overflow pages the survey found claimed by two chains, and the trees involved.
pub struct Contested {
    pages: PageSet,
    /// Root pages of the trees whose chains reach a contested page.
    roots: BTreeSet<PageNo>,
}

impl Contested {
    /// The contested pages of a survey.
    pub fn of(db: &Database<'_>, survey: &Survey) -> Contested {
        let mut out = Contested {
            pages: PageSet::with_page_count(db.page_count()),
            roots: BTreeSet::new(),
        };
        for tree in &survey.trees {
            for f in &tree.findings {
                if let Finding::OverflowIntoNonOverflowPage {
                    page,
                    class: PageClass::Overflow,
                    ..
                } = f
                {
                    out.pages.insert(*page);
                    out.roots.insert(tree.root);
                    out.roots.extend(survey.page_map.owner(*page));
                }
            }
        }
        out
    }

    /// Whether chains of the tree rooted at `root` reach a contested page.
    pub fn involves(&self, root: Option<PageNo>) -> bool {
        root.is_some_and(|r| self.roots.contains(&r))
    }

    /// Whether any page is contested.
    pub fn is_empty(&self) -> bool {
        self.roots.is_empty()
    }

    /// Marks `row` suspect from the content of the first contested page of its chain on
    /// (see `pager::RawRow::suspect_from`); whether it did.
    pub fn mark(&self, db: &Database<'_>, row: &mut RecoveredRow<'_>) -> bool {
        if self.is_empty() || !row.raw.spilled() {
            return false;
        }
        let location = row.raw.location;
        let Ok(cell) = row.place().cell(db) else {
            return false;
        };
        let Some(payload) = cell.cell.payload() else {
            return false;
        };
        let chain = db.overflow_chain(payload, location);
        let Some(i) = chain.pages.iter().position(|p| self.pages.contains(*p)) else {
            return false;
        };
        let from = payload.local.len() + i * db.usable_size().saturating_sub(4);
        row.raw.suspect_from = Some(row.raw.suspect_from.map_or(from, |s| s.min(from)));
        true
    }
}
