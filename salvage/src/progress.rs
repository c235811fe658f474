//! The binary's observers of a run. On a terminal: bars with counts, a rate and the time
//! left (`indicatif`). Elsewhere: a plain line per stage with the seconds since the start,
//! and with `SALVAGE_TIMINGS` set (for benchmarks) a line too when work on the second core
//! ends. `--quiet`: nothing.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{
    HumanCount, MultiProgress, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle,
};
use recovery::{Background, Observer, Progress, Quiet, Stage};

/// The bars on the terminal now, for a stop to clear them before its last words.
static SHOWN: std::sync::Mutex<Option<MultiProgress>> = std::sync::Mutex::new(None);

/// Takes the bars off the terminal and draws them no more (a stop by Ctrl-C, whose line
/// must not sit under a stale copy of them).
pub fn clear_for_exit() {
    if let Some(multi) = SHOWN.lock().ok().and_then(|mut s| s.take()) {
        let _ = multi.clear();
        multi.set_draw_target(ProgressDrawTarget::hidden());
    }
}

/// The observer the command line and the environment ask for.
pub fn observer(quiet: bool) -> Box<dyn Observer> {
    let timings = std::env::var_os("SALVAGE_TIMINGS").is_some();
    if quiet && !timings {
        Box::new(Quiet)
    } else if !timings && std::io::stderr().is_terminal() {
        Box::new(Bars::new())
    } else {
        Box::new(Lines {
            start: Instant::now(),
            background: timings,
        })
    }
}

/// A line per stage with the seconds since the start.
pub struct Lines {
    start: Instant,
    /// Also a line when work on the second core ends.
    background: bool,
}

impl Lines {
    fn line(&self, what: std::fmt::Arguments<'_>) {
        eprintln!(
            "salvage: {:7.3}s {what}",
            self.start.elapsed().as_secs_f64()
        );
    }
}

impl Observer for Lines {
    fn stage(&self, stage: Stage<'_>) {
        self.line(format_args!("{stage}"));
    }

    fn finished(&self, work: Background) {
        if self.background {
            self.line(format_args!("({work} done)"));
        }
    }

    fn done(&self) {
        self.line(format_args!("done"));
    }
}

/// Two bars on a terminal: the main thread's stage (with the rows and table pages read
/// while it reads them), and the survey of every page on the second core while it runs.
/// Lines fit 80 columns.
pub struct Bars {
    _multi: MultiProgress,
    main: ProgressBar,
    survey: ProgressBar,
    state: Mutex<State>,
}

/// What the main bar shows.
#[derive(Default)]
struct State {
    /// The stage's words, shown again with each count.
    words: String,
    /// Whether it shows counts (the stage reads rows) or a spinner.
    counting: bool,
}

/// Redraws per second: enough to see it move, few enough to cost nothing.
const REDRAWS: u8 = 8;

/// Width of a name shown in a stage, so that the line fits 80 columns.
const NAME_WIDTH: usize = 40;

impl Bars {
    fn new() -> Bars {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(REDRAWS));
        let main = multi.add(ProgressBar::new_spinner().with_style(spinner()));
        main.set_message("reading the schema");
        main.enable_steady_tick(Duration::from_millis(125));
        // Of 1 until the survey says how long it is: 0 %, not an empty bar shown full.
        let survey = multi.add(
            ProgressBar::new(1).with_style(bar("{prefix} [{bar:24}] {percent:>3}%  ETA {left}")),
        );
        survey.set_prefix("survey of every page");
        if let Ok(mut shown) = SHOWN.lock() {
            *shown = Some(multi.clone());
        }
        Bars {
            _multi: multi,
            main,
            survey,
            state: Mutex::new(State::default()),
        }
    }
}

/// The main bar outside the reading of rows: what it does and for how long.
fn spinner() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

/// A bar style from `template`, with `{rate}` (pages a second, thousands separated as
/// `{human_pos}` is) and `{left}` (the time left, as `m:ss`, or `h:mm:ss`).
fn bar(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
        .with_key("rate", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{}/s", HumanCount(s.per_sec() as u64));
        })
        .with_key("left", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = w.write_str(&clock(s.eta()));
        })
}

/// A duration as `m:ss`, or `h:mm:ss` from an hour.
fn clock(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// A run that ends early (a refusal, an error) leaves no bar behind on the terminal.
impl Drop for Bars {
    fn drop(&mut self) {
        self.survey.finish_and_clear();
        self.main.finish_and_clear();
    }
}

impl Observer for Bars {
    fn stage(&self, stage: Stage<'_>) {
        let words = match stage {
            Stage::Recovering { table } => {
                format!(
                    "recovering `{}`",
                    crate::inspect::ellipsize(table, NAME_WIDTH)
                )
            }
            other => other.to_string(),
        };
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if state.counting && !matches!(stage, Stage::Recovering { .. }) {
            state.counting = false;
            self.main.set_style(spinner());
        }
        self.main.set_message(words.clone());
        state.words = words;
    }

    fn progress(&self, progress: Progress) {
        match progress {
            Progress::Surveyed { steps, of } => {
                self.survey.set_length(of);
                self.survey.set_position(steps.min(of));
            }
            Progress::Read { pages, of, rows } => {
                let Ok(mut state) = self.state.lock() else {
                    return;
                };
                if !state.counting {
                    state.counting = true;
                    self.main.set_style(bar(
                        "{msg}\n  [{bar:24}] {human_pos} of {human_len} pages  {rate}  ETA {left}",
                    ));
                }
                self.main.set_length(of);
                self.main.set_position(pages.min(of));
                self.main
                    .set_message(format!("{}: {} rows read", state.words, HumanCount(rows)));
            }
            _ => {}
        }
    }

    fn finished(&self, work: Background) {
        if work == Background::Survey {
            self.survey.finish_and_clear();
        }
    }

    fn done(&self) {
        self.survey.finish_and_clear();
        self.main.finish_and_clear();
    }
}
