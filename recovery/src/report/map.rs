//! The page map of a loss report: every page of the file by class and by the table or
//! index whose b-tree holds it, in runs, at most [`MAP_CELLS`] cells of one or more pages
//! each, so that a person sees where the damage is at a glance (`salvage report --format
//! html` draws it) and the report stays small however big the file.

use std::collections::HashMap;

use pager::{PageClass, PageMap, PageNo};
use serde::{Deserialize, Serialize};

/// Cells of the map at most: a file of more pages gives each cell several.
pub const MAP_CELLS: u32 = 4096;

/// The map: runs of cells that show the same, in page order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PageMapReport {
    /// Pages each cell stands for (1 when the file has at most [`MAP_CELLS`] pages); a
    /// cell of several shows its most telling page: damage first (zeroed, unrecognised,
    /// orphan pages no table was given, orphan pages given to one), then the freelist,
    /// overflow pages, b-tree pages.
    pub pages_per_cell: u32,
    /// Runs of cells that show the same, in page order; together they cover every page.
    pub runs: Vec<MapRun>,
}

/// Cells one after another that show the same.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapRun {
    /// The first page of the run's first cell.
    pub first: u32,
    /// The last page of the run's last cell.
    pub last: u32,
    /// The page class (`docs/pager.md`).
    pub class: String,
    /// The table or index whose b-tree reaches the pages, or, for orphan pages given to a
    /// table, that table; absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// For b-tree pages no b-tree of the schema reaches: `attributed` (their rows were
    /// given to `object`) or `unattributed` (to `lost_and_found`, or index data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orphan: Option<Orphan>,
    /// When a cell stands for several pages that are not all of one kind: each kind its
    /// pages are, most telling first, and how many of the cell's pages are of it (each cell
    /// of the run alike; the first is what the cell shows). Absent when each cell's pages
    /// are all of the kind shown, and always when a cell is one page.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mix: Vec<MapMix>,
}

/// The pages of one kind in a cell whose pages are of several kinds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapMix {
    /// How many of the cell's pages are of this kind.
    pub pages: u32,
    /// The page class (`docs/pager.md`).
    pub class: String,
    /// The table or index whose b-tree reaches them, as in [`MapRun::object`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// What became of them when they are orphan b-tree pages, as in [`MapRun::orphan`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orphan: Option<Orphan>,
}

/// What became of an orphan b-tree page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Orphan {
    /// Its rows were given to a table.
    Attributed,
    /// No table was given its rows.
    Unattributed,
}

/// What a cell shows: a class, an object (by its index in the names), an orphan's fate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Shown {
    class: PageClass,
    object: Option<usize>,
    orphan: Option<Orphan>,
}

impl Shown {
    /// How telling it is: lower shows first when a cell stands for several pages.
    fn rank(self) -> u8 {
        match (self.class, self.orphan) {
            (PageClass::Zeroed, _) => 0,
            (PageClass::Unrecognised, _) => 1,
            (_, Some(Orphan::Unattributed)) => 2,
            (_, Some(Orphan::Attributed)) => 3,
            (PageClass::FreelistTrunk | PageClass::FreelistLeaf, _) => 4,
            (PageClass::Overflow, _) => 5,
            (c, _) if c.is_btree() => 6,
            _ => 7,
        }
    }
}

/// What a cell's pages are: each kind, with how many of its pages are of it.
type Mix = Vec<(Shown, u32)>;

/// The map of `map`: `objects` names the b-tree of each root page, `given` the table each
/// orphan page was given to (`names`: the objects' and tables' names, by index).
pub fn page_map(
    map: &PageMap,
    objects: &HashMap<PageNo, usize>,
    given: &HashMap<PageNo, usize>,
    names: &[String],
) -> PageMapReport {
    let pages = u32::try_from(map.len()).unwrap_or(u32::MAX);
    if pages == 0 {
        return PageMapReport::default();
    }
    let per_cell = pages.div_ceil(MAP_CELLS).max(1);
    let cell_count = pages.div_ceil(per_cell) as usize;
    let mut cells: Vec<Option<Shown>> = vec![None; cell_count];
    // What a cell's pages are, with how many of each: a cell of several pages shows only
    // its most telling one, and a person needs to know that one zeroed page among many
    // healthy ones is one, not all (none kept when a cell is one page).
    let mut kinds: Vec<Mix> = match per_cell {
        1 => Vec::new(),
        _ => vec![Vec::new(); cell_count],
    };
    // Each stretch of pages that shows the same marks the cells it covers.
    let mut mark = |first: u32, last: u32, shown: Shown| {
        for cell in (first - 1) / per_cell..=(last - 1) / per_cell {
            if let Some(slot) = cells.get_mut(cell as usize) {
                if slot.is_none_or(|s| shown.rank() < s.rank()) {
                    *slot = Some(shown);
                }
            }
            if let Some(kinds) = kinds.get_mut(cell as usize) {
                let start = cell * per_cell + 1;
                let end = start + (per_cell - 1);
                let n = last.min(end) - first.max(start) + 1;
                match kinds.iter_mut().find(|(s, _)| *s == shown) {
                    Some((_, count)) => *count += n,
                    None => kinds.push((shown, n)),
                }
            }
        }
    };
    for (first, count, class, owner) in map.runs() {
        let first = first.get();
        let last = first.saturating_add(count.saturating_sub(1));
        if class.is_btree() && owner.is_none() {
            // Orphan pages: each by the table it was given to, if any.
            for page in first..=last {
                let to = PageNo::new(page).and_then(|p| given.get(&p)).copied();
                let orphan = Some(if to.is_some() {
                    Orphan::Attributed
                } else {
                    Orphan::Unattributed
                });
                mark(
                    page,
                    page,
                    Shown {
                        class,
                        object: to,
                        orphan,
                    },
                );
            }
        } else {
            let object = owner.and_then(|o| objects.get(&o)).copied();
            mark(
                first,
                last,
                Shown {
                    class,
                    object,
                    orphan: None,
                },
            );
        }
    }
    // First page, last page, what each cell shows and what its pages are.
    let mut runs: Vec<(u32, u32, Shown, Mix)> = Vec::new();
    for (i, shown) in cells.into_iter().enumerate() {
        let Some(shown) = shown else { continue };
        let first = (i as u32) * per_cell + 1;
        let last = (first + per_cell - 1).min(pages);
        let mut mix = kinds.get_mut(i).map(std::mem::take).unwrap_or_default();
        if mix.len() > 1 {
            // What the cell shows first, then by how telling.
            mix.sort_by_key(|(k, _)| (*k != shown, k.rank(), *k));
        } else {
            mix.clear();
        }
        match runs.last_mut() {
            Some((_, end, s, m)) if *s == shown && *m == mix && *end + 1 == first => *end = last,
            _ => runs.push((first, last, shown, mix)),
        }
    }
    let name = |s: Shown| s.object.and_then(|i| names.get(i)).cloned();
    PageMapReport {
        pages_per_cell: per_cell,
        runs: runs
            .into_iter()
            .map(|(first, last, s, mix)| MapRun {
                first,
                last,
                class: s.class.name().to_string(),
                object: name(s),
                orphan: s.orphan,
                mix: mix
                    .into_iter()
                    .map(|(k, pages)| MapMix {
                        pages,
                        class: k.class.name().to_string(),
                        object: name(k),
                        orphan: k.orphan,
                    })
                    .collect(),
            })
            .collect(),
    }
}
