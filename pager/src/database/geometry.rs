//! The geometry of the file ("The Database Header"): the page size, the reserved space
//! that gives the usable size U, and the text encoding, decided from the header when its
//! fields hold and inferred from the file's own pages when they do not.
//!
//! ```text
//! offset  size  field (the header's own decoding is `crate::header`)
//!   16     2    page size: a power of two 512..32768, or 1 for 65536
//!   20     1    reserved space at the end of every page
//!   56     4    text encoding: 1 UTF-8, 2 UTF-16le, 3 UTF-16be
//! ```
//!
//! The page size is inferred by reading the file at every candidate size and counting
//! the pages whose b-tree header parses and whose cells end exactly at the usable end of
//! the page ([`PageSizeEvidence`]); the text encoding by what the schema's `type` column
//! reads as in each encoding, else by how often "CREATE " appears, else by the text values
//! of the table leaves ([`EncodingSource`]). The evidence that decided is kept.

use super::Database;
use crate::btree::{btree_header_offset, Page};
use crate::cursor::u16_at;
use crate::finding::Finding;
use crate::header::{DatabaseHeader, TextEncoding};
use crate::record::{Record, ValueRef};
use crate::types::{PageNo, PageSize};

/// When inferring the page size, every page of the file's first this many bytes is
/// examined at each candidate size (where a database padded or cut short keeps its pages)…
const PAGE_SIZE_PREFIX: u64 = 4 << 20;

/// …and this many more pages spread evenly over the rest of the file. Few: a read through
/// a map makes resident the whole cached folio around it (up to 2 MiB on Linux 6.18), and
/// the sample is read before anything can let go of the map's pages.
const PAGE_SIZE_SAMPLE: u64 = 64;

/// The sampled pages of every candidate size start at the same offsets, multiples of the
/// largest page size: the sample reads the same few bytes of a large file whatever the
/// number of candidates (sampling each size elsewhere, and 65,536 pages of each, once made
/// the whole of a 16 GiB file resident).
const SAMPLE_ALIGN: u64 = 65_536;

/// How well the file's pages fit one candidate page size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageSizeEvidence {
    /// The candidate.
    pub page_size: PageSize,
    /// Pages examined at this size.
    pub pages_checked: u64,
    /// Pages whose b-tree header parses at this size.
    pub btree_headers: u64,
    /// Of those, pages whose cells end exactly at the usable end of a page of this size.
    pub exact_fits: u64,
}

/// Where the page size in use came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PageSizeSource {
    /// The header's value, confirmed by page 1.
    Header,
    /// From the write-ahead log's header, which SQLite writes with the page size in use.
    Wal,
    /// From a hot rollback journal's header: the page size before the interrupted
    /// transaction, which SQLite restores when it rolls the journal back.
    Journal,
    /// Inferred by scanning the file at every candidate size; the header's value was
    /// invalid, or did not fit the file's pages.
    Inferred {
        /// One entry per candidate size, smallest first.
        evidence: Vec<PageSizeEvidence>,
    },
}

/// Where the text encoding in use came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EncodingSource {
    /// The header's value.
    Header,
    /// Inferred: from the `type` column of the schema records on page 1 when any decode,
    /// else from how often "CREATE " appears in each encoding.
    Inferred {
        /// Votes for UTF-8, UTF-16le, UTF-16be.
        counts: [u64; 3],
    },
}

/// Decides the page size in use: a log's (`from_log`, the size its header was written
/// with) when the database is read through one; the header's (offset 16) when page 1
/// fits it; else the size the file's pages fit best, with the evidence for every
/// candidate. A header value that is invalid, or valid and not the size in use, is a
/// finding. `None` when no size fits any page and there is no header string either: not
/// a database.
/// The last page a log's images (`held`, ascending) may lengthen a file of `file_pages`
/// pages to: the highest held page with at least half of the pages between the file's end
/// and it held too. A database grows by writing each new page, so a log that grew it
/// holds its new pages (a journal, the live ones of those a transaction cut off); one
/// page held a billion pages past the end is a claim.
pub(super) fn log_reach(held: impl Iterator<Item = u32>, file_pages: u32) -> u32 {
    let mut reach = file_pages;
    let mut beyond = 0u64;
    for p in held.filter(|p| *p > file_pages) {
        beyond += 1;
        if u64::from(p - file_pages) <= 2 * beyond {
            reach = p;
        }
    }
    reach
}

pub(super) fn decide_page_size(
    bytes: &[u8],
    header: &DatabaseHeader,
    from_log: Option<(PageSize, PageSizeSource)>,
    findings: &mut Vec<Finding>,
) -> Option<(PageSize, PageSizeSource)> {
    let declared = PageSize::from_header_field(header.page_size_raw);
    if declared.is_none() {
        findings.push(Finding::InvalidPageSize {
            raw: header.page_size_raw,
        });
    }
    let reserved_hint = header.reserved_space;
    Some(match (declared, from_log) {
        (_, Some((size, source))) => {
            if let Some(d) = declared.filter(|d| *d != size) {
                findings.push(Finding::PageSizeDisagrees {
                    declared: d.get(),
                    inferred: size.get(),
                });
            }
            (size, source)
        }
        (Some(size), None) if page_one_fits(bytes, size, reserved_hint) => {
            (size, PageSizeSource::Header)
        }
        (_, None) => {
            let evidence: Vec<PageSizeEvidence> = PageSize::all()
                .map(|s| page_size_evidence(bytes, s, reserved_hint))
                .collect();
            match best_page_size(&evidence) {
                Some(inferred) => {
                    if let Some(d) = declared {
                        if d != inferred {
                            findings.push(Finding::PageSizeDisagrees {
                                declared: d.get(),
                                inferred: inferred.get(),
                            });
                        }
                    }
                    (inferred, PageSizeSource::Inferred { evidence })
                }
                None if header.has_header_string() => (
                    declared.unwrap_or(PageSize::new(4096).unwrap_or(PageSize::MIN)),
                    PageSizeSource::Header,
                ),
                None => return None,
            }
        }
    })
}

/// The reserved space in use at `page_size`: the header's (offset 20), or 0 with a
/// finding when it would leave a usable size below 480 bytes.
pub(super) fn reserved_space(
    page_size: PageSize,
    header: &DatabaseHeader,
    findings: &mut Vec<Finding>,
) -> u8 {
    let reserved = header.reserved_space;
    let usable = usable_reserve(page_size, reserved);
    if usable != reserved {
        findings.push(Finding::ReservedSpaceTooLarge {
            reserved,
            page_size: page_size.get(),
        });
    }
    usable
}

/// `reserved` when a page of `size` keeps at least 480 usable bytes with it, else 0.
fn usable_reserve(size: PageSize, reserved: u8) -> u8 {
    if size.get() - u32::from(reserved) < 480 {
        0
    } else {
        reserved
    }
}

/// How well page `no` parses as a b-tree page of size `size`: `None`, a b-tree header
/// that fits, or a header whose cells also end exactly at the usable end of the page.
fn fit(bytes: &[u8], no: PageNo, size: PageSize, reserved: u8) -> Fit {
    let start = match usize::try_from(no.file_offset(size)) {
        Ok(s) => s,
        Err(_) => return Fit::None,
    };
    let Some(page_bytes) = bytes.get(start..start.saturating_add(size.bytes()).min(bytes.len()))
    else {
        return Fit::None;
    };
    if page_bytes.len() < size.bytes() {
        return Fit::None;
    }
    let usable = size.bytes() - usize::from(reserved);
    let page = Page::new(no, page_bytes, usable);
    let Ok(h) = page.btree_header() else {
        return Fit::None;
    };
    let area = h.cell_content_area() as usize;
    if area < h.cell_pointers_end() || area > usable {
        return Fit::None;
    }
    if h.cell_count() == 0 {
        return if area == usable {
            Fit::Exact
        } else {
            Fit::Header
        };
    }
    let mut max_end = 0usize;
    for cell in page.cells(&h) {
        match cell {
            Ok(c) if usize::from(c.offset) >= area => {
                max_end = max_end.max(usize::from(c.offset) + c.len)
            }
            _ => return Fit::None,
        }
    }
    // Deleted cells at the end of the area leave a freeblock that reaches the end instead.
    let mut offset = h.first_freeblock();
    let mut hops = 0;
    while offset != 0 && hops < 64 {
        let o = usize::from(offset);
        match (u16_at(page_bytes, o), u16_at(page_bytes, o + 2)) {
            (Some(next), Some(sz)) => {
                max_end = max_end.max(o + usize::from(sz));
                offset = next;
            }
            _ => break,
        }
        hops += 1;
    }
    if max_end == usable {
        Fit::Exact
    } else {
        Fit::Header
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fit {
    None,
    Header,
    Exact,
}

/// Whether page 1 parses as a b-tree page at `size` whose cells end exactly at the usable
/// end of the page.
fn page_one_fits(bytes: &[u8], size: PageSize, reserved: u8) -> bool {
    let reserved = usable_reserve(size, reserved);
    if bytes.len() < size.bytes() {
        // A file shorter than one page: the header's size is all the evidence there is.
        return bytes.len() >= btree_header_offset(PageNo::FIRST) + 8;
    }
    // An exact fit: at a wrong, larger size page 1's cells would end short of the page end.
    fit(bytes, PageNo::FIRST, size, reserved) == Fit::Exact
}

/// Examines the pages of the first [`PAGE_SIZE_PREFIX`] bytes and up to
/// [`PAGE_SIZE_SAMPLE`] more spread over the rest of the file at `size`.
fn page_size_evidence(bytes: &[u8], size: PageSize, reserved: u8) -> PageSizeEvidence {
    let reserved = usable_reserve(size, reserved);
    let len = bytes.len() as u64;
    let pages = len / u64::from(size.get());
    let mut ev = PageSizeEvidence {
        page_size: size,
        pages_checked: 0,
        btree_headers: 0,
        exact_fits: 0,
    };
    // Every page of the prefix, then pages at evenly spread aligned offsets.
    let prefix = (PAGE_SIZE_PREFIX / u64::from(size.get())).min(pages);
    let at = move |k: u64| {
        let offset = (u128::from(len) * u128::from(k) / u128::from(PAGE_SIZE_SAMPLE)) as u64;
        offset / SAMPLE_ALIGN * SAMPLE_ALIGN / u64::from(size.get()) + 1
    };
    let mut last = prefix;
    let spread = (0..PAGE_SIZE_SAMPLE).map(at).filter(move |n| {
        let new = *n > last && *n <= pages;
        last = last.max(*n);
        new
    });
    for n in (1..=prefix).chain(spread) {
        if let Some(no) = u32::try_from(n).ok().and_then(PageNo::new) {
            ev.pages_checked += 1;
            match fit(bytes, no, size, reserved) {
                Fit::Exact => {
                    ev.btree_headers += 1;
                    ev.exact_fits += 1;
                }
                Fit::Header => ev.btree_headers += 1,
                Fit::None => {}
            }
        }
    }
    ev
}

/// The size with the most exact fits; `None` when no size has any, or when the best fits
/// too few of the pages examined to be more than chance (random bytes).
fn best_page_size(evidence: &[PageSizeEvidence]) -> Option<PageSize> {
    let best = evidence
        .iter()
        .max_by_key(|e| (e.exact_fits, std::cmp::Reverse(e.page_size)))?;
    // Random input produces the odd accidental fit; a real database has many.
    let plausible = best.exact_fits >= 2 || (best.exact_fits == 1 && best.pages_checked <= 4);
    plausible.then_some(best.page_size)
}

/// The three text encodings, in header-value order.
const ENCODINGS: [TextEncoding; 3] = [
    TextEncoding::Utf8,
    TextEncoding::Utf16le,
    TextEncoding::Utf16be,
];

/// Schema records examined at most when inferring the text encoding.
const ENCODING_SAMPLE: usize = 1000;

impl Database<'_> {
    /// Infers the text encoding when the header's (offset 56) is not 1, 2 or 3: the
    /// finding, then the encoding with the most evidence (UTF-8 when none has any).
    pub(super) fn infer_encoding(&mut self) {
        let raw = self.header.text_encoding_raw;
        self.findings.push(Finding::InvalidTextEncoding { raw });
        let counts = self.encoding_evidence();
        let mut best = (TextEncoding::Utf8, 0);
        for (e, n) in ENCODINGS.into_iter().zip(counts) {
            if n > best.1 {
                best = (e, n);
            }
        }
        self.encoding = best.0;
        self.encoding_source = EncodingSource::Inferred { counts };
    }

    /// Evidence for each text encoding (UTF-8, UTF-16le, UTF-16be). First, the `type`
    /// column of the `sqlite_schema` records: a whole value that must read "table",
    /// "index", "view" or "trigger", which only the right encoding gives. When no schema
    /// record is readable, occurrences of "CREATE " over the first pages, then the whole
    /// file (a weaker count: UTF-16le and UTF-16be text each contain the other's pattern
    /// shifted by a byte, so a tie is possible and goes to the earlier encoding).
    fn encoding_evidence(&self) -> [u64; 3] {
        let votes = self.schema_type_votes();
        if votes.iter().any(|n| *n > 0) {
            return votes;
        }
        let needles: Vec<Vec<u8>> = ENCODINGS.iter().map(|e| e.encode("CREATE ")).collect();
        let count = |hay: &[u8]| -> [u64; 3] {
            let mut c = [0u64; 3];
            for (slot, needle) in c.iter_mut().zip(&needles) {
                *slot = hay.windows(needle.len()).filter(|w| w == needle).count() as u64;
            }
            c
        };
        let head = self
            .bytes
            .get(..self.bytes.len().min(self.page_size.bytes() * 16))
            .unwrap_or(self.bytes);
        let c = count(head);
        if c.iter().any(|n| *n > 0) {
            return c;
        }
        let c = count(self.bytes);
        if c.iter().any(|n| *n > 0) {
            c
        } else {
            self.text_value_votes()
        }
    }

    /// Counts, per encoding, the text values of table leaf cells that read as text in it:
    /// the last evidence, for a file with no schema text left. A value without a zero
    /// byte is UTF-8 when it is valid UTF-8; one with zero bytes is UTF-16, little-endian
    /// when they sit at odd offsets (ASCII-range characters: the high byte follows),
    /// big-endian when at even ones.
    fn text_value_votes(&self) -> [u64; 3] {
        let mut votes = [0u64; 3];
        let mut seen = 0;
        for cell in self.table_leaf_cells() {
            let Some(payload) = cell.cell.payload() else {
                continue;
            };
            let Ok((record, _)) = Record::parse(payload.local, cell.location) else {
                continue;
            };
            for value in record.values() {
                let Ok(ValueRef::Text(t)) = value else {
                    continue;
                };
                if t.len() < 4 || seen >= ENCODING_SAMPLE {
                    continue;
                }
                seen += 1;
                let zero_at = |parity: usize| {
                    t.iter()
                        .enumerate()
                        .filter(|(i, b)| i % 2 == parity && **b == 0)
                        .count()
                };
                let (even, odd) = (zero_at(0), zero_at(1));
                let slot = if even + odd == 0 {
                    std::str::from_utf8(t).is_ok().then_some(0)
                } else if t.len() % 2 == 1 {
                    None
                } else if odd > even {
                    Some(1)
                } else {
                    Some(2)
                };
                if let Some(v) = slot.and_then(|i| votes.get_mut(i)) {
                    *v += 1;
                }
            }
            if seen >= ENCODING_SAMPLE {
                return votes;
            }
        }
        votes
    }

    /// Counts, per encoding, the schema records whose first column is a schema type word
    /// in that encoding.
    fn schema_type_votes(&self) -> [u64; 3] {
        let words: Vec<[Vec<u8>; 4]> = ENCODINGS
            .iter()
            .map(|e| {
                [
                    e.encode("table"),
                    e.encode("index"),
                    e.encode("view"),
                    e.encode("trigger"),
                ]
            })
            .collect();
        let mut votes = [0u64; 3];
        let cells =
            crate::walk::BtreeWalk::new(self, PageNo::FIRST).filter_map(|item| match item {
                Ok(crate::walk::TreeItem::Cell(c)) => Some(c),
                _ => None,
            });
        for cell in cells.take(ENCODING_SAMPLE) {
            let Some(payload) = cell.cell.payload() else {
                continue;
            };
            let Ok((record, _)) = Record::parse(payload.local, cell.location) else {
                continue;
            };
            let Some(Ok(ValueRef::Text(t))) = record.values().next() else {
                continue;
            };
            for (vote, w) in votes.iter_mut().zip(&words) {
                if w.iter().any(|word| word.as_slice() == t) {
                    *vote += 1;
                }
            }
        }
        votes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log lengthens the file as far as it holds most of the pages past the end.
    #[test]
    fn a_log_reaches_as_far_as_it_holds_the_pages() {
        assert_eq!(log_reach([3, 11, 12, 13].into_iter(), 10), 13);
        assert_eq!(log_reach([12, 14].into_iter(), 10), 14);
        assert_eq!(log_reach([11, 3_000_000_000].into_iter(), 10), 11);
        assert_eq!(log_reach(std::iter::empty(), 10), 10);
    }
    use crate::testing::Db;

    #[test]
    fn page_size_field_garbage() {
        let mut db = Db::named("agent-512-utf8");
        db.bytes[16..18].copy_from_slice(&1000u16.to_be_bytes());
        let opened = Database::open(&db.bytes).unwrap();
        assert_eq!(opened.page_size().get(), 512);
        assert!(opened
            .findings()
            .contains(&Finding::InvalidPageSize { raw: 1000 }));
        let PageSizeSource::Inferred { evidence } = opened.page_size_source() else {
            panic!("not inferred")
        };
        let best = evidence.iter().max_by_key(|e| e.exact_fits).unwrap();
        assert_eq!(best.page_size.get(), 512);
    }

    #[test]
    fn page_size_field_valid_but_wrong() {
        let mut db = Db::named("agent-4096-utf8");
        db.bytes[16..18].copy_from_slice(&1024u16.to_be_bytes());
        let opened = Database::open(&db.bytes).unwrap();
        assert_eq!(opened.page_size().get(), 4096);
        assert!(opened.findings().contains(&Finding::PageSizeDisagrees {
            declared: 1024,
            inferred: 4096
        }));
    }

    #[test]
    fn page_size_inferred_when_page_one_is_zeroed() {
        // Page 1 (header and schema root) gone: the size comes from the other pages alone.
        let mut db = Db::named("agent-65536-utf8");
        let ps = db.page_size();
        db.bytes[..ps].fill(0);
        let opened = Database::open(&db.bytes).unwrap();
        assert_eq!(opened.page_size().get(), 65536);
    }

    #[test]
    fn text_encoding_field_garbage() {
        let mut db = Db::named("generic-512-utf16be");
        db.bytes[56..60].copy_from_slice(&9u32.to_be_bytes());
        let opened = Database::open(&db.bytes).unwrap();
        assert!(opened
            .findings()
            .contains(&Finding::InvalidTextEncoding { raw: 9 }));
        assert_eq!(opened.encoding(), TextEncoding::Utf16be);
    }

    /// With page 1 zeroed at 4096-byte pages no schema text is left anywhere: the text
    /// values of the table leaves give the encoding (once taken as UTF-8, the UTF-16 text
    /// copied as bytes).
    #[test]
    fn text_encoding_of_a_file_without_schema_text_is_read_from_its_values() {
        for (name, want) in [
            ("agent-4096-utf16le", TextEncoding::Utf16le),
            ("agent-4096-utf16be", TextEncoding::Utf16be),
            ("agent-4096-utf8", TextEncoding::Utf8),
        ] {
            let mut db = Db::named(name);
            db.bytes[..4096].fill(0);
            let opened = Database::open(&db.bytes).unwrap();
            assert_eq!(opened.encoding(), want, "{name}");
            assert!(matches!(
                opened.encoding_source(),
                EncodingSource::Inferred { .. }
            ));
        }
    }
}
