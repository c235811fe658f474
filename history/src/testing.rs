//! Test builders shared by the unit tests of this crate: the pages of a small database of
//! 512-byte pages holding one table `t(x TEXT)`, and the write-ahead log and rollback
//! journal around it, each structure laid out as the file-format document's tables.

use pager::{PageNo, Value};

use crate::{Op, Step};

/// The page size of every file built here.
pub const PAGE: usize = 512;

/// The salts of the log's current generation ("WAL Reset": salt-1 is incremented at each
/// reset, salt-2 is new).
pub const SALTS: [u8; 8] = [0x5a, 0x17, 0xa6, 0xe1, 0x0b, 0xad, 0xca, 0xfe];

/// The salts of the generation before it.
pub const OLDER_SALTS: [u8; 8] = [0x5a, 0x17, 0xa6, 0xe0, 0x01, 0xde, 0xa6, 0xe5];

/// A table b-tree leaf cell of `t` ("B-tree Pages", "Record Format"): row `rowid` whose
/// `x` is the 1-byte text `x`.
pub fn row(rowid: u8, x: u8) -> [u8; 5] {
    #[rustfmt::skip]
    let cell = [
        0x03,  // payload length: 3
        rowid, // rowid
        0x02,  // record header size: 2
        0x0f,  // serial type: text of 1 byte
        x,     // x
    ];
    cell
}

/// The values of [`row`]'s record.
pub fn x(x: u8) -> Vec<Value> {
    vec![Value::Text(vec![x])]
}

/// A row of `sqlite_schema` ("Storage Of The SQL Database Schema"): type, name,
/// tbl_name, rootpage, sql; the type 5 bytes, every name 1 byte, the statement at most
/// 57 (its serial type a varint of 1 byte).
pub fn schema_row(rowid: u8, kind: &[u8; 5], name: u8, table: u8, root: u8, sql: &[u8]) -> Vec<u8> {
    let sql_len = u8::try_from(sql.len())
        .ok()
        .filter(|n| *n <= 57)
        .expect("a short statement");
    #[rustfmt::skip]
    let head = [
        14 + sql_len,    // payload length: header 6, body 8 and the statement
        rowid,           // rowid
        0x06,            // record header size: 6
        0x17,            // type: text of 5 bytes
        0x0f,            // name: text of 1 byte
        0x0f,            // tbl_name: text of 1 byte
        0x01,            // rootpage: 8-bit integer
        13 + 2 * sql_len, // sql: text
    ];
    let mut cell = head.to_vec();
    cell.extend_from_slice(kind);
    cell.extend_from_slice(&[name, table, root]);
    cell.extend_from_slice(sql);
    cell
}

/// The schema row of `t`, rooted at page 2.
pub fn table_t() -> Vec<u8> {
    schema_row(1, b"table", b't', b't', 2, b"CREATE TABLE t(x TEXT)")
}

/// A table b-tree leaf whose b-tree header is at `at` (100 on page 1) with `cells` packed
/// at the end of the page, in order.
pub fn leaf_at(at: usize, cells: &[&[u8]]) -> Vec<u8> {
    let mut page = vec![0u8; PAGE];
    let mut end = PAGE;
    let mut pointers = Vec::new();
    for cell in cells {
        end -= cell.len();
        page[end..end + cell.len()].copy_from_slice(cell);
        pointers.extend_from_slice(&(end as u16).to_be_bytes());
    }
    let count = (cells.len() as u16).to_be_bytes();
    let content = (end as u16).to_be_bytes();
    #[rustfmt::skip]
    let header = [
        0x0d,                   // page type: table b-tree leaf
        0x00, 0x00,             // first freeblock: none
        count[0], count[1],     // cell count
        content[0], content[1], // cell content area
        0x00,                   // fragmented free bytes
    ];
    page[at..at + 8].copy_from_slice(&header);
    page[at + 8..at + 8 + pointers.len()].copy_from_slice(&pointers);
    page
}

/// A table b-tree leaf that is not page 1.
pub fn leaf(cells: &[&[u8]]) -> Vec<u8> {
    leaf_at(0, cells)
}

/// A table b-tree interior page ("B-tree Pages"): a cell for each `(left child, integer
/// key)` pair, packed at the end of the page, then the right-most pointer.
pub fn interior(cells: &[(u8, u8)], right_most: u8) -> Vec<u8> {
    let mut page = vec![0u8; PAGE];
    let mut end = PAGE;
    for (i, (child, key)) in cells.iter().enumerate() {
        #[rustfmt::skip]
        let cell = [
            0, 0, 0, *child, // left child page
            *key,            // integer key: a varint of 1 byte
        ];
        end -= cell.len();
        page[end..end + 5].copy_from_slice(&cell);
        page[12 + 2 * i..14 + 2 * i].copy_from_slice(&(end as u16).to_be_bytes());
    }
    let content = (end as u16).to_be_bytes();
    #[rustfmt::skip]
    let header = [
        0x05,                   // page type: table b-tree interior
        0x00, 0x00,             // first freeblock: none
        0x00, cells.len() as u8, // cell count
        content[0], content[1], // cell content area
        0x00,                   // fragmented free bytes
        0, 0, 0, right_most,    // right-most pointer
    ];
    page[..12].copy_from_slice(&header);
    page
}

/// Page 1 of a file of `pages` pages: the database header, then the schema leaf with
/// `schema` rows.
pub fn page_one(pages: u8, schema: &[&[u8]]) -> Vec<u8> {
    let mut page = leaf_at(100, schema);
    page[..100].copy_from_slice(&fixtures::format::header::small(pages, true));
    page
}

/// Page 1 of a file of `pages` pages whose schema is a tree: the database header, then
/// an interior page with no cell over its one leaf, `leaf`.
pub fn page_one_over(pages: u8, leaf: u8) -> Vec<u8> {
    let interior = interior(&[], leaf);
    let mut page = vec![0u8; PAGE];
    page[..100].copy_from_slice(&fixtures::format::header::small(pages, true));
    page[100..112].copy_from_slice(&interior[..12]);
    page
}

/// The main file of `t` whose page 2 is `page_two`.
pub fn main_file(page_two: &[u8]) -> Vec<u8> {
    let mut file = page_one(2, &[&table_t()]);
    file.extend_from_slice(page_two);
    file
}

/// A WAL frame ("The WAL File Format"): its header, then the image of page `page`.
/// `commit`: the database size after the commit for a commit frame, else 0.
pub fn frame(page: u8, commit: u8, salts: [u8; 8], image: &[u8]) -> Vec<u8> {
    let [s0, s1, s2, s3, s4, s5, s6, s7] = salts;
    #[rustfmt::skip]
    let header = [
        0, 0, 0, page,   // page number
        0, 0, 0, commit, // database size after commit; 0: not a commit frame
        s0, s1, s2, s3,  // salt-1
        s4, s5, s6, s7,  // salt-2
        0, 0, 0, 0,      // checksum-1 (computed by `wal`)
        0, 0, 0, 0,      // checksum-2
    ];
    let mut frame = header.to_vec();
    frame.extend_from_slice(image);
    frame
}

/// A write-ahead log of the current generation's salts holding `frames`, every checksum
/// computed as SQLite computes it ("Checksum Algorithm").
pub fn wal(frames: &[Vec<u8>]) -> Vec<u8> {
    let [s0, s1, s2, s3, s4, s5, s6, s7] = SALTS;
    #[rustfmt::skip]
    let header = [
        0x37, 0x7f, 0x06, 0x82, // magic: checksums over little-endian words
        0x00, 0x2d, 0xe2, 0x18, // file format version: 3007000
        0x00, 0x00, 0x02, 0x00, // page size: 512
        0x00, 0x00, 0x00, 0x00, // checkpoint sequence number
        s0, s1, s2, s3,         // salt-1
        s4, s5, s6, s7,         // salt-2
        0, 0, 0, 0,             // checksum-1 (computed below)
        0, 0, 0, 0,             // checksum-2
    ];
    let mut log = header.to_vec();
    for f in frames {
        log.extend_from_slice(f);
    }
    fixtures::wal::rechecksum(&mut log);
    log
}

/// A hot rollback journal ("The Rollback Journal") of a transaction that started on a
/// database of `pages` pages, holding the original `images` of the pages it changed.
pub fn journal(pages: u8, images: &[(u8, &[u8])]) -> Vec<u8> {
    let nonce: u32 = 0x6a0c_4e11;
    let [n0, n1, n2, n3] = nonce.to_be_bytes();
    let records = images.len() as u8;
    #[rustfmt::skip]
    let header = [
        0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7, // magic
        0, 0, 0, records,   // record count
        n0, n1, n2, n3,     // checksum nonce
        0, 0, 0, pages,     // database size before the transaction, in pages
        0x00, 0x00, 0x02, 0x00, // sector size: 512 (the header is padded to it)
        0x00, 0x00, 0x02, 0x00, // page size: 512
    ];
    let mut out = vec![0u8; 512];
    out[..header.len()].copy_from_slice(&header);
    for (page, image) in images {
        // SQLite: pager_cksum (pager.c): the nonce plus every 200th byte from the end.
        let mut sum = nonce;
        let mut i = image.len() - 200;
        while i > 0 {
            sum = sum.wrapping_add(u32::from(image[i]));
            i = i.saturating_sub(200);
        }
        out.extend_from_slice(&[0, 0, 0, *page]);
        out.extend_from_slice(image);
        out.extend_from_slice(&sum.to_be_bytes());
    }
    out
}

pub fn p(n: u32) -> PageNo {
    PageNo::new(n).unwrap()
}

/// The changes of a step as (table, rowid, op, before, after).
pub type Summary = Vec<(String, i64, Op, Option<Vec<Value>>, Option<Vec<Value>>)>;

pub fn summary(step: &Step) -> Summary {
    step.changes
        .iter()
        .map(|c| {
            let (before, after) = (c.before.clone(), c.after.clone());
            (c.table.clone(), c.rowid, c.op(), before, after)
        })
        .collect()
}

pub fn change(
    rowid: i64,
    op: Op,
    before: Option<u8>,
    after: Option<u8>,
) -> (String, i64, Op, Option<Vec<Value>>, Option<Vec<Value>>) {
    ("t".to_string(), rowid, op, before.map(x), after.map(x))
}

/// The main file: rows 1 "a" and 2 "b".
pub fn main_ab() -> Vec<u8> {
    main_file(&leaf(&[&row(1, b'a'), &row(2, b'b')]))
}
