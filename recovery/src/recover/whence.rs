//! Where the load read each row it wrote (`recover --provenance`): a note per row, by
//! table, kept while the tables are filled and written by the provenance step
//! (`recover::provenance`) once every registry is.

use std::collections::BTreeMap;

use reconstruct::{Provenance, RecoveredRow, TableId};

/// Where the load read each row it wrote, by table, when provenance is asked for.
#[derive(Debug, Default)]
pub struct Whence(Option<BTreeMap<TableId, Vec<Place>>>);

/// Where one written row was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    pub(crate) rowid: i64,
    pub(crate) page: u32,
    pub(crate) offset: u32,
    pub(crate) reached: Reached,
}

/// How the walk came to a row's cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reached {
    /// Through its table's b-tree.
    Tree,
    /// On an orphan page attributed to its table.
    Orphan,
}

impl Place {
    /// Where `row` was read; `None` for a row without a rowid.
    pub fn of(row: &RecoveredRow<'_>) -> Option<Place> {
        Some(Place {
            rowid: row.rowid()?,
            page: row.raw.location.page.get(),
            offset: row.raw.location.offset,
            reached: match row.provenance {
                Provenance::Cell { .. } => Reached::Tree,
                Provenance::Orphan { .. } => Reached::Orphan,
            },
        })
    }
}

impl Whence {
    /// Notes kept when `asked`, none otherwise.
    pub fn asked(asked: bool) -> Whence {
        Whence(asked.then(BTreeMap::new))
    }

    /// Whether provenance was asked for.
    pub fn on(&self) -> bool {
        self.0.is_some()
    }

    /// Notes that `row` was written into the table `table`.
    pub fn note(&mut self, table: TableId, row: &RecoveredRow<'_>) {
        if let (Some(map), Some(place)) = (&mut self.0, Place::of(row)) {
            map.entry(table).or_default().push(place);
        }
    }

    /// Notes rows written into `table`, in the order they were written.
    pub fn extend(&mut self, table: TableId, places: Vec<Place>) {
        if let Some(map) = &mut self.0 {
            map.entry(table).or_default().extend(places);
        }
    }

    /// The notes, taken once: `None` when provenance was not asked for.
    pub fn take(&mut self) -> Option<BTreeMap<TableId, Vec<Place>>> {
        self.0.take()
    }
}

/// How a cell the walk reached is described in `reached`.
pub(crate) fn reached_text(reached: Reached) -> &'static str {
    match reached {
        Reached::Tree => "tree",
        Reached::Orphan => "orphan page",
    }
}
