//! The Nemetz forensic corpus, read by `pager`: every file is surveyed without a panic,
//! and every live row of each answer key is read back exactly.

use pager::{read_schema, read_tree, Database, TextEncoding, Value};

use crate::nemetz::{self, Actual, Readback};
use crate::TestResult;

fn actual(v: &Value, enc: TextEncoding) -> Actual {
    match v {
        Value::Null => Actual::Null,
        Value::Integer(i) => Actual::Integer(*i),
        Value::Real(r) => Actual::Real(*r),
        Value::Text(t) => Actual::Text(
            enc.decode(t)
                .unwrap_or_else(|| String::from_utf8_lossy(t).into_owned()),
        ),
        Value::Blob(b) => Actual::Blob(b.clone()),
    }
}

#[test]
fn every_corpus_database_is_surveyed() -> TestResult {
    for case in nemetz::all() {
        let bytes = std::fs::read(&case.db_path)?;
        let db = Database::open(&bytes).map_err(|e| format!("{}: {e}", case.id))?;
        let survey = pager::survey(&db);
        assert_eq!(survey.page_map.len() as u32, db.page_count(), "{}", case.id);
        // The corpus files are intact: the schema is fully readable.
        assert!(
            survey.schema.findings.is_empty(),
            "{}: {:?}",
            case.id,
            survey.schema.findings
        );
    }
    Ok(())
}

#[test]
fn live_rows_of_every_answer_key_read_back_exactly() -> TestResult {
    let mut tables_checked = 0;
    let mut rows_checked = 0;
    for case in nemetz::all() {
        let bytes = std::fs::read(&case.db_path)?;
        let db = Database::open(&bytes).map_err(|e| format!("{}: {e}", case.id))?;
        let schema = read_schema(&db);
        for t in &case.tables {
            // (table the rows live in, columns of the stored record to skip at the front)
            let (stored, skip) = match nemetz::readback(case, &t.name) {
                Readback::Dropped => continue,
                // R-tree coordinates are packed into node blobs: not a page-reader matter.
                Readback::RTreeFloat32 => continue,
                Readback::Fts4Content => (format!("{}_content", t.name), 1),
                Readback::Exact | Readback::StaleTriggerTimestamp => (t.name.clone(), 0),
            };
            let row = schema.rows.iter().find(|r| r.name == stored);
            let root = row
                .and_then(|r| r.rootpage)
                .ok_or_else(|| format!("{}: no table {stored:?}", case.id))?;
            let (rows, findings) = read_tree(&db, root);
            assert!(findings.is_empty(), "{} {stored:?}: {findings:?}", case.id);
            // An INTEGER PRIMARY KEY column is stored as NULL and its value is the rowid. The
            // key does not mark table-level PRIMARY KEY(id) clauses, so take the INTEGER
            // column that is NULL in every stored record.
            let ipk: Option<usize> = (0..t.columns.len()).find(|&i| {
                t.column_types
                    .get(i)
                    .is_some_and(|ty| ty.eq_ignore_ascii_case("integer"))
                    && !rows.is_empty()
                    && rows
                        .iter()
                        .all(|r| matches!(r.values.get(i + skip), Some(Value::Null) | None))
            });
            let mut decoded: Vec<Option<Vec<Actual>>> = rows
                .iter()
                .map(|r| {
                    let mut values: Vec<Actual> = r
                        .values
                        .iter()
                        .skip(skip)
                        .map(|v| actual(v, db.encoding()))
                        .collect();
                    // Columns added by ALTER TABLE are absent from older records: NULL.
                    values.resize_with(t.columns.len(), || Actual::Null);
                    if let (Some(i), Some(rowid)) = (ipk, r.rowid) {
                        if let Some(v @ Actual::Null) = values.get_mut(i) {
                            *v = Actual::Integer(rowid);
                        }
                    }
                    Some(values)
                })
                .collect();
            let expected: Vec<_> = nemetz::readable_live_rows(case, t).collect();
            assert_eq!(
                decoded.len(),
                expected.len(),
                "{} {:?}: row count",
                case.id,
                t.name
            );
            for (k, key_row) in expected.iter().enumerate() {
                let fits = |a: &Option<Vec<Actual>>| {
                    a.as_ref()
                        .is_some_and(|a| nemetz::row_matches(case, t, key_row, a))
                };
                // Keys list rows in rowid order, so the same position almost always fits.
                let pos = if decoded.get(k).is_some_and(fits) {
                    Some(k)
                } else {
                    decoded.iter().position(fits)
                };
                let Some(pos) = pos else {
                    panic!(
                        "{} {:?}: key row {k} not read back: {:?}",
                        case.id, t.name, key_row.values
                    );
                };
                decoded[pos] = None;
                rows_checked += 1;
            }
            tables_checked += 1;
        }
    }
    // 82 tables exist in the corpus schemas; 2 are R-trees (skipped above).
    assert_eq!(tables_checked, 80);
    assert!(rows_checked > 18_000, "{rows_checked}");
    Ok(())
}
