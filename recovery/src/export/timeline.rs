//! A timeline of a database (a salvaged one, or any SQLite file SQLite reads): one event per
//! stored time, in the CSV columns Timesketch imports (`message`, `datetime`, `timestamp`,
//! `timestamp_desc`), with where each came from.
//!
//! Which columns are times: those the catalogue's entry for the database's application
//! names (`docs/profiles.md`), each with its epoch; in a table no entry describes, a column
//! only on strong evidence: its name says time and every value is a time in exactly one
//! epoch ([`reconstruct::time::infer_epoch`]), and the event says it was inferred.
//!
//! Events come from the live rows; from the deleted records `--carve` put in
//! `salvage_carved`; and from the row versions of the logs `--history` put in
//! `salvage_history`. Every time is written in UTC, as stored: a value outside the years an
//! application can have written (1980 to 2099) is flagged (`plausible` false), never moved;
//! one past the years 0001 to 9999 is an event without a date, flagged. A time of zero or
//! -1 is an unset time, counted, not an event.

use std::io::Write;
use std::path::Path;

use pager::Value;
use reconstruct::time::{Instant, Reading};
use rusqlite::Connection;

use crate::base::error::Error;
use crate::base::output::quote;
use crate::export::csv::{csv_line, open_database, unreadable, Field};
pub use crate::recover::times::TimeColumn;
use crate::recover::times::{record_value, table_info, utf8, TableInfo};

/// The header line: Timesketch's columns first.
const HEADER: [&str; 13] = [
    "message",
    "datetime",
    "timestamp",
    "timestamp_desc",
    "table",
    "rowid",
    "column",
    "value",
    "epoch",
    "source",
    "plausible",
    "time_column",
    "application",
];

/// Text values of a row given in an event's message, at most, and characters of each.
const CONTEXT_VALUES: usize = 3;
const CONTEXT_CHARS: usize = 60;

/// What a timeline wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TimelineSummary {
    /// The columns taken as times.
    pub columns: Vec<TimeColumn>,
    /// Events of live rows.
    pub live: u64,
    /// Events of carved deleted records.
    pub carved: u64,
    /// Events of log versions.
    pub logged: u64,
    /// Events whose time is outside 1980 to 2099, flagged.
    pub implausible: u64,
    /// Of those, the events whose number is past the years 0001 to 9999: no date.
    pub undated: u64,
    /// Text times stored without a zone, taken as UTC.
    pub zone_assumed: u64,
    /// Zero and -1 values (unset times), not events.
    pub zeros: u64,
    /// Values that are no time in their column's epoch (text in a number's column, a
    /// blob), not events.
    pub unreadable: u64,
    /// The reader closed the pipe before the end.
    pub closed: bool,
}

/// A database opened for a timeline.
pub struct Timeline {
    conn: Connection,
    columns: Vec<TimeColumn>,
    /// The registries the run that made the database wrote in it: never its tables'
    /// names, which a source may share.
    registries: crate::base::output::Registries,
}

impl Timeline {
    /// Opens `db` read-only and decides which columns are times.
    pub fn open(db: &Path) -> Result<Timeline, Error> {
        let conn = open_database(db)?;
        crate::export::csv::check_readable(&conn, db, None)?;
        let registries = crate::base::output::registries(&conn);
        let columns = crate::recover::times::time_columns(&conn, &registries)
            .map_err(|e| unreadable(db, e))?;
        Ok(Timeline {
            conn,
            columns,
            registries,
        })
    }

    /// The columns taken as times.
    pub fn columns(&self) -> &[TimeColumn] {
        &self.columns
    }

    /// Writes the header and every event to `sink`. A closed pipe ends the timeline early,
    /// and is no error ([`TimelineSummary::closed`]).
    pub fn write_to(&self, sink: &mut dyn Write) -> Result<TimelineSummary, Error> {
        let mut out = std::io::BufWriter::new(sink);
        let mut summary = TimelineSummary {
            columns: self.columns.clone(),
            ..TimelineSummary::default()
        };
        let mut line = String::new();
        let header: Vec<Field<'_>> = HEADER.iter().map(|h| Field::Text(h)).collect();
        csv_line(&mut line, &header);
        if !emit(&mut out, &line)? {
            summary.closed = true;
            return Ok(summary);
        }
        let carved = self.registries.get("salvage_carved");
        let logged = self.registries.get("salvage_history");
        for column in &self.columns {
            let info = table_info(&self.conn, &column.table).map_err(read)?;
            // Each event is written as it is read: memory does not grow with the rows.
            let mut each = |e: Event| write_event(&mut out, &mut line, column, &e, &mut summary);
            let position = info.columns.iter().position(|c| *c == column.column);
            let mut open = live_events(&self.conn, column, &info, &mut each)?;
            let at = position.map(|p| (p, info.alias == Some(p)));
            if let (true, Some(registry), Some(at), true) = (open, carved, at, info.rowid) {
                open = carved_events(&self.conn, registry, column, at, &mut each)?;
            }
            if let (true, Some(registry), Some(at), true) = (open, logged, at, info.rowid) {
                open = logged_events(&self.conn, registry, column, at, &mut each)?;
            }
            if !open {
                summary.closed = true;
                return Ok(summary);
            }
        }
        match out.flush() {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => summary.closed = true,
            other => other.map_err(Error::Output)?,
        }
        Ok(summary)
    }
}

/// Writes one event's line, counting it; `false` when the reader closed the pipe.
fn write_event(
    out: &mut std::io::BufWriter<&mut dyn Write>,
    line: &mut String,
    column: &TimeColumn,
    e: &Event,
    summary: &mut TimelineSummary,
) -> Result<bool, Error> {
    if reconstruct::time::unset(&e.value, utf8) {
        summary.zeros += 1;
        return Ok(true);
    }
    let instant = match column.epoch.read(&e.value, utf8) {
        Reading::At(instant) => Some(instant),
        Reading::Beyond => None,
        Reading::NoTime => {
            summary.unreadable += 1;
            return Ok(true);
        }
    };
    let plausible = instant.is_some_and(Instant::plausible);
    let zone_assumed = column.epoch.zone_assumed(&e.value, utf8);
    summary.implausible += u64::from(!plausible);
    summary.undated += u64::from(instant.is_none());
    summary.zone_assumed += u64::from(zone_assumed);
    match e.source {
        Source::Live => summary.live += 1,
        Source::Carved { .. } => summary.carved += 1,
        Source::Logged { .. } => summary.logged += 1,
    }
    let rowid = e.rowid.map_or(String::new(), |r| r.to_string());
    let mut message = match e.rowid {
        Some(r) => format!("{}: {} row {r}", column.label, column.table),
        None => format!(
            "{}: {} record without its rowid",
            column.label, column.table
        ),
    };
    if !e.context.is_empty() {
        message.push_str(" (");
        message.push_str(&e.context.join("; "));
        message.push(')');
    }
    match instant {
        None => message.push_str(
            " [implausible: past the years 0001 to 9999 in its epoch, no date; the value as stored]",
        ),
        Some(_) if !plausible => {
            message.push_str(" [implausible: outside 1980 to 2099, shown as stored]")
        }
        Some(_) => {}
    }
    if zone_assumed {
        message.push_str(" [no zone stored: taken as UTC]");
    }
    let fields = [
        Field::Owned(message),
        Field::Owned(instant.map(datetime).unwrap_or_default()),
        Field::Owned(instant.map_or(String::new(), |i| i.0.div_euclid(1_000).to_string())),
        Field::Text(&column.label),
        Field::Text(&column.table),
        Field::Owned(rowid),
        Field::Text(&column.column),
        Field::Owned(shown(&e.value)),
        Field::Text(column.epoch.name()),
        Field::Owned(e.source.to_string()),
        Field::Text(if plausible { "true" } else { "false" }),
        Field::Text(&column.why),
        Field::Text(&column.application),
    ];
    csv_line(line, &fields);
    emit(out, line)
}

/// Where an event's time was read.
enum Source {
    /// A row of the table.
    Live,
    /// A deleted record (or, `previous`, an older version of a live row) carved from the
    /// source (`salvage_carved`).
    Carved {
        page: i64,
        offset: i64,
        previous: bool,
    },
    /// A version of a row in a log (`salvage_history`).
    Logged {
        version: Option<i64>,
        commit: Option<i64>,
        op: String,
    },
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Live => write!(f, "live row"),
            Source::Carved {
                page,
                offset,
                previous,
            } => {
                let what = if *previous {
                    "previous version"
                } else {
                    "deleted record"
                };
                write!(f, "carved {what} (page {page}, offset {offset})")
            }
            Source::Logged {
                version,
                commit,
                op,
            } => {
                // An older generation's row (a log beside the database) has no version.
                match version {
                    Some(v) => write!(f, "log version {v}")?,
                    None => write!(f, "log version of an older generation")?,
                }
                match commit {
                    Some(c) => write!(f, " (commit {c}, {op})"),
                    None => write!(f, " ({op})"),
                }
            }
        }
    }
}

/// One stored time, before conversion.
struct Event {
    rowid: Option<i64>,
    value: Value,
    context: Vec<String>,
    source: Source,
}

fn emit(out: &mut std::io::BufWriter<&mut dyn Write>, line: &str) -> Result<bool, Error> {
    match out.write_all(line.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        other => other.map(|()| true).map_err(Error::Output),
    }
}

/// An instant as Timesketch's `datetime`: ISO 8601 with `+00:00`.
fn datetime(i: Instant) -> String {
    let iso = i.iso8601();
    match iso.strip_suffix('Z') {
        Some(t) => format!("{t}+00:00"),
        None => iso,
    }
}

/// A value as the `value` field gives it: as stored.
fn shown(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Integer(i) => i.to_string(),
        Value::Real(r) => format!("{r:?}"),
        Value::Text(t) => String::from_utf8_lossy(t).into_owned(),
        Value::Blob(b) => b.iter().map(|x| format!("{x:02x}")).collect(),
    }
}

/// A few short text values of a row, to tell its event apart (`title: …`).
fn context_of(names: &[String], values: &[Value], skip: &str) -> Vec<String> {
    names
        .iter()
        .zip(values)
        .filter(|(n, _)| *n != skip)
        .filter_map(|(n, v)| match v {
            Value::Text(t) if !t.is_empty() => {
                let text: String = String::from_utf8_lossy(t)
                    .chars()
                    .take(CONTEXT_CHARS)
                    .collect();
                Some(format!("{n}: {text}"))
            }
            _ => None,
        })
        .take(CONTEXT_VALUES)
        .collect()
}

/// Where each event goes: `false` when the reader closed the pipe.
type Each<'a> = dyn FnMut(Event) -> Result<bool, Error> + 'a;

/// Reading a time column's rows failed.
fn read(e: rusqlite::Error) -> Error {
    Error::read_db("reading the rows of a time column")(e)
}

fn live_events(
    conn: &Connection,
    column: &TimeColumn,
    info: &TableInfo,
    each: &mut Each<'_>,
) -> Result<bool, Error> {
    let select = info
        .columns
        .iter()
        .map(|c| quote(c))
        .collect::<Vec<_>>()
        .join(", ");
    let rowid = if info.rowid { "rowid" } else { "NULL" };
    let mut stmt = conn
        .prepare(&format!(
            "SELECT {rowid}, {select} FROM {} ORDER BY 1",
            quote(&column.table)
        ))
        .map_err(read)?;
    let position = info.columns.iter().position(|c| *c == column.column);
    let mut rows = stmt.query([]).map_err(read)?;
    while let Some(r) = rows.next().map_err(read)? {
        let values: Vec<Value> = (1..=info.columns.len())
            .map(|i| r.get_ref(i).map(crate::base::sqlite::value_of))
            .collect::<Result<_, _>>()
            .map_err(read)?;
        let Some(value) = position.and_then(|p| values.get(p)).cloned() else {
            continue;
        };
        if value == Value::Null {
            continue;
        }
        let event = Event {
            rowid: integer(r.get_ref(0).map_err(read)?),
            context: context_of(&info.columns, &values, &column.column),
            value,
            source: Source::Live,
        };
        if !each(event)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The events of the deleted records `--carve` kept (`salvage_carved`, named `registry`).
fn carved_events(
    conn: &Connection,
    registry: &str,
    column: &TimeColumn,
    at: (usize, bool),
    each: &mut Each<'_>,
) -> Result<bool, Error> {
    registry_events(
        conn,
        (column, at),
        (registry, "page, offset, status", "page, offset"),
        &|r| {
            Ok(Source::Carved {
                page: r.get(2)?,
                offset: r.get(3)?,
                previous: r.get::<_, Option<String>>(4)?.as_deref() == Some("previous version"),
            })
        },
        each,
    )
}

/// The events of the row versions `--history` read from the logs (`salvage_history`,
/// named `registry`).
fn logged_events(
    conn: &Connection,
    registry: &str,
    column: &TimeColumn,
    at: (usize, bool),
    each: &mut Each<'_>,
) -> Result<bool, Error> {
    registry_events(
        conn,
        (column, at),
        (registry, "version, commit_no, op", "rowid, version"),
        &|r| {
            Ok(Source::Logged {
                version: r.get(2)?,
                commit: r.get(3)?,
                op: r.get::<_, Option<String>>(4)?.unwrap_or_default(),
            })
        },
        each,
    )
}

/// The events of a registry of records (`salvage_carved`, `salvage_history`): its rows of
/// the column's table, the value of the column's position (`cN`, the record's order; the
/// record's rowid where the column is the INTEGER PRIMARY KEY, `alias`, and stored NULL),
/// and where each came from, read by `source` from the columns `extra` (from index 2 on).
fn registry_events(
    conn: &Connection,
    (column, (position, alias)): (&TimeColumn, (usize, bool)),
    (registry, extra, order): (&str, &str, &str),
    source: &dyn Fn(&rusqlite::Row<'_>) -> rusqlite::Result<Source>,
    each: &mut Each<'_>,
) -> Result<bool, Error> {
    let c = format!("c{position}");
    if !has_column(conn, registry, &c)? {
        return Ok(true);
    }
    // A table of that name but of another shape is not salvage's registry: no events.
    let Ok(mut stmt) = conn.prepare(&format!(
        "SELECT rowid, {c}, {extra} FROM {} WHERE tbl = ?1 COLLATE NOCASE ORDER BY {order}",
        crate::base::output::quote(registry)
    )) else {
        return Ok(true);
    };
    let mut rows = stmt.query([&column.table]).map_err(read)?;
    while let Some(r) = rows.next().map_err(read)? {
        let value = record_value(
            r.get_ref(1).map_err(read)?,
            r.get_ref(0).map_err(read)?,
            alias,
        );
        if value == Value::Null {
            continue;
        }
        let event = Event {
            rowid: integer(r.get_ref(0).map_err(read)?),
            value,
            context: Vec::new(),
            source: source(r).map_err(read)?,
        };
        if !each(event)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A rowid as read: a table may declare a column named `rowid` holding anything.
fn integer(v: rusqlite::types::ValueRef<'_>) -> Option<i64> {
    match v {
        rusqlite::types::ValueRef::Integer(i) => Some(i),
        _ => None,
    }
}

/// Whether `table` has the column `column`.
fn has_column(conn: &Connection, table: &str, column: &str) -> Result<bool, Error> {
    conn.prepare("SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2")
        .and_then(|mut s| s.exists([table, column]))
        .map_err(read)
}
