//! `recover --carve`: the deleted rows of a messenger's store, carved from its free space
//! into `salvage_carved`, never into its tables; old versions of edited rows marked as
//! such; nothing that is a live row; the run still complete (deleting is not loss).

use recovery::{Outcome, RecoverOptions};
use rusqlite::types::Value as Sql;

use crate::{Scratch, TestResult};

/// Rows of `messages`, each its five values.
type Rows = Vec<Vec<Sql>>;

/// A carved row: its status, its rowid where known, and its values.
type CarvedRow = (String, Option<i64>, Vec<Sql>);

/// A chat store written by SQLite: messages inserted, some deleted, some edited. Returns
/// the deleted rows and the edited rows' old values, as `(id, chat_id, sender, body, sent)`.
fn chat_store(path: &std::path::Path) -> rusqlite::Result<(Rows, Rows)> {
    let conn = rusqlite::Connection::open(path)?;
    conn.execute_batch(
        "PRAGMA page_size = 4096;
         CREATE TABLE chats(id INTEGER PRIMARY KEY, title TEXT NOT NULL);
         CREATE TABLE messages(id INTEGER PRIMARY KEY, chat_id INTEGER NOT NULL REFERENCES chats(id),
             sender TEXT NOT NULL, body TEXT, sent REAL NOT NULL);
         CREATE INDEX messages_chat ON messages(chat_id, sent);",
    )?;
    let mut rng = fixtures::prng::SplitMix64::new(0xde1e7e);
    conn.execute_batch("BEGIN")?;
    for c in 1..=8 {
        conn.execute(
            "INSERT INTO chats VALUES (?1, ?2)",
            rusqlite::params![c, format!("chat {c}")],
        )?;
    }
    for i in 1..=900i64 {
        let words = rng.range(2, 40) as usize;
        let body: Vec<String> = (0..words).map(|w| format!("m{i}w{w}")).collect();
        conn.execute(
            "INSERT INTO messages VALUES (?1, ?2, ?3, ?4, ?5)",
            rusqlite::params![
                i,
                i % 8 + 1,
                ["alice", "bob", "carol"][i as usize % 3],
                body.join(" "),
                1.7e9 + i as f64 * 0.5
            ],
        )?;
    }
    conn.execute_batch("COMMIT")?;
    let rows = |filter: &str| -> rusqlite::Result<Vec<Vec<Sql>>> {
        let mut stmt = conn.prepare(&format!(
            "SELECT id, chat_id, sender, body, sent FROM messages WHERE {filter}"
        ))?;
        let rows = stmt.query_map([], |r| (0..5).map(|i| r.get::<_, Sql>(i)).collect())?;
        rows.collect()
    };
    let deleted = rows("id % 11 = 0 OR id BETWEEN 500 AND 560")?;
    conn.execute_batch("DELETE FROM messages WHERE id % 11 = 0 OR id BETWEEN 500 AND 560")?;
    // Edited: the body grows, so the old cell is freed and the new one written elsewhere.
    let edited = rows("id % 13 = 1")?;
    conn.execute_batch(
        "UPDATE messages SET body = body || ' (edited, and made longer)' WHERE id % 13 = 1",
    )?;
    Ok((deleted, edited))
}

/// The carved rows of `messages`, as `(status, rowid, values)`, read through the view of
/// them by the table's column names: the INTEGER PRIMARY KEY (NULL in the record) is the
/// rowid where it is known.
fn carved(dest: &std::path::Path) -> rusqlite::Result<Vec<CarvedRow>> {
    let conn = rusqlite::Connection::open(dest)?;
    let mut stmt = conn.prepare("SELECT * FROM salvage_carved_messages")?;
    let names: Vec<String> = stmt.column_names().map(|n| n.to_string()).collect();
    assert_eq!(
        names[..6],
        ["source", "page", "offset", "confidence", "status", "rowid"]
    );
    let rows = stmt.query_map([], |r| {
        let values: Vec<Sql> = (6..11)
            .map(|i| r.get::<_, Sql>(i))
            .collect::<rusqlite::Result<_>>()?;
        Ok((r.get(4)?, r.get(5)?, values))
    })?;
    let rows: Vec<CarvedRow> = rows.collect::<rusqlite::Result<_>>()?;
    // The same records as the registry holds for the table.
    let all: i64 = conn.query_row(
        "SELECT count(*) FROM salvage_carved WHERE tbl = 'messages'",
        [],
        |r| r.get(0),
    )?;
    assert_eq!(rows.len() as i64, all);
    Ok(rows)
}

/// `recover --carve` of `src` into `dest`, in process: a complete recovery (deleting is
/// not loss).
fn carved_complete(
    src: &std::path::Path,
    dest: &std::path::Path,
) -> Result<recovery::Recovery, recovery::Error> {
    let options = RecoverOptions {
        carve: true,
        ..RecoverOptions::new(src, dest)
    };
    crate::recover_in_process(&options, Outcome::Complete)
}

/// Whether `row` (its first value NULL when the rowid is unknown) is one of `rows`.
fn among(row: &[Sql], rows: &[Vec<Sql>]) -> bool {
    rows.iter()
        .any(|r| r[1..] == row[1..] && (row[0] == Sql::Null || r[0] == row[0]))
}

#[test]
fn deleted_messages_are_carved_beside_the_tables_and_edits_show_their_old_versions() -> TestResult {
    let dir = Scratch::new("carve-chat");
    let src = dir.path("chat.db");
    let (deleted, edited) = chat_store(&src)?;
    let dest = dir.path("out.db");
    // Deleting is not loss: complete.
    let done = carved_complete(&src, &dest)?;
    let rows = carved(&dest)?;
    let conn = rusqlite::Connection::open(&dest)?;
    let live: Vec<Vec<Sql>> = conn
        .prepare("SELECT id, chat_id, sender, body, sent FROM messages")?
        .query_map([], |r| (0..5).map(|i| r.get::<_, Sql>(i)).collect())?
        .collect::<rusqlite::Result<_>>()?;
    let live_count: i64 = conn.query_row("SELECT count(*) FROM messages", [], |r| r.get(0))?;
    assert_eq!(
        live_count,
        900 - deleted.len() as i64,
        "the tables hold the live rows only"
    );
    let mut found_old = 0;
    for (status, _, row) in &rows {
        assert!(!among(row, &live), "a live row carved as {status}: {row:?}");
        match status.as_str() {
            "deleted" if among(row, &deleted) => {}
            // An edit's old cell without its rowid cannot be told from a deleted row.
            "deleted" if among(row, &edited) => found_old += 1,
            "previous version" if among(row, &edited) => found_old += 1,
            _ => panic!("carved a row that never was: {status} {row:?}"),
        }
    }
    let distinct_deleted = deleted
        .iter()
        .filter(|d| {
            rows.iter()
                .any(|(_, _, r)| among(r, std::slice::from_ref(d)))
        })
        .count();
    eprintln!(
        "{} deleted: {distinct_deleted} carved; {} edited: {found_old} old versions; {} carved in all",
        deleted.len(),
        edited.len(),
        rows.len()
    );
    // A deleted row is still in the file when the end of its record is: sender, body
    // and `sent` (8 bytes, a real where it is not a whole number) one after another.
    let bytes = std::fs::read(&src)?;
    let present: Vec<&Vec<Sql>> = deleted
        .iter()
        .filter(|d| match &d[2..] {
            [Sql::Text(sender), Sql::Text(body), Sql::Real(sent)] if sent.fract() != 0.0 => {
                let tail = [sender.as_bytes(), body.as_bytes(), &sent.to_be_bytes()].concat();
                bytes.windows(tail.len()).any(|w| w == tail.as_slice())
            }
            _ => false,
        })
        .collect();
    let carved_present = present
        .iter()
        .filter(|d| {
            rows.iter()
                .any(|(_, _, r)| among(r, std::slice::from_ref(**d)))
        })
        .count();
    eprintln!(
        "{} of the deleted rows still in the file, {carved_present} of those carved",
        present.len()
    );
    assert!(
        carved_present * 100 >= present.len() * 95,
        "{carved_present} of {}",
        present.len()
    );
    assert!(found_old > 0);
    let total: i64 = conn.query_row("SELECT count(*) FROM salvage_carved", [], |r| r.get(0))?;
    let report = done.report.carved.as_ref().ok_or("no carved section")?;
    assert_eq!(report.rows, total as u64);
    assert_eq!(report.registry.as_deref(), Some("salvage_carved"));
    assert!(!done.verdict().loss_detected);
    Ok(())
}

#[test]
fn without_carve_nothing_is_carved() -> TestResult {
    let dir = Scratch::new("carve-off");
    let src = dir.path("chat.db");
    chat_store(&src)?;
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Complete)?;
    let conn = rusqlite::Connection::open(&dest)?;
    let n: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_schema WHERE name = 'salvage_carved'",
        [],
        |r| r.get(0),
    )?;
    assert_eq!(n, 0);
    assert!(done.report.carved.is_none());
    Ok(())
}

/// A table may have a column named `rowid` (SQL then reaches the rowid as `_rowid_`).
/// Its deleted rows are carved as deleted, and the stale copies of its live rows left in
/// its pages are known for live rows: neither is taken for an older version of the row
/// whose column `rowid` holds the same number.
#[test]
fn a_column_named_rowid_does_not_hide_the_rowid_from_the_carver() -> TestResult {
    let dir = Scratch::new("carve-rowid-column");
    let src = dir.path("notes.db");
    {
        let conn = rusqlite::Connection::open(&src)?;
        conn.execute_batch(
            "PRAGMA page_size = 4096;
             CREATE TABLE notes(rowid INTEGER, chat INTEGER, body TEXT, sent REAL);
             CREATE INDEX notes_chat ON notes(chat, sent);",
        )?;
        let mut rng = fixtures::prng::SplitMix64::new(0x0011d);
        conn.execute_batch("BEGIN")?;
        for i in 1..=900i64 {
            let words = rng.range(2, 40) as usize;
            let body: Vec<String> = (0..words).map(|w| format!("m{i}w{w}")).collect();
            // The column `rowid` holds another row's rowid.
            conn.execute(
                "INSERT INTO notes(_rowid_, rowid, chat, body, sent) VALUES (?1, ?2, ?3, ?4, ?5)",
                rusqlite::params![i, i + 450, i % 8, body.join(" "), 1.7e9 + i as f64 * 0.5],
            )?;
        }
        conn.execute_batch("COMMIT; DELETE FROM notes WHERE _rowid_ BETWEEN 500 AND 560;")?;
    }
    let dest = dir.path("out.db");
    let done = carved_complete(&src, &dest)?;
    let conn = rusqlite::Connection::open(&dest)?;
    let carved: Vec<(String, Option<i64>)> = conn
        .prepare("SELECT status, rowid FROM salvage_carved WHERE tbl = 'notes'")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let with_rowid = carved.iter().filter(|(_, r)| r.is_some()).count();
    assert!(with_rowid > 0, "{carved:?}");
    for (status, rowid) in &carved {
        assert_eq!(status, "deleted", "rowid {rowid:?}");
        assert!(
            rowid.is_none_or(|r| (500..=560).contains(&r)),
            "rowid {rowid:?}"
        );
    }
    assert_eq!(
        done.report.carved.as_ref().map(|c| c.previous_versions),
        Some(0)
    );
    Ok(())
}

/// A row edited longer and then back leaves its first cell free: the freeblock's header
/// is written over the cell's first bytes, its rowid among them, so only its values tell
/// it from a deleted row. It is a live row's copy, counted as one and never carved as
/// deleted (the records without a rowid are compared with the live rows by their values
/// once every page is carved).
#[test]
fn a_live_rows_copy_without_its_rowid_is_known_by_its_values() -> TestResult {
    let dir = Scratch::new("carve-live-copy");
    let src = dir.path("notes.db");
    {
        let conn = rusqlite::Connection::open(&src)?;
        conn.execute_batch(
            "PRAGMA page_size = 4096; PRAGMA secure_delete = OFF;
             CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT NOT NULL, sent REAL NOT NULL);",
        )?;
        for i in 1..=40i64 {
            conn.execute(
                "INSERT INTO notes VALUES (?1, ?2, ?3)",
                rusqlite::params![i, format!("note {i}: ").repeat(3), 1.7e9 + i as f64 * 0.25],
            )?;
        }
        // The longer version goes below the other cells; edited back, the row takes the
        // longer version's freed cell (the first free space that fits), and its first
        // cell stays free with its values.
        conn.execute_batch(
            "UPDATE notes SET body = body || ' (edited for a while)' WHERE id % 5 = 0;
             UPDATE notes SET body = substr(body, 1, length(body) - 21) WHERE id % 5 = 0;",
        )?;
    }
    let dest = dir.path("out.db");
    let done = carved_complete(&src, &dest)?;
    let conn = rusqlite::Connection::open(&dest)?;
    let live: Vec<(String, f64)> = conn
        .prepare("SELECT body, sent FROM notes")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    assert_eq!(live.len(), 40);
    let carved: Vec<(String, Option<i64>, Sql, Sql)> = conn
        .prepare("SELECT status, rowid, c1, c2 FROM salvage_carved WHERE tbl = 'notes'")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (status, rowid, body, sent) in &carved {
        let is_live = live
            .iter()
            .any(|(b, s)| *body == Sql::Text(b.clone()) && *sent == Sql::Real(*s));
        assert!(
            !is_live,
            "a live row carved as {status} (rowid {rowid:?}): {body:?}"
        );
    }
    let report = done.report.carved.as_ref().ok_or("no carved section")?;
    assert!(report.live_copies >= 4, "{report:#?}");
    let total: i64 = conn.query_row("SELECT count(*) FROM salvage_carved", [], |r| r.get(0))?;
    assert_eq!(report.rows, total as u64);
    Ok(())
}
