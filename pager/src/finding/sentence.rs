//! The sentence of each [`Finding`]: lower-case, in the file-format document's words, the
//! value after a colon ("cell pointer out of range on page 7: 0x1f40").

use std::fmt;

use super::Finding;
use crate::types::CellIndex;

fn side(index: &Option<CellIndex>) -> String {
    match index {
        Some(i) => i.to_string(),
        None => "right-most pointer".to_string(),
    }
}

fn bound(b: &Option<i64>) -> String {
    b.map_or_else(|| "none".to_string(), |v| v.to_string())
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Finding::*;
        match self {
            FileTooSmall { len } => write!(f, "file shorter than the database header: {len} bytes"),
            HeaderStringMismatch { observed } => {
                write!(f, "header string is not \"SQLite format 3\": {}", hex(observed))
            }
            InvalidPageSize { raw } => write!(f, "invalid page size in header: {raw}"),
            PageSizeDisagrees { declared, inferred } => write!(
                f,
                "header page size disagrees with the file's pages: declared {declared}, pages fit {inferred}"
            ),
            FileNotPageMultiple { len, page_size } => write!(
                f,
                "file length is not a multiple of the page size {page_size}: {len} bytes"
            ),
            InvalidFormatVersion { write, read } => {
                write!(f, "invalid file format versions: write {write}, read {read}")
            }
            ReservedSpaceTooLarge { reserved, page_size } => write!(
                f,
                "reserved space leaves less than 480 usable bytes on a {page_size}-byte page: {reserved}"
            ),
            InvalidPayloadFractions { max, min, leaf } => {
                write!(f, "payload fractions are not 64, 32, 32: {max}, {min}, {leaf}")
            }
            InvalidTextEncoding { raw } => write!(f, "invalid text encoding in header: {raw}"),
            InvalidSchemaFormat { raw } => write!(f, "invalid schema format number: {raw}"),
            DatabaseSizeMismatch { declared, actual } => write!(
                f,
                "in-header database size differs from the file: header {declared} pages, file {actual}"
            ),
            HeaderReservedNotZero { offset } => {
                write!(f, "header bytes reserved for expansion are not zero: offset {offset}")
            }
            FreelistCountMismatch { declared, found } => write!(
                f,
                "freelist page count differs from the chain: header {declared}, chain {found}"
            ),
            PageTruncated { page, available } => {
                write!(f, "{page} cut short by the end of the file: {available} bytes")
            }
            InvalidPageType { page, raw } => write!(f, "invalid b-tree page type on {page}: {raw:#04x}"),
            CellCountTooLarge { page, count } => {
                write!(f, "cell pointer array runs past the end of {page}: {count} cells")
            }
            CellContentAreaOutOfRange { page, offset } => {
                write!(f, "cell content area out of range on {page}: {offset}")
            }
            FragmentedBytesTooLarge { page, count } => {
                write!(f, "fragmented free bytes above 60 on {page}: {count}")
            }
            CellPointerOutOfRange { page, index, offset } => {
                write!(f, "cell pointer out of range on {page}, {index}: {offset:#x}")
            }
            CellPastPageEnd { page, index, offset } => {
                write!(f, "cell runs past the end of {page}, {index}: offset {offset}")
            }
            CellOverlap { page, index, other, offset } => {
                write!(f, "cell overlaps {other} on {page}, {index}: offset {offset}")
            }
            FreeblockOutOfRange { page, offset } => {
                write!(f, "freeblock out of range on {page}: offset {offset}")
            }
            FreeblockOutOfOrder { page, offset } => {
                write!(f, "freeblock chain does not ascend on {page}: offset {offset}")
            }
            FreeblockOverCell { page, offset, cell } => write!(
                f,
                "freeblock at offset {offset} of {page} covers the cell at offset {cell}"
            ),
            ChildPointerNull { page, index } => {
                write!(f, "null child pointer on {page}: {}", side(index))
            }
            ChildPointerPastEnd { page, index, child } => write!(
                f,
                "child pointer past the end of the file on {page}, {}: {child}",
                side(index)
            ),
            BtreeCycle { page, child } => write!(f, "b-tree cycle from {page}: {child}"),
            BtreeTooDeep { page, depth } => write!(f, "b-tree too deep at {page}: depth {depth}"),
            EmptyNonRootPage { page, parent } => {
                write!(f, "non-root leaf {page} holds no cell (child of {parent})")
            }
            CellsUnlisted { page, count } => write!(
                f,
                "{count} well-formed cells in the content area of {page} that no cell pointer names"
            ),
            CellPointerIntoCell { page, index, offset, cell } => write!(
                f,
                "cell pointer into a cell on {page}, {index}: offset {offset} inside the cell at {cell}"
            ),
            CellPointerAstray { page, index, offset } => write!(
                f,
                "cell pointer to no cell on {page}, {index}: offset {offset} (its cell is read where it lies)"
            ),
            ContentUnaccounted { page, bytes } => write!(
                f,
                "{bytes} bytes of the content area of {page} are no cell, freeblock or fragment"
            ),
            ChildNotBtreePage { parent, child, raw_type } => write!(
                f,
                "child of {parent} is not a b-tree page: {child}, type byte {raw_type:#04x}"
            ),
            ChildPageKindMismatch { parent, child, found } => write!(
                f,
                "child of {parent} belongs to the other kind of b-tree: {child} is a {found}"
            ),
            KeyOutOfRange { page, index, rowid, lower, upper } => write!(
                f,
                "key outside its parent's range on {page}, {index}: {rowid} not in ({}, {}]",
                bound(lower),
                bound(upper)
            ),
            PageInTwoTrees { page, first_root, second_root } => write!(
                f,
                "{page} reached from two b-trees: roots {} and {}",
                first_root.get(),
                second_root.get()
            ),
            TreePageOnFreelist { page, root } => write!(
                f,
                "{page}, which the freelist lists, is reached from the b-tree of root {}",
                root.get()
            ),
            TruncatedVarint { at } => write!(f, "varint runs past the end of its bytes: {at}"),
            RecordHeaderSizeInvalid { at, header_size, payload_len } => write!(
                f,
                "record header size invalid at {at}: {header_size} for a {payload_len}-byte payload"
            ),
            InvalidSerialType { at, serial_type } => {
                write!(f, "reserved serial type in record at {at}: {serial_type}")
            }
            RecordSizeMismatch { at, header_says, payload_len } => write!(
                f,
                "record header does not match the payload size at {at}: header {header_says}, payload {payload_len}"
            ),
            ValueTruncated { at, column } => {
                write!(f, "value bytes missing from record at {at}: column {column}")
            }
            OverflowCycle { cell, repeated } => {
                write!(f, "overflow chain of the cell at {cell} reaches a page twice: {repeated}")
            }
            OverflowPastEnd { cell, next } => write!(
                f,
                "overflow chain of the cell at {cell} points past the end of the file: {next}"
            ),
            OverflowIntoNonOverflowPage { cell, page, class } => {
                write!(f, "overflow chain of the cell at {cell} runs into a {class}: {page}")
            }
            OverflowChainShort { cell, missing } => write!(
                f,
                "overflow chain of the cell at {cell} ends early: {missing} bytes missing"
            ),
            OverflowChainTooLong { cell, last, next } => write!(
                f,
                "overflow chain of the cell at {cell} goes on past its last page {}: {next}",
                last.get()
            ),
            FreelistTrunkPastEnd { from, next } => match from {
                Some(p) => write!(f, "freelist trunk pointer on {p} past the end of the file: {next}"),
                None => write!(f, "first freelist trunk past the end of the file: {next}"),
            },
            FreelistCycle { trunk } => write!(f, "freelist trunk chain reaches a trunk twice: {trunk}"),
            FreelistLeafCountTooLarge { trunk, count } => {
                write!(f, "freelist trunk {trunk} claims too many leaves: {count}")
            }
            FreelistLeafInvalid { trunk, leaf } => {
                write!(f, "invalid freelist leaf pointer on trunk {trunk}: {leaf}")
            }
            WalHeaderInvalid { reason } => write!(f, "write-ahead log header unusable: {reason}"),
            WalFrameChecksumMismatch { frame } => {
                write!(f, "write-ahead log frame checksum mismatch, it and later frames ignored: frame {frame}")
            }
            WalFrameSaltMismatch { frame } => {
                write!(f, "write-ahead log frame from an earlier generation, it and later frames ignored: frame {frame}")
            }
            WalFramesIgnored { first, count } => write!(
                f,
                "write-ahead log frames after the last commit ignored: {count} from frame {first}"
            ),
            JournalRecordChecksumMismatch { record } => write!(
                f,
                "rollback journal record checksum mismatch, it and later records not rolled back: record {record}"
            ),
            JournalRecordsMissing { declared, present } => write!(
                f,
                "rollback journal segment cut short: {present} of {declared} records present"
            ),
            JournalPageSizeDisagrees { journal, database } => write!(
                f,
                "the rollback journal's page size {journal} disagrees with the database's {database}, and no page 1 image in it proves it: the journal is not rolled back"
            ),
            LogPagesOutOfReach { first, count, reach } => write!(
                f,
                "{count} pages of the log lie past the file's end, from page {first}, with too few pages before them held: claims, not pages, not read (the log's images reach page {reach})"
            ),
            WalPageSizeDisagrees { wal, database } => write!(
                f,
                "the write-ahead log's page size {wal} disagrees with the database's {database}, and no page 1 image in it proves it: the log is not read"
            ),
            SchemaRecordMalformed { at, columns } => {
                write!(f, "malformed sqlite_schema record at {at}: {columns} columns")
            }
            SchemaRootPageInvalid { at, rootpage } => {
                write!(f, "schema root page is not a page of the file at {at}: {rootpage}")
            }
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
