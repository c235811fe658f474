//! The second stage: the schema plan. The output database is created (`DEST.incomplete`,
//! with the source's page size, encoding, user version and application id) and every table
//! row of the schema gets its disposition ([`reconstruct::disposition`]): internal tables
//! skipped, virtual tables re-created first, shadow tables left to them, ordinary tables
//! created from their CREATE statement and their shape read back from SQLite.

use reconstruct::{creation_order, disposition, Disposition, TableStatus};

use crate::error::Error;
use crate::evidence::Evidence;
use crate::ledger::Ledger;
use crate::output::Output;
use crate::report::ObjectStatus;
use crate::request::Paths;
use crate::tables::Tables;

/// The output created, with its tables: what the load fills.
pub struct SchemaPlan {
    /// The output database.
    pub out: Output,
    /// The tables, by id (the schema's, in schema order).
    pub tables: Tables,
    /// What the run did besides rows.
    pub ledger: Ledger,
}

impl SchemaPlan {
    /// Creates the output and its tables.
    pub fn make(evidence: &Evidence<'_>, paths: &Paths) -> Result<SchemaPlan, Error> {
        let h = evidence.db.header();
        let out = Output::create(
            &paths.incomplete,
            evidence.db.page_size().get(),
            evidence.encoding(),
            h.user_version,
            h.application_id,
        )
        .map_err(Error::db("creating the output"))?;
        let mut plan = SchemaPlan {
            out,
            tables: Tables::default(),
            ledger: Ledger::default(),
        };
        plan.create_tables(evidence);
        Ok(plan)
    }

    fn create_tables(&mut self, evidence: &Evidence<'_>) {
        let rows: Vec<&pager::SchemaRow> = evidence
            .schema
            .rows
            .iter()
            .filter(|r| r.kind == pager::SchemaKind::Table)
            .collect();
        let virtual_tables: Vec<&str> = rows
            .iter()
            .filter(|r| reconstruct::is_virtual(r.sql.as_deref()))
            .map(|r| r.name.as_str())
            .collect();
        let mut made = Vec::with_capacity(rows.len());
        for position in creation_order(&rows) {
            let Some(r) = rows.get(position) else {
                continue;
            };
            let d = disposition(r, &virtual_tables, |name| self.out.has_table(name));
            made.push((position, self.create(r, d)));
        }
        // The report keeps schema order.
        made.sort_by_key(|(position, _)| *position);
        for (r, (status, reason, shape)) in made
            .into_iter()
            .filter_map(|(p, m)| Some((rows.get(p)?, m)))
        {
            // A filled table goes by the name SQLite gave it (see `created_name`).
            let name = shape
                .as_ref()
                .map_or_else(|| r.name.clone(), |s| s.name.clone());
            self.tables.push(name, r.rootpage, status, reason, shape);
        }
    }

    /// The name SQLite gave the object `r`'s CREATE statement just made; when the schema
    /// row spells it otherwise (a damaged row), the statement's name is the one used, and
    /// the disagreement is a warning.
    fn created_name(&mut self, r: &pager::SchemaRow, kind: &str, is_virtual: bool) -> String {
        match self.out.created_name(kind, is_virtual) {
            Some(name) if !name.eq_ignore_ascii_case(&r.name) => {
                self.ledger.warnings.push(format!(
                    "the schema row of {kind} `{}` holds a CREATE statement for `{name}`: recovered as `{name}`, the name the statement gives",
                    r.name
                ));
                name
            }
            _ => r.name.clone(),
        }
    }

    /// Carries out one table's disposition on the output.
    fn create(
        &mut self,
        r: &pager::SchemaRow,
        d: Disposition,
    ) -> (TableStatus, Option<String>, Option<reconstruct::TableShape>) {
        let sql = r.sql.as_deref().unwrap_or_default();
        let skipped = |why: String| (TableStatus::Skipped, Some(why), None);
        let failed = |why: String| (TableStatus::Failed, Some(why), None);
        match d {
            Disposition::Sequence => skipped(
                "internal table: its counters are carried over after the rows are in".into(),
            ),
            Disposition::Internal => skipped(
                "internal table (statistics are derived data; run ANALYZE on the output)".into(),
            ),
            Disposition::Virtual => match self.out.create_object(sql) {
                Ok(()) => {
                    let name = self.created_name(r, "table", true);
                    self.ledger
                        .object("virtual table", &name, ObjectStatus::Created, None);
                    skipped("virtual table: re-created from its CREATE statement; its shadow tables are not copied (a full-text table is rebuilt from canonical rows, see schema_objects)".into())
                }
                Err(e) => {
                    self.ledger.object(
                        "virtual table",
                        &r.name,
                        ObjectStatus::Failed,
                        Some(e.clone()),
                    );
                    failed(format!("its CREATE statement failed on the output: {e}"))
                }
            },
            Disposition::Shadow { of } => skipped(format!(
                "shadow table of virtual table `{of}`: derived, not copied as data"
            )),
            Disposition::Ordinary => match self.out.create_object(sql) {
                Ok(()) => {
                    let name = self.created_name(r, "table", false);
                    match self.out.shape(&name, r.is_without_rowid()) {
                        Ok(shape) if !shape.columns.is_empty() => {
                            (TableStatus::Recovered, None, Some(shape))
                        }
                        Ok(_) => failed(format!("SQLite reports no column of `{name}`")),
                        Err(e) => failed(format!("its columns could not be read back: {e}")),
                    }
                }
                Err(e) => failed(format!("its CREATE statement failed on the output: {e}")),
            },
            Disposition::NoStatement => failed("its schema row has no CREATE statement".into()),
        }
    }
}
