//! The free space of one page, and the records carved from it.

use pager::{Database, Page, PageNo, PageType};

use crate::records::{as_read, stale_freeblocks, whole_records, Found, FreeblockRecords};
use crate::template::Template;
use crate::{Carved, Source};

/// What a page is to the carver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageRole {
    /// A page of a live b-tree: only its free space is carved, and what is found there is
    /// its own table's (the template index, when the tree is a table the carver knows).
    Live(Option<usize>),
    /// A freed page (freelist trunk or leaf, or a page nothing claims): its cells too.
    Free,
}

/// The deleted records on page `no`.
pub fn carve_page(
    db: &Database<'_>,
    no: PageNo,
    role: PageRole,
    templates: &[Template],
) -> Vec<Carved> {
    let Some(page) = db.page(no) else {
        return Vec::new();
    };
    let enc = db.encoding();
    let bytes = page.bytes();
    let usable = page.usable_size().min(bytes.len());
    let Some(bytes) = bytes.get(..usable) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let here = |i: usize| templates.get(i).is_some_and(|t| t.can_be_on(no));
    let header = page.btree_header().ok();
    let leaf = header.filter(|h| h.page_type() == PageType::TableLeaf);
    // A table's interior page was once its leaf (a root that split): rows stay in its
    // free space.
    let interior = header.filter(|h| h.page_type() == PageType::TableInterior);
    match (role, leaf.or(interior)) {
        (PageRole::Live(table), Some(h)) => {
            // The page's own table, or a dropped one whose page it may once have been.
            let allowed = |i: usize| {
                here(i) && (table == Some(i) || templates.get(i).is_some_and(|t| t.dropped))
            };
            free_space(
                &page,
                &h,
                bytes,
                templates,
                &allowed,
                enc,
                (Source::Freeblock, Source::Unallocated),
                table,
                &mut out,
            );
        }
        (PageRole::Live(_), None) => {}
        (PageRole::Free, Some(h)) => {
            // The page's own cells: rows of the table it belonged to.
            let mut owners: Vec<usize> = Vec::new();
            for cell in page.cells(&h).flatten().filter(|_| leaf.is_some()) {
                let Ok(mut row) = pager::decode_cell(db, &cell) else {
                    continue;
                };
                if !row.complete {
                    continue;
                }
                let fits: Vec<usize> = templates
                    .iter()
                    .enumerate()
                    .filter(|(i, t)| here(*i) && fits_values(t, &row.values))
                    .map(|(i, _)| i)
                    .collect();
                // A cell the page's pointers name is a record of the page's table even
                // when no shape known fits it (a dropped table whose statement is lost):
                // kept, unattributed.
                owners.extend(fits.iter().copied());
                as_read(&mut row.values, templates, &fits);
                out.push(Carved {
                    source: Source::Freelist,
                    page: no,
                    offset: u32::from(cell.offset),
                    table: (fits.len() == 1).then(|| fits.first().copied()).flatten(),
                    rowid: row.rowid,
                    values: row.values,
                    inferred: 0,
                    certain: false,
                });
            }
            // When the page's cells fit one table, the page was that table's.
            owners.sort_unstable();
            owners.dedup();
            let owner = match owners.as_slice() {
                [one] => Some(*one),
                _ => None,
            };
            if let Some(o) = owner {
                for c in out.iter_mut().filter(|c| c.table == Some(o)) {
                    c.certain = true;
                }
            }
            let allowed = |i: usize| here(i) && owner.is_none_or(|o| o == i);
            free_space(
                &page,
                &h,
                bytes,
                templates,
                &allowed,
                enc,
                (Source::Freelist, Source::Freelist),
                owner,
                &mut out,
            );
        }
        (PageRole::Free, None) => {
            // No b-tree header: a trunk page (its first 8 bytes and its list overwritten),
            // or a page whose header is gone. Records anywhere in it.
            let found = free_bytes(bytes, (0, bytes.len()), templates, &here, enc);
            place(found, no, 0, Source::Freelist, None, &mut out);
        }
    }
    out
}

/// The records of a table leaf's freeblocks and unallocated space.
#[allow(clippy::too_many_arguments)]
fn free_space(
    page: &Page<'_>,
    h: &pager::BtreePageHeader,
    bytes: &[u8],
    templates: &[Template],
    allowed: &dyn Fn(usize) -> bool,
    enc: pager::TextEncoding,
    (in_freeblock, in_unallocated): (Source, Source),
    own: Option<usize>,
    out: &mut Vec<Carved>,
) {
    let no = page.no();
    for block in page.freeblocks(h).flatten() {
        let on_page = (usize::from(block.offset), bytes.len());
        let found = FreeblockRecords::new(block.bytes, on_page, templates, allowed, enc).records();
        place(found, no, usize::from(block.offset), in_freeblock, own, out);
    }
    let start = h.cell_pointers_end();
    let end = (h.cell_content_area() as usize).min(bytes.len());
    if let Some(run) = bytes.get(start..end) {
        let found = free_bytes(run, (start, bytes.len()), templates, allowed, enc);
        place(found, no, start, in_unallocated, own, out);
    }
}

/// The records in a run of free bytes at offset `on_page.0` of a page of `on_page.1`
/// usable bytes: whole ones, and those of freeblocks whose headers are still there; a
/// record both find is taken once.
fn free_bytes(
    run: &[u8],
    on_page: (usize, usize),
    templates: &[Template],
    allowed: &dyn Fn(usize) -> bool,
    enc: pager::TextEncoding,
) -> Vec<Found> {
    let mut found = whole_records(run, 0, 0, templates, allowed, enc);
    for f in stale_freeblocks(run, on_page, templates, allowed, enc) {
        let again = found
            .iter()
            .any(|w| w.values == f.values && w.start < f.end && f.start < w.end);
        if !again {
            found.push(f);
        }
    }
    found.sort_by_key(|f| f.start);
    found
}

/// Places records found in a run that starts at `base` on page `no`.
fn place(
    found: Vec<Found>,
    no: PageNo,
    base: usize,
    source: Source,
    own: Option<usize>,
    out: &mut Vec<Carved>,
) {
    for f in found {
        let table = match f.tables.as_slice() {
            [one] => Some(*one),
            _ => None,
        };
        out.push(Carved {
            source,
            page: no,
            offset: u32::try_from(base + f.start).unwrap_or(u32::MAX),
            table,
            rowid: f.rowid,
            values: f.values,
            inferred: f.inferred,
            certain: table.is_some() && table == own,
        });
    }
}

/// Whether decoded values fit a template (their storage classes as serial types would).
fn fits_values(t: &Template, values: &[pager::Value]) -> bool {
    use pager::{SerialType as S, Value as V};
    t.slots.len() == values.len()
        && t.slots.iter().zip(values).all(|(s, v)| {
            s.admits(match v {
                V::Null => S::Null,
                V::Integer(_) => S::Integer(8),
                V::Real(_) => S::Float,
                V::Text(b) => S::Text(b.len() as u64),
                V::Blob(b) => S::Blob(b.len() as u64),
            })
        })
}
