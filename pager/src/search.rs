//! Reading an index b-tree's entries, and searching it for one entry as SQLite descends
//! it ("Index B-Tree Pages"):
//! at each interior page, the first cell whose key is not below the target either is the
//! target or leads to it through its left child; past every cell, the right-most pointer
//! does. Keys compare as SQLite's record comparison does with the BINARY collation.

use std::cmp::Ordering;

use crate::btree::{CellRef, PageType};
use crate::database::Database;
use crate::record::{Record, ValueRef};
use crate::types::{CellIndex, PageNo};
use crate::value::{decode_cell, raw_cell, Value};
use crate::walk::{BtreeWalk, TreeItem, MAX_DEPTH};

/// Every entry of the index b-tree rooted at `root` that reads whole and clean: its key
/// values, and the rowid that ends it. An entry met with damage is no witness, and is left
/// out.
pub fn index_entries<'d>(
    db: &'d Database<'_>,
    root: PageNo,
) -> impl Iterator<Item = (Vec<Value>, i64)> + 'd {
    index_records(db, root).filter_map(|mut values| match values.pop() {
        Some(Value::Integer(rowid)) => Some((values, rowid)),
        _ => None,
    })
}

/// Every record of the index b-tree rooted at `root` that reads whole and clean, in key
/// order: an index's entries (key values, then the rowid), or a WITHOUT ROWID table's rows
/// (its primary key's values first).
pub fn index_records<'d>(
    db: &'d Database<'_>,
    root: PageNo,
) -> impl Iterator<Item = Vec<Value>> + 'd {
    BtreeWalk::new(db, root)
        .flatten()
        .filter_map(move |item| match item {
            TreeItem::Cell(c) => decode_cell(db, &c).ok(),
            _ => None,
        })
        .filter(|e| e.complete && e.findings.is_empty())
        .map(|e| e.values)
}

/// Whether the index b-tree rooted at `root` holds an entry equal to `key` (the keyed
/// values, then the rowid), each column compared in its order (`desc`, per key column;
/// the rowid ascends). `None` when the search meets damage on its path (a page that is
/// not an index page, a cell that cannot be read), which proves nothing either way.
pub fn index_holds(db: &Database<'_>, root: PageNo, key: &[Value], desc: &[bool]) -> Option<bool> {
    let mut page_no = root;
    for _ in 0..MAX_DEPTH {
        let page = db.page(page_no)?;
        let header = page.btree_header().ok()?;
        let page_type = header.page_type();
        if page_type.is_table() {
            return None;
        }
        // The header is refused unless its cell pointer array fits the page: each is
        // read where it is.
        let pointer = |i: usize| page.cell_pointer(&header, i);
        // The first cell whose key is not below the target.
        let (mut lo, mut hi) = (0usize, usize::from(header.cell_count()));
        let mut found = false;
        while lo < hi {
            let mid = (lo + hi) / 2;
            let cell = page
                .cell_at(page_type, CellIndex(mid as u16), pointer(mid)?)
                .ok()?;
            match compare_entry(db, &cell, key, desc)? {
                Ordering::Less => lo = mid + 1,
                Ordering::Equal => {
                    found = true;
                    break;
                }
                Ordering::Greater => hi = mid,
            }
        }
        if found {
            return Some(true);
        }
        if page_type == PageType::IndexLeaf {
            return Some(false);
        }
        let child = match pointer(lo) {
            Some(offset) => page
                .cell_at(page_type, CellIndex(lo as u16), offset)
                .ok()?
                .cell
                .left_child()?,
            None => header.right_most_pointer()?,
        };
        page_no = PageNo::new(child)?;
    }
    None
}

/// An entry of an index page compared with `key` as [`compare`] compares them, read in
/// place (no value copied out of the page). `None` unless the entry reads whole and
/// clean, as [`decode_cell`] would have it `complete`: its payload joined and exactly as
/// long as its header says, and every value readable.
fn compare_entry(
    db: &Database<'_>,
    cell: &CellRef<'_>,
    key: &[Value],
    desc: &[bool],
) -> Option<Ordering> {
    let raw = raw_cell(db, cell).ok()?;
    if !raw.intact {
        return None;
    }
    let (record, _) = Record::parse(&raw.payload, raw.location).ok()?;
    if record.values().any(|v| v.is_err()) {
        return None;
    }
    let len = record.header().serial_types.len();
    let values = record.values().map_while(Result::ok);
    Some(compare_in_order(
        values,
        len,
        key.iter().map(Value::as_value_ref),
        key.len(),
        desc,
    ))
}

/// Two index records compared column by column, as SQLite compares them with the
/// BINARY collation: NULL, then numbers by value, then text, then BLOBs (bytes in order,
/// a prefix first); a DESC column the other way round.
// SQLite: sqlite3VdbeRecordCompare (vdbeaux.c)
pub fn compare(a: &[Value], b: &[Value], desc: &[bool]) -> Ordering {
    compare_in_order(
        a.iter().map(Value::as_value_ref),
        a.len(),
        b.iter().map(Value::as_value_ref),
        b.len(),
        desc,
    )
}

/// [`compare`] over two records' values as they are read (`a_len` and `b_len` values).
fn compare_in_order<'x, 'y>(
    a: impl Iterator<Item = ValueRef<'x>>,
    a_len: usize,
    b: impl Iterator<Item = ValueRef<'y>>,
    b_len: usize,
    desc: &[bool],
) -> Ordering {
    for (i, (x, y)) in a.zip(b).enumerate() {
        let o = compare_value_refs(x, y);
        let o = if desc.get(i).copied().unwrap_or(false) {
            o.reverse()
        } else {
            o
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    a_len.cmp(&b_len)
}

#[cfg(test)]
fn compare_values(x: &Value, y: &Value) -> Ordering {
    compare_value_refs(x.as_value_ref(), y.as_value_ref())
}

/// An integer and a real compared exactly, as SQLite does: not by the integer's nearest
/// real (2^53 + 1 is above the real 2^53, not equal to it).
// SQLite: sqlite3IntFloatCompare (vdbeaux.c)
fn integer_real(i: i64, r: f64) -> Ordering {
    // 2^63, the first real above every integer.
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if r.is_nan() || r < -TWO_63 {
        return Ordering::Greater;
    }
    if r >= TWO_63 {
        return Ordering::Less;
    }
    // The real's integral part, exact here; then its fraction decides. Where the real
    // has a fraction it is below 2^52, and so is the integer equal to its integral part:
    // both exact as reals.
    match i.cmp(&(r as i64)) {
        Ordering::Equal => (i as f64).partial_cmp(&r).unwrap_or(Ordering::Equal),
        o => o,
    }
}

fn compare_value_refs(x: ValueRef<'_>, y: ValueRef<'_>) -> Ordering {
    let class = |v: &ValueRef<'_>| match v {
        ValueRef::Null => 0,
        ValueRef::Integer(_) | ValueRef::Real(_) => 1,
        ValueRef::Text(_) => 2,
        ValueRef::Blob(_) => 3,
    };
    match (x, y) {
        (ValueRef::Integer(a), ValueRef::Integer(b)) => a.cmp(&b),
        (ValueRef::Integer(a), ValueRef::Real(b)) => integer_real(a, b),
        (ValueRef::Real(a), ValueRef::Integer(b)) => integer_real(b, a).reverse(),
        // Zero and negative zero are equal; SQLite stores no NaN.
        (ValueRef::Real(a), ValueRef::Real(b)) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
        (ValueRef::Text(a), ValueRef::Text(b)) | (ValueRef::Blob(a), ValueRef::Blob(b)) => a.cmp(b),
        _ => class(&x).cmp(&class(&y)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_compare_as_sqlite_orders_them() {
        let t = |s: &str| Value::Text(s.as_bytes().to_vec());
        assert_eq!(
            compare_values(&Value::Null, &Value::Integer(-5)),
            Ordering::Less
        );
        assert_eq!(
            compare_values(&Value::Integer(2), &Value::Real(1.5)),
            Ordering::Greater
        );
        assert_eq!(compare_values(&Value::Real(9e9), &t("0")), Ordering::Less);
        assert_eq!(compare_values(&t("ab"), &t("abc")), Ordering::Less);
        assert_eq!(
            compare_values(&t("b"), &Value::Blob(vec![0])),
            Ordering::Less
        );
        assert_eq!(
            compare(
                &[t("x"), Value::Integer(1)],
                &[t("x"), Value::Integer(2)],
                &[true]
            ),
            Ordering::Less,
            "the rowid ascends whatever the column's order"
        );
        assert_eq!(compare(&[t("b")], &[t("a")], &[true]), Ordering::Less);
    }
}
