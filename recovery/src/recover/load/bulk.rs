//! Bulk loading of rowid tables: b-tree pages written straight into the output file,
//! the way SQLite lays out a table filled in rowid order, instead of one INSERT per row.
//!
//! The output database is first created by SQLite (schema, empty tables) and closed. For a
//! table whose rows arrive in ascending rowid order, records are packed into table leaf
//! pages ("B-tree Pages": header, cell pointer array, cells from the end of the page),
//! payloads larger than a page spill to overflow pages ("Cell Payload Overflow Pages"),
//! and the interior levels are built as the leaves are written, each level holding no more
//! than two pages' children in memory (a 20 GB table's list of leaves took 134 MB); the
//! top page is written into the table's root page, which keeps its number. New pages are appended after the last page,
//! skipping the lock-byte page; the header's database size and change counter are updated
//! last. SQLite reopens the file afterwards for everything else (the tables' indexes
//! included), and `PRAGMA quick_check` on the finished output checks every page written
//! here. In an auto-vacuum output, each page written also gets its entry in the pointer
//! map (`pointer_map`), whose pages are skipped as the lock-byte page is.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use pager::varint::varint_len;

use pointer_map::{Kind, Layout, PointerMap};

/// Byte offsets in the database header that the writer updates.
mod header {
    pub const FILE_CHANGE_COUNTER: usize = 24;
    pub const DATABASE_SIZE: usize = 28;
    pub const VERSION_VALID_FOR: usize = 92;
}

/// Appends b-tree pages to an output database file.
pub struct BulkWriter {
    file: File,
    page_size: usize,
    /// The next page number to allocate.
    next: u32,
    /// The first page this writer allocated: pages before it are SQLite's.
    first_new: u32,
    lock_byte_page: u32,
    /// Consecutive pages not yet written, starting at page `pending_first`.
    pending: Vec<u8>,
    pending_first: u32,
    /// Each run of pages written is set on its way to the disk at once.
    writeback: crate::base::writeback::Writeback,
    /// In an auto-vacuum output: the pointer map's entries of the pages written.
    map: Option<PointerMap>,
}

/// Writes a varint ("Varint") into `buf`; returns its length.
pub fn encode_varint(buf: &mut [u8; 9], v: u64) -> usize {
    let n = varint_len(v);
    if n == 9 {
        buf[8] = v as u8;
        let mut rest = v >> 8;
        for i in (0..8).rev() {
            buf[i] = (rest as u8 & 0x7f) | 0x80;
            rest >>= 7;
        }
        return 9;
    }
    for (i, b) in buf.iter_mut().take(n).enumerate() {
        let seven = ((v >> (7 * (n - 1 - i))) & 0x7f) as u8;
        *b = if i == n - 1 { seven } else { seven | 0x80 };
    }
    n
}

/// Appends a varint to `out`.
pub fn put_varint(out: &mut Vec<u8>, v: u64) {
    let mut buf = [0u8; 9];
    let n = encode_varint(&mut buf, v);
    out.extend_from_slice(&buf[..n]);
}

impl BulkWriter {
    /// Opens the output file, closed by SQLite, to append pages after its last one.
    pub fn open(path: &Path, page_size: u32) -> io::Result<BulkWriter> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)?;
        let len = file.metadata()?.len();
        let page_size = page_size as usize;
        let mut head = [0u8; 100];
        file.read_exact_at(&mut head, 0)?;
        let head = pager::DatabaseHeader::parse(&head);
        let pages = u32::try_from(len / page_size as u64)
            .map_err(|_| io::Error::other("output too large"))?;
        let lock_byte_page =
            u32::try_from(pager::LOCK_BYTE_OFFSET / page_size as u64 + 1).unwrap_or(u32::MAX);
        let usable = page_size.saturating_sub(usize::from(head.reserved_space));
        let map = head
            .auto_vacuum()
            .then(|| PointerMap::new(Layout::new(usable, lock_byte_page), pages + 1));
        Ok(BulkWriter {
            writeback: crate::base::writeback::Writeback::of(file.try_clone()?),
            file,
            page_size,
            next: pages + 1,
            first_new: pages + 1,
            lock_byte_page,
            pending: Vec::new(),
            pending_first: pages + 1,
            map,
        })
    }

    fn allocate(&mut self) -> u32 {
        while self.next == self.lock_byte_page
            || self
                .map
                .as_ref()
                .is_some_and(|m| m.layout.is_map(self.next))
        {
            self.next += 1;
        }
        let n = self.next;
        self.next += 1;
        n
    }

    /// Records in the pointer map, if the output has one, that `page` is of `kind` under
    /// `parent`.
    fn point(&mut self, page: u32, kind: Kind, parent: u32) -> io::Result<()> {
        match &mut self.map {
            Some(map) => map.set(&self.file, self.page_size, self.next, page, (kind, parent)),
            None => Ok(()),
        }
    }

    fn offset(&self, page: u32) -> u64 {
        u64::from(page - 1) * self.page_size as u64
    }

    /// Writes a whole page image.
    fn write_page(&mut self, page: u32, image: &[u8]) -> io::Result<()> {
        let end = self.pending_first + (self.pending.len() / self.page_size) as u32;
        if page == end {
            self.pending.extend_from_slice(image);
            if self.pending.len() >= 8 << 20 {
                self.flush()?;
            }
            return Ok(());
        }
        self.flush()?;
        if page > self.pending_first {
            // Start a new run here (a skipped lock-byte page leaves a hole, read as zeros).
            self.pending_first = page;
            self.pending.extend_from_slice(image);
            return Ok(());
        }
        if page >= self.first_new {
            // A page of a run handed over (never so far: each allocated page is written
            // once, in order): the run is written first, not over this.
            self.writeback.wait()?;
        }
        self.file.write_all_at(image, self.offset(page))
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            let offset = self.offset(self.pending_first);
            self.pending_first += (self.pending.len() / self.page_size) as u32;
            let run = std::mem::take(&mut self.pending);
            self.pending = self.writeback.write(offset, run)?;
        }
        Ok(())
    }

    /// Writes an overflow chain ("Cell Payload Overflow Pages"); returns its first page.
    fn write_overflow(&mut self, rest: &[u8]) -> io::Result<u32> {
        let per_page = self.page_size - 4;
        let chunks: Vec<&[u8]> = rest.chunks(per_page).collect();
        let pages: Vec<u32> = chunks.iter().map(|_| self.allocate()).collect();
        let mut image = vec![0u8; self.page_size];
        for (i, chunk) in chunks.iter().enumerate() {
            image.fill(0);
            let next = pages.get(i + 1).copied().unwrap_or(0);
            image[..4].copy_from_slice(&next.to_be_bytes());
            image[4..4 + chunk.len()].copy_from_slice(chunk);
            self.write_page(pages[i], &image)?;
            if i > 0 {
                self.point(pages[i], Kind::Overflow, pages[i - 1])?;
            }
        }
        Ok(pages[0])
    }

    /// Starts the table whose (empty) root page is `root`.
    pub fn table(&mut self, root: u32) -> TableBuilder<'_> {
        let usable = self.page_size;
        TableBuilder {
            leaf: Leaf::new(usable),
            writer: self,
            root,
            levels: Vec::new(),
            last: None,
            rows: 0,
            overflows: Vec::new(),
        }
    }

    /// In an auto-vacuum output: the most pointer-map pages held in memory at once, and
    /// the map pages written.
    #[cfg(test)]
    fn maps_held(&self) -> Option<(usize, u32)> {
        self.map.as_ref().map(|m| m.held)
    }

    /// Writes what is pending and records the new database size in the header, with the
    /// change counter advanced and the size marked valid.
    pub fn finish(mut self) -> io::Result<()> {
        self.flush()?;
        self.writeback.wait()?;
        if let Some(map) = &mut self.map {
            map.finish(&self.file, self.page_size)?;
        }
        let pages = self.next - 1;
        let mut head = [0u8; 100];
        self.file.read_exact_at(&mut head, 0)?;
        let counter = u32::from_be_bytes([head[24], head[25], head[26], head[27]]).wrapping_add(1);
        self.file
            .write_all_at(&counter.to_be_bytes(), header::FILE_CHANGE_COUNTER as u64)?;
        self.file
            .write_all_at(&pages.to_be_bytes(), header::DATABASE_SIZE as u64)?;
        self.file
            .write_all_at(&counter.to_be_bytes(), header::VERSION_VALID_FOR as u64)?;
        // The file must hold every page, the lock-byte page and the last one included.
        let len = u64::from(pages) * self.page_size as u64;
        if self.file.metadata()?.len() < len {
            self.file.set_len(len)?;
        }
        // No fsync: like the rest of the load (synchronous=OFF), the output is not the
        // destination until it is verified and renamed, and it can always be rebuilt from
        // the untouched source.
        Ok(())
    }
}

/// A b-tree page being filled: cell pointers from the front, cells from the back.
struct Leaf {
    image: Vec<u8>,
    cells: u16,
    content: usize,
}

/// Fills the bytes reserved for one cell, front to back.
struct CellWriter<'p> {
    out: &'p mut [u8],
}

impl CellWriter<'_> {
    fn bytes(&mut self, b: &[u8]) {
        let (head, tail) = std::mem::take(&mut self.out).split_at_mut(b.len());
        head.copy_from_slice(b);
        self.out = tail;
    }

    fn varint(&mut self, v: u64) {
        let mut buf = [0u8; 9];
        let n = encode_varint(&mut buf, v);
        self.bytes(&buf[..n]);
    }
}

/// Header length of a leaf, and of an interior page.
const LEAF_HEADER: usize = 8;
const INTERIOR_HEADER: usize = 12;

impl Leaf {
    fn new(usable: usize) -> Leaf {
        Leaf {
            image: vec![0; usable],
            cells: 0,
            content: usable,
        }
    }

    /// Empties the page for the next one, keeping its buffer.
    fn clear(&mut self) {
        self.image.fill(0);
        self.cells = 0;
        self.content = self.image.len();
    }

    fn free(&self, header: usize) -> usize {
        self.content - (header + 2 * usize::from(self.cells))
    }

    fn add(&mut self, header: usize, cell: &[u8]) {
        self.reserve(header, cell.len()).bytes(cell);
    }

    /// Takes `len` bytes for a new cell at the end of the free space, with its cell
    /// pointer; the caller fills them.
    fn reserve(&mut self, header: usize, len: usize) -> CellWriter<'_> {
        self.content -= len;
        let ptr = header + 2 * usize::from(self.cells);
        self.image[ptr..ptr + 2].copy_from_slice(&(self.content as u16).to_be_bytes());
        self.cells += 1;
        CellWriter {
            out: &mut self.image[self.content..self.content + len],
        }
    }

    /// Finishes the page header: type, cell count, content area (65536 stored as 0).
    fn seal(&mut self, page_type: u8, right_most: Option<u32>) -> &[u8] {
        self.image[0] = page_type;
        self.image[1..3].copy_from_slice(&[0, 0]);
        self.image[3..5].copy_from_slice(&self.cells.to_be_bytes());
        self.image[5..7].copy_from_slice(&((self.content % 65536) as u16).to_be_bytes());
        self.image[7] = 0;
        if let Some(r) = right_most {
            self.image[8..12].copy_from_slice(&r.to_be_bytes());
        }
        &self.image
    }
}

/// Builds one table's b-tree from rows in ascending rowid order.
pub struct TableBuilder<'w> {
    writer: &'w mut BulkWriter,
    root: u32,
    leaf: Leaf,
    /// The interior levels above the leaves, lowest first.
    levels: Vec<Level>,
    last: Option<i64>,
    rows: u64,
    /// The first overflow page of each cell of the leaf being filled: their parent in
    /// the pointer map is the leaf, whose number is known when it is written.
    overflows: Vec<u32>,
}

/// One interior level of a table being built: the children (page and largest rowid
/// below it) of its pages not yet written. A page is written once more than two pages'
/// worth are waiting, so that the level's last two pages can share what is left evenly
/// and every interior page has at least two children.
#[derive(Default)]
struct Level {
    waiting: Vec<(u32, i64)>,
    /// A page of this level was written: it is not the top.
    written: bool,
}

impl TableBuilder<'_> {
    /// Whether a row with this rowid can be appended (rowids must ascend strictly).
    pub fn accepts(&self, rowid: i64) -> bool {
        self.last.is_none_or(|l| rowid > l)
    }

    /// Appends a row: its rowid and its record exactly as it will be stored.
    pub fn push(&mut self, rowid: i64, record: &[u8]) -> io::Result<()> {
        let usable = self.writer.page_size;
        let total = record.len() as u64;
        let local = pager::btree::local_payload_len(true, total, usable);
        let spills = local < record.len();
        let cell_len =
            varint_len(total) + varint_len(rowid as u64) + local + if spills { 4 } else { 0 };
        let first_overflow = if spills {
            Some(self.write_overflow(record.get(local..).unwrap_or_default())?)
        } else {
            None
        };
        if self.leaf.cells > 0 && self.leaf.free(LEAF_HEADER) < cell_len + 2 {
            self.flush_leaf()?;
        }
        self.overflows.extend(first_overflow);
        // The cell goes straight into the page, from the end of the free space.
        let mut cell = self.leaf.reserve(LEAF_HEADER, cell_len);
        cell.varint(total);
        cell.varint(rowid as u64);
        cell.bytes(record.get(..local).unwrap_or(record));
        if let Some(first) = first_overflow {
            cell.bytes(&first.to_be_bytes());
        }
        self.last = Some(rowid);
        self.rows += 1;
        Ok(())
    }

    /// Writes a payload's overflow chain; returns its first page.
    fn write_overflow(&mut self, rest: &[u8]) -> io::Result<u32> {
        self.writer.write_overflow(rest)
    }

    fn flush_leaf(&mut self) -> io::Result<()> {
        let page = self.writer.allocate();
        let max = self.last.unwrap_or(0);
        self.writer.write_page(page, self.leaf.seal(0x0d, None))?;
        // The image was copied into the run being written: the buffer is filled again.
        self.leaf.clear();
        self.point_overflows(page)?;
        self.add_child(0, (page, max))
    }

    /// Records the leaf `page` as the parent of its cells' overflow chains.
    fn point_overflows(&mut self, page: u32) -> io::Result<()> {
        for first in std::mem::take(&mut self.overflows) {
            self.writer.point(first, Kind::FirstOverflow, page)?;
        }
        Ok(())
    }

    /// Children per interior page: cells of at most 4 + 9 bytes plus a 2-byte pointer,
    /// one child more as the right-most pointer.
    fn per_page(&self) -> usize {
        (self.writer.page_size - INTERIOR_HEADER) / (2 + 4 + 9) + 1
    }

    /// Adds a child to interior level `level`, writing the level's next page when more
    /// than two pages' children wait.
    fn add_child(&mut self, level: usize, child: (u32, i64)) -> io::Result<()> {
        let per_page = self.per_page();
        if self.levels.len() <= level {
            self.levels.resize_with(level + 1, Level::default);
        }
        let Some(l) = self.levels.get_mut(level) else {
            return Ok(());
        };
        l.waiting.push(child);
        if l.waiting.len() <= 2 * per_page {
            return Ok(());
        }
        l.written = true;
        let kids: Vec<(u32, i64)> = l.waiting.drain(..per_page).collect();
        let number = self.writer.allocate();
        let up = self.write_interior(number, &kids)?;
        self.add_child(level + 1, up)
    }

    /// Writes an interior page over `kids` at page `number`; returns it as a child of the
    /// level above.
    fn write_interior(&mut self, number: u32, kids: &[(u32, i64)]) -> io::Result<(u32, i64)> {
        let Some(((last, max), body)) = kids.split_last() else {
            return Ok((number, 0));
        };
        let mut page = Leaf::new(self.writer.page_size);
        for (child, key) in body {
            let mut cell = Vec::with_capacity(13);
            cell.extend_from_slice(&child.to_be_bytes());
            put_varint(&mut cell, *key as u64);
            page.add(INTERIOR_HEADER, &cell);
        }
        self.writer
            .write_page(number, page.seal(0x05, Some(*last)))?;
        for (child, _) in kids {
            self.writer.point(*child, Kind::Btree, number)?;
        }
        Ok((number, *max))
    }

    /// Writes the remaining leaf and what waits on the interior levels; the top page goes
    /// into the root page. Returns the rows written.
    pub fn finish(mut self) -> io::Result<u64> {
        if self.rows == 0 {
            return Ok(0);
        }
        if self.levels.is_empty() {
            let root = self.root;
            let image = self.leaf.seal(0x0d, None).to_vec();
            self.writer.write_page(root, &image)?;
            self.point_overflows(root)?;
            return Ok(self.rows);
        }
        self.flush_leaf()?;
        let per_page = self.per_page();
        let mut level = 0;
        while let Some(l) = self.levels.get_mut(level) {
            let Level { waiting, written } = std::mem::take(l);
            // The one page of the top level: the root. (Below the top at least one page
            // was written, or more than a page's children wait: two pages, then.)
            if !written && waiting.len() <= per_page {
                self.write_interior(self.root, &waiting)?;
                return Ok(self.rows);
            }
            let (left, right) = waiting.split_at(waiting.len() / 2);
            for kids in [left, right] {
                let number = self.writer.allocate();
                let up = self.write_interior(number, kids)?;
                self.add_child(level + 1, up)?;
            }
            level += 1;
        }
        Ok(self.rows)
    }
}

#[cfg(test)]
mod differential;
mod pointer_map;
