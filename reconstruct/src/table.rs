//! The tables of a recovery: their identity within a run, what became of each, and what is
//! done with each table row of the schema.

use pager::SchemaRow;
use serde::{Deserialize, Serialize};

/// A table of one recovery run: its place among the run's tables (the schema's tables in
/// schema order, then tables inferred from orphan pages, then tables a profile expects but
/// the schema lacks). Never reused within a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TableId(pub u32);

impl TableId {
    /// The id's position in the run's list of tables.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What became of a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TableStatus {
    /// Created from its CREATE statement and filled.
    Recovered,
    /// Its schema row is lost: created from its records' shape and filled.
    Inferred,
    /// In the schema, but it could not be created on the output.
    Failed,
    /// Not copied as data: internal or derived.
    Skipped,
    /// Expected by an application profile, absent from the schema.
    Missing,
    /// A virtual table (full-text, R*Tree): derived data, re-created and refilled from
    /// canonical rows rather than copied; its `schema_objects` entry says how.
    Rebuilt,
    /// Created from its CREATE statement, but not one row of it could be read: its root
    /// page is unreadable and no orphan page was given to it. What it holds is rebuilt
    /// (partial rows, placeholders), all registered.
    Lost,
}

impl TableStatus {
    /// The status as the loss report spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            TableStatus::Recovered => "recovered",
            TableStatus::Inferred => "inferred",
            TableStatus::Failed => "failed",
            TableStatus::Skipped => "skipped",
            TableStatus::Missing => "missing",
            TableStatus::Lost => "lost",
            TableStatus::Rebuilt => "rebuilt",
        }
    }
}

impl std::fmt::Display for TableStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// What is done with one table row of the schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// `sqlite_sequence`: SQLite creates it with the first AUTOINCREMENT table; its
    /// counters are carried over once the rows are in.
    Sequence,
    /// Another internal table (`sqlite_stat1`, …): derived data.
    Internal,
    /// A virtual table: re-created from its CREATE statement, refilled from canonical rows.
    Virtual,
    /// A shadow table that its virtual table made on the output: derived, not copied.
    Shadow {
        /// The virtual table.
        of: String,
    },
    /// An ordinary table: created from its CREATE statement and filled.
    Ordinary,
    /// Its schema row has no CREATE statement.
    NoStatement,
}

/// Whether a CREATE statement makes a virtual table.
pub fn is_virtual(sql: Option<&str>) -> bool {
    sql.is_some_and(|s| {
        s.trim_start()
            .get(..20)
            .is_some_and(|h| h.eq_ignore_ascii_case("CREATE VIRTUAL TABLE"))
    })
}

/// The order in which the tables of `rows` (the schema's table rows) are created: virtual
/// tables first, since each makes its shadow tables on the output, which are then known as
/// such wherever the schema lists them (VACUUM puts them before their virtual table).
/// Positions into `rows`; the report keeps schema order.
pub fn creation_order(rows: &[&SchemaRow]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by_key(|&i| !rows.get(i).is_some_and(|r| is_virtual(r.sql.as_deref())));
    order
}

/// What to do with the table row `row`. `virtual_tables`: the schema's virtual tables;
/// `on_output(name)`: whether the output already has a table of that name (made by a
/// virtual table created before).
pub fn disposition(
    row: &SchemaRow,
    virtual_tables: &[&str],
    on_output: impl Fn(&str) -> bool,
) -> Disposition {
    let lower = row.name.to_ascii_lowercase();
    if lower == "sqlite_sequence" {
        return Disposition::Sequence;
    }
    if lower.starts_with("sqlite_") {
        return Disposition::Internal;
    }
    if is_virtual(row.sql.as_deref()) {
        return Disposition::Virtual;
    }
    // A shadow table is one its virtual table made on the output already: a user table
    // that merely shares the prefix is data.
    if let Some(v) = virtual_tables.iter().find(|v| {
        lower.starts_with(&format!("{}_", v.to_ascii_lowercase())) && on_output(&row.name)
    }) {
        return Disposition::Shadow { of: v.to_string() };
    }
    match row.sql {
        Some(_) => Disposition::Ordinary,
        None => Disposition::NoStatement,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pager::SchemaKind;

    fn table(name: &str, sql: Option<&str>) -> SchemaRow {
        SchemaRow {
            kind: SchemaKind::Table,
            name: name.into(),
            tbl_name: name.into(),
            rootpage: None,
            sql: sql.map(str::to_string),
            location: pager::Location::new(pager::PageNo::FIRST, 0),
        }
    }

    #[test]
    fn shadow_tables_are_told_from_tables_sharing_a_prefix() {
        let docs = table("docs_data", Some("CREATE TABLE docs_data(x)"));
        let made = |n: &str| n == "docs_data";
        assert_eq!(
            disposition(&docs, &["docs"], made),
            Disposition::Shadow { of: "docs".into() }
        );
        // Same prefix, not made by the virtual table: a table of the user's.
        assert_eq!(
            disposition(&docs, &["docs"], |_| false),
            Disposition::Ordinary
        );
        assert_eq!(
            disposition(&table("sqlite_sequence", None), &[], made),
            Disposition::Sequence
        );
        assert_eq!(
            disposition(&table("sqlite_stat1", None), &[], made),
            Disposition::Internal
        );
        assert_eq!(
            disposition(&table("t", None), &[], made),
            Disposition::NoStatement
        );
        let vt = table("docs", Some("  create virtual table docs using fts5(a)"));
        assert_eq!(disposition(&vt, &["docs"], made), Disposition::Virtual);
        let rows = [&docs, &vt];
        assert_eq!(creation_order(&rows), vec![1, 0]);
    }
}
