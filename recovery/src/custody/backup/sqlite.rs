//! A live database copied through SQLite's online backup API, read-only and without a
//! file created beside it, and a copy checked afterwards.
//!
//! A read-only connection creates nothing for a rollback-journal database. For a
//! write-ahead-log database it needs the `-shm` (the wal-index), and SQLite creates the
//! `-wal` and `-shm` when they are missing, even read-only, and leaves them behind (seen
//! with SQLite 3.40 and 3.54). So a WAL database without its `-wal` (every committed page
//! is then in the file itself) is read as immutable, without locks, and the copy counts
//! only when the file hashes the same before and after it; otherwise it is made again.
//! A `-wal` without its `-shm` is refused: it cannot be read at all without creating one.
//!
//! The copy is stored in rollback-journal mode whatever the source's mode: the online
//! backup copies page 1 as it is, so a WAL database's copy would say WAL in its header,
//! and the first reader to open it (a `SELECT` from Python) would leave a `-wal` and
//! `-shm` beside it in the backup, files its manifest does not list. The source's mode is
//! returned with the copy, for the manifest, and [`set_wal`] puts it back on a restore.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::backup::{Backup, StepResult};
use rusqlite::Connection;

use crate::base::error::Error;
use crate::base::files::hash_file;
use crate::base::paths::with_suffix;
use crate::base::sqlite::{read_only, uri};
use crate::custody::bundle::{JournalMode, SIDECARS};

/// The rows of each table of a database, by table name; `sqlite_schema` counts its
/// schema rows. Virtual tables are left out.
pub type Rows = BTreeMap<String, u64>;

/// How long the copy waits for a lock (a writer committing) before it gives up.
const BUSY: Duration = Duration::from_secs(30);

/// How many times a database read without locks is copied again when it changed.
const ATTEMPTS: usize = 5;

/// How SQLite can read a live database without creating a file beside it.
enum Access {
    /// Read-only, with locks: a rollback-journal database, or a WAL database whose `-wal`
    /// and `-shm` exist.
    Locked,
    /// Immutable, without locks, proven unchanged by its hash: a WAL database whose
    /// `-wal` does not exist.
    Unlocked,
}

/// An error reading the source database at `db`.
fn source(db: &Path) -> impl Fn(rusqlite::Error) -> Error + '_ {
    move |e| Error::Source {
        path: db.to_path_buf(),
        source: std::io::Error::other(e),
    }
}

/// How the database at `db` can be read ("The Database Header": file format read and
/// write versions, offsets 18 and 19, are 2 for WAL).
fn access(db: &Path) -> Result<Access, Error> {
    use std::io::Read;
    let io = |e| Error::Source {
        path: db.to_path_buf(),
        source: e,
    };
    let mut head = [0u8; 20];
    std::fs::File::open(db)
        .and_then(|mut f| f.read_exact(&mut head))
        .map_err(io)?;
    let wal_mode = head.get(18..20).is_some_and(|v| v.contains(&2));
    let exists = |suffix| std::fs::symlink_metadata(with_suffix(db, suffix)).is_ok();
    match (wal_mode, exists("-wal"), exists("-shm")) {
        (false, _, _) | (true, true, true) => Ok(Access::Locked),
        (true, false, _) => Ok(Access::Unlocked),
        (true, true, false) => Err(Error::Refused {
            what: format!(
                "`{}` is a write-ahead-log database whose `-wal` has no `-shm` beside it: SQLite cannot read it without creating one",
                db.display()
            ),
            hint: "open it once with its application (that makes the `-shm`), or copy it byte for byte with `salvage quarantine`".into(),
        }),
    }
}

/// Refuses a database SQLite cannot read without creating a file beside it (a `-wal`
/// without its `-shm`), before anything is created.
pub fn check_source(db: &Path) -> Result<(), Error> {
    access(db).map(|_| ())
}

/// A database copied: what the snapshot held, and the mode the source was in.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The rows of each table in the snapshot copied.
    pub rows: Rows,
    /// The source's journal mode when it was not a rollback journal (the copy is one).
    pub journal_mode: Option<JournalMode>,
}

/// Copies the live database at `db` into the new file `to` through SQLite's online backup
/// API, in one read transaction while writers go on (in WAL mode; a rollback-journal
/// writer waits for the copy), and counts each table's rows in that same snapshot. The
/// copy is left in rollback-journal mode.
pub fn snapshot(db: &Path, to: &Path) -> Result<Snapshot, Error> {
    for _ in 0..ATTEMPTS {
        match access(db)? {
            Access::Locked => return copy(db, "mode=ro", to),
            Access::Unlocked => {
                let hash = |p| {
                    hash_file(p).map_err(|e| Error::Source {
                        path: db.to_path_buf(),
                        source: e,
                    })
                };
                let before = hash(db)?;
                let copied = copy(db, "immutable=1", to);
                if hash(db)? == before {
                    return copied;
                }
                // A writer came and checkpointed under the copy: it is made again, with
                // locks this time if the writer's `-wal` is still there.
                let own = SIDECARS.iter().map(|suffix| with_suffix(to, suffix));
                for path in std::iter::once(to.to_path_buf()).chain(own) {
                    match std::fs::remove_file(&path) {
                        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                            return Err(Error::Output(e))
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    Err(Error::Source {
        path: db.to_path_buf(),
        source: std::io::Error::other("the database changed under every attempt to copy it"),
    })
}

/// Opens the source at `db` read-only with the URI parameter `query`, counts its rows and
/// copies it to `to` in one read transaction, then leaves the copy in rollback-journal
/// mode.
fn copy(db: &Path, query: &str, to: &Path) -> Result<Snapshot, Error> {
    let src = Connection::open_with_flags(uri(db, query), read_only()).map_err(source(db))?;
    src.busy_timeout(BUSY).map_err(source(db))?;
    // The counts and the pages copied are of one commit: the backup steps inside the
    // read transaction the counts began.
    src.execute_batch("BEGIN").map_err(source(db))?;
    let rows = count_rows(&src).map_err(source(db))?;
    let mut dst = Connection::open(to).map_err(Error::db("creating a backup copy"))?;
    step_all(&src, &mut dst, db)?;
    src.execute_batch("COMMIT").map_err(source(db))?;
    let journal_mode = to_rollback_journal(&dst, to)?;
    dst.close()
        .map_err(|(_, e)| Error::db("closing a backup copy")(e))?;
    Ok(Snapshot { rows, journal_mode })
}

/// Puts the copy open in `dst` in rollback-journal mode, and says which mode it had: the
/// source's, since its page 1 is the source's ("The Database Header": file format write
/// and read versions, offsets 18 and 19, are 2 for WAL). Read first, so that SQLite reads
/// that header; switching out of WAL checkpoints the copy's `-wal` (empty) and removes it
/// and its `-shm`.
fn to_rollback_journal(dst: &Connection, to: &Path) -> Result<Option<JournalMode>, Error> {
    let doing = "putting a backup copy in rollback-journal mode";
    dst.query_row("SELECT count(*) FROM sqlite_schema", [], |r| {
        r.get::<_, i64>(0)
    })
    .map_err(Error::db(doing))?;
    let was: String = dst
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .map_err(Error::db(doing))?;
    if !was.eq_ignore_ascii_case("wal") {
        return Ok(None);
    }
    set_journal_mode(dst, to, "delete", doing)?;
    Ok(Some(JournalMode::Wal))
}

/// Sets the journal mode of the database open in `conn` (at `path`) to `mode`, refused
/// when SQLite answers with another (it keeps WAL while another connection reads).
fn set_journal_mode(
    conn: &Connection,
    path: &Path,
    mode: &str,
    doing: &'static str,
) -> Result<(), Error> {
    let now: String = conn
        .query_row(&format!("PRAGMA journal_mode = {mode}"), [], |r| r.get(0))
        .map_err(Error::db(doing))?;
    if now.eq_ignore_ascii_case(mode) {
        return Ok(());
    }
    Err(super::failed(format!(
        "SQLite left `{}` in journal mode {now}, not {mode}",
        path.display()
    )))
}

/// Puts the database at `path` (a restore's staged copy, which nothing else opens) in WAL
/// mode through SQLite, and closes it: closed, SQLite checkpoints and removes the `-wal`
/// and `-shm` it made, so only the file's header changes (and its change counter).
pub fn set_wal(path: &Path) -> Result<(), Error> {
    let doing = "putting a restored copy back in WAL mode";
    let conn = Connection::open(path).map_err(Error::db(doing))?;
    set_journal_mode(&conn, path, "wal", doing)?;
    conn.close().map_err(|(_, e)| Error::db(doing)(e))
}

/// Runs the online backup from `src` to `dst` to its end, all pages in one step.
fn step_all(src: &Connection, dst: &mut Connection, db: &Path) -> Result<(), Error> {
    let backup = Backup::new(src, dst).map_err(Error::db("starting the online backup"))?;
    let deadline = Instant::now() + BUSY;
    loop {
        match backup.step(-1).map_err(source(db))? {
            StepResult::Done => return Ok(()),
            StepResult::More => {}
            _ if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            _ => {
                return Err(Error::Source {
                    path: db.to_path_buf(),
                    source: std::io::Error::other("the database stayed locked by a writer"),
                })
            }
        }
    }
}

/// Counts the rows of every table but the virtual ones. A table SQLite cannot count is
/// left out: the counts are compared where they can be made.
pub fn count_rows(conn: &Connection) -> rusqlite::Result<Rows> {
    let mut names: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_schema WHERE type = 'table' \
             AND coalesce(sql, '') NOT LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    names.push("sqlite_schema".into());
    let mut rows = Rows::new();
    for name in names {
        let sql = format!("SELECT count(*) FROM \"{}\"", name.replace('"', "\"\""));
        if let Ok(n) = conn.query_row(&sql, [], |r| r.get::<_, i64>(0)) {
            rows.insert(name, u64::try_from(n).unwrap_or_default());
        }
    }
    Ok(rows)
}

/// Checks a copy nothing else writes to (a backup's, a restore's): `PRAGMA quick_check`
/// says ok (text an older SQLite stored in a numeric column, which this one would
/// convert, is the data as it was, not a fault of the copy), and every table of
/// `expected` has as many rows. Opened immutable, so nothing is created beside it. What
/// is wrong, in words, when it is not.
pub fn check_copy(path: &Path, expected: &Rows) -> Result<(), String> {
    let conn = Connection::open_with_flags(uri(path, "immutable=1"), read_only())
        .map_err(|e| format!("SQLite cannot open it: {e}"))?;
    let answer = crate::base::sqlite::sqlite_check(&conn, "PRAGMA quick_check")
        .map_err(|e| format!("quick_check failed: {e}"))?;
    if !answer.faults.is_empty() {
        return Err(format!("quick_check: {}", answer.faults.join("; ")));
    }
    let got = count_rows(&conn).map_err(|e| format!("its tables cannot be counted: {e}"))?;
    let differ: Vec<String> = expected
        .iter()
        .filter(|(table, n)| got.get(*table) != Some(n))
        .map(|(table, n)| match got.get(table) {
            Some(m) => format!("`{table}` has {m} rows, not {n}"),
            None => format!("`{table}` cannot be counted (it had {n} rows)"),
        })
        .collect();
    if differ.is_empty() {
        Ok(())
    } else {
        Err(differ.join("; "))
    }
}
