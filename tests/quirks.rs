//! The file format's documented quirks, each on a healthy file SQLite wrote: SQLite is the
//! oracle. Each file is recovered in-process; the recovery is complete (exit 0) and every
//! table holds exactly the rows, with the rowids, that SQLite reads from the source.

use rusqlite::Connection;

use crate::recover::rows_of;
use crate::{recover_in_process, Scratch, TestResult};
use recovery::{Outcome, RecoverOptions};

/// A table's declaration, and whether it is WITHOUT ROWID.
struct Quirk {
    name: &'static str,
    create: &'static str,
    without_rowid: bool,
}

/// Which primary keys are the rowid, and which are not (SQLite's documentation, "ROWIDs and
/// the INTEGER PRIMARY KEY"): only a column declared exactly `INTEGER`, and not `DESC` when
/// the key is declared on the column; `DESC` in a table constraint keeps the alias.
const QUIRKS: &[Quirk] = &[
    Quirk {
        name: "alias",
        create: "CREATE TABLE alias(id INTEGER PRIMARY KEY, v TEXT)",
        without_rowid: false,
    },
    Quirk {
        name: "alias_asc",
        create: "CREATE TABLE alias_asc(id integer primary key asc, v TEXT)",
        without_rowid: false,
    },
    Quirk {
        name: "column_desc",
        create: "CREATE TABLE column_desc(id INTEGER PRIMARY KEY DESC, v TEXT)",
        without_rowid: false,
    },
    Quirk {
        name: "constraint_desc",
        create: "CREATE TABLE constraint_desc(id INTEGER, v TEXT, PRIMARY KEY(id DESC))",
        without_rowid: false,
    },
    Quirk {
        name: "int_key",
        create: "CREATE TABLE int_key(id INT PRIMARY KEY, v TEXT)",
        without_rowid: false,
    },
    Quirk {
        name: "bigint_key",
        create: "CREATE TABLE bigint_key(id BIGINT PRIMARY KEY, v TEXT)",
        without_rowid: false,
    },
    Quirk {
        name: "counted",
        create: "CREATE TABLE counted(id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT)",
        without_rowid: false,
    },
    Quirk {
        name: "two_column_key",
        create: "CREATE TABLE two_column_key(a INTEGER, b INTEGER, v TEXT, PRIMARY KEY(a, b))",
        without_rowid: false,
    },
    Quirk {
        name: "no_rowid",
        create: "CREATE TABLE no_rowid(id INTEGER PRIMARY KEY DESC, v TEXT) WITHOUT ROWID",
        without_rowid: true,
    },
];

/// A store with every quirk's table, each holding rows whose keys are not their rowids'
/// order (negative, large, out of order), and some rows deleted.
fn store(path: &std::path::Path) -> rusqlite::Result<()> {
    let conn = Connection::open(path)?;
    for q in QUIRKS {
        conn.execute_batch(q.create)?;
        for i in 0..120i64 {
            let key = (i * 7919) % 1000 - 500;
            let v = format!("{}-{i}-{}", q.name, "x".repeat((i % 13) as usize * 9));
            if q.name == "two_column_key" {
                conn.execute(
                    "INSERT INTO two_column_key(a, b, v) VALUES (?1, ?2, ?3)",
                    rusqlite::params![key, i, v],
                )?;
            } else {
                conn.execute(
                    &format!("INSERT INTO {}(id, v) VALUES (?1, ?2)", q.name),
                    rusqlite::params![key, v],
                )?;
            }
        }
        conn.execute(&format!("DELETE FROM {} WHERE v LIKE '%-3%'", q.name), [])?;
    }
    Ok(())
}

#[test]
fn every_primary_key_quirk_recovers_as_sqlite_reads_it() -> TestResult {
    let dir = Scratch::new("quirks");
    let (src, dest) = (dir.path("quirks.db"), dir.path("out.db"));
    store(&src)?;
    let done = recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Complete)?;
    for q in QUIRKS {
        let expected = rows_of(&src, q.name, q.without_rowid);
        assert!(!expected.is_empty(), "{}", q.name);
        assert_eq!(
            rows_of(&dest, q.name, q.without_rowid),
            expected,
            "{}: {}",
            q.name,
            q.create
        );
        let t = done.table(q.name).ok_or(q.name)?;
        assert_eq!(t.rows_in_output, Some(expected.len() as u64), "{}", q.name);
    }
    Ok(())
}
