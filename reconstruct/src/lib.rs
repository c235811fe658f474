//! Recovery planning over [`pager`] views.
//!
//! `reconstruct` turns what the page reader found into a recovery plan and accounts for
//! what could not be recovered. It is pure logic: no filesystem, no output database, no
//! clock, no randomness. Same input, same plan.
//!
//! Principal types:
//! - [`TableShape`]: a table's declared columns (as SQLite parsed its CREATE statement)
//!   and how a stored record maps onto them (rowid alias, WITHOUT ROWID key order).
//! - [`plan()`] and [`Plan`]: orphan pages grouped and attributed to tables by evidence
//!   (child pointers, rowid ranges, record shape), with a confidence, or left to
//!   `lost_and_found`.
//! - [`TableRows`]: a table's rows streamed one at a time, each with its [`Provenance`].
//! - [`TableLoss`], [`LossSignal`], [`Verdict`]: per-table counts, every sign of loss as a
//!   typed signal, and the never-optimistic verdict flags.
//! - [`table::Disposition`], [`bound_table`], [`synthesize`], [`textcopy::resolve`]: what
//!   to do with each schema table, how many rows each lost, which parents to rebuild,
//!   which full-text tables hold faithful copies of a table's text.
//!
//! ```
//! use reconstruct::{Affinity, Column, ColumnDefault, ColumnKind, TableShape};
//! let shape = TableShape {
//!     name: "messages".into(),
//!     columns: vec![
//!         Column { name: "id".into(), decl_type: "INTEGER".into(), not_null: false, pk: 1, kind: ColumnKind::Ordinary, default: ColumnDefault::None },
//!         Column { name: "content".into(), decl_type: "TEXT".into(), not_null: false, pk: 0, kind: ColumnKind::Ordinary, default: ColumnDefault::None },
//!     ],
//!     without_rowid: false,
//!     strict: false,
//!     pk_indexed: false,
//! };
//! assert_eq!(shape.rowid_alias(), Some(0));
//! assert_eq!(shape.columns[1].affinity(), Affinity::Text);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod audit;
pub mod bounds;
pub mod claims;
pub mod collations;
pub mod formats;
pub mod inferred;
pub mod keyed;
pub mod loss;
pub mod magic;
pub mod naming;
pub mod partial;
pub mod placeholders;
pub mod plan;
pub mod references;
pub mod roots;
pub mod rowids;
pub mod rows;
pub mod rtree;
pub mod shape;
pub mod table;
#[cfg(test)]
mod testing;
pub mod textcopy;
pub mod time;
pub mod vtab;

pub use audit::{audit, sqlite_concerns, Concern, Severity};
pub use bounds::{
    bound_loss, bound_table, disguises_cells, Bounded, BoundsInput, KnownMissing, LossBounds,
    LostRange, Proven,
};
pub use claims::{contested_roots, settle_claims, ClaimEvidence, Claimant, Holder, PageCut};
pub use collations::collations_named;
pub use formats::{ColumnFormat, Format};
pub use inferred::{make_inferred, InferredMade, InferredReason, KnownFit};
pub use keyed::{name_without_rowid, KeyedTable};
pub use loss::{
    check_failed_in, file_signals, placeholder_signals, reaches_past_end, rows_in_place,
    rows_missing_from_index, signals_after_counts, sqlite_check_signal, table_signals,
    FailingCheck, LossSignal, TableFacts, TableLoss, Verdict, FAILING_ROWIDS_LISTED, N,
};
pub use magic::{magic, BlobKinds, Magic};
pub use naming::{
    index_columns, keyed_positions, match_sampled, name_inferred, sample_inferred, traced_groups,
    ColumnsAlike, IndexTrees, KnownMatch, KnownTable, Matching, Naming, OrphanIndex, Samples,
    Undecided,
};
pub use pager;
pub use partial::{CopyRow, IndexKeys, KnownValues, PartialRow, ResolvedCopy};
pub use placeholders::{
    key_text, plan_placeholder, relationships, synthesize, Blocked, ChildEvidence, Fill,
    ForeignKey, Made, MissingParents, ParentStore, Placeholder, PlaceholderOutcome,
    PlaceholderPlan, Relationship,
};
pub use plan::{
    orphan_groups, plan, sample_shape, Attribution, Confidence, Evidence, InferredTable,
    OrphanGroup, Plan, TableTarget,
};
pub use roots::{attribute_roots, Fit, NamedRoot, RootDecision};
pub use rowids::{RowidSet, Rowids};
pub use rows::{Provenance, RecoveredRow, RowEvent, RowPlace, TableRows};
pub use rtree::{rtree_rows, Coord, RtreeRow, RtreeRows};
pub use shape::{
    rowid_name_among, text_in_encoding, Affinity, Column, ColumnDefault, ColumnKind, DamageReason,
    FieldDamage, MappedRow, StrictType, TableShape,
};
pub use table::{creation_order, disposition, is_virtual, Disposition, TableId, TableStatus};
pub use textcopy::{read_trigger, Columns, TextCopy, TriggerEvent, TriggerInfo, TriggerInsert};
