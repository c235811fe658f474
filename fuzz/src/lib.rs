//! Fuzzing on stable Rust: a target per parser (b-tree pages, records, overflow chains, the
//! write-ahead log, the rollback journal, header inference, the whole-file survey) and three
//! for the whole `recover` run on small files (alone, with a `-wal` beside it, with a
//! `-journal` beside it); the differential target against SQLite on random healthy
//! files (`healthy`); a seeded mutator over the fixtures' files, and one over a file
//! and its log that aims at the log's headers; and a runner that keeps every input that
//! panics, fails or runs past its time as a file for `regressions/`, which the test suite
//! replays.
//!
//! `cargo run --release -p fuzz -- TARGET [--runs N] [--seed S]` (`docs/fuzzing.md`).

#![forbid(unsafe_code)]

pub mod healthy;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use fixtures::prng::SplitMix64;
use pager::cursor::u32_at;
use pager::{BtreeWalk, Database, Location, PageNo, Record, TreeItem};

/// What one input did to a target: `Err` says how it failed where it must not (a
/// recovery that would exit 1). A panic is a bug too, caught by the runner.
pub type Verdict = Result<(), String>;

/// A fuzz target: a function that reads its input every way it can, and the kind of input
/// it takes.
#[derive(Clone, Copy)]
pub struct Target {
    /// Its name on the command line.
    pub name: &'static str,
    /// Runs one input.
    pub run: fn(&[u8]) -> Verdict,
    /// What its inputs are.
    pub inputs: Inputs,
}

/// The kind of input a target takes, which decides its seeds and how they are mutated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inputs {
    /// One file: the fixtures' files, mutated anywhere ([`seeds`], [`mutate`]).
    File,
    /// A main file and the `-wal` beside it ([`pair`]), mutated mostly in the log's header
    /// and frame headers, and often resealed so that every checksum verifies.
    Wal,
    /// A main file and the hot `-journal` beside it, mutated mostly in the journal's
    /// header and record fields, and often resealed likewise.
    Journal,
    /// A seed (8 bytes) from which a database is generated: each input a new one.
    Seed,
}

const fn file(name: &'static str, run: fn(&[u8]) -> Verdict) -> Target {
    Target {
        name,
        run,
        inputs: Inputs::File,
    }
}

/// Every target.
pub const TARGETS: [Target; 13] = [
    file("header", header),
    file("page", page),
    file("record", record),
    file("overflow", overflow),
    file("wal", wal),
    file("journal", journal),
    file("survey", survey),
    file("carve", carve),
    file("history", history),
    file("recover", recover),
    Target {
        name: "recover-wal",
        run: recover_wal,
        inputs: Inputs::Wal,
    },
    Target {
        name: "recover-journal",
        run: recover_journal,
        inputs: Inputs::Journal,
    },
    Target {
        name: "healthy",
        run: healthy::healthy,
        inputs: Inputs::Seed,
    },
];

/// The target named `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

impl Target {
    /// The seed inputs of this target: each file cut to at most `max` bytes, or each pair
    /// of a main file and its log whole.
    pub fn seeds(&self, max: usize) -> Vec<Vec<u8>> {
        match self.inputs {
            Inputs::File => seeds(max),
            Inputs::Wal => wal_pairs(),
            Inputs::Journal => journal_pairs(),
            Inputs::Seed => vec![0u64.to_le_bytes().to_vec()],
        }
    }

    /// One mutation of `input`, chosen by `rng`.
    pub fn mutate(&self, input: &[u8], rng: &mut SplitMix64) -> Vec<u8> {
        match self.inputs {
            Inputs::File => mutate(input, rng),
            Inputs::Wal => mutate_pair(input, Log::Wal, rng),
            Inputs::Journal => mutate_pair(input, Log::Journal, rng),
            Inputs::Seed => rng.next_u64().to_le_bytes().to_vec(),
        }
    }
}

/// Opening a file: the header read, the page size and text encoding inferred when the
/// header's are damaged.
pub fn header(bytes: &[u8]) -> Verdict {
    if let Ok(db) = Database::open(bytes) {
        let _ = (db.page_size(), db.encoding(), db.findings().len());
    }
    Ok(())
}

/// Every page as a b-tree page: its header, cells, freeblocks and overlaps.
pub fn page(bytes: &[u8]) -> Verdict {
    let Ok(db) = Database::open(bytes) else {
        return Ok(());
    };
    for page in db.pages() {
        if let Ok(h) = page.btree_header() {
            let _ = page.cells(&h).count();
            let _ = page.freeblocks(&h).count();
            let _ = page.overlap_findings(&h);
        }
    }
    Ok(())
}

/// Calls `each` with every cell of every page of `bytes` opened as a database.
fn each_cell(bytes: &[u8], mut each: impl FnMut(&Database<'_>, &pager::CellRef<'_>)) {
    let Ok(db) = Database::open(bytes) else {
        return;
    };
    for page in db.pages() {
        let Ok(h) = page.btree_header() else { continue };
        for cell in page.cells(&h).flatten() {
            each(&db, &cell);
        }
    }
}

/// The bytes as one record, and every cell's local payload as one.
pub fn record(bytes: &[u8]) -> Verdict {
    let at = Location::new(PageNo::FIRST, 0);
    if let Ok((r, _)) = Record::parse(bytes, at) {
        let _ = r.values().count();
    }
    each_cell(bytes, |_, cell| {
        if let Some(p) = cell.cell.payload() {
            if let Ok((r, _)) = Record::parse(p.local, cell.location) {
                let _ = r.values().count();
            }
        }
    });
    Ok(())
}

/// Every cell's payload joined from its overflow chain, and decoded.
pub fn overflow(bytes: &[u8]) -> Verdict {
    each_cell(bytes, |db, cell| {
        if let Some(p) = cell.cell.payload() {
            let _ = db.assemble(p, cell.location);
            if let Ok(raw) = pager::raw_cell(db, cell) {
                let _ = raw.decode();
            }
        }
    });
    Ok(())
}

/// The bytes as a write-ahead log, and as one over the first half of them.
pub fn wal(bytes: &[u8]) -> Verdict {
    if let Ok(w) = pager::read_wal(bytes) {
        let _ = w.findings.len();
    }
    let (main, log) = bytes.split_at(bytes.len() / 2);
    if let Ok(w) = pager::read_wal(log) {
        if let Ok(db) = Database::open_with_wal(main, Some(&w)) {
            let _ = pager::survey(&db);
        }
    }
    Ok(())
}

/// The bytes as a rollback journal.
pub fn journal(bytes: &[u8]) -> Verdict {
    let j = pager::read_journal(bytes);
    let _ = j.findings.len();
    Ok(())
}

/// The history of a log over a main file: the input up to the first 512-byte boundary
/// where a write-ahead log's magic number is is the main file, the rest the log (each
/// commit's rows diffed, the log as of each commit opened); and the input as a persisted
/// journal over itself.
pub fn history(bytes: &[u8]) -> Verdict {
    let at = (512..bytes.len()).step_by(512).find(|at| {
        matches!(
            bytes.get(*at..*at + 4),
            Some([0x37, 0x7f, 0x06, 0x82 | 0x83])
        )
    });
    if let Some((main, log)) = at.map(|at| bytes.split_at(at)) {
        if let Ok(w) = pager::read_wal(log) {
            let h = history::wal_history(main, None, &w, &|_| {});
            let _ = (h.steps.len(), h.strays.len());
        }
    }
    for size in [512, 4096] {
        let Some(size) = pager::PageSize::new(size) else {
            continue;
        };
        let j = pager::read_persisted_journal(bytes, size, 1 << 16);
        let _ = history::journal_history(bytes, &j, &|_| {});
    }
    Ok(())
}

/// The whole-file survey, and every tree walked.
pub fn survey(bytes: &[u8]) -> Verdict {
    let Ok(db) = Database::open(bytes) else {
        return Ok(());
    };
    let s = pager::survey(&db);
    for tree in &s.trees {
        let _ = pager::read_tree(&db, tree.root);
    }
    let _ = BtreeWalk::new(&db, PageNo::FIRST)
        .filter(|i| matches!(i, Ok(TreeItem::Cell(_))))
        .count();
    Ok(())
}

/// Every page carved for deleted records as a run carves it, against shapes that admit
/// much (an agent store's messages, a table of text, and columns without a type, which
/// hold anything): a table page's free space as its table's (two ways), any other page as
/// a freed one, read whole.
///
/// A mutation changes a page or two of an input: carving the others again would repeat,
/// to the byte, work done before. What carving a page here reads is its bytes, its number,
/// the page and usable sizes and the text encoding (a table page is carved as a live one,
/// any other as one without cells of a table, so no overflow chain is followed): each
/// page is carved once for each distinct such context.
pub fn carve(bytes: &[u8]) -> Verdict {
    let Ok(db) = Database::open(bytes) else {
        return Ok(());
    };
    let templates = carve_templates();
    for n in 1..=db.page_count() {
        let Some(no) = PageNo::new(n) else { continue };
        let Some(page) = db.page(no) else { continue };
        let kind = page.btree_header().ok().map(|h| h.page_type());
        let roles: &[carve::PageRole] = if kind.is_some_and(|k| k.is_table()) {
            &[
                carve::PageRole::Live(Some(0)),
                carve::PageRole::Live(Some(2)),
            ]
        } else {
            &[carve::PageRole::Free]
        };
        if !CARVED.with(|seen| seen.borrow_mut().first_time(&db, n, page.bytes())) {
            continue;
        }
        for role in roles {
            let _ = carve::carve_page(&db, no, *role, templates);
        }
    }
    Ok(())
}

thread_local! {
    /// The pages the `carve` target carved, by what carving them reads.
    static CARVED: std::cell::RefCell<Seen> = std::cell::RefCell::new(Seen::default());
}

/// Digests of the pages carved so far, forgotten all at once when there are too many.
#[derive(Default)]
struct Seen(std::collections::HashSet<[u8; 32]>);

impl Seen {
    /// Whether page `n` of `db`, of `bytes`, is carved here for the first time.
    fn first_time(&mut self, db: &Database<'_>, n: u32, bytes: &[u8]) -> bool {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(n.to_be_bytes());
        h.update((db.page_size().bytes() as u64).to_be_bytes());
        h.update((db.usable_size() as u64).to_be_bytes());
        h.update([db.encoding() as u8]);
        h.update(bytes);
        if self.0.len() >= SEEN_MOST {
            self.0.clear();
        }
        self.0.insert(h.finalize().into())
    }
}

/// Page digests the `carve` target keeps (32 bytes each, about 200 MiB in all).
const SEEN_MOST: usize = 4 << 20;

/// The shapes the `carve` target carves with.
fn carve_templates() -> &'static [carve::Template] {
    use reconstruct::shape::{Column, ColumnDefault, ColumnKind, TableShape};
    static TEMPLATES: std::sync::OnceLock<Vec<carve::Template>> = std::sync::OnceLock::new();
    TEMPLATES.get_or_init(|| {
        let col = |name: &str, decl: &str, pk: u32| Column {
            name: name.into(),
            decl_type: decl.into(),
            not_null: false,
            pk,
            kind: ColumnKind::Ordinary,
            default: ColumnDefault::None,
        };
        let shape = |columns: Vec<Column>| TableShape {
            name: "t".into(),
            columns,
            without_rowid: false,
            strict: false,
            pk_indexed: false,
        };
        [
            shape(vec![
                col("id", "INTEGER", 1),
                col("session_id", "TEXT", 0),
                col("role", "TEXT", 0),
                col("content", "TEXT", 0),
                col("created", "REAL", 0),
            ]),
            shape(vec![col("a", "TEXT", 0), col("b", "TEXT", 0)]),
            shape(vec![col("a", "", 0), col("b", "", 0), col("c", "", 0)]),
        ]
        .iter()
        .filter_map(carve::Template::of)
        .collect()
    })
}

/// A whole recovery of the bytes as a file, into a scratch folder (removed after).
pub fn recover(bytes: &[u8]) -> Verdict {
    recover_beside(bytes, None)
}

/// A whole recovery of a main file with a `-wal` beside it (the input a [`pair`]).
pub fn recover_wal(bytes: &[u8]) -> Verdict {
    let (main, log) = split_pair(bytes);
    recover_beside(main, Some(("-wal", log)))
}

/// A whole recovery of a main file with a `-journal` beside it (the input a [`pair`]).
pub fn recover_journal(bytes: &[u8]) -> Verdict {
    let (main, log) = split_pair(bytes);
    recover_beside(main, Some(("-journal", log)))
}

/// Recovers `main`, with `log` written beside it under its suffix, into a scratch folder
/// (removed after), as `salvage recover --allow-partial` does. A refusal (exit 2) and a
/// recorded loss (exit 3) are answers; a failure (exit 1) is a finding.
fn recover_beside(main: &[u8], log: Option<(&str, &[u8])>) -> Verdict {
    static RUN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("salvage-fuzz-{}-{n}", std::process::id()));
    if std::fs::create_dir_all(&dir).is_err() {
        return Ok(());
    }
    let src = dir.join("src.db");
    let written = std::fs::write(&src, main).and_then(|()| match log {
        Some((suffix, bytes)) => std::fs::write(dir.join(format!("src.db{suffix}")), bytes),
        None => Ok(()),
    });
    let verdict = match written {
        Ok(()) => {
            let mut options = recovery::RecoverOptions::new(&src, dir.join("out.db"));
            options.allow_partial = true;
            match recovery::recover(&options, &recovery::Quiet) {
                Err(e) if !e.is_refusal() => Err(format!("failed (exit 1): {e}")),
                _ => Ok(()),
            }
        }
        Err(_) => Ok(()),
    };
    let _ = std::fs::remove_dir_all(&dir);
    verdict
}

/// A main file and its log as one input: the main file's length (4 bytes, big-endian),
/// the main file, the log.
pub fn pair(main: &[u8], log: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + main.len() + log.len());
    out.extend_from_slice(&(main.len() as u32).to_be_bytes());
    out.extend_from_slice(main);
    out.extend_from_slice(log);
    out
}

/// The main file and the log of a [`pair`]; any input splits (a length past the end
/// takes everything as the main file).
pub fn split_pair(bytes: &[u8]) -> (&[u8], &[u8]) {
    let rest = bytes.get(4..).unwrap_or_default();
    let len = bytes
        .get(..4)
        .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize);
    rest.split_at(len.min(rest.len()))
}

/// Main files with a write-ahead log: the agent store with three commits in its log, and
/// the messenger with nine.
fn wal_pairs() -> Vec<Vec<u8>> {
    let agent = fixtures::build_agent_with_wal();
    let story = fixtures::history::wal_story();
    vec![pair(&agent.main, &agent.wal), pair(&story.main, &story.wal)]
}

/// Main files with a hot rollback journal: a table whose update spilled into the main file,
/// and the messenger's journal of three segments.
fn journal_pairs() -> Vec<Vec<u8>> {
    let story = fixtures::history::hot_journal_story();
    let mut out = vec![pair(&story.main, &story.journal)];
    out.extend(hot_journal().map(|(main, journal)| pair(&main, &journal)));
    out
}

/// Seed inputs: every catalog fixture small enough, cut to at most `max` bytes.
pub fn seeds(max: usize) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = fixtures::catalog()
        .into_iter()
        .filter(|f| f.bytes.len() <= 4 << 20)
        .map(|f| f.bytes[..f.bytes.len().min(max)].to_vec())
        .collect();
    let w = fixtures::build_agent_with_wal();
    out.push(w.wal[..w.wal.len().min(max)].to_vec());
    let mut both = w.main.clone();
    both.extend_from_slice(&w.wal);
    out.push(both[..both.len().min(max)].to_vec());
    out.extend(hot_journal().map(|(_, j)| j[..j.len().min(max)].to_vec()));
    // Logs and journals with a history: a main file followed by its log, cut at four
    // times the others' length so that some commits follow the main file.
    let story = fixtures::history::wal_story();
    let persisted = fixtures::history::journal_story();
    for (main, log) in [
        (&story.main, &story.wal),
        (&persisted.main, &persisted.journal),
    ] {
        let mut both = main.clone();
        both.extend_from_slice(log);
        both.truncate(max.saturating_mul(4));
        out.push(both);
    }
    out
}

/// A main file and its rollback journal as a crash leaves them: a transaction whose changes
/// spilled into the main file (a one-page cache), both read before it ended.
fn hot_journal() -> Option<(Vec<u8>, Vec<u8>)> {
    let dir = std::env::temp_dir().join(format!("salvage-fuzz-journal-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).ok()?;
    let db = dir.join("j.db");
    let conn = rusqlite::Connection::open(&db).ok()?;
    conn.execute_batch(
        "PRAGMA journal_mode = DELETE;
         CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT);
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 2000)
         INSERT INTO t SELECT x, printf('%.40c', 'a') FROM i;
         PRAGMA cache_size = 1;
         BEGIN;
         UPDATE t SET body = 'changed' WHERE id % 3 = 0;",
    )
    .ok()?;
    let main = std::fs::read(&db).ok();
    let journal = std::fs::read(dir.join("j.db-journal")).ok();
    let _ = conn.execute_batch("ROLLBACK");
    drop(conn);
    let _ = std::fs::remove_dir_all(&dir);
    main.zip(journal)
}

/// Values that break parsers: bounds of one, two and four bytes, varint extremes.
const INTERESTING: [&[u8]; 8] = [
    &[0],
    &[0xff],
    &[0x7f],
    &[0x80],
    &[0xff, 0xff],
    &[0x00, 0x00, 0xff, 0xff],
    &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
    &[0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00],
];

/// One mutation of `input`, chosen by `rng`: bytes flipped or overwritten, an
/// interesting value written, a page's worth copied from elsewhere, the end cut, a
/// 4-byte field set to a small number (page pointers, counts), or a run zeroed.
pub fn mutate(input: &[u8], rng: &mut SplitMix64) -> Vec<u8> {
    let mut b = input.to_vec();
    if b.is_empty() {
        return vec![0; rng.below(64) as usize];
    }
    let len = b.len() as u64;
    for _ in 0..rng.range(1, 4) {
        let at = rng.below(len) as usize;
        match rng.below(7) {
            0 => {
                if let Some(x) = b.get_mut(at) {
                    *x ^= 1 << rng.below(8);
                }
            }
            1 => {
                for x in b.iter_mut().skip(at).take(rng.range(1, 16) as usize) {
                    *x = rng.next_u64() as u8;
                }
            }
            2 => {
                let v = rng.pick(&INTERESTING);
                for (x, y) in b.iter_mut().skip(at).zip(v) {
                    *x = *y;
                }
            }
            3 => {
                let from = rng.below(len) as usize;
                let n = rng.range(1, 4096) as usize;
                let chunk: Vec<u8> = b.iter().skip(from).take(n).copied().collect();
                for (x, y) in b.iter_mut().skip(at).zip(chunk) {
                    *x = y;
                }
            }
            4 => b.truncate(at.max(1)),
            5 => {
                let v = (rng.below(len / 512 + 2) as u32).to_be_bytes();
                for (x, y) in b.iter_mut().skip(at).zip(v) {
                    *x = y;
                }
            }
            _ => {
                for x in b.iter_mut().skip(at).take(rng.range(1, 8192) as usize) {
                    *x = 0;
                }
            }
        }
    }
    b
}

/// The log of a [`pair`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Log {
    Wal,
    Journal,
}

/// One mutation of a [`pair`], aimed at what a log claims: a header field (four times in
/// ten), a frame's or record's header field (two in ten), the whole log re-laid at
/// another page size (one in ten), anywhere in the log (one in ten) or anywhere in the
/// main file. Half of the mutated logs are then resealed (every checksum recomputed over
/// the bytes as they now are), as a forger would: a log that lies consistently, not only
/// one whose checksums give it away; a re-laid one always is.
fn mutate_pair(input: &[u8], kind: Log, rng: &mut SplitMix64) -> Vec<u8> {
    let (main, log) = split_pair(input);
    let (mut main, mut log) = (main.to_vec(), log.to_vec());
    // Whether the log's checksums are left as the mutation leaves them.
    let mut sealed = true;
    match rng.below(10) {
        0..=3 => {
            let fields = match kind {
                Log::Wal => 8,
                Log::Journal => 7,
            };
            let at = 4 * rng.below(fields) as usize;
            set_field(&mut log, at, rng, main.len());
        }
        4 | 5 => {
            let at = record_field(&log, kind, rng);
            set_field(&mut log, at, rng, main.len());
        }
        6 => {
            log = relaid(&log, kind, 1 << rng.range(9, 17));
            sealed = false;
        }
        7 => log = mutate(&log, rng),
        _ => main = mutate(&main, rng),
    }
    if !sealed || rng.one_in(2) {
        match kind {
            Log::Wal => fixtures::wal::rechecksum(&mut log),
            Log::Journal => reseal_journal(&mut log),
        }
    }
    pair(&main, &log)
}

/// The log re-laid at `size`-byte pages: its header's page size rewritten, and each frame
/// (a write-ahead log) or each record of the first segment (a journal) kept with its
/// header and its image cut or padded with zeros. Its checksums are then stale.
fn relaid(log: &[u8], kind: Log, size: usize) -> Vec<u8> {
    let (field, start, head, tail) = match kind {
        Log::Wal => (8, 32, 24, 0),
        Log::Journal => (24, u32_at(log, 20).map_or(512, |s| s as usize), 4, 4),
    };
    let old = u32_at(log, field).map_or(0, |p| p as usize);
    if !(512..=65536).contains(&old) || !(32..=65536).contains(&start) || log.len() < start {
        return log.to_vec();
    }
    let mut out = log[..start].to_vec();
    if let Some(f) = out.get_mut(field..field + 4) {
        f.copy_from_slice(&(size as u32).to_be_bytes());
    }
    for unit in log[start..].chunks_exact(head + old + tail) {
        out.extend_from_slice(&unit[..head]);
        let image = &unit[head..head + old.min(size)];
        out.extend_from_slice(image);
        out.resize(out.len() + size - image.len() + tail, 0);
    }
    out
}

/// The offset of a field in the header of a frame (a write-ahead log: page number, commit
/// size, salts, checksums) or of a record (a journal: page number, checksum), chosen by
/// `rng` among those the log's header lays out.
fn record_field(log: &[u8], kind: Log, rng: &mut SplitMix64) -> usize {
    let field = |at: usize| u32_at(log, at).map_or(0, |v| v as usize);
    let page_size = match field(if kind == Log::Wal { 8 } else { 24 }) {
        p if (512..=65536).contains(&p) => p,
        _ => 4096,
    };
    match kind {
        Log::Wal => {
            let frame = 24 + page_size;
            let frames = (log.len().saturating_sub(32) / frame).max(1) as u64;
            32 + rng.below(frames) as usize * frame + 4 * rng.below(6) as usize
        }
        Log::Journal => {
            let sector = match field(20) {
                s if (512..=65536).contains(&s) => s,
                _ => 512,
            };
            let record = 8 + page_size;
            let records = (log.len().saturating_sub(sector) / record).max(1) as u64;
            let start = sector + rng.below(records) as usize * record;
            if rng.one_in(2) {
                start
            } else {
                start + 4 + page_size
            }
        }
    }
}

/// Writes a value that a reader must doubt into the 4-byte big-endian field at `at` (if
/// the log reaches it): zero, one, all ones, a page size (a true one, or none at all), a
/// page number near the main file's end, the old value off by one or with a bit flipped,
/// or any.
fn set_field(log: &mut [u8], at: usize, rng: &mut SplitMix64, main_len: usize) {
    let Some(old) = u32_at(log, at) else {
        return;
    };
    let pages = (main_len / 512) as u64;
    let value = match rng.below(9) {
        0 => rng.pick(&[0, 1, u32::MAX, 0x8000_0000]),
        1 => 1 << rng.range(9, 17),
        2 => rng.pick(&[256, 1 << 17, 1000, 65535, 0x0001_0001]),
        3 => rng.range(pages.saturating_sub(2), pages + 3) as u32,
        4 => rng.below(pages + 2) as u32,
        5 => old.wrapping_add(1),
        6 => old.wrapping_sub(1),
        7 => old ^ 1 << rng.below(32),
        _ => rng.next_u64() as u32,
    };
    if let Some(field) = log.get_mut(at..at + 4) {
        field.copy_from_slice(&value.to_be_bytes());
    }
}

/// Recomputes the checksum of every record of the journal's first segment as its header
/// lays them out (nonce, sector and page size as they now are): the journal then verifies
/// as if SQLite had written it.
fn reseal_journal(log: &mut [u8]) {
    let (Some(nonce), Some(sector), Some(page_size)) =
        (u32_at(log, 12), u32_at(log, 20), u32_at(log, 24))
    else {
        return;
    };
    let (sector, page_size) = (sector as usize, page_size as usize);
    if !(32..=65536).contains(&sector) || !(512..=65536).contains(&page_size) {
        return;
    }
    let mut at = sector;
    while let Some(image) = log.get(at + 4..at + 4 + page_size) {
        let sum = nonce.wrapping_add(fixtures::history::journal_sample_sum(image));
        let Some(field) = log.get_mut(at + 4 + page_size..at + 8 + page_size) else {
            return;
        };
        field.copy_from_slice(&sum.to_be_bytes());
        at += 8 + page_size;
    }
}

/// What a run found.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Inputs run.
    pub runs: u64,
    /// Inputs that panicked, with the panic's message.
    pub crashes: Vec<(Vec<u8>, String)>,
    /// Inputs on which the target failed where it must not, with how.
    pub failures: Vec<(Vec<u8>, String)>,
    /// Inputs that ran past the time limit, with how long they took.
    pub slow: Vec<(Vec<u8>, Duration)>,
}

/// Runs `target` on `runs` mutations of the seeds (seeded by `seed`; about one input in
/// five mutated twice over); an input taking longer than `limit` counts as a hang.
pub fn run(target: &Target, seeds: &[Vec<u8>], runs: u64, seed: u64, limit: Duration) -> Outcome {
    run_until(target, seeds, runs, seed, limit, None, &mut |_| {})
}

/// What a long run is told while it goes, so that a run killed before its end has kept
/// what it found and said how far it got.
pub enum Event<'a> {
    /// An input panicked, failed or ran past the limit, told as soon as it has: the input,
    /// and how.
    Found(&'a [u8], &'a str),
    /// The inputs of this call run so far, told every [`PROGRESS_EVERY`].
    Ran(u64),
}

/// How often [`run_until`] tells its watcher how many inputs have run.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(300);

/// [`run`], stopping before the next input once `until` has passed (the inputs run are
/// then the first [`Outcome::runs`] of the same seed), and telling `watch` of each input
/// found when it is found, and of the count now and then.
pub fn run_until(
    target: &Target,
    seeds: &[Vec<u8>],
    runs: u64,
    seed: u64,
    limit: Duration,
    until: Option<Instant>,
    watch: &mut dyn FnMut(Event<'_>),
) -> Outcome {
    let mut rng = SplitMix64::new(seed);
    let mut out = Outcome::default();
    if seeds.is_empty() {
        return out;
    }
    let mut told = Instant::now();
    for _ in 0..runs {
        let now = Instant::now();
        if until.is_some_and(|t| now >= t) {
            break;
        }
        if now.duration_since(told) >= PROGRESS_EVERY {
            watch(Event::Ran(out.runs));
            told = now;
        }
        let base = rng.below(seeds.len() as u64) as usize;
        let Some(base) = seeds.get(base) else {
            continue;
        };
        let mut input = target.mutate(base, &mut rng);
        if rng.one_in(5) {
            input = target.mutate(&input, &mut rng);
        }
        let started = Instant::now();
        let result = catch_unwind(AssertUnwindSafe(|| (target.run)(&input)));
        let took = started.elapsed();
        out.runs += 1;
        match result {
            Err(panic) => {
                let why = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                watch(Event::Found(&input, &format!("panic: {why}")));
                out.crashes.push((input, why));
            }
            Ok(Err(why)) => {
                watch(Event::Found(&input, &why));
                out.failures.push((input, why));
            }
            Ok(Ok(())) if took > limit => {
                watch(Event::Found(&input, &format!("took {took:?}")));
                out.slow.push((input, took));
            }
            Ok(Ok(())) => {}
        }
    }
    out
}
