//! A hot rollback journal: the application crashed in the middle of a transaction, and
//! the main file holds some of its uncommitted changes while `-journal` holds the pages
//! as they were. The salvage reads the database as SQLite would after rolling back, and
//! never writes the journal or beside it.

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
    // Read as it is, the main file holds uncommitted changes (and is not consistent).
    let dest = dir.path("as-is.db");
    recover_expecting(&src, &dest, &["--allow-partial", "--no-journal"], 3)?;
    assert_ne!(rows_of(&dest, "notes", false), committed);

    let dest = dir.path("out.db");
    let r = recover_expecting(&src, &dest, &[], 0)?;
    assert_eq!(rows_of(&dest, "notes", false), committed);
    let j = &r["journal"];
    assert_eq!(j["hot"], true);
    assert_eq!(j["rolled_back"], true);
    assert!(j["pages_restored"].as_u64() > Some(0), "{j}");
    assert_eq!(j["records_ignored"], 0);
    assert_eq!(j["sha256_before"], j["sha256_after"]);
    assert!(r["warnings"].to_string().contains("hot rollback journal"));
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
    // The last byte of the first record (its checksum), after the 512-byte header sector.
    let page_size = u32::from_be_bytes(bytes[24..28].try_into()?) as usize;
    let sector = u32::from_be_bytes(bytes[20..24].try_into()?) as usize;
    bytes[sector + 4 + page_size + 3] ^= 0xff;
    std::fs::write(&journal, &bytes)?;
    let dest = dir.path("out.db");
    let r = recover_expecting(&src, &dest, &["--allow-partial"], 3)?;
    assert!(r["journal"]["records_ignored"].as_u64() > Some(0));
    crate::assert_loss_mentions(&r, "hot rollback journal are damaged");
    Ok(())
}
