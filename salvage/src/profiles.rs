//! `salvage profiles`: the shipped application profiles, the catalogue's included.

use crate::cli::ProfilesArgs;
use crate::run::{Error, Exit};

/// Runs `salvage profiles`.
pub fn run(args: &ProfilesArgs) -> Result<Exit, Error> {
    let profiles = recovery::shipped_profiles();
    if args.json {
        let list: Vec<serde_json::Value> = profiles
            .iter()
            .map(|p| {
                serde_json::json!({
                    "name": p.name,
                    "application": p.application,
                    "category": p.category,
                    "description": p.description,
                    "files": p.files,
                    "detect": p.detect.tables,
                    "timestamps": p.timestamps,
                    "provenance": p.provenance,
                    "statements": p.schema.len(),
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&list).unwrap_or_default()
        );
        return Ok(Exit::Clean);
    }
    let mut out = String::new();
    for p in &profiles {
        let what = if p.application.is_empty() {
            &p.description
        } else {
            &p.application
        };
        out.push_str(&format!(
            "{}  {}\n",
            p.name,
            recovery::escape_controls(what)
        ));
        let mut facts = Vec::new();
        if !p.category.is_empty() {
            facts.push(p.category.clone());
        }
        if !p.files.is_empty() {
            facts.push(format!("files {}", p.files.join(", ")));
        }
        facts.push(format!("detected by {}", p.detect.tables.join(", ")));
        facts.push(format!(
            "{} CREATE statements, {} time columns",
            p.schema.len(),
            p.timestamps.len()
        ));
        out.push_str(&format!("    {}\n", facts.join("; ")));
        for v in &p.provenance {
            out.push_str(&format!("    from {} ({})\n", v.version, v.source));
        }
    }
    out.push_str(&format!(
        "{} profiles; choose one with `--profile NAME` (recover, repair), or let `--profile auto` detect them\n",
        profiles.len()
    ));
    print!("{out}");
    Ok(Exit::Clean)
}
