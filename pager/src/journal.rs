//! The rollback journal ("The Rollback Journal"): before a transaction changes a page of
//! the database file, the page's original image goes to `NAME-journal`. A journal whose
//! header is intact belongs to a transaction that never committed (committing deletes the
//! journal, truncates it, or zeroes its header): it is hot, and SQLite rolls it back when
//! it next opens the database. Reading the journal's original images instead of the main
//! file's pages, and the database at its original size, gives that same rolled-back
//! database, without writing anything.
//!
//! ```text
//! header (padded to the sector size)       record
//! 0  magic d9 d5 05 f9 20 a1 63 d7         0  page number
//! 8  record count (-1: up to the end)      4  the page's original image
//! 12 checksum nonce                        4+page size  checksum: the nonce plus every
//! 16 database size in pages before            200th byte of the image, from the end
//! 20 sector size                              (bytes page size - 200, - 400, … > 0)
//! 24 page size
//! ```
//!
//! A journal may hold several segments, each a header at a sector boundary followed by its
//! records. A record whose checksum fails, or that the file cuts short, ends playback (as
//! SQLite's own): in a synced segment that is damage, counted with the records after it;
//! in one written without syncs (record count -1) it is the normal end. Records for pages
//! past the original size are skipped, and one for page 0 or the lock-byte page ends
//! playback.

use std::collections::BTreeMap;

use crate::cursor::u32_at;
use crate::finding::Finding;
use crate::types::{PageNo, PageSize};

/// The journal header's magic string.
pub const JOURNAL_MAGIC: [u8; 8] = [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7];

/// A journal segment's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JournalHeader {
    /// Records in the segment; `u32::MAX` means every whole record up to the end.
    pub record_count: u32,
    /// Initial value of each record's checksum.
    pub nonce: u32,
    /// The database size in pages before the transaction.
    pub original_pages: u32,
    /// Headers are padded to (and segments start at multiples of) this many bytes.
    pub sector_size: u32,
    /// The database page size.
    pub page_size: u32,
}

impl JournalHeader {
    /// Reads a header at `at`; `None` without the magic string (a committed or empty
    /// journal), or with a page size or sector size no SQLite writes.
    fn read(bytes: &[u8], at: usize) -> Option<JournalHeader> {
        if bytes.get(at..at.checked_add(8)?)? != JOURNAL_MAGIC {
            return None;
        }
        let h = JournalHeader {
            record_count: u32_at(bytes, at + 8)?,
            nonce: u32_at(bytes, at + 12)?,
            original_pages: u32_at(bytes, at + 16)?,
            sector_size: u32_at(bytes, at + 20)?,
            page_size: u32_at(bytes, at + 24)?,
        };
        let sector_ok = h.sector_size.is_power_of_two() && (32..=65536).contains(&h.sector_size);
        (sector_ok && PageSize::new(h.page_size).is_some()).then_some(h)
    }
}

/// A hot journal, read: what rolling it back restores.
#[derive(Clone, Debug, Default)]
pub struct Journal<'a> {
    /// The first segment's header; `None` when the journal is not hot (no valid header).
    pub header: Option<JournalHeader>,
    /// Each journaled page's original image (a transaction journals a page once; were a
    /// page repeated, the last record wins, as in SQLite's playback).
    pub pages: BTreeMap<PageNo, &'a [u8]>,
    /// The super-journal a multi-database transaction named, if any: when that file no
    /// longer exists the transaction committed, and SQLite rolls nothing back.
    pub super_journal: Option<String>,
    /// Records whose image was used or repeated a page.
    pub records_valid: u32,
    /// Records ignored: a failed checksum, a record cut short, or after either.
    pub records_ignored: u32,
    /// Why records were ignored.
    pub findings: Vec<Finding>,
}

impl Journal<'_> {
    /// The database size in pages before the transaction, when the journal is hot.
    pub fn original_pages(&self) -> Option<u32> {
        self.header.map(|h| h.original_pages)
    }

    /// The page size the journal was written with, when it is hot.
    pub fn page_size(&self) -> Option<PageSize> {
        self.header.and_then(|h| PageSize::new(h.page_size))
    }

    /// Whether the database whose header gives page size `database` (`None`: no valid
    /// one) may be read at the journal's page size: the two agree, the database gives
    /// none, or the journal's own image of page 1 (every write transaction journals it)
    /// gives the journal's. A header field alone never redefines the file's geometry.
    pub fn page_size_proven(&self, database: Option<PageSize>) -> bool {
        let Some(own) = self.page_size() else {
            return false;
        };
        let page_one = self
            .pages
            .get(&PageNo::FIRST)
            .and_then(|image| Some(u16::from_be_bytes([*image.get(16)?, *image.get(17)?])))
            .and_then(PageSize::from_header_field);
        database.is_none_or(|d| d == own) || page_one == Some(own)
    }
}

/// The checksum of a record's page image (SQLite's `pager_cksum`).
fn checksum(nonce: u32, image: &[u8]) -> u32 {
    let mut sum = nonce;
    let mut i = image.len().saturating_sub(200);
    while i > 0 {
        sum = sum.wrapping_add(u32::from(image.get(i).copied().unwrap_or(0)));
        i = i.saturating_sub(200);
    }
    sum
}

/// SQLite's pending byte (the lock-byte page's offset): a record for the page holding it
/// (`PAGER_SJ_PGNO`) ends playback; the super-journal record starts with that number.
const PENDING_BYTE: u64 = 0x4000_0000;

/// The super-journal name recorded at the journal's end, if any (SQLite's
/// `readSuperJournal`): `…name, length, checksum, magic` with the checksum the sum of the
/// name's bytes.
fn super_journal(bytes: &[u8]) -> Option<String> {
    let end = bytes.len();
    if end < 16 || bytes.get(end - 8..)? != JOURNAL_MAGIC {
        return None;
    }
    let len = u32_at(bytes, end - 16)? as usize;
    let stored = u32_at(bytes, end - 12)?;
    let name = bytes.get(end.checked_sub(16 + len)?..end - 16)?;
    // SQLite sums the name as (signed) `char`s.
    let sum = name
        .iter()
        .fold(0u32, |s, b| s.wrapping_add(*b as i8 as i32 as u32));
    (len > 0 && sum == stored && !name.contains(&0))
        .then(|| String::from_utf8_lossy(name).into_owned())
}

/// Reads a rollback journal as SQLite's `pager_playback` would play it back. Never fails:
/// a journal that is not hot has no header and no pages; damage ends playback and is a
/// finding.
pub fn read_journal(bytes: &[u8]) -> Journal<'_> {
    let mut journal = Journal::default();
    let Some(first) = JournalHeader::read(bytes, 0) else {
        return journal;
    };
    // Shorter than its header sector: SQLite finds no header to play back.
    let sector = first.sector_size as usize;
    if bytes.len() < sector.max(512) {
        return journal;
    }
    journal.header = Some(first);
    journal.super_journal = super_journal(bytes);
    let page_size = first.page_size as usize;
    let record_len = page_size + 8;
    let lock_page = u32::try_from(PENDING_BYTE / page_size as u64 + 1).unwrap_or(u32::MAX);
    let mut at = 0usize;
    let mut record = 0u32;
    // Each segment starts at a sector boundary after the previous one; a header that is
    // not there (or has another page size) ends the journal.
    'segments: while let Some(h) =
        JournalHeader::read(bytes, at).filter(|h| h.page_size == first.page_size)
    {
        let start = at + sector;
        let available = (bytes.len().saturating_sub(start) / record_len) as u32;
        // -1: written without syncs, records run to the end and no header follows; a
        // checksum that fails there is stale bytes past the transaction, the normal end.
        let synced = h.record_count != u32::MAX;
        let declared = if synced { h.record_count } else { available };
        let mut pos = start;
        for n in 0..declared {
            record += 1;
            let Some(rec) = bytes.get(pos..pos + record_len) else {
                journal.records_ignored += declared - n;
                journal.findings.push(Finding::JournalRecordsMissing {
                    declared,
                    present: n,
                });
                break 'segments;
            };
            pos += record_len;
            let page = u32_at(rec, 0).unwrap_or(0);
            if page == 0 || page == lock_page {
                break 'segments;
            }
            // A page the database did not have before the transaction: nothing to restore.
            if page > first.original_pages {
                continue;
            }
            let image = rec.get(4..4 + page_size).unwrap_or_default();
            if u32_at(rec, 4 + page_size) != Some(checksum(h.nonce, image)) {
                if synced {
                    journal.records_ignored += declared - n;
                    journal
                        .findings
                        .push(Finding::JournalRecordChecksumMismatch { record });
                }
                break 'segments;
            }
            if let Some(page) = PageNo::new(page) {
                // Applied in order, as SQLite plays them back.
                journal.pages.insert(page, image);
                journal.records_valid += 1;
            }
        }
        if !synced {
            break;
        }
        // The next segment, if any, starts at the first sector boundary after the records.
        let next = pos.div_ceil(sector) * sector;
        if next <= at {
            break;
        }
        at = next;
    }
    journal
}

/// [`read_journal`], and for a journal whose header is gone the records its committed
/// transaction left: in `journal_mode=PERSIST` SQLite commits by zeroing the header, and
/// the page images from before the transaction stay after it. The records are read at
/// `page_size` from each sector size SQLite uses (where the header's padding ends); they
/// count while they agree on the checksum nonce (each checksum is the nonce plus the
/// image's sampled bytes, so each record gives the nonce it was written with) and each
/// image starts as a page can (a b-tree page's type, or a page number's high byte, or
/// the database header on page 1) and is of a page up to `max_page`. The longest run
/// wins. Such a journal is not hot: `header` stays `None`.
pub fn read_persisted_journal(bytes: &[u8], page_size: PageSize, max_page: u32) -> Journal<'_> {
    let hot = read_journal(bytes);
    if hot.header.is_some() {
        return hot;
    }
    let size = page_size.bytes();
    let record_len = size + 8;
    let lock_page = u32::try_from(PENDING_BYTE / size as u64 + 1).unwrap_or(u32::MAX);
    let mut best: Vec<(PageNo, &[u8])> = Vec::new();
    for sector in (9..=16).map(|shift| 1usize << shift) {
        let mut run: Vec<(PageNo, &[u8])> = Vec::new();
        let mut nonce = None;
        let mut at = sector;
        while let Some(rec) = bytes.get(at..at.saturating_add(record_len)) {
            at += record_len;
            let page = u32_at(rec, 0).unwrap_or(0);
            let image = rec.get(4..4 + size).unwrap_or_default();
            let Some(no) = PageNo::new(page).filter(|_| page != lock_page && page <= max_page)
            else {
                break;
            };
            let starts_as_a_page = match image.first() {
                Some(0 | 2 | 5 | 10 | 13) => true,
                _ => page == 1 && image.starts_with(b"SQLite format 3\0"),
            };
            let own = u32_at(rec, 4 + size)
                .unwrap_or(0)
                .wrapping_sub(checksum(0, image));
            if !starts_as_a_page || nonce.is_some_and(|n| n != own) {
                break;
            }
            nonce = Some(own);
            run.push((no, image));
        }
        if run.len() > best.len() {
            best = run;
        }
    }
    let mut journal = Journal {
        records_valid: best.len() as u32,
        ..Journal::default()
    };
    for (no, image) in best {
        // The first record of a page is its image before the transaction.
        journal.pages.entry(no).or_insert(image);
    }
    journal
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A journal of `pages` (number, fill byte) with page size 512 and sector size 512.
    fn journal(pages: &[(u32, u8)], count: u32, nonce: u32) -> Vec<u8> {
        journal_of(512, pages, count, nonce)
    }

    fn journal_of(page_size: u32, pages: &[(u32, u8)], count: u32, nonce: u32) -> Vec<u8> {
        let images: Vec<(u32, Vec<u8>)> = pages
            .iter()
            .map(|(no, fill)| (*no, vec![*fill; page_size as usize]))
            .collect();
        journal_with(page_size, &images, count, nonce)
    }

    /// A journal of these page images, with sector size 512.
    fn journal_with(page_size: u32, pages: &[(u32, Vec<u8>)], count: u32, nonce: u32) -> Vec<u8> {
        let mut j = vec![0u8; 512];
        j[..8].copy_from_slice(&JOURNAL_MAGIC);
        j[8..12].copy_from_slice(&count.to_be_bytes());
        j[12..16].copy_from_slice(&nonce.to_be_bytes());
        j[16..20].copy_from_slice(&7u32.to_be_bytes());
        j[20..24].copy_from_slice(&512u32.to_be_bytes());
        j[24..28].copy_from_slice(&page_size.to_be_bytes());
        for (no, image) in pages {
            j.extend_from_slice(&no.to_be_bytes());
            j.extend_from_slice(image);
            j.extend_from_slice(&checksum(nonce, image).to_be_bytes());
        }
        j
    }

    #[test]
    fn a_hot_journal_gives_each_page_its_image() {
        let bytes = journal(&[(3, 0xaa), (1, 0xbb), (9, 0xdd)], 3, 0x1234_5678);
        let j = read_journal(&bytes);
        assert_eq!(j.original_pages(), Some(7));
        // Page 9 is past the 7 pages the database had: nothing to restore.
        assert_eq!(j.records_valid, 2);
        assert_eq!(j.pages.len(), 2);
        assert!(j.pages[&PageNo::new(3).unwrap()].iter().all(|b| *b == 0xaa));
        assert_eq!(j.super_journal, None);
        assert!(j.findings.is_empty());
        // A record count of -1: every whole record up to the end.
        assert_eq!(
            read_journal(&journal(&[(3, 1), (4, 2)], u32::MAX, 9)).records_valid,
            2
        );
    }

    #[test]
    fn a_bad_checksum_ends_playback_and_a_committed_journal_is_not_hot() {
        let mut bytes = journal(&[(2, 1), (4, 2), (5, 3)], 3, 77);
        let second_checksum = 512 + 2 * (512 + 8) - 1;
        bytes[second_checksum] ^= 1;
        let j = read_journal(&bytes);
        assert_eq!((j.records_valid, j.records_ignored), (1, 2));
        assert_eq!(
            j.findings,
            vec![Finding::JournalRecordChecksumMismatch { record: 2 }]
        );
        // Cut short: the declared records are not all there.
        let short = journal(&[(2, 1)], 4, 77);
        let j = read_journal(&short);
        assert_eq!((j.records_valid, j.records_ignored), (1, 3));
        assert!(matches!(
            j.findings[..],
            [Finding::JournalRecordsMissing {
                declared: 4,
                present: 1
            }]
        ));
        // PERSIST mode zeroes the header on commit; TRUNCATE leaves nothing.
        let mut committed = journal(&[(2, 1)], 1, 77);
        committed[..28].fill(0);
        assert!(read_journal(&committed).header.is_none());
        assert!(read_journal(&[]).pages.is_empty());
    }

    #[test]
    fn a_persisted_journal_keeps_its_records_after_the_header_is_zeroed() {
        let page = PageSize::new(512).unwrap();
        // Images that start as b-tree leaves do (0x0d).
        let mut committed = journal(&[(2, 13), (4, 13), (5, 13)], 3, 77);
        committed[..28].fill(0);
        let j = read_persisted_journal(&committed, page, 9);
        assert!(j.header.is_none());
        assert_eq!(
            j.pages.keys().map(|p| p.get()).collect::<Vec<_>>(),
            [2, 4, 5]
        );
        // A record of another transaction (another nonce) ends the run.
        let mut mixed = committed.clone();
        let third = 512 + 2 * (512 + 8);
        let stale = journal(&[(5, 13)], 1, 78);
        mixed[third..].copy_from_slice(&stale[512..]);
        assert_eq!(read_persisted_journal(&mixed, page, 9).pages.len(), 2);
        // Bytes that are no page image are no record.
        let mut junk = committed;
        junk[512 + 4] = 0x77;
        assert!(read_persisted_journal(&junk, page, 9).pages.is_empty());
        // A hot journal is read as one.
        let hot = journal(&[(2, 13)], 1, 77);
        assert!(read_persisted_journal(&hot, page, 9).header.is_some());
    }

    #[test]
    fn a_database_opened_with_a_hot_journal_is_the_database_before_the_transaction() {
        let db = crate::testing::Db::named("agent-4096-utf8");
        let plain = crate::Database::open(&db.bytes).unwrap();
        assert!(plain.page_count() > 7);
        let bytes = journal_of(4096, &[(5, 0x5a)], 1, 3);
        let rolled = crate::Database::open_with_journal(&db.bytes, &read_journal(&bytes)).unwrap();
        // journal_of records 7 pages before the transaction.
        assert_eq!(rolled.page_count(), 7);
        let page = rolled.page(PageNo::new(5).unwrap()).unwrap();
        assert!(page.bytes().iter().all(|b| *b == 0x5a));
        assert_eq!(
            rolled.page(PageNo::new(4).unwrap()).unwrap().bytes(),
            plain.page(PageNo::new(4).unwrap()).unwrap().bytes()
        );
        // Written with another page size (a VACUUM that changed it, interrupted): the
        // journal's image of page 1 (every write transaction journals it) proves its page
        // size, which is the database's again.
        let mut first = vec![0u8; 512];
        first[16..18].copy_from_slice(&512u16.to_be_bytes());
        let other = journal_with(512, &[(1, first), (5, vec![0x5a; 512])], 2, 3);
        let back = crate::Database::open_with_journal(&db.bytes, &read_journal(&other)).unwrap();
        assert_eq!(back.page_size().get(), 512);
        assert_eq!(back.page_size_source(), &crate::PageSizeSource::Journal);
        // A header that only says so (its page size field rewritten to 64 KiB, its records
        // then unreadable) proves nothing: the database is read as it stands, and the
        // journal's claim is a finding.
        let mut lying = journal_of(4096, &[(1, 0x11), (5, 0x5a)], 2, 3);
        lying[24..28].copy_from_slice(&65536u32.to_be_bytes());
        let kept = crate::Database::open_with_journal(&db.bytes, &read_journal(&lying)).unwrap();
        assert_eq!(kept.page_size(), plain.page_size());
        assert_eq!(kept.page_count(), plain.page_count());
        assert!(kept
            .findings()
            .contains(&Finding::JournalPageSizeDisagrees {
                journal: 65536,
                database: 4096
            }));
        // A record count no file holds is not a licence to allocate.
        let mut huge = journal_of(4096, &[(5, 0x5a)], 1, 3);
        huge[16..20].copy_from_slice(&u32::MAX.to_be_bytes());
        let capped = crate::Database::open_with_journal(&db.bytes, &read_journal(&huge)).unwrap();
        assert_eq!(capped.page_count(), plain.page_count());
    }

    #[test]
    fn playback_ends_as_sqlite_ends_it() {
        // Written without syncs (-1): a record that fails its checksum is stale bytes of an
        // earlier transaction, the normal end, not damage.
        let mut stale = journal(&[(2, 1), (3, 2)], u32::MAX, 9);
        let last = stale.len() - 1;
        stale[last] ^= 1;
        let j = read_journal(&stale);
        assert_eq!((j.records_valid, j.records_ignored), (1, 0));
        assert!(j.findings.is_empty());
        // Shorter than its header sector: nothing to play back.
        assert!(read_journal(&journal(&[], 0, 9)[..100]).header.is_none());
        // A multi-database transaction names its super-journal at the end.
        let mut named = journal(&[(2, 1)], 1, 9);
        let name = b"/data/app.db-mj1A2B3C";
        let lock_page = (PENDING_BYTE / 512 + 1) as u32;
        named.extend_from_slice(&lock_page.to_be_bytes());
        named.extend_from_slice(name);
        named.extend_from_slice(&(name.len() as u32).to_be_bytes());
        let sum = name.iter().map(|b| u32::from(*b)).sum::<u32>();
        named.extend_from_slice(&sum.to_be_bytes());
        named.extend_from_slice(&JOURNAL_MAGIC);
        let j = read_journal(&named);
        assert_eq!(j.super_journal.as_deref(), Some("/data/app.db-mj1A2B3C"));
        assert_eq!(j.records_valid, 1);
    }

    #[test]
    fn any_bytes_after_the_magic_are_read_without_a_panic() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for len in (0..3000).step_by(7) {
            let mut bytes = journal(&[(2, 1)], 1, 5);
            bytes.resize(len.max(28), 0);
            for b in bytes.iter_mut().skip(8) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                *b = state as u8;
            }
            let _ = read_journal(&bytes);
        }
    }
}
