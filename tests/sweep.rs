//! Every damage kind of `fixtures` on every catalog fixture, in-process: no run fails (a
//! refusal is the only other answer, and only where the header leaves nothing to read),
//! a complete outcome has no sign of loss and a partial one has one, the output verifies,
//! and every row in a table of the fixture is that table's row, whole or with fields
//! NULL where damaged. Each healthy fixture recovers complete, row for row.

use std::collections::BTreeMap;

use fixtures::{Damage, Fixture};
use recovery::{Outcome, Quiet, RecoverOptions};

use crate::recover::{assert_no_garbage_in, expected_rows, rows_of};
use crate::{Scratch, TestResult};

/// The damage cases for one fixture, each named, aimed at the fixture's own structure:
/// its largest rowid table (a middle leaf, its interior pages), its two largest tables
/// (swapped roots), any table with overflow pages, its freelist, its header.
fn damage_cases(f: &Fixture) -> Vec<(String, Vec<Damage>)> {
    let mut tables: Vec<&fixtures::Table> = f
        .tables
        .iter()
        .filter(|t| !t.without_rowid && t.name != "sqlite_sequence")
        .collect();
    tables.sort_by_key(|t| std::cmp::Reverse(t.rows.len()));
    let page_size = u32::from_be_bytes([0, 0, f.bytes[16], f.bytes[17]]);
    let page_size = if page_size == 1 { 65536 } else { page_size };
    let pages = (f.bytes.len() as u32) / page_size;
    let mut out: Vec<(String, Vec<Damage>)> = vec![
        ("healthy".into(), vec![]),
        (
            "truncate".into(),
            vec![Damage::TruncateAt(f.bytes.len() as u64 * 2 / 3)],
        ),
        ("header-page-size".into(), vec![Damage::HeaderPageSize(0)]),
        (
            "header-text-encoding".into(),
            vec![Damage::HeaderTextEncoding(0)],
        ),
        (
            "header-database-size".into(),
            vec![Damage::HeaderDatabaseSize(7)],
        ),
        ("freelist-cycle".into(), vec![Damage::FreelistCycle]),
        ("page-one".into(), vec![Damage::ZeroPage(1)]),
    ];
    if let Some(big) = tables.first() {
        let leaves = fixtures::table_pages(&f.bytes, f.roots[&big.name]).leaves;
        let leaf = leaves[leaves.len() / 2];
        let name = &big.name;
        out.extend([
            (format!("zero-page:{name}"), vec![Damage::ZeroPage(leaf)]),
            (
                format!("zero-pages:{name}"),
                vec![Damage::ZeroPages {
                    first: leaf,
                    last: (leaf + 2).min(pages),
                }],
            ),
            (
                format!("random-page:{name}"),
                vec![Damage::RandomPage {
                    page: leaf,
                    seed: 11,
                }],
            ),
            (
                format!("child-pointer-cycle:{name}"),
                vec![Damage::ChildPointerCycle {
                    table: name.clone(),
                }],
            ),
            (
                format!("cell-pointer-out-of-range:{name}"),
                vec![Damage::CellPointerOutOfRange {
                    page: leaf,
                    index: 0,
                }],
            ),
            (
                format!("cell-pointers-shifted:{name}"),
                vec![Damage::CellPointersShifted {
                    page: leaf,
                    seed: 3,
                }],
            ),
            (
                format!("cell-count-zeroed:{name}"),
                vec![Damage::CellCountZeroed(leaf)],
            ),
        ]);
    }
    if let [a, b, ..] = tables.as_slice() {
        out.push((
            format!("root-pages-swapped:{}:{}", a.name, b.name),
            vec![Damage::RootPagesSwapped {
                a: a.name.clone(),
                b: b.name.clone(),
            }],
        ));
    }
    // The first table whose overflow chains the damage can reach.
    for kind in ["overflow-cycle", "overflow-break"] {
        let reachable = f.tables.iter().find_map(|t| {
            let d = match kind {
                "overflow-cycle" => Damage::OverflowCycle {
                    table: t.name.clone(),
                },
                _ => Damage::OverflowBreak {
                    table: t.name.clone(),
                },
            };
            fixtures::apply(&mut f.bytes.clone(), &d).ok().map(|_| d)
        });
        if let Some(d) = reachable {
            out.push((kind.to_string(), vec![d]));
        }
    }
    out
}

/// With `SALVAGE_SWEEP_REPORTS=DIR`, each case's loss report is written to
/// `DIR/NAME.json` without its `run` (times and paths): two builds that must decide alike
/// (a refactor) give byte-identical folders, `diff -r` says where not.
fn dump_report(name: &str, report: &recovery::report::LossReport) -> TestResult {
    let Some(dir) = std::env::var_os("SALVAGE_SWEEP_REPORTS") else {
        return Ok(());
    };
    let mut value = serde_json::to_value(report)?;
    if let Some(o) = value.as_object_mut() {
        o.remove("run");
    }
    let file = name.replace([' ', ':', '/'], "_");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        std::path::Path::new(&dir).join(format!("{file}.json")),
        serde_json::to_string_pretty(&value)?,
    )?;
    Ok(())
}

#[test]
fn every_damage_kind_on_every_fixture() -> TestResult {
    let mut ran = 0;
    let mut bounded = 0;
    let mut applied: BTreeMap<String, u32> = BTreeMap::new();
    let dir = Scratch::new("sweep");
    for f in fixtures::catalog() {
        for (kind, damage) in damage_cases(&f) {
            let name = format!("{} {kind}", f.name);
            let mut bytes = f.bytes.clone();
            if damage
                .iter()
                .any(|d| fixtures::apply(&mut bytes, d).is_err())
            {
                continue; // the fixture has no such structure (no freelist, no interior page)
            }
            *applied
                .entry(kind.split(':').next().unwrap_or("").to_string())
                .or_default() += 1;
            let case = dir.path(&format!("{ran}"));
            std::fs::create_dir_all(&case)?;
            let src = case.join("src.db");
            let dest = case.join("out.db");
            std::fs::write(&src, &bytes)?;
            let mut options = RecoverOptions::new(&src, &dest);
            options.allow_partial = true;
            ran += 1;
            let done = match recovery::recover(&options, &Quiet) {
                Ok(done) => done,
                // Only a header that leaves no page readable may be refused.
                Err(e) if e.is_refusal() && kind.starts_with("page-one") => continue,
                Err(e) => panic!("{name}: {e}"),
            };
            dump_report(&name, &done.report)?;
            let signals = done.signals();
            match done.outcome {
                Outcome::Complete => assert!(signals.is_empty(), "{name}: {signals:?}"),
                Outcome::PartialCommitted => assert!(!signals.is_empty(), "{name}"),
                other => panic!("{name}: {other:?}: {signals:?}"),
            }
            assert!(done.report.source.unchanged, "{name}: the source changed");
            assert_no_garbage_in(&f, &dest, &name);
            // The bounds hold the truth: rows of the source not in their table (partial
            // rows and placeholders are still lost rows).
            bounded += check_bounds(&f, &dest, &done.report, &name);
            // Damage that destroys no row's bytes loses no row: each is in its table.
            let lossless = [
                "header-page-size",
                "header-text-encoding",
                "header-database-size",
                "freelist-cycle",
                "cell-count-zeroed",
                "cell-pointers-shifted",
                "cell-pointer-out-of-range",
                "root-pages-swapped",
            ];
            if lossless.iter().any(|k| kind.starts_with(k)) {
                for t in f
                    .tables
                    .iter()
                    .filter(|t| t.name != "sqlite_sequence" && !t.without_rowid)
                {
                    let got = rows_of(&dest, &t.name, false);
                    let missing: Vec<i64> = expected_rows(&f, &t.name)
                        .into_keys()
                        .filter(|r| !got.contains_key(r))
                        .collect();
                    assert!(
                        missing.is_empty(),
                        "{name} {}: {} rows missing, first {:?}",
                        t.name,
                        missing.len(),
                        missing.first()
                    );
                }
            }
            if kind == "healthy" {
                assert_eq!(done.outcome, Outcome::Complete, "{name}: {signals:?}");
                // SQLite agrees: the file it wrote checks ok.
                assert_eq!(
                    done.report.source.sqlite_check.state,
                    recovery::report::SqliteCheckState::Ok,
                    "{name}: {:?}",
                    done.report.source.sqlite_check
                );
                for t in f.tables.iter().filter(|t| t.name != "sqlite_sequence") {
                    let got = rows_of(&dest, &t.name, t.without_rowid);
                    let want = expected_rows(&f, &t.name);
                    if t.without_rowid {
                        let (g, w): (Vec<_>, Vec<_>) =
                            (got.into_values().collect(), want.into_values().collect());
                        assert_eq!(g.len(), w.len(), "{name} {}", t.name);
                    } else {
                        assert_eq!(got, want, "{name} {}: row for row", t.name);
                    }
                }
            }
            std::fs::remove_dir_all(&case)?;
        }
    }
    // Every kind ran somewhere.
    assert_eq!(applied.len(), 17, "{applied:?}");
    assert!(ran > 250, "{ran} cases");
    assert!(bounded > 100, "{bounded} tables' bounds checked");
    Ok(())
}

/// Each table's `lost_rows` bounds against the rows of the source missing from it;
/// returns how many tables had bounds.
fn check_bounds(
    f: &Fixture,
    dest: &std::path::Path,
    report: &recovery::report::LossReport,
    name: &str,
) -> u32 {
    let mut checked = 0;
    let Ok(conn) = rusqlite::Connection::open(dest) else {
        return 0;
    };
    let registered = crate::recover::rebuilt_rows(dest);
    for t in report.tables.iter() {
        let Some(bounds) = &t.lost_rows else { continue };
        let Some(source) = f
            .tables
            .iter()
            .find(|s| s.name == t.name && !s.without_rowid)
        else {
            continue;
        };
        let present: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?1",
                [&t.name],
                |r| r.get(0),
            )
            .unwrap_or(0);
        if present == 0 {
            continue;
        }
        let got = rows_of(dest, &t.name, false);
        let table = t.name.to_lowercase();
        let rebuilt = |r: &i64| registered.contains(&(table.clone(), *r));
        let lost = source
            .rows
            .iter()
            .filter_map(|r| r.rowid)
            .filter(|r| !got.contains_key(r) || rebuilt(r))
            .count() as u64;
        assert!(
            bounds.lower_bound <= lost,
            "{name} {}: lower bound {} above the {lost} rows lost: {:?}",
            t.name,
            bounds.lower_bound,
            bounds.evidence
        );
        if let Some(upper) = bounds.upper_bound {
            assert!(
                lost <= upper,
                "{name} {}: {lost} rows lost, above the upper bound {upper}: {:?}",
                t.name,
                bounds.evidence
            );
        }
        checked += 1;
    }
    checked
}
