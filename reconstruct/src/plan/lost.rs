//! The child pointers a table's walk could not follow, looked up by the pointer's value and
//! by the key range it was bound to. A group asks both questions of every damaged table;
//! a large file with many zeroed pages has tens of thousands of lost pointers and as many
//! groups, so a scan of the list per question grew with the square of the damage (9 s of
//! a 20 GB store's run).

use std::collections::HashMap;

use pager::{KeyBounds, LostChild, TreeSurvey};

/// What the plan asks of one tree of the survey, answered once for every group.
pub(super) struct DamagedTree<'s> {
    /// The tree.
    pub tree: &'s TreeSurvey,
    /// Its lost child pointers, indexed.
    pub lost: LostChildren<'s>,
    /// A finding of the tree may hide cells anywhere in it (see
    /// [`crate::bounds::disguises_cells`]).
    pub cells_disguised: bool,
}

impl<'s> DamagedTree<'s> {
    /// The tree, indexed.
    pub(super) fn new(tree: &'s TreeSurvey) -> DamagedTree<'s> {
        DamagedTree {
            tree,
            lost: LostChildren::new(&tree.lost),
            cells_disguised: tree.findings.iter().any(crate::bounds::disguises_cells),
        }
    }
}

/// One tree's lost child pointers, indexed.
pub(super) struct LostChildren<'s> {
    lost: &'s [LostChild],
    /// The first pointer of each value.
    by_child: HashMap<u32, usize>,
    /// The non-empty ranges `(lower, upper]`, sorted by lower bound, with each one's
    /// position in `lost`; `None` when two of them overlap (divider keys out of order, a
    /// file that lies), when a range may be any of several and the list is searched in
    /// its order.
    ranges: Option<Vec<(i128, i128, usize)>>,
}

/// A range as `(lower, upper]` over all 64-bit keys: no lower bound is below every key.
fn span(b: KeyBounds) -> (i128, i128) {
    (
        b.lower.map_or(i128::from(i64::MIN) - 1, i128::from),
        b.upper.map_or(i128::from(i64::MAX), i128::from),
    )
}

impl<'s> LostChildren<'s> {
    /// Indexes `lost`.
    pub(super) fn new(lost: &'s [LostChild]) -> LostChildren<'s> {
        let mut by_child = HashMap::with_capacity(lost.len());
        for (i, l) in lost.iter().enumerate() {
            by_child.entry(l.child).or_insert(i);
        }
        let mut ranges: Vec<(i128, i128, usize)> = lost
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let (lo, hi) = span(l.bounds);
                (lo, hi, i)
            })
            .filter(|(lo, hi, _)| lo < hi)
            .collect();
        ranges.sort_unstable();
        let disjoint = ranges.windows(2).all(|w| match w {
            [(_, hi, _), (lo, _, _)] => lo >= hi,
            _ => true,
        });
        LostChildren {
            lost,
            by_child,
            ranges: disjoint.then_some(ranges),
        }
    }

    /// The first lost pointer whose value is `child`.
    pub(super) fn pointing_at(&self, child: u32) -> Option<&'s LostChild> {
        self.by_child.get(&child).and_then(|&i| self.lost.get(i))
    }

    /// The first lost pointer (in the walk's order) whose range holds both `lo` and `hi`;
    /// with `bounded`, only a range with a bound (a pointer with neither bounds nothing).
    pub(super) fn covering(&self, lo: i64, hi: i64, bounded: bool) -> Option<&'s LostChild> {
        let fits = |l: &&LostChild| {
            (!bounded || l.bounds.lower.is_some() || l.bounds.upper.is_some())
                && l.bounds.contains(lo)
                && l.bounds.contains(hi)
        };
        match &self.ranges {
            // Ranges that do not overlap: only the last one starting below `lo` can hold it.
            Some(ranges) => {
                let after = ranges.partition_point(|(start, _, _)| *start < i128::from(lo));
                let (_, _, i) = ranges.get(after.checked_sub(1)?)?;
                self.lost.get(*i).filter(fits)
            }
            None => self.lost.iter().find(fits),
        }
    }
}

#[cfg(test)]
mod tests {
    use pager::PageNo;

    use super::*;

    fn lost(child: u32, lower: Option<i64>, upper: Option<i64>) -> LostChild {
        LostChild {
            parent: PageNo::new(2).unwrap(),
            child,
            bounds: KeyBounds { lower, upper },
        }
    }

    /// What the list searched in order answers.
    fn scanned(all: &[LostChild], lo: i64, hi: i64, bounded: bool) -> Option<&LostChild> {
        all.iter().find(|l| {
            (!bounded || l.bounds.lower.is_some() || l.bounds.upper.is_some())
                && l.bounds.contains(lo)
                && l.bounds.contains(hi)
        })
    }

    #[test]
    fn answers_as_a_scan_of_the_list_does() {
        let bounds = [
            None,
            Some(i64::MIN),
            Some(-5),
            Some(0),
            Some(3),
            Some(10),
            Some(i64::MAX),
        ];
        let keys = [i64::MIN, -6, -5, -4, 0, 1, 3, 4, 9, 10, 11, i64::MAX];
        // Every list of up to three ranges over those bounds, in both orders.
        let mut lists: Vec<Vec<LostChild>> = Vec::new();
        for &a in &bounds {
            for &b in &bounds {
                lists.push(vec![lost(7, a, b)]);
                for &c in &bounds {
                    for &d in &bounds {
                        lists.push(vec![lost(7, a, b), lost(8, c, d)]);
                        lists.push(vec![lost(8, c, d), lost(7, a, b), lost(7, None, Some(-5))]);
                    }
                }
            }
        }
        let mut indexed = 0;
        for list in &lists {
            let index = LostChildren::new(list);
            indexed += usize::from(index.ranges.is_some());
            for &lo in &keys {
                for &hi in keys.iter().filter(|&&hi| hi >= lo) {
                    for bounded in [false, true] {
                        assert_eq!(
                            index.covering(lo, hi, bounded),
                            scanned(list, lo, hi, bounded),
                            "{list:?} {lo} {hi} {bounded}"
                        );
                    }
                }
            }
            assert_eq!(index.pointing_at(7), list.iter().find(|l| l.child == 7));
            assert_eq!(index.pointing_at(9), None);
        }
        assert!(
            indexed > lists.len() / 4,
            "the sorted search was tried: {indexed}"
        );
    }

    #[test]
    fn adjacent_ranges_of_one_interior_page_are_searched_sorted() {
        // Three children of one page: (-inf, 10], (10, 20], (20, +inf).
        let list = [
            lost(3, Some(20), None),
            lost(4, None, Some(10)),
            lost(5, Some(10), Some(20)),
        ];
        let index = LostChildren::new(&list);
        assert!(index.ranges.is_some());
        assert_eq!(index.covering(11, 20, true).map(|l| l.child), Some(5));
        assert_eq!(index.covering(10, 11, true), None);
        assert_eq!(index.covering(21, 99, true).map(|l| l.child), Some(3));
        assert_eq!(index.covering(i64::MIN, 10, true).map(|l| l.child), Some(4));
    }
}
