//! The database header ("The Database Header"): the first 100 bytes of page 1.
//!
//! ```text
//! offset size  field
//!  0     16    header string "SQLite format 3\0"
//!  16    2     page size (1 = 65536)
//!  18    1/1   file format write / read version
//!  20    1     reserved space at the end of each page
//!  21    1/1/1 max / min embedded payload fraction, leaf payload fraction (64, 32, 32)
//!  24    4     file change counter
//!  28    4     in-header database size, in pages
//!  32    4     first freelist trunk page
//!  36    4     total number of freelist pages
//!  40    4     schema cookie
//!  44    4     schema format number
//!  48    4     default page cache size
//!  52    4     largest root b-tree page (auto-vacuum), else 0
//!  56    4     text encoding (1 UTF-8, 2 UTF-16le, 3 UTF-16be)
//!  60    4     user version
//!  64    4     incremental-vacuum mode
//!  68    4     application ID
//!  72    20    reserved for expansion, zero
//!  92    4     version-valid-for number
//!  96    4     SQLITE_VERSION_NUMBER
//! ```
//!
//! Decoding never refuses: every field is read as stored and validated into findings.

use std::fmt;

use crate::cursor::{u16_at, u32_at};
use crate::finding::Finding;

/// Byte offsets of the database header fields, in the document's order.
pub mod offsets {
    /// The header string.
    pub const HEADER_STRING: usize = 0;
    /// Page size.
    pub const PAGE_SIZE: usize = 16;
    /// File format write version.
    pub const WRITE_VERSION: usize = 18;
    /// File format read version.
    pub const READ_VERSION: usize = 19;
    /// Reserved space per page.
    pub const RESERVED_SPACE: usize = 20;
    /// Maximum embedded payload fraction.
    pub const MAX_PAYLOAD_FRACTION: usize = 21;
    /// Minimum embedded payload fraction.
    pub const MIN_PAYLOAD_FRACTION: usize = 22;
    /// Leaf payload fraction.
    pub const LEAF_PAYLOAD_FRACTION: usize = 23;
    /// File change counter.
    pub const FILE_CHANGE_COUNTER: usize = 24;
    /// In-header database size.
    pub const DATABASE_SIZE: usize = 28;
    /// First freelist trunk page.
    pub const FIRST_FREELIST_TRUNK: usize = 32;
    /// Total freelist pages.
    pub const FREELIST_COUNT: usize = 36;
    /// Schema cookie.
    pub const SCHEMA_COOKIE: usize = 40;
    /// Schema format number.
    pub const SCHEMA_FORMAT: usize = 44;
    /// Default page cache size.
    pub const DEFAULT_CACHE_SIZE: usize = 48;
    /// Largest root b-tree page (auto-vacuum).
    pub const LARGEST_ROOT_PAGE: usize = 52;
    /// Text encoding.
    pub const TEXT_ENCODING: usize = 56;
    /// User version.
    pub const USER_VERSION: usize = 60;
    /// Incremental-vacuum mode.
    pub const INCREMENTAL_VACUUM: usize = 64;
    /// Application ID.
    pub const APPLICATION_ID: usize = 68;
    /// Reserved for expansion (20 bytes).
    pub const RESERVED_FOR_EXPANSION: usize = 72;
    /// Version-valid-for number.
    pub const VERSION_VALID_FOR: usize = 92;
    /// SQLITE_VERSION_NUMBER.
    pub const SQLITE_VERSION: usize = 96;
    /// Length of the header.
    pub const LEN: usize = 100;
}

/// The header string every database file starts with.
pub const HEADER_STRING: &[u8; 16] = b"SQLite format 3\0";

/// The database text encoding (offset 56).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TextEncoding {
    /// 1: UTF-8.
    Utf8,
    /// 2: UTF-16 little-endian.
    Utf16le,
    /// 3: UTF-16 big-endian.
    Utf16be,
}

impl TextEncoding {
    /// Decodes the header value; anything but 1, 2, 3 is `None`.
    pub fn from_header_field(raw: u32) -> Option<TextEncoding> {
        match raw {
            1 => Some(TextEncoding::Utf8),
            2 => Some(TextEncoding::Utf16le),
            3 => Some(TextEncoding::Utf16be),
            _ => None,
        }
    }

    /// The header value of this encoding.
    pub fn header_field(self) -> u32 {
        match self {
            TextEncoding::Utf8 => 1,
            TextEncoding::Utf16le => 2,
            TextEncoding::Utf16be => 3,
        }
    }

    /// Decodes text bytes stored in this encoding; `None` when they are not valid text
    /// in it (the caller keeps the bytes as evidence).
    pub fn decode(self, bytes: &[u8]) -> Option<String> {
        match self {
            TextEncoding::Utf8 => std::str::from_utf8(bytes).ok().map(str::to_owned),
            TextEncoding::Utf16le | TextEncoding::Utf16be => {
                if !bytes.len().is_multiple_of(2) {
                    return None;
                }
                let units = bytes.chunks_exact(2).map(|c| match (self, c) {
                    (TextEncoding::Utf16le, [a, b]) => u16::from_le_bytes([*a, *b]),
                    (_, [a, b]) => u16::from_be_bytes([*a, *b]),
                    _ => 0xfffd,
                });
                char::decode_utf16(units)
                    .collect::<Result<String, _>>()
                    .ok()
            }
        }
    }

    /// Encodes `text` in this encoding (used to search the file for known strings).
    pub fn encode(self, text: &str) -> Vec<u8> {
        match self {
            TextEncoding::Utf8 => text.as_bytes().to_vec(),
            TextEncoding::Utf16le => text.encode_utf16().flat_map(u16::to_le_bytes).collect(),
            TextEncoding::Utf16be => text.encode_utf16().flat_map(u16::to_be_bytes).collect(),
        }
    }
}

impl fmt::Display for TextEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TextEncoding::Utf8 => "UTF-8",
            TextEncoding::Utf16le => "UTF-16le",
            TextEncoding::Utf16be => "UTF-16be",
        })
    }
}

/// Every field of the 100-byte database header, as stored (raw values, not validated).
/// A file shorter than 100 bytes decodes with the missing bytes read as zero.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatabaseHeader {
    /// Offset 0: the header string.
    pub header_string: [u8; 16],
    /// Offset 16: page size, raw (1 = 65536).
    pub page_size_raw: u16,
    /// Offset 18: file format write version.
    pub write_version: u8,
    /// Offset 19: file format read version.
    pub read_version: u8,
    /// Offset 20: reserved bytes at the end of each page.
    pub reserved_space: u8,
    /// Offset 21: maximum embedded payload fraction.
    pub max_payload_fraction: u8,
    /// Offset 22: minimum embedded payload fraction.
    pub min_payload_fraction: u8,
    /// Offset 23: leaf payload fraction.
    pub leaf_payload_fraction: u8,
    /// Offset 24: file change counter.
    pub file_change_counter: u32,
    /// Offset 28: in-header database size in pages.
    pub database_size: u32,
    /// Offset 32: first freelist trunk page, or 0.
    pub first_freelist_trunk: u32,
    /// Offset 36: total freelist pages.
    pub freelist_count: u32,
    /// Offset 40: schema cookie.
    pub schema_cookie: u32,
    /// Offset 44: schema format number.
    pub schema_format: u32,
    /// Offset 48: default page cache size.
    pub default_cache_size: u32,
    /// Offset 52: largest root b-tree page in auto-vacuum mode, else 0.
    pub largest_root_page: u32,
    /// Offset 56: text encoding, raw.
    pub text_encoding_raw: u32,
    /// Offset 60: user version.
    pub user_version: u32,
    /// Offset 64: non-zero for incremental-vacuum mode.
    pub incremental_vacuum: u32,
    /// Offset 68: application ID.
    pub application_id: u32,
    /// Offsets 72..92: reserved for expansion.
    pub reserved_for_expansion: [u8; 20],
    /// Offset 92: version-valid-for number.
    pub version_valid_for: u32,
    /// Offset 96: SQLITE_VERSION_NUMBER of the library that last wrote the file.
    pub sqlite_version: u32,
}

impl DatabaseHeader {
    /// Decodes the header from the start of the file.
    pub fn parse(file: &[u8]) -> DatabaseHeader {
        let mut raw = [0u8; offsets::LEN];
        let n = file.len().min(offsets::LEN);
        if let (Some(dst), Some(src)) = (raw.get_mut(..n), file.get(..n)) {
            dst.copy_from_slice(src);
        }
        let b = |o: usize| raw.get(o).copied().unwrap_or(0);
        let w = |o: usize| u32_at(&raw, o).unwrap_or(0);
        let mut header_string = [0u8; 16];
        header_string.copy_from_slice(raw.get(..16).unwrap_or(&[0; 16]));
        let mut reserved_for_expansion = [0u8; 20];
        reserved_for_expansion.copy_from_slice(raw.get(72..92).unwrap_or(&[0; 20]));
        DatabaseHeader {
            header_string,
            page_size_raw: u16_at(&raw, offsets::PAGE_SIZE).unwrap_or(0),
            write_version: b(offsets::WRITE_VERSION),
            read_version: b(offsets::READ_VERSION),
            reserved_space: b(offsets::RESERVED_SPACE),
            max_payload_fraction: b(offsets::MAX_PAYLOAD_FRACTION),
            min_payload_fraction: b(offsets::MIN_PAYLOAD_FRACTION),
            leaf_payload_fraction: b(offsets::LEAF_PAYLOAD_FRACTION),
            file_change_counter: w(offsets::FILE_CHANGE_COUNTER),
            database_size: w(offsets::DATABASE_SIZE),
            first_freelist_trunk: w(offsets::FIRST_FREELIST_TRUNK),
            freelist_count: w(offsets::FREELIST_COUNT),
            schema_cookie: w(offsets::SCHEMA_COOKIE),
            schema_format: w(offsets::SCHEMA_FORMAT),
            default_cache_size: w(offsets::DEFAULT_CACHE_SIZE),
            largest_root_page: w(offsets::LARGEST_ROOT_PAGE),
            text_encoding_raw: w(offsets::TEXT_ENCODING),
            user_version: w(offsets::USER_VERSION),
            incremental_vacuum: w(offsets::INCREMENTAL_VACUUM),
            application_id: w(offsets::APPLICATION_ID),
            reserved_for_expansion,
            version_valid_for: w(offsets::VERSION_VALID_FOR),
            sqlite_version: w(offsets::SQLITE_VERSION),
        }
    }

    /// Whether the header string is the one SQLite writes.
    pub fn has_header_string(&self) -> bool {
        &self.header_string == HEADER_STRING
    }

    /// Whether the in-header database size can be trusted: non-zero and written by a
    /// library that kept it current (change counter equals version-valid-for).
    pub fn database_size_valid(&self) -> bool {
        self.database_size != 0 && self.file_change_counter == self.version_valid_for
    }

    /// Whether the database is in auto-vacuum or incremental-vacuum mode (pointer-map pages).
    pub fn auto_vacuum(&self) -> bool {
        self.largest_root_page != 0
    }

    /// Field checks that need no other evidence than the header itself.
    pub fn findings(&self) -> Vec<Finding> {
        let mut out = Vec::new();
        if !self.has_header_string() {
            out.push(Finding::HeaderStringMismatch {
                observed: self.header_string,
            });
        }
        if !matches!(self.write_version, 1 | 2) || !matches!(self.read_version, 1 | 2) {
            out.push(Finding::InvalidFormatVersion {
                write: self.write_version,
                read: self.read_version,
            });
        }
        if (
            self.max_payload_fraction,
            self.min_payload_fraction,
            self.leaf_payload_fraction,
        ) != (64, 32, 32)
        {
            out.push(Finding::InvalidPayloadFractions {
                max: self.max_payload_fraction,
                min: self.min_payload_fraction,
                leaf: self.leaf_payload_fraction,
            });
        }
        if !(1..=4).contains(&self.schema_format) {
            out.push(Finding::InvalidSchemaFormat {
                raw: self.schema_format,
            });
        }
        if let Some(i) = self.reserved_for_expansion.iter().position(|b| *b != 0) {
            out.push(Finding::HeaderReservedNotZero {
                offset: (offsets::RESERVED_FOR_EXPANSION + i) as u8,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn healthy() -> Vec<u8> {
        let mut h = vec![0u8; 100];
        h[..16].copy_from_slice(HEADER_STRING);
        h[16..18].copy_from_slice(&4096u16.to_be_bytes());
        h[18] = 1;
        h[19] = 1;
        h[21] = 64;
        h[22] = 32;
        h[23] = 32;
        h[24..28].copy_from_slice(&3u32.to_be_bytes());
        h[28..32].copy_from_slice(&2u32.to_be_bytes());
        h[44..48].copy_from_slice(&4u32.to_be_bytes());
        h[56..60].copy_from_slice(&1u32.to_be_bytes());
        h[92..96].copy_from_slice(&3u32.to_be_bytes());
        h
    }

    #[test]
    fn healthy_header_has_no_findings() {
        let h = DatabaseHeader::parse(&healthy());
        assert!(h.findings().is_empty());
        assert_eq!(h.page_size_raw, 4096);
        assert!(h.database_size_valid());
        assert_eq!(
            TextEncoding::from_header_field(h.text_encoding_raw),
            Some(TextEncoding::Utf8)
        );
    }

    #[test]
    fn header_string_damaged() {
        let mut b = healthy();
        b[0] = b'X';
        assert!(matches!(
            DatabaseHeader::parse(&b).findings()[0],
            Finding::HeaderStringMismatch { .. }
        ));
    }

    #[test]
    fn format_versions_invalid() {
        let mut b = healthy();
        b[18] = 7;
        assert_eq!(
            DatabaseHeader::parse(&b).findings(),
            vec![Finding::InvalidFormatVersion { write: 7, read: 1 }]
        );
    }

    #[test]
    fn payload_fractions_invalid() {
        let mut b = healthy();
        b[21] = 65;
        assert_eq!(
            DatabaseHeader::parse(&b).findings(),
            vec![Finding::InvalidPayloadFractions {
                max: 65,
                min: 32,
                leaf: 32
            }]
        );
    }

    #[test]
    fn schema_format_invalid() {
        let mut b = healthy();
        b[47] = 9;
        assert_eq!(
            DatabaseHeader::parse(&b).findings(),
            vec![Finding::InvalidSchemaFormat { raw: 9 }]
        );
    }

    #[test]
    fn reserved_for_expansion_not_zero() {
        let mut b = healthy();
        b[80] = 1;
        assert_eq!(
            DatabaseHeader::parse(&b).findings(),
            vec![Finding::HeaderReservedNotZero { offset: 80 }]
        );
    }

    #[test]
    fn stale_database_size_is_not_trusted() {
        let mut b = healthy();
        b[95] = 9; // version-valid-for differs from the change counter
        assert!(!DatabaseHeader::parse(&b).database_size_valid());
    }

    #[test]
    fn short_file_reads_missing_bytes_as_zero() {
        let h = DatabaseHeader::parse(b"SQLite");
        assert_eq!(h.page_size_raw, 0);
        assert!(!h.has_header_string());
    }

    #[test]
    fn utf16_text_decodes_both_ways() {
        assert_eq!(
            TextEncoding::Utf16le.decode(&[b'h', 0, b'i', 0]).as_deref(),
            Some("hi")
        );
        assert_eq!(
            TextEncoding::Utf16be.decode(&[0, b'h', 0, b'i']).as_deref(),
            Some("hi")
        );
        assert_eq!(TextEncoding::Utf16le.decode(b"h"), None);
        assert_eq!(TextEncoding::Utf8.decode(&[0xff]), None);
        let s = "日本 🎉";
        for e in [
            TextEncoding::Utf8,
            TextEncoding::Utf16le,
            TextEncoding::Utf16be,
        ] {
            assert_eq!(e.decode(&e.encode(s)).as_deref(), Some(s));
        }
    }
}

/// The database SQLite reads a 0-byte file as: one 4096-byte page, the header and an
/// empty schema. An empty file is an empty database to SQLite (it writes the header with
/// its first table), not damage; a reader given one reads this instead.
pub static EMPTY_DATABASE: [u8; 4096] = empty_database();

/// Whether `bytes` are [`EMPTY_DATABASE`] itself, read in place of an empty file.
pub fn is_empty_database(bytes: &[u8]) -> bool {
    std::ptr::eq(bytes.as_ptr(), EMPTY_DATABASE.as_ptr())
}

/// `bytes`, or [`EMPTY_DATABASE`] when they are none: what SQLite reads a file as.
pub fn as_sqlite_reads(bytes: &[u8]) -> &[u8] {
    if bytes.is_empty() {
        &EMPTY_DATABASE
    } else {
        bytes
    }
}

// A constant: every index is known below the array's length.
#[allow(clippy::indexing_slicing)]
const fn empty_database() -> [u8; 4096] {
    let mut b = [0u8; 4096];
    let magic = *b"SQLite format 3\0";
    let mut i = 0;
    while i < magic.len() {
        b[i] = magic[i];
        i += 1;
    }
    b[16] = 0x10; // page size 4096
    b[18] = 1; // file format write version: legacy
    b[19] = 1; // read version
    b[21] = 64; // maximum embedded payload fraction
    b[22] = 32; // minimum
    b[23] = 32; // leaf payload fraction
    b[27] = 1; // file change counter
    b[31] = 1; // database size in pages
    b[47] = 4; // schema format number
    b[59] = 1; // text encoding: UTF-8
    b[95] = 1; // version-valid-for, matching the change counter
               // Page 1's b-tree header: an empty table leaf whose content starts at the page's end.
    b[100] = 0x0d;
    b[105] = 0x10;
    b
}

#[cfg(test)]
mod empty_tests {
    /// The empty database opens as one page with nothing on it.
    #[test]
    fn the_empty_database_is_one_page_of_nothing() {
        let db = crate::Database::open(&super::EMPTY_DATABASE).unwrap();
        assert_eq!(db.page_count(), 1);
        assert!(db.findings().is_empty(), "{:?}", db.findings());
        assert!(crate::read_schema(&db).rows.is_empty());
    }
}
