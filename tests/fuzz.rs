//! The fuzz targets (`fuzz/`, `docs/fuzzing.md`) in the suite: each runs briefly on seeded
//! mutations of the fixtures, and every input once found to break one (`fuzz/regressions/`)
//! is replayed through every target. None may panic; a hang would stop the suite.

use std::time::Duration;

use crate::TestResult;

#[test]
fn every_fuzz_target_survives_a_short_seeded_run() -> TestResult {
    let seeds = fuzz::seeds(64 << 10);
    for (name, target) in fuzz::TARGETS {
        let runs = if name == "recover" { 20 } else { 150 };
        let out = fuzz::run(target, &seeds, runs, 0x5eed, Duration::from_secs(30));
        assert_eq!(out.runs, runs, "{name}");
        assert!(
            out.crashes.is_empty(),
            "{name}: {} inputs panicked: {:?}",
            out.crashes.len(),
            out.crashes.iter().map(|(_, w)| w).collect::<Vec<_>>()
        );
        assert!(
            out.slow.is_empty(),
            "{name}: {} inputs ran past 30 s",
            out.slow.len()
        );
    }
    Ok(())
}

#[test]
fn every_input_that_once_broke_a_target_is_replayed() -> TestResult {
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions");
    let mut replayed = 0;
    for entry in std::fs::read_dir(&folder)? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "bin") {
            continue;
        }
        let bytes = std::fs::read(&path)?;
        for (_, target) in fuzz::TARGETS {
            target(&bytes);
        }
        replayed += 1;
    }
    assert!(replayed > 0, "no regression inputs in {}", folder.display());
    Ok(())
}
