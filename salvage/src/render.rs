//! `salvage report`: the loss report rendered for a person, as text or markdown.

use std::fmt::Write as _;

use serde_json::Value;

use crate::cli::ReportArgs;
use recovery::{Error, Outcome};

use crate::run::print_stdout;

/// Runs `salvage report`.
pub fn run(args: &ReportArgs) -> Result<Outcome, Error> {
    let text = std::fs::read_to_string(&args.report).map_err(|e| Error::Source {
        path: args.report.clone(),
        source: e,
    })?;
    let report: Value = serde_json::from_str(&text).map_err(|e| Error::Refused {
        what: format!("`{}` is not a loss report: {e}", args.report.display()),
        hint: "pass the REPORT.json that `salvage recover` wrote".into(),
    })?;
    if report.get("format_version").and_then(Value::as_u64)
        != Some(recovery::recover_report::FORMAT_VERSION.into())
    {
        return Err(Error::Refused {
            what: format!(
                "`{}` is not a loss report of format version {}",
                args.report.display(),
                recovery::recover_report::FORMAT_VERSION
            ),
            hint: "render it with the salvage version that wrote it".into(),
        });
    }
    print_stdout(&render(&report, args.format == "markdown"))?;
    Ok(if clean(&report) {
        Outcome::Clean
    } else {
        Outcome::Damaged
    })
}

/// A clean salvage: complete (no loss, verified), committed, and the source proven
/// unchanged. Anything less is not.
fn clean(r: &Value) -> bool {
    r["flags"]["complete"] == true
        && r["output"]["committed"] == true
        && r["source"]["unchanged"] == true
}

/// Text from the report (names and sentences come from the damaged file): control
/// characters cannot start a line of their own, and `|` cannot break a markdown table.
fn printable(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect::<String>()
        .replace('|', "\\|")
}

/// A string field of the report, printable.
fn field(v: &Value) -> String {
    printable(v.as_str().unwrap_or("?"))
}

fn num(v: &Value) -> String {
    v.as_u64().map_or_else(|| "?".into(), |n| n.to_string())
}

/// The report for a person. Markdown uses headings and a table; text aligns columns.
pub fn render(r: &Value, markdown: bool) -> String {
    let mut s = String::new();
    let flags = &r["flags"];
    let committed = r["output"]["committed"] == true;
    let loss = flags["loss_detected"] != false;
    let verdict = if flags["verified"] != true {
        if loss {
            "NOT VERIFIED: the output failed its checks, and rows were lost"
        } else {
            "NOT VERIFIED: the output failed its checks"
        }
    } else if r["source"]["unchanged"] != true {
        "SOURCE CHANGED: the source was not the same after the run; nothing is trusted"
    } else if clean(r) {
        "COMPLETE: every source of evidence agrees nothing is missing; the output is verified"
    } else if loss {
        "LOSS: rows were recovered, but not provably all (partial recovery)"
    } else {
        "NOT COMMITTED: the output was not put in place"
    };
    let (h1, h2) = if markdown { ("# ", "## ") } else { ("", "") };
    let _ = writeln!(s, "{h1}Salvage of `{}`", field(&r["run"]["source_path"]));
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{}{verdict}",
        if markdown {
            "**Verdict:** "
        } else {
            "verdict: "
        }
    );
    let _ = writeln!(
        s,
        "{}{}",
        if markdown { "**Output:** " } else { "output: " },
        if committed {
            format!("`{}`", field(&r["run"]["dest_path"]))
        } else {
            "not committed (kept as DEST.incomplete)".into()
        }
    );
    let _ = writeln!(
        s,
        "{}{}",
        if markdown {
            "**Source unchanged:** "
        } else {
            "source unchanged: "
        },
        if r["source"]["unchanged"] == true {
            "yes (SHA-256 before and after match)"
        } else {
            "NO"
        }
    );
    let _ = writeln!(s);
    let _ = writeln!(s, "{h2}Tables");
    let _ = writeln!(s);
    let header = [
        "table",
        "status",
        "rows",
        "from orphans",
        "damaged",
        "placeholders",
        "partial",
        "lost (at least .. at most)",
    ]
    .map(String::from);
    // One aligned line of the text table.
    let line = |s: &mut String, c: &[String; 8]| {
        let _ = writeln!(
            s,
            "  {:<26} {:>9} {:>10} {:>12} {:>8} {:>12} {:>8}  {}",
            crate::inspect::ellipsize(&c[0], 26),
            c[1],
            c[2],
            c[3],
            c[4],
            c[5],
            c[6],
            c[7]
        );
    };
    if markdown {
        let _ = writeln!(s, "| {} |", header.join(" | "));
        let _ = writeln!(s, "|{}", "---|".repeat(header.len()));
    } else {
        line(&mut s, &header);
    }
    for t in r["tables"].as_array().into_iter().flatten() {
        let lost = match t.get("lost_rows") {
            Some(l) => format!(
                "{} .. {}",
                num(&l["lower_bound"]),
                l["upper_bound"]
                    .as_u64()
                    .map_or_else(|| "unknown".into(), |u| u.to_string())
            ),
            None => "-".into(),
        };
        let row = [
            field(&t["name"]),
            field(&t["status"]),
            num(&t["rows_written"]),
            num(&t["rows_from_orphans"]),
            num(&t["rows_damaged"]),
            num(&t["placeholders"]),
            num(&t["rows_partial"]),
            lost,
        ];
        if markdown {
            let _ = writeln!(s, "| `{}` | {} |", row[0], row[1..].join(" | "));
        } else {
            line(&mut s, &row);
        }
    }
    let lf = &r["lost_and_found"];
    if lf["rows"].as_u64().unwrap_or(0) > 0 {
        let _ = writeln!(s);
        let _ = writeln!(s, "{} rows are in `{}`: rows no evidence could give a table, and rows their table's constraints refused.", num(&lf["rows"]), lf["table"].as_str().map_or_else(|| "lost_and_found".into(), printable));
    }
    let warnings: Vec<&str> = r["evidence"]["loss"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if !warnings.is_empty() {
        let _ = writeln!(s);
        let _ = writeln!(s, "{h2}What was lost");
        let _ = writeln!(s);
        for w in &warnings {
            let _ = writeln!(s, "- {}", printable(w));
        }
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "{h2}Next step");
    let _ = writeln!(s);
    let next = if clean(r) {
        "Use the output as the database; keep the source as evidence."
    } else if flags["verified"] != true || r["source"]["unchanged"] != true {
        "Do not use the output. Keep DEST.incomplete and the source for inspection, and report the run with this report attached."
    } else if committed {
        "Review the tables above before using the output: placeholder rows are listed in `salvage_placeholders`, rows rebuilt from index entries and full-text copies in `salvage_partial_rows`, rows without a table in `lost_and_found`. If a backup exists, compare its rows for the ranges reported lost."
    } else {
        "The output was withheld because rows are missing. To accept a partial recovery, remove DEST.incomplete and run again with --allow-partial."
    };
    let _ = writeln!(s, "{next}");
    s
}
