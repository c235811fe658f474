//! The native half of the Python package `salvage`: the recovery library's inspection,
//! recovery and Chroma export, called in-process. Each gives JSON text, so that the
//! Python half (`salvage/__init__.py`) owns the types people use; the interpreter is
//! released while a run works, so other Python threads go on.

use std::path::PathBuf;

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use recovery::{Outcome, RecoverOptions, Recovery};

pyo3::create_exception!(
    _salvage,
    SalvageError,
    PyException,
    "A run could not start or go on."
);
pyo3::create_exception!(
    _salvage,
    Refused,
    SalvageError,
    "The request was refused before anything was created."
);

/// The library's error as a Python exception, with its hint.
fn raise(e: &recovery::Error) -> PyErr {
    let text = match e.hint() {
        Some(hint) => format!("{e} (hint: {hint})"),
        None => e.to_string(),
    };
    if e.is_refusal() {
        Refused::new_err(text)
    } else {
        SalvageError::new_err(text)
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
/// withheld output are.
#[pyfunction]
#[pyo3(signature = (src, dest, report = None, allow_partial = false, profile = "auto"))]
fn recover(
    py: Python<'_>,
    src: PathBuf,
    dest: PathBuf,
    report: Option<PathBuf>,
    allow_partial: bool,
    profile: &str,
) -> PyResult<(String, String, String, String)> {
    let options = RecoverOptions {
        report,
        allow_partial,
        profile: recovery::profiles::ProfileChoice::parse(profile),
        ..RecoverOptions::new(src, dest)
    };
    let done = py
        .detach(|| recovery::recover(&options, &recovery::Quiet))
        .map_err(|e| raise(&e))?;
    ended(&done)
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
#[pyo3(signature = (incomplete, report = None))]
fn commit(
    py: Python<'_>,
    incomplete: PathBuf,
    report: Option<PathBuf>,
) -> PyResult<(String, String, String, String)> {
    let options = recovery::finish::accept::AcceptOptions {
        incomplete,
        report,
        command_line: Vec::new(),
    };
    let done = py
        .detach(|| recovery::finish::accept::accept(&options))
        .map_err(|e| raise(&e))?;
    ended(&done)
}

/// A recovered Chroma store's embeddings, as JSON lines ready to upsert again (the lines
/// of `salvage export`), and whether every line is original.
#[pyfunction]
#[pyo3(signature = (path, collection = None))]
fn export_chroma(
    py: Python<'_>,
    path: PathBuf,
    collection: Option<String>,
) -> PyResult<(Vec<String>, bool)> {
    let (bytes, clean) = py
        .detach(|| -> Result<(Vec<u8>, bool), recovery::Error> {
            let export = recovery::export::Export::open(&path, collection.as_deref())?;
            let mut bytes = Vec::new();
            let summary = export.write_to(&mut bytes)?;
            Ok((bytes, summary.clean()))
        })
        .map_err(|e| raise(&e))?;
    let text = String::from_utf8(bytes).map_err(|e| SalvageError::new_err(e.to_string()))?;
    Ok((text.lines().map(str::to_string).collect(), clean))
}

/// The module `salvage._salvage`.
#[pymodule]
fn _salvage(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(inspect, m)?)?;
    m.add_function(wrap_pyfunction!(recover, m)?)?;
    m.add_function(wrap_pyfunction!(commit, m)?)?;
    m.add_function(wrap_pyfunction!(export_chroma, m)?)?;
    m.add("SalvageError", m.py().get_type::<SalvageError>())?;
    m.add("Refused", m.py().get_type::<Refused>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
