//! Command-line arguments (clap derive structs only).

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use recovery::ProfileChoice;

/// `--profile`: a shipped profile's name, else the path of a profile file.
fn profile(text: &str) -> Result<ProfileChoice, std::convert::Infallible> {
    Ok(ProfileChoice::parse(text))
}

/// Forensic SQLite salvage: reads damaged SQLite files byte by byte, without SQLite, and
/// says exactly what is there and what was lost.
#[derive(Debug, Parser)]
#[command(name = "salvage", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Read-only forensic inspection of a database file
    ///
    /// Header, page classes, b-trees, freelist, damaged pages. Never writes beside the
    /// source and never opens it with SQLite.
    #[command(
        after_help = "Examples:\n  salvage inspect damaged.db\n  salvage inspect damaged.db --json --sha256 > inspect.json\n  salvage inspect evidence.db --audit"
    )]
    Inspect(InspectArgs),
    /// Recover every row still physically present into a new database
    ///
    /// A loss report is written beside it (DEST.report.json). Exit 0: complete; 3: loss recorded, partial output committed (--allow-partial); 4:
    /// loss detected, output withheld; 2: refused; 1: failed.
    #[command(
        after_help = "Examples:\n  salvage recover damaged.db -o recovered.db\n  salvage recover damaged.db -o recovered.db --allow-partial\n  salvage recover evidence.db -o out.db --carve --history --provenance\n  salvage report recovered.db.report.json"
    )]
    Recover(RecoverArgs),
    /// Commit a withheld recovery (DEST.incomplete), accepting its loss
    ///
    /// Without running it again: the file must be the one its run verified (its SHA-256
    /// against the loss report's), pass SQLite's integrity check again and hold the rows
    /// the report says. It is renamed to DEST, never over a file, and the report is
    /// rewritten to say when, by what command and (--examiner) by whom it was accepted.
    /// Exit 3: committed with its loss; 2: refused, nothing changed; 1: failed.
    #[command(
        after_help = "Examples:\n  salvage recover damaged.db -o recovered.db      # exit 4: loss, withheld\n  salvage report recovered.db.report.json         # read what was lost\n  salvage commit recovered.db.incomplete --examiner \"J. Doe\""
    )]
    Commit(CommitArgs),
    /// Render a loss report (REPORT.json from `recover`) for a person
    ///
    /// The verdict, a line per table, the warnings and the next step.
    #[command(
        after_help = "Examples:\n  salvage report recovered.db.report.json\n  salvage report recovered.db.report.json --format markdown > ticket.md\n  salvage report recovered.db.report.json --format html > report.html\n  salvage report recovered.db.report.json --format case > run.jsonld"
    )]
    Report(ReportArgs),
    /// Export a salvaged Chroma store as JSON lines, or any table as CSV
    ///
    /// On stdout, or into -o FILE. `--format csv --table T`: the table or view T of any
    /// database, a header line then a line per row. JSON lines: one embedding per line, id, collection, document, typed metadata, whether it was reconstructed or rebuilt in
    /// part. Exit 0: every line original; 3: some reconstructed, partial or left out; 2:
    /// refused.
    #[command(
        after_help = "Examples:\n  salvage export recovered.sqlite3 -o embeddings.jsonl\n  salvage export recovered.sqlite3 --collection docs | head\n  salvage export recovered.db --format csv --table messages -o messages.csv\n  salvage export recovered.db --format csv --table lost_and_found"
    )]
    Export(ExportArgs),
    /// Build a damaged sample database, salvage it and print the result.
    #[command(
        after_help = "Examples:\n  salvage demo\n  salvage demo --dir /tmp/salvage-demo --json"
    )]
    Demo(DemoArgs),
    /// Repair a damaged database at its own path, for the application that uses it
    ///
    /// Archive the original and its sidecars (hashed), recover the archived copy, verify
    /// it, and exchange it into place; crash-safe at every step (a journal
    /// DB.salvage-repair.json records each phase). Exit 0: repaired completely, or healthy and left
    /// alone; 3: loss recorded, the recovery put in place (--allow-partial); 4: loss
    /// detected, the original untouched; 2: refused; 1: failed.
    #[command(
        after_help = "Examples:\n  salvage repair state.db\n  salvage repair state.db --allow-partial\n  salvage repair state.db --resume\n  salvage repair state.db --rollback\n  salvage repair state.db --abandon"
    )]
    Repair(RepairArgs),
    /// Copy a database and its sidecars byte for byte into a new evidence bundle folder
    ///
    /// The sidecars are -wal, -shm and -journal; the folder is read-only, with
    /// MANIFEST.json (sizes, SHA-256, times). Never opens the database with SQLite. `inspect` and `recover` accept the bundle
    /// folder. Exit 0: made; 2: refused; 1: failed.
    #[command(
        after_help = "Examples:\n  salvage quarantine damaged.db --to case-7 --case 2026-117 --examiner \"J. Doe\"\n  salvage verify case-7"
    )]
    Quarantine(QuarantineArgs),
    /// Re-hash every file of a bundle against its manifest and say exactly what differs
    ///
    /// A bundle is a quarantine folder, a repair's archive or a backup. Every file hashed, every
    /// field of the manifest checked against the files, anything unaccounted for named;
    /// with --manifest-sha256, the manifest against the hash recorded when it was made.
    /// Exit 0: intact; 3: differences; 2: not a bundle.
    #[command(
        after_help = "Examples:\n  salvage verify case-7\n  salvage verify case-7 --manifest-sha256 3f2a…(64 hex digits from the case notes)\n  salvage verify state.db.salvage-20261201T004500Z --json"
    )]
    Verify(VerifyArgs),
    /// Back up a healthy, live database, or a folder holding several, into a new folder
    ///
    /// The folder (a Chroma persist directory, say) is backed up into a new folder inside
    /// DIR named from the UTC time and the source's name. SQLite files through SQLite's online backup API from a read-only connection
    /// (consistent while writers go on; nothing created beside them), every other file byte
    /// for byte; each copy checked (quick_check, row counts) and hashed into MANIFEST.json
    /// before the folder is put in place, then the oldest backups beyond --keep removed.
    /// Exit 0: made; 2: refused, nothing created; 1: failed (only NAME.incomplete is left,
    /// named by the next run).
    #[command(
        after_help = "Examples:\n  salvage backup state.db --to backups --keep 7\n  salvage backup ./chroma --to backups"
    )]
    Backup(BackupArgs),
    /// Put a backup made by `salvage backup` back at TARGET
    ///
    /// TARGET is the database file or folder it was made from. The backup verified against its manifest, copied beside TARGET, TARGET and its -wal,
    /// -shm, -journal moved aside to TARGET.pre-restore-STAMP and kept, the copy put in
    /// place and verified (hashes, quick_check). Exit 0: restored; 2: refused (a damaged
    /// backup, an unfinished earlier restore), nothing moved; 1: failed.
    #[command(
        after_help = "Examples:\n  salvage restore backups/20261201T004500Z-state.db state.db"
    )]
    Restore(RestoreArgs),
    /// Find, triage and recover every SQLite database under folders, in parallel, with one summary
    ///
    /// Each SOURCE is a folder (searched recursively, links not followed), a file, or a
    /// .tar, .tar.gz or .zip extraction (members spooled into OUT, kept where SQLite's). A
    /// database is found by its content: SQLite's header, or pages that are b-tree pages of
    /// one size where the header is destroyed; its -wal, -journal and -shm go with it, and a
    /// log without its database is listed as such. Every other file is counted and
    /// skipped, never opened. Each database is inspected, then recovered into OUT under
    /// its source's name and path (with its loss report and its inspect document beside
    /// it), largest first, JOBS at once. OUT/scan.json and OUT/scan.csv list them all.
    /// Each result is committed as it is done: run the same command again after a kill
    /// and what is committed (checked by hash) is kept, the rest redone. Exit 0: every
    /// database complete; 3: some loss recorded; 2: refused, nothing created; 1: the scan
    /// failed (I/O on OUT).
    #[command(after_help = "Examples:
  salvage scan extraction/ -o case-7
  salvage scan phone.tar.gz laptop/ -o case-7 --allow-partial -j 2
  salvage scan extraction/ -o triage --triage-only")]
    Scan(ScanArgs),
    /// Write a timeline of a database's stored times as CSV, for Timesketch
    ///
    /// One event per stored time, in Timesketch's columns (message, datetime, timestamp,
    /// timestamp_desc) and where it came from. Which columns are times: those the catalogue
    /// of application schemas names for the database's application, each in its epoch and
    /// unit; in another table, a column whose name says time and whose every value is one
    /// in exactly one epoch (the event says it was inferred). Events of the live rows, and
    /// of the deleted records and log versions that `recover --carve` and `--history` kept.
    /// Times in UTC; one outside 1980 to 2099 is flagged, never moved. Exit 0: written; 2:
    /// refused.
    #[command(after_help = "Examples:
  salvage recover mmssms.db -o recovered.db --carve --history
  salvage timeline recovered.db -o timeline.csv")]
    Timeline(TimelineArgs),
    /// List the application profiles: `agent`, `chroma` and the catalogue of application schemas
    ///
    /// Each with its application, kind, file names, the tables it is detected by, its time
    /// columns and where its schema is known from. Any of them is a `--profile NAME`.
    #[command(after_help = "Examples:
  salvage profiles
  salvage profiles --json")]
    Profiles(ProfilesArgs),
    /// Print a completion script for SHELL on stdout
    #[command(
        after_help = "Examples:\n  salvage completions bash > ~/.local/share/bash-completion/completions/salvage\n  salvage completions zsh > ~/.zfunc/_salvage"
    )]
    Completions(CompletionsArgs),
    /// Print the manual page (roff) of salvage or of one of its commands on stdout
    #[command(
        after_help = "Examples:\n  salvage man | man -l -\n  salvage man recover > salvage-recover.1"
    )]
    Man(ManArgs),
}

/// Arguments of `salvage man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// The command whose page to print (salvage-COMMAND(1)); default: salvage(1).
    #[arg(value_parser = CommandName)]
    pub command: Option<String>,
}

/// The name of one of salvage's commands (`salvage man COMMAND`): its possible values are
/// the subcommands, so that `--help`, the manual page and the shell completions offer them
/// and an unknown name is refused with the list. Read from the definition when asked, not
/// while it is being built (it is part of it).
#[derive(Clone, Copy, Debug)]
pub struct CommandName;

impl CommandName {
    /// The commands, in the order `--help` lists them.
    fn names() -> Vec<String> {
        use clap::CommandFactory;
        Cli::command()
            .get_subcommands()
            .map(|c| c.get_name().to_string())
            .collect()
    }
}

impl clap::builder::TypedValueParser for CommandName {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::PossibleValuesParser::new(Self::names()).parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            Self::names()
                .into_iter()
                .map(clap::builder::PossibleValue::new),
        ))
    }
}

/// Arguments of `salvage completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Arguments of `salvage scan`.
#[derive(Debug, clap::Args)]
pub struct ScanArgs {
    /// Folders and files to scan.
    #[arg(required = true, value_name = "SOURCE")]
    pub sources: Vec<PathBuf>,
    /// The output folder: new (or empty), or an earlier scan's, to resume it.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub out: PathBuf,
    /// Databases worked on at once. Default: one per core.
    #[arg(short = 'j', long, value_name = "JOBS", default_value_t = 0)]
    pub jobs: usize,
    /// Commit each recovery even when loss is detected (as `recover --allow-partial`).
    #[arg(long)]
    pub allow_partial: bool,
    /// Carve deleted records from free space (as `recover --carve`).
    #[arg(long)]
    pub carve: bool,
    /// Keep every version of every row the logs hold (as `recover --history`).
    #[arg(long)]
    pub history: bool,
    /// Inspect every database and recover none.
    #[arg(long)]
    pub triage_only: bool,
    /// No line per database on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Arguments of `salvage backup`.
#[derive(Debug, clap::Args)]
pub struct BackupArgs {
    /// The database file, or the folder, to back up.
    pub src: PathBuf,
    /// The folder that holds the backups (it must exist); each backup is a new folder in
    /// it, written as NAME.incomplete and renamed once verified.
    #[arg(long, value_name = "DIR")]
    pub to: PathBuf,
    /// Keep this many backups of SRC in DIR, the new one among them: the oldest beyond N
    /// are removed once the new one is in place. Default: keep every one.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub keep: Option<u32>,
}

/// Arguments of `salvage restore`.
#[derive(Debug, clap::Args)]
pub struct RestoreArgs {
    /// The backup folder (made by `salvage backup`).
    pub backup: PathBuf,
    /// Where to put it: the database file or folder it was made from. What is there is
    /// moved aside to TARGET.pre-restore-STAMP, never written over.
    pub target: PathBuf,
}

/// Arguments of `salvage repair`.
#[derive(Debug, clap::Args)]
pub struct RepairArgs {
    /// The database, at the path its application opens. A symbolic link is followed: the
    /// file it points to is repaired (its -wal and -journal lie beside that file), and
    /// the link stays a link.
    pub db: PathBuf,
    /// Put a recovery with loss in place (exit 3) instead of leaving the original (exit 4).
    #[arg(long)]
    pub allow_partial: bool,
    /// Write placeholder parents (for children whose parent row is lost) into the
    /// repaired database; without it the children keep their references and the loss is
    /// reported.
    #[arg(long)]
    pub placeholders: bool,
    /// The archive folder for the original and its sidecars (default:
    /// DB.salvage-<UTC timestamp>). Must not exist.
    #[arg(long, value_name = "DIR")]
    pub archive: Option<PathBuf>,
    /// Finish a repair that stopped (its journal says where).
    #[arg(long, conflicts_with_all = ["rollback", "abandon"])]
    pub resume: bool,
    /// Undo a repair that stopped: the original back at its path. Refused when the
    /// application has written to the database since the repair read it.
    #[arg(long, conflicts_with = "abandon")]
    pub rollback: bool,
    /// End a repair that stopped without touching the database's path: for a database
    /// the application has written to since the repair read it. The repair's own files
    /// beside it are removed; the report (and an archive an older build made) is kept.
    #[arg(long)]
    pub abandon: bool,
    /// No progress on stderr (the summary and any error are still printed).
    #[arg(short, long)]
    pub quiet: bool,
}

/// Arguments of `salvage quarantine`.
#[derive(Debug, clap::Args)]
pub struct QuarantineArgs {
    /// The database to copy (with the sidecars beside it).
    pub src: PathBuf,
    /// The bundle folder to create. Must not exist; written as DIR.incomplete and renamed
    /// into place once every file is copied, synced and hashed.
    #[arg(long, value_name = "DIR")]
    pub to: PathBuf,
    /// A case number or name, written into the manifest.
    #[arg(long)]
    pub case: Option<String>,
    /// Who made the bundle, written into the manifest.
    #[arg(long)]
    pub examiner: Option<String>,
}

/// Arguments of `salvage verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The bundle folder.
    pub dir: PathBuf,
    /// Print one JSON document instead of the human summary.
    #[arg(long)]
    pub json: bool,
    /// The manifest's SHA-256 as `quarantine`, `backup` or `repair` printed it when the
    /// bundle was made (from the case notes): a manifest whose hash differs is a
    /// difference. Without it, a manifest rewritten to match changed files cannot be told.
    #[arg(long, value_name = "HASH")]
    pub manifest_sha256: Option<String>,
}

/// Arguments of `salvage timeline`.
#[derive(Debug, clap::Args)]
pub struct TimelineArgs {
    /// The database (DEST of `salvage recover`, or any SQLite file SQLite reads), opened
    /// read-only.
    pub db: PathBuf,
    /// Write the CSV to FILE instead of stdout. Must not exist; written as
    /// FILE.incomplete and renamed into place once every line is written.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Arguments of `salvage profiles`.
#[derive(Debug, clap::Args)]
pub struct ProfilesArgs {
    /// Print the profiles as JSON (their files' fields), one array.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `salvage export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The salvaged database (DEST of `salvage recover`), opened read-only.
    pub db: PathBuf,
    /// Output format: `jsonl`, a Chroma store's embeddings as a vector store re-upserts
    /// them; `csv`, any table or view (--table).
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = ExportFormat::Jsonl)]
    pub format: ExportFormat,
    /// Export this collection only (by name); default: every collection (`jsonl`).
    #[arg(long, value_name = "NAME", conflicts_with = "table")]
    pub collection: Option<String>,
    /// The table or view to export as CSV: any of the database's, `lost_and_found`,
    /// `salvage_carved` and the registries (`salvage_placeholders` and the others) included.
    #[arg(long, value_name = "TABLE")]
    pub table: Option<String>,
    /// Write the lines to FILE instead of stdout. Must not exist; written as
    /// FILE.incomplete and renamed into place once every line is written.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write every BLOB (of --table, or of every table) as a file into the new folder DIR,
    /// named TABLE/ROWID.COLUMN.EXT by the kind its first bytes say (jpg, png, plist, …),
    /// and DIR/manifest.csv with each one's table, rowid, column, kind, size and SHA-256.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["output", "collection"])]
    pub blobs: Option<PathBuf>,
}

/// Arguments of `salvage commit`.
#[derive(Debug, clap::Args)]
pub struct CommitArgs {
    /// The withheld output, as `salvage recover` kept it: DEST.incomplete.
    #[arg(value_name = "DEST.incomplete")]
    pub incomplete: PathBuf,
    /// Its loss report (default: DEST.report.json).
    #[arg(long, value_name = "REPORT.json")]
    pub report: Option<PathBuf>,
    /// Who accepts the loss, written into the report beside when and by what command (the
    /// commit's performer in `salvage report --format case`).
    #[arg(long)]
    pub examiner: Option<String>,
}

/// Arguments of `salvage report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The loss report written by `salvage recover`.
    pub report: PathBuf,
    /// `text` for a terminal, `markdown` for pasting into a ticket, `html` for a page
    /// with a map of the file.
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
}

/// How `salvage report` renders a loss report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Aligned text for a terminal.
    Text,
    /// Markdown, for a ticket or a case file.
    Markdown,
    /// One self-contained HTML page (no script, nothing fetched) with a map of every page
    /// of the file: where the damage is, at a glance.
    Html,
    /// The run as CASE/UCO JSON-LD (caseontology.org): the tool, the action, every file
    /// with its SHA-256, for a case-management system.
    Case,
}

/// What `salvage export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// One JSON object per line.
    Jsonl,
    /// Comma-separated values (RFC 4180), with a header line.
    Csv,
    /// A workbook (-o FILE.xlsx): a sheet per table (or --table), with each row's
    /// salvage_status.
    Xlsx,
}

/// Arguments of `salvage recover`.
#[derive(Debug, clap::Args)]
pub struct RecoverArgs {
    /// The damaged database (opened read-only; nothing is written beside it).
    pub src: PathBuf,
    /// The new database to write. Must not exist; it is written as DEST.incomplete and
    /// renamed into place only after it is verified.
    #[arg(short = 'o', long = "output", value_name = "DEST")]
    pub dest: PathBuf,
    /// Where to write the JSON loss report (default: DEST.report.json). Must not exist.
    #[arg(long, value_name = "REPORT.json")]
    pub report: Option<PathBuf>,
    /// Commit the output even when loss is detected (exit 3 instead of 4).
    #[arg(long)]
    pub allow_partial: bool,
    /// Do not rebuild lost rows from their surviving index entries and full-text copies (see `salvage_partial_rows`); they stay evidence.
    #[arg(long)]
    pub no_partial_rows: bool,
    /// Write no placeholder parent rows: children whose parent row is lost are kept with their references, nothing stands in for the parent, and the loss is still reported (exit 3 or 4).
    #[arg(long)]
    pub no_placeholders: bool,
    /// Also carve deleted records from free space (freeblocks, unallocated space, freed pages) into the table `salvage_carved`, never into the recovered tables.
    #[arg(long)]
    pub carve: bool,
    /// Also write every version of every row the write-ahead log and the rollback journal
    /// hold (each commit's inserts, updates and deletes, frames that never committed, an
    /// older generation of the log, a persisted journal's images) into the tables
    /// `salvage_history` and `salvage_commits`, never into the recovered tables.
    #[arg(long)]
    pub history: bool,
    /// Also write what every recovered row is (live, from an orphan page, rebuilt, a
    /// placeholder) and where it was read (page, cell offset) into `salvage_provenance`, and
    /// per table a view `salvage_rows_TABLE` of its rows, carved records (--carve) and log
    /// versions (--history) together, each with its status, page, offset and log frame.
    #[arg(long)]
    pub provenance: bool,
    /// Recover the database as it was after commit N of the write-ahead log (0: before its
    /// first), as SQLite read it then; `salvage inspect` lists the commits.
    #[arg(long, value_name = "N", conflicts_with = "no_wal")]
    pub as_of: Option<u32>,
    /// Read the main database file alone, ignoring SRC-wal.
    #[arg(long, conflicts_with = "wal")]
    pub no_wal: bool,
    /// Read this write-ahead log instead of SRC-wal.
    #[arg(long, value_name = "PATH")]
    pub wal: Option<PathBuf>,
    /// Do not roll back a hot rollback journal (SRC-journal): read the main file as it is,
    /// with whatever an interrupted transaction wrote into it.
    #[arg(long, conflicts_with = "journal")]
    pub no_journal: bool,
    /// Roll back this hot journal instead of SRC-journal.
    #[arg(long, value_name = "PATH")]
    pub journal: Option<PathBuf>,
    /// Application profile for placeholder parents and text copies: `auto` (every shipped
    /// profile whose tables exist), `none` (declared foreign keys only), `agent`, `chroma`,
    /// or the path of a profile file (docs/profiles.md).
    #[arg(long, value_name = "auto|none|agent|chroma|FILE", default_value = "auto", value_parser = profile)]
    pub profile: ProfileChoice,
    /// A case number or name, written into the report.
    #[arg(long)]
    pub case: Option<String>,
    /// Who runs the recovery, written into the report.
    #[arg(long)]
    pub examiner: Option<String>,
    /// No progress on stderr (the summary and any error are still printed).
    #[arg(short, long)]
    pub quiet: bool,
}

/// Arguments of `salvage inspect`.
#[derive(Debug, clap::Args)]
pub struct InspectArgs {
    /// The database file to inspect (opened read-only).
    pub src: PathBuf,
    /// Print one JSON document (schema in docs/inspect.md) instead of the human report.
    #[arg(long)]
    pub json: bool,
    /// Also compute the SHA-256 of the source (one more read of the whole file).
    #[arg(long)]
    pub sha256: bool,
    /// Also grade what looks deliberate or abnormal (wiped free space, header fields that
    /// disagree with the file, pointer loops, shared pages, roots that do not fit, counters
    /// that disagree with the rows, an older generation of the log), with the evidence.
    #[arg(long)]
    pub audit: bool,
}

/// Arguments of `salvage demo`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Folder to write the sample database into (default: a new folder under the system
    /// temporary directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Print the inspection as JSON.
    #[arg(long)]
    pub json: bool,
}
