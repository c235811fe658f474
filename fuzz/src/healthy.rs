//! The differential target: a random healthy database (`fixtures::random`), written by
//! SQLite from a seed, recovered whole. SQLite is the oracle: a file its
//! `integrity_check` calls `ok` recovers complete (exit 0), nothing registered as damage
//! or lost, and every table holds exactly the rows, with their rowids and every value's
//! storage class and bytes, that SQLite reads from the source.

use std::collections::BTreeMap;
use std::path::Path;

use rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE as NO_CHECKPOINT;
use rusqlite::types::ValueRef;
use rusqlite::Connection;

use crate::Verdict;

/// The input's first 8 bytes (little-endian, zero-padded) are the seed.
pub fn healthy(bytes: &[u8]) -> Verdict {
    let mut seed = [0u8; 8];
    for (s, b) in seed.iter_mut().zip(bytes) {
        *s = *b;
    }
    check_seed(u64::from_le_bytes(seed))
}

/// The scratch folders of this target are `salvage-healthy-PID-N` in the temporary folder.
const SCRATCH: &str = "salvage-healthy-";

/// Removes the scratch folders of runs whose process is gone: a run stopped by a signal
/// (as long runs are, with ^C) leaves the input it was at, often hundreds of MB, and the
/// temporary folder is often memory (`TMPDIR=/dev/shm`). Where processes cannot be told
/// apart (no `/proc`), nothing is removed.
pub fn remove_stale_scratch(temp: &Path) {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(SCRATCH))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !proc.join(pid.to_string()).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Writes the database of `seed`, recovers it, and compares: `Err` says what differs.
pub fn check_seed(seed: u64) -> Verdict {
    static RUN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(|| remove_stale_scratch(&std::env::temp_dir()));
    let n = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("{SCRATCH}{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    if std::fs::create_dir_all(&dir).is_err() {
        return Ok(());
    }
    let verdict = compare(seed, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    verdict
}

fn compare(seed: u64, dir: &Path) -> Verdict {
    let db = fixtures::random::random_database(seed, dir)
        .map_err(|e| format!("seed {seed}: the generator failed: {e}"))?;
    let why = |what: String| format!("seed {seed} ({}): {what}", db.settings);
    // The recovery reads a copy of the files as the generator left them: SQLite's reading
    // below may change them (it rolls a hot journal back into the file and removes it).
    let evidence = dir.join("evidence");
    let src = evidence.join("source.db");
    fixtures::random::copy_with_logs(&db.path, &src)
        .map_err(|e| why(format!("copying the evidence: {e}")))?;
    let expected = {
        let conn = Connection::open(&db.path).map_err(|e| why(e.to_string()))?;
        // A log the generator left beside the file stays there when this reading closes:
        // the recovery is to read the two together, as SQLite does here.
        conn.set_db_config(NO_CHECKPOINT, true)
            .map_err(|e| why(e.to_string()))?;
        fixtures::random::register_application_extensions(&conn).map_err(|e| why(e.to_string()))?;
        let check: Vec<String> = conn
            // Every problem: a line for each row failing a CHECK constraint.
            .prepare("PRAGMA integrity_check(1000000)")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(|e| why(e.to_string()))?;
        // Rows written with the checks off fail them: SQLite's check names their tables,
        // and nothing else.
        let failing: Vec<&str> = check
            .iter()
            .filter_map(|l| l.strip_prefix("CHECK constraint failed in "))
            .collect();
        let checks_off = db.settings.contains("CHECK constraints off");
        if check != ["ok"] && !(checks_off && failing.len() == check.len()) {
            // The generator promises files SQLite wrote through its own interface: one
            // its check does not call `ok` is the generator's fault, and would otherwise
            // be counted as a file run with nothing compared.
            return Err(why(format!(
                "the generator wrote a file SQLite's check does not call ok: {}",
                check.join("; ")
            )));
        }
        // A line for each row failing.
        let mut failing: Vec<String> = failing.into_iter().map(str::to_string).collect();
        failing.sort();
        failing.dedup();
        let beside_rows = (
            settings(&conn).map_err(|e| why(e.to_string()))?,
            schema(&conn).map_err(|e| why(e.to_string()))?,
            check.clone(),
        );
        (
            read_all(&conn).map_err(|e| why(e.to_string()))?,
            failing,
            beside_rows,
        )
    };
    let (expected, failing, (expected_settings, expected_schema, expected_check)) = expected;
    let out = dir.join("out.db");
    let options = recovery::RecoverOptions::new(&src, &out);
    let done = recovery::recover(&options, &recovery::Quiet)
        .map_err(|e| why(format!("the recovery failed: {e}")))?;
    let r = &done.report;
    if done.outcome != recovery::Outcome::Complete {
        return Err(why(format!(
            "{:?}, not complete: {:?}",
            done.outcome, r.evidence.loss
        )));
    }
    // The rows failing a CHECK constraint are found, in every table SQLite names, and
    // only there (the rows themselves are compared below, as every table's); unless the
    // run's own check could not run (a collation the application ships, which this
    // reading registers).
    let checked = r.source.sqlite_check.state != recovery::report::SqliteCheckState::NotRun;
    let mut named: Vec<String> = r
        .source
        .sqlite_check
        .failing_checks
        .iter()
        .filter(|f| f.rows > 0)
        .map(|f| f.table.clone())
        .collect();
    named.sort();
    if checked && named != failing {
        return Err(why(format!(
            "SQLite's check says CHECK constraints fail in {failing:?}, the recovery names failing rows in {named:?}"
        )));
    }
    if r.damaged_fields.fields > 0 || r.lost_and_found.rows > 0 {
        return Err(why(format!(
            "{} damaged fields, {} rows in lost_and_found",
            r.damaged_fields.fields, r.lost_and_found.rows
        )));
    }
    // Its indexes over a collation the application ships are in the stand-in's order
    // (BINARY's, as the run's warning says, with `REINDEX` to run where the application's
    // collation is): they are read and checked in that order.
    let conn = Connection::open(&out).map_err(|e| why(e.to_string()))?;
    conn.create_collation(fixtures::random::PHONEBOOK, |a: &str, b: &str| a.cmp(b))
        .and_then(|()| fixtures::random::register_mozporter(&conn))
        .map_err(|e| why(e.to_string()))?;
    let got_settings = settings(&conn).map_err(|e| why(e.to_string()))?;
    if got_settings != expected_settings {
        return Err(why(format!(
            "the source's settings {expected_settings:?}, the output's {got_settings:?}"
        )));
    }
    // Every index, view and trigger the application relies on, and every table, declared
    // as the source declares it; the output may hold the run's own tables beside them.
    let got_schema = schema(&conn).map_err(|e| why(e.to_string()))?;
    let missing: Vec<_> = expected_schema.difference(&got_schema).collect();
    if !missing.is_empty() {
        return Err(why(format!(
            "the source's schema holds, and the output's does not: {missing:?}"
        )));
    }
    // SQLite's whole check of the output (each index against its table, the full-text and
    // R*Tree tables' own checks, which the run's `quick_check` leaves out): what it says
    // of the source, the same rows failing the same CHECK constraints.
    let mut got_check: Vec<String> = conn
        .prepare("PRAGMA integrity_check(1000000)")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(|e| why(e.to_string()))?;
    let mut expected_check = expected_check;
    got_check.sort();
    expected_check.sort();
    if got_check != expected_check {
        return Err(why(format!(
            "SQLite's check of the source says {expected_check:?}, of the output {got_check:?}"
        )));
    }
    let got = read_all(&conn).map_err(|e| why(format!("reading the output: {e}")))?;
    for (table, rows) in &expected {
        match got.get(table) {
            None => return Err(why(format!("table `{table}` is not in the output"))),
            Some(g) if g != rows => {
                let first = rows.iter().zip(g).position(|(a, b)| a != b);
                return Err(why(format!(
                    "table `{table}`: {} rows in the source, {} in the output; first difference at {first:?}: {:?} against {:?}\n{}",
                    rows.len(),
                    g.len(),
                    first.and_then(|i| rows.get(i)).map(|r| shown(r)),
                    first.and_then(|i| g.get(i)).map(|r| shown(r)),
                    db.script.lines().filter(|l| !l.starts_with("INSERT")).collect::<Vec<_>>().join("\n")
                )));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// What of a database's header its application reads or relies on: the page size, the
/// text encoding, the auto-vacuum mode, the user version and the application ID.
fn settings(conn: &Connection) -> rusqlite::Result<Vec<(&'static str, String)>> {
    [
        "page_size",
        "encoding",
        "auto_vacuum",
        "user_version",
        "application_id",
    ]
    .into_iter()
    .map(|p| {
        conn.query_row(&format!("PRAGMA {p}"), [], |r| {
            Ok((p, format!("{:?}", r.get_ref(0)?)))
        })
    })
    .collect()
}

/// A schema object: its type, name, table and statement.
type Object = (String, String, String, Option<String>);

/// Every object of a database's schema.
fn schema(conn: &Connection) -> rusqlite::Result<std::collections::BTreeSet<Object>> {
    conn.prepare("SELECT type, name, tbl_name, sql FROM sqlite_schema")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect()
}

/// Every table's rows as SQLite reads them (a rowid table's with its rowid), each row
/// written out exactly (storage class and bytes; a real by its exact value), sorted: the
/// tables of the schema, not the shadow tables of a virtual one (a full-text index is
/// built again, not copied) nor `sqlite_stat4` (which this SQLite does not write).
fn read_all(conn: &Connection) -> rusqlite::Result<BTreeMap<String, Vec<Vec<u8>>>> {
    let schema: Vec<(String, String)> = conn
        .prepare(
            "SELECT name, coalesce(sql, '') FROM sqlite_schema WHERE type = 'table'
             AND (name NOT LIKE 'sqlite_stat%' OR name = 'sqlite_stat1')",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let virtual_tables: Vec<&str> = schema
        .iter()
        .filter(|(_, sql)| sql.to_ascii_uppercase().starts_with("CREATE VIRTUAL"))
        .map(|(n, _)| n.as_str())
        .collect();
    let mut out = BTreeMap::new();
    for (name, sql) in &schema {
        if virtual_tables
            .iter()
            .any(|v| name.len() > v.len() && name.starts_with(&format!("{v}_")))
        {
            continue;
        }
        let quoted = format!("\"{}\"", name.replace('"', "\"\""));
        // `sqlite_sequence`'s rowids are SQLite's bookkeeping, given as tables are filled:
        // its rows are compared by name and value.
        // The rowid by a name of its no column hides (an application may name a column
        // `rowid` or `oid`).
        let columns: Vec<String> = conn
            .prepare("SELECT name FROM pragma_table_xinfo(?1)")?
            .query_map([name], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        let rowid = ["rowid", "oid", "_rowid_"]
            .into_iter()
            .find(|r| !columns.iter().any(|c| c.eq_ignore_ascii_case(r)));
        let select = match rowid {
            Some(rowid)
                if !sql.to_ascii_uppercase().contains("WITHOUT ROWID")
                    && name != "sqlite_sequence" =>
            {
                format!("SELECT {rowid}, * FROM {quoted}")
            }
            _ => format!("SELECT * FROM {quoted}"),
        };
        let mut stmt = conn.prepare(&select)?;
        let n = stmt.column_count();
        let mut rows: Vec<Vec<u8>> = Vec::new();
        let mut query = stmt.query([])?;
        while let Some(r) = query.next()? {
            let mut row = Vec::new();
            for i in 0..n {
                exact(r.get_ref(i)?, &mut row);
            }
            rows.push(row);
        }
        rows.sort();
        out.insert(name.clone(), rows);
    }
    Ok(out)
}

/// A value written out exactly, after those before it in `row`: its storage class, its
/// length and its bytes (text as bytes: SQLite reads back whatever bytes were stored,
/// valid UTF-8 or not; a real by its bits). Formatting values as text made the
/// comparison most of a run's time.
fn exact(v: ValueRef<'_>, row: &mut Vec<u8>) {
    let (class, bytes): (u8, std::borrow::Cow<'_, [u8]>) = match v {
        ValueRef::Null => (0, (&[][..]).into()),
        ValueRef::Integer(i) => (1, i.to_le_bytes().to_vec().into()),
        ValueRef::Real(f) => (2, f.to_bits().to_le_bytes().to_vec().into()),
        ValueRef::Text(t) => (3, t.into()),
        ValueRef::Blob(b) => (4, b.into()),
    };
    row.push(class);
    row.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    row.extend_from_slice(&bytes);
}

/// A row written by [`exact`], for a person: each value's class and its first bytes.
fn shown(row: &[u8]) -> String {
    let mut out = Vec::new();
    let mut rest = row;
    while let [class, tail @ ..] = rest {
        let Some((len, tail)) = tail.split_first_chunk::<8>() else {
            break;
        };
        let len = usize::try_from(u64::from_le_bytes(*len)).unwrap_or(usize::MAX);
        let (bytes, tail) = tail.split_at(len.min(tail.len()));
        let head = &bytes[..bytes.len().min(48)];
        out.push(match class {
            0 => "NULL".to_string(),
            1 => format!(
                "int {}",
                i64::from_le_bytes(bytes.try_into().unwrap_or([0; 8]))
            ),
            2 => format!(
                "real {:?}",
                f64::from_bits(u64::from_le_bytes(bytes.try_into().unwrap_or([0; 8])))
            ),
            3 => format!("text {:?} ({len} bytes)", String::from_utf8_lossy(head)),
            _ => format!("blob {head:02x?} ({len} bytes)"),
        });
        rest = tail;
    }
    out.join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(values: &[ValueRef<'_>]) -> Vec<u8> {
        let mut out = Vec::new();
        for v in values {
            exact(*v, &mut out);
        }
        out
    }

    #[test]
    fn rows_are_written_out_exactly() {
        use ValueRef::{Blob, Integer, Null, Real, Text};
        assert_ne!(row(&[Integer(1)]), row(&[Real(1.0)]), "the storage class");
        assert_ne!(row(&[Text(b"a")]), row(&[Blob(b"a")]), "text and blob");
        assert_ne!(row(&[Real(0.0)]), row(&[Real(-0.0)]), "a real by its bits");
        assert_ne!(
            row(&[Text(b"ab"), Text(b"c")]),
            row(&[Text(b"a"), Text(b"bc")])
        );
        assert_ne!(row(&[Null, Text(b"")]), row(&[Text(b""), Null]));
        assert_eq!(
            shown(&row(&[Integer(-3), Text(b"x"), Null])),
            "int -3 | text \"x\" (1 bytes) | NULL"
        );
    }

    /// A folder of a process that cannot exist (past the largest process ID) goes; one of
    /// this process, and one of another name, stay.
    #[test]
    fn scratch_of_gone_processes_is_removed() {
        let temp = std::env::temp_dir().join(format!("salvage-stale-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&temp);
        let gone = std::fs::read_to_string("/proc/sys/kernel/pid_max")
            .ok()
            .and_then(|m| m.trim().parse::<u64>().ok())
            .map_or(u64::from(u32::MAX), |m| m + 1);
        let dead = temp.join(format!("{SCRATCH}{gone}-7"));
        let alive = temp.join(format!("{SCRATCH}{}-7", std::process::id()));
        let other = temp.join(format!("{gone}-{SCRATCH}"));
        for d in [&dead, &alive, &other] {
            std::fs::create_dir_all(d.join("evidence")).unwrap();
            std::fs::write(d.join("evidence/source.db"), b"x").unwrap();
        }
        remove_stale_scratch(&temp);
        let has_proc = std::path::Path::new("/proc/self").exists();
        assert_eq!(dead.exists(), !has_proc);
        assert!(alive.exists() && other.exists());
        let _ = std::fs::remove_dir_all(&temp);
    }
}
