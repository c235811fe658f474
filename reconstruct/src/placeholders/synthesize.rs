//! The placeholder loop: for each relationship, the child keys with no parent row; of
//! those, the keys whose parent row the parent table could have lost ([`ParentRows`]),
//! a planned placeholder for each ([`plan_placeholder`]), written and registered, and the
//! others reported as references the source already held dangling ([`Dangling`]). The
//! questions it asks of the output database (which keys lack a parent, what the
//! neighbouring parent rows hold) and the writes go through [`ParentStore`], so that every
//! decision stays here.

use std::collections::BTreeMap;
use std::fmt;

use pager::Value;
use serde::{Deserialize, Serialize};

use super::{
    key_text, plan_placeholder, ChildEvidence, Fill, ParentRows, Placeholder, PlaceholderPlan,
    Relationship,
};
use crate::loss::N;
use crate::shape::TableShape;

/// One declared FOREIGN KEY of a child table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForeignKey {
    /// The parent table, as the child declares it.
    pub parent: String,
    /// The child's columns, in order.
    pub child_columns: Vec<String>,
    /// The parent's columns, in the same order; `None` when the key names none (it then
    /// refers to the parent's primary key).
    pub parent_columns: Option<Vec<String>>,
}

/// The missing parents of one relationship, as asked of the store.
#[derive(Clone, Debug)]
pub struct MissingParents<'r> {
    /// The relationship.
    pub rel: &'r Relationship,
    /// Child columns whose smallest value a fill asks for.
    pub mins: Vec<String>,
    /// Child columns whose largest value a fill asks for.
    pub maxs: Vec<String>,
    /// The child table has rowids: children that are registered placeholders themselves
    /// can be left out (a placeholder's own fills prove nothing).
    pub child_is_rowid: bool,
}

/// What the placeholder loop needs of the output database.
pub trait ParentStore {
    /// Why the store could not answer or write. A question about one relationship that
    /// fails sets that relationship aside ([`PlaceholderOutcome::unchecked`]); a failed
    /// write ends the loop.
    type Error: std::fmt::Display;
    /// The declared foreign keys of the table `child`.
    fn foreign_keys(&mut self, child: &str) -> Result<Vec<ForeignKey>, Self::Error>;
    /// Every non-NULL child key of `query.rel` with no parent row, in key order, with
    /// what its children prove (count, and the `mins` and `maxs` asked for).
    fn missing_parents(
        &mut self,
        query: &MissingParents<'_>,
    ) -> Result<Vec<ChildEvidence>, Self::Error>;
    /// The values of `column` in the rows of `parent` just below and just above `rowid`.
    fn neighbours(
        &mut self,
        parent: &str,
        column: &str,
        rowid: i64,
    ) -> Result<[Option<Value>; 2], Self::Error>;
    /// Values of the lost row of `parent` under `rowid` that evidence proves (index
    /// entries, text copies), by column; none by default.
    fn proven(
        &mut self,
        _parent: &str,
        _rowid: i64,
    ) -> Result<BTreeMap<String, Value>, Self::Error> {
        Ok(BTreeMap::new())
    }
    /// Writes a placeholder row: its rowid, or why the table refused it.
    fn insert(&mut self, placeholder: &Placeholder) -> Result<Result<i64, String>, Self::Error>;
    /// Registers a written placeholder as fabricated (the registry is made on first use).
    fn register(&mut self, made: &Made) -> Result<(), Self::Error>;
    /// The registry's name, once it exists.
    fn registry(&self) -> Option<String>;
}

/// A placeholder written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Made {
    /// The parent table.
    pub table: String,
    /// The rowid it got.
    pub rowid: i64,
    /// The key its children reference, as text ([`key_text`]).
    pub key: String,
    /// The child table.
    pub child_table: String,
    /// Surviving children under it.
    pub children: u64,
    /// The columns filled beyond the key.
    pub filled: Vec<String>,
    /// The relationship it stands in: "foreign key", "profile NAME", …
    pub origin: String,
}

/// A lost parent no placeholder was made for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocked {
    /// The parent table.
    pub table: String,
    /// The key its children reference, as text.
    pub key: String,
    /// The child table.
    pub child_table: String,
    /// Surviving children that reference it.
    pub children: u64,
    /// Why.
    pub why: Unbuilt,
}

/// Why a lost parent got no placeholder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unbuilt {
    /// Placeholders were not asked for: the children keep their references, and no row
    /// stands in for the lost parent.
    NotAsked,
    /// Making one would take a value nothing proves: the plan's sentence.
    Unproven(String),
    /// The output refused the row: SQLite's error.
    Refused(String),
}

impl fmt::Display for Unbuilt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unbuilt::NotAsked => write!(f, "placeholders were not asked for"),
            Unbuilt::Unproven(reason) => write!(f, "{reason}"),
            Unbuilt::Refused(error) => write!(f, "the output refused the row: {error}"),
        }
    }
}

/// Child rows of one relationship whose key no parent row holds, where the parent table
/// lost no row that could hold it: references the source already held dangling (SQLite
/// keeps them when foreign keys are off, its default). A finding, not loss: the children
/// are kept as they are, and no placeholder is made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dangling {
    /// The parent table.
    pub parent: String,
    /// Its key columns.
    pub parent_columns: Vec<String>,
    /// The child table.
    pub child: String,
    /// Its columns that hold the key.
    pub child_columns: Vec<String>,
    /// Distinct keys no parent row holds.
    pub keys: u64,
    /// Child rows that reference them.
    pub children: u64,
    /// The first of those keys in key order (at most [`Dangling::SAMPLES`]), as text
    /// ([`key_text`]).
    pub samples: Vec<String>,
    /// Why the parent table cannot have lost them.
    pub proof: DanglingProof,
    /// The relationship: "foreign key", "profile NAME", …
    pub relationship: String,
}

impl Dangling {
    /// Keys listed at most, per relationship.
    pub const SAMPLES: usize = 5;
}

/// Why the parent rows a dangling reference names cannot be among those the run lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DanglingProof {
    /// The parent table was read whole ([`ParentRows::Whole`]).
    ParentReadWhole,
    /// Each key is a rowid outside every range of rowids the parent table lost
    /// ([`ParentRows::RowidsIn`]).
    OutsideLostRowids,
}

impl fmt::Display for Dangling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Dangling {
            parent,
            parent_columns,
            child,
            child_columns,
            keys,
            children,
            samples,
            proof,
            ..
        } = self;
        let shown = samples.join(", ");
        let shown = if *keys > samples.len() as u64 {
            format!("{shown}, …")
        } else {
            shown
        };
        write!(
            f,
            "{} of `{child}` ({}) {} {} that no row of `{parent}` ({}) holds ({shown}); ",
            N(*children, "row"),
            child_columns.join(", "),
            if *children == 1 {
                "references"
            } else {
                "reference"
            },
            N(*keys, "key"),
            parent_columns.join(", "),
        )?;
        match proof {
            DanglingProof::ParentReadWhole => {
                write!(f, "`{parent}` was read whole and lost no row")?
            }
            DanglingProof::OutsideLostRowids => write!(
                f,
                "`{parent}` lost rows only in rowid ranges {} outside",
                if *keys == 1 {
                    "this key lies"
                } else {
                    "these keys lie"
                }
            )?,
        }
        write!(
            f,
            ", so the source already held {} dangling (SQLite allows it with foreign keys off): kept as read, no placeholder made",
            if *keys == 1 { "this reference" } else { "these references" }
        )
    }
}

/// What the placeholder loop is given besides its store.
#[derive(Clone, Copy, Debug)]
pub struct Synthesis<'a> {
    /// The relationships, as [`relationships`] keeps them.
    pub rels: &'a [Relationship],
    /// The shapes of the tables filled.
    pub tables: &'a [TableShape],
    /// Which rows each parent table could have lost, by its name in lower case; a table
    /// not listed could have lost any.
    pub parents: &'a BTreeMap<String, ParentRows>,
    /// Write placeholders; otherwise each lost parent is reported ([`Unbuilt::NotAsked`])
    /// and nothing is written.
    pub make: bool,
}

/// What the placeholder loop did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlaceholderOutcome {
    /// Placeholders written, in relationship then key order.
    pub made: Vec<Made>,
    /// Lost parents left without one.
    pub blocked: Vec<Blocked>,
    /// Per relationship, child keys no parent row holds that the parent table cannot
    /// have lost: no placeholder, no loss.
    pub dangling: Vec<Dangling>,
    /// The registry's name, when any placeholder was made.
    pub registry: Option<String>,
    /// Relationships that could not be checked, with why: whether their children lost
    /// parents is unknown.
    pub unchecked: Vec<SetAside>,
}

/// A relationship not used, and why.
pub type SetAside = (Relationship, String);

/// Whether every column a relationship names exists in its tables: its keys, the parent
/// columns it fills and the child columns its fills read. A damaged CREATE statement, or a
/// profile written for another version of the application, can name columns that are not
/// there.
fn columns_exist(rel: &Relationship, child: &TableShape, parent: &TableShape) -> bool {
    let has = |t: &TableShape, c: &str| t.columns.iter().any(|x| x.name.eq_ignore_ascii_case(c));
    let reads = |f: &Fill| -> Vec<String> {
        match f {
            Fill::Min(c) | Fill::Max(c) => vec![c.clone()],
            Fill::FirstOf(all) => all
                .iter()
                .filter_map(|f| match f {
                    Fill::Min(c) | Fill::Max(c) => Some(c.clone()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    };
    rel.child_columns.iter().all(|c| has(child, c))
        && rel.parent_columns.iter().all(|c| has(parent, c))
        && rel
            .fills
            .iter()
            .all(|(c, f)| has(parent, c) && reads(f).iter().all(|r| has(child, r)))
}

/// The relationships among `tables`: every declared FOREIGN KEY (to a table of `tables`),
/// with the fill rules of a profile relationship over the same columns, then the
/// profiles' other relationships. Only relationships whose columns exist are kept; the
/// others come back with why, for a warning.
pub fn relationships<S: ParentStore>(
    store: &mut S,
    tables: &[TableShape],
    profiles: Vec<Relationship>,
) -> Result<(Vec<Relationship>, Vec<SetAside>), S::Error> {
    let find = |name: &str| tables.iter().find(|t| t.name.eq_ignore_ascii_case(name));
    let mut rels: Vec<Relationship> = Vec::new();
    for child in tables {
        // Foreign keys the output cannot list (names that are not text) give nothing.
        for fk in store.foreign_keys(&child.name).unwrap_or_default() {
            let Some(parent) = find(&fk.parent) else {
                continue;
            };
            // A foreign key without parent columns refers to the parent's primary key.
            let parent_columns = fk.parent_columns.unwrap_or_else(|| {
                let mut pk: Vec<(u32, String)> = parent
                    .columns
                    .iter()
                    .filter(|c| c.pk > 0)
                    .map(|c| (c.pk, c.name.clone()))
                    .collect();
                pk.sort();
                pk.into_iter().map(|(_, n)| n).collect()
            });
            if parent_columns.len() != fk.child_columns.len() {
                continue;
            }
            rels.push(Relationship {
                child: child.name.clone(),
                child_columns: fk.child_columns,
                parent: parent.name.clone(),
                parent_columns,
                fills: Vec::new(),
                origin: "foreign key".into(),
            });
        }
    }
    let same = |a: &Relationship, b: &Relationship| {
        a.child.eq_ignore_ascii_case(&b.child)
            && a.parent.eq_ignore_ascii_case(&b.parent)
            && a.child_columns.len() == b.child_columns.len()
            && a.child_columns
                .iter()
                .zip(&b.child_columns)
                .all(|(x, y)| x.eq_ignore_ascii_case(y))
    };
    for r in profiles {
        if find(&r.child).is_none() || find(&r.parent).is_none() {
            continue;
        }
        match rels.iter_mut().find(|d| same(d, &r)) {
            Some(d) => {
                d.fills = r.fills;
                d.origin = format!("foreign key, filled by {}", r.origin);
            }
            None => rels.push(r),
        }
    }
    let (kept, unusable): (Vec<Relationship>, Vec<Relationship>) =
        rels.into_iter().partition(|r| {
            find(&r.child)
                .zip(find(&r.parent))
                .is_some_and(|(c, p)| columns_exist(r, c, p))
        });
    let why = "it names a column its tables do not have".to_string();
    Ok((
        kept,
        unusable.into_iter().map(|r| (r, why.clone())).collect(),
    ))
}

/// For every child key with no parent row: a placeholder, registered, where the parent
/// table could have lost that row (and placeholders are asked for); otherwise the key is
/// counted as a dangling reference of the source.
pub fn synthesize<S: ParentStore>(
    store: &mut S,
    job: &Synthesis<'_>,
) -> Result<PlaceholderOutcome, S::Error> {
    let mut outcome = PlaceholderOutcome::default();
    for rel in job.rels {
        let Some(parent) = job
            .tables
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(&rel.parent))
        else {
            continue;
        };
        let columns = |pick: fn(&Fill) -> Option<&String>| -> Vec<String> {
            rel.fills
                .iter()
                .filter_map(|(_, f)| pick(f).cloned())
                .collect()
        };
        let query = MissingParents {
            rel,
            mins: columns(|f| match f {
                Fill::Min(c) => Some(c),
                _ => None,
            }),
            maxs: columns(|f| match f {
                Fill::Max(c) => Some(c),
                _ => None,
            }),
            child_is_rowid: job
                .tables
                .iter()
                .any(|t| t.name.eq_ignore_ascii_case(&rel.child) && !t.without_rowid),
        };
        let evidence = match store.missing_parents(&query) {
            Ok(evidence) => evidence,
            Err(e) => {
                outcome.unchecked.push((rel.clone(), e.to_string()));
                continue;
            }
        };
        let could_lose = job
            .parents
            .get(&parent.name.to_lowercase())
            .unwrap_or(&ParentRows::Any);
        let (lost, dangling): (Vec<ChildEvidence>, Vec<ChildEvidence>) = evidence
            .into_iter()
            .partition(|ev| could_lose.could_hold(parent, rel, &ev.key));
        if !dangling.is_empty() {
            outcome.dangling.push(Dangling {
                parent: rel.parent.clone(),
                parent_columns: rel.parent_columns.clone(),
                child: rel.child.clone(),
                child_columns: rel.child_columns.clone(),
                keys: dangling.len() as u64,
                children: dangling.iter().map(|ev| ev.count).sum(),
                samples: dangling
                    .iter()
                    .take(Dangling::SAMPLES)
                    .map(|ev| key_text(&ev.key))
                    .collect(),
                proof: match could_lose {
                    ParentRows::Whole => DanglingProof::ParentReadWhole,
                    _ => DanglingProof::OutsideLostRowids,
                },
                relationship: rel.origin.clone(),
            });
        }
        for mut ev in lost {
            let children = ev.count;
            let blocked = |key: &[Value], why: Unbuilt| Blocked {
                table: rel.parent.clone(),
                key: key_text(key),
                child_table: rel.child.clone(),
                children,
                why,
            };
            if !job.make {
                outcome.blocked.push(blocked(&ev.key, Unbuilt::NotAsked));
                continue;
            }
            neighbour_values(store, parent, rel, &mut ev)?;
            if let Some(rowid) = rowid_key(parent, rel, &ev.key) {
                // Evidence the store cannot read proves nothing.
                ev.proven = store.proven(&parent.name, rowid).unwrap_or_default();
            }
            match plan_placeholder(parent, rel, &ev) {
                PlaceholderPlan::Ready(p) => match store.insert(&p)? {
                    Ok(rowid) => {
                        let made = Made {
                            table: p.table.clone(),
                            rowid,
                            key: key_text(&p.key),
                            child_table: rel.child.clone(),
                            children: p.children,
                            filled: p.filled.clone(),
                            origin: rel.origin.clone(),
                        };
                        store.register(&made)?;
                        outcome.made.push(made);
                    }
                    Err(e) => outcome.blocked.push(Blocked {
                        table: p.table.clone(),
                        ..blocked(&p.key, Unbuilt::Refused(e))
                    }),
                },
                PlaceholderPlan::Blocked { key, reason } => {
                    outcome
                        .blocked
                        .push(blocked(&key, Unbuilt::Unproven(reason)));
                }
            }
        }
    }
    outcome.registry = store.registry();
    Ok(outcome)
}

/// The parent's rowid, when `key` is a single integer and the parent's key column is its
/// rowid alias.
pub(super) fn rowid_key(parent: &TableShape, rel: &Relationship, key: &[Value]) -> Option<i64> {
    let alias = parent.rowid_alias()?;
    match (rel.parent_columns.as_slice(), key) {
        ([key_col], [Value::Integer(k)])
            if parent
                .columns
                .get(alias)
                .is_some_and(|c| c.name.eq_ignore_ascii_case(key_col)) =>
        {
            Some(*k)
        }
        _ => None,
    }
}

/// For `Fill::Neighbour` columns of a single integer key that is the parent's rowid: the
/// value the nearest parent rows on both sides agree on.
fn neighbour_values<S: ParentStore>(
    store: &mut S,
    parent: &TableShape,
    rel: &Relationship,
    ev: &mut ChildEvidence,
) -> Result<(), S::Error> {
    let Some(k) = rowid_key(parent, rel, &ev.key) else {
        return Ok(());
    };
    for (col, _) in rel.fills.iter().filter(|(_, f)| *f == Fill::Neighbour) {
        // A neighbour the store cannot read fills nothing.
        if let Ok([Some(below), Some(above)]) = store.neighbours(&parent.name, col, k) {
            if below == above && below != Value::Null {
                ev.neighbour.insert(col.clone(), below);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::testing::{bookshop, written_by};
    use super::*;
    use pager::KeyBounds;

    /// An output whose `books` reference authors 7 (two books), 150 and 9 (one each),
    /// none of which `authors` holds; it takes every row and counts what it is given.
    #[derive(Default)]
    struct Output {
        inserted: Vec<Vec<Value>>,
        registered: u64,
    }

    impl ParentStore for Output {
        type Error = String;
        fn foreign_keys(&mut self, _: &str) -> Result<Vec<ForeignKey>, String> {
            Ok(Vec::new())
        }
        fn missing_parents(
            &mut self,
            _: &MissingParents<'_>,
        ) -> Result<Vec<ChildEvidence>, String> {
            Ok([(7, 2), (9, 1), (150, 1)]
                .into_iter()
                .map(|(key, count)| ChildEvidence {
                    key: vec![Value::Integer(key)],
                    count,
                    ..ChildEvidence::default()
                })
                .collect())
        }
        fn neighbours(&mut self, _: &str, _: &str, _: i64) -> Result<[Option<Value>; 2], String> {
            Ok([None, None])
        }
        fn insert(&mut self, p: &Placeholder) -> Result<Result<i64, String>, String> {
            self.inserted.push(p.key.clone());
            Ok(Ok(self.inserted.len() as i64))
        }
        fn register(&mut self, _: &Made) -> Result<(), String> {
            self.registered += 1;
            Ok(())
        }
        fn registry(&self) -> Option<String> {
            (self.registered > 0).then(|| "salvage_placeholders".into())
        }
    }

    fn run(rows: ParentRows, make: bool) -> (PlaceholderOutcome, Output) {
        let rels = [written_by("id")];
        let parents = BTreeMap::from([("authors".to_string(), rows)]);
        let mut out = Output::default();
        let job = Synthesis {
            rels: &rels,
            tables: &bookshop(),
            parents: &parents,
            make,
        };
        let outcome = synthesize(&mut out, &job).unwrap();
        (outcome, out)
    }

    #[test]
    fn a_parent_read_whole_gets_no_placeholder_and_its_dangling_keys_are_counted() {
        let (outcome, out) = run(ParentRows::Whole, true);
        assert!(outcome.made.is_empty() && outcome.blocked.is_empty());
        assert!(out.inserted.is_empty());
        assert_eq!(outcome.registry, None);
        let [d] = outcome.dangling.as_slice() else {
            panic!("{:?}", outcome.dangling)
        };
        assert_eq!((d.keys, d.children), (3, 4));
        assert_eq!(d.samples, ["7", "9", "150"]);
        assert_eq!(d.proof, DanglingProof::ParentReadWhole);
        let sentence = d.to_string();
        assert!(
            sentence.starts_with("4 rows of `books` (author_id) reference 3 keys that no row of `authors` (id) holds (7, 9, 150)"),
            "{sentence}"
        );
    }

    #[test]
    fn only_keys_inside_a_lost_range_get_placeholders() {
        let lost = KeyBounds {
            lower: Some(100),
            upper: Some(200),
        };
        let (outcome, out) = run(ParentRows::RowidsIn(vec![lost]), true);
        assert_eq!(out.inserted, [vec![Value::Integer(150)]]);
        assert_eq!(outcome.made.len(), 1);
        let [d] = outcome.dangling.as_slice() else {
            panic!("{:?}", outcome.dangling)
        };
        assert_eq!(
            (d.keys, d.children, d.proof),
            (2, 3, DanglingProof::OutsideLostRowids)
        );
        assert!(d.to_string().contains("these keys lie outside"), "{d}");
    }

    #[test]
    fn placeholders_not_asked_for_write_nothing_and_block_every_lost_parent() {
        let (outcome, out) = run(ParentRows::Any, false);
        assert!(out.inserted.is_empty() && out.registered == 0);
        assert!(outcome.made.is_empty() && outcome.dangling.is_empty());
        assert_eq!(outcome.blocked.len(), 3);
        assert!(outcome.blocked.iter().all(|b| b.why == Unbuilt::NotAsked));
        let signals = crate::loss::placeholder_signals(&outcome);
        assert!(
            matches!(signals.as_slice(), [crate::LossSignal::ParentsNotRebuilt { keys: 3, children: 4, reason, .. }] if *reason == Unbuilt::NotAsked.to_string()),
            "{signals:?}"
        );
    }
}
