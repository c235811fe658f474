//! Partial rows from indexes: a table row is lost, its index entries survive. The row is
//! rebuilt from the indexed columns (every other column NULL), registered in
//! `salvage_partial_rows`, and still counted as lost.

use std::collections::BTreeSet;

use fixtures::{Damage, Value};
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

fn table_report<'r>(r: &'r serde_json::Value, table: &str) -> &'r serde_json::Value {
    r["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == table)
        .unwrap()
}

#[test]
fn a_lost_row_is_rebuilt_from_its_index_entries_and_registered() -> TestResult {
    // The rows that survive whole: what the table holds without partial rows.
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
    c.recover_expecting(&["--allow-partial"], 3)?;
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
    let r = c.report();
    let t = table_report(&r, "items");
    assert_eq!(t["rows_partial"].as_u64(), Some(lost.len() as u64));
    assert_eq!(r["partial_rows"]["rows"].as_u64(), Some(lost.len() as u64));
    assert_eq!(r["partial_rows"]["registry"], "salvage_partial_rows");
    assert_eq!(
        t["lost_rows"]["proven_by_index"].as_u64(),
        Some(lost.len() as u64)
    );
    assert_eq!(r["flags"]["loss_detected"], true);
    assert_eq!(r["flags"]["complete"], false);
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
    c.recover_expecting(&["--allow-partial"], 3)?;
    let expected = expected_rows(&c.fixture, "messages");
    let got = rows_of(&c.dest, "messages", false);
    let r = c.report();
    let t = table_report(&r, "messages");
    let proven = t["lost_rows"]["proven_by_index"].as_u64().unwrap();
    assert_eq!(proven, (expected.len() - got.len()) as u64);
    assert_eq!(t["rows_partial"].as_u64(), Some(0));
    assert_eq!(t["partial_refused"].as_u64(), Some(proven));
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
    c.recover_expecting(&["--allow-partial"], 3)?;
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
