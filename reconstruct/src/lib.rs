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
//! - [`TableLoss`], [`assess`]: per-table counts and the never-optimistic verdict flags.
//!
//! ```
//! use reconstruct::{Affinity, Column, ColumnKind, TableShape};
//! let shape = TableShape {
//!     name: "messages".into(),
//!     columns: vec![
//!         Column { name: "id".into(), decl_type: "INTEGER".into(), not_null: false, pk: 1, kind: ColumnKind::Ordinary, has_default: false },
//!         Column { name: "content".into(), decl_type: "TEXT".into(), not_null: false, pk: 0, kind: ColumnKind::Ordinary, has_default: false },
//!     ],
//!     without_rowid: false,
//! };
//! assert_eq!(shape.rowid_alias(), Some(0));
//! assert_eq!(shape.columns[1].affinity(), Affinity::Text);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]
#![cfg_attr(
    test,
    allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]

pub mod bounds;
pub mod loss;
pub mod placeholders;
pub mod plan;
pub mod rows;
pub mod rtree;
pub mod shape;
pub mod textcopy;

pub use bounds::{bound_loss, KnownMissing, LossBounds, LostRange, Proven};
pub use loss::{assess, Assessment, TableLoss};
pub use pager;
pub use placeholders::{
    key_text, plan_placeholder, ChildEvidence, Fill, Placeholder, PlaceholderPlan, Relationship,
};
pub use plan::{
    orphan_groups, plan, Attribution, Confidence, Evidence, InferredTable, OrphanGroup, Plan,
    TableTarget,
};
pub use rows::{Provenance, RecoveredRow, RowEvent, TableRows};
pub use rtree::{rtree_rows, Coord, RtreeRow, RtreeRows};
pub use shape::{Affinity, Column, ColumnKind, MappedRow, TableShape};
pub use textcopy::{read_trigger, TextCopy, TriggerEvent, TriggerInfo, TriggerInsert};
