//! `salvage export`: the library's Chroma export, to stdout or to `-o FILE`.

use recovery::export::Export;

use crate::cli::{ExportArgs, ExportFormat};
use crate::run::{Error, Exit};

/// Runs `salvage export`.
pub fn run(args: &ExportArgs) -> Result<Exit, Error> {
    if let Some(dir) = &args.blobs {
        return blobs(args, dir);
    }
    // Every path is checked before anything is read or created.
    let file = args.output.as_deref().map(OutputFile::check).transpose()?;
    if args.format == ExportFormat::Csv {
        return csv(args, file.as_ref());
    }
    if args.format == ExportFormat::Xlsx {
        return xlsx(args, file.as_ref());
    }
    if args.table.is_some() {
        return Err(refused(
            "--table names a table to export as CSV".into(),
            "add --format csv",
        ));
    }
    let export = Export::open(&args.db, args.collection.as_deref())?;
    let summary = write(file.as_ref(), |sink| export.write_to(sink))?;
    if let Some(f) = &file {
        eprintln!("salvage export: written to `{}`", crate::shown(&f.path));
    }
    if summary.closed {
        return Ok(Exit::Clean);
    }
    eprintln!(
        "salvage export: {} embeddings written, {} of them reconstructed (their user-facing id is lost), {} rebuilt in part (values missing), {} of unknown collection",
        summary.written, summary.reconstructed, summary.partial, summary.unknown
    );
    if summary.unknown_skipped > 0 {
        eprintln!(
            "  {} embeddings of unknown collection left out by --collection",
            summary.unknown_skipped
        );
    }
    // An export carrying reconstructed rows or unknown collections, or leaving some out,
    // is not a clean one.
    Ok(if summary.clean() {
        Exit::Clean
    } else {
        Exit::Damaged
    })
}

/// `salvage export --blobs DIR [--table T]`.
fn blobs(args: &ExportArgs, dir: &std::path::Path) -> Result<Exit, Error> {
    let summary = recovery::export::blobs::export_blobs(&args.db, args.table.as_deref(), dir)?;
    let kinds: Vec<String> = summary
        .kinds
        .iter()
        .map(|(kind, n)| format!("{n} {kind}"))
        .collect();
    eprintln!(
        "salvage export: {} BLOBs ({} bytes) written to `{}`{}; their hashes in manifest.csv",
        summary.files,
        summary.bytes,
        crate::shown(&summary.dir),
        match kinds.is_empty() {
            true => String::new(),
            false => format!(" ({})", kinds.join(", ")),
        }
    );
    Ok(Exit::Clean)
}

/// `salvage export --format xlsx -o FILE [--table T]`: written as FILE.incomplete, then
/// committed.
fn xlsx(args: &ExportArgs, file: Option<&OutputFile>) -> Result<Exit, Error> {
    let Some(file) = file else {
        return Err(refused(
            "--format xlsx writes a workbook, not lines: name it with -o FILE.xlsx".into(),
            "e.g. -o case-7.xlsx",
        ));
    };
    let summary =
        recovery::export::xlsx::export_xlsx(&args.db, args.table.as_deref(), &file.incomplete)
            .inspect_err(|_| {
                let _ = std::fs::remove_file(&file.incomplete);
            })?;
    file.commit()?;
    let rows: u64 = summary.tables.iter().map(|(_, n)| n).sum();
    eprintln!(
        "salvage export: {} sheets, {rows} rows written to `{}`",
        summary.tables.len(),
        crate::shown(&file.path)
    );
    if summary.cut > 0 || summary.big_integers > 0 {
        eprintln!(
            "  {} values cut to a cell's 32,767 characters; {} integers past 2^53 written as text (a cell would round them)",
            summary.cut, summary.big_integers
        );
    }
    // A value cut is not the database's value: not a clean export.
    Ok(if summary.cut > 0 {
        Exit::Damaged
    } else {
        Exit::Clean
    })
}

/// `salvage export --format csv --table T`.
fn csv(args: &ExportArgs, file: Option<&OutputFile>) -> Result<Exit, Error> {
    let Some(table) = args.table.as_deref() else {
        return Err(refused(
            "--format csv exports one table: name it with --table".into(),
            "e.g. --table lost_and_found; `salvage report` lists the tables",
        ));
    };
    let export = recovery::export::csv::CsvExport::open(&args.db, table)?;
    let summary = write(file, |sink| export.write_to(sink))?;
    if let Some(f) = file {
        eprintln!(
            "salvage export: {} rows written to `{}`",
            summary.rows,
            crate::shown(&f.path)
        );
    }
    Ok(Exit::Clean)
}

/// Runs `salvage timeline`.
pub fn timeline(args: &crate::cli::TimelineArgs) -> Result<Exit, Error> {
    let file = args.output.as_deref().map(OutputFile::check).transpose()?;
    let timeline = recovery::export::timeline::Timeline::open(&args.db)?;
    let summary = write(file.as_ref(), |sink| timeline.write_to(sink))?;
    if let Some(f) = &file {
        eprintln!("salvage timeline: written to `{}`", crate::shown(&f.path));
    }
    if summary.closed {
        return Ok(Exit::Clean);
    }
    for c in &summary.columns {
        eprintln!(
            "  {}.{}: {} ({})",
            recovery::escape_controls(&c.table),
            recovery::escape_controls(&c.column),
            c.epoch.name(),
            c.why
        );
    }
    eprintln!(
        "salvage timeline: {} events ({} live, {} carved, {} from logs) from {} time columns; {} flagged implausible ({} past the years 0001 to 9999, without a date), {} text times without a zone taken as UTC, {} unset (zero or -1), {} not a time in their column's epoch",
        summary.live + summary.carved + summary.logged,
        summary.live,
        summary.carved,
        summary.logged,
        summary.columns.len(),
        summary.implausible,
        summary.undated,
        summary.zone_assumed,
        summary.zeros,
        summary.unreadable
    );
    Ok(Exit::Clean)
}

/// Runs `lines` into `-o FILE` (written as FILE.incomplete, then committed) or stdout.
fn write<T>(
    file: Option<&OutputFile>,
    lines: impl FnOnce(&mut dyn std::io::Write) -> Result<T, recovery::Error>,
) -> Result<T, Error> {
    match file {
        Some(f) => {
            let mut sink = f.create()?;
            let summary = lines(&mut sink);
            drop(sink);
            // An export that failed midway leaves nothing: its `.incomplete` is its own,
            // and would block the next run.
            let summary = summary.inspect_err(|_| {
                let _ = std::fs::remove_file(&f.incomplete);
            })?;
            f.commit()?;
            Ok(summary)
        }
        None => Ok(lines(&mut std::io::stdout().lock())?),
    }
}

fn refused(what: String, hint: &str) -> Error {
    Error::Run(recovery::Error::Refused {
        what,
        hint: hint.into(),
    })
}

/// `-o FILE`: written as `FILE.incomplete`, renamed into place only once every line is
/// written; an existing file (either) is never overwritten.
struct OutputFile {
    path: std::path::PathBuf,
    incomplete: std::path::PathBuf,
}

impl OutputFile {
    /// Validates the destination before anything is read or created.
    fn check(path: &std::path::Path) -> Result<OutputFile, Error> {
        let mut incomplete = path.as_os_str().to_owned();
        incomplete.push(".incomplete");
        let f = OutputFile {
            path: path.to_path_buf(),
            incomplete: incomplete.into(),
        };
        for p in [&f.path, &f.incomplete] {
            if p.symlink_metadata().is_ok() {
                return Err(refused(
                    format!("`{}` already exists", crate::shown(p)),
                    "export never overwrites a file: choose a new name or remove it",
                ));
            }
        }
        let folder = f
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        if !folder.is_dir() {
            return Err(refused(
                format!("the folder of `{}` does not exist", crate::shown(&f.path)),
                "create it first",
            ));
        }
        Ok(f)
    }

    fn create(&self) -> Result<std::fs::File, Error> {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&self.incomplete)
            .map_err(|e| Error::Run(recovery::Error::Output(e)))
    }

    /// Syncs the lines and links them into place (never over an existing file).
    fn commit(&self) -> Result<(), Error> {
        std::fs::File::open(&self.incomplete)
            .and_then(|f| f.sync_all())
            .and_then(|()| std::fs::hard_link(&self.incomplete, &self.path))
            .and_then(|()| std::fs::remove_file(&self.incomplete))
            .map_err(|e| Error::Run(recovery::Error::Output(e)))
    }
}
