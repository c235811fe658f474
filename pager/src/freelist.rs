//! The freelist ("The Freelist"): a chain of trunk pages, each listing leaf pages.
//!
//! ```text
//! freelist trunk page
//! +-----------------+-----------------+----------------------------+
//! | next trunk (4)  | leaf count L (4)| L leaf page numbers (4 each)|
//! +-----------------+-----------------+----------------------------+
//! ```
//!
//! The chain is walked with a visited set; a cycle, a pointer past the end of the file,
//! or a count that cannot fit is a finding and the walk keeps what it has.
//!
//! When the database header is destroyed, its pointer to the first trunk page is lost with
//! it, but the trunk pages are still there: [`scan_freelist`] finds them by their content.

use crate::cursor::u32_at;
use crate::database::Database;
use crate::finding::Finding;
use crate::types::{PageNo, PageSet};

/// What the freelist chain holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Freelist {
    /// Trunk pages in chain order.
    pub trunks: Vec<PageNo>,
    /// Leaf pages, in the order the trunks list them.
    pub leaves: Vec<PageNo>,
    /// Damage met on the way.
    pub findings: Vec<Finding>,
    /// Whether the trunk pages were found by their content ([`scan_freelist`]), the
    /// header's pointer to them being lost.
    pub by_scan: bool,
}

impl Freelist {
    /// Pages on the freelist, trunks and leaves.
    pub fn page_count(&self) -> u32 {
        (self.trunks.len() + self.leaves.len()) as u32
    }
}

/// A freelist trunk page ("The Freelist").
#[derive(Clone, Copy, Debug)]
pub struct FreelistTrunkPage<'a> {
    bytes: &'a [u8],
}

impl<'a> FreelistTrunkPage<'a> {
    /// A view of a trunk page's bytes.
    pub fn new(bytes: &'a [u8]) -> Self {
        FreelistTrunkPage { bytes }
    }
    /// The next trunk page, raw (0 ends the chain).
    pub fn next_trunk(&self) -> u32 {
        u32_at(self.bytes, 0).unwrap_or(0)
    }
    /// The number of leaf pointers on this trunk, raw.
    pub fn leaf_count(&self) -> u32 {
        u32_at(self.bytes, 4).unwrap_or(0)
    }
    /// The leaf pointers, raw, as far as the page holds them.
    pub fn leaves(&self, count: u32) -> impl Iterator<Item = u32> + 'a {
        let bytes = self.bytes;
        (0..count as usize).map_while(move |i| u32_at(bytes, 8 + 4 * i))
    }
}

/// Walks the freelist from the header's first trunk page and checks the header's count.
pub fn read_freelist(db: &Database<'_>) -> Freelist {
    let mut out = Freelist::default();
    let mut seen = PageSet::with_page_count(db.page_count());
    let max_leaves = (db.usable_size() / 4).saturating_sub(2) as u32;
    let mut next = db.header().first_freelist_trunk;
    let mut from: Option<PageNo> = None;
    // Budget: no chain can hold more trunks than the file has pages.
    let mut budget = db.page_count();
    while next != 0 && budget > 0 {
        budget -= 1;
        let Some(trunk) = db.page_no(next) else {
            out.findings
                .push(Finding::FreelistTrunkPastEnd { from, next });
            break;
        };
        if !seen.insert(trunk) {
            out.findings.push(Finding::FreelistCycle { trunk });
            break;
        }
        let Some(page) = db.page(trunk) else { break };
        out.trunks.push(trunk);
        let view = FreelistTrunkPage::new(page.bytes());
        let mut count = view.leaf_count();
        if count > max_leaves {
            out.findings
                .push(Finding::FreelistLeafCountTooLarge { trunk, count });
            count = max_leaves;
        }
        for raw in view.leaves(count) {
            match db.page_no(raw) {
                Some(leaf) if seen.insert(leaf) => out.leaves.push(leaf),
                _ => out
                    .findings
                    .push(Finding::FreelistLeafInvalid { trunk, leaf: raw }),
            }
        }
        from = Some(trunk);
        next = view.next_trunk();
    }
    let found = out.page_count();
    if found != db.header().freelist_count {
        out.findings.push(Finding::FreelistCountMismatch {
            declared: db.header().freelist_count,
            found,
        });
    }
    out
}

/// Finds the freelist of a file whose header is destroyed, by the content of its trunk
/// pages: a page `candidate` allows (one that is no b-tree page and no tree holds) is a
/// trunk when its leaf count fits the page, is not zero, and lists distinct pages of the
/// file that `free` allows (no tree holds them), and its next-trunk pointer is 0 or
/// another such trunk page. The last rule is what random bytes almost never meet: a trunk
/// is taken only with its whole chain to its end.
pub fn scan_freelist(
    db: &Database<'_>,
    candidate: impl Fn(PageNo) -> bool,
    free: impl Fn(PageNo) -> bool,
) -> Freelist {
    let max_leaves = (db.usable_size() / 4).saturating_sub(2) as u32;
    let mut trunks: std::collections::BTreeMap<PageNo, (u32, Vec<PageNo>)> =
        std::collections::BTreeMap::new();
    for no in (1..=db.page_count()).filter_map(PageNo::new) {
        if !candidate(no) {
            continue;
        }
        let Some(page) = db.page(no) else { continue };
        let view = FreelistTrunkPage::new(page.bytes());
        let (next, count) = (view.next_trunk(), view.leaf_count());
        if count == 0 || count > max_leaves || next == no.get() {
            continue;
        }
        if next != 0 && db.page_no(next).is_none() {
            continue;
        }
        let mut seen = std::collections::BTreeSet::new();
        let leaves: Option<Vec<PageNo>> = view
            .leaves(count)
            .map(|raw| {
                db.page_no(raw)
                    .filter(|l| *l != no && free(*l) && seen.insert(*l))
            })
            .collect();
        if let Some(leaves) = leaves.filter(|l| l.len() == count as usize) {
            trunks.insert(no, (next, leaves));
        }
    }
    // Keep only trunks whose chain runs through trunks to a 0 pointer.
    loop {
        let broken: Vec<PageNo> = trunks
            .iter()
            .filter(|(_, (next, _))| {
                *next != 0 && !PageNo::new(*next).is_some_and(|n| trunks.contains_key(&n))
            })
            .map(|(no, _)| *no)
            .collect();
        if broken.is_empty() {
            break;
        }
        for no in broken {
            trunks.remove(&no);
        }
    }
    let mut out = Freelist {
        by_scan: true,
        ..Freelist::default()
    };
    let mut listed = PageSet::with_page_count(db.page_count());
    for (no, (_, leaves)) in trunks {
        out.trunks.push(no);
        out.leaves
            .extend(leaves.into_iter().filter(|l| listed.insert(*l)));
    }
    out.leaves.retain(|l| !out.trunks.contains(l));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Db;

    /// agent-4096-utf8 has one trunk listing 20 leaves.
    fn with_freelist() -> (Db, u32) {
        let db = Db::named("agent-4096-utf8");
        let trunk = u32::from_be_bytes(db.bytes[32..36].try_into().unwrap());
        assert_ne!(trunk, 0);
        let chain = fixtures::format::freelist(&db.bytes).unwrap();
        assert_eq!((chain.trunks, chain.leaves.len()), (vec![trunk], 20));
        (db, trunk)
    }

    fn findings(db: &Db) -> Vec<Finding> {
        read_freelist(&Database::open(&db.bytes).unwrap()).findings
    }

    fn no(n: u32) -> PageNo {
        PageNo::new(n).unwrap()
    }

    #[test]
    fn freelist_count_in_header_wrong() {
        let (mut db, _) = with_freelist();
        db.bytes[36..40].copy_from_slice(&22u32.to_be_bytes()); // freelist page count: 22
        assert_eq!(
            findings(&db),
            vec![Finding::FreelistCountMismatch {
                declared: 22,
                found: 21
            }]
        );
    }

    #[test]
    fn first_trunk_past_the_end() {
        let (mut db, _) = with_freelist();
        db.bytes[32..36].copy_from_slice(&99_999u32.to_be_bytes()); // first trunk page
        assert_eq!(
            findings(&db),
            vec![
                Finding::FreelistTrunkPastEnd {
                    from: None,
                    next: 99_999
                },
                Finding::FreelistCountMismatch {
                    declared: 21,
                    found: 0
                },
            ]
        );
    }

    #[test]
    fn next_trunk_past_the_end() {
        let (mut db, trunk) = with_freelist();
        db.set_u32(trunk, 0, 99_999); // next trunk page
        assert_eq!(
            findings(&db),
            vec![Finding::FreelistTrunkPastEnd {
                from: Some(no(trunk)),
                next: 99_999
            }]
        );
    }

    #[test]
    fn trunk_points_to_itself() {
        let (mut db, trunk) = with_freelist();
        db.set_u32(trunk, 0, trunk); // next trunk page: itself
        assert_eq!(
            findings(&db),
            vec![Finding::FreelistCycle { trunk: no(trunk) }]
        );
    }

    #[test]
    fn trunk_claims_more_leaves_than_fit() {
        let (mut db, trunk) = with_freelist();
        db.set_u32(trunk, 4, 5000); // leaf count: only (4096 - 8) / 4 = 1022 fit
        let list = read_freelist(&Database::open(&db.bytes).unwrap());
        assert_eq!(
            list.findings.first(),
            Some(&Finding::FreelistLeafCountTooLarge {
                trunk: no(trunk),
                count: 5000
            })
        );
        // The count is cut to what fits: 1022 pointers read, each a leaf or a finding.
        let invalid = list
            .findings
            .iter()
            .filter(|f| matches!(f, Finding::FreelistLeafInvalid { .. }))
            .count();
        assert_eq!(list.leaves.len() + invalid, 1022);
    }

    #[test]
    fn leaf_pointer_past_the_end() {
        let (mut db, trunk) = with_freelist();
        db.set_u32(trunk, 8, 99_999); // leaf page 0
        assert_eq!(
            findings(&db),
            vec![
                Finding::FreelistLeafInvalid {
                    trunk: no(trunk),
                    leaf: 99_999
                },
                Finding::FreelistCountMismatch {
                    declared: 21,
                    found: 20
                },
            ]
        );
    }

    #[test]
    fn leaf_pointer_names_its_own_trunk() {
        let (mut db, trunk) = with_freelist();
        db.set_u32(trunk, 8, trunk); // leaf page 0: the trunk, already on the freelist
        assert_eq!(
            findings(&db),
            vec![
                Finding::FreelistLeafInvalid {
                    trunk: no(trunk),
                    leaf: trunk
                },
                Finding::FreelistCountMismatch {
                    declared: 21,
                    found: 20
                },
            ]
        );
    }
}
