//! The schema's indexes, views and triggers re-created on the output from their CREATE
//! statements, each outcome recorded: indexes once the rows are in, views and triggers at
//! the end (so that no trigger fires on a recovered or synthesized row).

use std::collections::BTreeSet;

use pager::SchemaKind;
use reconstruct::TableStatus;

use crate::recover::evidence::Evidence;
use crate::recover::plan::Work;
use crate::report::{ObjectKind, ObjectStatus};

/// Re-creates the schema objects of `kind`.
pub fn create_objects(evidence: &Evidence<'_>, work: &mut Work, kind: SchemaKind) {
    let Work {
        out,
        tables,
        ledger,
        ..
    } = work;
    let created: BTreeSet<String> = tables
        .iter()
        .filter(|t| t.shape.is_some() || t.status == TableStatus::Skipped)
        .map(|t| t.name.to_ascii_lowercase())
        .collect();
    for r in evidence.schema.rows.iter().filter(|r| r.kind == kind) {
        let Some(sql) = &r.sql else {
            // Automatic indexes come with their table's constraints.
            continue;
        };
        let table_known =
            kind == SchemaKind::View || created.contains(&r.tbl_name.to_ascii_lowercase());
        let (status, reason) = if !table_known {
            (
                ObjectStatus::Skipped,
                Some(format!("its table `{}` was not created", r.tbl_name)),
            )
        } else {
            // An index computes over its table's rows: within a budget for them.
            let rows = tables.named(&r.tbl_name).map_or(0, |t| t.loss.written());
            match out.create_derived(kind.clone(), sql, rows) {
                Ok(()) => (ObjectStatus::Created, None),
                Err(e) => (ObjectStatus::Failed, Some(e)),
            }
        };
        if status == ObjectStatus::Failed {
            ledger.warnings.push(format!(
                "the {} `{}` could not be re-created: {}",
                kind.as_str(),
                r.name,
                reason.clone().unwrap_or_default()
            ));
        }
        if let Some(kind) = ObjectKind::of(&kind) {
            ledger.object(kind, &r.name, status, reason);
        }
    }
    if kind != SchemaKind::Index {
        return;
    }
    // The indexes a profile knows for a table whose CREATE statement it gave, unless
    // the schema still names an object so.
    let schema = evidence.taken_names();
    for t in tables.iter().filter(|t| t.shape.is_some()) {
        for (origin, name, sql) in &t.known_indexes {
            if schema.contains(&name.to_ascii_lowercase()) {
                continue;
            }
            let (status, reason) = match out.create_object(SchemaKind::Index, sql) {
                Ok(()) => (
                    ObjectStatus::Created,
                    format!("its schema row is lost; {origin} knows its CREATE statement"),
                ),
                Err(e) => {
                    ledger.warnings.push(format!(
                        "the index `{name}` {origin} knows could not be made: {e}"
                    ));
                    (ObjectStatus::Failed, e)
                }
            };
            ledger.object(ObjectKind::Index, name, status, Some(reason));
        }
    }
}
