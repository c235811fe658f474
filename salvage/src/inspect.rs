//! `salvage inspect`: the library's inspection, printed as JSON or for a person.

use std::fmt::Write as _;

use pager::PageClass;
use recovery::report::InspectReport;

use crate::cli::InspectArgs;
use crate::run::{print_stdout, Error, Exit};

/// Runs `salvage inspect`.
pub fn run(args: &InspectArgs) -> Result<Exit, Error> {
    let report = recovery::inspect::inspect_file_with(&args.src, args.sha256, args.audit)?;
    let text = if args.json {
        let mut s = serde_json::to_string_pretty(&report).map_err(|e| Error::Stdout(e.into()))?;
        s.push('\n');
        s
    } else {
        render(&report, stdout_width())
    };
    print_stdout(&text)?;
    Ok(if report.verdict.healthy {
        Exit::Clean
    } else {
        Exit::Damaged
    })
}

/// The width text on stdout is wrapped to: the terminal's, when stdout is one (at least
/// [`NARROWEST`]), else [`NOT_A_TERMINAL`].
pub fn stdout_width() -> usize {
    terminal_size::terminal_size_of(std::io::stdout())
        .map_or(NOT_A_TERMINAL, |(w, _)| usize::from(w.0).max(NARROWEST))
}

/// The width of text written to a file or a pipe: a pager or an editor shows it whole,
/// and a case file's margin is wider than a terminal's 80 columns.
pub const NOT_A_TERMINAL: usize = 100;

/// The narrowest wrapping width: the tables are 80 columns wide whatever the width, and a
/// sentence broken into a word a line is no easier to read.
pub const NARROWEST: usize = 40;

/// `n` and `noun`, the noun in the plural unless `n` is 1: "1 page", "2 pages".
fn n(n: u64, noun: &str) -> String {
    match n {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    }
}

/// The human report: the same facts as the JSON, for reading, its sentences wrapped at
/// `width` columns (the tables are fixed, 80 at most).
pub fn render(r: &InspectReport, width: usize) -> String {
    let mut s = String::new();
    let line = |s: &mut String, text: &str, first: &str, rest: &str| {
        let _ = writeln!(s, "{}", wrap(text, first, rest, width));
    };
    let _ = writeln!(s, "salvage inspect: {}", crate::shown(&r.run.source_path));
    if let Some(sha256) = &r.source.sha256 {
        line(
            &mut s,
            &format!("sha256: {sha256} ({})", n(r.source.size, "byte")),
            "",
            "  ",
        );
    }
    line(&mut s, &format!("verdict: {}", r.verdict.summary), "", "  ");
    for a in &r.applications {
        line(&mut s, &crate::report::application_line(a), "", "  ");
    }
    let _ = writeln!(s);
    header(&mut s, r);
    beside(&mut s, r, width);
    pages(&mut s, r);
    trees(&mut s, r);
    freelist(&mut s, r, width);
    findings(&mut s, r, width);
    audit(&mut s, r, width);
    s
}

/// The audit, most severe first.
fn audit(s: &mut String, r: &InspectReport, width: usize) {
    let Some(concerns) = &r.audit else { return };
    let _ = writeln!(s);
    if concerns.is_empty() {
        let _ = writeln!(s, "audit: nothing looks deliberate or abnormal");
        return;
    }
    let _ = writeln!(s, "audit ({}):", concerns.len());
    for c in concerns {
        let severity = format!("{:?}", c.severity).to_uppercase();
        let pages = if c.pages.is_empty() {
            String::new()
        } else {
            let listed: Vec<String> = c.pages.iter().map(u32::to_string).collect();
            format!(" [pages {}]", listed.join(", "))
        };
        let first = format!("  {severity:<7} ");
        let text = format!("{}: {}{pages}", c.kind, c.what);
        let _ = writeln!(s, "{}", wrap(&text, &first, &" ".repeat(12), width));
    }
}

/// The header as declared and as used.
fn header(s: &mut String, r: &InspectReport) {
    let u = &r.header.in_use;
    let d = &r.header.declared;
    let _ = writeln!(s, "header                 declared      in use");
    let _ = writeln!(
        s,
        "  page size            {:<13} {} ({})",
        d.page_size, u.page_size, u.page_size_source
    );
    let _ = writeln!(
        s,
        "  reserved space       {:<13} {}",
        d.reserved_space, u.reserved_space
    );
    let _ = writeln!(s, "  usable size                        {}", u.usable_size);
    let _ = writeln!(
        s,
        "  text encoding        {:<13} {} ({})",
        d.text_encoding, u.text_encoding, u.text_encoding_source
    );
    let _ = writeln!(
        s,
        "  database size        {:<13} {} in the file{}",
        d.database_size,
        n(u.page_count.into(), "page"),
        if d.database_size_valid {
            ""
        } else {
            " (header value stale)"
        }
    );
    let _ = writeln!(
        s,
        "  freelist             trunk {} count {}",
        d.first_freelist_trunk, d.freelist_count
    );
    let _ = writeln!(
        s,
        "  auto-vacuum          {}{}",
        if u.auto_vacuum { "yes" } else { "no" },
        if u.incremental_vacuum {
            " (incremental)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        s,
        "  header string        {}",
        if d.header_string_valid {
            "valid"
        } else {
            "DAMAGED"
        }
    );
    if !u.page_size_evidence.is_empty() {
        let _ = writeln!(
            s,
            "  page size evidence   size: pages checked / b-tree headers / exact fits"
        );
        for e in &u.page_size_evidence {
            let _ = writeln!(
                s,
                "    {:>6}: {} / {} / {}",
                e.page_size, e.pages_checked, e.btree_headers, e.exact_fits
            );
        }
    }
}

/// The log and journal beside the file.
fn beside(s: &mut String, r: &InspectReport, width: usize) {
    // Under the header's values: the column they start at.
    let rest = " ".repeat(23);
    let line = |s: &mut String, first: &str, text: &str| {
        let _ = writeln!(s, "{}", wrap(text, first, &rest, width));
    };
    if let Some(w) = &r.sidecars.wal {
        let first = "  beside: -wal         ";
        if w.usable {
            line(
                s,
                first,
                &format!(
                    "{}, {} of {} committed, {} newer than the file's",
                    n(w.size, "byte"),
                    w.frames_committed,
                    n(w.frames_present.into(), "frame"),
                    n(w.pages_committed as u64, "page")
                ),
            );
        } else {
            let why = w.findings.listed.first().map_or("", |f| f.message.as_str());
            line(s, first, &format!("{}, not read: {why}", n(w.size, "byte")));
        }
        timeline(s, w, width);
    }
    if let Some(j) = &r.sidecars.journal {
        let first = "  beside: -journal     ";
        let size = n(j.size, "byte");
        let text = if j.refused {
            let why = j.findings.listed.first().map_or("", |f| f.message.as_str());
            format!("{size}, HOT but not rolled back: {why}")
        } else if j.hot {
            format!(
                "{size}, HOT: {} {} {} of an interrupted transaction ({} ignored)",
                n(j.records_valid.into(), "record"),
                if j.records_valid == 1 {
                    "restores"
                } else {
                    "restore"
                },
                n(j.pages_restored as u64, "page"),
                j.records_ignored
            )
        } else {
            format!("{size}, not hot (its transaction committed)")
        };
        line(s, first, &text);
    }
}

/// The log's commits in order, with the rows each changed.
fn timeline(s: &mut String, w: &recovery::report::inspect::WalSidecar, width: usize) {
    if w.timeline.is_empty() && w.older_generation_frames == 0 {
        return;
    }
    let _ = writeln!(
        s,
        "    {:<12} {:<10} {:>6} {:>9} {:>8} {:>8} {:>10}",
        "step", "frames", "pages", "inserted", "updated", "deleted", "db pages"
    );
    for t in &w.timeline {
        let step = t
            .commit
            .map_or_else(|| t.kind.clone(), |c| format!("commit {c}"));
        let frames = t.frames.map_or(String::new(), |[a, b]| format!("{a}-{b}"));
        let size = t.db_size.map_or(String::new(), |d| d.to_string());
        let _ = writeln!(
            s,
            "    {step:<12} {frames:<10} {:>6} {:>9} {:>8} {:>8} {size:>10}",
            t.pages, t.inserted, t.updated, t.deleted
        );
    }
    if w.older_generation_frames > 0 {
        let text = format!(
            "and {} of an earlier generation of the log (`recover --history` reads their rows)",
            n(w.older_generation_frames as u64, "frame")
        );
        let _ = writeln!(s, "{}", wrap(&text, "    ", "      ", width));
    }
}

/// Pages by class.
fn pages(s: &mut String, r: &InspectReport) {
    let _ = writeln!(s);
    let _ = writeln!(s, "pages: {} in the file", r.pages.total);
    for c in PageClass::ALL {
        let n = r.pages.by_class.get(c.name()).copied().unwrap_or(0);
        if n > 0 {
            let _ = writeln!(s, "  {:<16} {n}", c.name());
        }
    }
    if r.pages.orphan_btree_pages > 0 {
        let _ = writeln!(
            s,
            "  orphan b-tree pages (no tree reaches them): {}",
            r.pages.orphan_btree_pages
        );
        if r.pages.orphan_overflow_pages > 0 {
            let _ = writeln!(
                s,
                "  their overflow pages: {}",
                r.pages.orphan_overflow_pages
            );
        }
    }
}

/// Every b-tree, with its lost children.
fn trees(s: &mut String, r: &InspectReport) {
    let _ = writeln!(s);
    let _ = writeln!(s, "b-trees ({}):", r.trees.len());
    let _ = writeln!(
        s,
        "  {:<28} {:>6} {:>6} {:>8} {:>6} {:>10} {:>8}",
        "name", "type", "root", "pages", "depth", "cells", "findings"
    );
    for t in &r.trees {
        let _ = writeln!(
            s,
            "  {:<28} {:>6} {:>6} {:>8} {:>6} {:>10} {:>8}",
            ellipsize(&t.name, 28),
            t.kind,
            t.root,
            t.pages + t.overflow_pages,
            t.depth,
            t.cells,
            t.findings.count
        );
        for l in t.lost_children.iter().take(5) {
            let _ = writeln!(
                s,
                "      lost child {} of page {}: rowids ({}, {}]",
                l.child,
                l.parent,
                l.rowid_above.map_or("-inf".into(), |v| v.to_string()),
                l.rowid_up_to.map_or("+inf".into(), |v| v.to_string())
            );
        }
        match t.lost_children.len() {
            0..=5 => {}
            6 => {
                let _ = writeln!(s, "      … 1 more lost child");
            }
            more => {
                let _ = writeln!(s, "      … {} more lost children", more - 5);
            }
        }
    }
}

/// The freelist and the damaged pages.
fn freelist(s: &mut String, r: &InspectReport, width: usize) {
    let _ = writeln!(s);
    let f = &r.freelist;
    let text = format!(
        "freelist: {}, {} (header says {}){}",
        n(f.trunk_pages as u64, "trunk page"),
        n(f.leaf_pages as u64, "leaf page"),
        f.declared_count,
        if f.findings.count > 0 {
            format!(", {}", n(f.findings.count as u64, "finding"))
        } else {
            String::new()
        }
    );
    let _ = writeln!(s, "{}", wrap(&text, "", "  ", width));
    if !r.damaged_pages.is_empty() {
        let _ = writeln!(s);
        let _ = writeln!(s, "damaged pages ({}):", r.verdict.damaged_page_count);
        for p in r.damaged_pages.iter().take(40) {
            let pages = match p.last {
                Some(last) => format!("pages {}-{}", p.page, last),
                None => format!("page {}", p.page),
            };
            let text = format!("{pages} ({}): {}", p.class, p.why.join("; "));
            let _ = writeln!(s, "{}", wrap(&text, "  ", "    ", width));
        }
        if r.damaged_pages.len() > 40 {
            let _ = writeln!(
                s,
                "  … {} more in the JSON report (--json)",
                n((r.damaged_pages.len() - 40) as u64, "run")
            );
        }
    }
}

/// The findings, at most 40.
fn findings(s: &mut String, r: &InspectReport, width: usize) {
    let findings: Vec<_> = r
        .findings
        .listed
        .iter()
        .chain(r.trees.iter().flat_map(|t| &t.findings.listed))
        .collect();
    if !findings.is_empty() {
        let _ = writeln!(s);
        let _ = writeln!(s, "findings ({}):", r.verdict.finding_count);
        for f in findings.iter().take(40) {
            let text = format!("{}: {}", f.kind, f.message);
            let _ = writeln!(s, "{}", wrap(&text, "  ", "    ", width));
        }
        if findings.len() > 40 || r.verdict.finding_count > findings.len() {
            let _ = writeln!(
                s,
                "  … {} more in the JSON report (--json)",
                r.verdict.finding_count - findings.len().min(40)
            );
        }
    }
}

pub fn ellipsize(s: &str, width: usize) -> String {
    let printable: String = s
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if printable.chars().count() <= width {
        printable
    } else {
        let mut t: String = printable.chars().take(width - 1).collect();
        t.push('…');
        t
    }
}

/// `text` as lines of at most `width` columns, the first starting with `first` and the
/// others with `rest`, broken at spaces (a word longer than a line has a line of its own).
/// A `quoted` command is never broken: a person copies it whole.
pub fn wrap(text: &str, first: &str, rest: &str, width: usize) -> String {
    let mut out = String::from(first);
    let mut column = first.chars().count();
    let mut at_start = true;
    for word in unbreakable(text) {
        // A sentence may quote a path: a control character in it (a newline in a file
        // name) is written as its escape, never as itself.
        let word = recovery::escape_controls(&word);
        let word: &str = &word;
        let len = word.chars().count();
        if !at_start && column + 1 + len > width {
            out.push('\n');
            out.push_str(rest);
            column = rest.chars().count();
            at_start = true;
        }
        if !at_start {
            out.push(' ');
            column += 1;
        }
        out.push_str(word);
        column += len;
        at_start = false;
    }
    out
}

/// The words of `text`, each span between backticks one word however many spaces it holds.
fn unbreakable(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut quoted = false;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        match words.last_mut() {
            Some(last) if quoted => {
                last.push(' ');
                last.push_str(word);
            }
            _ => words.push(word.to_string()),
        }
        if word.matches('`').count() % 2 == 1 {
            quoted = !quoted;
        }
    }
    words
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn a_quoted_command_stays_on_one_line() {
        let command = "`salvage repair /a/very/long/path/that/fills/most/of/a/line/state.db --resume --allow-partial`";
        let text = format!(
            "To accept the loss and put it in place, run {command}; to end the repair, stop."
        );
        let wrapped = wrap(&text, "", "", 80);
        assert!(wrapped.lines().any(|l| l.contains(command)), "{wrapped}");
        assert!(
            wrapped
                .lines()
                .all(|l| l.chars().count() <= 80 || l.contains('`')),
            "{wrapped}"
        );
    }
}
