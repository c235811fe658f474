//! `salvage timeline` (issue #35): every stored time of a database as one event in the CSV
//! Timesketch imports. Each epoch's conversion is checked against SQLite's own date
//! functions over values written as the applications write them (`fixtures::catalogue`);
//! the events of carved deleted records and of log versions say where they came from.

use std::collections::BTreeMap;
use std::path::Path;

use rusqlite::Connection;

use crate::{run_salvage, Scratch, TestResult};

/// One line of the timeline, by column name.
pub type Line = BTreeMap<String, String>;

/// Runs `salvage timeline DB -o OUT` and reads the lines back.
pub fn timeline(db: &Path, out: &Path) -> Result<Vec<Line>, String> {
    let run = run_salvage(&[
        "timeline".as_ref(),
        db.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ])
    .map_err(|e| e.to_string())?;
    if !run.status.success() {
        return Err(format!(
            "salvage timeline: {:?}\n{}",
            run.status,
            String::from_utf8_lossy(&run.stderr)
        ));
    }
    let mut reader = csv::Reader::from_path(out).map_err(|e| e.to_string())?;
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| e.to_string())?
        .iter()
        .map(str::to_string)
        .collect();
    reader
        .records()
        .map(|r| {
            let r = r.map_err(|e| e.to_string())?;
            Ok(header
                .iter()
                .cloned()
                .zip(r.iter().map(str::to_string))
                .collect())
        })
        .collect()
}

/// The UTC time, to the second, SQLite's date functions give a raw value in `epoch`: the
/// oracle, independent of the timeline's arithmetic.
fn sqlite_time(conn: &Connection, epoch: &str, value: &str) -> rusqlite::Result<String> {
    let expr = match epoch {
        "unix_s" => "datetime(CAST(?1 AS REAL), 'unixepoch')",
        "unix_ms" => "datetime(CAST(?1 AS INTEGER) / 1000, 'unixepoch')",
        "unix_us" => "datetime(CAST(?1 AS INTEGER) / 1000000, 'unixepoch')",
        "unix_ns" => "datetime(CAST(?1 AS INTEGER) / 1000000000, 'unixepoch')",
        "webkit_us" => "datetime(CAST(?1 AS INTEGER) / 1000000 - 11644473600, 'unixepoch')",
        "filetime" => "datetime(CAST(?1 AS INTEGER) / 10000000 - 11644473600, 'unixepoch')",
        "mac_s" => "datetime(CAST(?1 AS REAL) + 978307200, 'unixepoch')",
        "mac_ns" => "datetime(CAST(?1 AS INTEGER) / 1000000000 + 978307200, 'unixepoch')",
        "julian_days" => "datetime(CAST(?1 AS REAL))",
        _ => "datetime(?1)",
    };
    conn.query_row(&format!("SELECT replace({expr}, ' ', 'T')"), [value], |r| {
        r.get(0)
    })
}

/// Every line's `datetime` is SQLite's reading of its `value` in its `epoch`.
fn assert_times_agree(lines: &[Line]) -> TestResult {
    let conn = Connection::open_in_memory()?;
    for l in lines {
        let want = sqlite_time(&conn, &l["epoch"], &l["value"])?;
        let got = &l["datetime"];
        assert!(
            got.starts_with(&want) && got.ends_with("+00:00"),
            "{} {}: {} -> {got}, SQLite reads {want}",
            l["table"],
            l["column"],
            l["value"]
        );
    }
    Ok(())
}

/// A time column a catalogue entry names: table, column, epoch.
pub type TimeOf = (String, String, String);

/// The database of the catalogue entry `name` (the first version of each of its tables,
/// 40 rows each, times written as the application writes them) in `dir`, with the time
/// columns the entry names: table, column, epoch.
pub fn catalogued_database(
    dir: &Scratch,
    name: &str,
) -> Result<(std::path::PathBuf, Vec<TimeOf>), Box<dyn std::error::Error>> {
    let catalogue = Path::new(env!("CARGO_MANIFEST_DIR")).join("../recovery/profiles/catalogue");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(
        catalogue.join(format!("{name}.json")),
    )?)?;
    // The first version of each table.
    let mut first: BTreeMap<String, String> = BTreeMap::new();
    for sql in json["schema"].as_array().ok_or("schema")? {
        let sql = sql
            .as_str()
            .or_else(|| sql["sql"].as_str())
            .ok_or("statement")?;
        let conn = Connection::open_in_memory()?;
        conn.execute_batch(sql)?;
        let table: String = conn.query_row(
            "SELECT name FROM sqlite_schema WHERE type = 'table'",
            [],
            |r| r.get(0),
        )?;
        first.entry(table).or_insert_with(|| sql.to_string());
    }
    let times: Vec<TimeOf> = json["timestamps"]
        .as_array()
        .ok_or("timestamps")?
        .iter()
        .map(|t| {
            let s = |k: &str| t[k].as_str().unwrap_or_default().to_string();
            (s("table"), s("column"), s("epoch"))
        })
        .collect();
    let src = dir.path(&format!("{name}.db"));
    let statements: Vec<&str> = first.values().map(String::as_str).collect();
    let borrowed: Vec<(&str, &str, &str)> = times
        .iter()
        .map(|(t, c, e)| (t.as_str(), c.as_str(), e.as_str()))
        .collect();
    fixtures::catalogue::schema_database(
        &src,
        &statements,
        &borrowed,
        &[],
        4096,
        fixtures::catalogue::Rows::Each(40),
        7,
    )?;
    Ok((src, times))
}

/// Catalogued applications whose times are in every epoch the catalogue uses: each time
/// column the entry names gives one event per stored time, converted as SQLite converts it,
/// and the events name the application.
#[test]
fn a_catalogued_applications_times_are_events_in_its_epochs() -> TestResult {
    let dir = Scratch::new("timeline-catalogue");
    let mut epochs = std::collections::BTreeSet::new();
    for name in [
        "chromium-history",
        "firefox-places",
        "android-mmssms",
        "android-calendar",
        "zotero-library",
    ] {
        let (src, times) = catalogued_database(&dir, name)?;
        let lines = timeline(&src, &dir.path(&format!("{name}.csv")))?;
        assert_times_agree(&lines)?;
        // One event per stored time that is not NULL or zero, in each column named.
        let conn = Connection::open(&src)?;
        for (table, column, epoch) in &times {
            let exists: bool = conn.query_row(
                "SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2",
                [table, column],
                |r| r.get::<_, i64>(0).map(|n| n > 0),
            )?;
            if !exists {
                continue;
            }
            let stored: i64 = conn.query_row(
                &format!("SELECT count(*) FROM \"{table}\" WHERE \"{column}\" IS NOT NULL AND \"{column}\" <> 0"),
                [],
                |r| r.get(0),
            )?;
            let events = lines
                .iter()
                .filter(|l| l["table"] == *table && l["column"] == *column)
                .count() as i64;
            assert_eq!(events, stored, "{name}: {table}.{column}");
            if stored > 0 {
                epochs.insert(epoch.clone());
            }
        }
        // A table of the entry without a time column it names may still have one by its
        // name and values: inferred, and said so.
        let odd = lines.iter().find(|l| {
            let catalogued = l["time_column"] == format!("catalogue {name}");
            l["source"] != "live row"
                || !(catalogued || l["time_column"].starts_with("inferred: "))
                || (catalogued && l["application"].is_empty())
                || l["plausible"] != "true"
        });
        assert!(odd.is_none(), "{name}: {odd:?}");
    }
    assert_eq!(
        epochs.into_iter().collect::<Vec<_>>(),
        [
            "iso_text",
            "julian_days",
            "unix_ms",
            "unix_s",
            "unix_us",
            "webkit_us"
        ]
    );
    Ok(())
}

/// In a table no catalogue entry describes, a column is a time only where its name says
/// so and every value is a time in one epoch: Apple's seconds and nanoseconds since 2001,
/// Windows' FILETIME and nanoseconds since 1970 are each told apart from the rest; a count
/// and a flag are not times, nor is a column of times in two units. A value of zero is an
/// unset time, not an event; an implausible one (a time in another unit) is flagged.
#[test]
fn a_column_no_entry_names_is_a_time_only_on_strong_evidence() -> TestResult {
    let dir = Scratch::new("timeline-inferred");
    let src = dir.path("notes.db");
    {
        let conn = Connection::open(&src)?;
        conn.execute_batch(
            "CREATE TABLE notes(id INTEGER PRIMARY KEY, title TEXT, created_at INTEGER,
                 saved REAL, modified_ft INTEGER, seen_ns INTEGER, opened_mac_ns INTEGER,
                 view_count INTEGER, sent INTEGER, mixed_time INTEGER);",
        )?;
        for i in 0..50i64 {
            let unix = 1_600_000_000 + i * 86_400 * 7 + i * 37;
            let values = [
                fixtures::catalogue::in_epoch("unix_s", unix, 0),
                fixtures::catalogue::in_epoch("mac_s", unix, 250_000),
                fixtures::catalogue::in_epoch("filetime", unix, 123_456),
                fixtures::catalogue::in_epoch("unix_ns", unix, 654_321),
                fixtures::catalogue::in_epoch("mac_ns", unix, 1),
            ];
            let [Some(a), Some(b), Some(c), Some(d), Some(e)] = values else {
                return Err("in_epoch".into());
            };
            // Seconds in some rows, milliseconds in others: no one epoch.
            let mixed = if i % 2 == 0 { unix } else { unix * 1000 };
            conn.execute(
                "INSERT INTO notes VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                rusqlite::params![
                    i + 1,
                    format!("note {i}"),
                    if i == 3 {
                        rusqlite::types::Value::Integer(0)
                    } else {
                        a
                    },
                    b,
                    c,
                    d,
                    e,
                    i * 3,
                    i % 2,
                    mixed
                ],
            )?;
        }
    }
    let lines = timeline(&src, &dir.path("notes.csv"))?;
    assert_times_agree(&lines)?;
    let mut by_column: BTreeMap<String, (String, usize)> = BTreeMap::new();
    for l in &lines {
        assert!(l["time_column"].starts_with("inferred: "), "{l:?}");
        let e = by_column
            .entry(l["column"].clone())
            .or_insert((l["epoch"].clone(), 0));
        e.1 += 1;
    }
    let got: Vec<(&str, &str, usize)> = by_column
        .iter()
        .map(|(c, (e, n))| (c.as_str(), e.as_str(), *n))
        .collect();
    assert_eq!(
        got,
        [
            ("created_at", "unix_s", 49),
            ("modified_ft", "filetime", 50),
            ("opened_mac_ns", "mac_ns", 50),
            ("saved", "mac_s", 50),
            ("seen_ns", "unix_ns", 50),
        ]
    );
    Ok(())
}

/// Deleted records `recover --carve` kept and row versions `recover --history` read from
/// a write-ahead log are events too, each saying where it came from.
#[test]
fn carved_records_and_log_versions_are_events_with_their_source() -> TestResult {
    let dir = Scratch::new("timeline-sources");
    let story = fixtures::history::wal_story();
    std::fs::write(dir.path("chat.db"), &story.main)?;
    std::fs::write(dir.path("chat.db-wal"), &story.wal)?;
    let out = dir.path("out.db");
    let options = recovery::RecoverOptions {
        history: true,
        carve: true,
        ..recovery::RecoverOptions::new(dir.path("chat.db"), &out)
    };
    recovery::recover(&options, &recovery::Quiet)?;
    let lines = timeline(&out, &dir.path("chat.csv"))?;
    assert_times_agree(&lines)?;
    let sources = |prefix: &str| {
        lines
            .iter()
            .filter(|l| l["source"].starts_with(prefix))
            .count()
    };
    assert!(sources("live row") > 0, "{lines:?}");
    assert!(sources("log version ") > 0, "{lines:?}");
    let logged: i64 = Connection::open(&out)?.query_row(
        "SELECT count(*) FROM salvage_history WHERE tbl = 'messages' AND c4 IS NOT NULL AND c4 <> 0",
        [],
        |r| r.get(0),
    )?;
    let logged_events = lines
        .iter()
        .filter(|l| {
            l["source"].starts_with("log version ")
                && l["table"] == "messages"
                && l["column"] == "sent"
        })
        .count() as i64;
    assert_eq!(logged_events, logged);
    let carved: i64 = Connection::open(&out)?.query_row(
        "SELECT count(*) FROM salvage_carved WHERE tbl = 'messages' AND c4 IS NOT NULL AND c4 <> 0",
        [],
        |r| r.get(0),
    )?;
    let carved_events = lines
        .iter()
        .filter(|l| {
            (l["source"].starts_with("carved deleted record (page ")
                || l["source"].starts_with("carved previous version (page "))
                && l["table"] == "messages"
                && l["column"] == "sent"
        })
        .count() as i64;
    assert!(carved > 0, "the story deletes messages");
    assert_eq!(carved_events, carved);
    Ok(())
}

/// A source may have tables of the names salvage gives its registries (a database
/// salvaged before, or one made to mislead): the run's registries take other names, and
/// its list of them, made after every table of the source, is what the timeline reads.
/// The source's `salvage_carved` is a table of it like any other, its rows live rows; the
/// run's carved records are carved events; a source's forged list names nothing.
#[test]
fn a_source_table_named_as_a_registry_is_never_read_as_the_runs() -> TestResult {
    let dir = Scratch::new("timeline-registry-names");
    let src = dir.path("visits.db");
    {
        let conn = Connection::open(&src)?;
        conn.execute_batch(
            "CREATE TABLE salvage_carved(tbl TEXT, page INTEGER, offset INTEGER, status TEXT,
                 c2 INTEGER, visit_time INTEGER);
             INSERT INTO salvage_carved VALUES ('visits', 2, 100, 'deleted', 1500000000, 1500000000);
             CREATE TABLE salvage_registries(kind TEXT, name TEXT);
             INSERT INTO salvage_registries VALUES ('salvage_carved', 'salvage_carved');
             CREATE TABLE visits(id INTEGER PRIMARY KEY, url TEXT, visit_time INTEGER);
             CREATE TABLE sessions(id INTEGER PRIMARY KEY, agent TEXT, started_at INTEGER);",
        )?;
        for i in 0..300i64 {
            conn.execute(
                "INSERT INTO visits(url, visit_time) VALUES (?1, ?2)",
                rusqlite::params![format!("https://example.org/{i}"), 1_700_000_000 + i * 60],
            )?;
            conn.execute(
                "INSERT INTO sessions(agent, started_at) VALUES (?1, ?2)",
                rusqlite::params![
                    format!("agent {i} {}", "x".repeat(40)),
                    1_700_100_000 + i * 60
                ],
            )?;
        }
        // Every session deleted: its times are in the carved records alone.
        conn.execute_batch("DELETE FROM visits WHERE id % 3 = 0; DELETE FROM sessions;")?;
    }
    let out = dir.path("out.db");
    let options = recovery::RecoverOptions {
        carve: true,
        ..recovery::RecoverOptions::new(&src, &out)
    };
    recovery::recover(&options, &recovery::Quiet)?;
    let conn = Connection::open(&out)?;
    let registries = recovery::export::registries(&conn);
    assert_eq!(registries.list.as_deref(), Some("salvage_registries_1"));
    assert_eq!(registries.get("salvage_carved"), Some("salvage_carved_1"));
    // The source's tables are in the output as they were.
    let kept: i64 = conn.query_row("SELECT count(*) FROM salvage_carved", [], |r| r.get(0))?;
    assert_eq!(kept, 1);
    let carved: i64 = conn.query_row(
        "SELECT count(*) FROM salvage_carved_1 WHERE tbl = 'visits' AND c2 IS NOT NULL",
        [],
        |r| r.get(0),
    )?;
    assert!(carved > 0, "the deleted visits are carved");
    let lines = timeline(&out, &dir.path("visits.csv"))?;
    let carved_events = lines
        .iter()
        .filter(|l| {
            l["source"].starts_with("carved deleted record (page ") && l["table"] == "visits"
        })
        .count() as i64;
    assert_eq!(carved_events, carved, "{lines:?}");
    // The forged record is a live row of the source's table, never a carved visit.
    assert!(lines.iter().all(|l| l["value"] != "1500000000"
        || (l["table"] == "salvage_carved" && l["source"] == "live row")));
    assert!(lines
        .iter()
        .any(|l| l["table"] == "salvage_carved" && l["source"] == "live row"));
    // The times of a table whose rows were all deleted are read from the run's registry.
    let sessions: i64 = conn.query_row(
        "SELECT count(*) FROM salvage_carved_1 WHERE tbl = 'sessions' AND c2 IS NOT NULL",
        [],
        |r| r.get(0),
    )?;
    let session_events = lines
        .iter()
        .filter(|l| l["table"] == "sessions" && l["source"].starts_with("carved deleted record"))
        .count() as i64;
    assert!(
        sessions > 0 && session_events == sessions,
        "{sessions} {session_events}"
    );
    Ok(())
}

/// A table may declare a column named `rowid` holding text, and a registry of the
/// registries' names may be of another shape: the timeline reads the rest and ends well.
#[test]
fn odd_tables_never_end_the_timeline() -> TestResult {
    let dir = Scratch::new("timeline-odd");
    let src = dir.path("odd.db");
    Connection::open(&src)?.execute_batch(
        "CREATE TABLE notes(rowid TEXT, title TEXT, created_at INTEGER);
         INSERT INTO notes VALUES ('a', 'one', 1700000000), ('b', 'two', 1700000100);
         CREATE TABLE salvage_carved(tbl TEXT, c2 INTEGER);
         INSERT INTO salvage_carved VALUES ('notes', 1700000200);
         CREATE TABLE far(id INTEGER PRIMARY KEY, created_at INTEGER);
         INSERT INTO far(created_at) VALUES (1700000000), (1700000500);",
    )?;
    let lines = timeline(&src, &dir.path("odd.csv"))?;
    assert_times_agree(&lines)?;
    let notes: Vec<&Line> = lines.iter().filter(|l| l["table"] == "notes").collect();
    assert_eq!(notes.len(), 2, "{lines:?}");
    assert!(notes
        .iter()
        .all(|l| l["rowid"].is_empty() && l["source"] == "live row"));
    Ok(())
}

/// A file SQLite cannot read is refused (exit 2) with the hint to recover it first, and
/// its failure is named as a read of it, never as a write of an output; nothing is made
/// at `-o`.
#[test]
fn a_file_sqlite_cannot_read_is_refused_as_unreadable() -> TestResult {
    let dir = Scratch::new("timeline-unreadable");
    let db = dir.path("notes.db");
    std::fs::write(
        &db,
        "not a database: a text file of some length, ".repeat(40),
    )?;
    let out = dir.path("timeline.csv");
    let run = run_salvage(&[
        "timeline".as_ref(),
        db.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
    ])?;
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("SQLite cannot read") && stderr.contains("salvage recover"),
        "{stderr}"
    );
    assert!(!stderr.contains("output database"), "{stderr}");
    assert!(!out.exists() && !dir.path("timeline.csv.incomplete").exists());
    Ok(())
}

/// A table whose every row was deleted keeps its times only in the records `--carve`
/// finds, and here the time is the INTEGER PRIMARY KEY, stored NULL in each record, its
/// value the record's rowid: the column is taken as a time on the carved values, and each
/// carved record is an event at its rowid's time.
#[test]
fn a_time_kept_only_in_deleted_records_is_read_from_their_rowids() -> TestResult {
    let dir = Scratch::new("timeline-carved-key");
    let src = dir.path("visits.db");
    let first_ms: i64 = 1_700_000_000_000;
    {
        let conn = Connection::open(&src)?;
        conn.execute_batch(
            "CREATE TABLE visits(visit_time INTEGER PRIMARY KEY, url TEXT NOT NULL);",
        )?;
        for i in 0..300i64 {
            conn.execute(
                "INSERT INTO visits VALUES (?1, ?2)",
                rusqlite::params![
                    first_ms + i * 60_000,
                    format!("https://example.org/page/{i}/{}", "x".repeat(80))
                ],
            )?;
        }
        conn.execute_batch("DELETE FROM visits;")?;
    }
    let out = dir.path("out.db");
    let options = recovery::RecoverOptions {
        carve: true,
        ..recovery::RecoverOptions::new(&src, &out)
    };
    recovery::recover(&options, &recovery::Quiet)?;
    let keyed: Vec<i64> = Connection::open(&out)?
        .prepare("SELECT rowid FROM salvage_carved WHERE tbl = 'visits' AND rowid IS NOT NULL ORDER BY rowid")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    assert!(
        keyed.len() >= 250,
        "carved with their rowids: {}",
        keyed.len()
    );
    let lines = timeline(&out, &dir.path("visits.csv"))?;
    assert_times_agree(&lines)?;
    let mut got: Vec<i64> = Vec::new();
    for l in &lines {
        assert!(
            l["table"] == "visits"
                && l["column"] == "visit_time"
                && l["epoch"] == "unix_ms"
                && l["time_column"].starts_with("inferred: ")
                && l["source"].starts_with("carved deleted record (page ")
                && l["plausible"] == "true",
            "{l:?}"
        );
        // The event's time is its rowid's, to the microsecond.
        let ms: i64 = l["value"].parse()?;
        assert_eq!(l["rowid"], ms.to_string());
        assert_eq!(l["timestamp"], (ms * 1_000).to_string());
        got.push(ms);
    }
    got.sort_unstable();
    assert_eq!(got, keyed);
    Ok(())
}

/// A catalogued column's values as an application leaves them: the largest integer (a
/// "never" some applications write) is past every year ISO 8601 writes, an event without a
/// date, flagged, never dropped; -1 and zero, as numbers or as text, are unset times, no
/// events.
#[test]
fn a_time_past_every_year_is_an_event_flagged_without_a_date() -> TestResult {
    let dir = Scratch::new("timeline-beyond");
    let (src, _) = catalogued_database(&dir, "chromium-history")?;
    let stored: i64 = {
        let conn = Connection::open(&src)?;
        conn.execute_batch(
            "UPDATE visits SET visit_time = 9223372036854775807 WHERE id = 1;
             UPDATE visits SET visit_time = -1 WHERE id = 2;
             UPDATE visits SET visit_time = '0' WHERE id = 3;
             UPDATE visits SET visit_time = '-1' WHERE id = 4;",
        )?;
        conn.query_row(
            "SELECT count(*) FROM visits WHERE visit_time IS NOT NULL AND visit_time NOT IN (0, -1, '0', '-1')",
            [],
            |r| r.get(0),
        )?
    };
    let lines = timeline(&src, &dir.path("history.csv"))?;
    let visits: Vec<&Line> = lines
        .iter()
        .filter(|l| l["table"] == "visits" && l["column"] == "visit_time")
        .collect();
    assert_eq!(visits.len() as i64, stored, "{visits:?}");
    let beyond: Vec<&&Line> = visits.iter().filter(|l| l["datetime"].is_empty()).collect();
    assert_eq!(beyond.len(), 1, "{beyond:?}");
    let l = beyond[0];
    assert!(
        l["rowid"] == "1"
            && l["value"] == "9223372036854775807"
            && l["timestamp"].is_empty()
            && l["plausible"] == "false"
            && l["message"].contains("[implausible: past the years 0001 to 9999"),
        "{l:?}"
    );
    let dated: Vec<Line> = visits
        .iter()
        .filter(|l| !l["datetime"].is_empty())
        .map(|l| (*l).clone())
        .collect();
    assert_times_agree(&dated)?;
    Ok(())
}

/// What an event says of where its time came from and how it was read: a carved record that
/// is an older version of a live row says so; one whose rowid was overwritten says it has
/// none; a text time without a zone is taken as UTC, and the event says so. A column with
/// one date no calendar has is no time at all. (The registry is written by hand, with the
/// list a run makes last.)
#[test]
fn an_event_says_how_its_time_was_read() -> TestResult {
    let dir = Scratch::new("timeline-said");
    let src = dir.path("notes.db");
    Connection::open(&src)?.execute_batch(
        "CREATE TABLE notes(id INTEGER PRIMARY KEY, title TEXT, created_at TEXT);
         INSERT INTO notes VALUES (1, 'one', '2023-11-14 22:13:20'),
                                  (2, 'two', '2023-11-14T22:13:20+02:00');
         CREATE TABLE drafts(id INTEGER PRIMARY KEY, saved_at TEXT);
         INSERT INTO drafts VALUES (1, '2023-04-30 10:00:00'), (2, '2023-04-31 10:00:00');
         CREATE TABLE salvage_carved(tbl TEXT, source TEXT, page INTEGER, offset INTEGER,
             confidence REAL, status TEXT, rowid INTEGER, nfield INTEGER, c0, c1, c2);
         INSERT INTO salvage_carved VALUES
             ('notes', 'freeblock', 2, 3000, 1.0, 'previous version', 1, 3, NULL, 'one',
              '2023-11-13 08:00:00Z'),
             ('notes', 'freeblock', 2, 3100, 0.9, 'deleted', NULL, 3, NULL, 'three',
              '2023-11-12 08:00:00Z');
         CREATE TABLE salvage_registries(kind TEXT NOT NULL, name TEXT PRIMARY KEY);
         INSERT INTO salvage_registries VALUES ('salvage_carved', 'salvage_carved');",
    )?;
    let lines = timeline(&src, &dir.path("notes.csv"))?;
    assert_times_agree(&lines)?;
    assert!(lines.iter().all(|l| l["table"] == "notes"), "{lines:?}");
    let by_value = |v: &str| {
        lines
            .iter()
            .find(|l| l["value"] == v)
            .cloned()
            .unwrap_or_default()
    };
    let local = by_value("2023-11-14 22:13:20");
    assert!(
        local["message"].contains("[no zone stored: taken as UTC]")
            && local["datetime"] == "2023-11-14T22:13:20.000000+00:00",
        "{local:?}"
    );
    let zoned = by_value("2023-11-14T22:13:20+02:00");
    assert!(
        !zoned["message"].contains("no zone")
            && zoned["datetime"] == "2023-11-14T20:13:20.000000+00:00",
        "{zoned:?}"
    );
    let previous = by_value("2023-11-13 08:00:00Z");
    assert_eq!(
        previous["source"], "carved previous version (page 2, offset 3000)",
        "{previous:?}"
    );
    let deleted = by_value("2023-11-12 08:00:00Z");
    assert!(
        deleted["source"] == "carved deleted record (page 2, offset 3100)"
            && deleted["rowid"].is_empty()
            && deleted["message"].contains("notes record without its rowid"),
        "{deleted:?}"
    );
    assert_eq!(lines.len(), 4);
    Ok(())
}
