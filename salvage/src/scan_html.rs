//! The scan's pages for a person: each recovered database's own HTML report beside its
//! JSON, and `OUT/index.html`, every database of the scan in one table, what needs a
//! person's eyes first at the top, each linking its report.

use std::fmt::Write as _;
use std::path::Path;

use recovery::report::LossReport;
use recovery::scan::{EntryOutcome, ScanEntry, ScanSummary};

use crate::html::{esc, STYLE};

/// How urgently an entry needs a person: 0 first.
fn urgency(e: &ScanEntry) -> u8 {
    match e.outcome {
        EntryOutcome::Failed => 0,
        EntryOutcome::Withheld | EntryOutcome::NotVerified => 1,
        _ if e.kind.starts_with("lone_") => 3,
        EntryOutcome::Partial => 2,
        EntryOutcome::Triaged if e.verdict != "healthy" => 4,
        _ if e.concerns > 0 => 5,
        _ if e.verdict != "healthy" => 6,
        _ if e.free_pages > 0 => 7,
        _ => 8,
    }
}

/// What the urgency means, in a few words.
fn why(e: &ScanEntry) -> &'static str {
    match urgency(e) {
        0 => "failed",
        1 => "loss, output withheld",
        2 => "loss, partial output",
        3 => "database missing, what its log holds recovered",
        4 => "damaged, not recovered",
        5 => "signs of manipulation",
        6 => "damaged, recovered whole",
        7 => "deleted records may remain",
        _ => "healthy, complete",
    }
}

/// `NAME.report.json` beside each output rendered as `NAME.report.html`; returns, per
/// entry, the page's path relative to OUT where one was written.
pub fn write_reports(out: &Path, summary: &ScanSummary) -> std::io::Result<Vec<Option<String>>> {
    summary
        .entries
        .iter()
        .map(|e| {
            let Some(report) = &e.report else {
                return Ok(None);
            };
            let text = std::fs::read_to_string(out.join(report))?;
            let Ok(parsed) = serde_json::from_str::<LossReport>(&text) else {
                return Ok(None);
            };
            let own = crate::report::sha256_hex(text.as_bytes());
            let page = report.strip_suffix(".json").unwrap_or(report).to_string() + ".html";
            write_whole(&out.join(&page), &crate::html::render(&parsed, Some(&own)))?;
            Ok(Some(page))
        })
        .collect()
}

/// `OUT/index.html`.
pub fn write_index(
    out: &Path,
    summary: &ScanSummary,
    pages: &[Option<String>],
) -> std::io::Result<()> {
    let mut rows: Vec<(&ScanEntry, Option<&String>)> = summary
        .entries
        .iter()
        .zip(pages.iter().map(Option::as_ref))
        .collect();
    rows.sort_by(|a, b| (urgency(a.0), &a.0.path).cmp(&(urgency(b.0), &b.0.path)));
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Scan of {n} databases</title><style>{STYLE}</style></head><body>\n\
         <h1>Scan of {n} databases and logs</h1>\n",
        n = summary.entries.len()
    );
    let count = |u: &[u8]| {
        summary
            .entries
            .iter()
            .filter(|e| u.contains(&urgency(e)))
            .count()
    };
    let _ = writeln!(
        s,
        "<p>{} need a person first (failed, withheld or partial), {} more are damaged or \
         show signs of manipulation, {} are healthy and complete; {} other files skipped. \
         Sources: {}.</p>",
        count(&[0, 1, 2]),
        count(&[3, 4, 5]),
        count(&[6, 7]),
        summary.skipped_files,
        summary
            .sources
            .iter()
            .map(|p| format!("<code>{}</code>", esc(p)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    s.push_str(
        "<table><tr><th>needs</th><th>database</th><th>application</th><th>verdict</th>\
         <th>findings</th><th>damaged pages</th><th>free pages</th><th>concerns</th>\
         <th>rows</th><th>output</th><th>report</th></tr>\n",
    );
    for (e, page) in rows {
        let link = |href: Option<&str>, text: &str| match href {
            Some(h) => format!(
                "<a href=\"{}\">{}</a>",
                esc(&h.replace('\\', "/")),
                esc(text)
            ),
            None => String::new(),
        };
        let _ = writeln!(
            s,
            "<tr class=\"{}\"><td>{}</td><td><code>{}</code>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            if urgency(e) <= 2 { "bad" } else { "ok" },
            why(e),
            esc(&e.path),
            e.error
                .as_deref()
                .map(|w| format!("<br><small>{}</small>", esc(w)))
                .unwrap_or_default(),
            esc(&e.applications.join("; ")),
            esc(&e.verdict),
            e.findings,
            e.damaged_pages,
            e.free_pages,
            e.concerns,
            e.rows.map(|r| r.to_string()).unwrap_or_default(),
            link(e.output.as_deref(), "database"),
            link(page.map(String::as_str).or(e.report.as_deref()), "report"),
        );
    }
    s.push_str("</table>\n</body></html>\n");
    write_whole(&out.join("index.html"), &s)
}

/// Writes `text` beside `path` and renames it into place: a reader sees a whole page.
pub(crate) fn write_whole(path: &Path, text: &str) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}
