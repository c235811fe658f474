//! The binary's observers of a run: a status line on stderr when it is a terminal, or,
//! with `SALVAGE_TIMINGS` set (for benchmarks), a line per step with the seconds since the
//! start and a line when work on the second core ends.

use std::io::IsTerminal;
use std::time::Instant;

use recovery::{Background, Observer, Quiet, Stage};

/// The observer the environment asks for.
pub fn from_env() -> Box<dyn Observer> {
    if std::env::var_os("SALVAGE_TIMINGS").is_some() {
        Box::new(Timings {
            start: Instant::now(),
        })
    } else if std::io::stderr().is_terminal() {
        Box::new(StatusLine)
    } else {
        Box::new(Quiet)
    }
}

/// One line on a terminal, rewritten at each stage and cleared at the end.
pub struct StatusLine;

impl Observer for StatusLine {
    fn stage(&self, stage: Stage<'_>) {
        eprint!("\r\x1b[2Ksalvage: {stage}");
    }

    fn done(&self) {
        eprint!("\r\x1b[2K");
    }
}

/// A line per stage with the seconds since the start, for benchmarks.
pub struct Timings {
    start: Instant,
}

impl Timings {
    fn line(&self, what: std::fmt::Arguments<'_>) {
        eprintln!(
            "salvage: {:7.3}s {what}",
            self.start.elapsed().as_secs_f64()
        );
    }
}

impl Observer for Timings {
    fn stage(&self, stage: Stage<'_>) {
        self.line(format_args!("{stage}"));
    }

    fn finished(&self, work: Background) {
        self.line(format_args!("({work} done)"));
    }

    fn done(&self) {
        self.line(format_args!("done"));
    }
}
