//! Every BLOB of a database written out as a file (`salvage export --blobs DIR`), named by
//! its table, rowid and column, with the extension its first bytes call for
//! ([`reconstruct::magic`]), and a manifest of them all with their SHA-256: what an
//! examiner opens in a viewer, and proves came from the database.
//!
//! `DIR` is new: written as `DIR.incomplete` and renamed into place once every file and
//! the manifest are written and synced; nothing is ever overwritten.

use std::io::Write;
use std::path::{Path, PathBuf};

use rusqlite::types::ValueRef;
use sha2::{Digest, Sha256};

use crate::base::error::Error;
use crate::export::csv::{open_database, tables_to_export};

/// What a BLOB export wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlobsSummary {
    /// Files written (one per non-empty BLOB).
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Of those, by kind (`jpeg`, …, `unknown`).
    pub kinds: std::collections::BTreeMap<String, u64>,
    /// The folder written.
    pub dir: PathBuf,
}

/// Writes every non-empty BLOB of `table` (default: every table of `db` but SQLite's
/// own and the virtual tables' shadow tables) into the new folder `dir`.
///
/// # Errors
///
/// [`Error::Refused`] before anything is created: `dir` or `dir.incomplete` exists, its
/// folder does not, `db` is no database SQLite reads whole, `table` is not one of its
/// tables; I/O on `dir`.
pub fn export_blobs(db: &Path, table: Option<&str>, dir: &Path) -> Result<BlobsSummary, Error> {
    let mut incomplete = dir.as_os_str().to_owned();
    incomplete.push(".incomplete");
    let incomplete = PathBuf::from(incomplete);
    for p in [dir, incomplete.as_path()] {
        if p.symlink_metadata().is_ok() {
            return Err(Error::Refused {
                what: format!("`{}` already exists", crate::shown(p)),
                hint: "export never overwrites: choose a new folder".into(),
            });
        }
    }
    let conn = open_database(db)?;
    let (tables, _) = tables_to_export(&conn, db, table)?;
    let write = |e: std::io::Error| Error::Write {
        path: incomplete.clone(),
        source: e,
    };
    std::fs::create_dir(&incomplete).map_err(write)?;
    let mut summary = BlobsSummary {
        dir: dir.to_path_buf(),
        ..BlobsSummary::default()
    };
    let mut manifest = String::from("table,rowid,column,kind,bytes,sha256,file\n");
    for t in &tables {
        blobs_of(&conn, t, &incomplete, &mut summary, &mut manifest)
            .map_err(Error::read_db("reading the BLOBs of a table"))?
            .map_err(write)?;
    }
    let path = incomplete.join("manifest.csv");
    crate::base::files::write_atomically(&path, manifest.as_bytes()).map_err(write)?;
    crate::base::files::sync_dir(&incomplete).map_err(write)?;
    crate::base::files::rename_durably(&incomplete, dir).map_err(write)?;
    Ok(summary)
}

/// The BLOBs of one table, each a file in `dir/TABLE/`, each a line of the manifest. The
/// outer error is SQLite's, the inner one I/O's.
fn blobs_of(
    conn: &rusqlite::Connection,
    table: &str,
    dir: &Path,
    summary: &mut BlobsSummary,
    manifest: &mut String,
) -> rusqlite::Result<std::io::Result<()>> {
    let quoted = format!("\"{}\"", table.replace('"', "\"\""));
    // A WITHOUT ROWID table has no rowid: its rows are numbered as read.
    let (sql, numbered) = match conn.prepare(&format!("SELECT rowid, * FROM {quoted} LIMIT 0")) {
        Ok(_) => (format!("SELECT rowid, * FROM {quoted}"), false),
        Err(_) => (format!("SELECT NULL, * FROM {quoted}"), true),
    };
    let mut stmt = conn.prepare(&sql)?;
    let columns: Vec<String> = stmt.column_names().skip(1).map(|c| c.to_string()).collect();
    let folder = dir.join(safe(table));
    let mut made = false;
    let mut rows = stmt.query([])?;
    let mut n = 0i64;
    while let Some(row) = rows.next()? {
        n += 1;
        let rowid = match numbered {
            true => n,
            false => row.get::<_, Option<i64>>(0)?.unwrap_or(n),
        };
        for (i, column) in columns.iter().enumerate() {
            let ValueRef::Blob(bytes) = row.get_ref(i + 1)? else {
                continue;
            };
            if bytes.is_empty() {
                continue;
            }
            if !made {
                if let Err(e) = std::fs::create_dir(&folder) {
                    return Ok(Err(e));
                }
                made = true;
            }
            let kind = reconstruct::magic(bytes.get(..64).unwrap_or(bytes));
            let extension = kind.map_or("bin", reconstruct::Magic::extension);
            let name = format!("{rowid}.{}.{extension}", safe(column));
            if let Err(e) = write_new(&folder.join(&name), bytes) {
                return Ok(Err(e));
            }
            let kind = kind.map_or("unknown", reconstruct::Magic::name);
            let sha256 = crate::base::files::hex(&Sha256::digest(bytes));
            let field = crate::export::csv::field;
            manifest.push_str(&format!(
                "{},{rowid},{},{kind},{},{sha256},{}\n",
                field(table),
                field(column),
                bytes.len(),
                field(&format!("{}/{name}", safe(table)))
            ));
            summary.files += 1;
            summary.bytes += bytes.len() as u64;
            *summary.kinds.entry(kind.to_string()).or_insert(0) += 1;
        }
    }
    Ok(Ok(()))
}

/// A name made safe as one path component: separators, control characters and a
/// leading dot replaced.
fn safe(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| match c {
            '/' | '\\' | '\0' => '_',
            c if c.is_control() => '_',
            c => c,
        })
        .collect();
    match s.strip_prefix('.') {
        Some(rest) => format!("_{rest}"),
        None if s.is_empty() => "_".into(),
        None => s,
    }
}

/// Writes a new file whole (never over one) and syncs it.
fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}
