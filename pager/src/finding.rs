//! Typed findings: every way the input can differ from what the file format requires.
//!
//! A [`Finding`] is carried next to the data it concerns; the reader records it and goes on.
//! Each variant names one kind of damage, says where it is and carries the raw value
//! observed. `kind()` gives the variant's snake_case name for machine-readable reports.
//! Its sentence (`Display`, in `sentence`) says the same in the document's words.

mod sentence;

use crate::btree::PageType;
use crate::classify::PageClass;
use crate::types::{CellIndex, Location, PageNo};

/// Something in the input that differs from what the file format requires.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Finding {
    // ---- The database header ("The Database Header") ----
    /// The file is shorter than the 100-byte database header.
    FileTooSmall {
        /// File length in bytes.
        len: u64,
    },
    /// The header string at offset 0 is not "SQLite format 3\0".
    HeaderStringMismatch {
        /// The 16 bytes found there.
        observed: [u8; 16],
    },
    /// The page size at offset 16 is not a power of two from 512 to 65536 (or 1).
    InvalidPageSize {
        /// The raw 2-byte value.
        raw: u16,
    },
    /// The page size at offset 16 is valid but the file's pages say otherwise.
    PageSizeDisagrees {
        /// Page size the header declares.
        declared: u32,
        /// Page size the file's b-tree pages support.
        inferred: u32,
    },
    /// The file length is not a whole number of pages; the last page is cut short.
    FileNotPageMultiple {
        /// File length in bytes.
        len: u64,
        /// Page size in use.
        page_size: u32,
    },
    /// The file format write or read version (offsets 18, 19) is neither 1 (legacy) nor 2 (WAL).
    InvalidFormatVersion {
        /// Write version, offset 18.
        write: u8,
        /// Read version, offset 19.
        read: u8,
    },
    /// The reserved space at offset 20 leaves a usable size below 480 bytes.
    ReservedSpaceTooLarge {
        /// Reserved bytes per page.
        reserved: u8,
        /// Page size in use.
        page_size: u32,
    },
    /// The payload fractions at offsets 21..24 are not 64, 32, 32.
    InvalidPayloadFractions {
        /// Maximum embedded payload fraction, offset 21.
        max: u8,
        /// Minimum embedded payload fraction, offset 22.
        min: u8,
        /// Leaf payload fraction, offset 23.
        leaf: u8,
    },
    /// The text encoding at offset 56 is not 1 (UTF-8), 2 (UTF-16le) or 3 (UTF-16be), nor 0 in a database no table was ever created in (SQLite's own state, read as UTF-8).
    InvalidTextEncoding {
        /// The raw 4-byte value.
        raw: u32,
    },
    /// The schema format number at offset 44 is not 1 to 4, nor 0 in a database no table was ever created in (SQLite's own state, read as 1).
    InvalidSchemaFormat {
        /// The raw 4-byte value.
        raw: u32,
    },
    /// The in-header database size (offset 28) is valid but differs from the file's page count.
    DatabaseSizeMismatch {
        /// Pages the header declares.
        declared: u32,
        /// Pages the file holds.
        actual: u32,
    },
    /// A byte of the "reserved for expansion" area (offsets 72..92) is not zero.
    HeaderReservedNotZero {
        /// Offset of the first non-zero byte.
        offset: u8,
    },
    /// The freelist page count at offset 36 differs from the pages the freelist chain holds.
    FreelistCountMismatch {
        /// Count in the header.
        declared: u32,
        /// Pages found on the chain.
        found: u32,
    },

    // ---- Pages ----
    /// The last page of the file is shorter than the page size.
    PageTruncated {
        /// The page.
        page: PageNo,
        /// Bytes present.
        available: u32,
    },

    // ---- B-tree pages ("B-tree Pages") ----
    /// A page expected to be a b-tree page has a type byte other than 2, 5, 10 or 13.
    InvalidPageType {
        /// The page.
        page: PageNo,
        /// The type byte.
        raw: u8,
    },
    /// The cell pointer array runs past the usable size of the page.
    CellCountTooLarge {
        /// The page.
        page: PageNo,
        /// The cell count from the page header.
        count: u16,
    },
    /// The start of the cell content area lies inside the header or past the usable size.
    CellContentAreaOutOfRange {
        /// The page.
        page: PageNo,
        /// The decoded offset (0 read as 65536).
        offset: u32,
    },
    /// The fragmented free bytes count is above 60, which SQLite never writes.
    FragmentedBytesTooLarge {
        /// The page.
        page: PageNo,
        /// The count.
        count: u8,
    },
    /// A cell pointer points outside the cell content area.
    CellPointerOutOfRange {
        /// The page.
        page: PageNo,
        /// Which cell.
        index: CellIndex,
        /// The pointer value.
        offset: u16,
    },
    /// A cell runs past the usable size of its page, or its header cannot be decoded there.
    CellPastPageEnd {
        /// The page.
        page: PageNo,
        /// Which cell.
        index: CellIndex,
        /// The cell's offset.
        offset: u16,
    },
    /// Two cells of one page share bytes.
    CellOverlap {
        /// The page.
        page: PageNo,
        /// The later cell.
        index: CellIndex,
        /// The cell it overlaps.
        other: CellIndex,
        /// The later cell's offset.
        offset: u16,
    },
    /// A freeblock lies outside the cell content area, or runs past the usable size.
    FreeblockOutOfRange {
        /// The page.
        page: PageNo,
        /// The freeblock's offset.
        offset: u16,
    },
    /// A freeblock is not after the one before it (the chain must ascend; this also catches cycles).
    FreeblockOutOfOrder {
        /// The page.
        page: PageNo,
        /// The freeblock's offset.
        offset: u16,
    },
    /// A freeblock covers bytes of a cell a pointer names: SQLite never frees a live
    /// cell's bytes, so the freeblock's size or the pointer was changed.
    FreeblockOverCell {
        /// The page.
        page: PageNo,
        /// The freeblock's offset.
        offset: u16,
        /// The cell's offset.
        cell: u16,
    },

    // ---- B-tree structure ----
    /// A child pointer of an interior page is 0.
    ChildPointerNull {
        /// The interior page.
        page: PageNo,
        /// The cell, or `None` for the right-most pointer.
        index: Option<CellIndex>,
    },
    /// A child pointer of an interior page points past the end of the file.
    ChildPointerPastEnd {
        /// The interior page.
        page: PageNo,
        /// The cell, or `None` for the right-most pointer.
        index: Option<CellIndex>,
        /// The pointer value.
        child: u32,
    },
    /// A child pointer leads back to a page already visited in this walk.
    BtreeCycle {
        /// The interior page holding the pointer.
        page: PageNo,
        /// The page reached twice.
        child: PageNo,
    },
    /// A non-root b-tree leaf holds no cell, which SQLite never leaves (it merges or frees
    /// an emptied page): the cells its key range held are lost, or its cell count is wrong.
    EmptyNonRootPage {
        /// The empty page.
        page: PageNo,
        /// The interior page that points to it.
        parent: PageNo,
    },
    /// Well-formed cells lie in a table leaf's cell content area that no cell pointer
    /// names (a cell count or pointer array damaged): they are read where they lie.
    CellsUnlisted {
        /// The page.
        page: PageNo,
        /// How many cells no pointer names.
        count: u16,
    },
    /// A cell pointer lands inside a cell of the content area, not at its start: it is
    /// not read as a cell (the cell is read once, from its start).
    CellPointerIntoCell {
        /// The page.
        page: PageNo,
        /// The pointer's index.
        index: CellIndex,
        /// Where it points.
        offset: u16,
        /// Where the cell it lands in starts.
        cell: u16,
    },
    /// A cell pointer leads to no cell, on a table leaf whose content area holds a cell no
    /// pointer names: that cell is read where it lies, and the pointer is not read.
    CellPointerAstray {
        /// The page.
        page: PageNo,
        /// The pointer's index.
        index: CellIndex,
        /// Where it points.
        offset: u16,
    },
    /// Bytes of a table leaf's cell content area that are neither a well-formed cell, a
    /// freeblock nor fragmented free bytes: a cell may have been lost there.
    ContentUnaccounted {
        /// The page.
        page: PageNo,
        /// How many bytes.
        bytes: u32,
    },
    /// A b-tree is deeper than SQLite ever builds one.
    BtreeTooDeep {
        /// The page at which the walk stopped.
        page: PageNo,
        /// Depth reached (root = 1).
        depth: u32,
    },
    /// A child pointer leads to a page that is not a b-tree page (zeroed or garbage).
    ChildNotBtreePage {
        /// The interior page.
        parent: PageNo,
        /// The child page.
        child: PageNo,
        /// The child's type byte.
        raw_type: u8,
    },
    /// A child pointer leads to a b-tree page of the other kind (table vs index).
    ChildPageKindMismatch {
        /// The interior page.
        parent: PageNo,
        /// The child page.
        child: PageNo,
        /// The child's page type.
        found: PageType,
    },
    /// A table b-tree key lies outside the range its ancestors' divider keys allow.
    KeyOutOfRange {
        /// The page.
        page: PageNo,
        /// Which cell.
        index: CellIndex,
        /// The key.
        rowid: i64,
        /// Exclusive lower bound, if any.
        lower: Option<i64>,
        /// Inclusive upper bound, if any.
        upper: Option<i64>,
    },
    /// A b-tree reaches a page the freelist lists: SQLite frees a page only once no
    /// structure holds it, so the pointer or the freelist was changed.
    TreePageOnFreelist {
        /// The page.
        page: PageNo,
        /// Root of the tree that reached it.
        root: PageNo,
    },
    /// A page is reached from two b-trees (or twice from one).
    PageInTwoTrees {
        /// The page.
        page: PageNo,
        /// Root of the tree that claimed it first.
        first_root: PageNo,
        /// Root of the tree that reached it again.
        second_root: PageNo,
    },

    // ---- Records ("Record Format") ----
    /// A varint runs past the end of the bytes that hold it.
    TruncatedVarint {
        /// Where it starts.
        at: Location,
    },
    /// The record header size is smaller than its own varint or larger than the payload.
    RecordHeaderSizeInvalid {
        /// The cell holding the record.
        at: Location,
        /// The header size varint.
        header_size: u64,
        /// The payload size.
        payload_len: u64,
    },
    /// A serial type is 10 or 11, which are reserved.
    InvalidSerialType {
        /// The cell holding the record.
        at: Location,
        /// The serial type.
        serial_type: u64,
    },
    /// The record header's column sizes do not add up to the payload size.
    RecordSizeMismatch {
        /// The cell holding the record.
        at: Location,
        /// Header plus bodies, as the header describes them.
        header_says: u64,
        /// The payload size from the cell.
        payload_len: u64,
    },
    /// A value's bytes are missing from the payload (truncated record or short overflow chain).
    ValueTruncated {
        /// The cell holding the record.
        at: Location,
        /// Zero-based column.
        column: u32,
    },

    // ---- Overflow pages ("Cell Payload Overflow Pages") ----
    /// An overflow chain reaches a page it has already visited.
    OverflowCycle {
        /// The cell whose payload the chain holds.
        cell: Location,
        /// The page reached twice.
        repeated: PageNo,
    },
    /// An overflow chain points past the end of the file.
    OverflowPastEnd {
        /// The cell whose payload the chain holds.
        cell: Location,
        /// The pointer value.
        next: u32,
    },
    /// An overflow chain leads into a page that has another role.
    OverflowIntoNonOverflowPage {
        /// The cell whose payload the chain holds.
        cell: Location,
        /// The page.
        page: PageNo,
        /// What that page is.
        class: PageClass,
    },
    /// An overflow chain ends (next pointer 0) before the payload is complete.
    OverflowChainShort {
        /// The cell whose payload the chain holds.
        cell: Location,
        /// Payload bytes that could not be read.
        missing: u64,
    },

    /// The last overflow page the payload needs points on to another page instead of 0.
    OverflowChainTooLong {
        /// The cell whose payload the chain holds.
        cell: Location,
        /// The last page the payload needs.
        last: PageNo,
        /// Its next-page pointer.
        next: u32,
    },

    // ---- Freelist ("The Freelist") ----
    /// A freelist trunk pointer points past the end of the file.
    FreelistTrunkPastEnd {
        /// The trunk holding the pointer, or `None` for the header's first trunk.
        from: Option<PageNo>,
        /// The pointer value.
        next: u32,
    },
    /// The freelist trunk chain reaches a trunk it has already visited.
    FreelistCycle {
        /// The trunk reached twice.
        trunk: PageNo,
    },
    /// A freelist trunk claims more leaf pointers than fit on the page.
    FreelistLeafCountTooLarge {
        /// The trunk.
        trunk: PageNo,
        /// The claimed count.
        count: u32,
    },
    /// A freelist leaf pointer is 0 or past the end of the file, or names a page already on the freelist.
    FreelistLeafInvalid {
        /// The trunk.
        trunk: PageNo,
        /// The pointer value.
        leaf: u32,
    },

    // ---- Write-ahead log ("The WAL File Format") ----
    /// The WAL header is unusable: no frame of the log can be trusted.
    WalHeaderInvalid {
        /// What is wrong with it.
        reason: crate::wal::WalHeaderDefect,
    },
    /// A frame's cumulative checksum does not match: it and every later frame are ignored.
    WalFrameChecksumMismatch {
        /// The frame (1-based).
        frame: u32,
    },
    /// A frame's salts differ from the header's: a frame of an earlier generation of the log.
    WalFrameSaltMismatch {
        /// The frame (1-based).
        frame: u32,
    },
    /// Valid frames after the last commit frame: an unfinished transaction, ignored.
    WalFramesIgnored {
        /// The first ignored frame.
        first: u32,
        /// How many.
        count: u32,
    },

    // ---- Rollback journal ("The Rollback Journal") ----
    /// A hot journal record's checksum (or page number) is wrong: it and later records are not rolled back.
    JournalRecordChecksumMismatch {
        /// The record (1-based, across segments).
        record: u32,
    },
    /// A hot journal's segment declares more records than the file holds.
    JournalRecordsMissing {
        /// Records the segment header declares.
        declared: u32,
        /// Whole records present.
        present: u32,
    },
    /// A hot rollback journal's header gives another page size than the database's, and
    /// no page 1 image in it proves that size: the journal is not rolled back (a journal
    /// is evidence about the pages it holds, never about the database's geometry).
    JournalPageSizeDisagrees {
        /// The journal header's page size.
        journal: u32,
        /// The database header's page size.
        database: u32,
    },
    /// Pages a log or journal holds lie past the file's end with too few pages between the
    /// file's end and them held by the log (under half): a database grows by writing its
    /// new pages, so these are claims, not pages. They are not read, and do not lengthen
    /// the database (a page number of billions once made a 15-page file a 3-billion-page
    /// one).
    LogPagesOutOfReach {
        /// The first such page.
        first: u32,
        /// How many.
        count: u32,
        /// The last page the log's images reach.
        reach: u32,
    },
    /// A write-ahead log's header gives another page size than the database's, and no
    /// page 1 image in it proves that size: its frames are not the database's pages, and
    /// the log is not read (SQLite takes the page size from page 1, never from the log).
    WalPageSizeDisagrees {
        /// The log header's page size.
        wal: u32,
        /// The database header's page size.
        database: u32,
    },

    // ---- Schema ("Storage Of The SQL Database Schema") ----
    /// A `sqlite_schema` record does not have the five expected columns of the right types.
    SchemaRecordMalformed {
        /// The cell holding the record.
        at: Location,
        /// Number of columns found.
        columns: u32,
    },
    /// A schema row's root page is not a page of the file.
    SchemaRootPageInvalid {
        /// The cell holding the record.
        at: Location,
        /// The rootpage value.
        rootpage: i64,
    },
}

impl Finding {
    /// The variant's name in snake_case, for machine-readable reports.
    pub fn kind(&self) -> &'static str {
        use Finding::*;
        match self {
            FileTooSmall { .. } => "file_too_small",
            HeaderStringMismatch { .. } => "header_string_mismatch",
            InvalidPageSize { .. } => "invalid_page_size",
            PageSizeDisagrees { .. } => "page_size_disagrees",
            FileNotPageMultiple { .. } => "file_not_page_multiple",
            InvalidFormatVersion { .. } => "invalid_format_version",
            ReservedSpaceTooLarge { .. } => "reserved_space_too_large",
            InvalidPayloadFractions { .. } => "invalid_payload_fractions",
            InvalidTextEncoding { .. } => "invalid_text_encoding",
            InvalidSchemaFormat { .. } => "invalid_schema_format",
            DatabaseSizeMismatch { .. } => "database_size_mismatch",
            HeaderReservedNotZero { .. } => "header_reserved_not_zero",
            FreelistCountMismatch { .. } => "freelist_count_mismatch",
            PageTruncated { .. } => "page_truncated",
            InvalidPageType { .. } => "invalid_page_type",
            CellCountTooLarge { .. } => "cell_count_too_large",
            CellContentAreaOutOfRange { .. } => "cell_content_area_out_of_range",
            FragmentedBytesTooLarge { .. } => "fragmented_bytes_too_large",
            CellPointerOutOfRange { .. } => "cell_pointer_out_of_range",
            CellPastPageEnd { .. } => "cell_past_page_end",
            CellOverlap { .. } => "cell_overlap",
            FreeblockOutOfRange { .. } => "freeblock_out_of_range",
            FreeblockOutOfOrder { .. } => "freeblock_out_of_order",
            FreeblockOverCell { .. } => "freeblock_over_cell",
            ChildPointerNull { .. } => "child_pointer_null",
            ChildPointerPastEnd { .. } => "child_pointer_past_end",
            BtreeCycle { .. } => "btree_cycle",
            EmptyNonRootPage { .. } => "empty_non_root_page",
            CellsUnlisted { .. } => "cells_unlisted",
            CellPointerIntoCell { .. } => "cell_pointer_into_cell",
            CellPointerAstray { .. } => "cell_pointer_astray",
            ContentUnaccounted { .. } => "content_unaccounted",
            BtreeTooDeep { .. } => "btree_too_deep",
            ChildNotBtreePage { .. } => "child_not_btree_page",
            ChildPageKindMismatch { .. } => "child_page_kind_mismatch",
            KeyOutOfRange { .. } => "key_out_of_range",
            PageInTwoTrees { .. } => "page_in_two_trees",
            TreePageOnFreelist { .. } => "tree_page_on_freelist",
            TruncatedVarint { .. } => "truncated_varint",
            RecordHeaderSizeInvalid { .. } => "record_header_size_invalid",
            InvalidSerialType { .. } => "invalid_serial_type",
            RecordSizeMismatch { .. } => "record_size_mismatch",
            ValueTruncated { .. } => "value_truncated",
            OverflowCycle { .. } => "overflow_cycle",
            OverflowPastEnd { .. } => "overflow_past_end",
            OverflowIntoNonOverflowPage { .. } => "overflow_into_non_overflow_page",
            OverflowChainShort { .. } => "overflow_chain_short",
            OverflowChainTooLong { .. } => "overflow_chain_too_long",
            FreelistTrunkPastEnd { .. } => "freelist_trunk_past_end",
            FreelistCycle { .. } => "freelist_cycle",
            FreelistLeafCountTooLarge { .. } => "freelist_leaf_count_too_large",
            FreelistLeafInvalid { .. } => "freelist_leaf_invalid",
            WalHeaderInvalid { .. } => "wal_header_invalid",
            WalFrameChecksumMismatch { .. } => "wal_frame_checksum_mismatch",
            WalFrameSaltMismatch { .. } => "wal_frame_salt_mismatch",
            WalFramesIgnored { .. } => "wal_frames_ignored",
            JournalRecordChecksumMismatch { .. } => "journal_record_checksum_mismatch",
            JournalRecordsMissing { .. } => "journal_records_missing",
            JournalPageSizeDisagrees { .. } => "journal_page_size_disagrees",
            WalPageSizeDisagrees { .. } => "wal_page_size_disagrees",
            LogPagesOutOfReach { .. } => "log_pages_out_of_reach",
            SchemaRecordMalformed { .. } => "schema_record_malformed",
            SchemaRootPageInvalid { .. } => "schema_root_page_invalid",
        }
    }

    /// The page the finding is about, if it concerns one page; header findings have none.
    pub fn page(&self) -> Option<PageNo> {
        use Finding::*;
        match self {
            PageTruncated { page, .. }
            | InvalidPageType { page, .. }
            | CellCountTooLarge { page, .. }
            | CellContentAreaOutOfRange { page, .. }
            | FragmentedBytesTooLarge { page, .. }
            | CellPointerOutOfRange { page, .. }
            | CellPastPageEnd { page, .. }
            | CellOverlap { page, .. }
            | FreeblockOutOfRange { page, .. }
            | FreeblockOutOfOrder { page, .. }
            | FreeblockOverCell { page, .. }
            | ChildPointerNull { page, .. }
            | ChildPointerPastEnd { page, .. }
            | BtreeCycle { page, .. }
            | BtreeTooDeep { page, .. }
            | EmptyNonRootPage { page, .. }
            | CellsUnlisted { page, .. }
            | CellPointerIntoCell { page, .. }
            | CellPointerAstray { page, .. }
            | ContentUnaccounted { page, .. }
            | KeyOutOfRange { page, .. }
            | PageInTwoTrees { page, .. }
            | TreePageOnFreelist { page, .. }
            | OverflowIntoNonOverflowPage { page, .. } => Some(*page),
            ChildNotBtreePage { child, .. } | ChildPageKindMismatch { child, .. } => Some(*child),
            TruncatedVarint { at }
            | RecordHeaderSizeInvalid { at, .. }
            | InvalidSerialType { at, .. }
            | RecordSizeMismatch { at, .. }
            | ValueTruncated { at, .. }
            | SchemaRecordMalformed { at, .. }
            | SchemaRootPageInvalid { at, .. } => Some(at.page),
            OverflowCycle { repeated, .. } => Some(*repeated),
            OverflowPastEnd { cell, .. } | OverflowChainShort { cell, .. } => Some(cell.page),
            OverflowChainTooLong { last, .. } => Some(*last),
            FreelistCycle { trunk }
            | FreelistLeafCountTooLarge { trunk, .. }
            | FreelistLeafInvalid { trunk, .. } => Some(*trunk),
            FreelistTrunkPastEnd { from, .. } => *from,
            FileTooSmall { .. }
            | HeaderStringMismatch { .. }
            | InvalidPageSize { .. }
            | PageSizeDisagrees { .. }
            | FileNotPageMultiple { .. }
            | InvalidFormatVersion { .. }
            | ReservedSpaceTooLarge { .. }
            | InvalidPayloadFractions { .. }
            | InvalidTextEncoding { .. }
            | InvalidSchemaFormat { .. }
            | DatabaseSizeMismatch { .. }
            | HeaderReservedNotZero { .. }
            | FreelistCountMismatch { .. }
            | WalHeaderInvalid { .. }
            | WalFrameChecksumMismatch { .. }
            | WalFrameSaltMismatch { .. }
            | WalFramesIgnored { .. }
            | JournalRecordChecksumMismatch { .. }
            | JournalRecordsMissing { .. }
            | JournalPageSizeDisagrees { .. }
            | WalPageSizeDisagrees { .. }
            | LogPagesOutOfReach { .. } => None,
        }
    }
}
