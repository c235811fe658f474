//! `recover --history`: every version of every row the write-ahead log and the rollback
//! journal still hold (see the `history` crate), written to `salvage_history`, one row a
//! version, and the steps they come from to `salvage_commits`; never into the recovered
//! tables.

use std::collections::{BTreeMap, BTreeSet};

use history::{At, Change, Step, StepKind};
use pager::{Journal, TextEncoding, Value, Wal};

use crate::base::error::Error;
use crate::base::output::{quote, Output, SqlValue};
use crate::recover::evidence::{Evidence, EvidenceFiles};
use crate::recover::rebuild::Rebuilt;
use crate::report::history::{HistoryReport, StepReport};

/// The history step (`recover --history`): every version of every row the logs hold,
/// written to `salvage_history` and `salvage_commits` (and a view per table), its report
/// in the ledger, its names taken.
pub fn step(
    files: &EvidenceFiles,
    evidence: &Evidence<'_>,
    rebuilt: &mut Rebuilt,
) -> Result<(), Error> {
    let journal = files.journal.as_ref().map(|j| {
        let db = &evidence.db;
        pager::read_persisted_journal(j.bytes(), db.page_size(), db.page_count())
    });
    // Each page image the history reads (`history::wal_history_each`) is told to the
    // evidence's own observer: the folios of both files are counted as the run's others.
    let observe: &pager::Observe<'_> = evidence.db.observer().unwrap_or(&|_| {});
    let logs = Logs {
        main: files.main.bytes(),
        wal: evidence.usable_wal(),
        journal: journal.as_ref(),
    };
    let mut readings = Reading::of_schema(&evidence.schema);
    // Tables the log drops or renames are read as the schema from before it says (the
    // main file's, rolled back by a hot journal): their versions come before the step
    // that holds their schema row's last version.
    let hot = logs.journal.filter(|j| j.header.is_some());
    if let Ok(before) = pager::Database::open_with_logs(logs.main, hot, None) {
        let before = before.observed(observe);
        for (name, reading) in Reading::of_schema(&pager::read_schema(&before)) {
            readings.entry(name).or_insert(reading);
        }
    }
    let work = &mut rebuilt.work;
    let report = write(
        &work.out,
        logs,
        (evidence.encoding(), readings),
        work.names.taken(),
        observe,
    )
    .map_err(Error::db("writing the history of the logs"))?;
    for name in report
        .registry
        .iter()
        .chain(&report.steps_table)
        .chain(report.views.values())
    {
        work.names.take(name);
    }
    work.ledger.history = Some(report);
    Ok(())
}

/// The logs read with the source: the write-ahead log, over the main file (rolled back by
/// a hot journal first), and the journal (hot, or persisted with its header zeroed).
pub struct Logs<'l, 'a> {
    /// The main file's bytes.
    pub main: &'a [u8],
    /// The write-ahead log.
    pub wal: Option<&'l Wal<'a>>,
    /// The rollback journal.
    pub journal: Option<&'l Journal<'a>>,
}

/// Where a step's versions come from, and its commit number, for `salvage_history`.
fn source_of(step: &Step) -> (&'static str, &'static str, Option<u32>) {
    // (source of the versions before it, source of those after it, commit)
    match step.kind {
        StepKind::Commit { no, .. } => ("main file", "wal", Some(no)),
        StepKind::Uncommitted { .. } => ("main file", "wal uncommitted", None),
        StepKind::Journal { hot: true } => ("journal", "main file uncommitted", None),
        StepKind::Journal { hot: false } => ("journal", "main file", None),
    }
}

/// How a table's records read as rows: the position in the record of its rowid alias
/// (stored as NULL, read as the rowid), and which positions have REAL affinity (an integer
/// stored there reads as a real).
#[derive(Clone, Debug, Default)]
pub struct Reading {
    alias: Option<usize>,
    real: Vec<bool>,
    /// The columns' names in record order.
    names: Vec<String>,
}

impl Reading {
    /// The readings of the tables `schema` declares, by lower-cased name.
    pub fn of_schema(schema: &pager::Schema) -> BTreeMap<String, Reading> {
        Reading::of_statements(schema.rows.iter().filter_map(|row| {
            let sql = row.sql.as_deref()?;
            (row.kind == pager::SchemaKind::Table).then_some((row.name.as_str(), sql))
        }))
    }

    /// The readings of tables by name and CREATE statement.
    fn of_statements<'s>(
        tables: impl Iterator<Item = (&'s str, &'s str)>,
    ) -> BTreeMap<String, Reading> {
        let mut out = BTreeMap::new();
        for (name, sql) in tables {
            let Ok((shape, _)) = crate::base::output::scratch_shape(sql) else {
                continue;
            };
            let order = shape.record_order();
            let alias = shape.rowid_alias();
            out.insert(
                name.to_lowercase(),
                Reading {
                    alias: order.iter().position(|i| Some(*i) == alias),
                    real: order
                        .iter()
                        .map(|i| {
                            shape
                                .columns
                                .get(*i)
                                .is_some_and(|c| c.affinity() == reconstruct::Affinity::Real)
                        })
                        .collect(),
                    names: order
                        .iter()
                        .filter_map(|i| shape.columns.get(*i).map(|c| c.name.clone()))
                        .collect(),
                },
            );
        }
        out
    }

    /// Adds the readings of tables only a step's versions of `sqlite_schema` declare
    /// (created and dropped in the log), before the step's own versions are written.
    pub fn of_step(readings: &mut BTreeMap<String, Reading>, step: &Step) {
        let versions = step
            .changes
            .iter()
            .filter(|c| c.table == history::SCHEMA_TABLE)
            .flat_map(|c| [&c.before, &c.after])
            .flatten();
        for v in versions {
            let [Value::Text(kind), Value::Text(name), _, _, Value::Text(sql)] = v.as_slice()
            else {
                continue;
            };
            let name = String::from_utf8_lossy(name).to_lowercase();
            if kind.as_slice() != b"table" || readings.contains_key(&name) {
                continue;
            }
            let sql = String::from_utf8_lossy(sql);
            readings.extend(Reading::of_statements(std::iter::once((
                name.as_str(),
                sql.as_ref(),
            ))));
        }
    }

    /// `values` of the row `rowid` as SQLite reads them.
    fn read(&self, rowid: i64, values: &[Value]) -> Vec<Value> {
        let mut out = values.to_vec();
        for (i, v) in out.iter_mut().enumerate() {
            if self.alias == Some(i) && *v == Value::Null {
                *v = Value::Integer(rowid);
            } else if let (Value::Integer(n), Some(true)) = (&*v, self.real.get(i)) {
                *v = Value::Real(*n as f64);
            }
        }
        out
    }
}

/// Reads the history of `logs` and writes it to the output as it is read, a step at a
/// time (memory holds one step's rows): `salvage_history` and `salvage_commits`, named
/// apart from the `taken` names. Values are as SQLite reads them where the table's
/// statement is known (`readings`, of the schema, and of the versions of `sqlite_schema`
/// the steps hold): the rowid alias filled in, REAL affinity applied. `observe` is told
/// of each page image read (see [`history::wal_history`]).
pub fn write<'a>(
    out: &Output,
    logs: Logs<'_, 'a>,
    (encoding, readings): (TextEncoding, BTreeMap<String, Reading>),
    taken: &BTreeSet<String>,
    observe: &'a pager::Observe<'a>,
) -> rusqlite::Result<HistoryReport> {
    let name = out.registry_name("salvage_history", taken);
    let steps_name = out.registry_name("salvage_commits", taken);
    create_tables(out, &name, &steps_name)?;
    out.conn.execute_batch("BEGIN")?;
    let mut report = HistoryReport {
        registry: Some(name.clone()),
        steps_table: Some(steps_name.clone()),
        ..HistoryReport::default()
    };
    let mut writer = VersionWriter {
        out,
        registry: &name,
        readings,
        encoding,
        width: std::cell::Cell::new(0),
        tables: BTreeSet::new(),
    };
    let mut versions: BTreeMap<(String, i64), i64> = BTreeMap::new();
    let mut failed: Option<rusqlite::Error> = None;
    let mut number = 0i64;
    let mut each = |step: Step| {
        if failed.is_some() {
            return;
        }
        number += 1;
        let written = writer.whole_step(number, &step, &steps_name, &mut versions, &mut report);
        if let Err(e) = written {
            failed = Some(e);
        }
    };
    // The journal's step first: it is before the log's.
    if let Some(step) = logs
        .journal
        .and_then(|j| history::journal_history(logs.main, j, observe))
    {
        each(step);
    }
    let hot = logs.journal.filter(|j| j.header.is_some());
    let tail = logs
        .wal
        .map(|w| history::wal_history_each(logs.main, hot, w, observe, &mut each));
    if let Some(e) = failed {
        return Err(e);
    }
    if let Some(tail) = &tail {
        report.checkpointed_pages = tail.checkpointed.iter().map(|p| p.get()).collect();
        for s in &tail.strays {
            let source = if s.chained {
                "wal older generation"
            } else {
                "wal older generation, first frame of its run"
            };
            writer.insert(Version {
                table: &s.table,
                rowid: s.rowid,
                version: None,
                source,
                commit: None,
                op: None,
                at: Some(At {
                    page: s.page,
                    offset: s.offset,
                    frame: Some(s.frame),
                }),
                values: &s.values,
            })?;
            report.versions += 1;
            report.older_generation += 1;
        }
    }
    out.conn.execute_batch("COMMIT")?;
    report.views = views(
        out,
        &writer.tables,
        &writer.readings,
        [&name, &steps_name],
        taken,
    )?;
    Ok(report)
}

/// The table of row versions (its value columns added as wider versions come) and the
/// table of steps.
fn create_tables(out: &Output, name: &str, steps_name: &str) -> rusqlite::Result<()> {
    out.conn.execute_batch(&format!(
        "CREATE TABLE {}(tbl TEXT, rowid INTEGER, version INTEGER, source TEXT, \
         commit_no INTEGER, op TEXT, page INTEGER, cell_offset INTEGER, frame INTEGER, \
         nfield INTEGER);
         CREATE TABLE {}(step INTEGER PRIMARY KEY, kind TEXT, commit_no INTEGER, \
         first_frame INTEGER, last_frame INTEGER, db_size INTEGER, pages INTEGER, \
         inserted INTEGER, updated INTEGER, deleted INTEGER);",
        quote(name),
        quote(steps_name),
    ))
}

/// Writes row versions into the table of versions, each read with its table's columns
/// where they are known.
struct VersionWriter<'a> {
    /// The output.
    out: &'a Output,
    /// The table of versions.
    registry: &'a str,
    /// How each table's records are read, by lower-cased name.
    readings: BTreeMap<String, Reading>,
    /// The database's text encoding.
    encoding: TextEncoding,
    /// The value columns the table of versions has so far.
    width: std::cell::Cell<usize>,
    /// The tables versions were written of.
    tables: BTreeSet<String>,
}

impl VersionWriter<'_> {
    /// Writes one step: the readings its versions of `sqlite_schema` add, its versions,
    /// and its row of the table of steps (`number`, in `steps`).
    fn whole_step(
        &mut self,
        number: i64,
        step: &Step,
        steps: &str,
        versions: &mut BTreeMap<(String, i64), i64>,
        report: &mut HistoryReport,
    ) -> rusqlite::Result<()> {
        Reading::of_step(&mut self.readings, step);
        for c in &step.changes {
            if !self.tables.contains(&c.table) {
                self.tables.insert(c.table.clone());
            }
        }
        self.step(step, versions, report)?;
        let r = StepReport::of(step);
        self.out
            .conn
            .prepare_cached(&format!(
                "INSERT INTO {}(step, kind, commit_no, first_frame, last_frame, db_size, \
                 pages, inserted, updated, deleted) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                quote(steps)
            ))?
            .execute(rusqlite::params![
                number,
                r.kind,
                r.commit,
                r.frames.map(|f| f[0]),
                r.frames.map(|f| f[1]),
                r.db_size,
                r.pages as i64,
                r.inserted as i64,
                r.updated as i64,
                r.deleted as i64,
            ])?;
        report.steps.push(r);
        Ok(())
    }

    /// Writes one version.
    fn insert(&mut self, row: Version<'_>) -> rusqlite::Result<()> {
        if !self.tables.contains(row.table) {
            self.tables.insert(row.table.to_string());
        }
        // Value columns added as a wider version comes (no rewrite of the table).
        while self.width.get() < row.values.len() {
            self.out.conn.execute_batch(&format!(
                "ALTER TABLE {} ADD COLUMN c{}",
                quote(self.registry),
                self.width.get()
            ))?;
            self.width.set(self.width.get() + 1);
        }
        let mut values: Vec<SqlValue<'_>> = vec![
            SqlValue::Text(row.table.into()),
            SqlValue::Integer(row.rowid),
            row.version.map_or(SqlValue::Null, SqlValue::Integer),
            SqlValue::Text(row.source.into()),
            row.commit
                .map_or(SqlValue::Null, |c| SqlValue::Integer(i64::from(c))),
            row.op.map_or(SqlValue::Null, |o| SqlValue::Text(o.into())),
            row.at.map_or(SqlValue::Null, |a| {
                SqlValue::Integer(i64::from(a.page.get()))
            }),
            row.at
                .map_or(SqlValue::Null, |a| SqlValue::Integer(i64::from(a.offset))),
            row.at
                .and_then(|a| a.frame)
                .map_or(SqlValue::Null, |f| SqlValue::Integer(i64::from(f.0))),
            SqlValue::Integer(row.values.len() as i64),
        ];
        let read = self
            .readings
            .get(&row.table.to_lowercase())
            .map(|r| r.read(row.rowid, row.values));
        values.extend(
            read.as_deref()
                .unwrap_or(row.values)
                .iter()
                .map(|v| SqlValue::from_value(v, self.encoding)),
        );
        crate::base::output::insert_positional(
            &self.out.conn,
            self.registry,
            &[
                "tbl",
                "rowid",
                "version",
                "source",
                "commit_no",
                "op",
                "page",
                "cell_offset",
                "frame",
                "nfield",
            ],
            &values,
        )
    }

    /// Writes the versions one step made: a row's first change also writes its version
    /// before the step (version 0, the original), then each change its version after.
    fn step(
        &mut self,
        step: &Step,
        versions: &mut BTreeMap<(String, i64), i64>,
        report: &mut HistoryReport,
    ) -> rusqlite::Result<()> {
        let (before_source, after_source, commit) = source_of(step);
        let base_commit = matches!(step.kind, StepKind::Commit { .. }).then_some(0);
        for c in &step.changes {
            let key = (c.table.clone(), c.rowid);
            if !versions.contains_key(&key) {
                if let Some(before) = &c.before {
                    self.insert(Version::of(
                        c,
                        0,
                        before_source,
                        base_commit,
                        Some("original"),
                        (before, c.before_at),
                    ))?;
                    report.versions += 1;
                }
            }
            let v = versions.entry(key).or_insert(0);
            *v += 1;
            // A deleted row's version is its values as they were, where they were.
            let version = match (&c.after, &c.before) {
                (Some(after), _) => Some((after.as_slice(), c.after_at)),
                (None, Some(before)) => Some((before.as_slice(), c.before_at)),
                (None, None) => None,
            };
            if let Some(version) = version {
                let op = Some(c.op().name());
                self.insert(Version::of(c, *v, after_source, commit, op, version))?;
                report.versions += 1;
            }
        }
        Ok(())
    }
}

/// Creates, for each table with versions whose columns are known, a view of its versions
/// with its column names, named apart from the `taken` names and the tables just made.
fn views(
    out: &Output,
    tables: &BTreeSet<String>,
    readings: &BTreeMap<String, Reading>,
    [registry, steps]: [&str; 2],
    taken: &BTreeSet<String>,
) -> rusqlite::Result<BTreeMap<String, String>> {
    let mut made = BTreeMap::new();
    let mut taken = taken.clone();
    taken.insert(registry.to_lowercase());
    taken.insert(steps.to_lowercase());
    for table in tables {
        let Some(reading) = readings.get(&table.to_lowercase()) else {
            continue;
        };
        let name = out.registry_name(&format!("salvage_history_{table}"), &taken);
        taken.insert(name.to_lowercase());
        let columns: String = reading
            .names
            .iter()
            .enumerate()
            .map(|(i, n)| format!(", c{i} AS {}", quote(n)))
            .collect();
        out.conn.execute(
            &format!(
                "CREATE VIEW {} AS SELECT rowid, version, source, commit_no, op, page, \
                 cell_offset, frame{columns} \
                 FROM {} WHERE tbl = {}",
                quote(&name),
                quote(registry),
                sql_text(table),
            ),
            [],
        )?;
        made.insert(table.to_string(), name);
    }
    Ok(made)
}

/// `text` as an SQL string literal.
fn sql_text(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// One row of `salvage_history`.
struct Version<'a> {
    table: &'a str,
    rowid: i64,
    version: Option<i64>,
    source: &'static str,
    commit: Option<u32>,
    op: Option<&'static str>,
    /// Where the version was read.
    at: Option<At>,
    values: &'a [Value],
}

impl<'a> Version<'a> {
    fn of(
        c: &'a Change,
        version: i64,
        source: &'static str,
        commit: Option<u32>,
        op: Option<&'static str>,
        (values, at): (&'a [Value], Option<At>),
    ) -> Version<'a> {
        Version {
            table: &c.table,
            rowid: c.rowid,
            version: Some(version),
            source,
            commit,
            op,
            at,
            values,
        }
    }
}
