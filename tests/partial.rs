//! Partial rows from indexes: a table row is lost, its index entries survive. The row is
//! rebuilt from the indexed columns (every other column NULL), registered in
//! `salvage_partial_rows`, and still counted as lost.

use std::collections::BTreeSet;

use fixtures::{Damage, Value};
use recovery::Outcome;
use rusqlite::Connection;

use crate::recover::{case, expected_rows, rows_of, Case};
use crate::TestResult;

/// generic-512-utf16be with the last leaf of `items` zeroed. `items` has two indexes,
/// (category, price) and UNIQUE (name), which together cover its only NOT NULL column.
fn items_leaf_lost(name: &str) -> Case {
    case(name, "generic-512-utf16be", |f| {
        let leaves = fixtures::table_pages(&f.bytes, f.roots["items"]).leaves;
        vec![Damage::ZeroPage(*leaves.last().unwrap())]
    })
}

#[test]
fn a_lost_row_is_rebuilt_from_its_index_entries_and_registered() -> TestResult {
    // The rows that survive whole: what the table holds without partial rows (the
    // binary's `--no-partial-rows`).
    let whole = items_leaf_lost("partial-items-off");
    assert_eq!(
        whole
            .recover(&["--allow-partial", "--no-partial-rows"])?
            .status
            .code(),
        Some(3)
    );
    let survived: BTreeSet<i64> = rows_of(&whole.dest, "items", false).into_keys().collect();
    let conn = Connection::open(&whole.dest)?;
    let registries: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_schema WHERE name LIKE 'salvage_partial_rows%'",
        [],
        |r| r.get(0),
    )?;
    assert_eq!(registries, 0, "--no-partial-rows made a registry");

    let c = items_leaf_lost("partial-items-on");
    let done = crate::recover_in_process(&c.allow_partial(), Outcome::PartialCommitted)?;
    let expected = expected_rows(&c.fixture, "items");
    let lost: BTreeSet<i64> = expected
        .keys()
        .copied()
        .filter(|k| !survived.contains(k))
        .collect();
    assert!(!lost.is_empty());
    let got = rows_of(&c.dest, "items", false);
    // items: id, name, category, price, qty, data, note.
    for rowid in &lost {
        let row = got
            .get(rowid)
            .unwrap_or_else(|| panic!("lost row {rowid} not rebuilt"));
        let want = &expected[rowid];
        assert_eq!(row[1..4], want[1..4], "row {rowid}: the indexed columns");
        assert!(
            row[4..].iter().all(|v| *v == Value::Null),
            "row {rowid}: {row:?}"
        );
    }
    // Every surviving row is untouched.
    for rowid in &survived {
        assert_eq!(got[rowid], expected[rowid], "row {rowid}");
    }
    let conn = Connection::open(&c.dest)?;
    let mut stmt = conn.prepare(
        "SELECT rowid, columns_known, source_index, in_table FROM salvage_partial_rows WHERE tbl = 'items' ORDER BY rowid",
    )?;
    let registered: Vec<(i64, String, String, i64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<Result<_, _>>()?;
    assert_eq!(
        registered.iter().map(|r| r.0).collect::<BTreeSet<_>>(),
        lost
    );
    for (rowid, columns, sources, in_table) in &registered {
        assert_eq!(columns, "category,name,price", "row {rowid}");
        assert_eq!(sources, "items_category_price,items_name", "row {rowid}");
        assert_eq!(*in_table, 1);
    }
    // Still loss: the rebuilt rows' other columns are gone.
    let r = &done.report;
    let t = crate::table(&done, "items");
    assert_eq!(t.rows_partial, lost.len() as u64);
    assert_eq!(r.partial_rows.rows, lost.len() as u64);
    assert_eq!(
        r.partial_rows.registry.as_deref(),
        Some("salvage_partial_rows")
    );
    assert_eq!(
        t.lost_rows.as_ref().map(|l| l.proven_by_index),
        Some(lost.len() as u64)
    );
    assert!(r.flags.loss_detected);
    assert!(!r.flags.complete);
    Ok(())
}

/// `messages` keys its index on `session_id` alone, and `role` is NOT NULL: the table
/// refuses the rebuilt rows, and the registry keeps what their index entries prove.
#[test]
fn a_partial_row_the_table_refuses_keeps_its_known_values_in_the_registry() -> TestResult {
    let c = case("partial-refused", "agent-4096-utf8", |f| {
        vec![Damage::ZeroPage(
            fixtures::table_pages(&f.bytes, f.roots["messages"]).leaves[6],
        )]
    });
    let done = crate::recover_in_process(&c.allow_partial(), Outcome::PartialCommitted)?;
    let expected = expected_rows(&c.fixture, "messages");
    let got = rows_of(&c.dest, "messages", false);
    let t = crate::table(&done, "messages");
    let proven = t
        .lost_rows
        .as_ref()
        .ok_or("messages lost rows")?
        .proven_by_index;
    assert_eq!(proven, (expected.len() - got.len()) as u64);
    assert_eq!(t.rows_partial, 0);
    assert_eq!(t.partial_refused, proven);
    let conn = Connection::open(&c.dest)?;
    let mut stmt = conn.prepare(
        "SELECT rowid, known_values FROM salvage_partial_rows WHERE tbl = 'messages' AND in_table = 0",
    )?;
    let kept: Vec<(i64, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    assert_eq!(kept.len() as u64, proven);
    for (rowid, known) in kept {
        let Value::Text(session) = &expected[&rowid][1] else {
            panic!()
        };
        let known: serde_json::Value = serde_json::from_str(&known)?;
        assert_eq!(
            known,
            serde_json::json!({ "session_id": session }),
            "row {rowid}"
        );
    }
    Ok(())
}

/// An automatic index has no SQL of its own: the columns it keys on still come from the
/// table's CREATE statement. `sessions` lost its only page; its primary-key index names
/// every lost session's id.
#[test]
fn an_automatic_index_proves_the_keys_of_lost_rows() -> TestResult {
    let c = case("partial-autoindex", "agent-4096-utf8", |f| {
        vec![Damage::ZeroPage(f.roots["sessions"])]
    });
    crate::recover_in_process(&c.allow_partial(), Outcome::PartialCommitted)?;
    let expected: BTreeSet<String> = expected_rows(&c.fixture, "sessions")
        .into_values()
        .map(|row| match &row[0] {
            Value::Text(id) => id.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    let conn = Connection::open(&c.dest)?;
    let mut stmt = conn.prepare(
        "SELECT columns_known, source_index, in_table, json_extract(known_values, '$.id') FROM salvage_partial_rows WHERE tbl = 'sessions'",
    )?;
    let rows: Vec<(String, String, i64, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<Result<_, _>>()?;
    assert_eq!(
        rows.iter().map(|r| r.3.clone()).collect::<BTreeSet<_>>(),
        expected
    );
    for (columns, source, in_table, _) in &rows {
        assert_eq!(
            (columns.as_str(), source.as_str()),
            ("id", "sqlite_autoindex_sessions_1")
        );
        // `source` and `started_at` are NOT NULL: a placeholder stands in instead.
        assert_eq!(*in_table, 0);
    }
    Ok(())
}

/// A table may have a column named `rowid` (SQL then reaches the rowid as `_rowid_`): a
/// lost row rebuilt from its index entries goes back under its own rowid, and its column
/// `rowid`, which no index holds, stays NULL.
#[test]
fn a_rebuilt_row_keeps_its_rowid_beside_a_column_named_rowid() -> TestResult {
    let dir = crate::Scratch::new("partial-rowid-column");
    let src = dir.path("events.db");
    let mut expected = std::collections::BTreeMap::new();
    {
        let conn = Connection::open(&src)?;
        conn.execute_batch(
            "PRAGMA page_size = 1024;
             CREATE TABLE events(rowid TEXT, kind TEXT, at INTEGER, payload BLOB);
             CREATE INDEX events_kind ON events(kind, at);
             BEGIN;",
        )?;
        for i in 1..=1500i64 {
            let kind = format!("kind-{}", i % 7);
            conn.execute(
                "INSERT INTO events(_rowid_, rowid, kind, at, payload) VALUES (?1, ?2, ?3, ?4, zeroblob(40))",
                rusqlite::params![i, format!("ev-{i}"), kind, 1_700_000_000 + i],
            )?;
            expected.insert(i, (kind, 1_700_000_000 + i));
        }
        conn.execute_batch("COMMIT")?;
    }
    let mut bytes = std::fs::read(&src)?;
    let root: u32 = Connection::open(&src)?.query_row(
        "SELECT rootpage FROM sqlite_schema WHERE name = 'events'",
        [],
        |r| r.get(0),
    )?;
    let leaves = fixtures::table_pages(&bytes, root).leaves;
    let lost_page = leaves[leaves.len() / 2] as usize;
    bytes[(lost_page - 1) * 1024..lost_page * 1024].fill(0);
    std::fs::write(&src, &bytes)?;
    let dest = dir.path("out.db");
    crate::recover_in_process(
        &crate::allow_partial(&src, &dest),
        Outcome::PartialCommitted,
    )?;
    let conn = Connection::open(&dest)?;
    let rebuilt: Vec<i64> = conn
        .prepare("SELECT rowid FROM salvage_partial_rows WHERE tbl = 'events' AND in_table")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    assert!(!rebuilt.is_empty());
    for rowid in rebuilt {
        let (column, kind, at): (Option<String>, String, i64) = conn.query_row(
            "SELECT rowid, kind, at FROM events WHERE _rowid_ = ?1",
            [rowid],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        assert_eq!((kind, at), expected[&rowid], "row {rowid}");
        assert_eq!(column, None, "row {rowid}: its column `rowid` is not known");
    }
    let held: i64 = conn.query_row("SELECT count(*) FROM events", [], |r| r.get(0))?;
    assert_eq!(held, 1500, "every row back, whole or rebuilt");
    Ok(())
}
