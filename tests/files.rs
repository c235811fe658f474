//! The evidence file changes under the run, or is mostly empty. It is read through a
//! memory map: a file cut short while it is read (by another process, a failing disk or
//! share) once ended `recover` and `inspect` with SIGBUS and no message; now the pages past
//! its new end read as zeros and the run ends in a clear error, nothing committed. A file
//! padded with zeros is one run of pages in the reports, and one of large values is read
//! a few values at a time. The output and its report are put in place together or not
//! at all, and a run stopped by a signal says what is left.

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
        Ok(done) => assert!(
            matches!(
                done.outcome,
                Outcome::NotVerified {
                    source_changed: true,
                    ..
                }
            ),
            "{:?}",
            done.outcome
        ),
        Err(Error::VerificationFailed { source_changed, .. }) => assert!(source_changed),
        Err(e) => panic!("{e}"),
    }
    assert!(!dest.exists(), "nothing is committed");
    Ok(())
}

/// Flips the last byte of the source, its length kept, when the first table's rows are
/// about to be read: a change only a second reading of every byte can see.
struct Rewrite {
    path: std::path::PathBuf,
    done: AtomicBool,
}

impl Observer for Rewrite {
    fn stage(&self, stage: Stage<'_>) {
        if matches!(stage, Stage::Recovering { .. }) && !self.done.swap(true, Ordering::SeqCst) {
            use std::os::unix::fs::FileExt;
            let flip = || -> std::io::Result<()> {
                let f = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(&self.path)?;
                let at = f.metadata()?.len() - 1;
                let mut b = [0u8];
                f.read_exact_at(&mut b, at)?;
                f.write_all_at(&[b[0] ^ 0xff], at)
            };
            flip().expect("the flip");
        }
    }
}

#[test]
fn a_source_rewritten_in_place_during_recover_is_not_committed() -> TestResult {
    let dir = Scratch::new("rewritten-recover");
    let src = source(&dir)?;
    // Written an hour ago: the flip moves its modification time on any kernel clock.
    std::fs::File::options()
        .write(true)
        .open(&src)?
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600))?;
    let original = std::fs::read(&src)?;
    let dest = dir.path("out.db");
    let observer = Rewrite {
        path: src.clone(),
        done: AtomicBool::new(false),
    };
    let done = recovery::recover(&RecoverOptions::new(&src, &dest), &observer)?;
    assert!(observer.done.load(Ordering::SeqCst));
    // The output itself verified: only the source's change keeps it from being committed.
    assert_eq!(
        done.outcome,
        Outcome::NotVerified {
            source_changed: true,
            output_verified: true
        }
    );
    assert!(!dest.exists(), "nothing is committed");
    // The second digest is of the file as it is now. The first is read beside the load,
    // and may have read the flipped byte too: the file system's change time says what
    // both hashes could not.
    let proof = &done.report.source;
    assert!(!proof.unchanged);
    // The file system's word names the file by its role, whatever the hashes saw.
    let said = done
        .report
        .warnings
        .iter()
        .any(|w| w.starts_with("the source changed") && w.contains("modification time"));
    assert!(said, "{:?}", done.report.warnings);
    assert_eq!(proof.changed_under_the_run, ["source"]);
    // The run record says it of the source too, whichever caught it.
    let rendered = crate::salvage()
        .arg("report")
        .arg(dir.path("out.db.report.json"))
        .output()?;
    let text = String::from_utf8(rendered.stdout)?;
    assert!(text.contains("CHANGED during the run"), "{text}");
    let now = std::fs::read(&src)?;
    assert_ne!(now, original);
    assert_eq!(proof.blake3_after, blake3::hash(&now).to_hex().as_str());
    // The error says what happened and to which file, not that verification failed (the
    // report says it passed).
    let error = done.verified().err().ok_or("a committed run")?.to_string();
    assert!(
        error.starts_with("the source changed during the run (the output passed verification"),
        "{error}"
    );
    Ok(())
}

#[test]
fn a_source_cut_short_during_inspect_is_an_error_not_a_signal() -> TestResult {
    let dir = Scratch::new("shrinking-inspect");
    let src = source(&dir)?;
    let source = recovery::stages::evidence::source::Source::open(&src)?;
    resize(&src, 4096)?;
    let error = recovery::inspect::inspect(&source, false)
        .err()
        .ok_or("inspect gave a report")?;
    assert!(error.to_string().contains("shrank"), "{error}");
    assert!(source.shrank());
    Ok(())
}

/// A file larger than the address space the process may map (`ulimit -v`) fails with
/// the limit named and how to raise it; it said only "Cannot allocate memory".
#[test]
fn a_file_beyond_the_address_space_limit_names_the_limit() -> TestResult {
    let dir = Scratch::new("address-space");
    let src = source(&dir)?;
    resize(&src, 2 << 30)?; // sparse: no disk is used
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 400000 && exec \"$0\" inspect \"$1\"")
        .arg(env!("CARGO_BIN_EXE_salvage"))
        .arg(&src)
        .output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("ulimit -v unlimited"), "{stderr}");
    Ok(())
}

/// A file name with a newline is shown escaped in the text output, one path on one
/// line: printed raw, it split the line and could pass for other output. The JSON report
/// keeps the name exact.
#[test]
fn a_newline_in_a_file_name_is_escaped_in_text() -> TestResult {
    let dir = Scratch::new("newline-name");
    let src = source(&dir)?;
    let odd = dir.path("odd\nverdict: healthy.db");
    std::fs::rename(&src, &odd)?;
    let out = crate::run_salvage(&["inspect".as_ref(), odd.as_os_str()])?;
    let text = String::from_utf8(out.stdout)?;
    let first = text.lines().next().unwrap_or_default();
    assert!(first.ends_with("odd\\nverdict: healthy.db"), "{text}");
    let missing = dir.path("gone\n.db");
    let out = crate::run_salvage(&["inspect".as_ref(), missing.as_os_str()])?;
    let stderr = String::from_utf8(out.stderr)?;
    assert!(stderr.contains("gone\\n.db`"), "{stderr}");
    let json = crate::run_salvage(&["inspect".as_ref(), odd.as_os_str(), "--json".as_ref()])?;
    let report: serde_json::Value = serde_json::from_slice(&json.stdout)?;
    assert_eq!(report["run"]["source_path"], odd.display().to_string());
    // The library's sentences quote paths too: an unusable log beside the file is named in
    // recover's summary of loss, escaped.
    let mut wal = odd.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::write(&wal, vec![0xa5; 4096])?;
    let dest = dir.path("out.db");
    let out = crate::run_salvage(&[
        "recover".as_ref(),
        odd.as_os_str(),
        "-o".as_ref(),
        dest.as_os_str(),
    ])?;
    let stderr = String::from_utf8(out.stderr)?;
    let escaped = format!("`{}-wal`", recovery::shown(&odd));
    assert!(escaped.contains("odd\\nverdict"), "{escaped}");
    assert!(stderr.contains(&escaped), "{stderr}");
    assert!(
        !stderr.lines().any(|l| l.starts_with("verdict")),
        "{stderr}"
    );
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

/// The most memory `salvage inspect` may hold for a small database padded to gigabytes.
const PADDED_RSS_LIMIT: u64 = 192 << 20;

/// A small database whose header is lost, padded to 2 GiB with zeros (sparse: no disk is
/// used), is read by `salvage inspect` within a fixed memory budget: the page size is
/// inferred from a bounded sample (sampling each candidate size elsewhere once made the
/// whole of a 16 GiB file resident) and mapped pages are let go of as the survey moves
/// on. The child's peak resident memory is measured by the kernel (`wait4`).
#[test]
fn a_file_padded_to_gigabytes_is_read_in_bounded_memory() -> TestResult {
    let dir = Scratch::new("padded-gigabytes");
    let src = source(&dir)?;
    {
        use std::io::{Seek, Write};
        let mut f = std::fs::OpenOptions::new().write(true).open(&src)?;
        f.seek(std::io::SeekFrom::Start(0))?;
        f.write_all(&[0u8; 100])?;
    }
    resize(&src, 2 << 30)?;
    let peak = inspected_peak(&["inspect"], &src)?;
    assert!(
        peak < PADDED_RSS_LIMIT,
        "peak resident memory {} MiB",
        peak >> 20
    );
    Ok(())
}

/// The peak resident memory of `salvage ARGS SRC` (an inspection: exit 0 or 3).
fn inspected_peak(args: &[&str], src: &std::path::Path) -> Got<u64> {
    let mut args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    args.push(src.as_os_str());
    let (status, peak) = measured(&args)?;
    assert!(matches!(status, Some(0 | 3)), "exit {status:?}");
    Ok(peak)
}

/// `salvage inspect --audit` of a database whose write-ahead log (320 MB of 320 commits
/// here, gigabytes on a busy store) was never checkpointed reads the log frame by frame,
/// letting go of its mapped pages as it goes: the audit's reading of the log once made
/// all of it resident (2.6 GB for a 2.55 GB log). A debug build's `inspect` peaked at
/// some 350 MiB on this file with or without `--audit`: the log's reader skipped to the
/// frames after the current generation by decoding each frame's header on the way (in a
/// release build the optimizer took those reads out), and so read the whole log at once.
#[test]
fn a_log_of_hundreds_of_megabytes_is_audited_in_bounded_memory() -> TestResult {
    use rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE as NO_CHECKPOINT;
    let dir = Scratch::new("audited-log");
    let src = dir.path("src.db");
    {
        let conn = rusqlite::Connection::open(&src)?;
        conn.set_db_config(NO_CHECKPOINT, true)?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
             CREATE TABLE t(b BLOB);",
        )?;
        // A commit a row: the log's history holds one commit's rows at a time.
        for _ in 0..320 {
            conn.execute("INSERT INTO t VALUES (zeroblob(1000000))", [])?;
        }
    }
    let wal = std::fs::metadata(dir.path("src.db-wal"))?.len();
    assert!(wal > 300 << 20, "a log of {wal} bytes");
    let peak = inspected_peak(&["inspect", "--audit", "--json"], &src)?;
    assert!(
        peak < PADDED_RSS_LIMIT,
        "peak resident memory {} MiB",
        peak >> 20
    );
    Ok(())
}

/// A table of large values (8 MB each, on overflow pages) is recovered holding few of them
/// at once: from the whole file, with page 1 zeroed, and with only the table's schema row
/// lost (its index's left). The records sampled to fit each tree to its table held 64 of
/// them whole (a storage class is all a fit reads); those sampled to match an inferred
/// table against the applications' known tables, 256 (now up to 8 MiB of values a
/// table); those an orphan index's entries were traced to, 64 a tree; and a table named
/// by its surviving index was held whole, every row (now its rowids, and the rows of the
/// entries sampled, their long values compared by their start and length).
#[test]
fn large_values_are_recovered_a_few_at_a_time() -> TestResult {
    let dir = Scratch::new("large-values");
    let src = dir.path("src.db");
    {
        let conn = rusqlite::Connection::open(&src)?;
        conn.execute_batch(
            "PRAGMA page_size = 4096;
             CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, b BLOB);
             CREATE INDEX t_k ON t(k);",
        )?;
        for k in 0..24 {
            conn.execute("INSERT INTO t(k, b) VALUES (?1, randomblob(8000000))", [k])?;
        }
    }
    let bytes = std::fs::read(&src)?;
    let zeroed = dir.path("zeroed.db");
    let mut page_one = bytes.clone();
    page_one[100..4096].fill(0);
    std::fs::write(&zeroed, page_one)?;
    // The table's schema row zeroed, its index's left.
    let unnamed = dir.path("unnamed.db");
    let mut table_row = bytes;
    crate::zero_schema_cell(&mut table_row, b"CREATE TABLE t")?;
    std::fs::write(&unnamed, table_row)?;
    // Whole: complete. The schema lost: the rows kept, and the loss said.
    for (db, exit) in [(&src, 0), (&zeroed, 4), (&unnamed, 4)] {
        let out = db.with_extension("out.db");
        let (status, peak) = measured(&[
            "recover".as_ref(),
            db.as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
        ])?;
        assert_eq!(status, Some(exit), "{}", db.display());
        assert!(
            peak < LARGE_VALUES_RSS_LIMIT,
            "{}: peak resident memory {} MiB",
            db.display(),
            peak >> 20
        );
    }
    Ok(())
}

/// The most memory a recovery of 24 values of 8 MB may hold: a few of them, the mapped
/// pages and the output's cache.
const LARGE_VALUES_RSS_LIMIT: u64 = 192 << 20;

/// `salvage ARGS`, its output let go of: its exit code and its peak resident memory in
/// bytes ([`wait_measured`]).
pub(crate) fn measured(args: &[&std::ffi::OsStr]) -> Got<(Option<i32>, u64)> {
    let child = crate::salvage()
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    wait_measured(child)
}

/// Waits for `child`: its exit code and its own peak resident memory in bytes, its
/// high-water mark (`VmHWM`) read until it ends. (`wait4`'s peak is no measure of it: it
/// starts from this test binary's, whose other tests may hold much.)
fn wait_measured(mut child: std::process::Child) -> Got<(Option<i32>, u64)> {
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak = 0u64;
    loop {
        if let Some(kib) = std::fs::read_to_string(&status_path).ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        }) {
            peak = peak.max(kib * 1024);
        }
        if let Some(status) = child.try_wait()? {
            // A child gone before it was read once was not measured.
            if peak == 0 {
                return Err("the child ended before its memory was read".into());
            }
            return Ok((status.code(), peak));
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
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

/// A run whose output cannot grow (here the file-size limit of the process, as a full disk
/// stops a write) ends with the operating system's reason (never "database disk image is
/// malformed"), exit 1, its partial output kept as `.incomplete` and no report at all: a
/// 0-byte report once blocked the rerun.
#[test]
fn a_run_stopped_by_a_full_output_names_why_and_leaves_no_report() -> TestResult {
    use std::os::unix::process::CommandExt as _;
    let dir = Scratch::new("full-output");
    let src = dir.path("big.db");
    fixtures::write_agent_store(&src, 8 << 20, 3)?;
    let dest = dir.path("out.db");
    let mut cmd = crate::salvage();
    cmd.arg("recover").arg(&src).arg("-o").arg(&dest);
    // SAFETY: between fork and exec the child only calls `setrlimit` and `signal`, both
    // async-signal-safe, on plain data.
    #[allow(unsafe_code)]
    // reason: std cannot set a child's resource limits
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 1 << 20,
                rlim_max: 1 << 20,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0
                || libc::signal(libc::SIGXFSZ, libc::SIG_IGN) == libc::SIG_ERR
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output()?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("File too large"), "{err}");
    assert!(!err.contains("malformed"), "{err}");
    let listing = dir.listing();
    assert!(
        listing.contains(&"out.db.incomplete".to_string()),
        "{listing:?}"
    );
    assert!(
        !listing.iter().any(|n| n.contains("report")),
        "no report, not even an empty one: {listing:?}"
    );
    Ok(())
}

/// How a run on a small disk ended: its exit code, its standard error, and the disk's
/// files with their sizes.
struct SmallDiskRun {
    code: i32,
    stderr: String,
    files: Vec<(String, u64)>,
}

/// Runs `salvage ARGS` in a mount namespace of its own with a tmpfs of `size` mounted at
/// `mnt`, first filled with `fill` bytes: a disk that really runs out of space (ENOSPC), as
/// no file-size limit can stand in for. The tmpfs's files are listed before the namespace
/// (and the tmpfs) goes.
///
/// Needs `unshare` and a user namespace (as on the CI machine); set
/// `SALVAGE_SKIP_NAMESPACE_TESTS=1` where the kernel refuses them.
fn on_a_small_disk(
    mnt: &std::path::Path,
    size: &str,
    fill: u64,
    args: &[&std::ffi::OsStr],
) -> Got<Option<SmallDiskRun>> {
    if std::env::var_os("SALVAGE_SKIP_NAMESPACE_TESTS").is_some() {
        eprintln!("skipped: SALVAGE_SKIP_NAMESPACE_TESTS is set");
        return Ok(None);
    }
    std::fs::create_dir_all(mnt)?;
    let script = r#"
        mnt=$1; size=$2; fill=$3; shift 3
        mount -t tmpfs -o "size=$size" tmpfs "$mnt" || exit 97
        [ "$fill" -gt 0 ] && head -c "$fill" /dev/zero > "$mnt/fill" 2>/dev/null
        "$@"; rc=$?
        for f in "$mnt"/*; do [ -e "$f" ] && echo "file $(basename "$f") $(stat -c %s "$f")"; done
        echo "rc $rc"
    "#;
    let salvage = crate::salvage();
    let out = std::process::Command::new("unshare")
        .args([
            "--user",
            "--map-root-user",
            "--mount",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .arg(mnt)
        .arg(size)
        .arg(fill.to_string())
        .arg(salvage.get_program())
        .args(args)
        .output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let mut rc = None;
    let mut files = Vec::new();
    for line in stdout.lines() {
        match line.split_whitespace().collect::<Vec<_>>()[..] {
            ["rc", n] => rc = n.parse().ok(),
            ["file", name, len] => files.push((name.to_string(), len.parse()?)),
            _ => {}
        }
    }
    let rc = rc.ok_or_else(|| {
        format!(
            "no mount namespace with a tmpfs here (exit {:?}): {stderr}\n\
             set SALVAGE_SKIP_NAMESPACE_TESTS=1 where the kernel refuses user namespaces",
            out.status.code()
        )
    })?;
    Ok(Some(SmallDiskRun {
        code: rc,
        stderr,
        files,
    }))
}

/// A disk that fills up while the output is written: the run ends with the operating
/// system's reason ("No space left on device", never "malformed"), exit 1, the partial
/// output kept as `.incomplete` and no report, not even an empty one.
#[test]
fn a_run_that_fills_the_disk_names_why_and_leaves_no_report() -> TestResult {
    let dir = Scratch::new("full-disk");
    let src = dir.path("big.db");
    fixtures::write_agent_store(&src, 4 << 20, 3)?;
    let mnt = dir.path("mnt");
    let dest = mnt.join("out.db");
    let args = [
        "recover".as_ref(),
        src.as_os_str(),
        "-o".as_ref(),
        dest.as_os_str(),
    ];
    let Some(SmallDiskRun {
        code: rc,
        stderr: err,
        files,
    }) = on_a_small_disk(&mnt, "1m", 0, &args)?
    else {
        return Ok(());
    };
    assert_eq!(rc, 1, "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(!err.contains("malformed"), "{err}");
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"out.db.incomplete"), "{files:?}");
    assert!(!names.iter().any(|n| n.contains("report")), "{files:?}");
    Ok(())
}

/// The report's disk is full, the output's is not: the output is not committed without
/// its report (both or neither), exit 1, the reason named, the source untouched.
#[test]
fn a_report_that_cannot_be_written_keeps_the_output_from_being_committed() -> TestResult {
    let dir = Scratch::new("full-report-disk");
    let src = source(&dir)?;
    let before = std::fs::read(&src)?;
    let dest = dir.path("out.db");
    let mnt = dir.path("mnt");
    let report = mnt.join("report.json");
    let args = [
        "recover".as_ref(),
        src.as_os_str(),
        "-o".as_ref(),
        dest.as_os_str(),
        "--report".as_ref(),
        report.as_os_str(),
    ];
    // The tmpfs is filled to its last byte before the run.
    let Some(SmallDiskRun {
        code: rc,
        stderr: err,
        files,
    }) = on_a_small_disk(&mnt, "64k", 64 << 10, &args)?
    else {
        return Ok(());
    };
    assert_eq!(rc, 1, "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(
        !dest.exists(),
        "the output was committed without its report"
    );
    assert!(
        files.iter().all(|(n, _)| n == "fill"),
        "no report, not even an empty one: {files:?}"
    );
    assert!(std::fs::read(&src)? == before, "the source changed");
    Ok(())
}

/// A write-ahead log, a rollback journal or a compressed archive given as the database is
/// named for what it is, with what to pass instead; a path with nothing there is named as
/// such, whatever the command. Refused, nothing created.
#[test]
fn a_log_journal_or_archive_given_as_the_database_says_what_to_pass() -> TestResult {
    let dir = Scratch::new("files-not-a-database");
    let mut junk = vec![0x5a_u8; 8192];
    let wal = fixtures::build_agent_with_wal().wal;
    let mut journal = vec![0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7];
    journal.append(&mut junk.clone());
    let mut gzip = vec![0x1f, 0x8b, 0x08, 0x00];
    gzip.append(&mut junk.clone());
    let mut zstd = vec![0x28, 0xb5, 0x2f, 0xfd];
    zstd.append(&mut junk);
    for (name, bytes, is, pass) in [
        ("state.db-wal", wal, "write-ahead log", "without `-wal`"),
        (
            "state.db-journal",
            journal,
            "rollback journal",
            "without `-journal`",
        ),
        ("state.db.gz", gzip, "gzip archive", "gunzip"),
        ("state.db.zst", zstd, "zstd archive", "zstd -d"),
    ] {
        let src = dir.path(name);
        std::fs::write(&src, &bytes)?;
        let dest = dir.path("out.db");
        for command in ["inspect", "recover"] {
            let mut args: Vec<&std::ffi::OsStr> = vec![command.as_ref(), src.as_os_str()];
            if command == "recover" {
                args.extend(["-o".as_ref(), dest.as_os_str()]);
            }
            let out = crate::run_salvage(&args)?;
            let err = String::from_utf8(out.stderr)?;
            assert_eq!(out.status.code(), Some(2), "{command} {name}: {err}");
            assert!(
                err.contains(is) && err.contains(pass),
                "{command} {name}: {err}"
            );
        }
        assert!(!dest.exists() && !dir.path("out.db.incomplete").exists());
    }
    // Nothing at the path: said so, with no other command's name in the hint.
    let missing = dir.path("nothing-here.json");
    for command in ["inspect", "report"] {
        let out = crate::run_salvage(&[command.as_ref(), missing.as_os_str()])?;
        let err = String::from_utf8(out.stderr)?;
        assert_eq!(out.status.code(), Some(2), "{command}: {err}");
        assert!(err.contains("no file is at that path"), "{command}: {err}");
        assert!(!err.contains("salvage inspect"), "{command}: {err}");
    }
    Ok(())
}

/// The most memory `salvage recover` may hold for the 200 MB table below.
const OUT_OF_ORDER_RSS_LIMIT: u64 = 160 << 20;

/// A table of 24,000 rows of 8 KB whose root page lists its children backwards (its
/// cell pointers reversed): every leaf after the first holds lower rowids than the bulk
/// writer appended, so each of its rows is set aside for SQL. The rows set aside are kept
/// by where they are and read again as they go in: holding them held every payload joined
/// from its overflow pages (260 MB resident for this 200 MB file; 451 MB for one of
/// 410 MB). Every row is still recovered.
#[test]
fn rows_set_aside_from_a_tree_out_of_order_are_not_held_in_memory() -> TestResult {
    let dir = Scratch::new("out-of-order");
    let src = dir.path("src.db");
    let rows = 24_000;
    let root: u32 = {
        let conn = rusqlite::Connection::open(&src)?;
        conn.execute_batch(
            "PRAGMA page_size = 4096; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;
             CREATE TABLE t(id INTEGER PRIMARY KEY, kind TEXT, body TEXT);",
        )?;
        conn.execute(
            "WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < ?1)
             INSERT INTO t SELECT x, 'a', printf('%08d', x) || hex(zeroblob(4000)) FROM i",
            [rows],
        )?;
        conn.query_row(
            "SELECT rootpage FROM sqlite_schema WHERE name = 't'",
            [],
            |r| r.get(0),
        )?
    };
    // The root page only is read and written back: the test's own memory stays small.
    let at = (u64::from(root) - 1) * 4096;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&src)?;
    let mut page = vec![0u8; 4096];
    {
        use std::os::unix::fs::FileExt;
        file.read_exact_at(&mut page, at)?;
        assert_eq!(page[0], 5, "the root is an interior table page");
        let cells = usize::from(u16::from_be_bytes([page[3], page[4]]));
        assert!(cells > 10, "{cells} children");
        let pointers = 12..12 + 2 * cells;
        let mut reversed: Vec<[u8; 2]> = page[pointers.clone()]
            .chunks(2)
            .map(|p| [p[0], p[1]])
            .collect();
        reversed.reverse();
        page.splice(pointers, reversed.concat());
        file.write_all_at(&page, at)?;
    }
    let dest = dir.path("out.db");
    let child = crate::salvage()
        .args([
            "recover".as_ref(),
            src.as_os_str(),
            "-o".as_ref(),
            dest.as_os_str(),
        ])
        .arg("--allow-partial")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let (status, peak) = wait_measured(child)?;
    assert_eq!(status, Some(3), "loss reported, output committed");
    assert!(
        peak < OUT_OF_ORDER_RSS_LIMIT,
        "peak resident memory {} MiB",
        peak >> 20
    );
    let out = rusqlite::Connection::open(&dest)?;
    let (n, sum): (i64, i64) = out.query_row(
        "SELECT count(*), sum(CAST(substr(body, 1, 8) AS INTEGER)) FROM t",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    assert_eq!((n, sum), (rows, rows * (rows + 1) / 2));
    Ok(())
}
