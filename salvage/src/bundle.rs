//! `salvage quarantine` and `salvage verify`: evidence bundles, made and checked by the
//! library (`recovery::bundle`), printed for a person.

use std::path::Path;

use recovery::bundle::{self, Difference, Provenance, MANIFEST};

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
        crate::shown(&args.src),
        crate::shown(&args.to)
    );
    for f in &manifest.files {
        text.push_str(&format!(
            "  {:<8} {:>14} bytes  sha256 {}  {}\n",
            f.role, f.size, f.sha256, f.path
        ));
    }
    text.push_str(&manifest_lines(&args.to)?);
    text.push_str(&format!(
        "next: salvage verify {0}; salvage inspect {0}; salvage recover {0} -o DEST\n",
        crate::shown(&args.to)
    ));
    print_stdout(&text)?;
    Ok(Exit::Clean)
}

/// The manifest's SHA-256 of the bundle made at `dir`, and what to do with it: the anchor
/// outside the bundle that `verify --manifest-sha256` checks.
pub fn manifest_lines(dir: &Path) -> Result<String, Error> {
    let hash = bundle::manifest_sha256(dir)?;
    Ok(format!(
        "  manifest                      sha256 {hash}  {MANIFEST}\n\
         record this hash in the case notes, apart from the bundle: `salvage verify {} --manifest-sha256 {hash}` proves the manifest is this one\n",
        crate::shown(dir)
    ))
}

/// Runs `salvage verify`.
pub fn verify(args: &VerifyArgs) -> Result<Exit, Error> {
    let anchor = args.manifest_sha256.as_deref();
    if let Some(hash) =
        anchor.filter(|h| h.len() != 64 || !h.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return Err(Error::Usage(format!(
            "--manifest-sha256 takes a SHA-256 as 64 hexadecimal digits, not `{hash}`"
        )));
    }
    let v = bundle::verify_anchored(&args.dir, anchor)?;
    let text = if args.json {
        let mut s = serde_json::to_string_pretty(&v).map_err(|e| Error::Stdout(e.into()))?;
        s.push('\n');
        s
    } else {
        let mut s = format!(
            "bundle `{}` ({}, made {} by {})\n",
            crate::shown(&args.dir),
            v.manifest.kind,
            v.manifest.created_utc,
            v.manifest.tool
        );
        s.push_str(&format!(
            "  manifest sha256 {}{}\n",
            v.manifest_sha256,
            if anchor.is_some()
                && !v
                    .differences
                    .iter()
                    .any(|d| matches!(d, Difference::ManifestChanged { .. }))
            {
                " (as recorded)"
            } else {
                ""
            }
        ));
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
