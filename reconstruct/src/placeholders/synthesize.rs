//! The placeholder loop: for each relationship, the child keys whose parent row is lost,
//! a planned placeholder for each ([`plan_placeholder`]), written and registered. The
//! questions it asks of the output database (which keys lack a parent, what the
//! neighbouring parent rows hold) and the writes go through [`ParentStore`], so that every
//! decision stays here.

use std::collections::BTreeMap;

use pager::Value;

use super::{
    key_text, plan_placeholder, ChildEvidence, Fill, Placeholder, PlaceholderPlan, Relationship,
};
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

/// A missing parent no placeholder could be made for.
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
    /// Why, as a sentence.
    pub reason: String,
}

/// What the placeholder loop did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlaceholderOutcome {
    /// Placeholders written, in relationship then key order.
    pub made: Vec<Made>,
    /// Missing parents left without one.
    pub blocked: Vec<Blocked>,
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

/// Synthesizes a placeholder for every child key with no parent row, and registers each.
pub fn synthesize<S: ParentStore>(
    store: &mut S,
    rels: &[Relationship],
    tables: &[TableShape],
) -> Result<PlaceholderOutcome, S::Error> {
    let mut outcome = PlaceholderOutcome::default();
    for rel in rels {
        let Some(parent) = tables
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
            child_is_rowid: tables
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
        for mut ev in evidence {
            neighbour_values(store, parent, rel, &mut ev)?;
            if let Some(rowid) = rowid_key(parent, rel, &ev) {
                // Evidence the store cannot read proves nothing.
                ev.proven = store.proven(&parent.name, rowid).unwrap_or_default();
            }
            let blocked = |key: &[Value], reason: String| Blocked {
                table: rel.parent.clone(),
                key: key_text(key),
                child_table: rel.child.clone(),
                children: ev.count,
                reason,
            };
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
                        ..blocked(&p.key, format!("the output refused the row: {e}"))
                    }),
                },
                PlaceholderPlan::Blocked { key, reason } => {
                    outcome.blocked.push(blocked(&key, reason));
                }
            }
        }
    }
    outcome.registry = store.registry();
    Ok(outcome)
}

/// The parent's rowid, when the key is a single integer that is its rowid alias.
fn rowid_key(parent: &TableShape, rel: &Relationship, ev: &ChildEvidence) -> Option<i64> {
    let alias = parent.rowid_alias()?;
    match (rel.parent_columns.as_slice(), ev.key.as_slice()) {
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
    let (Some(alias), [key_col], [Value::Integer(k)]) = (
        parent.rowid_alias(),
        rel.parent_columns.as_slice(),
        ev.key.as_slice(),
    ) else {
        return Ok(());
    };
    if !parent
        .columns
        .get(alias)
        .is_some_and(|c| c.name.eq_ignore_ascii_case(key_col))
    {
        return Ok(());
    }
    let k = *k;
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
