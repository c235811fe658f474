//! `backup` and `restore` of a healthy, live database: copies through SQLite's online
//! backup API that create nothing beside the source, hold one committed state while a
//! writer goes on, are verified before they are named, pruned to `--keep`, and come back
//! with the target and its sidecars kept aside. The fault switch (`SALVAGE_FAULT_AT`)
//! stops either command at each phase boundary, and what is left on disk is checked.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use recovery::stages::crash as fault;
use rusqlite::Connection;
use sha2::{Digest, Sha256};

use crate::{Scratch, TestResult};

/// A test step's result with a value.
type Got<T> = Result<T, Box<dyn std::error::Error>>;

/// Runs `salvage` with `args` (and `SALVAGE_FAULT_AT=phase` when given): exit code,
/// stdout, stderr.
fn run(args: &[&std::ffi::OsStr], phase: Option<&str>) -> Got<(i32, String, String)> {
    let mut cmd = crate::salvage();
    cmd.args(args);
    match phase {
        Some(phase) => cmd.env(fault::VAR, phase),
        None => cmd.env_remove(fault::VAR),
    };
    let out = cmd.output()?;
    Ok((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// `salvage backup SRC --to DIR` with `extra` arguments.
fn backup(
    src: &Path,
    to: &Path,
    extra: &[&str],
    phase: Option<&str>,
) -> Got<(i32, String, String)> {
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "backup".as_ref(),
        src.as_os_str(),
        "--to".as_ref(),
        to.as_os_str(),
    ];
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    run(&args, phase)
}

/// `salvage restore BACKUP TARGET`.
fn restore(from: &Path, target: &Path, phase: Option<&str>) -> Got<(i32, String, String)> {
    run(
        &["restore".as_ref(), from.as_os_str(), target.as_os_str()],
        phase,
    )
}

/// Backs up and expects exit 0; the new backup's folder.
fn backup_ok(src: &Path, to: &Path, extra: &[&str]) -> Got<PathBuf> {
    let (code, out, err) = backup(src, to, extra, None)?;
    assert_eq!(code, 0, "{err}");
    let line = out.lines().next().ok_or("no output")?;
    let path = line.rsplit('`').nth(1).ok_or("no path")?;
    Ok(PathBuf::from(path))
}

fn sha256(path: &Path) -> Got<String> {
    Ok(Sha256::digest(std::fs::read(path)?)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Got<Vec<String>> {
    let mut v = std::fs::read_dir(dir)?
        .map(|e| Ok(e?.file_name().to_string_lossy().into_owned()))
        .collect::<Got<Vec<String>>>()?;
    v.sort();
    Ok(v)
}

/// The complete backups in `dir` (folders with a manifest, not named `.incomplete` or
/// `.pruned`), sorted.
fn complete_backups(dir: &Path) -> Got<Vec<PathBuf>> {
    Ok(names(dir)?
        .into_iter()
        .filter(|n| !n.ends_with(".incomplete") && !n.ends_with(".pruned"))
        .map(|n| dir.join(n))
        .filter(|p| p.join("MANIFEST.json").is_file())
        .collect())
}

/// A database with `n` rows `(i, i)` in `t` and a one-row `counter` holding `n`, in
/// `mode` (`wal` or `delete`); the connection is returned open.
fn database(path: &Path, mode: &str, n: i64) -> Got<Connection> {
    let conn = Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", mode)?;
    conn.execute_batch(
        "CREATE TABLE t(a INTEGER, b INTEGER);
         CREATE TABLE counter(n INTEGER);
         INSERT INTO counter VALUES (0);",
    )?;
    for _ in 0..n {
        commit_one(&conn)?;
    }
    Ok(conn)
}

/// One transaction: a row `(i, i)` into `t` and `counter` raised to `i`.
fn commit_one(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "BEGIN IMMEDIATE;
         UPDATE counter SET n = n + 1;
         INSERT INTO t SELECT n, n FROM counter;
         COMMIT;",
    )
}

/// `path` with `suffix` appended to its name.
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The state of a database: `(rows of t, counter, rows with a = b, largest a)`. Read as
/// immutable when no `-wal` is beside it: a read-only connection to a WAL database would
/// create a `-wal` and `-shm` beside it (in a backup: files its manifest does not list).
fn state(path: &Path) -> Got<(i64, i64, i64, i64)> {
    let conn = if with_suffix(path, "-wal").exists() {
        Connection::open(path)?
    } else {
        Connection::open_with_flags(
            format!("file:{}?immutable=1", path.display()),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
        )?
    };
    Ok(conn.query_row(
        "SELECT (SELECT count(*) FROM t), (SELECT n FROM counter),
                (SELECT count(*) FROM t WHERE a = b), (SELECT coalesce(max(a), 0) FROM t)",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    )?)
}

/// Asserts that the database at `path` holds exactly one committed state: rows 1..=n
/// and the counter at n.
fn assert_one_committed_state(path: &Path) -> Got<i64> {
    let (rows, counter, equal, max) = state(path)?;
    assert_eq!(
        (rows, equal, max),
        (counter, counter, counter),
        "{}",
        path.display()
    );
    Ok(counter)
}

/// A backup of a rollback-journal database creates nothing beside it (the folder's
/// listing is the same after), is kind `backup` with each table's rows, and verifies.
#[test]
fn a_backup_of_a_rollback_journal_database_creates_nothing_beside_it() -> TestResult {
    let (src, to) = (
        Scratch::new("backup-rollback"),
        Scratch::new("backup-rollback-to"),
    );
    let db = src.path("app.db");
    drop(database(&db, "delete", 5)?);
    let before = src.listing();
    let made = backup_ok(&db, &to.path(""), &[])?;
    assert_eq!(src.listing(), before);
    let manifest = recovery::bundle::Manifest::read(&made)?;
    assert_eq!(manifest.kind, "backup");
    let file = manifest.database().ok_or("no database")?;
    assert_eq!(file.path, "app.db");
    let rows = file.rows.as_ref().ok_or("no rows")?;
    assert_eq!((rows.get("t"), rows.get("counter")), (Some(&5), Some(&1)));
    assert!(recovery::bundle::verify(&made)?.intact());
    assert_eq!(names(&made)?, ["MANIFEST.json", "app.db"]);
    Ok(())
}

/// A database an older SQLite wrote, whose text in a numeric column today's
/// `quick_check` reports ("TEXT value in t.n"), is backed up and verifies: that is its
/// data as it was, not a fault of the copy.
#[test]
fn a_backup_of_a_database_an_older_sqlite_wrote_verifies() -> TestResult {
    let (src, to) = (
        Scratch::new("backup-older"),
        Scratch::new("backup-older-to"),
    );
    let db = src.path("old.db");
    crate::older_sqlite_text(&db)?;
    let made = backup_ok(&db, &to.path(""), &[])?;
    assert!(recovery::bundle::verify(&made)?.intact());
    Ok(())
}

/// A WAL database's backup holds the transactions committed in its `-wal` (not yet
/// checkpointed), and creates nothing beside the source: with the `-wal` and `-shm`
/// there, and with neither (closed cleanly), where a read-only SQLite connection would
/// create both and leave them.
#[test]
fn a_backup_of_a_wal_database_holds_its_log_and_creates_nothing() -> TestResult {
    let (src, to) = (Scratch::new("backup-wal"), Scratch::new("backup-wal-to"));
    let db = src.path("live.db");
    let conn = database(&db, "wal", 0)?;
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    for _ in 0..7 {
        commit_one(&conn)?;
    }
    let before = src.listing();
    assert_eq!(before, ["live.db", "live.db-shm", "live.db-wal"]);
    let made = backup_ok(&db, &to.path(""), &[])?;
    assert_eq!(src.listing(), before);
    assert_eq!(assert_one_committed_state(&made.join("live.db"))?, 7);
    drop(conn);
    assert_eq!(
        src.listing(),
        ["live.db"],
        "closed cleanly, the log is gone"
    );
    let made = backup_ok(&db, &to.path(""), &[])?;
    assert_eq!(src.listing(), ["live.db"]);
    assert_eq!(assert_one_committed_state(&made.join("live.db"))?, 7);
    assert_eq!(names(&made)?, ["MANIFEST.json", "live.db"]);
    Ok(())
}

/// `backup` of a WAL database while another thread commits a row and raises a counter
/// in each transaction: every backup verifies and, restored, holds exactly one committed
/// state (as many rows as the counter says).
#[test]
fn a_backup_while_a_writer_commits_restores_one_committed_state() -> TestResult {
    let (src, to, out) = (
        Scratch::new("backup-writer"),
        Scratch::new("backup-writer-to"),
        Scratch::new("backup-writer-out"),
    );
    let db = src.path("busy.db");
    drop(database(&db, "wal", 1)?);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop) = (db.clone(), Arc::clone(&stop));
        std::thread::spawn(move || -> rusqlite::Result<u64> {
            let conn = Connection::open(db)?;
            conn.busy_timeout(std::time::Duration::from_secs(10))?;
            // No sync per commit: the test needs many commits, not durable ones.
            conn.pragma_update(None, "synchronous", "NORMAL")?;
            let mut commits = 0;
            while !stop.load(Ordering::Relaxed) {
                commit_one(&conn)?;
                commits += 1;
            }
            Ok(commits)
        })
    };
    let mut made = Vec::new();
    for _ in 0..4 {
        std::thread::sleep(std::time::Duration::from_millis(150));
        made.push(backup_ok(&db, &to.path(""), &[])?);
    }
    stop.store(true, Ordering::Relaxed);
    let commits = writer.join().map_err(|_| "the writer panicked")??;
    assert!(
        commits > 20,
        "the writer went on during the backups: {commits}"
    );
    let mut counters = Vec::new();
    for (n, backup) in made.iter().enumerate() {
        let (code, out_text, _) = run(&["verify".as_ref(), backup.as_os_str()], None)?;
        assert_eq!(code, 0, "{out_text}");
        let target = out.path(&format!("restored-{n}.db"));
        let (code, _, err) = restore(backup, &target, None)?;
        assert_eq!(code, 0, "{err}");
        counters.push(assert_one_committed_state(&target)?);
    }
    assert!(
        counters.windows(2).all(|w| w[0] <= w[1]) && counters.first() < counters.last(),
        "each backup a later state: {counters:?}"
    );
    Ok(())
}

/// A folder (a Chroma persist directory: a live WAL database, index folders, hidden
/// files, an empty folder, files of one name in several folders) backs up as one tree
/// and restores to the same tree: every other file byte for byte, the database's rows,
/// its sidecars left out.
#[test]
fn a_folder_backup_restores_the_same_tree() -> TestResult {
    let (src, to, out) = (
        Scratch::new("backup-folder"),
        Scratch::new("backup-folder-to"),
        Scratch::new("backup-folder-out"),
    );
    let store = src.path("chroma");
    for folder in ["seg-a", "seg-b", ".hidden", "empty"] {
        std::fs::create_dir_all(store.join(folder))?;
    }
    let files: [(&str, &[u8]); 5] = [
        ("seg-a/data_level0.bin", b"index of segment a"),
        ("seg-b/data_level0.bin", b"index of segment b, longer"),
        (".hidden/state", b"hidden"),
        (".lock", b""),
        ("notes.txt", b"not a database"),
    ];
    for (name, bytes) in files {
        std::fs::write(store.join(name), bytes)?;
    }
    let conn = database(&store.join("chroma.sqlite3"), "wal", 0)?;
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    for _ in 0..3 {
        commit_one(&conn)?;
    }
    let before = names(&store)?;
    let made = backup_ok(&store, &to.path(""), &[])?;
    assert_eq!(names(&store)?, before);
    let target = out.path("chroma");
    let (code, _, err) = restore(&made, &target, None)?;
    assert_eq!(code, 0, "{err}");
    for (name, bytes) in files {
        assert_eq!(std::fs::read(target.join(name))?, bytes, "{name}");
    }
    assert!(target.join("empty").is_dir());
    assert!(!target.join("chroma.sqlite3-wal").exists());
    assert_eq!(
        assert_one_committed_state(&target.join("chroma.sqlite3"))?,
        3
    );
    Ok(())
}

/// `--keep N` removes the oldest backups of the source beyond N once the new one is in
/// place, never the new one, never another source's backups, never a stale
/// `.incomplete`, which every run names in a warning.
#[test]
fn keep_prunes_the_oldest_backups_of_the_source_only() -> TestResult {
    let (src, to) = (Scratch::new("backup-keep"), Scratch::new("backup-keep-to"));
    let (db, other) = (src.path("app.db"), src.path("other.db"));
    drop(database(&db, "delete", 2)?);
    drop(database(&other, "delete", 1)?);
    let dir = to.path("");
    let theirs = backup_ok(&other, &dir, &[])?;
    let mut made = Vec::new();
    for _ in 0..3 {
        made.push(backup_ok(&db, &dir, &[])?);
    }
    let stale = dir.join("20200101T000000Z-app.db.incomplete");
    std::fs::create_dir(&stale)?;
    let (code, out, err) = backup(&db, &dir, &["--keep", "2"], None)?;
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning:") && err.contains(&format!("`{}`", stale.display())),
        "{err}"
    );
    let newest = out
        .lines()
        .next()
        .and_then(|l| l.rsplit('`').nth(1))
        .map(PathBuf::from)
        .ok_or("no path")?;
    let mut expected = vec![made[2].clone(), newest, theirs];
    expected.sort();
    assert_eq!(complete_backups(&dir)?, expected);
    assert!(stale.is_dir());
    let (code, _, err) = backup(&db, &dir, &["--keep", "1"], None)?;
    assert_eq!(code, 0, "{err}");
    assert_eq!(complete_backups(&dir)?.len(), 2, "one of each source");
    Ok(())
}

/// `backup` refuses before creating anything, with a hint: a missing source, a file that
/// is not a database, a missing `--to`, a `--to` inside the folder backed up, a symbolic
/// link in the folder, a `-wal` without its `-shm` (SQLite would create one), `--keep 0`.
#[test]
fn a_backup_refuses_before_creating_anything() -> TestResult {
    let (src, to) = (
        Scratch::new("backup-refusals"),
        Scratch::new("backup-refusals-to"),
    );
    let db = src.path("app.db");
    drop(database(&db, "delete", 1)?);
    let live = database(&src.path("live.db"), "wal", 0)?;
    live.pragma_update(None, "wal_autocheckpoint", 0)?;
    commit_one(&live)?;
    std::fs::copy(src.path("live.db"), src.path("copied.db"))?;
    std::fs::copy(src.path("live.db-wal"), src.path("copied.db-wal"))?;
    drop(live);
    std::fs::write(src.path("notes.txt"), b"text")?;
    let folder = src.path("store");
    std::fs::create_dir(&folder)?;
    std::os::unix::fs::symlink(&db, folder.join("link.db"))?;
    std::fs::create_dir(src.path("plain"))?;
    let cases: [(PathBuf, PathBuf, &[&str], &str); 7] = [
        (src.path("missing.db"), to.path(""), &[], "does not exist"),
        (
            src.path("copied.db"),
            to.path(""),
            &[],
            "without creating one",
        ),
        (
            src.path("notes.txt"),
            to.path(""),
            &[],
            "not a SQLite database",
        ),
        (db.clone(), to.path("missing"), &[], "does not exist"),
        (src.path(""), src.path("plain"), &[], "is inside"),
        (folder.clone(), to.path(""), &[], "a symbolic link"),
        (db.clone(), to.path(""), &["--keep", "0"], "--keep"),
    ];
    let (src_before, to_before) = (src.listing(), to.listing());
    for (from, into, extra, why) in cases {
        let (code, _, err) = backup(&from, &into, extra, None)?;
        assert_eq!(code, 2, "{} -> {}: {err}", from.display(), into.display());
        assert!(err.contains(why), "{why}: {err}");
        if extra.is_empty() {
            assert!(err.contains("hint:"), "{err}");
        }
        assert_eq!(
            (src.listing(), to.listing()),
            (src_before.clone(), to_before.clone())
        );
        assert!(names(&src.path("plain"))?.is_empty());
    }
    Ok(())
}

/// A backup stopped at each phase boundary leaves no half backup named as a whole one:
/// before the rename only `NAME.incomplete`, which the next run names in a warning and
/// leaves; after it a backup that verifies. The earlier backups verify throughout (but
/// for the one being pruned, which is renamed `.pruned` first).
#[test]
fn a_backup_stopped_at_any_phase_leaves_no_half_backup() -> TestResult {
    let src = Scratch::new("backup-faults");
    let store = src.path("store");
    std::fs::create_dir_all(store.join("index"))?;
    std::fs::write(store.join("index/segment.bin"), b"derived index")?;
    let conn = database(&store.join("data.db"), "wal", 4)?;
    let renamed = fault::BACKUP_PHASES
        .iter()
        .position(|p| *p == "backup:renamed")
        .ok_or("no rename phase")?;
    for (n, phase) in fault::BACKUP_PHASES.iter().enumerate() {
        let to = Scratch::new(&format!("backup-faults-{n}"));
        let dir = to.path("");
        let earlier = [backup_ok(&store, &dir, &[])?, backup_ok(&store, &dir, &[])?];
        commit_one(&conn)?;
        let (code, _, err) = backup(&store, &dir, &["--keep", "2"], Some(phase))?;
        assert_eq!(code, fault::EXIT, "{phase}: {err}");
        let listing = names(&dir)?;
        let partial: Vec<&String> = listing
            .iter()
            .filter(|n| n.ends_with(".incomplete"))
            .collect();
        let complete = complete_backups(&dir)?;
        if n < renamed {
            assert_eq!(partial.len(), 1, "{phase}: {listing:?}");
            assert_eq!(complete, earlier, "{phase}");
        } else {
            assert!(partial.is_empty(), "{phase}: {listing:?}");
        }
        for b in &complete {
            assert!(
                recovery::bundle::verify(b)?.intact(),
                "{phase}: {}",
                b.display()
            );
        }
        let (code, _, err) = backup(&store, &dir, &["--keep", "2"], None)?;
        assert_eq!(code, 0, "{phase}: {err}");
        for left in partial {
            assert!(err.contains(&format!("{left}`")), "{phase}: {err}");
            assert!(dir.join(left).is_dir(), "{phase}: never removed");
        }
        assert_eq!(complete_backups(&dir)?.len(), 2, "{phase}");
    }
    Ok(())
}

/// A damaged backup (one flipped byte) is refused, naming the file, and nothing is moved.
#[test]
fn a_restore_refuses_a_damaged_backup_and_moves_nothing() -> TestResult {
    let (src, to) = (
        Scratch::new("restore-damaged"),
        Scratch::new("restore-damaged-to"),
    );
    let db = src.path("app.db");
    drop(database(&db, "delete", 3)?);
    let made = backup_ok(&db, &to.path(""), &[])?;
    let copy = made.join("app.db");
    let mut bytes = std::fs::read(&copy)?;
    bytes[100] ^= 0x01;
    let mut perms = std::fs::metadata(&copy)?.permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&copy, perms)?;
    std::fs::write(&copy, &bytes)?;
    let (before, hash) = (src.listing(), sha256(&db)?);
    let (code, _, err) = restore(&made, &db, None)?;
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("`app.db` differs") && err.contains("hint:"),
        "{err}"
    );
    assert_eq!((src.listing(), sha256(&db)?), (before, hash));
    Ok(())
}

/// Restored over a WAL database, the old `-wal` and `-shm` go aside with it: left at
/// TARGET, SQLite would replay the old log into the restored file. While the application
/// still has the database open, the restore is refused and nothing is moved.
#[test]
fn a_restore_moves_the_old_log_aside_with_its_database() -> TestResult {
    let (src, to) = (Scratch::new("restore-log"), Scratch::new("restore-log-to"));
    let db = src.path("app.db");
    drop(database(&db, "wal", 2)?);
    let made = backup_ok(&db, &to.path(""), &[])?;
    let conn = Connection::open(&db)?;
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    for _ in 0..5 {
        commit_one(&conn)?;
    }
    let before = names(&src.path(""))?;
    let (code, _, err) = restore(&made, &db, None)?;
    assert_eq!(code, 2, "refused while open: {err}");
    assert!(err.contains("in use"), "{err}");
    assert_eq!(names(&src.path(""))?, before, "nothing moved");
    // The application stops without a checkpoint (a crash): its log stays beside it.
    let files: Vec<(PathBuf, Vec<u8>)> = ["", "-wal", "-shm"]
        .iter()
        .map(|s| {
            let p = with_suffix(&db, s);
            std::fs::read(&p).map(|b| (p, b))
        })
        .collect::<std::io::Result<_>>()?;
    drop(conn);
    for (p, b) in &files {
        std::fs::write(p, b)?;
    }
    let (main, wal) = (sha256(&db)?, sha256(&src.path("app.db-wal"))?);
    let (code, out, err) = restore(&made, &db, None)?;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("moved aside"), "{out}");
    // Read first: an old log left at TARGET would be replayed here (7 rows, not 2).
    assert_eq!(assert_one_committed_state(&db)?, 2);
    assert!(!src.path("app.db-wal").exists());
    let aside = names(&src.path(""))?
        .into_iter()
        .find(|n| {
            n.starts_with("app.db.pre-restore-") && !n.ends_with("-wal") && !n.ends_with("-shm")
        })
        .ok_or("nothing moved aside")?;
    let aside = src.path(&aside);
    assert_eq!(sha256(&aside)?, main);
    assert_eq!(sha256(&with_suffix(&aside, "-wal"))?, wal);
    assert_eq!(
        assert_one_committed_state(&aside)?,
        7,
        "the original, whole"
    );
    Ok(())
}

/// A restore stopped at each phase boundary keeps the original: its database at TARGET
/// or at `TARGET.pre-restore-*`, its log beside it under either name. Run again, it
/// converges, or refuses (exit 2) with instructions that, followed, converge.
#[test]
fn a_restore_stopped_at_any_phase_keeps_the_original() -> TestResult {
    for (n, phase) in fault::RESTORE_PHASES.iter().enumerate() {
        let (src, to) = (
            Scratch::new(&format!("restore-faults-{n}")),
            Scratch::new(&format!("restore-faults-{n}-to")),
        );
        let db = src.path("app.db");
        drop(database(&db, "wal", 2)?);
        let made = backup_ok(&db, &to.path(""), &[])?;
        let conn = Connection::open(&db)?;
        conn.pragma_update(None, "wal_autocheckpoint", 0)?;
        for _ in 0..5 {
            commit_one(&conn)?;
        }
        drop(conn);
        // Closed, the log is checkpointed and removed; one is made again by a copy.
        let (main, wal) = (sha256(&db)?, b"not replayed".to_vec());
        std::fs::write(src.path("app.db-wal"), &wal)?;
        let (code, _, err) = restore(&made, &db, Some(phase))?;
        assert_eq!(code, fault::EXIT, "{phase}: {err}");
        let original_at = |name: &str| sha256(&src.path(name)).is_ok_and(|h| h == main);
        let listing = src.listing();
        let holder = listing
            .iter()
            .find(|n| {
                (n.as_str() == "app.db" || n.starts_with("app.db.pre-restore-")) && original_at(n)
            })
            .ok_or(format!("{phase}: the original is gone: {listing:?}"))?
            .clone();
        let log_beside = |name: &str| std::fs::read(src.path(name)).is_ok_and(|b| b == wal);
        assert!(
            log_beside(&format!("{holder}-wal")) || log_beside("app.db-wal"),
            "{phase}: the log is gone: {listing:?}"
        );
        let (code, _, err) = restore(&made, &db, None)?;
        if code == 2 {
            assert!(err.contains("hint:"), "{phase}: {err}");
            follow_instructions(&src, &holder, &err)?;
            let (code, _, err) = restore(&made, &db, None)?;
            assert_eq!(code, 0, "{phase}: {err}");
        } else {
            assert_eq!(code, 0, "{phase}: {err}");
        }
        assert!(!src.path("app.db-wal").exists(), "{phase}");
        assert_eq!(assert_one_committed_state(&db)?, 2, "{phase}");
        let kept = src
            .listing()
            .into_iter()
            .filter(|n| n.starts_with("app.db.pre-restore-") && original_at(n))
            .count();
        assert_eq!(
            kept,
            1,
            "{phase}: the original is kept: {:?}",
            src.listing()
        );
    }
    Ok(())
}

/// Does what a refused rerun says (`err`) after a stopped restore: the sidecars left at
/// TARGET go beside the original at `holder`, and `TARGET.incomplete` is removed.
fn follow_instructions(src: &Scratch, holder: &str, err: &str) -> TestResult {
    if holder != "app.db" {
        for suffix in ["-wal", "-shm", "-journal"] {
            let left = src.path(&format!("app.db{suffix}"));
            if left.exists() {
                let to = src.path(&format!("{holder}{suffix}"));
                assert!(err.contains(&format!("`{}`", to.display())), "{err}");
                std::fs::rename(&left, to)?;
            }
        }
    }
    let staging = src.path("app.db.incomplete");
    if staging.exists() {
        assert!(
            err.contains(&format!("remove `{}`", staging.display())),
            "{err}"
        );
        std::fs::remove_file(&staging)?;
    }
    Ok(())
}

/// A restore whose copy fails while writing names the copy it was writing
/// (`TARGET.incomplete`), not the backup file it read; the target is untouched.
#[test]
fn a_restore_that_cannot_write_names_its_copy() -> TestResult {
    let (src, to) = (
        Scratch::new("restore-write-fails"),
        Scratch::new("restore-write-fails-to"),
    );
    let db = src.path("app.db");
    drop(database(&db, "delete", 50)?);
    let made = backup_ok(&db, &to.path(""), &[])?;
    let hash = sha256(&db)?;
    let out = crate::custody::salvage_with_file_limit(2)
        .arg("restore")
        .arg(&made)
        .arg(&db)
        .output()?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let staging = with_suffix(&db, ".incomplete");
    assert!(
        err.contains(&format!("cannot write `{}`", staging.display())),
        "{err}"
    );
    assert_eq!(sha256(&db)?, hash, "the target untouched");
    Ok(())
}

/// `backup LINK`, LINK a symbolic link to a live WAL database in another folder, copies
/// the file it points to with the transactions committed only in its `-wal`, which lies
/// beside the file, not beside the link (read as immutable without its log, the copy
/// missed every one); nothing is created beside either, and the manifest names the file
/// as the source and the link as `source_link`. A loop of links is refused (exit 2) and
/// nothing is created.
#[test]
fn a_backup_through_a_link_reads_the_log_beside_the_file() -> TestResult {
    let (src, to) = (Scratch::new("backup-link"), Scratch::new("backup-link-to"));
    std::fs::create_dir(src.path("real"))?;
    let db = src.path("real/live.db");
    let conn = database(&db, "wal", 0)?;
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    for _ in 0..7 {
        commit_one(&conn)?;
    }
    let link = src.path("link.db");
    std::os::unix::fs::symlink("real/live.db", &link)?;
    let (before, real_before) = (src.listing(), names(&src.path("real"))?);
    assert_eq!(real_before, ["live.db", "live.db-shm", "live.db-wal"]);
    let made = backup_ok(&link, &to.path(""), &[])?;
    assert_eq!(
        (src.listing(), names(&src.path("real"))?),
        (before.clone(), real_before)
    );
    assert_eq!(names(&made)?, ["MANIFEST.json", "live.db"]);
    assert_eq!(assert_one_committed_state(&made.join("live.db"))?, 7);
    let manifest = recovery::bundle::Manifest::read(&made)?;
    assert_eq!(
        (manifest.source.as_str(), manifest.source_link.as_deref()),
        (db.canonicalize()?.to_str().ok_or("path")?, link.to_str())
    );
    drop(conn);
    let looped = src.path("loop.db");
    std::os::unix::fs::symlink("loop.db", &looped)?;
    let (before, to_before) = (src.listing(), to.listing());
    let (code, _, err) = backup(&looped, &to.path(""), &[], None)?;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("loop") && err.contains("hint:"), "{err}");
    assert_eq!((src.listing(), to.listing()), (before, to_before));
    Ok(())
}

/// The journal mode of the database at `path` as its header says ("The Database
/// Header": read and write versions at offsets 18 and 19, 2 for WAL, 1 for a rollback
/// journal), read as bytes: opening it with SQLite could change what is beside it.
fn header_versions(path: &Path) -> Got<[u8; 2]> {
    let bytes = std::fs::read(path)?;
    Ok([bytes[18], bytes[19]])
}

/// A backup of a WAL database, rows only in its `-wal`, is stored in rollback-journal
/// mode, the original's mode in its manifest: a reader that opens it with SQLite
/// (read-only, as anyone but its owner would, here with a SELECT while `verify` runs)
/// creates nothing beside it, and `verify` says intact during and after (a WAL-mode copy
/// got a `-wal` and `-shm` beside it: NOT INTACT from then on). Restored, it is in WAL
/// mode again with every row, and nothing is left beside it.
#[test]
fn a_backup_of_a_wal_database_stays_intact_when_read() -> TestResult {
    let (src, to, out) = (
        Scratch::new("backup-wal-read"),
        Scratch::new("backup-wal-read-to"),
        Scratch::new("backup-wal-read-out"),
    );
    let db = src.path("live.db");
    let conn = database(&db, "wal", 0)?;
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    for _ in 0..9 {
        commit_one(&conn)?;
    }
    assert_eq!(header_versions(&db)?, [2, 2]);
    let made = backup_ok(&db, &to.path(""), &[])?;
    let copy = made.join("live.db");
    assert_eq!(
        header_versions(&copy)?,
        [1, 1],
        "stored in rollback-journal mode"
    );
    let manifest = recovery::bundle::Manifest::read(&made)?;
    let file = manifest.database().ok_or("no database")?;
    assert_eq!(file.journal_mode, Some(recovery::bundle::JournalMode::Wal));
    {
        let reader =
            Connection::open_with_flags(&copy, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        let rows: i64 = reader.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?;
        assert_eq!(rows, 9);
        let (code, text, _) = run(&["verify".as_ref(), made.as_os_str()], None)?;
        assert_eq!(code, 0, "while a reader has it open: {text}");
    }
    assert_eq!(names(&made)?, ["MANIFEST.json", "live.db"]);
    let (code, text, _) = run(&["verify".as_ref(), made.as_os_str()], None)?;
    assert_eq!(code, 0, "{text}");
    drop(conn);
    let target = out.path("live.db");
    let (code, _, err) = restore(&made, &target, None)?;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.listing(), ["live.db"]);
    assert_eq!(header_versions(&target)?, [2, 2], "WAL mode again");
    let restored = Connection::open(&target)?;
    let mode: String = restored.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
    assert_eq!(mode, "wal");
    drop(restored);
    assert_eq!(assert_one_committed_state(&target)?, 9);
    Ok(())
}

/// `verify` of a folder backup accounts for its folders (`root.folders`, each there and
/// none else), checks its fields (the command that makes a backup, `root`, roles a backup
/// holds and their first bytes) and finds each edit as a difference of its own kind.
#[test]
fn verify_checks_a_backups_folders_and_fields() -> TestResult {
    use crate::custody::{assert_each_found, edit_manifest, Tamper};
    let (src, to) = (
        Scratch::new("backup-verify-edits"),
        Scratch::new("backup-verify-edits-to"),
    );
    let store = src.path("store");
    for folder in ["index", "empty"] {
        std::fs::create_dir_all(store.join(folder))?;
    }
    std::fs::write(store.join("index/segment.bin"), b"derived index")?;
    std::fs::write(store.join("notes.txt"), b"not a database")?;
    drop(database(&store.join("data.db"), "delete", 3)?);
    // data.db, notes.txt, then index/segment.bin: the manifest's order.
    let set = |field: &'static str, to: serde_json::Value| -> Tamper {
        Box::new(move |b| edit_manifest(b, |m| m[field] = to.clone()))
    };
    let cases: Vec<(&str, Tamper)> = vec![
        (
            "unlisted_folder",
            Box::new(|b| edit_manifest(b, |m| m["root"]["folders"] = serde_json::json!(["index"]))),
        ),
        (
            "missing_folder",
            Box::new(|b| {
                edit_manifest(b, |m| {
                    m["root"]["folders"] = serde_json::json!(["empty", "ghost", "index"])
                })
            }),
        ),
        (
            "unlisted_folder",
            Box::new(|b| Ok(std::fs::create_dir(b.join("store/index/more"))?)),
        ),
        ("no_root", set("root", serde_json::Value::Null)),
        (
            "unknown_field",
            Box::new(|b| edit_manifest(b, |m| m["root"]["extra"] = true.into())),
        ),
        (
            "command_not_kind",
            Box::new(|b| edit_manifest(b, |m| m["command"][1] = "quarantine".into())),
        ),
        (
            "role_not_in_kind",
            Box::new(|b| edit_manifest(b, |m| m["files"][0]["role"] = "wal".into())),
        ),
        (
            "role_content",
            Box::new(|b| edit_manifest(b, |m| m["files"][1]["role"] = "database".into())),
        ),
        (
            "role_content",
            Box::new(|b| edit_manifest(b, |m| m["files"][0]["role"] = "other".into())),
        ),
    ];
    assert_each_found(&cases, |_| backup_ok(&store, &to.path(""), &[]))
}
