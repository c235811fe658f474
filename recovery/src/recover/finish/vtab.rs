//! Virtual tables refilled on the output from canonical rows, never copied from their
//! shadow tables: a full-text table from its own stored text (`NAME_content` in the
//! source) or from its external content table (`'rebuild'`), an R-tree from the node blobs
//! of `NAME_node`. What cannot be rebuilt, or came back incomplete, is a loss signal.

use std::collections::BTreeMap;

use pager::{Finding, PageClass, PageNo, PageSize, RawRow, Survey, Value};
use reconstruct::vtab::{self, Content};
use reconstruct::{LossSignal, RowEvent, TableRows};

use crate::base::output::{quote, Inserted, Output, SqlValue};
use crate::recover::evidence::Evidence;
use crate::recover::ledger::Ledger;
use crate::report::{ObjectKind, ObjectStatus};

/// What refilling the virtual tables needs.
pub struct Refill<'r, 's> {
    pub evidence: &'r Evidence<'s>,
    pub out: &'r Output,
    pub survey: &'r Survey,
    pub ledger: &'r mut Ledger,
}

impl Refill<'_, '_> {
    /// Refills each virtual table created on the output, recording its outcome.
    pub fn run(&mut self) -> rusqlite::Result<()> {
        for name in self.ledger.created_virtual_tables() {
            let Some(sql) = self.evidence.schema_sql(&name).map(str::to_string) else {
                continue;
            };
            let outcome = match vtab::classify(&sql) {
                _ if self.ledger.tokenizer_stand_ins.contains_key(&name) => {
                    let tokenizer = self.ledger.tokenizer_stand_ins.get(&name).cloned().unwrap_or_default();
                    Some((ObjectStatus::Created, format!("made over a stand-in for its tokenizer `{tokenizer}`, which this build lacks; its shadow tables copied as stored (the index as the file holds it, unchecked: its check needs the application's tokenizer)")))
                }
                None => {
                    let refilled = self.rtree(&name, &sql)?;
                    if refilled.is_none() {
                        self.note_left_empty(&name);
                    }
                    refilled
                }
                Some(Content::Own) => Some(self.fts(&name)?).map(|(status, reason)| {
                    (status, format!("{reason}, indexed afresh"))
                }),
                Some(Content::External(table)) => Some(
                    match self.out.conn.execute(
                        &format!("INSERT INTO {0}({0}) VALUES ('rebuild')", quote(&name)),
                        [],
                    ) {
                        Ok(_) => (ObjectStatus::Rebuilt, format!("index rebuilt from the recovered rows of its content table `{table}`")),
                        Err(e) => {
                            self.ledger.virtual_tables.push(LossSignal::FullTextRebuildFailed {
                                table: name.clone(),
                                content: table.clone(),
                                error: e.to_string(),
                            });
                            (ObjectStatus::Failed, format!("rebuilding from `{table}` failed: {e}"))
                        }
                    },
                ),
                Some(Content::Contentless) => {
                    self.ledger.virtual_tables.push(LossSignal::FullTextContentless {
                        table: name.clone(),
                    });
                    Some((ObjectStatus::Created, "contentless: created empty; nothing stores the text its index was built from".into()))
                }
            };
            if let Some((status, reason)) = outcome {
                if let Some(o) = self
                    .ledger
                    .objects
                    .iter_mut()
                    .find(|o| o.kind == ObjectKind::VirtualTable && o.name == name)
                {
                    o.status = status;
                    o.reason = Some(reason);
                }
            }
        }
        for name in self.ledger.full_text_unmade.clone() {
            let own =
                self.evidence.schema_sql(&name).and_then(vtab::classify) == Some(Content::Own);
            if !own || !self.out.has_table(&name) {
                continue;
            }
            let (_, filled) = self.fts(&name)?;
            if let Some(o) = self
                .ledger
                .objects
                .iter_mut()
                .find(|o| o.kind == ObjectKind::VirtualTable && o.name == name)
            {
                let failed = o.reason.take().unwrap_or_default();
                let reason = format!(
                    "{failed}; made as a plain table of its columns, {filled}; its full-text index is not built"
                );
                self.ledger
                    .virtual_tables
                    .push(LossSignal::ObjectNotCreated {
                        object: "full-text index".into(),
                        name: name.clone(),
                        reason: reason.clone(),
                    });
                o.reason = Some(reason);
            }
        }
        Ok(())
    }

    /// A virtual table salvage cannot refill: its data lives in its shadow tables (those it
    /// made on the output), which are not carried over. Loss, when the source has any.
    fn note_left_empty(&mut self, name: &str) {
        let prefix = format!("{}_", name.to_ascii_lowercase());
        let shadows: Vec<String> = self
            .evidence
            .schema
            .rows
            .iter()
            .filter(|r| {
                r.name.to_ascii_lowercase().starts_with(&prefix) && self.out.has_table(&r.name)
            })
            .map(|r| r.name.clone())
            .collect();
        if !shadows.is_empty() {
            self.ledger
                .virtual_tables
                .push(LossSignal::VirtualTableEmpty {
                    table: name.to_string(),
                    shadows,
                });
        }
    }

    /// What the survey says is wrong with a shadow table's b-tree (root `root`), if
    /// anything: its root unreadable, subtrees lost, other findings (but a chain's into a
    /// page the ledger vouches for: damage that cost nothing, see [`whole_node`]).
    fn shadow_damage(&self, root: PageNo, table: &str) -> Option<String> {
        let Some(tree) = self.survey.trees.iter().find(|t| t.root == root) else {
            return Some(format!("`{table}` was not surveyed"));
        };
        let vouched = |f: &Finding| {
            matches!(f, Finding::OverflowIntoNonOverflowPage { page, .. }
                if self.ledger.vouched_pages.contains(page))
        };
        let findings = tree.findings.iter().filter(|f| !vouched(f)).count();
        (tree.pages == 0 || !tree.lost.is_empty() || findings > 0).then(|| {
            format!(
                "the b-tree of `{table}`: {} pages reached, {} subtrees lost, {findings} findings",
                tree.pages,
                tree.lost.len(),
            )
        })
    }

    /// Refills an R-tree (`rtree`, `rtree_i32`, no auxiliary columns) from the node blobs
    /// of its `NAME_node` shadow table in the source. `None`: not such a table.
    fn rtree(&mut self, name: &str, sql: &str) -> rusqlite::Result<Option<(ObjectStatus, String)>> {
        let int32 = match vtab::module(sql).as_deref() {
            Some("rtree") => false,
            Some("rtree_i32") => true,
            _ => return Ok(None),
        };
        if sql.contains('+') {
            return Ok(None); // auxiliary columns live in `NAME_rowid`: not refilled here
        }
        let node_table = format!("{name}_node");
        let Some(root) = self.evidence.schema_root(&node_table) else {
            return Ok(None);
        };
        let columns = self.out.columns(name)?;
        let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
        let dims = columns.len().saturating_sub(1) / 2;
        let mut nodes = BTreeMap::new();
        let mut damaged = 0u64;
        for event in TableRows::new(&self.evidence.db, Some(root), std::iter::empty()) {
            let RowEvent::Row(row) = event else {
                damaged += 1;
                continue;
            };
            let (record, complete) = row.record();
            let blob = match record.get(1) {
                Some(Value::Blob(b)) if complete => Some(b.clone()),
                _ => whole_node(&row.raw, dims).map(|(blob, page)| {
                    self.ledger.vouched_pages.insert(page);
                    blob
                }),
            };
            damaged += u64::from(blob.is_none());
            if let (Some(n), Some(b)) = (row.rowid(), blob) {
                nodes.insert(n, b);
            }
        }
        let found = reconstruct::rtree_rows(&nodes, dims, int32);
        let (mut rows, mut refused) = (0u64, 0u64);
        self.out.conn.execute_batch("BEGIN")?;
        for r in &found.rows {
            let mut values = vec![SqlValue::Integer(r.id)];
            values.extend(r.coords.iter().map(|c| match c {
                reconstruct::Coord::Real(f) => SqlValue::Real(f64::from(*f)),
                reconstruct::Coord::Int(i) => SqlValue::Integer(i64::from(*i)),
            }));
            match self.out.insert(name, None, None, &columns, &values) {
                Ok(Inserted::Ok) => rows += 1,
                _ => refused += 1,
            }
        }
        self.out.conn.execute_batch("COMMIT")?;
        let tree = self.shadow_damage(root, &node_table);
        if !found.defects.is_empty() || refused + damaged > 0 || tree.is_some() {
            self.ledger
                .virtual_tables
                .push(LossSignal::RtreeIncomplete {
                    table: name.to_string(),
                    node_table: node_table.clone(),
                    rows,
                    refused,
                    damaged,
                    tree,
                    defects: found.defects.clone(),
                });
        }
        self.ledger.refilled.insert(name.to_string(), rows);
        Ok(Some((
            ObjectStatus::Rebuilt,
            format!("refilled from the node blobs of `{node_table}` in the source: {rows} rows"),
        )))
    }

    /// Refills an FTS table from the rows of its own `NAME_content` shadow table in the
    /// source: rowid, then the columns in order. The new table indexes them afresh.
    fn fts(&mut self, name: &str) -> rusqlite::Result<(ObjectStatus, String)> {
        let shadow = format!("{name}_content");
        let Some(root) = self.evidence.schema_root(&shadow) else {
            self.ledger
                .virtual_tables
                .push(LossSignal::FullTextContentMissing {
                    table: name.to_string(),
                    shadow: shadow.clone(),
                });
            return Ok((
                ObjectStatus::Created,
                format!("`{shadow}` is missing: left empty"),
            ));
        };
        let columns = self.out.columns(name)?;
        let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
        // An FTS3 or FTS4 table may have a column named `rowid` (SQL then reaches the
        // docid by another name).
        let rowid_name = reconstruct::rowid_name_among(&columns);
        let (mut rows, mut refused, mut unreadable, mut damaged) = (0u64, 0u64, 0u64, 0u64);
        let enc = self.evidence.encoding();
        self.out.conn.execute_batch("BEGIN")?;
        for event in TableRows::new(&self.evidence.db, Some(root), std::iter::empty()) {
            let RowEvent::Row(row) = event else {
                unreadable += 1;
                continue;
            };
            let (record, complete) = row.record();
            damaged += u64::from(!complete);
            let values: Vec<SqlValue<'_>> = vtab::content_columns(&record)
                .iter()
                .chain(std::iter::repeat(&Value::Null))
                .take(columns.len())
                .map(|v| SqlValue::from_value(v, enc))
                .collect();
            match self
                .out
                .insert(name, rowid_name, row.rowid(), &columns, &values)
            {
                Ok(Inserted::Ok) => rows += 1,
                _ => refused += 1,
            }
        }
        self.out.conn.execute_batch("COMMIT")?;
        let tree = self.shadow_damage(root, &shadow);
        if refused + unreadable + damaged > 0 || tree.is_some() {
            self.ledger
                .virtual_tables
                .push(LossSignal::FullTextIncomplete {
                    table: name.to_string(),
                    rows,
                    damaged,
                    unreadable,
                    refused,
                    tree,
                });
        }
        self.ledger.refilled.insert(name.to_string(), rows);
        Ok((
            ObjectStatus::Rebuilt,
            format!("refilled from its own stored text (`{shadow}` in the source): {rows} rows"),
        ))
    }
}

/// A node blob cut short by a zeroed overflow page, whole by its own header: its cells all
/// end before the page (an R-tree node's blob is the page size less 64 bytes, so on a
/// page with reserved bytes every node spills onto an overflow page, and a node with few
/// cells leaves that page all zeros). SQLite reads nothing past the cells, so the node is
/// read as the file holds it, the zeroed page's bytes as the zeros they are; the page held
/// nothing SQLite reads, even if it was wiped. With that page, whose loss is discounted.
fn whole_node(row: &RawRow<'_>, dims: usize) -> Option<(Vec<u8>, PageNo)> {
    let [Finding::OverflowIntoNonOverflowPage {
        class: PageClass::Zeroed,
        page,
        ..
    }] = row.findings.as_slice()
    else {
        return None;
    };
    let (prefix, len) = row.readable_bytes(1)?;
    let len = usize::try_from(len).ok()?;
    let needed = reconstruct::rtree::node_len(prefix, dims)?;
    // A node blob is smaller than a page: a larger one is no node of SQLite's.
    if needed > prefix.len() || len > PageSize::MAX.get() as usize || row.suspect_from.is_some() {
        return None;
    }
    let mut blob = prefix.to_vec();
    blob.resize(len, 0);
    Some((blob, *page))
}
