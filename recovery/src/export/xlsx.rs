//! A salvaged database as a workbook (`salvage export --format xlsx`), for examiners who
//! work in spreadsheets: a sheet per table, its rowid first, then its columns, then
//! `salvage_status`: what the salvage registries say of the row (`recovered`;
//! `placeholder`, a lost parent rebuilt; `partial`, rebuilt from index entries or text
//! copies; `damaged field`, a value registered as damaged). Written by rust_xlsxwriter,
//! one row at a time (constant memory).
//!
//! A spreadsheet's limits are kept to and said: integers past 2^53, which a cell would
//! round, are written as text; a value longer than a cell holds (32,767 characters) is
//! cut and counted; a table longer than a sheet (1,048,576 rows) goes on into
//! `NAME (2)`, …. BLOBs are lower-case hex.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rusqlite::types::ValueRef;
use rust_xlsxwriter::{Format, Workbook, XlsxError};

use crate::base::error::Error;
use crate::export::csv::{open_database, tables_to_export};

/// What a workbook export wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct XlsxSummary {
    /// Sheets, by table: the table and its rows.
    pub tables: Vec<(String, u64)>,
    /// Values cut to a cell's 32,767 characters.
    pub cut: u64,
    /// Integers written as text (past 2^53).
    pub big_integers: u64,
}

/// A cell's longest text, in UTF-16 units.
const CELL: usize = 32_767;
/// A sheet's rows, its header's included.
const SHEET_ROWS: u64 = 1_048_576;
/// The largest integer a cell (a double) holds exactly.
const EXACT: i64 = 1 << 53;

/// Writes the workbook of `db` (or of its `table` alone) to the new file `to`.
///
/// # Errors
///
/// [`Error::Refused`]: `db` is not a database SQLite reads whole, `table` is none of its
/// tables; [`Error::Write`] on `to`.
pub fn export_xlsx(db: &Path, table: Option<&str>, to: &Path) -> Result<XlsxSummary, Error> {
    let conn = open_database(db)?;
    let (tables, _) = tables_to_export(&conn, db, table)?;
    let status = registered(&conn, &crate::base::output::registries(&conn));
    let xlsx = |e: XlsxError| Error::Write {
        path: to.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    };
    let mut book = Workbook::new();
    let bold = Format::new().set_bold();
    let mut summary = XlsxSummary::default();
    let mut sheet_names = BTreeSet::new();
    for t in &tables {
        let quoted = format!("\"{}\"", t.replace('"', "\"\""));
        let (sql, rowid) = match conn.prepare(&format!("SELECT rowid, * FROM {quoted} LIMIT 0")) {
            Ok(_) => (format!("SELECT rowid, * FROM {quoted}"), true),
            Err(_) => (format!("SELECT NULL, * FROM {quoted}"), false),
        };
        let mut stmt = conn
            .prepare(&sql)
            .map_err(Error::read_db("reading a table for the workbook"))?;
        let mut header: Vec<String> = stmt.column_names().map(str::to_string).collect();
        header[0] = "rowid".into();
        header.push("salvage_status".into());
        let mut rows = stmt
            .query([])
            .map_err(Error::read_db("reading a table for the workbook"))?;
        let (mut written, mut part) = (0u64, 0u32);
        let mut sheet: Option<usize> = None;
        loop {
            let row = rows
                .next()
                .map_err(Error::read_db("reading a table for the workbook"))?;
            let Some(row) = row else { break };
            // A new sheet at the first row, and each time one is full.
            if sheet.is_none() || written % (SHEET_ROWS - 1) == 0 && written > 0 {
                part += 1;
                let name = sheet_name(t, part, &mut sheet_names);
                let s = book.add_worksheet_with_constant_memory().map_err(xlsx)?;
                s.set_name(&name).map_err(xlsx)?;
                for (c, h) in header.iter().enumerate() {
                    s.write_string_with_format(0, col(c), h, &bold)
                        .map_err(xlsx)?;
                }
                sheet = Some(book.worksheets_mut().len() - 1);
            }
            let s = book
                .worksheet_from_index(sheet.unwrap_or_default())
                .map_err(xlsx)?;
            let r = u32::try_from(written % (SHEET_ROWS - 1) + 1).unwrap_or(u32::MAX);
            let id: Option<i64> = row.get(0).ok().flatten();
            for c in 0..header.len() - 1 {
                if c == 0 && !rowid {
                    continue;
                }
                let value = row
                    .get_ref(c)
                    .map_err(Error::read_db("reading a value for the workbook"))?;
                write_value(s, r, col(c), value, &mut summary).map_err(xlsx)?;
            }
            let said = id
                .and_then(|id| status.get(&(t.to_ascii_lowercase(), id)))
                .copied()
                .unwrap_or("recovered");
            s.write_string(r, col(header.len() - 1), said)
                .map_err(xlsx)?;
            written += 1;
        }
        // An empty table is a sheet of its header.
        if sheet.is_none() {
            let name = sheet_name(t, 1, &mut sheet_names);
            let s = book.add_worksheet();
            s.set_name(&name).map_err(xlsx)?;
            for (c, h) in header.iter().enumerate() {
                s.write_string_with_format(0, col(c), h, &bold)
                    .map_err(xlsx)?;
            }
        }
        summary.tables.push((t.clone(), written));
    }
    if book.worksheets_mut().is_empty() {
        book.add_worksheet();
    }
    book.save(to).map_err(xlsx)?;
    Ok(summary)
}

/// A column's index as a sheet's.
fn col(c: usize) -> u16 {
    u16::try_from(c).unwrap_or(u16::MAX)
}

/// One value in its cell: a number, text, or a BLOB's hex.
fn write_value(
    s: &mut rust_xlsxwriter::Worksheet,
    r: u32,
    c: u16,
    value: ValueRef<'_>,
    summary: &mut XlsxSummary,
) -> Result<(), XlsxError> {
    let mut text = |s: &mut rust_xlsxwriter::Worksheet, t: String| {
        // A cell's limit counts UTF-16 units.
        let mut units = 0;
        let end = t.char_indices().find_map(|(at, ch)| {
            units += ch.len_utf16();
            (units > CELL).then_some(at)
        });
        let t = match end {
            Some(at) => {
                summary.cut += 1;
                t.get(..at).unwrap_or_default().to_string()
            }
            None => t,
        };
        s.write_string(r, c, t).map(|_| ())
    };
    match value {
        ValueRef::Null => Ok(()),
        ValueRef::Integer(i) if (-EXACT..=EXACT).contains(&i) => {
            s.write_number(r, c, i as f64).map(|_| ())
        }
        ValueRef::Integer(i) => {
            summary.big_integers += 1;
            text(s, i.to_string())
        }
        ValueRef::Real(x) if x.is_finite() => s.write_number(r, c, x).map(|_| ()),
        ValueRef::Real(x) => text(s, x.to_string()),
        ValueRef::Text(t) => text(s, String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => text(s, crate::base::files::hex(b)),
    }
}

/// A sheet's name: the table's, cut to 31 characters, without the characters a sheet's
/// name cannot hold, made unique (a continuation is `NAME (2)`).
fn sheet_name(table: &str, part: u32, taken: &mut BTreeSet<String>) -> String {
    let clean: String = table
        .chars()
        .map(|c| if "[]:*?/\\".contains(c) { '_' } else { c })
        .collect();
    let clean = clean.trim_matches('\'').to_string();
    let clean = if clean.is_empty() {
        "table".to_string()
    } else {
        clean
    };
    let mut k = part;
    loop {
        let suffix = if k > 1 {
            format!(" ({k})")
        } else {
            String::new()
        };
        let room = 31 - suffix.chars().count();
        let name: String = clean.chars().take(room).collect::<String>() + &suffix;
        if taken.insert(name.to_lowercase()) {
            return name;
        }
        k += 1;
    }
}

/// What the salvage registries the run made (`registries`) say of each row, by table
/// (lower case) and rowid.
fn registered(
    conn: &rusqlite::Connection,
    registries: &crate::base::output::Registries,
) -> BTreeMap<(String, i64), &'static str> {
    let mut status = BTreeMap::new();
    for (registry, said, condition) in [
        ("salvage_damaged_fields", "damaged field", ""),
        ("salvage_partial_rows", "partial", " WHERE in_table"),
        ("salvage_placeholders", "placeholder", ""),
    ] {
        let Some(registry) = registries.get(registry) else {
            continue;
        };
        let sql = format!(
            "SELECT lower(tbl), rowid FROM {}{condition}",
            crate::base::output::quote(registry)
        );
        let rows: Vec<(String, Option<i64>)> = conn
            .prepare(&sql)
            .and_then(|mut st| st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
            .unwrap_or_default();
        for (t, rowid) in rows {
            if let Some(rowid) = rowid {
                status.insert((t, rowid), said);
            }
        }
    }
    status
}
