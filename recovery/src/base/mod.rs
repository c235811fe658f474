//! The ground floor: what every other floor stands on and nothing here stands on them.
//! Errors and progress ([`error`], [`observer`]), the crash switch of the custody tests
//! ([`crash`]), paths and durable file operations ([`paths`], [`dbpath`], [`files`]),
//! SQLite as a tool ([`sqlite`]), and the output database's writer with its read-ahead
//! and writeback ([`output`], [`readahead`], [`writeback`], [`priority`]).

pub mod crash;
pub mod dbpath;
pub mod error;
pub mod files;
pub mod observer;
pub mod output;
pub mod paths;
pub mod place;
pub(crate) mod priority;
pub(crate) mod readahead;
pub mod sqlite;
pub mod writeback;
