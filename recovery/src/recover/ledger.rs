//! What a run did besides writing rows, gathered as it goes: the schema objects it
//! created, rows that conflicted on a key, signs of loss in derived data, and warnings.

use reconstruct::LossSignal;

use crate::recover::damaged::DamagedFields;
use crate::report::{ConflictReport, Listed, ObjectKind, ObjectStatus, SchemaObject};

/// What a run did besides writing rows.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Schema objects other than tables' rows: virtual tables, indexes, views, triggers.
    pub objects: Vec<SchemaObject>,
    /// Rows not written because another held their key.
    pub conflicts: Listed<ConflictReport>,
    /// Values of written rows that are not in their table as read.
    pub damaged_fields: DamagedFields,
    /// Virtual tables not rebuilt whole (full-text and others).
    pub virtual_tables: Vec<LossSignal>,
    /// Rows put into each virtual table refilled row by row (a full-text table from its
    /// own stored text, an R-tree from its node blobs), by name.
    pub refilled: std::collections::BTreeMap<String, u64>,
    /// Full-text tables whose CREATE statement failed (a tokenizer missing here): their
    /// shadow tables are not copied, and one storing its own text is a plain table of its
    /// columns, refilled from that text.
    pub full_text_unmade: Vec<String>,
    /// Full-text tables made over a stand-in tokenizer (see
    /// `base::sqlite::stand_in_tokenizers`), each with its tokenizer: their shadow tables
    /// are copied as stored (the application's index), never rebuilt.
    pub tokenizer_stand_ins: std::collections::BTreeMap<String, String>,
    /// Tables a profile expects that a damaged schema lacks.
    pub missing_tables: Vec<LossSignal>,
    /// B-trees filling another table than the one whose schema row names them, or kept
    /// apart.
    pub roots: Vec<LossSignal>,
    /// Sentences for the report's `warnings`.
    pub warnings: Vec<String>,
    /// Sentences saying what the output was checked against.
    pub verified: Vec<String>,
    /// What `--carve` found, when it was asked for.
    pub carved: Option<crate::report::carved::CarvedReport>,
    /// What `--history` found, when it was asked for.
    pub history: Option<crate::report::history::HistoryReport>,
    /// What `--provenance` wrote, when it was asked for.
    pub provenance: Option<crate::report::provenance::ProvenanceReport>,
    /// Zeroed pages whose loss cost nothing: the overflow page of an R-tree node whose
    /// cells all end before it (see `finish::vtab`). Not counted as pages that may have
    /// held rows.
    pub vouched_pages: std::collections::BTreeSet<pager::PageNo>,
}

impl Ledger {
    /// Records a schema object's outcome.
    pub fn object(
        &mut self,
        kind: ObjectKind,
        name: &str,
        status: ObjectStatus,
        reason: Option<String>,
    ) {
        self.objects.push(SchemaObject {
            kind,
            name: name.to_string(),
            status,
            reason,
        });
    }

    /// Whether a virtual table named `name` was created on the output (and not failed).
    pub fn virtual_table_created(&self, name: &str) -> bool {
        self.objects.iter().any(|o| {
            o.kind == ObjectKind::VirtualTable
                && o.status == ObjectStatus::Created
                && o.name == name
        })
    }

    /// The virtual tables created on the output, in order.
    pub fn created_virtual_tables(&self) -> Vec<String> {
        self.objects
            .iter()
            .filter(|o| o.kind == ObjectKind::VirtualTable && o.status == ObjectStatus::Created)
            .map(|o| o.name.clone())
            .collect()
    }
}
