//! The evidence file changes under the run, or is mostly empty. It is read through a
//! memory map: a file cut short while it is read (by another process, a failing disk or
//! share) once ended `recover` and `inspect` with SIGBUS and no message; now the pages past
//! its new end read as zeros and the run ends in a clear error, nothing committed. A file
//! padded with zeros is one run of pages in the reports. The output and its report are
//! put in place together or not at all, and a run stopped by a signal says what is left.

use std::sync::atomic::{AtomicBool, Ordering};

use recovery::{Error, Observer, Outcome, RecoverOptions, Stage};

use crate::{Scratch, TestResult};

/// A test step's result with a value.
type Got<T> = Result<T, Box<dyn std::error::Error>>;

/// The agent store at `dir/src.db`.
fn source(dir: &Scratch) -> Got<std::path::PathBuf> {
    let src = dir.path("src.db");
    let fixture = fixtures::build_named("agent-4096-utf8").ok_or("the fixture")?;
    std::fs::write(&src, &fixture.bytes)?;
    Ok(src)
}

/// Sets the length of the file at `path`, as another process might.
fn resize(path: &std::path::Path, len: u64) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)?
        .set_len(len)
}

/// Cuts the source to one page when the first table's rows are about to be read.
struct CutShort {
    path: std::path::PathBuf,
    done: AtomicBool,
}

impl Observer for CutShort {
    fn stage(&self, stage: Stage<'_>) {
        if matches!(stage, Stage::Recovering { .. }) && !self.done.swap(true, Ordering::SeqCst) {
            resize(&self.path, 4096).expect("the cut");
        }
    }
}

#[test]
fn a_source_cut_short_during_recover_is_an_error_not_a_signal() -> TestResult {
    let dir = Scratch::new("shrinking-recover");
    let src = source(&dir)?;
    let dest = dir.path("out.db");
    let observer = CutShort {
        path: src.clone(),
        done: AtomicBool::new(false),
    };
    let result = recovery::recover(&RecoverOptions::new(&src, &dest), &observer);
    assert!(observer.done.load(Ordering::SeqCst));
    // The run is over, its output kept as `.incomplete` and not committed (the binary's
    // exit 1), the report saying that the source changed.
    match result {
        Ok(done) => assert_eq!(
            done.outcome,
            Outcome::NotVerified {
                source_changed: true
            }
        ),
        Err(Error::VerificationFailed { source_changed, .. }) => assert!(source_changed),
        Err(e) => panic!("{e}"),
    }
    assert!(!dest.exists(), "nothing is committed");
    Ok(())
}

#[test]
fn a_source_cut_short_during_inspect_is_an_error_not_a_signal() -> TestResult {
    let dir = Scratch::new("shrinking-inspect");
    let src = source(&dir)?;
    let source = recovery::evidence::source::Source::open(&src)?;
    resize(&src, 4096)?;
    let error = recovery::inspect::inspect(&source, false)
        .err()
        .ok_or("inspect gave a report")?;
    assert!(error.to_string().contains("shrank"), "{error}");
    assert!(source.shrank());
    Ok(())
}

/// A small database padded to 256 MiB with zeros (a sparse file: no disk is used) is
/// one run of zeroed pages in the reports, not 65,000 entries (at 100 GiB
/// the listing once took 10 GB of memory and 3.4 GB of JSON).
#[test]
fn a_file_padded_with_zeros_is_one_run_of_pages() -> TestResult {
    let dir = Scratch::new("padded-zeros");
    let src = source(&dir)?;
    resize(&src, 1 << 28)?;
    let report = recovery::inspect::inspect_file(&src, false)?;
    let zeroed: Vec<_> = report
        .damaged_pages
        .iter()
        .filter(|p| p.class == "zeroed")
        .collect();
    assert!(zeroed.len() <= 2, "{}", zeroed.len());
    assert!(report.verdict.damaged_page_count >= (1 << 16) - 300);
    let json = serde_json::to_string(&report)?;
    assert!(json.len() < 64 << 10, "{} bytes of JSON", json.len());
    Ok(())
}

/// Creates a file at the report's path when the output is being checked, as another
/// process might.
struct TakesTheReportPath {
    path: std::path::PathBuf,
}

impl Observer for TakesTheReportPath {
    fn stage(&self, stage: Stage<'_>) {
        if matches!(stage, Stage::Verifying) {
            std::fs::write(&self.path, b"someone else's").expect("the other file");
        }
    }
}

/// The output and its report are put in place together or not at all: when the report
/// cannot be placed (here its path was taken during the run), the output is not committed
/// either (the report was once written after the commit, so the run failed with DEST
/// already in place), and the other file is left as it was.
#[test]
fn the_output_is_not_committed_without_its_report() -> TestResult {
    let dir = Scratch::new("report-or-nothing");
    let src = source(&dir)?;
    let dest = dir.path("out.db");
    let report = dir.path("out.db.report.json");
    let observer = TakesTheReportPath {
        path: report.clone(),
    };
    let result = recovery::recover(&RecoverOptions::new(&src, &dest), &observer);
    assert!(
        matches!(result, Err(Error::Output(_))),
        "{:?}",
        result.map(|r| r.outcome)
    );
    assert!(!dest.exists(), "committed without its report");
    assert_eq!(std::fs::read(&report)?, b"someone else's");
    assert_eq!(
        dir.listing(),
        vec!["out.db.incomplete", "out.db.report.json", "src.db"]
    );
    Ok(())
}

/// SIGTERM (or Ctrl-C) during a run: one line says what is left and how to go on, the run
/// ends with 130, nothing is committed and no report written, the source unchanged, the
/// partial output left as `DEST.incomplete` (once a bare kill with no word).
#[test]
fn a_run_stopped_by_a_signal_says_what_is_left() -> TestResult {
    let dir = Scratch::new("stopped");
    let src = dir.path("src.db");
    fixtures::write_agent_store(&src, 24 << 20, 7)?;
    let before = std::fs::read(&src)?;
    let dest = dir.path("out.db");
    let incomplete = dir.path("out.db.incomplete");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_salvage"))
        .args([std::ffi::OsStr::new("recover"), src.as_os_str()])
        .args([std::ffi::OsStr::new("-o"), dest.as_os_str()])
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    // The output is begun after the handler is in place: then the run is stopped.
    let started = std::time::Instant::now();
    while !incomplete.exists() && started.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()?;
    let out = child.wait_with_output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("stopped"), "{stderr}");
    assert!(stderr.contains("out.db.incomplete"), "{stderr}");
    assert!(!dest.exists() && incomplete.exists());
    assert!(!dir.path("out.db.report.json").exists());
    assert!(std::fs::read(&src)? == before, "the source changed");
    Ok(())
}
