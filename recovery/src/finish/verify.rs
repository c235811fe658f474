//! The output checked before it is committed: SQLite's own `PRAGMA integrity_check`, and
//! every table holding exactly the rows the run wrote into it.

use crate::ledger::Ledger;
use crate::output::{quote, Output};
use crate::tables::Tables;

/// Checks the output; records what it was checked against in the ledger.
pub fn verify(out: &Output, tables: &Tables, ledger: &mut Ledger) -> bool {
    // Every page is read once: a small cache recycles its pages instead of allocating
    // (and faulting in) new memory for each.
    let _ = out.conn.pragma_update(None, "cache_size", -2048);
    let check: Result<Vec<String>, _> = out
        .conn
        .prepare("PRAGMA integrity_check")
        .and_then(|mut s| s.query_map([], |r| r.get::<_, String>(0))?.collect());
    let ok = match check {
        Ok(lines) if lines == ["ok"] => {
            ledger
                .verified
                .push("PRAGMA integrity_check on the output: ok".into());
            true
        }
        Ok(lines) => {
            ledger.verified.push(format!(
                "PRAGMA integrity_check on the output: {}",
                lines.join("; ")
            ));
            false
        }
        Err(e) => {
            ledger
                .verified
                .push(format!("PRAGMA integrity_check could not run: {e}"));
            false
        }
    };
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
