//! Write-ahead logs: committed frames are read instead of the main file's pages,
//! uncommitted and broken frames are ignored and counted, and the log is evidence too.

use recovery::{LossSignal, Outcome, RecoverOptions, Recovery};
use std::ffi::OsStr;

use fixtures::WalFixture;

use crate::recover::{assert_same_rows, rows_of};
use crate::{run_salvage, Scratch, TestResult};

fn setup(name: &str, wal: impl Fn(&mut Vec<u8>)) -> (Scratch, WalFixture) {
    let f = fixtures::build_agent_with_wal();
    let dir = Scratch::new(&format!("wal-{name}"));
    std::fs::write(dir.path("state.db"), &f.main).unwrap();
    let mut log = f.wal.clone();
    wal(&mut log);
    std::fs::write(dir.path("state.db-wal"), &log).unwrap();
    (dir, f)
}

fn expected(
    tables: &[fixtures::Table],
    name: &str,
) -> std::collections::BTreeMap<i64, Vec<fixtures::Value>> {
    let t = tables.iter().find(|t| t.name == name).unwrap();
    t.rows
        .iter()
        .map(|r| (r.rowid.unwrap_or(0), r.values.clone()))
        .collect()
}

fn recover(dir: &Scratch, extra: &[&str]) -> std::io::Result<std::process::Output> {
    let (src, dest) = (dir.path("state.db"), dir.path("out.db"));
    let mut args = vec![
        OsStr::new("recover"),
        src.as_os_str(),
        OsStr::new("-o"),
        dest.as_os_str(),
    ];
    args.extend(extra.iter().map(OsStr::new));
    run_salvage(&args)
}

/// Recovers `dir/state.db` into `dir/out.db` in-process, with `allow_partial`, expecting
/// `outcome`.
fn recover_in_process(
    dir: &Scratch,
    allow_partial: bool,
    outcome: Outcome,
) -> Result<Recovery, recovery::Error> {
    let options = RecoverOptions {
        allow_partial,
        ..RecoverOptions::new(dir.path("state.db"), dir.path("out.db"))
    };
    crate::recover_in_process(&options, outcome)
}

fn report(dir: &Scratch) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.path("out.db.report.json")).unwrap()).unwrap()
}

#[test]
fn committed_frames_are_recovered_and_the_unfinished_one_ignored() -> TestResult {
    let (dir, f) = setup("committed", |_| {});
    let before = std::fs::read(dir.path("state.db-wal"))?;
    let done = recover_in_process(&dir, false, Outcome::Complete)?;
    for t in ["sessions", "messages", "state_meta"] {
        assert_same_rows(
            &rows_of(&dir.path("out.db"), t, false),
            &expected(&f.tables, t),
            t,
        );
    }
    let wal = &done.report.wal;
    assert!(wal.used);
    assert!(wal.pages_from_wal > 0);
    assert_eq!(wal.frames_present, wal.frames_committed + 1);
    assert_eq!(
        wal.findings.listed.first().map(|f| f.kind.as_str()),
        Some("wal_frames_ignored")
    );
    assert!(wal
        .hashes
        .blake3_before
        .as_ref()
        .is_some_and(|h| h.len() == 64));
    assert_eq!(wal.hashes.blake3_before, wal.hashes.blake3_after);
    // Each file's digests are its own, though the log is hashed on a thread of its own
    // from the run's start and the main file after its survey.
    let sha256 = crate::custody::sha256;
    assert_eq!(
        wal.hashes.sha256_before,
        Some(sha256(&dir.path("state.db-wal"))?)
    );
    assert_eq!(
        done.report.source.sha256_before,
        sha256(&dir.path("state.db"))?
    );
    assert_eq!(done.report.journal.hashes.sha256_before, None);
    // The log is evidence: unchanged, and no -shm appeared beside it.
    assert_eq!(std::fs::read(dir.path("state.db-wal"))?, before);
    assert_eq!(
        dir.listing(),
        vec!["out.db", "out.db.report.json", "state.db", "state.db-wal"]
    );
    Ok(())
}

#[test]
fn no_wal_reads_the_main_file_alone() -> TestResult {
    let (dir, f) = setup("no-wal", |_| {});
    let out = recover(&dir, &["--no-wal"])?;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_same_rows(
        &rows_of(&dir.path("out.db"), "messages", false),
        &expected(&f.tables_without_wal, "messages"),
        "rows",
    );
    assert_eq!(report(&dir)["wal"]["used"], false);
    Ok(())
}

/// The log's last commit frame broken (only a transaction never committed after it, if
/// anything): the transaction it commits is lost (a write torn after the application was
/// told of the commit, or damage), never taken for an open transaction's.
#[test]
fn a_broken_last_commit_frame_is_reported_as_loss() -> TestResult {
    let (dir, _) = setup("torn-last", |wal| {
        let page_size = u32::from_be_bytes([wal[8], wal[9], wal[10], wal[11]]) as usize;
        let last_commit = wal[32..]
            .chunks_exact(24 + page_size)
            .rposition(|f| f[4..8] != [0; 4])
            .expect("a commit");
        fixtures::wal::tear_frame(wal, last_commit as u32 + 1);
    });
    let done = recover_in_process(&dir, false, Outcome::Withheld)?;
    crate::assert_signal!(done, LossSignal::WalFramesIgnored { .. });
    Ok(())
}

#[test]
fn torn_frame_ends_the_log_and_is_reported_as_loss() -> TestResult {
    let (dir, f) = setup("torn", |wal| fixtures::wal::tear_frame(wal, 2));
    let done = recover_in_process(&dir, false, Outcome::Withheld)?;
    assert!(done.verdict().loss_detected);
    crate::assert_signal!(done, LossSignal::WalFramesIgnored { frame: 2, .. });
    // Only what was committed before the torn frame is read; the output is withheld.
    assert!(done.report.wal.frames_committed < 2);
    assert!(!dir.path("out.db").exists());
    assert_ne!(
        expected(&f.tables, "messages"),
        expected(&f.tables_without_wal, "messages")
    );
    Ok(())
}

#[test]
fn unusable_log_header_is_loss_not_silence() -> TestResult {
    let (dir, f) = setup("bad-header", |wal| wal[0] ^= 0xff);
    let done = recover_in_process(&dir, true, Outcome::PartialCommitted)?;
    let wal = &done.report.wal;
    assert!(!wal.used);
    assert_eq!(
        wal.findings.listed.first().map(|f| f.kind.as_str()),
        Some("wal_header_invalid")
    );
    // The main file's state is still recovered in full.
    assert_same_rows(
        &rows_of(&dir.path("out.db"), "messages", false),
        &expected(&f.tables_without_wal, "messages"),
        "rows",
    );
    Ok(())
}

/// `inspect` reads the main file alone, and counts the log's frames beside it.
#[test]
fn inspect_counts_the_frames_of_the_log_beside_the_file() -> TestResult {
    let (dir, _) = setup("inspect", |_| {});
    let out = run_salvage(&[
        OsStr::new("inspect"),
        dir.path("state.db").as_os_str(),
        OsStr::new("--json"),
    ])?;
    let r: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let w = &r["sidecars"]["wal"];
    assert_eq!(w["usable"], true, "{r}");
    let (present, committed) = (
        w["frames_present"].as_u64().unwrap(),
        w["frames_committed"].as_u64().unwrap(),
    );
    assert!(committed > 0 && committed < present, "{w}");
    assert!(r["verdict"]["summary"]
        .to_string()
        .contains("write-ahead log"));
    Ok(())
}

/// The log re-laid at `size`-byte frames: every frame's header kept, its image cut or
/// padded with zeros, the header's page size rewritten, every checksum recomputed. A log
/// that verifies throughout and lies about the page size, as a forger would write it.
fn relaid(wal: &[u8], size: usize) -> Vec<u8> {
    let old = u32::from_be_bytes(wal[8..12].try_into().unwrap()) as usize;
    let mut out = wal[..32].to_vec();
    out[8..12].copy_from_slice(&(size as u32).to_be_bytes());
    for frame in wal[32..].chunks_exact(24 + old) {
        out.extend_from_slice(&frame[..24]);
        let image = &frame[24..24 + old.min(size)];
        out.extend_from_slice(image);
        out.resize(out.len() + size - image.len(), 0);
    }
    fixtures::wal::rechecksum(&mut out);
    out
}

/// A log whose header gives another page size than the database's, and whose frames
/// verify at that size, is not the database's pages: SQLite takes the page size from page
/// 1, never from the log. It is not read, it is named, and the main file comes back whole
/// at its own page size, as `--no-wal` reads it. Read at the log's 1 KiB, the 4 KiB agent
/// store gave a fraction of its rows, as an inferred table.
#[test]
fn a_log_lying_about_the_page_size_never_redefines_the_database() -> TestResult {
    let (dir, f) = setup("page-size", |wal| *wal = relaid(wal, 1024));
    let done = recover_in_process(&dir, true, Outcome::PartialCommitted)?;
    assert_eq!(done.report.geometry.page_size, 4096);
    assert!(!done.report.wal.used, "{:?}", done.report.wal);
    crate::assert_signal!(
        done,
        LossSignal::WalPageSizeRefused {
            wal: 1024,
            database: 4096
        }
    );
    for t in ["sessions", "messages", "state_meta"] {
        assert_same_rows(
            &rows_of(&dir.path("out.db"), t, false),
            &expected(&f.tables_without_wal, t),
            t,
        );
    }
    // `inspect` says so beside the file.
    let out = run_salvage(&[
        OsStr::new("inspect"),
        dir.path("state.db").as_os_str(),
        OsStr::new("--json"),
    ])?;
    let inspected: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let wal = &inspected["sidecars"]["wal"];
    assert_eq!(wal["usable"], false, "{wal}");
    assert_eq!(
        wal["findings"]["listed"][0]["kind"], "wal_page_size_disagrees",
        "{wal}"
    );
    let summary = inspected["verdict"]["summary"].as_str().unwrap_or_default();
    assert!(summary.contains("not read: a write-ahead log"), "{summary}");
    Ok(())
}

/// A copy taken while a transaction was open in WAL mode: its pages spilled into the log
/// (a one-page cache), some written again in place, so that its frames fail their
/// checksums until a commit would put them right. SQLite reads the committed frames and
/// none of the open transaction's; so does the recovery: complete, no loss, the rows
/// SQLite reads.
#[test]
fn an_open_transactions_frames_in_the_log_are_no_loss() -> TestResult {
    use rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE as NO_CHECKPOINT;
    let dir = Scratch::new("wal-open-transaction");
    let live = dir.path("live.db");
    let conn = rusqlite::Connection::open(&live)?;
    conn.set_db_config(NO_CHECKPOINT, true)?;
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
         CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT);
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 500)
         INSERT INTO t SELECT x, printf('%0200d', x) FROM i;
         PRAGMA cache_size = 1;
         BEGIN;
         UPDATE t SET body = 'changed' WHERE id % 3 = 0;
         DELETE FROM t WHERE id % 7 = 0;
         UPDATE t SET body = 'again' WHERE id % 5 = 0;",
    )?;
    let (src, oracle) = (dir.path("copy.db"), dir.path("oracle.db"));
    fixtures::random::copy_with_logs(&live, &src)?;
    fixtures::random::copy_with_logs(&live, &oracle)?;
    conn.execute_batch("ROLLBACK")?;
    drop(conn);
    let log = std::fs::read(dir.path("copy.db-wal"))?;
    let wal = pager::wal::read_wal(&log).map_err(|f| f.to_string())?;
    assert!(
        wal.findings
            .iter()
            .any(|f| matches!(f, pager::Finding::WalFrameChecksumMismatch { .. })),
        "the open transaction's frames fail their checksums: {:?}",
        wal.findings
    );
    assert_eq!(wal.commits_past_break, 0);
    let rows = |db: &std::path::Path| -> rusqlite::Result<Vec<(i64, String)>> {
        let conn = rusqlite::Connection::open(db)?;
        conn.set_db_config(NO_CHECKPOINT, true)?;
        let v = conn
            .prepare("SELECT id, body FROM t ORDER BY id")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect();
        v
    };
    let want = rows(&oracle)?;
    assert_eq!(want.len(), 500, "SQLite reads the committed rows only");
    let dest = dir.path("out.db");
    let options = RecoverOptions {
        history: true,
        ..RecoverOptions::new(&src, &dest)
    };
    crate::recover_in_process(&options, Outcome::Complete)?;
    assert_eq!(rows(&dest)?, want);
    // What the open transaction was writing is evidence: its last updates, in frames
    // past the break too, are the log's uncommitted versions.
    let again: i64 = rusqlite::Connection::open(&dest)?.query_row(
        "SELECT count(*) FROM salvage_history WHERE source = 'wal uncommitted' AND c1 = 'again'",
        [],
        |r| r.get(0),
    )?;
    assert!(
        again > 0,
        "the open transaction's last updates are in its history"
    );
    Ok(())
}
