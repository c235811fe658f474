//! Test builders shared by the unit tests of this crate: table shapes as SQLite would
//! report them, and small files of 512-byte pages whose structures the tests lay out
//! byte by byte.

use reconstruct::shape::{Column, ColumnDefault, ColumnKind, TableShape};

use crate::Template;

/// The page size of every file built here: the smallest SQLite writes ("Pages").
pub const PAGE: usize = 512;

/// A rowid table's shape from `(name, declaration)` pairs, the declaration a type
/// optionally followed by `PRIMARY KEY` and `NOT NULL`, as `PRAGMA table_xinfo` reads it.
pub fn shape(name: &str, columns: &[(&str, &str)]) -> TableShape {
    let columns = columns
        .iter()
        .map(|(column, decl)| {
            let pk = decl.contains("PRIMARY KEY");
            Column {
                name: column.to_string(),
                decl_type: decl
                    .replace("PRIMARY KEY", "")
                    .replace("NOT NULL", "")
                    .trim()
                    .to_string(),
                not_null: decl.contains("NOT NULL"),
                pk: u32::from(pk),
                kind: ColumnKind::Ordinary,
                default: ColumnDefault::None,
            }
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

/// The template of [`shape`].
pub fn template(name: &str, columns: &[(&str, &str)]) -> Template {
    Template::of(&shape(name, columns)).expect("a rowid table that stores columns")
}

/// `notes(title TEXT, body TEXT, stars INTEGER)`: the table most tests carve rows of.
pub fn notes() -> Template {
    template(
        "notes",
        &[("title", "TEXT"), ("body", "TEXT"), ("stars", "INTEGER")],
    )
}

/// A page of [`PAGE`] zero bytes with each `(offset, bytes)` part written over it.
pub fn page(parts: &[(usize, &[u8])]) -> Vec<u8> {
    let mut page = vec![0u8; PAGE];
    for (at, bytes) in parts {
        page[*at..*at + bytes.len()].copy_from_slice(bytes);
    }
    page
}

/// A file whose page 1 is the database header over an empty schema, followed by `pages`
/// (pages 2, 3, …).
pub fn file(pages: &[Vec<u8>]) -> Vec<u8> {
    let count = u8::try_from(pages.len() + 1).expect("a small file");
    #[rustfmt::skip]
    let header: [u8; 100] = [
        // The Database Header
        b'S', b'Q', b'L', b'i', b't', b'e', b' ', b'f',
        b'o', b'r', b'm', b'a', b't', b' ', b'3', 0x00, // header string
        0x02, 0x00,       // page size: 512
        0x01,             // file format write version: legacy
        0x01,             // file format read version: legacy
        0x00,             // reserved space at the end of each page
        0x40, 0x20, 0x20, // payload fractions: 64, 32, 32
        0, 0, 0, 1,       // file change counter
        0, 0, 0, count,   // in-header database size, in pages
        0, 0, 0, 0,       // first freelist trunk page: none
        0, 0, 0, 0,       // freelist pages
        0, 0, 0, 1,       // schema cookie
        0, 0, 0, 4,       // schema format number
        0, 0, 0, 0,       // suggested cache size
        0, 0, 0, 0,       // largest root b-tree page: not auto-vacuum
        0, 0, 0, 1,       // text encoding: UTF-8
        0, 0, 0, 0,       // user version
        0, 0, 0, 0,       // incremental vacuum: off
        0, 0, 0, 0,       // application ID
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // reserved for expansion
        0, 0, 0, 1,       // version-valid-for: the change counter
        0x00, 0x2e, 0x7a, 0x71, // SQLITE_VERSION_NUMBER: 3046001
    ];
    #[rustfmt::skip]
    let schema = [
        // B-tree Pages: the schema table's leaf, after the database header
        0x0d,       // page type: table b-tree leaf
        0x00, 0x00, // first freeblock: none
        0x00, 0x00, // cell count: 0
        0x02, 0x00, // cell content area: 512, the page's end
        0x00,       // fragmented free bytes
    ];
    let mut out = page(&[(0, &header), (100, &schema)]);
    for p in pages {
        out.extend_from_slice(p);
    }
    out
}
