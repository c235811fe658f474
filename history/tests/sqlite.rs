//! The history of logs SQLite wrote, against what SQLite read after each commit.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "a test panics on what it built itself; clippy.toml exempts #[test] functions, not their helpers"
)]

use std::collections::BTreeMap;

use history::{wal_history, Op};

#[test]
fn the_agent_logs_three_commits() {
    let f = fixtures::build_agent_with_wal();
    let wal = pager::read_wal(&f.wal).unwrap();
    let h = wal_history(&f.main, None, &wal, &|_| {});
    // Three commits, then the frame of a transaction that never committed.
    assert_eq!(h.steps.len(), 4);
    assert!(matches!(
        h.steps[3].kind,
        history::StepKind::Uncommitted { .. }
    ));
    let ops: Vec<Vec<(String, Op)>> = h
        .steps
        .iter()
        .map(|s| {
            let mut v: Vec<(String, Op)> = s
                .changes
                .iter()
                .map(|c| (c.table.clone(), c.op()))
                .collect();
            v.dedup();
            v
        })
        .collect();
    eprintln!("{ops:?}");
    assert!(ops[0]
        .iter()
        .all(|(t, o)| t == "messages" && *o == Op::Insert));
    assert_eq!(ops[1], vec![("sessions".to_string(), Op::Update)]);
    assert_eq!(ops[2], vec![("state_meta".to_string(), Op::Delete)]);
    assert!(h.checkpointed.is_empty());
}

/// A change: table, rowid, values before and after.
type Change<'r> = (
    String,
    i64,
    Option<&'r Vec<pager::Value>>,
    Option<&'r Vec<pager::Value>>,
);

/// Rows of every table by (table, rowid), as SQLite reads them.
type Rows = BTreeMap<(String, i64), Vec<pager::Value>>;

fn read_rows(conn: &rusqlite::Connection) -> Rows {
    use rusqlite::types::ValueRef;
    let mut out = Rows::new();
    for t in ["a", "b"] {
        let mut stmt = conn.prepare(&format!("SELECT rowid, * FROM {t}")).unwrap();
        let n = stmt.column_count();
        let mut rows = stmt.query([]).unwrap();
        while let Some(r) = rows.next().unwrap() {
            let values = (1..n)
                .map(|i| match r.get_ref(i).unwrap() {
                    ValueRef::Null => pager::Value::Null,
                    ValueRef::Integer(v) => pager::Value::Integer(v),
                    ValueRef::Real(v) => pager::Value::Real(v),
                    ValueRef::Text(v) => pager::Value::Text(v.to_vec()),
                    ValueRef::Blob(v) => pager::Value::Blob(v.to_vec()),
                })
                .collect();
            out.insert((t.to_string(), r.get(0).unwrap()), values);
        }
    }
    out
}

/// Random transactions on two tables of 1 KiB pages (rows of every size, overflow chains,
/// leaves split, merged, freed and reused by the other table), each committed to a log
/// SQLite writes; the history of the log must give exactly the changes between the
/// states SQLite read after each commit.
#[test]
fn random_transactions_give_exactly_the_changes_sqlite_read() {
    for seed in 1..=12u64 {
        let mut rng = fixtures::prng::SplitMix64::new(seed);
        let dir = std::env::temp_dir().join(format!(
            "salvage-history-random-{}-{seed}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.db");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA page_size = 1024; PRAGMA secure_delete = OFF;
             CREATE TABLE a(x, y); CREATE TABLE b(x, y);
             PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;",
        )
        .unwrap();
        let mut states = vec![read_rows(&conn)];
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
            .unwrap();
        for _ in 0..40 {
            conn.execute_batch("BEGIN").unwrap();
            for _ in 0..rng.range(1, 6) {
                let t = rng.pick(&["a", "b"]);
                let size = if rng.one_in(6) {
                    rng.range(900, 5000)
                } else {
                    rng.range(1, 200)
                };
                match rng.below(5) {
                    0 | 1 => {
                        for _ in 0..rng.range(1, 30) {
                            conn.execute(
                                &format!("INSERT INTO {t} VALUES (?1, randomblob(?2))"),
                                rusqlite::params![rng.below(1000) as i64, size as i64],
                            )
                            .unwrap();
                        }
                    }
                    2 => {
                        conn.execute(
                            &format!("UPDATE {t} SET y = randomblob(?1) WHERE rowid % 7 = ?2"),
                            rusqlite::params![size as i64, rng.below(7) as i64],
                        )
                        .unwrap();
                    }
                    3 => {
                        conn.execute(
                            &format!("DELETE FROM {t} WHERE rowid % 3 = ?1"),
                            [rng.below(3) as i64],
                        )
                        .unwrap();
                    }
                    _ => {
                        // Rows move to the other table: the pages one frees, the other takes.
                        let other = if t == "a" { "b" } else { "a" };
                        conn.execute_batch(&format!(
                            "INSERT INTO {other}(x, y) SELECT x, y FROM {t} WHERE rowid % 2 = 0;
                             DELETE FROM {t} WHERE rowid % 2 = 0;"
                        ))
                        .unwrap();
                    }
                }
            }
            conn.execute_batch("COMMIT").unwrap();
            states.push(read_rows(&conn));
        }
        let main = std::fs::read(&path).unwrap();
        let log = std::fs::read(dir.join("r.db-wal")).unwrap();
        drop(conn);
        let _ = std::fs::remove_dir_all(&dir);

        compare(&main, &log, &states, &format!("seed {seed}"));
    }
}

/// Checks the history of `log` over `main` against `states`, what SQLite read before the
/// first commit and after each.
fn compare(main: &[u8], log: &[u8], states: &[Rows], label: &str) {
    let wal = pager::read_wal(log).unwrap();
    let h = wal_history(main, None, &wal, &|_| {});
    // Commits that changed nothing wrote no frame: compare the states that differ.
    let distinct: Vec<&Rows> = states
        .iter()
        .enumerate()
        .filter(|(i, s)| *i == 0 || states.get(i - 1) != Some(s))
        .map(|(_, s)| s)
        .collect();
    let steps: Vec<&history::Step> = h
        .steps
        .iter()
        .filter(|s| s.changes.iter().any(|c| c.table != "sqlite_schema"))
        .collect();
    assert_eq!(steps.len() + 1, distinct.len(), "{label}");
    for (k, step) in steps.iter().enumerate() {
        let (before, after) = (distinct[k], distinct[k + 1]);
        let mut want: Vec<Change<'_>> = Vec::new();
        for key in before
            .keys()
            .chain(after.keys())
            .collect::<std::collections::BTreeSet<_>>()
        {
            let (b, a) = (before.get(key), after.get(key));
            if b != a {
                want.push((key.0.clone(), key.1, b, a));
            }
        }
        let got: Vec<_> = step
            .changes
            .iter()
            .filter(|c| c.table != "sqlite_schema")
            .map(|c| {
                (
                    c.table.clone(),
                    c.rowid,
                    c.before.as_ref(),
                    c.after.as_ref(),
                )
            })
            .collect();
        if got != want {
            let keys = |v: &[Change<'_>]| -> Vec<String> {
                v.iter()
                    .map(|(t, r, b, a)| {
                        format!("{t}{r}:{}{}", u8::from(b.is_some()), u8::from(a.is_some()))
                    })
                    .collect()
            };
            let (g, w) = (keys(&got), keys(&want));
            let missing: Vec<_> = w.iter().filter(|k| !g.contains(k)).take(20).collect();
            let extra: Vec<_> = g.iter().filter(|k| !w.contains(k)).take(20).collect();
            panic!("{label}, step {k}: missing {missing:?}, extra {extra:?}");
        }
        assert_eq!(got.len(), want.len(), "{label}, step {k}");
    }
    assert!(h.checkpointed.is_empty());
}

/// A table's leaves freed while another table grows in the same commits: a freed leaf of
/// one is taken as an interior page of the other, and its children are the other's.
#[test]
fn pages_taken_from_one_table_by_another_are_the_other_tables() {
    let dir = std::env::temp_dir().join(format!("salvage-history-reuse-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("r.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "PRAGMA page_size = 512; PRAGMA secure_delete = OFF; CREATE TABLE a(x);
         WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 2000)
         INSERT INTO a SELECT printf('%.40c%d', 'x', n) FROM i;
         CREATE TABLE b(y);
         PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;",
    )
    .unwrap();
    let mut states = vec![read_rows(&conn)];
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    let mut n = 0;
    conn.execute_batch("BEGIN").unwrap();
    for _ in 0..50 {
        n += 1;
        conn.execute("INSERT INTO b VALUES (printf('%.40c%d', 'y', ?1))", [n])
            .unwrap();
    }
    conn.execute_batch("COMMIT").unwrap();
    states.push(read_rows(&conn));
    for k in 0..40 {
        conn.execute_batch("BEGIN").unwrap();
        conn.execute(
            "DELETE FROM a WHERE rowid BETWEEN ?1 AND ?2",
            [1 + k * 50, k * 50 + 50],
        )
        .unwrap();
        for _ in 0..60 {
            n += 1;
            conn.execute("INSERT INTO b VALUES (printf('%.40c%d', 'y', ?1))", [n])
                .unwrap();
        }
        conn.execute_batch("COMMIT").unwrap();
        states.push(read_rows(&conn));
    }
    let main = std::fs::read(&path).unwrap();
    let log = std::fs::read(dir.join("r.db-wal")).unwrap();
    drop(conn);
    let _ = std::fs::remove_dir_all(&dir);
    compare(&main, &log, &states, "reuse");
}
