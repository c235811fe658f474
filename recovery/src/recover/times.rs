//! Which columns of a database are times, and in which epoch: those the catalogue's entry
//! for the database's application names (`docs/profiles.md`), each with its epoch; in a
//! table no entry describes, a column only on strong evidence: its name says time and
//! every value is a time in exactly one epoch ([`reconstruct::time::infer_epoch`]). What
//! `salvage timeline` makes events of and the row views of `--provenance` decode.

use reconstruct::time::Epoch;
use rusqlite::Connection;

use crate::base::output::quote;

/// A column taken as a time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeColumn {
    /// The table, as the schema spells it.
    pub table: String,
    /// The column.
    pub column: String,
    /// Its epoch and unit.
    pub epoch: Epoch,
    /// What happened at that time.
    pub label: String,
    /// Why it is a time: `catalogue PROFILE`, or `inferred: …`.
    pub why: String,
    /// The application, when a catalogue entry names it.
    pub application: String,
}

/// A table's columns in record order (what `salvage_carved` and `salvage_history` number
/// `c0`, `c1`, …), and whether it keeps a rowid.
pub struct TableInfo {
    /// The stored columns.
    pub columns: Vec<String>,
    /// Whether the table keeps a rowid.
    pub rowid: bool,
    /// The position in `columns` of its INTEGER PRIMARY KEY (the rowid's other name):
    /// NULL in a record, as stored, its value the record's rowid.
    pub alias: Option<usize>,
}

/// The time columns of the tables of `conn` (not SQLite's, not the run's registries
/// `own`, not `lost_and_found`).
///
/// # Errors
///
/// SQLite's, reading the schema or a column's values.
pub fn time_columns(
    conn: &Connection,
    own: &crate::base::output::Registries,
) -> rusqlite::Result<Vec<TimeColumn>> {
    let tables: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'
                 AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
                 AND name NOT LIKE 'lost\\_and\\_found%' ESCAPE '\\' ORDER BY rowid",
        )
        .and_then(|mut s| {
            s.query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()
        })?
        .into_iter()
        .filter(|t| !own.is_own(t))
        .collect();
    let infos: Vec<TableInfo> = tables
        .iter()
        .map(|t| table_info(conn, t))
        .collect::<Result<_, _>>()?;
    let present: Vec<crate::recover::profiles::Present> = tables
        .iter()
        .zip(&infos)
        .map(|(t, info)| crate::recover::profiles::Present {
            name: t.clone(),
            from_schema: true,
            columns: info.columns.clone(),
            affinities: Vec::new(),
            types: Vec::new(),
        })
        .collect();
    let identified = crate::recover::profiles::identify(&present, &[], true);
    let profiles = crate::recover::profiles::shipped_parsed();
    let mut columns: Vec<TimeColumn> = Vec::new();
    for (table, info) in tables.iter().zip(&infos) {
        let find = |c: &str| info.columns.iter().find(|x| x.eq_ignore_ascii_case(c));
        // The catalogue's, for every application the schema identifies.
        for id in &identified {
            let Some(p) = profiles.iter().find(|p| p.name == id.profile) else {
                continue;
            };
            for ts in p
                .timestamps
                .iter()
                .filter(|t| t.table.eq_ignore_ascii_case(table))
            {
                let Some(column) = find(&ts.column) else {
                    continue;
                };
                if columns
                    .iter()
                    .any(|c| c.table == *table && c.column == *column)
                {
                    continue;
                }
                columns.push(TimeColumn {
                    table: table.clone(),
                    column: column.clone(),
                    epoch: ts.epoch,
                    label: ts.label.clone(),
                    why: format!("catalogue {}", p.name),
                    application: id.application.clone(),
                });
            }
        }
        if columns.iter().any(|c| c.table == *table) {
            continue;
        }
        // Elsewhere only on strong evidence: the name, and every value.
        for column in info
            .columns
            .iter()
            .filter(|c| reconstruct::time::time_like_name(c))
        {
            let inferred = infer_column((conn, own), table, column, info)?;
            if let Some(epoch) = inferred {
                columns.push(TimeColumn {
                    table: table.clone(),
                    column: column.clone(),
                    epoch,
                    label: format!("{column} (a time by its name and values)"),
                    why: format!(
                        "inferred: its name says time and every value is one in {}",
                        epoch.name()
                    ),
                    application: String::new(),
                });
            }
        }
    }
    Ok(columns)
}

/// A table's stored columns (not VIRTUAL generated ones), in record order for a rowid
/// table, and whether it keeps a rowid.
///
/// # Errors
///
/// SQLite's.
pub fn table_info(conn: &Connection, table: &str) -> rusqlite::Result<TableInfo> {
    // Stored columns (not VIRTUAL generated ones), in record order for a rowid table.
    let columns: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_xinfo(?1) WHERE hidden <> 2 ORDER BY cid")?
        .query_map([table], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let without_rowid: bool = conn.query_row(
        "SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?1",
        [table],
        |r| r.get(0),
    )?;
    // The one column of the primary key, declared `INTEGER`, is the rowid's other name
    // unless SQLite made an index for the key (`INTEGER PRIMARY KEY DESC` is no alias).
    let key: Vec<(String, String)> = conn
        .prepare("SELECT name, upper(type) FROM pragma_table_info(?1) WHERE pk > 0")?
        .query_map([table], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let key_index: bool = conn
        .prepare("SELECT 1 FROM pragma_index_list(?1) WHERE origin = 'pk'")?
        .exists([table])?;
    let alias = match key.as_slice() {
        [(name, kind)] if !without_rowid && !key_index && kind == "INTEGER" => {
            columns.iter().position(|c| c == name)
        }
        _ => None,
    };
    Ok(TableInfo {
        columns,
        rowid: !without_rowid,
        alias,
    })
}

/// The one epoch every value of a column is a time in ([`reconstruct::time::infer_epoch`]):
/// its live rows' values, and those of its table's deleted records and log versions in the
/// registries `--carve` and `--history` wrote (a table whose rows were all deleted keeps its
/// times there). A read that fails is an error, never the end of the evidence.
fn infer_column(
    (conn, own): (&Connection, &crate::base::output::Registries),
    table: &str,
    column: &str,
    info: &TableInfo,
) -> rusqlite::Result<Option<Epoch>> {
    let mut inference = reconstruct::time::EpochInference::new();
    let mut stmt = conn.prepare(&format!("SELECT {} FROM {}", quote(column), quote(table)))?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        if !inference.add(&crate::base::sqlite::value_of(r.get_ref(0)?), utf8) {
            return Ok(None);
        }
    }
    let position = info.columns.iter().position(|c| c == column);
    if let (Some(p), true) = (position, info.rowid) {
        for registry in REGISTRIES.iter().filter_map(|kind| own.get(kind)) {
            let alias = info.alias == Some(p);
            if !registry_values(conn, registry, (table, p, alias), &mut inference)? {
                return Ok(None);
            }
        }
    }
    Ok(inference.epoch())
}

/// The registries of records a salvage output keeps beside its tables, by base name (their
/// names are the run's list's: [`crate::base::output::registries`]): the deleted records of
/// `--carve` and the log versions of `--history`.
pub const REGISTRIES: [&str; 2] = ["salvage_carved", "salvage_history"];

/// Takes into `inference` the values at `position` (`cN`) of `table`'s records in
/// `registry`: the record's rowid where the column is the INTEGER PRIMARY KEY (`alias`),
/// stored NULL. Nothing where the output has no such registry, or one of another shape;
/// `false` once no epoch fits.
fn registry_values(
    conn: &Connection,
    registry: &str,
    (table, position, alias): (&str, usize, bool),
    inference: &mut reconstruct::time::EpochInference,
) -> rusqlite::Result<bool> {
    let Ok(mut stmt) = conn.prepare(&format!(
        "SELECT c{position}, rowid FROM {} WHERE tbl = ?1 COLLATE NOCASE",
        quote(registry)
    )) else {
        return Ok(true);
    };
    let mut rows = stmt.query([table])?;
    while let Some(r) = rows.next()? {
        if !inference.add(&record_value(r.get_ref(0)?, r.get_ref(1)?, alias), utf8) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A registry record's value of a column: as stored, or its rowid where the column is the
/// INTEGER PRIMARY KEY (`alias`) and is stored NULL, as SQLite reads a row.
pub fn record_value(
    value: rusqlite::types::ValueRef<'_>,
    rowid: rusqlite::types::ValueRef<'_>,
    alias: bool,
) -> pager::Value {
    match (value, rowid) {
        (rusqlite::types::ValueRef::Null, rusqlite::types::ValueRef::Integer(i)) if alias => {
            pager::Value::Integer(i)
        }
        (v, _) => crate::base::sqlite::value_of(v),
    }
}

/// Text as UTF-8, when it is.
pub fn utf8(b: &[u8]) -> Option<String> {
    String::from_utf8(b.to_vec()).ok()
}

#[cfg(test)]
mod tests {
    use pager::Value;
    use reconstruct::time::Epoch;

    /// Each epoch's SQL decoding (what a row view shows) gives the instant the Rust
    /// conversion gives (what the timeline writes), to the millisecond, for a value of
    /// 2024-03-05 06:07:08.123456 UTC written in that epoch; zero and a BLOB give NULL.
    #[test]
    fn sql_decoding_agrees_with_the_timeline_in_every_epoch() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let unix_us: i64 = 1_709_618_828_123_456;
        let values = [
            (Epoch::UnixS, Value::Integer(unix_us / 1_000_000)),
            (Epoch::UnixMs, Value::Integer(unix_us / 1_000)),
            (Epoch::UnixUs, Value::Integer(unix_us)),
            (Epoch::UnixNs, Value::Integer(unix_us * 1_000)),
            (
                Epoch::WebkitUs,
                Value::Integer(unix_us + 11_644_473_600_000_000),
            ),
            (
                Epoch::Filetime,
                Value::Integer((unix_us + 11_644_473_600_000_000) * 10),
            ),
            (
                Epoch::MacS,
                Value::Real((unix_us - 978_307_200_000_000) as f64 / 1e6),
            ),
            (
                Epoch::MacNs,
                Value::Integer((unix_us - 978_307_200_000_000) * 1_000),
            ),
            (
                Epoch::JulianDays,
                Value::Real(unix_us as f64 / 86_400e6 + 2_440_587.5),
            ),
            (
                Epoch::IsoText,
                Value::Text(b"2024-03-05T08:07:08.123+02:00".to_vec()),
            ),
        ];
        assert_eq!(values.len(), Epoch::ALL.len());
        for (epoch, value) in values {
            let want = epoch
                .instant(&value, |b| String::from_utf8(b.to_vec()).ok())
                .unwrap_or_else(|| panic!("{epoch:?}"))
                .iso8601();
            let sql = format!("SELECT {}", epoch.sql_utc("?1"));
            let bound =
                crate::base::output::SqlValue::from_value(&value, pager::TextEncoding::Utf8);
            let got: String = conn
                .query_row(&sql, [&bound], |r| r.get(0))
                .unwrap_or_else(|e| panic!("{epoch:?}: {e}"));
            let apart: f64 = conn
                .query_row(
                    "SELECT abs(julianday(?1) - julianday(?2)) * 86400000.0",
                    [&got, &want],
                    |r| r.get(0),
                )
                .unwrap();
            assert!(apart < 1.5, "{epoch:?}: {got} against {want}");
            assert!(got.starts_with("2024-03-05T06:07:08."), "{epoch:?}: {got}");
            // A number stored as text is read as that number, as the timeline reads it.
            if let Value::Integer(n) = value {
                let text = Value::Text(n.to_string().into_bytes());
                let bound =
                    crate::base::output::SqlValue::from_value(&text, pager::TextEncoding::Utf8);
                let again: Option<String> = conn.query_row(&sql, [&bound], |r| r.get(0)).unwrap();
                assert_eq!(
                    again.as_deref(),
                    Some(got.as_str()),
                    "{epoch:?} of {text:?}"
                );
            }
            // What is no time in the epoch, as `Epoch::instant` says, is none in SQL either.
            let mut nothings = vec![
                Value::Integer(0),
                Value::Blob(vec![1, 2]),
                Value::Null,
                Value::Text(b"now".to_vec()),
                Value::Text(b"12:30".to_vec()),
                Value::Text(b"1709618828abc".to_vec()),
            ];
            if epoch == Epoch::IsoText {
                nothings.push(Value::Text(b"2460000.5".to_vec()));
                nothings.push(Value::Integer(1_709_618_828));
            }
            for nothing in nothings {
                // Zero is a time to the conversion; the timeline counts it as unset.
                if nothing != Value::Integer(0) {
                    assert_eq!(
                        epoch.instant(&nothing, |b| String::from_utf8(b.to_vec()).ok()),
                        None,
                        "{epoch:?} of {nothing:?}"
                    );
                }
                let bound =
                    crate::base::output::SqlValue::from_value(&nothing, pager::TextEncoding::Utf8);
                let got: Option<String> = conn.query_row(&sql, [&bound], |r| r.get(0)).unwrap();
                assert_eq!(got, None, "{epoch:?} of {nothing:?}");
            }
        }
    }
}
