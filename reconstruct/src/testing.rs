//! Test builders shared by the unit tests of this crate: table shapes as SQLite reports
//! them, and small files of 512-byte pages whose b-tree pages the tests lay out.

use crate::plan::TableTarget;
use crate::shape::{Column, ColumnDefault, ColumnKind, TableShape};
use pager::PageNo;

/// The page size of every file built here: the smallest SQLite writes ("Pages").
pub const PAGE: usize = 512;

/// A rowid table's shape from `(name, declaration)` pairs, the declaration a type
/// optionally followed by `PRIMARY KEY` and `NOT NULL`, as `PRAGMA table_xinfo` reads it.
pub fn shape(name: &str, columns: &[(&str, &str)]) -> TableShape {
    let columns = columns
        .iter()
        .map(|(column, decl)| Column {
            name: column.to_string(),
            decl_type: decl
                .replace("PRIMARY KEY", "")
                .replace("NOT NULL", "")
                .trim()
                .to_string(),
            not_null: decl.contains("NOT NULL"),
            pk: u32::from(decl.contains("PRIMARY KEY")),
            kind: ColumnKind::Ordinary,
            default: ColumnDefault::None,
        })
        .collect();
    TableShape {
        name: name.to_string(),
        columns,
        without_rowid: false,
        strict: false,
        pk_indexed: false,
    }
}

/// A table to fill: `shape`, rooted at page `root` (0: no root page).
pub fn target(shape: TableShape, root: u32) -> TableTarget {
    TableTarget {
        shape,
        root: PageNo::new(root),
        indexes: Vec::new(),
    }
}

/// A row of `sqlite_schema` ("Storage Of The SQL Database Schema") for table `name`
/// rooted at `root`: type, name, tbl_name, rootpage, sql, each text at most 57 bytes.
pub fn schema_row(rowid: u8, name: &str, root: u8, sql: &str) -> Vec<u8> {
    let text = |s: &str| {
        let n = u8::try_from(s.len())
            .ok()
            .filter(|n| *n <= 57)
            .expect("short text");
        13 + 2 * n
    };
    #[rustfmt::skip]
    let header = [
        0x06,          // record header size: 6
        text("table"), // type
        text(name),    // name
        text(name),    // tbl_name
        0x01,          // rootpage: 8-bit integer
        text(sql),     // sql
    ];
    let mut record = header.to_vec();
    for part in [
        b"table".as_slice(),
        name.as_bytes(),
        name.as_bytes(),
        &[root],
        sql.as_bytes(),
    ] {
        record.extend_from_slice(part);
    }
    let len = u8::try_from(record.len())
        .ok()
        .filter(|n| *n < 0x80)
        .expect("a short record");
    // The cell: payload length and rowid, 1-byte varints, then the record.
    let mut cell = vec![len, rowid];
    cell.extend_from_slice(&record);
    cell
}

/// A cell of a table like `a(id INTEGER PRIMARY KEY, name TEXT)`: row `rowid`, its
/// `name` the 1-byte text `c`.
pub fn named_row(rowid: u8, c: u8) -> [u8; 6] {
    #[rustfmt::skip]
    let cell = [
        0x04,  // payload length: 4
        rowid, // rowid
        0x03,  // record header size: 3
        0x00,  // serial type: NULL (the rowid alias)
        0x0f,  // serial type: text of 1 byte
        c,     // name
    ];
    cell
}

/// A cell of three 8-bit integers, a record no table of two columns holds.
pub fn three_ints(rowid: u8, n: u8) -> [u8; 9] {
    #[rustfmt::skip]
    let cell = [
        0x07,             // payload length: 7
        rowid,            // rowid
        0x04,             // record header size: 4
        0x01, 0x01, 0x01, // serial types: 8-bit integer, three times
        n, n, n,
    ];
    cell
}

/// A b-tree page of type `kind` with its header at `at` (100 on page 1), `extra` the
/// header's bytes after its first 8 (an interior page's right-most pointer), and `cells`
/// packed at the end of the page.
fn btree_page(at: usize, kind: u8, extra: &[u8], cells: &[&[u8]]) -> Vec<u8> {
    let mut page = vec![0u8; PAGE];
    let mut end = PAGE;
    let pointers_at = at + 8 + extra.len();
    for (i, cell) in cells.iter().enumerate() {
        end -= cell.len();
        page[end..end + cell.len()].copy_from_slice(cell);
        page[pointers_at + 2 * i..pointers_at + 2 * i + 2]
            .copy_from_slice(&(end as u16).to_be_bytes());
    }
    let [n0, n1] = (cells.len() as u16).to_be_bytes();
    let [c0, c1] = (end as u16).to_be_bytes();
    #[rustfmt::skip]
    let header = [
        kind,       // page type
        0x00, 0x00, // first freeblock: none
        n0, n1,     // cell count
        c0, c1,     // cell content area
        0x00,       // fragmented free bytes
    ];
    page[at..at + 8].copy_from_slice(&header);
    page[at + 8..pointers_at].copy_from_slice(extra);
    page
}

/// A table b-tree leaf holding `cells`.
pub fn leaf(cells: &[&[u8]]) -> Vec<u8> {
    btree_page(0, 0x0d, &[], cells)
}

/// A table b-tree interior page: a cell for each `(left child, integer key)`, then the
/// right-most pointer.
pub fn interior(children: &[(u8, u8)], right_most: u8) -> Vec<u8> {
    #[rustfmt::skip]
    let cells: Vec<[u8; 5]> = children
        .iter()
        .map(|(child, key)| [
            0, 0, 0, *child, // left child page
            *key,            // integer key: a varint of 1 byte
        ])
        .collect();
    let cells: Vec<&[u8]> = cells.iter().map(|c| c.as_slice()).collect();
    btree_page(0, 0x05, &[0, 0, 0, right_most], &cells)
}

/// An index b-tree leaf holding `cells`.
pub fn index_leaf(cells: &[&[u8]]) -> Vec<u8> {
    btree_page(0, 0x0a, &[], cells)
}

/// A page of zeros: what a wipe, or a page never written, leaves.
pub fn zeroed() -> Vec<u8> {
    vec![0u8; PAGE]
}

/// A file: page 1 holds the database header and the schema leaf with `schema` rows, then
/// `pages` (pages 2, 3, …).
pub fn file(schema: &[&[u8]], pages: &[Vec<u8>]) -> Vec<u8> {
    let count = u8::try_from(pages.len() + 1).expect("a small file");
    let mut out = btree_page(100, 0x0d, &[], schema);
    out[..100].copy_from_slice(&fixtures::format::header::small(count, false));
    for page in pages {
        out.extend_from_slice(page);
    }
    out
}
