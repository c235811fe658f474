//! What a person sees during a long run: on a terminal, counts with a rate and the time
//! left; elsewhere a plain line per stage; with `--quiet`, nothing but the summary.

use crate::{salvage, Scratch, TestResult};

/// An agent store big enough that reading its rows takes a while, and its recovery.
fn big_store(scratch: &Scratch) -> Result<std::path::PathBuf, Box<dyn std::error::Error>> {
    let src = scratch.path("state.db");
    fixtures::write_agent_store(&src, 48 << 20, 7)?;
    Ok(src)
}

/// What `salvage ARGS` writes to a pseudo-terminal of 80 columns as its stderr, and its
/// exit code.
fn on_a_terminal(
    args: &[&std::ffi::OsStr],
) -> Result<(String, Option<i32>), Box<dyn std::error::Error>> {
    let mut command = salvage();
    command.args(args).env_remove("SALVAGE_TIMINGS");
    crate::on_a_pty(command, crate::Shown::Stderr, 80, None)
}

/// The lines a terminal of 80 columns shows from `raw`: split at carriage returns and line
/// feeds and wrapped at the 80th column, with the escape sequences that move the cursor
/// and clear lines taken out.
fn screen_lines(raw: &str) -> Vec<String> {
    let mut plain = String::new();
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            if chars.peek() == Some(&'[') {
                chars.next();
                // Parameters, then one final letter.
                for p in chars.by_ref() {
                    if p.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        plain.push(c);
    }
    let mut lines = Vec::new();
    for segment in plain.split(['\r', '\n']) {
        let chars: Vec<char> = segment.chars().collect();
        for row in chars.chunks(80) {
            let row: String = row.iter().collect();
            if !row.trim().is_empty() {
                lines.push(row.trim_end().to_string());
            }
        }
    }
    lines
}

#[test]
fn a_terminal_sees_counts_a_rate_and_the_time_left() -> TestResult {
    let scratch = Scratch::new("progress-tty");
    let src = big_store(&scratch)?;
    let dest = scratch.path("out.db");
    let (seen, code) = on_a_terminal(&[
        "recover".as_ref(),
        src.as_os_str(),
        "-o".as_ref(),
        dest.as_os_str(),
    ])?;
    assert_eq!(code, Some(0), "{seen}");
    let lines = screen_lines(&seen);
    // While the rows of `messages` are read: the table, the rows read, the pages read of
    // the file's, a rate and the time left.
    let counting = lines
        .iter()
        .position(|l| l.starts_with("recovering `messages`: ") && l.ends_with(" rows read"))
        .ok_or_else(|| format!("no count of rows read on the terminal:\n{lines:#?}"))?;
    let counts = lines
        .iter()
        .skip(counting)
        .find(|l| l.contains(" pages ") && l.contains("/s") && l.contains("ETA "))
        .ok_or_else(|| format!("no pages, rate and time left:\n{lines:#?}"))?;
    let of = counts
        .split(" of ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .ok_or("no `N of M pages`")?
        .replace(',', "");
    assert_eq!(
        of.parse::<u64>()?,
        std::fs::metadata(&src)?.len() / 4096,
        "{counts}"
    );
    // The survey of every page on the second core has its own bar.
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("survey of every page [")),
        "{lines:#?}"
    );
    // The summary is still written, once the bars are cleared.
    assert!(seen.contains("complete: no loss detected"), "{seen}");
    Ok(())
}

#[test]
fn elsewhere_each_stage_is_one_plain_line_and_quiet_is_quiet() -> TestResult {
    let scratch = Scratch::new("progress-lines");
    let src = scratch.path("state.db");
    fixtures::write_agent_store(&src, 1 << 20, 3)?;
    let out = salvage()
        .env_remove("SALVAGE_TIMINGS")
        .args(["recover".as_ref(), src.as_os_str(), "-o".as_ref()])
        .arg(scratch.path("out.db"))
        .output()?;
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8(out.stderr)?;
    assert!(
        !stderr.contains('\x1b') && !stderr.contains('\r'),
        "{stderr:?}"
    );
    let stages: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("salvage: "))
        .map(|l| l.trim_start().split_once("s ").map_or(l, |(_, what)| what))
        .collect();
    // Each table is said once: the bulk writer's table is not said again when it has no
    // rows set aside.
    assert_eq!(
        stages
            .iter()
            .filter(|s| **s == "recovering `messages`")
            .count(),
        1,
        "{stderr}"
    );
    // The bulk writer reads the big table while the survey runs; then every table takes
    // what the survey found.
    let wanted = [
        "recovering `messages`",
        "waiting for the page survey (begun at the start)",
        "planning orphan pages",
        "recovering `sessions`",
        "re-creating indexes",
        "verifying the output",
        "done",
    ];
    let mut at = 0;
    for w in wanted {
        at += stages
            .iter()
            .skip(at)
            .position(|s| *s == w)
            .ok_or_else(|| format!("no line `{w}` in order:\n{stderr}"))?;
    }
    assert!(stderr.contains("complete: no loss detected"), "{stderr}");

    let quiet = salvage()
        .env_remove("SALVAGE_TIMINGS")
        .args(["recover".as_ref(), src.as_os_str(), "-o".as_ref()])
        .arg(scratch.path("quiet.db"))
        .arg("--quiet")
        .output()?;
    assert_eq!(quiet.status.code(), Some(0));
    let stderr = String::from_utf8(quiet.stderr)?;
    assert!(
        !stderr.lines().any(|l| l.starts_with("salvage: ")),
        "{stderr}"
    );
    assert!(stderr.contains("complete: no loss detected"), "{stderr}");
    Ok(())
}

/// A program that embeds the library stops a run through its observer: asked every few
/// hundred pages and at each stage, a "no" ends the run with `Error::Stopped`, nothing
/// committed, no report, and the partial output removed, so that the same run can be
/// asked for again at once; it is not a refusal.
#[test]
fn an_observer_that_says_stop_stops_the_run_with_nothing_committed() -> TestResult {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    struct StopAfter {
        reads: AtomicU64,
        after: u64,
        verified: AtomicBool,
    }
    impl recovery::Observer for StopAfter {
        fn stage(&self, stage: recovery::Stage<'_>) {
            if stage == recovery::Stage::Verifying {
                self.verified.store(true, Ordering::Relaxed);
            }
        }
        fn progress(&self, progress: recovery::Progress) {
            if let recovery::Progress::Read { .. } = progress {
                self.reads.fetch_add(1, Ordering::Relaxed);
            }
        }
        fn go_on(&self) -> bool {
            self.reads.load(Ordering::Relaxed) < self.after
        }
    }
    let scratch = Scratch::new("progress-stop");
    let src = big_store(&scratch)?;
    let dest = scratch.path("out.db");
    let options = recovery::RecoverOptions::new(&src, &dest);
    let stop = StopAfter {
        reads: AtomicU64::new(0),
        after: 2,
        verified: AtomicBool::new(false),
    };
    let stopped = recovery::recover(&options, &stop);
    assert!(
        matches!(stopped, Err(recovery::Error::Stopped)),
        "{stopped:?}"
    );
    assert!(!stopped.as_ref().is_err_and(recovery::Error::is_refusal));
    // Stopped where it was asked: no more pages read, no later stage begun.
    assert_eq!(stop.reads.load(Ordering::Relaxed), 2);
    assert!(!stop.verified.load(Ordering::Relaxed));
    for left in ["out.db", "out.db.incomplete", "out.db.report.json"] {
        assert!(!scratch.path(left).exists(), "{left}");
    }
    // Nothing blocks the same run asked again.
    let done = recovery::recover(&options, &recovery::Quiet)?;
    assert!(done.report.output.committed);
    Ok(())
}

/// What a terminal of 80 columns shows at the end of `raw`: each line as the cursor left
/// it, after carriage returns, line feeds, cursor moves up (`ESC [ n A`) and line clears
/// (`ESC [ 2K`, `ESC [ K`, `ESC [ J`); other escapes are dropped.
fn final_screen(raw: &str) -> Vec<String> {
    let mut screen: Vec<String> = vec![String::new()];
    let (mut row, mut col) = (0usize, 0usize);
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => col = 0,
            '\n' => {
                row += 1;
                col = 0;
                if screen.len() <= row {
                    screen.push(String::new());
                }
            }
            '\x1b' if chars.peek() == Some(&'[') => {
                chars.next();
                let mut arg = String::new();
                let mut end = ' ';
                for d in chars.by_ref() {
                    if d.is_ascii_alphabetic() {
                        end = d;
                        break;
                    }
                    arg.push(d);
                }
                let n: usize = arg.trim_start_matches('?').parse().unwrap_or(1);
                match end {
                    'A' => row = row.saturating_sub(n.max(1)),
                    'K' if arg == "2" => screen[row].clear(),
                    'K' => screen[row].truncate(col),
                    'J' => {
                        screen[row].truncate(col);
                        screen.truncate(row + 1);
                    }
                    'G' => col = n.saturating_sub(1),
                    _ => {}
                }
            }
            c if c.is_control() => {}
            c => {
                let line = &mut screen[row];
                let mut cells: Vec<char> = line.chars().collect();
                if cells.len() <= col {
                    cells.resize(col, ' ');
                    cells.push(c);
                } else {
                    cells[col] = c;
                }
                *line = cells.into_iter().collect();
                col += 1;
            }
        }
    }
    screen
        .into_iter()
        .map(|l| l.trim_end().to_string())
        .collect()
}

/// Ctrl-C on a terminal: the bars are taken off before the stop's line, which stands
/// alone, once, with nothing of the bars left above it.
#[test]
fn ctrl_c_on_a_terminal_leaves_no_bar_behind() -> TestResult {
    let scratch = Scratch::new("progress-ctrl-c");
    let src = big_store(&scratch)?;
    let dest = scratch.path("out.db");
    let mut command = salvage();
    command
        .arg("recover")
        .arg(&src)
        .arg("-o")
        .arg(&dest)
        .env_remove("SALVAGE_TIMINGS");
    // Ctrl-C once rows are being read, with both bars on the screen.
    let (seen, code) = crate::on_a_pty(command, crate::Shown::Stderr, 80, Some("rows read"))?;
    assert_eq!(code, Some(130), "{seen:?}");
    let screen: Vec<String> = final_screen(&seen)
        .into_iter()
        .filter(|l| !l.is_empty())
        .collect();
    assert!(
        screen
            .first()
            .is_some_and(|l| l.starts_with("salvage: stopped;")),
        "{screen:#?}"
    );
    for bar in ["survey of every page", "recovering", "reading the schema"] {
        assert!(
            !screen.iter().any(|l| l.contains(bar)),
            "{bar}: {screen:#?}"
        );
    }
    Ok(())
}
