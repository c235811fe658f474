//! Loss accounting: what each table got back, every sign that a row may be missing or
//! damaged as a typed [`LossSignal`], and the verdict flags.
//!
//! The flags are never optimistic: `loss_detected` is raised by any signal, and `complete`
//! needs both no signal and a verified output. [`Verdict::of`] is the one place they are
//! computed; signals become sentences ([`std::fmt::Display`]) only when a report is
//! written.
//!
//! Its parts:
//! - `table_loss`: [`TableLoss`], what one table got back, counted;
//! - `signal`: [`LossSignal`], one variant per sign of loss, each with its real counts;
//! - `sentence`: the sentence of each signal, and [`N`], a count with its noun;
//! - `gather`: the functions that make signals from what a run knows: a table's counts
//!   ([`table_signals`]), the file's survey ([`file_signals`]), the placeholders made or
//!   not ([`placeholder_signals`]), and each table's facts beyond its counts
//!   ([`signals_after_counts`]);
//! - `verdict`: [`Verdict`], the flags over a whole salvage, from the signals.

mod gather;
mod sentence;
mod signal;
mod table_loss;
mod verdict;

pub use gather::{
    check_failed_in, file_signals, placeholder_signals, reaches_past_end, rows_in_place,
    rows_missing_from_index, signals_after_counts, sqlite_check_signal, table_signals,
    FailingCheck, TableFacts, FAILING_ROWIDS_LISTED,
};
pub use sentence::N;
pub use signal::LossSignal;
pub use table_loss::TableLoss;
pub use verdict::Verdict;
