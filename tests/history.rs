//! History: every version of every row a write-ahead log and a rollback journal hold
//! (`recover --history`), and the database as of any commit (`recover --as-of`), checked
//! against what SQLite itself read after each commit of logs it wrote.

use std::collections::{BTreeMap, BTreeSet};

use fixtures::history::{State, WalStory};
use fixtures::Value;
use recovery::report::history::HistoryReport;
use recovery::{Outcome, RecoverOptions};
use rusqlite::Connection;

use crate::recover::{assert_same_rows, rows_of};
use crate::{recover_file, Scratch, TestResult};

/// `main` and its log (`-wal` or `-journal`) written to a scratch folder.
fn setup(name: &str, main: &[u8], suffix: &str, log: &[u8]) -> Scratch {
    let dir = Scratch::new(&format!("history-{name}"));
    std::fs::write(dir.path("chat.db"), main).unwrap();
    std::fs::write(dir.path(&format!("chat.db{suffix}")), log).unwrap();
    dir
}

/// One row of `salvage_history`.
#[derive(Clone, Debug, PartialEq)]
struct Version {
    table: String,
    rowid: i64,
    version: Option<i64>,
    source: String,
    commit: Option<i64>,
    op: Option<String>,
    values: Vec<Value>,
}

fn versions(db: &std::path::Path) -> Vec<Version> {
    let conn = Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT * FROM salvage_history ORDER BY rowid")
        .unwrap();
    let rows = stmt
        .query_map([], |r| {
            let nfield: i64 = r.get(9)?;
            Ok(Version {
                table: r.get(0)?,
                rowid: r.get(1)?,
                version: r.get(2)?,
                source: r.get(3)?,
                commit: r.get(4)?,
                op: r.get(5)?,
                values: (0..nfield as usize)
                    .map(|i| r.get(10 + i))
                    .collect::<Result<_, _>>()?,
            })
        })
        .unwrap();
    rows.map(Result::unwrap).collect()
}

/// The rows of every table of `state`, by table and rowid.
fn rows(state: &State) -> BTreeMap<(String, i64), Vec<Value>> {
    state
        .tables
        .iter()
        .flat_map(|t| {
            t.rows
                .iter()
                .map(|r| ((t.name.clone(), r.rowid.unwrap_or(0)), r.values.clone()))
        })
        .collect()
}

/// The schema rows of `state` as `sqlite_schema` holds them (without their rowids).
fn schema_rows(state: &State) -> Vec<Vec<Value>> {
    state
        .schema
        .iter()
        .map(|e| {
            vec![
                Value::Text(e.kind.clone()),
                Value::Text(e.name.clone()),
                Value::Text(e.tbl_name.clone()),
                Value::Integer(i64::from(e.rootpage)),
                e.sql.clone().map_or(Value::Null, Value::Text),
            ]
        })
        .collect()
}

/// What changed from `before` to `after`: (table, rowid, op, values after, or before for
/// a delete).
fn changes(before: &State, after: &State) -> BTreeSet<(String, i64, String, String)> {
    let (b, a) = (rows(before), rows(after));
    let mut out = BTreeSet::new();
    for (k, v) in &a {
        match b.get(k) {
            None => out.insert((k.0.clone(), k.1, "insert".into(), format!("{v:?}"))),
            Some(old) if old != v => {
                out.insert((k.0.clone(), k.1, "update".into(), format!("{v:?}")))
            }
            _ => false,
        };
    }
    for (k, v) in &b {
        if !a.contains_key(k) {
            out.insert((k.0.clone(), k.1, "delete".into(), format!("{v:?}")));
        }
    }
    out
}

/// The versions of step `commit` (ordinary tables only), in the form of [`changes`].
fn of_commit(versions: &[Version], commit: i64) -> BTreeSet<(String, i64, String, String)> {
    versions
        .iter()
        .filter(|v| v.commit == Some(commit) && v.table != "sqlite_schema")
        .map(|v| {
            let op = v.op.clone().unwrap_or_default();
            (v.table.clone(), v.rowid, op, format!("{:?}", v.values))
        })
        .collect()
}

/// `salvage recover chat.db -o out.db --history`, in-process: complete, and the report's
/// history section.
fn recover_history(dir: &Scratch) -> HistoryReport {
    let options = RecoverOptions {
        history: true,
        ..RecoverOptions::new(dir.path("chat.db"), dir.path("out.db"))
    };
    let done = crate::recover_in_process(&options, Outcome::Complete).unwrap();
    done.report.history.expect("a history section")
}

#[test]
fn every_commit_of_the_log_gives_its_inserts_updates_and_deletes() -> TestResult {
    let story: WalStory = fixtures::history::wal_story();
    let dir = setup("wal", &story.main, "-wal", &story.wal);
    let history = recover_history(&dir);
    let got = versions(&dir.path("out.db"));
    assert_eq!(story.states.len(), 10);
    for k in 1..story.states.len() {
        let want = changes(&story.states[k - 1], &story.states[k]);
        assert!(!want.is_empty(), "commit {k} changed nothing");
        assert_eq!(
            of_commit(&got, k as i64),
            want,
            "commit {k}: {}",
            story.commits[k - 1]
        );
    }
    // Each changed row's version before its first change is the main file's.
    let base = rows(&story.states[0]);
    let originals: Vec<&Version> = got.iter().filter(|v| v.version == Some(0)).collect();
    assert!(!originals.is_empty());
    for v in originals {
        assert_eq!(v.commit, Some(0));
        assert_eq!(v.op.as_deref(), Some("original"));
        if v.table != "sqlite_schema" {
            assert_eq!(
                base.get(&(v.table.clone(), v.rowid)),
                Some(&v.values),
                "{v:?}"
            );
        }
    }
    // A row updated twice: three versions in order.
    let renamed: Vec<(Option<i64>, Option<i64>)> = got
        .iter()
        .filter(|v| v.table == "conversations" && v.rowid == 2)
        .map(|v| (v.version, v.commit))
        .collect();
    assert_eq!(
        renamed,
        vec![(Some(0), Some(0)), (Some(1), Some(2)), (Some(2), Some(6))]
    );
    // The same three versions through the table's own view, by its column names.
    let conn = Connection::open(dir.path("out.db"))?;
    let titles: Vec<String> = conn
        .prepare("SELECT title FROM salvage_history_conversations WHERE id = 2 ORDER BY version")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let want: Vec<String> = [0, 2, 6]
        .iter()
        .map(|k| {
            let t = story.states[*k].table("conversations").unwrap();
            let row = t.rows.iter().find(|r| r.rowid == Some(2)).unwrap();
            match &row.values[1] {
                Value::Text(s) => s.clone(),
                v => format!("{v:?}"),
            }
        })
        .collect();
    assert_eq!(titles, want);
    assert_eq!(
        history.views.get("conversations").map(String::as_str),
        Some("salvage_history_conversations")
    );
    // The schema's own history: a table created, one dropped.
    let schema: Vec<(Option<i64>, String, String)> = got
        .iter()
        .filter(|v| v.table == "sqlite_schema" && v.op.as_deref() != Some("original"))
        .map(|v| {
            let name = match v.values.get(1) {
                Some(Value::Text(t)) => t.clone(),
                other => format!("{other:?}"),
            };
            (v.commit, v.op.clone().unwrap_or_default(), name)
        })
        .collect();
    assert!(
        schema.contains(&(Some(8), "insert".into(), "reactions".into())),
        "{schema:?}"
    );
    assert!(
        schema.contains(&(Some(9), "delete".into(), "drafts".into())),
        "{schema:?}"
    );
    // The report and the steps table agree.
    let steps = &history.steps;
    assert_eq!(steps.len(), 9);
    for (i, s) in steps.iter().enumerate() {
        assert_eq!(s.kind, "commit");
        assert_eq!(s.commit, Some(i as u32 + 1));
        assert_eq!(s.frames.map(|f| f[1]), Some(story.commit_frames[i]));
    }
    let conn = Connection::open(dir.path("out.db"))?;
    let n: i64 = conn.query_row("SELECT count(*) FROM salvage_commits", [], |r| r.get(0))?;
    assert_eq!(n, 9);
    // The recovered tables are the last state, untouched by the history.
    for t in &story.states[9].tables {
        let want: BTreeMap<i64, Vec<Value>> = t
            .rows
            .iter()
            .map(|r| (r.rowid.unwrap_or(0), r.values.clone()))
            .collect();
        assert_same_rows(
            &rows_of(&dir.path("out.db"), &t.name, false),
            &want,
            &t.name,
        );
    }
    Ok(())
}

#[test]
fn as_of_each_commit_is_the_database_sqlite_read_then() -> TestResult {
    let story = fixtures::history::wal_story();
    let dir = setup("as-of", &story.main, "-wal", &story.wal);
    for (k, state) in story.states.iter().enumerate() {
        let dest = dir.path(&format!("as-of-{k}.db"));
        let options = RecoverOptions {
            as_of: Some(k as u32),
            ..RecoverOptions::new(dir.path("chat.db"), &dest)
        };
        crate::recover_in_process(&options, Outcome::Complete)?;
        for t in &state.tables {
            let want: BTreeMap<i64, Vec<Value>> = t
                .rows
                .iter()
                .map(|r| (r.rowid.unwrap_or(0), r.values.clone()))
                .collect();
            assert_same_rows(
                &rows_of(&dest, &t.name, false),
                &want,
                &format!("{} as of {k}", t.name),
            );
        }
        // A table not yet created, or dropped by then, is not there.
        let conn = Connection::open(&dest)?;
        for name in ["reactions", "drafts"] {
            let there: bool = conn.query_row(
                "SELECT count(*) > 0 FROM sqlite_schema WHERE name = ?1",
                [name],
                |r| r.get(0),
            )?;
            assert_eq!(there, state.table(name).is_some(), "{name} as of {k}");
        }
    }
    // A commit the log does not have is refused before anything is written (by the binary:
    // exit 2, and what to do).
    let out = recover_file(
        &dir.path("chat.db"),
        &dir.path("ten.db"),
        &["--as-of", "10"],
    )?;
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds 9 commits"));
    assert!(!dir.listing().iter().any(|f| f.starts_with("ten.db")));
    Ok(())
}

#[test]
fn frames_that_never_committed_are_a_step_of_their_own() -> TestResult {
    let story = fixtures::history::wal_story();
    let mut wal = story.wal.clone();
    fixtures::history::uncommit_last(&mut wal).unwrap();
    let dir = setup("uncommitted", &story.main, "-wal", &wal);
    let history = recover_history(&dir);
    let steps = &history.steps;
    assert_eq!(steps.len(), 9);
    assert_eq!(steps[8].kind, "uncommitted");
    let got = versions(&dir.path("out.db"));
    // The dropped table's rows: deleted by a transaction that never committed.
    let drafts: Vec<&Version> = got
        .iter()
        .filter(|v| v.table == "drafts" && v.op.as_deref() == Some("delete"))
        .collect();
    assert!(!drafts.is_empty());
    assert!(drafts
        .iter()
        .all(|v| v.source == "wal uncommitted" && v.commit.is_none()));
    // The recovered database is the last committed state: the table is still there.
    let want = story.states[8].table("drafts").unwrap();
    assert_eq!(
        rows_of(&dir.path("out.db"), "drafts", false).len(),
        want.rows.len()
    );
    Ok(())
}

#[test]
fn an_older_generation_of_the_log_gives_only_real_earlier_versions() -> TestResult {
    let g = fixtures::history::older_generation();
    let dir = setup("older", &g.main, "-wal", &g.wal);
    let history = recover_history(&dir);
    let got = versions(&dir.path("out.db"));
    let older: Vec<&Version> = got
        .iter()
        .filter(|v| v.source.starts_with("wal older generation"))
        .collect();
    assert!(!older.is_empty(), "no row read from the older frames");
    assert_eq!(history.older_generation, older.len() as u64);
    // Every one is a version SQLite once read (some state of the older generation), and
    // none is a row of the main file as it is.
    let once: BTreeSet<(String, i64, String)> = g
        .older
        .states
        .iter()
        .flat_map(rows)
        .map(|((t, r), v)| (t, r, format!("{v:?}")))
        .collect();
    let schemas: Vec<Vec<Value>> = g.older.states.iter().flat_map(schema_rows).collect();
    let now = rows(&g.states[0]);
    for v in &older {
        if v.table == "sqlite_schema" {
            assert!(
                schemas.contains(&v.values),
                "not a schema row SQLite read: {v:?}"
            );
            continue;
        }
        let key = (v.table.clone(), v.rowid, format!("{:?}", v.values));
        assert!(once.contains(&key), "not a version SQLite read: {v:?}");
        assert_ne!(
            now.get(&(v.table.clone(), v.rowid)),
            Some(&v.values),
            "{v:?}"
        );
    }
    // The current generation's commits are there as usual.
    assert_eq!(history.steps.len(), g.commit_frames.len());
    Ok(())
}

#[test]
fn a_persisted_journal_gives_the_versions_before_its_transaction() -> TestResult {
    let story = fixtures::history::journal_story();
    let dir = setup("persist", &story.main, "-journal", &story.journal);
    let history = recover_history(&dir);
    let steps = &history.steps;
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0].kind, "journal");
    assert_eq!(steps[0].hot, Some(false));
    let got = versions(&dir.path("out.db"));
    let after: BTreeSet<_> = got
        .iter()
        .filter(|v| v.version.is_some_and(|n| n > 0) && v.table != "sqlite_schema")
        .map(|v| {
            let op = v.op.clone().unwrap_or_default();
            (v.table.clone(), v.rowid, op, format!("{:?}", v.values))
        })
        .collect();
    assert_eq!(after, changes(&story.before, &story.after));
    let before = rows(&story.before);
    for v in got.iter().filter(|v| v.version == Some(0)) {
        assert_eq!(v.source, "journal");
        if v.table != "sqlite_schema" {
            assert_eq!(
                before.get(&(v.table.clone(), v.rowid)),
                Some(&v.values),
                "{v:?}"
            );
        }
    }
    // The journal is not hot: the recovered tables are the committed state.
    for t in &story.after.tables {
        assert_eq!(
            rows_of(&dir.path("out.db"), &t.name, false).len(),
            t.rows.len()
        );
    }
    Ok(())
}

#[test]
fn a_hot_journal_gives_the_committed_versions_and_what_never_committed() -> TestResult {
    let story = fixtures::history::hot_journal_story();
    let dir = setup("hot", &story.main, "-journal", &story.journal);
    let history = recover_history(&dir);
    let steps = &history.steps;
    assert_eq!(steps[0].kind, "journal");
    assert_eq!(steps[0].hot, Some(true));
    let got = versions(&dir.path("out.db"));
    let before = rows(&story.before);
    let originals: Vec<&Version> = got.iter().filter(|v| v.version == Some(0)).collect();
    assert!(!originals.is_empty());
    for v in originals {
        if v.table != "sqlite_schema" {
            assert_eq!(
                before.get(&(v.table.clone(), v.rowid)),
                Some(&v.values),
                "{v:?}"
            );
        }
    }
    assert!(got
        .iter()
        .filter(|v| v.version.is_some_and(|n| n > 0))
        .all(|v| v.source == "main file uncommitted"));
    Ok(())
}

#[test]
fn inspect_prints_the_timeline_of_commits() -> TestResult {
    let story = fixtures::history::wal_story();
    let dir = setup("inspect", &story.main, "-wal", &story.wal);
    let src = dir.path("chat.db");
    let out = crate::run_salvage(&["inspect".as_ref(), src.as_os_str(), "--json".as_ref()])?;
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let timeline = report["sidecars"]["wal"]["timeline"].as_array().unwrap();
    assert_eq!(timeline.len(), 9);
    for (k, step) in timeline.iter().enumerate() {
        let want = changes(&story.states[k], &story.states[k + 1]);
        let count = |op: &str| want.iter().filter(|c| c.2 == op).count();
        // The schema's own rows count too: a table created (commit 8), one dropped (9).
        let schema = [0, 0, 0];
        let schema = match k + 1 {
            8 => [1, 0, 0],
            9 => [0, 0, 1],
            _ => schema,
        };
        let got = ["inserted", "updated", "deleted"].map(|f| step[f].as_u64().unwrap() as usize);
        let want = [
            count("insert") + schema[0],
            count("update") + schema[1],
            count("delete") + schema[2],
        ];
        assert_eq!(got, want, "commit {}", k + 1);
        assert_eq!(step["frames"][1], story.commit_frames[k]);
    }
    let human = crate::run_salvage(&["inspect".as_ref(), src.as_os_str()])?;
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("commit 9"), "{text}");
    Ok(())
}

/// A table the log drops: its versions from before the drop are read as its statement
/// (from the schema before the log) says, the rowid alias filled in and REAL affinity
/// applied, though the schema after the log no longer has it. Written by SQLite itself,
/// the log copied while its connection still holds it (closing would checkpoint).
#[test]
fn a_table_the_log_drops_is_read_by_its_statement() -> TestResult {
    let dir = Scratch::new("history-dropped");
    let work = dir.path("work.db");
    let conn = Connection::open(&work)?;
    conn.execute_batch(
        "CREATE TABLE t(id INTEGER PRIMARY KEY, x REAL);
         INSERT INTO t VALUES (1, 1), (2, 5);
         PRAGMA journal_mode = WAL;
         PRAGMA wal_autocheckpoint = 0;",
    )?;
    conn.execute_batch("UPDATE t SET x = 2 WHERE id = 1;")?;
    conn.execute_batch("DROP TABLE t;")?;
    std::fs::copy(&work, dir.path("chat.db"))?;
    std::fs::copy(dir.path("work.db-wal"), dir.path("chat.db-wal"))?;
    drop(conn);
    recover_history(&dir);
    let out = Connection::open(dir.path("out.db"))?;
    let mut stmt = out.prepare(
        "SELECT version, c0, typeof(c1), c1 FROM salvage_history \
         WHERE tbl = 't' AND rowid = 1 ORDER BY version",
    )?;
    let got: Vec<(i64, Option<i64>, String, f64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<Result<_, _>>()?;
    // The original, the update, the drop (the row as it was).
    assert_eq!(
        got,
        [
            (0, Some(1), "real".to_string(), 1.0),
            (1, Some(1), "real".to_string(), 2.0),
            (2, Some(1), "real".to_string(), 2.0),
        ]
    );
    Ok(())
}

/// `salvage recover --history` of a log whose one commit changed the small rows of leaves
/// that also hold large ones (8 MB each, joined from overflow pages) holds one row's two
/// versions at a time: each row of a leaf written is compared by its bytes, and decoded
/// only when they differ. Decoded all, before and after, the large rows of this file were
/// all held at once, twice (300 MB and more).
#[test]
fn small_changes_beside_large_rows_hold_one_row_at_a_time() -> TestResult {
    use rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE as NO_CHECKPOINT;
    let dir = Scratch::new("history-beside-large");
    let src = dir.path("src.db");
    {
        let conn = Connection::open(&src)?;
        conn.set_db_config(NO_CHECKPOINT, true)?;
        conn.execute_batch(
            "PRAGMA page_size = 4096;
             CREATE TABLE t(id INTEGER PRIMARY KEY, n INTEGER, b BLOB);
             BEGIN;",
        )?;
        // In the file: a large row, then small ones, the leaves shared.
        for i in 0..20 {
            conn.execute("INSERT INTO t(n, b) VALUES (?1, zeroblob(8000000))", [i])?;
            for _ in 0..4 {
                conn.execute("INSERT INTO t(n) VALUES (?1)", [i])?;
            }
        }
        // In the log: every small row changed, in one commit.
        conn.execute_batch(
            "COMMIT;
             PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
             UPDATE t SET n = n + 1 WHERE b IS NULL;",
        )?;
    }
    let out = dir.path("out.db");
    let (status, peak) = crate::files::measured(&[
        "recover".as_ref(),
        src.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
        "--history".as_ref(),
    ])?;
    assert_eq!(status, Some(0));
    let changed = versions(&out)
        .iter()
        .filter(|v| v.op.as_deref() == Some("update"))
        .count();
    assert_eq!(changed, 80, "the small rows' updates");
    assert!(peak < 192 << 20, "peak resident memory {} MiB", peak >> 20);
    Ok(())
}

/// The second hash of the source proves that nothing the run read changed, so it is read
/// after the run's last read of the source: `--history` reads the log's every commit,
/// `--carve` every page's free space and `--provenance` the pages each row came from, all
/// after the loss bounds (where a run without them starts the second hash). They end
/// before the views are re-created.
#[test]
fn the_source_is_hashed_again_after_the_steps_that_read_it_last() -> TestResult {
    let story = fixtures::history::wal_story();
    /// What a run is asked beside the recovery.
    type Ask = fn(&mut RecoverOptions);
    let asks: [(&str, Ask); 3] = [
        ("history", |o| o.history = true),
        ("carve", |o| o.carve = true),
        ("provenance", |o| o.provenance = true),
    ];
    for (name, ask) in asks {
        let dir = setup(&format!("late-{name}"), &story.main, "-wal", &story.wal);
        let mut options = RecoverOptions::new(dir.path("chat.db"), dir.path("out.db"));
        ask(&mut options);
        let told = crate::Told::default();
        let done = recovery::recover(&options, &told)?;
        assert_eq!(done.outcome, Outcome::Complete, "{name}");
        told.second_hash_after_the_last_read(name);
    }
    Ok(())
}
