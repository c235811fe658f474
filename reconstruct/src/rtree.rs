//! R-tree contents from the node blobs of its `NAME_node` shadow table.
//!
//! A node blob: a 2-byte big-endian tree depth (meaningful on the root, node 1), a 2-byte
//! cell count, then the cells: an 8-byte big-endian id (the row's id on a leaf, the child
//! node number above) and, per dimension, a minimum and a maximum, each 4 bytes big-endian
//! (a float32 for `rtree`, an int32 for `rtree_i32`). Leaves are found by walking down from
//! the root by depth, so stale nodes never count; every node reached is checked against
//! its blob's size, and a node reached twice is a cycle, not more rows.

use std::collections::{BTreeMap, BTreeSet};

/// One coordinate as stored.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Coord {
    /// `rtree`: a float32.
    Real(f32),
    /// `rtree_i32`: an int32.
    Int(i32),
}

/// One R-tree row: its id and `2 × dims` coordinates (min, max per dimension).
#[derive(Clone, Debug, PartialEq)]
pub struct RtreeRow {
    /// The row's id.
    pub id: i64,
    /// Minimum and maximum of each dimension, in order.
    pub coords: Vec<Coord>,
}

/// The rows found, and the defects met on the way: one sentence each.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RtreeRows {
    /// The leaf rows, by id.
    pub rows: Vec<RtreeRow>,
    /// Missing, short or repeated nodes met on the walk.
    pub defects: Vec<String>,
}

/// The leaf rows of the R-tree whose nodes (node number → blob) are `nodes`.
pub fn rtree_rows(nodes: &BTreeMap<i64, Vec<u8>>, dims: usize, int32: bool) -> RtreeRows {
    let mut out = RtreeRows::default();
    let cell = 8 + 8 * dims;
    let Some(root) = nodes.get(&1) else {
        out.defects.push("the root node (node 1) is missing".into());
        return out;
    };
    let Some(depth) = bytes::<2>(root, 0).map(u16::from_be_bytes) else {
        out.defects
            .push("the root node is shorter than its header".into());
        return out;
    };
    let mut seen = BTreeSet::new();
    // (node, height above the leaves)
    let mut stack = vec![(1i64, u32::from(depth))];
    while let Some((node, height)) = stack.pop() {
        if !seen.insert(node) {
            out.defects.push(format!("node {node} is reached twice"));
            continue;
        }
        let Some(blob) = nodes.get(&node) else {
            out.defects.push(format!("node {node} is missing"));
            continue;
        };
        let count = bytes::<2>(blob, 2).map_or(0, |b| usize::from(u16::from_be_bytes(b)));
        let fits = blob.len().saturating_sub(4) / cell;
        if count > fits {
            out.defects.push(format!(
                "node {node} claims {count} cells; its {} bytes hold {fits}",
                blob.len()
            ));
        }
        for c in blob
            .get(4..)
            .unwrap_or(&[])
            .chunks_exact(cell)
            .take(count.min(fits))
        {
            let id = bytes::<8>(c, 0).map_or(0, i64::from_be_bytes);
            if height > 0 {
                stack.push((id, height - 1));
                continue;
            }
            let coords = c
                .get(8..)
                .unwrap_or(&[])
                .chunks_exact(4)
                .filter_map(|b| bytes::<4>(b, 0))
                .map(|raw| {
                    if int32 {
                        Coord::Int(i32::from_be_bytes(raw))
                    } else {
                        Coord::Real(f32::from_be_bytes(raw))
                    }
                })
                .collect();
            out.rows.push(RtreeRow { id, coords });
        }
    }
    out.rows.sort_by_key(|r| r.id);
    out
}

/// How many bytes of a node blob SQLite reads: its 4-byte header and the cells it counts,
/// from `prefix`, the blob's first bytes (at least its header). The rest of a node's blob
/// is never read: zeros where the node never held more cells, stale cells where it did.
/// So a blob cut short after that many bytes holds the whole node. `None`: not even the
/// header is there.
pub fn node_len(prefix: &[u8], dims: usize) -> Option<usize> {
    let count = bytes::<2>(prefix, 2).map(u16::from_be_bytes)?;
    Some(4 + usize::from(count) * (8 + 8 * dims))
}

/// `N` bytes of `b` from `at`, when they are there.
fn bytes<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at.checked_add(N)?)?.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(depth: u16, cells: &[(i64, [f32; 2])]) -> Vec<u8> {
        let mut b = depth.to_be_bytes().to_vec();
        b.extend((cells.len() as u16).to_be_bytes());
        for (id, [lo, hi]) in cells {
            b.extend(id.to_be_bytes());
            b.extend(lo.to_be_bytes());
            b.extend(hi.to_be_bytes());
        }
        b
    }

    #[test]
    fn a_node_is_its_header_and_the_cells_it_counts() {
        let blob = node(0, &[(1, [0.0, 1.0]), (2, [2.0, 3.0])]);
        assert_eq!(node_len(&blob, 1), Some(4 + 2 * 16));
        assert_eq!(node_len(&blob[..4], 2), Some(4 + 2 * 24));
        assert_eq!(node_len(&blob[..3], 1), None);
    }

    #[test]
    fn leaves_are_read_below_the_root_and_a_cycle_adds_nothing() {
        let mut nodes = BTreeMap::new();
        nodes.insert(1, node(1, &[(2, [0.0, 9.0]), (3, [10.0, 20.0])]));
        nodes.insert(2, node(0, &[(7, [0.0, 1.0]), (8, [2.0, 9.0])]));
        nodes.insert(3, node(0, &[(9, [10.0, 20.0]), (1, [0.0, 0.0])]));
        // A stale node nobody points at is not read.
        nodes.insert(4, node(0, &[(99, [5.0, 5.0])]));
        let r = rtree_rows(&nodes, 1, false);
        let ids: Vec<i64> = r.rows.iter().map(|r| r.id).collect();
        assert_eq!(ids, [1, 7, 8, 9]);
        assert_eq!(r.rows[1].coords, [Coord::Real(0.0), Coord::Real(1.0)]);
        assert!(r.defects.is_empty());
        // Node 2 points back at the root: reported, not followed twice.
        nodes.insert(1, node(2, &[(2, [0.0, 9.0])]));
        nodes.insert(2, node(0, &[(1, [0.0, 1.0])]));
        let r = rtree_rows(&nodes, 1, false);
        assert_eq!(r.defects, ["node 1 is reached twice"]);
    }

    #[test]
    fn a_short_or_missing_node_is_a_defect_not_a_panic() {
        let mut nodes = BTreeMap::new();
        nodes.insert(1, node(1, &[(2, [0.0, 1.0]), (5, [0.0, 1.0])]));
        nodes.insert(2, vec![0, 0, 0, 40, 1, 2]);
        let r = rtree_rows(&nodes, 1, false);
        assert!(r.rows.is_empty());
        assert_eq!(r.defects.len(), 2, "{:?}", r.defects);
        assert_eq!(rtree_rows(&BTreeMap::new(), 2, true).defects.len(), 1);
    }
}
