//! Overflow chains ("Cell Payload Overflow Pages"): the part of a cell's payload that does
//! not fit on its b-tree page, spilled onto a linked list of overflow pages.
//!
//! ```text
//! +-----------------+------------------------------------------+----------+
//! | next page       | overflow content                         | reserved |
//! | (0: last page)  | U - 4 bytes                              | space    |
//! +-----------------+------------------------------------------+----------+
//!   0..4              4..U                                       U..page size
//! ```
//!
//! How many bytes stay on the b-tree page is decided by the payload size P and the usable
//! size U ([`Database::local_payload_len`]); the rest fill the chain's pages in order, so a
//! payload needs exactly `ceil((P - local) / (U - 4))` of them. A chain is walked only
//! that far, with a visited set: a cycle, a pointer past the end of the file or into a
//! page with another role, an early end, or a last page that does not end the chain is a
//! [`Finding`], and an assembled payload is marked incomplete, never silently short.

use std::borrow::Cow;
use std::collections::HashSet;

use crate::btree::{local_payload_len, PageType, Payload};
use crate::classify::PageClass;
use crate::cursor::u32_at;
use crate::database::Database;
use crate::finding::Finding;
use crate::record::{self, SerialType};
use crate::types::{Location, PageNo};

/// How many zero bytes of a value must come just before a zeroed last overflow page for
/// the page to be read as zeros written (see `Database::zeros_are_values`).
const ZERO_RUN_EVIDENCE: usize = 32;

impl<'a> Database<'a> {
    /// Walks the overflow chain of `payload`, the payload of the cell at `cell`, and
    /// returns its pages and, when the chain is damaged, the finding that says how. Never
    /// reads past the pages the payload needs, but checks that the last one ends the chain.
    pub fn overflow_chain(&self, payload: &Payload<'a>, cell: Location) -> OverflowChain {
        self.overflow_chain_until(payload, cell, |_| None)
    }

    /// [`Database::overflow_chain`], stopping before any page for which `taken` names
    /// another role (a page another chain or tree already holds): the chain ends there with
    /// [`Finding::OverflowIntoNonOverflowPage`]. A caller that walks every chain of a file
    /// passes the pages it has seen, so that the total work stays linear in the file size
    /// whatever the chains claim.
    pub fn overflow_chain_until(
        &self,
        payload: &Payload<'a>,
        cell: Location,
        mut taken: impl FnMut(PageNo) -> Option<PageClass>,
    ) -> OverflowChain {
        let mut chain = OverflowChain {
            pages: Vec::new(),
            finding: None,
            missing: 0,
        };
        let mut need = payload.total_len.saturating_sub(payload.local.len() as u64);
        let per_page = (self.usable_size() as u64).saturating_sub(4).max(1);
        let mut seen: HashSet<u32> = HashSet::new();
        let mut next = payload.first_overflow.map_or(0, PageNo::get);
        while need > 0 {
            let Some(page_no) = self.page_no(next) else {
                chain.finding = Some(if next == 0 {
                    Finding::OverflowChainShort {
                        cell,
                        missing: need,
                    }
                } else {
                    Finding::OverflowPastEnd { cell, next }
                });
                break;
            };
            if !seen.insert(next) {
                chain.finding = Some(Finding::OverflowCycle {
                    cell,
                    repeated: page_no,
                });
                break;
            }
            let other_role = self
                .positional_class(page_no)
                .or((page_no == PageNo::FIRST).then_some(PageClass::TableLeaf))
                .or_else(|| taken(page_no));
            if let Some(class) = other_role {
                chain.finding = Some(Finding::OverflowIntoNonOverflowPage {
                    cell,
                    page: page_no,
                    class,
                });
                break;
            }
            let Some(page) = self.page(page_no) else {
                break;
            };
            // A page of nothing but zeros has lost its content (a page before the last
            // holds its next pointer, the last one the payload's end): reading it would
            // invent zeros as values, so the chain is taken to end before it. Unless the
            // values there are zeros by evidence: see `zeros_are_values`.
            if page.is_zeroed()
                && !(need <= per_page && self.zeros_are_values(payload, cell, &chain.pages, need))
            {
                chain.finding = Some(Finding::OverflowIntoNonOverflowPage {
                    cell,
                    page: page_no,
                    class: PageClass::Zeroed,
                });
                break;
            }
            chain.pages.push(page_no);
            need -= need.min(per_page);
            next = u32_at(page.bytes(), 0).unwrap_or(0);
            if need == 0 && next != 0 {
                // The last page must end the chain (SQLite's integrity check follows it).
                chain.finding = Some(match PageNo::new(next) {
                    Some(p) if seen.contains(&next) => Finding::OverflowCycle { cell, repeated: p },
                    _ => Finding::OverflowChainTooLong {
                        cell,
                        last: page_no,
                        next,
                    },
                });
            }
        }
        chain.missing = need;
        if need > 0 && chain.finding.is_none() {
            chain.finding = Some(Finding::OverflowChainShort {
                cell,
                missing: need,
            });
        }
        chain
    }

    /// Whether a zeroed page that holds the last `need` bytes of `payload` (after the
    /// local bytes and the chain's `before` pages) is those bytes, zeros written as values,
    /// rather than a page wiped. A value of zeros (`zeroblob(N)`, a buffer allocated and
    /// not yet filled, text padded with NULs) ends its chain on such a page, and its bytes
    /// just before it are zeros too; a wiped page follows whatever the values held. So the
    /// page is read as values only when it holds nothing but the end of one BLOB or text
    /// whose [`ZERO_RUN_EVIDENCE`] bytes just before the page are zeros: every value after
    /// it has no bytes (NULL, 0, 1), for nothing vouches for a value that begins on the
    /// page. And only in a table's row: an index entry read so could be taken as evidence
    /// against its row's value. Without that evidence the page stays lost, and a healthy
    /// value of that kind (a float 0.0 after zeros, an index key ending in zeros) is
    /// reported as damaged: never a wiped page read as zeros.
    fn zeros_are_values(
        &self,
        payload: &Payload<'a>,
        at: Location,
        before: &[PageNo],
        need: u64,
    ) -> bool {
        let in_table_row = self
            .page(at.page)
            .and_then(|p| p.btree_header().ok())
            .is_some_and(|h| h.page_type() == PageType::TableLeaf);
        if !in_table_row {
            return false;
        }
        let start = payload.total_len - need;
        let Ok(header) = record::parse_record_header(payload.local, payload.total_len, at) else {
            return false;
        };
        // The one value that runs from before the page into it, and what begins on it.
        let mut crossing = None;
        let mut only_empty_after = true;
        let mut to = header.header_size;
        for t in &header.serial_types {
            let from = to;
            to = to.saturating_add(t.body_len());
            if from < start && to > start {
                crossing = Some((from, *t));
            } else if from >= start && t.body_len() > 0 {
                only_empty_after = false;
            }
        }
        // The header must describe the payload to the byte, and the zero run before the
        // page must lie inside the crossing BLOB or text.
        let evidence = ZERO_RUN_EVIDENCE as u64;
        let vouched = matches!(crossing, Some((from, SerialType::Blob(_) | SerialType::Text(_)))
            if from.saturating_add(evidence) <= start);
        if !vouched || !only_empty_after || to != payload.total_len {
            return false;
        }
        // The bytes just before `start`: the previous overflow page's, or the local ones.
        let previous: &[u8] = match before.last() {
            Some(&no) => {
                let per_page = self.usable_size().saturating_sub(4);
                match self.page(no) {
                    Some(page) => page.bytes().get(4..4 + per_page).unwrap_or_default(),
                    None => return false,
                }
            }
            None => payload.local,
        };
        previous
            .get(previous.len().saturating_sub(ZERO_RUN_EVIDENCE)..)
            .is_some_and(|run| run.len() == ZERO_RUN_EVIDENCE && run.iter().all(|&b| b == 0))
    }

    /// The complete payload of the cell at `cell`: the local bytes borrowed when nothing
    /// spills, or the local bytes and the overflow pages' content copied together. A
    /// damaged chain gives the bytes that could be read and `complete == false`, never a
    /// silently short payload.
    pub fn assemble(&self, payload: &Payload<'a>, cell: Location) -> AssembledPayload<'a> {
        if !payload.spills() {
            return AssembledPayload {
                bytes: Cow::Borrowed(payload.local),
                complete: true,
                finding: None,
                suspect_from: None,
            };
        }
        let chain = self.overflow_chain(payload, cell);
        let per_page = self.usable_size().saturating_sub(4);
        let total = usize::try_from(payload.total_len).unwrap_or(usize::MAX);
        // Capacity from the pages actually found, never from the claimed length.
        let mut out = Vec::with_capacity(payload.local.len() + chain.pages.len() * per_page);
        out.extend_from_slice(payload.local);
        let mut last_start = None;
        for page_no in &chain.pages {
            last_start = Some(out.len());
            let remaining = total.saturating_sub(out.len());
            if let Some(page) = self.page(*page_no) {
                out.extend_from_slice(
                    page.bytes()
                        .get(4..4 + per_page.min(remaining))
                        .unwrap_or_default(),
                );
            }
        }
        let complete = out.len() == total;
        let suspect_from = last_start
            .filter(|_| matches!(chain.finding, Some(Finding::OverflowChainTooLong { .. })));
        AssembledPayload {
            bytes: Cow::Owned(out),
            complete,
            finding: chain.finding,
            suspect_from,
        }
    }

    /// The local-payload size SQLite would store for a payload of `len` bytes.
    pub fn local_payload_len(&self, page_type: PageType, len: u64) -> usize {
        local_payload_len(page_type == PageType::TableLeaf, len, self.usable_size())
    }
}

/// The pages of one overflow chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverflowChain {
    /// Overflow pages in chain order.
    pub pages: Vec<PageNo>,
    /// The damage that ended the chain early, if any.
    pub finding: Option<Finding>,
    /// Payload bytes the chain could not provide.
    pub missing: u64,
}

/// A cell's payload with its overflow content joined on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssembledPayload<'a> {
    /// The payload bytes that could be read.
    pub bytes: Cow<'a, [u8]>,
    /// Whether all `total_len` bytes were read.
    pub complete: bool,
    /// The damage that made it partial.
    pub finding: Option<Finding>,
    /// Where in `bytes` the last overflow page's content starts, when that page does not
    /// end the chain as SQLite ends one (its next pointer is not 0): its bytes may be
    /// another page's, read as this payload's tail.
    pub suspect_from: Option<usize>,
}

#[cfg(test)]
mod damage_tests {
    use super::*;
    use crate::testing::Db;

    /// The first overflow chain of `messages` with at least two pages, as the fixtures'
    /// reader sees it, and the cell that owns it.
    fn long_chain(db: &Db) -> (fixtures::format::OverflowChain, fixtures::format::Cell) {
        let chain = db
            .walk("messages")
            .chains
            .into_iter()
            .find(|c| c.pages.len() >= 2)
            .expect("a chain of 2+ pages");
        let cell = db.cell(chain.page, chain.cell);
        (chain, cell)
    }

    /// The overflow chain of the cell at `cell` of page `page`, walked by this crate.
    fn walk_chain(bytes: &[u8], page: u32, cell: u16) -> OverflowChain {
        let db = Database::open(bytes).unwrap();
        let page = db.page(PageNo::new(page).unwrap()).unwrap();
        let h = page.btree_header().unwrap();
        let cell = page.cells(&h).nth(usize::from(cell)).unwrap().unwrap();
        db.overflow_chain(cell.cell.payload().unwrap(), cell.location)
    }

    fn no(n: u32) -> PageNo {
        PageNo::new(n).unwrap()
    }

    #[test]
    fn overflow_pointer_past_the_end() {
        let mut db = Db::named("agent-4096-utf8");
        let (chain, cell) = long_chain(&db);
        db.set_u32(chain.pages[0], 0, 99_999); // next overflow page: past the last page
        assert_eq!(
            walk_chain(&db.bytes, chain.page, chain.cell).finding,
            Some(Finding::OverflowPastEnd {
                cell: Location::new(no(chain.page), cell.offset),
                next: 99_999
            })
        );
    }

    #[test]
    fn overflow_pointer_into_page_one() {
        let mut db = Db::named("agent-4096-utf8");
        let (chain, cell) = long_chain(&db);
        db.set_u32(chain.pages[0], 0, 1); // next overflow page: page 1, the schema's root
        assert_eq!(
            walk_chain(&db.bytes, chain.page, chain.cell).finding,
            Some(Finding::OverflowIntoNonOverflowPage {
                cell: Location::new(no(chain.page), cell.offset),
                page: PageNo::FIRST,
                class: PageClass::TableLeaf
            })
        );
    }

    #[test]
    fn overflow_chain_ends_early() {
        let mut db = Db::named("agent-4096-utf8");
        let (chain, cell) = long_chain(&db);
        // What the first overflow page cannot hold: it holds U - 4 bytes (U is the page
        // size here, no reserved space).
        assert_eq!(db.fixture.options.reserved_bytes, 0);
        let payload = cell.payload.unwrap();
        let missing = payload.total_len - payload.local_len as u64 - (db.page_size() as u64 - 4);
        db.set_u32(chain.pages[0], 0, 0); // next overflow page: none
        let walked = walk_chain(&db.bytes, chain.page, chain.cell);
        assert_eq!(walked.pages, vec![no(chain.pages[0])]);
        assert_eq!(
            walked.finding,
            Some(Finding::OverflowChainShort {
                cell: Location::new(no(chain.page), cell.offset),
                missing
            })
        );
    }

    #[test]
    fn overflow_chain_runs_on_past_its_last_page() {
        let mut db = Db::named("agent-4096-utf8");
        let (chain, cell) = long_chain(&db);
        let last = *chain.pages.last().unwrap();
        db.set_u32(last, 0, 3); // next overflow page of the last page the payload needs
        assert_eq!(
            walk_chain(&db.bytes, chain.page, chain.cell).finding,
            Some(Finding::OverflowChainTooLong {
                cell: Location::new(no(chain.page), cell.offset),
                last: no(last),
                next: 3
            })
        );
    }

    #[test]
    fn overflow_chain_last_page_leads_back_to_the_first() {
        let mut db = Db::named("agent-4096-utf8");
        let (chain, cell) = long_chain(&db);
        let last = *chain.pages.last().unwrap();
        db.set_u32(last, 0, chain.pages[0]); // next overflow page: the chain's first
        assert_eq!(
            walk_chain(&db.bytes, chain.page, chain.cell).finding,
            Some(Finding::OverflowCycle {
                cell: Location::new(no(chain.page), cell.offset),
                repeated: no(chain.pages[0])
            })
        );
    }

    #[test]
    fn overflow_page_points_to_itself_mid_payload() {
        let mut db = Db::named("agent-4096-utf8");
        let (chain, cell) = long_chain(&db);
        let first = chain.pages[0];
        db.set_u32(first, 0, first); // next overflow page: itself, payload still unread
        let walked = walk_chain(&db.bytes, chain.page, chain.cell);
        assert_eq!(walked.pages, vec![no(first)]);
        assert_eq!(
            walked.finding,
            Some(Finding::OverflowCycle {
                cell: Location::new(no(chain.page), cell.offset),
                repeated: no(first)
            })
        );
    }
}

#[cfg(test)]
mod zeroed_overflow_tests {
    use super::*;
    use crate::testing::Db;

    #[test]
    fn zeroed_last_overflow_page_is_missing_not_zeros() {
        let mut db = Db::named("agent-4096-utf8");
        let chain = db
            .walk("messages")
            .chains
            .into_iter()
            .find(|c| c.pages.len() >= 2)
            .unwrap();
        let last = *chain.pages.last().unwrap();
        let (at, ps) = (db.at(last, 0), db.page_size());
        db.bytes[at..at + ps].fill(0);
        let opened = Database::open(&db.bytes).unwrap();
        let page = opened.page(PageNo::new(chain.page).unwrap()).unwrap();
        let h = page.btree_header().unwrap();
        let cell = page
            .cells(&h)
            .nth(usize::from(chain.cell))
            .unwrap()
            .unwrap();
        let row = crate::value::decode_cell(&opened, &cell).unwrap();
        assert!(!row.complete);
        // The timestamp after the content lived on the zeroed page: NULL, never 0.
        assert_eq!(row.values.last(), Some(&crate::Value::Null));
        assert!(row.findings.iter().any(|f| matches!(
            f,
            Finding::OverflowIntoNonOverflowPage {
                class: PageClass::Zeroed,
                ..
            }
        )));
    }
}
