//! The native half of the Python package `salvage`: the recovery library's inspection,
//! recovery and Chroma export, called in-process. Each gives JSON text, so that the
//! Python half (`salvage/__init__.py`) owns the types people use; the interpreter is
//! released while a run works, so other Python threads go on.

use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::Mutex;
use std::thread::JoinHandle;

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use recovery::{Outcome, RecoverOptions, Recovery};

// Named as Python code imports them (`salvage.SalvageError`), not by the native module.
pyo3::create_exception!(
    salvage,
    SalvageError,
    PyException,
    "A run could not start or go on."
);
pyo3::create_exception!(
    salvage,
    Refused,
    SalvageError,
    "The request was refused before anything was created."
);

/// The library's error as a Python exception, with its hint: in the message, and as the
/// exception's `hint` attribute (`None` without one), which pickles with it.
fn raise(e: &recovery::Error) -> PyErr {
    let hint = e.hint();
    let text = match &hint {
        Some(hint) => format!("{e} (hint: {hint})"),
        None => e.to_string(),
    };
    let err = if e.is_refusal() {
        Refused::new_err(text)
    } else {
        SalvageError::new_err(text)
    };
    let path = match e {
        recovery::Error::Source { path, .. }
        | recovery::Error::NotAFile { path, .. }
        | recovery::Error::NotADatabase { path, .. }
        | recovery::Error::Write { path, .. } => Some(path.display().to_string()),
        recovery::Error::VerificationFailed { incomplete, .. } => {
            Some(incomplete.display().to_string())
        }
        _ => None,
    };
    Python::attach(|py| {
        let _ = err.value(py).setattr("hint", hint);
        let _ = err.value(py).setattr("path", path);
    });
    err
}

/// A run's observer for Python: each stage and count given to the caller's `progress`
/// callable as a dict, and the interpreter's signals (Ctrl-C, `_thread.interrupt_main`)
/// looked at on the run's main thread at each stage and every few hundred pages. A
/// signal's exception, or one the callable raises, stops the run (nothing committed),
/// and is raised when it has stopped.
struct Watch {
    progress: Option<Py<PyAny>>,
    raised: Mutex<Option<PyErr>>,
}

impl Watch {
    fn new(progress: Option<Py<PyAny>>) -> Watch {
        Watch {
            progress,
            raised: Mutex::new(None),
        }
    }

    fn keep(&self, err: PyErr) {
        if let Ok(mut raised) = self.raised.lock() {
            raised.get_or_insert(err);
        }
    }

    /// Gives the callable one event, built under the interpreter's lock.
    fn tell(&self, event: impl FnOnce(Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>>) {
        let Some(callable) = &self.progress else {
            return;
        };
        Python::attach(|py| {
            if let Err(e) = event(py).and_then(|d| callable.call1(py, (d,))) {
                self.keep(e);
            }
        });
    }

    /// The exception that stopped the run, if one did.
    fn raised(&self) -> Option<PyErr> {
        self.raised.lock().ok().and_then(|mut r| r.take())
    }
}

impl recovery::Observer for Watch {
    fn stage(&self, stage: recovery::Stage<'_>) {
        let text = stage.to_string();
        self.tell(|py| {
            let d = pyo3::types::PyDict::new(py);
            d.set_item("kind", "stage")?;
            d.set_item("stage", text)?;
            Ok(d)
        });
    }

    fn progress(&self, progress: recovery::Progress) {
        self.tell(|py| {
            let d = pyo3::types::PyDict::new(py);
            match progress {
                recovery::Progress::Surveyed { steps, of } => {
                    d.set_item("kind", "surveyed")?;
                    d.set_item("steps", steps)?;
                    d.set_item("of", of)?;
                }
                recovery::Progress::Read { pages, of, rows } => {
                    d.set_item("kind", "read")?;
                    d.set_item("pages", pages)?;
                    d.set_item("of", of)?;
                    d.set_item("rows", rows)?;
                }
                _ => d.set_item("kind", "other")?,
            }
            Ok(d)
        });
    }

    fn finished(&self, work: recovery::Background) {
        let text = work.to_string();
        self.tell(|py| {
            let d = pyo3::types::PyDict::new(py);
            d.set_item("kind", "finished")?;
            d.set_item("work", text)?;
            Ok(d)
        });
    }

    fn go_on(&self) -> bool {
        if self.raised.lock().map_or(true, |r| r.is_some()) {
            return false;
        }
        match Python::attach(|py| py.check_signals()) {
            Ok(()) => true,
            Err(e) => {
                self.keep(e);
                false
            }
        }
    }
}

/// JSON text of `value`.
fn json(value: &impl serde::Serialize) -> PyResult<String> {
    serde_json::to_string(value).map_err(|e| SalvageError::new_err(e.to_string()))
}

/// Inspects a database file read-only: the JSON of `salvage inspect --json`.
#[pyfunction]
#[pyo3(signature = (path, sha256 = false))]
fn inspect(py: Python<'_>, path: PathBuf, sha256: bool) -> PyResult<String> {
    let report = py
        .detach(|| recovery::inspect::inspect_file(&path, sha256))
        .map_err(|e| raise(&e))?;
    json(&report)
}

/// Recovers `src` into `dest`: how it ended (`complete`, `partial_committed`,
/// `withheld`, `not_verified`), the loss report's JSON, and where the report and a
/// withheld output are. `progress`, a callable, is given each stage and count as a
/// dict; a signal (Ctrl-C) stops the run with nothing committed and is raised.
#[pyfunction]
#[pyo3(signature = (src, dest, report = None, allow_partial = false, profile = "auto", carve = false, history = false, as_of = None, case = None, examiner = None, progress = None, provenance = false))]
#[allow(clippy::too_many_arguments)]
fn recover(
    py: Python<'_>,
    src: PathBuf,
    dest: PathBuf,
    report: Option<PathBuf>,
    allow_partial: bool,
    profile: &str,
    carve: bool,
    history: bool,
    as_of: Option<u32>,
    case: Option<String>,
    examiner: Option<String>,
    progress: Option<Py<PyAny>>,
    provenance: bool,
) -> PyResult<(String, String, String, String)> {
    let options = RecoverOptions {
        report,
        allow_partial,
        profile: recovery::ProfileChoice::parse(profile),
        carve,
        history,
        provenance,
        as_of,
        case,
        examiner,
        ..RecoverOptions::new(src, dest)
    };
    let watch = Watch::new(progress);
    let done = py.detach(|| recovery::recover(&options, &watch));
    if let Some(raised) = watch.raised() {
        return Err(raised);
    }
    ended(&done.map_err(|e| raise(&e))?)
}

/// How a run ended (`complete`, `partial_committed`, `withheld`, `not_verified`), its
/// loss report's JSON, and where the report and a withheld output are.
fn ended(done: &Recovery) -> PyResult<(String, String, String, String)> {
    let outcome = match done.outcome {
        Outcome::Complete => "complete",
        Outcome::PartialCommitted => "partial_committed",
        Outcome::Withheld => "withheld",
        _ => "not_verified",
    };
    Ok((
        outcome.to_string(),
        json(&done.report)?,
        done.paths.report.display().to_string(),
        done.paths.incomplete.display().to_string(),
    ))
}

/// Commits a withheld output (`DEST.incomplete`), accepting its loss (`salvage commit`):
/// what [`recover`] gives, of the rewritten report.
#[pyfunction]
#[pyo3(signature = (incomplete, report = None, examiner = None))]
fn commit(
    py: Python<'_>,
    incomplete: PathBuf,
    report: Option<PathBuf>,
    examiner: Option<String>,
) -> PyResult<(String, String, String, String)> {
    let options = recovery::AcceptOptions {
        incomplete,
        report,
        command_line: Vec::new(),
    };
    let done = py
        .detach(|| recovery::accept_by(&options, examiner.as_deref()))
        .map_err(|e| raise(&e))?;
    ended(&done)
}

/// Lines of an export a reader may hold at once: what stays in memory is this many lines,
/// whatever the database's size.
const LINES_AHEAD: usize = 256;

/// A recovered Chroma store's embeddings as JSON lines (the lines of `salvage export`),
/// read as Python asks for them: the store is opened here (an error is raised now, not at
/// the first line), then a thread writes the lines into a channel a few hundred deep.
#[pyfunction]
#[pyo3(signature = (path, collection = None))]
fn export_chroma(py: Python<'_>, path: PathBuf, collection: Option<String>) -> PyResult<Lines> {
    let export = py
        .detach(|| recovery::export::Export::open(&path, collection.as_deref()))
        .map_err(|e| raise(&e))?;
    Ok(Lines::written(false, move |sink| {
        export.write_to(sink).map(|_| ())
    }))
}

/// A timeline of a database's stored times: the CSV records `salvage timeline` writes (the
/// header first), each one item, read as Python asks for them. The database is opened here
/// (an error is raised now).
#[pyfunction]
fn timeline(py: Python<'_>, path: PathBuf) -> PyResult<Lines> {
    let timeline = py
        .detach(|| recovery::export::timeline::Timeline::open(&path))
        .map_err(|e| raise(&e))?;
    Ok(Lines::written(true, move |sink| {
        timeline.write_to(sink).map(|_| ())
    }))
}

/// A scan of folders, files and archives (`salvage scan`): each database's entry as JSON
/// text, one item each, as each database is done (the scan runs on threads of its own;
/// its error, a refusal too, is raised at the iteration that meets it). `OUT/scan.json`
/// holds the summary once the last item is read.
#[pyfunction]
#[pyo3(signature = (sources, out, jobs = 0, allow_partial = false, carve = false, history = false, triage_only = false))]
#[allow(clippy::too_many_arguments)]
fn scan(
    sources: Vec<PathBuf>,
    out: PathBuf,
    jobs: usize,
    allow_partial: bool,
    carve: bool,
    history: bool,
    triage_only: bool,
) -> Lines {
    let options = recovery::scan::ScanOptions {
        sources,
        out,
        jobs,
        allow_partial,
        carve,
        history,
        triage_only,
    };
    Lines::written(false, move |sink| {
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let scanning = std::thread::spawn(move || {
            let entries = Entries(Mutex::new(tx));
            recovery::scan::scan(&options, &entries).map(|_| ())
        });
        for line in rx {
            sink.write_all(line.as_bytes())
                .map_err(recovery::Error::Output)?;
        }
        scanning
            .join()
            .map_err(|_| recovery::Error::Output(std::io::Error::other("the scan panicked")))?
    })
}

/// A scan's phases, one call each, for a cluster to run its tasks where it likes
/// (`salvage.cluster`): the plan, as JSON text (`recovery::scan::ScanPlan`), of a scan
/// of `sources` into `out` (checked, refused before anything is created; archives
/// spooled into `out`, which the workers must see).
#[pyfunction]
#[pyo3(signature = (sources, out, allow_partial = false, carve = false, history = false, triage_only = false))]
fn scan_plan(
    py: Python<'_>,
    sources: Vec<PathBuf>,
    out: PathBuf,
    allow_partial: bool,
    carve: bool,
    history: bool,
    triage_only: bool,
) -> PyResult<String> {
    let options = recovery::scan::ScanOptions {
        sources,
        out,
        jobs: 1,
        allow_partial,
        carve,
        history,
        triage_only,
    };
    let plan = py
        .detach(|| recovery::scan::plan(&options))
        .map_err(|e| raise(&e))?;
    json(&plan)
}

/// One task of a plan: `options` and `task` as the plan's JSON gives them; its result
/// (`recovery::scan::TaskDone`: the entry, and whether an earlier run had it) as JSON.
#[pyfunction]
fn scan_task(py: Python<'_>, options: &str, task: &str) -> PyResult<String> {
    let bad = |e: serde_json::Error| SalvageError::new_err(format!("not a scan's task: {e}"));
    let options: recovery::scan::ScanOptions = serde_json::from_str(options).map_err(bad)?;
    let task: recovery::scan::ScanTask = serde_json::from_str(task).map_err(bad)?;
    let done = py
        .detach(|| recovery::scan::run_task(&options, &task))
        .map_err(|e| raise(&e))?;
    json(&done)
}

/// The summary of a plan whose tasks are done (each task's JSON result), written into
/// `OUT/scan.json` and `scan.csv`, and returned as JSON.
#[pyfunction]
fn scan_finish(py: Python<'_>, plan: &str, done: Vec<String>) -> PyResult<String> {
    let bad =
        |e: serde_json::Error| SalvageError::new_err(format!("not a scan's plan or result: {e}"));
    let plan: recovery::scan::ScanPlan = serde_json::from_str(plan).map_err(bad)?;
    let done = done
        .iter()
        .map(|d| serde_json::from_str::<recovery::scan::TaskDone>(d))
        .collect::<Result<Vec<_>, _>>()
        .map_err(bad)?;
    let summary = py
        .detach(|| recovery::scan::finish(&plan, done))
        .map_err(|e| raise(&e))?;
    json(&summary)
}

/// The scan's observer: each entry done, as a JSON line, into a channel.
struct Entries(Mutex<std::sync::mpsc::Sender<String>>);

impl recovery::scan::ScanObserver for Entries {
    fn done(&self, entry: &recovery::scan::ScanEntry) {
        if let (Ok(text), Ok(tx)) = (serde_json::to_string(entry), self.0.lock()) {
            let _ = tx.send(text + "\n");
        }
    }
}

/// The iterator `export_chroma`, `timeline` and `scan` return.
#[pyclass]
struct Lines {
    /// The lines the writer sends; gone once it has ended.
    lines: Mutex<Option<Receiver<String>>>,
    /// The thread writing them, joined at the end (its error is raised then). An iterator
    /// dropped early closes the channel and lets the thread go without waiting for it
    /// (which would hold the interpreter's lock): its next line fails as a closed pipe
    /// would, and it ends.
    writer: Mutex<Option<JoinHandle<Result<(), recovery::Error>>>>,
}

impl Lines {
    /// The lines `write` writes, from a thread of their own into a channel
    /// [`LINES_AHEAD`] deep; `csv`: a line break inside a quoted value does not end one.
    fn written(
        csv: bool,
        write: impl FnOnce(&mut dyn Write) -> Result<(), recovery::Error> + Send + 'static,
    ) -> Lines {
        let (tx, rx) = std::sync::mpsc::sync_channel(LINES_AHEAD);
        let writer = std::thread::spawn(move || {
            let mut sink = LineSender {
                tx,
                line: Vec::new(),
                csv,
                open: false,
            };
            write(&mut sink)?;
            // A last line without its newline is a line too.
            if !sink.line.is_empty() {
                let last = String::from_utf8_lossy(&sink.line).into_owned();
                let _ = sink.tx.send(last);
            }
            Ok(())
        });
        Lines {
            lines: Mutex::new(Some(rx)),
            writer: Mutex::new(Some(writer)),
        }
    }
}

#[pymethods]
impl Lines {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<String>> {
        let next = py.detach(|| {
            let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
            lines.as_ref().and_then(|rx| rx.recv().ok())
        });
        if next.is_some() {
            return Ok(next);
        }
        // The writer has ended: its error, if any, is this iteration's.
        self.lines.lock().unwrap_or_else(|p| p.into_inner()).take();
        let writer = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take();
        match writer.map(|w| py.detach(|| w.join())) {
            None | Some(Ok(Ok(()))) => Ok(None),
            Some(Ok(Err(e))) => Err(raise(&e)),
            Some(Err(_)) => Err(SalvageError::new_err("the export's writer panicked")),
        }
    }
}

/// The export's sink: each complete line goes into the channel.
struct LineSender {
    tx: SyncSender<String>,
    line: Vec<u8>,
    /// CSV: a line ends at a line break outside quotes only (a quote inside a quoted
    /// value is doubled, so an odd count of quotes so far is an open value).
    csv: bool,
    /// The line so far holds an odd count of quotes (kept as bytes arrive, so that a
    /// value of many line breaks is not counted again at each).
    open: bool,
}

impl LineSender {
    fn take(&mut self, bytes: &[u8]) {
        self.open ^= bytes.iter().filter(|b| **b == b'"').count() % 2 == 1;
        self.line.extend_from_slice(bytes);
    }
}

impl Write for LineSender {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut rest = buf;
        while let Some(end) = rest.iter().position(|b| *b == b'\n') {
            let (head, tail) = rest.split_at(end);
            self.take(head);
            rest = tail.get(1..).unwrap_or_default();
            if self.csv && self.open {
                self.line.push(b'\n');
                continue;
            }
            self.open = false;
            let line = String::from_utf8(std::mem::take(&mut self.line))
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
            self.tx
                .send(line)
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
        }
        self.take(rest);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Each table's sheet and rows, the values cut, the integers written as text.
type Workbook = (Vec<(String, u64)>, u64, u64);

/// Writes the workbook of `db` (or of its `table`) to the new file `to`
/// (`salvage export --format xlsx`): each table's sheet and rows, and the values cut and
/// the integers written as text.
#[pyfunction]
#[pyo3(signature = (db, to, table = None))]
fn export_xlsx(
    py: Python<'_>,
    db: PathBuf,
    to: PathBuf,
    table: Option<String>,
) -> PyResult<Workbook> {
    if to.symlink_metadata().is_ok() {
        return Err(raise(&recovery::Error::Refused {
            what: format!("`{}` already exists", to.display()),
            hint: "export never overwrites a file: choose a new name or remove it".into(),
        }));
    }
    let summary = py
        .detach(|| recovery::export::xlsx::export_xlsx(&db, table.as_deref(), &to))
        .map_err(|e| raise(&e))?;
    Ok((summary.tables, summary.cut, summary.big_integers))
}

/// The module `salvage._salvage`.
#[pymodule]
fn _salvage(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(inspect, m)?)?;
    m.add_function(wrap_pyfunction!(recover, m)?)?;
    m.add_function(wrap_pyfunction!(commit, m)?)?;
    m.add_function(wrap_pyfunction!(export_chroma, m)?)?;
    m.add_function(wrap_pyfunction!(timeline, m)?)?;
    m.add_function(wrap_pyfunction!(export_xlsx, m)?)?;
    m.add_function(wrap_pyfunction!(scan, m)?)?;
    m.add_function(wrap_pyfunction!(scan_plan, m)?)?;
    m.add_function(wrap_pyfunction!(scan_task, m)?)?;
    m.add_function(wrap_pyfunction!(scan_finish, m)?)?;
    m.add("SalvageError", m.py().get_type::<SalvageError>())?;
    m.add("Refused", m.py().get_type::<Refused>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
