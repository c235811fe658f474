//! Placeholder parents in the output: the SQL side of [`reconstruct::synthesize`]. The
//! output answers which child keys lack a parent and what neighbouring parents hold, and
//! takes the placeholder rows and their registration in `salvage_placeholders`; the run
//! tells which rows each parent table could have lost ([`reconstruct::placeholders::parent_rows`]);
//! every decision is `reconstruct`'s. Also here: tables a profile expects that the schema
//! lacks, and counts kept in parent rows as a hint beside the loss bounds.

use std::collections::{BTreeMap, BTreeSet};

use pager::{TextEncoding, Value};
use reconstruct::placeholders::{parent_rows, ParentFacts, ParentRows, Synthesis};
use reconstruct::{
    ChildEvidence, Fill, ForeignKey, LossSignal, Made, MissingParents, ParentStore, Placeholder,
    PlaceholderOutcome, Relationship, TableStatus,
};

use crate::base::output::{quote, Output, SqlValue};
use crate::recover::evidence::Evidence;
use crate::recover::ledger::Ledger;
use crate::recover::profiles::{Profile, Profiles};
use crate::recover::tables::Tables;

/// The output database as the placeholder loop's store.
struct OutputParents<'o> {
    out: &'o Output,
    /// Names the schema and the run use.
    taken: &'o BTreeSet<String>,
    registry: Option<String>,
    /// Lost rows whose values evidence proves, by lower-cased table and rowid.
    proven: &'o BTreeMap<String, BTreeMap<i64, reconstruct::KnownValues>>,
    /// Each table's rowid as SQL names it (quoted; none when every name is a column's),
    /// read from its shape once.
    rowid_names: BTreeMap<String, Option<String>>,
}

impl OutputParents<'_> {
    /// How SQL names the rowid of `table`: a column may take the name `rowid`.
    fn rowid_name(&mut self, table: &str) -> rusqlite::Result<Option<String>> {
        if let Some(name) = self.rowid_names.get(table) {
            return Ok(name.clone());
        }
        let name = self.out.shape(table, false)?.rowid_name().map(quote);
        self.rowid_names.insert(table.to_string(), name.clone());
        Ok(name)
    }
}

impl ParentStore for OutputParents<'_> {
    type Error = rusqlite::Error;

    fn foreign_keys(&mut self, child: &str) -> rusqlite::Result<Vec<ForeignKey>> {
        let mut stmt = self
            .out
            .conn
            .prepare(&format!("PRAGMA foreign_key_list({})", quote(child)))?;
        let rows: Vec<(i64, String, String, Option<String>)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(2)?, r.get(3)?, r.get(4)?)))?
            .collect::<Result<_, _>>()?;
        let ids: BTreeSet<i64> = rows.iter().map(|r| r.0).collect();
        Ok(ids
            .into_iter()
            .filter_map(|id| {
                let parts: Vec<&(i64, String, String, Option<String>)> =
                    rows.iter().filter(|r| r.0 == id).collect();
                Some(ForeignKey {
                    parent: parts.first()?.1.clone(),
                    child_columns: parts.iter().map(|p| p.2.clone()).collect(),
                    parent_columns: parts
                        .iter()
                        .all(|p| p.3.is_some())
                        .then(|| parts.iter().filter_map(|p| p.3.clone()).collect()),
                })
            })
            .collect())
    }

    fn missing_parents(&mut self, q: &MissingParents<'_>) -> rusqlite::Result<Vec<ChildEvidence>> {
        let rel = q.rel;
        let keys: Vec<String> = rel
            .child_columns
            .iter()
            .map(|c| format!("c.{}", quote(c)))
            .collect();
        let mut select = keys.clone();
        select.push("count(*)".into());
        select.extend(q.mins.iter().map(|c| format!("min(c.{})", quote(c))));
        select.extend(q.maxs.iter().map(|c| format!("max(c.{})", quote(c))));
        let mut not_null: Vec<String> = keys.iter().map(|k| format!("{k} IS NOT NULL")).collect();
        // A placeholder's own fills (a marker such as an unknown segment) prove nothing:
        // its children are real rows only.
        let mut params: Vec<String> = Vec::new();
        if let (Some(registry), true) = (self.registry.clone(), q.child_is_rowid) {
            // A child whose columns take every name of its rowid has no placeholder
            // rows (none can be made).
            if let Some(r) = self.rowid_name(&rel.child)? {
                not_null.push(format!(
                    "c.{r} NOT IN (SELECT rowid FROM {} WHERE tbl = ?1)",
                    quote(&registry)
                ));
                params.push(rel.child.clone());
            }
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
        let evidence = self
            .out
            .conn
            .prepare(&sql)?
            .query_map(rusqlite::params_from_iter(params.iter()), |r| {
                let key = (0..n)
                    .map(|i| r.get_ref(i).map(crate::base::sqlite::value_of))
                    .collect::<Result<Vec<_>, _>>()?;
                let count: i64 = r.get(n)?;
                let mut ev = ChildEvidence {
                    key,
                    count: count.max(0) as u64,
                    ..ChildEvidence::default()
                };
                for (j, c) in q.mins.iter().enumerate() {
                    ev.min.insert(
                        c.clone(),
                        crate::base::sqlite::value_of(r.get_ref(n + 1 + j)?),
                    );
                }
                for (j, c) in q.maxs.iter().enumerate() {
                    ev.max.insert(
                        c.clone(),
                        crate::base::sqlite::value_of(r.get_ref(n + 1 + q.mins.len() + j)?),
                    );
                }
                Ok(ev)
            })?
            .collect::<Result<_, _>>()?;
        Ok(evidence)
    }

    fn neighbours(
        &mut self,
        parent: &str,
        column: &str,
        rowid: i64,
    ) -> rusqlite::Result<[Option<Value>; 2]> {
        let Some(r) = self.rowid_name(parent)? else {
            return Ok([None, None]);
        };
        let q = |cmp: &str, order: &str| {
            format!(
                "SELECT {} FROM {} WHERE {r} {cmp} ?1 ORDER BY {r} {order} LIMIT 1",
                quote(column),
                quote(parent)
            )
        };
        let one = |sql: String| -> Option<Value> {
            self.out
                .conn
                .query_row(&sql, [rowid], |r| {
                    r.get_ref(0).map(crate::base::sqlite::value_of)
                })
                .ok()
        };
        Ok([one(q("<", "DESC")), one(q(">", "ASC"))])
    }

    fn proven(&mut self, parent: &str, rowid: i64) -> rusqlite::Result<BTreeMap<String, Value>> {
        Ok(self
            .proven
            .get(&parent.to_lowercase())
            .and_then(|rows| rows.get(&rowid))
            .map(|known| {
                known
                    .iter()
                    .map(|(c, v)| (c.to_string(), v.clone()))
                    .collect()
            })
            .unwrap_or_default())
    }

    fn insert(&mut self, p: &Placeholder) -> rusqlite::Result<Result<i64, String>> {
        let names: Vec<String> = p.columns.iter().map(|(c, _)| quote(c)).collect();
        let values: Vec<SqlValue<'_>> = p
            .columns
            .iter()
            .map(|(_, v)| SqlValue::from_value(v, TextEncoding::Utf8))
            .collect();
        let ph: Vec<String> = (1..=values.len()).map(|i| format!("?{i}")).collect();
        // OR ABORT: a schema's ON CONFLICT IGNORE would leave no row and a stale rowid.
        let insert = format!(
            "INSERT OR ABORT INTO {} ({}) VALUES ({})",
            quote(&p.table),
            names.join(", "),
            ph.join(", ")
        );
        Ok(
            match self
                .out
                .conn
                .execute(&insert, rusqlite::params_from_iter(values.iter()))
            {
                Ok(_) => Ok(self.out.conn.last_insert_rowid()),
                Err(e) => Err(e.to_string()),
            },
        )
    }

    fn register(&mut self, made: &Made) -> rusqlite::Result<()> {
        let registry = match &self.registry {
            Some(name) => name.clone(),
            None => {
                let name = self.out.registry_name("salvage_placeholders", self.taken);
                self.out.conn.execute_batch(&format!(
                    "CREATE TABLE {}(tbl TEXT NOT NULL, rowid INTEGER, key TEXT NOT NULL, reason TEXT NOT NULL, filled_columns TEXT NOT NULL)",
                    quote(&name)
                ))?;
                self.registry = Some(name.clone());
                name
            }
        };
        let reason = format!(
            "placeholder: the `{}` row is lost; {} rows of `{}` reference key {} ({})",
            made.table, made.children, made.child_table, made.key, made.origin
        );
        self.out.conn.execute(
            &format!(
                "INSERT INTO {}(tbl, rowid, key, reason, filled_columns) VALUES (?1, ?2, ?3, ?4, ?5)",
                quote(&registry)
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

    fn registry(&self) -> Option<String> {
        self.registry.clone()
    }
}

/// What the placeholder step reads besides the tables and the ledger it updates.
pub struct Context<'c, 's> {
    /// The evidence.
    pub evidence: &'c Evidence<'s>,
    /// The output.
    pub out: &'c Output,
    /// The survey of every page: each parent table's b-tree as read.
    pub survey: &'c pager::Survey,
    /// The profiles chosen.
    pub profiles: &'c Profiles,
    /// Names the schema and the run use.
    pub taken: &'c BTreeSet<String>,
    /// Write placeholders (otherwise lost parents are reported, not rebuilt).
    pub make: bool,
}

/// Placeholder parents for children whose parent row is lost (declared foreign keys and
/// the profiles that apply), registered in `salvage_placeholders`; children whose parent
/// table lost no row that could hold their key are dangling references of the source,
/// reported; tables the profiles expect that the schema lacks are listed as `missing`.
/// Returns what the loop did and the profiles that applied (name, description).
pub fn rebuild_parents(
    cx: &Context<'_, '_>,
    tables: &mut Tables,
    ledger: &mut Ledger,
) -> rusqlite::Result<(PlaceholderOutcome, Vec<[String; 2]>)> {
    let applying = cx.profiles.applying(&tables.filled_names());
    note_missing_tables(cx.evidence, tables, ledger, &applying);
    let shapes = tables.shapes();
    let parents = could_lose(cx, tables, ledger);
    // Read here only: taken, not copied.
    let proven: BTreeMap<String, BTreeMap<i64, reconstruct::KnownValues>> = tables
        .iter_mut()
        .filter(|t| !t.proven_lost.is_empty())
        .map(|t| (t.name.to_lowercase(), std::mem::take(&mut t.proven_lost)))
        .collect();
    let out = cx.out;
    let mut store = OutputParents {
        out,
        taken: cx.taken,
        registry: None,
        proven: &proven,
        rowid_names: BTreeMap::new(),
    };
    let profile_rels: Vec<Relationship> = applying
        .iter()
        .flat_map(|p| p.relationships().unwrap_or_default())
        .collect();
    let (rels, unusable) = reconstruct::relationships(&mut store, &shapes, profile_rels)?;
    out.conn.execute_batch("BEGIN")?;
    let outcome = reconstruct::synthesize(
        &mut store,
        &Synthesis {
            rels: &rels,
            tables: &shapes,
            parents: &parents,
            make: cx.make,
        },
    )?;
    out.conn.execute_batch("COMMIT")?;
    for (rel, why) in unusable.iter().chain(&outcome.unchecked) {
        ledger.warnings.push(format!(
            "the relationship of `{}` ({}) to `{}` ({}), from {}, is not used: {why}; children whose parent row is lost are not rebuilt for it",
            rel.child,
            rel.child_columns.join(", "),
            rel.parent,
            rel.parent_columns.join(", "),
            rel.origin
        ));
    }
    for m in &outcome.made {
        if let Some(t) = tables.named_mut(&m.table) {
            t.loss.placeholders += 1;
        }
    }
    parent_count_hints(out, tables, &rels);
    let used = applying
        .iter()
        .map(|p| [p.name.clone(), p.description.clone()])
        .collect();
    Ok((outcome, used))
}

/// Which rows each filled table could have lost, as a parent: from its counts, its loss
/// bounds, its b-tree as surveyed, the signals that question whose b-tree it is, and a
/// hot journal whose damaged records leave pages of an interrupted transaction.
fn could_lose(
    cx: &Context<'_, '_>,
    tables: &Tables,
    ledger: &Ledger,
) -> BTreeMap<String, ParentRows> {
    let mixed_states = cx
        .evidence
        .journal
        .as_ref()
        .is_some_and(|j| j.header.is_some() && j.records_ignored > 0);
    let questioned = |name: &str| {
        ledger.roots.iter().any(|s| match s {
            LossSignal::TreeMoved {
                table, named_by, ..
            }
            | LossSignal::TreeKeptApart {
                table, named_by, ..
            }
            | LossSignal::RootOfAnotherTable {
                table,
                holder: named_by,
                ..
            } => table.eq_ignore_ascii_case(name) || named_by.eq_ignore_ascii_case(name),
            LossSignal::RootNotATable { table, .. } | LossSignal::PageOfAnother { table, .. } => {
                table.eq_ignore_ascii_case(name)
            }
            // A kind of signal these do not know questions every tree.
            _ => true,
        })
    };
    tables
        .filled()
        .map(|(t, _)| {
            let tree = t
                .root
                .and_then(|root| cx.survey.trees.iter().find(|tr| tr.root == root));
            let facts = ParentFacts {
                name: &t.name,
                status: t.status,
                loss: &t.loss,
                bounds: t.bounds.as_ref(),
                lost: tree.map_or(&[], |tr| tr.lost.as_slice()),
                findings: tree.map_or(&[], |tr| tr.findings.as_slice()),
                tree_questioned: questioned(&t.name),
                mixed_states,
            };
            (t.name.to_lowercase(), parent_rows(&facts))
        })
        .collect()
}

/// Lists each table a chosen profile expects but the schema lacks, as `missing`. With a
/// damaged schema that is loss (its row may be what was lost); with an intact one, a
/// warning (the application may never have created it).
fn note_missing_tables(
    evidence: &Evidence<'_>,
    tables: &mut Tables,
    ledger: &mut Ledger,
    profiles: &[&Profile],
) {
    let schema_damaged = !evidence.schema.findings.is_empty() || evidence.schema_rows_scanned > 0;
    for p in profiles {
        for name in p.detect.tables.iter().chain(&p.expect) {
            if tables.named(name).is_some() {
                continue;
            }
            if schema_damaged {
                ledger.missing_tables.push(LossSignal::TableMissing {
                    table: name.clone(),
                    profile: p.name.clone(),
                });
            } else {
                ledger.warnings.push(format!(
                    "table `{name}` (expected by profile `{}`) is not in the schema; the schema is intact, so the application may never have created it",
                    p.name
                ));
            }
            let reason = format!("expected by profile `{}`; not in the schema", p.name);
            tables.push(name.clone(), None, TableStatus::Missing, Some(reason), None);
        }
    }
}

/// Where a relationship says a parent column counts its children (a profile's `count`
/// rule, e.g. a session's `message_count`) and the child table lost rows: how many
/// children the surviving parents count beyond those recovered. A hint, not a bound (the
/// application may not keep the count exact).
fn parent_count_hints(out: &Output, tables: &mut Tables, rels: &[Relationship]) {
    for rel in rels {
        let (Some(column), [child_key], [parent_key]) = (
            rel.fills
                .iter()
                .find(|(_, f)| *f == Fill::Count)
                .map(|(c, _)| c),
            rel.child_columns.as_slice(),
            rel.parent_columns.as_slice(),
        ) else {
            continue;
        };
        let Some(child) = tables.named_mut(&rel.child).filter(|t| t.bounds.is_some()) else {
            continue;
        };
        let sql = format!(
            "WITH c AS (SELECT {ck} AS k, count(*) AS n FROM {child} GROUP BY {ck})
             SELECT count(*), coalesce(sum(max(0, p.{col} - coalesce(c.n, 0))), 0)
             FROM {parent} AS p LEFT JOIN c ON c.k = p.{pk}
             WHERE typeof(p.{col}) = 'integer' AND p.{col} > coalesce(c.n, 0)",
            ck = quote(child_key),
            child = quote(&rel.child),
            col = quote(column),
            parent = quote(&rel.parent),
            pk = quote(parent_key),
        );
        let Ok((parents, missing)) = out
            .conn
            .query_row(&sql, [], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
        else {
            continue;
        };
        if missing > 0 {
            if let Some(b) = child.bounds.as_mut() {
                b.evidence.push(format!(
                    "{parents} surviving `{}` rows count {missing} more `{}` rows in `{column}` than were recovered for them (a hint, not a bound: the count may not be exact)",
                    rel.parent, rel.child
                ));
            }
        }
    }
}
