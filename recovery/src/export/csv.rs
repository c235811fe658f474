//! Any table or view of a database (a salvaged one: its tables, `lost_and_found`,
//! `salvage_carved`, the registries) as CSV (RFC 4180): a header line of the column
//! names, then a line per row, fields separated by commas and lines by CRLF.
//!
//! A field is quoted when it holds a comma, a quote, a line break, or space at its ends,
//! and when it is the empty string, so that NULL (an empty field, unquoted) and `''`
//! (`""`) stay apart for a reader that tells them apart. Integers are written in decimal,
//! reals in the shortest form that reads back to the same value, always with a point or
//! an exponent (`0.1`, `-2.0`, `1e300`), text as it is, a blob as lower-case hex.

use std::io::Write;
use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

use crate::base::error::Error;

/// What a CSV export wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CsvSummary {
    /// Rows written (the header apart).
    pub rows: u64,
    /// The reader closed the pipe before the end: the rest was not written.
    pub closed: bool,
}

/// A table of a database opened for a CSV export, checked to exist.
pub struct CsvExport {
    conn: Connection,
    /// The table's name as the schema spells it.
    table: String,
}

impl CsvExport {
    /// Opens `db` read-only and finds the table or view `table` (named as SQLite matches
    /// names: ASCII case-insensitively).
    pub fn open(db: &Path, table: &str) -> Result<CsvExport, Error> {
        let conn = open_database(db)?;
        let refused = |what: String, hint: String| Error::Refused { what, hint };
        let names: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') ORDER BY name")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(|e| unreadable(db, e))?;
        let Some(found) = names.iter().find(|n| n.eq_ignore_ascii_case(table)) else {
            return Err(refused(
                format!("`{}` has no table or view named `{table}`", db.display()),
                format!("its tables and views: {}", names.join(", ")),
            ));
        };
        // A view reads other tables: the whole file is checked for it.
        let is_table: bool = conn
            .query_row(
                "SELECT type = 'table' FROM sqlite_schema WHERE name = ?1",
                [found],
                |r| r.get(0),
            )
            .map_err(|e| unreadable(db, e))?;
        check_readable(&conn, db, is_table.then_some(found.as_str()))?;
        Ok(CsvExport {
            table: found.clone(),
            conn,
        })
    }

    /// Writes the header and every row to `sink`. A closed pipe ends the export early, and
    /// is no error (see [`CsvSummary::closed`]).
    pub fn write_to(&self, sink: &mut dyn Write) -> Result<CsvSummary, Error> {
        let quoted = format!("\"{}\"", self.table.replace('"', "\"\""));
        let read = Error::read_db("reading the table to export");
        let mut stmt = self
            .conn
            .prepare(&format!("SELECT * FROM {quoted}"))
            .map_err(read)?;
        let columns: Vec<String> = stmt.column_names().map(str::to_string).collect();
        let mut summary = CsvSummary::default();
        let mut line = String::new();
        let header: Vec<Field<'_>> = columns.iter().map(|c| Field::Text(c)).collect();
        let mut out = std::io::BufWriter::new(sink);
        let emit = |line: &str, out: &mut std::io::BufWriter<&mut dyn Write>| match out
            .write_all(line.as_bytes())
        {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
            other => other.map(|()| true).map_err(Error::Output),
        };
        csv_line(&mut line, &header);
        if !emit(&line, &mut out)? {
            summary.closed = true;
            return Ok(summary);
        }
        let mut rows = stmt
            .query([])
            .map_err(Error::read_db("reading the table to export"))?;
        while let Some(row) = rows
            .next()
            .map_err(Error::read_db("reading the table to export"))?
        {
            let mut fields = Vec::with_capacity(columns.len());
            for i in 0..columns.len() {
                let value = row
                    .get_ref(i)
                    .map_err(Error::read_db("reading the table to export"))?;
                fields.push(match value {
                    ValueRef::Null => Field::Null,
                    ValueRef::Integer(n) => Field::Owned(n.to_string()),
                    ValueRef::Real(x) => Field::Owned(real(x)),
                    ValueRef::Text(t) => Field::Owned(String::from_utf8_lossy(t).into_owned()),
                    ValueRef::Blob(b) => {
                        Field::Owned(b.iter().map(|x| format!("{x:02x}")).collect())
                    }
                });
            }
            csv_line(&mut line, &fields);
            if !emit(&line, &mut out)? {
                summary.closed = true;
                return Ok(summary);
            }
            summary.rows += 1;
        }
        match out.flush() {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => summary.closed = true,
            other => other.map_err(Error::Output)?,
        }
        Ok(summary)
    }
}

/// The hint for a database SQLite cannot read.
fn recover_first(db: &Path) -> String {
    format!(
        "a damaged database is recovered first: `salvage recover {} -o recovered.db`, then export from recovered.db (its rows, and what was lost, in its report)",
        db.display()
    )
}

/// Refuses a database SQLite's own check (`PRAGMA quick_check`, of `table` and its
/// indexes, or of the whole file) does not call `ok`: an export reads with SQLite, which
/// stops at the first damaged page ("malformed") or, worse, reads a damaged tree short
/// without a word. A damaged database is recovered first.
pub(crate) fn check_readable(
    conn: &Connection,
    db: &Path,
    table: Option<&str>,
) -> Result<(), Error> {
    let sql = match table {
        Some(t) => format!("PRAGMA quick_check(\"{}\")", t.replace('"', "\"\"")),
        None => "PRAGMA quick_check".to_string(),
    };
    // A check that stops on the damage says so as its error; a file that is no database
    // at all is unreadable.
    let said: Vec<String> = match conn
        .prepare(&sql)
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
    {
        Ok(said) => said,
        Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseCorrupt) => {
            vec![e.to_string()]
        }
        Err(e) => return Err(unreadable(db, e)),
    };
    if said.len() == 1 && said.first().is_some_and(|s| s == "ok") {
        return Ok(());
    }
    // SQLite gives its problems as rows, or as lines of one row.
    let problems: Vec<&str> = said
        .iter()
        .flat_map(|s| s.lines())
        .filter(|l| !l.is_empty() && !l.starts_with("*** in database"))
        .collect();
    Err(Error::Refused {
        what: format!(
            "`{}` is damaged{}: SQLite's check says \"{}\"{}",
            db.display(),
            table
                .map(|t| format!(" where `{t}` is stored"))
                .unwrap_or_default(),
            problems.first().copied().unwrap_or("not ok"),
            match problems.len() {
                0 | 1 => String::new(),
                n => format!(" and {} more problems", n - 1),
            }
        ),
        hint: recover_first(db),
    })
}

/// `s` as one CSV field: quoted (its quotes doubled) when it holds a comma, a quote or a
/// line break.
pub(crate) fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The tables an export of `db` reads, checked as SQLite checks them ([`check_readable`]):
/// `table` alone (matched as SQLite matches names), or every table but SQLite's own and
/// the virtual ones; and every such table's name, in schema order.
pub(crate) fn tables_to_export(
    conn: &Connection,
    db: &Path,
    table: Option<&str>,
) -> Result<(Vec<String>, Vec<String>), Error> {
    let all: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'
             AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid",
        )
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(|e| unreadable(db, e))?;
    let chosen = match table {
        Some(t) => match all.iter().find(|n| n.eq_ignore_ascii_case(t)) {
            Some(found) => vec![found.clone()],
            None => {
                return Err(Error::Refused {
                    what: format!("`{}` has no table named `{t}`", db.display()),
                    hint: format!("its tables: {}", all.join(", ")),
                })
            }
        },
        None => all.clone(),
    };
    check_readable(conn, db, table.and(chosen.first().map(String::as_str)))?;
    Ok((chosen, all))
}

/// `db` refused: SQLite cannot read its schema (it is no database, or a damaged one).
pub(crate) fn unreadable(db: &Path, e: rusqlite::Error) -> Error {
    Error::Refused {
        what: format!("SQLite cannot read `{}`: {e}", db.display()),
        hint: recover_first(db),
    }
}

/// Opens `db` read-only with SQLite (a salvaged database, or any SQLite reads): refused,
/// with the hint to recover it first, when it is no regular file or SQLite cannot open it.
pub(crate) fn open_database(db: &Path) -> Result<Connection, Error> {
    crate::base::paths::check_regular_file(db)?;
    Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(|e| Error::Refused {
        what: format!("SQLite cannot read `{}`: {e}", db.display()),
        hint: recover_first(db),
    })
}

/// A field of a line.
pub(crate) enum Field<'a> {
    /// NULL: an empty field, never quoted.
    Null,
    /// Text borrowed.
    Text(&'a str),
    /// Text made for the field.
    Owned(String),
}

/// A real in the shortest form that reads back to the same value, always with a point or
/// an exponent so that it reads back as a real.
fn real(x: f64) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            String::new()
        } else if x > 0.0 {
            "Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let s = format!("{x:?}");
    if s.contains(['.', 'e', 'E']) {
        s
    } else {
        format!("{s}.0")
    }
}

/// `fields` as one CSV line (CRLF-terminated) in `line`.
pub(crate) fn csv_line(line: &mut String, fields: &[Field<'_>]) {
    line.clear();
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            line.push(',');
        }
        let text = match f {
            Field::Null => continue,
            Field::Text(t) => *t,
            Field::Owned(t) => t.as_str(),
        };
        let quote = text.is_empty()
            || text.contains([',', '"', '\n', '\r'])
            || text.starts_with(char::is_whitespace)
            || text.ends_with(char::is_whitespace);
        if quote {
            line.push('"');
            line.push_str(&text.replace('"', "\"\""));
            line.push('"');
        } else {
            line.push_str(text);
        }
    }
    line.push_str("\r\n");
}
