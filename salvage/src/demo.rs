//! `salvage demo`: writes a damaged agent session store, inspects it and recovers it.
//!
//! The store is embedded: `demo/state.db` is the `fixtures` crate's agent store with its
//! `sessions` page zeroed, a leaf of `messages` overwritten and the header's page size
//! zeroed (`demo/damage.txt` says so, one line per damage). The test
//! `demo::the_embedded_demo_is_the_fixture_it_describes` rebuilds both with `fixtures`
//! and compares them byte for byte (`SALVAGE_UPDATE_GOLDEN=1` rewrites them); the binary
//! itself does not link `fixtures`.

use std::path::PathBuf;

/// The damaged store.
const STATE_DB: &[u8] = include_bytes!("../demo/state.db");
/// What damage it carries, one line each.
const DAMAGE: &str = include_str!("../demo/damage.txt");

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
            crate::shown(&path)
        )));
    }

    eprintln!(
        "salvage demo: an agent session store (`sessions`, `messages`, `state_meta`), damaged:"
    );
    for line in DAMAGE.lines() {
        eprintln!("  damage: {line}");
    }
    let bytes = STATE_DB;
    std::fs::write(&path, bytes).map_err(|e| Error::Demo(e.to_string()))?;
    eprintln!(
        "  wrote `{}` ({} bytes)\n",
        crate::shown(&path),
        bytes.len()
    );

    crate::inspect::run(&InspectArgs {
        src: PathBuf::from(&path),
        json: args.json,
        sha256: true,
        audit: false,
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
        no_placeholders: false,
        carve: false,
        history: false,
        provenance: false,
        as_of: None,
        wal: None,
        no_journal: false,
        journal: None,
        profile: recovery::ProfileChoice::Auto,
        case: None,
        examiner: None,
        quiet: false,
    })?;
    // The demo succeeds when the salvage finds, recovers and reports the damage it was shown.
    match outcome {
        Exit::Damaged => {
            eprintln!(
                "\nsalvage demo: the damaged sample, the recovered database and its loss report are in `{}`",
                crate::shown(&dir)
            );
            Ok(Exit::Clean)
        }
        Exit::Clean | Exit::Withheld => Err(Error::Demo(
            "the salvage did not report the damage it was shown".into(),
        )),
    }
}
