//! `recovery`: the salvage of a damaged SQLite database, carried out in-process.
//!
//! A recovery reads the evidence without SQLite (the [`pager`] walks its b-trees byte by
//! byte), lets [`reconstruct`] make every decision, and writes a new database with SQLite,
//! in stages; each stage is a module and a type that hands its state to the next:
//!
//! ```text
//! request ─▶ evidence ─▶ plan ─▶ load ─────────▶ rebuild ─────────▶ finish ─▶ Recovery
//! (checked)  (mapped,    (output, (bulk b-trees,  (loss bounds,      (views, virtual
//!             hashed,     tables)  orphans, SQL,   partial rows,      tables, triggers,
//!             logs read)           lost_and_found, placeholders)      verify, commit,
//!                                  indexes)                           report)
//! ```
//!
//! Beside the stages, the second core hashes the evidence, surveys every page, and bounds
//! each damaged table's loss. Principal types: [`RecoverOptions`] (the request),
//! [`Recovery`] (the outcome, with its [`report::LossReport`]), [`Observer`] (progress),
//! [`Error`] (what ends a run: only I/O on the source or the output).
//!
//! ```
//! use recovery::{recover, LossSignal, Outcome, Quiet, RecoverOptions};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // An agent's session store whose `sessions` table lost its only page.
//! let fixture = fixtures::build(fixtures::Kind::AgentStore, &fixtures::Options::default());
//! let mut bytes = fixture.bytes.clone();
//! fixtures::apply(&mut bytes, &fixtures::Damage::ZeroPage(fixture.roots["sessions"]))?;
//! let dir = std::env::temp_dir().join(format!("recovery-doctest-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let (src, dest) = (dir.join("state.db"), dir.join("recovered.db"));
//! std::fs::write(&src, &bytes)?;
//!
//! let mut options = RecoverOptions::new(&src, &dest);
//! options.allow_partial = true;
//! let recovery = recover(&options, &Quiet)?;
//!
//! // Loss is never reported as clean: the output is committed as partial.
//! assert_eq!(recovery.outcome, Outcome::PartialCommitted);
//! assert!(recovery.verdict().loss_detected);
//! // Every message survived; each lost session is a registered placeholder.
//! let sessions = recovery.table("sessions").expect("sessions is reported");
//! assert!(sessions.placeholders > 0);
//! assert!(recovery.signals().iter().any(|s| matches!(
//!     s,
//!     LossSignal::PlaceholdersMade { parent, child, .. } if parent == "sessions" && child == "messages"
//! )));
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(()) }
//! ```
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub(crate) mod base;
pub(crate) mod custody;
pub mod export;
pub mod inspect;
pub(crate) mod recover;
pub mod report;

pub use base::error::{escape_controls, shown, Error, LooksLike};
pub use base::observer::{Background, Observer, Progress, Quiet, Stage};
pub use custody::{backup, bundle, repair, scan};
pub use reconstruct::{LossSignal, TableId, TableStatus, Verdict};
pub use recover::finish::accept::{accept, accept_by, AcceptOptions};
pub use recover::profiles::{
    shipped as shipped_profiles, Profile, ProfileChoice, Provenance, TimestampColumn,
};
pub use recover::{recover, Log, Outcome, RecoverOptions, Recovery};
pub use report::LossReport;

/// The recovery's stages, for tests that stop a run after one of them
/// (`tests/pipeline.rs`) or read its parts, and the crash switch and path helpers the
/// custody tests use: not the library's interface.
#[doc(hidden)]
pub mod stages {
    pub use crate::base::{crash, paths};
    pub use crate::recover::{evidence, load, plan, rebuild, request};
}
