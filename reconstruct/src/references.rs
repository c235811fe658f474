//! Telling apart tables of one shape by the keys their columns refer to.
//!
//! Two tables of an application may have one shape (Chroma's collection and segment
//! metadata: an id, a key and three values), so that their records fit both names alike.
//! Where a column of each declares a foreign key to a different parent, the values tell
//! them apart: a table's ids are keys of the parent it refers to, and not of the other
//! table's parent. The parents are tables the records named already.

use std::collections::{BTreeMap, BTreeSet};

use pager::{Database, Value};

use crate::naming::{KnownMatch, KnownTable, Samples, Undecided};
use crate::plan::InferredTable;
use crate::rows::{RowEvent, TableRows};

/// A column of a known table that declares a foreign key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Reference {
    /// The column's position in the table's records.
    pub position: usize,
    /// The column's name.
    pub column: String,
    /// The table it refers to.
    pub parent: String,
    /// The parent's column it refers to; `None`: the parent's primary key.
    pub key: Option<String>,
}

/// How the sampled values of a table's column were found among its parent's keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Referred {
    /// The column.
    pub column: String,
    /// The parent table.
    pub parent: String,
    /// Sampled values (not NULL) that are keys of the parent.
    pub found: u32,
    /// Sampled values, not NULL.
    pub of: u32,
    /// The other names the records fit alike, whose references the values do not bear out.
    pub others: Vec<String>,
}

/// Fewest distinct values that decide.
const LEAST_VALUES: u32 = 3;

/// Names tables whose records fit several names alike ([`Undecided`]) where one name's
/// foreign key is borne out by the values and no other's is: of the distinct sampled
/// values of its referring column (texts or blobs, three or more: small integers are keys
/// of every table keyed by rowid), at least half are keys of its parent; and every other
/// name has a column that declares a foreign key whose distinct values are, a tenth of
/// them at most, keys of its own parent. A parent is an inferred table named already (in
/// `named`, of the candidate's own origin); its rows are read once per reference, holding
/// only the sampled values. A name refused by `taken`, given already (in `named` or
/// `fixed`), or decided for two tables, is not given.
#[allow(clippy::too_many_arguments)]
pub fn decide_by_references(
    db: &Database<'_>,
    samples: &Samples,
    inferred: &[InferredTable],
    known: &[KnownTable],
    named: &[KnownMatch],
    fixed: &BTreeMap<usize, String>,
    undecided: &[Undecided],
    taken: &dyn Fn(&str) -> bool,
) -> Vec<KnownMatch> {
    let name_of = |k: usize| known.get(k).map(|k| k.shape.name.to_ascii_lowercase());
    // The inferred table a named parent of `origin` is, with its known table.
    let parent_of = |parent: &str, origin: &str| {
        named.iter().find_map(|m| {
            let k = known.get(m.known)?;
            (k.shape.name.eq_ignore_ascii_case(parent) && k.origin == origin)
                .then_some((m.inferred, k))
        })
    };
    let mut decided: Vec<KnownMatch> = Vec::new();
    for u in undecided {
        let Some(sample) = samples.tables.get(u.inferred).filter(|s| !s.is_empty()) else {
            continue;
        };
        // Each candidate name: its known table, and the tally of its best borne-out
        // reference, if it has one whose parent was named.
        let mut tallies: Vec<Option<(usize, Option<Referred>)>> = Vec::new();
        for (name, origin) in &u.candidates {
            let versions = known
                .iter()
                .enumerate()
                .filter(|(_, k)| k.shape.name.eq_ignore_ascii_case(name) && k.origin == *origin);
            let mut best: Option<(usize, Referred)> = None;
            let mut first = None;
            for (ki, k) in versions {
                first.get_or_insert(ki);
                for r in &k.references {
                    let Some((parent_t, parent_k)) = parent_of(&r.parent, &k.origin) else {
                        continue;
                    };
                    let Some(at) = parent_position(parent_k, r.key.as_deref()) else {
                        continue;
                    };
                    let values: BTreeSet<Vec<u8>> = sample
                        .iter()
                        .filter_map(|rec| key(rec.get(r.position)?))
                        .collect();
                    let found = found_in(db, inferred.get(parent_t), at, &values);
                    let tally = Referred {
                        column: r.column.clone(),
                        parent: r.parent.clone(),
                        found: u32::try_from(found).unwrap_or(u32::MAX),
                        of: count(values.iter()),
                        others: Vec::new(),
                    };
                    let better = best.as_ref().is_none_or(|(_, b)| {
                        u64::from(tally.found) * u64::from(b.of.max(1))
                            > u64::from(b.found) * u64::from(tally.of.max(1))
                    });
                    if better {
                        best = Some((ki, tally));
                    }
                }
            }
            tallies.push(match (best, first) {
                (Some((ki, t)), _) => Some((ki, Some(t))),
                (None, Some(ki)) => Some((ki, None)),
                // A candidate this list does not know: nothing may rule it out.
                (None, None) => None,
            });
        }
        let borne = |t: &Referred| t.of >= LEAST_VALUES && t.found * 2 >= t.of;
        let refuted = |t: &Option<(usize, Option<Referred>)>| {
            t.as_ref()
                .and_then(|(_, t)| t.as_ref())
                .is_some_and(|t| t.of >= LEAST_VALUES && t.found * 10 <= t.of)
        };
        let winners: Vec<usize> = (0..tallies.len())
            .filter(|&i| {
                tallies
                    .get(i)
                    .and_then(|t| t.as_ref())
                    .and_then(|t| t.1.as_ref())
                    .is_some_and(borne)
            })
            .collect();
        let [w] = winners.as_slice() else {
            continue;
        };
        let others_refuted = tallies
            .iter()
            .enumerate()
            .all(|(i, t)| i == *w || refuted(t));
        let Some(Some((k, Some(tally)))) = tallies.get(*w).cloned() else {
            continue;
        };
        if !others_refuted || name_of(k).is_some_and(|n| taken(&n)) {
            continue;
        }
        let others: Vec<String> = tallies
            .iter()
            .enumerate()
            .filter(|(i, _)| i != w)
            .filter_map(|(_, t)| Some(known.get(t.as_ref()?.0)?.shape.name.clone()))
            .collect();
        let fitting = known.get(k).map_or(0, |kt| {
            count(sample.iter().filter(|r| kt.shape.fit(r).is_some()))
        });
        decided.push(KnownMatch {
            inferred: u.inferred,
            known: k,
            sampled: count(sample.iter()),
            fitting,
            width: sample.iter().map(Vec::len).max().unwrap_or(0),
            runner_up: None,
            indexes: 0,
            keyed_exactly: false,
            outranked_by_indexes: false,
            taken_by_others: Vec::new(),
            formats: 0,
            columns_alike: Vec::new(),
            referred: Some(Referred { others, ..tally }),
        });
    }
    // Each name once, and never one the records or an index gave another table.
    let given: BTreeSet<Option<String>> = named
        .iter()
        .map(|m| name_of(m.known))
        .chain(fixed.values().map(|f| Some(f.to_ascii_lowercase())))
        .collect();
    let twice = |m: &KnownMatch| {
        decided
            .iter()
            .filter(|d| name_of(d.known) == name_of(m.known))
            .count()
            > 1
    };
    let keep: Vec<bool> = decided
        .iter()
        .map(|m| !twice(m) && !given.contains(&name_of(m.known)))
        .collect();
    decided
        .into_iter()
        .zip(keep)
        .filter_map(|(m, k)| k.then_some(m))
        .collect()
}

/// Where the parent's key (its column `key`, or its primary key of one column) is:
/// `Some(Some(p))` at record position `p`; `Some(None)` the rowid (an INTEGER PRIMARY KEY,
/// or a table with no primary key); `None` where the key is not one column.
fn parent_position(parent: &KnownTable, key: Option<&str>) -> Option<Option<usize>> {
    let shape = &parent.shape;
    let column = match key {
        Some(name) => shape
            .columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))?,
        None => {
            let pk: Vec<usize> = (0..shape.columns.len())
                .filter(|&i| shape.columns.get(i).is_some_and(|c| c.pk > 0))
                .collect();
            match pk.as_slice() {
                [one] => *one,
                [] => return Some(None),
                _ => return None,
            }
        }
    };
    if shape.rowid_alias() == Some(column) {
        return Some(None);
    }
    shape
        .record_order()
        .iter()
        .position(|&c| c == column)
        .map(Some)
}

/// How many of `values` are keys of an inferred table: its values at record position
/// `at`, or its rowids. Its rows are read until every value is found.
fn found_in(
    db: &Database<'_>,
    table: Option<&InferredTable>,
    at: Option<usize>,
    values: &BTreeSet<Vec<u8>>,
) -> usize {
    let Some(table) = table else {
        return 0;
    };
    let mut found: BTreeSet<&Vec<u8>> = BTreeSet::new();
    for e in TableRows::new(db, None, table.groups.iter()) {
        if found.len() == values.len() {
            break;
        }
        let RowEvent::Row(r) = e else {
            continue;
        };
        let k = match at {
            None => r
                .rowid()
                .map(|id| [&[b'i'][..], &id.to_be_bytes()].concat()),
            Some(p) => r.record().0.get(p).and_then(key),
        };
        if let Some(v) = k.and_then(|k| values.get(&k)) {
            found.insert(v);
        }
    }
    found.len()
}

/// A value as a key compared by storage class and bytes: texts and blobs only (an integer
/// key is as likely another table's).
fn key(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::Text(t) => Some([&[b't'][..], t].concat()),
        Value::Blob(b) => Some([&[b'b'][..], b].concat()),
        Value::Null | Value::Integer(_) | Value::Real(_) => None,
    }
}

/// A count, as the tallies hold it.
fn count<T>(items: impl Iterator<Item = T>) -> u32 {
    u32::try_from(items.count()).unwrap_or(u32::MAX)
}
