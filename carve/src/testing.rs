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
    let schema = [
        // B-tree Pages: the schema table's leaf, after the database header
        0x0d,       // page type: table b-tree leaf
        0x00, 0x00, // first freeblock: none
        0x00, 0x00, // cell count: 0
        0x02, 0x00, // cell content area: 512, the page's end
        0x00,       // fragmented free bytes
    ];
    let header = fixtures::format::header::small(count, false);
    let mut out = page(&[(0, &header), (100, &schema)]);
    for p in pages {
        out.extend_from_slice(p);
    }
    out
}
