//! The demo the binary embeds (`salvage/demo/`) is the fixture it says it is, and `salvage
//! demo` finds, recovers and reports its damage.

use std::path::Path;

use fixtures::{Damage, Kind, Options};

use crate::{Scratch, TestResult};

/// The demo store and its damage descriptions, built afresh from `fixtures`.
fn build_demo() -> (Vec<u8>, String) {
    let fixture = fixtures::build(Kind::AgentStore, &Options::default());
    let mut bytes = fixture.bytes.clone();
    let sessions = fixture.roots["sessions"];
    let messages = fixture.roots["messages"];
    let leaves = fixtures::table_pages(&bytes, messages).leaves;
    let damage = [
        // The hot parent table loses its only page: every session row is gone.
        Damage::ZeroPage(sessions),
        // One leaf of the child table is overwritten with garbage.
        Damage::RandomPage {
            page: leaves[leaves.len() / 2],
            seed: 7,
        },
        // The page size in the header is zeroed: the reader must infer it from the pages.
        Damage::HeaderPageSize(0),
    ];
    let mut text = String::new();
    for d in &damage {
        let applied = fixtures::apply(&mut bytes, d).unwrap();
        text.push_str(&applied.description);
        text.push('\n');
    }
    (bytes, text)
}

#[test]
fn the_embedded_demo_is_the_fixture_it_describes() -> TestResult {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("demo");
    let (bytes, text) = build_demo();
    if std::env::var_os("SALVAGE_UPDATE_GOLDEN").is_some() {
        std::fs::write(dir.join("state.db"), &bytes)?;
        std::fs::write(dir.join("damage.txt"), &text)?;
    }
    assert!(
        std::fs::read(dir.join("state.db"))? == bytes,
        "salvage/demo/state.db is not the fixture; SALVAGE_UPDATE_GOLDEN=1 rewrites it"
    );
    assert_eq!(std::fs::read_to_string(dir.join("damage.txt"))?, text);
    Ok(())
}

#[test]
fn the_demo_recovers_and_reports_its_damage() -> TestResult {
    let dir = Scratch::new("demo");
    let out = crate::salvage()
        .args(["demo", "--dir"])
        .arg(dir.path("run"))
        .output()?;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = crate::report_beside(&dir.path("run/recovered.db"));
    assert_eq!(report["flags"]["loss_detected"], true);
    assert_eq!(report["output"]["committed"], true);
    // The demo never overwrites: a second run into the same folder is refused.
    let again = crate::salvage()
        .args(["demo", "--dir"])
        .arg(dir.path("run"))
        .output()?;
    assert_ne!(again.status.code(), Some(0));
    Ok(())
}
