//! Healthy fixtures of every variant read back by `pager`, row by row, against what
//! SQLite itself returns for them (page sizes 512..65536, UTF-16le/be, auto-vacuum,
//! reserved bytes, a 3-level b-tree, WITHOUT ROWID, overflow chains).

use fixtures::{Fixture, Value as Expected};
use pager::{read_schema, read_tree, Database, TextEncoding, Value};

use crate::TestResult;

fn same(actual: &Value, expected: &Expected, enc: TextEncoding) -> bool {
    match (actual, expected) {
        (Value::Null, Expected::Null) => true,
        (Value::Integer(a), Expected::Integer(e)) => a == e,
        (Value::Real(a), Expected::Real(e)) => a.to_bits() == e.to_bits(),
        // SQLite stores a whole-number REAL in a REAL-affinity column as an integer on disk.
        (Value::Integer(a), Expected::Real(e)) => *a as f64 == *e,
        (Value::Text(a), Expected::Text(e)) => enc.decode(a).as_deref() == Some(e.as_str()),
        (Value::Blob(a), Expected::Blob(e)) => a == e,
        _ => false,
    }
}

/// For a WITHOUT ROWID table the record holds the primary key columns first: find the
/// order of declared columns in the record that makes every row match.
fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for i in 0..=p.len() {
            let mut q = p.clone();
            q.insert(i, n - 1);
            out.push(q);
        }
    }
    out
}

fn check_fixture(f: &Fixture) -> TestResult {
    let db = Database::open(&f.bytes).map_err(|e| format!("{}: {e}", f.name))?;
    assert_eq!(db.page_size().get(), f.options.page_size, "{}", f.name);
    assert_eq!(db.reserved_space(), f.options.reserved_bytes, "{}", f.name);
    assert!(db.findings().is_empty(), "{}: {:?}", f.name, db.findings());
    let schema = read_schema(&db);
    assert!(
        schema.findings.is_empty(),
        "{}: {:?}",
        f.name,
        schema.findings
    );
    let enc = db.encoding();
    for t in &f.tables {
        let root = schema
            .get(&t.name)
            .and_then(|r| r.rootpage)
            .ok_or_else(|| format!("{}: {}", f.name, t.name))?;
        assert_eq!(
            schema.get(&t.name).map(|r| r.is_without_rowid()),
            Some(t.without_rowid),
            "{} {}",
            f.name,
            t.name
        );
        let (rows, findings) = read_tree(&db, root);
        assert!(findings.is_empty(), "{} {}: {findings:?}", f.name, t.name);
        assert_eq!(rows.len(), t.rows.len(), "{} {}: row count", f.name, t.name);
        if t.without_rowid {
            let order = permutations(t.columns.len())
                .into_iter()
                .find(|p| {
                    rows.iter().zip(&t.rows).all(|(a, e)| {
                        p.iter().enumerate().all(|(stored, declared)| {
                            matches!((a.values.get(stored), e.values.get(*declared)), (Some(a), Some(e)) if same(a, e, enc))
                        })
                    })
                });
            assert!(
                order.is_some(),
                "{} {}: no column order reads every row back",
                f.name,
                t.name
            );
            continue;
        }
        for (a, e) in rows.iter().zip(&t.rows) {
            assert_eq!(a.rowid, e.rowid, "{} {}", f.name, t.name);
            assert!(
                a.complete,
                "{} {} rowid {:?}: {:?}",
                f.name, t.name, a.rowid, a.findings
            );
            assert_eq!(
                a.values.len(),
                e.values.len(),
                "{} {} rowid {:?}",
                f.name,
                t.name,
                a.rowid
            );
            for (i, (av, ev)) in a.values.iter().zip(&e.values).enumerate() {
                // The INTEGER PRIMARY KEY alias is stored as NULL; its value is the rowid.
                let av = match (av, t.integer_primary_key) {
                    (Value::Null, Some(k)) if k == i => {
                        &Value::Integer(a.rowid.unwrap_or_default())
                    }
                    _ => av,
                };
                assert!(
                    same(av, ev, enc),
                    "{} {} rowid {:?} column {i}: {av:?} != {ev:?}",
                    f.name,
                    t.name,
                    a.rowid
                );
            }
        }
    }
    // A healthy fixture surveys clean: no finding, no damaged page, no orphan.
    let survey = pager::survey(&db);
    for tree in &survey.trees {
        assert!(
            tree.findings.is_empty(),
            "{} {}: {:?}",
            f.name,
            tree.name,
            tree.findings
        );
    }
    assert!(
        survey.freelist.findings.is_empty(),
        "{}: {:?}",
        f.name,
        survey.freelist.findings
    );
    assert_eq!(survey.page_map.orphans().count(), 0, "{}", f.name);
    Ok(())
}

#[test]
fn every_catalog_fixture_reads_back_row_by_row() -> TestResult {
    let catalog = fixtures::catalog();
    assert!(catalog.len() >= 13);
    for f in &catalog {
        check_fixture(f)?;
    }
    Ok(())
}

#[test]
fn deep_fixture_has_a_three_level_btree_that_reads_back() -> TestResult {
    let f = fixtures::catalog()
        .into_iter()
        .find(|f| f.name == "agent-512-deep")
        .ok_or("agent-512-deep")?;
    let db = Database::open(&f.bytes).map_err(|e| e.to_string())?;
    let survey = pager::survey(&db);
    let messages = survey
        .trees
        .iter()
        .find(|t| t.name == "messages")
        .ok_or("messages")?;
    assert!(messages.depth >= 3, "depth {}", messages.depth);
    check_fixture(&f)
}
