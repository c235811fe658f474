//! The fuzz targets (`fuzz/`, `docs/fuzzing.md`) in the suite: each runs briefly on seeded
//! mutations of the fixtures, and every input once found to break one (`fuzz/regressions/`)
//! is replayed through every target. None may panic; a hang would stop the suite.

use std::time::Duration;

use crate::TestResult;

/// How long one input may run.
const SLOW: Duration = Duration::from_secs(120);

#[test]
fn every_fuzz_target_survives_a_short_seeded_run() -> TestResult {
    for target in &fuzz::TARGETS {
        let name = target.name;
        let seeds = target.seeds(64 << 10);
        let runs = if name.starts_with("recover") { 20 } else { 150 };
        // A guard against an input that runs away (a loop that never ends, a search
        // that grows with the square of a lying count), not a speed goal (those live in
        // `bench/`): on a machine starved by other work, an input of a few seconds took
        // past 30 s once.
        let out = fuzz::run(target, &seeds, runs, 0x5eed, SLOW);
        assert_eq!(out.runs, runs, "{name}");
        assert!(
            out.crashes.is_empty(),
            "{name}: {} inputs panicked: {:?}",
            out.crashes.len(),
            out.crashes.iter().map(|(_, w)| w).collect::<Vec<_>>()
        );
        assert!(
            out.failures.is_empty(),
            "{name}: {} inputs failed: {:?}",
            out.failures.len(),
            out.failures.iter().map(|(_, w)| w).collect::<Vec<_>>()
        );
        assert!(
            out.slow.is_empty(),
            "{name}: {} inputs ran past {SLOW:?}",
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
        for target in &fuzz::TARGETS {
            let verdict = (target.run)(&bytes);
            assert!(
                verdict.is_ok(),
                "{}: {}: {verdict:?}",
                path.display(),
                target.name
            );
        }
        replayed += 1;
    }
    assert!(replayed > 0, "no regression inputs in {}", folder.display());
    Ok(())
}
