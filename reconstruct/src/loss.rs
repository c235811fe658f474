//! Loss accounting: what each table got back, and the verdict flags with their evidence.
//!
//! The flags are never optimistic: `loss_detected` is raised by any sign that a row may
//! be missing or damaged, and `complete` needs both no such sign and a verified output.

use pager::{Finding, PageClass, Survey};

use crate::plan::Plan;

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
}

impl TableLoss {
    /// Rows written into the table.
    pub fn written(&self) -> u64 {
        self.from_tree + self.from_orphans
    }

    /// Whether anything about this table says a row may be missing or damaged.
    pub fn lossy(&self) -> bool {
        self.damaged_rows
            + self.unreadable_cells
            + self.conflicts
            + self.rejected
            + self.lost_subtrees
            + self.tree_findings
            > 0
            || self.from_orphans > 0
            || self.root_lost
    }
}

/// The verdict over a whole salvage, with the evidence for each flag.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Assessment {
    /// Some row may be missing or damaged.
    pub loss_detected: bool,
    /// Some rows were recovered, but not provably all.
    pub partial: bool,
    /// Every source of evidence agrees nothing is missing (and the output was verified).
    pub complete: bool,
    /// Why `loss_detected` is what it is: one sentence per signal, with real counts.
    pub evidence: Vec<String>,
}

/// Weighs the survey, the plan and the per-table outcome. `verified` says whether the
/// output passed its checks.
pub fn assess(
    survey: &Survey,
    plan: &Plan,
    tables: &[(String, TableLoss)],
    lost_and_found_rows: u64,
    header_findings: &[Finding],
    verified: bool,
) -> Assessment {
    let mut evidence = Vec::new();
    for (name, t) in tables {
        if t.root_lost {
            evidence.push(format!("table `{name}`: its root page is unreadable"));
        }
        if t.lost_subtrees > 0 {
            evidence.push(format!(
                "table `{name}`: {} child pointers of its b-tree could not be followed",
                t.lost_subtrees
            ));
        }
        if t.from_orphans > 0 {
            evidence.push(format!(
                "table `{name}`: {} rows came from orphan pages, outside its b-tree",
                t.from_orphans
            ));
        }
        if t.damaged_rows > 0 {
            evidence.push(format!(
                "table `{name}`: {} rows have damaged fields, stored as NULL",
                t.damaged_rows
            ));
        }
        if t.unreadable_cells > 0 {
            evidence.push(format!(
                "table `{name}`: {} cells could not be decoded",
                t.unreadable_cells
            ));
        }
        if t.conflicts > 0 {
            evidence.push(format!(
                "table `{name}`: {} rows conflicted with a row of the same key",
                t.conflicts
            ));
        }
        if t.rejected > 0 {
            evidence.push(format!(
                "table `{name}`: {} rows were refused by its constraints",
                t.rejected
            ));
        }
        if t.tree_findings > 0 && t.lost_subtrees == 0 && !t.root_lost {
            evidence.push(format!(
                "table `{name}`: {} findings in its b-tree",
                t.tree_findings
            ));
        }
    }
    if lost_and_found_rows > 0 {
        evidence.push(format!(
            "{lost_and_found_rows} rows from {} orphan page groups could not be given a table and are in `lost_and_found`",
            plan.lost_and_found.len()
        ));
    }
    let unclaimed = survey
        .page_map
        .counts()
        .into_iter()
        .filter(|(c, _)| matches!(c, PageClass::Zeroed | PageClass::Unrecognised))
        .map(|(_, n)| u64::from(n))
        .sum::<u64>();
    if unclaimed > 0 {
        evidence.push(format!(
            "{unclaimed} pages are zeroed or unrecognisable and may have held rows"
        ));
    }
    if let Some(schema) = survey.trees.first() {
        if !schema.findings.is_empty() {
            evidence.push(format!(
                "the schema table has {} findings; tables may be missing",
                schema.findings.len()
            ));
        }
    }
    for f in header_findings {
        if matches!(f, Finding::FileNotPageMultiple { .. }) {
            evidence.push(format!("the file is cut short: {f}"));
        }
        if let Finding::DatabaseSizeMismatch { declared, actual } = f {
            if actual < declared {
                evidence.push(format!("the file holds {actual} pages but its header declares {declared}: pages are missing"));
            }
        }
    }
    let loss_detected = !evidence.is_empty();
    Assessment {
        loss_detected,
        partial: loss_detected,
        complete: !loss_detected && verified,
        evidence,
    }
}
