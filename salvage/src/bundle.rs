//! `salvage quarantine` and `salvage verify`: evidence bundles, made and checked by the
//! library (`recovery::bundle`), printed for a person.

use recovery::bundle::{self, Provenance};

use crate::cli::{QuarantineArgs, VerifyArgs};
use crate::run::{print_stdout, Error, Exit};

/// Runs `salvage quarantine`.
pub fn quarantine(args: &QuarantineArgs) -> Result<Exit, Error> {
    let who = Provenance {
        command: std::env::args().collect(),
        case: args.case.clone(),
        examiner: args.examiner.clone(),
    };
    let manifest = bundle::make(&args.src, &args.to, "quarantine", &who)?;
    let mut text = format!(
        "quarantined `{}` into `{}`\n",
        args.src.display(),
        args.to.display()
    );
    for f in &manifest.files {
        text.push_str(&format!(
            "  {:<8} {:>14} bytes  sha256 {}  {}\n",
            f.role, f.size, f.sha256, f.path
        ));
    }
    text.push_str(&format!(
        "next: salvage verify {0}; salvage inspect {0}; salvage recover {0} -o DEST\n",
        args.to.display()
    ));
    print_stdout(&text)?;
    Ok(Exit::Clean)
}

/// Runs `salvage verify`.
pub fn verify(args: &VerifyArgs) -> Result<Exit, Error> {
    let v = bundle::verify(&args.dir)?;
    let text = if args.json {
        let mut s = serde_json::to_string_pretty(&v).map_err(|e| Error::Stdout(e.into()))?;
        s.push('\n');
        s
    } else {
        let mut s = format!(
            "bundle `{}` ({}, made {} by {})\n",
            args.dir.display(),
            v.manifest.kind,
            v.manifest.created_utc,
            v.manifest.tool
        );
        for path in &v.matching {
            s.push_str(&format!("  ok       {path}\n"));
        }
        for d in &v.differences {
            s.push_str(&format!("  DIFFERS  {d}\n"));
        }
        s.push_str(if v.intact() {
            "intact: every file matches its manifest\n"
        } else {
            "NOT INTACT: the bundle differs from its manifest\n"
        });
        s
    };
    print_stdout(&text)?;
    Ok(if v.intact() {
        Exit::Clean
    } else {
        Exit::Damaged
    })
}
