//! The run's record: its fields (when, who, what command) and every file it read and
//! wrote with its SHA-256, as typed rows each rendering (text, Markdown, HTML, CASE) lays
//! out in its own way.

use recovery::report::LossReport;

use crate::report::shell_words;

/// A file's SHA-256 as the text, Markdown and HTML renderings give it: the hash, and for
/// an evidence file that changed during the run, that it is the hash of the first reading
/// and how the change is known.
pub fn sha256_as_read(f: &RunFile) -> String {
    let sha256 = &f.sha256;
    match f.changed {
        None => sha256.clone(),
        Some(Changed::Hash) => {
            format!("{sha256} as first read: CHANGED during the run (its BLAKE3 differs)")
        }
        Some(Changed::FileSystem) => format!(
            "{sha256} as first read: CHANGED during the run (its modification time, length or inode)"
        ),
    }
}

/// A field of the run's record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunField {
    /// When the run began, UTC.
    Started,
    /// When the report was written, UTC.
    Finished,
    /// The case number or name.
    Case,
    /// Who ran it.
    Examiner,
    /// The build of the tool.
    Tool,
    /// The command line, as a shell reads it back.
    Command,
    /// The source's path as given, a symbolic link to the file.
    SourceGivenAs,
    /// The database a repair repaired.
    RepairOf,
    /// The path the repair was asked for, a symbolic link to the database.
    RepairGivenAs,
    /// The archive of the repaired database's original and sidecars.
    Archive,
}

impl std::fmt::Display for RunField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(match self {
            RunField::Started => "started",
            RunField::Finished => "finished",
            RunField::Case => "case",
            RunField::Examiner => "examiner",
            RunField::Tool => "tool",
            RunField::Command => "command",
            RunField::SourceGivenAs | RunField::RepairGivenAs => "given as",
            RunField::RepairOf => "repair of",
            RunField::Archive => "archive",
        })
    }
}

/// What a file is to the run: the evidence it read, or what it wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileRole {
    /// The source database.
    Source,
    /// The write-ahead log read with it.
    Wal,
    /// The rollback journal read with it.
    Journal,
    /// The output database (at DEST, or DEST.incomplete when withheld).
    Output,
    /// The loss report itself.
    ThisReport,
}

impl FileRole {
    /// Whether the run wrote the file (the output and the report), rather than read it.
    pub fn is_result(self) -> bool {
        matches!(self, FileRole::Output | FileRole::ThisReport)
    }
}

impl std::fmt::Display for FileRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(match self {
            FileRole::Source => "source",
            FileRole::Wal => "write-ahead log",
            FileRole::Journal => "journal",
            FileRole::Output => "output",
            FileRole::ThisReport => "this report",
        })
    }
}

/// How an evidence file is known to have changed during the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Changed {
    /// Its BLAKE3 after the run differs from the one before.
    Hash,
    /// Its hashes agree, but the file system says it changed: its modification time,
    /// length or inode.
    FileSystem,
}

/// A file of the run: its role, path and SHA-256 (of an evidence file, the one read
/// first), and whether it changed during the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunFile {
    /// What it is to the run.
    pub role: FileRole,
    /// Its path.
    pub path: String,
    /// Its SHA-256, hex.
    pub sha256: String,
    /// How an evidence file is known to have changed during the run; `None` when it did
    /// not, and for the files the run wrote.
    pub changed: Option<Changed>,
}

/// The run's record, as given (not yet made printable): its fields, and each file it read
/// and wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunRecord {
    /// The fields that have a value, in the order they are shown.
    pub fields: Vec<(RunField, String)>,
    /// The files that have a hash, evidence first.
    pub files: Vec<RunFile>,
}

impl RunRecord {
    /// The value of `field`, when it has one.
    pub fn field(&self, field: RunField) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| *k == field)
            .map(|(_, v)| v.as_str())
    }
}

/// The run's record of `r`; `own_sha256` is the report's own.
pub fn run_record(r: &LossReport, own_sha256: Option<&str>) -> RunRecord {
    let run = &r.run;
    let mut fields = vec![
        (RunField::Started, run.started_utc.clone()),
        (RunField::Finished, run.finished_utc.clone()),
        (RunField::Case, run.case.clone().unwrap_or_default()),
        (RunField::Examiner, run.examiner.clone().unwrap_or_default()),
        (RunField::Tool, run.build.clone()),
        (RunField::Command, shell_words(&run.command_line)),
        // The source was given through a symbolic link: the path the person typed.
        (
            RunField::SourceGivenAs,
            run.source_link.clone().unwrap_or_default(),
        ),
    ];
    if let Some(repair) = &run.repair {
        fields.push((RunField::RepairOf, repair.db_path.clone()));
        fields.push((
            RunField::RepairGivenAs,
            repair.db_link.clone().unwrap_or_default(),
        ));
        fields.push((RunField::Archive, repair.archive_path.clone()));
    }
    fields.retain(|(_, v)| !v.is_empty());
    // An evidence file's BLAKE3 before and after tell whether it changed, and so does the
    // file system (which names it `source`, `wal` or `journal`).
    let evidence = |role: FileRole, path: String, hashes: [Option<&String>; 3]| {
        let [sha256, before, after] = hashes;
        let named = match role {
            FileRole::Wal => "wal",
            FileRole::Journal => "journal",
            _ => "source",
        };
        let stamped = r.source.changed_under_the_run.iter().any(|c| c == named);
        let changed = match (before == after, stamped) {
            (true, false) => None,
            (false, _) => Some(Changed::Hash),
            (true, true) => Some(Changed::FileSystem),
        };
        sha256.map(|sha256| RunFile {
            role,
            path,
            sha256: sha256.clone(),
            changed,
        })
    };
    let written = |role: FileRole, path: String, sha256: Option<&str>| {
        sha256.map(|sha256| RunFile {
            role,
            path,
            sha256: sha256.to_string(),
            changed: None,
        })
    };
    fn log(h: &recovery::report::LogHashes) -> [Option<&String>; 3] {
        [
            h.sha256_before.as_ref(),
            h.blake3_before.as_ref(),
            h.blake3_after.as_ref(),
        ]
    }
    let files = [
        evidence(
            FileRole::Source,
            run.source_path.clone(),
            [
                Some(&r.source.sha256_before),
                Some(&r.source.blake3_before),
                Some(&r.source.blake3_after),
            ],
        ),
        evidence(
            FileRole::Wal,
            run.wal_path.clone().unwrap_or_default(),
            log(&r.wal.hashes),
        ),
        evidence(
            FileRole::Journal,
            run.journal_path.clone().unwrap_or_default(),
            log(&r.journal.hashes),
        ),
        written(
            FileRole::Output,
            if r.output.committed {
                run.dest_path.clone()
            } else {
                format!("{}.incomplete", run.dest_path)
            },
            r.output.sha256.as_deref(),
        ),
        written(FileRole::ThisReport, run.report_path.clone(), own_sha256),
    ];
    let files = files
        .into_iter()
        .flatten()
        // A hash not taken is no row; the change of an evidence file is one even so.
        .filter(|f| !f.sha256.is_empty() || f.changed.is_some())
        .collect();
    RunRecord { fields, files }
}
