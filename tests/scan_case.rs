//! `salvage scan`'s CASE/UCO JSON-LD graph (`OUT/scan.jsonld`): the whole scan as one graph
//! a case-management system takes in, every file in it with its hash, every archive
//! member contained within its archive, and conforming to the ontology.

use fixtures::extraction::{extraction, pack, Packing};
use recovery::scan::{EntryOutcome, ScanSummary};
use serde_json::Value;

use crate::{Scratch, TestResult};

/// The path of a `uco-observable:File` node, and the SHA-256 it holds when it holds one.
fn path_and_hash(node: &Value) -> (Option<&str>, Option<&str>) {
    let facets = node["uco-core:hasFacet"].as_array().into_iter().flatten();
    let of = |t: &'static str| facets.clone().filter(move |f| f["@type"] == t);
    let path = of("uco-observable:FileFacet").find_map(|f| f["uco-observable:filePath"].as_str());
    let hash = of("uco-observable:ContentDataFacet")
        .flat_map(|f| f["uco-observable:hash"].as_array().into_iter().flatten())
        .filter(|h| h["uco-types:hashMethod"] == "SHA256")
        .find_map(|h| h["uco-types:hashValue"]["@value"].as_str());
    (path, hash)
}

/// An extraction scanned as a folder and as a tar of it: the graph parses, each of its
/// references is to a node of it; each archive, each database and lone log found, each
/// output and each report is one `uco-observable:File` with its path and the SHA-256 the
/// summary gives it (none where it gives none); every member of the tar is
/// `Contained_Within` the tar's node and nothing else is; a `salvage recover` action per
/// database recovered, on its source and making its output and report, and one
/// `salvage scan` over every file found; and CASE's validator says it conforms.
#[test]
fn the_scan_as_case_uco_json_ld_holds_every_hash_and_each_member_within_its_archive() -> TestResult
{
    let dir = Scratch::new("scan-case");
    let src = dir.path("extraction");
    std::fs::create_dir_all(&src)?;
    let made = extraction(&src, 3)?;
    let tar = dir.path("phone.tar");
    pack(&src, Packing::Tar, &tar)?;
    let out = dir.path("case");
    let o = crate::salvage()
        .args(["scan", "--allow-partial", "-q", "-o"])
        .arg(&out)
        .arg(&tar)
        .arg(&src)
        .output()?;
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("scan.jsonld"), "{err}");
    let summary: ScanSummary = serde_json::from_slice(&std::fs::read(out.join("scan.json"))?)?;
    let tar_path = tar.display().to_string();
    let members = summary
        .entries
        .iter()
        .filter(|e| e.source == tar_path)
        .count();
    // Every database and the two lone logs, in the folder and in the tar.
    assert_eq!(members, made.databases.len() + 2, "{summary:#?}");
    assert_eq!(summary.entries.len(), 2 * members, "{summary:#?}");

    let text = std::fs::read_to_string(out.join("scan.jsonld"))?;
    let doc: Value = serde_json::from_str(&text)?;
    let graph = crate::case_graph(&doc)?;
    let of_type = |t: &'static str| graph.iter().filter(move |n| n["@type"] == t);
    // One node per file, found by its path: its identifier and its hash.
    let files: Vec<(&str, Option<&str>, &str)> = of_type("uco-observable:File")
        .filter_map(|n| {
            let (path, hash) = path_and_hash(n);
            Some((path?, hash, n["@id"].as_str()?))
        })
        .collect();
    let node = |path: &str| {
        let found: Vec<_> = files.iter().filter(|(p, ..)| *p == path).collect();
        assert_eq!(found.len(), 1, "{path}: {found:?}");
        *found[0]
    };
    use sha2::Digest;
    let tar_hash = format!("{:x}", sha2::Sha256::digest(std::fs::read(&tar)?));
    let (_, hash, archive) = node(&tar_path);
    assert_eq!(hash, Some(tar_hash.as_str()));
    for e in &summary.entries {
        let (_, hash, _) = node(&e.path);
        assert_eq!(hash, e.sha256.as_deref(), "{}", e.path);
        for (file, sha256) in [
            (&e.output, &e.output_sha256),
            (&e.report, &e.report_sha256),
            (&e.image, &e.image_sha256),
        ] {
            if let Some(file) = file {
                let (_, hash, _) = node(file);
                assert!(hash.is_some(), "{file}");
                assert_eq!(hash, sha256.as_deref(), "{file}");
            }
        }
    }
    // Each member of the tar, and nothing else, within the tar.
    let within: Vec<(&str, &str)> = of_type("uco-observable:ObservableRelationship")
        .filter(|r| {
            r["uco-core:kindOfRelationship"] == "Contained_Within"
                && r["uco-core:isDirectional"] == true
        })
        .filter_map(|r| {
            Some((
                r["uco-core:source"]["@id"].as_str()?,
                r["uco-core:target"]["@id"].as_str()?,
            ))
        })
        .collect();
    assert_eq!(within.len(), members, "{within:?}");
    for e in &summary.entries {
        let (_, _, member) = node(&e.path);
        let of_member: Vec<&str> = within
            .iter()
            .filter(|(s, _)| *s == member)
            .map(|(_, t)| *t)
            .collect();
        let expected: &[&str] = if e.source == tar_path {
            &[archive]
        } else {
            &[]
        };
        assert_eq!(of_member, expected, "{}", e.path);
    }
    // A recovery's action per database recovered, on its source, making its output and
    // report; one scan over every file found.
    let actions: Vec<&Value> = of_type("case-investigation:InvestigativeAction").collect();
    let recovered = summary
        .entries
        .iter()
        .filter(|e| !matches!(e.outcome, EntryOutcome::Triaged | EntryOutcome::Failed));
    let ids = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["@id"].as_str().map(str::to_string))
            .collect()
    };
    for e in recovered.clone() {
        let (_, _, source) = node(&e.path);
        let action = actions
            .iter()
            .find(|a| {
                a["uco-core:name"] == "salvage recover" && ids(&a["uco-action:object"]) == [source]
            })
            .ok_or(format!("no recovery of {}", e.path))?;
        let made: Vec<&str> = [&e.output, &e.report, &e.image]
            .into_iter()
            .flatten()
            .map(|f| node(f).2)
            .collect();
        assert_eq!(ids(&action["uco-action:result"]), made, "{}", e.path);
    }
    assert_eq!(
        actions
            .iter()
            .filter(|a| a["uco-core:name"] == "salvage recover")
            .count(),
        recovered.count()
    );
    let scan = actions
        .iter()
        .find(|a| a["uco-core:name"] == "salvage scan")
        .ok_or("no scan action")?;
    let objects = ids(&scan["uco-action:object"]);
    assert!(objects.iter().any(|o| o == archive));
    for e in &summary.entries {
        assert!(objects.iter().any(|o| o == node(&e.path).2), "{}", e.path);
    }
    // The ontology's own validator, where it is installed.
    crate::case_validate(&out.join("scan.jsonld"))?;
    Ok(())
}
