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
