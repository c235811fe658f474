//! `salvage scan`: the library's scan, a line per database as each is done, and the
//! summary's counts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use recovery::scan::{EntryOutcome, ScanEntry, ScanObserver, ScanOptions};

use crate::cli::ScanArgs;
use crate::run::{Error, Exit};

/// A line per database on stderr: how many are done of how many, the bytes, the rate
/// and the time left.
struct Lines {
    quiet: bool,
    start: Instant,
    total: AtomicU64,
    bytes: AtomicU64,
    done: AtomicU64,
    done_bytes: AtomicU64,
}

impl ScanObserver for Lines {
    fn found(&self, databases: u64, bytes: u64) {
        self.total.store(databases, Ordering::Relaxed);
        self.bytes.store(bytes, Ordering::Relaxed);
        if !self.quiet {
            eprintln!(
                "salvage scan: {databases} databases and logs found, {}",
                size(bytes)
            );
        }
    }

    fn done(&self, entry: &ScanEntry) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        let bytes = self.done_bytes.fetch_add(entry.size, Ordering::Relaxed) + entry.size;
        if self.quiet {
            return;
        }
        let secs = self.start.elapsed().as_secs_f64().max(0.001);
        let total = self.bytes.load(Ordering::Relaxed);
        let left = match bytes {
            0 => String::new(),
            b => format!(
                ", about {:.0} s left",
                secs * (total.saturating_sub(b)) as f64 / b as f64
            ),
        };
        eprintln!(
            "  [{done}/{}] {} {}: {}{}, {:.1} files/s{left}",
            self.total.load(Ordering::Relaxed),
            outcome(entry.outcome),
            crate::shown(std::path::Path::new(&entry.path)),
            entry.verdict,
            entry
                .applications
                .first()
                .map(|a| format!(", {a}"))
                .unwrap_or_default(),
            f64::from(u32::try_from(done).unwrap_or(u32::MAX)) / secs,
        );
    }
}

fn outcome(o: EntryOutcome) -> &'static str {
    match o {
        EntryOutcome::Complete => "complete",
        EntryOutcome::Partial => "PARTIAL",
        EntryOutcome::Withheld => "WITHHELD",
        EntryOutcome::NotVerified => "NOT VERIFIED",
        EntryOutcome::Triaged => "triaged",
        EntryOutcome::Failed => "FAILED",
    }
}

fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30)),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / f64::from(1u32 << 20)),
        b => format!("{:.1} KiB", b as f64 / 1024.0),
    }
}

/// Runs `salvage scan`.
pub fn run(args: &ScanArgs) -> Result<Exit, Error> {
    let lines = Lines {
        quiet: args.quiet,
        start: Instant::now(),
        total: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
        done: AtomicU64::new(0),
        done_bytes: AtomicU64::new(0),
    };
    let summary = recovery::scan::scan(
        &ScanOptions {
            sources: args.sources.clone(),
            out: args.out.clone(),
            jobs: args.jobs,
            allow_partial: args.allow_partial,
            carve: args.carve,
            history: args.history,
            triage_only: args.triage_only,
        },
        &lines,
    )?;
    // For a person: each database's report as a page, and the index of them all.
    let pages = crate::scan_html::write_reports(&args.out, &summary);
    pages
        .and_then(|pages| crate::scan_html::write_index(&args.out, &summary, &pages))
        .map_err(|source| recovery::Error::Write {
            path: args.out.join("index.html"),
            source,
        })?;
    // For a case-management system: the whole scan as one CASE/UCO graph.
    let graph = args.out.join("scan.jsonld");
    crate::scan_html::write_whole(&graph, &crate::scan_case::render(&summary)).map_err(
        |source| recovery::Error::Write {
            path: graph.clone(),
            source,
        },
    )?;
    let count = |o: EntryOutcome| summary.entries.iter().filter(|e| e.outcome == o).count();
    eprintln!(
        "salvage scan: {} databases and logs ({} complete, {} partial, {} withheld, {} triaged, {} failed; {} kept from an earlier run); {} other files skipped",
        summary.entries.len(),
        count(EntryOutcome::Complete),
        count(EntryOutcome::Partial),
        count(EntryOutcome::Withheld) + count(EntryOutcome::NotVerified),
        count(EntryOutcome::Triaged),
        count(EntryOutcome::Failed),
        summary.resumed,
        summary.skipped_files,
    );
    eprintln!(
        "  summary: `{}` (and scan.csv; for a person, index.html; as CASE/UCO JSON-LD, scan.jsonld)",
        crate::shown(args.out.join("scan.json"))
    );
    Ok(if summary.loss() {
        Exit::Damaged
    } else {
        Exit::Clean
    })
}
