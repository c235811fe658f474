//! How a caller follows a run: the pipeline tells an [`Observer`] which stage it is in and
//! never prints. The `salvage` binary shows it on a terminal (or as timings); a program
//! that embeds the library may log it, or pass [`Quiet`].

use std::fmt;

/// A step of the run on its main thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stage<'a> {
    /// A table's rows are written.
    Recovering {
        /// The table.
        table: &'a str,
    },
    /// The rows of a table the bulk writer set aside (out of rowid order, damaged), and
    /// those of its orphan pages, are written through SQL.
    SetAside {
        /// The table.
        table: &'a str,
    },
    /// Waiting for the survey of every page.
    Surveying,
    /// Orphan pages are attributed to tables.
    PlanningOrphans,
    /// Rows no table could be given are written to `lost_and_found`.
    LostAndFound,
    /// Indexes are re-created.
    Indexes,
    /// Lost rows are rebuilt from index entries and full-text copies.
    PartialRows,
    /// Lost parent rows are rebuilt as registered placeholders.
    Placeholders,
    /// Views are re-created.
    Views,
    /// Full-text tables and R-trees are refilled.
    VirtualTables,
    /// Triggers are re-created.
    Triggers,
    /// The output is checked.
    Verifying,
    /// A repair asks whether the database needs one.
    Examining,
    /// A repair copies the original and its sidecars into its archive.
    Archiving,
    /// A repair checks its recovery in the original's journal mode.
    Confirming,
    /// A repair puts its recovery at the database's path.
    Switching,
}

impl fmt::Display for Stage<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stage::Recovering { table } => write!(f, "recovering `{table}`"),
            Stage::SetAside { table } => {
                write!(
                    f,
                    "writing `{table}`'s rows set aside and from orphan pages"
                )
            }
            // The survey runs on the second core from the start: this is the wait for it.
            Stage::Surveying => f.write_str("waiting for the page survey (begun at the start)"),
            Stage::PlanningOrphans => f.write_str("planning orphan pages"),
            Stage::LostAndFound => f.write_str("writing lost_and_found"),
            Stage::Indexes => f.write_str("re-creating indexes"),
            Stage::PartialRows => {
                f.write_str("rebuilding partial rows from index entries and text copies")
            }
            Stage::Placeholders => f.write_str("rebuilding lost parent rows"),
            Stage::Views => f.write_str("re-creating views"),
            Stage::VirtualTables => f.write_str("rebuilding full-text indexes"),
            Stage::Triggers => f.write_str("re-creating triggers"),
            Stage::Verifying => f.write_str("verifying the output"),
            Stage::Examining => f.write_str("checking whether the database needs a repair"),
            Stage::Archiving => f.write_str("archiving the original and its sidecars"),
            Stage::Confirming => {
                f.write_str("checking the recovery in the original's journal mode")
            }
            Stage::Switching => f.write_str("switching the recovery into place"),
        }
    }
}

/// Work that runs on the second core beside the stages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Background {
    /// The first hash of the evidence (SHA-256 and BLAKE3): the main file's read after the
    /// survey, a log's from the start.
    FirstHash,
    /// The survey of every page.
    Survey,
    /// The loss bounds of damaged tables.
    LossBounds,
    /// The hash of the evidence after its last read.
    SecondHash,
    /// The hash of the finished output.
    OutputHash,
}

impl fmt::Display for Background {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Background::FirstHash => "first hash of the source",
            Background::Survey => "survey",
            Background::LossBounds => "loss bounds",
            Background::SecondHash => "second hash of the source",
            Background::OutputHash => "hash of the output",
        })
    }
}

/// How far the run has come, in counts a caller can show with a rate and an estimate of
/// the time left. Sent every few hundred pages, never per row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Progress {
    /// The survey on the second core: `steps` of about `of` (it reads each page once:
    /// walks every structure, then classifies the pages no walk reached; the pages of
    /// orphan trees are read again at its end, the count staying at `of`).
    Surveyed {
        /// Pages read.
        steps: u64,
        /// The pages of the file.
        of: u64,
    },
    /// The main thread's reading of rows from the file's tables.
    Read {
        /// Table pages read so far.
        pages: u64,
        /// Pages in the file: more than the tables hold (indexes, free pages), so the
        /// reading ends below it.
        of: u64,
        /// Rows read so far.
        rows: u64,
    },
}

/// Told what the run is doing. Called from the run's threads, so it is `Sync`.
pub trait Observer: Sync {
    /// A stage starts on the run's main thread.
    fn stage(&self, _stage: Stage<'_>) {}
    /// Work advanced.
    fn progress(&self, _progress: Progress) {}
    /// Work on the second core ended.
    fn finished(&self, _work: Background) {}
    /// The run is over.
    fn done(&self) {}
    /// Whether the run goes on; asked at each stage and every few hundred pages read, on
    /// the run's main thread and by the work beside it on other threads. `false` stops it
    /// there with [`crate::Error::Stopped`]: nothing is committed, and its partial output
    /// is removed.
    fn go_on(&self) -> bool {
        true
    }
}

/// Tells `observer` that `stage` starts, and stops the run there when the caller asks.
pub(crate) fn enter(observer: &dyn Observer, stage: Stage<'_>) -> Result<(), crate::Error> {
    observer.stage(stage);
    match observer.go_on() {
        true => Ok(()),
        false => Err(crate::Error::Stopped),
    }
}

/// An observer that ignores everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct Quiet;

impl Observer for Quiet {}
