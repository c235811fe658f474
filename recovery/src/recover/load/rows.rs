//! One row through SQL: its record mapped onto its table's columns and inserted, and what
//! happened to it counted. A row refused by a constraint is kept in `lost_and_found`; so is
//! a row whose key another row holds (a conflict), recorded with its provenance.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};

use pager::{CellSource, TextEncoding, Value};
use reconstruct::{Provenance, RecoveredRow, TableShape};

use super::lost_and_found::LostAndFound;
use crate::base::output::{refuses_row, Inserted, Output, SqlValue};
use crate::recover::ledger::Ledger;
use crate::recover::tables::TableRun;
use crate::report::ConflictReport;

/// Inserts rows into one table, with the column list fixed once.
pub struct TableWriter<'s> {
    name: &'s str,
    columns: Vec<&'s str>,
    /// The name under which the rowid is inserted, for rowid tables without an alias.
    rowid_name: Option<&'s str>,
    /// The insert statement made so far for each number of columns present, with the
    /// rowid named or not.
    statements: RefCell<HashMap<(usize, bool), String>>,
}

impl<'s> TableWriter<'s> {
    /// The writer for a table of this shape.
    pub fn new(shape: &'s TableShape) -> TableWriter<'s> {
        let columns: Vec<&str> = shape
            .insert_columns()
            .into_iter()
            .filter_map(|i| shape.columns.get(i).map(|c| c.name.as_str()))
            .collect();
        // A table with an INTEGER PRIMARY KEY gets its rowid as that column's value.
        let rowid_name = if shape.rowid_alias().is_some() {
            None
        } else {
            shape.rowid_name()
        };
        TableWriter {
            name: &shape.name,
            columns,
            rowid_name,
            statements: RefCell::new(HashMap::new()),
        }
    }

    fn insert(
        &self,
        out: &Output,
        enc: TextEncoding,
        rowid: Option<i64>,
        values: &[Option<Value>],
    ) -> rusqlite::Result<Inserted> {
        // Values a short record lacks are left to the column's default: the columns
        // present are always a prefix of the insert columns.
        let present = values
            .iter()
            .rposition(Option::is_some)
            .map_or(0, |i| i + 1);
        let bound: Vec<SqlValue<'_>> = values
            .iter()
            .take(present)
            .map(|v| {
                v.as_ref()
                    .map_or(SqlValue::Null, |v| SqlValue::from_value(v, enc))
            })
            .collect();
        let rowid = self.rowid_name.and(rowid);
        let mut statements = self.statements.borrow_mut();
        let sql = statements
            .entry((present, rowid.is_some()))
            .or_insert_with(|| {
                crate::base::output::insert_statement(
                    self.name,
                    self.rowid_name.filter(|_| rowid.is_some()),
                    self.columns.get(..present).unwrap_or_default(),
                )
            });
        out.insert_with(sql, rowid, &bound)
    }
}

/// Where rows that do not go into their table go.
pub struct Sink<'r> {
    /// The output.
    pub out: &'r Output,
    /// The source's text encoding.
    pub enc: TextEncoding,
    /// Refused rows.
    pub lost: &'r mut LostAndFound,
    /// Conflicts and warnings.
    pub ledger: &'r mut Ledger,
    /// Where each row written was read, when asked for.
    pub whence: &'r mut crate::recover::whence::Whence,
    /// Names the schema uses.
    pub taken: &'r BTreeSet<String>,
}

impl Sink<'_> {
    /// Inserts one row of the table `t`, counting what happened to it.
    pub fn insert_row(
        &mut self,
        t: &mut TableRun,
        shape: &TableShape,
        writer: &TableWriter<'_>,
        row: &RecoveredRow<'_>,
    ) -> rusqlite::Result<()> {
        let decoded = row.raw.decode();
        let (record, complete) = (decoded.values, decoded.complete);
        // A cell no pointer names is a row of the table only if its record fits it; bytes
        // that merely parse as a cell are kept in lost_and_found, never in the table.
        let fits = row.provenance.source().vouched() || shape.fit(&record).is_some();
        let mapped = shape.map_record(
            row.rowid(),
            record,
            &decoded.damaged,
            &decoded.suspect,
            self.enc,
        );
        let inserted = match fits {
            true => writer.insert(self.out, self.enc, row.rowid(), &mapped.values)?,
            false => Inserted::Rejected(
                "a cell found in the page's content area whose record does not fit the table"
                    .into(),
            ),
        };
        match inserted {
            Inserted::Ok => {
                t.blob_kinds.add_record(&row.raw.payload);
                self.whence.note(t.id, row);
                match row.provenance {
                    Provenance::Cell { .. } => t.loss.from_tree += 1,
                    Provenance::Orphan { .. } => t.loss.from_orphans += 1,
                }
                t.loss.texts_not_in_encoding += mapped.texts_not_in_encoding;
                if let Some(rowid) = row.rowid() {
                    t.written_rowids.insert(rowid);
                    // Values kept of a row written under this rowid before, and taken
                    // back since, are not this row's.
                    t.spilled_values.remove(&rowid);
                    // A row read whole and written as read: its index entries can witness
                    // whether its overflow pages still hold its bytes.
                    if row.raw.spilled() && complete && mapped.damage.is_empty() {
                        t.spilled_rowids.insert(rowid);
                    }
                }
                if !complete || mapped.surplus > 0 || !mapped.damage.is_empty() {
                    t.loss.damaged_rows += 1;
                    self.ledger.damaged_fields.keep(
                        self.out,
                        self.enc,
                        &shape.name,
                        row.rowid(),
                        &mapped.damage,
                        self.taken,
                    )?;
                }
            }
            // The row is evidence like any other: kept with its values beside the one that
            // holds its key, never dropped.
            Inserted::Conflict(reason) => {
                t.loss.conflicts += 1;
                let kept_in = match self.lost.keep(self.out, self.enc, t.root, row, self.taken) {
                    Ok(()) => self.lost.name.clone(),
                    Err(e) if refuses_row(&e) => {
                        t.loss.unwritable += 1;
                        None
                    }
                    Err(e) => return Err(e),
                };
                self.ledger.conflicts.push(ConflictReport {
                    table: shape.name.clone(),
                    rowid: row.rowid(),
                    dropped: describe(&row.provenance),
                    reason,
                    kept_in,
                });
            }
            Inserted::Rejected(reason) => {
                let page = row.provenance.page().get();
                match self.lost.keep(self.out, self.enc, t.root, row, self.taken) {
                    Ok(()) => {
                        t.loss.rejected += 1;
                        let own = matches!(row.provenance, Provenance::Cell { .. })
                            && row.provenance.source().vouched();
                        if !own {
                            t.loss.rejected_unproven += 1;
                        }
                        if let Some(rowid) = row.rowid() {
                            t.rejected_rowids.insert(rowid);
                        }
                        self.ledger.warnings.push(format!(
                            "a row of page {page} was refused by a constraint and kept in lost_and_found: {reason}"
                        ));
                    }
                    // Refused there too (a value too big for any table): counted, never
                    // the end of the run.
                    Err(e) if refuses_row(&e) => {
                        t.loss.unwritable += 1;
                        self.ledger.warnings.push(format!(
                            "a row of page {page} was refused by its table ({reason}) and by lost_and_found ({e}): it is not in the output"
                        ));
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }
}

fn describe(p: &Provenance) -> String {
    let cell = |index: &pager::CellIndex, source: CellSource| match source {
        CellSource::Pointer => index.to_string(),
        CellSource::ContentArea => format!("unlisted cell {} (found in the content area)", index.0),
        CellSource::StrayPointer => format!("{index} (no well-formed cell where it points)"),
    };
    match p {
        Provenance::Cell {
            page,
            index,
            source,
        } => format!("{} of {page}", cell(index, *source)),
        Provenance::Orphan {
            page,
            index,
            source,
            group,
        } => format!(
            "{} of orphan {page} (group at page {})",
            cell(index, *source),
            group.get()
        ),
    }
}
