//! The `history` section of the loss report (`recover --history`), and the timeline of
//! the inspect document.

use std::collections::BTreeMap;

use history::{Op, Step, StepKind};
use serde::{Deserialize, Serialize};

/// What the history holds, for the report.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HistoryReport {
    /// The table of row versions in the output (`salvage_history`).
    pub registry: Option<String>,
    /// The table of steps (`salvage_commits`).
    pub steps_table: Option<String>,
    /// Every step: the log's commits in order, its uncommitted frames, the journal's
    /// transaction.
    pub steps: Vec<StepReport>,
    /// Row versions written.
    pub versions: u64,
    /// Of them, rows only an earlier generation of the log holds.
    pub older_generation: u64,
    /// Pages whose state before the log is not known: the main file already holds one of
    /// the log's images of them (it was checkpointed past the log's start).
    pub checkpointed_pages: Vec<u32>,
    /// Per table with versions, a view of them with the table's column names
    /// (`salvage_history_TABLE`), by table.
    #[serde(default)]
    pub views: BTreeMap<String, String>,
}

/// One step of the history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepReport {
    /// `commit`, `uncommitted` or `journal`.
    pub kind: String,
    /// The commit's number in the log (1-based); `null` for the others.
    pub commit: Option<u32>,
    /// The log frames it spans; `null` for the journal.
    pub frames: Option<[u32; 2]>,
    /// The database size in pages after a commit.
    pub db_size: Option<u32>,
    /// Whether the journal is hot (its transaction never committed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot: Option<bool>,
    /// Pages it wrote.
    pub pages: u64,
    /// Rows it inserted, updated, deleted.
    pub inserted: u64,
    /// Rows updated.
    pub updated: u64,
    /// Rows deleted.
    pub deleted: u64,
    /// Cells on its pages whose record could not be read.
    pub unreadable: u64,
}

impl StepReport {
    /// The report of `step`.
    pub fn of(step: &Step) -> StepReport {
        let count = |op: Op| step.changes.iter().filter(|c| c.op() == op).count() as u64;
        let (kind, commit, frames, db_size, hot) = match step.kind {
            StepKind::Commit {
                no,
                first,
                last,
                db_size,
            } => (
                "commit",
                Some(no),
                Some([first.0, last.0]),
                Some(db_size),
                None,
            ),
            StepKind::Uncommitted { first, last } => {
                ("uncommitted", None, Some([first.0, last.0]), None, None)
            }
            StepKind::Journal { hot } => ("journal", None, None, None, Some(hot)),
        };
        StepReport {
            kind: kind.into(),
            commit,
            frames,
            db_size,
            hot,
            pages: step.pages.len() as u64,
            inserted: count(Op::Insert),
            updated: count(Op::Update),
            deleted: count(Op::Delete),
            unreadable: step.unreadable,
        }
    }
}
