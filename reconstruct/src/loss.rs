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
