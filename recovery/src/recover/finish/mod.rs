//! The last stage: the finish. Views, then the virtual tables refilled from canonical rows,
//! then triggers (last, so that none fires on a recovered or synthesized row); the output
//! verified ([`verify`]); the loss report built; the output committed or withheld and the
//! report written ([`commit`]).

use pager::SchemaKind;

use crate::base::error::Error;
use crate::base::observer::{Observer, Stage};
use crate::recover::evidence::{After, Before, Changed, Evidence};
use crate::recover::rebuild::Rebuilt;
use crate::recover::request::Request;
use crate::recover::Recovery;

pub mod accept;
pub(crate) mod commit;
pub(crate) mod report;
pub(crate) mod verify;
mod vtab;

/// The output with every object made: what is verified and committed.
pub struct Finish {
    rebuilt: Rebuilt,
    verified: bool,
}

impl Finish {
    /// Re-creates the views, refills the virtual tables, re-creates the triggers. The
    /// virtual tables are the last step that reads the source.
    pub fn objects(
        evidence: &Evidence<'_>,
        rebuilt: Rebuilt,
        observer: &dyn Observer,
    ) -> Result<Finish, Error> {
        let mut rebuilt = rebuilt;
        observer.stage(Stage::Views);
        crate::recover::objects::create_objects(
            evidence,
            &rebuilt.out,
            &rebuilt.tables,
            &mut rebuilt.ledger,
            SchemaKind::View,
        );
        observer.stage(Stage::VirtualTables);
        vtab::Refill {
            evidence,
            out: &rebuilt.out,
            survey: &rebuilt.survey,
            ledger: &mut rebuilt.ledger,
        }
        .run()
        .map_err(Error::db("refilling virtual tables"))?;
        observer.stage(Stage::Triggers);
        crate::recover::objects::create_objects(
            evidence,
            &rebuilt.out,
            &rebuilt.tables,
            &mut rebuilt.ledger,
            SchemaKind::Trigger,
        );
        Ok(Finish {
            rebuilt,
            verified: false,
        })
    }

    /// Checks the output.
    pub fn verify(&mut self, observer: &dyn Observer) {
        observer.stage(Stage::Verifying);
        let r = &mut self.rebuilt;
        self.verified = verify::verify(&r.out, &r.tables, &mut r.ledger);
    }

    /// Builds the loss report, commits or withholds the output, writes the report.
    /// `hashes`: the evidence's hashes before and after the run; `output_sha256`: the
    /// output's as verified (none when it could not be read).
    pub fn commit(
        self,
        evidence: &Evidence<'_>,
        request: &Request,
        hashes: (Before, After),
        output_sha256: Option<String>,
        changed: Vec<Changed>,
    ) -> Result<Recovery, Error> {
        commit::commit(
            evidence,
            request,
            self.rebuilt,
            self.verified,
            hashes,
            output_sha256,
            changed,
        )
    }
}
