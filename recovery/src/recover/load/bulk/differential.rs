//! Differential tests of the bulk writer against SQLite itself.
//!
//! SQLite writes a source database (a table `tN(id INTEGER PRIMARY KEY, v DECL)` per
//! case); the bulk writer rebuilds each table from the source's records into an output
//! that SQLite created empty, exactly as `recover` does. The output must pass `PRAGMA
//! integrity_check`, and an in-order walk of every table b-tree must yield the same
//! records, byte for byte, in the same order, as the same walk of the source. An
//! auto-vacuum output must then stand what SQLite does with its pointer map: moving a
//! page for a new index's root, and the pages freed by deletes to fill the holes.

use std::path::{Path, PathBuf};

use fixtures::prng::SplitMix64;
use pager::{BtreeWalk, Database, PageNo, TreeItem};
use rusqlite::types::Value;
use rusqlite::Connection;

use super::{put_varint, BulkWriter};
use pager::varint::varint_len;

/// One table of a batch: the declared type of `v`, and the rows (rowid, value).
struct Case {
    decl: &'static str,
    rows: Vec<(i64, Value)>,
}

/// Where one batch's two databases are written.
struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!(
            "salvage-bulk-differential-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch { dir }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn open(path: &Path, page_size: u32, encoding: &str, vacuum: &str) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.pragma_update(None, "page_size", page_size).unwrap();
    conn.pragma_update(None, "auto_vacuum", vacuum).unwrap();
    conn.pragma_update(None, "encoding", encoding).unwrap();
    conn.pragma_update(None, "journal_mode", "OFF").unwrap();
    conn.pragma_update(None, "synchronous", "OFF").unwrap();
    conn
}

fn create_schema(conn: &Connection, cases: &[Case]) {
    let mut sql = String::from("BEGIN;");
    for (n, case) in cases.iter().enumerate() {
        sql.push_str(&format!(
            "CREATE TABLE t{n}(id INTEGER PRIMARY KEY, v {});",
            case.decl
        ));
    }
    sql.push_str("COMMIT;");
    conn.execute_batch(&sql).unwrap();
}

/// The root pages of `tN`, by `N`.
fn roots(conn: &Connection, cases: usize) -> Vec<u32> {
    (0..cases)
        .map(|n| {
            conn.query_row(
                "SELECT rootpage FROM sqlite_schema WHERE name = ?1",
                [format!("t{n}")],
                |r| r.get(0),
            )
            .unwrap()
        })
        .collect()
}

/// Every cell of the b-tree at `root`, in key order: (rowid for table cells, payload).
fn in_order(db: &Database<'_>, root: u32) -> Vec<(Option<i64>, Vec<u8>)> {
    let root = PageNo::new(root).unwrap();
    BtreeWalk::new(db, root)
        .map(|item| item.unwrap_or_else(|f| panic!("finding in a healthy tree: {f}")))
        .filter_map(|item| match item {
            TreeItem::Cell(cell) => {
                let raw = pager::raw_cell(db, &cell).unwrap();
                assert!(raw.intact, "damaged record at {}", raw.location);
                Some((raw.rowid, raw.payload.into_owned()))
            }
            TreeItem::Lost(l) => panic!("lost child in a healthy tree: {l:?}"),
            TreeItem::Page(_) => None,
        })
        .collect()
}

/// `PRAGMA integrity_check` of the file at `path` (an error as its one line).
fn integrity_check(conn: &Connection) -> Vec<String> {
    conn.prepare("PRAGMA integrity_check")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .unwrap_or_else(|e| vec![e.to_string()])
}

/// Writes `cases` with SQLite, rebuilds them with the bulk writer, and compares.
fn check_batch(name: &str, page_size: u32, encoding: &str, cases: &[Case]) {
    check_batch_in(name, page_size, encoding, "NONE", cases);
}

/// `check_batch`, the output (and source) in auto-vacuum mode `vacuum`. Returns, for an
/// auto-vacuum output, the most pointer-map pages the writer held at once and the map
/// pages it wrote before its end.
fn check_batch_in(
    name: &str,
    page_size: u32,
    encoding: &str,
    vacuum: &str,
    cases: &[Case],
) -> Option<(usize, u32)> {
    let scratch = Scratch::new(name);
    let (src_path, out_path) = (scratch.dir.join("src.db"), scratch.dir.join("out.db"));
    let src = open(&src_path, page_size, encoding, vacuum);
    create_schema(&src, cases);
    src.execute_batch("BEGIN").unwrap();
    for (n, case) in cases.iter().enumerate() {
        let mut insert = src
            .prepare(&format!("INSERT INTO t{n}(id, v) VALUES (?1, ?2)"))
            .unwrap();
        for (rowid, v) in &case.rows {
            insert.execute(rusqlite::params![rowid, v]).unwrap();
        }
    }
    src.execute_batch("COMMIT").unwrap();
    let src_roots = roots(&src, cases.len());
    drop(src);
    let out = open(&out_path, page_size, encoding, vacuum);
    create_schema(&out, cases);
    let out_roots = roots(&out, cases.len());
    let size: u32 = out.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
    assert_eq!(size, page_size, "{name}: the output's page size");
    drop(out);

    let src_bytes = std::fs::read(&src_path).unwrap();
    let src_db = Database::open(&src_bytes).unwrap();
    let mut writer = BulkWriter::open(&out_path, page_size).unwrap();
    for (table, out_table) in src_roots.iter().zip(&out_roots) {
        let mut builder = writer.table(*out_table);
        for (rowid, payload) in in_order(&src_db, *table) {
            let rowid = rowid.unwrap();
            assert!(builder.accepts(rowid));
            builder.push(rowid, &payload).unwrap();
        }
        builder.finish().unwrap();
    }
    let held = writer.maps_held();
    writer.finish().unwrap();

    let out = Connection::open(&out_path).unwrap();
    assert_eq!(
        integrity_check(&out),
        ["ok"],
        "{name}: integrity_check of the bulk-written output ({vacuum})"
    );
    drop(out);

    let out_bytes = std::fs::read(&out_path).unwrap();
    let out_db = Database::open(&out_bytes).unwrap();
    for (n, (table, out_table)) in src_roots.iter().zip(&out_roots).enumerate() {
        let case = &cases[n];
        assert_eq!(
            in_order(&src_db, *table),
            in_order(&out_db, *out_table),
            "{name}: table t{n} ({} rows, v {})",
            case.rows.len(),
            case.decl
        );
    }
    if vacuum != "NONE" {
        moved_by_sqlite(name, &out_path, cases.len());
    }
    held
}

/// What SQLite does with an auto-vacuum file's pointer map: an index's new root takes the
/// place of the page after the last root (that page moved, its parent's pointer to it
/// changed), and the pages deletes free are filled by pages moved from the end of the
/// file (at each commit, or by `PRAGMA incremental_vacuum`). Its check must then still
/// call the file `ok`.
fn moved_by_sqlite(name: &str, path: &Path, tables: usize) {
    let out = Connection::open(path).unwrap();
    let mut sql = String::from("BEGIN;");
    for n in 0..tables.min(3) {
        sql.push_str(&format!("CREATE INDEX i{n} ON t{n}(v);"));
    }
    sql.push_str("COMMIT;");
    out.execute_batch(&sql).unwrap();
    for n in 0..tables {
        out.execute(&format!("DELETE FROM t{n} WHERE id % 3 = 0"), [])
            .unwrap();
        // A step for each page it gives back.
        let mut vacuum = out.prepare("PRAGMA incremental_vacuum").unwrap();
        let mut steps = vacuum.query([]).unwrap();
        while steps.next().unwrap().is_some() {}
    }
    assert_eq!(
        integrity_check(&out),
        ["ok"],
        "{name}: integrity_check after SQLite moved pages of the bulk-written output"
    );
    let free: i64 = out
        .query_row("PRAGMA freelist_count", [], |r| r.get(0))
        .unwrap();
    assert_eq!(free, 0, "{name}: pages left free after the vacuum");
}

/// A random value of a random storage class, favouring the ones whose order is subtle:
/// 0 and 1 (serial types 8 and 9, no body), integers at every width's edges, -0.0 and
/// integral reals, text and blobs with shared prefixes, empty values, long ones that
/// spill to overflow pages.
fn value(rng: &mut SplitMix64, long: bool) -> Value {
    const EDGES: [i64; 14] = [
        -129,
        -128,
        127,
        128,
        32767,
        32768,
        -8_388_609,
        8_388_607,
        2_147_483_648,
        -2_147_483_649,
        140_737_488_355_327,
        140_737_488_355_328,
        i64::MIN,
        i64::MAX,
    ];
    let short = |rng: &mut SplitMix64, alphabet: &[&str]| -> String {
        let len = if long && rng.one_in(4) {
            rng.range(100, 3000) as usize
        } else {
            rng.below(6) as usize
        };
        (0..len).map(|_| rng.pick(alphabet)).collect()
    };
    match rng.below(12) {
        0 => Value::Null,
        1 | 2 => Value::Integer(rng.below(2) as i64),
        3 => Value::Integer(rng.pick(&EDGES)),
        4 => {
            let bits = rng.pick(&[8u32, 16, 24, 32, 48, 63]);
            let v = (rng.next_u64() >> (64 - bits)) as i64;
            Value::Integer(if rng.one_in(2) { -v } else { v })
        }
        5 => Value::Real(rng.pick(&[-0.0, 0.0, 1.0, 5.0, -2.5, 1.5, 1e300, -1e-300, 0.1])),
        6 => Value::Real(rng.range(0, 1000) as f64 / 8.0 - 50.0),
        7 | 8 => Value::Text(short(
            rng,
            &["a", "b", "ab", "\u{e9}", "\u{1f600}", "A", " "],
        )),
        9 | 10 => {
            let len = if long && rng.one_in(4) {
                rng.range(100, 3000) as usize
            } else {
                rng.below(5) as usize
            };
            Value::Blob(
                (0..len)
                    .map(|_| rng.pick(&[0u8, 1, 0x7f, 0x80, 0xff]))
                    .collect(),
            )
        }
        _ => Value::Text(String::new()),
    }
}

/// A random table: a declared type, a mix of classes (some tables hold only 0 and 1, like
/// a flag), ties, and rowids in any order, negatives included.
fn random_case(rng: &mut SplitMix64) -> Case {
    let decl = rng.pick(&["", "INTEGER", "REAL", "TEXT", "NUMERIC", "BLOB", "BOOLEAN"]);
    let rows = if rng.one_in(20) {
        rng.range(100, 600)
    } else {
        rng.below(41)
    } as usize;
    let flags = rng.one_in(4);
    let long = rng.one_in(5);
    let mut seen: Vec<Value> = Vec::new();
    let mut rowids = std::collections::BTreeSet::new();
    let mut out = Vec::with_capacity(rows);
    while out.len() < rows {
        let rowid = if rng.one_in(10) {
            rng.range(0, 1 << 40) as i64 - (1 << 39)
        } else {
            rng.below(4 * rows as u64 + 8) as i64
        };
        if !rowids.insert(rowid) {
            continue;
        }
        let v = if flags {
            Value::Integer(rng.below(2) as i64)
        } else if !seen.is_empty() && rng.one_in(4) {
            seen[rng.below(seen.len() as u64) as usize].clone()
        } else {
            value(rng, long)
        };
        seen.push(v.clone());
        out.push((rowid, v));
    }
    Case { decl, rows: out }
}

/// 10,000 random tables, in 200 databases of 50 tables, over page sizes from 512 to
/// 65536 and the three text encodings.
#[test]
fn random_tables_equal_what_sqlite_writes() {
    let mut rng = SplitMix64::new(0x5a17_a6e0_b01d);
    for batch in 0..200 {
        let page_size = rng.pick(&[512u32, 1024, 4096, 65536]);
        let encoding = rng.pick(&["UTF-8", "UTF-16le", "UTF-16be"]);
        let cases: Vec<Case> = (0..50).map(|_| random_case(&mut rng)).collect();
        // The mode from a stream of its own: the tables are those before it was drawn.
        let vacuum = SplitMix64::new(batch).pick(&["NONE", "FULL", "INCREMENTAL"]);
        check_batch_in(
            &format!("random-{batch}"),
            page_size,
            encoding,
            vacuum,
            &cases,
        );
    }
}

/// Every row count from 1 to `max`, for rows of one size: one table per count, each
/// holding the first rows of one sequence, so that every leaf and interior boundary of the
/// table is met, where the last row fills a page exactly included.
fn sweep(name: &str, page_size: u32, max: usize, make: impl Fn(&mut SplitMix64, usize) -> Value) {
    sweep_in(name, page_size, "NONE", max, make);
}

/// `sweep`, in auto-vacuum mode `vacuum`.
fn sweep_in(
    name: &str,
    page_size: u32,
    vacuum: &str,
    max: usize,
    make: impl Fn(&mut SplitMix64, usize) -> Value,
) {
    let mut rng = SplitMix64::new(max as u64 ^ 0xb0_0da7);
    let values: Vec<Value> = (0..max).map(|i| make(&mut rng, i)).collect();
    let cases: Vec<Case> = (1..=max).map(|count| first_rows(&values, count)).collect();
    for (chunk, cases) in cases.chunks(250).enumerate() {
        check_batch_in(
            &format!("{name}-{chunk}"),
            page_size,
            "UTF-8",
            vacuum,
            cases,
        );
    }
}

/// A table of the first `count` of `values`, under rowids 1 to `count`.
fn first_rows(values: &[Value], count: usize) -> Case {
    Case {
        decl: "",
        rows: values
            .iter()
            .take(count)
            .enumerate()
            .map(|(i, v)| (i as i64 + 1, v.clone()))
            .collect(),
    }
}

/// Row counts across the first interior split, for one-byte values (flags).
#[test]
fn every_row_count_of_small_rows() {
    sweep("flags", 512, 1500, |rng, _| {
        Value::Integer(rng.below(2) as i64)
    });
    sweep("ints", 512, 600, |rng, _| {
        Value::Integer(rng.next_u64() as i64)
    });
}

/// Row counts of text values around the largest payload a table leaf keeps whole (477
/// bytes on a 512-byte page: a record of 473-byte text), short of it and past it.
#[test]
fn every_row_count_of_rows_near_the_overflow_threshold() {
    for len in [0usize, 1, 10, 40, 150, 470, 472, 473, 474, 476, 500] {
        sweep(&format!("text{len}"), 512, 300, |rng, i| {
            let mut s = format!("{i:08}");
            s.extend((0..len).map(|_| rng.pick(&['a', 'b'])));
            Value::Text(s.get(..len).unwrap_or(&s).to_string())
        });
    }
}

/// Row `i`'s text of `len` characters after its number: spills to overflow pages past a
/// page's worth.
fn long_text(len: usize) -> impl Fn(&mut SplitMix64, usize) -> Value {
    move |rng, i| {
        let mut s = format!("{i:08}");
        s.extend((0..len).map(|_| rng.pick(&['x', 'y'])));
        Value::Text(s)
    }
}

/// Row counts of values that each spill over several overflow pages, on small and usual
/// page sizes (the 3,000-character rows of the issue that once ended in a panic).
#[test]
fn every_row_count_of_rows_that_overflow() {
    for (page_size, len) in [(512u32, 400usize), (512, 3000), (4096, 3000), (4096, 5000)] {
        sweep(
            &format!("long{page_size}-{len}"),
            page_size,
            100,
            long_text(len),
        );
    }
}

/// Auto-vacuum outputs: every page written has its entry in the pointer map, whose pages
/// (every 103rd on a 512-byte page) the writer skips; a map page is written once each
/// page it describes has its parent, which for an overflow chain's first page is the
/// leaf written after it, and for a leaf the interior page written after two pages'
/// worth of its siblings.
#[test]
fn pointer_maps_of_every_row_count() {
    sweep_in("map-flags", 512, "FULL", 600, |rng, _| {
        Value::Integer(rng.below(2) as i64)
    });
    for (page_size, len, vacuum) in [(512u32, 3000usize, "INCREMENTAL"), (4096, 5000, "FULL")] {
        let name = format!("map-long{page_size}-{len}");
        sweep_in(&name, page_size, vacuum, 100, long_text(len));
    }
}

/// Tables three and four levels deep, whose interior levels are written while the leaves
/// are: row counts around the first interior page written early (a level holds two
/// pages' children, 68 on a 512-byte page, before it writes one), and around the first
/// page of the level above written early.
#[test]
fn deep_tables_whose_interior_pages_are_written_as_the_leaves_are() {
    let make = |rng: &mut SplitMix64, i: usize| {
        let mut s = format!("{i:08}");
        s.extend((0..92).map(|_| rng.pick(&['p', 'q'])));
        Value::Text(s)
    };
    let mut rng = SplitMix64::new(0xdee9);
    let values: Vec<Value> = (0..40_000).map(|i| make(&mut rng, i)).collect();
    let case = |count: usize| first_rows(&values, count);
    // Four 100-byte rows a leaf: 69 leaves, the first level's first page written early,
    // are some 276 rows; 69 pages of that level, the second level's first, some 9,500.
    let near_first: Vec<Case> = (250..=330).map(case).collect();
    check_batch("deep-first", 512, "UTF-8", &near_first);
    let near_second: Vec<Case> = (9_200..=9_700)
        .step_by(25)
        .chain([19_000, 40_000])
        .map(case)
        .collect();
    check_batch("deep-second", 512, "UTF-8", &near_second);
    // In an auto-vacuum output, the map pages of a level's pages wait for the level above.
    check_batch_in("deep-map-first", 512, "UTF-8", "FULL", &near_first);
    let held = check_batch_in("deep-map-second", 512, "UTF-8", "INCREMENTAL", &near_second);
    // Memory: the map pages of the pages waiting on each level (some 30 at most here,
    // where 40,000 rows take 12,000 pages and 650 map pages are written before the end),
    // not one for every page of the file.
    let (most, written) = held.unwrap();
    assert!(
        most <= 40 && written >= 600,
        "{most} map pages held at once, {written} written before the end"
    );
}

// Unit tests of the writer's own parts.
#[test]
fn varints_round_trip_through_the_reader() {
    for v in [
        0u64,
        1,
        127,
        128,
        16383,
        16384,
        1 << 56,
        (1 << 56) - 1,
        u64::MAX,
        i64::MAX as u64,
    ] {
        let mut out = Vec::new();
        put_varint(&mut out, v);
        assert_eq!(
            pager::varint::read_varint(&out),
            Some((v, out.len())),
            "{v}"
        );
        assert_eq!(out.len(), varint_len(v));
    }
}
