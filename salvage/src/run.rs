//! Runs a subcommand, and maps how it ended to an exit status.

use std::fmt;
use std::io::Write;

use clap::CommandFactory;

use crate::cli::{Cli, Command};

/// How a command ended when it ran to completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Nothing wrong found; for `recover`, a complete recovery committed.
    Clean,
    /// `inspect`: the report records damage. `recover`: loss recorded and the partial
    /// output committed (`--allow-partial`).
    Damaged,
    /// `recover`: loss detected and the output withheld (the report is still written).
    Withheld,
}

impl Exit {
    /// The exit status: 0 clean, 3 damage or loss recorded, 4 output withheld.
    pub fn code(self) -> u8 {
        match self {
            Exit::Clean => 0,
            Exit::Damaged => 3,
            Exit::Withheld => 4,
        }
    }
}

/// Why a command could not run or finish.
#[derive(Debug)]
pub enum Error {
    /// The library refused the request or failed.
    Run(recovery::Error),
    /// Writing to stdout failed (a closed pipe is not an error).
    Stdout(std::io::Error),
    /// The demo could not be built.
    Demo(String),
    /// The command line names something that does not exist.
    Usage(String),
}

impl From<recovery::Error> for Error {
    fn from(e: recovery::Error) -> Error {
        Error::Run(e)
    }
}

impl Error {
    /// The exit status: 2 refused, 1 failed.
    pub fn code(&self) -> u8 {
        match self {
            Error::Run(e) if e.is_refusal() => 2,
            Error::Usage(_) => 2,
            _ => 1,
        }
    }

    /// A next step for the person, where there is one.
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Run(e) => e.hint(),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Run(e) => e.fmt(f),
            Error::Stdout(e) => write!(f, "cannot write output: {e}"),
            Error::Demo(e) => write!(f, "cannot build the demo database: {e}"),
            Error::Usage(e) => f.write_str(e),
        }
    }
}

/// Writes `text` to stdout; a closed pipe is not an error.
pub fn print_stdout(text: &str) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(Error::Stdout),
    }
}

/// Runs the command line.
pub fn run(cli: &Cli) -> Result<Exit, Error> {
    match &cli.command {
        Command::Inspect(args) => crate::inspect::run(args),
        Command::Recover(args) => crate::recover::run(args),
        Command::Commit(args) => crate::recover::commit(args),
        Command::Report(args) => crate::report::run(args),
        Command::Export(args) => crate::export::run(args),
        Command::Timeline(args) => crate::export::timeline(args),
        Command::Scan(args) => crate::scan::run(args),
        Command::Profiles(args) => crate::profiles::run(args),
        Command::Demo(args) => crate::demo::run(args),
        Command::Repair(args) => crate::repair::run(args),
        Command::Quarantine(args) => crate::bundle::quarantine(args),
        Command::Verify(args) => crate::bundle::verify(args),
        Command::Backup(args) => crate::backup::backup(args),
        Command::Restore(args) => crate::backup::restore(args),
        Command::Completions(args) => shell_completions(args.shell),
        Command::Man(args) => manual_page(args.command.as_deref()),
    }
}

/// `salvage completions SHELL`: the completion script, generated from the command line's
/// definition.
fn shell_completions(shell: clap_complete::Shell) -> Result<Exit, Error> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "salvage", &mut script);
    print_stdout(&String::from_utf8_lossy(&script))?;
    Ok(Exit::Clean)
}

/// `salvage man [COMMAND]`: the manual page of `salvage`, or of one of its commands as
/// `salvage-COMMAND`, generated from the command line's definition.
fn manual_page(command: Option<&str>) -> Result<Exit, Error> {
    let cli = Cli::command();
    let page = match command {
        None => cli,
        Some(name) => {
            let Some(sub) = cli.find_subcommand(name) else {
                return Err(Error::Usage(format!(
                    "no command `{name}`; the commands are: {}",
                    cli.get_subcommands()
                        .map(|c| c.get_name())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            };
            sub.clone().name(format!("salvage-{name}"))
        }
    };
    let mut roff = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut roff)
        .map_err(Error::Stdout)?;
    let mut roff = String::from_utf8_lossy(&roff).into_owned();
    // After the examples, before the version, where man pages put it.
    let at = roff.find("\n.SH VERSION").map_or(roff.len(), |at| at + 1);
    roff.insert_str(at, &exit_status_section());
    print_stdout(&roff)?;
    Ok(Exit::Clean)
}

/// What each exit status means, across the commands (`docs/cli.md`, "Exit status"); a
/// command's description says which of them it gives.
const EXIT_STATUS: [(&str, &str); 6] = [
    (
        "0",
        "Complete, nothing wrong found: inspect found no damage; recover and repair made a complete recovery, verified and committed; verify found the bundle intact; report read a COMPLETE verdict.",
    ),
    (
        "1",
        "Failed: an I/O or internal error, or the output failed its verification; nothing is committed.",
    ),
    (
        "2",
        "Refused: bad arguments, a missing source or one of the wrong kind, a destination that exists; nothing is created, moved or changed.",
    ),
    (
        "3",
        "Damage or loss recorded: inspect found damage; recover and repair recorded loss and committed the partial output (--allow-partial); commit committed a withheld output with its loss; verify found a difference; report read any verdict but COMPLETE; export wrote lines reconstructed, partial or left out; scan recorded loss in some database.",
    ),
    (
        "4",
        "Loss detected and the output withheld: recover kept it as DEST.incomplete and still wrote the report (salvage commit accepts it); repair left the original untouched.",
    ),
    (
        "130",
        "recover was stopped by SIGINT or SIGTERM; nothing is committed.",
    ),
];

/// The manual page's EXIT STATUS section, in roff.
fn exit_status_section() -> String {
    // Roff: a backslash is written `\e`, a hyphen `\-` (a minus sign, as options are
    // typed); no line of ours starts with a period or an apostrophe.
    let roff = |text: &str| text.replace('\\', "\\e").replace('-', "\\-");
    let mut s = String::from(".SH \"EXIT STATUS\"\n");
    for (code, meaning) in EXIT_STATUS {
        s.push_str(&format!(".TP\n\\fB{code}\\fR\n{}\n", roff(meaning)));
    }
    s
}
