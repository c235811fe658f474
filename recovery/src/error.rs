//! What ends a run early, and how a run that finished ended.

use std::fmt;
use std::path::PathBuf;

/// How a command ended when it ran to completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing wrong found; for `recover`, a complete recovery committed.
    Clean,
    /// `inspect`: the report records damage. `recover`: loss recorded and the partial
    /// output committed (`--allow-partial`).
    Damaged,
    /// `recover`: loss detected and the output withheld (the report is still written).
    Withheld,
    /// `recover`: the output failed verification, or the source changed during the run;
    /// the output is kept as DEST.incomplete, the report is written.
    NotVerified {
        /// The source's hash after the run differs from the one before.
        source_changed: bool,
    },
}

impl Outcome {
    /// The exit code: 0 clean, 3 damage or loss recorded, 4 output withheld, 1 not
    /// verified.
    pub fn code(self) -> u8 {
        match self {
            Outcome::Clean => 0,
            Outcome::Damaged => 3,
            Outcome::Withheld => 4,
            Outcome::NotVerified { .. } => 1,
        }
    }
}

/// Why a command could not run or finish.
#[derive(Debug)]
pub enum Error {
    /// The source could not be read.
    Source {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The source is not a regular file.
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is instead.
        what: &'static str,
    },
    /// The source is not a SQLite database at all.
    NotADatabase {
        /// The path.
        path: PathBuf,
        /// Why.
        why: pager::OpenError,
    },
    /// Writing output failed.
    Output(std::io::Error),
    /// The arguments were refused before anything was created.
    Refused {
        /// What is wrong.
        what: String,
        /// What to do about it.
        hint: String,
    },
    /// The output database could not be written.
    Database(String),
    /// Building the demo database failed.
    Demo(String),
}

impl Error {
    /// The exit code: 2 refused input, 1 failure.
    pub fn code(&self) -> u8 {
        match self {
            Error::Source { source, .. } if source.kind() == std::io::ErrorKind::NotFound => 2,
            Error::NotAFile { .. } | Error::NotADatabase { .. } | Error::Refused { .. } => 2,
            Error::Source { .. } | Error::Output(_) | Error::Demo(_) | Error::Database(_) => 1,
        }
    }

    /// A next step for the person, where there is one.
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Source { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                Some("check the path; `salvage inspect` takes the database file itself".into())
            }
            Error::Source { source, .. } if source.kind() == std::io::ErrorKind::PermissionDenied => {
                Some("the file must be readable by this user; inspect a copy of the evidence if needed".into())
            }
            Error::NotAFile { .. } => Some("pass the database file, not the folder holding it".into()),
            Error::Refused { hint, .. } => Some(hint.clone()),
            Error::NotADatabase { .. } => Some(
                "if this is a carved or encrypted file, it needs another tool first; nothing in it parses as SQLite pages"
                    .into(),
            ),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Source { path, source } => {
                write!(f, "cannot read `{}`: {source}", path.display())
            }
            Error::NotAFile { path, what } => write!(f, "`{}` is {what}", path.display()),
            Error::NotADatabase { path, why } => write!(f, "`{}`: {why}", path.display()),
            Error::Output(e) => write!(f, "cannot write output: {e}"),
            Error::Demo(e) => write!(f, "cannot build the demo database: {e}"),
            Error::Refused { what, .. } => f.write_str(what),
            Error::Database(e) => write!(f, "cannot write the output database: {e}"),
        }
    }
}

