//! Custody of the evidence and of the application's database: `quarantine` copies a
//! database and its sidecars byte for byte into a bundle with a manifest, `verify`
//! re-hashes one, and `inspect` and `recover` read a bundle as its database.

use sha2::{Digest, Sha256};

use crate::{Scratch, TestResult};

/// A test step's result with a value.
pub(crate) type Got<T> = Result<T, Box<dyn std::error::Error>>;

pub(crate) fn sha256(path: &std::path::Path) -> Got<String> {
    Ok(Sha256::digest(std::fs::read(path)?)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// The agent store in WAL mode at `dir/state.db`, with its `-wal` and an `-shm`.
pub(crate) fn wal_store(dir: &Scratch) -> Got<std::path::PathBuf> {
    let w = fixtures::build_agent_with_wal();
    let db = dir.path("state.db");
    std::fs::write(&db, &w.main)?;
    std::fs::write(dir.path("state.db-wal"), &w.wal)?;
    std::fs::write(dir.path("state.db-shm"), vec![0u8; 32 << 10])?;
    Ok(db)
}

pub(crate) fn run(args: &[&std::ffi::OsStr]) -> Got<(i32, String, String)> {
    let out = crate::run_salvage(args)?;
    Ok((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// A quarantine copies the database and every sidecar byte for byte (their hashes in the
/// manifest are the originals'), creates nothing beside the source, and the bundle reads
/// as the database: `recover BUNDLE` gives what `recover SRC` gives.
#[test]
fn a_quarantine_copies_every_file_byte_for_byte() -> TestResult {
    let dir = Scratch::new("custody-quarantine");
    let db = wal_store(&dir)?;
    let before = dir.listing();
    let bundle = dir.path("case-7");
    let (code, _, err) = run(&[
        "quarantine".as_ref(),
        db.as_os_str(),
        "--to".as_ref(),
        bundle.as_os_str(),
        "--case".as_ref(),
        "7".as_ref(),
    ])?;
    assert_eq!(code, 0, "{err}");
    let mut after = dir.listing();
    after.retain(|n| n != "case-7");
    assert_eq!(after, before, "nothing made beside the source");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(bundle.join("MANIFEST.json"))?)?;
    assert_eq!(manifest["case"], "7");
    let files = manifest["files"].as_array().ok_or("files")?;
    let roles: Vec<&str> = files.iter().filter_map(|f| f["role"].as_str()).collect();
    assert_eq!(roles, ["database", "wal", "shm"]);
    for f in files {
        let name = f["path"].as_str().ok_or("path")?;
        assert_eq!(
            f["sha256"].as_str(),
            Some(sha256(&dir.path(name))?.as_str())
        );
        assert_eq!(sha256(&bundle.join(name))?, sha256(&dir.path(name))?);
    }
    let (from_src, from_bundle) = (dir.path("a.db"), dir.path("b.db"));
    let a = crate::recover_expecting(&db, &from_src, &[], 0)?;
    let b = crate::recover_expecting(&bundle, &from_bundle, &[], 0)?;
    assert_eq!(a["tables"], b["tables"]);
    assert_eq!(a["wal"]["frames_applied"], b["wal"]["frames_applied"]);
    Ok(())
}

/// `verify` finds one flipped byte in any file of a bundle, and a file added to it.
#[test]
fn verify_finds_a_single_flipped_byte_in_any_file() -> TestResult {
    let dir = Scratch::new("custody-verify");
    let db = wal_store(&dir)?;
    let bundle = dir.path("bundle");
    let manifest = recovery::bundle::make(&db, &bundle, "quarantine", &Default::default())?;
    assert!(recovery::bundle::verify(&bundle)?.intact());
    let (code, out, _) = run(&["verify".as_ref(), bundle.as_os_str()])?;
    assert_eq!(code, 0, "{out}");
    for f in &manifest.files {
        let path = bundle.join(&f.path);
        let original = std::fs::read(&path)?;
        let mut flipped = original.clone();
        let at = flipped.len() / 2 + 3;
        flipped[at] ^= 0x10;
        let mut perms = std::fs::metadata(&path)?.permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(&path, perms)?;
        std::fs::write(&path, &flipped)?;
        let (code, out, _) = run(&["verify".as_ref(), bundle.as_os_str()])?;
        assert_eq!(code, 3, "{out}");
        assert!(out.contains(&format!("`{}` differs", f.path)), "{out}");
        std::fs::write(&path, &original)?;
    }
    std::fs::write(bundle.join("notes.txt"), b"added later")?;
    let v = recovery::bundle::verify(&bundle)?;
    assert_eq!(
        v.differences,
        [recovery::bundle::Difference::Unlisted {
            path: "notes.txt".into()
        }]
    );
    Ok(())
}

/// A quarantine never writes over anything and refuses before creating anything.
#[test]
fn a_quarantine_refuses_before_creating_anything() -> TestResult {
    let dir = Scratch::new("custody-refusals");
    let db = wal_store(&dir)?;
    std::fs::create_dir(dir.path("taken"))?;
    std::fs::create_dir(dir.path("left.incomplete"))?;
    let before = dir.listing();
    for (src, to) in [
        (db.clone(), dir.path("taken")),
        (db.clone(), dir.path("left")),
        (db.clone(), dir.path("no/such/folder")),
        (dir.path("missing.db"), dir.path("new")),
        (dir.path("taken"), dir.path("new")),
    ] {
        let (code, _, err) = run(&[
            "quarantine".as_ref(),
            src.as_os_str(),
            "--to".as_ref(),
            to.as_os_str(),
        ])?;
        assert_eq!(code, 2, "{} -> {}: {err}", src.display(), to.display());
        assert!(err.contains("hint:"), "{err}");
        assert_eq!(dir.listing(), before);
    }
    Ok(())
}

/// The agent store in WAL mode at `dir/state.db`, its main file damaged (page 3 zeroed),
/// with its `-wal` and an `-shm`.
pub(crate) fn damaged_wal_store(dir: &Scratch) -> Got<std::path::PathBuf> {
    let db = wal_store(dir)?;
    let mut bytes = std::fs::read(&db)?;
    fixtures::apply(&mut bytes, &fixtures::Damage::ZeroPage(3))?;
    std::fs::write(&db, bytes)?;
    Ok(db)
}

/// The hashes of the database's files as they are now, by suffix ("", "-wal", "-shm");
/// a folder at a sidecar's name (a repair's fence) is not a file and is left out.
pub(crate) fn originals(db: &std::path::Path) -> Got<Vec<(String, String)>> {
    let mut out = Vec::new();
    for suffix in ["", "-wal", "-shm"] {
        let path = std::path::PathBuf::from(format!("{}{suffix}", db.display()));
        if path.is_file() {
            out.push((suffix.to_string(), sha256(&path)?));
        }
    }
    Ok(out)
}

/// What an application opening `db` now would get is one committed state, never a mix:
/// the original with its own log (`files`), the recovery with no log beside it, or
/// nothing at all (a fence: an empty folder at the log's name, and SQLite's open fails).
pub(crate) fn assert_path_consistent(
    db: &std::path::Path,
    files: &[(String, String)],
    at: &str,
) -> TestResult {
    let sidecar = |s: &str| std::path::PathBuf::from(format!("{}{s}", db.display()));
    let fenced = ["-wal", "-journal"].iter().any(|s| sidecar(s).is_dir());
    if fenced {
        let opened =
            rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .and_then(|c| {
                    c.query_row("SELECT count(*) FROM sqlite_schema", [], |r| {
                        r.get::<_, i64>(0)
                    })
                });
        assert!(opened.is_err(), "{at}: SQLite opened a fenced database");
    } else if sha256(db)? == files[0].1 {
        for (suffix, hash) in files.iter().filter(|(s, _)| s == "-wal") {
            assert_eq!(
                sha256(&sidecar(suffix)).ok().as_ref(),
                Some(hash),
                "{at}: the original without its own {suffix}"
            );
        }
    } else {
        for s in ["-wal", "-journal"] {
            assert!(!sidecar(s).exists(), "{at}: a {s} beside the recovery");
        }
        assert_eq!(check(db)?.0, "ok", "{at}");
    }
    Ok(())
}

/// Every original file is at its path, in an archive beside the database, or (while the
/// repair is recorded) at a name its journal records for it (the shadow's, where the
/// switch leaves the original, or the name a log's fence keeps it under), with its hash
/// (each file read afresh).
pub(crate) fn assert_originals_kept(
    db: &std::path::Path,
    files: &[(String, String)],
) -> TestResult {
    let dir = db.parent().ok_or("folder")?;
    let archives: Vec<std::path::PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_dir()
                && p.to_string_lossy().contains(".salvage-2")
                && !p.to_string_lossy().ends_with(".incomplete")
        })
        .collect();
    for (suffix, hash) in files {
        let at_path = std::path::PathBuf::from(format!("{}{suffix}", db.display()));
        let here = at_path.is_file() && sha256(&at_path)? == *hash;
        let name = format!("state.db{suffix}");
        let archived = archives
            .iter()
            .any(|a| a.join(&name).exists() && sha256(&a.join(&name)).is_ok_and(|h| h == *hash));
        let recorded = dir.join("state.db.salvage-repair.json").is_file()
            && [
                dir.join("state.db.salvage-new"),
                dir.join(format!("state.db.salvage-old{suffix}")),
            ]
            .iter()
            .any(|p| p.is_file() && sha256(p).is_ok_and(|h| h == *hash));
        assert!(
            here || archived || recorded,
            "the original `{name}` is neither at its path, nor archived, nor where the journal keeps it"
        );
    }
    Ok(())
}

pub(crate) fn repair(
    db: &std::path::Path,
    extra: &[&str],
    fault: Option<&str>,
) -> Got<(i32, String)> {
    let mut cmd = crate::salvage();
    cmd.arg("repair").arg(db).args(extra);
    match fault {
        Some(f) => cmd.env("SALVAGE_FAULT_AT", format!("repair:{f}")),
        None => cmd.env_remove("SALVAGE_FAULT_AT"),
    };
    let out = cmd.output()?;
    Ok((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// SQLite's integrity check of the database at `db`, and its row counts.
pub(crate) fn check(db: &std::path::Path) -> Got<(String, i64, i64)> {
    let conn = rusqlite::Connection::open(db)?;
    let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    let sessions: i64 = conn.query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))?;
    let messages: i64 = conn.query_row("SELECT count(*) FROM messages", [], |r| r.get(0))?;
    Ok((ok, sessions, messages))
}

/// `repair` puts at the database's path a database SQLite opens with its integrity check
/// ok, holding what `recover` recovers from the same files; the original and its
/// sidecars are archived byte for byte; no old `-wal` or `-shm` is left beside the new
/// file; the repair's own files are gone.
#[test]
fn repair_puts_what_recover_recovers_in_place() -> TestResult {
    let dir = Scratch::new("custody-repair");
    let db = damaged_wal_store(&dir)?;
    let files = originals(&db)?;
    let expected = dir.path("expected.db");
    crate::recover_expecting(&db, &expected, &["--allow-partial"], 3)?;
    let (code, err) = repair(&db, &[], None)?;
    assert_eq!(code, 4, "loss without --allow-partial is withheld: {err}");
    assert_eq!(originals(&db)?, files, "the original untouched");
    let (code, err) = repair(&db, &["--resume", "--allow-partial"], None)?;
    assert_eq!(code, 3, "{err}");
    let got = check(&db)?;
    assert_eq!(got.0, "ok");
    assert_eq!((got.1, got.2), (check(&expected)?.1, check(&expected)?.2));
    assert!(!dir.path("state.db-wal").exists() || sha256(&dir.path("state.db-wal"))? != files[1].1);
    assert_originals_kept(&db, &files)?;
    let listing = dir.listing();
    assert!(
        !listing
            .iter()
            .any(|n| n.ends_with(".salvage-repair.json") || n.contains(".salvage-new")),
        "{listing:?}"
    );
    let archive = listing
        .iter()
        .find(|n| n.starts_with("state.db.salvage-2") && !n.ends_with(".json"))
        .ok_or("archive")?;
    assert!(recovery::bundle::verify(&dir.path(archive))?.intact());
    Ok(())
}

/// A healthy database is left as it is: exit 0, nothing made, nothing moved.
#[test]
fn repair_of_a_healthy_database_is_a_no_op() -> TestResult {
    let dir = Scratch::new("custody-repair-healthy");
    let db = dir.path("state.db");
    std::fs::write(
        &db,
        fixtures::build_named("agent-4096-utf8")
            .ok_or("fixture")?
            .bytes,
    )?;
    let (before, hash) = (dir.listing(), sha256(&db)?);
    let (code, err) = repair(&db, &[], None)?;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("healthy"), "{err}");
    assert_eq!((dir.listing(), sha256(&db)?), (before, hash));
    Ok(())
}

/// A database an older SQLite wrote, whose text in a numeric column today's checks report
/// ("TEXT value in t.n"), is healthy: its data as it was. `repair` leaves it as it is.
#[test]
fn repair_of_a_database_an_older_sqlite_wrote_is_a_no_op() -> TestResult {
    let dir = Scratch::new("custody-repair-older");
    let db = dir.path("old.db");
    crate::older_sqlite_text(&db)?;
    let (before, hash) = (dir.listing(), sha256(&db)?);
    let (code, err) = repair(&db, &[], None)?;
    assert_eq!(code, 0, "{err}");
    assert_eq!((dir.listing(), sha256(&db)?), (before, hash));
    Ok(())
}

/// A repair stopped at each phase boundary (a crash there) keeps the original bytes at
/// the path or in the archive; the old `-wal` is never beside the new file; a plain rerun
/// is refused with instructions; `--resume` converges on the repaired database and
/// `--rollback` on the original, byte for byte with its sidecars.
#[test]
fn a_repair_stopped_at_any_phase_resumes_or_rolls_back() -> TestResult {
    let phases = [
        "validated",
        "recovered",
        "verified",
        "fenced",
        "swapped",
        "filed",
        "done",
    ];
    for (i, phase) in phases.iter().enumerate() {
        for resume in [true, false] {
            let dir = Scratch::new(&format!("custody-repair-fault-{i}-{resume}"));
            let db = damaged_wal_store(&dir)?;
            let files = originals(&db)?;
            let (code, err) = repair(&db, &["--allow-partial"], Some(phase))?;
            assert_eq!(code, 99, "{phase}: {err}");
            assert_originals_kept(&db, &files)?;
            assert_path_consistent(&db, &files, phase)?;
            let (code, err) = repair(&db, &[], None)?;
            assert_eq!(code, 2, "{phase}: {err}");
            assert!(
                err.contains("--resume") && err.contains("--rollback"),
                "{err}"
            );
            if resume {
                let (code, err) = repair(&db, &["--resume"], None)?;
                assert_eq!(code, 3, "{phase}: {err}");
                assert_eq!(check(&db)?.0, "ok", "{phase}");
                assert!(!dir.path("state.db-wal").exists(), "{phase}");
            } else {
                let (code, err) = repair(&db, &["--rollback"], None)?;
                assert_eq!(code, 0, "{phase}: {err}");
                assert_eq!(
                    originals(&db)?,
                    files,
                    "{phase}: the original back, with its sidecars"
                );
            }
            assert_originals_kept(&db, &files)?;
            assert!(
                !dir.path("state.db.salvage-repair.json").exists(),
                "{phase}"
            );
        }
    }
    Ok(())
}

/// A repair is refused while another process holds SQLite's lock on the database (here
/// this test process, in a write transaction), naming it; nothing is created.
#[test]
fn repair_refuses_while_the_database_is_in_use() -> TestResult {
    let dir = Scratch::new("custody-repair-in-use");
    let db = dir.path("state.db");
    let mut bytes = fixtures::build_named("agent-4096-utf8")
        .ok_or("fixture")?
        .bytes;
    fixtures::apply(&mut bytes, &fixtures::Damage::ZeroPage(3))?;
    std::fs::write(&db, bytes)?;
    let conn = rusqlite::Connection::open(&db)?;
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let before = dir.listing();
    let (code, err) = repair(&db, &[], None)?;
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("in use") && err.contains(&std::process::id().to_string()),
        "{err}"
    );
    assert_eq!(dir.listing(), before);
    conn.execute_batch("ROLLBACK")?;
    Ok(())
}

/// A repair killed while it wrote its journal's first record leaves only that record's
/// temporary file (`DB.salvage-repair.json.tmp`, cut short). The next repair is not
/// refused for it: its own first record replaces it, and it repairs the database.
#[test]
fn a_journal_record_cut_short_by_a_kill_is_not_in_the_way() -> TestResult {
    let dir = Scratch::new("custody-repair-record-left");
    let db = dir.path("state.db");
    fixtures::write_agent_store(&db, 1 << 20, 7)?;
    let mut bytes = std::fs::read(&db)?;
    fixtures::apply(&mut bytes, &fixtures::Damage::ZeroPage(5))?;
    std::fs::write(&db, &bytes)?;
    let record = dir.path("state.db.salvage-repair.json.tmp");
    std::fs::write(&record, b"{\n  \"format_version\": 2,\n  \"db\": \"/")?;
    let (code, err) = repair(&db, &["--allow-partial"], None)?;
    assert_eq!(code, 3, "{err}");
    assert_eq!(check(&db)?.0, "ok");
    assert!(!record.exists() && !dir.path("state.db.salvage-repair.json").exists());
    Ok(())
}

/// A repair killed (SIGKILL) at moments spread over its run on a larger store never
/// loses the original, and a rerun (`--resume` when a journal records the repair, else a
/// new repair) converges on a repaired database SQLite checks ok.
#[test]
fn a_repair_killed_at_any_moment_converges() -> TestResult {
    let dir = Scratch::new("custody-repair-kill");
    let pristine = dir.path("pristine.db");
    fixtures::write_agent_store(&pristine, 8 << 20, 7)?;
    let mut bytes = std::fs::read(&pristine)?;
    fixtures::apply(&mut bytes, &fixtures::Damage::ZeroPage(5))?;
    // How long one whole repair takes here.
    let timed = dir.path("timed/state.db");
    std::fs::create_dir_all(timed.parent().ok_or("folder")?)?;
    std::fs::write(&timed, &bytes)?;
    let started = std::time::Instant::now();
    assert_eq!(repair(&timed, &["--allow-partial"], None)?.0, 3);
    let whole = started.elapsed();
    for k in 1..=6u32 {
        let run = dir.path(&format!("run-{k}/state.db"));
        std::fs::create_dir_all(run.parent().ok_or("folder")?)?;
        std::fs::write(&run, &bytes)?;
        let files = originals(&run)?;
        let mut child = crate::salvage()
            .arg("repair")
            .arg(&run)
            .arg("--allow-partial")
            .env_remove("SALVAGE_FAULT_AT")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()?;
        std::thread::sleep(whole * k / 7);
        let _ = child.kill();
        let _ = child.wait()?;
        assert_originals_kept(&run, &files)?;
        let journal = run.with_file_name("state.db.salvage-repair.json");
        let (code, err) = if journal.exists() {
            repair(&run, &["--resume"], None)?
        } else if sha256(&run)? == files[0].1 {
            repair(&run, &["--allow-partial"], None)?
        } else {
            (3, String::new()) // killed after the journal was removed: repaired
        };
        assert_eq!(code, 3, "kill {k}: {err}");
        assert_eq!(check(&run)?.0, "ok", "kill {k}");
        assert_originals_kept(&run, &files)?;
    }
    Ok(())
}

/// The rows of every table of `db` but the full-text index's shadow tables, in order.
pub(crate) fn canonical_rows(db: &std::path::Path) -> Got<Vec<(String, Vec<String>)>> {
    let conn = rusqlite::Connection::open(db)?;
    let tables: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'
             AND name NOT LIKE 'embedding_fulltext_search%' AND name NOT LIKE 'sqlite_%' ORDER BY name",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut out = Vec::new();
    for t in tables {
        let rows: Vec<String> = conn
            .prepare(&format!(
                "SELECT quote(t.rowid), t.* FROM \"{t}\" AS t ORDER BY 1"
            ))
            .or_else(|_| conn.prepare(&format!("SELECT * FROM \"{t}\" ORDER BY 1")))?
            .query_map([], |r| {
                let n = r.as_ref().column_count();
                Ok((0..n)
                    .map(|i| format!("{:?}", r.get_ref(i).map(|v| v.to_owned())))
                    .collect::<Vec<_>>()
                    .join("|"))
            })?
            .collect::<rusqlite::Result<_>>()?;
        out.push((t, rows));
    }
    Ok(out)
}

/// A Chroma store whose only damage is in its full-text index (a real incident: the
/// FTS5 index malformed, SQLite's integrity check failing) is repaired completely: the
/// index rebuilt from the canonical rows, every other table verbatim, exit 0.
#[test]
fn repair_rebuilds_a_malformed_full_text_index_and_keeps_the_rest_verbatim() -> TestResult {
    let dir = Scratch::new("custody-repair-fts");
    let db = dir.path("chroma.sqlite3");
    std::fs::write(
        &db,
        fixtures::build_named("vector-4096-utf8")
            .ok_or("fixture")?
            .bytes,
    )?;
    let before = canonical_rows(&db)?;
    {
        let conn = rusqlite::Connection::open(&db)?;
        let id: i64 = conn.query_row(
            "SELECT max(id) FROM embedding_fulltext_search_data",
            [],
            |r| r.get(0),
        )?;
        let mut block: Vec<u8> = conn.query_row(
            "SELECT block FROM embedding_fulltext_search_data WHERE id = ?1",
            [id],
            |r| r.get(0),
        )?;
        for b in block.iter_mut().skip(4).take(56) {
            *b ^= 0x5a;
        }
        conn.execute(
            "UPDATE embedding_fulltext_search_data SET block = ?1 WHERE id = ?2",
            rusqlite::params![block, id],
        )?;
        let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
        assert_ne!(check, "ok", "the index is malformed");
    }
    let (code, err) = repair(&db, &[], None)?;
    assert_eq!(code, 0, "{err}");
    let conn = rusqlite::Connection::open(&db)?;
    let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    assert_eq!(check, "ok");
    let found: i64 = conn.query_row(
        "SELECT count(*) FROM embedding_fulltext_search WHERE embedding_fulltext_search MATCH 'the'",
        [],
        |r| r.get(0),
    )?;
    assert!(found > 0);
    assert_eq!(canonical_rows(&db)?, before);
    Ok(())
}

/// A damaged WAL store in `dir` recovered with loss allowed, for case 2026-117 by
/// `examiner`: the source, the output and the report's paths.
fn recover_for_case(dir: &Scratch, examiner: &str) -> Got<[std::path::PathBuf; 3]> {
    let src = damaged_wal_store(dir)?;
    let dest = dir.path("out.db");
    let (code, _, err) = run(&[
        "recover".as_ref(),
        src.as_os_str(),
        "-o".as_ref(),
        dest.as_os_str(),
        "--allow-partial".as_ref(),
        "--case".as_ref(),
        "2026-117".as_ref(),
        "--examiner".as_ref(),
        examiner.as_ref(),
    ])?;
    assert_eq!(code, 3, "{err}");
    Ok([src, dest, dir.path("out.db.report.json")])
}

/// The run as a case file records it: when, by whom, how, with which build, and the hash
/// of every file read and written, in the JSON and in both renderings.
#[test]
fn a_recovery_report_records_the_run_and_every_hash() -> TestResult {
    let dir = Scratch::new("custody-run");
    let [src, dest, report_path] = recover_for_case(&dir, "J. O'Doe")?;
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report_path)?)?;
    let r = &report["run"];
    for time in ["started_utc", "finished_utc"] {
        let t = r[time].as_str().ok_or(time)?;
        humantime::parse_rfc3339(t).map_err(|e| format!("{time} {t}: {e}"))?;
    }
    assert!(r["started_utc"].as_str() <= r["finished_utc"].as_str());
    assert_eq!(r["case"], "2026-117");
    assert_eq!(r["examiner"], "J. O'Doe");
    assert!(r["build"]
        .as_str()
        .is_some_and(|b| b.contains(env!("CARGO_PKG_VERSION"))));
    let line: Vec<&str> = r["command_line"]
        .as_array()
        .ok_or("command_line")?
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert_eq!(line.get(1), Some(&"recover"));
    assert!(line.contains(&"--examiner") && line.contains(&"J. O'Doe"));
    for path in ["source_path", "dest_path", "report_path", "wal_path"] {
        let p = r[path].as_str().ok_or(path)?;
        assert!(std::path::Path::new(p).is_absolute(), "{path}: {p}");
    }
    let (source, wal, output, own) = (
        sha256(&src)?,
        sha256(&dir.path("state.db-wal"))?,
        sha256(&dest)?,
        sha256(&report_path)?,
    );
    assert_eq!(report["source"]["sha256_before"], source.as_str());
    assert_eq!(report["wal"]["sha256_before"], wal.as_str());
    // Unchanged: each file's BLAKE3 read before and after is its own.
    for (section, file) in [("source", src.clone()), ("wal", dir.path("state.db-wal"))] {
        let own = blake3::hash(&std::fs::read(&file)?).to_hex().to_string();
        assert_eq!(report[section]["blake3_before"], own.as_str(), "{section}");
        assert_eq!(report[section]["blake3_after"], own.as_str(), "{section}");
    }
    assert_eq!(report["output"]["sha256"], output.as_str());
    for format in ["text", "markdown"] {
        let (_, text, _) = run(&[
            "report".as_ref(),
            report_path.as_os_str(),
            "--format".as_ref(),
            format.as_ref(),
        ])?;
        for (what, hash) in [
            ("source", &source),
            ("log", &wal),
            ("output", &output),
            ("report", &own),
        ] {
            assert!(
                text.contains(hash.as_str()),
                "{format}: no {what} hash\n{text}"
            );
        }
        assert!(
            text.contains("2026-117") && text.contains("J. O"),
            "{format}\n{text}"
        );
        // The command line reads back as the words it was.
        assert!(text.contains(r"'J. O'\''Doe'"), "{format}\n{text}");
    }
    Ok(())
}

/// `salvage report --format case`: the run as CASE/UCO JSON-LD. It parses, every node it
/// refers to is in it, it carries the hash of every file with the action's times, who ran
/// it and the case; and where CASE's own validator is (`case_validate`, from the PyPI
/// package `case-utils`, which `.ci/run` installs and names in `SALVAGE_CASE_VALIDATE`),
/// the graph conforms to the ontology.
#[test]
fn the_run_as_case_uco_json_ld_carries_every_hash_and_conforms() -> TestResult {
    let dir = Scratch::new("custody-case");
    let [src, dest, report_path] = recover_for_case(&dir, "Ann Lee")?;
    let (_, text, _) = run(&[
        "report".as_ref(),
        report_path.as_os_str(),
        "--format".as_ref(),
        "case".as_ref(),
    ])?;
    let doc: serde_json::Value = serde_json::from_str(&text)?;
    let graph = crate::case_graph(&doc)?;
    let of_type = |t: &'static str| graph.iter().filter(move |n| n["@type"] == t);
    let action = of_type("case-investigation:InvestigativeAction")
        .next()
        .ok_or("no action")?;
    for time in ["uco-action:startTime", "uco-action:endTime"] {
        assert_eq!(action[time]["@type"], "xsd:dateTime", "{time}");
    }
    assert_eq!(
        action["uco-action:object"].as_array().map(Vec::len),
        Some(2)
    );
    assert_eq!(
        action["uco-action:result"].as_array().map(Vec::len),
        Some(2)
    );
    let performer = action["uco-action:performer"]["@id"]
        .as_str()
        .ok_or("performer")?;
    assert!(graph
        .iter()
        .any(|n| n["@id"] == performer && n["uco-core:name"] == "Ann Lee"));
    assert!(of_type("case-investigation:Investigation").any(|n| n["uco-core:name"] == "2026-117"));
    let hashes: Vec<&str> = of_type("uco-observable:File")
        .flat_map(|f| f["uco-core:hasFacet"].as_array().into_iter().flatten())
        .flat_map(|facet| {
            facet["uco-observable:hash"]
                .as_array()
                .into_iter()
                .flatten()
        })
        .filter(|h| h["uco-types:hashMethod"] == "SHA256")
        .filter_map(|h| h["uco-types:hashValue"]["@value"].as_str())
        .collect();
    for file in [src.clone(), dir.path("state.db-wal"), dest, report_path] {
        let h = sha256(&file)?;
        assert!(
            hashes.contains(&h.as_str()),
            "no hash of {}",
            file.display()
        );
    }
    // The ontology's own validator, where it is installed.
    let jsonld = dir.path("run.jsonld");
    std::fs::write(&jsonld, &text)?;
    crate::case_validate(&jsonld)?;
    Ok(())
}

/// `salvage` run with the size of any file it writes limited to `blocks` of 512 bytes
/// (`ulimit -f`, SIGXFSZ ignored): a write past it fails with "File too large", as one
/// on a full disk fails, at the same byte every time.
pub fn salvage_with_file_limit(blocks: u32) -> std::process::Command {
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {blocks}; exec \"$0\" \"$@\""
        ))
        .arg(env!("CARGO_BIN_EXE_salvage"));
    cmd
}

/// A copy into a bundle that fails while writing names the copy it was writing, not the
/// source it read ("cannot read `SRC`: File too large" sent the examiner to the
/// evidence): exit 1, the partial copy left at `DIR.incomplete`.
#[test]
fn a_failed_write_names_the_copy_not_the_source() -> TestResult {
    let dir = Scratch::new("custody-write-fails");
    let db = wal_store(&dir)?;
    let bundle = dir.path("case-7");
    let out = salvage_with_file_limit(8)
        .arg("quarantine")
        .arg(&db)
        .arg("--to")
        .arg(&bundle)
        .output()?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let copy = dir.path("case-7.incomplete/state.db");
    assert!(
        err.contains(&format!("cannot write `{}`", copy.display())),
        "{err}"
    );
    assert!(!err.contains("cannot read"), "{err}");
    Ok(())
}

/// `verify` of what is not a bundle is refused (exit 2, "not a bundle", nothing on stdout,
/// nothing created): a file, a loop of symbolic links, nothing, a folder without a
/// manifest, a folder whose manifest is a symbolic link (never followed).
#[test]
fn verify_refuses_what_is_not_a_bundle() -> TestResult {
    let dir = Scratch::new("custody-not-a-bundle");
    let db = wal_store(&dir)?;
    let bundle = dir.path("bundle");
    recovery::bundle::make(&db, &bundle, "quarantine", &Default::default())?;
    std::os::unix::fs::symlink("loop", dir.path("loop"))?;
    std::fs::create_dir(dir.path("empty"))?;
    std::fs::create_dir(dir.path("linked"))?;
    std::os::unix::fs::symlink(
        bundle.join("MANIFEST.json"),
        dir.path("linked/MANIFEST.json"),
    )?;
    let before = dir.listing();
    for target in [
        db,
        dir.path("loop"),
        dir.path("missing"),
        dir.path("empty"),
        dir.path("linked"),
    ] {
        let (code, out, err) = run(&["verify".as_ref(), target.as_os_str()])?;
        assert_eq!(code, 2, "{}: {err}", target.display());
        assert!(
            err.contains("is not a bundle") && err.contains("hint:"),
            "{err}"
        );
        assert!(out.is_empty(), "{out}");
        assert_eq!(dir.listing(), before);
    }
    Ok(())
}

/// A bundle keeps times: each copy has its original's modification time (here set to
/// 2001, long before the copy), and the manifest the time its `created_utc` says; a
/// backup's copies too. `verify` compares them with the manifest.
#[test]
fn a_bundle_keeps_its_originals_times() -> TestResult {
    let dir = Scratch::new("custody-times");
    let db = wal_store(&dir)?;
    let then = std::time::UNIX_EPOCH + std::time::Duration::new(981_173_106, 123_456_789);
    for suffix in ["", "-wal", "-shm"] {
        let file = std::fs::File::options()
            .write(true)
            .open(format!("{}{suffix}", db.display()))?;
        file.set_modified(then)?;
    }
    let bundle = dir.path("bundle");
    let manifest = recovery::bundle::make(&db, &bundle, "quarantine", &Default::default())?;
    assert_eq!(manifest.format_version, 2);
    for f in &manifest.files {
        assert_eq!(
            std::fs::metadata(bundle.join(&f.path))?.modified()?,
            then,
            "{}",
            f.path
        );
        assert_eq!(f.mtime_utc.as_deref(), Some("2001-02-03T04:05:06Z"));
    }
    let created = humantime::parse_rfc3339(&manifest.created_utc)?;
    assert_eq!(
        std::fs::metadata(bundle.join("MANIFEST.json"))?.modified()?,
        created
    );
    let backups = dir.path("backups");
    std::fs::create_dir(&backups)?;
    let made = recovery::backup::backup(&recovery::backup::BackupOptions {
        src: db.clone(),
        to: backups,
        keep: None,
        who: Default::default(),
    })?;
    let copy = made.path.join("state.db");
    assert_eq!(
        std::fs::metadata(copy)?.modified()?,
        std::fs::metadata(&db)?.modified()?
    );
    let created = humantime::parse_rfc3339(&made.manifest.created_utc)?;
    assert_eq!(
        std::fs::metadata(made.path.join("MANIFEST.json"))?.modified()?,
        created
    );
    Ok(())
}

/// A quarantine of the WAL store made by the binary into `dir/NAME` for case 7 by J. Doe,
/// the source's files dated 2001 first (so that a copy written again is seen): the bundle
/// and the manifest's SHA-256 it printed for the case notes.
fn quarantined(dir: &Scratch, name: &str) -> Got<(std::path::PathBuf, String)> {
    let db = dir.path("state.db");
    if !db.exists() {
        wal_store(dir)?;
        let then = std::time::UNIX_EPOCH + std::time::Duration::from_secs(981_173_106);
        for suffix in ["", "-wal", "-shm"] {
            let path = format!("{}{suffix}", db.display());
            std::fs::File::options()
                .write(true)
                .open(path)?
                .set_modified(then)?;
        }
    }
    let bundle = dir.path(name);
    let (code, out, err) = run(&[
        "quarantine".as_ref(),
        db.as_os_str(),
        "--to".as_ref(),
        bundle.as_os_str(),
        "--case".as_ref(),
        "7".as_ref(),
        "--examiner=J. Doe".as_ref(),
    ])?;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("record this hash in the case notes"), "{out}");
    let hash = out
        .lines()
        .find_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            ["manifest", "sha256", hash, "MANIFEST.json"] => Some(hash.to_owned()),
            _ => None,
        })
        .ok_or(format!("no manifest hash in {out}"))?;
    assert_eq!(hash, sha256(&bundle.join("MANIFEST.json"))?);
    Ok((bundle, hash))
}

/// Writes `bytes` over the bundle's file at `path` (made read-only) and gives it back
/// its modification time, as a careful hand would.
pub fn overwrite(path: &std::path::Path, bytes: &[u8]) -> TestResult {
    let meta = std::fs::metadata(path)?;
    let mut perms = meta.permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(path, perms)?;
    std::fs::write(path, bytes)?;
    std::fs::File::options()
        .write(true)
        .open(path)?
        .set_modified(meta.modified()?)?;
    Ok(())
}

/// Edits the bundle's manifest as JSON, written back as salvage lays it out, its time
/// kept.
pub fn edit_manifest(
    bundle: &std::path::Path,
    edit: impl FnOnce(&mut serde_json::Value),
) -> TestResult {
    let path = bundle.join("MANIFEST.json");
    let mut manifest: serde_json::Value = serde_json::from_slice(&std::fs::read(&path)?)?;
    edit(&mut manifest);
    overwrite(&path, &serde_json::to_vec_pretty(&manifest)?)
}

/// `verify --json` of `bundle` (with `--manifest-sha256 HASH` when given): its exit code
/// and the `kind` of each difference.
fn verify_kinds(bundle: &std::path::Path, anchor: Option<&str>) -> Got<(i32, Vec<String>)> {
    let mut args: Vec<&std::ffi::OsStr> =
        vec!["verify".as_ref(), bundle.as_os_str(), "--json".as_ref()];
    if let Some(hash) = anchor {
        args.push("--manifest-sha256".as_ref());
        args.push(hash.as_ref());
    }
    let (code, out, err) = run(&args)?;
    let json: serde_json::Value =
        serde_json::from_str(&out).map_err(|e| format!("{e}: {out}{err}"))?;
    let kinds = json["differences"]
        .as_array()
        .ok_or("no differences")?
        .iter()
        .filter_map(|d| d["kind"].as_str().map(str::to_owned))
        .collect();
    Ok((code, kinds))
}

/// A change to a bundle, by name.
pub type Tamper = Box<dyn Fn(&std::path::Path) -> TestResult>;

/// For each case, a new bundle from `make` (given the case's number) that verifies
/// intact, then tampered with: `verify` exits 3 and names a difference of the case's kind.
pub fn assert_each_found(
    cases: &[(&str, Tamper)],
    make: impl Fn(usize) -> Got<std::path::PathBuf>,
) -> TestResult {
    for (n, (kind, tamper)) in cases.iter().enumerate() {
        let bundle = make(n)?;
        let untouched = verify_kinds(&bundle, None)?;
        assert_eq!(untouched, (0, vec![]), "case {n}, untouched");
        tamper(&bundle)?;
        let (code, kinds) = verify_kinds(&bundle, None)?;
        assert_eq!(code, 3, "case {n} ({kind}): {kinds:?}");
        assert!(
            kinds.iter().any(|k| k == kind),
            "case {n}: no {kind} in {kinds:?}"
        );
    }
    Ok(())
}

/// `verify` proves a bundle, not only its files' hashes: each edit of the manifest's
/// fields (made as salvage lays it out, its time kept), a file replaced by a link to an
/// identical copy outside, a folder or link added, a copy written again, is a difference
/// of its own kind (exit 3). A flipped byte whose hash and size were put into the
/// manifest passes every check but one: the manifest's SHA-256 recorded when it was made
/// (`--manifest-sha256`).
#[test]
fn verify_finds_every_edit_of_a_bundle() -> TestResult {
    let dir = Scratch::new("custody-verify-edits");
    let (bundle, hash) = quarantined(&dir, "pristine")?;
    assert_eq!(verify_kinds(&bundle, None)?, (0, vec![]));
    assert_eq!(verify_kinds(&bundle, Some(&hash))?, (0, vec![]));
    assert_eq!(verify_kinds(&bundle, Some(&hash.to_uppercase()))?.0, 0);
    let set = |field: &'static str, to: serde_json::Value| -> Tamper {
        Box::new(move |b| edit_manifest(b, |m| m[field] = to.clone()))
    };
    let set_file = |n: usize, field: &'static str, to: &'static str| -> Tamper {
        Box::new(move |b| edit_manifest(b, |m| m["files"][n][field] = to.into()))
    };
    let outside = dir.path("outside-wal");
    let cases: Vec<(&str, Tamper)> = vec![
        ("not_as_commanded", set("examiner", "Someone Else".into())),
        ("not_as_commanded", set("case", "8".into())),
        ("created", set("created_utc", "2020-01-01T00:00:00Z".into())),
        ("source_name", set("source", "/elsewhere/other.db".into())),
        ("unknown_kind", set("kind", "evidence".into())),
        ("unknown_format", set("format_version", 9.into())),
        ("unknown_field", set("note", "added".into())),
        (
            "command_not_kind",
            Box::new(|b| edit_manifest(b, |m| m["command"][1] = "backup".into())),
        ),
        ("mtime", set_file(0, "mtime_utc", "2019-05-05T05:05:05Z")),
        ("role_name", set_file(1, "role", "journal")),
        // The database listed as the log: it begins as a database, not a log.
        ("role_content", set_file(0, "role", "wal")),
        ("role_not_in_kind", set_file(0, "role", "other")),
        ("unknown_role", set_file(0, "role", "main")),
        ("unknown_field", set_file(1, "note", "added")),
        (
            "duplicate",
            Box::new(|b| {
                edit_manifest(b, |m| {
                    let copy = m["files"][1].clone();
                    if let Some(files) = m["files"].as_array_mut() {
                        files.push(copy);
                    }
                })
            }),
        ),
        (
            "unexpected_root",
            set(
                "root",
                serde_json::json!({"name": "state.db", "folder": false}),
            ),
        ),
        (
            "manifest_rewritten",
            Box::new(|b| {
                let path = b.join("MANIFEST.json");
                let text = std::fs::read_to_string(&path)?;
                let twice = text.replacen("  \"case\":", "  \"case\": \"8\",\n  \"case\":", 1);
                overwrite(&path, twice.as_bytes())
            }),
        ),
        (
            "symlink",
            Box::new(move |b| {
                let wal = b.join("state.db-wal");
                std::fs::copy(&wal, &outside)?;
                std::fs::remove_file(&wal)?;
                std::os::unix::fs::symlink(&outside, &wal)?;
                Ok(())
            }),
        ),
        (
            "symlink",
            Box::new(|b| Ok(std::os::unix::fs::symlink("state.db", b.join("notes"))?)),
        ),
        (
            "unlisted_folder",
            Box::new(|b| Ok(std::fs::create_dir(b.join("empty"))?)),
        ),
        (
            "mtime",
            Box::new(|b| {
                let path = b.join("state.db");
                let bytes = std::fs::read(&path)?;
                overwrite(&path, &bytes)?;
                std::fs::File::options()
                    .write(true)
                    .open(&path)?
                    .set_modified(std::time::SystemTime::now())?;
                Ok(())
            }),
        ),
    ];
    assert_each_found(&cases, |n| Ok(quarantined(&dir, &format!("case-{n}"))?.0))?;
    // A byte flipped, and the manifest made to agree: only the anchor tells.
    let (bundle, hash) = quarantined(&dir, "forged")?;
    let db = bundle.join("state.db");
    let mut bytes = std::fs::read(&db)?;
    bytes[2000] ^= 0x01;
    overwrite(&db, &bytes)?;
    // Written as salvage writes it: every check but the anchor passes.
    let mut manifest = recovery::bundle::Manifest::read(&bundle)?;
    manifest.files[0].sha256 = sha256(&db)?;
    overwrite(
        &bundle.join("MANIFEST.json"),
        &serde_json::to_vec_pretty(&manifest)?,
    )?;
    assert_eq!(verify_kinds(&bundle, None)?, (0, vec![]));
    let (code, text, _) = run(&[
        "verify".as_ref(),
        bundle.as_os_str(),
        "--manifest-sha256".as_ref(),
        hash.as_ref(),
    ])?;
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("is not the manifest recorded"), "{text}");
    assert_eq!(
        verify_kinds(&bundle, Some(&hash))?,
        (3, vec!["manifest_changed".to_owned()])
    );
    let (code, _, err) = run(&[
        "verify".as_ref(),
        bundle.as_os_str(),
        "--manifest-sha256".as_ref(),
        "abc".as_ref(),
    ])?;
    assert_eq!(code, 2, "a hash that is not one is refused: {err}");
    Ok(())
}
