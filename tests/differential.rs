//! The differential test against SQLite on healthy files (`fuzz healthy`, issue #35): each
//! seed writes a random database (`fixtures::random`: every column affinity, STRICT and
//! WITHOUT ROWID tables, generated columns, every spelling of INTEGER PRIMARY KEY, a
//! collation SQLite does not ship, partial and expression indexes, full-text and R*Tree
//! tables, random page sizes, encodings and auto-vacuum modes, schema format 1, WAL mode
//! with its log beside, a hot journal, deletes and updates). A file SQLite checks as `ok`
//! recovers complete, nothing registered as damage, every row equal to SQLite's reading.
//! `fuzz healthy --runs N` runs millions; the suite runs a bounded number of seeds.

use crate::TestResult;

/// Seeds the suite runs: each a new database, about a tenth of a second each.
const SEEDS: u64 = 56;

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

/// Seeds on which `fuzz healthy` found a difference since the generator's fixes of
/// 2026-12-06, each kept as a test of its fix (docs/fuzzing.md says what each was); those
/// found before are `fixtures::random::WRITTEN_AS_FOUND`, which the generator still
/// writes as they were found.
const FOUND_SINCE: [u64; 1] = [
    // Schema format 1: an index declared DESC kept in ascending order, which the lookups
    // of a table's rows in its indexes searched as descending. Of four rows of a table
    // (`t184`), its own index held one; another table of its shape, indexed on its rowid
    // alone, held all four rowids: the two trees were taken for swapped roots.
    6_222_846_178_968_480_946,
];

#[test]
fn seeds_the_fuzzer_found_recover_as_sqlite_reads_them() -> TestResult {
    let failures: Vec<String> = fixtures::random::WRITTEN_AS_FOUND
        .iter()
        .chain(&FOUND_SINCE)
        .filter_map(|&seed| fuzz::healthy::check_seed(seed).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    Ok(())
}

/// The generator writes databases of schema format 1 (SQLite's legacy format: 0 and 1
/// take a byte of a record's body, an index declared DESC is stored ascending), in WAL
/// mode (some with their log beside them), and copied mid-transaction with a hot
/// journal, tables changed by ALTER TABLE after rows were written, wide tables, free
/// pages given back by incremental vacuum, journals truncated, persisted or unsynced, and
/// tables with CHECK constraints (rows failing them written with the checks off in some),
/// names as applications spell them (quoted, keywords, other scripts; statements laid out
/// on lines with comments), databases of many tables,
/// among the suite's seeds: the header says the first two (offset 44, and 18 and 19), the
/// files beside the next two, the recipe and settings the rest (each kind of change
/// SQLite carried out).
#[test]
fn the_suites_seeds_include_every_later_kind_of_file() -> TestResult {
    let dir = crate::Scratch::new("differential-formats");
    let (mut legacy, mut wal, mut kept, mut hot) = (0, 0, 0, 0);
    let mut altered = [0usize; 4];
    let (mut wide, mut given_back) = (0, 0);
    let (mut kept_journal, mut unsynced) = (0, 0);
    let (mut checked, mut checks_off) = (0, 0);
    let (mut named, mut laid_out, mut many) = (0, 0, 0);
    for seed in (0..SEEDS).map(|i| 0x5eed_0000 + i) {
        let db =
            fixtures::random::random_database(seed, &dir.path("")).map_err(|e| e.to_string())?;
        let header = std::fs::read(&db.path).map_err(|e| e.to_string())?;
        let format = header
            .get(44..48)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(u32::from_be_bytes);
        legacy += usize::from(format == Some(1));
        wal += usize::from(header.get(18..20) == Some(&[2, 2][..]));
        let beside =
            |suffix: &str| std::path::PathBuf::from(format!("{}{suffix}", db.path.display()));
        let not_empty = |p: &std::path::Path| std::fs::metadata(p).is_ok_and(|m| m.len() > 0);
        kept += usize::from(not_empty(&beside("-wal")));
        // Hot: its header whole (the magic written when its pages were synced, before
        // the transaction spilled into the file), which SQLite rolls back.
        let journal = std::fs::read(beside("-journal")).unwrap_or_default();
        hot += usize::from(journal.starts_with(&pager::journal::JOURNAL_MAGIC));
        for (n, change) in altered.iter_mut().zip([
            " ADD COLUMN ",
            " RENAME COLUMN ",
            " DROP COLUMN ",
            " RENAME TO ",
        ]) {
            *n += db
                .script
                .lines()
                .filter(|l| l.starts_with("ALTER TABLE ") && l.contains(change))
                .count();
        }
        kept_journal += usize::from(
            db.settings.contains("journal TRUNCATE") || db.settings.contains("journal PERSIST"),
        );
        unsynced += usize::from(db.settings.contains("(unsynced)"));
        wide += usize::from(db.script.contains("CREATE TABLE w0("));
        given_back += usize::from(db.script.contains("PRAGMA incremental_vacuum("));
        checked += usize::from(
            db.script
                .lines()
                .any(|l| l.starts_with("CREATE TABLE ") && l.to_uppercase().contains("CHECK")),
        );
        checks_off += usize::from(
            db.settings
                .contains("rows written with CHECK constraints off"),
        );
        named += usize::from(db.settings.contains("names as applications spell them"));
        many += usize::from(
            db.script
                .lines()
                .filter(|l| l.starts_with("CREATE TABLE "))
                .count()
                >= 30,
        );
        laid_out += usize::from(
            db.script
                .lines()
                .any(|l| l.starts_with("CREATE TABLE ") && l.ends_with('(')),
        );
        for file in ["", "-wal", "-shm", "-journal"] {
            let _ = std::fs::remove_file(beside(file));
        }
    }
    assert!(
        legacy > 0
            && wal > 0
            && kept > 0
            && hot > 0
            && altered.iter().all(|&n| n > 0)
            && wide > 0
            && given_back > 0
            && kept_journal > 0
            && unsynced > 0
            && checked > 0
            && checks_off > 0
            && named > 0
            && laid_out > 0
            && many > 0,
        "format 1: {legacy}, WAL: {wal}, a log beside: {kept}, a hot journal: {hot} of {SEEDS}; \
         columns added, renamed, dropped, tables renamed: {altered:?}; wide tables: {wide}, \
         incremental vacuums: {given_back}; journals truncated or persisted: {kept_journal}, \
         unsynced: {unsynced}; CHECK constraints: {checked}, rows written with them off: \
         {checks_off}; names as applications spell them: {named}, tables laid out on lines: \
         {laid_out}; databases of 30 tables or more: {many}"
    );
    Ok(())
}
