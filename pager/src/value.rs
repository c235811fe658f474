//! Owned values and decoded rows, for data that must outlive the input map (overflow
//! reassembly, output) and for tests that compare whole rows.

use std::borrow::Cow;

use crate::btree::{Cell, CellRef};
use crate::database::Database;
use crate::finding::Finding;
use crate::record::{Record, ValueRef};
use crate::types::{Location, PageNo};
use crate::walk::{BtreeWalk, TreeItem};

/// An owned column value. Text stays bytes in the database text encoding.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// SQL NULL (also what a damaged field reads as: values are never invented).
    Null,
    /// A signed integer.
    Integer(i64),
    /// A 64-bit float.
    Real(f64),
    /// Text bytes in the database text encoding.
    Text(Vec<u8>),
    /// A BLOB.
    Blob(Vec<u8>),
}

impl From<ValueRef<'_>> for Value {
    fn from(v: ValueRef<'_>) -> Value {
        match v {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(i) => Value::Integer(i),
            ValueRef::Real(r) => Value::Real(r),
            ValueRef::Text(t) => Value::Text(t.to_vec()),
            ValueRef::Blob(b) => Value::Blob(b.to_vec()),
        }
    }
}

impl Value {
    /// The value borrowed, as a record's values are read in place.
    pub fn as_value_ref(&self) -> ValueRef<'_> {
        match self {
            Value::Null => ValueRef::Null,
            Value::Integer(i) => ValueRef::Integer(*i),
            Value::Real(r) => ValueRef::Real(*r),
            Value::Text(t) => ValueRef::Text(t),
            Value::Blob(b) => ValueRef::Blob(b),
        }
    }

    /// The bytes a value holds beyond its own size: a text's or a blob's length, else 0.
    /// What a bound on the values held at once counts.
    pub fn held_bytes(&self) -> usize {
        match self {
            Value::Text(b) | Value::Blob(b) => b.len(),
            _ => 0,
        }
    }
}

/// One b-tree entry decoded into owned values.
#[derive(Clone, Debug, PartialEq)]
pub struct DecodedRow {
    /// The rowid, for table b-tree entries.
    pub rowid: Option<i64>,
    /// Where the cell is.
    pub location: Location,
    /// The column values; a damaged field is `Null` and listed in `findings`.
    pub values: Vec<Value>,
    /// Whether every value was read from intact bytes (the findings may still name damage
    /// around them, such as an overflow chain that runs on past its last page).
    pub complete: bool,
    /// Positions in `values` of the fields read as NULL because their bytes are damaged.
    pub damaged: Vec<usize>,
    /// Positions in `values` of the fields read, whole, from the bytes of a last overflow
    /// page that does not end its chain: they may be another page's bytes.
    pub suspect: Vec<usize>,
    /// Damage met while decoding this entry.
    pub findings: Vec<Finding>,
}

/// A payload-carrying cell with its payload joined from its overflow pages, not yet
/// decoded into values: what a writer that copies records verbatim needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawRow<'a> {
    /// The rowid, for table b-tree leaf cells.
    pub rowid: Option<i64>,
    /// Where the cell is.
    pub location: Location,
    /// The payload bytes that could be read.
    pub payload: Cow<'a, [u8]>,
    /// Whether the payload is whole and its record header describes exactly its length:
    /// then the record can be copied as it is.
    pub intact: bool,
    /// Damage met reading it.
    pub findings: Vec<Finding>,
    /// Where in `payload` the bytes of a last overflow page that does not end its chain
    /// start (see [`crate::overflow::AssembledPayload::suspect_from`]).
    pub suspect_from: Option<usize>,
}

/// Joins a cell's payload and checks its record header. `Err` when the record header
/// itself is unreadable (the finding says why).
pub fn raw_cell<'a>(db: &Database<'a>, cell: &CellRef<'a>) -> Result<RawRow<'a>, Finding> {
    let payload = cell.cell.payload().ok_or(Finding::CellPastPageEnd {
        page: cell.location.page,
        index: cell.index,
        offset: cell.offset,
    })?;
    let assembled = db.assemble(payload, cell.location);
    let mut findings: Vec<Finding> = assembled.finding.into_iter().collect();
    let described = crate::record::described_record_len(
        &assembled.bytes,
        assembled.bytes.len() as u64,
        cell.location,
    )?;
    let len = assembled.bytes.len() as u64;
    // A short payload from a broken overflow chain is reported by the chain finding; the
    // record-size mismatch would only repeat it. A chain that runs on past its last page
    // is reported but leaves the values intact.
    if assembled.complete && described != len {
        findings.push(Finding::RecordSizeMismatch {
            at: cell.location,
            header_says: described,
            payload_len: len,
        });
    }
    let rowid = match cell.cell {
        Cell::TableLeaf(c) => Some(c.rowid),
        _ => None,
    };
    Ok(RawRow {
        rowid,
        location: cell.location,
        intact: assembled.complete && described == len,
        suspect_from: assembled.suspect_from,
        payload: assembled.bytes,
        findings,
    })
}

impl RawRow<'_> {
    /// Whether the payload was joined from overflow pages (only then is it copied).
    pub fn spilled(&self) -> bool {
        matches!(self.payload, Cow::Owned(_))
    }

    /// The bytes of BLOB or text value `i` that could be read, with the length its serial
    /// type declares: a value cut short by a broken overflow chain keeps the part before
    /// the break (all of it, on an intact row). `None` for a value of another type, or past
    /// the record's values, or with its header unreadable.
    pub fn readable_bytes(&self, i: usize) -> Option<(&[u8], u64)> {
        let header = crate::record::parse_record_header(
            &self.payload,
            self.payload.len() as u64,
            self.location,
        )
        .ok()?;
        let start = header
            .serial_types
            .iter()
            .take(i)
            .fold(header.header_size, |at, t| at.saturating_add(t.body_len()));
        let (crate::record::SerialType::Blob(len) | crate::record::SerialType::Text(len)) =
            *header.serial_types.get(i)?
        else {
            return None;
        };
        let end = start.saturating_add(len).min(self.payload.len() as u64);
        let bytes = self
            .payload
            .get(usize::try_from(start).ok()?..usize::try_from(end).ok()?)?;
        Some((bytes, len))
    }

    /// Decodes the record into owned values: fields whose bytes are missing are NULL and
    /// reported.
    pub fn decode(&self) -> DecodedRow {
        let mut findings = self.findings.clone();
        let mut complete = self.intact;
        let mut damaged = Vec::new();
        let mut suspect = Vec::new();
        if let (Some(from), Ok((record, _))) = (
            self.suspect_from,
            Record::parse(&self.payload, self.location),
        ) {
            let mut end = record.header().header_size;
            for (i, t) in record.header().serial_types.iter().enumerate() {
                end = end.saturating_add(t.body_len());
                if t.body_len() > 0 && end > from as u64 {
                    suspect.push(i);
                }
            }
        }
        let values = match Record::parse(&self.payload, self.location) {
            Ok((record, _)) => record
                .values()
                .enumerate()
                .map(|(i, v)| match v {
                    Ok(v) => Value::from(v),
                    Err(f) => {
                        complete = false;
                        damaged.push(i);
                        findings.push(f);
                        Value::Null
                    }
                })
                .collect(),
            Err(f) => {
                complete = false;
                findings.push(f);
                Vec::new()
            }
        };
        DecodedRow {
            rowid: self.rowid,
            location: self.location,
            values,
            complete,
            damaged,
            suspect,
            findings,
        }
    }
}

/// Decodes one payload-carrying cell into a row: overflow joined, record decoded, damaged
/// fields set to NULL and reported. `Err` when the record header itself is unreadable
/// (the finding says why).
pub fn decode_cell(db: &Database<'_>, cell: &CellRef<'_>) -> Result<DecodedRow, Finding> {
    Ok(raw_cell(db, cell)?.decode())
}

/// Every entry of the b-tree rooted at `root`, decoded, with every finding of the walk.
/// Meant for tests and small tables; the salvage run streams instead.
pub fn read_tree(db: &Database<'_>, root: PageNo) -> (Vec<DecodedRow>, Vec<Finding>) {
    let mut rows = Vec::new();
    let mut findings = Vec::new();
    for item in BtreeWalk::new(db, root) {
        match item {
            Ok(TreeItem::Cell(cell)) => match decode_cell(db, &cell) {
                Ok(row) => rows.push(row),
                Err(f) => findings.push(f),
            },
            Ok(_) => {}
            Err(f) => findings.push(f),
        }
    }
    (rows, findings)
}
