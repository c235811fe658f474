//! Record carving scored against the Nemetz corpus: `salvage recover --carve` must return
//! the removed rows whose records are still in the file, and little else.
//!
//! The oracle ([`removed_rows_in_file`]) rebuilds each removed key row as the record
//! SQLite stored ([`nemetz::record`]) and looks for its body in the database file. The
//! scorer recovers every case in-process as `salvage recover SRC -o DEST --carve
//! --allow-partial` does and compares the output's `salvage_carved` table with the key:
//!
//! ```text
//! salvage_carved(tbl, source, page, offset, confidence, rowid, nfield, c0, c1, ...)
//! ```
//!
//! * recall: removed rows present in the file that some carved row matches, over the
//!   removed rows present in the file;
//! * precision: carved rows that match a removed row of their table (of any key table
//!   when `tbl` is NULL), or are the `sqlite_schema` record of a table the key lists (a
//!   dropped table's schema row), over all carved rows;
//! * live re-read: carved rows equal to a live row of the table: a live record read again
//!   as deleted. They are false positives, counted apart as well.
//!
//! A carved row matches a key row when `nfield` is the table's column count and each of
//! `c0..` matches the key's value ([`nemetz::cell_matches`]). The corpus has no
//! `ALTER TABLE ADD COLUMN`, so a record is never legitimately shorter than its table.
//! The rowid-alias column holds NULL in a record: the carver may fill in the rowid or
//! leave it NULL, so a NULL there is compared with the carved rowid when that is known
//! and accepted when it is not. The key holds no older versions of updated rows (only
//! 05-02 updates a row, and its key lists the new version only), so "matches a removed
//! row" is all a carved row can be credited with.

use std::collections::BTreeMap;
use std::path::Path;

use recovery::{Outcome, RecoverOptions};

use crate::nemetz::record::{presence, stored_records, Presence, RecordFormat};
use crate::nemetz::{self, Actual, Case, KeyRow, KeyTable};
use crate::{Scratch, TestResult};

/// What carving reaches on the corpus today: recall 0.959 (257 of 268; the misses are 3 of
/// 0D's overwritten records and the 8 of 0B below), precision 0.971 (265 of 273: 0B's
/// tables were dropped and a new table took their page, with no trace of the dropped
/// table's schema row left, so the old rows in its free space are attributed to the new
/// table). The floors are the issue's targets, which no change may fall below.
const RECALL_FLOOR: f64 = 0.95;
const PRECISION_FLOOR: f64 = 0.97;
/// Of the removed rows still in the file, the share carved into their own table (a row
/// carved into no table is matched in any, and counts for recall, not here).
const OWN_TABLE_FLOOR: f64 = 0.95;

/// A removed key row and whether its record is still in the database file.
struct RemovedRow<'a> {
    /// Index into [`Case::tables`].
    table: usize,
    row: &'a KeyRow,
    presence: Presence,
}

/// Every removed row of `case` ([`nemetz::removed_rows`]), with where its record is in
/// `file`. `rowid_aliases` as [`nemetz::rowid_aliases`] gives them.
fn removed_rows_in_file<'a>(
    case: &'a Case,
    file: &[u8],
    rowid_aliases: &[Option<usize>],
) -> Vec<RemovedRow<'a>> {
    let format = RecordFormat::of(file);
    let mut out = Vec::new();
    for (table, t) in case.tables.iter().enumerate() {
        for row in nemetz::removed_rows(case, t) {
            let readings = stored_records(t, row, rowid_aliases[table], format);
            out.push(RemovedRow {
                table,
                row,
                presence: presence(file, &readings),
            });
        }
    }
    out
}

/// The oracle's figures for one category folder (or the whole corpus).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct OracleTally {
    cases: usize,
    removed: usize,
    /// Removed rows whose body is in the file.
    present: usize,
    /// Of those, rows whose record header is in front of the body as well.
    whole_record: usize,
    /// Removed rows with a body too short to tell ([`nemetz::record::MIN_TELLING_BODY`]).
    too_short: usize,
}

impl OracleTally {
    fn add(&mut self, rows: &[RemovedRow]) {
        self.cases += 1;
        for r in rows {
            self.removed += 1;
            match r.presence {
                Presence::WholeRecord { .. } => {
                    self.present += 1;
                    self.whole_record += 1;
                }
                Presence::BodyOnly { .. } => self.present += 1,
                Presence::TooShort => self.too_short += 1,
                Presence::Absent => {}
            }
        }
    }
}

impl std::ops::Add for OracleTally {
    type Output = OracleTally;

    fn add(self, b: OracleTally) -> OracleTally {
        OracleTally {
            cases: self.cases + b.cases,
            removed: self.removed + b.removed,
            present: self.present + b.present,
            whole_record: self.whole_record + b.whole_record,
            too_short: self.too_short + b.too_short,
        }
    }
}

/// The removed rows of the corpus and how many of them are still in their files, as
/// measured when this test was written (the rows' records rebuilt by
/// `nemetz::record`, checked by hand against the bytes of 0A-01, 0C-01 and 0C-06).
///
/// * 1427 removed rows = 209 flagged deleted + 70 alive in the ten dropped tables of 0A
///   and 0B + 1148 rows 09-01's script deletes but its key lists alive. These are the
///   issue's "1,427 deleted rows".
/// * 268 have their record body in the file (the issue's "about 270"), 115 of them with
///   the record header intact in front of it. None is shorter than four bytes. Each body
///   occurs exactly once in its file and equals the body of no live row (checked once with
///   a script, not asserted here), so "present" never means "a live row looks the same".
/// * Where they lie (by a page walk done once with a script, not asserted here): 0A's 100
///   in the freelist pages the dropped tables became (70 on trunk pages, 30 on leaf
///   pages); 0C's 101 in freeblocks (68) and unallocated space (33); 09-01's 36 in
///   freeblocks (20) and unallocated space (16); 0D's 19 in freeblocks (14) and
///   unallocated space (5); 0B's 8 in unallocated space; 0E's 3 on a freelist leaf page
///   (2) and in unallocated space (1); 07-03's one in a freeblock. The other 26 rows of 0D
///   and 12 of 0B were overwritten by later inserts. Of 0E's other 9, 2 spill onto
///   overflow pages: their local part and most of the overflow part are still there, but
///   not as one run of bytes (a carver that follows the chain can return them; the scorer
///   counts such rows "beyond oracle"); the 7 others are gone but for a few bytes, with no
///   later insert (presumably overwritten as SQLite rebalanced the tree: each filled
///   most of a page). 1112 of 09-01's 1148 went when `auto_vacuum=FULL` moved pages
///   and truncated the file.
/// * Every script that deletes or drops turns `secure_delete` off first, so nothing
///   removed was wiped by it. The only other change, 05-02's `UPDATE`, runs with
///   `secure_delete` on: the row's old version is zeroed, and the key does not list it.
const ORACLE_BY_CATEGORY: [(&str, OracleTally); 7] = [
    ("07", tally(4, 1, 1, 0)),
    ("09", tally(1, 1148, 36, 3)),
    ("0A", tally(5, 100, 100, 75)),
    ("0B", tally(2, 20, 8, 8)),
    ("0C", tally(10, 101, 101, 24)),
    ("0D", tally(8, 45, 19, 2)),
    ("0E", tally(2, 12, 3, 3)),
];

const fn tally(cases: usize, removed: usize, present: usize, whole_record: usize) -> OracleTally {
    OracleTally {
        cases,
        removed,
        present,
        whole_record,
        too_short: 0,
    }
}

#[test]
fn the_oracle_finds_the_deleted_rows_still_in_the_file() -> TestResult {
    let mut by_category: BTreeMap<String, OracleTally> = BTreeMap::new();
    for case in nemetz::all() {
        let file = std::fs::read(&case.db_path)?;
        let rows = removed_rows_in_file(case, &file, &nemetz::rowid_aliases(case));
        by_category
            .entry(case.folder().to_string())
            .or_default()
            .add(&rows);
    }
    eprintln!("removed rows of the Nemetz corpus still in their files (the carving oracle):");
    eprintln!(
        "{:<8} {:>5} {:>7} {:>7} {:>12} {:>9}",
        "category", "cases", "removed", "present", "whole record", "too short"
    );
    let total = by_category
        .values()
        .fold(OracleTally::default(), |a, &b| a + b);
    for (name, t) in by_category.iter().chain([(&"all".to_string(), &total)]) {
        eprintln!(
            "{:<8} {:>5} {:>7} {:>7} {:>12} {:>9}",
            name, t.cases, t.removed, t.present, t.whole_record, t.too_short
        );
    }

    assert_eq!(
        (
            total.cases,
            total.removed,
            total.present,
            total.whole_record,
            total.too_short
        ),
        (77, 1427, 268, 115, 0)
    );
    let with_removed_rows: Vec<(&str, OracleTally)> = by_category
        .iter()
        .filter(|(_, t)| t.removed > 0)
        .map(|(name, t)| (name.as_str(), *t))
        .collect();
    assert_eq!(with_removed_rows, ORACLE_BY_CATEGORY);
    Ok(())
}

/// One row of the output's `salvage_carved` table.
#[derive(Debug)]
struct CarvedRow {
    tbl: Option<String>,
    source: String,
    rowid: Option<i64>,
    nfield: usize,
    /// `c0..`: as many as `salvage_carved` has columns for, the ones past `nfield` NULL.
    values: Vec<Actual>,
}

/// What became of one carved row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    /// It matches a removed row of its table.
    Removed,
    /// A `sqlite_schema` record of a table the key lists (a dropped table's schema row,
    /// the evidence its shape was carved by): true, though no key row.
    SchemaRow,
    /// It equals a live row of its table: a false positive.
    LiveReread,
    /// `tbl` names a table the key does not list (a shadow table, `sqlite_schema`, an
    /// index): nothing to check it against, so it counts as unmatched.
    OutsideKey,
    /// It matches nothing.
    Unmatched,
}

/// Recovers SRC into DEST in-process, as `salvage recover SRC -o DEST --carve
/// --allow-partial` does, and reads `salvage_carved` from the output.
fn carve(case: &Case, dest: &Path) -> Result<Vec<CarvedRow>, Box<dyn std::error::Error>> {
    let options = RecoverOptions {
        carve: true,
        ..crate::allow_partial(&case.db_path, dest)
    };
    let done = recovery::recover(&options, &recovery::Quiet)?;
    assert!(
        matches!(done.outcome, Outcome::Complete | Outcome::PartialCommitted),
        "{}: recover --carve ended {:?}: {:?}",
        case.id,
        done.outcome,
        done.report.evidence.loss
    );
    let conn = rusqlite::Connection::open(dest)?;
    let mut stmt = conn
        .prepare("SELECT * FROM salvage_carved")
        .map_err(|e| format!("{}: no salvage_carved table in the output: {e}", case.id))?;
    let names: Vec<String> = stmt.column_names().map(str::to_string).collect();
    let column = |name: &str| {
        names
            .iter()
            .position(|n| n == name)
            .ok_or_else(|| format!("{}: salvage_carved has no column {name}", case.id))
    };
    let (tbl, source, rowid, nfield) = (
        column("tbl")?,
        column("source")?,
        column("rowid")?,
        column("nfield")?,
    );
    let values: Vec<usize> = (0..)
        .map_while(|i| names.iter().position(|n| *n == format!("c{i}")))
        .collect();
    let rows = stmt
        .query_map([], |r| {
            Ok(CarvedRow {
                tbl: r.get(tbl)?,
                source: r.get(source)?,
                rowid: r.get(rowid)?,
                nfield: r.get::<_, i64>(nfield)? as usize,
                values: values
                    .iter()
                    .map(|&i| r.get_ref(i).map(actual))
                    .collect::<rusqlite::Result<_>>()?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

fn actual(v: rusqlite::types::ValueRef) -> Actual {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Null => Actual::Null,
        ValueRef::Integer(i) => Actual::Integer(i),
        ValueRef::Real(r) => Actual::Real(r),
        ValueRef::Text(t) => Actual::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Actual::Blob(b.to_vec()),
    }
}

/// Does `carved` hold the key row `key` of `t` (see the module doc)?
fn carved_matches(
    case: &Case,
    t: &KeyTable,
    rowid_alias: Option<usize>,
    key: &KeyRow,
    carved: &CarvedRow,
) -> bool {
    carved.nfield == t.columns.len()
        && carved.values.len() >= key.values.len()
        && key
            .values
            .iter()
            .zip(&carved.values)
            .enumerate()
            .all(|(i, (k, a))| {
                if Some(i) == rowid_alias && *a == Actual::Null {
                    return carved.rowid.is_none_or(|r| k.matches(&Actual::Integer(r)));
                }
                nemetz::cell_matches(case, t, i, k, a)
            })
}

/// Judges one carved row of `case` against the key, and marks in `recovered` the rows of
/// `removed` it matches.
fn judge(
    case: &Case,
    rowid_aliases: &[Option<usize>],
    removed: &[RemovedRow],
    carved: &CarvedRow,
    recovered: &mut [bool],
) -> Verdict {
    if carved.tbl.as_deref() == Some("sqlite_schema") {
        let names_key_table = matches!(
            carved.values.as_slice(),
            [Actual::Text(kind), Actual::Text(name), ..]
                if kind == "table" && case.tables.iter().any(|t| t.name == *name)
        );
        return if names_key_table {
            Verdict::SchemaRow
        } else {
            Verdict::OutsideKey
        };
    }
    // The tables the carved row may belong to: its own, or any when unknown.
    let tables: Vec<usize> = match &carved.tbl {
        Some(name) => case
            .tables
            .iter()
            .position(|t| t.name == *name)
            .into_iter()
            .collect(),
        None => (0..case.tables.len()).collect(),
    };
    if tables.is_empty() {
        return Verdict::OutsideKey;
    }
    let matches = |table: usize, row: &KeyRow| {
        let t = &case.tables[table];
        tables.contains(&table) && carved_matches(case, t, rowid_aliases[table], row, carved)
    };
    let mut verdict = Verdict::Unmatched;
    for (r, found) in removed.iter().zip(recovered.iter_mut()) {
        if matches(r.table, r.row) {
            *found = true;
            verdict = Verdict::Removed;
        }
    }
    let live = |&table: &usize| {
        nemetz::readable_live_rows(case, &case.tables[table]).any(|row| matches(table, row))
    };
    if verdict == Verdict::Unmatched && tables.iter().any(live) {
        verdict = Verdict::LiveReread;
    }
    verdict
}

/// The scorer's figures for one category folder (or the whole corpus).
#[derive(Clone, Copy, Debug, Default)]
struct Score {
    oracle: OracleTally,
    carved: usize,
    /// Carved rows that match a removed row.
    matched: usize,
    /// Of those, rows carved into no table (`tbl` NULL): matched in any.
    unplaced: usize,
    live_reread: usize,
    outside_key: usize,
    /// Present removed rows some carved row matches.
    recalled: usize,
    /// Removed rows the oracle did not find in the file but a carved row matches.
    recalled_beyond_oracle: usize,
}

impl Score {
    fn recall(&self) -> Option<f64> {
        (self.oracle.present > 0).then(|| self.recalled as f64 / self.oracle.present as f64)
    }

    fn precision(&self) -> Option<f64> {
        (self.carved > 0).then(|| self.matched as f64 / self.carved as f64)
    }
}

impl std::ops::Add for Score {
    type Output = Score;

    fn add(self, b: Score) -> Score {
        Score {
            oracle: self.oracle + b.oracle,
            carved: self.carved + b.carved,
            matched: self.matched + b.matched,
            unplaced: self.unplaced + b.unplaced,
            live_reread: self.live_reread + b.live_reread,
            outside_key: self.outside_key + b.outside_key,
            recalled: self.recalled + b.recalled,
            recalled_beyond_oracle: self.recalled_beyond_oracle + b.recalled_beyond_oracle,
        }
    }
}

fn ratio(r: Option<f64>) -> String {
    r.map_or("-".to_string(), |r| format!("{r:.3}"))
}

#[test]
fn carving_holds_its_recall_and_precision_on_the_corpus() -> TestResult {
    let scratch = Scratch::new("carving");
    let mut by_category: BTreeMap<String, Score> = BTreeMap::new();
    let mut by_source: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    // Examples for the failure message: present rows missed, and carved rows that are wrong.
    let mut missed: Vec<String> = Vec::new();
    let mut wrong: Vec<String> = Vec::new();
    for case in nemetz::all() {
        let file = std::fs::read(&case.db_path)?;
        let aliases = nemetz::rowid_aliases(case);
        let removed = removed_rows_in_file(case, &file, &aliases);
        let dest = scratch.path(&format!("{}.db", case.id));
        let carved = carve(case, &dest)?;

        let score = by_category.entry(case.folder().to_string()).or_default();
        score.oracle.add(&removed);
        let mut recovered = vec![false; removed.len()];
        for c in &carved {
            let verdict = judge(case, &aliases, &removed, c, &mut recovered);
            score.carved += 1;
            let source = by_source.entry(c.source.clone()).or_default();
            source.0 += 1;
            match verdict {
                Verdict::Removed | Verdict::SchemaRow => {
                    score.matched += 1;
                    score.unplaced += usize::from(c.tbl.is_none());
                    source.1 += 1;
                }
                Verdict::LiveReread => score.live_reread += 1,
                Verdict::OutsideKey => score.outside_key += 1,
                Verdict::Unmatched => {}
            }
            if !matches!(verdict, Verdict::Removed | Verdict::SchemaRow) && wrong.len() < 20 {
                wrong.push(format!("{} {verdict:?}: {c:?}", case.id));
            }
        }
        for (r, found) in removed.iter().zip(&recovered) {
            match (found, r.presence.is_present()) {
                (true, true) => score.recalled += 1,
                (true, false) => score.recalled_beyond_oracle += 1,
                (false, true) if missed.len() < 20 => missed.push(format!(
                    "{} {:?} {:?}: {:?}",
                    case.id, case.tables[r.table].name, r.presence, r.row.values
                )),
                (false, _) => {}
            }
        }
        let _ = std::fs::remove_file(&dest);
    }

    let total = by_category.values().fold(Score::default(), |a, &b| a + b);
    eprintln!("carving the Nemetz corpus (salvage recover --carve):");
    eprintln!(
        "{:<8} {:>5} {:>7} {:>7} {:>6} {:>7} {:>6} {:>9} {:>12} {:>11} {:>13}",
        "category",
        "cases",
        "removed",
        "present",
        "carved",
        "matched",
        "recall",
        "precision",
        "live re-read",
        "outside key",
        "beyond oracle"
    );
    for (name, s) in by_category.iter().chain([(&"all".to_string(), &total)]) {
        eprintln!(
            "{:<8} {:>5} {:>7} {:>7} {:>6} {:>7} {:>6} {:>9} {:>12} {:>11} {:>13}",
            name,
            s.oracle.cases,
            s.oracle.removed,
            s.oracle.present,
            s.carved,
            s.matched,
            ratio(s.recall()),
            ratio(s.precision()),
            s.live_reread,
            s.outside_key,
            s.recalled_beyond_oracle,
        );
    }
    eprintln!(
        "carved into their own table: {} of {} matched rows ({} in no table)",
        total.matched - total.unplaced,
        total.matched,
        total.unplaced
    );
    for (source, (carved, matched)) in &by_source {
        eprintln!("source {source}: {carved} carved, {matched} matched");
    }

    let recall = total.recall().unwrap_or(0.0);
    let precision = total.precision().unwrap_or(0.0);
    let own = (total.matched - total.unplaced) as f64 / total.oracle.present.max(1) as f64;
    assert!(
        recall >= RECALL_FLOOR
            && precision >= PRECISION_FLOOR
            && own >= OWN_TABLE_FLOOR
            && total.live_reread == 0,
        "carving fell below its floors: recall {recall:.3} (floor {RECALL_FLOOR}), precision \
         {precision:.3} (floor {PRECISION_FLOOR}), into their own table {own:.3} (floor \
         {OWN_TABLE_FLOOR}), live rows re-read {} (must be 0)\n\
         present rows missed (first 20):\n  {}\ncarved rows not matched (first 20):\n  {}",
        total.live_reread,
        missed.join("\n  "),
        wrong.join("\n  ")
    );
    Ok(())
}
