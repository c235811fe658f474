//! A table's shape as the carver needs it: the columns a record stores, in record order,
//! and which serial types each can hold.

use pager::SerialType;
use reconstruct::shape::{Affinity, TableShape};

/// One stored column of a [`Template`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// The column's affinity.
    pub affinity: Affinity,
    /// The INTEGER PRIMARY KEY: always NULL in the record (the value is the rowid).
    pub rowid_alias: bool,
    /// Declared NOT NULL.
    pub not_null: bool,
}

impl Slot {
    /// Whether a record of this table could hold a value of serial type `t` here. The test
    /// is for the way SQLite stores values: a column with INTEGER, REAL or NUMERIC affinity
    /// holds numbers (text only where it does not look like one, which the carver does not
    /// accept: too many false records would fit); TEXT holds text; no affinity holds anything.
    pub fn admits(&self, t: SerialType) -> bool {
        use SerialType as S;
        if self.rowid_alias {
            return t == S::Null;
        }
        match t {
            S::Reserved(_) => false,
            S::Null => !self.not_null,
            S::Integer(_) | S::Zero | S::One | S::Float => matches!(
                self.affinity,
                Affinity::Integer | Affinity::Real | Affinity::Numeric | Affinity::Blob
            ),
            S::Text(_) => matches!(
                self.affinity,
                Affinity::Text | Affinity::Blob | Affinity::Numeric
            ),
            S::Blob(_) => matches!(self.affinity, Affinity::Text | Affinity::Blob),
        }
    }
}

/// A rowid table's stored columns, in record order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    /// The table's name.
    pub name: String,
    /// Its stored columns, in record order.
    pub slots: Vec<Slot>,
    /// Their names, in the same order.
    pub names: Vec<String>,
    /// A table no longer in the schema (its CREATE statement carved from the schema's
    /// free space): its pages may have gone to any live table since, so a record in a
    /// live page's free space may be its.
    pub dropped: bool,
    /// The one page its records can be on: a dropped table whose root page was freed as
    /// a leaf had no other page.
    pub only_on: Option<pager::PageNo>,
}

impl Template {
    /// The template of a rowid table; `None` for a WITHOUT ROWID table (its records are
    /// index entries) or one that stores no column.
    pub fn of(shape: &TableShape) -> Option<Template> {
        if shape.without_rowid {
            return None;
        }
        let alias = shape.rowid_alias();
        let slots: Vec<Slot> = shape
            .record_order()
            .into_iter()
            .filter_map(|i| {
                let c = shape.columns.get(i)?;
                Some(Slot {
                    affinity: c.affinity(),
                    rowid_alias: alias == Some(i),
                    not_null: c.not_null,
                })
            })
            .collect();
        let names = shape
            .record_order()
            .into_iter()
            .filter_map(|i| shape.columns.get(i).map(|c| c.name.clone()))
            .collect();
        (!slots.is_empty()).then(|| Template {
            name: shape.name.clone(),
            slots,
            names,
            dropped: false,
            only_on: None,
        })
    }

    /// Whether a record of this table can be on page `no`.
    pub fn can_be_on(&self, no: pager::PageNo) -> bool {
        self.only_on.is_none_or(|p| p == no)
    }

    /// Whether a record of these serial types fits the table.
    pub fn fits(&self, types: &[SerialType]) -> bool {
        types.len() == self.slots.len() && self.slots.iter().zip(types).all(|(s, t)| s.admits(*t))
    }
}

#[cfg(test)]
mod tests {
    use reconstruct::shape::ColumnKind;

    use super::*;
    use crate::testing::{shape, template};

    fn slot(affinity: Affinity) -> Slot {
        Slot {
            affinity,
            rowid_alias: false,
            not_null: false,
        }
    }

    #[test]
    fn each_affinity_admits_the_serial_types_sqlite_stores_under_it() {
        use SerialType as S;
        // ("Record Format" serial types) × ("Determination Of Column Affinity").
        let types = [
            S::Null,
            S::Integer(1),
            S::Zero,
            S::One,
            S::Float,
            S::Text(2),
            S::Blob(2),
        ];
        let admitted =
            |a: Affinity| -> Vec<bool> { types.iter().map(|t| slot(a).admits(*t)).collect() };
        let (y, n) = (true, false);
        //                                       null int zero one float text blob
        assert_eq!(admitted(Affinity::Integer), [y, y, y, y, y, n, n]);
        assert_eq!(admitted(Affinity::Real), [y, y, y, y, y, n, n]);
        assert_eq!(admitted(Affinity::Numeric), [y, y, y, y, y, y, n]);
        assert_eq!(admitted(Affinity::Text), [y, n, n, n, n, y, y]);
        assert_eq!(admitted(Affinity::Blob), [y, y, y, y, y, y, y]);
    }

    #[test]
    fn reserved_serial_types_fit_no_column() {
        for code in [10, 11] {
            assert!(!slot(Affinity::Blob).admits(SerialType::from_code(code)));
        }
    }

    #[test]
    fn integer_primary_key_is_null_in_the_record() {
        let alias = Slot {
            rowid_alias: true,
            ..slot(Affinity::Integer)
        };
        assert!(alias.admits(SerialType::Null));
        assert!(!alias.admits(SerialType::Integer(1)));
        assert!(!alias.admits(SerialType::One));
    }

    #[test]
    fn not_null_column_refuses_null() {
        let not_null = Slot {
            not_null: true,
            ..slot(Affinity::Text)
        };
        assert!(!not_null.admits(SerialType::Null));
        assert!(not_null.admits(SerialType::Text(0)));
    }

    #[test]
    fn template_of_a_rowid_table_lists_its_stored_columns_in_record_order() {
        let mut messages = shape(
            "messages",
            &[
                ("id", "INTEGER PRIMARY KEY"),
                ("role", "TEXT NOT NULL"),
                ("length", "INTEGER"),
                ("created", "REAL"),
            ],
        );
        // A VIRTUAL generated column is computed on read, never stored.
        messages.columns[2].kind = ColumnKind::VirtualGenerated;
        let t = Template::of(&messages).unwrap();
        assert_eq!(t.name, "messages");
        assert_eq!(t.names, ["id", "role", "created"]);
        assert_eq!(
            t.slots,
            [
                Slot {
                    affinity: Affinity::Integer,
                    rowid_alias: true,
                    not_null: false,
                },
                Slot {
                    affinity: Affinity::Text,
                    rowid_alias: false,
                    not_null: true,
                },
                slot(Affinity::Real),
            ]
        );
        assert!(!t.dropped);
        assert_eq!(t.only_on, None);
    }

    #[test]
    fn without_rowid_table_or_one_storing_nothing_has_no_template() {
        let mut keyed = shape("keyed", &[("k", "TEXT PRIMARY KEY"), ("v", "")]);
        keyed.without_rowid = true;
        assert_eq!(Template::of(&keyed), None);
        assert_eq!(Template::of(&shape("empty", &[])), None);
    }

    #[test]
    fn template_pinned_to_one_page_can_be_only_there() {
        let (two, three) = (
            pager::PageNo::new(2).unwrap(),
            pager::PageNo::new(3).unwrap(),
        );
        let t = template("t", &[("a", "TEXT")]);
        assert!(t.can_be_on(two) && t.can_be_on(three));
        let pinned = Template {
            only_on: Some(three),
            ..t
        };
        assert!(!pinned.can_be_on(two));
        assert!(pinned.can_be_on(three));
    }

    #[test]
    fn record_fits_with_one_admitted_type_per_column() {
        use SerialType as S;
        let t = template("t", &[("a", "TEXT"), ("b", "INTEGER")]);
        assert!(t.fits(&[S::Text(3), S::One]));
        assert!(!t.fits(&[S::Text(3)]));
        assert!(!t.fits(&[S::Text(3), S::One, S::Null]));
        assert!(!t.fits(&[S::Integer(1), S::One]));
    }
}
