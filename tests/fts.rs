//! Full-text tables are rebuilt on the output from canonical rows, never copied from their
//! shadow tables: from their own stored text, or from their external content table. A
//! contentless table cannot be rebuilt, and that is reported as loss.

use std::path::Path;

use rusqlite::Connection;

use crate::{run_salvage, Scratch, TestResult};

const WORDS: [&str; 12] = [
    "salvage", "page", "btree", "journal", "freelist", "overflow", "cell", "varint", "header",
    "schema", "index", "record",
];

/// A notes store with one FTS table of each kind that keeps its text. `contentless` adds
/// one that does not.
fn build(path: &Path, contentless: bool) -> rusqlite::Result<()> {
    let conn = Connection::open(path)?;
    conn.execute_batch(
        "CREATE TABLE notes(id INTEGER PRIMARY KEY, title TEXT, body TEXT);
         CREATE VIRTUAL TABLE notes_own USING fts5(title, body);
         CREATE VIRTUAL TABLE notes_ext USING fts5(title, body, content='notes', content_rowid='id');
         CREATE VIRTUAL TABLE notes_v4 USING fts4(title, body);",
    )?;
    if contentless {
        conn.execute_batch("CREATE VIRTUAL TABLE notes_cl USING fts5(body, content='');")?;
    }
    let tx = conn.unchecked_transaction()?;
    for i in 0..400usize {
        let title = format!("note {i} {}", WORDS[i % WORDS.len()]);
        let body: Vec<&str> = (0..40)
            .map(|k| WORDS[(i * 7 + k * k) % WORDS.len()])
            .collect();
        let body = body.join(" ");
        let id = i64::try_from(i).unwrap() * 3 + 1;
        tx.execute(
            "INSERT INTO notes(id, title, body) VALUES (?1, ?2, ?3)",
            (id, &title, &body),
        )?;
        for t in ["notes_own", "notes_v4"] {
            tx.execute(
                &format!("INSERT INTO {t}(rowid, title, body) VALUES (?1, ?2, ?3)"),
                (id, &title, &body),
            )?;
        }
        if contentless {
            tx.execute(
                "INSERT INTO notes_cl(rowid, body) VALUES (?1, ?2)",
                (id, &body),
            )?;
        }
    }
    tx.execute("INSERT INTO notes_ext(notes_ext) VALUES ('rebuild')", [])?;
    tx.commit()
}

/// Rowids each full-text table matches for each query, in order.
fn matches(db: &Path) -> rusqlite::Result<Vec<Vec<i64>>> {
    let conn = Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut out = Vec::new();
    for table in ["notes_own", "notes_ext", "notes_v4"] {
        for q in [
            "salvage",
            "journal AND varint",
            "title:note",
            "\"page btree\"",
        ] {
            let mut stmt = conn.prepare(&format!(
                "SELECT rowid FROM {table} WHERE {table} MATCH ?1 ORDER BY rowid"
            ))?;
            out.push(
                stmt.query_map([q], |r| r.get(0))?
                    .collect::<Result<Vec<i64>, _>>()?,
            );
        }
    }
    Ok(out)
}

#[test]
fn full_text_tables_are_rebuilt_from_their_stored_text_and_content_tables() -> TestResult {
    let dir = Scratch::new("fts-rebuilt");
    let src = dir.path("notes.db");
    build(&src, false)?;
    let want = matches(&src)?;
    assert!(want.iter().all(|m| !m.is_empty()));
    let dest = dir.path("out.db");
    let out = run_salvage(&[
        "recover".as_ref(),
        src.as_os_str(),
        "-o".as_ref(),
        dest.as_os_str(),
    ])?;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(matches(&dest)?, want);
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path("out.db.report.json"))?)?;
    for name in ["notes_own", "notes_ext", "notes_v4"] {
        let o = report["schema_objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == name)
            .unwrap();
        assert_eq!(o["status"], "rebuilt", "{o}");
    }
    // FTS5's own check of its index against its stored text.
    Connection::open(&dest)?.execute(
        "INSERT INTO notes_own(notes_own) VALUES ('integrity-check')",
        [],
    )?;
    Ok(())
}

#[test]
fn a_contentless_full_text_table_is_reported_as_lost() -> TestResult {
    let dir = Scratch::new("fts-contentless");
    let src = dir.path("notes.db");
    build(&src, true)?;
    let dest = dir.path("out.db");
    let out = run_salvage(&[
        "recover".as_ref(),
        src.as_os_str(),
        "-o".as_ref(),
        dest.as_os_str(),
    ])?;
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path("out.db.report.json"))?)?;
    assert_eq!(report["flags"]["loss_detected"], true);
    assert!(
        report["evidence"]["loss"]
            .to_string()
            .contains("`notes_cl` is contentless"),
        "{}",
        report["evidence"]
    );
    Ok(())
}

/// An R-tree keeps its data only in its shadow tables, which are not carried over: the
/// run says so, and does not call the recovery complete.
#[test]
fn a_virtual_table_left_empty_is_reported_as_lost() -> TestResult {
    let dir = Scratch::new("vtab-rtree");
    let src = dir.path("boxes.db");
    let conn = Connection::open(&src)?;
    conn.execute_batch(
        "CREATE VIRTUAL TABLE boxes USING rtree(id, x0, x1, y0, y1);
         INSERT INTO boxes VALUES (1, 0, 1, 0, 1), (2, 2, 5, 3, 4);",
    )?;
    drop(conn);
    let dest = dir.path("out.db");
    let out = run_salvage(&[
        "recover".as_ref(),
        src.as_os_str(),
        "-o".as_ref(),
        dest.as_os_str(),
    ])?;
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path("out.db.report.json"))?)?;
    assert!(
        report["evidence"]["loss"]
            .to_string()
            .contains("virtual table `boxes` is created empty"),
        "{}",
        report["evidence"]
    );
    Ok(())
}
