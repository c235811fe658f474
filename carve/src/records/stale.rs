//! Stale freeblocks: blocks that stopped being ones (the content area moved past them,
//! their page was freed), found by the 4-byte header they keep.

use super::freeblock::{may_start_cell, next_block_fits, FreeblockRecords};
use super::{Found, Shapes};

/// The records of the freeblocks whose headers are still in `run`, a run of free bytes
/// starting at offset `base` of its page: a block that stopped being one (the content area
/// moved past it, the page was freed) keeps its header and its cells, the first of them
/// overwritten. A header is 4 bytes: the next block's offset (0, or further on the page)
/// and the block's size (within the run); the block is taken when its first cell is
/// rebuilt from it and every cell after it is borne out.
pub fn stale_freeblocks(
    run: &[u8],
    (base, page_len): (usize, usize),
    shapes: Shapes<'_>,
) -> Vec<Found> {
    let mut out = Vec::new();
    let mut at = 0;
    // Bytes that look like a header are common in data: each block read costs a search of
    // its readings, so a run gives up after this many that come to nothing.
    let mut budget = STALE_BLOCKS_READ;
    while at + 4 <= run.len() && budget > 0 {
        let word = |i: usize| {
            run.get(i)
                .zip(run.get(i + 1))
                .map_or(0, |(a, b)| usize::from(u16::from_be_bytes([*a, *b])))
        };
        let (next, size) = (word(at), word(at + 2));
        // A block that ran on past the run: the content area has grown over its end
        // since (SQLite takes new cells from the top of the unallocated space), and what
        // is left of it is read up to the run's end.
        let cut = at + size > run.len() && base + at + size <= page_len;
        let plausible = size >= 6
            && (at + size <= run.len() || cut)
            && next_block_fits(next, base + at + size, page_len);
        let block = run
            .get(at..(at + size).min(run.len()))
            .filter(|_| plausible);
        if let Some(block) = block.filter(|b| may_start_cell(b, shapes)) {
            {
                let reader = FreeblockRecords::new(block, (base + at, page_len), shapes);
                let cells = if cut { reader.cut() } else { reader }.cells();
                let len = block.len();
                // Its cells must fill the block its header measures, up to a fragment; of
                // a block cut short, each cell is borne out by what follows it.
                let tiled =
                    cells.last().is_some_and(|f| f.end + 3 >= len) || (cut && !cells.is_empty());
                if tiled && cells.first().is_some_and(|f| f.inferred > 0) {
                    let end = cells.last().map_or(size, |f| f.end);
                    out.extend(cells.into_iter().map(|f| Found {
                        start: f.start + at,
                        end: f.end + at,
                        ..f
                    }));
                    at += end.max(1);
                    continue;
                }
                budget -= 1;
            }
        }
        at += 1;
    }
    out
}

/// Candidate stale freeblocks a run of free bytes reads in vain before it stops looking
/// ([`stale_freeblocks`]).
const STALE_BLOCKS_READ: usize = 8;

#[cfg(test)]
mod tests {
    use super::super::testing::{all, shapes};
    use super::*;
    use crate::testing::notes;

    #[test]
    fn stale_freeblock_in_unallocated_space_is_read_by_its_header() {
        // A freeblock the content area moved past: its header is all that says where it
        // starts.
        #[rustfmt::skip]
        let run = [
            0x00, 0x00, 0x00, 0x00, // never written
            0x00, 0x00, // next freeblock: none
            0x00, 0x0b, // freeblock size: 11
            0x11, 0x01, b'h', b'i', b'y', b'o', 0x03,
            0x00, 0x00, 0x00, // never written
        ];
        let found = stale_freeblocks(&run, (200, 512), shapes(&[notes()], &all));
        let spans: Vec<_> = found.iter().map(|f| (f.start, f.end, f.inferred)).collect();
        assert_eq!(spans, vec![(6, 15, 2)]);
    }

    #[test]
    fn stale_freeblock_pointing_back_at_itself_is_no_freeblock() {
        // Its next pointer is its own offset (200 + 4): a chain that loops, which SQLite
        // never writes (freeblocks are kept in ascending order).
        #[rustfmt::skip]
        let run = [
            0x00, 0x00, 0x00, 0x00,
            0x00, 0xcc, // next freeblock: 204, itself
            0x00, 0x0b, // freeblock size: 11
            0x11, 0x01, b'h', b'i', b'y', b'o', 0x03,
        ];
        assert_eq!(
            stale_freeblocks(&run, (200, 512), shapes(&[notes()], &all)),
            vec![]
        );
    }

    #[test]
    fn stale_freeblock_whose_size_runs_past_the_page_is_no_freeblock() {
        #[rustfmt::skip]
        let run = [
            0x00, 0x00, // next freeblock: none
            0x01, 0x0b, // freeblock size: 267, past the page's end at 512 - 300
            0x11, 0x01, b'h', b'i', b'y', b'o', 0x03,
        ];
        assert_eq!(
            stale_freeblocks(&run, (300, 512), shapes(&[notes()], &all)),
            vec![]
        );
    }

    #[test]
    fn stale_freeblock_cut_short_by_the_content_area_gives_the_cells_it_still_holds() {
        // The block measured 27 bytes; the content area has since grown over its last 4.
        #[rustfmt::skip]
        let run = [
            0x00, 0x00, // next freeblock: none
            0x00, 0x1b, // freeblock size: 27, 4 past the run's end
            0x11, 0x01, b'h', b'i', b'y', b'o', 0x03, // first cell, overwritten
            0x0a, 0x0a, 0x04, 0x11, 0x13, 0x01, b'a', b'b', b'c', b'd', b'e', 0x04,
        ];
        let found = stale_freeblocks(&run, (300, 512), shapes(&[notes()], &all));
        let spans: Vec<_> = found.iter().map(|f| (f.start, f.end, f.rowid)).collect();
        assert_eq!(spans, vec![(2, 11, None), (13, 23, Some(10))]);
    }
}
