//! The second stage: the schema plan. The output database is created (`DEST.incomplete`,
//! with the source's page size, encoding, user version and application id) and every table
//! row of the schema gets its disposition ([`reconstruct::disposition`]): internal tables
//! skipped, virtual tables re-created first, shadow tables left to them, ordinary tables
//! created from their CREATE statement and their shape read back from SQLite.

use pager::PageNo;
use reconstruct::{
    creation_order, disposition, Disposition, LossSignal, NamedRoot, RootDecision, TableId,
    TableStatus,
};

use crate::base::error::Error;
use crate::base::output::{quote, Output};
use crate::recover::evidence::Evidence;
use crate::recover::ledger::Ledger;
use crate::recover::request::Paths;
use crate::recover::tables::Tables;
use crate::report::{ObjectKind, ObjectStatus};

/// What the stages carry on, from the plan to the commit, handed whole from one to the
/// next: the output database, its tables, the run's record, and the names the output's
/// tables take.
pub struct Work {
    /// The output database.
    pub out: Output,
    /// The tables, by id (the schema's, in schema order, then the inferred ones).
    pub tables: Tables,
    /// What the run did besides rows.
    pub ledger: Ledger,
    /// The names the output's tables and views take.
    pub names: Names,
    /// Where each row written was read, when provenance is asked for.
    pub whence: crate::recover::whence::Whence,
}

/// The plan's outcome, as a test that stops after it names it.
pub type SchemaPlan = Work;

/// The names the schema's objects take, lower-cased (SQLite compares names without
/// case): a table or view the run adds (a registry, an inferred table) takes another. The
/// one owner of the set every registry chooses its name against.
#[derive(Clone, Debug, Default)]
pub struct Names(std::collections::BTreeSet<String>);

impl Names {
    /// The names of the source's schema.
    pub fn of_schema(evidence: &Evidence<'_>) -> Names {
        Names(evidence.taken_names())
    }

    /// The names taken, lower-cased.
    pub fn taken(&self) -> &std::collections::BTreeSet<String> {
        &self.0
    }

    /// Whether `name` is taken.
    pub fn contains(&self, name: &str) -> bool {
        self.0.contains(&name.to_lowercase())
    }

    /// Takes `name` too.
    pub fn take(&mut self, name: &str) {
        self.0.insert(name.to_lowercase());
    }
}

impl Work {
    /// Creates the output and its tables.
    pub fn make(evidence: &Evidence<'_>, paths: &Paths) -> Result<Work, Error> {
        let h = evidence.db.header();
        let out = Output::create(
            &paths.incomplete,
            evidence.db.page_size().get(),
            evidence.encoding(),
            crate::base::output::Vacuum::of(h),
            (h.user_version, h.application_id),
        )
        .map_err(Error::db("creating the output"))?;
        let mut plan = Work {
            out,
            tables: Tables::default(),
            ledger: Ledger::default(),
            names: Names::of_schema(evidence),
            whence: crate::recover::whence::Whence::default(),
        };
        plan.create_tables(evidence);
        plan.check_roots(evidence);
        Ok(plan)
    }

    /// Checks that each table's b-tree holds its records ([`reconstruct::attribute_roots`]):
    /// a tree moves to the table its records fit, or is kept as a table of its own.
    fn check_roots(&mut self, evidence: &Evidence<'_>) {
        let (named, stray) = self.named_roots(evidence);
        let stray_roots: Vec<PageNo> = stray.iter().map(|(r, _)| *r).collect();
        let decisions = reconstruct::attribute_roots(&evidence.db, &named, &stray_roots);
        let name = |tables: &Tables, id| tables.get(id).map_or(String::new(), |t| t.name.clone());
        // Who names a root: a table, or (for a stray tree) the index row.
        let namer = |tables: &Tables, id: Option<TableId>, root: PageNo| match id {
            Some(id) => name(tables, id),
            None => stray
                .iter()
                .find(|(r, _)| *r == root)
                .map_or(String::new(), |(_, n)| format!("index {n}")),
        };
        let mut roots: Vec<(TableId, Option<PageNo>)> = Vec::new();
        for d in decisions {
            match d {
                RootDecision::Kept { .. } => {}
                RootDecision::Moved {
                    root,
                    named_by,
                    to,
                    fit,
                    own,
                    by_index,
                } => {
                    let (table, named) =
                        (name(&self.tables, to), namer(&self.tables, named_by, root));
                    self.ledger.roots.push(LossSignal::TreeMoved {
                        table,
                        root: root.get(),
                        named_by: named,
                        sampled: fit.sampled,
                        fitting: fit.fitting,
                        fitting_named: own.fitting,
                        by_index,
                    });
                    roots.push((to, Some(root)));
                    if let Some(named_by) = named_by.filter(|n| !roots.iter().any(|(t, _)| t == n))
                    {
                        roots.push((named_by, None));
                    }
                }
                RootDecision::NotATableTree { root, named_by } => {
                    self.ledger.roots.push(LossSignal::RootNotATable {
                        table: name(&self.tables, named_by),
                        root: root.get(),
                    });
                    if !roots.iter().any(|(t, _)| *t == named_by) {
                        roots.push((named_by, None));
                    }
                }
                RootDecision::Elsewhere {
                    root,
                    named_by,
                    holder,
                } => {
                    self.ledger.roots.push(LossSignal::RootOfAnotherTable {
                        table: name(&self.tables, named_by),
                        root: root.get(),
                        holder: name(&self.tables, holder),
                    });
                    if !roots.iter().any(|(t, _)| *t == named_by) {
                        roots.push((named_by, None));
                    }
                }
                RootDecision::Apart {
                    root,
                    named_by,
                    own,
                    sample,
                } => {
                    let named = namer(&self.tables, named_by, root);
                    if let Some(table) = self.keep_apart(evidence, root, &sample) {
                        self.ledger.roots.push(LossSignal::TreeKeptApart {
                            table,
                            root: root.get(),
                            named_by: named,
                            sampled: own.sampled,
                            fitting_named: own.fitting,
                        });
                        if let Some(named_by) =
                            named_by.filter(|n| !roots.iter().any(|(t, _)| t == n))
                        {
                            roots.push((named_by, None));
                        }
                    }
                }
            }
        }
        self.reassign(roots);
    }

    /// The root each recovered rowid table's schema row names, with the indexes that
    /// witness its rows where two rows name one root (their entries tell whose it is); and
    /// the roots index rows name (one may be a table's b-tree, an index's root swapped
    /// with a table's), with their names.
    fn named_roots(&self, evidence: &Evidence<'_>) -> (Vec<NamedRoot>, Vec<(PageNo, String)>) {
        let mut named: Vec<NamedRoot> = self
            .tables
            .filled()
            // WITHOUT ROWID tables live in index b-trees: only rowid tables are checked.
            .filter(|(t, shape)| t.status == TableStatus::Recovered && !shape.without_rowid)
            .map(|(t, shape)| NamedRoot {
                table: t.id,
                shape: shape.clone(),
                root: t.root,
                indexes: Vec::new(),
            })
            .collect();
        // Every table's indexes: where two tables' records fit each other's columns, or two
        // schema rows name one root, their entries tell whose rows a tree holds.
        for n in named.iter_mut() {
            if let Some(t) = self.tables.get(n.table) {
                n.indexes = crate::recover::evidence::indexes::witnesses(evidence, &t.name);
            }
        }
        let stray: Vec<(PageNo, String)> = evidence
            .schema
            .rows
            .iter()
            .filter(|r| r.kind == pager::SchemaKind::Index)
            .filter_map(|r| Some((r.rootpage?, r.name.clone())))
            .collect();
        (named, stray)
    }

    /// Gives each table the root the decisions give it (`None`: its schema row's root is
    /// another's, and it keeps none), a tree that moves in replacing the one that named it
    /// moving out, with why.
    fn reassign(&mut self, roots: Vec<(TableId, Option<PageNo>)>) {
        let moved_in: Vec<TableId> = roots
            .iter()
            .filter(|(_, r)| r.is_some())
            .map(|(t, _)| *t)
            .collect();
        for (id, root) in roots {
            if root.is_none() && moved_in.contains(&id) {
                continue;
            }
            if let Some(t) = self.tables.get_mut(id) {
                t.root = root;
                t.reason = Some(match root {
                    Some(r) => format!("its rows come from root page {r}, which another table's schema row names (see evidence.loss)"),
                    None => "the root page its schema row names holds another table's records (see evidence.loss)".into(),
                });
            }
        }
    }

    /// Keeps a tree whose records fit no free table as a table of its own,
    /// `salvage_inferred_N(c0, c1, …)` with untyped columns. Returns its name.
    fn keep_apart(
        &mut self,
        evidence: &Evidence<'_>,
        root: PageNo,
        sample: &[Vec<pager::Value>],
    ) -> Option<String> {
        let columns = reconstruct::sample_shape(sample);
        let name = inferred_name(evidence, &self.tables);
        let cols: Vec<String> = (0..columns.len())
            .map(|i| quote(&format!("c{i}")))
            .collect();
        self.out
            .create_object(
                pager::SchemaKind::Table,
                &format!("CREATE TABLE {}({})", quote(&name), cols.join(", ")),
            )
            .ok()?;
        let shape = self.out.shape(&name, false).ok()?;
        let reason = format!(
            "the b-tree at root page {root}: its records fit no table of the schema free to take them; {} columns ({}) inferred from {} sampled records",
            columns.len(),
            columns.join(", "),
            sample.len()
        );
        self.tables.push(
            name.clone(),
            Some(root),
            TableStatus::Inferred,
            Some(reason),
            Some(shape),
        );
        Some(name)
    }

    fn create_tables(&mut self, evidence: &Evidence<'_>) {
        // A collation the schema names that this build lacks gets a stand-in before any
        // statement naming it runs (see `stand_in_collations`).
        let named = evidence
            .schema
            .rows
            .iter()
            .filter_map(|r| r.sql.as_deref())
            .flat_map(reconstruct::collations_named);
        let _ = crate::base::sqlite::stand_in(&self.out.conn, named);
        // So does a full-text tokenizer (see `stand_in_tokenizers`).
        let tokenizers = evidence
            .schema
            .rows
            .iter()
            .filter_map(|r| reconstruct::vtab::fts3_tokenizer(r.sql.as_deref()?));
        let _ = crate::base::sqlite::stand_in_tokenizers(&self.out.conn, tokenizers);
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
            let d = match disposition(r, &virtual_tables, |name| self.out.has_table(name)) {
                // The shadow tables of a full-text table made plain hold its index and a
                // copy of its text: derived, and in the way of the application making the
                // table again with its tokenizer.
                Disposition::Ordinary => {
                    match reconstruct::vtab::fts_shadow_of(&r.name, &self.ledger.full_text_unmade) {
                        Some(of) => Disposition::Shadow { of: of.to_string() },
                        None => Disposition::Ordinary,
                    }
                }
                d => d,
            };
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

    /// A shadow table of a full-text table made over a stand-in tokenizer: the index the
    /// application's tokenizer built cannot be built again here, so its rows are copied as
    /// stored, into the table the virtual table made (emptied first).
    fn adopt_shadow(&mut self, r: &pager::SchemaRow, of: &str) -> Made {
        use rusqlite::config::DbConfig::SQLITE_DBCONFIG_DEFENSIVE as DEFENSIVE;
        // Defensive mode keeps shadow tables read-only to SQL: off for this one statement.
        let emptied = self.out.conn.set_db_config(DEFENSIVE, false).and_then(|_| {
            let done = self
                .out
                .conn
                .execute(&format!("DELETE FROM {}", quote(&r.name)), []);
            self.out.conn.set_db_config(DEFENSIVE, true).and(done)
        });
        match emptied.and_then(|_| self.out.shape(&r.name, r.is_without_rowid())) {
            Ok(shape) if !shape.columns.is_empty() => (
                TableStatus::Recovered,
                Some(format!(
                    "shadow table of full-text table `{of}`, whose tokenizer this build lacks: copied as stored"
                )),
                Some(shape),
            ),
            Ok(_) => failed(format!("SQLite reports no column of `{}`", r.name)),
            Err(e) => failed(format!("its rows could not be made room for: {e}")),
        }
    }

    /// A table whose CREATE statement fails on the output because it names a function or
    /// collation this build lacks, or is past the output's limits, is made as a plain table
    /// with its columns, so that its rows are kept; the statement not re-created is loss
    /// of the schema, in the report.
    fn create_plain(&mut self, r: &pager::SchemaRow, sql: &str, e: String) -> Made {
        let Ok((name, plain, missing)) = crate::base::output::plain_table(sql) else {
            return failed(format!("its CREATE statement failed on the output: {e}"));
        };
        if !name.eq_ignore_ascii_case(&r.name) {
            return failed(format!("its CREATE statement failed on the output: {e}"));
        }
        if let Err(e2) = self.out.create_object(pager::SchemaKind::Table, &plain) {
            return failed(format!(
                "its CREATE statement failed on the output: {e}; as a plain table too: {e2}"
            ));
        }
        match self.out.shape(&name, r.is_without_rowid()) {
            Ok(shape) if !shape.columns.is_empty() => {
                let lacks = if missing.is_empty() {
                    e.clone()
                } else {
                    format!("it names what this build lacks ({})", missing.join(", "))
                };
                let why = format!(
                    "its CREATE statement failed ({lacks}): made as a plain table with its columns and declared types, its other constraints, expressions and virtual generated columns left out"
                );
                let reason = if missing.is_empty() {
                    why.clone()
                } else {
                    format!("{e}; {why}")
                };
                self.ledger.object(
                    ObjectKind::TableDefinition,
                    &name,
                    ObjectStatus::Failed,
                    Some(reason),
                );
                (TableStatus::Recovered, Some(why), Some(shape))
            }
            _ => failed(format!("its CREATE statement failed on the output: {e}")),
        }
    }

    /// A virtual table whose CREATE statement fails on the output (a tokenizer or module
    /// this build lacks). A full-text table that stores its own text is made as a plain
    /// table of its columns, refilled from that text like a full-text table (its index is
    /// not built: loss of the index, in the report); one over a content table loses only
    /// its index, the text being that table's rows. Any other is not recovered; its shadow
    /// tables, no longer anyone's, are kept as ordinary tables.
    fn virtual_failed(&mut self, r: &pager::SchemaRow, sql: &str, e: String) -> Made {
        use reconstruct::vtab::{self, Content};
        let columns = vtab::fts_columns(sql);
        let (status, why) = match (vtab::classify(sql), columns) {
            (Some(Content::Own), Some(columns)) => {
                let cols: Vec<String> = columns.iter().map(|c| quote(c)).collect();
                let plain = format!("CREATE TABLE {}({})", quote(&r.name), cols.join(", "));
                if let Err(e2) = self.out.create_object(pager::SchemaKind::Table, &plain) {
                    return failed(format!(
                        "its CREATE statement failed on the output: {e}; as a plain table too: {e2}"
                    ));
                }
                self.ledger.full_text_unmade.push(r.name.clone());
                (
                    TableStatus::Skipped,
                    "made as a plain table of its columns, refilled from its stored text; its full-text index is not built (see schema_objects)",
                )
            }
            (Some(Content::External(table)), _) => {
                self.ledger.full_text_unmade.push(r.name.clone());
                self.ledger
                    .virtual_tables
                    .push(LossSignal::ObjectNotCreated {
                        object: "full-text index".into(),
                        name: r.name.clone(),
                        reason: format!("{e}; its text is the rows of `{table}`"),
                    });
                (
                    TableStatus::Skipped,
                    "its text is the rows of its content table; only its index is lost",
                )
            }
            _ => {
                self.ledger.object(
                    ObjectKind::VirtualTable,
                    &r.name,
                    ObjectStatus::Failed,
                    Some(e.clone()),
                );
                return failed(format!("its CREATE statement failed on the output: {e}"));
            }
        };
        self.ledger.object(
            ObjectKind::VirtualTable,
            &r.name,
            ObjectStatus::Failed,
            Some(e.clone()),
        );
        (
            status,
            Some(format!(
                "virtual table: its CREATE statement failed on the output ({e}): {why}"
            )),
            None,
        )
    }

    /// Carries out one table's disposition on the output.
    fn create(&mut self, r: &pager::SchemaRow, d: Disposition) -> Made {
        let sql = r.sql.as_deref().unwrap_or_default();
        match d {
            Disposition::Sequence => skipped(
                "internal table: its counters are carried over after the rows are in".into(),
            ),
            // The planner's statistics are evidence too (each index's row count at the
            // last ANALYZE): SQLite makes the table, and its rows are copied.
            Disposition::Internal if r.name.eq_ignore_ascii_case("sqlite_stat1") => {
                let made = self
                    .out
                    .conn
                    .execute_batch("ANALYZE sqlite_schema; DELETE FROM sqlite_stat1;");
                match made.and_then(|()| self.out.shape("sqlite_stat1", false)) {
                    Ok(shape) if !shape.columns.is_empty() => {
                        (TableStatus::Recovered, None, Some(shape))
                    }
                    Ok(_) => failed("SQLite reports no column of `sqlite_stat1`".into()),
                    Err(e) => failed(format!("SQLite did not make it on the output: {e}")),
                }
            }
            Disposition::Internal => skipped(
                "internal table (statistics are derived data; run ANALYZE on the output)".into(),
            ),
            Disposition::Virtual => match self.out.create_object(pager::SchemaKind::Table, sql) {
                Ok(()) => {
                    let name = self.created_name(r, "table", true);
                    self.ledger.object(
                        ObjectKind::VirtualTable,
                        &name,
                        ObjectStatus::Created,
                        None,
                    );
                    if let Some(t) = reconstruct::vtab::fts3_tokenizer(sql)
                        .filter(|t| !crate::base::sqlite::tokenizer_shipped(t))
                    {
                        self.ledger.tokenizer_stand_ins.insert(name.clone(), t);
                        return skipped("virtual table: re-created from its CREATE statement over a stand-in tokenizer; its shadow tables are copied as stored".into());
                    }
                    skipped("virtual table: re-created from its CREATE statement; its shadow tables are not copied (a full-text table is rebuilt from canonical rows, see schema_objects)".into())
                }
                Err(e) => self.virtual_failed(r, sql, e),
            },
            Disposition::Shadow { of } if self.ledger.tokenizer_stand_ins.contains_key(&of) => {
                self.adopt_shadow(r, &of)
            }
            Disposition::Shadow { of } => skipped(format!(
                "shadow table of virtual table `{of}`: derived, not copied as data"
            )),
            Disposition::Ordinary => match self.out.create_object(pager::SchemaKind::Table, sql) {
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
                Err(e) => self.create_plain(r, sql, e),
            },
            Disposition::NoStatement => failed("its schema row has no CREATE statement".into()),
        }
    }
}

/// What carrying out a table's disposition made: its status, the reason, and its shape
/// when it was made to be filled.
type Made = (TableStatus, Option<String>, Option<reconstruct::TableShape>);

/// A table not made, and why.
fn failed(why: String) -> Made {
    (TableStatus::Failed, Some(why), None)
}

/// A table made to be left empty (or filled otherwise), and why.
fn skipped(why: String) -> Made {
    (TableStatus::Skipped, Some(why), None)
}

/// A name for a table inferred from its records, `salvage_inferred_N`, that neither the
/// schema nor the run uses yet.
pub fn inferred_name(evidence: &Evidence<'_>, tables: &Tables) -> String {
    let taken = evidence.taken_names();
    (1..)
        .map(|n| format!("salvage_inferred_{n}"))
        .find(|c| !taken.contains(c) && tables.named(c).is_none())
        .unwrap_or_default()
}
