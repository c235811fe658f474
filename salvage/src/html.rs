//! `salvage report --format html`: the loss report as one self-contained page, with no
//! script, no network and no external asset (a Content-Security-Policy forbids any): the
//! verdict, a map of every page of the file coloured by class and by the table or index
//! that holds it, a table per table, what was lost, the next step, and the run with every
//! hash.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use recovery::report::map::{MapRun, Orphan};
use recovery::report::LossReport;

use crate::report::{
    accepted_later, count, lost_lists_of, next_step_text, repair_state, rows_and_from_file,
    verdict, ROWS_REBUILT, SOURCE_UNCHANGED,
};
use crate::run_record::{run_record, sha256_as_read};

/// Text of the report (names come from the damaged file) made safe to place in HTML.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

/// The colours of the classes that are not a b-tree's own, and what they mean.
const FIXED: [(&str, &str, &str); 8] = [
    (
        "zeroed",
        "#111111",
        "zeroed page (every byte 0), claimed by nothing",
    ),
    (
        "unrecognised",
        "#d7191c",
        "unrecognised page, claimed by nothing",
    ),
    (
        "orphan",
        "#ff8c00",
        "orphan b-tree page whose rows no table was given",
    ),
    ("freelist_trunk", "#9e9e9e", "freelist trunk page"),
    ("freelist_leaf", "#cfcfcf", "freelist leaf page"),
    ("ptrmap", "#8a6fb8", "pointer-map page"),
    ("lock_byte", "#5d4037", "lock-byte page"),
    ("none", "#f5f5f5", "page of no b-tree"),
];

/// The page, whole.
pub fn render(r: &LossReport, own_sha256: Option<&str>) -> String {
    let mut s = String::new();
    let verdict = verdict(r);
    let tone = if verdict.starts_with("COMPLETE") {
        "ok"
    } else {
        "bad"
    };
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Salvage of {}</title><style>{}</style></head><body>\n",
        esc(&r.run.source_path),
        STYLE
    );
    let _ = writeln!(
        s,
        "<h1>Salvage of <code>{}</code></h1>",
        esc(&r.run.source_path)
    );
    let _ = writeln!(
        s,
        "<p id=\"verdict\" class=\"verdict {tone}\">{}</p>",
        esc(verdict)
    );
    let output = if let Some(state) = repair_state(r) {
        esc(&state)
    } else if r.output.committed {
        match &r.output.accepted {
            Some(a) => format!(
                "<code>{}</code> ({})",
                esc(&r.run.dest_path),
                esc(&accepted_later(a))
            ),
            None => format!("<code>{}</code>", esc(&r.run.dest_path)),
        }
    } else {
        format!(
            "not committed (kept as <code>{}.incomplete</code>)",
            esc(&r.run.dest_path)
        )
    };
    let _ = writeln!(
        s,
        "<p id=\"output\">Output: {output}.</p>\n<p id=\"source\">Source unchanged: {}.</p>",
        if r.source.unchanged {
            SOURCE_UNCHANGED
        } else {
            "<strong>NO</strong>"
        }
    );
    page_map(&mut s, r);
    tables(&mut s, r);
    // The dangling references are said beside the tables, not again among the warnings.
    let dangling = crate::report::dangling_sentences(r);
    let warnings: Vec<&String> = r
        .warnings
        .iter()
        .filter(|w| !dangling.contains(w))
        .collect();
    if !r.evidence.loss.is_empty() || !warnings.is_empty() {
        let _ = writeln!(
            s,
            "<h2>What was lost, and warnings</h2><ul id=\"warnings\">"
        );
        for w in warnings {
            let _ = writeln!(s, "<li>{}</li>", esc(w));
        }
        let _ = writeln!(s, "</ul>");
    }
    lost_lists(&mut s, r);
    let beside =
        crate::report::beside_sentences(r, &|name| format!("<code>{}</code>", esc(name)), &esc);
    if !beside.is_empty() {
        let _ = writeln!(s, "<h2>Evidence beside the tables</h2><ul id=\"beside\">");
        for b in &beside {
            let _ = writeln!(s, "<li>{b}</li>");
        }
        let _ = writeln!(s, "</ul>");
    }
    let _ = writeln!(
        s,
        "<h2>Next step</h2><p id=\"next\">{}</p>",
        esc(&next_step_text(r))
    );
    run(&mut s, r, own_sha256);
    let _ = writeln!(s, "</body></html>");
    s
}

/// The map: a cell per page (or per group of pages, on a big file), coloured by class;
/// each b-tree's pages in a hue of their own, interior pages darker, index pages paler.
fn page_map(s: &mut String, r: &LossReport) {
    let map = &r.pages.map;
    let pages: u32 = r.geometry.page_count;
    // A hue per object, in order of first appearance, spread by the golden angle.
    let mut hues: BTreeMap<&str, u32> = BTreeMap::new();
    for run in &map.runs {
        if let Some(o) = run.object.as_deref() {
            let n = hues.len() as u32;
            hues.entry(o).or_insert((n * 137 + 200) % 360);
        }
    }
    let _ = writeln!(s, "<h2>Page map</h2>");
    let per = map.pages_per_cell.max(1);
    let _ = writeln!(
        s,
        "<p>{}{}. Hover a cell for its pages.</p>",
        count(pages.into(), "page"),
        if per > 1 {
            format!(", {per} to a cell (a cell shows its most telling page: damage first)")
        } else {
            String::new()
        }
    );
    let _ = write!(
        s,
        "<div id=\"map\" class=\"map\" data-cells=\"{}\">",
        map.runs
            .iter()
            .map(|r| (r.last - r.first) / per + 1)
            .sum::<u32>()
    );
    for run in &map.runs {
        let (colour, outline) = colour(run, &hues);
        let style = if outline {
            format!("background:{colour};outline:2px solid #ff8c00;outline-offset:-2px")
        } else {
            format!("background:{colour}")
        };
        let class = run.orphan.map_or(run.class.as_str(), |o| match o {
            Orphan::Attributed => "orphan-attributed",
            Orphan::Unattributed => "orphan",
        });
        // Each cell its own pages: a run of cells that show the same is many cells.
        for cell in 0..(run.last - run.first) / per + 1 {
            let first = run.first + cell * per;
            let last = (first + (per - 1)).min(run.last);
            let title = esc(&describe(run, first, last, per > 1));
            let _ = write!(
                s,
                "<i class=\"c {class}\" style=\"{style}\" title=\"{title}\"></i>"
            );
        }
    }
    let _ = writeln!(s, "</div>");
    // The legend: what each colour means.
    let _ = writeln!(s, "<div class=\"legend\"><h3>Legend</h3><ul>");
    for (_, colour, meaning) in FIXED {
        let _ = writeln!(
            s,
            "<li><i class=\"c\" style=\"background:{colour}\"></i> {}</li>",
            esc(meaning)
        );
    }
    let _ = writeln!(
        s,
        "<li><i class=\"c\" style=\"background:#eee;outline:2px solid #ff8c00;outline-offset:-2px\"></i> orphan page whose rows were given to the table of its colour</li>"
    );
    for (object, hue) in &hues {
        let _ = writeln!(
            s,
            "<li><i class=\"c\" style=\"background:hsl({hue},60%,70%)\"></i><i class=\"c\" style=\"background:hsl({hue},60%,42%)\"></i><i class=\"c\" style=\"background:hsl({hue},30%,85%)\"></i> <code>{}</code>: leaf, interior, overflow or index page</li>",
            esc(object)
        );
    }
    let _ = writeln!(s, "</ul></div>");
}

/// The colour of a run's cells, and whether they are outlined (orphan pages given to a
/// table).
fn colour(run: &MapRun, hues: &BTreeMap<&str, u32>) -> (String, bool) {
    let fixed = |name: &str| {
        FIXED
            .iter()
            .find(|(n, _, _)| *n == name)
            .map_or("#f5f5f5", |(_, c, _)| c)
            .to_string()
    };
    if run.orphan == Some(Orphan::Unattributed) {
        return (fixed("orphan"), false);
    }
    let hue = run.object.as_deref().and_then(|o| hues.get(o));
    let outline = run.orphan == Some(Orphan::Attributed);
    let c = match (run.class.as_str(), hue) {
        ("table_leaf", Some(h)) => format!("hsl({h},60%,70%)"),
        ("table_interior", Some(h)) => format!("hsl({h},60%,42%)"),
        ("index_leaf", Some(h)) => format!("hsl({h},30%,78%)"),
        ("index_interior", Some(h)) => format!("hsl({h},30%,55%)"),
        ("overflow", Some(h)) => format!("hsl({h},30%,85%)"),
        (class, _) => fixed(class),
    };
    (c, outline)
}

/// A cell of `run`, pages `first..=last`, in words: the pages, then what they are (the
/// class, the object, an orphan's fate). A cell of several pages (`counted`) says how many
/// of its pages are of each kind: one zeroed page among many is one, not all.
fn describe(run: &MapRun, first: u32, last: u32, counted: bool) -> String {
    let pages = if first == last {
        format!("page {first}")
    } else {
        format!("pages {first}–{last}")
    };
    let kind = |n: Option<u32>, class: &str, object: Option<&str>, orphan: Option<Orphan>| {
        let noun = class.replace('_', " ");
        let mut out = match n {
            Some(n) => count(n.into(), &format!("{noun} page")),
            None => noun,
        };
        if let Some(o) = object {
            let _ = write!(out, " of {o}");
        }
        match orphan {
            Some(Orphan::Attributed) => out.push_str(" (orphan, rows given to it)"),
            Some(Orphan::Unattributed) => out.push_str(" (orphan, rows not attributed)"),
            None => {}
        }
        out
    };
    let what = if !counted {
        kind(None, &run.class, run.object.as_deref(), run.orphan)
    } else if run.mix.is_empty() {
        kind(
            Some(last - first + 1),
            &run.class,
            run.object.as_deref(),
            run.orphan,
        )
    } else {
        run.mix
            .iter()
            .map(|m| kind(Some(m.pages), &m.class, m.object.as_deref(), m.orphan))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!("{pages}: {what}")
}

/// A row per table: status, rows, from orphans, damaged, placeholders, partial, loss.
fn tables(s: &mut String, r: &LossReport) {
    let _ = writeln!(
        s,
        "<h2>Tables</h2><table id=\"tables\"><thead><tr><th>table</th><th>status</th>\
         <th>rows in output</th><th>from file</th><th>from orphan pages</th><th>damaged rows</th>\
         <th>placeholders</th><th>partial rows</th><th>lost (at least .. at most)</th>\
         </tr></thead><tbody>"
    );
    for t in &r.tables {
        let lost = t.lost_rows.as_ref().map_or_else(
            || "-".to_string(),
            |l| {
                format!(
                    "{} .. {}",
                    l.lower_bound,
                    l.upper_bound
                        .map_or_else(|| "unknown".into(), |u| u.to_string())
                )
            },
        );
        let status = t.status.to_string();
        let (rows, from_file) = rows_and_from_file(t).map_or_else(
            || ("-".to_string(), "-".to_string()),
            |(rows, from_file)| (rows.to_string(), from_file.to_string()),
        );
        let _ = writeln!(
            s,
            "<tr class=\"{}\"><td><code>{}</code></td><td class=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            if t.lost_rows.is_some() { "loss" } else { "" },
            esc(&t.name),
            if matches!(status.as_str(), "recovered" | "skipped" | "rebuilt") { "" } else { "bad" },
            esc(&status),
            rows,
            from_file,
            t.rows_from_orphans,
            t.rows_damaged,
            t.placeholders,
            t.rows_partial,
            esc(&lost)
        );
    }
    let _ = writeln!(s, "</tbody></table>");
    if r.tables.iter().any(|t| t.placeholders + t.rows_partial > 0) {
        let _ = writeln!(s, "<p id=\"rows-rebuilt\">{}</p>", esc(ROWS_REBUILT));
    }
    let lf = &r.lost_and_found;
    if lf.rows > 0 {
        let _ = writeln!(
            s,
            "<p>{} in <code>{}</code>: rows no evidence could give a table, and rows their table's constraints refused.</p>",
            crate::report::rows_are(lf.rows),
            esc(lf.table.as_deref().unwrap_or("lost_and_found"))
        );
    }
    let blobs = crate::report::blob_kinds(r);
    if !blobs.is_empty() {
        let _ = writeln!(s, "<h3>BLOBs by kind</h3><ul id=\"blob-kinds\">");
        for (table, column, kinds) in &blobs {
            let _ = writeln!(
                s,
                "<li><code>{}</code>.<code>{}</code>: {}</li>",
                esc(table),
                esc(column),
                esc(kinds)
            );
        }
        let _ = writeln!(s, "</ul>");
    }
    let dangling = crate::report::dangling_sentences(r);
    if !dangling.is_empty() {
        let _ = writeln!(
            s,
            "<h3>Dangling references (not loss)</h3><ul id=\"dangling\">"
        );
        for d in &dangling {
            let _ = writeln!(s, "<li>{}</li>", esc(d));
        }
        let _ = writeln!(s, "</ul>");
    }
}

/// The rowid ranges and pages lost or put elsewhere, a list each
/// ([`crate::report::lost_lists_of`]).
fn lost_lists(s: &mut String, r: &LossReport) {
    let lists = lost_lists_of(r, &|name| format!("<code>{}</code>", esc(name)));
    if lists.is_empty() {
        return;
    }
    let _ = writeln!(s, "<h2>Lost rows and pages</h2><ul id=\"lost\">");
    for list in &lists {
        if list.per_table {
            let _ = writeln!(s, "<li>{}:<ul>", esc(list.title));
            for e in &list.entries {
                let _ = writeln!(s, "<li>{e}</li>");
            }
            let _ = writeln!(s, "</ul></li>");
        } else {
            let _ = writeln!(
                s,
                "<li>{}: {}</li>",
                esc(list.title),
                list.entries.join("; ")
            );
        }
    }
    let _ = writeln!(s, "</ul>");
}

/// The run and the hashes of every file it read and wrote.
fn run(s: &mut String, r: &LossReport, own_sha256: Option<&str>) {
    let record = run_record(r, own_sha256);
    let _ = writeln!(s, "<h2>Run</h2><dl>");
    for (k, v) in &record.fields {
        let _ = writeln!(s, "<dt>{k}</dt><dd><code>{}</code></dd>", esc(v));
    }
    let _ = writeln!(
        s,
        "</dl><table id=\"hashes\"><thead><tr><th>file</th><th>path</th><th>SHA-256</th></tr></thead><tbody>"
    );
    for f in &record.files {
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td><code>{}</code></td><td><code>{}</code></td></tr>",
            f.role,
            esc(&f.path),
            esc(&sha256_as_read(f))
        );
    }
    let _ = writeln!(s, "</tbody></table>");
}

/// The page's style: nothing fetched, every rule here.
pub const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:70em;padding:0 1em;color:#222}\
code{font:12px ui-monospace,monospace;word-break:break-all}\
.verdict{font-weight:bold;padding:.6em .8em;border-radius:4px}\
.verdict.ok{background:#e3f4e1;border:1px solid #4caf50}\
.verdict.bad{background:#fdecea;border:1px solid #d7191c}\
.map{display:flex;flex-wrap:wrap;gap:1px;margin:.5em 0;max-width:64em}\
.c{display:inline-block;width:10px;height:10px;vertical-align:middle}\
.legend ul{list-style:none;padding:0;columns:2}\
table{border-collapse:collapse;margin:.5em 0}\
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:right}\
th:first-child,td:first-child,#hashes td,#hashes th{text-align:left}\
td code{word-break:normal}\
tr.loss td:last-child,td.bad{color:#b71c1c;font-weight:bold}";
