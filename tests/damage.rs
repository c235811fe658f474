//! Every kind of damage `fixtures` can do: `inspect` terminates on it and reports the
//! finding that names it. Each test is named for the damage.

use std::ffi::OsStr;

use fixtures::{Damage, Fixture, Kind, Options};
use pager::{Database, Finding, PageSizeSource, Survey, TextEncoding};

use crate::{run_salvage, Scratch, TestResult};

fn fixture(name: &str) -> Fixture {
    fixtures::catalog()
        .into_iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no fixture {name}"))
}

fn damaged(f: &Fixture, damage: &[Damage]) -> Vec<u8> {
    let mut bytes = f.bytes.clone();
    for d in damage {
        fixtures::apply(&mut bytes, d).unwrap_or_else(|e| panic!("{}: {d:?}: {e}", f.name));
    }
    bytes
}

fn all_findings<'s>(db: &'s Database<'_>, s: &'s Survey) -> Vec<&'s Finding> {
    db.findings().iter().chain(s.all_findings()).collect()
}

/// Surveys `bytes` and returns the kinds of finding seen.
fn kinds(bytes: &[u8]) -> Vec<&'static str> {
    let db = Database::open(bytes).expect("still a database");
    let s = pager::survey(&db);
    all_findings(&db, &s).iter().map(|f| f.kind()).collect()
}

/// Runs the real binary on `bytes`: it must finish with exit 3 and a damaged verdict.
fn inspect_binary_reports_damage(name: &str, bytes: &[u8]) -> TestResult {
    let dir = Scratch::new(name);
    let path = dir.path("damaged.db");
    std::fs::write(&path, bytes)?;
    let out = run_salvage(&[
        OsStr::new("inspect"),
        path.as_os_str(),
        OsStr::new("--json"),
    ])?;
    assert_eq!(
        out.status.code(),
        Some(3),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(j["verdict"]["healthy"], false);
    assert!(j["verdict"]["finding_count"].as_u64().unwrap_or(0) > 0);
    Ok(())
}

fn messages_leaf(f: &Fixture, nth: usize) -> u32 {
    let root = f.roots["messages"];
    let leaves = fixtures::table_pages(&f.bytes, root).leaves;
    leaves[nth % leaves.len()]
}

#[test]
fn zeroed_leaf_page() -> TestResult {
    let f = fixture("agent-4096-utf8");
    let page = messages_leaf(&f, 3);
    let bytes = damaged(&f, &[Damage::ZeroPage(page)]);
    let db = Database::open(&bytes).map_err(|e| e.to_string())?;
    let s = pager::survey(&db);
    let messages = s
        .trees
        .iter()
        .find(|t| t.name == "messages")
        .ok_or("messages")?;
    assert!(messages.findings.iter().any(|f| matches!(f, Finding::ChildNotBtreePage { child, raw_type: 0, .. } if child.get() == page)));
    // The lost child carries the rowid range its parent assigned to it.
    let lost = messages
        .lost
        .iter()
        .find(|l| l.child == page)
        .ok_or("lost child")?;
    let expected_rows = f.table("messages").ok_or("messages")?.rows.len() as u64;
    assert!(messages.cells < expected_rows);
    assert!(lost.bounds.upper.is_some() || lost.bounds.lower.is_some());
    inspect_binary_reports_damage("zeroed_leaf_page", &bytes)
}

#[test]
fn zeroed_page_range() -> TestResult {
    let f = fixture("agent-512-utf8");
    let first = messages_leaf(&f, 5);
    let bytes = damaged(
        &f,
        &[Damage::ZeroPages {
            first,
            last: first + 6,
        }],
    );
    assert!(kinds(&bytes).contains(&"child_not_btree_page"));
    inspect_binary_reports_damage("zeroed_page_range", &bytes)
}

#[test]
fn random_bytes_over_a_page() -> TestResult {
    let f = fixture("vector-4096-utf8");
    let root = f.roots["embedding_metadata"];
    let leaves = fixtures::table_pages(&f.bytes, root);
    let target = *leaves.leaves.first().unwrap_or(&root);
    let bytes = damaged(
        &f,
        &[Damage::RandomPage {
            page: target,
            seed: 11,
        }],
    );
    assert!(!kinds(&bytes).is_empty());
    inspect_binary_reports_damage("random_bytes_over_a_page", &bytes)
}

#[test]
fn truncated_file() -> TestResult {
    let f = fixture("agent-4096-utf8");
    let len = f.bytes.len() as u64;
    let bytes = damaged(&f, &[Damage::TruncateAt(len / 2 + 100)]);
    let k = kinds(&bytes);
    assert!(k.contains(&"file_not_page_multiple"), "{k:?}");
    assert!(k.contains(&"database_size_mismatch"), "{k:?}");
    inspect_binary_reports_damage("truncated_file", &bytes)
}

#[test]
fn zeroed_page_size_is_inferred_from_the_pages() -> TestResult {
    for name in [
        "agent-512-utf8",
        "agent-4096-utf8",
        "agent-65536-utf8",
        "generic-1024-autovacuum",
        "agent-4096-reserved32",
    ] {
        let f = fixture(name);
        let bytes = damaged(&f, &[Damage::HeaderPageSize(0)]);
        let db = Database::open(&bytes).map_err(|e| e.to_string())?;
        assert_eq!(db.page_size().get(), f.options.page_size, "{name}");
        assert!(
            matches!(db.page_size_source(), PageSizeSource::Inferred { .. }),
            "{name}"
        );
        assert!(
            db.findings().contains(&Finding::InvalidPageSize { raw: 0 }),
            "{name}"
        );
        // With the size recovered, every row still reads back.
        let s = pager::survey(&db);
        let messages = s
            .trees
            .iter()
            .find(|t| t.name == "messages" || t.name == "items");
        if let (Some(m), Some(t)) = (messages, f.table("messages")) {
            assert_eq!(m.cells, t.rows.len() as u64, "{name}");
        }
    }
    Ok(())
}

#[test]
fn wrong_but_valid_page_size_is_overruled_by_the_pages() -> TestResult {
    let f = fixture("agent-4096-utf8");
    let bytes = damaged(&f, &[Damage::HeaderPageSize(8192)]);
    let db = Database::open(&bytes).map_err(|e| e.to_string())?;
    assert_eq!(db.page_size().get(), 4096);
    assert!(db.findings().contains(&Finding::PageSizeDisagrees {
        declared: 8192,
        inferred: 4096
    }));
    inspect_binary_reports_damage("wrong_page_size", &bytes)
}

#[test]
fn garbage_text_encoding_is_inferred() -> TestResult {
    for (name, expected) in [
        ("agent-4096-utf8", TextEncoding::Utf8),
        ("agent-4096-utf16le", TextEncoding::Utf16le),
        ("agent-4096-utf16be", TextEncoding::Utf16be),
    ] {
        let f = fixture(name);
        let bytes = damaged(&f, &[Damage::HeaderTextEncoding(77)]);
        let db = Database::open(&bytes).map_err(|e| e.to_string())?;
        assert_eq!(db.encoding(), expected, "{name}");
        assert!(
            db.findings()
                .contains(&Finding::InvalidTextEncoding { raw: 77 }),
            "{name}"
        );
    }
    Ok(())
}

#[test]
fn in_header_database_size_wrong() -> TestResult {
    let f = fixture("agent-4096-utf8");
    let bytes = damaged(&f, &[Damage::HeaderDatabaseSize(9999)]);
    assert!(kinds(&bytes).contains(&"database_size_mismatch"));
    inspect_binary_reports_damage("database_size_wrong", &bytes)
}

#[test]
fn child_pointer_cycle() -> TestResult {
    let f = fixture("agent-512-deep");
    let bytes = damaged(
        &f,
        &[Damage::ChildPointerCycle {
            table: "messages".into(),
        }],
    );
    assert!(
        kinds(&bytes).contains(&"btree_cycle"),
        "{:?}",
        kinds(&bytes)
    );
    inspect_binary_reports_damage("child_pointer_cycle", &bytes)
}

#[test]
fn overflow_chain_cycle() -> TestResult {
    let f = fixture("agent-4096-utf8");
    let bytes = damaged(
        &f,
        &[Damage::OverflowCycle {
            table: "messages".into(),
        }],
    );
    assert!(
        kinds(&bytes).contains(&"overflow_cycle"),
        "{:?}",
        kinds(&bytes)
    );
    inspect_binary_reports_damage("overflow_chain_cycle", &bytes)
}

#[test]
fn overflow_chain_broken() -> TestResult {
    let f = fixture("agent-4096-utf8");
    let bytes = damaged(
        &f,
        &[Damage::OverflowBreak {
            table: "messages".into(),
        }],
    );
    let k = kinds(&bytes);
    assert!(
        k.contains(&"overflow_past_end") || k.contains(&"overflow_chain_short"),
        "{k:?}"
    );
    // The row whose chain broke decodes as partial, never silently short.
    let db = Database::open(&bytes).map_err(|e| e.to_string())?;
    let root = pager::read_schema(&db)
        .get("messages")
        .and_then(|r| r.rootpage)
        .ok_or("messages")?;
    let (rows, _) = pager::read_tree(&db, root);
    assert_eq!(rows.iter().filter(|r| !r.complete).count(), 1);
    inspect_binary_reports_damage("overflow_chain_broken", &bytes)
}

#[test]
fn freelist_trunk_cycle() -> TestResult {
    let f = fixture("agent-4096-utf8");
    let bytes = damaged(&f, &[Damage::FreelistCycle]);
    assert!(
        kinds(&bytes).contains(&"freelist_cycle"),
        "{:?}",
        kinds(&bytes)
    );
    inspect_binary_reports_damage("freelist_trunk_cycle", &bytes)
}

#[test]
fn cell_pointer_past_page_end() -> TestResult {
    let f = fixture("agent-4096-utf8");
    let page = messages_leaf(&f, 2);
    let bytes = damaged(&f, &[Damage::CellPointerOutOfRange { page, index: 1 }]);
    // The cell it named is still in the content area, read from there.
    assert!(
        kinds(&bytes).contains(&"cell_pointer_astray") && kinds(&bytes).contains(&"cells_unlisted"),
        "{:?}",
        kinds(&bytes)
    );
    inspect_binary_reports_damage("cell_pointer_past_page_end", &bytes)
}

#[test]
fn every_page_of_every_fixture_zeroed_in_turn_never_panics() -> TestResult {
    // Small fixtures only: every single-page loss, surveyed in-process.
    for f in fixtures::catalog()
        .into_iter()
        .filter(|f| f.bytes.len() <= 300 * 1024)
    {
        for page in 1..=f.page_count() {
            let bytes = damaged(&f, &[Damage::ZeroPage(page)]);
            if let Ok(db) = Database::open(&bytes) {
                let _ = pager::survey(&db);
            }
        }
    }
    let _ = Kind::Generic;
    let _ = Options::default();
    Ok(())
}
