//! Every sign that a row may be missing or damaged, as a typed [`LossSignal`]. A new sign
//! of loss is a variant here, with its doc line, and its sentence in `sentence`.

use serde::{Deserialize, Serialize};

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
    /// Rows have damaged fields, stored as NULL or as their index entry's value.
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
        /// Where the records fit both tables, the index entries that decided: rows looked
        /// up, how many `table`'s indexes hold, how many `named_by`'s.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by_index: Option<[u32; 3]>,
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
    /// A hot rollback journal is not rolled back: its header's page size disagrees with
    /// the database's and nothing in it proves it. The file is read as it stands, and
    /// may hold changes of a transaction that never committed.
    JournalPageSizeRefused {
        /// The journal header's page size.
        journal: u32,
        /// The database header's page size.
        database: u32,
    },
    /// A write-ahead log is not read: its header's page size disagrees with the
    /// database's and nothing in it proves it. Transactions committed only to it are not
    /// recovered.
    WalPageSizeRefused {
        /// The log header's page size.
        wal: u32,
        /// The database header's page size.
        database: u32,
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
    /// SQLite's own integrity check finds problems in the source that no other sign of
    /// this recovery accounts for: the file contradicts itself where the reading found
    /// nothing, so rows may be missing or in another table's place.
    SqliteCheckUnexplained {
        /// How many problems SQLite reports (of at most the first hundred it lists).
        problems: u64,
        /// The first of them, as SQLite words it.
        first: String,
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
