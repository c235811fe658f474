//! Placeholder parents in the output: the relationships (declared foreign keys and
//! profiles), the missing parents the children prove, and the rows synthesized for them,
//! each registered in `salvage_placeholders`. The decisions are `reconstruct`'s; this
//! module asks the output database and writes to it.

use std::collections::BTreeSet;

use pager::{TextEncoding, Value};
use reconstruct::{
    key_text, plan_placeholder, ChildEvidence, Fill, PlaceholderPlan, Relationship, TableShape,
};
use rusqlite::types::Value as SqlType;

use crate::output::{quote, Output, SqlValue};
use crate::profiles::Profile;

/// A placeholder written.
#[derive(Clone, Debug)]
pub struct Made {
    pub table: String,
    pub rowid: i64,
    pub key: String,
    pub child_table: String,
    pub children: u64,
    pub filled: Vec<String>,
    pub origin: String,
}

/// A missing parent no placeholder could be made for.
#[derive(Clone, Debug)]
pub struct Blocked {
    pub table: String,
    pub key: String,
    pub child_table: String,
    pub children: u64,
    pub reason: String,
}

/// What placeholder synthesis did.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub made: Vec<Made>,
    pub blocked: Vec<Blocked>,
    /// The registry table's name, when any placeholder was made.
    pub registry: Option<String>,
}

fn from_sql(v: SqlType) -> Value {
    match v {
        SqlType::Null => Value::Null,
        SqlType::Integer(i) => Value::Integer(i),
        SqlType::Real(r) => Value::Real(r),
        SqlType::Text(t) => Value::Text(t.into_bytes()),
        SqlType::Blob(b) => Value::Blob(b),
    }
}

/// The relationships among `tables`: every declared FOREIGN KEY, with the fill rules of a
/// profile relationship over the same columns, then the profiles' other relationships.
pub fn relationships(
    out: &Output,
    tables: &[TableShape],
    profiles: &[Profile],
) -> rusqlite::Result<Vec<Relationship>> {
    let find = |name: &str| tables.iter().find(|t| t.name.eq_ignore_ascii_case(name));
    let mut rels: Vec<Relationship> = Vec::new();
    for child in tables {
        let mut stmt = out
            .conn
            .prepare(&format!("PRAGMA foreign_key_list({})", quote(&child.name)))?;
        let rows: Vec<(i64, String, String, Option<String>)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(2)?, r.get(3)?, r.get(4)?)))?
            .collect::<Result<_, _>>()?;
        let ids: BTreeSet<i64> = rows.iter().map(|r| r.0).collect();
        for id in ids {
            let parts: Vec<&(i64, String, String, Option<String>)> =
                rows.iter().filter(|r| r.0 == id).collect();
            let Some(parent) = parts.first().and_then(|p| find(&p.1)) else {
                continue;
            };
            let child_columns: Vec<String> = parts.iter().map(|p| p.2.clone()).collect();
            // A foreign key without parent columns refers to the parent's primary key.
            let mut pk: Vec<(u32, String)> = parent
                .columns
                .iter()
                .filter(|c| c.pk > 0)
                .map(|c| (c.pk, c.name.clone()))
                .collect();
            pk.sort();
            let parent_columns: Vec<String> = if parts.iter().all(|p| p.3.is_some()) {
                parts.iter().filter_map(|p| p.3.clone()).collect()
            } else {
                pk.into_iter().map(|(_, n)| n).collect()
            };
            if parent_columns.len() != child_columns.len() {
                continue;
            }
            rels.push(Relationship {
                child: child.name.clone(),
                child_columns,
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
    for p in profiles {
        for r in p.relationships().unwrap_or_default() {
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
    }
    Ok(rels)
}

/// Synthesizes a placeholder for every child key with no parent row, and registers each.
pub fn synthesize(
    out: &Output,
    rels: &[Relationship],
    tables: &[TableShape],
    taken: &BTreeSet<String>,
) -> rusqlite::Result<Outcome> {
    let mut outcome = Outcome::default();
    for rel in rels {
        let Some(parent) = tables
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(&rel.parent))
        else {
            continue;
        };
        let mins: Vec<String> = rel
            .fills
            .iter()
            .filter_map(|(_, f)| {
                if let Fill::Min(c) = f {
                    Some(c.clone())
                } else {
                    None
                }
            })
            .collect();
        let maxs: Vec<String> = rel
            .fills
            .iter()
            .filter_map(|(_, f)| {
                if let Fill::Max(c) = f {
                    Some(c.clone())
                } else {
                    None
                }
            })
            .collect();
        let keys: Vec<String> = rel
            .child_columns
            .iter()
            .map(|c| format!("c.{}", quote(c)))
            .collect();
        let mut select = keys.clone();
        select.push("count(*)".into());
        select.extend(mins.iter().map(|c| format!("min(c.{})", quote(c))));
        select.extend(maxs.iter().map(|c| format!("max(c.{})", quote(c))));
        let mut not_null: Vec<String> = keys.iter().map(|k| format!("{k} IS NOT NULL")).collect();
        // A placeholder's own fills (a marker such as an unknown segment) prove nothing:
        // its children are real rows only.
        let child_is_rowid = tables
            .iter()
            .any(|t| t.name.eq_ignore_ascii_case(&rel.child) && !t.without_rowid);
        let mut params: Vec<String> = Vec::new();
        if let (Some(registry), true) = (&outcome.registry, child_is_rowid) {
            not_null.push(format!(
                "c.rowid NOT IN (SELECT rowid FROM {} WHERE tbl = ?1)",
                quote(registry)
            ));
            params.push(rel.child.clone());
        }

        // The missing keys first, from the distinct child keys (an index on the child key,
        // when there is one, answers that without reading the child rows), then the
        // children of those keys only.
        let bare: Vec<String> = rel.child_columns.iter().map(|c| quote(c)).collect();
        let d_keys: Vec<String> = rel
            .child_columns
            .iter()
            .map(|c| format!("d.{}", quote(c)))
            .collect();
        let d_join: Vec<String> = rel
            .parent_columns
            .iter()
            .zip(&d_keys)
            .map(|(p, k)| format!("p.{} = {k}", quote(p)))
            .collect();
        let missing = format!(
            "SELECT {} FROM (SELECT DISTINCT {} FROM {} WHERE {}) AS d WHERE NOT EXISTS (SELECT 1 FROM {} AS p WHERE {})",
            d_keys.join(", "),
            bare.join(", "),
            quote(&rel.child),
            bare.iter().map(|k| format!("{k} IS NOT NULL")).collect::<Vec<_>>().join(" AND "),
            quote(&rel.parent),
            d_join.join(" AND ")
        );
        let sql = format!(
            "SELECT {} FROM {} AS c WHERE ({}) IN ({}) AND {} GROUP BY {} ORDER BY {}",
            select.join(", "),
            quote(&rel.child),
            keys.join(", "),
            missing,
            not_null.join(" AND "),
            keys.join(", "),
            keys.join(", ")
        );
        let n = keys.len();
        let evidence: Vec<ChildEvidence> = out
            .conn
            .prepare(&sql)?
            .query_map(rusqlite::params_from_iter(params.iter()), |r| {
                let key = (0..n)
                    .map(|i| r.get::<_, SqlType>(i).map(from_sql))
                    .collect::<Result<Vec<_>, _>>()?;
                let count: i64 = r.get(n)?;
                let mut ev = ChildEvidence {
                    key,
                    count: count.max(0) as u64,
                    ..ChildEvidence::default()
                };
                for (j, c) in mins.iter().enumerate() {
                    ev.min.insert(c.clone(), from_sql(r.get(n + 1 + j)?));
                }
                for (j, c) in maxs.iter().enumerate() {
                    ev.max
                        .insert(c.clone(), from_sql(r.get(n + 1 + mins.len() + j)?));
                }
                Ok(ev)
            })?
            .collect::<Result<_, _>>()?;
        for mut ev in evidence {
            neighbours(out, parent, rel, &mut ev)?;
            match plan_placeholder(parent, rel, &ev) {
                PlaceholderPlan::Ready(p) => {
                    let names: Vec<String> = p.columns.iter().map(|(c, _)| quote(c)).collect();
                    let values: Vec<SqlValue<'_>> = p
                        .columns
                        .iter()
                        .map(|(_, v)| SqlValue::from_value(v, TextEncoding::Utf8))
                        .collect();
                    let ph: Vec<String> = (1..=values.len()).map(|i| format!("?{i}")).collect();
                    let insert = format!(
                        "INSERT INTO {} ({}) VALUES ({})",
                        quote(&p.table),
                        names.join(", "),
                        ph.join(", ")
                    );
                    match out
                        .conn
                        .execute(&insert, rusqlite::params_from_iter(values.iter()))
                    {
                        Ok(_) => {
                            let made = Made {
                                table: p.table.clone(),
                                rowid: out.conn.last_insert_rowid(),
                                key: key_text(&p.key),
                                child_table: rel.child.clone(),
                                children: p.children,
                                filled: p.filled.clone(),
                                origin: rel.origin.clone(),
                            };
                            register(out, &mut outcome, taken, &made)?;
                            outcome.made.push(made);
                        }
                        Err(e) => outcome.blocked.push(Blocked {
                            table: p.table.clone(),
                            key: key_text(&p.key),
                            child_table: rel.child.clone(),
                            children: p.children,
                            reason: format!("the output refused the row: {e}"),
                        }),
                    }
                }
                PlaceholderPlan::Blocked { key, reason } => outcome.blocked.push(Blocked {
                    table: rel.parent.clone(),
                    key: key_text(&key),
                    child_table: rel.child.clone(),
                    children: ev.count,
                    reason,
                }),
            }
        }
    }
    Ok(outcome)
}

/// For `Fill::Neighbour` columns of a single integer key that is the parent's rowid: the
/// value the nearest parent rows on both sides agree on.
fn neighbours(
    out: &Output,
    parent: &TableShape,
    rel: &Relationship,
    ev: &mut ChildEvidence,
) -> rusqlite::Result<()> {
    let wanted: Vec<&String> = rel
        .fills
        .iter()
        .filter(|(_, f)| *f == Fill::Neighbour)
        .map(|(c, _)| c)
        .collect();
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
    for col in wanted {
        let q = |cmp: &str, order: &str| {
            format!(
                "SELECT {} FROM {} WHERE rowid {cmp} ?1 ORDER BY rowid {order} LIMIT 1",
                quote(col),
                quote(&parent.name)
            )
        };
        let below: Option<SqlType> = out.conn.query_row(&q("<", "DESC"), [k], |r| r.get(0)).ok();
        let above: Option<SqlType> = out.conn.query_row(&q(">", "ASC"), [k], |r| r.get(0)).ok();
        if let (Some(a), Some(b)) = (below, above) {
            if a == b && a != SqlType::Null {
                ev.neighbour.insert(col.clone(), from_sql(a));
            }
        }
    }
    Ok(())
}

/// Registers a placeholder in the output's `salvage_placeholders` table (created on first use).
fn register(
    out: &Output,
    outcome: &mut Outcome,
    taken: &BTreeSet<String>,
    made: &Made,
) -> rusqlite::Result<()> {
    if outcome.registry.is_none() {
        let name = std::iter::once("salvage_placeholders".to_string())
            .chain((1..).map(|i| format!("salvage_placeholders_{i}")))
            .find(|n| !taken.contains(n))
            .unwrap_or_default();
        out.conn.execute_batch(&format!(
            "CREATE TABLE {}(tbl TEXT NOT NULL, rowid INTEGER, key TEXT NOT NULL, reason TEXT NOT NULL, filled_columns TEXT NOT NULL)",
            quote(&name)
        ))?;
        outcome.registry = Some(name);
    }
    let reason = format!(
        "placeholder: the `{}` row is lost; {} rows of `{}` reference key {} ({})",
        made.table, made.children, made.child_table, made.key, made.origin
    );
    out.conn.execute(
        &format!(
            "INSERT INTO {}(tbl, rowid, key, reason, filled_columns) VALUES (?1, ?2, ?3, ?4, ?5)",
            quote(
                outcome
                    .registry
                    .as_deref()
                    .unwrap_or("salvage_placeholders")
            )
        ),
        rusqlite::params![
            made.table,
            made.rowid,
            made.key,
            reason,
            made.filled.join(",")
        ],
    )?;
    Ok(())
}
