//! Why a run could not start or go on. Damage in the evidence is never an error (it is a
//! finding, and a loss signal); only what prevents reading the evidence or writing the
//! output ends a run.

use std::fmt;
use std::path::PathBuf;

use crate::base::observer::Background;

/// Why a run could not start or go on.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The source (or a log read with it) could not be read.
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
        /// What the file looks like instead, by its first bytes (`looks_like`).
        looks_like: Option<LooksLike>,
    },
    /// The request was refused before anything was created.
    Refused {
        /// What is wrong.
        what: String,
        /// What to do about it.
        hint: String,
    },
    /// A profile named with the request is unknown or cannot be read.
    InvalidProfile {
        /// What is wrong with it.
        why: String,
    },
    /// Writing an output file failed.
    Output(std::io::Error),
    /// Writing the file or folder at `path` failed (a copy's destination, a bundle's
    /// manifest): the path named, where [`Error::Output`] names none.
    Write {
        /// The file or folder being written.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A repair stopped partway: what stopped it, and where its journal says it is. The
    /// original is intact (at the database's path, or archived); `--resume` or
    /// `--rollback` goes on from the journal.
    RepairStopped {
        /// What stopped it.
        cause: Box<Error>,
        /// The database, as given.
        db: PathBuf,
        /// The last phase its journal records.
        phase: &'static str,
        /// The journal.
        journal: PathBuf,
    },
    /// SQLite failed reading a database an export reads (a salvaged one, or any SQLite
    /// reads) after opening it.
    ReadDatabase {
        /// What the run was doing.
        doing: &'static str,
        /// SQLite's error.
        error: rusqlite::Error,
    },
    /// SQLite refused to write the output database.
    OutputDatabase {
        /// What the run was doing.
        doing: &'static str,
        /// SQLite's error.
        error: rusqlite::Error,
    },
    /// The caller stopped the run ([`crate::Observer::go_on`] said no): nothing is
    /// committed, and the partial output the run had begun is removed.
    Stopped,
    /// Work on the second core ended without its result.
    WorkerPanicked {
        /// The work.
        work: Background,
    },
    /// The output failed verification, or the source changed during the run: the output
    /// is kept as DEST.incomplete and the report is written, but nothing is committed.
    VerificationFailed {
        /// Where the output is kept.
        incomplete: PathBuf,
        /// The source's hash after the run differs from the one before.
        source_changed: bool,
        /// Whether the output itself passed verification.
        output_verified: bool,
        /// The evidence files that changed under the run, in words.
        changed: Vec<&'static str>,
    },
}

/// A path as text shows it (messages, the binary's text output): each control character
/// (a newline in a file name, an escape sequence) written as its escape, so that one path
/// stays one line and cannot pass for other output. JSON reports keep paths exact.
pub fn shown(path: impl AsRef<std::path::Path>) -> String {
    escape_controls(&path.as_ref().display().to_string()).into_owned()
}

/// `text` with each control character written as its escape (`\n`): one line, whatever
/// a file name holds.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return text.into();
    }
    text.chars()
        .map(|c| match c.is_control() {
            true => c.escape_default().to_string(),
            false => c.to_string(),
        })
        .collect::<String>()
        .into()
}

impl Error {
    /// An [`Error::OutputDatabase`] for what the run was `doing`, for `map_err`.
    pub fn db(doing: &'static str) -> impl Fn(rusqlite::Error) -> Error + Copy {
        move |error| Error::OutputDatabase { doing, error }
    }

    /// An [`Error::ReadDatabase`] for what the export was `doing`, for `map_err`.
    pub fn read_db(doing: &'static str) -> impl Fn(rusqlite::Error) -> Error + Copy {
        move |error| Error::ReadDatabase { doing, error }
    }

    /// An [`Error::Write`] naming `path`, for `map_err`.
    pub fn writing(path: &std::path::Path) -> impl Fn(std::io::Error) -> Error + '_ {
        move |source| Error::Write {
            path: path.to_path_buf(),
            source,
        }
    }

    /// Whether the request itself was at fault (bad arguments, a missing or wrong source),
    /// as opposed to a failure while running.
    pub fn is_refusal(&self) -> bool {
        match self {
            Error::Source { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
            Error::NotAFile { .. }
            | Error::NotADatabase { .. }
            | Error::Refused { .. }
            | Error::InvalidProfile { .. } => true,
            Error::RepairStopped { cause, .. } => cause.is_refusal(),
            Error::Output(_)
            | Error::Write { .. }
            | Error::OutputDatabase { .. }
            | Error::ReadDatabase { .. }
            | Error::WorkerPanicked { .. }
            | Error::Stopped
            | Error::VerificationFailed { .. } => false,
        }
    }

    /// A next step for the person, where there is one.
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Source { source, .. } if source.kind() == std::io::ErrorKind::NotFound => Some(
                "no file is at that path: check it (a relative path is read from the current folder)"
                    .into(),
            ),
            Error::Source { source, .. } if source.kind() == std::io::ErrorKind::PermissionDenied => {
                Some("the file must be readable by this user; inspect a copy of the evidence if needed".into())
            }
            // ENOMEM from mapping the file: larger than the address space the process may
            // use.
            Error::Source { source, .. } if source.raw_os_error() == Some(12) => Some(
                "the file is larger than the address space this process may map (its limit, `ulimit -v`): raise it (`ulimit -v unlimited`) and run again, or run on a machine whose limit allows the file's size"
                    .into(),
            ),
            Error::NotAFile { what: "a directory", .. } => {
                Some("pass the database file, not the folder holding it".into())
            }
            Error::NotAFile { .. } => Some(
                "pass the path of the database file itself (resolve links, check the folders on the way)"
                    .into(),
            ),
            Error::Refused { hint, .. } => Some(hint.clone()),
            Error::Write { source, .. } if source.kind() == std::io::ErrorKind::StorageFull => {
                Some("free space on the file system that holds it, and run again".into())
            }
            // The output's file system filled up: the source is untouched; the partial
            // output is left where it was written.
            Error::OutputDatabase {
                error: rusqlite::Error::SqliteFailure(e, _),
                ..
            } if e.code == rusqlite::ErrorCode::DiskFull => Some(
                "the file system that holds the output is full; the source is untouched and nothing is committed, the partial output is left as `DEST.incomplete`: remove it, free space (or give -o a path on a larger file system), and run again"
                    .into(),
            ),
            Error::InvalidProfile { .. } => Some(
                "--profile takes auto, none, agent, chroma or the path of a profile file".into(),
            ),
            Error::NotADatabase {
                looks_like: Some(l),
                ..
            } => Some(l.advice.into()),
            Error::NotADatabase { .. } => Some(
                "if this is a carved or encrypted file, it needs another tool first; nothing in it parses as SQLite pages"
                    .into(),
            ),
            Error::VerificationFailed { .. } => Some(
                "the report says what failed; the source is untouched and the run can be repeated"
                    .into(),
            ),
            Error::RepairStopped { cause, db, .. } => {
                let db = shown(db);
                let first = cause.hint().map_or(String::new(), |h| format!("{h}; "));
                Some(format!(
                    "{first}the repair stays recorded until one of these ends it: `salvage repair {db} --resume` goes on from where it stopped, `salvage repair {db} --rollback` puts the original back, `salvage repair {db} --abandon` leaves the database as it is now"
                ))
            }
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Source { path, source } => {
                write!(f, "cannot read `{}`: {source}", shown(path))
            }
            Error::NotAFile { path, what } => write!(f, "`{}` is {what}", shown(path)),
            Error::NotADatabase {
                path,
                why,
                looks_like,
            } => {
                write!(f, "`{}`: {why}", shown(path))?;
                match looks_like {
                    Some(l) => write!(f, "; it is {}", l.what),
                    None => Ok(()),
                }
            }
            Error::Refused { what, .. } => f.write_str(what),
            Error::InvalidProfile { why } => write!(f, "invalid profile: {why}"),
            Error::Output(e) => write!(f, "cannot write output: {e}"),
            Error::Write { path, source } => {
                write!(f, "cannot write `{}`: {source}", shown(path))
            }
            Error::RepairStopped {
                cause,
                db,
                phase,
                journal,
            } => write!(
                f,
                "{cause}; the repair of `{}` stopped after the phase `{phase}` (its journal: `{}`); the original is intact",
                shown(db),
                shown(journal)
            ),
            Error::OutputDatabase { doing, error } => {
                write!(f, "cannot write the output database ({doing}): {error}")
            }
            Error::ReadDatabase { doing, error } => {
                write!(f, "SQLite cannot read the database ({doing}): {error}")
            }
            Error::WorkerPanicked { work } => {
                write!(f, "internal error: the {work} ended without its result")
            }
            Error::Stopped => f.write_str(
                "stopped by its caller: the source is untouched and nothing is committed",
            ),
            Error::VerificationFailed {
                incomplete,
                source_changed,
                output_verified,
                changed,
            } => {
                let files = match changed.as_slice() {
                    [] => "the evidence".to_string(),
                    [one] => one.to_string(),
                    [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
                };
                let what = match (output_verified, source_changed) {
                    (true, _) => format!(
                        "{files} changed during the run (the output passed verification, but it may hold bytes from before and after the change)"
                    ),
                    (false, true) => {
                        format!("the output failed verification and {files} changed during the run")
                    }
                    (false, false) => "the output failed verification".to_string(),
                };
                write!(
                    f,
                    "{what}; it is kept at `{}`, not committed",
                    shown(incomplete)
                )
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Source { source, .. } | Error::Write { source, .. } | Error::Output(source) => {
                Some(source)
            }
            Error::RepairStopped { cause, .. } => Some(cause.as_ref()),
            Error::OutputDatabase { error, .. } | Error::ReadDatabase { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// What a file that is not a database looks like, by its first bytes, and what to pass
/// instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LooksLike {
    /// What it is, as words after "it is".
    pub what: &'static str,
    /// What to do instead.
    pub advice: &'static str,
}

/// What `bytes`, the start of a file given as a database, are instead: a SQLite
/// write-ahead log or rollback journal, or a compressed archive.
pub fn looks_like(bytes: &[u8]) -> Option<LooksLike> {
    const KINDS: [(&[u8], LooksLike); 9] = [
        (&[0x37, 0x7f, 0x06, 0x82], WAL),
        (&[0x37, 0x7f, 0x06, 0x83], WAL),
        (
            &[0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7],
            LooksLike {
                what: "a SQLite rollback journal (a `-journal` file)",
                advice: "pass the database file it belongs to (the same name without `-journal`): a hot journal beside it is rolled back in memory, or name it with --journal",
            },
        ),
        (&[0x1f, 0x8b], archive("a gzip archive", "decompress it first (`gunzip -k FILE`), then pass the database inside")),
        (&[0x28, 0xb5, 0x2f, 0xfd], archive("a zstd archive", "decompress it first (`zstd -d FILE`), then pass the database inside")),
        (&[0xfd, b'7', b'z', b'X', b'Z', 0], archive("an xz archive", "decompress it first (`xz -dk FILE`), then pass the database inside")),
        (b"BZh", archive("a bzip2 archive", "decompress it first (`bunzip2 -k FILE`), then pass the database inside")),
        (b"PK\x03\x04", archive("a zip archive", "extract it first (`unzip FILE`), then pass the database inside")),
        (&[b'7', b'z', 0xbc, 0xaf, 0x27, 0x1c], archive("a 7-Zip archive", "extract it first (`7z x FILE`), then pass the database inside")),
    ];
    KINDS
        .iter()
        .find(|(magic, _)| bytes.starts_with(magic))
        .map(|(_, l)| *l)
}

const WAL: LooksLike = LooksLike {
    what: "a SQLite write-ahead log (a `-wal` file)",
    advice: "pass the database file it belongs to (the same name without `-wal`): the log beside it is read, or name it with --wal",
};

const fn archive(what: &'static str, advice: &'static str) -> LooksLike {
    LooksLike { what, advice }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SQLite's "database or disk is full" while writing the output says what is left and
    /// what to do; it once said only SQLite's words.
    #[test]
    fn a_full_disk_under_the_output_says_what_is_left_and_what_to_do() {
        let full = Error::OutputDatabase {
            doing: "writing lost_and_found",
            error: rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
                None,
            ),
        };
        let hint = full.hint().unwrap_or_default();
        assert!(
            hint.contains("is full") && hint.contains("DEST.incomplete"),
            "{hint}"
        );
    }
}
