//! The output checked before it is committed: SQLite's own checks, and every table
//! holding exactly the rows the run wrote into it.
//!
//! `PRAGMA quick_check` reads every page of the output: every b-tree's structure, its
//! cells and their order, overflow chains, the freelist, every page used once, NOT NULL
//! columns. What it leaves out is comparing each index with its table, which costs a
//! search per row and index: every index of the output is one SQLite built itself
//! (CREATE INDEX after the load, or kept up by its own inserts), which holds what it read
//! from the table. The bulk writer writes tables only.

use crate::base::output::{quote, Output};
use crate::base::sqlite::sqlite_check;
use crate::recover::ledger::Ledger;
use crate::recover::tables::Tables;

/// Checks the output; records what it was checked against in the ledger. With
/// `integrity_check`, SQLite's full check (every index compared with its table too), for
/// an output an application is to use in place of its database.
pub fn verify(out: &Output, tables: &Tables, ledger: &mut Ledger, integrity_check: bool) -> bool {
    // Every page is read once: a small cache recycles its pages instead of allocating
    // (and faulting in) new memory for each.
    let _ = out.conn.pragma_update(None, "cache_size", -2048);
    let pragma = match integrity_check {
        true => "PRAGMA integrity_check",
        false => "PRAGMA quick_check",
    };
    let ok = check(out, pragma, ledger);
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

/// Runs `quick_check`; records its answer. Whether it found nothing wrong with the output.
///
/// A TEXT value in a numeric column that this SQLite would have converted is no fault of
/// the output: every value SQL wrote had the column's affinity applied, so such a value
/// is the file's bytes as the bulk writer copies them, as an older SQLite stored them.
/// The run's own check (`affinity_never_stores`) already took out what SQLite never
/// stored; these stay, as the file holds them, and a warning names their columns.
fn check(out: &Output, pragma: &str, ledger: &mut Ledger) -> bool {
    let answer = match sqlite_check(&out.conn, pragma) {
        Ok(answer) => answer,
        Err(e) => {
            ledger.verified.push(format!("{pragma} could not run: {e}"));
            return false;
        }
    };
    // A full-text table made over a stand-in tokenizer holds the index the application's
    // tokenizer built, copied as stored: SQLite's check of it tokenizes the text with the
    // stand-in, which splits words otherwise, and so finds the index wrong. Left out.
    let mut answer = answer;
    let stand_ins = crate::base::sqlite::stand_in_full_text(&out.conn);
    for line in answer.leave_out_full_text(&stand_ins) {
        ledger.verified.push(format!(
            "{pragma} on the output: \"{line}\" left out: the index was built by the application's tokenizer, the check used its stand-in"
        ));
    }
    if !answer.faults.is_empty() {
        ledger.verified.push(format!(
            "{pragma} on the output: {}",
            answer.faults.join("; ")
        ));
        return false;
    }
    if answer.convertible.is_empty() {
        ledger.verified.push(format!("{pragma} on the output: ok"));
        return true;
    }
    let kept = reconstruct::loss::N(answer.lines.len() as u64, "text value");
    ledger.verified.push(format!(
        "{pragma} on the output: ok but for {kept} kept as the file holds them"
    ));
    ledger.warnings.push(format!(
        "{kept} in numeric columns ({}) would be converted to numbers by this SQLite on the way in; the file holds them as text, as an older SQLite stored them, and so does the output",
        answer.convertible.join(", ")
    ));
    true
}
