//! `OUT/scan.jsonld`: a whole scan as one CASE/UCO JSON-LD graph (<https://caseontology.org>),
//! for a case-management system to take in with its chain of custody, as `case.rs` gives
//! one recovery's run. The graph holds the tool; each archive among the sources, and each
//! database and lone log found, as a `uco-observable:File` with its path (as found; a
//! member of an archive as `ARCHIVE!/MEMBER`), its size and its SHA-256 (none for a file
//! that could not be read); a member `Contained_Within` its archive
//! (`uco-observable:ObservableRelationship`); each output and loss report (relative to
//! `OUT`) with its SHA-256; a `salvage recover` action per database recovered (the source
//! its object, the output and report its results, the outcome in words its description);
//! and one `salvage scan` action over them all, with the counts.
//!
//! Identifiers derive from the summary's content (every hash in it, the reports' among
//! them): the same summary gives the same graph. A recovery's action has the identifier
//! `salvage report --format case` gives it from its report's hash, so that the two graphs
//! merge into one.

use serde_json::{json, Value};

use recovery::report::Tool;
use recovery::scan::{EntryOutcome, ScanEntry, ScanSummary};

use crate::case::{context, file, id, tool};

/// What a file is to the scan: its node's name.
#[derive(Clone, Copy)]
enum Role {
    /// An archive given as a source.
    Archive,
    /// A database or lone log found.
    Source,
    /// The output of its recovery.
    Output,
    /// Its loss report.
    Report,
    /// The database image laid out from a lone log's pages.
    Image,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Archive => "archive",
            Role::Source => "source",
            Role::Output => "output",
            Role::Report => "loss report",
            Role::Image => "database image from a log",
        }
    }
}

/// How a recovery ended, in words; `None` for an entry that was not recovered (triaged
/// only, or failed before its recovery could write anything).
fn recovered(outcome: EntryOutcome) -> Option<&'static str> {
    match outcome {
        EntryOutcome::Complete => Some("complete: no loss detected, the output verified"),
        EntryOutcome::Partial => Some("partial: loss detected, the partial output committed"),
        EntryOutcome::Withheld => Some("withheld: loss detected, the output not committed"),
        EntryOutcome::NotVerified => Some("not verified: the output failed its verification"),
        EntryOutcome::Triaged | EntryOutcome::Failed => None,
    }
}

/// The graph of the scan.
pub fn render(summary: &ScanSummary) -> String {
    // Every identifier is scoped by the summary's own hash: two scans never share a node,
    // though their outputs may share a path relative to their OUT and a hash.
    let scan = crate::report::sha256_hex(&serde_json::to_vec(summary).unwrap_or_default());
    let file_node = |role: Role, path: &str, size: Option<u64>, sha256: Option<&str>| {
        let node = id(
            "file",
            &[&scan, role.name(), path, sha256.unwrap_or_default()],
        );
        (file(&node, role.name(), path, size, sha256), node)
    };
    let reference = |node: &str| json!({ "@id": node });
    let build = Tool::build();
    let tool_id = id("tool", &[&build]);
    let mut graph = vec![tool(&build, &Tool::this().version)];
    let (mut objects, mut results) = (Vec::new(), Vec::new());
    let mut archives = Vec::new();
    for a in &summary.archives {
        let (node, node_id) = file_node(Role::Archive, &a.path, None, Some(&a.sha256));
        graph.push(node);
        objects.push(reference(&node_id));
        archives.push((a.path.as_str(), node_id));
    }
    for e in &summary.entries {
        let (node, source) = file_node(Role::Source, &e.path, Some(e.size), e.sha256.as_deref());
        graph.push(node);
        objects.push(reference(&source));
        if let Some((_, archive)) = archives.iter().find(|(path, _)| *path == e.source) {
            graph.push(json!({
                "@id": id("relationship", &[&source, archive]),
                "@type": "uco-observable:ObservableRelationship",
                "uco-core:source": reference(&source),
                "uco-core:target": reference(archive),
                "uco-core:kindOfRelationship": "Contained_Within",
                "uco-core:isDirectional": true,
            }));
        }
        let mut made = Vec::new();
        for (role, path, sha256) in [
            (Role::Output, &e.output, &e.output_sha256),
            (Role::Report, &e.report, &e.report_sha256),
            (Role::Image, &e.image, &e.image_sha256),
        ] {
            if let Some(path) = path {
                let (node, node_id) = file_node(role, path, None, sha256.as_deref());
                graph.push(node);
                made.push(reference(&node_id));
            }
        }
        results.extend(made.iter().cloned());
        if let Some(words) = recovered(e.outcome) {
            graph.push(recover_action(e, words, &scan, &tool_id, &source, made));
        }
    }
    graph.push(json!({
        "@id": id("action-scan", &[&scan]),
        "@type": "case-investigation:InvestigativeAction",
        "uco-core:name": "salvage scan",
        "uco-core:description": scan_description(summary),
        "uco-action:instrument": reference(&tool_id),
        "uco-action:object": objects,
        "uco-action:result": results,
    }));
    let doc = json!({ "@context": context(), "@graph": graph });
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}

/// The `salvage recover` action of one entry: its source the object, what it wrote the
/// results, how it ended the description.
fn recover_action(
    e: &ScanEntry,
    words: &str,
    scan: &str,
    tool_id: &str,
    source: &str,
    results: Vec<Value>,
) -> Value {
    // The identifier `salvage report --format case` gives the action of this report.
    let action = match &e.report_sha256 {
        Some(report) => id("action", &[report]),
        None => id("action", &[scan, &e.path]),
    };
    let loss = if e.loss {
        "loss recorded"
    } else {
        "no loss recorded"
    };
    let mut description = vec![
        words.to_string(),
        format!(
            "the source {}: {} findings, {} damaged pages",
            e.verdict, e.findings, e.damaged_pages
        ),
        loss.to_string(),
    ];
    if let Some(rows) = e.rows {
        description.push(format!("{rows} rows in the output"));
    }
    json!({
        "@id": action,
        "@type": "case-investigation:InvestigativeAction",
        "uco-core:name": "salvage recover",
        "uco-core:description": description,
        "uco-action:instrument": { "@id": tool_id },
        "uco-action:object": [{ "@id": source }],
        "uco-action:result": results,
    })
}

/// The scan's counts, and its sources as given.
fn scan_description(summary: &ScanSummary) -> Vec<String> {
    let count = |o: &[EntryOutcome]| {
        summary
            .entries
            .iter()
            .filter(|e| o.contains(&e.outcome))
            .count()
    };
    vec![
        format!(
            "{} databases and logs: {} complete, {} partial, {} withheld or not verified, {} triaged, {} failed; {} kept from an earlier run",
            summary.entries.len(),
            count(&[EntryOutcome::Complete]),
            count(&[EntryOutcome::Partial]),
            count(&[EntryOutcome::Withheld, EntryOutcome::NotVerified]),
            count(&[EntryOutcome::Triaged]),
            count(&[EntryOutcome::Failed]),
            summary.resumed,
        ),
        format!(
            "{} other files skipped, {} archives, {} files or folders unreadable; {}",
            summary.skipped_files,
            summary.archives.len(),
            summary.unreadable.len(),
            if summary.loss() {
                "loss recorded"
            } else {
                "no loss recorded"
            }
        ),
        format!("sources: {}", summary.sources.join(", ")),
    ]
}

#[cfg(test)]
mod tests {
    use recovery::scan::{ArchiveEntry, ScanEntry, ScanSummary};
    use serde_json::Value;

    use super::render;

    /// An entry of `source` at `path`, failed before anything could hash it.
    fn failed(path: &str, source: &str) -> ScanEntry {
        let mut e = ScanEntry::unread(path.into(), source.into(), "a.db".into(), 4096, "database");
        e.error = Some("cannot read".into());
        e
    }

    /// A file no one could hash is a file node with its path and size and no content
    /// facet (CASE has no "hash unknown"), still within its archive; no recovery action
    /// is made up for it; and one summary gives one graph, byte for byte.
    #[test]
    fn a_file_that_could_not_be_read_has_no_hash_and_stays_within_its_archive() {
        let summary = ScanSummary {
            format_version: recovery::scan::FORMAT_VERSION,
            sources: vec!["phone.tar".into()],
            entries: vec![failed("phone.tar!/a.db", "phone.tar")],
            skipped_files: 0,
            skipped_bytes: 0,
            links_not_followed: 0,
            unreadable: Vec::new(),
            resumed: 0,
            archives: vec![ArchiveEntry {
                path: "phone.tar".into(),
                sha256: "ab".repeat(32),
                kept: 1,
                skipped: 0,
                refused: Vec::new(),
            }],
        };
        let text = render(&summary);
        assert_eq!(text, render(&summary));
        let doc: Value = serde_json::from_str(&text).unwrap();
        let graph = doc["@graph"].as_array().unwrap();
        let of_type = |t: &'static str| graph.iter().filter(move |n| n["@type"] == t);
        let member = of_type("uco-observable:File")
            .find(|f| f["uco-core:name"] == "source")
            .unwrap();
        let facets = member["uco-core:hasFacet"].as_array().unwrap();
        assert_eq!(facets.len(), 1, "{member:#}");
        assert_eq!(facets[0]["uco-observable:filePath"], "phone.tar!/a.db");
        assert_eq!(facets[0]["uco-observable:sizeInBytes"]["@value"], "4096");
        let archive = of_type("uco-observable:File")
            .find(|f| f["uco-core:name"] == "archive")
            .unwrap();
        let within: Vec<&Value> = of_type("uco-observable:ObservableRelationship").collect();
        assert_eq!(within.len(), 1);
        assert_eq!(within[0]["uco-core:source"]["@id"], member["@id"]);
        assert_eq!(within[0]["uco-core:target"]["@id"], archive["@id"]);
        let actions: Vec<&Value> = of_type("case-investigation:InvestigativeAction").collect();
        assert_eq!(actions.len(), 1);
        assert_eq!(actions[0]["uco-core:name"], "salvage scan");
    }
}
