//! The last stage: the finish. Views, then the virtual tables refilled from canonical rows,
//! then triggers (last, so that none fires on a recovered or synthesized row); the output
//! verified ([`verify`]); the loss report built; the output committed or withheld and the
//! report written ([`commit`]).

use pager::SchemaKind;

use crate::base::error::Error;
use crate::base::observer::{enter, Observer, Stage};
use crate::recover::evidence::Evidence;
use crate::recover::rebuild::Rebuilt;
use crate::recover::request::{Paths, Request};
use crate::report::{LossReport, TableReport};
use reconstruct::{LossSignal, Verdict};

pub mod accept;
pub(crate) mod commit;
pub(crate) mod report;
pub(crate) mod verify;
mod vtab;

/// How a recovery that ran to its end ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// No loss detected; the output is verified and committed at DEST.
    Complete,
    /// Loss detected and recorded; the partial output is committed (it was allowed).
    PartialCommitted,
    /// Loss detected; the output is withheld as DEST.incomplete. The report is written.
    Withheld,
    /// The output failed verification, or the source changed during the run; the output
    /// is kept as DEST.incomplete, the report is written.
    NotVerified {
        /// The source's hash after the run differs from the one before.
        source_changed: bool,
        /// Whether the output itself passed verification (it may have, while the source
        /// changed under the run).
        output_verified: bool,
    },
}

/// A recovery that ran to its end: how it ended, and its loss report as written.
#[derive(Debug)]
pub struct Recovery {
    /// How it ended.
    pub outcome: Outcome,
    /// The loss report (also written to `paths.report`).
    pub report: LossReport,
    /// Where everything is.
    pub paths: Paths,
}

impl Recovery {
    /// The verdict flags.
    pub fn verdict(&self) -> Verdict {
        self.report.flags
    }

    /// Every sign of loss, typed, in the report's order.
    pub fn signals(&self) -> &[LossSignal] {
        &self.report.evidence.signals
    }

    /// The report's entry for the table named `name`.
    pub fn table(&self, name: &str) -> Option<&TableReport> {
        self.report
            .tables
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(name))
    }

    /// The run as a `Result`: a run whose output failed verification is an error.
    pub fn verified(self) -> Result<Recovery, Error> {
        match self.outcome {
            Outcome::NotVerified {
                source_changed,
                output_verified,
            } => Err(Error::VerificationFailed {
                changed: changed_files(&self.report),
                incomplete: self.paths.incomplete,
                source_changed,
                output_verified,
            }),
            _ => Ok(self),
        }
    }
}

/// The evidence files that changed under the run, in words, as the report proves it:
/// hashed otherwise after the run than before, or seen changing under it.
fn changed_files(report: &crate::report::LossReport) -> Vec<&'static str> {
    let s = &report.source;
    let differs = |before: &Option<String>, after: &Option<String>| {
        before.is_some() && after.is_some() && before != after
    };
    [
        ("the source", "source", s.blake3_before != s.blake3_after),
        (
            "the write-ahead log",
            "wal",
            differs(
                &report.wal.hashes.blake3_before,
                &report.wal.hashes.blake3_after,
            ),
        ),
        (
            "the rollback journal",
            "journal",
            differs(
                &report.journal.hashes.blake3_before,
                &report.journal.hashes.blake3_after,
            ),
        ),
    ]
    .into_iter()
    .filter(|(_, role, differs)| *differs || s.changed_under_the_run.iter().any(|r| r == role))
    .map(|(named, _, _)| named)
    .collect()
}

/// The output with every object made: what is verified and committed.
pub struct Finish {
    rebuilt: Rebuilt,
    verified: bool,
}

impl Finish {
    /// Re-creates the views, refills the virtual tables, re-creates the triggers, and
    /// lists the registries the run made. The virtual tables are the last step that reads
    /// the source.
    pub fn objects(
        evidence: &Evidence<'_>,
        rebuilt: Rebuilt,
        observer: &dyn Observer,
    ) -> Result<Finish, Error> {
        let mut rebuilt = rebuilt;
        enter(observer, Stage::Views)?;
        crate::recover::objects::create_objects(evidence, &mut rebuilt.work, SchemaKind::View);
        enter(observer, Stage::VirtualTables)?;
        vtab::Refill {
            evidence,
            out: &rebuilt.work.out,
            survey: &rebuilt.found.survey,
            ledger: &mut rebuilt.work.ledger,
        }
        .run()
        .map_err(Error::db("refilling virtual tables"))?;
        enter(observer, Stage::Triggers)?;
        crate::recover::objects::create_objects(evidence, &mut rebuilt.work, SchemaKind::Trigger);
        // Last of all, when every table of the source is made: the list the output's
        // readers find the run's registries by, whatever the source's tables are named.
        rebuilt
            .work
            .out
            .list_registries()
            .map_err(Error::db("listing the registries"))?;
        Ok(Finish {
            rebuilt,
            verified: false,
        })
    }

    /// Checks the output.
    pub fn verify(&mut self, observer: &dyn Observer, integrity_check: bool) -> Result<(), Error> {
        enter(observer, Stage::Verifying)?;
        let w = &mut self.rebuilt.work;
        self.verified = verify::verify(&w.out, &w.tables, &mut w.ledger, integrity_check);
        Ok(())
    }

    /// Puts the output in write-ahead-log mode, as SQLite does (`PRAGMA journal_mode =
    /// WAL`: the header's read and write versions become 2). The output's connection
    /// holds its lock exclusively, so no `-shm` is made, and nothing is written to the
    /// log: the file is whole when the connection closes.
    pub fn wal_mode(&mut self) -> Result<(), Error> {
        let conn = &self.rebuilt.work.out.conn;
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .map_err(Error::db("putting the output in write-ahead-log mode"))?;
        if mode.eq_ignore_ascii_case("wal") {
            Ok(())
        } else {
            Err(Error::db("putting the output in write-ahead-log mode")(
                rusqlite::Error::InvalidParameterName(format!("the journal mode stayed {mode}")),
            ))
        }
    }

    /// Builds the loss report, commits or withholds the output, writes the report, with
    /// what proves the evidence unchanged and the output's hash.
    pub fn commit(
        self,
        evidence: &Evidence<'_>,
        request: &Request,
        proof: commit::Proof,
    ) -> Result<Recovery, Error> {
        commit::commit(evidence, request, self.rebuilt, self.verified, proof)
    }
}
