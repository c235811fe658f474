//! `recover --provenance` (issue #39): what every recovered row is and where it was read
//! (`salvage_provenance`), and a view per table of its live, rebuilt, carved and logged
//! rows together (`salvage_rows_TABLE`). Each place is checked against the bytes of the
//! file it names: the cell there holds the row's rowid.

use std::collections::BTreeMap;

use fixtures::Damage;
use recovery::{Outcome, RecoverOptions};
use rusqlite::Connection;

use crate::recover::case;
use crate::{Scratch, TestResult};

/// A varint at the start of `bytes` ("Variable-Length Integers"), read here by hand: the
/// test's own reading of the file, not the pager's.
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, b) in bytes.iter().take(9).enumerate() {
        if i == 8 {
            return Some(((v << 8) | u64::from(*b), 9));
        }
        v = (v << 7) | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// The rowid of the table leaf cell at `at` in `bytes`: its payload size, then its rowid.
fn cell_rowid(bytes: &[u8], at: usize) -> Option<i64> {
    let (_, n) = varint(bytes.get(at..)?)?;
    let (rowid, _) = varint(bytes.get(at + n..)?)?;
    Some(rowid as i64)
}

/// A place of `salvage_provenance` or of a row view.
#[derive(Debug)]
struct Place {
    table: String,
    rowid: i64,
    status: String,
    page: Option<i64>,
    offset: Option<i64>,
    frame: Option<i64>,
    file: Option<String>,
    file_offset: Option<i64>,
}

fn places(conn: &Connection) -> rusqlite::Result<Vec<Place>> {
    let mut stmt = conn.prepare(
        "SELECT tbl, rowid, status, page, cell_offset, frame, file, file_offset \
         FROM salvage_provenance ORDER BY tbl, rowid",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(Place {
            table: r.get(0)?,
            rowid: r.get(1)?,
            status: r.get(2)?,
            page: r.get(3)?,
            offset: r.get(4)?,
            frame: r.get(5)?,
            file: r.get(6)?,
            file_offset: r.get(7)?,
        })
    })?;
    rows.collect()
}

/// Where frame `frame` (1-based) of a write-ahead log of `page_size` starts: a 32-byte
/// header, then frames of a 24-byte header and a page.
fn frame_start(frame: i64, page_size: i64) -> usize {
    (32 + (frame - 1) * (24 + page_size)) as usize
}

/// Checks a place read from the file against the file: its offset follows from its page
/// (and frame), and the cell there holds its rowid.
fn check_place(p: &Place, main: &[u8], wal: &[u8], page_size: i64) {
    let (Some(page), Some(offset), Some(file), Some(at)) =
        (p.page, p.offset, p.file.as_deref(), p.file_offset)
    else {
        panic!("a row read from the file without its place: {p:?}")
    };
    let bytes = match file {
        "main file" => {
            assert_eq!(p.frame, None, "{p:?}");
            assert_eq!(at, (page - 1) * page_size + offset, "{p:?}");
            main
        }
        "wal" => {
            let frame = p.frame.unwrap_or_else(|| panic!("no frame: {p:?}"));
            let start = frame_start(frame, page_size);
            let of_page = u32::from_be_bytes(wal[start..start + 4].try_into().unwrap());
            assert_eq!(
                i64::from(of_page),
                page,
                "the frame is of another page: {p:?}"
            );
            assert_eq!(at, start as i64 + 24 + offset, "{p:?}");
            wal
        }
        other => panic!("read from {other}: {p:?}"),
    };
    assert_eq!(
        cell_rowid(bytes, at as usize),
        Some(p.rowid),
        "the cell at {file} offset {at} is not row {} of {}",
        p.rowid,
        p.table
    );
}

/// Counts of a table's row view by status, the number after `log version ` dropped.
fn view_statuses(conn: &Connection, view: &str) -> rusqlite::Result<BTreeMap<String, i64>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT CASE WHEN salvage_status LIKE 'log version %' THEN 'log version' \
         ELSE salvage_status END, count(*) FROM \"{view}\" GROUP BY 1"
    ))?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

fn count(conn: &Connection, sql: &str) -> rusqlite::Result<i64> {
    conn.query_row(sql, [], |r| r.get(0))
}

/// A write-ahead log database with deleted records: every live row's place is in the main
/// file or a frame of the log, as the page the load read says; each table's view holds
/// its live rows, its carved records and its log versions, with theirs.
#[test]
fn every_row_says_where_it_was_read_and_the_file_agrees() -> TestResult {
    let dir = Scratch::new("provenance-wal");
    let story = fixtures::history::wal_story();
    std::fs::write(dir.path("chat.db"), &story.main)?;
    std::fs::write(dir.path("chat.db-wal"), &story.wal)?;
    let out = dir.path("out.db");
    let options = RecoverOptions {
        carve: true,
        history: true,
        provenance: true,
        ..RecoverOptions::new(dir.path("chat.db"), &out)
    };
    let done = crate::recover_in_process(&options, Outcome::Complete)?;
    let report = done
        .report
        .provenance
        .clone()
        .expect("the provenance report");
    assert_eq!(report.registry.as_deref(), Some("salvage_provenance"));
    let conn = Connection::open(&out)?;
    let page_size = i64::from(fixtures::history::PAGE_SIZE);
    let all = places(&conn)?;
    assert_eq!(report.rows, all.len() as u64);
    assert_eq!(
        report.rows_placed, report.rows,
        "every row was read from the file"
    );
    let mut files: BTreeMap<&str, usize> = BTreeMap::new();
    for p in &all {
        assert_eq!(p.status, "live", "{p:?}");
        check_place(p, &story.main, &story.wal, page_size);
        *files.entry(p.file.as_deref().unwrap_or("")).or_default() += 1;
    }
    // The log rewrote every page of the story's tables: each row is read from a frame
    // (the second test places rows in a main file).
    assert_eq!(
        files.keys().copied().collect::<Vec<_>>(),
        ["wal"],
        "{files:?}"
    );
    // Every row of every rowid table is placed, once.
    for table in report.views.keys() {
        let rows = count(&conn, &format!("SELECT count(*) FROM \"{table}\""))?;
        let placed = all.iter().filter(|p| &p.table == table).count() as i64;
        assert_eq!(rows, placed, "{table}");
    }
    // The messages' view: live rows, carved records and log versions together.
    let view = &report.views["messages"];
    assert_eq!(view, "salvage_rows_messages");
    let statuses = view_statuses(&conn, view)?;
    let live = count(&conn, "SELECT count(*) FROM messages")?;
    let carved = count(
        &conn,
        "SELECT count(*) FROM salvage_carved WHERE tbl = 'messages'",
    )?;
    let logged = count(
        &conn,
        "SELECT count(*) FROM salvage_history WHERE tbl = 'messages'",
    )?;
    assert!(
        carved > 0 && logged > 0,
        "the story deletes and updates messages"
    );
    let carved_in_view: i64 = statuses
        .iter()
        .filter(|(s, _)| s.starts_with("carved "))
        .map(|(_, n)| n)
        .sum();
    assert_eq!(statuses.get("live"), Some(&live), "{statuses:?}");
    assert_eq!(carved_in_view, carved, "{statuses:?}");
    assert_eq!(statuses.get("log version"), Some(&logged), "{statuses:?}");
    // The view's values are the table's: a live row as the table holds it.
    let same = count(
        &conn,
        "SELECT count(*) FROM salvage_rows_messages AS v JOIN messages AS m \
         ON v.salvage_rowid = m.id WHERE v.salvage_status = 'live' AND v.body IS m.body",
    )?;
    assert_eq!(same, live);
    // A log version read from a frame is at its place in the log.
    let mut stmt = conn.prepare(
        "SELECT salvage_rowid, salvage_page, salvage_offset, salvage_frame \
         FROM salvage_rows_messages WHERE salvage_frame IS NOT NULL",
    )?;
    let framed: Vec<(i64, i64, i64, i64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<Result<_, _>>()?;
    assert!(!framed.is_empty());
    for (rowid, page, offset, frame) in framed {
        check_place(
            &Place {
                table: "messages (log)".into(),
                rowid,
                status: String::new(),
                page: Some(page),
                offset: Some(offset),
                frame: Some(frame),
                file: Some("wal".into()),
                file_offset: Some(frame_start(frame, page_size) as i64 + 24 + offset),
            },
            &story.main,
            &story.wal,
            page_size,
        );
    }
    // Carved records name a page of the main file and an offset within it.
    let outside = count(
        &conn,
        &format!(
            "SELECT count(*) FROM salvage_rows_messages WHERE salvage_status LIKE 'carved %' \
             AND (salvage_page < 1 OR salvage_page > {} OR salvage_offset >= {page_size})",
            story.main.len() as i64 / page_size
        ),
    )?;
    assert_eq!(outside, 0);
    Ok(())
}

/// Rows the rebuild made say so: placeholders (a lost parent table) and partial rows
/// (a lost leaf whose index entries survive) are named, never given a place; every row
/// read is placed and its cell is where the place says.
#[test]
fn rebuilt_rows_and_placeholders_are_named_and_read_rows_placed() -> TestResult {
    let cases = [
        case("provenance-placeholders", "agent-4096-utf8", |f| {
            vec![Damage::ZeroPage(f.roots["sessions"])]
        }),
        case("provenance-partial", "generic-512-utf16be", |f| {
            let leaves = fixtures::table_pages(&f.bytes, f.roots["items"]).leaves;
            vec![Damage::ZeroPage(*leaves.last().unwrap())]
        }),
    ];
    let mut made = BTreeMap::new();
    for c in &cases {
        let options = RecoverOptions {
            provenance: true,
            ..c.allow_partial()
        };
        let done = crate::recover_in_process(&options, Outcome::PartialCommitted)?;
        assert!(done.report.provenance.is_some());
        let conn = Connection::open(&c.dest)?;
        let main = std::fs::read(&c.src)?;
        let page_size = i64::from(done.report.geometry.page_size);
        for p in places(&conn)? {
            match p.status.as_str() {
                "placeholder" | "rebuilt" => {
                    assert_eq!((p.page, p.file.as_deref()), (None, None), "{p:?}");
                    *made.entry(p.status.clone()).or_insert(0) += 1;
                }
                s if s.starts_with("live") => check_place(&p, &main, &[], page_size),
                _ => panic!("{p:?}"),
            }
        }
        let registered = |registry: &str, condition: &str| -> rusqlite::Result<i64> {
            let exists = count(
                &conn,
                &format!("SELECT count(*) FROM sqlite_schema WHERE name = '{registry}'"),
            )?;
            if exists == 0 {
                return Ok(0);
            }
            count(
                &conn,
                &format!("SELECT count(*) FROM {registry} {condition}"),
            )
        };
        let placeholders = registered("salvage_placeholders", "WHERE rowid IS NOT NULL")?;
        let partial = registered(
            "salvage_partial_rows",
            "WHERE in_table AND rowid IS NOT NULL",
        )?;
        let said = |status: &str| {
            count(
                &conn,
                &format!("SELECT count(*) FROM salvage_provenance WHERE status = '{status}'"),
            )
        };
        assert_eq!(said("placeholder")?, placeholders);
        assert_eq!(said("rebuilt")?, partial);
    }
    assert!(made.get("placeholder").is_some_and(|n| *n > 0), "{made:?}");
    assert!(made.get("rebuilt").is_some_and(|n| *n > 0), "{made:?}");
    Ok(())
}

/// Without `--provenance`, nothing of it is written.
#[test]
fn provenance_is_written_only_when_asked_for() -> TestResult {
    let c = case("provenance-off", "generic-4096-utf8", |_| Vec::new());
    let done = crate::recover_in_process(&c.options(), Outcome::Complete)?;
    assert!(done.report.provenance.is_none());
    let conn = Connection::open(&c.dest)?;
    let made = count(
        &conn,
        "SELECT count(*) FROM sqlite_schema WHERE name LIKE 'salvage_provenance%' \
         OR name LIKE 'salvage_rows_%'",
    )?;
    assert_eq!(made, 0);
    Ok(())
}

/// The report a person reads says what was written beside the tables, in each format:
/// the carved records and the row views, by name.
#[test]
fn every_rendering_names_the_evidence_beside_the_tables() -> TestResult {
    let c = case("provenance-rendered", "agent-4096-utf8", |_| Vec::new());
    c.recover_expecting(&["--carve", "--provenance"], 0)?;
    let report = c.dir.path("out.db.report.json");
    for format in ["text", "markdown", "html"] {
        let run = crate::run_salvage(&[
            "report".as_ref(),
            report.as_os_str(),
            "--format".as_ref(),
            format.as_ref(),
        ])?;
        assert!(run.status.success(), "{format}: {run:?}");
        let page = String::from_utf8(run.stdout)?;
        assert!(
            page.contains("Evidence beside the tables"),
            "{format}:\n{page}"
        );
        for name in [
            "salvage_carved",
            "salvage_provenance",
            "salvage_rows_messages",
        ] {
            assert!(page.contains(name), "{format} lacks {name}:\n{page}");
        }
        // The times the messages hold, decoded (the agent store's catalogue entry).
        assert!(
            page.contains("timestamp") && page.contains("holds 660 times from 2025-01-02"),
            "{format}:\n{page}"
        );
    }
    // The row view exports as CSV as any table does: a header, then a line per row.
    let csv = c.dir.path("messages.csv");
    let run = crate::run_salvage(&[
        "export".as_ref(),
        c.dest.as_os_str(),
        "--format".as_ref(),
        "csv".as_ref(),
        "--table".as_ref(),
        "salvage_rows_messages".as_ref(),
        "-o".as_ref(),
        csv.as_os_str(),
    ])?;
    assert!(run.status.success(), "{run:?}");
    let mut reader = csv::Reader::from_path(&csv)?;
    assert_eq!(
        reader.headers()?.iter().take(3).collect::<Vec<_>>(),
        ["salvage_status", "salvage_source", "salvage_page"]
    );
    let lines = reader.records().count() as i64;
    let rows = count(
        &Connection::open(&c.dest)?,
        "SELECT count(*) FROM salvage_rows_messages",
    )?;
    assert_eq!(lines, rows);
    // Without them, no such section.
    let plain = case("provenance-rendered-plain", "agent-4096-utf8", |_| {
        Vec::new()
    });
    plain.recover_expecting(&[], 0)?;
    let run = crate::run_salvage(&[
        "report".as_ref(),
        plain.dir.path("out.db.report.json").as_os_str(),
    ])?;
    assert!(!String::from_utf8(run.stdout)?.contains("Evidence beside the tables"));
    Ok(())
}

/// A row view decodes each time column, in its epoch, beside the stored value: in each
/// catalogued application's database, every decoded time is the timeline's for that row
/// and column (to the millisecond the view gives), and no other value is decoded.
#[test]
fn row_views_decode_each_time_column_as_the_timeline_does() -> TestResult {
    let dir = Scratch::new("provenance-times");
    let mut epochs = std::collections::BTreeSet::new();
    for name in [
        "chromium-history",
        "firefox-places",
        "android-mmssms",
        "zotero-library",
    ] {
        let (src, _) = crate::timeline::catalogued_database(&dir, name)?;
        let out = dir.path(&format!("{name}-out.db"));
        let options = RecoverOptions {
            provenance: true,
            ..RecoverOptions::new(&src, &out)
        };
        let done = crate::recover_in_process(&options, Outcome::Complete)?;
        let spans = done.report.provenance.ok_or("no provenance")?.times;
        let lines = crate::timeline::timeline(&out, &dir.path(&format!("{name}.csv")))?;
        let conn = Connection::open(&out)?;
        let mut events: BTreeMap<(String, String), i64> = BTreeMap::new();
        for l in &lines {
            let (table, column) = (l["table"].clone(), l["column"].clone());
            let decoded: Option<String> = conn.query_row(
                &format!(
                    "SELECT \"salvage_utc_{column}\" FROM \"salvage_rows_{table}\" \
                     WHERE salvage_rowid = ?1 AND salvage_status = 'live'"
                ),
                [l["rowid"].parse::<i64>()?],
                |r| r.get(0),
            )?;
            let decoded = decoded.ok_or_else(|| format!("{name}: {l:?} not decoded"))?;
            let apart: f64 = conn.query_row(
                "SELECT abs(julianday(?1) - julianday(?2)) * 86400000.0",
                [&decoded, &l["datetime"]],
                |r| r.get(0),
            )?;
            // The view rounds to the millisecond, the timeline keeps microseconds.
            assert!(apart < 1.5, "{name}: {decoded} against {l:?}");
            *events.entry((table, column)).or_default() += 1;
            epochs.insert(l["epoch"].clone());
        }
        // As many decoded values as events: nothing else is decoded.
        for ((table, column), n) in &events {
            let decoded = count(
                &conn,
                &format!(
                    "SELECT count(\"salvage_utc_{column}\") FROM \"salvage_rows_{table}\" \
                     WHERE salvage_status = 'live'"
                ),
            )?;
            assert_eq!(decoded, *n, "{name}: {table}.{column}");
            // The report gives each column's span: its count, earliest and latest.
            let span = spans
                .iter()
                .find(|s| s.table == *table && s.column == *column)
                .ok_or_else(|| format!("{name}: no span of {table}.{column}"))?;
            let (first, last): (String, String) = conn.query_row(
                &format!(
                    "SELECT min(\"salvage_utc_{column}\"), max(\"salvage_utc_{column}\") \
                     FROM \"salvage_rows_{table}\" WHERE salvage_status = 'live'"
                ),
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            assert_eq!(
                (
                    span.values as i64,
                    span.first.clone(),
                    span.last.clone(),
                    span.implausible
                ),
                (*n, Some(first), Some(last), 0),
                "{name}: {table}.{column}"
            );
        }
        let with_times = spans.iter().filter(|s| s.values > 0).count();
        assert_eq!(with_times, events.len(), "{name}: {spans:?}");
    }
    assert!(epochs.len() >= 4, "{epochs:?}");
    Ok(())
}

/// A table whose name holds `?1` (SQL's first parameter, were it spliced in) gets its
/// carved records' view under the name the report gives, and the row view reads it.
#[test]
fn a_table_named_with_a_parameter_mark_gets_its_views() -> TestResult {
    let dir = Scratch::new("provenance-odd-name");
    let src = dir.path("odd.db");
    {
        let conn = Connection::open(&src)?;
        conn.execute_batch(
            "PRAGMA secure_delete = OFF;
             CREATE TABLE \"t?1\"(id INTEGER PRIMARY KEY, note TEXT);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
             INSERT INTO \"t?1\" SELECT i, 'note number ' || i FROM n;
             DELETE FROM \"t?1\" WHERE id % 3 = 0;",
        )?;
    }
    let out = dir.path("out.db");
    let options = RecoverOptions {
        carve: true,
        provenance: true,
        ..RecoverOptions::new(&src, &out)
    };
    let done = crate::recover_in_process(&options, Outcome::Complete)?;
    let carved = done.report.carved.ok_or("no carving")?;
    let view = carved.views.get("t?1").ok_or("no carved view")?;
    let conn = Connection::open(&out)?;
    let in_view = count(&conn, &format!("SELECT count(*) FROM \"{view}\""))?;
    assert!(in_view > 0);
    let carved_rows = count(
        &conn,
        "SELECT count(*) FROM \"salvage_rows_t?1\" WHERE salvage_status LIKE 'carved %'",
    )?;
    assert_eq!(carved_rows, in_view);
    Ok(())
}
