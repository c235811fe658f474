//! SQLite is the oracle where it has an answer: a file its own `PRAGMA integrity_check`
//! calls malformed is never recovered "complete", nor inspected "healthy", without a
//! finding or a sign of loss that explains it; a file it calls `ok` checks `ok` here too.

use rusqlite::Connection;

use crate::{assert_signal, recover_in_process, Scratch, TestResult};
use recovery::report::SqliteCheckState;
use recovery::{LossSignal, Outcome, RecoverOptions};

/// Two tables of one shape, each with a unique index on its names, their root pages then
/// swapped in `sqlite_schema` at byte level: every row's bytes are intact and each tree
/// reads as the other table's, but every index entry names a row the table does not hold.
fn swapped(dir: &Scratch) -> Result<std::path::PathBuf, Box<dyn std::error::Error>> {
    let path = dir.path("swapped.db");
    {
        let conn = Connection::open(&path)?;
        conn.execute_batch(
            "CREATE TABLE inbox(id INTEGER PRIMARY KEY, subject TEXT UNIQUE);
             CREATE TABLE outbox(id INTEGER PRIMARY KEY, subject TEXT UNIQUE);",
        )?;
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

#[test]
fn roots_swapped_between_same_shaped_tables_are_never_complete() -> TestResult {
    let dir = Scratch::new("oracle-swapped");
    let src = swapped(&dir)?;
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
