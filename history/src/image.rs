//! A database image made of what a log holds, when the database it belongs to is gone:
//! a write-ahead log's newest committed image of each page, or a rollback journal's
//! images of the pages its transaction changed, each at its page's place, the pages the
//! log does not hold left as zeros. Read as a damaged database, it gives every row those
//! pages still hold, under the schema when page 1 is among them.

use pager::{Journal, PageNo, PageSize, Wal};

/// The image ends at the last page a log holds. A page number beyond this many times the
/// pages held, plus this many, is taken for damage and left out: a hostile log naming
/// page 4,294,967,295 in one frame would otherwise make an image of 256 TiB.
const SPREAD: u64 = 64;

/// A database image laid out from a log alone: where each page the log holds goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogImage<'a> {
    /// The pages the log holds, by number (1-based, ascending), each with its image.
    pub pages: Vec<(u32, &'a [u8])>,
    /// The image's length in pages: the last page held.
    pub length: u32,
    /// Its page size (the log's).
    pub page_size: u32,
    /// Pages the log held but whose number is implausibly far past the others (left out,
    /// so that the image stays bounded by the log's size).
    pub pages_left_out: u32,
    /// The database's size in pages, as the log last gives it (a commit frame, or the
    /// journal's original size).
    pub declared_pages: Option<u32>,
}

impl LogImage<'_> {
    /// Pages of the image the log did not hold: zeros.
    pub fn pages_missing(&self) -> u32 {
        self.length.saturating_sub(self.pages.len() as u32)
    }
}

/// The image of a write-ahead log's committed pages, each as its newest commit left it;
/// `None` when the log holds no committed page.
pub fn wal_image<'a>(wal: &Wal<'a>) -> Option<LogImage<'a>> {
    let page_size = PageSize::new(wal.header.page_size)?;
    let pages = wal.pages.iter().map(|(p, (_, image))| (*p, *image));
    image(pages, page_size, wal.db_size)
}

/// The image of a rollback journal's pages, as they were before its transaction; a
/// journal whose header is gone (`journal_mode=PERSIST`, committed) is read at each page
/// size SQLite writes, and the size that reads the most records wins. `None` when no
/// record is readable.
pub fn journal_image(bytes: &[u8]) -> Option<LogImage<'_>> {
    let hot = pager::read_journal(bytes);
    let (journal, page_size): (Journal<'_>, PageSize) = match hot.page_size() {
        Some(size) => (hot, size),
        None => (1..=8u32)
            .filter_map(|k| PageSize::new(256 << k))
            .map(|size| (pager::read_persisted_journal(bytes, size, u32::MAX), size))
            .filter(|(j, _)| !j.pages.is_empty())
            .max_by_key(|(j, size)| (j.records_valid, std::cmp::Reverse(size.bytes())))?,
    };
    let declared = journal.original_pages();
    image(
        journal.pages.iter().map(|(p, image)| (*p, *image)),
        page_size,
        declared,
    )
}

fn image<'a>(
    pages: impl Iterator<Item = (PageNo, &'a [u8])>,
    page_size: PageSize,
    declared_pages: Option<u32>,
) -> Option<LogImage<'a>> {
    let size = page_size.bytes();
    let mut held: Vec<(u32, &[u8])> = pages
        .filter(|(_, image)| image.len() >= size)
        .map(|(p, image)| (p.get(), image.get(..size).unwrap_or(image)))
        .collect();
    held.sort_by_key(|(p, _)| *p);
    let all = held.len();
    let bound = (all as u64).saturating_mul(SPREAD).saturating_add(SPREAD);
    held.retain(|(p, _)| u64::from(*p) <= bound);
    let length = held.last()?.0;
    Some(LogImage {
        pages_left_out: (all - held.len()) as u32,
        pages: held,
        length,
        page_size: page_size.get(),
        declared_pages,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(n: u32) -> PageNo {
        PageNo::new(n).unwrap()
    }

    #[test]
    fn a_page_numbered_far_past_the_others_is_left_out_and_the_image_ends_at_the_last_held() {
        let a = [1u8; 512];
        let b = [2u8; 512];
        let pages = [
            (page(1), &a[..]),
            (page(5), &b[..]),
            (page(4_000_000_000), &b[..]),
        ];
        let image = image(pages.into_iter(), PageSize::MIN, Some(9)).unwrap();
        assert_eq!(image.length, 5);
        assert_eq!(image.pages.len(), 2);
        assert_eq!(image.pages_missing(), 3);
        assert_eq!(image.pages_left_out, 1);
        assert_eq!(image.declared_pages, Some(9));
        // A short image is no page.
        let short = [(page(1), &a[..100])];
        assert_eq!(image_of(&short), None);
    }

    fn image_of<'a>(pages: &[(PageNo, &'a [u8])]) -> Option<LogImage<'a>> {
        image(pages.iter().copied(), PageSize::MIN, None)
    }
}
