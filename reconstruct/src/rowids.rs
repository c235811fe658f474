//! The rowids a run wrote into a table, kept as runs of consecutive values: a table's
//! rowids are mostly consecutive, so what this holds grows with the gaps between them
//! (lost pages, rows deleted before the damage), not with the rows. Two million rows
//! with 1 % of their pages lost take a few thousand runs, not 16 MB.

use std::collections::BTreeSet;

/// Rowids, added in any order, removed one at a time or many at once.
///
/// ```
/// use reconstruct::RowidSet;
/// let mut set = RowidSet::default();
/// for rowid in (1..=100).chain([7, 500, -3]) {
///     set.insert(rowid);
/// }
/// set.remove(50);
/// let rowids = set.settled();
/// assert_eq!(rowids.len(), 101);
/// assert_eq!(rowids.count_within(0, 60), 59); // 1..=60 without 50
/// assert!(rowids.contains(-3) && !rowids.contains(50));
/// assert_eq!(rowids.last(), Some(500));
/// ```
#[derive(Clone, Debug, Default)]
pub struct RowidSet {
    /// Runs `[first, last]`, ascending, disjoint, none touching the next.
    runs: Vec<(i64, i64)>,
    /// Rowids added below the last run's end, merged in at the next removal or when
    /// settled (or once they are as many as the runs, so that they stay few).
    pending: Vec<i64>,
}

impl RowidSet {
    /// Adds `rowid`. Ascending rowids extend the last run in place.
    pub fn insert(&mut self, rowid: i64) {
        match self.runs.last_mut() {
            None => self.runs.push((rowid, rowid)),
            Some((_, last)) if rowid > *last => {
                if rowid == *last + 1 {
                    *last = rowid;
                } else {
                    self.runs.push((rowid, rowid));
                }
            }
            Some(_) => {
                self.pending.push(rowid);
                if self.pending.len() >= self.runs.len().max(4096) {
                    self.merge_pending();
                }
            }
        }
    }

    /// Whether nothing was added (or all was removed).
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty() && self.pending.is_empty()
    }

    /// Removes `rowid`; whether it was there.
    pub fn remove(&mut self, rowid: i64) -> bool {
        self.merge_pending();
        let i = self.runs.partition_point(|(_, last)| *last < rowid);
        let Some(&(first, last)) = self.runs.get(i) else {
            return false;
        };
        if rowid < first {
            return false;
        }
        match (rowid == first, rowid == last) {
            (true, true) => {
                self.runs.remove(i);
            }
            (true, false) => self.set_run(i, (first + 1, last)),
            (false, true) => self.set_run(i, (first, last - 1)),
            (false, false) => {
                self.set_run(i, (first, rowid - 1));
                self.runs.insert(i + 1, (rowid + 1, last));
            }
        }
        true
    }

    /// Removes every rowid of `gone`, in one pass over the runs.
    pub fn remove_all(&mut self, gone: &BTreeSet<i64>) {
        if gone.is_empty() {
            return;
        }
        self.merge_pending();
        let mut kept = Vec::with_capacity(self.runs.len());
        for &(first, last) in &self.runs {
            // The first rowid of the run not yet kept or removed (none past i64::MAX).
            let mut from = Some(first);
            for &rowid in gone.range(first..=last) {
                if let Some(f) = from.filter(|f| rowid > *f) {
                    kept.push((f, rowid - 1));
                }
                from = rowid.checked_add(1);
            }
            if let Some(f) = from.filter(|f| *f <= last) {
                kept.push((f, last));
            }
        }
        self.runs = kept;
    }

    /// The rowids, settled for reading.
    pub fn settled(mut self) -> Rowids {
        self.merge_pending();
        let mut before = Vec::with_capacity(self.runs.len());
        let mut count = 0u64;
        for &(first, last) in &self.runs {
            before.push(count);
            count = count.saturating_add(run_len(first, last));
        }
        Rowids {
            runs: self.runs,
            before,
            len: count,
        }
    }

    fn set_run(&mut self, i: usize, run: (i64, i64)) {
        if let Some(r) = self.runs.get_mut(i) {
            *r = run;
        }
    }

    /// Merges the pending rowids into the runs.
    fn merge_pending(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut pending = std::mem::take(&mut self.pending);
        pending.sort_unstable();
        pending.dedup();
        let mut merged: Vec<(i64, i64)> = Vec::with_capacity(self.runs.len() + pending.len());
        let mut push = |(first, last): (i64, i64)| match merged.last_mut() {
            Some((_, end)) if first <= end.saturating_add(1) => *end = (*end).max(last),
            _ => merged.push((first, last)),
        };
        let (mut runs, mut singles) = (self.runs.iter().peekable(), pending.iter().peekable());
        loop {
            let next = match (runs.peek(), singles.peek()) {
                (Some(&&r), Some(&&s)) if s < r.0 => {
                    singles.next();
                    (s, s)
                }
                (Some(&&r), _) => {
                    runs.next();
                    r
                }
                (None, Some(&&s)) => {
                    singles.next();
                    (s, s)
                }
                (None, None) => break,
            };
            push(next);
        }
        self.runs = merged;
    }
}

/// Rows in the run `[first, last]`.
fn run_len(first: i64, last: i64) -> u64 {
    u64::try_from(i128::from(last) - i128::from(first) + 1).unwrap_or(u64::MAX)
}

/// A [`RowidSet`] settled: counted, searched, walked in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rowids {
    runs: Vec<(i64, i64)>,
    /// Per run, how many rowids the runs before it hold.
    before: Vec<u64>,
    len: u64,
}

impl Rowids {
    /// How many rowids.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The highest rowid.
    pub fn last(&self) -> Option<i64> {
        self.runs.last().map(|(_, last)| *last)
    }

    /// Whether `rowid` is one of them.
    pub fn contains(&self, rowid: i64) -> bool {
        let i = self.runs.partition_point(|(_, last)| *last < rowid);
        self.runs.get(i).is_some_and(|(first, _)| *first <= rowid)
    }

    /// How many are at most `rowid`.
    pub fn count_at_most(&self, rowid: i64) -> u64 {
        let i = self.runs.partition_point(|(first, _)| *first <= rowid);
        match i.checked_sub(1) {
            None => 0,
            Some(j) => match (self.runs.get(j), self.before.get(j)) {
                (Some(&(first, last)), Some(&before)) => {
                    before.saturating_add(run_len(first, last.min(rowid)))
                }
                _ => 0,
            },
        }
    }

    /// How many are above `lower` and at most `upper` (`None`: no bound that side).
    pub fn count_within_bounds(&self, lower: Option<i64>, upper: Option<i64>) -> u64 {
        let to = upper.map_or(self.len, |u| self.count_at_most(u));
        let from = lower.map_or(0, |l| self.count_at_most(l));
        to.saturating_sub(from)
    }

    /// How many are above `lower` and at most `upper`.
    pub fn count_within(&self, lower: i64, upper: i64) -> u64 {
        self.count_within_bounds(Some(lower), Some(upper))
    }

    /// The rowids, ascending.
    pub fn iter(&self) -> impl Iterator<Item = i64> + '_ {
        self.runs.iter().flat_map(|&(first, last)| first..=last)
    }

    /// How many runs of consecutive rowids hold them (what they cost in memory).
    pub fn runs(&self) -> usize {
        self.runs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (SplitMix64).
    struct Mix(u64);
    impl Mix {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// Rowids near 0, near the extremes of i64, or anywhere.
    fn rowid(mix: &mut Mix) -> i64 {
        match mix.below(8) {
            0 => i64::MAX - mix.below(6) as i64,
            1 => i64::MIN + mix.below(6) as i64,
            2 => mix.next() as i64,
            _ => mix.below(300) as i64 - 100,
        }
    }

    #[test]
    fn agrees_with_a_btreeset_on_random_inserts_and_removals() {
        for seed in 0..400 {
            let mut mix = Mix(seed);
            let (mut set, mut model) = (RowidSet::default(), BTreeSet::new());
            let steps = mix.below(600);
            for _ in 0..steps {
                match mix.below(10) {
                    0 | 1 => {
                        let r = rowid(&mut mix);
                        assert_eq!(set.remove(r), model.remove(&r), "seed {seed}: remove {r}");
                    }
                    2 => {
                        let gone: BTreeSet<i64> =
                            (0..mix.below(20)).map(|_| rowid(&mut mix)).collect();
                        set.remove_all(&gone);
                        model.retain(|r| !gone.contains(r));
                    }
                    3 => {
                        // A long ascending stretch, as the bulk writer adds them.
                        let from = rowid(&mut mix);
                        for r in from..from.saturating_add(mix.below(50) as i64) {
                            set.insert(r);
                            model.insert(r);
                        }
                    }
                    _ => {
                        let r = rowid(&mut mix);
                        set.insert(r);
                        model.insert(r);
                    }
                }
                assert_eq!(set.is_empty(), model.is_empty(), "seed {seed}");
            }
            let rowids = set.settled();
            assert_eq!(rowids.len(), model.len() as u64, "seed {seed}");
            assert_eq!(rowids.last(), model.last().copied(), "seed {seed}");
            assert!(rowids.iter().eq(model.iter().copied()), "seed {seed}");
            for _ in 0..50 {
                let (a, b) = (rowid(&mut mix), rowid(&mut mix));
                assert_eq!(rowids.contains(a), model.contains(&a), "seed {seed}: {a}");
                let (lo, hi) = (a.min(b), a.max(b));
                let expected = model.range(lo..=hi).filter(|r| **r > lo).count() as u64;
                assert_eq!(
                    rowids.count_within(lo, hi),
                    expected,
                    "seed {seed}: ({lo}, {hi}]"
                );
                assert_eq!(
                    rowids.count_within_bounds(None, Some(hi)),
                    model.range(..=hi).count() as u64
                );
                assert_eq!(
                    rowids.count_within_bounds(Some(lo), None),
                    model.range(lo..).filter(|r| **r > lo).count() as u64
                );
            }
        }
    }

    #[test]
    fn consecutive_rowids_take_one_run_whatever_their_order() {
        // As the bulk writer adds them: ascending, each extending the run in place.
        let mut set = RowidSet::default();
        for r in 1..=2_000_000 {
            set.insert(r);
        }
        assert_eq!((set.runs.len(), set.pending.len()), (1, 0));
        // Descending, as rows written through SQL may come: merged as they pile up.
        let mut set = RowidSet::default();
        for r in (1..=2_000_000).rev() {
            set.insert(r);
            assert!(set.pending.len() <= 4096);
        }
        let rowids = set.settled();
        assert_eq!((rowids.runs(), rowids.len()), (1, 2_000_000));
    }
}
