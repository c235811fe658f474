//! The binary's [`Observer`]: a status line on stderr when it is a terminal, or, with
//! `SALVAGE_TIMINGS` set (for benchmarks), a line per step with the seconds since the start.

use std::io::IsTerminal;
use std::time::Instant;

use recovery::{Background, Observer, Stage};

/// Progress on stderr.
pub struct Progress {
    on: bool,
    timings: Option<Instant>,
}

impl Progress {
    /// Progress as the environment asks for it.
    pub fn from_env() -> Progress {
        Progress {
            on: std::io::stderr().is_terminal(),
            timings: std::env::var_os("SALVAGE_TIMINGS").map(|_| Instant::now()),
        }
    }
}

impl Observer for Progress {
    fn stage(&self, stage: Stage<'_>) {
        if let Some(start) = self.timings {
            eprintln!("salvage: {:7.3}s {stage}", start.elapsed().as_secs_f64());
        } else if self.on {
            eprint!("\r\x1b[2Ksalvage: {stage}");
        }
    }

    fn finished(&self, work: Background) {
        if let Some(start) = self.timings {
            eprintln!(
                "salvage: {:7.3}s ({work} done)",
                start.elapsed().as_secs_f64()
            );
        }
    }

    fn done(&self) {
        if let Some(start) = self.timings {
            eprintln!("salvage: {:7.3}s done", start.elapsed().as_secs_f64());
        } else if self.on {
            eprint!("\r\x1b[2K");
        }
    }
}
