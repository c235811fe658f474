//! Placeholder parents: the hot parent table damaged worse than its children. Every
//! surviving child is kept, one registered placeholder parent stands in for each lost
//! parent, and the run reports LOSS, never a clean recovery.

use recovery::{LossSignal, Outcome, ProfileChoice, RecoverOptions, TableStatus};
use std::collections::BTreeMap;

use fixtures::{Damage, Value};
use rusqlite::Connection;

use crate::recover::{assert_same_rows, case, expected_rows};
use crate::TestResult;

/// agent-4096-utf8 with its `sessions` table lost: the table is a single leaf, its root.
/// `name` keeps each test's scratch folder its own.
fn sessions_lost(name: &str) -> crate::recover::Case {
    case(name, "agent-4096-utf8", |f| {
        vec![Damage::ZeroPage(f.roots["sessions"])]
    })
}

#[test]
fn lost_sessions_are_rebuilt_from_their_messages_as_registered_placeholders() -> TestResult {
    let c = sessions_lost("sessions-lost-partial");
    let done = crate::recover_in_process(&c.allow_partial(), Outcome::PartialCommitted)?;
    // Every message survives, untouched.
    let messages = expected_rows(&c.fixture, "messages");
    assert!(messages.len() >= 500);
    assert_same_rows(
        &crate::recover::rows_of(&c.dest, "messages", false),
        &messages,
        "messages",
    );
    // What the messages prove about each session: its key, earliest timestamp, count.
    let mut proven: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for row in messages.values() {
        let (Value::Text(session), Value::Integer(ts)) = (&row[1], &row[4]) else {
            panic!("{row:?}")
        };
        let e = proven.entry(session.clone()).or_insert((i64::MAX, 0));
        e.0 = e.0.min(*ts);
        e.1 += 1;
    }
    let conn = Connection::open_with_flags(&c.dest, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut stmt = conn.prepare(
        "SELECT id, source, title, started_at, model, message_count FROM sessions ORDER BY id",
    )?;
    let sessions: Vec<(String, String, String, i64, Option<String>, i64)> = stmt
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })?
        .collect::<Result<_, _>>()?;
    assert_eq!(
        sessions.len(),
        proven.len(),
        "one placeholder per orphaned session"
    );
    for (id, source, title, started_at, model, count) in &sessions {
        let (earliest, n) = proven[id];
        assert_eq!(source, "recovered");
        assert!(
            title.contains("[recovered]") && title.contains(&n.to_string()),
            "{title}"
        );
        assert_eq!(
            *started_at, earliest,
            "started_at is the earliest surviving message"
        );
        assert_eq!(*count, n);
        assert_eq!(*model, None, "nothing proves the model: NULL, not invented");
    }
    // Each is registered as fabricated.
    let registered: i64 = conn.query_row(
        "SELECT count(*) FROM salvage_placeholders WHERE tbl = 'sessions'",
        [],
        |r| r.get(0),
    )?;
    assert_eq!(registered as usize, sessions.len());
    let r = &done.report;
    assert!(r.flags.loss_detected);
    assert!(r.flags.partial);
    assert!(!r.flags.complete);
    assert_eq!(r.placeholders.made.count, sessions.len() as u64);
    crate::assert_signal!(
        done,
        LossSignal::PlaceholdersMade { parent, child, placeholders, children }
            if parent == "sessions" && child == "messages"
                && *placeholders == sessions.len() as u64
                && *children == messages.len() as u64
    );
    Ok(())
}

/// Withheld (exit 4 from the binary: `recover::loss_without_allow_partial_withholds_the_output_and_exits_4`).
#[test]
fn lost_sessions_without_allow_partial_commit_nothing() -> TestResult {
    let c = sessions_lost("sessions-lost-withheld");
    let done = crate::recover_in_process(&c.options(), Outcome::Withheld)?;
    assert!(!c.dest.exists());
    assert_eq!(done.report.placeholders.made.count, 12);
    Ok(())
}

/// `salvage report` renders the run for a person: the verdict is LOSS, never clean; each
/// table's line carries its placeholders and loss bounds; the exit code restates the loss.
#[test]
fn the_rendered_report_says_loss_and_names_the_placeholders() -> TestResult {
    let c = sessions_lost("sessions-lost-rendered");
    let out = c.recover(&["--allow-partial"])?;
    assert_eq!(out.status.code(), Some(3));
    let report = c.dir.path("out.db.report.json");
    let text = crate::salvage().arg("report").arg(&report).output()?;
    assert_eq!(
        text.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&text.stderr)
    );
    let text = String::from_utf8(text.stdout)?;
    assert!(text.contains("verdict: LOSS"), "{text}");
    assert!(!text.contains("COMPLETE"), "{text}");
    let sessions = text
        .lines()
        .find(|l| l.trim_start().starts_with("sessions "))
        .expect(&text);
    let cells: Vec<&str> = sessions.split_whitespace().collect();
    // table, rows, from file, orphans, damaged, rebuilt (placeholders), status; the rows
    // the output holds are those read and those rebuilt.
    assert_eq!(cells[5], "12", "{sessions}");
    assert_eq!(
        cells[1].replace(',', "").parse::<u64>()?,
        cells[2].replace(',', "").parse::<u64>()? + 12,
        "{sessions}"
    );
    assert!(text.contains("rows lost: `sessions` at least"), "{text}");
    assert!(text.contains("salvage_placeholders"), "{text}");

    let md = crate::salvage()
        .args(["report", "--format", "markdown"])
        .arg(&report)
        .output()?;
    let md = String::from_utf8(md.stdout)?;
    assert!(md.starts_with("# Salvage of"), "{md}");
    assert!(md.contains("| `sessions` | "), "{md}");

    // Flags alone never make a clean verdict: a complete run whose source changed is not
    // clean, and a name from the file cannot forge a line of the verdict.
    let mut forged = c.report();
    forged["flags"]["complete"] = true.into();
    forged["flags"]["loss_detected"] = false.into();
    forged["source"]["unchanged"] = false.into();
    forged["tables"][0]["name"] = "x\nverdict: COMPLETE".into();
    let forged_path = c.dir.path("forged.json");
    std::fs::write(&forged_path, forged.to_string())?;
    let out = crate::salvage().arg("report").arg(&forged_path).output()?;
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8(out.stdout)?;
    assert!(text.contains("verdict: SOURCE CHANGED"), "{text}");
    assert!(
        !text.lines().any(|l| l.starts_with("verdict: COMPLETE")),
        "{text}"
    );

    // A file that is not a loss report is refused, not rendered as an empty success.
    let not_a_report = c.dir.path("other.json");
    std::fs::write(&not_a_report, "{}")?;
    let refused = crate::salvage().arg("report").arg(&not_a_report).output()?;
    assert_eq!(refused.status.code(), Some(2));
    assert!(refused.stdout.is_empty());
    // Nor is the inspection of the source: it is named for what it is.
    let inspection = c.dir.path("inspect.json");
    let inspect = crate::salvage()
        .args(["inspect", "--json"])
        .arg(&c.src)
        .output()?;
    std::fs::write(&inspection, &inspect.stdout)?;
    let refused = crate::salvage().arg("report").arg(&inspection).output()?;
    assert_eq!(refused.status.code(), Some(2));
    assert!(refused.stdout.is_empty());
    assert!(String::from_utf8(refused.stderr)?.contains("salvage inspect"));
    Ok(())
}

#[test]
fn without_a_profile_a_placeholder_that_needs_invented_values_is_reported_not_made() -> TestResult {
    let c = sessions_lost("sessions-lost-no-profile");
    let options = RecoverOptions {
        profile: ProfileChoice::None,
        ..c.allow_partial()
    };
    let done = crate::recover_in_process(&options, Outcome::PartialCommitted)?;
    // The declared foreign key finds the lost parents, but `started_at` is NOT NULL and
    // only the profile says the earliest message proves it.
    assert_eq!(done.report.placeholders.made.count, 0);
    assert_eq!(done.report.placeholders.blocked.count, 12);
    assert_same_rows(
        &crate::recover::rows_of(&c.dest, "messages", false),
        &expected_rows(&c.fixture, "messages"),
        "messages",
    );
    crate::assert_signal!(done, LossSignal::ParentsNotRebuilt { .. });
    Ok(())
}

#[test]
fn chroma_store_keeps_every_metadata_row_of_lost_embeddings_under_placeholders() -> TestResult {
    let c = case("chroma-embeddings-lost", "vector-4096-utf8", |f| {
        let leaves = fixtures::table_pages(&f.bytes, f.roots["embeddings"]).leaves;
        vec![Damage::ZeroPage(leaves[2]), Damage::ZeroPage(leaves[3])]
    });
    crate::recover_in_process(&c.allow_partial(), Outcome::PartialCommitted)?;
    assert_same_rows(
        &crate::recover::rows_of(&c.dest, "embedding_metadata", false),
        &expected_rows(&c.fixture, "embedding_metadata"),
        "embedding_metadata",
    );
    let conn = Connection::open_with_flags(&c.dest, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    // Every metadata row has a parent again: real or a registered placeholder.
    let dangling: i64 = conn.query_row(
        "SELECT count(*) FROM embedding_metadata m WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.id = m.id)",
        [],
        |r| r.get(0),
    )?;
    assert_eq!(dangling, 0);
    let placeholders: i64 = conn.query_row(
        "SELECT count(*) FROM salvage_placeholders WHERE tbl = 'embeddings'",
        [],
        |r| r.get(0),
    )?;
    let lost = expected_rows(&c.fixture, "embeddings").len() as i64
        - crate::recover::rows_of(&c.dest, "embeddings", false).len() as i64
        + placeholders;
    assert!(
        placeholders > 0 && lost == placeholders,
        "{placeholders} placeholders for {lost} lost embeddings"
    );
    // The placeholders' user-facing ids and segments are what the surviving unique index
    // proves (once labels), and only the columns nothing proves are listed as filled:
    // `seq_id`, and `created_at` (NOT NULL, and its CURRENT_TIMESTAMP default never
    // fills a row of the past; the fixture's neighbours never agree on a second).
    let want = expected_rows(&c.fixture, "embeddings");
    let made: Vec<(i64, String, String, String)> = conn
        .prepare(
            "SELECT e.id, e.segment_id, e.embedding_id, p.filled_columns FROM embeddings e
             JOIN salvage_placeholders p ON p.tbl = 'embeddings' AND p.rowid = e.id",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<rusqlite::Result<_>>()?;
    assert_eq!(made.len() as i64, placeholders);
    for (id, segment, embedding, filled) in made {
        assert_eq!(
            (Value::Text(segment), Value::Text(embedding)),
            (want[&id][1].clone(), want[&id][2].clone()),
            "embedding {id}"
        );
        assert_eq!(filled, "created_at,seq_id", "embedding {id}");
    }
    Ok(())
}

/// Chroma's sysdb tables lost with their unique indexes (nothing proves their rows): the
/// embeddings and `segment_metadata` rows keep placeholder segments, `collection_metadata`
/// placeholder collections. Every NOT NULL column of the real schema (`segments.collection`,
/// `collections.database_id`) holds the profile's marker, so no placeholder is blocked, and
/// a marker never makes a placeholder of its own.
#[test]
fn chroma_sysdb_tables_lost_are_rebuilt_with_markers_in_every_not_null_column() -> TestResult {
    let c = case("chroma-sysdb-lost", "vector-4096-utf8", |f| {
        [
            "segments",
            "sqlite_autoindex_segments_1",
            "collections",
            "sqlite_autoindex_collections_1",
            "sqlite_autoindex_collections_2",
        ]
        .iter()
        .flat_map(|t| fixtures::table_pages(&f.bytes, f.roots[*t]).all())
        .map(Damage::ZeroPage)
        .collect()
    });
    let done = crate::recover_in_process(&c.allow_partial(), Outcome::PartialCommitted)?;
    let placeholders = &done.report.placeholders;
    assert_eq!(placeholders.blocked.count, 0, "{placeholders:?}");
    let conn = Connection::open_with_flags(&c.dest, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let rows = |sql: &str| -> rusqlite::Result<Vec<(String, String)>> {
        conn.prepare(sql)?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect()
    };
    // Six segments (three with embeddings, three with segment metadata), three
    // collections (their metadata), each registered with the columns a rule filled.
    let segments = rows(
        "SELECT s.collection, p.filled_columns FROM segments s
         JOIN salvage_placeholders p ON p.tbl = 'segments' AND p.rowid = s.rowid",
    )?;
    assert_eq!(segments.len(), 6);
    for (collection, filled) in segments {
        assert_eq!(collection, "salvage-unknown-collection");
        assert_eq!(filled, "collection,scope,type");
    }
    let collections = rows(
        "SELECT c.database_id, p.filled_columns FROM collections c
         JOIN salvage_placeholders p ON p.tbl = 'collections' AND p.rowid = c.rowid",
    )?;
    assert_eq!(collections.len(), 3);
    for (database, filled) in collections {
        assert_eq!(database, "salvage-unknown-database");
        assert_eq!(filled, "database_id,name");
    }
    let made: i64 = conn.query_row("SELECT count(*) FROM salvage_placeholders", [], |r| {
        r.get(0)
    })?;
    assert_eq!(made, 9, "markers make no placeholders of their own");
    Ok(())
}

/// A table the detected profile expects is never left out of the report: absent from an
/// intact schema it is `missing` with a warning; absent because the schema is damaged it
/// is `missing` and the run reports loss.
#[test]
fn a_table_the_profile_expects_is_reported_missing_never_left_out() -> TestResult {
    let status = |done: &recovery::Recovery, name: &str| done.table(name).map(|t| t.status);
    // Intact schema: the store was made without `state_meta`.
    let dir = crate::Scratch::new("missing-intact");
    let src = dir.path("state.db");
    Connection::open(&src)?.execute_batch(
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, title TEXT,
             started_at INTEGER NOT NULL, model TEXT, message_count INTEGER);
         CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL REFERENCES sessions(id),
             role TEXT NOT NULL, content TEXT, timestamp INTEGER NOT NULL);
         INSERT INTO sessions VALUES ('s1', 'cli', 't', 1, NULL, 1);
         INSERT INTO messages VALUES (1, 's1', 'user', 'hi', 1);",
    )?;
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Complete)?;
    assert_eq!(status(&done, "state_meta"), Some(TableStatus::Missing));
    let warnings = &done.report.warnings;
    assert!(
        warnings.iter().any(|w| w.contains("`state_meta`")),
        "{warnings:?}"
    );

    // Damaged schema: the cell holding `state_meta`'s schema row is overwritten with zeros
    // and its pointer sent past its page, and its rows are lost.
    let c = case("missing-damaged", "agent-4096-utf8", |_| vec![]);
    let mut bytes = std::fs::read(&c.src)?;
    let cells = usize::from(u16::from_be_bytes([bytes[103], bytes[104]]));
    let at = (0..cells)
        .map(|i| 108 + 2 * i)
        .find(|&p| {
            let cell = usize::from(u16::from_be_bytes([bytes[p], bytes[p + 1]]));
            bytes[cell..(cell + 64).min(4096)]
                .windows(10)
                .any(|w| w == b"state_meta")
        })
        .expect("state_meta's schema cell");
    let cell = usize::from(u16::from_be_bytes([bytes[at], bytes[at + 1]]));
    let (payload, n) = fixtures::format::read_varint(&bytes, cell).ok_or("a payload size")?;
    let rowid = fixtures::format::read_varint(&bytes, cell + n)
        .ok_or("a rowid")?
        .1;
    bytes[cell..cell + n + rowid + payload as usize].fill(0);
    bytes[at..at + 2].copy_from_slice(&0xfff0u16.to_be_bytes());
    // Its one page too: with its rows there, the profile's known CREATE statement would
    // name it again (see `a_profile_that_knows_the_schema_names_the_lost_tables`).
    let root = c.fixture.roots["state_meta"] as usize;
    bytes[(root - 1) * 4096..root * 4096].fill(0);
    std::fs::write(&c.src, &bytes)?;
    let done = crate::recover_in_process(&c.allow_partial(), Outcome::PartialCommitted)?;
    assert_eq!(
        status(&done, "state_meta"),
        Some(TableStatus::Missing),
        "{:?}",
        done.report.tables
    );
    crate::assert_signal!(
        done,
        LossSignal::TableMissing { table, profile } if table == "state_meta" && profile == "agent"
    );
    Ok(())
}

/// Clock defaults never fill a rebuilt row (they once wrote the time of the salvage run,
/// unregistered). `threads.created_at` is NOT NULL DEFAULT CURRENT_TIMESTAMP and its page
/// is lost: nothing proves `created_at`, so no placeholder is made and the report says
/// why. The rows of `notes` its surviving index proves hold NULL in `stamped` (DEFAULT
/// CURRENT_TIMESTAMP), not today's date.
#[test]
fn a_clock_default_never_fills_a_rebuilt_row() -> TestResult {
    let dir = crate::Scratch::new("clock-default");
    let src = dir.path("src.db");
    let conn = Connection::open(&src)?;
    conn.execute_batch(
        "CREATE TABLE threads(id TEXT PRIMARY KEY, title TEXT,
             created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
             seen TEXT DEFAULT (datetime('now')), kind TEXT DEFAULT 'chat');
         CREATE TABLE notes(id INTEGER PRIMARY KEY, tag TEXT,
             stamped TEXT DEFAULT CURRENT_TIMESTAMP, body TEXT);
         CREATE INDEX notes_tag ON notes(tag);
         CREATE TABLE posts(id INTEGER PRIMARY KEY, thread_id TEXT REFERENCES threads(id), body TEXT);
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 5)
         INSERT INTO threads(id, title, created_at, seen) SELECT 't' || x, 'thread ' || x, '2020-01-0' || x, '2020-02-01' FROM i;
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 40)
         INSERT INTO posts SELECT x, 't' || (1 + x % 5), 'post ' || x FROM i;
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 8)
         INSERT INTO notes(id, tag, stamped, body) SELECT x, 'tag' || x, '2019-05-05', 'note' FROM i;",
    )?;
    let root = |name: &str| -> rusqlite::Result<i64> {
        conn.query_row(
            "SELECT rootpage FROM sqlite_schema WHERE name = ?1",
            [name],
            |r| r.get(0),
        )
    };
    let (threads, notes) = (root("threads")? as usize, root("notes")? as usize);
    drop(conn);
    let mut bytes = std::fs::read(&src)?;
    for page in [threads, notes] {
        bytes[(page - 1) * 4096..page * 4096].fill(0);
    }
    std::fs::write(&src, &bytes)?;
    let dest = dir.path("out.db");
    let options = RecoverOptions {
        profile: ProfileChoice::None,
        ..crate::allow_partial(&src, &dest)
    };
    let done = crate::recover_in_process(&options, Outcome::PartialCommitted)?;
    let placeholders = &done.report.placeholders;
    let out = Connection::open(&dest)?;
    // NOT NULL with only a clock default: nothing proves `created_at`, so no placeholder.
    let made: i64 = out.query_row("SELECT count(*) FROM threads", [], |r| r.get(0))?;
    assert_eq!(made, 0, "{placeholders:?}");
    assert!(
        placeholders
            .blocked
            .listed
            .iter()
            .any(|b| b.reason.contains("created_at")),
        "{placeholders:?}"
    );
    // The index proves each note's tag: rebuilt rows, `stamped` unknown.
    let stamped: Vec<(String, Option<String>)> = out
        .prepare("SELECT tag, stamped FROM notes ORDER BY id")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    assert_eq!(stamped.len(), 8);
    assert!(stamped.iter().all(|(_, s)| s.is_none()), "{stamped:?}");
    Ok(())
}

/// The same parent table with `created_at` nullable: the placeholders are made, with
/// NULL where the clock would have written, and the constant default `kind = 'chat'`
/// registered as filled.
#[test]
fn a_placeholder_takes_a_constant_default_and_registers_it() -> TestResult {
    let dir = crate::Scratch::new("clock-default-nullable");
    let src = dir.path("src.db");
    let conn = Connection::open(&src)?;
    conn.execute_batch(
        "CREATE TABLE threads(id INTEGER PRIMARY KEY, title TEXT,
             created_at TEXT DEFAULT CURRENT_TIMESTAMP, kind TEXT DEFAULT 'chat');
         CREATE TABLE posts(id INTEGER PRIMARY KEY, thread_id INTEGER REFERENCES threads(id), body TEXT);
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 5)
         INSERT INTO threads(id, title, created_at) SELECT x, 'thread ' || x, '2020-01-0' || x FROM i;
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 40)
         INSERT INTO posts SELECT x, 1 + x % 5, 'post ' || x FROM i;",
    )?;
    let threads: i64 = conn.query_row(
        "SELECT rootpage FROM sqlite_schema WHERE name = 'threads'",
        [],
        |r| r.get(0),
    )?;
    drop(conn);
    let mut bytes = std::fs::read(&src)?;
    let threads = threads as usize;
    bytes[(threads - 1) * 4096..threads * 4096].fill(0);
    std::fs::write(&src, &bytes)?;
    let dest = dir.path("out.db");
    let options = RecoverOptions {
        profile: ProfileChoice::None,
        ..crate::allow_partial(&src, &dest)
    };
    crate::recover_in_process(&options, Outcome::PartialCommitted)?;
    let out = Connection::open(&dest)?;
    let rows: Vec<(i64, Option<String>, String)> = out
        .prepare("SELECT id, created_at, kind FROM threads ORDER BY id")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    assert_eq!(rows.len(), 5);
    assert!(
        rows.iter().all(|(_, c, k)| c.is_none() && k == "chat"),
        "{rows:?}"
    );
    let filled: String = out.query_row(
        "SELECT filled_columns FROM salvage_placeholders LIMIT 1",
        [],
        |r| r.get(0),
    )?;
    assert!(filled.split(',').any(|c| c == "kind"), "{filled}");
    Ok(())
}

/// `sessions` and the index of its key both lost: nothing but the placeholders its
/// messages prove says how many sessions there were. Each stands for a lost row, so the
/// table lost at least as many (once "at least 0").
#[test]
fn placeholders_count_towards_the_lower_bound() -> TestResult {
    let c = case("placeholders-bound", "agent-4096-utf8", |f| {
        vec![
            Damage::ZeroPage(f.roots["sessions"]),
            Damage::ZeroPage(f.roots["sqlite_autoindex_sessions_1"]),
        ]
    });
    let done = crate::recover_in_process(&c.allow_partial(), Outcome::PartialCommitted)?;
    let sessions = crate::table(&done, "sessions");
    let made = sessions.placeholders;
    assert_eq!(made, expected_rows(&c.fixture, "sessions").len() as u64);
    assert_eq!(
        sessions.lost_rows.as_ref().map(|l| l.lower_bound),
        Some(made),
        "{sessions:?}"
    );
    Ok(())
}

/// `salvage report` renders only a loss report: the `inspect --json` document is refused
/// (it once printed "NOT VERIFIED … source unchanged: NO", an accusation of altered
/// evidence). A withheld run's report names where its output is kept (once the literal
/// `DEST.incomplete`), and a table not one of whose rows could be read is `lost`, never
/// `recovered`.
#[test]
fn the_report_renders_loss_reports_only_and_says_where_the_output_is() -> TestResult {
    let c = sessions_lost("report-withheld");
    assert_eq!(c.recover(&[])?.status.code(), Some(4));
    let inspect = crate::salvage()
        .arg("inspect")
        .arg("--json")
        .arg(&c.src)
        .output()?;
    let inspect_json = c.dir.path("inspect.json");
    std::fs::write(&inspect_json, &inspect.stdout)?;
    let refused = crate::salvage().arg("report").arg(&inspect_json).output()?;
    assert_eq!(refused.status.code(), Some(2));
    assert!(refused.stdout.is_empty());

    let report = c.dir.path("out.db.report.json");
    let out = crate::salvage().arg("report").arg(&report).output()?;
    let text = String::from_utf8(out.stdout)?;
    let kept = format!("{}.incomplete", c.dest.display());
    assert!(text.contains(&format!("kept as `{kept}`")), "{text}");
    assert!(!text.contains("DEST.incomplete"), "{text}");
    let sessions = text
        .lines()
        .find(|l| l.trim_start().starts_with("sessions "))
        .ok_or("a sessions line")?;
    assert_eq!(
        sessions.split_whitespace().last(),
        Some("lost"),
        "{sessions}"
    );
    Ok(())
}

/// Every table of `src` as SQLite reads it holds in `dest` the same rows (rowid and
/// values), and `dest` holds no other table.
fn assert_reads_as_sqlite(src: &std::path::Path, dest: &std::path::Path) -> TestResult {
    use rusqlite::types::Value as Sql;
    let open = |p: &std::path::Path| {
        Connection::open_with_flags(p, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    };
    let (a, b) = (open(src)?, open(dest)?);
    let names = |c: &Connection| -> rusqlite::Result<Vec<String>> {
        c.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")?
            .query_map([], |r| r.get(0))?
            .collect()
    };
    let tables = names(&a)?;
    assert_eq!(names(&b)?, tables, "{}: tables", dest.display());
    let rows = |c: &Connection, t: &str| -> rusqlite::Result<Vec<Vec<Sql>>> {
        let q = format!("\"{}\"", t.replace('"', "\"\""));
        // The rowid where the table has one, then every column, in a stable order.
        let mut stmt = c
            .prepare(&format!("SELECT rowid, * FROM {q}"))
            .or_else(|_| c.prepare(&format!("SELECT * FROM {q}")))?;
        let n = stmt.column_count();
        let mut all: Vec<Vec<Sql>> = stmt
            .query_map([], |r| (0..n).map(|i| r.get::<_, Sql>(i)).collect())?
            .collect::<rusqlite::Result<_>>()?;
        all.sort_by_key(|row| format!("{row:?}"));
        Ok(all)
    };
    for t in &tables {
        assert!(
            rows(&a, t)? == rows(&b, t)?,
            "{}: rows of `{t}`",
            dest.display()
        );
    }
    Ok(())
}

/// Per (child, parent): the child rows, and their distinct keys.
type Checked = BTreeMap<(String, String), (u64, std::collections::BTreeSet<String>)>;

/// The references `PRAGMA foreign_key_check` finds in `db`, per (child, parent): the
/// child rows and their distinct keys, each key as the report writes it (`a`, `(a, b)`).
fn foreign_key_check(db: &std::path::Path) -> rusqlite::Result<Checked> {
    use rusqlite::types::Value as Sql;
    let conn = Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let violations: Vec<(String, i64, String, i64)> = conn
        .prepare("PRAGMA foreign_key_check")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut out = Checked::new();
    for (child, rowid, parent, fk) in violations {
        let columns: Vec<String> = conn
            .prepare(&format!("PRAGMA foreign_key_list(\"{child}\")"))?
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(3)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?
            .into_iter()
            .filter(|(id, _)| *id == fk)
            .map(|(_, c)| format!("\"{c}\""))
            .collect();
        let key: Vec<Sql> = conn.query_row(
            &format!(
                "SELECT {} FROM \"{child}\" WHERE rowid = ?1",
                columns.join(", ")
            ),
            [rowid],
            |r| (0..columns.len()).map(|i| r.get::<_, Sql>(i)).collect(),
        )?;
        let one = |v: &Sql| match v {
            Sql::Integer(i) => i.to_string(),
            Sql::Text(t) => t.clone(),
            other => format!("{other:?}"),
        };
        let key = match key.as_slice() {
            [k] => one(k),
            _ => format!("({})", key.iter().map(one).collect::<Vec<_>>().join(", ")),
        };
        let e = out.entry((child, parent)).or_default();
        e.0 += 1;
        e.1.insert(key);
    }
    Ok(out)
}

/// Healthy databases whose child rows reference deleted parents (SQLite keeps them: foreign
/// keys are off by default): once a made-up parent row was written for each, a loss
/// reported, the output withheld (exit 4). Now each is complete, its rows what SQLite
/// reads, no placeholder, and the report's dangling references are exactly those
/// `PRAGMA foreign_key_check` lists in the source, each said in a warning.
#[test]
fn healthy_databases_with_dangling_references_recover_complete_as_sqlite_reads_them() -> TestResult
{
    let dir = crate::Scratch::new("dangling-healthy");
    let mut sources = Vec::new();
    // Integer keys, the parent spread over many pages; text keys; a composite key, one
    // child with a NULL in it (SQLite checks no such key, nor does the run).
    let built = dir.path("shop.db");
    Connection::open(&built)?.execute_batch(
        // SQLite's default; the bundled build turns foreign keys on.
        "PRAGMA foreign_keys = OFF;
         PRAGMA page_size = 4096;
         CREATE TABLE authors(id INTEGER PRIMARY KEY, name TEXT);
         CREATE TABLE books(id INTEGER PRIMARY KEY, author_id INTEGER REFERENCES authors(id), title TEXT);
         CREATE TABLE tags(name TEXT PRIMARY KEY, colour TEXT);
         CREATE TABLE labels(id INTEGER PRIMARY KEY, tag TEXT REFERENCES tags(name));
         CREATE TABLE shelves(room TEXT, num INTEGER, PRIMARY KEY(room, num)) WITHOUT ROWID;
         CREATE TABLE placed(id INTEGER PRIMARY KEY, room TEXT, num INTEGER, book INTEGER,
             FOREIGN KEY(room, num) REFERENCES shelves(room, num));
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 2000)
         INSERT INTO authors SELECT x, 'author ' || x || ' ' || hex(randomblob(20)) FROM i;
         INSERT INTO books(author_id, title) SELECT id, 'book of ' || id FROM authors;
         INSERT INTO books(author_id, title) VALUES (7, 'again'), (99999, 'never an author'), (NULL, 'anonymous');
         DELETE FROM authors WHERE id IN (7, 1200, 1201, 1999);
         INSERT INTO tags VALUES ('red', 'f00'), ('green', '0f0'), ('blue', '00f');
         INSERT INTO labels(tag) VALUES ('red'), ('green'), ('mauve'), ('mauve'), ('teal');
         DELETE FROM tags WHERE name = 'green';
         INSERT INTO shelves VALUES ('hall', 1), ('hall', 2), ('study', 1);
         INSERT INTO placed(room, num, book) VALUES ('hall', 1, 1), ('hall', 3, 2), ('attic', 1, 3),
             ('attic', 1, 4), ('attic', NULL, 5), ('study', 1, 6);",
    )?;
    sources.push(built);
    // A profile relationship: the agent store's messages of sessions deleted since.
    let agent = fixtures::build_named("agent-4096-utf8").ok_or("agent-4096-utf8")?;
    let state = dir.path("state.db");
    std::fs::write(&state, &agent.bytes)?;
    Connection::open(&state)?.execute_batch(
        "PRAGMA foreign_keys = OFF;
         DELETE FROM sessions WHERE id IN (SELECT id FROM sessions ORDER BY id LIMIT 2)",
    )?;
    sources.push(state);

    for src in &sources {
        let checked = foreign_key_check(src)?;
        assert!(
            !checked.is_empty(),
            "{}: no dangling reference",
            src.display()
        );
        let dest = src.with_extension("out.db");
        let done = crate::recover_in_process(&RecoverOptions::new(src, &dest), Outcome::Complete)?;
        let r = &done.report;
        assert!(!r.flags.loss_detected && r.evidence.signals.is_empty());
        assert_eq!(r.placeholders.made.count, 0);
        assert_eq!(r.placeholders.blocked.count, 0);
        assert_eq!(r.placeholders.registry, None);
        assert_reads_as_sqlite(src, &dest)?;
        // The same references, the same rows and keys, as SQLite finds them.
        let dangling = &r.placeholders.dangling;
        let reported: BTreeMap<(String, String), (u64, u64)> = dangling
            .listed
            .iter()
            .map(|d| ((d.child.clone(), d.parent.clone()), (d.children, d.keys)))
            .collect();
        let sqlite: BTreeMap<(String, String), (u64, u64)> = checked
            .iter()
            .map(|(k, (rows, keys))| (k.clone(), (*rows, keys.len() as u64)))
            .collect();
        assert_eq!(reported, sqlite, "{}", src.display());
        for d in &dangling.listed {
            let keys = &checked[&(d.child.clone(), d.parent.clone())].1;
            assert_eq!(d.samples.len(), keys.len().min(5), "{d:?}");
            assert!(
                d.samples.iter().all(|k| keys.contains(k)),
                "{d:?}: {keys:?}"
            );
            assert_eq!(
                d.proof,
                reconstruct::placeholders::DanglingProof::ParentReadWhole
            );
            assert!(r.warnings.contains(&d.to_string()), "{:?}", r.warnings);
        }
    }
    // The agent store's relationship is its declared key, filled by the profile.
    let agent = sources[1].with_extension("out.db.report.json");
    let report: recovery::report::LossReport = serde_json::from_slice(&std::fs::read(agent)?)?;
    assert_eq!(
        report.placeholders.dangling.listed[0].relationship,
        "foreign key, filled by profile agent"
    );
    Ok(())
}

/// A file with a parent table damaged and another intact: `authors` loses one leaf (a
/// rowid range), `publishers` nothing. The children of the authors on the lost leaf get
/// placeholders and the run reports loss; keys outside the lost range and keys of the
/// intact `publishers` are dangling references of the source, told apart. A key inside
/// the lost range whose author was deleted before the damage cannot be told apart: it
/// gets a placeholder too.
#[test]
fn a_damaged_parent_gets_placeholders_and_dangling_references_beside_it_are_told_apart(
) -> TestResult {
    let dir = crate::Scratch::new("dangling-beside-lost");
    let src = dir.path("shop.db");
    let conn = Connection::open(&src)?;
    conn.execute_batch(
        "PRAGMA foreign_keys = OFF;
         PRAGMA page_size = 4096;
         CREATE TABLE publishers(id INTEGER PRIMARY KEY, name TEXT);
         CREATE TABLE authors(id INTEGER PRIMARY KEY, name TEXT);
         CREATE TABLE books(id INTEGER PRIMARY KEY, author_id INTEGER REFERENCES authors(id),
             publisher_id INTEGER REFERENCES publishers(id), title TEXT);
         INSERT INTO publishers VALUES (1, 'one'), (2, 'two');
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 3000)
         INSERT INTO authors SELECT x, 'author ' || x || ' ' || hex(randomblob(40)) FROM i;
         INSERT INTO books(author_id, publisher_id, title)
             SELECT id, 1 + id % 2, 'book of ' || id FROM authors WHERE id % 10 = 0;
         INSERT INTO books(author_id, publisher_id, title) VALUES
             (2991, 1, 'a'), (2993, 1, 'b'), (2993, 2, 'c'), (99999, 2, 'd'), (1505, 42, 'e');
         DELETE FROM authors WHERE id IN (2991, 2993, 1505);",
    )?;
    drop(conn);
    let mut bytes = std::fs::read(&src)?;
    let root = Connection::open(&src)?.query_row(
        "SELECT rootpage FROM sqlite_schema WHERE name = 'authors'",
        [],
        |r| r.get::<_, u32>(0),
    )?;
    // The leaf that held author 1505, and the range of rowids its pointer covers.
    let leaves = fixtures::table_pages(&bytes, root).leaves;
    let last = |page: u32| crate::recover::rowids_on(&bytes, page).into_iter().max();
    let at = leaves
        .iter()
        .position(|&p| last(p).is_some_and(|m| m >= 1505))
        .ok_or("the leaf of 1505")?;
    assert!(at > 0 && at + 1 < leaves.len(), "a leaf in the middle");
    let (lo, hi) = (
        last(leaves[at - 1]).unwrap_or(0),
        last(leaves[at]).unwrap_or(0),
    );
    let placeheld: std::collections::BTreeSet<String> = Connection::open(&src)?
        .prepare("SELECT DISTINCT author_id FROM books WHERE author_id > ?1 AND author_id <= ?2")?
        .query_map([lo, hi], |r| r.get::<_, i64>(0))?
        .map(|k| k.map(|k| k.to_string()))
        .collect::<rusqlite::Result<_>>()?;
    assert!(placeheld.contains("1505") && placeheld.len() > 1);
    fixtures::apply(&mut bytes, &Damage::ZeroPage(leaves[at]))?;
    std::fs::write(&src, &bytes)?;

    let dest = dir.path("out.db");
    let done = crate::recover_in_process(
        &crate::allow_partial(&src, &dest),
        Outcome::PartialCommitted,
    )?;
    let r = &done.report;
    let made: std::collections::BTreeSet<String> = r
        .placeholders
        .made
        .listed
        .iter()
        .map(|m| {
            assert_eq!(
                (m.table.as_str(), m.child_table.as_str()),
                ("authors", "books")
            );
            m.key.clone()
        })
        .collect();
    assert_eq!(made, placeheld);
    assert!(done.signals().iter().any(|s| matches!(
        s,
        LossSignal::PlaceholdersMade { parent, child, placeholders, .. }
            if parent == "authors" && child == "books" && *placeholders == placeheld.len() as u64
    )));
    // Only `authors` lost anything.
    assert!(
        !done
            .signals()
            .iter()
            .any(|s| format!("{s:?}").contains("publishers")),
        "{:?}",
        done.signals()
    );
    let dangling: BTreeMap<&str, &reconstruct::placeholders::Dangling> = r
        .placeholders
        .dangling
        .listed
        .iter()
        .map(|d| (d.parent.as_str(), d))
        .collect();
    use reconstruct::placeholders::DanglingProof;
    let authors = dangling.get("authors").ok_or("authors' dangling keys")?;
    assert_eq!(
        (authors.keys, authors.children, authors.proof),
        (3, 4, DanglingProof::OutsideLostRowids)
    );
    assert_eq!(authors.samples, ["2991", "2993", "99999"]);
    let publishers = dangling
        .get("publishers")
        .ok_or("publishers' dangling key")?;
    assert_eq!(
        (publishers.keys, publishers.children, publishers.proof),
        (1, 1, DanglingProof::ParentReadWhole)
    );
    assert_eq!(publishers.samples, ["42"]);
    // Every book is kept, as read.
    assert_same_rows(
        &crate::recover::rows_of(&dest, "books", false),
        &crate::recover::rows_of(&dir.path("shop.db"), "books", false),
        "books",
    );
    Ok(())
}

/// `placeholders = false`: not one placeholder row is written, every child is kept, and
/// the lost parents are still loss, with the reason that placeholders were not asked for.
#[test]
fn without_placeholders_none_is_written_and_the_loss_is_still_reported() -> TestResult {
    let c = sessions_lost("sessions-lost-no-placeholders");
    let options = RecoverOptions {
        placeholders: false,
        ..c.allow_partial()
    };
    let done = crate::recover_in_process(&options, Outcome::PartialCommitted)?;
    assert!(done.verdict().loss_detected);
    let conn = Connection::open_with_flags(&c.dest, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let count = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0));
    assert_eq!(count("SELECT count(*) FROM sessions")?, 0);
    assert_eq!(
        count("SELECT count(*) FROM sqlite_schema WHERE name LIKE 'salvage_placeholders%'")?,
        0
    );
    assert_same_rows(
        &crate::recover::rows_of(&c.dest, "messages", false),
        &expected_rows(&c.fixture, "messages"),
        "messages",
    );
    let p = &done.report.placeholders;
    assert_eq!((p.made.count, p.blocked.count), (0, 12));
    assert_eq!(p.registry, None);
    let not_asked = reconstruct::placeholders::Unbuilt::NotAsked.to_string();
    assert!(
        done.signals().iter().any(|s| matches!(
            s,
            LossSignal::ParentsNotRebuilt { parent, child, keys: 12, reason, .. }
                if parent == "sessions" && child == "messages" && *reason == not_asked
        )),
        "{:?}",
        done.signals()
    );
    assert_eq!(done.table("sessions").map(|t| t.placeholders), Some(0));
    Ok(())
}

/// `recover --no-placeholders` asks for none: exit 3 with `--allow-partial`, the loss
/// reported, every lost parent listed as not rebuilt.
#[test]
fn the_cli_asks_for_no_placeholders() -> TestResult {
    let c = sessions_lost("sessions-lost-no-placeholders-cli");
    c.recover_expecting(&["--allow-partial", "--no-placeholders"], 3)?;
    let r = c.typed_report();
    assert_eq!(r.placeholders.made.count, 0);
    assert_eq!(r.placeholders.blocked.count, 12);
    crate::assert_signal!(r, LossSignal::ParentsNotRebuilt { parent, .. } if parent == "sessions");
    Ok(())
}

/// A healthy file's dangling references are a note of the summary and a section of
/// `salvage report` in text, Markdown and HTML, and its verdict is COMPLETE (exit 0).
#[test]
fn dangling_references_are_rendered_beside_the_tables_not_as_loss() -> TestResult {
    let dir = crate::Scratch::new("dangling-cli");
    let src = dir.path("w.db");
    Connection::open(&src)?.execute_batch(
        "PRAGMA foreign_keys = OFF;
         CREATE TABLE authors(id INTEGER PRIMARY KEY, name TEXT);
         CREATE TABLE books(id INTEGER PRIMARY KEY, author_id INTEGER REFERENCES authors(id), title TEXT);
         INSERT INTO authors VALUES (1, 'A'), (2, 'B');
         INSERT INTO books(author_id, title) VALUES (1, 'x'), (2, 'y'), (7, 'z');",
    )?;
    let dest = dir.path("out.db");
    let out = crate::recover_file(&src, &dest, &["-q"])?;
    let stderr = String::from_utf8(out.stderr)?;
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("complete: no loss detected"), "{stderr}");
    assert!(
        stderr.contains("note: 1 row of `books` (author_id) references 1 key"),
        "{stderr}"
    );
    let report = dir.path("out.db.report.json");
    let render = |format: &str| -> Result<String, Box<dyn std::error::Error>> {
        let out = crate::salvage()
            .args(["report", "--format", format])
            .arg(&report)
            .output()?;
        assert_eq!(out.status.code(), Some(0), "{format}");
        Ok(String::from_utf8(out.stdout)?)
    };
    let text = render("text")?;
    assert!(text.contains("verdict: COMPLETE"), "{text}");
    assert!(text.contains("Dangling references (not loss)"), "{text}");
    assert!(
        text.contains("holds (7); `authors` was read whole"),
        "{text}"
    );
    let md = render("markdown")?;
    assert!(md.contains("## Dangling references (not loss)"), "{md}");
    let html = render("html")?;
    let list = html
        .split("<ul id=\"dangling\">")
        .nth(1)
        .and_then(|s| s.split("</ul>").next())
        .ok_or(html.clone())?;
    assert!(
        list.contains("no row of `authors` (id) holds (7)"),
        "{list}"
    );
    // Said once on the page: beside the tables, not again among the warnings.
    assert_eq!(
        html.matches("no row of `authors` (id) holds").count(),
        1,
        "{html}"
    );
    Ok(())
}
