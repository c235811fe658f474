//! How many rows a table lost: bounds from what survives in the file.
//!
//! - A child pointer that could not be followed covered a rowid range `(lower, upper]`.
//!   SQLite never keeps an empty non-root page, so a lost subtree none of whose rows came
//!   back proves at least one lost row; and no more rows than its range holds, less those
//!   recovered in it, can be lost there.
//! - An index entry carries its row's rowid: an entry whose row is not in the output proves
//!   that row existed. Those rowids are exact.
//! - A full-text table's own copy of a row's text carries that row's rowid (or key): a
//!   copy whose row is not in the output proves that row existed too (see
//!   [`crate::textcopy`]).
//! - Rows whose cells were found but which are not in the table (refused by its
//!   constraints, or undecodable) are counted exactly.
//!
//! - An AUTOINCREMENT table's `sqlite_sequence` counter is the largest rowid the table
//!   ever held (SQLite raises it when a larger rowid is inserted), so it closes a lost
//!   range that is open at its top: the hot end of the table, where damage is likeliest.
//!
//! The lower bound is the largest of the proofs that cannot overlap; the upper bound is
//! known only when every lost range is bounded on both sides and the root survived.

use pager::LostChild;

mod evidence;

pub use evidence::{bound_table, Bounded, BoundsInput};

/// One lost rowid range and the rows recovered in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LostRange {
    /// The lost subtree.
    pub lost: LostChild,
    /// Rows in the output whose rowid lies in its range.
    pub recovered: u64,
}

/// Rows known not to be in the table although their cells were found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KnownMissing {
    /// Rows the output's constraints refused (kept in `lost_and_found`).
    pub rejected: u64,
    /// Of those, rows nothing proves were the table's (see
    /// [`crate::TableLoss::rejected_unproven`]): counted in the upper bound only.
    pub rejected_unproven: u64,
    /// Cells whose record could not be decoded at all.
    pub unreadable: u64,
    /// Findings in the table's b-tree that mean a row may have been read from the wrong
    /// bytes ([`disguises_cells`]): then no count says how many were lost.
    pub suspect: u64,
}

/// Whether a finding in a table's b-tree means that a row may have been read from the
/// wrong bytes, or a cell of a page missed without a trace: a cell whose key lies outside
/// its page's range (a pointer into the middle of a cell reads garbage as a key), cells
/// that overlap, a cell count or content area the page cannot hold, content-area bytes
/// that are no cell (a cell there may be gone, pointer and all).
pub fn disguises_cells(f: &pager::Finding) -> bool {
    use pager::Finding::*;
    matches!(
        f,
        KeyOutOfRange { .. }
            | CellOverlap { .. }
            | CellCountTooLarge { .. }
            | CellContentAreaOutOfRange { .. }
            | ContentUnaccounted { .. }
    )
}

/// Rows a table lost, as bounds with their evidence.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LossBounds {
    /// Rows proven lost: at least this many.
    pub lower: u64,
    /// At most this many, when every source of evidence bounds it.
    pub upper: Option<u64>,
    /// Rowids proven lost by index entries (exact; refused rows not counted).
    pub proven_by_index: u64,
    /// Rows proven lost by a full-text copy of their text and by no index entry.
    pub proven_by_text: u64,
    /// One sentence per source of evidence, with its numbers.
    pub evidence: Vec<String>,
}

/// Distinct rows proven to have existed that the output lacks (refused rows not
/// counted), by what proves them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Proven {
    /// Rows an index entry names.
    pub by_index: u64,
    /// Rows only a full-text copy names.
    pub by_text: u64,
}

/// Bounds the rows a table lost from its lost ranges, the rows index entries and text
/// copies prove missing (not counting refused rows), and the rows known missing. `root_lost`: the
/// table's root page is unreadable (nothing bounds the loss). `sequence`: the table's
/// `sqlite_sequence` counter, when it has one that no recovered rowid exceeds.
pub fn bound_loss(
    ranges: &[LostRange],
    proven: Proven,
    known: KnownMissing,
    root_lost: bool,
    sequence: Option<i64>,
) -> LossBounds {
    let index_missing = proven.by_index;
    let mut out = LossBounds {
        proven_by_index: index_missing,
        proven_by_text: proven.by_text,
        ..LossBounds::default()
    };
    let empty = ranges.iter().filter(|r| r.recovered == 0).count() as u64;
    let mut upper: Option<u64> = (!root_lost).then_some(0);
    let mut closed_by_sequence = 0;
    for r in ranges {
        let top = match (r.lost.bounds.lower, r.lost.bounds.upper) {
            (Some(_), None) if sequence.is_some() => {
                closed_by_sequence += 1;
                sequence
            }
            (_, upper) => upper,
        };
        let width = match (r.lost.bounds.lower, top) {
            (Some(lo), Some(hi)) if hi > lo => Some(hi.abs_diff(lo)),
            _ => None,
        };
        upper = match (upper, width) {
            (Some(u), Some(w)) => Some(u.saturating_add(w.saturating_sub(r.recovered))),
            _ => None,
        };
    }
    if !ranges.is_empty() {
        out.evidence.push(format!(
            "{} child pointers of the table's b-tree could not be followed; {empty} of their rowid ranges came back empty (each held at least one row)",
            ranges.len()
        ));
    }
    if let (Some(seq), true) = (sequence, closed_by_sequence > 0) {
        out.evidence.push(format!(
            "sqlite_sequence records {seq} as the largest rowid the table ever held: it closes the lost range above the last surviving row"
        ));
    }
    if index_missing > 0 {
        out.evidence.push(format!("{index_missing} index entries name rowids that are not in the output: those rows existed"));
    }
    if proven.by_text > 0 {
        out.evidence.push(text_evidence(proven.by_text));
    }
    let rejected = known.rejected.saturating_sub(known.rejected_unproven);
    if rejected > 0 {
        out.evidence.push(format!(
            "{rejected} rows were refused by the table's constraints (kept in lost_and_found)"
        ));
    }
    if known.rejected_unproven > 0 {
        out.evidence.push(format!(
            "{} rows given to the table from pages its tree does not reach were refused by its constraints (kept in lost_and_found): nothing proves they were its rows, so they count towards the upper bound only",
            known.rejected_unproven
        ));
    }
    if known.unreadable > 0 {
        out.evidence
            .push(format!("{} cells could not be decoded", known.unreadable));
    }
    if root_lost {
        out.evidence.push(
            "the table's root page is unreadable: nothing bounds how many rows it held".into(),
        );
    }
    if known.suspect > 0 {
        out.evidence.push(format!(
            "{} findings in the table's b-tree mean a row may have been read from the wrong bytes (misplaced keys, overlapping cells): how many rows were lost is not bounded",
            known.suspect
        ));
    }
    // Each term is a lower bound on its own; proofs never count a refused row.
    out.lower = empty
        .max(
            index_missing
                .saturating_add(proven.by_text)
                .saturating_add(rejected),
        )
        .max(known.unreadable);
    out.upper = upper.filter(|_| known.suspect == 0).map(|u| {
        u.saturating_add(known.rejected)
            .saturating_add(known.unreadable)
            .max(out.lower)
    });
    out
}

fn text_evidence(n: u64) -> String {
    format!("{n} rows that no index entry names have their text copied in a full-text table but are not in the output: those rows existed")
}

impl LossBounds {
    /// Takes in `n` placeholder rows made for the table: each stands for a row its
    /// children prove existed and that the output lacks, so the table lost at least `n`.
    pub fn add_placeholder_proof(&mut self, n: u64) {
        if n == 0 {
            return;
        }
        self.evidence.push(format!(
            "{n} placeholder rows stand for rows their children prove existed and that are lost"
        ));
        self.lower = self.lower.max(n);
        self.upper = self.upper.map(|u| u.max(self.lower));
    }

    /// Takes in `n` more rows proven only by a text copy, found after the bounds were
    /// drawn (their rowids unknown); `rejected`: the table's refused rows proven its own
    /// (see [`KnownMissing`]).
    pub fn add_text_proof(&mut self, n: u64, rejected: u64) {
        if n == 0 {
            return;
        }
        let old = text_evidence(self.proven_by_text);
        self.evidence.retain(|e| *e != old);
        self.proven_by_text = self.proven_by_text.saturating_add(n);
        self.evidence.push(text_evidence(self.proven_by_text));
        self.lower = self.lower.max(
            self.proven_by_index
                .saturating_add(self.proven_by_text)
                .saturating_add(rejected),
        );
        self.upper = self.upper.map(|u| u.max(self.lower));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pager::{KeyBounds, PageNo};

    fn idx(n: u64) -> Proven {
        Proven {
            by_index: n,
            by_text: 0,
        }
    }

    fn range(lower: Option<i64>, upper: Option<i64>, recovered: u64) -> LostRange {
        LostRange {
            lost: LostChild {
                parent: PageNo::new(4).unwrap(),
                child: 9,
                bounds: KeyBounds { lower, upper },
            },
            recovered,
        }
    }

    #[test]
    fn bounded_ranges_bound_the_loss_on_both_sides() {
        let none = KnownMissing::default();
        let b = bound_loss(
            &[
                range(Some(100), Some(110), 0),
                range(Some(200), Some(220), 5),
            ],
            idx(3),
            none,
            false,
            None,
        );
        assert_eq!(b.lower, 3); // three index entries beat one empty range
        assert_eq!(b.upper, Some(10 + 15));
    }

    #[test]
    fn text_copies_prove_rows_beside_index_entries() {
        let none = KnownMissing::default();
        let proven = Proven {
            by_index: 3,
            by_text: 2,
        };
        let mut b = bound_loss(&[range(Some(100), Some(104), 0)], proven, none, false, None);
        assert_eq!((b.lower, b.upper), (5, Some(5)));
        assert_eq!(
            b.evidence
                .iter()
                .filter(|e| e.contains("full-text"))
                .count(),
            1
        );
        b.add_text_proof(2, 1);
        assert_eq!((b.lower, b.upper, b.proven_by_text), (8, Some(8), 4));
        assert_eq!(
            b.evidence
                .iter()
                .filter(|e| e.contains("full-text"))
                .count(),
            1
        );
        assert!(b.evidence.iter().any(|e| e.starts_with("4 rows")));
    }

    #[test]
    fn cells_read_from_the_wrong_bytes_leave_the_loss_unbounded_above() {
        let known = KnownMissing {
            unreadable: 3,
            suspect: 1,
            ..KnownMissing::default()
        };
        let b = bound_loss(&[], idx(0), known, false, None);
        assert_eq!((b.lower, b.upper), (3, None));
        assert!(b.evidence.iter().any(|e| e.contains("wrong bytes")));
    }

    #[test]
    fn refused_rows_count_on_both_sides() {
        let refused = KnownMissing {
            rejected: 2,
            ..KnownMissing::default()
        };
        let b = bound_loss(
            &[range(Some(100), Some(110), 0)],
            idx(3),
            refused,
            false,
            None,
        );
        assert_eq!((b.lower, b.upper), (5, Some(12)));
    }

    /// Rows of another table wrongly given to this one and refused by its constraints
    /// were once counted as its loss (a lower bound of 26 where 21 were lost).
    #[test]
    fn refused_rows_nothing_proves_the_tables_count_above_only() {
        let refused = KnownMissing {
            rejected: 7,
            rejected_unproven: 5,
            ..KnownMissing::default()
        };
        let b = bound_loss(
            &[range(Some(100), Some(110), 0)],
            idx(3),
            refused,
            false,
            None,
        );
        assert_eq!((b.lower, b.upper), (5, Some(17)));
        assert!(b.evidence.iter().any(|e| e.contains("upper bound only")));
    }

    /// A table with placeholders once said "at least 0 rows lost".
    #[test]
    fn placeholders_prove_their_rows_existed() {
        let mut b = bound_loss(&[], Proven::default(), KnownMissing::default(), true, None);
        assert_eq!(b.lower, 0);
        b.add_placeholder_proof(311);
        assert_eq!((b.lower, b.upper), (311, None));
        assert!(b
            .evidence
            .iter()
            .any(|e| e.starts_with("311 placeholder rows")));
    }

    #[test]
    fn an_open_range_or_a_lost_root_leaves_the_upper_bound_unknown() {
        let none = KnownMissing::default();
        let open = bound_loss(
            &[range(None, Some(110), 0)],
            Proven::default(),
            none,
            false,
            None,
        );
        assert_eq!((open.lower, open.upper), (1, None));
        assert_eq!(
            bound_loss(&[], Proven::default(), none, true, None).upper,
            None
        );
    }

    #[test]
    fn the_sequence_counter_closes_a_range_open_at_its_top() {
        let none = KnownMissing::default();
        let open = [range(Some(100), None, 3)];
        assert_eq!(
            bound_loss(&open, Proven::default(), none, false, None).upper,
            None
        );
        let b = bound_loss(&open, Proven::default(), none, false, Some(120));
        assert_eq!((b.lower, b.upper), (0, Some(17)));
        assert!(b.evidence.iter().any(|e| e.contains("sqlite_sequence")));
        // It says nothing about rowids below the lowest surviving one.
        assert_eq!(
            bound_loss(
                &[range(None, Some(50), 0)],
                Proven::default(),
                none,
                false,
                Some(120)
            )
            .upper,
            None
        );
    }

    #[test]
    fn nothing_lost_is_zero_on_both_sides() {
        let b = bound_loss(&[], Proven::default(), KnownMissing::default(), false, None);
        assert_eq!((b.lower, b.upper), (0, Some(0)));
        assert!(b.evidence.is_empty());
    }
}
