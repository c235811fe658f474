//! What a run did with the write-ahead log and the rollback journal read with the source,
//! for the report, and the signs of loss they carry.

use pager::{Database, Finding, Journal, Wal};
use reconstruct::LossSignal;

use crate::recover::evidence::Digests;
use crate::recover::request::Paths;
use crate::report::{FindingList, JournalReport, LogHashes, WalReport};

/// A log's part of the report: its section, and what it says of loss.
pub struct LogOutcome<R> {
    /// The report's section.
    pub report: R,
    /// A sign of loss in the log.
    pub signal: Option<LossSignal>,
    /// A sentence for `warnings`.
    pub warning: Option<String>,
}

/// What the run did with the write-ahead log.
pub fn wal_outcome(
    paths: &Paths,
    wal: &Option<Result<Wal<'_>, Finding>>,
    db: &Database<'_>,
    hashes: LogHashes,
) -> LogOutcome<WalReport> {
    let mut r = WalReport {
        used: false,
        note: String::new(),
        frames_present: 0,
        frames_committed: 0,
        pages_from_wal: 0,
        hashes,
        findings: FindingList::new(&[]),
    };
    let mut signal = None;
    match wal {
        None if paths.wal_off => r.note = "the write-ahead log was not read (--no-wal)".into(),
        None => {
            r.note = paths.beside[0]
                .clone()
                .unwrap_or_else(|| "no write-ahead log beside the source".into())
        }
        Some(Err(f)) => {
            r.note = format!("the write-ahead log is unusable: {f}");
            signal = Some(LossSignal::WalUnusable {
                path: paths
                    .wal
                    .as_ref()
                    .map_or(String::new(), |p| p.display().to_string()),
                why: f.to_string(),
            });
            r.findings = FindingList::new(std::slice::from_ref(f));
        }
        Some(Ok(w)) => match refused_wal(db) {
            Some((wal, database)) => {
                r.frames_present = w.frames_present;
                r.frames_committed = w.frames_committed;
                r.note = format!(
                    "the write-ahead log's header gives page size {wal}, the database's is {database}, and no page 1 image in it proves the log's: its frames are not the database's pages, and it is not read"
                );
                signal = Some(LossSignal::WalPageSizeRefused { wal, database });
                r.findings = FindingList::new(&w.findings);
            }
            None => {
                r.used = true;
                r.frames_present = w.frames_present;
                r.frames_committed = w.frames_committed;
                r.pages_from_wal = w
                    .pages
                    .keys()
                    .filter(|p| p.get() <= db.page_count())
                    .count() as u64;
                r.note = format!(
                    "{} of {} frames are committed; {} pages read from the log",
                    w.frames_committed, w.frames_present, r.pages_from_wal
                );
                if let Some(Finding::WalFrameChecksumMismatch { frame }) = w
                    .findings
                    .iter()
                    .find(|f| matches!(f, Finding::WalFrameChecksumMismatch { .. }))
                {
                    let after = w.frames_present.saturating_sub(*frame);
                    if w.commits_past_break == 0 {
                        // No commit from the break on: a transaction a crash left open,
                        // which SQLite reads none of either (see `Wal::commits_past_break`).
                        r.note.push_str(&format!(
                            "; frame {frame} and those after it of this generation of the log belong to a transaction never committed (its frames' checksums are put right only at a commit): not read, as SQLite does not read them"
                        ));
                    } else {
                        signal = Some(LossSignal::WalFramesIgnored {
                            frame: *frame,
                            after,
                        });
                    }
                }
                r.findings = FindingList::new(&w.findings);
            }
        },
    }
    LogOutcome {
        report: r,
        signal,
        warning: paths.beside[0].clone(),
    }
}

/// What the run did with the rollback journal.
pub fn journal_outcome(
    paths: &Paths,
    journal: &Option<Journal<'_>>,
    wal: Option<&Wal<'_>>,
    db: &Database<'_>,
    hashes: LogHashes,
) -> LogOutcome<JournalReport> {
    let mut r = JournalReport {
        rolled_back: false,
        note: String::new(),
        hot: false,
        records_valid: 0,
        records_ignored: 0,
        pages_restored: 0,
        pages_before: None,
        super_journal: None,
        hashes,
        findings: FindingList::new(&[]),
    };
    let done = |report| LogOutcome {
        report,
        signal: None,
        warning: paths.beside[1].clone(),
    };
    let Some(j) = journal else {
        r.note = if paths.journal_off {
            "the rollback journal was not read (--no-journal)".into()
        } else {
            paths.beside[1]
                .clone()
                .unwrap_or_else(|| "no rollback journal beside the source".into())
        };
        return done(r);
    };
    let Some(h) = j.header else {
        r.note = "the rollback journal is not hot (no valid header: its transaction committed); nothing to roll back".into();
        return done(r);
    };
    r.hot = true;
    r.records_valid = j.records_valid;
    r.records_ignored = j.records_ignored;
    r.pages_before = Some(h.original_pages);
    r.super_journal = j.super_journal.clone();
    r.findings = FindingList::new(&j.findings);
    if super::super_journal_exists(j) == Some(false) {
        r.note = format!(
            "the hot journal names super-journal `{}`, which does not exist: its multi-database transaction committed, so nothing is rolled back (as SQLite does)",
            j.super_journal.as_deref().unwrap_or_default()
        );
        return done(r);
    }
    let refused = db.findings().iter().find_map(|f| match f {
        pager::Finding::JournalPageSizeDisagrees { journal, database } => {
            Some((*journal, *database))
        }
        _ => None,
    });
    if let Some((journal, database)) = refused {
        r.note = format!(
            "the hot journal's header gives page size {journal}, the database's is {database}, and no page 1 image in it proves the journal's: it is not rolled back, and the file is read as it stands"
        );
        return LogOutcome {
            report: r,
            signal: Some(LossSignal::JournalPageSizeRefused { journal, database }),
            warning: None,
        };
    }
    r.rolled_back = true;
    r.pages_restored = j
        .pages
        .keys()
        .filter(|p| p.get() <= db.page_count() && !wal.is_some_and(|w| w.pages.contains_key(p)))
        .count() as u64;
    // The size the journal records, as far as the file and the journal's pages reach.
    let size = if h.original_pages == db.page_count() {
        format!("its {} pages from before it", h.original_pages)
    } else {
        format!(
            "{} pages (the journal says {} before it; what neither the file nor the journal holds is not read)",
            db.page_count(),
            h.original_pages
        )
    };
    r.note = format!(
        "hot journal rolled back: {} pages restored to their state before an interrupted transaction, the database read at {size}{}",
        r.pages_restored,
        if wal.is_some() {
            "; the write-ahead log's committed frames then read over it"
        } else {
            ""
        }
    );
    let warning = Some(format!(
        "the source had a hot rollback journal: an interrupted transaction's changes were rolled back ({} pages restored), as SQLite does when it opens the database",
        r.pages_restored
    ));
    if let Some(beside) = &paths.beside[1] {
        r.note = format!("{}; {beside}", r.note);
    }
    let signal = (j.records_ignored > 0).then_some(LossSignal::JournalRecordsDamaged {
        records: j.records_ignored,
    });
    LogOutcome {
        report: r,
        signal,
        warning,
    }
}

impl LogHashes {
    /// A log's hashes: both read before the run, and the BLAKE3 read after.
    pub fn of(before: Option<&Digests>, after: Option<&String>) -> LogHashes {
        LogHashes {
            sha256_before: before.map(|d| d.sha256.clone()),
            blake3_before: before.map(|d| d.blake3.clone()),
            blake3_after: after.cloned(),
        }
    }
}

/// The log's page size and the database's, when the database was opened without the log
/// because the two disagree (`Finding::WalPageSizeDisagrees`).
fn refused_wal(db: &Database<'_>) -> Option<(u32, u32)> {
    db.findings().iter().find_map(|f| match f {
        Finding::WalPageSizeDisagrees { wal, database } => Some((*wal, *database)),
        _ => None,
    })
}
