//! `salvage report`: a loss report, read typed, rendered for a person as text or markdown.

use std::fmt::Write as _;

use recovery::report::{LossReport, OutputLocation, FORMAT_VERSION};

use crate::cli::{ReportArgs, ReportFormat};
use crate::run::{print_stdout, Error, Exit};
use crate::run_record::{run_record, sha256_as_read};

/// Runs `salvage report`.
pub fn run(args: &ReportArgs) -> Result<Exit, Error> {
    let path = &args.report;
    let text = std::fs::read_to_string(path).map_err(|e| recovery::Error::Source {
        path: path.clone(),
        source: e,
    })?;
    let refused = |what: String, hint: &str| {
        Error::Run(recovery::Error::Refused {
            what,
            hint: hint.into(),
        })
    };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        refused(
            format!("`{}` is not a loss report: {e}", crate::shown(path)),
            "pass the REPORT.json that `salvage recover` wrote",
        )
    })?;
    // The document `salvage inspect --json` writes: a description of the file, not of a
    // recovery, which would render as a report of nothing recovered.
    if value.get("trees").is_some() && value.get("header").is_some() {
        return Err(refused(
            format!(
                "`{}` is the JSON of `salvage inspect`, not a loss report",
                crate::shown(path)
            ),
            "`salvage report` renders the REPORT.json that `salvage recover` writes; `salvage inspect DB` prints the inspection for a person",
        ));
    }
    if value
        .get("format_version")
        .and_then(serde_json::Value::as_u64)
        != Some(FORMAT_VERSION.into())
    {
        return Err(refused(
            format!(
                "`{}` is not a loss report of format version {FORMAT_VERSION}",
                crate::shown(path)
            ),
            "render it with the salvage version that wrote it",
        ));
    }
    let report: LossReport = serde_json::from_value(value).map_err(|e| {
        refused(
            format!("`{}` is not a loss report: {e}", crate::shown(path)),
            "pass the REPORT.json that `salvage recover` wrote",
        )
    })?;
    // The report cannot hold its own hash: it is taken of the file as read here.
    let own = sha256_hex(text.as_bytes());
    print_stdout(&match args.format {
        ReportFormat::Html => crate::html::render(&report, Some(&own)),
        ReportFormat::Case => crate::case::render(&report, &own),
        format => render(&report, Some(&own), format == ReportFormat::Markdown),
    })?;
    Ok(if clean(&report) {
        Exit::Clean
    } else {
        Exit::Damaged
    })
}

/// A clean salvage: complete (no loss, verified), committed, and the source proven
/// unchanged. Anything less is not.
fn clean(r: &LossReport) -> bool {
    r.flags.complete && r.output.committed && r.source.unchanged
}

/// Text from the report (names and sentences come from the damaged file): control
/// characters cannot start a line of their own, and `|` cannot break a markdown table.
fn printable(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect::<String>()
        .replace('|', "\\|")
}

/// `args` as one line a POSIX shell reads back as them: an argument with anything but
/// letters, digits and `-_./:=@,+%` in it is single-quoted.
pub fn shell_words(args: &[String]) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=@,+%".contains(c);
    args.iter()
        .map(|a| {
            if !a.is_empty() && a.chars().all(plain) {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The SHA-256 of `bytes`, lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex(&Sha256::digest(bytes))
}

/// `bytes` in lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The report for a person; `own_sha256` is the report file's own hash, when it was read
/// from a file. Markdown uses headings and a table; text aligns columns.
pub fn render(r: &LossReport, own_sha256: Option<&str>, markdown: bool) -> String {
    let mut s = String::new();
    let committed = r.output.committed;
    let verdict = verdict(r);
    let (h1, h2) = if markdown { ("# ", "## ") } else { ("", "") };
    let _ = writeln!(s, "{h1}Salvage of `{}`", printable(&r.run.source_path));
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
        match r.output.location {
            _ if r.repair.is_some() => repair_state(r).unwrap_or_default(),
            _ if committed => match &r.output.accepted {
                Some(a) => format!("`{}` ({})", printable(&r.run.dest_path), accepted_later(a)),
                None => format!("`{}`", printable(&r.run.dest_path)),
            },
            OutputLocation::Incomplete => format!("not committed (kept as `{}`)", incomplete(r)),
            _ => "not written".into(),
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
        if r.source.unchanged {
            SOURCE_UNCHANGED
        } else {
            "NO"
        }
    );
    for a in &r.applications {
        let line = application_line(a);
        match markdown {
            true => {
                let rest = line.strip_prefix("application: ").unwrap_or(&line);
                let _ = writeln!(s, "**Application:** {rest}");
            }
            false => {
                let _ = writeln!(s, "{line}");
            }
        }
    }
    tables(&mut s, r, markdown, h2);
    dangling(&mut s, r, h2);
    losses(&mut s, r, h2);
    next_step(&mut s, r, h2);
    custody(&mut s, r, own_sha256, markdown, h2);
    s
}

/// An identified application, in a line: what it is, its profile, and how it was known.
pub fn application_line(a: &recovery::report::Identified) -> String {
    let how = match a.by {
        recovery::report::IdentifiedBy::Schema => format!(
            "by its schema ({} of the {} tables it knows)",
            a.tables_present, a.tables_known
        ),
        recovery::report::IdentifiedBy::Records => format!(
            "by records that fit its tables, their schema rows lost ({} of the {} tables it knows present)",
            a.tables_present, a.tables_known
        ),
    };
    format!(
        "application: {} (profile {}), {how}",
        printable(&a.application),
        a.profile
    )
}

/// The run and the hashes of every file it read and wrote: what a case file records.
fn custody(s: &mut String, r: &LossReport, own_sha256: Option<&str>, markdown: bool, h2: &str) {
    let _ = writeln!(s);
    let _ = writeln!(s, "{h2}Run");
    let _ = writeln!(s);
    let record = run_record(r, own_sha256);
    if markdown {
        for (k, v) in &record.fields {
            let _ = writeln!(s, "- **{k}:** {}", printable(v));
        }
        let _ = writeln!(s);
        let _ = writeln!(s, "| file | path | SHA-256 |");
        let _ = writeln!(s, "|---|---|---|");
        for f in &record.files {
            let _ = writeln!(
                s,
                "| {} | `{}` | `{}` |",
                f.role,
                printable(&f.path),
                sha256_as_read(f)
            );
        }
    } else {
        for (k, v) in &record.fields {
            let _ = writeln!(s, "  {k:<10} {}", printable(v));
        }
        let _ = writeln!(s);
        let _ = writeln!(s, "  SHA-256");
        for f in &record.files {
            let _ = writeln!(s, "  {:<11} {}", f.role, sha256_as_read(f));
            let _ = writeln!(s, "  {:<11} {}", "", printable(&f.path));
        }
    }
}

/// The verdict, as a sentence that begins with its word in capitals.
pub fn verdict(r: &LossReport) -> &'static str {
    let flags = &r.flags;
    let loss = flags.loss_detected;
    if !flags.verified {
        if loss {
            "NOT VERIFIED: the output failed its checks, and rows were lost"
        } else {
            "NOT VERIFIED: the output failed its checks"
        }
    } else if !r.source.unchanged {
        "SOURCE CHANGED: the source was not the same after the run; nothing is trusted"
    } else if clean(r) {
        "COMPLETE: every source of evidence agrees nothing is missing; the output is verified"
    } else if loss {
        "LOSS: rows were recovered, but not provably all (partial recovery)"
    } else {
        "NOT COMMITTED: the output was not put in place"
    }
}

/// A line per table: status, rows, placeholders, partial rows, loss bounds.
fn tables(s: &mut String, r: &LossReport, markdown: bool, h2: &str) {
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
    if !markdown {
        // 80 columns: the summary's table, then the bounds of what was lost.
        s.push_str(&table_text(r));
        let bounds: Vec<String> = r
            .tables
            .iter()
            .filter_map(|t| {
                let l = t.lost_rows.as_ref()?;
                Some(format!(
                    "`{}` at least {}, at most {}",
                    printable(&t.name),
                    l.lower_bound,
                    l.upper_bound
                        .map_or_else(|| "unknown".into(), |u| u.to_string())
                ))
            })
            .collect();
        if !bounds.is_empty() {
            let _ = writeln!(s);
            let text = format!("rows lost: {}", bounds.join("; "));
            let _ = writeln!(s, "{}", crate::inspect::wrap(&text, "  ", "    ", 80));
        }
        lost_and_found_line(s, r);
        return;
    }
    let _ = writeln!(s, "| {} |", header.join(" | "));
    let _ = writeln!(s, "|{}", "---|".repeat(header.len()));
    for t in &r.tables {
        let lost = match &t.lost_rows {
            Some(l) => format!(
                "{} .. {}",
                l.lower_bound,
                l.upper_bound
                    .map_or_else(|| "unknown".into(), |u| u.to_string())
            ),
            None => "-".into(),
        };
        let row = [
            printable(&t.name),
            t.status.to_string(),
            t.rows_written.to_string(),
            t.rows_from_orphans.to_string(),
            t.rows_damaged.to_string(),
            t.placeholders.to_string(),
            t.rows_partial.to_string(),
            lost,
        ];
        let _ = writeln!(s, "| `{}` | {} |", row[0], row[1..].join(" | "));
    }
    lost_and_found_line(s, r);
}

/// The sentence on the rows in `lost_and_found`, when it holds any.
fn lost_and_found_line(s: &mut String, r: &LossReport) {
    let lf = &r.lost_and_found;
    if lf.rows > 0 {
        let table = lf
            .table
            .as_deref()
            .map_or_else(|| "lost_and_found".into(), printable);
        let sentence = format!(
            "{} in `{table}`: rows no evidence could give a table, and rows their table's constraints refused.",
            rows_are(lf.rows)
        );
        let _ = writeln!(s);
        let _ = writeln!(s, "{}", crate::inspect::wrap(&sentence, "", "", 80));
    }
}

/// "1 row is" or "N rows are".
pub fn rows_are(n: u64) -> String {
    if n == 1 {
        "1 row is".into()
    } else {
        format!("{n} rows are")
    }
}

/// The tables in 80 columns: the rows each output table holds, of them those read from
/// the file (and of those, from orphan pages) and those rebuilt; then, a line each, the
/// tables not filled with rows. `salvage recover`'s summary and `salvage report` show it.
pub fn table_text(r: &LossReport) -> String {
    let mut s = String::new();
    let line = |s: &mut String, c: [&str; 7]| {
        let _ = writeln!(
            s,
            "  {:<18} {:>10} {:>10} {:>8} {:>8} {:>8}  {}",
            c[0], c[1], c[2], c[3], c[4], c[5], c[6]
        );
    };
    line(
        &mut s,
        [
            "table",
            "rows",
            "from file",
            "orphans",
            "damaged",
            "rebuilt",
            "status",
        ],
    );
    let g = |n: u64| indicatif::HumanCount(n).to_string();
    let (mut rebuilt_any, mut not_filled) = (false, std::collections::BTreeMap::new());
    for t in &r.tables {
        let Some(rows) = t.rows_in_output else {
            not_filled
                .entry(t.status.to_string())
                .or_insert_with(Vec::new)
                .push(format!("`{}`", crate::inspect::ellipsize(&t.name, 40)));
            continue;
        };
        let rebuilt = t.placeholders + t.rows_partial;
        rebuilt_any |= rebuilt > 0;
        // Rows read from the file: for a virtual table refilled from its stored text,
        // every row it holds.
        let from_file = rows.saturating_sub(rebuilt);
        line(
            &mut s,
            [
                &crate::inspect::ellipsize(&t.name, 18),
                &g(rows),
                &g(from_file),
                &g(t.rows_from_orphans),
                &g(t.rows_damaged),
                &g(rebuilt),
                &t.status.to_string(),
            ],
        );
    }
    if r.lost_and_found.rows > 0 {
        let name = r
            .lost_and_found
            .table
            .as_deref()
            .unwrap_or("lost_and_found");
        let rows = g(r.lost_and_found.rows);
        line(
            &mut s,
            [
                &crate::inspect::ellipsize(name, 18),
                &rows,
                &rows,
                "",
                "",
                "",
                "no table",
            ],
        );
    }
    let wrap = |text: &str, first: &str| crate::inspect::wrap(text, first, "    ", 80);
    if rebuilt_any {
        let _ = writeln!(s,
            "{}",
            wrap(
                "(rows = from file + rebuilt; rebuilt rows are placeholders and partial rows, registered and still loss)",
                "  "
            )
        );
    }
    for (status, names) in &not_filled {
        let shown = names.iter().take(4).cloned().collect::<Vec<_>>().join(", ");
        let more = match names.len().saturating_sub(4) {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        let _ = writeln!(
            s,
            "{}",
            wrap(
                &format!("{status}, not filled with rows: {shown}{more}"),
                "  "
            )
        );
    }
    s
}

/// The rows in `lost_and_found`, then every sign of loss.
fn losses(s: &mut String, r: &LossReport, h2: &str) {
    let warnings: Vec<&str> = r.evidence.loss.iter().map(String::as_str).collect();
    if !warnings.is_empty() {
        let _ = writeln!(s);
        let _ = writeln!(s, "{h2}What was lost");
        let _ = writeln!(s);
        for w in &warnings {
            let _ = writeln!(s, "{}", crate::inspect::wrap(&printable(w), "- ", "  ", 80));
        }
    }
}

/// The references the source already held dangling, a sentence each: said beside the
/// tables, apart from what was lost.
fn dangling(s: &mut String, r: &LossReport, h2: &str) {
    let found = dangling_sentences(r);
    if found.is_empty() {
        return;
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "{h2}Dangling references (not loss)");
    let _ = writeln!(s);
    for d in &found {
        let _ = writeln!(s, "{}", crate::inspect::wrap(&printable(d), "- ", "  ", 80));
    }
}

/// Each relationship's references the source already held dangling, as its warning
/// sentence (rendered from the typed entry), with a line saying how many more when the
/// list was cut.
pub fn dangling_sentences(r: &LossReport) -> Vec<String> {
    let d = &r.placeholders.dangling;
    let mut out: Vec<String> = d.listed.iter().map(ToString::to_string).collect();
    let more = d.count.saturating_sub(d.listed.len() as u64);
    if more > 0 {
        out.push(format!("… and {more} more relationships in the report"));
    }
    out
}

/// Where an uncommitted output is kept: DEST with `.incomplete` appended.
fn incomplete(r: &LossReport) -> String {
    format!("{}.incomplete", printable(&r.run.dest_path))
}

/// Why the source is said to be unchanged: what `source.unchanged` checks.
pub const SOURCE_UNCHANGED: &str =
    "yes (each evidence file's BLAKE3 before and after the run match, and none changed on disk meanwhile)";

/// How a withheld output came to be committed: when, and that its loss was accepted.
pub fn accepted_later(a: &recovery::report::Accepted) -> String {
    format!(
        "withheld by the run, committed at {} by `salvage commit`, its loss accepted",
        a.utc
    )
}

/// What the person should do next.
fn next_step(s: &mut String, r: &LossReport, h2: &str) {
    let _ = writeln!(s);
    let _ = writeln!(s, "{h2}Next step");
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{}",
        crate::inspect::wrap(&next_step_text(r), "", "", 80)
    );
}

/// The `salvage commit` that accepts a withheld run's output, with `--report` when the
/// report is not at its default path.
pub fn commit_command(r: &LossReport) -> String {
    let default = format!("{}.report.json", r.run.dest_path);
    let mut command = format!("salvage commit {}", shell_words(&[incomplete(r)]));
    if r.run.report_path != default {
        command.push_str(&format!(
            " --report {}",
            shell_words(&[printable(&r.run.report_path)])
        ));
    }
    command
}

/// Where a repair stands with this recovery, as a sentence; `None` for a recovery that is
/// not a repair's.
pub fn repair_state(r: &LossReport) -> Option<String> {
    use recovery::report::RepairState;
    let (record, paths) = (r.repair.as_ref()?, r.run.repair.as_ref()?);
    let db = printable(paths.db_link.as_ref().unwrap_or(&paths.db_path));
    let archive = printable(&paths.archive_path);
    Some(match record.state {
        RepairState::Pending => format!(
            "recovered for the repair of `{db}`, not yet put in place (kept as `{}`)",
            printable(&r.run.dest_path)
        ),
        RepairState::Withheld => format!(
            "withheld by the repair of `{db}` for its loss (kept as `{}`); `{db}` is untouched",
            incomplete(r)
        ),
        RepairState::InPlace => format!(
            "put in place at `{db}` by the repair{}{}; the original and its sidecars are archived in `{archive}`",
            if record.wal_mode {
                ", in write-ahead-log mode as the original was"
            } else {
                ""
            },
            record
                .sha256_in_place
                .as_ref()
                .map_or(String::new(), |h| format!(" (SHA-256 {h})"))
        ),
        RepairState::RolledBack => format!(
            "not kept: the repair was rolled back and the original is back at `{db}` (`salvage recover {archive} -o FILE` makes this recovery again)"
        ),
        RepairState::Abandoned => format!(
            "not used: the repair was ended and `{db}` left as the application had written it since (`salvage recover {archive} -o FILE` makes this recovery again)"
        ),
    })
}

/// What the person should do next after a repair, as a sentence or two.
fn repair_next_step(r: &LossReport) -> Option<String> {
    use recovery::report::RepairState;
    let (record, paths) = (r.repair.as_ref()?, r.run.repair.as_ref()?);
    let db = shell_words(&[printable(paths.db_link.as_ref().unwrap_or(&paths.db_path))]);
    Some(match record.state {
        RepairState::Pending => format!("The repair stopped before the recovery was put in place: `salvage repair {db} --resume` finishes it, `salvage repair {db} --rollback` ends it with the original in place."),
        RepairState::Withheld => format!("The repair withheld this recovery because rows are missing; the database is untouched. To accept the loss and put it in place, run `salvage repair {db} --resume --allow-partial`; to end the repair, `salvage repair {db} --rollback`."),
        RepairState::InPlace if clean(r) => format!("The repaired database is in place; keep the archive `{}` as the original's record (`salvage verify` it).", printable(&paths.archive_path)),
        RepairState::InPlace => "Review the tables above: the repaired database in place holds what was recovered, with rows rebuilt from index entries and full-text copies in `salvage_partial_rows`, values not as read in `salvage_damaged_fields`, rows without a table in `lost_and_found`. If a backup exists, compare its rows for the ranges reported lost.".to_string(),
        RepairState::RolledBack | RepairState::Abandoned => "Nothing: the repair is over and the database is as it was; this report and the archive stay as its record.".to_string(),
    })
}

/// What the person should do next, as a sentence or two.
pub fn next_step_text(r: &LossReport) -> String {
    let flags = &r.flags;
    let committed = r.output.committed;
    if let Some(step) = repair_next_step(r) {
        step
    } else if clean(r) {
        "Use the output as the database; keep the source as evidence.".to_string()
    } else if !flags.verified || !r.source.unchanged {
        format!("Do not use the output. Keep `{}` and the source for inspection, and report the run with this report attached.", incomplete(r))
    } else if committed {
        "Review the tables above before using the output: placeholder rows are listed in `salvage_placeholders`, rows rebuilt from index entries and full-text copies in `salvage_partial_rows`, values not as read in `salvage_damaged_fields`, rows without a table in `lost_and_found`. If a backup exists, compare its rows for the ranges reported lost.".to_string()
    } else {
        format!("The output was withheld because rows are missing. To accept the loss and use it, run `{}`: it checks the file again and commits it without a rerun.", commit_command(r))
    }
}
