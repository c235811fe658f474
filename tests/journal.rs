//! A hot rollback journal: the application crashed in the middle of a transaction, and
//! the main file holds some of its uncommitted changes while `-journal` holds the pages
//! as they were. The salvage reads the database as SQLite would after rolling back, and
//! never writes the journal or beside it.

use recovery::{LossSignal, Outcome, RecoverOptions};
use std::path::Path;

use rusqlite::Connection;

use crate::recover::rows_of;
use crate::{recover_expecting, Scratch, TestResult};

/// Builds `dir/evidence.db` and `dir/evidence.db-journal` as a crash leaves them: a
/// committed table, then a transaction whose changes spilled into the main file (a one-page
/// cache), copied before it ended. Returns the committed rows.
fn crashed_mid_transaction(
    dir: &Scratch,
) -> rusqlite::Result<std::collections::BTreeMap<i64, Vec<fixtures::Value>>> {
    let live = dir.path("live.db");
    let conn = Connection::open(&live)?;
    conn.execute_batch(
        "PRAGMA journal_mode = DELETE;
         CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT NOT NULL);",
    )?;
    let tx = conn.unchecked_transaction()?;
    for i in 0..3000i64 {
        tx.execute(
            "INSERT INTO notes(id, body) VALUES (?1, ?2)",
            (
                i,
                format!("committed note {i} {}", "x".repeat((i % 50) as usize)),
            ),
        )?;
    }
    tx.commit()?;
    let committed = rows_of(&live, "notes", false);
    conn.execute_batch(
        "PRAGMA cache_size = 1;
         BEGIN;
         UPDATE notes SET body = 'uncommitted ' || id WHERE id % 2 = 0;
         DELETE FROM notes WHERE id % 5 = 0;
         INSERT INTO notes(body) SELECT 'uncommitted new' FROM notes LIMIT 500;",
    )?;
    let journal = Path::new(&format!("{}-journal", live.display())).to_path_buf();
    assert!(journal.exists(), "the transaction has a journal");
    std::fs::copy(&live, dir.path("evidence.db")).unwrap();
    std::fs::copy(&journal, dir.path("evidence.db-journal")).unwrap();
    conn.execute_batch("ROLLBACK")?;
    Ok(committed)
}

#[test]
fn a_hot_journal_is_rolled_back_and_the_committed_rows_come_back() -> TestResult {
    let dir = Scratch::new("journal-hot");
    let committed = crashed_mid_transaction(&dir)?;
    let src = dir.path("evidence.db");
    let journal = dir.path("evidence.db-journal");
    let journal_bytes = std::fs::read(&journal)?;
    // Read as it is, the main file holds uncommitted changes (and is not consistent): by
    // the binary, for its `--no-journal`.
    let dest = dir.path("as-is.db");
    recover_expecting(&src, &dest, &["--allow-partial", "--no-journal"], 3)?;
    assert_ne!(rows_of(&dest, "notes", false), committed);

    let dest = dir.path("out.db");
    let done = crate::recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Complete)?;
    assert_eq!(rows_of(&dest, "notes", false), committed);
    let j = &done.report.journal;
    assert!(j.hot);
    assert!(j.rolled_back);
    assert!(j.pages_restored > 0, "{j:?}");
    assert_eq!(j.records_ignored, 0);
    assert!(
        j.hashes
            .blake3_before
            .as_ref()
            .is_some_and(|h| h.len() == 64),
        "{j:?}"
    );
    assert_eq!(j.hashes.blake3_before, j.hashes.blake3_after);
    assert!(done
        .report
        .warnings
        .iter()
        .any(|w| w.contains("hot rollback journal")));
    // The journal is evidence: read, never changed, never deleted.
    assert_eq!(std::fs::read(&journal)?, journal_bytes);
    Ok(())
}

/// A damaged record of the journal cannot be rolled back: the pages it held may carry
/// uncommitted changes, and that is loss.
#[test]
fn a_damaged_hot_journal_is_loss() -> TestResult {
    let dir = Scratch::new("journal-damaged");
    crashed_mid_transaction(&dir)?;
    let src = dir.path("evidence.db");
    let journal = dir.path("evidence.db-journal");
    let mut bytes = std::fs::read(&journal)?;
    // The last byte of the first record (its checksum), after the header sector.
    let page_size = u32::from_be_bytes(bytes[24..28].try_into()?) as usize;
    let sector = u32::from_be_bytes(bytes[20..24].try_into()?) as usize;
    bytes[sector + 4 + page_size + 3] ^= 0xff;
    std::fs::write(&journal, &bytes)?;
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(
        &crate::allow_partial(&src, &dest),
        Outcome::PartialCommitted,
    )?;
    assert!(done.report.journal.records_ignored > 0);
    crate::assert_signal!(done, LossSignal::JournalRecordsDamaged { records } if *records > 0);
    Ok(())
}

/// A hot journal whose header lies about the page size (64 KiB written over 4096) is
/// evidence about nothing: it is not rolled back, and the database is read at its own
/// page size, every row the file holds back as it holds it (what `--no-journal` gives).
/// Read at the journal's size, the file gave a fraction of its rows and `lost_and_found`
/// the rest.
#[test]
fn a_journal_lying_about_the_page_size_never_redefines_the_database() -> TestResult {
    let dir = Scratch::new("journal-page-size");
    crashed_mid_transaction(&dir)?;
    let src = dir.path("evidence.db");
    let journal = dir.path("evidence.db-journal");
    // As the file stands, without its journal: what the refused journal leaves.
    let as_is = dir.path("as-is.db");
    recover_expecting(&src, &as_is, &["--allow-partial", "--no-journal"], 3)?;
    let mut bytes = std::fs::read(&journal)?;
    bytes[24..28].copy_from_slice(&[0x00, 0x01, 0x00, 0x00]);
    std::fs::write(&journal, &bytes)?;
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(
        &crate::allow_partial(&src, &dest),
        Outcome::PartialCommitted,
    )?;
    assert_eq!(done.report.geometry.page_size, 4096);
    assert!(
        !done.report.journal.rolled_back,
        "{:?}",
        done.report.journal
    );
    crate::assert_signal!(
        done,
        LossSignal::JournalPageSizeRefused {
            journal: 65536,
            database: 4096
        }
    );
    assert_eq!(
        rows_of(&dest, "notes", false),
        rows_of(&as_is, "notes", false)
    );
    // `inspect` says so beside the file: hot, refused, nothing restored.
    let out = crate::run_salvage(&[
        std::ffi::OsStr::new("inspect"),
        src.as_os_str(),
        std::ffi::OsStr::new("--json"),
    ])?;
    let inspected: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let sidecar = &inspected["sidecars"]["journal"];
    assert_eq!(
        (
            &sidecar["hot"],
            &sidecar["refused"],
            &sidecar["pages_restored"]
        ),
        (&true.into(), &true.into(), &0.into()),
        "{sidecar}"
    );
    assert_eq!(
        sidecar["findings"]["listed"][0]["kind"], "journal_page_size_disagrees",
        "{sidecar}"
    );
    Ok(())
}

/// A hot journal whose header says the database had billions of pages, and one of whose
/// records names a page billions past the file's end, does not make the file billions of
/// pages long: a database grows by writing its new pages, and one held page that far out
/// is a claim. It is named (`log_pages_out_of_reach`) and not read. It once made a 15-page
/// file 3 billion pages long: 35 s to plan its orphan pages, and as many reported lost.
#[test]
fn a_journal_page_billions_past_the_end_does_not_lengthen_the_file() -> TestResult {
    let dir = Scratch::new("journal-reach");
    crashed_mid_transaction(&dir)?;
    let src = dir.path("evidence.db");
    let journal = dir.path("evidence.db-journal");
    let file_pages = (std::fs::metadata(&src)?.len() / 4096) as u32;
    let mut bytes = std::fs::read(&journal)?;
    let field = |b: &[u8], at: usize| u32::from_be_bytes(b[at..at + 4].try_into().unwrap());
    let (count, sector, page_size) = (field(&bytes, 8), field(&bytes, 20), field(&bytes, 24));
    let last = (sector + (count - 1) * (page_size + 8)) as usize;
    bytes[16..20].copy_from_slice(&0xc000_0000u32.to_be_bytes());
    bytes[last..last + 4].copy_from_slice(&3_000_000_000u32.to_be_bytes());
    std::fs::write(&journal, &bytes)?;
    let done = recovery::recover(
        &crate::allow_partial(&src, &dir.path("out.db")),
        &recovery::Quiet,
    )?;
    let geometry = &done.report.geometry;
    assert!(geometry.page_count <= file_pages + 1, "{geometry:?}");
    assert!(
        geometry
            .findings
            .listed
            .iter()
            .any(|f| f.kind == "log_pages_out_of_reach"),
        "{geometry:?}"
    );
    assert!(done.report.journal.rolled_back);
    Ok(())
}

/// A multi-database transaction's journal names its super-journal: when that file is gone
/// the transaction committed, and SQLite rolls nothing back; neither does the salvage.
#[test]
fn a_journal_whose_super_journal_is_gone_is_not_rolled_back() -> TestResult {
    let dir = Scratch::new("journal-super");
    crashed_mid_transaction(&dir)?;
    let src = dir.path("evidence.db");
    let journal = dir.path("evidence.db-journal");
    let mut bytes = std::fs::read(&journal)?;
    let page_size = u32::from_be_bytes(bytes[24..28].try_into()?);
    let name = dir
        .path("gone.db-mj0123ABCD")
        .display()
        .to_string()
        .into_bytes();
    bytes.extend_from_slice(&(0x4000_0000 / page_size + 1).to_be_bytes());
    bytes.extend_from_slice(&name);
    bytes.extend_from_slice(&(name.len() as u32).to_be_bytes());
    let sum: u32 = name.iter().map(|b| u32::from(*b)).sum();
    bytes.extend_from_slice(&sum.to_be_bytes());
    bytes.extend_from_slice(&[0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7]);
    std::fs::write(&journal, &bytes)?;
    let dest = dir.path("out.db");
    let done = recovery::recover(&crate::allow_partial(&src, &dest), &recovery::Quiet)?;
    crate::assert_counts_add_up(&dest, &done.report);
    let journal = &done.report.journal;
    assert!(journal.hot, "{journal:?}");
    assert!(!journal.rolled_back);
    assert!(journal.note.contains("does not exist"));
    // The main file is read as it is: the same rows as with the journal left out.
    let as_is = dir.path("as-is.db");
    let options = RecoverOptions {
        journal: recovery::Log::Off,
        ..crate::allow_partial(&src, &as_is)
    };
    recovery::recover(&options, &recovery::Quiet)?;
    assert_eq!(
        rows_of(&dest, "notes", false),
        rows_of(&as_is, "notes", false)
    );
    Ok(())
}

/// The output's own journal is a file SQLite deletes when it opens the output: naming it
/// as the evidence journal is refused before anything is created.
#[test]
fn the_outputs_own_journal_is_never_read_as_evidence() -> TestResult {
    let dir = Scratch::new("journal-own");
    crashed_mid_transaction(&dir)?;
    let src = dir.path("evidence.db");
    let trap = dir.path("out.db.incomplete-journal");
    std::fs::copy(dir.path("evidence.db-journal"), &trap)?;
    let dest = dir.path("out.db");
    let trap_arg = trap.display().to_string();
    let out = crate::recover_file(&src, &dest, &["--journal", &trap_arg])?;
    assert_eq!(out.status.code(), Some(2));
    assert!(trap.exists(), "the evidence journal is still there");
    assert!(!dir.path("out.db.incomplete").exists());
    Ok(())
}

/// `inspect` reads the main file alone, and says what lies beside it.
#[test]
fn inspect_names_a_hot_journal_beside_the_file() -> TestResult {
    let dir = Scratch::new("journal-inspect");
    crashed_mid_transaction(&dir)?;
    let src = dir.path("evidence.db");
    let out = crate::salvage()
        .arg("inspect")
        .arg(&src)
        .arg("--json")
        .output()?;
    let r: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let j = &r["sidecars"]["journal"];
    assert_eq!(j["hot"], true, "{r}");
    assert!(j["records_valid"].as_u64() > Some(0));
    assert_eq!(r["sidecars"]["wal"], serde_json::Value::Null);
    assert!(r["verdict"]["summary"]
        .to_string()
        .contains("hot rollback journal"));
    let human = crate::salvage().arg("inspect").arg(&src).output()?;
    assert!(String::from_utf8_lossy(&human.stdout).contains("beside: -journal"));
    Ok(())
}

/// What stands beside the source under a log's name and is no plain file is named in the
/// report: a folder at `SRC-wal` (not read) and a symbolic link at `SRC-journal` (read
/// where it leads, as SQLite reads it). Both were passed over without a word.
#[test]
fn a_folder_or_a_link_beside_the_source_is_named() -> TestResult {
    let dir = Scratch::new("journal-beside");
    let committed = crashed_mid_transaction(&dir)?;
    let src = dir.path("evidence.db");
    std::fs::create_dir(dir.path("evidence.db-wal"))?;
    std::fs::rename(dir.path("evidence.db-journal"), dir.path("kept-journal"))?;
    std::os::unix::fs::symlink("kept-journal", dir.path("evidence.db-journal"))?;
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Complete)?;
    assert_eq!(rows_of(&dest, "notes", false), committed);
    assert!(done.report.journal.rolled_back);
    assert!(
        done.report.wal.note.contains("is a folder"),
        "{}",
        done.report.wal.note
    );
    assert!(
        done.report
            .journal
            .note
            .contains("symbolic link to `kept-journal`"),
        "{}",
        done.report.journal.note
    );
    assert!(
        done.report
            .warnings
            .iter()
            .any(|w| w.contains("evidence.db-wal` is a folder")),
        "{:?}",
        done.report.warnings
    );
    Ok(())
}
