//! Workspace-level end-to-end tests: one binary, one module per subject, on real files:
//! databases built by SQLite through rusqlite and damaged at byte level by `fixtures`, and
//! the third-party Nemetz corpus. What a recovery decides (rows per table, signals of loss,
//! placeholders, partial rows, `lost_and_found`, bounds, findings) is checked in-process
//! through the library's typed API ([`recover_in_process`], [`assert_signal!`]); the real
//! `salvage` binary is run where it is what is tested: its arguments, exit codes,
//! rendering, stdout and stderr, progress and the demo.

mod antiforensic;
mod audit;
mod backup;
mod carving;
mod catalogue;
mod commit;
mod corpus;
mod custody;
mod damage;
mod deleted;
mod demo;
mod differential;
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
mod oracle;
mod partial;
mod pipeline;
mod placeholders;
mod progress;
mod provenance;
mod quirks;
mod readback;
mod recover;
mod repair;
mod report_html;
mod report_render;
mod scan;
mod scan_case;
mod scan_kill;
mod schema_sql;
mod search;
mod sweep;
mod textcopy;
mod timeline;
mod wal;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use recovery::report::{LossReport, TableReport};
use recovery::{LossSignal, Outcome, RecoverOptions, Recovery};

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The `salvage` binary under test.
pub fn salvage() -> Command {
    Command::new(env!("CARGO_BIN_EXE_salvage"))
}

/// Which of a command's streams goes to the pseudo-terminal.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// Its standard output.
    Stdout,
    /// Its standard error.
    Stderr,
}

/// Runs `command` with its `shown` stream on a pseudo-terminal of `columns` columns (the
/// other stream and stdin null, `TERM=xterm`), sent SIGINT (as Ctrl-C) once the terminal
/// has received `interrupt_at` when given: what the terminal received, and the exit code.
pub fn on_a_pty(
    mut command: Command,
    shown: Shown,
    columns: u16,
    interrupt_at: Option<&'static str>,
) -> Result<(String, Option<i32>), Box<dyn std::error::Error>> {
    use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
    use std::io::Read;
    use std::process::Stdio;
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY)?;
    grantpt(&master)?;
    unlockpt(&master)?;
    let name = ptsname(&master, Vec::new())?;
    let terminal = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(std::ffi::OsStr::new(std::str::from_utf8(name.to_bytes())?))?;
    rustix::termios::tcsetwinsize(
        &terminal,
        rustix::termios::Winsize {
            ws_row: 24,
            ws_col: columns,
            ws_xpixel: 0,
            ws_ypixel: 0,
        },
    )?;
    command.env("TERM", "xterm").stdin(Stdio::null());
    match shown {
        Shown::Stdout => command.stdout(Stdio::from(terminal)).stderr(Stdio::null()),
        Shown::Stderr => command.stderr(Stdio::from(terminal)).stdout(Stdio::null()),
    };
    let mut child = command.spawn()?;
    // The terminal's other end is the child's alone now: reading ends (EIO) when it exits.
    drop(command);
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id())?).ok_or("no pid")?;
    let mut master = std::fs::File::from(master);
    let reading = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut chunk = [0u8; 4096];
        let mut interrupt_at = interrupt_at;
        while let Ok(n) = master.read(&mut chunk) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(chunk.get(..n).unwrap_or_default());
            if let Some(marker) = interrupt_at {
                if String::from_utf8_lossy(&seen).contains(marker) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
                    interrupt_at = None;
                }
            }
        }
        seen
    });
    let status = child.wait()?;
    let seen = reading
        .join()
        .map_err(|_| "the reader of the terminal panicked")?;
    Ok((String::from_utf8(seen)?, status.code()))
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

/// Zeroes the cell of page 1 (a schema leaf) whose first 120 bytes hold `create` (the
/// start of its CREATE statement): its row gone, its cell pointer left.
pub fn zero_schema_cell(bytes: &mut [u8], create: &[u8]) -> Result<(), String> {
    let pointer = |at: usize| usize::from(u16::from_be_bytes([bytes[at], bytes[at + 1]]));
    let cells = pointer(103);
    let cell = (0..cells)
        .map(|i| pointer(108 + 2 * i))
        .find(|&c| {
            bytes[c..(c + 120).min(4096)]
                .windows(create.len())
                .any(|w| w == create)
        })
        .ok_or("no such schema cell")?;
    let (payload, n) = fixtures::format::read_varint(bytes, cell).ok_or("a payload size")?;
    let rowid = fixtures::format::read_varint(bytes, cell + n)
        .ok_or("a rowid")?
        .1;
    bytes[cell..cell + n + rowid + payload as usize].fill(0);
    Ok(())
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
    assert_counts_add_up(dest, &typed_report_beside(dest));
    Ok(report_beside(dest))
}

/// The options of `salvage recover SRC -o DEST --allow-partial`: the defaults, and the
/// output committed even when loss is detected.
pub fn allow_partial(src: &Path, dest: &Path) -> RecoverOptions {
    RecoverOptions {
        allow_partial: true,
        ..RecoverOptions::new(src, dest)
    }
}

/// Recovers in-process through the library, checks how the run ended (`Complete` is exit
/// 0, `PartialCommitted` 3, `Withheld` 4) and that every table's count is what its output
/// holds, and returns the recovery: what [`recover_expecting`] checks of a run of the
/// binary, typed.
pub fn recover_in_process(
    options: &RecoverOptions,
    outcome: Outcome,
) -> Result<Recovery, recovery::Error> {
    let done = recovery::recover(options, &recovery::Quiet)?;
    assert_eq!(
        done.outcome,
        outcome,
        "{}: {:#?}",
        options.src.display(),
        done.report.evidence.loss
    );
    assert_counts_add_up(&options.dest, &done.report);
    Ok(done)
}

/// Asserts that every table's `rows_in_output` in a loss report is the number of rows its
/// output (at DEST, or DEST.incomplete when withheld) holds.
pub fn assert_counts_add_up(dest: &Path, report: &LossReport) {
    let at = if report.output.committed {
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
    // A collation the schema names that this build lacks had a stand-in on the output
    // (see `schema.stand_in_collations`); a count may go through an index on it.
    for name in &report.schema.stand_in_collations {
        conn.create_collation(name.as_str(), |a: &str, b: &str| {
            a.as_bytes().cmp(b.as_bytes())
        })
        .unwrap();
    }
    for t in &report.tables {
        let Some(claimed) = t.rows_in_output else {
            continue;
        };
        let name = &t.name;
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

/// What holds a recovery's signals of loss, typed: the [`Recovery`] run in-process, or its
/// [`LossReport`] (also as a run of the binary wrote it: [`typed_report_beside`]).
pub trait Signals {
    /// The signals, in the report's order.
    fn loss_signals(&self) -> Vec<LossSignal>;
}

impl Signals for Recovery {
    fn loss_signals(&self) -> Vec<LossSignal> {
        self.signals().to_vec()
    }
}

impl Signals for LossReport {
    fn loss_signals(&self) -> Vec<LossSignal> {
        self.evidence.signals.clone()
    }
}

/// Asserts that one of the signals of a recovery (anything [`Signals`]) is `wanted` (a
/// `matches!` pattern, with an `if` guard if need be).
#[macro_export]
macro_rules! assert_signal {
    ($of:expr, $($wanted:tt)+) => {{
        let signals = $crate::Signals::loss_signals(&$of);
        assert!(
            signals.iter().any(|s| matches!(s, $($wanted)+)),
            "no signal is {}: {signals:#?}",
            stringify!($($wanted)+)
        );
    }};
}

/// The report's entry for the table `name` of a recovery run in-process.
#[track_caller]
pub fn table<'r>(done: &'r Recovery, name: &str) -> &'r TableReport {
    done.table(name)
        .unwrap_or_else(|| panic!("no table `{name}` in the report"))
}

/// The loss report `recover` wrote beside `dest` (`DEST.report.json`).
pub fn report_beside(dest: &Path) -> serde_json::Value {
    let mut path = dest.as_os_str().to_owned();
    path.push(".report.json");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", dest.display()));
    serde_json::from_slice(&bytes).unwrap()
}

/// The loss report `recover` wrote beside `dest`, typed.
pub fn typed_report_beside(dest: &Path) -> LossReport {
    serde_json::from_value(report_beside(dest))
        .unwrap_or_else(|e| panic!("{}: not a loss report: {e}", dest.display()))
}

/// The nodes of a CASE/UCO JSON-LD document (its `@graph`), checked as a graph: every
/// node has an `@id`, none is given twice, and every reference (an object holding only an
/// `@id`) is to a node of the graph.
pub fn case_graph(
    doc: &serde_json::Value,
) -> Result<&[serde_json::Value], Box<dyn std::error::Error>> {
    let graph = doc["@graph"].as_array().ok_or("no @graph")?;
    let ids: Vec<&str> = graph.iter().filter_map(|n| n["@id"].as_str()).collect();
    assert_eq!(ids.len(), graph.len(), "a node without @id");
    let unique: std::collections::BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "an @id given twice");
    fn references<'v>(v: &'v serde_json::Value, out: &mut Vec<&'v str>) {
        match v {
            serde_json::Value::Object(o) => {
                if let (1, Some(id)) = (o.len(), o.get("@id").and_then(|i| i.as_str())) {
                    out.push(id);
                }
                o.values().for_each(|x| references(x, out));
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| references(x, out)),
            _ => {}
        }
    }
    let mut refs = Vec::new();
    references(&doc["@graph"], &mut refs);
    assert!(!refs.is_empty(), "no node refers to another");
    for r in refs {
        assert!(
            unique.contains(r),
            "{r} is referred to and not in the graph"
        );
    }
    Ok(graph)
}

/// Checks the CASE/UCO JSON-LD file `jsonld` with the ontology's own validator
/// (`case_validate`, from the PyPI package `case-utils`, which `.ci/run` installs and
/// names in `SALVAGE_CASE_VALIDATE`): it must say the graph conforms. Without
/// `SALVAGE_CASE_VALIDATE`, `case_validate` is run from the `PATH` where it is, and the
/// check is skipped, said on stderr, where it is not.
pub fn case_validate(jsonld: &Path) -> TestResult {
    let validator = std::env::var_os("SALVAGE_CASE_VALIDATE").map(PathBuf::from);
    let required = validator.is_some();
    let validator = validator.unwrap_or_else(|| "case_validate".into());
    match Command::new(&validator).arg(jsonld).output() {
        Ok(out) => {
            let said = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && said.contains("Conforms: True"),
                "case_validate {}:\n{said}{}",
                jsonld.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Err(e) if !required => {
            eprintln!("case_validate not run ({e}): set SALVAGE_CASE_VALIDATE, as .ci/run does");
        }
        Err(e) => return Err(format!("{}: {e}", validator.display()).into()),
    }
    Ok(())
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

/// Stages entered and work finished beside them, in the order told.
#[derive(Default)]
pub struct Told(std::sync::Mutex<Vec<String>>);

impl recovery::Observer for Told {
    fn stage(&self, stage: recovery::Stage<'_>) {
        self.lines().push(stage.to_string());
    }
    fn finished(&self, work: recovery::Background) {
        self.lines().push(format!("({work})"));
    }
}

impl Told {
    fn lines(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Asserts that the second hash of the source ended after the views were re-created:
    /// after every step that reads the source.
    pub fn second_hash_after_the_last_read(&self, run: &str) {
        let told = self.lines();
        let at = |line: &str| told.iter().position(|l| l == line);
        let (views, hashed) = (at("re-creating views"), at("(second hash of the source)"));
        assert!(
            views.is_some() && hashed > views,
            "{run}: the second hash ended before the last read: {told:?}"
        );
    }
}
