//! Loss accounting: what each table got back, every sign that a row may be missing or
//! damaged as a typed [`LossSignal`], and the verdict flags.
//!
//! The flags are never optimistic: `loss_detected` is raised by any signal, and `complete`
//! needs both no signal and a verified output. [`Verdict::of`] is the one place they are
//! computed; signals become sentences ([`std::fmt::Display`]) only when a report is
//! written.

use std::fmt;

use pager::{Finding, PageClass, Survey};
use serde::{Deserialize, Serialize};

use crate::bounds::LossBounds;
use crate::placeholders::PlaceholderOutcome;
use crate::table::TableStatus;

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

/// One sign that a row may be missing or damaged, with its real counts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum LossSignal {
    /// A table's root page is unreadable.
    RootUnreadable {
        /// The table.
        table: String,
    },
    /// Child pointers of a table's b-tree could not be followed.
    SubtreesLost {
        /// The table.
        table: String,
        /// How many.
        pointers: u64,
    },
    /// Rows came from orphan pages, outside the table's b-tree.
    RowsFromOrphans {
        /// The table.
        table: String,
        /// How many.
        rows: u64,
    },
    /// Rows have damaged fields, stored as NULL.
    DamagedFields {
        /// The table.
        table: String,
        /// How many rows.
        rows: u64,
    },
    /// Cells could not be decoded at all.
    UndecodableCells {
        /// The table.
        table: String,
        /// How many.
        cells: u64,
    },
    /// Rows conflicted with a row of the same key.
    KeyConflicts {
        /// The table.
        table: String,
        /// How many.
        rows: u64,
    },
    /// Rows neither their table nor `lost_and_found` would take: not in the output.
    RowsUnwritable {
        /// The table.
        table: String,
        /// How many.
        rows: u64,
    },
    /// A table is filled from a b-tree another table's schema row names: the records fit
    /// it, not the other (the schema's root pages were swapped or damaged).
    TreeMoved {
        /// The table filled.
        table: String,
        /// The root page.
        root: u32,
        /// The table whose schema row names that root.
        named_by: String,
        /// Records sampled.
        sampled: u32,
        /// Of those, records that fit `table`.
        fitting: u32,
        /// Of those, records that fit `named_by`.
        fitting_named: u32,
    },
    /// A table's schema row names an index b-tree as its root: its own rows are not found.
    RootNotATable {
        /// The table.
        table: String,
        /// The root page.
        root: u32,
    },
    /// A table's schema row names the root of another table, whose records are there.
    RootOfAnotherTable {
        /// The table whose rows are lost.
        table: String,
        /// The root page.
        root: u32,
        /// The table filled from it.
        holder: String,
    },
    /// A page a table's b-tree reaches is another structure's (another table's b-tree, or
    /// the freelist): its cells refute the table's claim to it (`reconstruct::claims`), and
    /// its rows are not read as the table's. The table's own page there is lost, or comes
    /// back as an orphan.
    PageOfAnother {
        /// The table whose b-tree reaches the page.
        table: String,
        /// The page.
        page: u32,
        /// What holds it: `` `TABLE` `` or `the freelist`.
        holder: String,
        /// Table cells read on it (and below it).
        cells: u32,
        /// Of those, cells whose key lies outside the range the pointer assigns.
        outside: u32,
        /// Records read whole.
        sampled: u32,
        /// Of those, records that fit the table.
        fitting: u32,
        /// Rows looked up in the table's indexes.
        looked_up: u32,
        /// Of those, rows an index holds.
        held: u32,
    },
    /// A b-tree whose records fit no table free to take them is kept as a table of its own.
    TreeKeptApart {
        /// The table its rows are kept in.
        table: String,
        /// The root page.
        root: u32,
        /// The table whose schema row names that root.
        named_by: String,
        /// Records sampled.
        sampled: u32,
        /// Of those, records that fit `named_by`.
        fitting_named: u32,
    },
    /// Rows were refused by the table's constraints (kept in `lost_and_found`).
    RowsRefused {
        /// The table.
        table: String,
        /// How many.
        rows: u64,
    },
    /// Findings in a table's b-tree, where no subtree was lost.
    TreeFindings {
        /// The table.
        table: String,
        /// How many.
        findings: u64,
    },
    /// Rows no evidence could give a table, kept in `lost_and_found`.
    LostAndFound {
        /// How many rows.
        rows: u64,
        /// From how many orphan page groups.
        groups: u64,
    },
    /// Pages are zeroed or unrecognisable and may have held rows.
    PagesUnreadable {
        /// How many.
        pages: u64,
    },
    /// The schema table has findings: tables may be missing.
    SchemaDamaged {
        /// How many findings.
        findings: u64,
    },
    /// The file is cut short (a partial last page).
    FileCutShort {
        /// The finding, as rendered.
        finding: String,
    },
    /// The file holds fewer pages than its header declares.
    PagesMissing {
        /// Pages in the file.
        present: u32,
        /// Pages the header declares.
        declared: u32,
    },
    /// The write-ahead log is unusable.
    WalUnusable {
        /// Its path.
        path: String,
        /// Why, as rendered.
        why: String,
    },
    /// A damaged write-ahead log frame hides the frames after it.
    WalFramesIgnored {
        /// The damaged frame.
        frame: u32,
        /// Frames after it, ignored.
        after: u32,
    },
    /// Records of a hot rollback journal are damaged and not rolled back.
    JournalRecordsDamaged {
        /// How many.
        records: u32,
    },
    /// Children kept under placeholder parents: the parents' own rows are lost.
    PlaceholdersMade {
        /// The parent table.
        parent: String,
        /// The child table.
        child: String,
        /// Placeholders made.
        placeholders: u64,
        /// Children under them.
        children: u64,
    },
    /// Children reference lost parents that could not be rebuilt.
    ParentsNotRebuilt {
        /// The parent table.
        parent: String,
        /// The child table.
        child: String,
        /// Lost parent keys.
        keys: u64,
        /// Children referencing them.
        children: u64,
        /// Why (the last reason given).
        reason: String,
    },
    /// A full-text table's index could not be rebuilt from its external content table.
    FullTextRebuildFailed {
        /// The full-text table.
        table: String,
        /// Its content table.
        content: String,
        /// SQLite's error.
        error: String,
    },
    /// A contentless full-text table: nothing stores the text its index was built from.
    FullTextContentless {
        /// The full-text table.
        table: String,
    },
    /// A full-text table's stored text is not in the schema; the table is left empty.
    FullTextContentMissing {
        /// The full-text table.
        table: String,
        /// The missing shadow table.
        shadow: String,
    },
    /// A full-text table's stored text came back incomplete.
    FullTextIncomplete {
        /// The full-text table.
        table: String,
        /// Rows rebuilt.
        rows: u64,
        /// Of those, rows with damaged text.
        damaged: u64,
        /// Cells unreadable.
        unreadable: u64,
        /// Rows refused.
        refused: u64,
        /// What is wrong with the shadow table's b-tree, if anything.
        tree: Option<String>,
    },
    /// An R-tree came back incomplete from its node blobs.
    RtreeIncomplete {
        /// The R-tree.
        table: String,
        /// Its `NAME_node` shadow table.
        node_table: String,
        /// Rows rebuilt.
        rows: u64,
        /// Rows refused.
        refused: u64,
        /// Node blobs damaged.
        damaged: u64,
        /// What is wrong with the shadow table's b-tree, if anything.
        tree: Option<String>,
        /// Defects of the nodes.
        defects: Vec<String>,
    },
    /// A virtual table is created empty: its data in its shadow tables is not carried over.
    VirtualTableEmpty {
        /// The virtual table.
        table: String,
        /// Its shadow tables in the source.
        shadows: Vec<String>,
    },
    /// A table a profile expects is missing from a damaged schema.
    TableMissing {
        /// The table.
        table: String,
        /// The profile.
        profile: String,
    },
    /// Lost rows were rebuilt from index entries and full-text copies alone.
    PartialRowsRebuilt {
        /// The table.
        table: String,
        /// How many.
        rows: u64,
        /// The registry that lists them.
        registry: String,
    },
    /// Lost rows proven by index entries or copies were refused by the table.
    PartialRowsRefused {
        /// The table.
        table: String,
        /// How many.
        rows: u64,
        /// The registry that keeps their known values.
        registry: String,
    },
    /// A table lost rows: bounds on how many.
    RowsLost {
        /// The table.
        table: String,
        /// At least this many.
        lower: u64,
        /// At most this many, when known.
        upper: Option<u64>,
        /// Proven by index entries.
        by_index: u64,
        /// Proven by full-text copies alone.
        by_text: u64,
    },
    /// A table's schema row is lost: its name and columns are inferred.
    TableInferred {
        /// The inferred table.
        table: String,
        /// Rows it holds.
        rows: u64,
    },
    /// A table of the schema could not be recovered.
    TableNotRecovered {
        /// The table.
        table: String,
        /// Why.
        reason: String,
    },
    /// An index, view or trigger of the schema could not be re-created on the output.
    ObjectNotCreated {
        /// "index", "view" or "trigger".
        object: String,
        /// Its name.
        name: String,
        /// Why.
        reason: String,
    },
}

/// `n` and a noun, the noun in the plural unless `n` is 1 ("1 page", "2 pages"); a
/// noun phrase ending in a preposition ("row with") puts its first word in the plural.
pub struct N<'a>(pub u64, pub &'a str);

impl fmt::Display for N<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let N(n, noun) = *self;
        if n == 1 {
            return write!(f, "1 {noun}");
        }
        match noun.split_once(' ') {
            Some((first, rest)) if rest == "with" => write!(f, "{n} {first}s {rest}"),
            _ => write!(f, "{n} {noun}s"),
        }
    }
}

/// "is" or "are", agreeing with `n`.
fn are(n: u64) -> &'static str {
    if n == 1 {
        "is"
    } else {
        "are"
    }
}

/// "was" or "were", agreeing with `n`.
fn was(n: u64) -> &'static str {
    if n == 1 {
        "was"
    } else {
        "were"
    }
}

impl fmt::Display for LossSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use LossSignal::*;
        match self {
            RootUnreadable { table } => write!(f, "table `{table}`: its root page is unreadable"),
            SubtreesLost { table, pointers } => write!(f, "table `{table}`: {} of its b-tree could not be followed", N(*pointers, "child pointer")),
            RowsFromOrphans { table, rows } => write!(f, "table `{table}`: {} came from orphan pages, outside its b-tree", N(*rows, "row")),
            DamagedFields { table, rows } => write!(f, "table `{table}`: {} damaged fields, stored as NULL", N(*rows, "row with")),
            UndecodableCells { table, cells } => write!(f, "table `{table}`: {} could not be decoded", N(*cells, "cell")),
            KeyConflicts { table, rows } => write!(f, "table `{table}`: {} conflicted with a row of the same key", N(*rows, "row")),
            RowsRefused { table, rows } => write!(f, "table `{table}`: {} {} refused by its constraints", N(*rows, "row"), was(*rows)),
            TreeMoved { table, root, named_by, sampled, fitting, fitting_named } => write!(f, "table `{table}` is filled from root page {root}, which the schema row of `{named_by}` names: {fitting} of {sampled} sampled records fit `{table}`, {fitting_named} fit `{named_by}` (the schema's root pages were swapped or damaged)"),
            RootNotATable { table, root } => write!(f, "table `{table}`: its schema row names root page {root}, an index b-tree page, which holds none of its rows"),
            RootOfAnotherTable { table, root, holder } => write!(f, "table `{table}`: its schema row names root page {root}, which holds the rows of `{holder}`: its own rows are not found"),
            PageOfAnother { table, page, holder, cells, outside, sampled, fitting, looked_up, held } => {
                write!(f, "table `{table}`: page {page}, which its b-tree reaches, is {holder}'s: {outside} of its {cells} keys lie outside the range the pointer assigns, {fitting} of {sampled} records fit the table")?;
                if *looked_up > 0 {
                    write!(f, ", {held} of {looked_up} rows are in its indexes")?;
                }
                write!(f, "; its rows are not read as the table's")
            }
            TreeKeptApart { table, root, named_by, sampled, fitting_named } => write!(f, "the b-tree at root page {root}, which the schema row of `{named_by}` names, is kept as `{table}`: {fitting_named} of {sampled} sampled records fit `{named_by}` and no other table is free to take them"),
            RowsUnwritable { table, rows } => write!(f, "table `{table}`: {} {} refused by the table and by lost_and_found, and {} not in the output", N(*rows, "row"), was(*rows), are(*rows)),
            TreeFindings { table, findings } => write!(f, "table `{table}`: {} in its b-tree", N(*findings, "finding")),
            LostAndFound { rows, groups } => write!(f, "{} from {} could not be given a table and {} in `lost_and_found`", N(*rows, "row"), N(*groups, "orphan page group"), are(*rows)),
            PagesUnreadable { pages } => write!(f, "{} {} zeroed or unrecognisable and may have held rows", N(*pages, "page"), are(*pages)),
            SchemaDamaged { findings } => write!(f, "the schema table has {findings} findings; tables may be missing"),
            FileCutShort { finding } => write!(f, "the file is cut short: {finding}"),
            PagesMissing { present, declared } => write!(f, "the file holds {present} pages but its header declares {declared}: pages are missing"),
            WalUnusable { path, why } => write!(f, "the write-ahead log `{path}` is unusable ({why}): transactions committed only to it are not recovered"),
            WalFramesIgnored { frame, after } => write!(f, "write-ahead log frame {frame} is damaged: {after} frames after it are ignored, and transactions among them are not recovered"),
            JournalRecordsDamaged { records } => write!(f, "{records} records of the hot rollback journal are damaged and not rolled back: the pages they held may carry changes of a transaction that never committed"),
            PlaceholdersMade { parent, child, placeholders, children } => write!(f, "{children} `{child}` rows kept under {placeholders} reconstructed `{parent}` rows; the `{parent}` rows themselves are lost (their metadata is gone) and the placeholders are registered as fabricated"),
            ParentsNotRebuilt { parent, child, keys, children, reason } => write!(f, "{children} `{child}` rows reference {keys} lost `{parent}` rows that could not be rebuilt ({reason}); they are kept with dangling references"),
            FullTextRebuildFailed { table, content, error } => write!(f, "full-text table `{table}`: rebuilding its index from `{content}` failed: {error}"),
            FullTextContentless { table } => write!(f, "full-text table `{table}` is contentless: no stored text to rebuild its index from, so the index is lost"),
            FullTextContentMissing { table, shadow } => write!(f, "full-text table `{table}`: its stored text (`{shadow}`) is not in the schema; the table is left empty"),
            FullTextIncomplete { table, rows, damaged, unreadable, refused, tree } => write!(
                f,
                "full-text table `{table}`: {rows} rows of its stored text rebuilt ({damaged} with damaged text); {unreadable} cells unreadable, {refused} rows refused{}",
                tree.as_ref().map_or(String::new(), |t| format!("; {t}"))
            ),
            RtreeIncomplete { table, node_table, rows, refused, damaged, tree, defects } => write!(
                f,
                "R-tree `{table}`: {rows} rows rebuilt from `{node_table}`; {refused} refused, {damaged} node blobs damaged{}; node defects: {}",
                tree.as_ref().map_or(String::new(), |t| format!("; {t}")),
                if defects.is_empty() { "none".to_string() } else { defects.join("; ") }
            ),
            VirtualTableEmpty { table, shadows } => write!(
                f,
                "virtual table `{table}` is created empty: its data in {} is not carried over",
                shadows.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")
            ),
            TableMissing { table, profile } => write!(f, "table `{table}` (expected by profile `{profile}`) is missing: the schema is damaged and may have lost it"),
            PartialRowsRebuilt { table, rows, registry } => write!(f, "{rows} lost `{table}` rows rebuilt from their index entries and full-text copies alone (other columns are NULL); registered in `{registry}`"),
            PartialRowsRefused { table, rows, registry } => write!(f, "{rows} lost `{table}` rows proven by index entries or full-text copies could not be rebuilt: the table's constraints refused what the evidence holds; their known values are kept in `{registry}`"),
            RowsLost { table, lower, upper, by_index, by_text } => write!(
                f,
                "table `{table}`: at least {} lost{}{}",
                N(*lower, "row"),
                upper.map_or(", how many more is unknown".to_string(), |u| format!(", at most {u}")),
                match (by_index, by_text) {
                    (0, 0) => String::new(),
                    (i, 0) => format!(" ({i} proven by index entries)"),
                    (0, t) => format!(" ({t} proven by full-text copies)"),
                    (i, t) => format!(" ({i} proven by index entries, {t} more by full-text copies)"),
                }
            ),
            TableInferred { table, rows } => write!(f, "table `{table}` holds {} of a table whose schema row is lost; its name and columns are inferred", N(*rows, "row")),
            TableNotRecovered { table, reason } => write!(f, "table `{table}` could not be recovered: {reason}"),
            ObjectNotCreated { object, name, reason } => write!(f, "the {object} `{name}` could not be re-created: {reason}"),
        }
    }
}

/// The signals one filled table gives from its counts.
pub fn table_signals(table: &str, t: &TableLoss) -> Vec<LossSignal> {
    let name = || table.to_string();
    let mut out = Vec::new();
    if t.root_lost {
        out.push(LossSignal::RootUnreadable { table: name() });
    }
    let counted = [
        (
            t.lost_subtrees,
            LossSignal::SubtreesLost {
                table: name(),
                pointers: t.lost_subtrees,
            },
        ),
        (
            t.from_orphans,
            LossSignal::RowsFromOrphans {
                table: name(),
                rows: t.from_orphans,
            },
        ),
        (
            t.damaged_rows,
            LossSignal::DamagedFields {
                table: name(),
                rows: t.damaged_rows,
            },
        ),
        (
            t.unreadable_cells,
            LossSignal::UndecodableCells {
                table: name(),
                cells: t.unreadable_cells,
            },
        ),
        (
            t.conflicts,
            LossSignal::KeyConflicts {
                table: name(),
                rows: t.conflicts,
            },
        ),
        (
            t.rejected,
            LossSignal::RowsRefused {
                table: name(),
                rows: t.rejected,
            },
        ),
        (
            t.unwritable,
            LossSignal::RowsUnwritable {
                table: name(),
                rows: t.unwritable,
            },
        ),
    ];
    out.extend(counted.into_iter().filter(|(n, _)| *n > 0).map(|(_, s)| s));
    if t.tree_findings > 0 && t.lost_subtrees == 0 && !t.root_lost {
        out.push(LossSignal::TreeFindings {
            table: name(),
            findings: t.tree_findings,
        });
    }
    out
}

/// The signals of the file as a whole: rows in `lost_and_found`, unreadable pages, a
/// damaged schema, a file shorter than its header says.
pub fn file_signals(
    survey: &Survey,
    lost_and_found: (u64, usize),
    header_findings: &[Finding],
) -> Vec<LossSignal> {
    let mut out = Vec::new();
    let (rows, groups) = lost_and_found;
    if rows > 0 {
        out.push(LossSignal::LostAndFound {
            rows,
            groups: groups as u64,
        });
    }
    let unclaimed = survey
        .page_map
        .counts()
        .into_iter()
        .filter(|(c, _)| matches!(c, PageClass::Zeroed | PageClass::Unrecognised))
        .map(|(_, n)| u64::from(n))
        .sum::<u64>();
    if unclaimed > 0 {
        out.push(LossSignal::PagesUnreadable { pages: unclaimed });
    }
    if let Some(schema) = survey.trees.first().filter(|s| !s.findings.is_empty()) {
        out.push(LossSignal::SchemaDamaged {
            findings: schema.findings.len() as u64,
        });
    }
    for f in header_findings {
        if matches!(f, Finding::FileNotPageMultiple { .. }) {
            out.push(LossSignal::FileCutShort {
                finding: f.to_string(),
            });
        }
        if let Finding::DatabaseSizeMismatch { declared, actual } = f {
            if actual < declared {
                out.push(LossSignal::PagesMissing {
                    present: *actual,
                    declared: *declared,
                });
            }
        }
    }
    out
}

/// One signal per parent/child pair of placeholders: children kept under placeholders
/// (the parents' own data is gone), and children whose parent could not be rebuilt.
pub fn placeholder_signals(outcome: &PlaceholderOutcome) -> Vec<LossSignal> {
    use std::collections::BTreeMap;
    let mut made: BTreeMap<(&str, &str), (u64, u64)> = BTreeMap::new();
    for m in &outcome.made {
        let e = made.entry((&m.table, &m.child_table)).or_default();
        e.0 += 1;
        e.1 += m.children;
    }
    let mut blocked: BTreeMap<(&str, &str), (u64, u64, String)> = BTreeMap::new();
    for b in &outcome.blocked {
        let e = blocked.entry((&b.table, &b.child_table)).or_default();
        e.0 += 1;
        e.1 += b.children;
        e.2 = b.why.to_string();
    }
    let mut out: Vec<LossSignal> = made
        .into_iter()
        .map(
            |((parent, child), (n, children))| LossSignal::PlaceholdersMade {
                parent: parent.into(),
                child: child.into(),
                placeholders: n,
                children,
            },
        )
        .collect();
    out.extend(
        blocked
            .into_iter()
            .map(
                |((parent, child), (n, children, reason))| LossSignal::ParentsNotRebuilt {
                    parent: parent.into(),
                    child: child.into(),
                    keys: n,
                    children,
                    reason,
                },
            ),
    );
    out
}

/// What a table contributes to the run's signals beyond its counts.
#[derive(Clone, Copy, Debug)]
pub struct TableFacts<'a> {
    /// The table's name.
    pub name: &'a str,
    /// What became of it.
    pub status: TableStatus,
    /// Why, for a table not recovered.
    pub reason: Option<&'a str>,
    /// Its counts (all zero for a table not filled).
    pub loss: &'a TableLoss,
    /// Its loss bounds, when anything says it lost rows.
    pub bounds: Option<&'a LossBounds>,
}

/// The signals of a table beyond its counts, in the report's order: partial rows, then
/// its loss bounds, then whether it is inferred or failed. (Grouped by kind across the
/// tables: [`signals_after_counts`].)
pub fn signals_after_counts(tables: &[TableFacts<'_>], registry: Option<&str>) -> Vec<LossSignal> {
    let registry = registry.unwrap_or("salvage_partial_rows").to_string();
    let mut out = Vec::new();
    for t in tables {
        let loss = t.loss;
        if loss.partial_rows > 0 {
            out.push(LossSignal::PartialRowsRebuilt {
                table: t.name.into(),
                rows: loss.partial_rows,
                registry: registry.clone(),
            });
        }
        if loss.partial_refused > 0 {
            out.push(LossSignal::PartialRowsRefused {
                table: t.name.into(),
                rows: loss.partial_refused,
                registry: registry.clone(),
            });
        }
    }
    for t in tables {
        if let Some(b) = t.bounds.filter(|b| b.lower > 0 || b.upper != Some(0)) {
            out.push(LossSignal::RowsLost {
                table: t.name.into(),
                lower: b.lower,
                upper: b.upper,
                by_index: b.proven_by_index,
                by_text: b.proven_by_text,
            });
        }
    }
    for t in tables.iter().filter(|t| t.status == TableStatus::Inferred) {
        out.push(LossSignal::TableInferred {
            table: t.name.into(),
            rows: t.loss.written(),
        });
    }
    for t in tables.iter().filter(|t| t.status == TableStatus::Failed) {
        out.push(LossSignal::TableNotRecovered {
            table: t.name.into(),
            reason: t.reason.unwrap_or_default().into(),
        });
    }
    out
}

/// The verdict over a whole salvage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// Every source of evidence agrees nothing is missing, and the output was verified.
    pub complete: bool,
    /// Some rows were recovered, but not provably all.
    pub partial: bool,
    /// Some row may be missing or damaged.
    pub loss_detected: bool,
    /// The output passed its checks.
    pub verified: bool,
}

impl Verdict {
    /// The verdict from the run's signals and its verification: the one place
    /// `loss_detected` is decided.
    pub fn of(signals: &[LossSignal], verified: bool) -> Verdict {
        let loss_detected = !signals.is_empty();
        Verdict {
            complete: !loss_detected && verified,
            partial: loss_detected,
            loss_detected,
            verified,
        }
    }
}

#[cfg(test)]
mod tests {
    use pager::{survey, Database};

    use super::*;
    use crate::placeholders::{Blocked, Made, Unbuilt};
    use crate::testing::{file, leaf, named_row, schema_row, zeroed};

    fn owned(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn table_read_whole_gives_no_signal() {
        // Placeholders, partial rows and texts kept as stored are said elsewhere
        // (`placeholder_signals`, `signals_after_counts`, the warnings).
        let t = TableLoss {
            from_tree: 10,
            placeholders: 2,
            partial_rows: 1,
            partial_refused: 1,
            rejected_unproven: 1,
            texts_not_in_encoding: 3,
            ..TableLoss::default()
        };
        assert_eq!(table_signals("a", &t), vec![]);
    }

    #[test]
    fn each_count_gives_its_signal_in_report_order() {
        let t = TableLoss {
            root_lost: true,
            lost_subtrees: 2,
            from_orphans: 3,
            damaged_rows: 4,
            unreadable_cells: 5,
            conflicts: 6,
            rejected: 7,
            unwritable: 8,
            tree_findings: 9,
            ..TableLoss::default()
        };
        let table = || "a".to_string();
        assert_eq!(
            table_signals("a", &t),
            vec![
                LossSignal::RootUnreadable { table: table() },
                LossSignal::SubtreesLost {
                    table: table(),
                    pointers: 2,
                },
                LossSignal::RowsFromOrphans {
                    table: table(),
                    rows: 3,
                },
                LossSignal::DamagedFields {
                    table: table(),
                    rows: 4,
                },
                LossSignal::UndecodableCells {
                    table: table(),
                    cells: 5,
                },
                LossSignal::KeyConflicts {
                    table: table(),
                    rows: 6,
                },
                LossSignal::RowsRefused {
                    table: table(),
                    rows: 7,
                },
                LossSignal::RowsUnwritable {
                    table: table(),
                    rows: 8,
                },
                // No TreeFindings: the lost root says more.
            ]
        );
    }

    #[test]
    fn tree_findings_are_a_signal_only_where_nothing_else_was_lost() {
        let findings = TableLoss {
            tree_findings: 3,
            ..TableLoss::default()
        };
        assert_eq!(
            table_signals("a", &findings),
            vec![LossSignal::TreeFindings {
                table: "a".into(),
                findings: 3,
            }]
        );
        let subtree_lost = TableLoss {
            lost_subtrees: 1,
            ..findings.clone()
        };
        assert!(!table_signals("a", &subtree_lost)
            .iter()
            .any(|s| matches!(s, LossSignal::TreeFindings { .. })));
        let root_lost = TableLoss {
            root_lost: true,
            ..findings
        };
        assert_eq!(
            table_signals("a", &root_lost),
            vec![LossSignal::RootUnreadable { table: "a".into() }]
        );
    }

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

    /// Table `a` rooted at page 2, a leaf of one row, and `extra` pages after it.
    fn file_with(extra: &[Vec<u8>]) -> Vec<u8> {
        let sql = "CREATE TABLE a(id INTEGER PRIMARY KEY, name TEXT)";
        let mut pages = vec![leaf(&[&named_row(1, b'a')])];
        pages.extend_from_slice(extra);
        file(&[&schema_row(1, "a", 2, sql)], &pages)
    }

    fn signals_of(bytes: &[u8], lost_and_found: (u64, usize)) -> Vec<LossSignal> {
        let db = Database::open(bytes).unwrap();
        file_signals(&survey(&db), lost_and_found, db.findings())
    }

    #[test]
    fn sound_file_gives_no_signal() {
        assert_eq!(signals_of(&file_with(&[]), (0, 0)), vec![]);
        // Groups with no row in them are no loss either.
        assert_eq!(signals_of(&file_with(&[]), (0, 2)), vec![]);
    }

    #[test]
    fn rows_in_lost_and_found_are_a_signal() {
        assert_eq!(
            signals_of(&file_with(&[]), (5, 2)),
            vec![LossSignal::LostAndFound { rows: 5, groups: 2 }]
        );
    }

    #[test]
    fn zeroed_and_unrecognisable_pages_may_have_held_rows() {
        let garbage = vec![0xa5u8; 512];
        assert_eq!(
            signals_of(&file_with(&[zeroed(), garbage]), (0, 0)),
            vec![LossSignal::PagesUnreadable { pages: 2 }]
        );
    }

    #[test]
    fn damaged_schema_may_have_lost_tables() {
        // A second schema row names root page 99 of a 2-page file.
        let bytes = file(
            &[
                &schema_row(
                    1,
                    "a",
                    2,
                    "CREATE TABLE a(id INTEGER PRIMARY KEY, name TEXT)",
                ),
                &schema_row(2, "z", 99, "CREATE TABLE z(v)"),
            ],
            &[leaf(&[&named_row(1, b'a')])],
        );
        assert_eq!(
            signals_of(&bytes, (0, 0)),
            vec![LossSignal::SchemaDamaged { findings: 1 }]
        );
    }

    #[test]
    fn file_cut_short_in_a_page_is_a_signal() {
        let mut bytes = file_with(&[zeroed()]);
        bytes.truncate(512 * 2 + 256);
        // The zeroed part of page 3 is an unreadable page too.
        assert_eq!(
            signals_of(&bytes, (0, 0)),
            vec![
                LossSignal::PagesUnreadable { pages: 1 },
                LossSignal::FileCutShort {
                    finding: "file length is not a multiple of the page size 512: 1280 bytes"
                        .into(),
                },
            ]
        );
    }

    #[test]
    fn fewer_pages_than_the_header_declares_are_missing_pages() {
        let mut bytes = file_with(&[]);
        bytes[31] = 3; // in-header database size: 3 pages, of a file of 2
        assert_eq!(
            signals_of(&bytes, (0, 0)),
            vec![LossSignal::PagesMissing {
                present: 2,
                declared: 3,
            }]
        );
        // More pages than it declares: nothing is missing.
        let mut bytes = file_with(&[leaf(&[&named_row(2, b'b')])]);
        bytes[31] = 2;
        assert!(!signals_of(&bytes, (0, 0))
            .iter()
            .any(|s| matches!(s, LossSignal::PagesMissing { .. })));
    }

    fn made(parent: &str, child: &str, children: u64) -> Made {
        Made {
            table: parent.into(),
            rowid: 1,
            key: "1".into(),
            child_table: child.into(),
            children,
            filled: Vec::new(),
            origin: "foreign key".into(),
        }
    }

    fn blocked(parent: &str, child: &str, children: u64, why: Unbuilt) -> Blocked {
        Blocked {
            table: parent.into(),
            key: "7".into(),
            child_table: child.into(),
            children,
            why,
        }
    }

    #[test]
    fn placeholders_give_one_signal_per_parent_and_child_table() {
        let outcome = PlaceholderOutcome {
            made: vec![
                made("users", "sessions", 1),
                made("sessions", "messages", 3),
                made("sessions", "messages", 2),
            ],
            blocked: vec![
                blocked("sessions", "tool_calls", 4, Unbuilt::NotAsked),
                blocked(
                    "sessions",
                    "tool_calls",
                    1,
                    Unbuilt::Refused("NOT NULL constraint failed: sessions.model".into()),
                ),
            ],
            ..PlaceholderOutcome::default()
        };
        assert_eq!(
            placeholder_signals(&outcome),
            vec![
                LossSignal::PlaceholdersMade {
                    parent: "sessions".into(),
                    child: "messages".into(),
                    placeholders: 2,
                    children: 5,
                },
                LossSignal::PlaceholdersMade {
                    parent: "users".into(),
                    child: "sessions".into(),
                    placeholders: 1,
                    children: 1,
                },
                LossSignal::ParentsNotRebuilt {
                    parent: "sessions".into(),
                    child: "tool_calls".into(),
                    keys: 2,
                    children: 5,
                    // The last reason given.
                    reason:
                        "the output refused the row: NOT NULL constraint failed: sessions.model"
                            .into(),
                },
            ]
        );
        assert_eq!(placeholder_signals(&PlaceholderOutcome::default()), vec![]);
    }

    fn facts<'a>(
        name: &'a str,
        status: TableStatus,
        loss: &'a TableLoss,
        bounds: Option<&'a LossBounds>,
    ) -> TableFacts<'a> {
        TableFacts {
            name,
            status,
            reason: None,
            loss,
            bounds,
        }
    }

    #[test]
    fn partial_rows_then_bounds_then_inferred_then_failed_tables() {
        let partial = TableLoss {
            partial_rows: 2,
            partial_refused: 1,
            ..TableLoss::default()
        };
        let inferred = TableLoss {
            from_orphans: 4,
            ..TableLoss::default()
        };
        let none = TableLoss::default();
        let lost = LossBounds {
            lower: 3,
            upper: Some(5),
            proven_by_index: 2,
            proven_by_text: 1,
            evidence: Vec::new(),
        };
        let tables = [
            TableFacts {
                reason: Some("no CREATE statement SQLite accepts"),
                ..facts("f", TableStatus::Failed, &none, None)
            },
            facts("i", TableStatus::Inferred, &inferred, None),
            facts("p", TableStatus::Recovered, &partial, Some(&lost)),
        ];
        let registry = || "salvage_partial_rows".to_string();
        assert_eq!(
            signals_after_counts(&tables, None),
            vec![
                LossSignal::PartialRowsRebuilt {
                    table: "p".into(),
                    rows: 2,
                    registry: registry(),
                },
                LossSignal::PartialRowsRefused {
                    table: "p".into(),
                    rows: 1,
                    registry: registry(),
                },
                LossSignal::RowsLost {
                    table: "p".into(),
                    lower: 3,
                    upper: Some(5),
                    by_index: 2,
                    by_text: 1,
                },
                LossSignal::TableInferred {
                    table: "i".into(),
                    rows: 4,
                },
                LossSignal::TableNotRecovered {
                    table: "f".into(),
                    reason: "no CREATE statement SQLite accepts".into(),
                },
            ]
        );
        // The registry the run named.
        let named = signals_after_counts(&tables[2..], Some("registry_x"));
        assert!(matches!(
            &named[0],
            LossSignal::PartialRowsRebuilt { registry, .. } if registry == "registry_x"
        ));
    }

    #[test]
    fn bounds_say_loss_unless_they_prove_none() {
        let none = TableLoss::default();
        let bounded = |lower: u64, upper: Option<u64>| LossBounds {
            lower,
            upper,
            ..LossBounds::default()
        };
        let nothing_lost = bounded(0, Some(0));
        let unknown = bounded(0, None);
        let tables = [
            facts("zero", TableStatus::Recovered, &none, Some(&nothing_lost)),
            facts("unknown", TableStatus::Recovered, &none, Some(&unknown)),
        ];
        assert_eq!(
            signals_after_counts(&tables, None),
            vec![LossSignal::RowsLost {
                table: "unknown".into(),
                lower: 0,
                upper: None,
                by_index: 0,
                by_text: 0,
            }]
        );
    }

    #[test]
    fn failed_table_without_a_reason_and_other_statuses() {
        let none = TableLoss::default();
        let mut tables = vec![facts("f", TableStatus::Failed, &none, None)];
        for status in [
            TableStatus::Recovered,
            TableStatus::Skipped,
            TableStatus::Missing,
            TableStatus::Rebuilt,
            TableStatus::Lost,
        ] {
            tables.push(facts("other", status, &none, None));
        }
        assert_eq!(
            signals_after_counts(&tables, None),
            vec![LossSignal::TableNotRecovered {
                table: "f".into(),
                reason: String::new(),
            }]
        );
    }

    #[test]
    fn verdict_is_complete_only_without_signals_and_verified() {
        let signal = [LossSignal::PagesUnreadable { pages: 1 }];
        assert_eq!(
            Verdict::of(&[], true),
            Verdict {
                complete: true,
                partial: false,
                loss_detected: false,
                verified: true,
            }
        );
        assert_eq!(
            Verdict::of(&[], false),
            Verdict {
                complete: false,
                partial: false,
                loss_detected: false,
                verified: false,
            }
        );
        assert_eq!(
            Verdict::of(&signal, true),
            Verdict {
                complete: false,
                partial: true,
                loss_detected: true,
                verified: true,
            }
        );
        assert_eq!(
            Verdict::of(&signal, false),
            Verdict {
                complete: false,
                partial: true,
                loss_detected: true,
                verified: false,
            }
        );
    }

    #[test]
    fn sentences_of_table_counts_agree_in_number() {
        let say = |s: LossSignal| s.to_string();
        let t = || "a".to_string();
        assert_eq!(
            say(LossSignal::RootUnreadable { table: t() }),
            "table `a`: its root page is unreadable"
        );
        assert_eq!(
            say(LossSignal::SubtreesLost {
                table: t(),
                pointers: 1
            }),
            "table `a`: 1 child pointer of its b-tree could not be followed"
        );
        assert_eq!(
            say(LossSignal::SubtreesLost {
                table: t(),
                pointers: 2
            }),
            "table `a`: 2 child pointers of its b-tree could not be followed"
        );
        assert_eq!(
            say(LossSignal::DamagedFields {
                table: t(),
                rows: 1
            }),
            "table `a`: 1 row with damaged fields, stored as NULL"
        );
        assert_eq!(
            say(LossSignal::DamagedFields {
                table: t(),
                rows: 3
            }),
            "table `a`: 3 rows with damaged fields, stored as NULL"
        );
        assert_eq!(
            say(LossSignal::RowsRefused {
                table: t(),
                rows: 1
            }),
            "table `a`: 1 row was refused by its constraints"
        );
        assert_eq!(
            say(LossSignal::RowsUnwritable { table: t(), rows: 2 }),
            "table `a`: 2 rows were refused by the table and by lost_and_found, and are not in the output"
        );
        assert_eq!(
            say(LossSignal::LostAndFound { rows: 1, groups: 1 }),
            "1 row from 1 orphan page group could not be given a table and is in `lost_and_found`"
        );
        assert_eq!(
            say(LossSignal::PagesUnreadable { pages: 4 }),
            "4 pages are zeroed or unrecognisable and may have held rows"
        );
    }

    #[test]
    fn sentences_of_rows_lost_say_their_bounds_and_proof() {
        let lost = |lower, upper, by_index, by_text| {
            LossSignal::RowsLost {
                table: "m".into(),
                lower,
                upper,
                by_index,
                by_text,
            }
            .to_string()
        };
        assert_eq!(
            lost(1, None, 0, 0),
            "table `m`: at least 1 row lost, how many more is unknown"
        );
        assert_eq!(
            lost(3, Some(7), 3, 0),
            "table `m`: at least 3 rows lost, at most 7 (3 proven by index entries)"
        );
        assert_eq!(
            lost(2, Some(2), 0, 2),
            "table `m`: at least 2 rows lost, at most 2 (2 proven by full-text copies)"
        );
        assert_eq!(
            lost(5, None, 3, 2),
            "table `m`: at least 5 rows lost, how many more is unknown (3 proven by index entries, 2 more by full-text copies)"
        );
    }

    #[test]
    fn sentences_with_optional_parts() {
        let page = |looked_up| LossSignal::PageOfAnother {
            table: "a".into(),
            page: 7,
            holder: "`b`".into(),
            cells: 10,
            outside: 9,
            sampled: 10,
            fitting: 0,
            looked_up,
            held: 0,
        };
        assert_eq!(
            page(0).to_string(),
            "table `a`: page 7, which its b-tree reaches, is `b`'s: 9 of its 10 keys lie outside the range the pointer assigns, 0 of 10 records fit the table; its rows are not read as the table's"
        );
        assert_eq!(
            page(4).to_string(),
            "table `a`: page 7, which its b-tree reaches, is `b`'s: 9 of its 10 keys lie outside the range the pointer assigns, 0 of 10 records fit the table, 0 of 4 rows are in its indexes; its rows are not read as the table's"
        );
        let rtree = |defects: Vec<String>, tree: Option<String>| LossSignal::RtreeIncomplete {
            table: "geo".into(),
            node_table: "geo_node".into(),
            rows: 5,
            refused: 1,
            damaged: 2,
            tree,
            defects,
        };
        assert_eq!(
            rtree(vec![], None).to_string(),
            "R-tree `geo`: 5 rows rebuilt from `geo_node`; 1 refused, 2 node blobs damaged; node defects: none"
        );
        assert_eq!(
            rtree(owned(&["node 3 cut short", "node 9 loops"]), Some("1 page lost".into()))
                .to_string(),
            "R-tree `geo`: 5 rows rebuilt from `geo_node`; 1 refused, 2 node blobs damaged; 1 page lost; node defects: node 3 cut short; node 9 loops"
        );
        assert_eq!(
            LossSignal::VirtualTableEmpty {
                table: "docs".into(),
                shadows: owned(&["docs_data", "docs_idx"]),
            }
            .to_string(),
            "virtual table `docs` is created empty: its data in `docs_data`, `docs_idx` is not carried over"
        );
        assert_eq!(
            LossSignal::PlaceholdersMade {
                parent: "sessions".into(),
                child: "messages".into(),
                placeholders: 2,
                children: 5,
            }
            .to_string(),
            "5 `messages` rows kept under 2 reconstructed `sessions` rows; the `sessions` rows themselves are lost (their metadata is gone) and the placeholders are registered as fabricated"
        );
    }

    /// One signal of every kind. The match makes a new variant fail to compile here
    /// until it is added, so that its sentence is checked below.
    fn one_of_each() -> Vec<LossSignal> {
        use LossSignal::*;
        let t = || "a".to_string();
        #[rustfmt::skip]
        let all = vec![
            RootUnreadable { table: t() },
            SubtreesLost { table: t(), pointers: 2 },
            RowsFromOrphans { table: t(), rows: 2 },
            DamagedFields { table: t(), rows: 2 },
            UndecodableCells { table: t(), cells: 2 },
            KeyConflicts { table: t(), rows: 2 },
            RowsUnwritable { table: t(), rows: 2 },
            TreeMoved { table: t(), root: 3, named_by: "b".into(), sampled: 4, fitting: 4, fitting_named: 0 },
            RootNotATable { table: t(), root: 3 },
            RootOfAnotherTable { table: t(), root: 3, holder: "b".into() },
            PageOfAnother { table: t(), page: 3, holder: "the freelist".into(), cells: 4, outside: 4, sampled: 4, fitting: 0, looked_up: 0, held: 0 },
            TreeKeptApart { table: "a_2".into(), root: 3, named_by: "a".into(), sampled: 4, fitting_named: 0 },
            RowsRefused { table: t(), rows: 2 },
            TreeFindings { table: t(), findings: 2 },
            LostAndFound { rows: 2, groups: 2 },
            PagesUnreadable { pages: 2 },
            SchemaDamaged { findings: 2 },
            FileCutShort { finding: "file length is not a multiple of the page size 512: 1280 bytes".into() },
            PagesMissing { present: 2, declared: 3 },
            WalUnusable { path: "db-wal".into(), why: "header checksum mismatch".into() },
            WalFramesIgnored { frame: 3, after: 2 },
            JournalRecordsDamaged { records: 2 },
            PlaceholdersMade { parent: "p".into(), child: "c".into(), placeholders: 2, children: 2 },
            ParentsNotRebuilt { parent: "p".into(), child: "c".into(), keys: 2, children: 2, reason: "placeholders were not asked for".into() },
            FullTextRebuildFailed { table: "f".into(), content: t(), error: "SQL logic error".into() },
            FullTextContentless { table: "f".into() },
            FullTextContentMissing { table: "f".into(), shadow: "f_content".into() },
            FullTextIncomplete { table: "f".into(), rows: 2, damaged: 1, unreadable: 1, refused: 0, tree: None },
            RtreeIncomplete { table: "r".into(), node_table: "r_node".into(), rows: 2, refused: 0, damaged: 1, tree: None, defects: Vec::new() },
            VirtualTableEmpty { table: "v".into(), shadows: owned(&["v_data"]) },
            TableMissing { table: t(), profile: "agent".into() },
            PartialRowsRebuilt { table: t(), rows: 2, registry: "salvage_partial_rows".into() },
            PartialRowsRefused { table: t(), rows: 2, registry: "salvage_partial_rows".into() },
            RowsLost { table: t(), lower: 2, upper: None, by_index: 0, by_text: 0 },
            TableInferred { table: t(), rows: 2 },
            TableNotRecovered { table: t(), reason: "no CREATE statement".into() },
            ObjectNotCreated { object: "index".into(), name: "i".into(), reason: "no such column: x".into() },
        ];
        for s in &all {
            match s {
                RootUnreadable { .. }
                | SubtreesLost { .. }
                | RowsFromOrphans { .. }
                | DamagedFields { .. }
                | UndecodableCells { .. }
                | KeyConflicts { .. }
                | RowsUnwritable { .. }
                | TreeMoved { .. }
                | RootNotATable { .. }
                | RootOfAnotherTable { .. }
                | PageOfAnother { .. }
                | TreeKeptApart { .. }
                | RowsRefused { .. }
                | TreeFindings { .. }
                | LostAndFound { .. }
                | PagesUnreadable { .. }
                | SchemaDamaged { .. }
                | FileCutShort { .. }
                | PagesMissing { .. }
                | WalUnusable { .. }
                | WalFramesIgnored { .. }
                | JournalRecordsDamaged { .. }
                | PlaceholdersMade { .. }
                | ParentsNotRebuilt { .. }
                | FullTextRebuildFailed { .. }
                | FullTextContentless { .. }
                | FullTextContentMissing { .. }
                | FullTextIncomplete { .. }
                | RtreeIncomplete { .. }
                | VirtualTableEmpty { .. }
                | TableMissing { .. }
                | PartialRowsRebuilt { .. }
                | PartialRowsRefused { .. }
                | RowsLost { .. }
                | TableInferred { .. }
                | TableNotRecovered { .. }
                | ObjectNotCreated { .. } => {}
            }
        }
        all
    }

    #[test]
    fn every_sentence_keeps_the_house_style() {
        // Lower case (a name of a thing aside), no trailing period, names in backticks,
        // no placeholder left unfilled.
        for s in one_of_each() {
            let text = s.to_string();
            let first = text.chars().next().unwrap();
            assert!(
                !first.is_uppercase() || text.starts_with("R-tree "),
                "{text}"
            );
            assert!(!text.ends_with('.') && text.trim() == text, "{text}");
            assert!(!text.contains('{') && !text.contains('}'), "{text}");
            assert!(
                !text.contains(" 2 row ") && !text.contains(" 1 rows "),
                "{text}"
            );
        }
    }

    #[test]
    fn every_sentence_names_what_it_is_about() {
        for s in one_of_each() {
            let text = s.to_string();
            let names: Vec<&str> = match &s {
                LossSignal::LostAndFound { .. } => vec!["`lost_and_found`"],
                LossSignal::PagesUnreadable { .. }
                | LossSignal::SchemaDamaged { .. }
                | LossSignal::FileCutShort { .. }
                | LossSignal::PagesMissing { .. }
                | LossSignal::WalFramesIgnored { .. }
                | LossSignal::JournalRecordsDamaged { .. } => vec![],
                LossSignal::WalUnusable { .. } => vec!["`db-wal`"],
                LossSignal::PlaceholdersMade { .. } | LossSignal::ParentsNotRebuilt { .. } => {
                    vec!["`p`", "`c`"]
                }
                LossSignal::FullTextRebuildFailed { .. } => vec!["`f`", "`a`"],
                LossSignal::FullTextContentless { .. }
                | LossSignal::FullTextIncomplete { .. }
                | LossSignal::FullTextContentMissing { .. } => vec!["`f`"],
                LossSignal::RtreeIncomplete { .. } => vec!["`r`", "`r_node`"],
                LossSignal::VirtualTableEmpty { .. } => vec!["`v`", "`v_data`"],
                LossSignal::TreeKeptApart { .. } => vec!["`a_2`", "`a`"],
                LossSignal::ObjectNotCreated { .. } => vec!["`i`"],
                _ => vec!["`a`"],
            };
            for name in names {
                assert!(text.contains(name), "{name} not in: {text}");
            }
        }
    }
}
