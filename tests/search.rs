//! `pager::search` against SQLite: every entry of indexes SQLite wrote over values of
//! every storage class (NULL, integers, reals, text, BLOBs, ascending and descending, over
//! one and two columns) is found down one path, and a key SQLite never wrote is not.

use fixtures::prng::SplitMix64;
use pager::{Database, PageNo, Value};
use rusqlite::Connection;

use crate::{Scratch, TestResult};

fn random_value(rng: &mut SplitMix64) -> rusqlite::types::Value {
    use rusqlite::types::Value as V;
    // Integers and reals about 2^53, where a real no longer tells neighbouring integers
    // apart, and both zeros: SQLite compares an integer with a real exactly.
    let near = 1i64 << 53;
    match rng.below(9) {
        0 => V::Null,
        1 => V::Integer(rng.below(40) as i64 - 20),
        2 => V::Integer((rng.next_u64() >> 1) as i64 * if rng.below(2) == 0 { 1 } else { -1 }),
        3 => V::Real(rng.below(4000) as f64 / 8.0 - 250.0),
        4 => V::Text(format!("t{}", rng.below(300))),
        5 => V::Integer(near + rng.below(9) as i64 - 4),
        6 => V::Real((near + 2 * (rng.below(5) as i64 - 2)) as f64),
        7 => V::Real(if rng.below(2) == 0 { 0.0 } else { -0.0 }),
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

/// Entries too long for their page, read from overflow chains as the search compares
/// them: each is found, another rowid is not; and an entry whose chain is broken proves
/// nothing (`None`), never a wrong answer either way.
#[test]
fn entries_on_overflow_pages_are_compared_whole_and_a_broken_one_proves_nothing() -> TestResult {
    let dir = Scratch::new("index-search-overflow");
    let path = dir.path("s.db");
    let conn = Connection::open(&path)?;
    conn.execute_batch(
        "PRAGMA page_size = 512;
         CREATE TABLE t(a);
         CREATE INDEX t_a ON t(a);",
    )?;
    let mut rng = SplitMix64::new(0x0f10_5eed);
    let mut rows = Vec::new();
    for rowid in 1..=400i64 {
        // Long values sharing long prefixes: the order is decided past the local part.
        let len = 600 + rng.below(1500) as usize;
        let mut text = "p".repeat(len - 8);
        text.push_str(&format!("{:08}", rng.below(100_000_000)));
        let value = if rowid % 3 == 0 {
            rusqlite::types::Value::Blob(text.clone().into_bytes())
        } else {
            rusqlite::types::Value::Text(text)
        };
        conn.execute(
            "INSERT INTO t(rowid, a) VALUES (?1, ?2)",
            rusqlite::params![rowid, value],
        )?;
        rows.push((rowid, pager_value(&value)));
    }
    let t_a: u32 = conn.query_row(
        "SELECT rootpage FROM sqlite_schema WHERE name = 't_a'",
        [],
        |r| r.get(0),
    )?;
    let t_a = PageNo::new(t_a).ok_or("t_a")?;
    drop(conn);
    let mut bytes = std::fs::read(&path)?;
    let db = Database::open(&bytes).map_err(|e| format!("{e:?}"))?;
    for (rowid, a) in &rows {
        let key = [a.clone(), Value::Integer(*rowid)];
        assert_eq!(
            pager::search::index_holds(&db, t_a, &key, &[false]),
            Some(true),
            "rowid {rowid}"
        );
        let absent = [a.clone(), Value::Integer(rowid + 10_000)];
        assert_eq!(
            pager::search::index_holds(&db, t_a, &absent, &[false]),
            Some(false),
            "rowid {rowid} absent"
        );
    }
    // The first overflow page of one entry on a leaf, zeroed.
    let (rowid, first) = pager::BtreeWalk::new(&db, t_a)
        .flatten()
        .filter_map(|item| match item {
            pager::TreeItem::Cell(c) => {
                let payload = c.cell.payload()?;
                let row = pager::value::decode_cell(&db, &c).ok()?;
                match row.values.last() {
                    Some(Value::Integer(rowid)) => Some((*rowid, payload.first_overflow?)),
                    _ => None,
                }
            }
            _ => None,
        })
        .nth(100)
        .ok_or("no entry with an overflow chain")?;
    drop(db);
    let page_size = 512;
    let at = (first.get() as usize - 1) * page_size;
    bytes
        .get_mut(at..at + page_size)
        .ok_or("page past the file")?
        .fill(0);
    let db = Database::open(&bytes).map_err(|e| format!("{e:?}"))?;
    let (_, a) = rows.iter().find(|(r, _)| *r == rowid).ok_or("row")?;
    let key = [a.clone(), Value::Integer(rowid)];
    assert_eq!(
        pager::search::index_holds(&db, t_a, &key, &[false]),
        None,
        "the search ends on the broken entry: it proves nothing"
    );
    Ok(())
}
