//! Golden reports of damaged fixtures: the inspect document (without its `run` object) and
//! its rendered findings compare exactly with `tests/golden/<case>.json` and
//! `<case>.findings.txt`; the loss report of the same file's recovery, run in-process
//! through the library (without its `run` object), with `<case>.report.json`.
//! `SALVAGE_UPDATE_GOLDEN=1` rewrites them.

use std::ffi::OsStr;
use std::path::PathBuf;

use fixtures::Damage;

use crate::{run_salvage, Scratch, TestResult};

fn golden_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/golden"))
}

fn check(
    case: &str,
    fixture: &str,
    damage: impl Fn(&fixtures::Fixture) -> Vec<Damage>,
) -> TestResult {
    let f = fixtures::build_named(fixture).ok_or(fixture.to_string())?;
    let mut bytes = f.bytes.clone();
    for d in damage(&f) {
        fixtures::apply(&mut bytes, &d)?;
    }
    let dir = Scratch::new(&format!("golden-{case}"));
    let path = dir.path("evidence.db");
    std::fs::write(&path, &bytes)?;
    let out = run_salvage(&[
        OsStr::new("inspect"),
        path.as_os_str(),
        OsStr::new("--json"),
    ])?;
    let mut json: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    json.as_object_mut().ok_or("object")?.remove("run");
    let mut findings = String::new();
    let lists = std::iter::once(&json["findings"])
        .chain(
            json["trees"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| &t["findings"]),
        )
        .chain(std::iter::once(&json["freelist"]["findings"]));
    for list in lists {
        for f in list["listed"].as_array().into_iter().flatten() {
            findings.push_str(&format!(
                "{}: {}\n",
                f["kind"].as_str().unwrap_or(""),
                f["message"].as_str().unwrap_or("")
            ));
        }
    }
    let actual_json = serde_json::to_string_pretty(&json)? + "\n";
    compare(case, "report.json", &loss_report(&path, &dir)?)?;
    let (json_path, txt_path) = (
        golden_dir().join(format!("{case}.json")),
        golden_dir().join(format!("{case}.findings.txt")),
    );
    if std::env::var_os("SALVAGE_UPDATE_GOLDEN").is_some() {
        std::fs::write(&json_path, &actual_json)?;
        std::fs::write(&txt_path, &findings)?;
        return Ok(());
    }
    let expected_json = std::fs::read_to_string(&json_path).map_err(|e| {
        format!(
            "{}: {e} (run with SALVAGE_UPDATE_GOLDEN=1)",
            json_path.display()
        )
    })?;
    let expected_txt = std::fs::read_to_string(&txt_path)?;
    assert_eq!(
        findings,
        expected_txt,
        "{case}: findings differ from {}",
        txt_path.display()
    );
    assert!(
        actual_json == expected_json,
        "{case}: report differs from {}",
        json_path.display()
    );
    Ok(())
}

/// The loss report of recovering `src` in-process (partial output allowed), without its
/// `run` object, as pretty JSON.
fn loss_report(src: &std::path::Path, dir: &Scratch) -> Result<String, Box<dyn std::error::Error>> {
    let mut options = recovery::RecoverOptions::new(src, dir.path("out.db"));
    options.allow_partial = true;
    let done = recovery::recover(&options, &recovery::Quiet)?;
    let mut json = serde_json::to_value(&done.report)?;
    json.as_object_mut().ok_or("object")?.remove("run");
    // The output's hash: its bytes are SQLite's layout, not what the report says of it.
    if let Some(output) = json.get_mut("output").and_then(|o| o.as_object_mut()) {
        output.remove("sha256");
    }
    // The page map draws the survey's classes, pinned by the inspect document above; it
    // is tested on its own (`report_html`).
    if let Some(pages) = json.get_mut("pages").and_then(|o| o.as_object_mut()) {
        pages.remove("map");
    }
    Ok(serde_json::to_string_pretty(&json)? + "\n")
}

/// Compares `actual` with `tests/golden/<case>.<suffix>`, or rewrites it.
fn compare(case: &str, suffix: &str, actual: &str) -> TestResult {
    let path = golden_dir().join(format!("{case}.{suffix}"));
    if std::env::var_os("SALVAGE_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual)?;
        return Ok(());
    }
    let expected = std::fs::read_to_string(&path)
        .map_err(|e| format!("{}: {e} (run with SALVAGE_UPDATE_GOLDEN=1)", path.display()))?;
    assert!(
        actual == expected,
        "{case}: differs from {} (SALVAGE_UPDATE_GOLDEN=1 rewrites it)",
        path.display()
    );
    Ok(())
}

#[test]
fn golden_sessions_root_zeroed() -> TestResult {
    check("agent-sessions-root-zeroed", "agent-4096-utf8", |f| {
        vec![Damage::ZeroPage(f.roots["sessions"])]
    })
}

#[test]
fn golden_header_page_size_and_encoding_zeroed() -> TestResult {
    check("agent-utf16be-header-zeroed", "agent-4096-utf16be", |_| {
        vec![Damage::HeaderTextEncoding(0), Damage::HeaderPageSize(0)]
    })
}

#[test]
fn golden_messages_interior_overwritten() -> TestResult {
    check("agent-deep-interior-random", "agent-512-deep", |f| {
        let walk = fixtures::format::walk_btree(&f.bytes, f.roots["messages"]).0;
        vec![Damage::RandomPage {
            page: walk.pages.interior[1],
            seed: 3,
        }]
    })
}

#[test]
fn golden_freelist_and_overflow_damage() -> TestResult {
    check("agent-freelist-overflow", "agent-4096-utf8", |_| {
        vec![
            Damage::FreelistCycle,
            Damage::OverflowBreak {
                table: "messages".into(),
            },
        ]
    })
}

#[test]
fn golden_healthy_vector_store() -> TestResult {
    check("vector-healthy", "vector-512-utf16le", |_| vec![])
}
