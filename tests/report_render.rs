//! `salvage report` for a person, in text, Markdown and HTML: the rows and pages lost are
//! listed, not only counted; the next step names only the output's tables that hold rows;
//! the rows column is the rows the output holds; Markdown keeps its opening lines apart;
//! counts agree with their nouns.

use std::path::{Path, PathBuf};

use fixtures::{Damage, Kind, Options};
use recovery::report::LossReport;
use recovery::Outcome;

use crate::{Scratch, TestResult};

/// The formats a person reads.
const FORMATS: [&str; 3] = ["text", "markdown", "html"];

/// The demo's damage: the agent store's `sessions` page zeroed (its rows lost, placeholders
/// made for them) and a leaf of `messages` overwritten (a child pointer that cannot be
/// followed, its rowid range lost). Returns the report's path, the typed report and the
/// two damaged pages (zeroed, unrecognised).
fn demo_damage(
    dir: &Scratch,
) -> Result<(PathBuf, LossReport, u32, u32), Box<dyn std::error::Error>> {
    let f = fixtures::build(Kind::AgentStore, &Options::default());
    let mut bytes = f.bytes.clone();
    let sessions = f.roots["sessions"];
    let leaves = fixtures::table_pages(&bytes, f.roots["messages"]).leaves;
    let overwritten = leaves[leaves.len() / 2];
    for d in [
        Damage::ZeroPage(sessions),
        Damage::RandomPage {
            page: overwritten,
            seed: 7,
        },
    ] {
        fixtures::apply(&mut bytes, &d)?;
    }
    let src = dir.path("state.db");
    std::fs::write(&src, &bytes)?;
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(
        &crate::allow_partial(&src, &dest),
        Outcome::PartialCommitted,
    )?;
    Ok((
        dir.path("out.db.report.json"),
        done.report,
        sessions,
        overwritten,
    ))
}

/// `salvage report REPORT --format FORMAT`, its stdout (exit 3: every report here is of
/// loss), each run of white space one space: the text wraps at 80 columns.
fn render(report: &Path, format: &str) -> Result<String, Box<dyn std::error::Error>> {
    Ok(render_as_is(report, format)?
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" "))
}

/// `salvage report REPORT --format FORMAT`, its stdout as printed.
fn render_as_is(report: &Path, format: &str) -> Result<String, Box<dyn std::error::Error>> {
    let out = crate::salvage()
        .args(["report", "--format", format])
        .arg(report)
        .output()?;
    assert_eq!(
        out.status.code(),
        Some(3),
        "{format}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8(out.stdout)?)
}

/// The part of `page` from `start` to `end` (or to its end).
fn section<'p>(page: &'p str, start: &str, end: &str) -> Result<&'p str, String> {
    let from = page
        .split_once(start)
        .map(|(_, rest)| rest)
        .ok_or_else(|| format!("no `{start}` in\n{page}"))?;
    Ok(from.split(end).next().unwrap_or(from))
}

/// The section "Lost rows and pages" of a rendering.
fn lost_section<'p>(page: &'p str, format: &str) -> Result<&'p str, String> {
    match format {
        "html" => section(page, "<ul id=\"lost\">", "<h2>"),
        "markdown" => section(page, "## Lost rows and pages", " ## "),
        _ => section(page, " Lost rows and pages ", " Next step "),
    }
}

/// The section "Next step" of a rendering.
fn next_section<'p>(page: &'p str, format: &str) -> Result<&'p str, String> {
    match format {
        "html" => section(page, "<p id=\"next\">", "</p>"),
        "markdown" => section(page, "## Next step", " ## "),
        _ => section(page, " Next step ", " Run "),
    }
}

/// A report changed by `edit` (a forged variant of a real one), written beside it.
fn forged(
    report: &Path,
    name: &str,
    edit: impl FnOnce(&mut serde_json::Value),
) -> Result<PathBuf, Box<dyn std::error::Error>> {
    let mut json: serde_json::Value = serde_json::from_slice(&std::fs::read(report)?)?;
    edit(&mut json);
    let path = report.with_file_name(name);
    std::fs::write(&path, serde_json::to_vec_pretty(&json)?)?;
    Ok(path)
}

/// The index of table `name` in the report's `tables`.
fn table_index(json: &serde_json::Value, name: &str) -> usize {
    json["tables"]
        .as_array()
        .and_then(|t| t.iter().position(|t| t["name"] == name))
        .unwrap_or_else(|| panic!("no table `{name}`"))
}

/// The rowid ranges of the lost subtrees, the zeroed and unrecognised pages, and the orphan
/// pages given to a table are listed in every format, not only counted.
#[test]
fn lost_rowids_and_pages_are_listed_in_every_format() -> TestResult {
    let dir = Scratch::new("render-lost");
    let (report, typed, zeroed, overwritten) = demo_damage(&dir)?;
    let messages = typed
        .tables
        .iter()
        .find(|t| t.name == "messages")
        .ok_or("messages")?;
    let [lost] = messages.lost_subtrees.as_slice() else {
        return Err(format!("{:?}", messages.lost_subtrees).into());
    };
    let rowids = format!(
        "rowids {}–{}",
        lost.rowid_above.ok_or("above")? + 1,
        lost.rowid_up_to.ok_or("up to")?
    );
    for format in FORMATS {
        let page = render(&report, format)?;
        let lost = lost_section(&page, format)?;
        assert!(
            lost.contains("messages") && lost.contains(&rowids),
            "{format}: {lost}"
        );
        assert!(
            lost.contains(&format!("zeroed (every byte 0): page {zeroed}")),
            "{format}: {lost}"
        );
        assert!(
            lost.contains(&format!("unrecognised: page {overwritten}")),
            "{format}: {lost}"
        );
    }

    // Orphan pages: `messages` lost its root, its leaves come back as orphans given to it.
    let dir = Scratch::new("render-orphans");
    let f = fixtures::build(Kind::AgentStore, &Options::default());
    let mut bytes = f.bytes.clone();
    fixtures::apply(&mut bytes, &Damage::ZeroPage(f.roots["messages"]))?;
    let src = dir.path("state.db");
    std::fs::write(&src, &bytes)?;
    let done = crate::recover_in_process(
        &crate::allow_partial(&src, &dir.path("out.db")),
        Outcome::PartialCommitted,
    )?;
    let given: Vec<String> = done
        .report
        .pages
        .map
        .runs
        .iter()
        .filter(|r| {
            r.orphan == Some(recovery::report::map::Orphan::Attributed)
                && r.object.as_deref() == Some("messages")
        })
        .map(|r| match r.first == r.last {
            true => r.first.to_string(),
            false => format!("{}–{}", r.first, r.last),
        })
        .collect();
    assert!(!given.is_empty(), "{:?}", done.report.pages.map);
    let report = dir.path("out.db.report.json");
    for format in FORMATS {
        let page = render(&report, format)?;
        let lost = lost_section(&page, format)?;
        let orphans = section(lost, "orphan pages placed elsewhere", "\u{0}")?;
        // The first 20 ranges; the rest are said to be in the JSON.
        for range in given.iter().take(20) {
            assert!(
                orphans.contains(range.as_str()),
                "{format}: {range} in {orphans}"
            );
        }
        assert!(orphans.contains("messages"), "{format}: {orphans}");
    }

    // Many ranges: at most 20 a list, the rest said to be in the JSON.
    let many = forged(&report, "many.json", |json| {
        let t = table_index(json, "messages");
        json["tables"][t]["lost_subtrees"] = (0..25)
            .map(|i| serde_json::json!({ "parent": 4, "child": 0, "rowid_above": i * 100, "rowid_up_to": i * 100 + 10 }))
            .collect();
    })?;
    for format in FORMATS {
        let page = render(&many, format)?;
        let lost = lost_section(&page, format)?;
        assert!(
            lost.contains("1901–1910, and 5 more ranges in the JSON"),
            "{format}: {lost}"
        );
        assert!(!lost.contains("2001–2010"), "{format}: {lost}");
    }
    Ok(())
}

/// The next step names `salvage_placeholders`, `salvage_partial_rows`,
/// `salvage_damaged_fields` and `lost_and_found` only when the report says they hold rows.
#[test]
fn the_next_step_names_only_the_tables_that_hold_rows() -> TestResult {
    let dir = Scratch::new("render-next");
    let (report, typed, _, _) = demo_damage(&dir)?;
    // The demo's damage: placeholders made, partial rows refused (kept in the registry),
    // no damaged value, nothing in `lost_and_found`.
    assert!(typed.placeholders.made.count > 0);
    assert!(typed.partial_rows.refused > 0);
    assert_eq!(typed.damaged_fields.fields, 0);
    assert_eq!(typed.lost_and_found.rows, 0);
    for format in FORMATS {
        let page = render(&report, format)?;
        let next = next_section(&page, format)?;
        assert!(next.contains("`salvage_placeholders`"), "{format}: {next}");
        assert!(next.contains("`salvage_partial_rows`"), "{format}: {next}");
        assert!(!next.contains("salvage_damaged_fields"), "{format}: {next}");
        assert!(!next.contains("lost_and_found"), "{format}: {next}");
    }
    // Nothing made: none named.
    let none = forged(&report, "none.json", |json| {
        json["placeholders"]["made"] = serde_json::json!({ "count": 0, "listed": [] });
        json["placeholders"]["registry"] = serde_json::Value::Null;
        json["partial_rows"] = serde_json::json!({ "registry": null, "rows": 0, "refused": 0 });
    })?;
    // Damaged values and rows without a table: named.
    let all = forged(&report, "all.json", |json| {
        json["damaged_fields"] =
            serde_json::json!({ "registry": "salvage_damaged_fields", "fields": 3 });
        json["lost_and_found"]["table"] = "lost_and_found".into();
        json["lost_and_found"]["rows"] = 2.into();
    })?;
    for format in FORMATS {
        let page = render(&none, format)?;
        let next = next_section(&page, format)?;
        for table in [
            "salvage_placeholders",
            "salvage_partial_rows",
            "salvage_damaged_fields",
            "lost_and_found",
        ] {
            assert!(!next.contains(table), "{format}: {table} in {next}");
        }
        let page = render(&all, format)?;
        let next = next_section(&page, format)?;
        for table in ["`salvage_damaged_fields`", "`lost_and_found`"] {
            assert!(next.contains(table), "{format}: no {table} in {next}");
        }
    }
    Ok(())
}

/// The rows column is the rows the output holds in every format: the demo's `sessions`
/// holds its 12 placeholders, said as rebuilt, not 0.
#[test]
fn every_format_counts_the_rows_the_output_holds() -> TestResult {
    let dir = Scratch::new("render-rows");
    let (report, typed, _, _) = demo_damage(&dir)?;
    let sessions = typed
        .tables
        .iter()
        .find(|t| t.name == "sessions")
        .ok_or("sessions")?;
    let rows = sessions.rows_in_output.ok_or("rows_in_output")?;
    assert_eq!(sessions.rows_written, 0);
    assert_eq!(rows, sessions.placeholders);
    assert!(rows > 0);

    let text = render_as_is(&report, "text")?;
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("sessions "))
        .ok_or(text.clone())?;
    let cells: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(cells[1], rows.to_string(), "{line}");

    let md = render_as_is(&report, "markdown")?;
    let row = md
        .lines()
        .find(|l| l.starts_with("| `sessions` |"))
        .ok_or(md.clone())?;
    let header = md
        .lines()
        .find(|l| l.starts_with("| table |"))
        .ok_or(md.clone())?;
    let column = |line: &str, name: &str| -> Option<String> {
        let at = header.split(" | ").position(|h| h == name)?;
        line.split(" | ").nth(at).map(str::to_string)
    };
    assert_eq!(
        column(row, "rows"),
        Some(rows.to_string()),
        "{header}\n{row}"
    );
    assert_eq!(
        column(row, "from file"),
        Some("0".into()),
        "{header}\n{row}"
    );
    assert!(
        md.contains("Placeholders and partial rows are rebuilt"),
        "{md}"
    );

    let html = render(&report, "html")?;
    let tables = section(&html, "<table id=\"tables\">", "</table>")?;
    let heads: Vec<&str> = tables
        .split("<th>")
        .skip(1)
        .map(|h| h.split("</th>").next().unwrap_or(h))
        .collect();
    let row = section(tables, "<td><code>sessions</code></td>", "</tr>")?;
    let cells: Vec<&str> = row
        .split("<td")
        .skip(1)
        .map(|c| {
            let c = c.split_once('>').map_or(c, |(_, c)| c);
            c.split("</td>").next().unwrap_or(c)
        })
        .collect();
    // The row's cells after the name, beside the headers after "table".
    let at = heads
        .iter()
        .position(|h| *h == "rows in output")
        .ok_or(format!("{heads:?}"))?;
    assert_eq!(
        cells.get(at - 1),
        Some(&rows.to_string().as_str()),
        "{heads:?} {cells:?}"
    );
    assert!(html.contains("Placeholders and partial rows are rebuilt"));
    Ok(())
}

/// Markdown: the verdict, the output and the source are list items, so that a renderer
/// does not join them into one paragraph.
#[test]
fn markdown_keeps_the_verdict_output_and_source_apart() -> TestResult {
    let dir = Scratch::new("render-md-lines");
    let (report, _, _, _) = demo_damage(&dir)?;
    let md = render_as_is(&report, "markdown")?;
    let lines: Vec<&str> = md.lines().collect();
    let mut found = 0;
    for (i, line) in lines.iter().enumerate() {
        if [
            "**Verdict:**",
            "**Output:**",
            "**Source unchanged:**",
            "**Application:**",
        ]
        .iter()
        .any(|k| line.contains(k))
        {
            found += 1;
            let apart = line.starts_with("- ") || i == 0 || lines[i - 1].trim().is_empty();
            assert!(apart, "line {i} runs on from the one before:\n{md}");
        }
    }
    assert!(found >= 3, "{md}");
    Ok(())
}

/// Counts of one take the singular in every format: "1 page", "1 row", "1 more range",
/// "1 more relationship", "1 table".
#[test]
fn counts_of_one_are_singular_in_every_format() -> TestResult {
    let dir = Scratch::new("render-plural");
    let (report, _, _, _) = demo_damage(&dir)?;
    let one = forged(&report, "one.json", |json| {
        json["geometry"]["page_count"] = 1.into();
        let t = table_index(json, "messages");
        json["tables"][t]["lost_subtrees"] = (0..21)
            .map(|i| serde_json::json!({ "parent": 4, "child": 0, "rowid_above": i * 100, "rowid_up_to": i * 100 + 10 }))
            .collect();
        let t = table_index(json, "sessions");
        json["tables"][t]["lost_rows"]["lower_bound"] = 1.into();
        json["placeholders"]["dangling"] = serde_json::json!({ "count": 1, "listed": [] });
        json["lost_and_found"] = serde_json::json!({
            "table": "lost_and_found", "rows": 1, "index_groups": 0,
            "groups": [ { "top": 7, "pages": 1, "cells": 1, "rowids": [5, 5], "evidence": [] } ],
        });
        if let Some(a) = json["applications"].get_mut(0) {
            a["tables_known"] = 1.into();
            a["tables_present"] = 1.into();
        }
    })?;
    // A count is the whole number before its noun: "11 rows" is not "1 rows".
    let said = |page: &str, phrase: &str| {
        page.match_indices(phrase).any(|(at, _)| {
            !page[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_digit() || c == ',')
        })
    };
    for format in FORMATS {
        let page = render(&one, format)?;
        for wrong in [
            "1 pages",
            "1 rows",
            "1 more ranges",
            "1 more relationships",
            "1 groups",
            "1 tables",
            "1 child pointers",
        ] {
            assert!(!said(&page, wrong), "{format}: `{wrong}` in\n{page}");
        }
        for right in [
            "1 more range in the JSON",
            "1 more relationship",
            "at least 1 row",
        ] {
            assert!(page.contains(right), "{format}: no `{right}` in\n{page}");
        }
        assert!(
            page.contains("1 page in 1 group under page 7 (1 row, rowid 5"),
            "{format}\n{page}"
        );
    }
    let html = render(&one, "html")?;
    assert!(html.contains("<p>1 page. "), "{html}");
    Ok(())
}
