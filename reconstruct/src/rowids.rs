//! The rowids a run wrote into a table, kept as runs of consecutive values: a table's
//! rowids are mostly consecutive, so what this holds grows with the gaps between them
//! (lost pages, rows deleted before the damage), not with the rows. Two million rows
//! with 1 % of their pages lost take a few thousand runs, not 16 MB. A rowid with no
//! neighbour (keys an application chose: scattered, hashed) is kept alone, in 8 bytes,
//! as a plain list of them would.

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
    /// Runs `[first, last]` of two rowids or more, ascending, disjoint, none touching
    /// another run or a single; the last one may hold one rowid while it grows.
    runs: Vec<(i64, i64)>,
    /// Rowids alone, ascending.
    singles: Vec<i64>,
    /// Rowids added below the last run's end, merged in at the next removal or when
    /// settled (or once they are as many as the runs and singles, so that they stay few).
    pending: Vec<i64>,
}

impl FromIterator<i64> for RowidSet {
    /// The rowids of `iter`, in any order.
    fn from_iter<I: IntoIterator<Item = i64>>(iter: I) -> RowidSet {
        let mut set = RowidSet::default();
        for rowid in iter {
            set.insert(rowid);
        }
        set
    }
}

impl RowidSet {
    /// Adds `rowid`. Ascending rowids extend the last run in place.
    pub fn insert(&mut self, rowid: i64) {
        let run_top = self.runs.last().map(|r| r.1);
        let single_top = self.singles.last().copied();
        match (run_top, single_top) {
            (r, s) if r.max(s).is_some_and(|top| rowid <= top) => {
                self.pending.push(rowid);
                if self.pending.len() >= (self.runs.len() + self.singles.len()).max(4096) {
                    self.merge_pending();
                }
            }
            // (A single above the last run would be the top: the arm above.)
            (Some(last), _) if rowid == last + 1 => {
                if let Some(run) = self.runs.last_mut() {
                    run.1 = rowid;
                }
            }
            (_, s) => {
                // The run before, left alone, is a single.
                if let Some(&(first, end)) = self.runs.last() {
                    if first == end {
                        self.runs.pop();
                        self.add_single(first);
                    }
                }
                // A single just below (a removal left it above the runs) starts the run.
                let first = match s {
                    Some(s) if rowid == s + 1 => {
                        self.singles.pop();
                        s
                    }
                    _ => rowid,
                };
                self.runs.push((first, rowid));
            }
        }
    }

    /// Whether nothing was added (or all was removed).
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty() && self.singles.is_empty() && self.pending.is_empty()
    }

    /// Removes `rowid`; whether it was there.
    pub fn remove(&mut self, rowid: i64) -> bool {
        self.merge_pending();
        if let Ok(i) = self.singles.binary_search(&rowid) {
            self.singles.remove(i);
            return true;
        }
        let i = self.runs.partition_point(|(_, last)| *last < rowid);
        let Some(&(first, last)) = self.runs.get(i) else {
            return false;
        };
        if rowid < first {
            return false;
        }
        self.runs.remove(i);
        // What is left of the run each side of `rowid` (nothing past either end of i64).
        let below = rowid.checked_sub(1).map(|end| (first, end));
        let above = rowid.checked_add(1).map(|start| (start, last));
        let mut at = i;
        for (from, to) in [below, above].into_iter().flatten().filter(|(f, t)| f <= t) {
            if from == to {
                self.add_single(from);
            } else {
                self.runs.insert(at, (from, to));
                at += 1;
            }
        }
        true
    }

    /// Removes every rowid of `gone`, in one pass.
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
        self.singles.retain(|s| !gone.contains(s));
        self.runs = kept;
        self.normalize();
    }

    /// The rowids, settled for reading.
    pub fn settled(mut self) -> Rowids {
        self.merge_pending();
        // The last run may hold one rowid.
        if self.runs.last().is_some_and(|(first, last)| first == last) {
            self.normalize();
        }
        let mut before = Vec::with_capacity(self.runs.len() / BLOCK + 1);
        let mut count = 0u64;
        for (i, &(first, last)) in self.runs.iter().enumerate() {
            if i % BLOCK == 0 {
                before.push(count);
            }
            count = count.saturating_add(run_len(first, last));
        }
        self.runs.shrink_to_fit();
        self.singles.shrink_to_fit();
        Rowids {
            len: count.saturating_add(self.singles.len() as u64),
            runs: self.runs,
            singles: self.singles,
            before,
        }
    }

    /// Adds a rowid alone, in order (at the end, as a rule).
    fn add_single(&mut self, rowid: i64) {
        match self.singles.last() {
            Some(last) if *last > rowid => {
                let j = self.singles.partition_point(|s| *s < rowid);
                self.singles.insert(j, rowid);
            }
            _ => self.singles.push(rowid),
        }
    }

    /// Merges the pending rowids into the runs and singles.
    fn merge_pending(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut pending = std::mem::take(&mut self.pending);
        pending.sort_unstable();
        pending.dedup();
        // Every rowid known, as runs in order of their start, coalesced.
        let mut merged: Vec<(i64, i64)> =
            Vec::with_capacity(self.runs.len() + self.singles.len() + pending.len());
        let mut runs = self.runs.iter().copied().peekable();
        let mut alone = self
            .singles
            .iter()
            .chain(&pending)
            .copied()
            .collect::<Vec<_>>();
        alone.sort_unstable();
        let mut alone = alone.into_iter().peekable();
        loop {
            let next = match (runs.peek(), alone.peek()) {
                (Some(&r), Some(&s)) if s < r.0 => {
                    alone.next();
                    (s, s)
                }
                (Some(&r), _) => {
                    runs.next();
                    r
                }
                (None, Some(&s)) => {
                    alone.next();
                    (s, s)
                }
                (None, None) => break,
            };
            match merged.last_mut() {
                Some((_, end)) if next.0 <= end.saturating_add(1) => *end = (*end).max(next.1),
                _ => merged.push(next),
            }
        }
        self.runs = merged;
        self.singles.clear();
        self.normalize();
    }

    /// Moves every run of one rowid among the singles (the runs are coalesced).
    fn normalize(&mut self) {
        if !self.runs.iter().any(|(first, last)| first == last) {
            return;
        }
        let mut alone: Vec<i64> = self
            .runs
            .iter()
            .filter(|(first, last)| first == last)
            .map(|(first, _)| *first)
            .collect();
        self.runs.retain(|(first, last)| first != last);
        if !self.singles.is_empty() {
            alone.extend_from_slice(&self.singles);
            alone.sort_unstable();
        }
        self.singles = alone;
    }
}

/// Runs per count kept of the rowids before them: a count is a search and at most this
/// many runs added up.
const BLOCK: usize = 32;

/// Rows in the run `[first, last]`.
fn run_len(first: i64, last: i64) -> u64 {
    u64::try_from(i128::from(last) - i128::from(first) + 1).unwrap_or(u64::MAX)
}

/// A [`RowidSet`] settled: counted, searched, walked in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rowids {
    /// Runs of two rowids or more, ascending.
    runs: Vec<(i64, i64)>,
    /// Rowids alone, ascending.
    singles: Vec<i64>,
    /// For every [`BLOCK`]th run, how many rowids the runs before it hold.
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
        let run = self.runs.last().map(|(_, last)| *last);
        run.into_iter().chain(self.singles.last().copied()).max()
    }

    /// Whether `rowid` is one of them.
    pub fn contains(&self, rowid: i64) -> bool {
        let i = self.runs.partition_point(|(_, last)| *last < rowid);
        self.runs.get(i).is_some_and(|(first, _)| *first <= rowid)
            || self.singles.binary_search(&rowid).is_ok()
    }

    /// How many are at most `rowid`.
    pub fn count_at_most(&self, rowid: i64) -> u64 {
        let singles = self.singles.partition_point(|s| *s <= rowid) as u64;
        // Runs starting at or below `rowid`: all whole but the last, which may be cut.
        let n = self.runs.partition_point(|(first, _)| *first <= rowid);
        let Some(block) = n.checked_sub(1).map(|i| i / BLOCK) else {
            return singles;
        };
        let counted: u64 = self
            .runs
            .get(block * BLOCK..n)
            .unwrap_or_default()
            .iter()
            .map(|&(first, last)| run_len(first, last.min(rowid)))
            .fold(0, u64::saturating_add);
        let before = self.before.get(block).copied().unwrap_or(0);
        singles.saturating_add(before).saturating_add(counted)
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
        let mut runs = self.runs.iter().peekable();
        let mut singles = self.singles.iter().peekable();
        let mut current: Option<std::ops::RangeInclusive<i64>> = None;
        std::iter::from_fn(move || loop {
            if let Some(r) = current.as_mut().and_then(Iterator::next) {
                return Some(r);
            }
            match (runs.peek(), singles.peek()) {
                (Some(&&(first, _)), Some(&&s)) if s < first => return singles.next().copied(),
                (Some(_), _) => current = runs.next().map(|&(first, last)| first..=last),
                (None, Some(_)) => return singles.next().copied(),
                (None, None) => return None,
            }
        })
    }

    /// What they take in memory, about: 16 bytes a run, 8 a rowid alone.
    pub fn bytes(&self) -> usize {
        self.runs.len() * 16 + self.singles.len() * 8 + self.before.len() * 8
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
        assert_eq!((rowids.runs.len(), rowids.len()), (1, 2_000_000));
    }

    #[test]
    fn a_rowid_next_to_a_single_joins_it_in_a_run() {
        // A removal leaves 5 alone above the runs; 6 to 9 then make one run with it.
        let mut set = RowidSet::default();
        (1..=5).for_each(|r| set.insert(r));
        set.remove(4);
        (6..=9).for_each(|r| set.insert(r));
        assert_eq!(
            (set.runs.clone(), set.singles.clone()),
            (vec![(1, 3), (5, 9)], vec![])
        );
    }

    #[test]
    fn rowids_with_no_neighbour_cost_what_a_list_of_them_would() {
        // Every other rowid: no two consecutive, in order and shuffled.
        let n = 200_000i64;
        let mut mix = Mix(7);
        let mut shuffled: Vec<i64> = (0..n).map(|i| 2 * i).collect();
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, mix.below(i as u64 + 1) as usize);
        }
        for order in [(0..n).map(|i| 2 * i).collect::<Vec<_>>(), shuffled] {
            let mut set = RowidSet::default();
            for &r in &order {
                set.insert(r);
                assert!(set.runs.len() <= 1);
            }
            let rowids = set.settled();
            assert_eq!(rowids.len(), n as u64);
            assert!(rowids.bytes() <= 8 * n as usize, "{}", rowids.bytes());
            assert_eq!(rowids.count_within(-1, 2 * n), n as u64);
            assert_eq!(rowids.count_within(10, 20), 5);
        }
    }
}
