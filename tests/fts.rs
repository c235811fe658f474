//! Full-text tables are rebuilt on the output from canonical rows, never copied from their
//! shadow tables: from their own stored text, or from their external content table. A
//! contentless table cannot be rebuilt, and that is reported as loss.

use recovery::report::ObjectStatus;
use recovery::{LossSignal, Outcome, RecoverOptions, TableStatus};
use std::path::Path;

use rusqlite::Connection;

use crate::{Scratch, TestResult};

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
         CREATE VIRTUAL TABLE notes_v4 USING fts4(title, body);
         CREATE TABLE notes_own_archive(note TEXT);
         INSERT INTO notes_own_archive VALUES ('a user table named like a shadow table'), ('b');",
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
    let done = crate::recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Complete)?;
    assert_eq!(matches(&dest)?, want);
    for name in ["notes_own", "notes_ext", "notes_v4"] {
        let o = done
            .report
            .schema_objects
            .iter()
            .find(|o| o.name == name)
            .ok_or(name)?;
        assert_eq!(o.status, ObjectStatus::Rebuilt, "{o:?}");
        // Its table entry agrees (once `skipped`).
        let t = crate::table(&done, name);
        assert_eq!(
            (t.status, &t.reason),
            (TableStatus::Rebuilt, &o.reason),
            "{t:?}"
        );
    }
    // A user table that only shares a full-text table's prefix is data, not a shadow.
    let archived: i64 =
        Connection::open(&dest)?
            .query_row("SELECT count(*) FROM notes_own_archive", [], |r| r.get(0))?;
    assert_eq!(archived, 2);
    // FTS5's own check of its index against its stored text.
    Connection::open(&dest)?.execute(
        "INSERT INTO notes_own(notes_own) VALUES ('integrity-check')",
        [],
    )?;
    Ok(())
}

/// VACUUM rewrites the schema with each virtual table after its shadow tables: they are
/// still known as shadows, and the full-text tables are rebuilt as before.
#[test]
fn full_text_tables_listed_after_their_shadow_tables_are_rebuilt() -> TestResult {
    let dir = Scratch::new("fts-vacuumed");
    let src = dir.path("notes.db");
    build(&src, false)?;
    let conn = Connection::open(&src)?;
    conn.execute_batch("VACUUM")?;
    let order: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY rowid")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    drop(conn);
    let at = |n: &str| order.iter().position(|x| x == n).unwrap();
    assert!(at("notes_own_content") < at("notes_own"), "{order:?}");
    let want = matches(&src)?;
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Complete)?;
    assert_eq!(matches(&dest)?, want);
    let names: Vec<&str> = done.report.tables.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, order, "the report keeps schema order");
    Ok(())
}

#[test]
fn a_contentless_full_text_table_is_reported_as_lost() -> TestResult {
    let dir = Scratch::new("fts-contentless");
    let src = dir.path("notes.db");
    build(&src, true)?;
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Withheld)?;
    assert!(done.verdict().loss_detected);
    crate::assert_signal!(done, LossSignal::FullTextContentless { table } if table == "notes_cl");
    Ok(())
}

/// An R-tree keeps its data only in the node blobs of its shadow tables: the rows are
/// decoded from them, float32 and int32 alike, and equal the source's exactly.
#[test]
fn r_trees_are_refilled_from_their_node_blobs() -> TestResult {
    let dir = Scratch::new("vtab-rtree");
    let src = dir.path("boxes.db");
    let conn = Connection::open(&src)?;
    conn.execute_batch(
        "CREATE VIRTUAL TABLE boxes USING rtree(id, x0, x1, y0, y1);
         CREATE VIRTUAL TABLE cells USING rtree_i32(id, a0, a1);",
    )?;
    let tx = conn.unchecked_transaction()?;
    for i in 0..1500i64 {
        let x = (i * 37 % 1000) as f64 / 7.0;
        let y = (i * 91 % 1000) as f64 / 3.0;
        tx.execute(
            "INSERT INTO boxes VALUES (?1, ?2, ?3, ?4, ?5)",
            (i * 2 + 1, x, x + 1.5, y, y + 0.25),
        )?;
        tx.execute("INSERT INTO cells VALUES (?1, ?2, ?3)", (i, -i * 3, i * 5))?;
    }
    tx.commit()?;
    drop(conn);
    let rows = |db: &Path, sql: &str| -> rusqlite::Result<Vec<Vec<f64>>> {
        let conn = Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        let mut stmt = conn.prepare(sql)?;
        let n = stmt.column_count();
        let v = stmt
            .query_map([], |r| (0..n).map(|i| r.get::<_, f64>(i)).collect())?
            .collect();
        v
    };
    let dest = dir.path("out.db");
    crate::recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Complete)?;
    for sql in [
        "SELECT * FROM boxes ORDER BY id",
        "SELECT * FROM cells ORDER BY id",
        "SELECT id FROM boxes WHERE x0 < 20 AND x1 > 10 AND y0 < 100 ORDER BY id",
    ] {
        let want = rows(&src, sql)?;
        assert!(!want.is_empty());
        assert_eq!(rows(&dest, sql)?, want, "{sql}");
    }
    Ok(())
}

/// A virtual table whose data lives in shadow tables salvage does not decode is created
/// empty: the run says so, and does not call the recovery complete.
#[test]
fn a_virtual_table_left_empty_is_reported_as_lost() -> TestResult {
    let dir = Scratch::new("vtab-aux");
    let src = dir.path("boxes.db");
    let conn = Connection::open(&src)?;
    conn.execute_batch(
        "CREATE VIRTUAL TABLE boxes USING rtree(id, x0, x1, +label);
         INSERT INTO boxes VALUES (1, 0, 1, 'a'), (2, 2, 5, 'b');",
    )?;
    drop(conn);
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Withheld)?;
    crate::assert_signal!(done, LossSignal::VirtualTableEmpty { table, .. } if table == "boxes");
    Ok(())
}

/// Damaged stored text is loss: a full-text table refilled from a `NAME_content` whose
/// root page is gone is never reported as cleanly rebuilt.
#[test]
fn a_full_text_table_whose_stored_text_lost_a_page_reports_loss() -> TestResult {
    let dir = Scratch::new("fts-damaged");
    let src = dir.path("notes.db");
    build(&src, false)?;
    let root: u32 = Connection::open(&src)?.query_row(
        "SELECT rootpage FROM sqlite_schema WHERE name = 'notes_own_content'",
        [],
        |r| r.get(0),
    )?;
    let mut bytes = std::fs::read(&src)?;
    // Its root: nothing below it is reached, so no lost child pointer is recorded either.
    assert!(fixtures::table_pages(&bytes, root).leaves.len() > 1);
    fixtures::apply(&mut bytes, &fixtures::Damage::ZeroPage(root))?;
    std::fs::write(&src, &bytes)?;
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Withheld)?;
    crate::assert_signal!(done, LossSignal::FullTextIncomplete { table, .. } if table == "notes_own");
    Ok(())
}

/// An FTS4 table may have a column named `rowid` (SQL then reaches the docid as `docid`
/// or `_rowid_`): its rows are refilled under their docids, with that column's text.
#[test]
fn a_full_text_table_with_a_column_named_rowid_keeps_its_docids() -> TestResult {
    let dir = Scratch::new("fts-rowid-column");
    let src = dir.path("notes.db");
    let rows = |db: &Path| -> rusqlite::Result<Vec<(i64, String, String)>> {
        Connection::open(db)?
            .prepare("SELECT docid, rowid, body FROM notes_v4 ORDER BY docid")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect()
    };
    {
        let conn = Connection::open(&src)?;
        conn.execute_batch("CREATE VIRTUAL TABLE notes_v4 USING fts4(rowid, body);")?;
        for i in 0..50i64 {
            conn.execute(
                "INSERT INTO notes_v4(docid, rowid, body) VALUES (?1, ?2, ?3)",
                rusqlite::params![
                    i * 5 + 3,
                    format!("ref {i}"),
                    WORDS[i as usize % WORDS.len()]
                ],
            )?;
        }
    }
    let dest = dir.path("out.db");
    crate::recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Complete)?;
    assert_eq!(rows(&dest)?, rows(&src)?);
    Ok(())
}

/// An R-tree node blob is the page size less 64 bytes: with bytes reserved on each page,
/// more than a row holds on its page, so every node spills onto an overflow page, and a
/// node of a few cells leaves that page all zeros (the zeros SQLite wrote, not a page
/// wiped). The node's header says its cells end before that page, and SQLite reads no
/// further: the healthy file recovers whole, exit 0. Zeros where a node's cells are (a
/// full node's overflow page wiped) stay loss.
#[test]
fn an_r_tree_node_whose_overflow_page_is_zeros_past_its_cells_is_whole() -> TestResult {
    let dir = Scratch::new("vtab-rtree-reserved");
    let src = dir.path("boxes.db");
    let conn = Connection::open(&src)?;
    conn.execute_batch("PRAGMA page_size = 1024; CREATE TABLE x(a); DROP TABLE x; VACUUM;")?;
    drop(conn);
    let mut bytes = std::fs::read(&src)?;
    fixtures::random::reserve_bytes(&mut bytes, 32);
    std::fs::write(&src, &bytes)?;
    let conn = Connection::open(&src)?;
    conn.execute_batch(
        "CREATE VIRTUAL TABLE few USING rtree(id, x0, x1, y0, y1);
         CREATE VIRTUAL TABLE many USING rtree(id, x0, x1, y0, y1);
         INSERT INTO few VALUES (1, 0, 1.5, -1, 2), (2, 37, 38.5, -37, -35), (3, 74, 75, -2, 0);",
    )?;
    let tx = conn.unchecked_transaction()?;
    for i in 0..200i64 {
        let x = (i * 37 % 100) as f64;
        tx.execute(
            "INSERT INTO many VALUES (?1, ?2, ?3, ?4, ?5)",
            (i, x, x + 1.5, -x, 2.0 - x),
        )?;
    }
    tx.commit()?;
    let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    assert_eq!(check, "ok");
    drop(conn);
    let bytes = std::fs::read(&src)?;
    let overflow = |table: &str| -> Result<Vec<u32>, Box<dyn std::error::Error>> {
        let root = fixtures::format::root_page(&bytes, table)?;
        Ok(fixtures::table_pages(&bytes, root).overflow)
    };
    let few = overflow("few_node")?;
    assert_eq!(few.len(), 1, "the one node spills onto one page");
    let page = |p: u32| &bytes[(p as usize - 1) * 1024..p as usize * 1024];
    assert!(
        page(few[0]).iter().all(|&b| b == 0),
        "its overflow page is all zeros"
    );
    let rows = |db: &Path, table: &str| -> rusqlite::Result<Vec<Vec<f64>>> {
        let conn = Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        let mut stmt = conn.prepare(&format!("SELECT * FROM {table} ORDER BY id"))?;
        let v = stmt
            .query_map([], |r| (0..5).map(|i| r.get::<_, f64>(i)).collect())?
            .collect();
        v
    };
    let dest = dir.path("out.db");
    crate::recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Complete)?;
    for table in ["few", "many"] {
        assert_eq!(rows(&dest, table)?, rows(&src, table)?, "{table}");
    }

    // A full node's overflow page holds cells: zeroed, they are lost.
    let many = overflow("many_node")?;
    let mut damaged = bytes.clone();
    fixtures::apply(&mut damaged, &fixtures::Damage::ZeroPage(many[0]))?;
    let wiped = dir.path("wiped.db");
    std::fs::write(&wiped, &damaged)?;
    let done = crate::recover_in_process(
        &RecoverOptions::new(&wiped, dir.path("wiped-out.db")),
        Outcome::Withheld,
    )?;
    crate::assert_signal!(done, LossSignal::RtreeIncomplete { table, .. } if table == "many");
    Ok(())
}
