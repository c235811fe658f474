//! The documents a run writes: the loss report of a recovery (`docs/report.md`) and the
//! inspect document (`docs/inspect.md`), with what they share.

pub mod carved;
mod common;
pub mod history;
pub mod inspect;
mod loss;
pub mod manifest;
pub mod map;
pub mod provenance;

pub use common::{
    damaged_page_runs, page_size_decision, ArchiveMember, DamagedRun, FindingList, FindingReport,
    Identified, IdentifiedBy, PageSizeEvidenceReport, SqliteCheck, SqliteCheckState, Tool,
    VersionFit, FINDINGS_LISTED,
};
pub use inspect::InspectReport;
pub use loss::*;
