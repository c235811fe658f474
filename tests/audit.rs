//! `inspect --audit`: what looks deliberate or abnormal, graded, on files SQLite wrote and
//! then edited the way an attacker or a wipe would; and nothing at all on healthy files.

use std::path::Path;

use rusqlite::Connection;

use crate::{run_salvage, Scratch, TestResult};

/// The audit of `path`, as (severity, kind) pairs and the whole JSON.
fn audit(path: &Path) -> (Vec<(String, String)>, serde_json::Value) {
    let out = run_salvage(&[
        "inspect".as_ref(),
        path.as_os_str(),
        "--json".as_ref(),
        "--audit".as_ref(),
    ])
    .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let concerns = report["audit"].as_array().expect("an audit").clone();
    let pairs = concerns
        .iter()
        .map(|c| {
            (
                c["severity"].as_str().unwrap().to_string(),
                c["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (pairs, serde_json::Value::Array(concerns))
}

/// A notes table of 2,000 AUTOINCREMENT rows, some deleted, written with `secure_delete`
/// as given.
fn notes(path: &Path, secure_delete: bool) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(&format!(
        "PRAGMA secure_delete = {};
         CREATE TABLE notes(id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT, created INTEGER);
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 2000)
         INSERT INTO notes(body, created) SELECT printf('note %d %.200c', x, 'x'), 1000 + x FROM i;
         DELETE FROM notes WHERE id % 3 = 0;
         DELETE FROM notes WHERE id > 1900;",
        if secure_delete { "ON" } else { "OFF" }
    ))
    .unwrap();
}

#[test]
fn healthy_files_give_no_concern_above_info() -> TestResult {
    let dir = Scratch::new("audit-healthy");
    for f in fixtures::catalog() {
        let path = dir.path(&format!("{}.db", f.name));
        std::fs::write(&path, &f.bytes)?;
        let (concerns, json) = audit(&path);
        assert!(
            concerns.iter().all(|(s, _)| s == "info"),
            "{}: {json:#}",
            f.name
        );
    }
    // Deletes without secure_delete: a freelist and freeblocks with their old bytes.
    let path = dir.path("notes.db");
    notes(&path, false);
    let (concerns, json) = audit(&path);
    assert_eq!(
        concerns,
        vec![("info".to_string(), "autoincrement_gaps".to_string())],
        "{json:#}"
    );
    // Rows of NULLs deleted: their freed cells are zeros after 4 bytes, and no wipe.
    let nulls = dir.path("nulls.db");
    Connection::open(&nulls)?.execute_batch(
        "CREATE TABLE t(id INTEGER PRIMARY KEY, a, b, c, d, e);
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 100)
         INSERT INTO t(id) SELECT x FROM i;
         DELETE FROM t WHERE id % 2 = 0;",
    )?;
    let (none, report) = audit(&nulls);
    assert!(none.is_empty(), "{report:#}");
    // 2,000 rowids given, 1,267 rows left: 733 deleted, 100 of them after the last row.
    let what = json[0]["what"].as_str().unwrap();
    assert!(
        what.contains("rowids up to 2000")
            && what.contains("733 were deleted")
            && what.contains("100 of them after the last"),
        "{what}"
    );
    Ok(())
}

#[test]
fn wiped_free_space_is_a_concern() -> TestResult {
    let dir = Scratch::new("audit-wiped");
    let path = dir.path("notes.db");
    notes(&path, true);
    let (concerns, json) = audit(&path);
    for kind in ["wiped_free_pages", "wiped_freeblocks"] {
        assert!(
            concerns.contains(&("info".to_string(), kind.to_string())),
            "{kind}: {json:#}"
        );
    }
    Ok(())
}

#[test]
fn an_edited_counter_and_header_are_high_concerns() -> TestResult {
    let dir = Scratch::new("audit-edited");
    let path = dir.path("notes.db");
    notes(&path, false);
    Connection::open(&path)?.execute_batch("UPDATE sqlite_sequence SET seq = 500")?;
    // The header's page count (offset 28) made larger than the file; the change counter
    // and version-valid-for (24, 92) still agree, so SQLite would believe it.
    let mut bytes = std::fs::read(&path)?;
    let pages = u32::from_be_bytes(bytes[28..32].try_into()?);
    bytes[28..32].copy_from_slice(&(pages + 40).to_be_bytes());
    std::fs::write(&path, &bytes)?;
    let (concerns, json) = audit(&path);
    for (severity, kind) in [
        ("low", "sequence_behind_rows"),
        ("high", "header_page_count"),
    ] {
        assert!(
            concerns.contains(&(severity.to_string(), kind.to_string())),
            "{kind}: {json:#}"
        );
    }
    // Most severe first.
    assert_eq!(concerns[0].0, "high");
    Ok(())
}

#[test]
fn roots_that_do_not_fit_and_loops_are_high_concerns() -> TestResult {
    let dir = Scratch::new("audit-roots");
    let path = dir.path("chat.db");
    let conn = Connection::open(&path)?;
    conn.execute_batch(
        "PRAGMA page_size = 1024;
         CREATE TABLE contacts(id INTEGER PRIMARY KEY, name TEXT);
         CREATE TABLE calls(id INTEGER PRIMARY KEY, contact INTEGER, at INTEGER);
         CREATE INDEX calls_at ON calls(at);
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 400)
         INSERT INTO calls(contact, at) SELECT x % 7, x * 60 FROM i;
         INSERT INTO contacts(name) VALUES ('Ana'), ('Ben');",
    )?;
    let root = |name: &str| -> rusqlite::Result<i64> {
        conn.query_row(
            "SELECT rootpage FROM sqlite_schema WHERE name = ?1",
            [name],
            |r| r.get(0),
        )
    };
    let (contacts, calls, index) = (root("contacts")?, root("calls")?, root("calls_at")?);
    drop(conn);
    // contacts' root aimed at the index; the calls tree's first child aimed at its root.
    let edit = |contacts_root: i64| -> rusqlite::Result<()> {
        let conn = Connection::open(&path)?;
        conn.execute_batch("PRAGMA writable_schema = ON")?;
        conn.execute(
            "UPDATE sqlite_schema SET rootpage = ?1 WHERE name = 'contacts'",
            [contacts_root],
        )?;
        Ok(())
    };
    edit(index)?;
    let mut bytes = std::fs::read(&path)?;
    let at = (calls as usize - 1) * 1024;
    assert_eq!(bytes[at], 5, "the calls table has an interior root");
    let first_cell = usize::from(u16::from_be_bytes([bytes[at + 12], bytes[at + 13]]));
    bytes[at + first_cell..at + first_cell + 4].copy_from_slice(&(calls as u32).to_be_bytes());
    std::fs::write(&path, &bytes)?;
    let (concerns, json) = audit(&path);
    for kind in ["root_does_not_fit", "root_shared", "pointer_loop"] {
        assert!(
            concerns.contains(&("high".to_string(), kind.to_string())),
            "{kind}: {json:#}"
        );
    }
    let _ = contacts;
    Ok(())
}

#[test]
fn the_logs_frames_outside_the_database_are_told() -> TestResult {
    let dir = Scratch::new("audit-wal");
    let g = fixtures::history::older_generation();
    std::fs::write(dir.path("chat.db"), &g.main)?;
    let mut wal = g.wal.clone();
    fixtures::history::uncommit_last(&mut wal);
    std::fs::write(dir.path("chat.db-wal"), &wal)?;
    let (concerns, json) = audit(&dir.path("chat.db"));
    for kind in ["wal_older_generation", "wal_uncommitted"] {
        assert!(
            concerns.contains(&("info".to_string(), kind.to_string())),
            "{kind}: {json:#}"
        );
    }
    Ok(())
}

/// A leaf of a live table zeroed: a page a tree points to that SQLite would never leave
/// as zeros, graded high and named by its page.
#[test]
fn a_zeroed_live_page_is_a_high_concern() -> TestResult {
    let f = fixtures::build_named("agent-4096-utf8").ok_or("the fixture")?;
    let leaf = *fixtures::table_pages(&f.bytes, f.roots["messages"])
        .leaves
        .last()
        .ok_or("a leaf")?;
    let mut bytes = f.bytes.clone();
    fixtures::apply(&mut bytes, &fixtures::Damage::ZeroPage(leaf))?;
    let dir = Scratch::new("audit-zeroed-live");
    let path = dir.path("state.db");
    std::fs::write(&path, &bytes)?;
    let (pairs, concerns) = audit(&path);
    assert!(
        pairs.contains(&("high".into(), "zeroed_live_pages".into())),
        "{concerns:#}"
    );
    let c = concerns
        .as_array()
        .and_then(|a| a.iter().find(|c| c["kind"] == "zeroed_live_pages"))
        .ok_or("the concern")?;
    assert_eq!(c["pages"], serde_json::json!([leaf]));
    Ok(())
}
