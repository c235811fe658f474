//! The output checked before it is committed: SQLite's own checks, and every table
//! holding exactly the rows the run wrote into it.
//!
//! `PRAGMA quick_check` reads every page of the output: every b-tree's structure, its
//! cells and their order, overflow chains, the freelist, every page used once, NOT NULL
//! columns. What it leaves out is comparing each index with its table, which costs a
//! search per row and index: every index of the output is one SQLite built itself
//! (CREATE INDEX after the load, or kept up by its own inserts), which holds what it read
//! from the table. The bulk writer writes tables only.

use crate::ledger::Ledger;
use crate::output::{quote, Output};
use crate::tables::Tables;

/// Checks the output; records what it was checked against in the ledger.
pub fn verify(out: &Output, tables: &Tables, ledger: &mut Ledger) -> bool {
    // Every page is read once: a small cache recycles its pages instead of allocating
    // (and faulting in) new memory for each.
    let _ = out.conn.pragma_update(None, "cache_size", -2048);
    let ok = check(out, "PRAGMA quick_check", ledger);
    let mut counts_ok = true;
    let mut filled = 0;
    for (t, _) in tables.filled() {
        filled += 1;
        let n: Result<i64, _> = out.conn.query_row(
            &format!("SELECT count(*) FROM {}", quote(&t.name)),
            [],
            |r| r.get(0),
        );
        let written = t.loss.held();
        let n = n.ok();
        if n != i64::try_from(written).ok() {
            counts_ok = false;
            let held = n.map_or("an unknown number of".to_string(), |n| n.to_string());
            ledger.verified.push(format!(
                "table `{}` holds {held} rows; {written} were written",
                t.name
            ));
        }
    }
    if counts_ok {
        ledger.verified.push(format!(
            "every table holds exactly the rows written ({filled} tables)"
        ));
    }
    ok && counts_ok
}

/// How many problems `quick_check` may list: a list this long may have left others out.
pub(crate) const CHECK_LINES: usize = 1000;

/// The start of `quick_check`'s line for a TEXT value in a column of numeric affinity
/// that this SQLite would convert on the way in.
const CONVERTIBLE_TEXT: &str = "TEXT value in ";

/// `quick_check`'s answer split: the columns (`table.column`, each once) holding text
/// this SQLite would convert, which an older SQLite stored as text and which are no
/// fault of the file's structure; and every other line, `None` when the list may have
/// left lines out (it reached [`CHECK_LINES`]).
pub(crate) fn convertible_text_and_faults(lines: &[String]) -> (Vec<&str>, Option<Vec<&str>>) {
    let mut columns: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix(CONVERTIBLE_TEXT))
        .collect();
    columns.sort_unstable();
    columns.dedup();
    let faults = (lines.len() < CHECK_LINES).then(|| {
        lines
            .iter()
            .map(String::as_str)
            .filter(|l| *l != "ok" && !l.starts_with(CONVERTIBLE_TEXT))
            .collect()
    });
    (columns, faults)
}

/// Runs `quick_check`; records its answer. Whether it found nothing wrong with the output.
///
/// A TEXT value in a numeric column that this SQLite would have converted is no fault of
/// the output: every value SQL wrote had the column's affinity applied, so such a value
/// is the file's bytes as the bulk writer copies them, as an older SQLite stored them
/// (text like `'1\0'` was kept as text before 3.44 converted it). The run's own check
/// (`affinity_never_stores`) already took out what SQLite never stored; these stay, as
/// the file holds them, and a warning names their columns.
fn check(out: &Output, pragma: &str, ledger: &mut Ledger) -> bool {
    let lines: Result<Vec<String>, _> = out
        .conn
        .prepare(&format!("{pragma}({CHECK_LINES})"))
        .and_then(|mut s| s.query_map([], |r| r.get::<_, String>(0))?.collect());
    let lines = match lines {
        Ok(lines) => lines,
        Err(e) => {
            ledger.verified.push(format!("{pragma} could not run: {e}"));
            return false;
        }
    };
    if lines == ["ok"] {
        ledger.verified.push(format!("{pragma} on the output: ok"));
        return true;
    }
    let (columns, faults) = convertible_text_and_faults(&lines);
    if faults.is_some_and(|f| f.is_empty()) {
        let kept = lines.len() as u64;
        ledger.verified.push(format!(
            "{pragma} on the output: ok but for {} kept as the file holds them",
            reconstruct::loss::N(kept, "text value")
        ));
        ledger.warnings.push(format!(
            "{} in numeric columns ({}) would be converted to numbers by this SQLite on the way in; the file holds them as text, as an older SQLite stored them, and so does the output",
            reconstruct::loss::N(kept, "text value"),
            columns.join(", ")
        ));
        return true;
    }
    ledger
        .verified
        .push(format!("{pragma} on the output: {}", lines.join("; ")));
    false
}
