//! Fuzzing on stable Rust: a target per parser (b-tree pages, records, overflow chains, the
//! write-ahead log, the rollback journal, header inference, the whole-file survey) and one
//! for the whole `recover` run on small files; a seeded mutator over the fixtures' files;
//! and a runner that keeps every input that panics or runs past its time as a file for
//! `regressions/`, which the test suite replays.
//!
//! `cargo run --release -p fuzz -- TARGET [--runs N] [--seed S]` (`docs/fuzzing.md`).

#![forbid(unsafe_code)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use fixtures::prng::SplitMix64;
use pager::{BtreeWalk, Database, Location, PageNo, Record, TreeItem};

/// A fuzz target: reads `bytes` every way it can; any panic is a bug.
pub type Target = fn(&[u8]);

/// Every target, by name.
pub const TARGETS: [(&str, Target); 10] = [
    ("header", header),
    ("page", page),
    ("record", record),
    ("overflow", overflow),
    ("wal", wal),
    ("journal", journal),
    ("survey", survey),
    ("carve", carve),
    ("history", history),
    ("recover", recover),
];

/// The target named `name`.
pub fn target(name: &str) -> Option<Target> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Opening a file: the header read, the page size and text encoding inferred when the
/// header's are damaged.
pub fn header(bytes: &[u8]) {
    if let Ok(db) = Database::open(bytes) {
        let _ = (db.page_size(), db.encoding(), db.findings().len());
    }
}

/// Every page as a b-tree page: its header, cells, freeblocks and overlaps.
pub fn page(bytes: &[u8]) {
    let Ok(db) = Database::open(bytes) else {
        return;
    };
    for page in db.pages() {
        if let Ok(h) = page.btree_header() {
            let _ = page.cells(&h).count();
            let _ = page.freeblocks(&h).count();
            let _ = page.overlap_findings(&h);
        }
    }
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
pub fn record(bytes: &[u8]) {
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
}

/// Every cell's payload joined from its overflow chain, and decoded.
pub fn overflow(bytes: &[u8]) {
    each_cell(bytes, |db, cell| {
        if let Some(p) = cell.cell.payload() {
            let _ = db.assemble(p, cell.location);
            if let Ok(raw) = pager::raw_cell(db, cell) {
                let _ = raw.decode();
            }
        }
    });
}

/// The bytes as a write-ahead log, and as one over the first half of them.
pub fn wal(bytes: &[u8]) {
    if let Ok(w) = pager::read_wal(bytes) {
        let _ = w.findings.len();
    }
    let (main, log) = bytes.split_at(bytes.len() / 2);
    if let Ok(w) = pager::read_wal(log) {
        if let Ok(db) = Database::open_with_wal(main, Some(&w)) {
            let _ = pager::survey(&db);
        }
    }
}

/// The bytes as a rollback journal.
pub fn journal(bytes: &[u8]) {
    let j = pager::read_journal(bytes);
    let _ = j.findings.len();
}

/// The history of a log over a main file: the input up to the first 512-byte boundary
/// where a write-ahead log's magic number is is the main file, the rest the log (each
/// commit's rows diffed, the log as of each commit opened); and the input as a persisted
/// journal over itself.
pub fn history(bytes: &[u8]) {
    let at = (512..bytes.len()).step_by(512).find(|at| {
        matches!(
            bytes.get(*at..*at + 4),
            Some([0x37, 0x7f, 0x06, 0x82 | 0x83])
        )
    });
    if let Some((main, log)) = at.map(|at| bytes.split_at(at)) {
        if let Ok(w) = pager::read_wal(log) {
            let h = history::wal_history(main, None, &w, &mut |_| {});
            let _ = (h.steps.len(), h.strays.len());
        }
    }
    for size in [512, 4096] {
        let Some(size) = pager::PageSize::new(size) else {
            continue;
        };
        let j = pager::read_persisted_journal(bytes, size, 1 << 16);
        let _ = history::journal_history(bytes, &j);
    }
}

/// The whole-file survey, and every tree walked.
pub fn survey(bytes: &[u8]) {
    let Ok(db) = Database::open(bytes) else {
        return;
    };
    let s = pager::survey(&db);
    for tree in &s.trees {
        let _ = pager::read_tree(&db, tree.root);
    }
    let _ = BtreeWalk::new(&db, PageNo::FIRST)
        .filter(|i| matches!(i, Ok(TreeItem::Cell(_))))
        .count();
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
pub fn carve(bytes: &[u8]) {
    let Ok(db) = Database::open(bytes) else {
        return;
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
pub fn recover(bytes: &[u8]) {
    static RUN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("salvage-fuzz-{}-{n}", std::process::id()));
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let src = dir.join("src.db");
    if std::fs::write(&src, bytes).is_ok() {
        let mut options = recovery::RecoverOptions::new(&src, dir.join("out.db"));
        options.allow_partial = true;
        let _ = recovery::recover(&options, &recovery::Quiet);
    }
    let _ = std::fs::remove_dir_all(&dir);
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
    out.extend(hot_journal().map(|j| j[..j.len().min(max)].to_vec()));
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

/// A rollback journal as a crash leaves it: a transaction whose changes spilled into the
/// main file (a one-page cache), its journal read before it ended.
fn hot_journal() -> Option<Vec<u8>> {
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
    let journal = std::fs::read(dir.join("j.db-journal")).ok();
    let _ = conn.execute_batch("ROLLBACK");
    drop(conn);
    let _ = std::fs::remove_dir_all(&dir);
    journal
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

/// What a run found.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Inputs run.
    pub runs: u64,
    /// Inputs that panicked, with the panic's message.
    pub crashes: Vec<(Vec<u8>, String)>,
    /// Inputs that ran past the time limit, with how long they took.
    pub slow: Vec<(Vec<u8>, Duration)>,
}

/// Runs `target` on `runs` mutations of the seeds (seeded by `seed`; about one input in
/// five mutated twice over); an input taking longer than `limit` counts as a hang.
pub fn run(target: Target, seeds: &[Vec<u8>], runs: u64, seed: u64, limit: Duration) -> Outcome {
    let mut rng = SplitMix64::new(seed);
    let mut out = Outcome::default();
    if seeds.is_empty() {
        return out;
    }
    for _ in 0..runs {
        let base = rng.below(seeds.len() as u64) as usize;
        let Some(base) = seeds.get(base) else {
            continue;
        };
        let mut input = mutate(base, &mut rng);
        if rng.one_in(5) {
            input = mutate(&input, &mut rng);
        }
        let started = Instant::now();
        let result = catch_unwind(AssertUnwindSafe(|| target(&input)));
        let took = started.elapsed();
        out.runs += 1;
        match result {
            Err(panic) => {
                let why = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                out.crashes.push((input, why));
            }
            Ok(()) if took > limit => out.slow.push((input, took)),
            Ok(()) => {}
        }
    }
    out
}
