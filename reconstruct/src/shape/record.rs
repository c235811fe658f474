//! A stored record against a table's shape: mapped onto its insert columns, every value
//! not as SQLite wrote it set apart with its reason; and fitted, for attribution.

use pager::{TextEncoding, Value};

use super::{Affinity, ColumnDefault, ColumnKind, StrictType, TableShape};

impl TableShape {
    /// Maps a stored record's values onto the insert columns. The rowid alias takes the
    /// cell's rowid. A record with fewer values than stored columns (a table altered by
    /// ADD COLUMN after the row was written) gives `None` for the missing ones, so that
    /// their declared default applies; extra values are returned as surplus.
    ///
    /// Every value that is not the file's bytes as SQLite wrote them is NULL in the row
    /// and listed in `damage` with its reason: a field whose bytes could not be read (its
    /// position in `unreadable`), a field read from a last overflow page that does not end
    /// its chain (in `suspect`), a value its column's affinity would have converted on
    /// the way in (a number in a TEXT column, numeric text in a numeric one: SQLite never
    /// stores them, so a serial type was damaged), and a value beyond the table's columns.
    ///
    /// Text not valid UTF-8 in a UTF-8 file is the file's bytes and stays: SQLite stores
    /// whatever bytes an application binds as text (Latin-1 through the UTF-8 API) and
    /// reads them back as they are, so they are no sign of damage by themselves; they are
    /// counted in `texts_not_in_encoding`. Text not valid UTF-16 in a UTF-16 file is
    /// damage (its bytes kept in the registry): SQL cannot write it back as the same text
    /// (SQLite converts it, or drops an odd last byte), and an odd length is a sign of
    /// damage itself; but not in a STORED generated column, which SQLite computes again.
    pub fn map_record(
        &self,
        rowid: Option<i64>,
        record: Vec<Value>,
        unreadable: &[usize],
        suspect: &[usize],
        encoding: TextEncoding,
    ) -> MappedRow {
        let order = self.record_order();
        let mut by_column: Vec<Option<Value>> = vec![None; self.columns.len()];
        let surplus = record.len().saturating_sub(order.len());
        let mut damage = Vec::new();
        let mut texts_not_in_encoding = 0;
        for (position, value) in record.into_iter().enumerate() {
            let text_invalid = matches!(&value, Value::Text(t) if !text_in_encoding(t, encoding));
            let Some(column) = order.get(position).and_then(|c| self.columns.get(*c)) else {
                damage.push(FieldDamage {
                    column: None,
                    reason: DamageReason::BeyondColumns,
                    original: value,
                });
                continue;
            };
            let reason = if unreadable.contains(&position) {
                Some(DamageReason::Unreadable)
            } else if suspect.contains(&position) {
                Some(DamageReason::OverflowPageSuspect)
            } else if text_invalid
                && encoding != TextEncoding::Utf8
                && column.kind != ColumnKind::StoredGenerated
            {
                Some(DamageReason::TextNotInEncoding)
            } else if self.strict && !StrictType::of_declared_type(&column.decl_type).holds(&value)
            {
                Some(DamageReason::StrictTypeNeverStores)
            } else if !self.strict && !column.affinity().could_store(&value, encoding) {
                Some(DamageReason::AffinityNeverStores)
            } else {
                None
            };
            let value = match reason {
                Some(reason) => {
                    damage.push(FieldDamage {
                        column: Some(column.name.clone()),
                        reason,
                        original: value,
                    });
                    Value::Null
                }
                // A STORED generated column is never written: SQLite computes it again
                // from the row, the same bytes from the same values (text not valid in a
                // UTF-16 file included: `blob || ''` stores the blob's bytes as text).
                None => {
                    texts_not_in_encoding +=
                        u64::from(text_invalid && column.kind != ColumnKind::StoredGenerated);
                    value
                }
            };
            if let Some(slot) = order.get(position).and_then(|c| by_column.get_mut(*c)) {
                *slot = Some(value);
            }
        }
        if let (Some(alias), Some(rowid)) = (self.rowid_alias(), rowid) {
            if let Some(slot) = by_column.get_mut(alias) {
                if matches!(slot, None | Some(Value::Null)) {
                    *slot = Some(Value::Integer(rowid));
                }
            }
        }
        let values = self
            .insert_columns()
            .into_iter()
            .map(|i| by_column.get(i).cloned().flatten())
            .collect();
        MappedRow {
            values,
            surplus,
            damage,
            texts_not_in_encoding,
        }
    }

    /// How well a record fits this table: `None` when it cannot be one of its rows,
    /// else a score (higher is better) from how many values sit plausibly in their columns.
    ///
    /// A record shorter than the table was written before its last columns were added by
    /// ALTER TABLE ADD COLUMN, so it fits only when every column it lacks is one that
    /// statement can add: no PRIMARY KEY, and NULL allowed or a default given (SQLite
    /// refuses a NOT NULL column without one).
    pub fn fit(&self, record: &[Value]) -> Option<u32> {
        let order = self.record_order();
        if record.is_empty() || record.len() > order.len() {
            return None;
        }
        let addable = |i: &usize| {
            self.columns.get(*i).is_some_and(|c| {
                // ALTER TABLE refuses a key, a NOT NULL column without a default, and
                // a default that is not constant.
                c.pk == 0
                    && c.default != ColumnDefault::Varying
                    && (!c.not_null || c.default == ColumnDefault::Constant)
            })
        };
        if !order
            .get(record.len()..)
            .unwrap_or_default()
            .iter()
            .all(addable)
        {
            return None;
        }
        let alias = self.rowid_alias();
        let mut score = 0;
        for (value, col) in record.iter().zip(&order) {
            let c = self.columns.get(*col)?;
            if Some(*col) == alias {
                // The rowid alias is always stored as NULL.
                if *value != Value::Null {
                    return None;
                }
                score += 2;
                continue;
            }
            if c.not_null && *value == Value::Null {
                return None;
            }
            if !c.affinity().admits(value) {
                return None;
            }
            score += match (c.affinity(), value) {
                (Affinity::Integer, Value::Integer(_))
                | (Affinity::Real, Value::Real(_) | Value::Integer(_)) => 2,
                (Affinity::Text, Value::Text(_)) => 2,
                (_, Value::Null) => 0,
                _ => 1,
            };
        }
        // A full-width record is better evidence than a short one.
        Some(score + if record.len() == order.len() { 3 } else { 0 })
    }
}

/// What [`TableShape::fit`] reads of a record: its values' storage classes, each text
/// and blob emptied. A sample kept to be fitted holds no more than that: a tree of large
/// values (8 MB each in a test, up to 1 GB in a file) sampled whole held 64 of them, for
/// every tree at once.
pub fn classes_of(record: Vec<Value>) -> Vec<Value> {
    record
        .into_iter()
        .map(|v| match v {
            Value::Text(_) => Value::Text(Vec::new()),
            Value::Blob(_) => Value::Blob(Vec::new()),
            other => other,
        })
        .collect()
}

/// A record mapped onto a table's insert columns.
#[derive(Clone, Debug, PartialEq)]
pub struct MappedRow {
    /// One entry per insert column; `None` where the record holds no value (use the default).
    pub values: Vec<Option<Value>>,
    /// Values the record holds beyond the table's stored columns.
    pub surplus: usize,
    /// Every value that is not the file's bytes as SQLite wrote them, with its reason
    /// (see [`TableShape::map_record`]).
    pub damage: Vec<FieldDamage>,
    /// Text values written as the file holds them though not valid in its encoding.
    pub texts_not_in_encoding: u64,
}

/// A value of a recovered row that is not in its table as the record holds it.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldDamage {
    /// Its column; `None` for a value beyond the table's columns.
    pub column: Option<String>,
    /// Why it is not in the table as read.
    pub reason: DamageReason,
    /// The value as the record holds it (NULL when its bytes could not be read).
    pub original: Value,
}

/// Why a value of a recovered row is not in its table as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DamageReason {
    /// Its bytes could not be read (an overflow chain broken, the record cut short): NULL.
    Unreadable,
    /// Text not valid UTF-16 in a UTF-16 file: NULL (its bytes in the registry).
    TextNotInEncoding,
    /// A value its column's affinity never stores (see [`Affinity::could_store`]): NULL.
    AffinityNeverStores,
    /// A value of another type than its STRICT column's (see [`StrictType::holds`]),
    /// which SQLite refuses: NULL.
    StrictTypeNeverStores,
    /// A value beyond the table's columns: not written.
    BeyondColumns,
    /// A value that disagrees with the table's own index entry for the row (read from
    /// pages of their own): the index's value is written in its place.
    DisagreesWithIndex,
    /// A value read from the last overflow page of a chain that does not end there as
    /// SQLite ends a chain (its next pointer is not 0): the page may be another's, its
    /// bytes read as this row's: NULL.
    OverflowPageSuspect,
}

impl DamageReason {
    /// Its name in the `salvage_damaged_fields` registry.
    pub fn name(self) -> &'static str {
        match self {
            DamageReason::Unreadable => "unreadable",
            DamageReason::TextNotInEncoding => "text_not_in_encoding",
            DamageReason::AffinityNeverStores => "affinity_never_stores",
            DamageReason::StrictTypeNeverStores => "strict_type_never_stores",
            DamageReason::BeyondColumns => "beyond_columns",
            DamageReason::DisagreesWithIndex => "disagrees_with_index",
            DamageReason::OverflowPageSuspect => "overflow_page_suspect",
        }
    }
}

/// Whether text bytes are valid in the database's text encoding: UTF-8, or UTF-16 of
/// an even length with every surrogate paired.
pub fn text_in_encoding(bytes: &[u8], encoding: TextEncoding) -> bool {
    let units = |be: bool| {
        bytes.chunks_exact(2).map(move |p| {
            let pair = [
                p.first().copied().unwrap_or(0),
                p.get(1).copied().unwrap_or(0),
            ];
            if be {
                u16::from_be_bytes(pair)
            } else {
                u16::from_le_bytes(pair)
            }
        })
    };
    match encoding {
        TextEncoding::Utf8 => simdutf8::basic::from_utf8(bytes).is_ok(),
        TextEncoding::Utf16le => {
            bytes.len().is_multiple_of(2) && char::decode_utf16(units(false)).all(|c| c.is_ok())
        }
        TextEncoding::Utf16be => {
            bytes.len().is_multiple_of(2) && char::decode_utf16(units(true)).all(|c| c.is_ok())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::col;
    use super::*;

    #[test]
    fn short_records_leave_added_columns_to_their_default() {
        let t = TableShape {
            name: "t".into(),
            columns: vec![col("a", "INT", 0), col("b", "INT", 0)],
            without_rowid: false,
            strict: false,
            pk_indexed: false,
        };
        let row = t.map_record(
            Some(1),
            vec![Value::Integer(5)],
            &[],
            &[],
            TextEncoding::Utf8,
        );
        assert_eq!(row.values, vec![Some(Value::Integer(5)), None]);
    }

    #[test]
    fn fit_rejects_wrong_shapes() {
        let t = TableShape {
            name: "m".into(),
            columns: vec![col("id", "INTEGER", 1), col("n", "INTEGER", 0)],
            without_rowid: false,
            strict: false,
            pk_indexed: false,
        };
        assert!(t.fit(&[Value::Null, Value::Integer(3)]).is_some());
        assert!(
            t.fit(&[Value::Integer(9), Value::Integer(3)]).is_none(),
            "alias must be NULL"
        );
        assert!(
            t.fit(&[Value::Null, Value::Integer(3), Value::Integer(4)])
                .is_none(),
            "too wide"
        );
    }

    #[test]
    fn every_value_not_as_sqlite_wrote_it_is_null_with_its_reason() {
        let t = TableShape {
            name: "t".into(),
            columns: vec![
                col("id", "INTEGER", 1),
                col("a", "TEXT", 0),
                col("b", "TEXT", 0),
                col("c", "INTEGER", 0),
                col("d", "TEXT", 0),
            ],
            without_rowid: false,
            strict: false,
            pk_indexed: false,
        };
        let record = vec![
            Value::Null,
            Value::Text(vec![0xff, 0xfe]),
            Value::Integer(7),
            Value::Null,
            Value::Text(b"fine".to_vec()),
            Value::Integer(9),
        ];
        let row = t.map_record(Some(3), record, &[3], &[], TextEncoding::Utf8);
        let reasons: Vec<(Option<&str>, DamageReason)> = row
            .damage
            .iter()
            .map(|d| (d.column.as_deref(), d.reason))
            .collect();
        assert_eq!(
            reasons,
            vec![
                (Some("b"), DamageReason::AffinityNeverStores),
                (Some("c"), DamageReason::Unreadable),
                (None, DamageReason::BeyondColumns),
            ]
        );
        assert_eq!(row.damage[0].original, Value::Integer(7));
        // Text not valid UTF-8 is the file's bytes, kept and counted.
        assert_eq!(row.texts_not_in_encoding, 1);
        assert_eq!(
            row.values,
            vec![
                Some(Value::Integer(3)),
                Some(Value::Text(vec![0xff, 0xfe])),
                Some(Value::Null),
                Some(Value::Null),
                Some(Value::Text(b"fine".to_vec()))
            ]
        );
        assert!(text_in_encoding(&[0x41, 0x00], TextEncoding::Utf16le));
        assert!(!text_in_encoding(&[0x41], TextEncoding::Utf16le));
        assert!(
            !text_in_encoding(&[0xd8, 0x00], TextEncoding::Utf16be),
            "a lone surrogate"
        );
    }

    #[test]
    fn a_short_record_fits_only_columns_alter_table_could_add() {
        let mut t = TableShape {
            name: "m".into(),
            columns: vec![
                col("id", "INTEGER", 1),
                col("body", "TEXT", 0),
                col("flag", "INTEGER", 0),
            ],
            without_rowid: false,
            strict: false,
            pk_indexed: false,
        };
        let short = [Value::Null, Value::Text("hi".into())];
        assert!(t.fit(&short).is_some(), "`flag` may have been added later");
        t.columns[2].not_null = true;
        assert!(
            t.fit(&short).is_none(),
            "NOT NULL without a default: never added"
        );
        t.columns[2].default = ColumnDefault::Constant;
        assert!(t.fit(&short).is_some(), "NOT NULL DEFAULT 0 can be added");
        t.columns[2].pk = 2;
        assert!(t.fit(&short).is_none(), "a key column is never added");
    }
}
