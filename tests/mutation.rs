//! Small damage never ends a run: only I/O on the output or the source may. Each kind of
//! small damage that once ended a run with exit 1 and nothing committed has its own test,
//! and a bounded mutation test (bit flips, byte runs, header bytes, truncations over the
//! fixtures, seeded) runs the library in-process over many more.

use fixtures::prng::SplitMix64;
use fixtures::{Damage, Fixture};
use recovery::{Outcome, Quiet, RecoverOptions};
use rusqlite::Connection;

use crate::recover::{case, expected_rows, rows_of};
use crate::{Scratch, TestResult};

/// Replaces the first occurrence of `from` inside page `page` with `to` (same length).
fn patch_on_page(f: &Fixture, bytes: &mut [u8], page: u32, from: &[u8], to: &[u8]) {
    assert_eq!(from.len(), to.len());
    let size = f.options.page_size as usize;
    let start = (page as usize - 1) * size;
    let at = bytes[start..start + size]
        .windows(from.len())
        .position(|w| w == from)
        .unwrap_or_else(|| panic!("{from:?} not on page {page}"));
    bytes[start + at..start + at + to.len()].copy_from_slice(to);
}

/// Recovers `src` in-process, partial output allowed; the run must end with an outcome,
/// never an error that is not a refusal, and never unverified.
fn recover_in_process(src: &std::path::Path, dest: &std::path::Path) -> recovery::Recovery {
    let mut options = RecoverOptions::new(src, dest);
    options.allow_partial = true;
    let done = recovery::recover(&options, &Quiet)
        .unwrap_or_else(|e| panic!("{}: the run ended: {e}", src.display()));
    assert!(
        !matches!(done.outcome, Outcome::NotVerified { .. }),
        "{}: not verified: {:?}",
        src.display(),
        done.report.evidence.verified
    );
    done
}

/// A flipped bit in a schema row's name, its CREATE statement intact: SQLite creates what
/// the statement says, so the table is recovered under that name, whole (once the run
/// counted the rows of a table that does not exist and failed verification), and an
/// index likewise (once "no such index" ended the bulk load).
#[test]
fn a_schema_row_whose_name_disagrees_with_its_create_statement() -> TestResult {
    let c = case("mutation-row-name", "agent-4096-utf8", |_| vec![]);
    let mut bytes = std::fs::read(&c.src)?;
    // The first occurrence of each name on page 1 is its row's `name` column.
    patch_on_page(&c.fixture, &mut bytes, 1, b"state_meta", b"statX_meta");
    patch_on_page(
        &c.fixture,
        &mut bytes,
        1,
        b"idx_messages_session",
        b"idx_messages_sessioX",
    );
    std::fs::write(&c.src, &bytes)?;
    let done = recover_in_process(&c.src, &c.dest);
    assert_eq!(done.outcome, Outcome::Complete, "{:?}", done.signals());
    assert_eq!(
        rows_of(&c.dest, "state_meta", false),
        expected_rows(&c.fixture, "state_meta")
    );
    assert!(done.report.warnings.iter().any(|w| w.contains(
        "the schema row of table `statX_meta` holds a CREATE statement for `state_meta`"
    )));
    let indexes: i64 = Connection::open(&c.dest)?.query_row(
        "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = 'idx_messages_session'",
        [],
        |r| r.get(0),
    )?;
    assert_eq!(indexes, 1);
    Ok(())
}

/// A child's key that is not valid UTF-8 under a lost parent: it is a key like any other
/// (once reading it back as text ended the run while rebuilding parents).
#[test]
fn a_damaged_key_of_a_lost_parent_is_read_as_bytes() -> TestResult {
    let c = case("mutation-key-bytes", "agent-4096-utf8", |f| {
        vec![Damage::ZeroPage(f.roots["sessions"])]
    });
    let mut bytes = std::fs::read(&c.src)?;
    let messages = expected_rows(&c.fixture, "messages");
    let Some(fixtures::Value::Text(session)) = messages.values().next().and_then(|r| r.get(1))
    else {
        return Err("a message's session_id".into());
    };
    let leaf = fixtures::table_pages(&bytes, c.fixture.roots["messages"]).leaves[0];
    let mut damaged = session.as_bytes().to_vec();
    damaged[0] = 0xff; // never a byte of UTF-8
    patch_on_page(&c.fixture, &mut bytes, leaf, session.as_bytes(), &damaged);
    std::fs::write(&c.src, &bytes)?;
    let done = recover_in_process(&c.src, &c.dest);
    assert_eq!(done.outcome, Outcome::PartialCommitted);
    let made = &done.report.placeholders.made;
    assert!(made.count > 0);
    Ok(())
}

/// A store the agent profile detects, whose `sessions` key is not the column the profile
/// names: the relationship is not used, with a warning (once "no such column" ended the
/// run on a healthy database).
#[test]
fn a_profile_relationship_naming_a_missing_column_is_not_used() -> TestResult {
    let dir = Scratch::new("mutation-profile-column");
    let src = dir.path("state.db");
    let conn = Connection::open(&src)?;
    conn.execute_batch(
        "CREATE TABLE sessions(sid TEXT PRIMARY KEY, source TEXT NOT NULL, title TEXT);
         CREATE TABLE messages(id INTEGER PRIMARY KEY, session_id TEXT, role TEXT,
             content TEXT, timestamp INTEGER);
         CREATE TABLE state_meta(key TEXT PRIMARY KEY, value TEXT);
         INSERT INTO sessions VALUES ('s1', 'cli', 'one');
         INSERT INTO messages(session_id, role, content, timestamp) VALUES ('s1', 'user', 'hi', 1);",
    )?;
    drop(conn);
    let done = recover_in_process(&src, &dir.path("out.db"));
    assert_eq!(done.outcome, Outcome::Complete, "{:?}", done.signals());
    assert!(
        done.report
            .warnings
            .iter()
            .any(|w| w.contains("is not used: it names a column its tables do not have")),
        "{:?}",
        done.report.warnings
    );
    Ok(())
}

/// Seeded small damage over small fixtures of each kind: no run ends with an error that
/// is not a refusal, none panics, every output is verified.
#[test]
fn small_damage_never_ends_a_run() -> TestResult {
    let names = [
        "agent-512-utf8",
        "vector-512-utf16le",
        "generic-512-utf16be",
        "generic-4096-utf8",
        "agent-4096-utf16be",
        "browser-history-4096-utf8",
        "chat-4096-utf8",
    ];
    let fixtures: Vec<Fixture> = names
        .iter()
        .map(|n| fixtures::build_named(n).ok_or(*n))
        .collect::<Result<_, _>>()?;
    let dir = Scratch::new("mutation-seeded");
    let mut rng = SplitMix64::new(0x6d75_7461_7465);
    for i in 0..200 {
        let f = &fixtures[rng.below(fixtures.len() as u64) as usize];
        let mut bytes = f.bytes.clone();
        let len = bytes.len() as u64;
        let kind = rng.below(5);
        match kind {
            // A few bits anywhere.
            0 => {
                for _ in 0..rng.range(1, 9) {
                    let at = rng.below(len) as usize;
                    bytes[at] ^= 1 << rng.below(8);
                }
            }
            // One bit of page 1: the header and the schema.
            1 => {
                let at = rng.below(len.min(f.options.page_size.into())) as usize;
                bytes[at] ^= 1 << rng.below(8);
            }
            // One header byte.
            2 => {
                let at = rng.below(100) as usize;
                bytes[at] = rng.below(256) as u8;
            }
            // A run of random bytes.
            3 => {
                let at = rng.below(len) as usize;
                let run = (rng.range(1, 65) as usize).min(bytes.len() - at);
                rng.fill(&mut bytes[at..at + run]);
            }
            // Cut short.
            _ => bytes.truncate(rng.range(1, len) as usize),
        }
        let src = dir.path(&format!("m{i}.db"));
        std::fs::write(&src, &bytes)?;
        let mut options = RecoverOptions::new(&src, dir.path(&format!("m{i}.out.db")));
        options.allow_partial = true;
        match recovery::recover(&options, &Quiet) {
            Ok(done) => {
                assert!(
                    !matches!(done.outcome, Outcome::NotVerified { .. }),
                    "mutation {i} (kind {kind}) of {}: not verified: {:?}",
                    f.name,
                    done.report.evidence.verified
                );
                // SQLite is the oracle: a mutant its own check calls malformed is never
                // complete without a finding that says where.
                if done.outcome == Outcome::Complete {
                    if let Some(problem) = sqlite_problem(&src) {
                        assert!(
                            has_finding(&done.report),
                            "mutation {i} (kind {kind}) of {}: complete, but SQLite says {problem} (the run's own check: {:?})",
                            f.name,
                            done.report.source.sqlite_check
                        );
                    }
                }
            }
            Err(e) if e.is_refusal() => {}
            Err(e) => panic!(
                "mutation {i} (kind {kind}) of {}: the run ended: {e}",
                f.name
            ),
        }
    }
    Ok(())
}

/// Seeded small damage to a write-ahead log over the agent store: bits flipped anywhere
/// (the checksums then stop the log there), page images and frame headers changed with
/// every checksum made valid again (frames a reader trusts, carrying damaged pages or
/// page numbers), the log's header, the log cut short. No run ends with an error that is
/// not a refusal, none panics, every output is verified.
#[test]
fn small_damage_to_the_wal_never_ends_a_run() -> TestResult {
    let fixture = fixtures::wal::build_agent_with_wal();
    let page_size = u32::from_be_bytes(fixture.wal[8..12].try_into()?) as u64;
    let frame = 24 + page_size;
    let frames = (fixture.wal.len() as u64 - 32) / frame;
    let dir = Scratch::new("mutation-wal");
    let mut rng = SplitMix64::new(0x7761_6c6d_7574);
    let mut read = 0;
    for i in 0..MUTATIONS_OF_THE_WAL {
        let mut wal = fixture.wal.clone();
        let len = wal.len() as u64;
        let in_frame = |rng: &mut SplitMix64| 32 + rng.below(frames) * frame;
        let kind = rng.below(6);
        match kind {
            0 => {
                for _ in 0..rng.range(1, 9) {
                    let at = rng.below(len) as usize;
                    wal[at] ^= 1 << rng.below(8);
                }
            }
            1 => {
                let at = (in_frame(&mut rng) + 24 + rng.below(page_size)) as usize;
                wal[at] ^= 1 << rng.below(8);
                fixtures::wal::rechecksum(&mut wal);
            }
            2 => {
                let at = (in_frame(&mut rng) + 24 + rng.below(page_size)) as usize;
                let run = (rng.range(1, 65) as usize).min(wal.len() - at);
                rng.fill(&mut wal[at..at + run]);
                fixtures::wal::rechecksum(&mut wal);
            }
            // A frame's page number or commit field.
            3 => {
                let at = (in_frame(&mut rng) + rng.below(8)) as usize;
                wal[at] = rng.below(256) as u8;
                fixtures::wal::rechecksum(&mut wal);
            }
            4 => wal[rng.below(32) as usize] = rng.below(256) as u8,
            _ => wal.truncate(rng.range(1, len) as usize),
        }
        let src = dir.path(&format!("w{i}.db"));
        std::fs::write(&src, &fixture.main)?;
        std::fs::write(dir.path(&format!("w{i}.db-wal")), &wal)?;
        let mut options = RecoverOptions::new(&src, dir.path(&format!("w{i}.out.db")));
        options.allow_partial = true;
        match recovery::recover(&options, &Quiet) {
            Ok(done) => {
                assert!(
                    !matches!(done.outcome, Outcome::NotVerified { .. }),
                    "WAL mutation {i} (kind {kind}): not verified: {:?}",
                    done.report.evidence.verified
                );
                read += u32::from(done.report.wal.pages_from_wal > 0);
            }
            Err(e) if e.is_refusal() => {}
            Err(e) => panic!("WAL mutation {i} (kind {kind}): the run ended: {e}"),
        }
    }
    // Most damaged logs still give pages: the damage was read, not set aside.
    assert!(read > MUTATIONS_OF_THE_WAL / 2, "{read} runs read the log");
    Ok(())
}

/// How many WAL mutations one suite run tries.
const MUTATIONS_OF_THE_WAL: u32 = 80;

/// The first problem SQLite's own integrity check finds in the file at `path` (opened
/// read-only and immutable: it is this test's own copy), or why it cannot read it.
fn sqlite_problem(path: &std::path::Path) -> Option<String> {
    let uri = format!("file:{}?immutable=1", path.display());
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI;
    let conn = match Connection::open_with_flags(uri, flags) {
        Ok(conn) => conn,
        Err(e) => return Some(e.to_string()),
    };
    let lines: rusqlite::Result<Vec<String>> = conn
        .prepare("PRAGMA integrity_check(1)")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect());
    match lines {
        Ok(lines) => lines.into_iter().find(|l| l != "ok"),
        Err(e) => Some(e.to_string()),
    }
}

/// Whether a loss report names any finding of the file: a damaged page, a finding of the
/// header, of the schema or of a table's tree, a warning.
fn has_finding(r: &recovery::report::LossReport) -> bool {
    r.pages.damaged.count > 0
        || r.geometry.findings.count > 0
        || r.schema.findings.count > 0
        || r.tables.iter().any(|t| t.findings.count > 0)
        || !r.warnings.is_empty()
}
