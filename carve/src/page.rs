//! The free space of one page, and the records carved from it.

use pager::{Database, Page, PageNo, PageType};

use crate::records::{as_read, stale_freeblocks, whole_records, Found, FreeblockRecords, Shapes};
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
    // A dropped table whose lone root this page was owns it among the dropped tables: a
    // record here that fits another dropped table alike is still its.
    let pinned = templates.iter().any(|t| t.dropped && t.only_on == Some(no));
    let here = |i: usize| {
        templates
            .get(i)
            .is_some_and(|t| t.can_be_on(no) && !(pinned && t.dropped && t.only_on != Some(no)))
    };
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
            let shapes = Shapes {
                templates,
                allowed: &allowed,
                enc,
            };
            free_space(
                &page,
                &h,
                bytes,
                shapes,
                (Source::Freeblock, Source::Unallocated),
                table,
                &mut out,
            );
        }
        (PageRole::Live(_), None) => {}
        (PageRole::Free, Some(h)) => {
            // A leaf's own cells first: whose they are says whose its free space is.
            let here_only = Shapes {
                templates,
                allowed: &here,
                enc,
            };
            let owner = leaf.and_then(|leaf| own_cells(db, &page, &leaf, here_only, &mut out));
            let allowed = |i: usize| here(i) && owner.is_none_or(|o| o == i);
            let shapes = Shapes {
                templates,
                allowed: &allowed,
                enc,
            };
            free_space(
                &page,
                &h,
                bytes,
                shapes,
                (Source::Freelist, Source::Freelist),
                owner,
                &mut out,
            );
        }
        (PageRole::Free, None) => {
            // No b-tree header: a trunk page (its first 8 bytes and its list overwritten),
            // or a page whose header is gone. Records anywhere in it.
            let shapes = Shapes {
                templates,
                allowed: &here,
                enc,
            };
            let found = free_bytes(bytes, (0, bytes.len()), shapes);
            place(found, no, 0, Source::Freelist, None, &mut out);
        }
    }
    out
}

/// The cells a freed table leaf's pointers still name: rows of the table it belonged to,
/// each attributed to the templates it fits of those `shapes` allows here. The page's
/// table, when its cells fit one table alone (those cells are then certain).
fn own_cells(
    db: &Database<'_>,
    page: &Page<'_>,
    h: &pager::BtreePageHeader,
    shapes: Shapes<'_>,
    out: &mut Vec<Carved>,
) -> Option<usize> {
    let mut owners: Vec<usize> = Vec::new();
    let first = out.len();
    for cell in page.cells(h).flatten() {
        let Ok(mut row) = pager::decode_cell(db, &cell) else {
            continue;
        };
        if !row.complete {
            continue;
        }
        let fits: Vec<usize> = shapes
            .templates
            .iter()
            .enumerate()
            .filter(|(i, t)| (shapes.allowed)(*i) && fits_values(t, &row.values))
            .map(|(i, _)| i)
            .collect();
        // A cell the page's pointers name is a record of the page's table even
        // when no shape known fits it (a dropped table whose statement is lost):
        // kept, unattributed.
        owners.extend(fits.iter().copied());
        as_read(&mut row.values, shapes.templates, &fits);
        out.push(Carved {
            source: Source::Freelist,
            page: page.no(),
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
        let own = out.get_mut(first..).unwrap_or_default();
        for c in own.iter_mut().filter(|c| c.table == Some(o)) {
            c.certain = true;
        }
    }
    owner
}

/// The records of a table leaf's freeblocks and unallocated space.
fn free_space(
    page: &Page<'_>,
    h: &pager::BtreePageHeader,
    bytes: &[u8],
    shapes: Shapes<'_>,
    (in_freeblock, in_unallocated): (Source, Source),
    own: Option<usize>,
    out: &mut Vec<Carved>,
) {
    let no = page.no();
    for block in page.freeblocks(h).flatten() {
        let on_page = (usize::from(block.offset), bytes.len());
        let found = FreeblockRecords::new(block.bytes, on_page, shapes).records();
        place(found, no, usize::from(block.offset), in_freeblock, own, out);
    }
    let start = h.cell_pointers_end();
    let end = (h.cell_content_area() as usize).min(bytes.len());
    if let Some(run) = bytes.get(start..end) {
        let found = free_bytes(run, (start, bytes.len()), shapes);
        place(found, no, start, in_unallocated, own, out);
    }
}

/// The records in a run of free bytes at offset `on_page.0` of a page of `on_page.1`
/// usable bytes: whole ones, and those of freeblocks whose headers are still there; a
/// record both find is taken once.
fn free_bytes(run: &[u8], (base, page_len): (usize, usize), shapes: Shapes<'_>) -> Vec<Found> {
    // Bytes never written are zeros (99.8 % of the unallocated space of the pages of a
    // store filled in rowid order), and no reading starts among them: a record's header
    // starts with its size, never 0, and a cell's payload length before it is not 0
    // either; a freeblock's header holds its size (6 or more) in its third and fourth
    // bytes. Every reading starts at most 3 bytes before the first byte that is not 0:
    // the zeros before are passed over 16 at a time, where each was tried as the start
    // of a record and of a freeblock.
    let Some(first) = first_not_zero(run) else {
        return Vec::new();
    };
    let skip = first.saturating_sub(3);
    let run = run.get(skip..).unwrap_or_default();
    let mut found = whole_records(run, 0, 0, shapes);
    for f in stale_freeblocks(run, (base + skip, page_len), shapes) {
        let again = found
            .iter()
            .any(|w| w.values == f.values && w.start < f.end && f.start < w.end);
        if !again {
            found.push(f);
        }
    }
    found.sort_by_key(|f| f.start);
    for f in &mut found {
        f.start += skip;
        f.end += skip;
    }
    found
}

/// Where the first byte of `bytes` that is not 0 is.
fn first_not_zero(bytes: &[u8]) -> Option<usize> {
    let mut chunks = bytes.chunks_exact(16);
    let at = chunks
        .by_ref()
        .take_while(|c| c.iter().all(|b| *b == 0))
        .count()
        * 16;
    bytes
        .get(at..)?
        .iter()
        .position(|b| *b != 0)
        .map(|i| at + i)
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

#[cfg(test)]
mod tests {
    //! Page 2 of small files of 512-byte pages, laid out as "B-tree Pages" describes:
    //! the b-tree page header, the cell pointer array, unallocated space, then the cell
    //! content area with its cells and freeblocks.

    use pager::Value;

    use super::*;
    use crate::testing::{file, notes, page, template};

    /// Runs of free bytes whose first bytes are zeros give the readings the run gives
    /// when every byte is tried as the start of a record and of a freeblock: random runs
    /// of zeros, whole deleted cells, freeblock headers over cells, and random bytes (a
    /// header's `00 00 00 0b` starts with zeros, a cell's payload length is never 0).
    #[test]
    fn zeros_passed_over_give_the_readings_of_every_byte_tried() {
        let templates = [notes(), template("pair", &[("a", ""), ("b", "INTEGER")])];
        let all = |_: usize| true;
        let shapes = Shapes {
            templates: &templates,
            allowed: &all,
            enc: pager::TextEncoding::Utf8,
        };
        // Every byte tried: the readings before zeros were passed over.
        let every_byte = |run: &[u8], base: usize| {
            let mut found = whole_records(run, 0, 0, shapes);
            for f in stale_freeblocks(run, (base, 512), shapes) {
                if !found
                    .iter()
                    .any(|w| w.values == f.values && w.start < f.end && f.start < w.end)
                {
                    found.push(f);
                }
            }
            found.sort_by_key(|f| f.start);
            found
        };
        let mut state = 0x2545_F491_4F6C_DD1D_u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            usize::try_from(state % n).unwrap()
        };
        let mut readings = 0;
        for _ in 0..3000 {
            let mut run = vec![0u8; next(40)];
            for _ in 0..next(4) {
                match next(4) {
                    0 => run.extend_from_slice(&DELETED_CELL),
                    1 => run.extend_from_slice(&freeblock(0)),
                    2 => run.extend(std::iter::repeat_n(0, next(8))),
                    _ => run.extend((0..next(12)).map(|_| next(256) as u8)),
                }
            }
            let base = 100;
            let found = free_bytes(&run, (base, 512), shapes);
            assert_eq!(found, every_byte(&run, base), "{run:02x?}");
            readings += found.len();
        }
        assert!(readings > 1000, "{readings} readings");
        assert_eq!(first_not_zero(&[0; 40]), None);
        assert_eq!(first_not_zero(&[]), None);
        for at in 0..40 {
            let mut bytes = [0u8; 40];
            bytes[at] = 7;
            assert_eq!(first_not_zero(&bytes), Some(at));
        }
    }

    fn two() -> PageNo {
        PageNo::new(2).unwrap()
    }

    /// The live cell every page 2 here ends with: notes row ("ok", "go", 1), rowid 1.
    #[rustfmt::skip]
    const LIVE_CELL: [u8; 11] = [
        0x09,       // payload length: 9
        0x01,       // rowid: 1
        0x04,       // header size: 4
        0x11, 0x11, // serial types: text of 2 bytes, twice
        0x01,       // serial type: 8-bit integer
        b'o', b'k', b'g', b'o', 0x01,
    ];

    /// A freed cell of notes row ("hi", "yo", 3), its first 4 bytes a freeblock header
    /// with `next` and a size of 11.
    #[rustfmt::skip]
    fn freeblock(next: u16) -> [u8; 11] {
        let [hi, lo] = next.to_be_bytes();
        [
            hi, lo,     // next freeblock
            0x00, 0x0b, // freeblock size: 11
            0x11, 0x01, b'h', b'i', b'y', b'o', 0x03,
        ]
    }

    /// A deleted cell, whole: notes row ("hi", "yo", 3), rowid 7.
    #[rustfmt::skip]
    const DELETED_CELL: [u8; 11] = [
        0x09, 0x07, 0x04, 0x11, 0x11, 0x01, b'h', b'i', b'y', b'o', 0x03,
    ];

    /// A table leaf whose freeblock chain starts at `first_freeblock` and whose content
    /// area starts at `content`, with [`LIVE_CELL`] at 501 and `parts` written over it.
    fn leaf(first_freeblock: u16, content: u16, parts: &[(usize, &[u8])]) -> Vec<u8> {
        let [f1, f2] = first_freeblock.to_be_bytes();
        let [c1, c2] = content.to_be_bytes();
        #[rustfmt::skip]
        let header = [
            0x0d,     // page type: table b-tree leaf
            f1, f2,   // first freeblock
            0x00, 0x01, // cell count: 1
            c1, c2,   // cell content area
            0x00,     // fragmented free bytes
            0x01, 0xf5, // cell pointer 0: 501
        ];
        let mut all = vec![(0, &header[..]), (501, &LIVE_CELL[..])];
        all.extend_from_slice(parts);
        page(&all)
    }

    fn hiyo() -> Vec<Value> {
        vec![
            Value::Text(b"hi".to_vec()),
            Value::Text(b"yo".to_vec()),
            Value::Integer(3),
        ]
    }

    fn carve(bytes: &[u8], role: PageRole, templates: &[Template]) -> Vec<Carved> {
        let db = Database::open(bytes).unwrap();
        carve_page(&db, two(), role, templates)
    }

    #[test]
    fn freeblock_of_a_live_leaf_gives_a_row_of_its_table() {
        let bytes = file(&[leaf(490, 490, &[(490, &freeblock(0))])]);
        assert_eq!(
            carve(&bytes, PageRole::Live(Some(0)), &[notes()]),
            vec![Carved {
                source: Source::Freeblock,
                page: two(),
                offset: 492,
                table: Some(0),
                rowid: None,
                values: hiyo(),
                inferred: 2,
                certain: true,
            }]
        );
    }

    #[test]
    fn unallocated_space_of_a_live_leaf_keeps_a_whole_deleted_cell() {
        // Between the cell pointer array (ending at 10) and the content area (501).
        let bytes = file(&[leaf(0, 501, &[(400, &DELETED_CELL)])]);
        assert_eq!(
            carve(&bytes, PageRole::Live(Some(0)), &[notes()]),
            vec![Carved {
                source: Source::Unallocated,
                page: two(),
                offset: 402,
                table: Some(0),
                rowid: Some(7),
                values: hiyo(),
                inferred: 0,
                certain: true,
            }]
        );
    }

    #[test]
    fn content_area_meeting_the_pointer_array_leaves_no_unallocated_space() {
        // The deleted cell lies in the content area, in no freeblock: not free space.
        let bytes = file(&[leaf(0, 10, &[(400, &DELETED_CELL)])]);
        assert_eq!(carve(&bytes, PageRole::Live(Some(0)), &[notes()]), vec![]);
    }

    #[test]
    fn freeblock_chain_that_loops_is_carved_once() {
        // 470 -> 490 -> 470: the second pointer goes back, which ends the chain.
        let bytes = file(&[leaf(
            470,
            470,
            &[(470, &freeblock(490)), (490, &freeblock(470))],
        )]);
        let found = carve(&bytes, PageRole::Live(Some(0)), &[notes()]);
        let offsets: Vec<u32> = found.iter().map(|c| c.offset).collect();
        assert_eq!(offsets, vec![472, 492]);
    }

    #[test]
    fn freeblock_whose_size_runs_past_the_page_is_not_read() {
        #[rustfmt::skip]
        let past = [
            0x00, 0x00, // next freeblock: none
            0x01, 0x00, // freeblock size: 256, past the page's end at 512
            0x11, 0x01, b'h', b'i', b'y', b'o', 0x03,
        ];
        let bytes = file(&[leaf(490, 490, &[(490, &past)])]);
        assert_eq!(carve(&bytes, PageRole::Live(Some(0)), &[notes()]), vec![]);
    }

    #[test]
    fn live_page_of_an_unknown_table_gives_only_dropped_tables_rows() {
        let bytes = file(&[leaf(490, 490, &[(490, &freeblock(0))])]);
        assert_eq!(carve(&bytes, PageRole::Live(None), &[notes()]), vec![]);
        // A dropped table's page may have gone to any live table since.
        let dropped = Template {
            dropped: true,
            ..notes()
        };
        let found = carve(&bytes, PageRole::Live(None), &[dropped]);
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].table, found[0].certain), (Some(0), false));
    }

    #[test]
    fn table_whose_records_are_on_one_other_page_is_not_carved_here() {
        let bytes = file(&[leaf(490, 490, &[(490, &freeblock(0))])]);
        let elsewhere = Template {
            only_on: PageNo::new(3),
            ..notes()
        };
        assert_eq!(carve(&bytes, PageRole::Live(Some(0)), &[elsewhere]), vec![]);
    }

    #[test]
    fn free_space_of_a_table_interior_page_is_carved() {
        // A root that split was a leaf: its old cells stay in its free space.
        #[rustfmt::skip]
        let header = [
            0x05,       // page type: table b-tree interior
            0x00, 0x00, // first freeblock: none
            0x00, 0x00, // cell count: 0
            0x01, 0xf5, // cell content area: 501
            0x00,       // fragmented free bytes
            0x00, 0x00, 0x00, 0x03, // right-most pointer: page 3
        ];
        let bytes = file(&[
            page(&[(0, &header), (400, &DELETED_CELL)]),
            leaf(0, 501, &[]),
        ]);
        let found = carve(&bytes, PageRole::Live(Some(0)), &[notes()]);
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].source, found[0].offset),
            (Source::Unallocated, 402)
        );
    }

    #[test]
    fn live_page_without_a_btree_header_gives_nothing() {
        // An overflow page ("Cell Payload Overflow Pages") holding a record's bytes.
        let overflow = page(&[(0, &[0, 0, 0, 0]), (4, &DELETED_CELL)]);
        let bytes = file(&[overflow]);
        assert_eq!(carve(&bytes, PageRole::Live(Some(0)), &[notes()]), vec![]);
    }

    #[test]
    fn page_past_the_end_of_the_file_gives_nothing() {
        let bytes = file(&[]);
        assert_eq!(carve(&bytes, PageRole::Free, &[notes()]), vec![]);
    }

    #[test]
    fn freed_leaf_gives_its_cells_and_free_space_as_its_tables_rows() {
        let bytes = file(&[leaf(490, 490, &[(490, &freeblock(0))])]);
        // A table of the cells' first two columns only is no fit.
        let short = template("short", &[("title", "TEXT"), ("body", "TEXT")]);
        let found = carve(&bytes, PageRole::Free, &[short, notes()]);
        let summary: Vec<_> = found
            .iter()
            .map(|c| (c.source, c.offset, c.table, c.rowid, c.certain))
            .collect();
        assert_eq!(
            summary,
            vec![
                // The cell its pointer names, then the freeblock's.
                (Source::Freelist, 501, Some(1), Some(1), true),
                (Source::Freelist, 492, Some(1), None, true),
            ]
        );
    }

    #[test]
    fn freed_leaf_whose_cells_fit_two_tables_is_neither_tables() {
        let bytes = file(&[leaf(0, 501, &[])]);
        let twin = template(
            "twin",
            &[("title", "TEXT"), ("body", "TEXT"), ("stars", "INTEGER")],
        );
        let found = carve(&bytes, PageRole::Free, &[notes(), twin]);
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].table, found[0].certain), (None, false));
        assert_eq!(found[0].rowid, Some(1));
    }

    #[test]
    fn freed_leaf_holding_rows_of_two_tables_says_no_owner() {
        // Its cells fit two different tables: the page does not say whose it was, so the
        // record of its freeblock is attributed by its shape alone.
        #[rustfmt::skip]
        let header = [
            0x0d,       // page type: table b-tree leaf
            0x01, 0xe3, // first freeblock: 483
            0x00, 0x02, // cell count: 2
            0x01, 0xe3, // cell content area: 483
            0x00,       // fragmented free bytes
            0x01, 0xee, // cell pointer 0: 494
            0x01, 0xf5, // cell pointer 1: 501
        ];
        #[rustfmt::skip]
        let pair_cell = [
            0x05,       // payload length: 5
            0x02,       // rowid: 2
            0x03,       // header size: 3
            0x01, 0x01, // serial types: 8-bit integer, twice
            0x05, 0x06,
        ];
        let bytes = file(&[page(&[
            (0, &header),
            (483, &freeblock(0)),
            (494, &pair_cell),
            (501, &LIVE_CELL),
        ])]);
        let pair = template("pair", &[("a", "INTEGER"), ("b", "INTEGER")]);
        let found = carve(&bytes, PageRole::Free, &[notes(), pair]);
        let summary: Vec<_> = found
            .iter()
            .map(|c| (c.offset, c.table, c.certain))
            .collect();
        assert_eq!(
            summary,
            vec![
                (494, Some(1), false),
                (501, Some(0), false),
                (485, Some(0), false)
            ]
        );
    }

    #[test]
    fn freed_page_without_a_btree_header_is_read_for_records_anywhere() {
        // A freelist trunk page ("The Freelist"): next trunk, leaf count, then what the
        // page held before.
        #[rustfmt::skip]
        let trunk = [
            0x00, 0x00, 0x00, 0x00, // next freelist trunk page: none
            0x00, 0x00, 0x00, 0x00, // leaf page numbers: 0
        ];
        let bytes = file(&[page(&[(0, &trunk), (300, &DELETED_CELL)])]);
        assert_eq!(
            carve(&bytes, PageRole::Free, &[notes()]),
            vec![Carved {
                source: Source::Freelist,
                page: two(),
                offset: 302,
                table: Some(0),
                rowid: Some(7),
                values: hiyo(),
                inferred: 0,
                certain: false,
            }]
        );
    }
}
