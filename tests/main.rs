//! Workspace-level end-to-end tests: one binary, one module per subject. They run the real
//! `salvage` binary and the real `pager` on real files: databases built by SQLite through
//! rusqlite and damaged at byte level by `fixtures`, and the third-party Nemetz corpus.

mod antiforensic;
mod audit;
mod backup;
mod carving;
mod commit;
mod corpus;
mod custody;
mod damage;
mod deleted;
mod demo;
mod export;
mod files;
mod fts;
mod fuzz;
mod golden;
mod history;
mod hostile;
mod inspect;
mod journal;
mod manual;
mod mutation;
mod nemetz;
mod partial;
mod pipeline;
mod placeholders;
mod progress;
mod readback;
mod recover;
mod repair;
mod report_html;
mod schema_sql;
mod search;
mod sweep;
mod textcopy;
mod wal;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The `salvage` binary under test.
pub fn salvage() -> Command {
    Command::new(env!("CARGO_BIN_EXE_salvage"))
}

/// Runs `salvage` with `args` and returns its output.
pub fn run_salvage(args: &[&std::ffi::OsStr]) -> std::io::Result<Output> {
    salvage().args(args).output()
}

/// A database as an older SQLite wrote it: `t(id INTEGER PRIMARY KEY, n INTEGER)` whose
/// rows 1 to 1200 hold the text `'1\0'` in `n` (a C program that counts the terminator),
/// which SQLite kept as text before 3.44 and now converts on the way in: its `quick_check`
/// says "TEXT value in t.n" once a row, more lines than a check lists at first. Made so:
/// the values go in under no affinity, then the column is declared as the older file did.
pub fn older_sqlite_text(path: &Path) -> rusqlite::Result<()> {
    let conn = rusqlite::Connection::open(path)?;
    conn.execute_batch(
        "CREATE TABLE t(id INTEGER PRIMARY KEY, n);
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 1200)
         INSERT INTO t SELECT x, CAST(x'3100' AS TEXT) FROM i;
         INSERT INTO t VALUES (2000, 7), (2001, 'seven');
         PRAGMA writable_schema = ON;
         UPDATE sqlite_schema SET sql = 'CREATE TABLE t(id INTEGER PRIMARY KEY, n INTEGER)'
          WHERE name = 't';
         PRAGMA writable_schema = OFF;",
    )
}

/// Runs `salvage recover SRC -o DEST` with `extra` arguments.
pub fn recover_file(src: &Path, dest: &Path, extra: &[&str]) -> std::io::Result<Output> {
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "recover".as_ref(),
        src.as_os_str(),
        "-o".as_ref(),
        dest.as_os_str(),
    ];
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    run_salvage(&args)
}

/// Runs `salvage recover SRC -o DEST`, checks its exit code, and returns the loss report
/// it wrote.
pub fn recover_expecting(
    src: &Path,
    dest: &Path,
    extra: &[&str],
    code: i32,
) -> std::io::Result<serde_json::Value> {
    let out = recover_file(src, dest, extra)?;
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = report_beside(dest);
    assert_counts_add_up(dest, &report);
    Ok(report)
}

/// Asserts that every table's `rows_in_output` in a loss report is the number of rows its
/// output (at DEST, or DEST.incomplete when withheld) holds.
pub fn assert_counts_add_up(dest: &Path, report: &serde_json::Value) {
    let at = if report["output"]["committed"] == true {
        dest.to_path_buf()
    } else {
        let mut p = dest.as_os_str().to_owned();
        p.push(".incomplete");
        PathBuf::from(p)
    };
    if !at.exists() {
        return;
    }
    let conn =
        rusqlite::Connection::open_with_flags(&at, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    for t in report["tables"].as_array().into_iter().flatten() {
        let Some(claimed) = t["rows_in_output"].as_u64() else {
            continue;
        };
        let name = t["name"].as_str().unwrap_or_default();
        let held: i64 = conn
            .query_row(
                &format!("SELECT count(*) FROM \"{}\"", name.replace('"', "\"\"")),
                [],
                |r| r.get(0),
            )
            .unwrap_or_else(|e| panic!("{}: `{name}`: {e}", at.display()));
        assert_eq!(
            held as u64,
            claimed,
            "{}: rows of `{name}` against the report",
            at.display()
        );
    }
}

/// A loss report's signals of loss, typed as the library gives them.
pub fn signals(report: &serde_json::Value) -> Vec<recovery::LossSignal> {
    serde_json::from_value(report["evidence"]["signals"].clone())
        .unwrap_or_else(|e| panic!("evidence.signals: {e}"))
}

/// Asserts that one of a loss report's signals is `wanted` (a `matches!` pattern).
#[macro_export]
macro_rules! assert_signal {
    ($report:expr, $($wanted:tt)+) => {{
        let signals = $crate::signals(&$report);
        assert!(
            signals.iter().any(|s| matches!(s, $($wanted)+)),
            "no signal is {}: {signals:#?}",
            stringify!($($wanted)+)
        );
    }};
}

/// The loss report `recover` wrote beside `dest` (`DEST.report.json`).
pub fn report_beside(dest: &Path) -> serde_json::Value {
    let mut path = dest.as_os_str().to_owned();
    path.push(".report.json");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", dest.display()));
    serde_json::from_slice(&bytes).unwrap()
}

/// The `tables` entry of a loss report for the table `name`.
pub fn table_entry<'r>(report: &'r serde_json::Value, name: &str) -> &'r serde_json::Value {
    report["tables"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == name))
        .unwrap_or_else(|| panic!("no table `{name}` in the report"))
}

/// A fresh scratch folder under the target dir, removed when dropped (kept, to look at
/// what a test wrote, with `SALVAGE_KEEP_SCRATCH=1`).
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let dir =
            Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }

    /// Every file name in the folder, sorted.
    pub fn listing(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::env::var_os("SALVAGE_KEEP_SCRATCH").is_some() {
            return;
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
