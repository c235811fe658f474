//! `salvage repair` at the edges: a database reached through a symbolic link, an
//! application that writes between two steps, a healthy WAL database, refusals that must
//! make nothing, paths that are a database's own, two repairs at once, a rollback that
//! must not empty the path, and what the report says after each. The rule throughout: no
//! committed row is ever absent from the path the application opens, by count and by
//! content.

use std::path::{Path, PathBuf};

use crate::custody::{
    assert_originals_kept, assert_path_consistent, canonical_rows, check, damaged_wal_store,
    originals, repair, sha256, Got,
};
use crate::{Scratch, TestResult};

/// A notes application's database in write-ahead-log mode at `path`, as the application
/// left it when it stopped: 300 notes in the main file, 40 more and an edit only in its
/// `-wal` (never checkpointed), page size 8192, `user_version` 7 and an `application_id`.
/// `damaged`: the full-text index over the notes has its last block garbled (SQLite's
/// integrity check fails, every note still reads, the application still writes): a
/// database to repair. Else healthy, with two notes whose folder was deleted (foreign
/// keys off, SQLite's default: legal).
fn notes_app(path: &Path, damaged: bool) -> Got<()> {
    let build = path.with_extension("build");
    std::fs::create_dir_all(&build)?;
    let db = build.join("notes.db");
    let conn = rusqlite::Connection::open(&db)?;
    conn.execute_batch(
        "PRAGMA foreign_keys = OFF;
         PRAGMA page_size = 8192;
         PRAGMA journal_mode = WAL;
         PRAGMA wal_autocheckpoint = 0;
         PRAGMA user_version = 7;
         PRAGMA application_id = 1313817409;
         CREATE TABLE folders(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
         CREATE TABLE notes(id INTEGER PRIMARY KEY, folder INTEGER REFERENCES folders(id), body TEXT);
         CREATE VIRTUAL TABLE notes_fts USING fts5(body, content='notes', content_rowid='id');
         INSERT INTO folders VALUES (1, 'inbox'), (2, 'work'), (3, 'gone');
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 300)
         INSERT INTO notes SELECT x, 1 + x % 3, 'note ' || x || ' about the garden and the sea' FROM i;
         INSERT INTO notes_fts(notes_fts) VALUES ('rebuild');
         DELETE FROM folders WHERE id = 3;
         PRAGMA wal_checkpoint(TRUNCATE);
         WITH RECURSIVE i(x) AS (SELECT 301 UNION ALL SELECT x + 1 FROM i WHERE x < 340)
         INSERT INTO notes SELECT x, 2, 'written only to the log ' || x FROM i;
         UPDATE notes SET body = 'edited in the log' WHERE id = 7;
         INSERT INTO notes_fts(notes_fts) VALUES ('rebuild');",
    )?;
    if damaged {
        let id: i64 = conn.query_row("SELECT max(id) FROM notes_fts_data", [], |r| r.get(0))?;
        let mut block: Vec<u8> = conn.query_row(
            "SELECT block FROM notes_fts_data WHERE id = ?1",
            [id],
            |r| r.get(0),
        )?;
        for b in block.iter_mut().skip(4).take(40) {
            *b ^= 0x5a;
        }
        conn.execute(
            "UPDATE notes_fts_data SET block = ?1 WHERE id = ?2",
            rusqlite::params![block, id],
        )?;
    }
    // The files as the application left them: copied while its connection is open, so
    // that the log is not checkpointed away on close.
    std::fs::copy(&db, path)?;
    std::fs::copy(build.join("notes.db-wal"), sidecar(path, "-wal"))?;
    drop(conn);
    std::fs::remove_dir_all(&build)?;
    Ok(())
}

/// `path` with `suffix` appended to its name.
fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    recovery::stages::paths::with_suffix(path, suffix)
}

/// The notes SQLite reads at `db` now, in order: (id, body). Read-only, as a reader
/// that leaves the log as it is (a connection that may write checkpoints the log into the
/// database when it closes).
fn notes(db: &Path) -> Got<Vec<(i64, String)>> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let rows = conn
        .prepare("SELECT id, body FROM notes ORDER BY id")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// Every file name in `dir`, sorted.
fn listing(dir: &Path) -> Got<Vec<String>> {
    let mut v: Vec<String> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()?;
    v.sort();
    Ok(v)
}

/// Names a repair makes beside a database, none of which may be left by a repair that
/// ended (rolled back, abandoned, done) or refused.
fn repair_leftovers(names: &[String]) -> Vec<&String> {
    names
        .iter()
        .filter(|n| {
            [
                ".salvage-new",
                ".salvage-old",
                ".salvage-restore",
                ".salvage-repair.json",
                ".salvage-repair.lock",
                ".incomplete",
            ]
            .iter()
            .any(|m| n.contains(m))
        })
        .collect()
}

/// A database reached through a symbolic link in another folder is repaired where it is:
/// its log, beside the file and not beside the link, is archived and recovered (every row
/// only the log holds is at the live path afterwards), the link stays a link to the
/// repaired file, and the report names both paths. `quarantine` and `recover` through the
/// link read the log too.
#[test]
fn a_database_reached_through_a_link_is_repaired_with_its_log() -> TestResult {
    let dir = Scratch::new("repair-link");
    std::fs::create_dir_all(dir.path("real"))?;
    std::fs::create_dir_all(dir.path("app"))?;
    let made = damaged_wal_store(&dir)?;
    let real = dir.path("real/state.db");
    for s in ["", "-wal", "-shm"] {
        std::fs::rename(sidecar(&made, s), sidecar(&real, s))?;
    }
    let link = dir.path("app/link.db");
    std::os::unix::fs::symlink("../real/state.db", &link)?;
    let expected = dir.path("expected.db");
    let by_file = crate::recover_expecting(&real, &expected, &["--allow-partial"], 3)?;
    assert!(by_file["wal"]["frames_committed"].as_u64() > Some(0));
    // recover and quarantine through the link read the same log.
    let through =
        crate::recover_expecting(&link, &dir.path("through.db"), &["--allow-partial"], 3)?;
    assert_eq!(through["wal"], by_file["wal"]);
    assert_eq!(through["tables"], by_file["tables"]);
    assert_eq!(
        through["run"]["source_link"].as_str(),
        Some(link.to_string_lossy().as_ref())
    );
    let (code, text, err) =
        crate::custody::run(&["inspect".as_ref(), link.as_os_str(), "--json".as_ref()])?;
    assert!(code == 0 || code == 3, "{err}");
    let inspected: serde_json::Value = serde_json::from_str(&text)?;
    assert!(
        inspected["sidecars"]["wal"]["frames_committed"].as_u64() > Some(0),
        "inspect reads the log beside the file: {}",
        inspected["sidecars"]
    );
    assert_eq!(
        inspected["run"]["source_link"].as_str(),
        Some(link.to_string_lossy().as_ref())
    );
    let bundle = dir.path("bundle");
    let manifest = recovery::bundle::make(&link, &bundle, "quarantine", &Default::default())?;
    let roles: Vec<&str> = manifest.files.iter().map(|f| f.role.as_str()).collect();
    assert_eq!(roles, ["database", "wal", "shm"]);
    let files = originals(&real)?;
    let (code, err) = repair(&link, &["--allow-partial"], None)?;
    assert_eq!(code, 3, "{err}");
    assert!(
        std::fs::symlink_metadata(&link)?.file_type().is_symlink(),
        "the link stays a link"
    );
    assert_eq!(std::fs::read_link(&link)?, Path::new("../real/state.db"));
    assert_eq!(
        listing(&dir.path("app"))?,
        ["link.db"],
        "nothing made beside the link"
    );
    assert_eq!(check(&link)?.0, "ok");
    assert_eq!(canonical_rows(&link)?, canonical_rows(&expected)?);
    let conn = rusqlite::Connection::open(&link)?;
    let from_log: i64 = conn.query_row(
        "SELECT count(*) FROM messages WHERE content LIKE 'written after the checkpoint: %'",
        [],
        |r| r.get(0),
    )?;
    assert!(
        from_log > 0,
        "the rows only the log held are at the live path"
    );
    assert_originals_kept(&real, &files)?;
    let names = listing(&dir.path("real"))?;
    let report_name = names
        .iter()
        .find(|n| n.ends_with(".report.json"))
        .ok_or("report")?;
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path("real").join(report_name))?)?;
    assert_eq!(
        report["run"]["repair"]["db_link"].as_str(),
        Some(link.to_string_lossy().as_ref())
    );
    assert_eq!(
        report["run"]["repair"]["db_path"].as_str(),
        Some(real.canonicalize()?.to_string_lossy().as_ref())
    );
    assert_eq!(report["repair"]["state"], "in_place");
    Ok(())
}

/// A repair stopped after `verified`, then the application commits a row: `--resume`
/// refuses, and so does `--rollback`, which leaves the application's file and its log in
/// place and says what each file is; `--abandon` ends the repair without touching them
/// and removes what the repair made; a new repair then repairs the newer file, the row
/// included. The committed row is at the live path at every step.
#[test]
fn a_rollback_never_replaces_what_the_application_wrote() -> TestResult {
    let dir = Scratch::new("repair-app-wrote");
    let db = dir.path("notes.db");
    notes_app(&db, true)?;
    let (code, err) = repair(&db, &[], Some("verified"))?;
    assert_eq!(code, 99, "{err}");
    {
        let conn = rusqlite::Connection::open(&db)?;
        conn.execute(
            "INSERT INTO notes VALUES (1000, 1, 'the application wrote this')",
            [],
        )?;
    }
    let written = notes(&db)?;
    assert!(written.contains(&(1000, "the application wrote this".into())));
    let (code, err) = repair(&db, &["--resume"], None)?;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("changed since the repair read"), "{err}");
    let before = (sha256(&db)?, sha256(&sidecar(&db, "-wal"))?);
    let (code, err) = repair(&db, &["--rollback"], None)?;
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("neither the original") && err.contains("--abandon"),
        "{err}"
    );
    assert_eq!(
        (sha256(&db)?, sha256(&sidecar(&db, "-wal"))?),
        before,
        "left in place"
    );
    assert_eq!(notes(&db)?, written);
    let (code, err) = repair(&db, &["--abandon"], None)?;
    assert_eq!(code, 0, "{err}");
    assert_eq!(notes(&db)?, written);
    let names = listing(dir.path("").as_path())?;
    assert!(repair_leftovers(&names).is_empty(), "{names:?}");
    // The newer file is still damaged: repaired, the application's row kept.
    let (code, err) = repair(&db, &[], None)?;
    assert_eq!(code, 0, "{err}");
    assert_eq!(notes(&db)?, written);
    Ok(())
}

/// The same after the repair put its recovery in place (a stop at `done`) and the
/// application wrote to it: `--rollback` refuses and leaves it.
#[test]
fn a_rollback_after_the_application_wrote_to_the_recovery_refuses() -> TestResult {
    let dir = Scratch::new("repair-app-wrote-done");
    let db = dir.path("notes.db");
    notes_app(&db, true)?;
    let (code, err) = repair(&db, &[], Some("done"))?;
    assert_eq!(code, 99, "{err}");
    {
        let conn = rusqlite::Connection::open(&db)?;
        conn.execute_batch("PRAGMA wal_autocheckpoint = 0")?;
        conn.execute(
            "INSERT INTO notes VALUES (1000, 1, 'written to the recovery')",
            [],
        )?;
        let (code, err) = repair(&db, &["--rollback"], None)?;
        assert_eq!(code, 2, "{err}");
    }
    let written = notes(&db)?;
    assert!(written.contains(&(1000, "written to the recovery".into())));
    let (code, err) = repair(&db, &["--rollback"], None)?;
    assert_eq!(code, 2, "{err}");
    assert_eq!(notes(&db)?, written);
    let (code, err) = repair(&db, &["--abandon"], None)?;
    assert_eq!(code, 0, "{err}");
    assert_eq!(notes(&db)?, written);
    Ok(())
}

/// A healthy WAL database, stopped with its log not checkpointed and with notes whose
/// folder was deleted, is left as it is: exit 0, nothing made or moved, the log still
/// beside it. A damaged one is repaired into a file that keeps its WAL mode, page size,
/// `user_version` and `application_id`, every row SQLite read before included.
#[test]
fn a_healthy_wal_database_is_left_alone_and_a_repaired_one_keeps_its_header() -> TestResult {
    let dir = Scratch::new("repair-wal-healthy");
    let db = dir.path("notes.db");
    notes_app(&db, false)?;
    // Read once as the application would: that makes its -shm, the state it leaves.
    let rows = notes(&db)?;
    assert!(
        sidecar(&db, "-wal").metadata()?.len() > 0,
        "the log is not checkpointed"
    );
    let before = (listing(dir.path("").as_path())?, originals(&db)?);
    let (code, err) = repair(&db, &[], None)?;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("healthy"), "{err}");
    assert_eq!(
        (listing(dir.path("").as_path())?, originals(&db)?),
        (before.0, before.1),
        "nothing made or moved"
    );
    assert_eq!(notes(&db)?, rows);

    let damaged = dir.path("damaged/notes.db");
    std::fs::create_dir_all(dir.path("damaged"))?;
    notes_app(&damaged, true)?;
    let rows = notes(&damaged)?;
    let (code, err) = repair(&damaged, &[], None)?;
    assert_eq!(code, 0, "{err}");
    assert_eq!(notes(&damaged)?, rows);
    let conn = rusqlite::Connection::open(&damaged)?;
    let header: (String, i64, i64, i64) = conn.query_row(
        "SELECT (SELECT journal_mode FROM pragma_journal_mode), (SELECT page_size FROM pragma_page_size),
                (SELECT user_version FROM pragma_user_version), (SELECT application_id FROM pragma_application_id)",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    )?;
    assert_eq!(header, ("wal".into(), 8192, 7, 1313817409));
    let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    assert_eq!(ok, "ok");
    Ok(())
}

/// A file that is not a database (text, random bytes, an empty file) is refused with exit
/// 2 by the path given, and the refusal makes nothing: no archive, no journal, no lock.
#[test]
fn a_refused_repair_makes_nothing() -> TestResult {
    let dir = Scratch::new("repair-refusals");
    std::fs::write(dir.path("text.txt"), "a shopping list\nbread\n")?;
    let noise: Vec<u8> = (0..20_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(dir.path("noise.bin"), noise)?;
    std::fs::write(dir.path("empty.db"), b"")?;
    let before = dir.listing();
    // A 0-byte file is an empty database to SQLite: healthy, nothing to repair, nothing
    // moved.
    let (code, err) = repair(&dir.path("empty.db"), &[], None)?;
    assert_eq!(code, 0, "{err}");
    assert_eq!(dir.listing(), before);
    for name in ["text.txt", "noise.bin", "missing.db"] {
        let (code, err) = repair(&dir.path(name), &[], None)?;
        assert_eq!(code, 2, "{name}: {err}");
        assert!(err.contains(name) && err.contains("hint:"), "{name}: {err}");
        assert_eq!(dir.listing(), before, "{name}");
        // Nothing left blocks the next attempt either.
        let (code, _) = repair(&dir.path(name), &[], None)?;
        assert_eq!(code, 2, "{name}");
    }
    Ok(())
}

/// `--archive` naming one of the database's own files (its `-journal`, `-wal`, `-shm`)
/// or one of the repair's (the shadow, the journal), and `quarantine --to` naming a
/// sidecar, are refused with exit 2 before anything exists: no folder appears where
/// SQLite looks for a journal, and the database still opens.
#[test]
fn an_archive_at_a_database_s_own_file_is_refused() -> TestResult {
    let dir = Scratch::new("repair-archive-paths");
    let db = dir.path("notes.db");
    notes_app(&db, true)?;
    let before = dir.listing();
    let rows = notes(&db)?;
    let before = (dir.listing(), before);
    for archive in [
        "notes.db-journal",
        "notes.db-wal",
        "notes.db-shm",
        "notes.db.salvage-new",
        "notes.db.salvage-new.incomplete",
        "notes.db.salvage-repair.json",
        "notes.db.salvage-repair.lock",
        "notes.db.salvage-old-wal",
    ] {
        let target = dir.path(archive);
        let (code, err) = repair(&db, &["--archive", &target.to_string_lossy()], None)?;
        assert_eq!(code, 2, "{archive}: {err}");
        assert_eq!(dir.listing(), before.0, "{archive}");
        assert_eq!(notes(&db)?, rows, "{archive}");
    }
    for to in ["notes.db-journal", "notes.db-wal"] {
        let (code, _, err) = crate::custody::run(&[
            "quarantine".as_ref(),
            db.as_os_str(),
            "--to".as_ref(),
            dir.path(to).as_os_str(),
        ])?;
        assert_eq!(code, 2, "{to}: {err}");
        assert_eq!(dir.listing(), before.0, "{to}");
    }
    Ok(())
}

/// While another repair of the same database holds its claim, a second one is refused
/// with exit 2, naming the process, and makes nothing; once the claim is let go, a
/// repair runs.
#[test]
fn a_second_repair_of_the_same_database_is_refused() -> TestResult {
    let dir = Scratch::new("repair-twice");
    let db = dir.path("notes.db");
    notes_app(&db, true)?;
    let lock = dir.path("notes.db.salvage-repair.lock");
    let held = std::fs::File::create(&lock)?;
    rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive)?;
    std::fs::write(&lock, std::process::id().to_string())?;
    let before = dir.listing();
    let (code, err) = repair(&db, &[], None)?;
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("another `salvage repair`") && err.contains(&std::process::id().to_string()),
        "{err}"
    );
    assert_eq!(dir.listing(), before);
    drop(held);
    let (code, err) = repair(&db, &[], None)?;
    assert_eq!(code, 0, "{err}");
    assert!(!lock.exists(), "the claim goes with the run");
    Ok(())
}

/// A write that fails partway (here the file-size limit, as a full device would) ends
/// the repair with exit 1 and a message naming the file it was writing, the phase, the
/// journal and what to run next; `--rollback` then ends it and leaves nothing.
#[test]
fn a_failed_write_names_the_file_the_journal_and_the_next_step() -> TestResult {
    let dir = Scratch::new("repair-full");
    let db = dir.path("state.db");
    fixtures::write_agent_store(&db, 4 << 20, 7)?;
    let mut bytes = std::fs::read(&db)?;
    fixtures::apply(&mut bytes, &fixtures::Damage::ZeroPage(5))?;
    std::fs::write(&db, &bytes)?;
    let before = dir.listing();
    // Files limited to 1 MiB: the recovery's output fails partway.
    let out = crate::custody::salvage_with_file_limit(2048)
        .arg("repair")
        .arg(&db)
        .env_remove("SALVAGE_FAULT_AT")
        .output()?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("state.db.salvage-new"),
        "names the file: {err}"
    );
    assert!(
        err.contains("salvage-repair.json"),
        "names the journal: {err}"
    );
    assert!(
        err.contains("--resume") && err.contains("--rollback"),
        "{err}"
    );
    {
        use sha2::Digest as _;
        let hex: String = sha2::Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(sha256(&db)?, hex, "the database untouched");
    }
    let (code, err) = repair(&db, &["--rollback"], None)?;
    assert_eq!(code, 0, "{err}");
    assert_eq!(dir.listing(), before);
    Ok(())
}

/// A rollback from `done` puts the original back by exchanging the two paths: a watcher
/// polling the database's path never finds it missing, and a `DB.salvage-repaired` that
/// was there is not written over. What the repair made is removed.
#[test]
fn a_rollback_from_done_never_empties_the_path() -> TestResult {
    let dir = Scratch::new("repair-rollback-done");
    let db = damaged_wal_store(&dir)?;
    let files = originals(&db)?;
    let (code, err) = repair(&db, &["--allow-partial"], Some("done"))?;
    assert_eq!(code, 99, "{err}");
    let bystander = dir.path("state.db.salvage-repaired");
    std::fs::write(&bystander, b"someone else's file")?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut missing = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if std::fs::symlink_metadata(&db).is_err() {
                    missing += 1;
                }
            }
            missing
        })
    };
    let (code, err) = repair(&db, &["--rollback"], None)?;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let missing = watcher.join().map_err(|_| "watcher")?;
    assert_eq!(code, 0, "{err}");
    assert_eq!(missing, 0, "the path was empty during the rollback");
    assert_eq!(
        originals(&db)?,
        files,
        "the original back, with its sidecars"
    );
    assert_eq!(std::fs::read(&bystander)?, b"someone else's file");
    std::fs::remove_file(&bystander)?;
    let names = dir.listing();
    assert!(repair_leftovers(&names).is_empty(), "{names:?}");
    Ok(())
}

/// After `--resume --allow-partial` the report says what the repair did (put in place,
/// accepted by the repair's command line) and gives the repair's own next step, never
/// `salvage commit` of a file that is gone; a withheld repair's report names
/// `--resume --allow-partial` and `--rollback`.
#[test]
fn a_repair_s_report_says_what_the_repair_did() -> TestResult {
    let dir = Scratch::new("repair-report");
    let db = damaged_wal_store(&dir)?;
    let (code, err) = repair(&db, &[], None)?;
    assert_eq!(code, 4, "{err}");
    let report_path = dir
        .listing()
        .into_iter()
        .find(|n| n.ends_with(".report.json"))
        .map(|n| dir.path(&n))
        .ok_or("report")?;
    let render = |path: &Path| -> Got<String> {
        let (_, text, err) = crate::custody::run(&["report".as_ref(), path.as_os_str()])?;
        Ok(format!("{text}{err}"))
    };
    let withheld = render(&report_path)?;
    assert!(!withheld.contains("salvage commit"), "{withheld}");
    assert!(
        withheld.contains("--resume --allow-partial") && withheld.contains("--rollback"),
        "{withheld}"
    );
    let (code, err) = repair(&db, &["--resume", "--allow-partial"], None)?;
    assert_eq!(code, 3, "{err}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report_path)?)?;
    assert_eq!(report["repair"]["state"], "in_place");
    assert_eq!(report["output"]["committed"], true);
    let accepted: Vec<&str> = report["output"]["accepted"]["command_line"]
        .as_array()
        .ok_or("accepted")?
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert!(
        accepted.contains(&"repair") && accepted.contains(&"--resume"),
        "{accepted:?}"
    );
    assert_eq!(
        report["repair"]["sha256_in_place"].as_str(),
        Some(sha256(&db)?.as_str())
    );
    let done = render(&report_path)?;
    assert!(
        !done.contains("salvage commit") && !done.contains("not committed"),
        "{done}"
    );
    assert!(done.contains("put in place"), "{done}");
    Ok(())
}

/// A rollback from every phase leaves nothing of the repair's own beside the database
/// (its report stays; the archive the original was filed into goes once the original is
/// back, no second name of it left behind), so the next repair starts.
#[test]
fn a_rollback_removes_what_the_repair_made() -> TestResult {
    for phase in ["recovered", "verified", "fenced", "swapped", "filed"] {
        let dir = Scratch::new(&format!("repair-rollback-clean-{phase}"));
        let db = damaged_wal_store(&dir)?;
        let files = originals(&db)?;
        let (code, err) = repair(&db, &["--allow-partial"], Some(phase))?;
        assert_eq!(code, 99, "{phase}: {err}");
        assert_path_consistent(&db, &files, phase)?;
        let (code, err) = repair(&db, &["--rollback"], None)?;
        assert_eq!(code, 0, "{phase}: {err}");
        assert_eq!(originals(&db)?, files, "{phase}");
        let names = dir.listing();
        assert!(repair_leftovers(&names).is_empty(), "{phase}: {names:?}");
        let (code, err) = repair(&db, &[], None)?;
        assert_eq!(
            code, 4,
            "{phase}: the next repair starts (and is withheld): {err}"
        );
    }
    let dir = Scratch::new("repair-rollback-clean-withheld");
    let db = damaged_wal_store(&dir)?;
    assert_eq!(repair(&db, &[], None)?.0, 4);
    let (code, err) = repair(&db, &["--rollback"], None)?;
    assert_eq!(code, 0, "{err}");
    let names = dir.listing();
    assert!(repair_leftovers(&names).is_empty(), "withheld: {names:?}");
    assert_eq!(repair(&db, &[], None)?.0, 4);
    Ok(())
}

/// `restore` refused because the application still holds the database says to run the
/// restore again, not the repair (the refusal is shared by both commands).
#[test]
fn the_in_use_hint_names_no_other_command() -> TestResult {
    let dir = Scratch::new("repair-in-use-hint");
    let db = dir.path("notes.db");
    notes_app(&db, false)?;
    notes(&db)?; // opened once, as by its application: its -shm is made
    std::fs::create_dir_all(dir.path("backups"))?;
    let (code, out, err) = crate::custody::run(&[
        "backup".as_ref(),
        db.as_os_str(),
        "--to".as_ref(),
        dir.path("backups").as_os_str(),
    ])?;
    assert_eq!(code, 0, "{err}");
    let made = listing(&dir.path("backups"))?
        .into_iter()
        .next()
        .ok_or(format!("no backup: {out}"))?;
    let conn = rusqlite::Connection::open(&db)?;
    conn.execute_batch("BEGIN IMMEDIATE")?;
    for args in [
        vec![
            "restore".into(),
            dir.path("backups").join(&made).into_os_string(),
            db.clone().into_os_string(),
        ],
        vec!["repair".into(), db.clone().into_os_string()],
    ] {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let (code, _, err) = crate::custody::run(&args)?;
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains("in use") && !err.contains("the repair again"),
            "{err}"
        );
    }
    conn.execute_batch("ROLLBACK")?;
    Ok(())
}

/// Placeholder parents go into the database the application will use only when
/// `--placeholders` asks for them: without it, every child is kept with its reference,
/// no made-up row is written, and the loss is reported (exit 3 with `--allow-partial`).
#[test]
fn placeholders_go_into_a_live_database_only_when_asked() -> TestResult {
    let fixture = fixtures::build(fixtures::Kind::AgentStore, &fixtures::Options::default());
    let mut bytes = fixture.bytes.clone();
    fixtures::apply(
        &mut bytes,
        &fixtures::Damage::ZeroPage(fixture.roots["sessions"]),
    )?;
    let count = |db: &Path, sql: &str| -> Got<i64> {
        let conn = rusqlite::Connection::open(db)?;
        Ok(conn.query_row(sql, [], |r| r.get(0))?)
    };
    let registry = "SELECT count(*) FROM sqlite_schema WHERE name = 'salvage_placeholders'";
    for asked in [false, true] {
        let dir = Scratch::new(&format!("repair-placeholders-{asked}"));
        let db = dir.path("state.db");
        std::fs::write(&db, &bytes)?;
        let mut args = vec!["--allow-partial"];
        if asked {
            args.push("--placeholders");
        }
        let (code, err) = repair(&db, &args, None)?;
        assert_eq!(code, 3, "{err}");
        let messages = count(&db, "SELECT count(*) FROM messages")?;
        assert!(messages > 0, "every child kept");
        if asked {
            assert_eq!(count(&db, registry)?, 1);
            assert!(count(&db, "SELECT count(*) FROM sessions")? > 0);
        } else {
            assert_eq!(
                count(&db, registry)?,
                0,
                "no made-up row in the live database"
            );
            assert_eq!(count(&db, "SELECT count(*) FROM sessions")?, 0);
            let report = dir
                .listing()
                .into_iter()
                .find(|n| n.ends_with(".report.json"))
                .ok_or("report")?;
            let report: serde_json::Value =
                serde_json::from_slice(&std::fs::read(dir.path(&report))?)?;
            let kinds: Vec<&str> = report["evidence"]["signals"]
                .as_array()
                .ok_or("signals")?
                .iter()
                .filter_map(|s| s["kind"].as_str())
                .collect();
            assert!(kinds.contains(&"parents_not_rebuilt"), "{kinds:?}");
        }
    }
    Ok(())
}

/// A database that changes while `quarantine` copies it, or while a repair's recovery
/// reads it (an application writing to it), is refused with exit 2, and the refusal
/// leaves nothing: no partial copy, no recovery, no report, no journal.
#[test]
fn a_database_written_to_while_it_is_read_is_refused_leaving_nothing() -> TestResult {
    let dir = Scratch::new("repair-written-while-copied");
    let db = dir.path("state.db");
    fixtures::write_agent_store(&db, 16 << 20, 7)?;
    let mut bytes = std::fs::read(&db)?;
    fixtures::apply(&mut bytes, &fixtures::Damage::ZeroPage(5))?;
    std::fs::write(&db, &bytes)?;
    let before = dir.listing();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // The writer rewrites the last page over and over with a counter.
    let writer = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || -> std::io::Result<()> {
            use std::os::unix::fs::FileExt as _;
            let file = std::fs::OpenOptions::new().write(true).open(&db)?;
            let at = file.metadata()?.len() - 4096;
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                n += 1;
                file.write_all_at(&n.to_le_bytes(), at + (n % 500) * 8)?;
            }
            Ok(())
        })
    };
    let quarantined = crate::custody::run(&[
        "quarantine".as_ref(),
        db.as_os_str(),
        "--to".as_ref(),
        dir.path("case").as_os_str(),
    ]);
    let repaired = repair(&db, &[], None);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().map_err(|_| "writer")??;
    let (code, _, err) = quarantined?;
    assert_eq!(code, 2, "quarantine: {err}");
    assert!(err.contains("changed while it was copied"), "{err}");
    let (code, err) = repaired?;
    assert_eq!(code, 2, "repair: {err}");
    assert!(err.contains("changed while the repair read it"), "{err}");
    assert!(
        !err.contains("--resume") && !err.contains("stays recorded"),
        "nothing is recorded to go on from: {err}"
    );
    assert_eq!(dir.listing(), before, "the refusals left nothing");
    Ok(())
}

/// The notes application's damaged database as it is when the application closed it
/// cleanly: in WAL mode, its log checkpointed into it and removed (no `-wal` beside it).
fn notes_app_closed(path: &Path) -> Got<()> {
    notes_app(path, true)?;
    let conn = rusqlite::Connection::open(path)?;
    let _: i64 = conn.query_row("SELECT count(*) FROM notes", [], |r| r.get(0))?;
    conn.close().map_err(|(_, e)| e)?;
    assert!(!sidecar(path, "-wal").exists(), "closed cleanly: no log");
    Ok(())
}

/// An application's write that leaves its log beside the database (a process that ends
/// without closing: the log is not checkpointed into the file), as a crash would.
fn write_and_leave_the_log(db: &Path, sql: &str) -> Got<()> {
    let conn = rusqlite::Connection::open(db)?;
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    )?;
    conn.execute_batch(sql)?;
    conn.close().map_err(|(_, e)| e)?;
    Ok(())
}

/// A crash at `fenced` of a WAL database that had no log (closed cleanly): both logs'
/// names are fenced all the same, so an application that opens the database then cannot
/// (rather than write a log beside a file about to be replaced); and when the fences are
/// taken away and the application writes a log, `--resume` refuses to swap (the swap
/// would put the recovery beside that log, the rows only it holds lost), `--rollback`
/// refuses too, and `--abandon` leaves the application's state where it finds it.
#[test]
fn a_database_without_a_log_is_fenced_all_the_same() -> TestResult {
    let dir = Scratch::new("repair-fence-no-log");
    let db = dir.path("notes.db");
    notes_app_closed(&db)?;
    let (code, err) = repair(&db, &[], Some("fenced"))?;
    assert_eq!(code, 99, "{err}");
    for s in ["-wal", "-journal"] {
        assert!(sidecar(&db, s).is_dir(), "{s} is fenced");
    }
    assert!(
        write_and_leave_the_log(&db, "INSERT INTO notes VALUES (9001, 1, 'blocked')").is_err(),
        "SQLite cannot open a fenced database"
    );
    // Someone takes the fences away, and the application writes.
    for s in ["-wal", "-journal"] {
        std::fs::remove_dir(sidecar(&db, s))?;
    }
    write_and_leave_the_log(
        &db,
        "INSERT INTO notes VALUES (9001, 1, 'written after the crash')",
    )?;
    assert!(
        sidecar(&db, "-wal").metadata()?.len() > 0,
        "the application's log"
    );
    let written = notes(&db)?;
    assert!(written.contains(&(9001, "written after the crash".into())));
    let files = (sha256(&db)?, sha256(&sidecar(&db, "-wal"))?);
    let (code, err) = repair(&db, &["--resume"], None)?;
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        (sha256(&db)?, sha256(&sidecar(&db, "-wal"))?),
        files,
        "the resume swapped nothing"
    );
    assert_eq!(notes(&db)?, written);
    let (code, err) = repair(&db, &["--rollback"], None)?;
    assert_eq!(code, 2, "{err}");
    let (code, err) = repair(&db, &["--abandon"], None)?;
    assert_eq!(code, 0, "{err}");
    assert_eq!(notes(&db)?, written);
    Ok(())
}

/// The rollback's refusal says to move the application's database away to put the
/// original back anyway; done, `--rollback` finds the repair's journal beside where the
/// database was and puts the original back onto the empty path.
#[test]
fn a_rollback_puts_the_original_back_where_the_database_was_moved_away() -> TestResult {
    let dir = Scratch::new("repair-rollback-moved");
    let db = damaged_wal_store(&dir)?;
    let files = originals(&db)?;
    let (code, err) = repair(&db, &["--allow-partial"], Some("done"))?;
    assert_eq!(code, 99, "{err}");
    {
        let conn = rusqlite::Connection::open(&db)?;
        conn.execute(
            "UPDATE sessions SET title = 'the application wrote' WHERE rowid = 1",
            [],
        )?;
    }
    let (code, err) = repair(&db, &["--rollback"], None)?;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("move"), "{err}");
    std::fs::create_dir(dir.path("kept"))?;
    for s in ["", "-wal", "-shm"] {
        let from = sidecar(&db, s);
        if from.exists() {
            std::fs::rename(&from, dir.path(&format!("kept/state.db{s}")))?;
        }
    }
    let (code, err) = repair(&db, &["--rollback"], None)?;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        originals(&db)?,
        files,
        "the original back, with its sidecars"
    );
    Ok(())
}

/// A repair stopped partway by a refusal (here the application holds the database open
/// when the switch begins) stays recorded: exit 2, and the message names the phase, the
/// journal and every way on; once the application lets go, `--resume` finishes it.
#[test]
fn a_refusal_partway_says_how_the_recorded_repair_goes_on() -> TestResult {
    let dir = Scratch::new("repair-refused-partway");
    let db = dir.path("notes.db");
    notes_app(&db, true)?;
    let (code, err) = repair(&db, &[], Some("verified"))?;
    assert_eq!(code, 99, "{err}");
    let reader =
        rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    reader.execute_batch("BEGIN")?;
    let _: i64 = reader.query_row("SELECT count(*) FROM notes", [], |r| r.get(0))?;
    let (code, err) = repair(&db, &["--resume"], None)?;
    assert_eq!(code, 2, "{err}");
    for said in [
        "in use",
        "verified",
        "salvage-repair.json",
        "--resume",
        "--rollback",
        "--abandon",
    ] {
        assert!(err.contains(said), "no {said}: {err}");
    }
    assert!(!err.contains("run the command again"), "{err}");
    reader.execute_batch("COMMIT")?;
    drop(reader);
    let (code, err) = repair(&db, &["--resume"], None)?;
    assert_eq!(code, 0, "{err}");
    Ok(())
}

/// A symbolic link at the name of the repair's claim is never followed: the repair is
/// refused, and the file it points to and the link are as they were.
#[test]
fn a_link_at_the_claim_s_name_is_never_followed() -> TestResult {
    let dir = Scratch::new("repair-claim-link");
    let db = dir.path("notes.db");
    notes_app(&db, true)?;
    std::fs::write(dir.path("victim.txt"), b"important contents")?;
    std::os::unix::fs::symlink("victim.txt", dir.path("notes.db.salvage-repair.lock"))?;
    let before = dir.listing();
    let (code, err) = repair(&db, &[], None)?;
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        std::fs::read(dir.path("victim.txt"))?,
        b"important contents"
    );
    assert_eq!(dir.listing(), before);
    Ok(())
}

/// Evidence dated before 1970 (a wrong clock, a tool that zeroed the time) is copied,
/// verified and repaired like any other: no panic, the time kept and compared.
#[test]
fn a_database_dated_before_1970_is_quarantined_and_repaired() -> TestResult {
    let dir = Scratch::new("repair-1965");
    let db = damaged_wal_store(&dir)?;
    let then = std::time::UNIX_EPOCH - std::time::Duration::from_secs(157_766_400);
    for s in ["", "-wal", "-shm"] {
        std::fs::File::options()
            .write(true)
            .open(sidecar(&db, s))?
            .set_modified(then)?;
    }
    let bundle = dir.path("case");
    let (code, out, err) = crate::custody::run(&[
        "quarantine".as_ref(),
        db.as_os_str(),
        "--to".as_ref(),
        bundle.as_os_str(),
    ])?;
    assert_eq!(code, 0, "{err}");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(bundle.join("MANIFEST.json"))?)?;
    assert_eq!(
        manifest["files"][0]["mtime_utc"], "1965-01-01T00:00:00Z",
        "{out}"
    );
    let (code, out, err) = crate::custody::run(&["verify".as_ref(), bundle.as_os_str()])?;
    assert_eq!(code, 0, "{out}{err}");
    let (code, err) = repair(&db, &["--allow-partial"], None)?;
    assert_eq!(code, 3, "{err}");
    Ok(())
}

/// While a repair is withheld, a file a person put at one of the repair's names (as the
/// refusals suggest moving files away) is not the repair's: `--rollback` removes only
/// what it can prove it made.
#[test]
fn a_rollback_removes_only_what_it_proves_it_made() -> TestResult {
    let dir = Scratch::new("repair-rollback-proof");
    let db = damaged_wal_store(&dir)?;
    assert_eq!(repair(&db, &[], None)?.0, 4);
    let put = dir.path("state.db.salvage-old-wal");
    std::fs::write(&put, b"a person's file")?;
    let (code, err) = repair(&db, &["--rollback"], None)?;
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read(&put)?, b"a person's file");
    assert!(
        !dir.path("state.db.salvage-new.incomplete").exists(),
        "the repair's own is gone"
    );
    Ok(())
}

/// A quarantine of damaged evidence verifies intact: a database whose header is wiped is
/// still the database (the hashes prove the bytes). A file of the bundle given a second
/// name (a hard link, where a file from outside could be put) is a difference.
#[test]
fn verify_keeps_damaged_evidence_intact_and_finds_a_second_name() -> TestResult {
    let dir = Scratch::new("repair-verify-damaged");
    let db = damaged_wal_store(&dir)?;
    let mut bytes = std::fs::read(&db)?;
    bytes[..16].fill(0);
    std::fs::write(&db, &bytes)?;
    let bundle = dir.path("case");
    let manifest = recovery::bundle::make(&db, &bundle, "quarantine", &Default::default())?;
    let v = recovery::bundle::verify(&bundle)?;
    assert!(v.intact(), "{:?}", v.differences);
    let name = &manifest.files[0].path;
    std::fs::hard_link(bundle.join(name), dir.path("second-name"))?;
    let (code, out, _) =
        crate::custody::run(&["verify".as_ref(), bundle.as_os_str(), "--json".as_ref()])?;
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("\"hard_linked\""), "{out}");
    Ok(())
}

/// An original last written before the repair's recovery read it (here, more than the
/// few seconds a file system's clock may hide a write in) is proved unchanged at the
/// switch by what the file system says of it, without reading it again: the journal
/// records its stamp and its BLAKE3. A stamp that moved has the file read once: one
/// written after the recovery with its modification time put back (its change time
/// moved) is refused, its bytes left as the writer left them; one only made read-only and
/// back is the same bytes, and the repair goes on.
#[test]
fn a_settled_original_is_checked_by_its_stamp_and_read_once_when_it_moves() -> TestResult {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = Scratch::new("repair-stamp");
    let (written, chmodded) = (dir.path("written.db"), dir.path("chmodded.db"));
    for (db, size) in [(&written, 48 << 20), (&chmodded, 4 << 20)] {
        fixtures::write_agent_store(db, size, 7)?;
        let mut bytes = std::fs::read(db)?;
        fixtures::apply(&mut bytes, &fixtures::Damage::ZeroPage(5))?;
        std::fs::write(db, &bytes)?;
    }
    std::thread::sleep(std::time::Duration::from_millis(3_500));

    // Written once the recovery has read it, its modification time put back as a
    // careless tool would.
    let (code, err) = repair(&written, &["--allow-partial"], Some("recovered"))?;
    assert_eq!(code, 99, "{err}");
    {
        use std::os::unix::fs::FileExt as _;
        let modified = std::fs::metadata(&written)?.modified()?;
        let file = std::fs::OpenOptions::new().write(true).open(&written)?;
        file.write_all_at(b"written after the archive", 8192 * 3 + 100)?;
        file.set_modified(modified)?;
        assert_eq!(
            std::fs::metadata(&written)?.modified()?,
            modified,
            "the time was put back"
        );
    }
    let (code, err) = repair(&written, &["--resume"], None)?;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("changed since the repair read"), "{err}");
    let bytes = std::fs::read(&written)?;
    assert_eq!(
        bytes.get(8192 * 3 + 100..8192 * 3 + 125),
        Some(&b"written after the archive"[..]),
        "the writer's bytes left in place"
    );

    let (code, err) = repair(&chmodded, &["--allow-partial"], Some("verified"))?;
    assert_eq!(code, 99, "{err}");
    let recorded: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sidecar(&chmodded, ".salvage-repair.json"))?)?;
    let seen = &recorded["seen"][0];
    assert_eq!(seen["role"], "database", "{recorded}");
    assert_eq!(
        seen["blake3"].as_str().map(str::len),
        Some(64),
        "{recorded}"
    );
    let mode = std::fs::metadata(&chmodded)?.permissions().mode();
    std::fs::set_permissions(&chmodded, std::fs::Permissions::from_mode(0o400))?;
    std::fs::set_permissions(&chmodded, std::fs::Permissions::from_mode(mode))?;
    let (code, err) = repair(&chmodded, &["--resume"], None)?;
    assert_eq!(code, 3, "{err}");
    assert!(
        !sidecar(&chmodded, ".salvage-repair.json").exists(),
        "{err}"
    );
    Ok(())
}

/// The bytes `salvage repair DB --rollback` read through the kernel's read calls
/// (`rchar` of a shell, which counts its reaped child's), and the rollback's exit code.
fn rollback_reading(db: &Path) -> Got<(i32, u64)> {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(
            r#""$0" repair "$1" --rollback >/dev/null 2>&1; echo "$?"; grep '^rchar:' /proc/$$/io"#,
        )
        .arg(env!("CARGO_BIN_EXE_salvage"))
        .arg(db)
        .env_remove("SALVAGE_FAULT_AT")
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let code = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or("no exit code")?;
    let read = lines
        .next()
        .and_then(|l| l.strip_prefix("rchar:"))
        .and_then(|n| n.trim().parse().ok())
        .ok_or("no rchar")?;
    Ok((code, read))
}

/// The rollback of a withheld repair proves the database at its path the original by the
/// stamp the recovery's read recorded (settled before it), without reading the file again
/// (a 20 GB store took 25 s to hash); one whose stamp moved since (a `chmod`) is read
/// and compared, and put back all the same.
#[test]
fn a_withheld_rollback_knows_a_settled_original_by_its_stamp() -> TestResult {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = Scratch::new("repair-rollback-stamp");
    let (settled, touched) = (dir.path("settled.db"), dir.path("touched.db"));
    let size = 32 << 20;
    for db in [&settled, &touched] {
        fixtures::write_agent_store(db, size, 7)?;
        let mut bytes = std::fs::read(db)?;
        fixtures::apply(&mut bytes, &fixtures::Damage::ZeroPage(5))?;
        std::fs::write(db, &bytes)?;
    }
    std::thread::sleep(std::time::Duration::from_millis(3_500));
    for db in [&settled, &touched] {
        let before = sha256(db)?;
        let (code, err) = repair(db, &[], None)?;
        assert_eq!(code, 4, "withheld for its loss: {err}");
        if db == &touched {
            let mode = std::fs::metadata(db)?.permissions().mode();
            std::fs::set_permissions(db, std::fs::Permissions::from_mode(0o400))?;
            std::fs::set_permissions(db, std::fs::Permissions::from_mode(mode))?;
        }
        let (code, read) = rollback_reading(db)?;
        assert_eq!(code, 0, "{}", db.display());
        assert_eq!(sha256(db)?, before, "{}", db.display());
        assert!(
            !sidecar(db, ".salvage-repair.json").exists(),
            "{}",
            db.display()
        );
        let whole = std::fs::metadata(db)?.len();
        match db == &settled {
            true => assert!(read < whole / 4, "read {read} bytes of {whole}"),
            false => assert!(read >= whole, "read {read} bytes of {whole}"),
        }
    }
    Ok(())
}

/// A database whose rows fail a CHECK constraint as the file holds them (written with the
/// checks off) is repaired into one holding the same rows: the recovery names them and
/// loses nothing (it was withheld as loss before, exit 4), also when the repair is
/// resumed after a stop and checks the recovery itself.
#[test]
fn a_database_with_rows_failing_a_check_is_repaired_with_them() -> TestResult {
    let dir = Scratch::new("repair-check");
    let db = dir.path("checked.db");
    let rows = |db: &Path| -> rusqlite::Result<Vec<(i64, i64)>> {
        let conn = rusqlite::Connection::open(db)?;
        let mut stmt = conn.prepare("SELECT id, n FROM t ORDER BY id")?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect();
        rows
    };
    {
        let conn = rusqlite::Connection::open(&db)?;
        conn.execute_batch(
            "PRAGMA ignore_check_constraints = 1;
             CREATE TABLE t(id INTEGER PRIMARY KEY, n INT CHECK (n > 0));
             INSERT INTO t VALUES (1, 5), (2, -1), (3, 7);",
        )?;
    }
    let before = rows(&db)?;
    let (code, err) = repair(&db, &[], None)?;
    assert_eq!(code, 0, "{err}");
    assert_eq!(rows(&db)?, before);
    let again = dir.path("again/checked.db");
    std::fs::create_dir_all(dir.path("again"))?;
    std::fs::copy(dir.path("checked.db"), &again)?;
    {
        let conn = rusqlite::Connection::open(&again)?;
        conn.execute_batch("PRAGMA ignore_check_constraints = 1; INSERT INTO t VALUES (4, -9);")?;
    }
    let before = rows(&again)?;
    let (code, err) = repair(&again, &[], Some("recovered"))?;
    assert_eq!(code, 99, "{err}");
    let (code, err) = repair(&again, &["--resume"], None)?;
    assert_eq!(code, 0, "{err}");
    assert_eq!(rows(&again)?, before);
    Ok(())
}

/// The inode, link count and mode of the file at `path`.
fn file_id(path: &Path) -> Got<(u64, u64, u32)> {
    use std::os::unix::fs::MetadataExt as _;
    let m = std::fs::metadata(path)?;
    Ok((m.ino(), m.nlink(), m.mode()))
}

/// The archive a repair of `dir/state.db` made (`state.db.salvage-<UTC>`), if any.
fn archive_of(dir: &Scratch) -> Option<PathBuf> {
    dir.listing()
        .iter()
        .find(|n| {
            n.starts_with("state.db.salvage-2")
                && !n.ends_with(".json")
                && !n.ends_with(".incomplete")
        })
        .map(|n| dir.path(n))
}

/// A repair reads the original once and copies nothing: the archive holds the
/// original's own files (the same inodes, now their only names), each as its manifest
/// says and read-only, and the manifest's hashes are the ones the recovery's read made.
#[test]
fn a_repair_files_the_originals_own_files_and_copies_nothing() -> TestResult {
    let dir = Scratch::new("repair-filed");
    let db = damaged_wal_store(&dir)?;
    let files = originals(&db)?;
    let ids: Vec<(String, u64)> = ["", "-wal", "-shm"]
        .iter()
        .map(|s| Ok((s.to_string(), file_id(&sidecar(&db, s))?.0)))
        .collect::<Got<_>>()?;
    let (code, err) = repair(&db, &["--allow-partial"], None)?;
    assert_eq!(code, 3, "{err}");
    let archive = archive_of(&dir).ok_or("archive")?;
    let verified = recovery::bundle::verify(&archive)?;
    assert!(verified.intact(), "{:?}", verified.differences);
    for (suffix, inode) in &ids {
        let kept = archive.join(format!("state.db{suffix}"));
        let (ino, links, mode) = file_id(&kept)?;
        assert_eq!(ino, *inode, "`state.db{suffix}` is the original's own file");
        assert_eq!(links, 1, "`state.db{suffix}`: no other name is left");
        assert_eq!(mode & 0o222, 0, "`state.db{suffix}` is read-only");
    }
    for (suffix, hash) in &files {
        assert_eq!(sha256(&archive.join(format!("state.db{suffix}")))?, *hash);
    }
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sidecar(&archive, ".report.json"))?)?;
    let database = verified
        .manifest
        .files
        .iter()
        .find(|f| f.role == "database")
        .ok_or("database")?;
    assert_eq!(
        report["source"]["sha256_before"].as_str(),
        Some(database.sha256.as_str()),
        "the manifest's hash is the recovery's"
    );
    Ok(())
}

/// A repair rolled back after it filed the original into the archive puts the original's
/// own files back (the same inodes, their mode as the application had it) and removes the
/// archive, which would otherwise be a second name of the database the application
/// writes.
#[test]
fn a_rollback_after_filing_puts_the_originals_own_files_back() -> TestResult {
    let dir = Scratch::new("repair-filed-rollback");
    let db = damaged_wal_store(&dir)?;
    let files = originals(&db)?;
    let before = file_id(&db)?;
    let (code, err) = repair(&db, &["--allow-partial"], Some("filed"))?;
    assert_eq!(code, 99, "{err}");
    assert!(archive_of(&dir).is_some(), "filed");
    let (code, err) = repair(&db, &["--rollback"], None)?;
    assert_eq!(code, 0, "{err}");
    assert_eq!(originals(&db)?, files);
    assert_eq!(
        file_id(&db)?,
        before,
        "the original's own file, its mode, one name"
    );
    assert!(archive_of(&dir).is_none(), "{:?}", dir.listing());
    Ok(())
}

/// An archive on another filesystem than the database's (here the system's shared
/// memory, when it is one) gets copies, each checked against the hash the recovery's read
/// made; the original's names beside the database go once the copies are whole.
#[test]
fn an_archive_on_another_filesystem_gets_checked_copies() -> TestResult {
    use std::os::unix::fs::MetadataExt as _;
    let dir = Scratch::new("repair-filed-elsewhere");
    let db = damaged_wal_store(&dir)?;
    let files = originals(&db)?;
    let shm = Path::new("/dev/shm");
    let elsewhere = match std::fs::metadata(shm) {
        Ok(m) if m.is_dir() && m.dev() != std::fs::metadata(dir.path(""))?.dev() => {
            shm.join(format!("salvage-repair-test-{}", std::process::id()))
        }
        // No second filesystem to try: the case is not there to test.
        _ => return Ok(()),
    };
    /// Removes the folder on the other filesystem however the test ends.
    struct Gone(PathBuf);
    impl Drop for Gone {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    std::fs::create_dir_all(&elsewhere)?;
    let _gone = Gone(elsewhere.clone());
    let archive = elsewhere.join("archive");
    let (code, err) = repair(
        &db,
        &["--allow-partial", "--archive", &archive.to_string_lossy()],
        None,
    )?;
    assert_eq!(code, 3, "{err}");
    let verified = recovery::bundle::verify(&archive)?;
    assert!(verified.intact(), "{:?}", verified.differences);
    for (suffix, hash) in &files {
        assert_eq!(sha256(&archive.join(format!("state.db{suffix}")))?, *hash);
    }
    let names = dir.listing();
    assert!(repair_leftovers(&names).is_empty(), "{names:?}");
    Ok(())
}

/// A repair an older build began (its journal of format 2) goes on in that build's order:
/// the archive a copy made first (`archived`), the recovery made from the copy, the
/// archive kept as copied.
#[test]
fn a_repair_an_older_build_began_goes_on_in_its_own_order() -> TestResult {
    let dir = Scratch::new("repair-format-2");
    let db = damaged_wal_store(&dir)?;
    let files = originals(&db)?;
    let (code, err) = repair(&db, &["--allow-partial"], Some("validated"))?;
    assert_eq!(code, 99, "{err}");
    let journal = sidecar(&db, ".salvage-repair.json");
    let mut recorded: serde_json::Value = serde_json::from_slice(&std::fs::read(&journal)?)?;
    assert_eq!(recorded["format_version"], 3);
    recorded["format_version"] = 2.into();
    std::fs::write(&journal, serde_json::to_vec_pretty(&recorded)?)?;
    let (code, err) = repair(&db, &["--resume"], Some("archived"))?;
    assert_eq!(code, 99, "{err}");
    let archive = archive_of(&dir).ok_or("archived first")?;
    assert_ne!(
        file_id(&archive.join("state.db"))?.0,
        file_id(&db)?.0,
        "a copy"
    );
    assert_originals_kept(&db, &files)?;
    let (code, err) = repair(&db, &["--resume"], None)?;
    assert_eq!(code, 3, "{err}");
    assert_eq!(check(&db)?.0, "ok");
    assert!(recovery::bundle::verify(&archive)?.intact());
    for (suffix, hash) in &files {
        assert_eq!(sha256(&archive.join(format!("state.db{suffix}")))?, *hash);
    }
    Ok(())
}

/// A repair stopped in its switch, its fences then taken away by hand and the database
/// written by the application: `--abandon` leaves the application's database as it is and
/// keeps the original the repair had moved aside (at the shadow's name, its log kept
/// aside), which nothing else holds: the repair copied nothing.
#[test]
fn an_abandon_keeps_the_original_a_stopped_switch_moved_aside() -> TestResult {
    let dir = Scratch::new("repair-abandon-keeps");
    let db = damaged_wal_store(&dir)?;
    let files = originals(&db)?;
    let (code, err) = repair(&db, &["--allow-partial"], Some("swapped"))?;
    assert_eq!(code, 99, "{err}");
    for fence in ["-wal", "-journal"] {
        std::fs::remove_dir(sidecar(&db, fence))?;
    }
    rusqlite::Connection::open(&db)?.execute_batch("PRAGMA user_version = 4242")?;
    let (code, err) = repair(&db, &["--abandon"], None)?;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("its only copy"), "{err}");
    let kept: Vec<(&str, &str)> = vec![
        ("", "state.db.salvage-new"),
        ("-wal", "state.db.salvage-old-wal"),
    ];
    for (suffix, name) in kept {
        let hash = &files.iter().find(|(s, _)| s == suffix).ok_or("file")?.1;
        assert_eq!(sha256(&dir.path(name))?, *hash, "`{name}` kept");
    }
    Ok(())
}

/// A rollback after filing removes the archive (a second name of the original it puts
/// back) while the fences still stand, before the original's logs are back at their
/// names: a stop after that can never leave the archive a name of the live database.
#[test]
fn a_rollback_removes_the_filed_archive_while_its_fences_stand() -> TestResult {
    let dir = Scratch::new("repair-filed-rollback-order");
    let db = damaged_wal_store(&dir)?;
    let (code, err) = repair(&db, &["--allow-partial"], Some("filed"))?;
    assert_eq!(code, 99, "{err}");
    let (code, err) = repair(&db, &["--rollback"], None)?;
    assert_eq!(code, 0, "{err}");
    let at = |what: &str| err.find(what).ok_or(format!("`{what}` in {err}"));
    assert!(
        at("removed the archive")? < at("state.db-wal` back")?,
        "{err}"
    );
    Ok(())
}

/// A repair reserves its archive's name as it is recorded: another repair naming the same
/// archive is refused while the first lasts (here withheld for its loss), so neither can
/// take the other's archive for its own; the rollback frees the name.
#[test]
fn a_repair_reserves_its_archive_from_the_start() -> TestResult {
    let dir = Scratch::new("repair-archive-reserved");
    let first = damaged_wal_store(&dir)?;
    let second = dir.path("other/state.db");
    std::fs::create_dir_all(dir.path("other"))?;
    std::fs::copy(&first, &second)?;
    let archive = dir.path("shared-archive");
    let named = archive.to_string_lossy().into_owned();
    let (code, err) = repair(&first, &["--archive", &named], None)?;
    assert_eq!(code, 4, "withheld: {err}");
    assert!(dir.path("shared-archive.incomplete").is_dir());
    let (code, err) = repair(&second, &["--archive", &named], None)?;
    assert_eq!(code, 2, "{err}");
    let (code, err) = repair(&first, &["--rollback"], None)?;
    assert_eq!(code, 0, "{err}");
    assert!(!dir.path("shared-archive.incomplete").exists());
    Ok(())
}

/// A log the recovery read that then disappears with the database unchanged (removed by
/// the application or by hand) stops the repair before its switch, and `--rollback` still
/// ends it: the repair copied nothing, so there is no copy of that log to put back, and
/// the path is left as it is.
#[test]
fn a_rollback_ends_a_repair_whose_log_vanished_before_the_switch() -> TestResult {
    let dir = Scratch::new("repair-log-vanished");
    let db = damaged_wal_store(&dir)?;
    let hash = sha256(&db)?;
    let (code, err) = repair(&db, &["--allow-partial"], Some("verified"))?;
    assert_eq!(code, 99, "{err}");
    std::fs::remove_file(sidecar(&db, "-wal"))?;
    let (code, err) = repair(&db, &["--resume"], None)?;
    assert_eq!(code, 2, "the log is gone: {err}");
    let (code, err) = repair(&db, &["--rollback"], None)?;
    assert_eq!(code, 0, "{err}");
    assert_eq!(sha256(&db)?, hash);
    assert!(!sidecar(&db, "-wal").exists());
    let names = dir.listing();
    assert!(repair_leftovers(&names).is_empty(), "{names:?}");
    Ok(())
}

/// A rollback stopped after it removed the filed archive (its copy of the original's log
/// staged beside the database, now the only one) is refused by `--resume` and
/// `--abandon`, which would take the half-restored path for the recovery or leave it so,
/// and ended by `--rollback`, which finds that staged log and puts it back: every
/// original file back, byte for byte.
#[test]
fn a_rollback_stopped_partway_is_ended_only_by_a_rollback_that_keeps_the_log() -> TestResult {
    let dir = Scratch::new("repair-rollback-stopped");
    let db = damaged_wal_store(&dir)?;
    let files = originals(&db)?;
    assert!(files.iter().any(|(s, _)| s == "-wal"), "{files:?}");
    // Stopped once the journal says `done`, before it is removed: the original's log is
    // only in the archive.
    let (code, err) = repair(&db, &["--allow-partial"], Some("done"))?;
    assert_eq!(code, 99, "{err}");
    let (code, err) = repair(&db, &["--rollback"], Some("rollback-archive-removed"))?;
    assert_eq!(code, 99, "{err}");
    assert!(archive_of(&dir).is_none(), "{:?}", dir.listing());
    let (code, err) = repair(&db, &["--resume"], None)?;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("began and stopped before its end"), "{err}");
    let (code, err) = repair(&db, &["--abandon"], None)?;
    assert_eq!(code, 2, "a fence stands: {err}");
    let (code, err) = repair(&db, &["--rollback"], None)?;
    assert_eq!(code, 0, "{err}");
    assert_eq!(originals(&db)?, files, "{:?}", dir.listing());
    let names = dir.listing();
    assert!(repair_leftovers(&names).is_empty(), "{names:?}");
    Ok(())
}

/// A rollback stopped before its first fence (its start recorded) leaves the recovery
/// open to the application: once that writes, the rollback refuses to replace it, and
/// `--abandon` ends the repair with the application's rows where they are. A rollback
/// stopped once every file is back (nothing cleaned up yet) is not taken by `--resume`
/// for a finished repair: the path holds the original, and `--rollback` ends it.
#[test]
fn a_rollback_stopped_at_either_end_leaves_a_way_on() -> TestResult {
    let dir = Scratch::new("repair-rollback-ends");
    let db = damaged_wal_store(&dir)?;
    let (code, err) = repair(&db, &["--allow-partial"], Some("done"))?;
    assert_eq!(code, 99, "{err}");
    let (code, err) = repair(&db, &["--rollback"], Some("rolling-back"))?;
    assert_eq!(code, 99, "{err}");
    {
        let conn = rusqlite::Connection::open(&db)?;
        conn.execute_batch("PRAGMA user_version = 77")?;
    }
    let (code, err) = repair(&db, &["--rollback"], None)?;
    assert_eq!(code, 2, "{err}");
    let (code, err) = repair(&db, &["--abandon"], None)?;
    assert_eq!(code, 0, "{err}");
    let conn = rusqlite::Connection::open(&db)?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    assert_eq!(version, 77, "the application's write is where it put it");
    drop(conn);

    let dir = Scratch::new("repair-rollback-moved-back");
    let db = damaged_wal_store(&dir)?;
    let files = originals(&db)?;
    let (code, err) = repair(&db, &["--allow-partial"], Some("done"))?;
    assert_eq!(code, 99, "{err}");
    let (code, err) = repair(&db, &["--rollback"], Some("rollback-moved"))?;
    assert_eq!(code, 99, "{err}");
    assert_eq!(originals(&db)?, files);
    let (code, err) = repair(&db, &["--resume"], None)?;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("began and stopped before its end"), "{err}");
    let (code, err) = repair(&db, &["--rollback"], None)?;
    assert_eq!(code, 0, "{err}");
    assert_eq!(originals(&db)?, files);
    let names = dir.listing();
    assert!(repair_leftovers(&names).is_empty(), "{names:?}");
    Ok(())
}

/// A repair stopped while `finish` takes its fences down (one gone, the other standing)
/// is finished by `--resume`: a log's name left empty, with no `-shm` beside the
/// database, is no application's doing.
#[test]
fn a_repair_stopped_between_two_fences_coming_down_is_resumed() -> TestResult {
    let dir = Scratch::new("repair-finishing");
    let db = damaged_wal_store(&dir)?;
    let (code, err) = repair(&db, &["--allow-partial"], Some("finishing"))?;
    assert_eq!(code, 99, "{err}");
    let fences = ["-wal", "-journal"]
        .iter()
        .filter(|s| sidecar(&db, s).is_dir())
        .count();
    assert_eq!(fences, 1, "{:?}", dir.listing());
    let (code, err) = repair(&db, &["--resume"], None)?;
    assert_eq!(code, 3, "{err}");
    let (ok, ..) = check(&db)?;
    assert_eq!(ok, "ok");
    let names = dir.listing();
    assert!(repair_leftovers(&names).is_empty(), "{names:?}");
    let archive = archive_of(&dir).ok_or("archive")?;
    let verified = recovery::bundle::verify(&archive)?;
    assert!(verified.intact(), "{:?}", verified.differences);
    Ok(())
}

/// A repair stopped between its archive's rename and the record of `filed` (each archived
/// file still a second name of one beside the database) is finished by `--resume`.
#[test]
fn a_repair_stopped_as_its_archive_is_renamed_is_resumed() -> TestResult {
    let dir = Scratch::new("repair-archive-renamed");
    let db = damaged_wal_store(&dir)?;
    let files = originals(&db)?;
    let (code, err) = repair(&db, &["--allow-partial"], Some("archive-renamed"))?;
    assert_eq!(code, 99, "{err}");
    assert!(archive_of(&dir).is_some(), "{:?}", dir.listing());
    let (code, err) = repair(&db, &["--resume"], None)?;
    assert_eq!(code, 3, "{err}");
    let archive = archive_of(&dir).ok_or("archive")?;
    let verified = recovery::bundle::verify(&archive)?;
    assert!(verified.intact(), "{:?}", verified.differences);
    for (suffix, hash) in &files {
        assert_eq!(sha256(&archive.join(format!("state.db{suffix}")))?, *hash);
    }
    Ok(())
}

/// An original that has another name (a hard link elsewhere) is copied into the archive,
/// not linked: no name outside the archive reaches its file, and the other name keeps
/// the original, its mode untouched.
#[test]
fn an_original_with_another_name_is_archived_as_a_copy() -> TestResult {
    let dir = Scratch::new("repair-second-name");
    let db = damaged_wal_store(&dir)?;
    let other = dir.path("elsewhere.db");
    std::fs::hard_link(&db, &other)?;
    let (hash, before) = (sha256(&db)?, file_id(&other)?);
    let (code, err) = repair(&db, &["--allow-partial"], None)?;
    assert_eq!(code, 3, "{err}");
    let archive = archive_of(&dir).ok_or("archive")?;
    let verified = recovery::bundle::verify(&archive)?;
    assert!(verified.intact(), "{:?}", verified.differences);
    let kept = archive.join("state.db");
    assert_eq!(sha256(&kept)?, hash);
    assert_ne!(
        file_id(&kept)?.0,
        before.0,
        "a copy, not the other name's file"
    );
    assert_eq!(sha256(&other)?, hash);
    let now = file_id(&other)?;
    assert_eq!(
        (now.0, now.2),
        (before.0, before.2),
        "the other name's file and mode"
    );
    Ok(())
}

/// A log's name holding something other than a regular file (a symbolic link, a folder)
/// is refused before anything is made: the switch moves logs by their names and files
/// what it moved, and would move and file the link in the log's place.
#[test]
fn a_log_that_is_not_a_file_is_refused_before_anything_is_made() -> TestResult {
    let dir = Scratch::new("repair-log-kinds");
    let db = damaged_wal_store(&dir)?;
    std::fs::rename(sidecar(&db, "-wal"), dir.path("kept-wal"))?;
    std::os::unix::fs::symlink(dir.path("kept-wal"), sidecar(&db, "-wal"))?;
    let before = dir.listing();
    let (code, err) = repair(&db, &["--allow-partial"], None)?;
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("state.db-wal") && err.contains("not a regular file"),
        "{err}"
    );
    assert_eq!(dir.listing(), before);
    std::fs::remove_file(sidecar(&db, "-wal"))?;
    std::fs::create_dir(sidecar(&db, "-journal"))?;
    let before = dir.listing();
    let (code, err) = repair(&db, &["--allow-partial"], None)?;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("state.db-journal"), "{err}");
    assert_eq!(dir.listing(), before);
    Ok(())
}

/// A resumed filing checks each original file at the name the switch left it before it
/// files it: one changed since the stop is refused, never listed under the hash the
/// recovery's read made.
#[test]
fn a_resumed_filing_checks_what_it_files() -> TestResult {
    use std::os::unix::fs::FileExt as _;
    let dir = Scratch::new("repair-filing-checked");
    let db = damaged_wal_store(&dir)?;
    let (code, err) = repair(&db, &["--allow-partial"], Some("swapped"))?;
    assert_eq!(code, 99, "{err}");
    let original = sidecar(&db, ".salvage-new");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&original)?
        .write_all_at(b"changed after the stop", 200)?;
    let (code, err) = repair(&db, &["--resume"], None)?;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is not the original the repair read"), "{err}");
    assert!(archive_of(&dir).is_none(), "{:?}", dir.listing());
    Ok(())
}

/// A rollback stopped after it cleaned up (the recovery removed, the journal not yet) is
/// never resumed: a resume would have SQLite make a new, empty database where the
/// recovery was and put it in place. Neither the journal's record of the rollback nor the
/// check of the recovery lets that happen.
#[test]
fn a_resume_never_puts_an_empty_database_in_place() -> TestResult {
    let dir = Scratch::new("repair-rollback-cleaned");
    let db = damaged_wal_store(&dir)?;
    let files = originals(&db)?;
    let (code, err) = repair(&db, &["--allow-partial"], Some("recovered"))?;
    assert_eq!(code, 99, "{err}");
    let (code, err) = repair(&db, &["--rollback"], Some("rollback-cleaned"))?;
    assert_eq!(code, 99, "{err}");
    assert!(
        !sidecar(&db, ".salvage-new").exists(),
        "{:?}",
        dir.listing()
    );
    let (code, err) = repair(&db, &["--resume"], None)?;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("began and stopped before its end"), "{err}");
    assert_eq!(originals(&db)?, files);
    let (code, err) = repair(&db, &["--rollback"], None)?;
    assert_eq!(code, 0, "{err}");
    assert_eq!(originals(&db)?, files);

    // The recovery removed by hand after a stop: the check refuses, and makes nothing.
    let (code, err) = repair(&db, &["--allow-partial"], Some("recovered"))?;
    assert_eq!(code, 99, "{err}");
    std::fs::remove_file(sidecar(&db, ".salvage-new"))?;
    let (code, err) = repair(&db, &["--resume"], None)?;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is gone"), "{err}");
    assert!(
        !sidecar(&db, ".salvage-new").exists(),
        "{:?}",
        dir.listing()
    );
    assert_eq!(originals(&db)?, files);
    Ok(())
}

/// The application recreates the database a person moved away (as the rollback's refusal
/// suggests) while the rollback copies the original back from the archive: once its
/// fences stand the rollback looks again, refuses to put the original over the
/// application's rows, and takes its fences down, so that `--abandon` ends the repair
/// with the application's database where it was made.
#[test]
fn a_rollback_looks_again_once_its_fences_stand() -> TestResult {
    let dir = Scratch::new("repair-rollback-race");
    let db = damaged_wal_store(&dir)?;
    let (code, err) = repair(&db, &["--allow-partial"], Some("done"))?;
    assert_eq!(code, 99, "{err}");
    // Moved away, with its log: the application's database, elsewhere now.
    for s in ["", "-wal", "-shm"] {
        if sidecar(&db, s).exists() {
            std::fs::rename(sidecar(&db, s), dir.path(&format!("moved{s}")))?;
        }
    }
    let pause = dir.path("paused");
    let mut rollback = crate::salvage()
        .arg("repair")
        .arg(&db)
        .arg("--rollback")
        .env_remove("SALVAGE_FAULT_AT")
        .env(
            "SALVAGE_PAUSE_AT",
            format!("repair:rollback-staged={}", pause.display()),
        )
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !pause.exists() && std::time::Instant::now() < until {
        if rollback.try_wait()?.is_some() {
            let out = rollback.wait_with_output()?;
            return Err(format!(
                "the rollback ended before its pause: {}",
                String::from_utf8_lossy(&out.stderr)
            )
            .into());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(pause.exists(), "the rollback reached its pause");
    {
        let conn = rusqlite::Connection::open(&db)?;
        conn.execute_batch(
            "PRAGMA journal_mode = DELETE; CREATE TABLE notes(body); INSERT INTO notes VALUES ('made while the rollback copied');",
        )?;
    }
    std::fs::remove_file(&pause)?;
    let out = rollback.wait_with_output()?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for s in ["-wal", "-journal"] {
        assert!(!sidecar(&db, s).is_dir(), "a fence left at {s}: {err}");
    }
    let (code, err) = repair(&db, &["--abandon"], None)?;
    assert_eq!(code, 0, "{err}");
    let conn = rusqlite::Connection::open(&db)?;
    let body: String = conn.query_row("SELECT body FROM notes", [], |r| r.get(0))?;
    assert_eq!(body, "made while the rollback copied");
    Ok(())
}
