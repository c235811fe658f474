//! Recovery planning over [`pager`] views.
//!
//! `reconstruct` turns what the page reader found into a recovery plan: rows assigned to
//! tables, placeholder parents synthesized for orphaned children, and the loss accounting
//! that says exactly what could not be recovered. It is pure logic: no filesystem, no output
//! database, no clock, no randomness. Same input, same plan.
//!
//! The crate is empty until the salvage run (`salvage recover`) lands; the page reader it
//! builds on is complete.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

pub use pager;
