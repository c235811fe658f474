//! What a recovery is asked to do, checked before anything is created: the source is a
//! regular file, nothing the run writes already exists or could be one of the source's own
//! files, the logs to read beside it are readable, the profile is valid.

use std::path::{Path, PathBuf};

use crate::base::error::Error;
use crate::base::paths::{canonical_target, folder_of, with_suffix};
use crate::recover::profiles::{ProfileChoice, Profiles};

/// What to recover, where to, and how.
#[derive(Clone, Debug)]
pub struct RecoverOptions {
    /// The damaged database (opened read-only; nothing is written beside it).
    pub src: PathBuf,
    /// The new database to write; must not exist. It is written as `DEST.incomplete` and
    /// renamed into place only once verified.
    pub dest: PathBuf,
    /// Where to write the JSON loss report (default: `DEST.report.json`); must not exist.
    pub report: Option<PathBuf>,
    /// Commit the output even when loss is detected.
    pub allow_partial: bool,
    /// Rebuild lost rows from their surviving index entries and full-text copies.
    pub partial_rows: bool,
    /// The write-ahead log to read.
    pub wal: Log,
    /// The hot rollback journal to roll back.
    pub journal: Log,
    /// Write a registered placeholder parent for each lost parent row its children prove
    /// (default on); off, no placeholder is written: the children are kept with their
    /// references, and the loss is still reported (`LossSignal::ParentsNotRebuilt`).
    pub placeholders: bool,
    /// The application profiles for placeholder parents and text copies.
    pub profile: ProfileChoice,
    /// Carve deleted records from free space into `salvage_carved`.
    pub carve: bool,
    /// Write every version of every row the logs hold into `salvage_history`.
    pub history: bool,
    /// Write what every recovered row is and where it was read into `salvage_provenance`,
    /// and a view per table of its live, rebuilt, carved and logged rows together.
    pub provenance: bool,
    /// Recover the database as it was after this commit of the write-ahead log (0: before
    /// its first), instead of after its last.
    pub as_of: Option<u32>,
    /// A case number or name, written into the report's `run`.
    pub case: Option<String>,
    /// Who ran the recovery, written into the report's `run`.
    pub examiner: Option<String>,
    /// The command line that asked for the run, written into the report's `run` (empty
    /// when a program calls the library).
    pub command_line: Vec<String>,
    /// The archive member `src` was spooled from (`salvage scan`), written into the
    /// report's `run`: the evidence is the member, `src` only its copy.
    pub archive_member: Option<crate::report::ArchiveMember>,
}

impl RecoverOptions {
    /// Recover `src` into `dest` with the defaults: withheld on loss, partial rows and
    /// placeholders on, `SRC-wal` and `SRC-journal` read when present, profiles detected.
    pub fn new(src: impl Into<PathBuf>, dest: impl Into<PathBuf>) -> RecoverOptions {
        RecoverOptions {
            src: src.into(),
            dest: dest.into(),
            report: None,
            allow_partial: false,
            partial_rows: true,
            wal: Log::Beside,
            journal: Log::Beside,
            placeholders: true,
            profile: ProfileChoice::Auto,
            carve: false,
            history: false,
            provenance: false,
            as_of: None,
            case: None,
            examiner: None,
            command_line: Vec::new(),
            archive_member: None,
        }
    }
}

/// Which log (write-ahead log or rollback journal) a run reads with the source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Log {
    /// `SRC-wal` / `SRC-journal`, when it exists and is not empty.
    Beside,
    /// This file.
    Named(PathBuf),
    /// None: the main file is read as it is.
    Off,
}

/// The paths of one run, validated.
#[derive(Clone, Debug)]
pub struct Paths {
    /// The source: the file itself, every symbolic link on the way resolved.
    pub src: PathBuf,
    /// The source's path as given, when it is a symbolic link to `src`.
    pub src_link: Option<PathBuf>,
    /// The write-ahead log to read, if any.
    pub wal: Option<PathBuf>,
    /// The rollback journal to read, if any.
    pub journal: Option<PathBuf>,
    /// The write-ahead log was turned off.
    pub wal_off: bool,
    /// The rollback journal was turned off.
    pub journal_off: bool,
    /// What stood at `SRC-wal` and `SRC-journal` that is not a plain file (a folder, a
    /// symbolic link), in a sentence each: `[wal, journal]`.
    pub beside: [Option<String>; 2],
    /// The destination.
    pub dest: PathBuf,
    /// Where the output is written until it is committed.
    pub incomplete: PathBuf,
    /// The loss report.
    pub report: PathBuf,
}

/// A request checked: its paths and its profiles.
#[derive(Debug)]
pub struct Request {
    /// The paths.
    pub paths: Paths,
    /// The profiles chosen, loaded.
    pub profiles: Profiles,
    /// Commit the output even when loss is detected.
    pub allow_partial: bool,
    /// Rebuild lost rows from index entries and full-text copies.
    pub partial_rows: bool,
    /// Write placeholder parents.
    pub placeholders: bool,
    /// Carve deleted records from free space.
    pub carve: bool,
    /// Write the logs' row versions.
    pub history: bool,
    /// Write where every row was read, and the row views.
    pub provenance: bool,
    /// The write-ahead log commit to recover the database as of.
    pub as_of: Option<u32>,
    /// When the run began, and who asked for it how: for the report.
    pub about: About,
}

/// When a run began, and who asked for it how.
#[derive(Clone, Debug)]
pub struct About {
    /// When the request was checked, before anything was read.
    pub started: std::time::SystemTime,
    /// A case number or name.
    pub case: Option<String>,
    /// Who ran it.
    pub examiner: Option<String>,
    /// The command line.
    pub command_line: Vec<String>,
    /// The archive member the source was spooled from.
    pub archive_member: Option<crate::report::ArchiveMember>,
}

/// A request refused before anything is created: what is wrong, and what to do.
pub(crate) fn refused(what: String, hint: &str) -> Error {
    Error::Refused {
        what,
        hint: hint.to_string(),
    }
}

impl Request {
    /// Checks every part of `options` before anything is created.
    pub fn check(options: &RecoverOptions) -> Result<Request, Error> {
        let started = std::time::SystemTime::now();
        // A bundle (`salvage quarantine`) is read through its database file.
        let bundled;
        let options = match crate::recover::request::database_in(&options.src) {
            Some(src) => {
                bundled = RecoverOptions {
                    src,
                    ..options.clone()
                };
                &bundled
            }
            None => options,
        };
        // SQLite keeps a database's logs beside the file a link points to: the source is
        // that file, and the link is named in the report.
        let source = crate::base::dbpath::DatabasePath::resolve(&options.src)?;
        let src_link = source.link().map(Path::to_path_buf);
        let resolved = RecoverOptions {
            src: source.file,
            ..options.clone()
        };
        let options = &resolved;
        let dest = options.dest.clone();
        let incomplete = with_suffix(&dest, ".incomplete");
        let report = options
            .report
            .clone()
            .unwrap_or_else(|| with_suffix(&dest, ".report.json"));
        check_outputs(options, &dest, &incomplete, &report)?;
        let outputs = apart_from_source(&options.src, &dest, &report, &incomplete)?;
        let profiles = options
            .profile
            .load()
            .map_err(|why| Error::InvalidProfile { why })?;
        let (wal, wal_beside) = log_to_read(&options.wal, &options.src, "-wal", &outputs)?;
        let (journal, journal_beside) =
            log_to_read(&options.journal, &options.src, "-journal", &outputs)?;
        if let (Some(n), None) = (options.as_of, &wal) {
            return Err(refused(
                format!("--as-of {n} names a commit of a write-ahead log, and none is read"),
                "give the log with --wal, or leave --as-of out",
            ));
        }
        Ok(Request {
            paths: Paths {
                src: options.src.clone(),
                src_link,
                wal,
                journal,
                wal_off: options.wal == Log::Off,
                journal_off: options.journal == Log::Off,
                beside: [wal_beside, journal_beside],
                dest,
                incomplete,
                report,
            },
            profiles,
            allow_partial: options.allow_partial,
            partial_rows: options.partial_rows,
            placeholders: options.placeholders,
            carve: options.carve,
            history: options.history,
            provenance: options.provenance,
            as_of: options.as_of,
            about: About {
                started,
                case: options.case.clone(),
                examiner: options.examiner.clone(),
                command_line: options.command_line.clone(),
                archive_member: options.archive_member.clone(),
            },
        })
    }
}

/// Refuses outputs that cannot be made: a destination that is a folder, any of the
/// run's files that exists already (every one named at once, so that one move clears the
/// way; with the way to accept a withheld run's output when that is what is there), a
/// folder that does not exist.
fn check_outputs(
    options: &RecoverOptions,
    dest: &Path,
    incomplete: &Path,
    report: &Path,
) -> Result<(), Error> {
    if dest.is_dir() {
        return Err(refused(
            format!("the destination `{}` is a folder", dest.display()),
            &format!(
                "-o names the new database file itself, e.g. `{}`",
                dest.join("recovered.db").display()
            ),
        ));
    }
    let report_incomplete = with_suffix(report, ".incomplete");
    let exists = |p: &Path| p.symlink_metadata().is_ok();
    let mut blocking = Vec::new();
    let mut what = Vec::new();
    for left in [incomplete, &report_incomplete] {
        if exists(left) {
            what.push(format!(
                "`{}` is left from an earlier run that did not finish or was withheld",
                left.display()
            ));
            blocking.push(format!("`{}`", left.display()));
        }
    }
    for (p, name) in [(dest, "destination"), (report, "report")] {
        if exists(p) {
            what.push(format!("the {name} `{}` already exists", p.display()));
            blocking.push(format!("`{}`", p.display()));
        }
    }
    if !what.is_empty() {
        let commit = if exists(incomplete) && exists(report) && !exists(dest) {
            let report = match &options.report {
                Some(r) => format!(" --report {}", r.display()),
                None => String::new(),
            };
            format!(
                "if that run was withheld for its loss, accept it with `salvage commit {}{report}`; ",
                incomplete.display()
            )
        } else {
            String::new()
        };
        return Err(Error::Refused {
            what: what.join("; "),
            hint: format!(
                "{commit}to run again, choose a new path or move away {}: salvage never overwrites, reuses or deletes a file",
                blocking.join(", ")
            ),
        });
    }
    for (file, what, hint) in [
        (dest, "destination folder", "create the folder first"),
        (
            report,
            "report's folder",
            "create the folder first, or leave --report out (DEST.report.json)",
        ),
    ] {
        let folder = folder_of(file);
        if !folder.is_dir() {
            return Err(refused(
                format!("the {what} `{}` does not exist", folder.display()),
                hint,
            ));
        }
    }
    Ok(())
}

/// Checks that nothing the run writes is the source or one of its sidecar files, and that
/// the source is none of the files SQLite may write or delete beside the output it opens
/// (it deletes what looks like a hot journal of a database it opens). Returns those
/// files, canonical: a log read with the source must not be one of them either.
fn apart_from_source(
    src: &Path,
    dest: &Path,
    report: &Path,
    incomplete: &Path,
) -> Result<Vec<Option<PathBuf>>, Error> {
    let src_canon = src.canonicalize().map_err(|e| Error::Source {
        path: src.to_path_buf(),
        source: e,
    })?;
    let dest_canon = canonical_target(dest).ok_or_else(|| {
        refused(
            format!("cannot resolve the destination `{}`", dest.display()),
            "give a file path in an existing folder",
        )
    })?;
    let sidecars = ["", "-wal", "-shm", "-journal"].map(|s| with_suffix(&src_canon, s));
    for target in [
        &dest_canon,
        &canonical_target(report).unwrap_or_default(),
        &canonical_target(incomplete).unwrap_or_default(),
    ] {
        if sidecars.contains(target) {
            return Err(refused(
                format!("`{}` is the source or one of its sidecar files", target.display()),
                "write the output somewhere else: the source is evidence and nothing is written beside it",
            ));
        }
    }
    let mut outputs = vec![Some(dest_canon), canonical_target(incomplete)];
    for file in [dest, incomplete] {
        for suffix in ["-journal", "-wal", "-shm"] {
            outputs.push(canonical_target(&with_suffix(file, suffix)));
        }
    }
    // The report is a file of its own: never the output, its `.incomplete`, or a file
    // SQLite writes beside either (the run would fail halfway, or commit over it).
    let report_canon = canonical_target(report);
    if report_canon.is_some() && outputs.contains(&report_canon) {
        return Err(refused(
            format!(
                "the report `{}` is the output or a file written with it",
                report.display()
            ),
            "give --report a path of its own, or leave it out (DEST.report.json)",
        ));
    }
    outputs.push(report_canon);
    if outputs.contains(&Some(src_canon)) {
        return Err(refused(
            format!(
                "`{}` is a file the output's database may write or delete",
                src.display()
            ),
            "name the output so that the source is not one of its sidecar files",
        ));
    }
    Ok(outputs)
}

/// A file beside the source to read as well (`suffix`: `-wal`, `-journal`): the one
/// named, else `SRC{suffix}` when it exists and is not empty; none when turned off.
/// Refused when it is not a readable file or is one of the `outputs`. With it, what stood
/// at `SRC{suffix}` when that is not a plain file: a folder (not read) or a symbolic link
/// (read where it leads, as SQLite reads it, when that is a file).
fn log_to_read(
    log: &Log,
    src: &Path,
    suffix: &str,
    outputs: &[Option<PathBuf>],
) -> Result<(Option<PathBuf>, Option<String>), Error> {
    let what = if suffix == "-wal" {
        "write-ahead log"
    } else {
        "rollback journal"
    };
    let mut beside_note = None;
    let path = match log {
        Log::Off => None,
        Log::Named(p) => match std::fs::metadata(p) {
            Ok(m) if m.is_file() => Some(p.clone()),
            _ => {
                return Err(refused(
                    format!("the {what} `{}` is not a readable file", p.display()),
                    &format!(
                        "give the path of the {suffix} file, or leave --{} out",
                        suffix.trim_start_matches('-')
                    ),
                ))
            }
        },
        Log::Beside => {
            let beside = with_suffix(src, suffix);
            let read = std::fs::metadata(&beside)
                .ok()
                .filter(|m| m.is_file() && m.len() > 0)
                .map(|_| beside.clone());
            beside_note = std::fs::symlink_metadata(&beside).ok().and_then(|m| {
                let name = beside.display();
                if m.is_symlink() {
                    let to = std::fs::read_link(&beside)
                        .map_or_else(|_| "?".into(), |t| t.display().to_string());
                    Some(match &read {
                        Some(_) => format!(
                            "`{name}` is a symbolic link to `{to}`: the {what} is read where it leads, as SQLite reads it"
                        ),
                        None => format!(
                            "`{name}` is a symbolic link to `{to}`, which is no file with content: no {what} is read"
                        ),
                    })
                } else if m.is_dir() {
                    Some(format!(
                        "`{name}` is a folder, not a {what}: nothing is read from it (SQLite cannot open the database beside it in that journal mode)"
                    ))
                } else {
                    None
                }
            });
            read
        }
    };
    if let Some(p) = &path {
        let canon = p.canonicalize().ok();
        if canon.is_some() && outputs.contains(&canon) {
            return Err(refused(
                format!("`{}` is the {what} being read", p.display()),
                "write the output somewhere else",
            ));
        }
    }
    Ok((path, beside_note))
}

/// The database at `dir` when `dir` is a bundle (a folder with a manifest naming one):
/// `inspect` and `recover` read a bundle through its database file, whose sidecars lie
/// beside it under their usual names.
pub fn database_in(dir: &Path) -> Option<PathBuf> {
    if !dir.is_dir() || !dir.join(crate::report::manifest::MANIFEST).is_file() {
        return None;
    }
    let manifest = crate::report::manifest::Manifest::read(dir).ok()?;
    let file = manifest.database()?;
    crate::report::manifest::safe_relative(&file.path).map(|p| dir.join(p))
}
