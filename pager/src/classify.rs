//! Classification of every page and the survey of the whole file: one sequential pass
//! that classifies each page by position and content, then the freelist and every b-tree
//! from the schema, which settle each page's role (overflow, freelist, owned by a tree).
//!
//! The result says, for every page, what it is and which b-tree owns it; b-tree pages no
//! tree reaches are orphans, the raw material of later recovery.

use std::fmt;

use crate::btree::PageType;
use crate::database::Database;
use crate::finding::Finding;
use crate::freelist::{read_freelist, Freelist};
use crate::record::described_record_len;
use crate::schema::{read_schema, Schema, SchemaKind};
use crate::types::PageNo;
use crate::walk::{BtreeWalk, LostChild, TreeItem};

/// What a page is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PageClass {
    /// Interior page of a table b-tree.
    TableInterior,
    /// Leaf page of a table b-tree.
    TableLeaf,
    /// Interior page of an index b-tree.
    IndexInterior,
    /// Leaf page of an index b-tree.
    IndexLeaf,
    /// Overflow page of some cell's payload.
    Overflow,
    /// Freelist trunk page.
    FreelistTrunk,
    /// Freelist leaf page.
    FreelistLeaf,
    /// Pointer-map page (auto-vacuum databases).
    Ptrmap,
    /// The lock-byte page (holds file offset 2^30; never used by SQLite).
    LockByte,
    /// Every byte zero, and no structure claims the page.
    Zeroed,
    /// Not a b-tree page, and no structure claims it.
    Unrecognised,
}

impl PageClass {
    /// Every class, in report order.
    pub const ALL: [PageClass; 11] = [
        PageClass::TableInterior,
        PageClass::TableLeaf,
        PageClass::IndexInterior,
        PageClass::IndexLeaf,
        PageClass::Overflow,
        PageClass::FreelistTrunk,
        PageClass::FreelistLeaf,
        PageClass::Ptrmap,
        PageClass::LockByte,
        PageClass::Zeroed,
        PageClass::Unrecognised,
    ];

    /// The class of a b-tree page of type `t`.
    pub fn of_btree(t: PageType) -> PageClass {
        match t {
            PageType::IndexInterior => PageClass::IndexInterior,
            PageType::TableInterior => PageClass::TableInterior,
            PageType::IndexLeaf => PageClass::IndexLeaf,
            PageType::TableLeaf => PageClass::TableLeaf,
        }
    }

    /// Whether this is one of the four b-tree page classes.
    pub fn is_btree(self) -> bool {
        matches!(
            self,
            PageClass::TableInterior
                | PageClass::TableLeaf
                | PageClass::IndexInterior
                | PageClass::IndexLeaf
        )
    }

    /// The snake_case name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            PageClass::TableInterior => "table_interior",
            PageClass::TableLeaf => "table_leaf",
            PageClass::IndexInterior => "index_interior",
            PageClass::IndexLeaf => "index_leaf",
            PageClass::Overflow => "overflow",
            PageClass::FreelistTrunk => "freelist_trunk",
            PageClass::FreelistLeaf => "freelist_leaf",
            PageClass::Ptrmap => "ptrmap",
            PageClass::LockByte => "lock_byte",
            PageClass::Zeroed => "zeroed",
            PageClass::Unrecognised => "unrecognised",
        }
    }
}

impl fmt::Display for PageClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PageClass::TableInterior => "table interior page",
            PageClass::TableLeaf => "table leaf page",
            PageClass::IndexInterior => "index interior page",
            PageClass::IndexLeaf => "index leaf page",
            PageClass::Overflow => "overflow page",
            PageClass::FreelistTrunk => "freelist trunk page",
            PageClass::FreelistLeaf => "freelist leaf page",
            PageClass::Ptrmap => "pointer-map page",
            PageClass::LockByte => "lock-byte page",
            PageClass::Zeroed => "zeroed page",
            PageClass::Unrecognised => "unrecognised page",
        })
    }
}

/// Classifies one page by position and content alone.
pub fn classify_by_content(db: &Database<'_>, no: PageNo) -> PageClass {
    if let Some(c) = db.positional_class(no) {
        return c;
    }
    let Some(page) = db.page(no) else {
        return PageClass::Unrecognised;
    };
    match page.btree_header() {
        Ok(h) if (h.cell_content_area() as usize) >= h.cell_pointers_end() => {
            PageClass::of_btree(h.page_type())
        }
        _ if page.is_zeroed() => PageClass::Zeroed,
        _ => PageClass::Unrecognised,
    }
}

/// Pages per chunk of a [`PageMap`].
const CHUNK: usize = 4096;

/// One chunk of a [`PageMap`]: [`CHUNK`] pages (fewer for the last).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Chunk {
    /// Every page of the chunk has this class and owner (0 for none): a run of zeroed
    /// padding costs a few bytes however long it is.
    Uniform(PageClass, u32),
    /// Page by page.
    Mixed {
        classes: Box<[PageClass]>,
        owners: Box<[u32]>,
    },
}

impl Chunk {
    /// A chunk of `classes`, owned by no tree.
    fn of(classes: &[PageClass]) -> Chunk {
        match classes.first() {
            Some(first) if classes.iter().all(|c| c == first) => Chunk::Uniform(*first, 0),
            _ => Chunk::Mixed {
                classes: classes.into(),
                owners: vec![0; classes.len()].into(),
            },
        }
    }

    /// The class and owner of its `k`th page.
    fn at(&self, k: usize) -> Option<(PageClass, u32)> {
        match self {
            Chunk::Uniform(c, o) => Some((*c, *o)),
            Chunk::Mixed { classes, owners } => Some((*classes.get(k)?, *owners.get(k)?)),
        }
    }

    /// Whether any page of it can match `keep` (a uniform chunk has one answer).
    fn may_hold(&self, keep: fn(PageClass, u32) -> bool) -> bool {
        match self {
            Chunk::Uniform(c, o) => keep(*c, *o),
            Chunk::Mixed { .. } => true,
        }
    }
}

/// Every page's class and owning b-tree, in chunks of [`CHUNK`] pages: a chunk whose pages
/// all agree (zeroed padding, a run of unclaimed pages) is one entry, so the map of a file
/// padded to any size stays small; pages of varied content cost 5 bytes each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageMap {
    /// Pages mapped.
    len: usize,
    chunks: Vec<Chunk>,
}

impl PageMap {
    /// A map of pages 1.. with these classes, owned by no tree.
    fn from_classes(classes: impl IntoIterator<Item = PageClass>) -> PageMap {
        let mut map = PageMap::default();
        let mut buffer = Vec::with_capacity(CHUNK);
        for c in classes {
            buffer.push(c);
            if buffer.len() == CHUNK {
                map.chunks.push(Chunk::of(&buffer));
                map.len += buffer.len();
                buffer.clear();
            }
        }
        if !buffer.is_empty() {
            map.chunks.push(Chunk::of(&buffer));
            map.len += buffer.len();
        }
        map
    }

    /// The class and owner (0 for none) of `page`.
    fn get(&self, page: PageNo) -> Option<(PageClass, u32)> {
        let i = page.index();
        if i >= self.len {
            return None;
        }
        self.chunks.get(i / CHUNK)?.at(i % CHUNK)
    }

    /// Sets the class and owner of `page`; a uniform chunk becomes page by page when they
    /// differ from its own.
    fn set(&mut self, page: PageNo, class: PageClass, owner: u32) {
        let i = page.index();
        if i >= self.len {
            return;
        }
        let len = CHUNK.min(self.len - i / CHUNK * CHUNK);
        let Some(chunk) = self.chunks.get_mut(i / CHUNK) else {
            return;
        };
        if let Chunk::Uniform(c, o) = *chunk {
            if (c, o) == (class, owner) {
                return;
            }
            *chunk = Chunk::Mixed {
                classes: vec![c; len].into(),
                owners: vec![o; len].into(),
            };
        }
        if let Chunk::Mixed { classes, owners } = chunk {
            if let (Some(c), Some(o)) = (classes.get_mut(i % CHUNK), owners.get_mut(i % CHUNK)) {
                (*c, *o) = (class, owner);
            }
        }
    }

    /// This map of what the structures hold over `content`, a map of the same pages by
    /// their content: each page a structure claimed (or the freelist listed) as this map
    /// has it, every other page as `content` has it. What [`PageMap::from_classes`] then
    /// the claims would have made, the two built apart.
    fn over(self, content: PageMap) -> PageMap {
        let untouched = Chunk::Uniform(PageClass::Unrecognised, 0);
        let len = self.len;
        let chunks = self
            .chunks
            .into_iter()
            .zip(content.chunks)
            .enumerate()
            .map(|(n, (held, by_content))| {
                if held == untouched {
                    return by_content;
                }
                let size = CHUNK.min(len.saturating_sub(n * CHUNK));
                let (classes, owners): (Vec<PageClass>, Vec<u32>) = (0..size)
                    .map(|k| match (held.at(k), by_content.at(k)) {
                        (Some(h), _) if h != (PageClass::Unrecognised, 0) => h,
                        (_, Some(c)) => c,
                        (Some(h), None) => h,
                        (None, None) => (PageClass::Unrecognised, 0),
                    })
                    .unzip();
                match classes.first().zip(owners.first()) {
                    Some((c, o))
                        if classes.iter().all(|x| x == c) && owners.iter().all(|x| x == o) =>
                    {
                        Chunk::Uniform(*c, *o)
                    }
                    _ => Chunk::Mixed {
                        classes: classes.into(),
                        owners: owners.into(),
                    },
                }
            })
            .collect();
        PageMap { len, chunks }
    }

    /// Sets the class of `page`, keeping its owner.
    fn set_class(&mut self, page: PageNo, class: PageClass) {
        if let Some((_, owner)) = self.get(page) {
            self.set(page, class, owner);
        }
    }

    /// The pages for which `keep(class, owner)` holds, in page order; chunks that cannot
    /// hold one are skipped whole.
    fn pages_where(
        &self,
        keep: fn(PageClass, u32) -> bool,
    ) -> impl Iterator<Item = (PageNo, PageClass)> + '_ {
        self.chunks.iter().enumerate().flat_map(move |(n, chunk)| {
            let first = n * CHUNK;
            let len = if chunk.may_hold(keep) {
                CHUNK.min(self.len.saturating_sub(first))
            } else {
                0
            };
            (0..len).filter_map(move |k| {
                let (c, o) = chunk.at(k)?;
                let no = u32::try_from(first + k + 1).ok().and_then(PageNo::new)?;
                keep(c, o).then_some((no, c))
            })
        })
    }

    /// Hands `page` over to the b-tree rooted at `owner` as `class` (`None`: to no tree),
    /// when a page two structures claimed is found to be the other one's.
    pub fn hand_over(&mut self, page: PageNo, class: PageClass, owner: Option<PageNo>) {
        self.set(page, class, owner.map_or(0, PageNo::get));
    }

    /// The class of `page`.
    pub fn class(&self, page: PageNo) -> Option<PageClass> {
        self.get(page).map(|(c, _)| c)
    }

    /// The root of the b-tree that owns `page`, if any tree reached it.
    pub fn owner(&self, page: PageNo) -> Option<PageNo> {
        self.get(page).and_then(|(_, o)| PageNo::new(o))
    }

    /// Pages in each class, in [`PageClass::ALL`] order.
    pub fn counts(&self) -> Vec<(PageClass, u32)> {
        let mut counts = [0u32; 11];
        let mut add = |c: PageClass, n: usize| {
            if let Some(slot) = PageClass::ALL
                .iter()
                .position(|x| *x == c)
                .and_then(|i| counts.get_mut(i))
            {
                *slot = slot.saturating_add(u32::try_from(n).unwrap_or(u32::MAX));
            }
        };
        for (n, chunk) in self.chunks.iter().enumerate() {
            match chunk {
                Chunk::Uniform(c, _) => add(*c, CHUNK.min(self.len.saturating_sub(n * CHUNK))),
                Chunk::Mixed { classes, .. } => classes.iter().for_each(|c| add(*c, 1)),
            }
        }
        PageClass::ALL.iter().copied().zip(counts).collect()
    }

    /// Runs of consecutive pages of one class and owner, in page order: `(first page,
    /// pages, class, owner)`. A file padded with zeros is one run however long.
    pub fn runs(&self) -> impl Iterator<Item = (PageNo, u32, PageClass, Option<PageNo>)> + '_ {
        let mut next = 0usize;
        std::iter::from_fn(move || {
            let start = next;
            let at = |i: usize| self.chunks.get(i / CHUNK)?.at(i % CHUNK);
            let (class, owner) = if start < self.len {
                at(start)?
            } else {
                return None;
            };
            let mut end = start + 1;
            while end < self.len {
                match self.chunks.get(end / CHUNK) {
                    // A whole uniform chunk ahead that agrees: step over it at once.
                    Some(Chunk::Uniform(c, o))
                        if end.is_multiple_of(CHUNK) && (*c, *o) == (class, owner) =>
                    {
                        end = (end + CHUNK).min(self.len);
                    }
                    Some(chunk) if chunk.at(end % CHUNK) == Some((class, owner)) => end += 1,
                    _ => break,
                }
            }
            next = end;
            let first = u32::try_from(start + 1).ok().and_then(PageNo::new)?;
            let pages = u32::try_from(end - start).ok()?;
            Some((first, pages, class, PageNo::new(owner)))
        })
    }

    /// B-tree pages that no b-tree from the schema reaches, in page order.
    pub fn orphans(&self) -> impl Iterator<Item = (PageNo, PageClass)> + '_ {
        self.pages_where(|c, o| c.is_btree() && o == 0)
    }

    /// The class of `page` when some structure already holds it: a b-tree, a chain, or
    /// the freelist.
    fn held(&self, page: PageNo) -> Option<PageClass> {
        let (class, owner) = self.get(page)?;
        let free = matches!(class, PageClass::FreelistTrunk | PageClass::FreelistLeaf);
        (owner != 0 || free).then_some(class)
    }

    /// Records that the b-tree rooted at `root` holds `page` as `class`. A page another
    /// tree already holds stays with it: the finding is recorded and `false` returned.
    fn claim(
        &mut self,
        page: PageNo,
        class: PageClass,
        root: PageNo,
        findings: &mut Vec<Finding>,
    ) -> bool {
        let Some((_, owner)) = self.get(page) else {
            return false;
        };
        if owner != 0 && owner != root.get() {
            if let Some(first_root) = PageNo::new(owner) {
                findings.push(Finding::PageInTwoTrees {
                    page,
                    first_root,
                    second_root: root,
                });
            }
            return false;
        }
        self.set(page, class, root.get());
        true
    }

    /// Follows the overflow chains of the cells on orphan b-tree pages, so that the pages
    /// of an orphaned subtree's payloads are known as overflow pages (owned by no tree)
    /// rather than left unrecognised. Chains stop at any page already held.
    fn classify_orphan_overflow(&mut self, db: &Database<'_>) {
        let orphans: Vec<PageNo> = self.orphans().map(|(p, _)| p).collect();
        for no in orphans {
            let Some(page) = db.page(no) else { continue };
            let Ok(h) = page.btree_header() else { continue };
            for cell in page.cells(&h).flatten() {
                let Some(payload) = cell.cell.payload().filter(|p| p.spills()) else {
                    continue;
                };
                let chain = db.overflow_chain_until(payload, cell.location, |p| {
                    self.held(p).or(self.orphan_overflow(p))
                });
                for p in chain.pages {
                    self.set_class(p, PageClass::Overflow);
                }
            }
        }
    }

    /// `Some(Overflow)` for a page already marked as an orphan's overflow page.
    fn orphan_overflow(&self, page: PageNo) -> Option<PageClass> {
        (self.get(page)? == (PageClass::Overflow, 0)).then_some(PageClass::Overflow)
    }

    /// Overflow pages that no tree of the schema reaches (they hang off orphan b-tree pages).
    pub fn orphan_overflow_pages(&self) -> usize {
        self.pages_where(|c, o| c == PageClass::Overflow && o == 0)
            .count()
    }

    /// Number of pages mapped.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no page is mapped.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// What the survey found in one b-tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeSurvey {
    /// Name from the schema (`sqlite_schema` for page 1).
    pub name: String,
    /// Kind from the schema.
    pub kind: SchemaKind,
    /// Root page.
    pub root: PageNo,
    /// B-tree pages reached.
    pub pages: u32,
    /// Overflow pages reached from its cells.
    pub overflow_pages: u32,
    /// Greatest depth reached (root = 1).
    pub depth: u32,
    /// Payload-carrying cells read: rows of a table, entries of an index.
    pub cells: u64,
    /// The largest payload of its cells, in bytes (no value it holds is longer).
    pub max_payload: u64,
    /// Child pointers that could not be followed, with the key ranges they covered.
    pub lost: Vec<LostChild>,
    /// Damage met in this tree.
    pub findings: Vec<Finding>,
}

/// The result of surveying a whole file.
#[derive(Clone, Debug)]
pub struct Survey {
    /// Every page's class and owner.
    pub page_map: PageMap,
    /// The schema from page 1.
    pub schema: Schema,
    /// `sqlite_schema` first, then every table and index with a root page, in schema order.
    pub trees: Vec<TreeSurvey>,
    /// The freelist.
    pub freelist: Freelist,
    /// Damage that concerns more than one structure (pages claimed twice).
    pub findings: Vec<Finding>,
}

/// Pages between two calls of a survey's observer.
pub const OBSERVE_EVERY: u64 = 1024;

impl Survey {
    /// Every finding of the survey: pages claimed twice, the freelist's, and every b-tree's
    /// (the schema's included). Chain [`Database::findings`] before them for the header's.
    pub fn all_findings(&self) -> impl Iterator<Item = &Finding> + '_ {
        self.findings
            .iter()
            .chain(&self.freelist.findings)
            .chain(self.trees.iter().flat_map(|t| &t.findings))
    }
}

/// Classifies every page and walks every structure that claims pages.
pub fn survey(db: &Database<'_>) -> Survey {
    survey_observed(db, &mut |_| {})
}

/// [`survey`], calling `observe` with the number of pages read so far every
/// [`OBSERVE_EVERY`] pages (the classification pass, then the tree walks), so that a
/// caller can show progress or let go of memory-mapped pages it no longer needs.
pub fn survey_observed(db: &Database<'_>, observe: &mut dyn FnMut(u64)) -> Survey {
    survey_with(db, SurveyChecks::All, observe)
}

/// How much a survey checks beyond classifying pages and walking structures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SurveyChecks {
    /// Every check: overlapping cells on each b-tree page and each cell's record header
    /// against its payload size. For inspection.
    All,
    /// Structure only: a caller that decodes every cell afterwards (the salvage run) meets
    /// record damage there, on each row.
    Structure,
}

/// [`survey_observed`] with the checks chosen.
pub fn survey_with(
    db: &Database<'_>,
    checks: SurveyChecks,
    observe: &mut dyn FnMut(u64),
) -> Survey {
    survey_with_schema(db, read_schema(db), checks, observe)
}

/// [`survey_with`] over a schema the caller read (and perhaps completed, see
/// [`crate::schema::scan_for_schema_rows`]) instead of reading page 1 itself.
pub fn survey_with_schema(
    db: &Database<'_>,
    schema: Schema,
    checks: SurveyChecks,
    observe: &mut dyn FnMut(u64),
) -> Survey {
    let all = checks == SurveyChecks::All;
    let mut tick = counting(observe);
    let map = classify_all(db, &mut tick);
    settled(db, walk_structures(db, schema, all, map, &mut tick))
}

/// [`survey_with_schema`] on two threads: every page classified by its content on one
/// while the structures are walked on this one, the two maps laid over each other after
/// (a walk reads only what the structures and the freelist hold, never a page's class by
/// content). The same survey, for a caller with a core to spare. `observe` is called from
/// this thread for the pages walked, `observe_classified` from the other for the pages
/// classified, each counting from 0.
pub fn survey_on_two_threads(
    db: &Database<'_>,
    schema: Schema,
    checks: SurveyChecks,
    observe: &mut dyn FnMut(u64),
    observe_classified: &mut (dyn FnMut(u64) + Send),
) -> Survey {
    let all = checks == SurveyChecks::All;
    let n = db.page_count();
    std::thread::scope(|scope| {
        let classified = std::thread::Builder::new()
            .name("salvage-classify".into())
            .spawn_scoped(scope, || {
                classify_all(db, &mut counting(observe_classified))
            });
        let held = PageMap::from_classes((1..=n).map(|_| PageClass::Unrecognised));
        let mut tick = counting(observe);
        let walked = match classified {
            Ok(thread) => {
                let mut walked = walk_structures(db, schema, all, held, &mut tick);
                // Joined only once the walks are done.
                let content = thread
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                walked.page_map = walked.page_map.over(content);
                walked
            }
            // No thread: the classification first, as one thread does it.
            Err(_) => {
                let map = classify_all(db, &mut |_| {});
                walk_structures(db, schema, all, map, &mut tick)
            }
        };
        settled(db, walked)
    })
}

/// A tick per page read that calls `observe` with the count every [`OBSERVE_EVERY`].
fn counting<F: FnMut(u64) + ?Sized>(observe: &mut F) -> impl FnMut(()) + '_ {
    let mut read = 0u64;
    move |()| {
        read += 1;
        if read.is_multiple_of(OBSERVE_EVERY) {
            observe(read);
        }
    }
}

/// Every page of the file classified by its content, owned by no structure yet.
fn classify_all(db: &Database<'_>, tick: &mut dyn FnMut(())) -> PageMap {
    PageMap::from_classes((1..=db.page_count()).map(|i| {
        tick(());
        PageNo::new(i).map_or(PageClass::Unrecognised, |p| classify_by_content(db, p))
    }))
}

/// The survey's walk of every structure over `map`: the freelist, then each b-tree in
/// the schema's order, each claiming its pages. What needs the pages' classes by content
/// (the freelist's trunks found by them, orphan overflow chains) is left to [`settled`].
fn walk_structures(
    db: &Database<'_>,
    schema: Schema,
    all: bool,
    map: PageMap,
    tick: &mut dyn FnMut(()),
) -> Survey {
    let mut map = map;
    let mut findings = Vec::new();

    let freelist = read_freelist(db);
    for p in &freelist.trunks {
        map.set_class(*p, PageClass::FreelistTrunk);
    }
    for p in &freelist.leaves {
        map.set_class(*p, PageClass::FreelistLeaf);
    }

    let mut roots: Vec<(String, SchemaKind, PageNo)> =
        vec![("sqlite_schema".into(), SchemaKind::Table, PageNo::FIRST)];
    roots.extend(
        schema
            .rows
            .iter()
            .filter(|r| r.has_btree())
            .filter_map(|r| r.rootpage.map(|p| (r.name.clone(), r.kind.clone(), p))),
    );

    let mut trees = Vec::with_capacity(roots.len());
    for (name, kind, root) in roots {
        let mut t = TreeSurvey {
            name,
            kind,
            root,
            pages: 0,
            overflow_pages: 0,
            depth: 0,
            cells: 0,
            max_payload: 0,
            lost: Vec::new(),
            findings: Vec::new(),
        };
        for item in BtreeWalk::new(db, root) {
            match item {
                Ok(TreeItem::Page(p)) => {
                    tick(());
                    t.pages += 1;
                    t.depth = t.depth.max(p.depth);
                    map.claim(
                        p.page,
                        PageClass::of_btree(p.page_type),
                        root,
                        &mut findings,
                    );
                    if let Some(page) = db.page(p.page).filter(|_| all) {
                        if let Ok(h) = page.btree_header() {
                            t.findings.extend(page.overlap_findings(&h));
                        }
                    }
                }
                Ok(TreeItem::Cell(cell)) => {
                    t.cells += 1;
                    let Some(payload) = cell.cell.payload() else {
                        continue;
                    };
                    t.max_payload = t.max_payload.max(payload.total_len);
                    if all {
                        // The length the header describes, its serial types read and
                        // summed, not kept.
                        match described_record_len(payload.local, payload.total_len, cell.location)
                        {
                            Ok(len) if len != payload.total_len => {
                                t.findings.push(Finding::RecordSizeMismatch {
                                    at: cell.location,
                                    header_says: len,
                                    payload_len: payload.total_len,
                                })
                            }
                            Ok(_) => {}
                            // A header that runs onto an overflow page cannot be checked locally.
                            Err(Finding::TruncatedVarint { .. }) if payload.spills() => {}
                            Err(f) => t.findings.push(f),
                        }
                    }
                    if payload.spills() {
                        // A page already held by any structure ends the chain, so every
                        // page is walked at most once however the chains are damaged.
                        let chain =
                            db.overflow_chain_until(payload, cell.location, |p| map.held(p));
                        for p in &chain.pages {
                            if map.claim(*p, PageClass::Overflow, root, &mut findings) {
                                t.overflow_pages += 1;
                            }
                        }
                        t.findings.extend(chain.finding);
                    }
                }
                Ok(TreeItem::Lost(l)) => t.lost.push(l),
                Err(f) => t.findings.push(f),
            }
        }
        trees.push(t);
    }
    Survey {
        page_map: map,
        schema,
        trees,
        freelist,
        findings,
    }
}

/// The walked survey finished over a map that holds every page's class by content too.
fn settled(db: &Database<'_>, walked: Survey) -> Survey {
    let mut s = walked;
    let map = &mut s.page_map;
    // With the header destroyed, its pointer to the freelist is lost: the trunk pages are
    // found by their content among the pages no tree holds, and the pages they list are
    // free (deleted content), not orphans of live tables.
    if !db.header().has_header_string() && s.freelist.page_count() == 0 {
        let found = crate::freelist::scan_freelist(
            db,
            |p| map.class(p) == Some(PageClass::Unrecognised) && map.owner(p).is_none(),
            |p| map.owner(p).is_none(),
        );
        for (pages, class) in [
            (&found.trunks, PageClass::FreelistTrunk),
            (&found.leaves, PageClass::FreelistLeaf),
        ] {
            for p in pages {
                map.set_class(*p, class);
            }
        }
        s.freelist = found;
    }
    map.classify_orphan_overflow(db);
    // Record-level schema damage (malformed rows, invalid root pages) belongs to the
    // sqlite_schema tree; its walk findings are already there.
    if let Some(schema_tree) = s.trees.first_mut() {
        for f in &s.schema.findings {
            if !schema_tree.findings.contains(f) {
                schema_tree.findings.push(f.clone());
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Db;

    /// The catalog's fixtures of at most 2 MiB.
    fn small_fixtures() -> impl Iterator<Item = fixtures::Fixture> {
        fixtures::catalog()
            .into_iter()
            .filter(|f| f.bytes.len() <= 2 << 20)
    }

    /// Every `step`th byte from `from` changed (never to itself).
    fn overwrite(bytes: &mut [u8], from: usize, step: usize) {
        for (i, b) in bytes.iter_mut().enumerate().skip(from).step_by(step) {
            *b ^= (i % 255) as u8 | 1;
        }
    }

    /// The survey on two threads is the survey on one, to the last finding, on every
    /// catalog fixture whole and damaged: page 1 zeroed (the freelist then found by its
    /// trunks, after the maps are laid over each other), every fifth page zeroed, bytes
    /// overwritten all over.
    #[test]
    fn the_survey_on_two_threads_is_the_survey_on_one() {
        let mut compared = 0;
        for f in small_fixtures() {
            let page = f.options.page_size as usize;
            let mut variants = vec![f.bytes.clone()];
            let mut first = f.bytes.clone();
            first.get_mut(..page).into_iter().for_each(|p| p.fill(0));
            variants.push(first);
            let mut fifth = f.bytes.clone();
            for (i, p) in fifth.chunks_mut(page).enumerate() {
                if i % 5 == 4 {
                    p.fill(0);
                }
            }
            variants.push(fifth);
            let mut noisy = f.bytes.clone();
            overwrite(&mut noisy, 100, 997);
            variants.push(noisy);
            for bytes in &variants {
                let Ok(db) = Database::open(bytes) else {
                    continue;
                };
                let (mut one, mut two, mut classified) = (0u64, 0u64, 0u64);
                let a =
                    survey_with_schema(&db, read_schema(&db), SurveyChecks::All, &mut |n| one = n);
                let b = survey_on_two_threads(
                    &db,
                    read_schema(&db),
                    SurveyChecks::All,
                    &mut |n| two = n,
                    &mut |n| classified = n,
                );
                assert_eq!(format!("{a:?}"), format!("{b:?}"), "{}", f.name);
                assert!(one >= two.max(classified), "{}", f.name);
                compared += 1;
            }
        }
        assert!(compared > 40, "{compared}");
    }

    /// Each tree's record-size findings are those of its records' headers decoded whole,
    /// on every catalog fixture with the first serial type of every fifth record made one
    /// byte longer (a text or blob) and bytes overwritten all over: the survey sums each
    /// header's lengths without keeping its serial types.
    #[test]
    fn record_size_findings_are_those_of_the_decoded_headers() {
        let mut mismatches = 0;
        for f in small_fixtures() {
            let mut noisy = f.bytes.clone();
            let page = f.options.page_size as usize;
            let Ok(healthy) = Database::open(&f.bytes) else {
                continue;
            };
            let base = f.bytes.as_ptr() as usize;
            let mut longer = Vec::new();
            for t in &survey(&healthy).trees {
                for (n, item) in BtreeWalk::new(&healthy, t.root).enumerate() {
                    let Ok(TreeItem::Cell(cell)) = item else {
                        continue;
                    };
                    let Some(payload) = cell.cell.payload() else {
                        continue;
                    };
                    let header = usize::from(payload.local.first().copied().unwrap_or(0));
                    let text = payload
                        .local
                        .iter()
                        .take(header.min(0x7f))
                        .skip(1)
                        .position(|b| (12..126).contains(b));
                    if let Some(i) = text.filter(|_| n % 5 == 0) {
                        longer.push(payload.local.as_ptr() as usize - base + 1 + i);
                    }
                }
            }
            for at in longer {
                if let Some(b) = noisy.get_mut(at) {
                    *b += 2;
                }
            }
            overwrite(&mut noisy, 2 * page, 3331);
            let Ok(db) = Database::open(&noisy) else {
                continue;
            };
            let s = survey(&db);
            for t in &s.trees {
                let want: Vec<&Finding> = t
                    .findings
                    .iter()
                    .filter(|f| matches!(f, Finding::RecordSizeMismatch { .. }))
                    .collect();
                let mut got = Vec::new();
                for item in BtreeWalk::new(&db, t.root) {
                    let Ok(TreeItem::Cell(cell)) = item else {
                        continue;
                    };
                    let Some(payload) = cell.cell.payload() else {
                        continue;
                    };
                    let header = crate::record::parse_record_header(
                        payload.local,
                        payload.total_len,
                        cell.location,
                    );
                    if let Some(h) = header.ok().filter(|h| h.record_len() != payload.total_len) {
                        got.push(Finding::RecordSizeMismatch {
                            at: cell.location,
                            header_says: h.record_len(),
                            payload_len: payload.total_len,
                        });
                    }
                }
                assert_eq!(
                    want,
                    got.iter().collect::<Vec<_>>(),
                    "{} {}",
                    f.name,
                    t.name
                );
                mismatches += got.len();
            }
        }
        assert!(mismatches > 10, "{mismatches}");
    }

    #[test]
    fn healthy_fixture_pages_are_all_accounted_for() {
        let db = Db::named("agent-4096-autovacuum");
        let opened = Database::open(&db.bytes).unwrap();
        let s = survey(&opened);
        let counts: std::collections::BTreeMap<_, _> = s.page_map.counts().into_iter().collect();
        assert!(counts[&PageClass::Ptrmap] > 0);
        assert_eq!(
            counts[&PageClass::Zeroed] + counts[&PageClass::Unrecognised],
            0
        );
        assert_eq!(s.page_map.orphans().count(), 0);
    }

    /// With page 1 zeroed, the header's pointer to the freelist is lost; its trunk page is
    /// found by its content, and the pages it lists (a dropped table's, with their old
    /// cells) are free, not orphans of live tables. On a healthy file the header decides.
    #[test]
    fn a_freelist_whose_header_is_lost_is_found_by_its_trunk_pages() {
        let mut db = Db::named("agent-4096-utf8");
        let chain = fixtures::format::freelist(&db.bytes).unwrap();
        assert!(!chain.leaves.is_empty());
        let healthy = survey(&Database::open(&db.bytes).unwrap());
        assert!(!healthy.freelist.by_scan);
        db.bytes[..4096].fill(0);
        let s = survey(&Database::open(&db.bytes).unwrap());
        assert!(s.freelist.by_scan);
        let pages = |v: &[PageNo]| v.iter().map(|p| p.get()).collect::<Vec<u32>>();
        assert_eq!(pages(&s.freelist.trunks), chain.trunks);
        let mut leaves = pages(&s.freelist.leaves);
        let mut want = chain.leaves.clone();
        leaves.sort_unstable();
        want.sort_unstable();
        assert_eq!(leaves, want);
        for leaf in &s.freelist.leaves {
            assert_eq!(s.page_map.class(*leaf), Some(PageClass::FreelistLeaf));
        }
        assert!(s
            .page_map
            .orphans()
            .all(|(p, _)| !s.freelist.leaves.contains(&p)));
    }

    /// Random pages that look like trunks (small next pointers and counts, page numbers
    /// of the file) over a file whose header is lost: no panic, and what the scan takes is
    /// a freelist: chains that end in 0, leaves listed once, no page a tree holds.
    #[test]
    fn the_freelist_scan_takes_only_whole_chains_of_free_pages() {
        let base = Db::named("agent-512-utf8");
        let pages = (base.bytes.len() / 512) as u64;
        let mut rng = fixtures::prng::SplitMix64::new(0xf7ee);
        // At 512-byte pages the schema is found beyond page 1: trees hold pages.
        let mut owned = false;
        for _ in 0..60 {
            let mut bytes = base.bytes.clone();
            bytes[..512].fill(0);
            for _ in 0..rng.range(1, 6) {
                let at = rng.below(pages - 1) as usize * 512 + 512;
                let page = &mut bytes[at..at + 512];
                let next = if rng.one_in(2) {
                    0
                } else {
                    rng.below(pages + 3) as u32
                };
                let count = rng.below(12) as u32;
                page[..4].copy_from_slice(&next.to_be_bytes());
                page[4..8].copy_from_slice(&count.to_be_bytes());
                for i in 0..count as usize {
                    let leaf = rng.below(pages + 3) as u32;
                    page[8 + 4 * i..12 + 4 * i].copy_from_slice(&leaf.to_be_bytes());
                }
            }
            let db = Database::open(&bytes).unwrap();
            let mut schema = crate::schema::read_schema(&db);
            let skip = crate::types::PageSet::with_page_count(db.page_count());
            schema
                .rows
                .extend(crate::schema::scan_for_schema_rows(&db, &skip));
            let s = survey_with_schema(&db, schema, SurveyChecks::Structure, &mut |_| {});
            owned |= s
                .trees
                .iter()
                .any(|t| t.pages > 0 && t.root != PageNo::FIRST);
            let f = &s.freelist;
            let mut all: Vec<PageNo> = f.trunks.iter().chain(&f.leaves).copied().collect();
            let n = all.len();
            all.sort_unstable();
            all.dedup();
            assert_eq!(all.len(), n, "a page listed twice");
            for p in &all {
                assert_eq!(s.page_map.owner(*p), None, "page {p} is a tree's");
            }
            for t in &f.trunks {
                let next = u32::from_be_bytes(bytes[t.index() * 512..][..4].try_into().unwrap());
                assert!(next == 0 || f.trunks.iter().any(|x| x.get() == next));
            }
        }
        assert!(owned);
    }

    /// The chunked map answers as a plain array of pages would, through any order of
    /// claims and class changes, across chunk borders and a short last chunk; its runs
    /// are maximal and spell the array out.
    #[test]
    fn the_chunked_page_map_answers_as_an_array_of_pages() {
        let mut rng = fixtures::prng::SplitMix64::new(0xc4a7);
        for _ in 0..40 {
            let len = rng.range(1, 3 * CHUNK as u64 + 100) as usize;
            let mut want: Vec<(PageClass, u32)> = Vec::new();
            while want.len() < len {
                let class = PageClass::ALL[rng.below(11) as usize];
                let run = rng.range(1, 2 * CHUNK as u64) as usize;
                want.extend(std::iter::repeat_n((class, 0), run.min(len - want.len())));
            }
            let mut map = PageMap::from_classes(want.iter().map(|(c, _)| *c));
            for _ in 0..rng.below(300) {
                let i = rng.below(len as u64) as usize;
                let page = PageNo::new(i as u32 + 1).unwrap();
                let class = PageClass::ALL[rng.below(11) as usize];
                if rng.one_in(2) {
                    let owner = rng.below(4) as u32;
                    map.set(page, class, owner);
                    want[i] = (class, owner);
                } else {
                    map.set_class(page, class);
                    want[i].0 = class;
                }
            }
            assert_eq!(map.len(), len);
            for (i, w) in want.iter().enumerate() {
                assert_eq!(map.get(PageNo::new(i as u32 + 1).unwrap()), Some(*w));
            }
            assert_eq!(map.get(PageNo::new(len as u32 + 1).unwrap()), None);
            let orphans: Vec<u32> = map.orphans().map(|(p, _)| p.get()).collect();
            let want_orphans: Vec<u32> = (0..len)
                .filter(|i| want[*i].0.is_btree() && want[*i].1 == 0)
                .map(|i| i as u32 + 1)
                .collect();
            assert_eq!(orphans, want_orphans);
            for (class, n) in map.counts() {
                assert_eq!(n as usize, want.iter().filter(|w| w.0 == class).count());
            }
            let mut spelt = Vec::new();
            let mut before = None;
            for (first, pages, class, owner) in map.runs() {
                assert_eq!(first.get() as usize, spelt.len() + 1);
                let page = (class, owner.map_or(0, PageNo::get));
                assert_ne!(before, Some(page), "two runs that should be one");
                before = Some(page);
                spelt.extend(std::iter::repeat_n(page, pages as usize));
            }
            assert_eq!(spelt, want);
        }
    }

    #[test]
    fn page_reached_from_two_btrees() {
        let mut db = Db::named("agent-4096-utf8");
        let (sessions, messages) = (db.root("sessions"), db.root("messages"));
        let place = |name: &str| {
            db.fixture
                .schema
                .iter()
                .position(|e| e.name == name)
                .unwrap()
        };
        assert!(
            place("sessions") < place("messages"),
            "trees are walked in schema order: sessions claims its root first"
        );
        assert_eq!(
            db.walk("sessions").pages.all(),
            vec![sessions],
            "a lone root leaf"
        );
        db.set_u32(messages, 8, sessions); // messages' right-most pointer: sessions' root
        let opened = Database::open(&db.bytes).unwrap();
        assert_eq!(
            survey(&opened).findings,
            vec![Finding::PageInTwoTrees {
                page: PageNo::new(sessions).unwrap(),
                first_root: PageNo::new(sessions).unwrap(),
                second_root: PageNo::new(messages).unwrap()
            }]
        );
    }

    #[test]
    fn overflow_chain_runs_into_another_cells_chain() {
        let mut db = Db::named("agent-4096-utf8");
        let chains: Vec<Vec<u32>> = db
            .walk("messages")
            .chains
            .into_iter()
            .map(|c| c.pages)
            .filter(|p| p.len() >= 2)
            .collect();
        let (a, b) = (&chains[0], &chains[1]);
        // The second chain's first page now leads into the middle of the first chain.
        db.set_u32(b[0], 0, a[1]);
        let findings = db.findings();
        assert!(findings.iter().any(|f| matches!(
            f,
            Finding::OverflowIntoNonOverflowPage { page, class: PageClass::Overflow, .. } if page.get() == a[1]
        )));
    }
}
