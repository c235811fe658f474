//! A table leaf's content area, accounted byte by byte ("B-tree Pages"): on a page SQLite
//! wrote, the cells the cell pointer array names, the freeblocks and the fragmented free
//! bytes fill the cell content area exactly (`PRAGMA integrity_check` holds every page
//! to it). When they do not, the pointer array no longer tells the whole story (a cell
//! count zeroed, pointers moved into their cells), and the content area is read for what
//! it holds: well-formed cells, one after another, from the start of the area.
//!
//! ```text
//!            cell content area start                                   usable end
//!                     |                                                     |
//!  ... unallocated    | cell | cell | freeblock | cell | fragment | cell  ...|
//!                     ^ scan starts here, steps cell by cell, skips freeblocks
//! ```
//!
//! Only the area SQLite keeps for live cells is read: the freeblocks and the unallocated
//! space before the area hold deleted records, which are not rows of the table.

use crate::btree::{local_payload_len, BtreePageHeader, Page};
use crate::finding::Finding;
use crate::record::described_record_len;
use crate::types::{CellIndex, Location};
use crate::varint::read_varint;

/// One cell the walk reads from a table leaf whose pointer array does not account for
/// its content area, in the order read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// Cell pointer `index`, read where it points: a well-formed cell starts there.
    Listed(CellIndex),
    /// Cell pointer `index`, read where it points, though no well-formed cell starts there.
    Stray(CellIndex),
    /// A well-formed cell no pointer names, at `offset`; `ordinal` counts such cells on
    /// the page.
    Unlisted { offset: u16, ordinal: u16 },
}

/// What reading a table leaf's content area found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Account {
    /// The cells to read, in key order where known.
    pub slots: Vec<Slot>,
    /// Damage the accounting proves.
    pub findings: Vec<Finding>,
}

/// Reusable buffers, so that accounting a healthy leaf allocates nothing.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    spans: Vec<(usize, usize)>,
}

/// `None` when the pointer array accounts for every byte of the content area (every page
/// SQLite wrote); otherwise the cells found there and what disagreed.
pub(crate) fn account(
    page: &Page<'_>,
    header: &BtreePageHeader,
    page_count: u32,
    scratch: &mut Scratch,
) -> Option<Account> {
    if pointers_account(page, header, scratch) {
        return None;
    }
    Some(scan(page, header, page_count))
}

/// Whether the listed cells, the freeblocks and the fragmented bytes tile the content area.
fn pointers_account(page: &Page<'_>, header: &BtreePageHeader, scratch: &mut Scratch) -> bool {
    let usable = page.usable_size().min(page.bytes().len());
    let area = header.cell_content_area() as usize;
    if area < header.cell_pointers_end() || area > usable {
        return false;
    }
    let spans = &mut scratch.spans;
    spans.clear();
    for offset in page.cell_pointers(header) {
        let start = usize::from(offset);
        if start < area {
            return false;
        }
        match cell_len(page, start, usable) {
            Some(len) => spans.push((start, start + len)),
            None => return false,
        }
    }
    for block in page.freeblocks(header) {
        match block {
            Ok(b) => spans.push((
                usize::from(b.offset),
                usize::from(b.offset) + usize::from(b.size),
            )),
            Err(_) => return false,
        }
    }
    spans.sort_unstable();
    let mut at = area;
    let mut gaps = 0usize;
    for &(start, end) in spans.iter() {
        if start < at || end > usable {
            return false;
        }
        gaps += start - at;
        at = end;
    }
    gaps += usable - at;
    gaps == usize::from(header.fragmented_free_bytes())
}

/// The length of the table leaf cell at `start`, however its record reads.
fn cell_len(page: &Page<'_>, start: usize, usable: usize) -> Option<usize> {
    let bytes = page.bytes().get(start..usable)?;
    let (total, n1) = read_varint(bytes)?;
    let (_, n2) = read_varint(bytes.get(n1..)?)?;
    let local = local_payload_len(true, total, page.usable_size());
    let spill = if (local as u64) < total { 4 } else { 0 };
    let len = (n1 + n2 + local + spill).max(4);
    (start + len <= usable).then_some(len)
}

/// A cell at `start` that is well formed: its record header describes exactly its
/// payload, with at least one column and no reserved serial type, the cell ends before
/// `limit`, and a spilled payload names a page of the file. Returns its length and rowid.
fn well_formed_cell(
    page: &Page<'_>,
    start: usize,
    limit: usize,
    page_count: u32,
) -> Option<(usize, i64)> {
    let bytes = page.bytes().get(start..limit)?;
    let (total, n1) = read_varint(bytes)?;
    let (rowid, n2) = read_varint(bytes.get(n1..)?)?;
    let local_len = local_payload_len(true, total, page.usable_size());
    let local = bytes.get(n1 + n2..n1 + n2 + local_len)?;
    let (header_len, size_len) = read_varint(local)?;
    if header_len <= size_len as u64 {
        return None;
    }
    let at = Location::new(page.no(), start);
    if described_record_len(local, total, at).ok()? != total {
        return None;
    }
    let mut len = n1 + n2 + local_len;
    if (local_len as u64) < total {
        let first = crate::cursor::u32_at(bytes, len)?;
        if first < 2 || first > page_count {
            return None;
        }
        len += 4;
    }
    let len = len.max(4);
    (start + len <= limit).then_some((len, rowid as i64))
}

/// The cells found reading a content area from its start.
struct AreaCells {
    /// Where the area was taken to start.
    start: usize,
    /// `(offset, length, rowid)` of every well-formed cell, ascending by offset.
    found: Vec<(usize, usize, i64)>,
    /// Bytes read at which no well-formed cell starts (freeblocks are skipped).
    unaccounted: usize,
}

/// Reads the content area from its start, cell after cell, skipping freeblocks: every
/// well-formed cell, and the bytes that start none.
fn read_area(page: &Page<'_>, header: &BtreePageHeader, page_count: u32) -> AreaCells {
    let usable = page.usable_size().min(page.bytes().len());
    let area = header.cell_content_area() as usize;
    let ptr_end = header.cell_pointers_end();
    // Where the content area starts: the header says, unless it says the impossible; then
    // the lowest pointer into the page does (never the unallocated space before it, where
    // deleted records lie).
    let start = if (ptr_end..=page.usable_size()).contains(&area) {
        area
    } else {
        page.cell_pointers(header)
            .map(usize::from)
            .filter(|&p| p >= ptr_end && p < usable)
            .min()
            .unwrap_or(usable)
    };
    let free: Vec<(usize, usize)> = page
        .freeblocks(header)
        .map_while(Result::ok)
        .map(|b| {
            (
                usize::from(b.offset),
                usize::from(b.offset) + usize::from(b.size),
            )
        })
        .filter(|&(s, _)| s >= start)
        .collect();
    // (offset, length, rowid) of every cell found, ascending by offset.
    let mut found: Vec<(usize, usize, i64)> = Vec::new();
    let mut pos = start;
    let mut unaccounted = 0usize;
    let mut next_free = free.iter().peekable();
    while pos < usable {
        let limit = next_free.peek().map_or(usable, |&&(s, _)| s.max(pos));
        if pos == limit {
            if let Some(&(_, end)) = next_free.next() {
                pos = pos.max(end);
                continue;
            }
            break;
        }
        match well_formed_cell(page, pos, limit, page_count) {
            Some((len, rowid)) => {
                found.push((pos, len, rowid));
                pos += len;
            }
            None => {
                unaccounted += 1;
                pos += 1;
            }
        }
    }
    AreaCells {
        start,
        found,
        unaccounted,
    }
}

/// Reads the content area ([`read_area`]) and matches the pointer array against what it
/// found.
fn scan(page: &Page<'_>, header: &BtreePageHeader, page_count: u32) -> Account {
    let no = page.no();
    let usable = page.usable_size().min(page.bytes().len());
    let AreaCells {
        start,
        found,
        unaccounted,
    } = read_area(page, header, page_count);
    let mut findings = Vec::new();
    let mut slots = Vec::new();
    let mut named: Vec<Option<CellIndex>> = vec![None; found.len()];
    // Pointers into bytes that hold no well-formed cell, with where they point.
    let mut lenient: Vec<(CellIndex, u16)> = Vec::new();
    for (i, offset) in page.cell_pointers(header).enumerate() {
        let index = CellIndex(i as u16);
        let at = usize::from(offset);
        let within = found.partition_point(|&(s, _, _)| s <= at);
        let cell = within
            .checked_sub(1)
            .and_then(|k| Some((k, *found.get(k)?)));
        match cell {
            Some((k, (s, _, _))) if s == at && named.get(k).is_some_and(Option::is_none) => {
                if let Some(slot) = named.get_mut(k) {
                    *slot = Some(index);
                }
            }
            Some((_, (s, len, _))) if at < s + len => findings.push(Finding::CellPointerIntoCell {
                page: no,
                index,
                offset,
                cell: s as u16,
            }),
            // A pointer into bytes that hold no well-formed cell: read as it points, so
            // that whatever it holds is reported the way a damaged cell always is.
            _ => lenient.push((index, offset)),
        }
    }
    let mut ordered: Vec<(i64, Slot)> = Vec::with_capacity(found.len());
    let mut ordinal = 0u16;
    for (&(offset, _, rowid), named) in found.iter().zip(&named) {
        if let Some(index) = *named {
            ordered.push((rowid, Slot::Listed(index)));
        } else {
            ordered.push((
                rowid,
                Slot::Unlisted {
                    offset: offset as u16,
                    ordinal,
                },
            ));
            ordinal += 1;
        }
    }
    if ordinal > 0 {
        findings.push(Finding::CellsUnlisted {
            page: no,
            count: ordinal,
        });
    }
    let fragments = usize::from(header.fragmented_free_bytes());
    if unaccounted > fragments {
        findings.push(Finding::ContentUnaccounted {
            page: no,
            bytes: unaccounted as u32,
        });
    }
    ordered.sort_by_key(|&(rowid, _)| rowid);
    slots.extend(ordered.into_iter().map(|(_, s)| s));
    // A pointer that leads to no cell, on a page whose content area holds cells no pointer
    // names, was one of those cells' pointer: the cell is read where it lies, once, and the
    // pointer is not read as a cell of its own (it would count as a row lost). Pointers
    // out of the content area go first; the rest are read as they point.
    let inside = |offset: u16| (start..usable).contains(&usize::from(offset));
    lenient.sort_by_key(|&(_, offset)| inside(offset));
    let explained = lenient.len().min(usize::from(ordinal));
    findings.extend(
        lenient
            .drain(..explained)
            .map(|(index, offset)| Finding::CellPointerAstray {
                page: no,
                index,
                offset,
            }),
    );
    findings.extend(freeblock_findings(page, header, &lenient, usable));
    slots.extend(lenient.into_iter().map(|(index, _)| Slot::Stray(index)));
    Account { slots, findings }
}

/// What is wrong with the page's freeblocks: the chain's own fault (out of range, not
/// ascending, which also catches a loop), and each freeblock that covers bytes of a cell
/// a pointer of `pointed` names (`(pointer, offset)`: pointers to no well-formed cell,
/// which is what a live cell under a freeblock is to [`read_area`]).
fn freeblock_findings(
    page: &Page<'_>,
    header: &BtreePageHeader,
    pointed: &[(CellIndex, u16)],
    usable: usize,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut blocks: Vec<(usize, usize)> = Vec::new();
    for block in page.freeblocks(header) {
        match block {
            Ok(b) => blocks.push((
                usize::from(b.offset),
                usize::from(b.offset) + usize::from(b.size),
            )),
            Err(f) => out.push(f),
        }
    }
    for &(_, cell) in pointed {
        let start = usize::from(cell);
        let Some(len) = cell_len(page, start, usable) else {
            continue;
        };
        let covering = blocks.iter().find(|&&(s, e)| s < start + len && start < e);
        if let Some(&(s, _)) = covering {
            out.push(Finding::FreeblockOverCell {
                page: page.no(),
                offset: s as u16,
                cell,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::btree::CellSource;
    use crate::database::Database;
    use crate::finding::Finding;
    use crate::testing::{messages, no, Db};
    use crate::walk::{BtreeWalk, TreeItem};

    /// The rowids and listed flags of every table leaf cell the walk yields on `page`.
    fn cells_of(db: &Db, root: u32, page: u32) -> Vec<(Option<i64>, bool)> {
        let pdb = Database::open(&db.bytes).unwrap();
        BtreeWalk::new(&pdb, no(root))
            .filter_map(|i| match i {
                Ok(TreeItem::Cell(c)) if c.location.page == no(page) => {
                    Some((c.cell.rowid(), c.source == CellSource::Pointer))
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn leaf_whose_cell_count_is_zeroed_is_read_from_its_content_area() {
        let (mut db, root) = messages();
        let leaf = db.walk("messages").pages.leaves[1];
        let rowids: Vec<Option<i64>> = cells_of(&db, root, leaf).into_iter().map(|c| c.0).collect();
        assert!(rowids.len() > 1);
        #[rustfmt::skip]
        let count = [
            0x00, 0x00, // cell count: 0, its cells left in the content area
        ];
        let at = db.at(leaf, 3);
        db.bytes[at..at + 2].copy_from_slice(&count);
        assert_eq!(
            db.walk_findings(root),
            vec![Finding::CellsUnlisted {
                page: no(leaf),
                count: rowids.len() as u16
            }]
        );
        // Every cell comes back once, in key order, marked as found in the content area.
        let found = cells_of(&db, root, leaf);
        assert_eq!(
            found,
            rowids.iter().map(|r| (*r, false)).collect::<Vec<_>>()
        );
    }

    #[test]
    fn pointers_moved_into_their_cells_are_not_read_as_cells() {
        let (mut db, root) = messages();
        let leaf = db.walk("messages").pages.leaves[2];
        let rowids: Vec<Option<i64>> = cells_of(&db, root, leaf).into_iter().map(|c| c.0).collect();
        let n = db.btree_page(leaf).cell_count;
        for i in 0..n {
            let at = 8 + 2 * usize::from(i);
            let pointer =
                u16::from_be_bytes([db.bytes[db.at(leaf, at)], db.bytes[db.at(leaf, at + 1)]]);
            db.set_u16(leaf, at, pointer + 1 + i % 3); // one to three bytes into its cell
        }
        let findings = db.walk_findings(root);
        assert_eq!(findings.len(), usize::from(n) + 1, "{findings:?}");
        assert!(findings[..usize::from(n)]
            .iter()
            .all(|f| matches!(f, Finding::CellPointerIntoCell { .. })));
        assert_eq!(
            findings.last(),
            Some(&Finding::CellsUnlisted {
                page: no(leaf),
                count: n
            })
        );
        let found = cells_of(&db, root, leaf);
        assert_eq!(
            found,
            rowids.iter().map(|r| (*r, false)).collect::<Vec<_>>()
        );
    }

    /// The offsets of the cells of `leaf`, ascending, and where its content area starts.
    fn offsets(db: &Db, leaf: u32) -> (Vec<usize>, usize) {
        let n = db.btree_page(leaf).cell_count;
        let mut offsets: Vec<usize> = (0..n).map(|i| db.cell(leaf, i).offset).collect();
        offsets.sort_unstable();
        let area = u16::from_be_bytes([db.bytes[db.at(leaf, 5)], db.bytes[db.at(leaf, 6)]]);
        (offsets, usize::from(area))
    }

    /// A freeblock whose size was raised over the live cell after it: a finding, and the
    /// cell is still read where its pointer says.
    #[test]
    fn a_freeblock_over_a_live_cell_is_a_finding_and_the_cell_is_still_read() {
        let (mut db, root) = messages();
        let leaf = db.walk("messages").pages.leaves[1];
        let before = cells_of(&db, root, leaf);
        let (offsets, area) = offsets(&db, leaf);
        assert_eq!(offsets[0], area, "a fresh leaf is packed");
        let lowest = offsets[1] - offsets[0];
        // The content area starts 8 bytes lower, where a freeblock now lies that covers
        // those 8 bytes and the lowest cell.
        let block = area - 8;
        db.set_u16(leaf, 5, block as u16);
        db.set_u16(leaf, 1, block as u16);
        db.set_u16(leaf, block, 0);
        db.set_u16(leaf, block + 2, (8 + lowest) as u16);
        assert_eq!(
            db.walk_findings(root),
            vec![Finding::FreeblockOverCell {
                page: no(leaf),
                offset: block as u16,
                cell: area as u16
            }]
        );
        let rowids = |cells: Vec<(Option<i64>, bool)>| {
            let mut r: Vec<Option<i64>> = cells.into_iter().map(|c| c.0).collect();
            r.sort_unstable();
            r
        };
        assert_eq!(rowids(cells_of(&db, root, leaf)), rowids(before));
    }

    /// A freeblock that names itself as the next: the chain's fault is a finding.
    #[test]
    fn a_freeblock_chain_that_loops_is_a_finding() {
        let (mut db, root) = messages();
        let leaf = db.walk("messages").pages.leaves[1];
        let (_, area) = offsets(&db, leaf);
        let block = area - 8;
        db.set_u16(leaf, 5, block as u16);
        db.set_u16(leaf, 1, block as u16);
        db.set_u16(leaf, block, block as u16);
        db.set_u16(leaf, block + 2, 8);
        assert_eq!(
            db.walk_findings(root),
            vec![Finding::FreeblockOutOfOrder {
                page: no(leaf),
                offset: block as u16
            }]
        );
    }

    /// Seeded random bytes over a table leaf's header fields, pointer array and content
    /// area: the walk never panics, and the cells it yields from that leaf lie inside the
    /// page, never overlap, and a cell found in the content area never starts before it.
    #[test]
    fn random_bytes_over_a_leaf_give_cells_that_never_overlap() {
        let (clean, root) = messages();
        let leaf = clean.walk("messages").pages.leaves[3];
        let mut rng = fixtures::prng::SplitMix64::new(0x1eaf);
        let mut scanned = 0;
        for round in 0..400 {
            let mut bytes = clean.bytes.clone();
            let page = clean.page_size();
            for _ in 0..rng.range(1, 12) {
                let at = match rng.below(3) {
                    0 => rng.below(8) as usize,           // header fields
                    1 => 8 + rng.below(64) as usize,      // pointer array
                    _ => rng.below(page as u64) as usize, // anywhere, content included
                };
                let v = rng.below(256) as u8;
                bytes[clean.at(leaf, at.min(page - 1))] = v;
            }
            let pdb = Database::open(&bytes).unwrap();
            let mut spans: Vec<(usize, usize, CellSource)> = BtreeWalk::new(&pdb, no(root))
                .filter_map(|i| match i {
                    Ok(TreeItem::Cell(c)) if c.location.page == no(leaf) => Some((
                        usize::from(c.offset),
                        usize::from(c.offset) + c.len,
                        c.source,
                    )),
                    _ => None,
                })
                .collect();
            spans.sort_unstable_by_key(|s| (s.0, s.1));
            scanned += usize::from(spans.iter().any(|s| s.2 == CellSource::ContentArea));
            for (start, end, _) in &spans {
                assert!(*end <= page, "round {round}: cell past the page");
                assert!(start < end, "round {round}");
            }
            // Cells the content area vouches for never share a byte.
            let vouched: Vec<&(usize, usize, CellSource)> = spans
                .iter()
                .filter(|s| s.2 != CellSource::StrayPointer)
                .collect();
            for w in vouched.windows(2) {
                assert!(
                    w[0].1 <= w[1].0,
                    "round {round}: {:?} overlaps {:?}",
                    w[0],
                    w[1]
                );
            }
        }
        assert!(
            scanned > 40,
            "the content-area scan ran in {scanned} rounds"
        );
    }
}
