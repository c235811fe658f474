//! Tables known only from their records, their schema rows lost: the storage class each
//! column holds most, read from a sample.

use pager::Value;

use super::groups::OrphanGroup;

/// A table known only from its records: its schema row is lost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InferredTable {
    /// Storage class seen most in each column, in record order: "integer", "real",
    /// "text", "blob", or "null" when only NULL was seen.
    pub columns: Vec<&'static str>,
    /// The orphan groups holding its rows.
    pub groups: Vec<OrphanGroup>,
    /// Records sampled to infer it.
    pub sampled: u32,
}

/// The storage class a record shape is keyed by.
fn class_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Integer(_) => "integer",
        Value::Real(_) => "real",
        Value::Text(_) => "text",
        Value::Blob(_) => "blob",
    }
}

/// The shape of a sample: per column, the storage class seen most (NULL only when
/// nothing else was seen).
pub fn sample_shape(sample: &[Vec<Value>]) -> Vec<&'static str> {
    let width = sample.iter().map(Vec::len).max().unwrap_or(0);
    (0..width)
        .map(|i| {
            let mut counts: std::collections::BTreeMap<&'static str, u32> =
                std::collections::BTreeMap::new();
            for r in sample {
                if let Some(v) = r.get(i).filter(|v| **v != Value::Null) {
                    *counts.entry(class_of(v)).or_default() += 1;
                }
            }
            counts
                .into_iter()
                .max_by_key(|(_, n)| *n)
                .map_or("null", |(c, _)| c)
        })
        .collect()
}

/// Gives `group`, whose `sample` no known table's columns fit, to the inferred table of
/// the same record shape whose groups it does not overlap, or makes it a table of its own.
/// Groups of one lost tree split the key space between them; two groups holding a rowid
/// range in common are two tables, however alike.
pub(super) fn join(inferred: &mut Vec<InferredTable>, group: OrphanGroup, sample: &[Vec<Value>]) {
    let columns = sample_shape(sample);
    let overlaps = |g: &OrphanGroup| match (g.rowids, group.rowids) {
        (Some((lo, hi)), Some((a, b))) => lo <= b && a <= hi,
        _ => false,
    };
    let joins = |t: &InferredTable| t.columns == columns && !t.groups.iter().any(overlaps);
    match inferred.iter_mut().find(|t| joins(t)) {
        Some(t) => {
            t.sampled += sample.len() as u32;
            t.groups.push(group);
        }
        None => inferred.push(InferredTable {
            columns,
            groups: vec![group],
            sampled: sample.len() as u32,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{a_schema, a_shape, leaf_group, plan_of};
    use super::*;
    use crate::testing::{file, leaf, schema_row, target, three_ints, zeroed};

    #[test]
    fn records_no_table_fits_go_to_lost_and_found_while_the_schema_is_intact() {
        let bytes = file(
            &[&a_schema()],
            &[zeroed(), leaf(&[&three_ints(1, 5), &three_ints(2, 6)])],
        );
        let plan = plan_of(&bytes, &[target(a_shape(), 2)]);
        assert_eq!(plan.inferred, vec![]);
        assert_eq!(plan.lost_and_found, vec![leaf_group(3, 2, (1, 2))]);
    }

    /// A damaged schema (a row naming root page 99 of a 5-page file) and orphan leaves
    /// 3, 4 and 5 of three integers, holding rowids 1-2, 3-4 and 2-3.
    fn lost_schema() -> Vec<u8> {
        file(
            &[&a_schema(), &schema_row(2, "z", 99, "CREATE TABLE z(v)")],
            &[
                zeroed(),
                leaf(&[&three_ints(1, 5), &three_ints(2, 6)]),
                leaf(&[&three_ints(3, 7), &three_ints(4, 8)]),
                leaf(&[&three_ints(2, 9), &three_ints(3, 9)]),
            ],
        )
    }

    #[test]
    fn records_no_table_fits_are_an_inferred_table_when_the_schema_is_damaged() {
        let plan = plan_of(&lost_schema(), &[target(a_shape(), 2)]);
        assert_eq!(plan.lost_and_found, vec![]);
        // Leaves 3 and 4 split the key space: one tree. Leaf 5 holds rowids both hold:
        // another table, however alike.
        assert_eq!(
            plan.inferred,
            vec![
                InferredTable {
                    columns: vec!["integer", "integer", "integer"],
                    groups: vec![leaf_group(3, 2, (1, 2)), leaf_group(4, 2, (3, 4))],
                    sampled: 4,
                },
                InferredTable {
                    columns: vec!["integer", "integer", "integer"],
                    groups: vec![leaf_group(5, 2, (2, 3))],
                    sampled: 2,
                },
            ]
        );
    }

    #[test]
    fn sample_shape_takes_each_columns_most_seen_storage_class() {
        let t = |s: &str| Value::Text(s.as_bytes().to_vec());
        let sample = vec![
            vec![Value::Integer(1), t("x"), Value::Null],
            vec![Value::Integer(2), Value::Real(1.5), Value::Null],
            vec![Value::Null, t("y"), Value::Blob(vec![1]), Value::Null],
        ];
        // NULL only where nothing else was seen, however often; as wide as the widest
        // record.
        assert_eq!(sample_shape(&sample), ["integer", "text", "blob", "null"]);
        assert_eq!(sample_shape(&[]), Vec::<&str>::new());
    }
}
