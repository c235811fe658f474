//! `salvage report`: a loss report, read typed, rendered for a person as text or markdown.

use std::fmt::Write as _;

use recovery::report::{LossReport, OutputLocation, FORMAT_VERSION};

use crate::cli::{ReportArgs, ReportFormat};
use crate::run::{print_stdout, Error, Exit};
use crate::run_record::{run_record, sha256_as_read};

/// Runs `salvage report`.
pub fn run(args: &ReportArgs) -> Result<Exit, Error> {
    let (report, bytes) = read(&args.report)?;
    // The report cannot hold its own hash: it is taken of the file as read here.
    let own = sha256_hex(&bytes);
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

/// The loss report at `path`, typed, and the bytes it was read from (its own hash is taken
/// of them). Anything else is refused (exit 2) with what it is instead: a SQLite database
/// or any file that is not text, the JSON of `salvage inspect`, a report of another format
/// version.
fn read(path: &std::path::Path) -> Result<(LossReport, Vec<u8>), Error> {
    let bytes = std::fs::read(path).map_err(|e| recovery::Error::Source {
        path: path.to_path_buf(),
        source: e,
    })?;
    let refused = |what: String, hint: String| Error::Run(recovery::Error::Refused { what, hint });
    let shown = crate::shown(path);
    let not_a_report = || "pass the REPORT.json that `salvage recover` wrote".to_string();
    // A database (or anything else that is not text) given where its report was meant.
    let is_database = bytes.starts_with(b"SQLite format 3\0");
    if is_database || std::str::from_utf8(&bytes).is_err() {
        let inspect = shell_words(&[
            "salvage".into(),
            "inspect".into(),
            path.to_string_lossy().into_owned(),
        ]);
        let what = if is_database {
            format!("`{shown}` is a SQLite database, not a loss report")
        } else {
            format!("`{shown}` is not a loss report: it is not text, and a loss report is JSON")
        };
        return Err(refused(
            what,
            format!(
                "this is not a loss report; `{inspect}` reads a database, and `salvage recover` writes the REPORT.json this command renders"
            ),
        ));
    }
    let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
        refused(
            format!("`{shown}` is not a loss report: {e}"),
            not_a_report(),
        )
    })?;
    // The document `salvage inspect --json` writes: a description of the file, not of a
    // recovery, which would render as a report of nothing recovered.
    if value.get("trees").is_some() && value.get("header").is_some() {
        return Err(refused(
            format!("`{shown}` is the JSON of `salvage inspect`, not a loss report"),
            "`salvage report` renders the REPORT.json that `salvage recover` writes; `salvage inspect DB` prints the inspection for a person".into(),
        ));
    }
    if value
        .get("format_version")
        .and_then(serde_json::Value::as_u64)
        != Some(FORMAT_VERSION.into())
    {
        return Err(refused(
            format!("`{shown}` is not a loss report of format version {FORMAT_VERSION}"),
            "render it with the salvage version that wrote it".into(),
        ));
    }
    let report = serde_json::from_value(value).map_err(|e| {
        refused(
            format!("`{shown}` is not a loss report: {e}"),
            not_a_report(),
        )
    })?;
    Ok((report, bytes))
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
/// from a file. Markdown uses headings, lists and a table; text aligns columns.
pub fn render(r: &LossReport, own_sha256: Option<&str>, markdown: bool) -> String {
    let mut s = String::new();
    let committed = r.output.committed;
    let verdict = verdict(r);
    let (h1, h2) = if markdown { ("# ", "## ") } else { ("", "") };
    let _ = writeln!(s, "{h1}Salvage of `{}`", printable(&r.run.source_path));
    let _ = writeln!(s);
    // In Markdown, lines one after another are one paragraph: each of these is a list
    // item, so that the verdict, the output and the source stay apart when rendered.
    let _ = writeln!(
        s,
        "{}{verdict}",
        if markdown {
            "- **Verdict:** "
        } else {
            "verdict: "
        }
    );
    let _ = writeln!(
        s,
        "{}{}",
        if markdown {
            "- **Output:** "
        } else {
            "output: "
        },
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
            "- **Source unchanged:** "
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
                let _ = writeln!(s, "- **Application:** {rest}");
            }
            false => {
                let _ = writeln!(s, "{line}");
            }
        }
    }
    tables(&mut s, r, markdown, h2);
    dangling(&mut s, r, h2);
    losses(&mut s, r, h2);
    lost_lists(&mut s, r, markdown, h2);
    beside(&mut s, r, h2);
    next_step(&mut s, r, h2);
    custody(&mut s, r, own_sha256, markdown, h2);
    s
}

/// An identified application, in a line: what it is, its profile, and how it was known.
pub fn application_line(a: &recovery::report::Identified) -> String {
    let how = match a.by {
        recovery::report::IdentifiedBy::Schema => format!(
            "by its schema ({} of the {} it knows)",
            a.tables_present,
            count(a.tables_known as u64, "table")
        ),
        recovery::report::IdentifiedBy::Records => format!(
            "by records that fit its tables, their schema rows lost ({} of the {} it knows present)",
            a.tables_present,
            count(a.tables_known as u64, "table")
        ),
    };
    let version = match &a.version {
        // The profile tags no version.
        None => String::new(),
        Some(v) if v.tags.is_empty() => String::from(", its version not told by any table"),
        Some(v) => {
            let tags: Vec<String> = v.tags.iter().map(|t| printable(t)).collect();
            let nearest = match v.unknown.is_empty() {
                true => "",
                false => "nearest ",
            };
            let unknown = match v.unknown.as_slice() {
                [] => String::new(),
                names => format!(
                    "; the columns of {} are those of no version it knows: a version the profile lacks",
                    names
                        .iter()
                        .map(|n| format!("`{}`", printable(n)))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            let of = match tags.len() {
                1 => String::from("as it writes them"),
                _ => String::from("as each writes them: not told apart"),
            };
            let types = match v.types_decided {
                true => "; others that fit as many declare other types",
                false => "",
            };
            let absent = match v.absent_decided {
                true => "; others that fit as many have tables the schema lacks",
                false => "",
            };
            format!(
                ", {nearest}{} ({} {of}{types}{absent}{unknown})",
                tags.join(" or "),
                count(v.tables as u64, "table")
            )
        }
    };
    format!(
        "application: {} (profile {}){version}, {how}",
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
        "from file",
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
        for (table, column, kinds) in blob_kinds(r) {
            let text = format!(
                "BLOBs of `{}`.`{}`: {kinds}",
                printable(&table),
                printable(&column)
            );
            let _ = writeln!(s, "{}", crate::inspect::wrap(&text, "  ", "    ", 80));
        }
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
        let (rows, from_file) = rows_and_from_file(t).map_or_else(
            || ("-".to_string(), "-".to_string()),
            |(rows, from_file)| (rows.to_string(), from_file.to_string()),
        );
        let row = [
            printable(&t.name),
            t.status.to_string(),
            rows,
            from_file,
            t.rows_from_orphans.to_string(),
            t.rows_damaged.to_string(),
            t.placeholders.to_string(),
            t.rows_partial.to_string(),
            lost,
        ];
        let _ = writeln!(s, "| `{}` | {} |", row[0], row[1..].join(" | "));
    }
    if r.tables.iter().any(|t| t.placeholders + t.rows_partial > 0) {
        let _ = writeln!(s);
        let _ = writeln!(s, "{ROWS_REBUILT}");
    }
    lost_and_found_line(s, r);
    let blobs = blob_kinds(r);
    if !blobs.is_empty() {
        let _ = writeln!(s);
        for (table, column, kinds) in blobs {
            let _ = writeln!(
                s,
                "- BLOBs of `{}`.`{}`: {kinds}",
                printable(&table),
                printable(&column)
            );
        }
    }
}

/// Each column's BLOBs by kind (`blob_kinds`), most first: table, column, and the
/// counts in words (`10 jpeg, 2 unknown`).
pub fn blob_kinds(r: &LossReport) -> Vec<(String, String, String)> {
    let mut lines = Vec::new();
    for t in &r.tables {
        for (column, kinds) in &t.blob_kinds {
            let mut kinds: Vec<(&String, &u64)> = kinds.iter().collect();
            kinds.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
            let words: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
            lines.push((t.name.clone(), column.clone(), words.join(", ")));
        }
    }
    lines
}

/// What the rows column counts, said under the tables when some rows were rebuilt.
pub const ROWS_REBUILT: &str = "Rows are those the output table holds: from file + placeholders + partial. Placeholders and partial rows are rebuilt, registered, and still loss.";

/// The rows the output table holds (`rows_in_output`), and of them those read from the
/// file (every row but the placeholders and partial rows: for a virtual table refilled
/// from its stored text, every row it holds); `None` for a table not filled with rows.
pub fn rows_and_from_file(t: &recovery::report::TableReport) -> Option<(u64, u64)> {
    let rows = t.rows_in_output?;
    Some((rows, rows.saturating_sub(t.placeholders + t.rows_partial)))
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

/// `n` and `noun`, the noun in the plural unless `n` is 1: "1 page", "2 pages" (the
/// noun's last word takes the `s`: "1 more relationship", "2 more relationships").
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
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
        let from_file = rows_and_from_file(t).map_or(rows, |(_, f)| f);
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

/// What `--carve`, `--history` and `--provenance` wrote beside the recovered tables, a
/// sentence each, with `code` quoting a table's name: the deleted records, the log
/// versions, where each row was read, the times the rows hold. `text` makes other words
/// from the report safe for the format (an HTML page escapes them).
pub fn beside_sentences(
    r: &LossReport,
    code: &dyn Fn(&str) -> String,
    text: &dyn Fn(&str) -> String,
) -> Vec<String> {
    let mut out = Vec::new();
    let views = |views: &std::collections::BTreeMap<String, String>| -> String {
        let named: Vec<String> = views.values().map(|v| code(v)).collect();
        match named.len() {
            0 => String::new(),
            1 => format!(" (by the table's columns: {})", named[0]),
            _ => format!(" (by each table's columns: {})", named.join(", ")),
        }
    };
    if let Some(c) = &r.carved {
        let registry = code(c.registry.as_deref().unwrap_or("salvage_carved"));
        out.push(format!(
            "{} carved from free space in {registry}{}, never in the tables{}.",
            count(c.rows, "deleted record"),
            views(&c.views),
            match c.previous_versions {
                0 => String::new(),
                n => format!("; {} of a live row", count(n, "previous version")),
            }
        ));
    }
    if let Some(h) = &r.history {
        let registry = code(h.registry.as_deref().unwrap_or("salvage_history"));
        out.push(format!(
            "{} the logs hold, over {}, in {registry}{}.",
            count(h.versions, "row version"),
            count(h.steps.len() as u64, "step"),
            views(&h.views),
        ));
    }
    if let Some(p) = &r.provenance {
        let registry = code(p.registry.as_deref().unwrap_or("salvage_provenance"));
        out.push(format!(
            "What each of {} is and where it was read ({} with a page and cell offset) in {registry}; each table's rows, carved records and log versions together, with their status and place, in {}.",
            count(p.rows, "row"),
            p.rows_placed,
            p.views.values().map(|v| code(v)).collect::<Vec<_>>().join(", "),
        ));
        // To the second, for a person: the views give milliseconds.
        let when = |t: &Option<String>| {
            t.as_deref()
                .map(|t| t.get(..19).unwrap_or(t).replacen('T', " ", 1))
                .unwrap_or_default()
        };
        for t in &p.times {
            let span = match (t.values, &t.first, &t.last) {
                (0, _, _) => "holds no time".to_string(),
                (n, first, last) if first == last => {
                    format!("holds {} at {} UTC", count(n, "time"), when(first))
                }
                (n, first, last) => format!(
                    "holds {} from {} to {} UTC",
                    count(n, "time"),
                    when(first),
                    when(last)
                ),
            };
            out.push(format!(
                "{}.{} {span} ({}: {}){}.",
                code(&t.table),
                code(&t.column),
                text(&t.epoch),
                text(&t.why),
                match t.implausible {
                    0 => String::new(),
                    n => format!("; {n} outside 1980 to 2099, which no application writes"),
                }
            ));
        }
    }
    out
}

/// The section of what was written beside the tables ([`beside_sentences`]).
fn beside(s: &mut String, r: &LossReport, h2: &str) {
    let found = beside_sentences(r, &|name| format!("`{}`", printable(name)), &printable);
    if found.is_empty() {
        return;
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "{h2}Evidence beside the tables");
    let _ = writeln!(s);
    for b in &found {
        let _ = writeln!(s, "{}", crate::inspect::wrap(b, "- ", "  ", 80));
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
        out.push(format!(
            "… and {} in the report",
            count(more, "more relationship")
        ));
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
            "not kept: the repair was rolled back and the original is back at `{db}` (`salvage recover {db} -o FILE` makes this recovery again)"
        ),
        RepairState::Abandoned if record.archived => format!(
            "not used: the repair was ended and `{db}` left as the application had written it since (`salvage recover {archive} -o FILE` makes this recovery again)"
        ),
        RepairState::Abandoned => format!(
            "not used: the repair was ended and `{db}` left as the application had written it since"
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
        RepairState::InPlace => format!(
            "Review the tables above: the repaired database in place holds what was recovered{}.{}",
            match registers(r) {
                kept if kept.is_empty() => String::new(),
                kept => format!(", and keeps {kept}"),
            },
            compare_with_backup(r)
        ),
        RepairState::RolledBack | RepairState::Abandoned if record.archived => "Nothing: the repair is over and the database is as it was; this report and the archive stay as its record.".to_string(),
        RepairState::RolledBack | RepairState::Abandoned => "Nothing: the repair is over and the database is as it was; this report stays as its record.".to_string(),
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
        format!(
            "Review the tables above before using the output{}.{}",
            match registers(r) {
                kept if kept.is_empty() => String::new(),
                kept => format!(", which keeps {kept}"),
            },
            compare_with_backup(r)
        )
    } else {
        format!("The output was withheld because rows are missing. To accept the loss and use it, run `{}`: it checks the file again and commits it without a rerun.", commit_command(r))
    }
}

/// The tables of the output that hold what is not as the file held it, in a clause: only
/// those the report says hold rows (a table named but empty would send a person looking
/// for nothing). Empty when none does.
fn registers(r: &LossReport) -> String {
    let named = |table: &Option<String>, default: &str| {
        format!("`{}`", table.as_deref().map_or(default.into(), printable))
    };
    let mut kept: Vec<String> = Vec::new();
    let placeholders = &r.placeholders;
    if placeholders.made.count > 0 {
        kept.push(format!(
            "placeholder rows in {}",
            named(&placeholders.registry, "salvage_placeholders")
        ));
    }
    let partial = &r.partial_rows;
    let registry = named(&partial.registry, "salvage_partial_rows");
    match (partial.rows > 0, partial.refused > 0) {
        (true, true) => kept.push(format!("rows rebuilt from index entries and full-text copies, and the known values of those their table refused, in {registry}")),
        (true, false) => kept.push(format!("rows rebuilt from index entries and full-text copies in {registry}")),
        (false, true) => kept.push(format!("the known values of lost rows their table refused in {registry}")),
        (false, false) => {}
    }
    let damaged = &r.damaged_fields;
    if damaged.fields > 0 {
        kept.push(format!(
            "values not as read in {}",
            named(&damaged.registry, "salvage_damaged_fields")
        ));
    }
    let lost_and_found = &r.lost_and_found;
    if lost_and_found.rows > 0 {
        kept.push(format!(
            "rows without a table in {}",
            named(&lost_and_found.table, "lost_and_found")
        ));
    }
    match kept.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// The sentence that sends a person to a backup: to the rows and pages listed lost, or,
/// when none is listed, to the tables.
fn compare_with_backup(r: &LossReport) -> String {
    if lost_lists_of(r, &|name| format!("`{name}`")).is_empty() {
        " If a backup exists, compare its tables with the output's.".into()
    } else {
        " If a backup exists, compare its rows for the rowid ranges and pages listed under \"Lost rows and pages\".".into()
    }
}

/// Ranges listed per list at most; the rest are in the JSON.
pub const RANGES_LISTED: usize = 20;

/// Numbers (rowids or page numbers) as inclusive ranges, in any order and overlapping as
/// added; said sorted, overlapping and adjacent ones merged. An open end is `i64::MIN` or
/// `i64::MAX`: a range from `i64::MIN` is every number up to its end, which is what a
/// rowid range with no lower bound holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ranges(Vec<(i64, i64)>);

impl Ranges {
    /// Adds `first..=last` (nothing when `first > last`).
    pub fn push(&mut self, first: i64, last: i64) {
        if first <= last {
            self.0.push((first, last));
        }
    }

    /// Whether it holds no number.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The ranges sorted, overlapping and adjacent ones merged.
    fn merged(&self) -> Vec<(i64, i64)> {
        let mut sorted = self.0.clone();
        sorted.sort_unstable();
        let mut merged: Vec<(i64, i64)> = Vec::with_capacity(sorted.len());
        for (first, last) in sorted {
            match merged.last_mut() {
                Some((_, end)) if i128::from(first) <= i128::from(*end) + 1 => {
                    *end = (*end).max(last);
                }
                _ => merged.push((first, last)),
            }
        }
        merged
    }

    /// The ranges in words after `one` or `many` ("page 2", "pages 5–9, 14", "rowids up to
    /// 40, 343–353"), at most [`RANGES_LISTED`], then how many more the JSON holds.
    pub fn words(&self, one: &str, many: &str) -> String {
        let range = |&(first, last): &(i64, i64)| match (first, last) {
            (i64::MIN, i64::MAX) => "any".to_string(),
            (i64::MIN, last) => format!("up to {last}"),
            (first, i64::MAX) => format!("{first} and above"),
            (first, last) if first == last => first.to_string(),
            (first, last) => format!("{first}–{last}"),
        };
        let merged = self.merged();
        let noun = match merged.as_slice() {
            [(first, last)] if first == last => one,
            _ => many,
        };
        let shown: Vec<String> = merged.iter().take(RANGES_LISTED).map(range).collect();
        let more = merged.len().saturating_sub(RANGES_LISTED) as u64;
        let more = match more {
            0 => String::new(),
            n => format!(", and {} in the JSON", count(n, "more range")),
        };
        format!("{noun} {}{more}", shown.join(", "))
    }
}

/// A list of "Lost rows and pages": what it lists, and its entries, already in the
/// format's words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LostList {
    /// What it lists, lower-case.
    pub title: &'static str,
    /// One entry said on the title's line ("zeroed: pages 5–9, 14"), or several, a line
    /// each (a table's own).
    pub entries: Vec<String>,
    /// The entries are a table's each: one line each, under the title.
    pub per_table: bool,
}

/// The class of a damaged page beyond the database's last page (`pages.damaged`).
const PAST_END: &str = "past_end";

/// The rows and pages the report says were lost or put elsewhere, as lists: the rowid
/// ranges of the subtrees that could not be followed, per table; the zeroed, unrecognised
/// and missing pages; the orphan pages and the table each was placed in. `code` writes a
/// name from the file as the format quotes code (and escapes it). Empty when there is
/// none.
pub fn lost_lists_of(r: &LossReport, code: &dyn Fn(&str) -> String) -> Vec<LostList> {
    use pager::PageClass;
    let mut lists = Vec::new();

    // Rowids: each lost child pointer's range, `rowid_above < rowid <= rowid_up_to`.
    let mut rowids = Vec::new();
    for t in &r.tables {
        let mut ranges = Ranges::default();
        for sub in &t.lost_subtrees {
            let first = match sub.rowid_above {
                Some(above) => match above.checked_add(1) {
                    Some(first) => first,
                    None => continue,
                },
                None => i64::MIN,
            };
            ranges.push(first, sub.rowid_up_to.unwrap_or(i64::MAX));
        }
        if !ranges.is_empty() {
            rowids.push(format!(
                "{}: {} (under {} that could not be followed)",
                code(&t.name),
                ranges.words("rowid", "rowids"),
                count(t.lost_subtrees.len() as u64, "child pointer")
            ));
        } else if let Some(l) = t.lost_rows.as_ref().filter(|l| l.lower_bound > 0) {
            rowids.push(format!(
                "{}: no rowid range known (at least {} lost)",
                code(&t.name),
                count(l.lower_bound, "row")
            ));
        }
    }
    if !rowids.is_empty() {
        lists.push(LostList {
            title: "rowid ranges lost, by table",
            entries: rowids,
            per_table: true,
        });
    }

    // Pages: the damaged pages of each class that holds no rows to read.
    let damaged = &r.pages.damaged;
    for (class, title) in [
        (PageClass::Zeroed.name(), "zeroed (every byte 0)"),
        (PageClass::Unrecognised.name(), "unrecognised"),
        (PAST_END, "past the end of the file"),
    ] {
        let mut pages = Ranges::default();
        for d in damaged.listed.iter().filter(|d| d.class == class) {
            pages.push(d.page.into(), d.last.unwrap_or(d.page).into());
        }
        if !pages.is_empty() {
            lists.push(LostList {
                title,
                entries: vec![pages.words("page", "pages")],
                per_table: false,
            });
        }
    }
    let listed: u64 = damaged
        .listed
        .iter()
        .map(|d| u64::from(d.last.unwrap_or(d.page).saturating_sub(d.page)) + 1)
        .sum();
    if damaged.count > listed {
        lists.push(LostList {
            title: "damaged pages counted but not listed",
            entries: vec![format!(
                "{} of {} (the JSON lists the first {})",
                damaged.count - listed,
                damaged.count,
                count(damaged.listed.len() as u64, "run")
            )],
            per_table: false,
        });
    }

    // Orphan pages: where their rows were placed. The map names each page when a cell is
    // one page; otherwise the groups say how many pages and under which page.
    let map = &r.pages.map;
    let exact = map.pages_per_cell == 1 && !map.runs.is_empty();
    let pages_of = |given: &dyn Fn(&recovery::report::map::MapRun) -> bool| {
        let mut pages = Ranges::default();
        for run in map.runs.iter().filter(|run| given(run)) {
            pages.push(run.first.into(), run.last.into());
        }
        pages
    };
    let groups_words = |groups: &[recovery::report::OrphanGroupReport], pages: Ranges| {
        let mut rowids = Ranges::default();
        for g in groups {
            if let Some([lo, hi]) = g.rowids {
                rowids.push(lo, hi);
            }
        }
        let cells: u64 = groups.iter().map(|g| g.cells).sum();
        let pages = if exact && !pages.is_empty() {
            pages.words("page", "pages")
        } else {
            let mut tops = Ranges::default();
            for g in groups {
                tops.push(g.top.into(), g.top.into());
            }
            format!(
                "{} in {} under {}",
                count(groups.iter().map(|g| g.pages as u64).sum(), "page"),
                count(groups.len() as u64, "group"),
                tops.words("page", "pages")
            )
        };
        match rowids.is_empty() {
            true => format!("{pages} ({})", count(cells, "row")),
            false => format!(
                "{pages} ({}, {})",
                count(cells, "row"),
                rowids.words("rowid", "rowids")
            ),
        }
    };
    let mut orphans = Vec::new();
    for t in r.tables.iter().filter(|t| !t.orphan_groups.is_empty()) {
        let pages = pages_of(&|run| {
            run.orphan == Some(recovery::report::map::Orphan::Attributed)
                && run.object.as_deref() == Some(t.name.as_str())
        });
        orphans.push(format!(
            "{}: {}",
            code(&t.name),
            groups_words(&t.orphan_groups, pages)
        ));
    }
    let lf = &r.lost_and_found;
    let unattributed =
        pages_of(&|run| run.orphan == Some(recovery::report::map::Orphan::Unattributed));
    if !lf.groups.is_empty() || (exact && !unattributed.is_empty()) {
        let kept = lf
            .table
            .as_deref()
            .filter(|_| lf.rows > 0)
            .map_or_else(String::new, |t| format!(", rows kept in {}", code(t)));
        orphans.push(format!(
            "given to no table: {}{kept}",
            groups_words(&lf.groups, unattributed)
        ));
    }
    if !orphans.is_empty() {
        lists.push(LostList {
            title: "orphan pages placed elsewhere (no b-tree of the schema reaches them)",
            entries: orphans,
            per_table: true,
        });
    }
    lists
}

/// The section "Lost rows and pages": the lists of [`lost_lists_of`].
fn lost_lists(s: &mut String, r: &LossReport, markdown: bool, h2: &str) {
    let lists = lost_lists_of(r, &|name| format!("`{}`", printable(name)));
    if lists.is_empty() {
        return;
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "{h2}Lost rows and pages");
    let _ = writeln!(s);
    let wrap = crate::inspect::wrap;
    for list in &lists {
        match (list.per_table, markdown) {
            (false, false) => {
                let line = format!("{}: {}", list.title, list.entries.join("; "));
                let _ = writeln!(s, "{}", wrap(&line, "", "    ", 80));
            }
            (false, true) => {
                let _ = writeln!(s, "- {}: {}", list.title, list.entries.join("; "));
            }
            (true, false) => {
                let _ = writeln!(s, "{}:", list.title);
                for e in &list.entries {
                    let _ = writeln!(s, "{}", wrap(e, "  ", "      ", 80));
                }
            }
            (true, true) => {
                let _ = writeln!(s, "- {}:", list.title);
                for e in &list.entries {
                    let _ = writeln!(s, "  - {e}");
                }
            }
        }
    }
}
