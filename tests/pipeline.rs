//! The recovery library in-process: a run observed stage by stage, a run stopped after its
//! plan, the typed outcome against the report file, refusals as typed errors.

use std::sync::Mutex;

use fixtures::Damage;
use recovery::stages::evidence::{Evidence, EvidenceFiles};
use recovery::stages::plan::SchemaPlan;
use recovery::stages::request::Request;
use recovery::{Background, LossSignal, Observer, Outcome, RecoverOptions, Stage, TableStatus};

use crate::recover::case;
use crate::TestResult;

/// Records what a run tells its observer.
#[derive(Default)]
struct Recorder {
    stages: Mutex<Vec<String>>,
    finished: Mutex<Vec<Background>>,
    done: Mutex<u32>,
}

impl Observer for Recorder {
    fn stage(&self, stage: Stage<'_>) {
        self.stages.lock().unwrap().push(stage.to_string());
    }
    fn finished(&self, work: Background) {
        self.finished.lock().unwrap().push(work);
    }
    fn done(&self) {
        *self.done.lock().unwrap() += 1;
    }
}

#[test]
fn a_run_is_observed_stage_by_stage_and_its_outcome_is_the_report_it_wrote() -> TestResult {
    let c = case("pipeline-observed", "agent-4096-utf8", |f| {
        vec![Damage::ZeroPage(f.roots["sessions"])]
    });
    let mut options = RecoverOptions::new(&c.src, &c.dest);
    options.allow_partial = true;
    let observer = Recorder::default();
    let done = recovery::recover(&options, &observer)?;
    assert_eq!(done.outcome, Outcome::PartialCommitted);

    let stages = observer.stages.into_inner()?;
    let at = |s: &str| stages.iter().position(|x| x == s);
    assert!(at("recovering `messages`").is_some(), "{stages:?}");
    // Partial rows before placeholders, indexes before both, verification last.
    assert!(at("re-creating indexes") < at("rebuilding lost parent rows"));
    assert!(at("re-creating views") < at("re-creating triggers"));
    assert_eq!(
        stages.last().map(String::as_str),
        Some("verifying the output")
    );
    let mut finished = observer.finished.into_inner()?;
    finished.sort_by_key(|b| format!("{b:?}"));
    assert_eq!(
        finished,
        [
            Background::FirstHash,
            Background::LossBounds,
            Background::SecondHash,
            Background::Survey
        ]
    );
    assert_eq!(observer.done.into_inner()?, 1);

    // The outcome is typed, and it is what the report file says.
    let sessions = done.table("sessions").ok_or("sessions")?;
    // Not one `sessions` row could be read: the table is lost, whatever was rebuilt in it.
    assert_eq!(sessions.status, TableStatus::Lost);
    assert_eq!(sessions.rows_written, 0);
    assert_eq!(sessions.placeholders, 12);
    assert!(done.signals().contains(&LossSignal::RootUnreadable {
        table: "sessions".into()
    }));
    let written: recovery::report::LossReport =
        serde_json::from_slice(&std::fs::read(&done.paths.report)?)?;
    assert_eq!(
        serde_json::to_value(&written)?,
        serde_json::to_value(&done.report)?
    );
    assert_eq!(written.evidence.loss.len(), written.evidence.signals.len());
    Ok(())
}

/// A run can stop after any stage: here after the plan, with every schema table's
/// disposition decided and the output holding the tables, but no row.
#[test]
fn a_run_stopped_after_its_plan_has_its_tables_and_no_rows() -> TestResult {
    let dir = crate::Scratch::new("pipeline-plan");
    let src = dir.path("notes.db");
    let conn = rusqlite::Connection::open(&src)?;
    conn.execute_batch(
        "CREATE TABLE notes(id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT);
         CREATE VIRTUAL TABLE notes_fts USING fts5(body);
         INSERT INTO notes(body) VALUES ('one'), ('two');
         INSERT INTO notes_fts(body) SELECT body FROM notes;",
    )?;
    drop(conn);
    let request = Request::check(&RecoverOptions::new(&src, dir.path("out.db")))?;
    let files = EvidenceFiles::open(&request.paths)?;
    let mut evidence = Evidence::open(&files, &request.paths)?;
    evidence.read_schema();
    let plan = SchemaPlan::make(&evidence, &request.paths)?;
    let status = |name: &str| plan.tables.named(name).map(|t| t.status);
    assert_eq!(status("notes"), Some(TableStatus::Recovered));
    assert_eq!(status("sqlite_sequence"), Some(TableStatus::Skipped));
    // The full-text table is re-created; its shadow tables are left to it.
    assert_eq!(status("notes_fts"), Some(TableStatus::Skipped));
    assert_eq!(status("notes_fts_content"), Some(TableStatus::Skipped));
    assert!(plan.ledger.virtual_table_created("notes_fts"));
    let rows: i64 = plan
        .out
        .conn
        .query_row("SELECT count(*) FROM notes", [], |r| r.get(0))?;
    assert_eq!(rows, 0);
    assert!(request.paths.incomplete.exists());
    assert!(!request.paths.dest.exists());
    Ok(())
}

/// A request the library refuses is a typed error, and nothing is created.
#[test]
fn refusals_are_typed_and_create_nothing() -> TestResult {
    let c = case("pipeline-refused", "agent-4096-utf8", |_| vec![]);
    std::fs::write(&c.dest, b"not mine")?;
    let err = recovery::recover(&RecoverOptions::new(&c.src, &c.dest), &recovery::Quiet)
        .err()
        .ok_or("an existing destination must be refused")?;
    assert!(matches!(err, recovery::Error::Refused { .. }), "{err:?}");
    assert!(err.is_refusal());
    assert_eq!(std::fs::read(&c.dest)?, b"not mine");
    assert_eq!(c.dir.listing(), ["evidence.db", "out.db"]);

    let mut options = RecoverOptions::new(&c.src, c.dir.path("other.db"));
    options.profile = recovery::ProfileChoice::File(c.dir.path("no-such-profile.json"));
    let err = recovery::recover(&options, &recovery::Quiet)
        .err()
        .ok_or("a missing profile file must be refused")?;
    assert!(
        matches!(err, recovery::Error::InvalidProfile { .. }),
        "{err:?}"
    );
    assert_eq!(c.dir.listing(), ["evidence.db", "out.db"]);
    Ok(())
}
