//! `salvage report --format case`: the run as CASE/UCO JSON-LD, the exchange format of
//! the forensic community (<https://caseontology.org>): the tool, the investigative action
//! (when, by whom, what it read and what it made), and each file with its path, size when
//! known and SHA-256, so that a case-management system takes the run in with its chain of
//! custody. Identifiers are derived from the report's own content, so that the same report
//! gives the same graph.

use serde_json::{json, Value};

use recovery::report::LossReport;

use crate::run_record::{run_record, FileRole, RunField};

/// The prefixes of the ontologies used, and `kb:` for this graph's own nodes.
pub(crate) fn context() -> Value {
    json!({
        "case-investigation": "https://ontology.caseontology.org/case/investigation/",
        "uco-action": "https://ontology.unifiedcyberontology.org/uco/action/",
        "uco-core": "https://ontology.unifiedcyberontology.org/uco/core/",
        "uco-identity": "https://ontology.unifiedcyberontology.org/uco/identity/",
        "uco-observable": "https://ontology.unifiedcyberontology.org/uco/observable/",
        "uco-tool": "https://ontology.unifiedcyberontology.org/uco/tool/",
        "uco-types": "https://ontology.unifiedcyberontology.org/uco/types/",
        "uco-vocabulary": "https://ontology.unifiedcyberontology.org/uco/vocabulary/",
        "xsd": "http://www.w3.org/2001/XMLSchema#",
        "kb": "urn:salvage:kb:"
    })
}

/// A node identifier from `parts`: `kb:KIND-` and a name-based UUID (version 5's layout,
/// from SHA-256) of them.
pub(crate) fn id(kind: &str, parts: &[&str]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(kind.as_bytes());
    for p in parts {
        h.update([0]);
        h.update(p.as_bytes());
    }
    let hex = crate::report::hex(&h.finalize());
    let part = |from: usize, to: usize| hex.get(from..to).unwrap_or_default();
    // The version nibble 5, and the variant bits 10.
    let variant = ['8', '9', 'a', 'b']
        .get(usize::from(
            hex.as_bytes().get(16).copied().unwrap_or(0) % 4,
        ))
        .copied()
        .unwrap_or('8');
    format!(
        "kb:{kind}-{}-{}-5{}-{variant}{}-{}",
        part(0, 8),
        part(8, 12),
        part(13, 16),
        part(17, 20),
        part(20, 32)
    )
}

/// A typed literal.
fn typed(kind: &str, value: impl ToString) -> Value {
    json!({ "@type": kind, "@value": value.to_string() })
}

/// The tool node of this build: `build` as `Tool::build()` gives it (its identifier
/// derives from it), `version` as a document records it.
pub(crate) fn tool(build: &str, version: &str) -> Value {
    json!({
        "@id": id("tool", &[build]),
        "@type": "uco-tool:Tool",
        "uco-core:name": "salvage",
        "uco-tool:toolType": "forensic SQLite salvage",
        "uco-tool:version": version,
        "uco-core:description": build,
    })
}

/// The file node `node`: named by its role, with its file name and path, its size when
/// known, and its SHA-256 when known (of an evidence file that changed during the run, the
/// first reading's). A file that could not be read has no content facet: CASE has no way
/// to say "hash unknown" but to say none.
pub(crate) fn file(
    node: &str,
    role: &str,
    path: &str,
    size: Option<u64>,
    sha256: Option<&str>,
) -> Value {
    let name = std::path::Path::new(path)
        .file_name()
        .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned());
    let mut file_facet = json!({
        "@id": id("file-facet", &[node]),
        "@type": "uco-observable:FileFacet",
        "uco-observable:fileName": name,
        "uco-observable:filePath": path,
    });
    if let (Some(size), Some(obj)) = (size, file_facet.as_object_mut()) {
        obj.insert(
            "uco-observable:sizeInBytes".into(),
            typed("xsd:integer", size),
        );
    }
    let mut facets = vec![file_facet];
    if let Some(sha256) = sha256 {
        facets.push(json!({
            "@id": id("content-facet", &[node]),
            "@type": "uco-observable:ContentDataFacet",
            "uco-observable:hash": [{
                "@id": id("hash", &[node]),
                "@type": "uco-types:Hash",
                "uco-types:hashMethod": "SHA256",
                "uco-types:hashValue": typed("xsd:hexBinary", sha256),
            }]
        }));
    }
    json!({
        "@id": node,
        "@type": "uco-observable:File",
        "uco-core:name": role,
        "uco-core:hasFacet": facets,
    })
}

/// The graph of the run.
pub fn render(r: &LossReport, own_sha256: &str) -> String {
    let run = &r.run;
    let record = run_record(r, Some(own_sha256));
    let verdict = crate::report::verdict(r);
    // Every node's identifier derives from the report's hash: one report, one graph.
    let tool_id = id("tool", &[&run.build]);
    let mut graph = vec![tool(&run.build, &r.tool.version)];
    let (mut objects, mut results) = (Vec::new(), Vec::new());
    let mut output_node = None;
    for f in &record.files {
        let size = (f.role == FileRole::Source).then_some(r.source.size);
        let role = f.role.to_string();
        let node_id = id("file", &[own_sha256, &role, &f.path, &f.sha256]);
        let node = file(&node_id, &role, &f.path, size, Some(&f.sha256));
        let reference = json!({ "@id": node["@id"] });
        if f.role == FileRole::Output {
            output_node = Some(reference.clone());
        }
        if f.role.is_result() {
            results.push(reference);
        } else {
            objects.push(reference);
        }
        graph.push(node);
    }
    let action_id = id("action", &[own_sha256]);
    let mut action = json!({
        "@id": action_id,
        "@type": "case-investigation:InvestigativeAction",
        "uco-core:name": "salvage recover",
        "uco-core:description": verdict,
        "uco-action:instrument": { "@id": tool_id },
        "uco-action:object": objects,
        "uco-action:result": results,
    });
    let Some(obj) = action.as_object_mut() else {
        return String::new();
    };
    for (k, key) in [
        (RunField::Started, "uco-action:startTime"),
        (RunField::Finished, "uco-action:endTime"),
    ] {
        if let Some(t) = record.field(k) {
            obj.insert(key.into(), typed("xsd:dateTime", t));
        }
    }
    // Each person once, though one ran the recovery and accepted its loss.
    let mut people: Vec<String> = Vec::new();
    let mut performer = |who: &str, graph: &mut Vec<Value>| {
        let person = id("identity", &[who]);
        if !people.contains(&person) {
            people.push(person.clone());
            graph.push(json!({
                "@id": person,
                "@type": "uco-identity:Identity",
                "uco-core:name": who,
            }));
        }
        json!({ "@id": person })
    };
    if let Some(who) = &run.examiner {
        obj.insert("uco-action:performer".into(), performer(who, &mut graph));
    }
    if let Some(line) = record.field(RunField::Command) {
        obj.insert(
            "uco-core:description".into(),
            json!([verdict, format!("command line: {line}")]),
        );
    }
    graph.push(action);
    let mut actions = vec![json!({ "@id": action_id })];
    // A withheld output committed later: a second action, on the same file (the commit
    // renames it; its bytes are the ones the run verified and hashed).
    if let (Some(a), Some(output)) = (&r.output.accepted, output_node) {
        let commit_id = id("action-commit", &[own_sha256, &a.utc]);
        let mut commit = json!({
            "@id": commit_id,
            "@type": "case-investigation:InvestigativeAction",
            "uco-core:name": "salvage commit",
            "uco-core:description": [
                "the output the run withheld committed, its loss accepted",
                format!("command line: {}", crate::report::shell_words(&a.command_line)),
            ],
            "uco-action:instrument": { "@id": tool_id },
            "uco-action:startTime": typed("xsd:dateTime", &a.utc),
            "uco-action:endTime": typed("xsd:dateTime", &a.utc),
            "uco-action:object": [output.clone()],
            "uco-action:result": [output],
        });
        if let (Some(who), Some(obj)) = (&a.examiner, commit.as_object_mut()) {
            obj.insert("uco-action:performer".into(), performer(who, &mut graph));
        }
        graph.push(commit);
        actions.push(json!({ "@id": commit_id }));
    }
    if let Some(case) = &run.case {
        graph.push(json!({
            "@id": id("investigation", &[case]),
            "@type": "case-investigation:Investigation",
            "uco-core:name": case,
            "uco-core:object": actions,
        }));
    }
    let doc = json!({ "@context": context(), "@graph": graph });
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}
