//! SQLite is the oracle where it has an answer: a file its own `PRAGMA integrity_check`
//! calls malformed is never recovered "complete", nor inspected "healthy", without a
//! finding or a sign of loss that explains it; a file it calls `ok` checks `ok` here too.

use rusqlite::Connection;

use crate::{allow_partial, assert_signal, recover_in_process, Scratch, TestResult};
use recovery::report::SqliteCheckState;
use recovery::{LossSignal, Outcome, RecoverOptions};

/// Two tables of one shape, `inbox` with a unique index on its subjects (and `outbox` too
/// when `both_indexed`), their root pages then swapped in `sqlite_schema` at byte level:
/// every row's bytes are intact and each tree reads as the other table's, but every index
/// entry names a row the table does not hold.
fn swapped(
    dir: &Scratch,
    both_indexed: bool,
) -> Result<std::path::PathBuf, Box<dyn std::error::Error>> {
    let path = dir.path("swapped.db");
    {
        let conn = Connection::open(&path)?;
        conn.execute_batch(&format!(
            "CREATE TABLE inbox(id INTEGER PRIMARY KEY, subject TEXT UNIQUE);
             CREATE TABLE outbox(id INTEGER PRIMARY KEY, subject TEXT{});",
            if both_indexed { " UNIQUE" } else { "" }
        ))?;
        for i in 1..=40 {
            conn.execute(
                "INSERT INTO inbox VALUES (?1, ?2)",
                (i, format!("received {i}")),
            )?;
            conn.execute(
                "INSERT INTO outbox VALUES (?1, ?2)",
                (i, format!("sent {i}")),
            )?;
        }
    }
    let mut bytes = std::fs::read(&path)?;
    fixtures::apply(
        &mut bytes,
        &fixtures::Damage::RootPagesSwapped {
            a: "inbox".into(),
            b: "outbox".into(),
        },
    )?;
    std::fs::write(&path, &bytes)?;
    Ok(path)
}

/// The subjects a table of `swapped`'s output holds, in rowid order.
fn subjects(db: &std::path::Path, table: &str) -> rusqlite::Result<Vec<String>> {
    let conn = Connection::open(db)?;
    let mut stmt = conn.prepare(&format!("SELECT subject FROM {table} ORDER BY id"))?;
    let rows = stmt.query_map([], |r| r.get(0))?.collect();
    rows
}

/// The records cannot tell two same-shaped tables' trees apart; their unique indexes can:
/// each tree goes back to the table whose index holds its rows, said as a moved tree with
/// the index entries that decided.
#[test]
fn roots_swapped_between_same_shaped_tables_go_back_by_their_indexes() -> TestResult {
    let dir = Scratch::new("oracle-swapped-back");
    let src = swapped(&dir, true)?;
    let dest = dir.path("out.db");
    let options = RecoverOptions {
        allow_partial: true,
        ..RecoverOptions::new(&src, &dest)
    };
    let done = recover_in_process(&options, Outcome::PartialCommitted)?;
    let received: Vec<String> = (1..=40).map(|i| format!("received {i}")).collect();
    let sent: Vec<String> = (1..=40).map(|i| format!("sent {i}")).collect();
    assert_eq!(subjects(&dest, "inbox")?, received);
    assert_eq!(subjects(&dest, "outbox")?, sent);
    for (table, named_by) in [("inbox", "outbox"), ("outbox", "inbox")] {
        assert_signal!(done, LossSignal::TreeMoved { table: t, named_by: n, by_index: Some([looked_up, held, 0]), .. }
            if t == table && n == named_by && looked_up == held && *held >= 4);
    }
    Ok(())
}

/// With one table's index alone, the evidence cannot say where the other's rows are: the
/// trees stay as named, and SQLite's check, which finds the index contradicted, keeps the
/// recovery from being called complete.
#[test]
fn roots_swapped_between_same_shaped_tables_are_never_complete() -> TestResult {
    let dir = Scratch::new("oracle-swapped");
    let src = swapped(&dir, false)?;
    let options = RecoverOptions {
        allow_partial: true,
        ..RecoverOptions::new(&src, dir.path("out.db"))
    };
    let done = recover_in_process(&options, Outcome::PartialCommitted)?;
    let check = &done.report.source.sqlite_check;
    assert_eq!(check.state, SqliteCheckState::Problems, "{check:?}");
    assert!(
        check
            .problems
            .iter()
            .any(|p| p.contains("missing from index")),
        "{check:?}"
    );
    assert_signal!(done, LossSignal::SqliteCheckUnexplained { problems, .. } if *problems > 0);
    // The rows SQLite's check names are looked up in the source's index after the loss
    // bounds: the source is hashed again after that.
    let told = crate::Told::default();
    let again = RecoverOptions {
        allow_partial: true,
        ..RecoverOptions::new(&src, dir.path("again.db"))
    };
    recovery::recover(&again, &told)?;
    told.second_hash_after_the_last_read("named rows");
    let inspected = recovery::inspect::inspect_file_with(&src, false, true)?;
    assert!(!inspected.verdict.healthy, "{}", inspected.verdict.summary);
    // The audit names it as a contradiction SQLite never writes.
    let audit = inspected.audit.as_deref().unwrap_or_default();
    assert!(
        audit
            .iter()
            .any(|c| c.kind == "sqlite_check" && c.severity == reconstruct::Severity::High),
        "{audit:?}"
    );
    assert!(
        inspected
            .verdict
            .summary
            .contains("SQLite's own integrity check"),
        "{}",
        inspected.verdict.summary
    );
    Ok(())
}

#[test]
fn a_healthy_file_checks_ok_in_the_recovery_and_the_inspection() -> TestResult {
    let dir = Scratch::new("oracle-healthy");
    let src = dir.path("healthy.db");
    std::fs::write(
        &src,
        &fixtures::build(fixtures::Kind::AgentStore, &fixtures::Options::default()).bytes,
    )?;
    let done = recover_in_process(
        &RecoverOptions::new(&src, dir.path("out.db")),
        Outcome::Complete,
    )?;
    assert_eq!(done.report.source.sqlite_check.state, SqliteCheckState::Ok);
    let inspected = recovery::inspect::inspect_file(&src, false)?;
    assert!(inspected.verdict.healthy, "{}", inspected.verdict.summary);
    assert_eq!(inspected.sqlite_check.state, SqliteCheckState::Ok);
    Ok(())
}

/// Two tables of one shape lose their roots: their leaves' records fit both, and no
/// pointer, key range or index says whose they are. Every such row goes to
/// `lost_and_found`, never into one of the tables, and the report names both candidates.
#[test]
fn rows_no_evidence_decides_name_every_candidate_table() -> TestResult {
    let dir = Scratch::new("oracle-candidates");
    let src = dir.path("mail.db");
    let roots: Vec<u32> = {
        let conn = Connection::open(&src)?;
        conn.execute_batch(
            "PRAGMA page_size = 1024;
             CREATE TABLE drafts(id INTEGER PRIMARY KEY, body TEXT);
             CREATE TABLE sent(id INTEGER PRIMARY KEY, body TEXT);",
        )?;
        for i in 1..=150 {
            let body = format!("message {i} {}", "x".repeat(40));
            conn.execute("INSERT INTO drafts VALUES (?1, ?2)", (i, &body))?;
            conn.execute("INSERT INTO sent VALUES (?1, ?2)", (i, &body))?;
        }
        let mut stmt = conn.prepare("SELECT rootpage FROM sqlite_schema ORDER BY name")?;
        let roots = stmt
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        roots
    };
    let mut bytes = std::fs::read(&src)?;
    for root in &roots {
        fixtures::apply(&mut bytes, &fixtures::Damage::ZeroPage(*root))?;
    }
    std::fs::write(&src, &bytes)?;
    let options = RecoverOptions {
        allow_partial: true,
        ..RecoverOptions::new(&src, dir.path("out.db"))
    };
    let done = recover_in_process(&options, Outcome::PartialCommitted)?;
    let groups = &done.report.lost_and_found.groups;
    assert!(!groups.is_empty(), "{:?}", done.report.lost_and_found);
    for g in groups {
        assert!(
            g.evidence
                .iter()
                .any(|e| e.contains("`drafts`") && e.contains("`sent`")),
            "{g:?}"
        );
    }
    for table in ["drafts", "sent"] {
        assert_eq!(
            crate::table(&done, table).rows_in_output,
            Some(0),
            "{table}"
        );
    }
    Ok(())
}

/// A header whose page count is larger than the file, where nothing points past the file's
/// end: SQLite, which trusts the count, calls the file malformed, but no page is missing.
/// The recovery is complete, every row there, and the report says why SQLite disagrees (a
/// finding of the header, and a warning); a pointer past the end is what makes it loss.
#[test]
fn a_header_counting_more_pages_than_the_file_loses_nothing_by_itself() -> TestResult {
    let dir = Scratch::new("oracle-header-count");
    let src = dir.path("healthy.db");
    let fixture = fixtures::build(fixtures::Kind::AgentStore, &fixtures::Options::default());
    let mut bytes = fixture.bytes.clone();
    let pages = u32::try_from(bytes.len() / 4096)?;
    fixtures::apply(
        &mut bytes,
        &fixtures::Damage::HeaderDatabaseSize(pages + 25),
    )?;
    std::fs::write(&src, &bytes)?;
    let done = recover_in_process(
        &RecoverOptions::new(&src, dir.path("out.db")),
        Outcome::Complete,
    )?;
    assert_eq!(
        done.report.source.sqlite_check.state,
        SqliteCheckState::Problems
    );
    assert!(done.report.geometry.findings.count > 0);
    assert!(
        done.report
            .warnings
            .iter()
            .any(|w| w.contains("no pointer of the file reaches past its end")),
        "{:?}",
        done.report.warnings
    );
    for t in &fixture.tables {
        let row = crate::table(&done, &t.name);
        assert_eq!(row.rows_in_output, Some(t.rows.len() as u64), "{}", t.name);
    }
    Ok(())
}

/// Rows that fail their table's CHECK constraint, as the file holds them (written with
/// the checks off, as a program or a SQLite judging `json_valid` otherwise can): every page
/// reads whole, SQLite's check says "CHECK constraint failed". The rows are found by the
/// constraints' own expressions and named, by rowid; every row is recovered as SQLite
/// reads it, and the run is complete. `inspect` does not call the file healthy, and says
/// why in the same words.
#[test]
fn rows_failing_a_check_constraint_are_named_and_recovered_as_read() -> TestResult {
    let dir = Scratch::new("oracle-check");
    let src = dir.path("checked.db");
    {
        let conn = Connection::open(&src)?;
        conn.execute_batch(
            "PRAGMA ignore_check_constraints = 1;
             CREATE TABLE notes(id INTEGER PRIMARY KEY, stars INT CHECK (stars BETWEEN 1 AND 5),
                 doc TEXT, CONSTRAINT doc_json CHECK (json_valid(doc)));
             CREATE TABLE \"odd \"\"name\"(\"check\" TEXT, rowid TEXT, CHECK(\"check\" <> 'x'));
             CREATE TABLE tags(tag TEXT PRIMARY KEY CHECK (length(tag) <= 8)) WITHOUT ROWID;
             CREATE TABLE fine(a INT CHECK (a > 0));
             CREATE INDEX notes_stars ON notes(stars);",
        )?;
        for i in 1..=30 {
            let stars = if i % 10 == 2 { 9 } else { 1 + i % 5 };
            let doc = if i == 7 {
                "{broken".to_string()
            } else {
                format!("{{\"n\":{i}}}")
            };
            conn.execute("INSERT INTO notes VALUES (?1, ?2, ?3)", (i, stars, doc))?;
            conn.execute("INSERT INTO fine VALUES (?1)", [i])?;
        }
        conn.execute_batch(
            "INSERT INTO \"odd \"\"name\" VALUES ('y', 'r1'), ('x', 'r2'), (NULL, 'r3');
             INSERT INTO tags VALUES ('short'), ('much too long'), ('ok');",
        )?;
    }
    let dest = dir.path("out.db");
    let done = recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Complete)?;
    let check = &done.report.source.sqlite_check;
    assert_eq!(check.state, SqliteCheckState::Problems, "{check:?}");
    let failing = |table: &str, rows, rowids: &[i64]| reconstruct::FailingCheck {
        table: table.into(),
        rows,
        rowids: rowids.to_vec(),
    };
    assert_eq!(
        check.failing_checks,
        [
            failing("notes", 4, &[2, 7, 12, 22]),
            failing("odd \"name", 1, &[2]),
            failing("tags", 1, &[]),
        ]
    );
    for (table, keyed) in [("notes", false), ("tags", true), ("fine", false)] {
        assert_eq!(
            crate::recover::rows_of(&dest, table, keyed),
            crate::recover::rows_of(&src, table, keyed),
            "{table}"
        );
    }
    // Its column `rowid` hides the rowid's first name.
    let odd = |db: &std::path::Path| -> rusqlite::Result<Vec<(i64, Option<String>, String)>> {
        let conn = Connection::open(db)?;
        let mut stmt =
            conn.prepare("SELECT _rowid_, \"check\", rowid FROM \"odd \"\"name\" ORDER BY 1")?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect();
        rows
    };
    assert_eq!(odd(&dest)?, odd(&src)?);
    assert!(
        done.report.warnings.iter().any(|w| w.starts_with(
            "4 rows of `notes` fail one of its CHECK constraints (rowids 2, 7, 12, 22)"
        )),
        "{:?}",
        done.report.warnings
    );
    let inspected = recovery::inspect::inspect_file_with(&src, false, true)?;
    assert!(!inspected.verdict.healthy);
    assert!(
        inspected
            .verdict
            .summary
            .starts_with("not healthy by SQLite's check")
            && inspected
                .verdict
                .summary
                .contains("1 row of `tags` fails one of its CHECK constraints"),
        "{}",
        inspected.verdict.summary
    );
    let audit = inspected.audit.as_deref().unwrap_or_default();
    assert!(audit.iter().all(|c| c.kind != "sqlite_check"), "{audit:?}");
    assert_eq!(
        audit.iter().filter(|c| c.kind == "rows_fail_check").count(),
        3,
        "{audit:?}"
    );
    Ok(())
}

/// SQLite lists a row's failing CHECK before the row's index entries, a line each: with
/// a thousand rows failing, its usual list holds nothing else. The check is then run whole:
/// a CHECK ending in a `--` comment finds all 1,200 (as many as SQLite lists), and an
/// index whose entries contradict its table, in another table checked after, still keeps
/// the run from being complete.
#[test]
fn a_thousand_rows_failing_a_check_hide_no_other_problem() -> TestResult {
    let dir = Scratch::new("oracle-check-many");
    let make = |path: &std::path::Path, index_lies: bool| -> rusqlite::Result<()> {
        let conn = Connection::open(path)?;
        // `b` first: SQLite checks the table made last first.
        conn.execute_batch(
            "PRAGMA ignore_check_constraints = 1;
             CREATE TABLE b(x); CREATE INDEX bi ON b(x); INSERT INTO b VALUES (1), (2), (3);
             CREATE TABLE many(id INTEGER PRIMARY KEY, n INT CHECK (n < 0 -- negative
             ));
             WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 1200)
             INSERT INTO many SELECT i, i FROM r;",
        )?;
        if index_lies {
            conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_DEFENSIVE, false)?;
            conn.execute_batch(
                "PRAGMA writable_schema = ON;
                 UPDATE sqlite_schema SET sql = 'CREATE INDEX bi ON b(x + 1)' WHERE name = 'bi';",
            )?;
        }
        Ok(())
    };
    let src = dir.path("many.db");
    make(&src, false)?;
    let done = recover_in_process(
        &RecoverOptions::new(&src, dir.path("out.db")),
        Outcome::Complete,
    )?;
    let check = &done.report.source.sqlite_check;
    let first: Vec<i64> = (1..=20).collect();
    assert_eq!(
        check.failing_checks,
        [reconstruct::FailingCheck {
            table: "many".into(),
            rows: 1200,
            rowids: first
        }]
    );
    assert_eq!(check.problems.len(), 1000, "the report keeps a thousand");

    let lying = dir.path("lying.db");
    make(&lying, true)?;
    let done = recover_in_process(
        &allow_partial(&lying, &dir.path("lying-out.db")),
        Outcome::PartialCommitted,
    )?;
    let check = &done.report.source.sqlite_check;
    assert!(
        check
            .problems
            .iter()
            .any(|p| p == "row 1 missing from index bi"),
        "{:?}",
        &check.problems[..3]
    );
    Ok(())
}

/// SQLite reads a stored statement to its first NUL: a CHECK written past it is none of
/// the table's. Read as one, it would call every row failing (more than SQLite lists),
/// and the rows that do fail would go unexplained.
#[test]
fn a_check_past_a_nul_in_the_statement_is_not_the_tables() -> TestResult {
    let dir = Scratch::new("oracle-check-nul");
    let src = dir.path("nul.db");
    {
        let conn = Connection::open(&src)?;
        conn.execute_batch(
            "PRAGMA ignore_check_constraints = 1;
             CREATE TABLE t(id INTEGER PRIMARY KEY, n INT CHECK (n > 0));
             INSERT INTO t VALUES (1, 5), (2, -1), (3, 7), (4, -2);",
        )?;
        conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_DEFENSIVE, false)?;
        conn.execute_batch(
            "PRAGMA writable_schema = ON;
             UPDATE sqlite_schema SET sql = sql || char(0) || '(CHECK (0))' WHERE name = 't';",
        )?;
    }
    let done = recover_in_process(
        &RecoverOptions::new(&src, dir.path("out.db")),
        Outcome::Complete,
    )?;
    assert_eq!(
        done.report.source.sqlite_check.failing_checks,
        [reconstruct::FailingCheck {
            table: "t".into(),
            rows: 2,
            rowids: vec![2, 4]
        }]
    );
    Ok(())
}
