//! Reading an index b-tree's entries, and searching it for one entry as SQLite descends
//! it ("Index B-Tree Pages"):
//! at each interior page, the first cell whose key is not below the target either is the
//! target or leads to it through its left child; past every cell, the right-most pointer
//! does. Keys compare as SQLite's record comparison does with the BINARY collation.

use std::cmp::Ordering;

use crate::btree::PageType;
use crate::database::Database;
use crate::types::{CellIndex, PageNo};
use crate::value::{decode_cell, Value};
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
        let pointers: Vec<u16> = page.cell_pointers(&header).collect();
        // The first cell whose key is not below the target.
        let (mut lo, mut hi) = (0usize, pointers.len());
        let mut found = false;
        while lo < hi {
            let mid = (lo + hi) / 2;
            let cell = page
                .cell_at(page_type, CellIndex(mid as u16), *pointers.get(mid)?)
                .ok()?;
            let entry = decode_cell(db, &cell).ok().filter(|e| e.complete)?;
            match compare(&entry.values, key, desc) {
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
        let child = match pointers.get(lo) {
            Some(&offset) => page
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

/// Two index records compared column by column, as SQLite compares them with the
/// BINARY collation: NULL, then numbers by value, then text, then BLOBs (bytes in order,
/// a prefix first); a DESC column the other way round.
// SQLite: sqlite3VdbeRecordCompare (vdbeaux.c)
pub fn compare(a: &[Value], b: &[Value], desc: &[bool]) -> Ordering {
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let o = compare_values(x, y);
        let o = if desc.get(i).copied().unwrap_or(false) {
            o.reverse()
        } else {
            o
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

fn compare_values(x: &Value, y: &Value) -> Ordering {
    let class = |v: &Value| match v {
        Value::Null => 0,
        Value::Integer(_) | Value::Real(_) => 1,
        Value::Text(_) => 2,
        Value::Blob(_) => 3,
    };
    match (x, y) {
        (Value::Integer(a), Value::Integer(b)) => a.cmp(b),
        (Value::Integer(a), Value::Real(b)) => (*a as f64).total_cmp(b),
        (Value::Real(a), Value::Integer(b)) => a.total_cmp(&(*b as f64)),
        (Value::Real(a), Value::Real(b)) => a.total_cmp(b),
        (Value::Text(a), Value::Text(b)) | (Value::Blob(a), Value::Blob(b)) => a.cmp(b),
        _ => class(x).cmp(&class(y)),
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
