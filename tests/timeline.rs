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
        let sql = sql.as_str().ok_or("statement")?;
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
            l["source"].starts_with("carved deleted record (page ")
                && l["table"] == "messages"
                && l["column"] == "sent"
        })
        .count() as i64;
    assert!(carved > 0, "the story deletes messages");
    assert_eq!(carved_events, carved);
    Ok(())
}

/// A table may declare a column named `rowid` holding text, and a registry of the
/// registries' names may be of another shape: the timeline reads the rest and ends well.
/// Years no four digits write are no event.
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
