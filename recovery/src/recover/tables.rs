//! The tables of a run, by [`TableId`]: the schema's tables in schema order, then tables
//! inferred from orphan pages, then tables a profile expects that the schema lacks. Each
//! carries what happened to it, from its disposition to its loss bounds.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use pager::{PageNo, Value};
use reconstruct::{Attribution, LossBounds, TableId, TableLoss, TableShape, TableStatus};

/// What happened to one table.
#[derive(Clone, Debug)]
pub struct TableRun {
    /// Its id in the run.
    pub id: TableId,
    /// Its name, as the schema spells it (or as inferred).
    pub name: String,
    /// Its root page in the source.
    pub root: Option<PageNo>,
    /// What became of it.
    pub status: TableStatus,
    /// Why, in a sentence, when anything needs saying.
    pub reason: Option<String>,
    /// Its shape on the output, when it is filled.
    pub shape: Option<TableShape>,
    /// What it got back.
    pub loss: TableLoss,
    /// How many rows it lost, when anything says it lost some.
    pub bounds: Option<LossBounds>,
    /// The orphan page groups attributed to it.
    pub orphans: Vec<Attribution>,
    /// Rowids of the rows its constraints refused.
    pub rejected_rowids: BTreeSet<i64>,
    /// Lost rows whose values evidence proves (index entries, text copies) but which the
    /// table refused as partial rows, by rowid: a placeholder made for one takes them.
    pub proven_lost: BTreeMap<i64, reconstruct::KnownValues>,
    /// Rowids of the rows written into it (the load's own record, for loss bounds).
    pub written_rowids: reconstruct::RowidSet,
    /// Rowids of the written rows whose payload was joined from overflow pages: a page
    /// of the chain overwritten with other bytes leaves no trace but wrong values, which
    /// the table's index entries can still catch.
    pub spilled_rowids: reconstruct::RowidSet,
    /// Of those, the values as written of the columns the table's indexes key on, by
    /// rowid, for rows the bulk writer wrote (their record verbatim): the cross-check
    /// reads them here instead of back from the output, where a column after a long one
    /// is only reached through the row's overflow pages. Column positions in the shape.
    /// Emptied by the cross-check.
    pub spilled_values: HashMap<i64, Vec<(usize, Value)>>,
    /// The kinds of its BLOB values, by their place in the record, as its rows were
    /// written (a file's signature in their first bytes).
    pub blob_kinds: reconstruct::BlobKinds,
    /// Indexes to make on it that the schema lacks: those of a table whose lost CREATE
    /// statement a profile knows, with where they come from ("profile NAME"), name and
    /// statement.
    pub known_indexes: Vec<(String, String, String)>,
    /// Where a table whose CREATE statement is lost got its name and statement from
    /// ("profile NAME"), when a profile's known table fits its records.
    pub known_from: Option<String>,
}

/// The tables of a run.
#[derive(Clone, Debug, Default)]
pub struct Tables {
    list: Vec<TableRun>,
}

impl Tables {
    /// Adds a table; returns its id.
    pub fn push(
        &mut self,
        name: String,
        root: Option<PageNo>,
        status: TableStatus,
        reason: Option<String>,
        shape: Option<TableShape>,
    ) -> TableId {
        let id = TableId(self.list.len() as u32);
        self.list.push(TableRun {
            id,
            name,
            root,
            status,
            reason,
            shape,
            loss: TableLoss::default(),
            bounds: None,
            orphans: Vec::new(),
            rejected_rowids: BTreeSet::new(),
            proven_lost: BTreeMap::new(),
            written_rowids: reconstruct::RowidSet::default(),
            spilled_rowids: reconstruct::RowidSet::default(),
            spilled_values: HashMap::new(),
            blob_kinds: reconstruct::BlobKinds::default(),
            known_indexes: Vec::new(),
            known_from: None,
        });
        id
    }

    /// The table `id`.
    pub fn get(&self, id: TableId) -> Option<&TableRun> {
        self.list.get(id.index())
    }

    /// The table `id`, to change.
    pub fn get_mut(&mut self, id: TableId) -> Option<&mut TableRun> {
        self.list.get_mut(id.index())
    }

    /// Every table, in id order.
    pub fn iter(&self) -> impl Iterator<Item = &TableRun> {
        self.list.iter()
    }

    /// Every table, in id order, to change.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut TableRun> {
        self.list.iter_mut()
    }

    /// The tables the run fills (recovered and inferred), with their shapes.
    pub fn filled(&self) -> impl Iterator<Item = (&TableRun, &TableShape)> {
        self.list
            .iter()
            .filter_map(|t| t.shape.as_ref().map(|s| (t, s)))
    }

    /// The table named `name` (names compared without case, as SQLite does).
    pub fn named(&self, name: &str) -> Option<&TableRun> {
        self.list.iter().find(|t| t.name.eq_ignore_ascii_case(name))
    }

    /// The table named `name`, to change.
    pub fn named_mut(&mut self, name: &str) -> Option<&mut TableRun> {
        self.list
            .iter_mut()
            .find(|t| t.name.eq_ignore_ascii_case(name))
    }

    /// The shapes of the filled tables.
    pub fn shapes(&self) -> Vec<TableShape> {
        self.filled().map(|(_, s)| s.clone()).collect()
    }

    /// The names of the filled tables.
    pub fn filled_names(&self) -> Vec<String> {
        self.filled().map(|(t, _)| t.name.clone()).collect()
    }
}
