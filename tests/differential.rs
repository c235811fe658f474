//! The differential test against SQLite on healthy files (`fuzz healthy`, issue #35): each
//! seed writes a random database (`fixtures::random`: every column affinity, STRICT and
//! WITHOUT ROWID tables, generated columns, every spelling of INTEGER PRIMARY KEY, a
//! collation SQLite does not ship, partial and expression indexes, full-text and R*Tree
//! tables, random page sizes, encodings and auto-vacuum modes, deletes and updates). A
//! file SQLite checks as `ok` recovers complete, nothing registered as damage, every row
//! equal to SQLite's reading. `fuzz healthy --runs N` runs millions; the suite runs a
//! bounded number of seeds.

use crate::TestResult;

/// Seeds the suite runs: each a new database, about a tenth of a second each.
const SEEDS: u64 = 40;

#[test]
fn random_healthy_files_recover_as_sqlite_reads_them() -> TestResult {
    let failures: Vec<String> = (0..SEEDS)
        .map(|i| 0x5eed_0000 + i)
        .filter_map(|seed| fuzz::healthy::check_seed(seed).err())
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {SEEDS} seeds differ:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    Ok(())
}
