//! `recovery`: carries out the salvage of a damaged SQLite database, in-process.
#![deny(unsafe_code)]

pub mod bulk;
pub mod copies;
pub mod error;
pub mod export;
pub mod fts;
pub mod inspect;
pub mod observer;
pub mod output;
pub mod partial;
pub mod placeholders;
pub mod profiles;
pub mod recover;
pub mod recover_report;
pub mod report;
pub mod source;

pub use error::{Error, Outcome};
pub use observer::{Observer, Quiet};
