//! `salvage demo`: builds a damaged agent session store with `fixtures`, then inspects it.

use std::path::PathBuf;

use fixtures::{Damage, Kind, Options};

use crate::cli::{DemoArgs, InspectArgs, RecoverArgs};
use crate::run::{Error, Exit};

/// Runs `salvage demo`.
pub fn run(args: &DemoArgs) -> Result<Exit, Error> {
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("salvage-demo-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).map_err(|e| Error::Demo(e.to_string()))?;
    let path = dir.join("state.db");
    if path.exists() {
        return Err(Error::Demo(format!(
            "`{}` already exists; the demo never overwrites a file",
            path.display()
        )));
    }

    let fixture = fixtures::build(Kind::AgentStore, &Options::default());
    let mut bytes = fixture.bytes.clone();
    let sessions = fixture
        .roots
        .get("sessions")
        .copied()
        .ok_or_else(|| Error::Demo("no sessions table".into()))?;
    let messages = fixture
        .roots
        .get("messages")
        .copied()
        .ok_or_else(|| Error::Demo("no messages table".into()))?;
    let message_leaves = fixtures::table_pages(&bytes, messages).leaves;
    let damage = [
        // The hot parent table loses its only page: every session row is gone.
        Damage::ZeroPage(sessions),
        // One leaf of the child table is overwritten with garbage.
        Damage::RandomPage {
            page: message_leaves
                .get(message_leaves.len() / 2)
                .copied()
                .unwrap_or(messages),
            seed: 7,
        },
        // The page size in the header is zeroed: the reader must infer it from the pages.
        Damage::HeaderPageSize(0),
    ];
    eprintln!(
        "salvage demo: building an agent session store (`sessions`, `messages`, `state_meta`)"
    );
    for d in &damage {
        let applied = fixtures::apply(&mut bytes, d).map_err(|e| Error::Demo(e.to_string()))?;
        eprintln!("  damage: {}", applied.description);
    }
    std::fs::write(&path, &bytes).map_err(|e| Error::Demo(e.to_string()))?;
    eprintln!("  wrote `{}` ({} bytes)\n", path.display(), bytes.len());

    crate::inspect::run(&InspectArgs {
        src: PathBuf::from(&path),
        json: args.json,
        sha256: true,
    })?;
    let dest = dir.join("recovered.db");
    eprintln!();
    let outcome = crate::recover::run(&RecoverArgs {
        src: path.clone(),
        dest: dest.clone(),
        report: None,
        allow_partial: true,
        no_wal: false,
        no_partial_rows: false,
        wal: None,
        no_journal: false,
        journal: None,
        profile: "auto".into(),
    })?;
    // The demo succeeds when the salvage finds, recovers and reports the damage it was shown.
    match outcome {
        Exit::Damaged => {
            eprintln!(
                "\nsalvage demo: the damaged sample, the recovered database and its loss report are in `{}`",
                dir.display()
            );
            Ok(Exit::Clean)
        }
        Exit::Clean | Exit::Withheld => Err(Error::Demo(
            "the salvage did not report the damage it was shown".into(),
        )),
    }
}
