//! Command-line arguments (clap derive structs only).

use std::path::PathBuf;

use clap::{Parser, Subcommand};

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
    /// Read-only forensic inspection of a database file: header, page classes, b-trees,
    /// freelist, damaged pages. Never writes beside the source and never opens it with SQLite.
    Inspect(InspectArgs),
    /// Build a damaged sample database, inspect it and print the result.
    Demo(DemoArgs),
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
