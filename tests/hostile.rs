//! Hostile input: seeded random damage of every shape over real databases. Whatever the
//! bytes, the reader gives findings, never a panic or a hang, and every page a finding
//! names lies inside the input.

use fixtures::prng::SplitMix64;
use pager::{read_tree, BtreeWalk, Database, PageNo, TreeItem};

use crate::TestResult;

/// Reads everything the reader can read from `bytes` and checks the findings' pages.
fn read_everything(bytes: &[u8]) {
    let Ok(db) = Database::open(bytes) else {
        return;
    };
    let survey = pager::survey(&db);
    let pages = db.page_count();
    let findings = db.findings().iter().chain(survey.all_findings());
    for f in findings {
        if let Some(p) = f.page() {
            assert!(
                p.get() <= pages,
                "finding names a page outside the input: {f}"
            );
        }
        let _ = f.to_string();
    }
    for tree in &survey.trees {
        let (rows, _) = read_tree(&db, tree.root);
        for r in rows {
            assert!(r.location.page.get() <= pages);
        }
    }
    // Every page's cells and freeblocks, whatever the page is.
    for page in db.pages() {
        if let Ok(h) = page.btree_header() {
            for c in page.cells(&h).flatten() {
                if let Some(p) = c.cell.payload() {
                    let _ = db.assemble(p, c.location);
                }
            }
            let _ = page.freeblocks(&h).count();
            let _ = page.overlap_findings(&h);
        }
    }
    let _ = BtreeWalk::new(&db, PageNo::FIRST)
        .filter(|i| matches!(i, Ok(TreeItem::Cell(_))))
        .count();
}

#[test]
fn random_byte_damage_never_panics() -> TestResult {
    let mut rng = SplitMix64::new(0x5a17_a6e0);
    for f in fixtures::catalog()
        .into_iter()
        .filter(|f| f.bytes.len() <= 1 << 20)
    {
        for round in 0..40 {
            let mut bytes = f.bytes.clone();
            match round % 4 {
                // A burst of single-byte changes anywhere, the header included.
                0 => {
                    for _ in 0..1 + rng.range(0, 64) {
                        let at = rng.range(0, bytes.len() as u64 - 1) as usize;
                        bytes[at] = rng.next_u64() as u8;
                    }
                }
                // Structure fields: page headers and cell pointers of random pages.
                1 => {
                    let ps = f.options.page_size as usize;
                    for _ in 0..8 {
                        let page = rng.range(0, (bytes.len() / ps) as u64 - 1) as usize;
                        let at =
                            page * ps + if page == 0 { 100 } else { 0 } + rng.range(0, 24) as usize;
                        bytes[at] = rng.next_u64() as u8;
                    }
                }
                // A run of garbage in the middle of a page.
                2 => {
                    let at = rng.range(0, bytes.len() as u64 - 300) as usize;
                    for b in &mut bytes[at..at + 256] {
                        *b = rng.next_u64() as u8;
                    }
                }
                // Cut anywhere.
                _ => bytes.truncate(rng.range(1, bytes.len() as u64) as usize),
            }
            read_everything(&bytes);
        }
    }
    Ok(())
}

#[test]
fn tiny_and_degenerate_inputs_never_panic() -> TestResult {
    let header = fixtures::build_named("agent-512-utf8")
        .ok_or("fixture")?
        .bytes;
    for len in [1, 15, 16, 17, 99, 100, 101, 107, 108, 511, 512, 513, 1024] {
        read_everything(&header[..len.min(header.len())]);
        read_everything(&vec![0u8; len]);
        read_everything(&vec![0xffu8; len]);
    }
    Ok(())
}

/// A schema row is untrusted text: one that smuggles a second statement after its CREATE
/// (here an ATTACH, which would create a file) is refused, never run, and the run still
/// ends in a report.
#[test]
fn a_schema_row_with_a_second_statement_is_never_run() -> TestResult {
    let dir = crate::Scratch::new("hostile-schema-sql");
    let src = dir.path("evidence.db");
    let evil = dir.path("attached.db");
    let conn = rusqlite::Connection::open(&src)?;
    conn.execute_batch(
        "CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT);
         INSERT INTO notes(body) VALUES ('kept'), ('also kept');
         CREATE TABLE other(x);",
    )?;
    let smuggled = format!(
        "CREATE TABLE other(x); ATTACH '{}' AS e; CREATE TABLE e.t(y)",
        evil.display()
    );
    conn.execute_batch("PRAGMA writable_schema = ON")?;
    conn.execute(
        "UPDATE sqlite_schema SET sql = ?1 WHERE name = 'other'",
        [&smuggled],
    )?;
    drop(conn);
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(
        &crate::allow_partial(&src, &dest),
        recovery::Outcome::PartialCommitted,
    );
    assert!(!evil.exists(), "the smuggled ATTACH ran");
    let done = done?;
    assert_refused(&done, "other", "more than one statement");
    let n: i64 =
        rusqlite::Connection::open(&dest)?
            .query_row("SELECT count(*) FROM notes", [], |r| r.get(0))?;
    assert_eq!(n, 2);
    Ok(())
}

/// A schema row holding `CREATE TABLE … AS SELECT` would run its query on the output (a
/// recursive one never ends); SQLite never stores one, so it is refused, not run.
#[test]
fn a_schema_row_creating_a_table_from_a_query_is_never_run() -> TestResult {
    let dir = crate::Scratch::new("hostile-schema-as-select");
    let src = dir.path("evidence.db");
    let conn = rusqlite::Connection::open(&src)?;
    conn.execute_batch(
        "CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT);
         INSERT INTO notes(body) VALUES ('kept');
         CREATE TABLE other(x);
         PRAGMA writable_schema = ON;
         UPDATE sqlite_schema SET sql = 'CREATE TABLE other AS WITH RECURSIVE c(x) AS
             (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c LIMIT 1000'
             WHERE name = 'other';",
    )?;
    drop(conn);
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(
        &crate::allow_partial(&src, &dest),
        recovery::Outcome::PartialCommitted,
    )?;
    assert_refused(&done, "other", "AS SELECT");
    Ok(())
}

/// Asserts that the table `name` failed, for a reason that says `why`.
fn assert_refused(done: &recovery::Recovery, name: &str, why: &str) {
    let table = crate::table(done, name);
    assert_eq!(table.status, recovery::TableStatus::Failed, "{table:?}");
    assert!(
        table.reason.as_deref().is_some_and(|r| r.contains(why)),
        "{table:?}"
    );
}

/// An orphan record of 2,501 values that no table can be given: `lost_and_found` keeps
/// it (its first 1,000 values as columns, the rest as one JSON array) and the healthy
/// table beside it comes back. SQLite allows a table 2,000 columns: the record ended the
/// whole run ("too many columns on lost_and_found", nothing committed).
#[test]
fn a_record_wider_than_any_table_is_kept_in_lost_and_found() -> TestResult {
    let dir = crate::Scratch::new("hostile-wide-record");
    let src = dir.path("wide.db");
    let root: u32 = {
        let conn = rusqlite::Connection::open(&src)?;
        conn.execute_batch(
            "PRAGMA page_size = 4096;
             CREATE TABLE keep(id INTEGER PRIMARY KEY, v TEXT);
             INSERT INTO keep(v) VALUES ('a'), ('b'), ('c');
             CREATE TABLE t(id INTEGER PRIMARY KEY, x);
             INSERT INTO t VALUES (1, zeroblob(2600));",
        )?;
        let root = conn.query_row(
            "SELECT rootpage FROM sqlite_schema WHERE name = 't'",
            [],
            |r| r.get(0),
        )?;
        // The table's schema row goes: its one leaf is an orphan.
        conn.execute_batch(
            "PRAGMA writable_schema = ON; DELETE FROM sqlite_schema WHERE name = 't';",
        )?;
        root
    };
    // Its one cell's record becomes 2,501 NULLs: a header of 2,503 bytes and no body.
    let mut bytes = std::fs::read(&src)?;
    let page = (root as usize - 1) * 4096;
    let cell = page + usize::from(u16::from_be_bytes([bytes[page + 8], bytes[page + 9]]));
    let fields = 2501usize;
    let header = fields + 2;
    let mut record = vec![0x80 | (header >> 7) as u8, (header & 0x7f) as u8];
    record.resize(header, 0);
    bytes[cell] = 0x80 | (header >> 7) as u8; // the payload's length, two bytes as before
    bytes[cell + 1] = (header & 0x7f) as u8;
    bytes[cell + 3..cell + 3 + header].copy_from_slice(&record); // after the 1-byte rowid
    std::fs::write(&src, &bytes)?;

    let dest = dir.path("out.db");
    let done = crate::recover_in_process(
        &crate::allow_partial(&src, &dest),
        recovery::Outcome::PartialCommitted,
    )?;
    assert_eq!(
        done.report.lost_and_found.widest_record,
        Some(fields as u64)
    );
    let out = rusqlite::Connection::open(&dest)?;
    let kept: i64 = out.query_row("SELECT count(*) FROM keep", [], |r| r.get(0))?;
    assert_eq!(kept, 3);
    let (nfield, rest): (i64, i64) = out.query_row(
        "SELECT nfield, json_array_length(rest) FROM lost_and_found",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    assert_eq!((nfield, rest), (fields as i64, (fields - 1000) as i64));
    Ok(())
}
