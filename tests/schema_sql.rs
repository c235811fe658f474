//! The SQL a damaged file carries runs on the output under limits: its CREATE statements,
//! and the expressions of its indexes and generated columns, are untrusted input. A
//! crafted one ends in a report saying what was not made, within a bounded time, with
//! every row kept; one naming what this build lacks leaves its table's rows in a plain
//! table of the same columns.

use recovery::report::{ObjectStatus, SchemaObject};
use recovery::{Outcome, Recovery, TableStatus};
use rusqlite::Connection;

use crate::{Scratch, TestResult};

/// A test step's result with a value.
type Got<T> = Result<T, Box<dyn std::error::Error>>;

/// A database made by `setup`, whose schema row `name` then has `from` replaced by `to`
/// in its SQL (as an attacker edits the schema table), at `dir/evidence.db`.
fn crafted(
    dir: &Scratch,
    setup: &str,
    name: &str,
    from: &str,
    to: &str,
) -> Got<std::path::PathBuf> {
    let src = dir.path("evidence.db");
    let conn = Connection::open(&src)?;
    conn.execute_batch(setup)?;
    conn.execute_batch("PRAGMA writable_schema = ON")?;
    let changed = conn.execute(
        "UPDATE sqlite_schema SET sql = replace(sql, ?1, ?2) WHERE name = ?3",
        [from, to, name],
    )?;
    assert_eq!(changed, 1);
    drop(conn);
    Ok(src)
}

/// 500 rows of `t(a, b)`.
const ROWS: &str = "CREATE TABLE t(a INTEGER, b TEXT);
    WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 500)
    INSERT INTO t SELECT x, 'v' || x FROM i;";

fn rows(dest: &std::path::Path, table: &str) -> Got<i64> {
    Ok(Connection::open(dest)?
        .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))?)
}

/// What the report says became of the schema object `name`.
#[track_caller]
fn object<'r>(done: &'r Recovery, name: &str) -> &'r SchemaObject {
    done.report
        .schema_objects
        .iter()
        .find(|o| o.name == name)
        .unwrap_or_else(|| panic!("no schema object `{name}` in the report"))
}

/// `salvage recover SRC -o DEST --allow-partial`, in-process: the partial output committed.
fn recover_partial(
    src: &std::path::Path,
    dest: &std::path::Path,
) -> Result<Recovery, recovery::Error> {
    crate::recover_in_process(&crate::allow_partial(src, dest), Outcome::PartialCommitted)
}

/// Index expressions and partial-index conditions that build a value far longer than any
/// the file holds (50 MB per row, or 400 MB: once minutes of work and gigabytes of memory
/// per run) stop at the length limit: the index is not made, reported as loss, and every
/// row is kept.
#[test]
fn an_index_expression_building_huge_values_is_not_made() -> TestResult {
    let cases = [
        (
            "CREATE INDEX ti ON t(length(printf('%.*c', 7777, b)))",
            "50000000",
        ),
        (
            "CREATE INDEX ti ON t(a) WHERE length(printf('%.*c', 7777, b)) > 0",
            "50000000",
        ),
        ("CREATE INDEX ti ON t(printf('%.*c', 7777, b))", "400000000"),
    ];
    for (i, (index, big)) in cases.into_iter().enumerate() {
        let dir = Scratch::new(&format!("schema-sql-long-{i}"));
        let src = crafted(&dir, &format!("{ROWS} {index};"), "ti", "7777", big)?;
        let dest = dir.path("out.db");
        let done = recover_partial(&src, &dest)?;
        let ti = object(&done, "ti");
        assert_eq!(ti.status, ObjectStatus::Failed, "{index}: {ti:?}");
        assert!(
            ti.reason.as_deref().is_some_and(|r| r.contains("too big")),
            "{ti:?}"
        );
        crate::assert_signal!(
            done,
            reconstruct::LossSignal::ObjectNotCreated { name, .. } if name == "ti"
        );
        assert_eq!(rows(&dest, "t")?, 500);
        // SQLite's own check of the source runs the same expression: under the same
        // limits it gives up and says so, never hours of work.
        let check = &done.report.source.sqlite_check;
        assert_eq!(
            check.state,
            recovery::report::SqliteCheckState::NotRun,
            "{index}: {check:?}"
        );
    }
    Ok(())
}

/// One cell whose payload size is damaged (four bytes of 0xff… over its varint: 268 MB
/// declared) does not lift the length limit: a value is never longer than the bytes the
/// cell and its overflow chain hold. It lifted it to SQLite's 1 GB, and the 50 MB index
/// expression then ran over every row (minutes, gigabytes).
#[test]
fn a_damaged_payload_size_does_not_lift_the_length_limit() -> TestResult {
    let dir = Scratch::new("schema-sql-long-damaged-size");
    let index = "CREATE INDEX ti ON t(length(printf('%.*c', 7777, b)))";
    let src = crafted(&dir, &format!("{ROWS} {index};"), "ti", "7777", "50000000")?;
    let mut bytes = std::fs::read(&src)?;
    let root: i64 = Connection::open(&src)?.query_row(
        "SELECT rootpage FROM sqlite_schema WHERE name = 't'",
        [],
        |r| r.get(0),
    )?;
    let root = usize::try_from(root)?;
    let size = usize::from(u16::from_be_bytes([bytes[16], bytes[17]]));
    // The first leaf of `t`: its root is an interior page (500 rows), whose first cell's
    // left child is a leaf.
    let at = (root - 1) * size;
    assert_eq!(bytes[at], 5, "t's root is an interior page");
    let first = at + usize::from(u16::from_be_bytes([bytes[at + 12], bytes[at + 13]]));
    let leaf = u32::from_be_bytes(bytes[first..first + 4].try_into()?) as usize;
    let at = (leaf - 1) * size;
    // Its last cell, lowest on the page: the 489 bytes a payload of that size keeps on
    // the page lie after it, so the cell reads as one whose payload spills.
    let cells = usize::from(u16::from_be_bytes([bytes[at + 3], bytes[at + 4]]));
    let pointer = at + 8 + 2 * (cells - 1);
    let cell = at + usize::from(u16::from_be_bytes([bytes[pointer], bytes[pointer + 1]]));
    bytes[cell..cell + 4].copy_from_slice(&[0xff, 0xff, 0xff, 0x7f]);
    std::fs::write(&src, &bytes)?;
    let dest = dir.path("out.db");
    let done = recover_partial(&src, &dest)?;
    let ti = object(&done, "ti");
    assert_eq!(ti.status, ObjectStatus::Failed, "{ti:?}");
    assert!(
        ti.reason.as_deref().is_some_and(|r| r.contains("too big")),
        "{ti:?}"
    );
    Ok(())
}

/// A stored generated column whose expression builds 50 MB per row: the rows copied as
/// they are keep its stored values; rows that go through SQL (cells no pointer names, here
/// a leaf's cell count zeroed) once took a second each to compute it. Past the length
/// limit, SQLite refuses them and they are kept in `lost_and_found` with their values.
#[test]
fn a_generated_column_building_huge_values_keeps_every_row() -> TestResult {
    let dir = Scratch::new("schema-sql-generated");
    let src = crafted(
        &dir,
        "CREATE TABLE g(a INTEGER, b TEXT, c AS (length(printf('%.*c', 7777, b))) STORED);
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 500)
         INSERT INTO g(a, b) SELECT x, 'v' || x FROM i;",
        "g",
        "7777",
        "50000000",
    )?;
    let mut bytes = std::fs::read(&src)?;
    let leaf = (1..bytes.len() / 4096)
        .find(|p| bytes[p * 4096] == 13)
        .ok_or("a table leaf")?;
    bytes[leaf * 4096 + 3..leaf * 4096 + 5].fill(0);
    std::fs::write(&src, &bytes)?;
    let dest = dir.path("out.db");
    let done = recover_partial(&src, &dest)?;
    let lost_and_found = &done.report.lost_and_found;
    let kept = rows(&dest, "g")? as u64 + lost_and_found.rows;
    assert_eq!(kept, 500);
    // The rows that went through SQL were refused at the limit, not computed.
    assert!(lost_and_found.rows > 0, "{lost_and_found:?}");
    Ok(())
}

/// An index expression of 8,000 CASE branches costs more instructions per row than any
/// real index: the build is interrupted at its budget (proportional to the rows), not
/// made, and reported. One of 60,000 is longer than any real schema statement, and is
/// refused before SQLite compiles it (compiling it took 14 s: its constants are compared
/// with each other).
#[test]
fn an_index_past_its_instruction_budget_is_not_made() -> TestResult {
    let rows_2000 = ROWS.replace("x < 500", "x < 2000");
    for (n, branch, why) in [
        (8_000, "WHEN a = a + length(b) THEN b ", "budget"),
        (60_000, "WHEN a = -77 THEN 77 ", "too long"),
    ] {
        let dir = Scratch::new(&format!("schema-sql-budget-{n}"));
        let src = crafted(
            &dir,
            &format!("{rows_2000} CREATE INDEX ti ON t((CASE WHEN a = 0 THEN 0 END));"),
            "ti",
            "WHEN a = 0 THEN 0 ",
            &branch.repeat(n),
        )?;
        let dest = dir.path("out.db");
        let done = recover_partial(&src, &dest)?;
        let ti = object(&done, "ti");
        assert_eq!(ti.status, ObjectStatus::Failed, "{ti:?}");
        assert!(
            ti.reason.as_deref().is_some_and(|r| r.contains(why)),
            "{ti:?}"
        );
        assert_eq!(rows(&dest, "t")?, 2000);
    }
    Ok(())
}

/// A table whose CREATE statement names a function this build lacks (a generated column
/// of an application's own function) once failed with every row lost. It is made as a
/// plain table of the same columns, its rows kept (a stored generated column's values
/// too); the lost definition is reported as loss. A collation this build lacks needs no
/// such thing: a stand-in comparing bytes makes the table as declared, and the run is
/// complete (`quirks::a_collation_this_build_lacks_gets_a_stand_in_not_loss`).
#[test]
fn a_table_naming_what_this_build_lacks_keeps_its_rows() -> TestResult {
    let dir = Scratch::new("schema-sql-lacking-function");
    let src = crafted(
        &dir,
        "CREATE TABLE g(a INTEGER PRIMARY KEY, b TEXT, c AS (upper(b)), d AS (upper(b)) STORED);
         INSERT INTO g(a, b) VALUES (1, 'x'), (2, 'y'), (3, 'z');",
        "g",
        "upper",
        "app_upper",
    )?;
    let dest = dir.path("out.db");
    let done = recover_partial(&src, &dest)?;
    let g = crate::table(&done, "g");
    assert_eq!(g.status, TableStatus::Recovered, "{g:?}");
    assert!(
        g.reason.as_deref().is_some_and(|r| r.contains("app_upper")),
        "{g:?}"
    );
    crate::assert_signal!(
        done,
        reconstruct::LossSignal::ObjectNotCreated { name, .. } if name == "g"
    );
    let conn = Connection::open(&dest)?;
    let got: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('g')")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    assert_eq!(got, ["a", "b", "d"]);
    let last: String = conn.query_row("SELECT d FROM g WHERE a = 3", [], |r| r.get(0))?;
    assert_eq!(last, "Z");
    assert_eq!(rows(&dest, "g")?, 3);

    let dir = Scratch::new("schema-sql-lacking-collation");
    let src = crafted(
        &dir,
        "CREATE TABLE g(a INTEGER, b TEXT COLLATE NOCASE UNIQUE);
         INSERT INTO g VALUES (1, 'x'), (2, 'y'), (3, 'z');",
        "g",
        "NOCASE",
        "app_collation",
    )?;
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(
        &recovery::RecoverOptions::new(&src, &dest),
        recovery::Outcome::Complete,
    )?;
    assert_eq!(done.report.schema.stand_in_collations, ["app_collation"]);
    let out = Connection::open(&dest)?;
    let sql: String = out.query_row("SELECT sql FROM sqlite_schema WHERE name = 'g'", [], |r| {
        r.get(0)
    })?;
    assert!(sql.contains("COLLATE app_collation"), "{sql}");
    // As the application reads it: with its collation (a count may use the index on it).
    out.create_collation("app_collation", |a: &str, b: &str| a.cmp(b))?;
    let n: i64 = out.query_row("SELECT count(*) FROM g", [], |r| r.get(0))?;
    assert_eq!(n, 3);
    Ok(())
}

/// A STRICT table holding a value of another type than its column's (a damaged serial
/// type, or a crafted file) once made the whole run fail its verification: the value is
/// NULL in the table and kept in `salvage_damaged_fields`, the run verified.
#[test]
fn a_value_a_strict_table_refuses_is_registered() -> TestResult {
    let dir = Scratch::new("schema-sql-strict");
    let src = crafted(
        &dir,
        "CREATE TABLE s(a INTEGER, b TEXT);
         INSERT INTO s VALUES (1, 'x'), (2, 'y'), ('three', 'z');",
        "s",
        "b TEXT)",
        "b TEXT) STRICT",
    )?;
    let dest = dir.path("out.db");
    let done = recover_partial(&src, &dest)?;
    assert!(done.verdict().verified);
    let conn = Connection::open(&dest)?;
    let (col, reason, original): (String, String, String) = conn.query_row(
        "SELECT col, reason, original FROM salvage_damaged_fields",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    assert_eq!(
        (col.as_str(), reason.as_str(), original.as_str()),
        ("a", "strict_type_never_stores", "three")
    );
    assert_eq!(rows(&dest, "s")?, 3);
    Ok(())
}

/// An FTS5 table whose tokenizer this build lacks (an application's own) once failed
/// with its text left only in shadow tables, which then stood in the way of the
/// application making the table again. Its text is kept in a plain table of its columns,
/// under its name and rowids; its shadow tables are not copied; the index not built is
/// loss. Over a content table, only the index is lost. (An FTS3 or FTS4 table gets a
/// stand-in tokenizer instead: `quirks::a_tokenizer_this_build_lacks_gets_a_stand_in_not_loss`;
/// an FTS5 tokenizer is registered through SQLite's C interface only.)
#[test]
fn a_full_text_table_whose_tokenizer_is_missing_keeps_its_text() -> TestResult {
    let notes = "CREATE TABLE notes(id INTEGER PRIMARY KEY, title TEXT, body TEXT);
        WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 300)
        INSERT INTO notes SELECT x, 'title ' || x, 'the body of note ' || x FROM i;";
    let cases = [
        (
            "CREATE VIRTUAL TABLE ft USING fts5(title, body, tokenize = 'porter unicode61');
             INSERT INTO ft(rowid, title, body) SELECT id, title, body FROM notes;",
            "'porter unicode61'",
        ),
        (
            "CREATE VIRTUAL TABLE ft USING fts5(title, body, content='notes', content_rowid='id', tokenize = 'porter');
             INSERT INTO ft(ft) VALUES ('rebuild');",
            "'porter'",
        ),
    ];
    for (i, (fts, tokenizer)) in cases.into_iter().enumerate() {
        let dir = Scratch::new(&format!("schema-sql-tokenizer-{i}"));
        let src = crafted(
            &dir,
            &format!("{notes}{fts}"),
            "ft",
            tokenizer,
            "app_tokenizer",
        )?;
        let dest = dir.path("out.db");
        let done = recover_partial(&src, &dest)?;
        crate::assert_signal!(
            done,
            reconstruct::LossSignal::ObjectNotCreated { name, reason, .. }
                if name == "ft" && reason.contains("app_tokenizer")
        );
        let conn = Connection::open(&dest)?;
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        assert_eq!(rows(&dest, "notes")?, 300);
        if i == 1 {
            assert_eq!(
                tables,
                ["notes"],
                "over a content table, only its index is lost"
            );
            continue;
        }
        assert_eq!(tables, ["ft", "notes"], "no shadow table copied");
        assert_eq!(rows(&dest, "ft")?, 300);
        let (title, body): (String, String) =
            conn.query_row("SELECT title, body FROM ft WHERE rowid = 123", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?;
        assert_eq!(
            (title.as_str(), body.as_str()),
            ("title 123", "the body of note 123")
        );
    }
    Ok(())
}

/// A schema row is replayed only as what it is: a TEMP table's row once sent the rows to a
/// table the end of the run dropped (the output failed verification), and an index row
/// holding a CREATE TRIGGER ended the whole run ("no such index"). The TEMP table is made
/// as a plain table of the database, its rows kept; the row of the wrong kind is refused
/// and reported; the run ends verified.
#[test]
fn a_schema_row_is_replayed_only_as_what_it_is() -> TestResult {
    let setup = "CREATE TABLE t(a INTEGER, b TEXT); CREATE TABLE u(a INTEGER, b TEXT);
        WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 500)
        INSERT INTO t SELECT x, 'v' || x FROM i;
        INSERT INTO u SELECT * FROM t;
        CREATE INDEX ui ON u(b);";
    let cases = [
        ("t", "CREATE TABLE", "CREATE TEMP TABLE", "table definition"),
        (
            "ui",
            "CREATE INDEX ui ON u(b)",
            "CREATE TRIGGER tr AFTER INSERT ON u BEGIN DELETE FROM u; END",
            "index",
        ),
    ];
    for (i, (name, from, to, object)) in cases.into_iter().enumerate() {
        let dir = Scratch::new(&format!("schema-sql-kind-{i}"));
        let src = crafted(&dir, setup, name, from, to)?;
        let dest = dir.path("out.db");
        let done = recover_partial(&src, &dest)?;
        assert!(done.verdict().verified);
        crate::assert_signal!(
            done,
            reconstruct::LossSignal::ObjectNotCreated { object: o, name: n, reason }
                if o == object && n == name && reason.contains("refused, not run")
        );
        assert_eq!((rows(&dest, "t")?, rows(&dest, "u")?), (500, 500));
        let triggers: i64 = Connection::open(&dest)?.query_row(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'trigger'",
            [],
            |r| r.get(0),
        )?;
        assert_eq!(triggers, 0);
    }
    Ok(())
}
