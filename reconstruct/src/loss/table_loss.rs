//! What one table got back: the rows written, from where, and every count of a row
//! not written as read.

/// What one table got back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableLoss {
    /// Rows read from the table's own b-tree and written.
    pub from_tree: u64,
    /// Rows from orphan pages attributed to the table and written.
    pub from_orphans: u64,
    /// Written rows with at least one damaged field (stored as NULL).
    pub damaged_rows: u64,
    /// Cells whose record could not be decoded at all.
    pub unreadable_cells: u64,
    /// Rows not written because another row already held their key.
    pub conflicts: u64,
    /// Rows the output's constraints refused (e.g. NOT NULL on a damaged field); they go
    /// to `lost_and_found` instead.
    pub rejected: u64,
    /// Of those, rows whose cell the table's own tree does not vouch for (orphan pages
    /// given to the table, cells found in a page's content area): nothing proves they
    /// were the table's, so no lower bound counts them.
    pub rejected_unproven: u64,
    /// Rows read whole that neither the table nor `lost_and_found` would take (a value
    /// too big for any table): not in the output.
    pub unwritable: u64,
    /// Child pointers of the table's b-tree that could not be followed.
    pub lost_subtrees: u64,
    /// Findings in the table's b-tree.
    pub tree_findings: u64,
    /// Whether the table's root page was unreadable.
    pub root_lost: bool,
    /// Placeholder rows synthesized in this table for children whose parent row is lost.
    pub placeholders: u64,
    /// Lost rows rebuilt from their index entries alone (other columns NULL); still lost.
    pub partial_rows: u64,
    /// Lost rows proven by index entries or text copies that the table's constraints
    /// refused (their known values stay in the registry).
    pub partial_refused: u64,
    /// Text values written as the file holds them though not valid in its text encoding
    /// (SQLite stores what an application binds): no loss, said in the warnings.
    pub texts_not_in_encoding: u64,
}

impl TableLoss {
    /// Rows written into the table from the file (not placeholders or partial rows).
    pub fn written(&self) -> u64 {
        self.from_tree + self.from_orphans
    }

    /// Rows the table holds in the output: written, placeholders and partial rows.
    pub fn held(&self) -> u64 {
        self.written() + self.placeholders + self.partial_rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_written_and_held_count_what_the_output_table_holds() {
        let t = TableLoss {
            from_tree: 5,
            from_orphans: 2,
            placeholders: 3,
            partial_rows: 1,
            rejected: 4,
            ..TableLoss::default()
        };
        assert_eq!((t.written(), t.held()), (7, 11));
    }
}
