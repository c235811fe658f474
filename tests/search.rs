//! `pager::search` against SQLite: every entry of indexes SQLite wrote over values of
//! every storage class (NULL, integers, reals, text, BLOBs, ascending and descending, over
//! one and two columns) is found down one path, and a key SQLite never wrote is not.

use fixtures::prng::SplitMix64;
use pager::{Database, PageNo, Value};
use rusqlite::Connection;

use crate::{Scratch, TestResult};

fn random_value(rng: &mut SplitMix64) -> rusqlite::types::Value {
    use rusqlite::types::Value as V;
    match rng.below(6) {
        0 => V::Null,
        1 => V::Integer(rng.below(40) as i64 - 20),
        2 => V::Integer((rng.next_u64() >> 1) as i64 * if rng.below(2) == 0 { 1 } else { -1 }),
        3 => V::Real(rng.below(4000) as f64 / 8.0 - 250.0),
        4 => V::Text(format!("t{}", rng.below(300))),
        _ => V::Blob((0..rng.below(6)).map(|_| rng.below(256) as u8).collect()),
    }
}

fn pager_value(v: &rusqlite::types::Value) -> Value {
    use rusqlite::types::Value as V;
    match v {
        V::Null => Value::Null,
        V::Integer(i) => Value::Integer(*i),
        V::Real(r) => Value::Real(*r),
        V::Text(t) => Value::Text(t.as_bytes().to_vec()),
        V::Blob(b) => Value::Blob(b.clone()),
    }
}

#[test]
fn every_entry_sqlite_wrote_is_found_and_no_other() -> TestResult {
    let dir = Scratch::new("index-search");
    let path = dir.path("s.db");
    let conn = Connection::open(&path)?;
    conn.execute_batch(
        "PRAGMA page_size = 512;
         CREATE TABLE t(a, b);
         CREATE INDEX t_a ON t(a);
         CREATE INDEX t_ab ON t(a DESC, b);",
    )?;
    let mut rng = SplitMix64::new(0x5ea7c4);
    let mut rows = Vec::new();
    for rowid in 1..=3000i64 {
        let (a, b) = (random_value(&mut rng), random_value(&mut rng));
        conn.execute(
            "INSERT INTO t(rowid, a, b) VALUES (?1, ?2, ?3)",
            rusqlite::params![rowid, a, b],
        )?;
        rows.push((rowid, pager_value(&a), pager_value(&b)));
    }
    let root = |name: &str| -> rusqlite::Result<u32> {
        conn.query_row(
            "SELECT rootpage FROM sqlite_schema WHERE name = ?1",
            [name],
            |r| r.get(0),
        )
    };
    let (t_a, t_ab) = (
        PageNo::new(root("t_a")?).ok_or("t_a")?,
        PageNo::new(root("t_ab")?).ok_or("t_ab")?,
    );
    drop(conn);
    let bytes = std::fs::read(&path)?;
    let db = Database::open(&bytes).map_err(|e| format!("{e:?}"))?;
    for (rowid, a, b) in &rows {
        let one = [a.clone(), Value::Integer(*rowid)];
        assert_eq!(
            pager::search::index_holds(&db, t_a, &one, &[false]),
            Some(true),
            "{one:?}"
        );
        let two = [a.clone(), b.clone(), Value::Integer(*rowid)];
        assert_eq!(
            pager::search::index_holds(&db, t_ab, &two, &[true, false]),
            Some(true),
            "{two:?}"
        );
        // The same key under a rowid no row has.
        let absent = [a.clone(), Value::Integer(rowid + 10_000)];
        assert_eq!(
            pager::search::index_holds(&db, t_a, &absent, &[false]),
            Some(false),
            "{absent:?}"
        );
    }
    Ok(())
}
