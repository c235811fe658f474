//! `recover --history`: every version of every row the write-ahead log and the rollback
//! journal still hold (see the `history` crate), written to `salvage_history`, one row a
//! version, and the steps they come from to `salvage_commits`; never into the recovered
//! tables.

use std::collections::{BTreeMap, BTreeSet};

use history::{At, Change, History, Step, StepKind};
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
    let mut residency = files.residency();
    let read = read(
        files.main.bytes(),
        evidence.usable_wal(),
        journal.as_ref(),
        &mut |n| residency.read(n),
    );
    let mut readings = Reading::of_schema(&evidence.schema);
    Reading::of_history(&mut readings, &read);
    let work = &mut rebuilt.work;
    let report = write(
        &work.out,
        &read,
        evidence.encoding(),
        &readings,
        work.names.taken(),
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

/// The history of the logs read with the source: the write-ahead log's commits over the
/// main file (rolled back by a hot journal first), and the journal's transaction (hot, or
/// persisted with its header zeroed).
/// `read` is told the bytes read (see [`history::wal_history`]).
pub fn read(
    main: &[u8],
    wal: Option<&Wal<'_>>,
    journal: Option<&Journal<'_>>,
    read: &mut dyn FnMut(u64),
) -> History {
    let hot = journal.filter(|j| j.header.is_some());
    let mut out = wal.map_or_else(History::default, |w| {
        history::wal_history(main, hot, w, read)
    });
    if let Some(step) = journal.and_then(|j| history::journal_history(main, j)) {
        out.steps.insert(0, step);
    }
    out
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

    /// Adds the readings of tables only the history's versions of `sqlite_schema` declare
    /// (created and dropped in the log).
    pub fn of_history(readings: &mut BTreeMap<String, Reading>, history: &History) {
        let versions = history
            .steps
            .iter()
            .flat_map(|s| &s.changes)
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

/// Writes `history` to the output: `salvage_history` and `salvage_commits`, named apart
/// from the `taken` names. Values are as SQLite reads them where the table's statement
/// is known (`readings`): the rowid alias filled in, REAL affinity applied.
pub fn write(
    out: &Output,
    history: &History,
    encoding: TextEncoding,
    readings: &BTreeMap<String, Reading>,
    taken: &BTreeSet<String>,
) -> rusqlite::Result<HistoryReport> {
    let name = crate::base::output::registry_name("salvage_history", taken);
    let steps_name = crate::base::output::registry_name("salvage_commits", taken);
    create_tables(out, history, &name, &steps_name)?;
    out.conn.execute_batch("BEGIN")?;
    let mut report = HistoryReport {
        registry: Some(name.clone()),
        steps_table: Some(steps_name.clone()),
        checkpointed_pages: history.checkpointed.iter().map(|p| p.get()).collect(),
        ..HistoryReport::default()
    };
    let writer = VersionWriter {
        out,
        registry: &name,
        readings,
        encoding,
    };
    let mut versions: BTreeMap<(String, i64), i64> = BTreeMap::new();
    for (i, step) in history.steps.iter().enumerate() {
        writer.step(step, &mut versions, &mut report)?;
        let r = StepReport::of(step);
        out.conn
            .prepare_cached(&format!(
                "INSERT INTO {}(step, kind, commit_no, first_frame, last_frame, db_size, \
                 pages, inserted, updated, deleted) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                quote(&steps_name)
            ))?
            .execute(rusqlite::params![
                i as i64 + 1,
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
    }
    for s in &history.strays {
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
    out.conn.execute_batch("COMMIT")?;
    report.views = views(out, history, readings, [&name, &steps_name], taken)?;
    Ok(report)
}

/// The table of row versions (as wide as the widest version) and the table of steps.
fn create_tables(
    out: &Output,
    history: &History,
    name: &str,
    steps_name: &str,
) -> rusqlite::Result<()> {
    let width = history
        .steps
        .iter()
        .flat_map(|s| &s.changes)
        .flat_map(|c| [&c.before, &c.after])
        .flatten()
        .map(Vec::len)
        .chain(history.strays.iter().map(|s| s.values.len()))
        .max()
        .unwrap_or(0);
    let cols: String = (0..width).map(|i| format!(", c{i}")).collect();
    out.conn.execute_batch(&format!(
        "CREATE TABLE {}(tbl TEXT, rowid INTEGER, version INTEGER, source TEXT, \
         commit_no INTEGER, op TEXT, page INTEGER, cell_offset INTEGER, frame INTEGER, \
         nfield INTEGER{cols});
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
    readings: &'a BTreeMap<String, Reading>,
    /// The database's text encoding.
    encoding: TextEncoding,
}

impl VersionWriter<'_> {
    /// Writes one version.
    fn insert(&self, row: Version<'_>) -> rusqlite::Result<()> {
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
        &self,
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
    history: &History,
    readings: &BTreeMap<String, Reading>,
    [registry, steps]: [&str; 2],
    taken: &BTreeSet<String>,
) -> rusqlite::Result<BTreeMap<String, String>> {
    let tables: BTreeSet<&str> = history
        .steps
        .iter()
        .flat_map(|s| &s.changes)
        .map(|c| c.table.as_str())
        .chain(history.strays.iter().map(|s| s.table.as_str()))
        .collect();
    let mut made = BTreeMap::new();
    let mut taken = taken.clone();
    taken.insert(registry.to_lowercase());
    taken.insert(steps.to_lowercase());
    for table in tables {
        let Some(reading) = readings.get(&table.to_lowercase()) else {
            continue;
        };
        let name = crate::base::output::registry_name(&format!("salvage_history_{table}"), &taken);
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
