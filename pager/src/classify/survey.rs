//! The survey of the whole file: every structure that claims pages walked, each page it
//! reaches classified by its role, then every page no walk reached classified by its
//! content, in file order (a walk reads each page of a tree already: a pass over the whole
//! file would read each a second time, from the disk again when the file is larger than
//! the page cache):
//!
//! - the freelist from the header ("The Freelist"), its trunk and leaf pages;
//! - `sqlite_schema` from page 1, then every table and index of the schema with a root
//!   page ("B-tree Pages", "Storage Of The SQL Database Schema"): each page a tree reaches
//!   is owned by it, and the overflow chains of its cells ("Cell Payload Overflow Pages")
//!   too; a page reached twice is a finding, and stays with its first tree;
//! - then what needs every page's class by content: a freelist whose header pointer is
//!   lost found by its trunk pages, and the overflow chains of orphan b-tree pages.
//!
//! Roles found by walking override what the content suggests. B-tree pages that no tree
//! reaches are orphans ([`PageMap::orphans`]), the raw material of later recovery.

use std::cell::Cell;

use super::page_map::PageMap;
use super::{classify_by_content, PageClass};
use crate::database::Database;
use crate::finding::Finding;
use crate::freelist::{read_freelist, Freelist};
use crate::record::described_record_len;
use crate::schema::{read_schema, Schema, SchemaKind};
use crate::types::PageNo;
use crate::walk::{BtreeWalk, LostChild, TreeItem};

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
    /// The largest payload of its cells, in bytes, as far as the cell and its overflow
    /// chain hold it (no value it holds is longer; a size field alone says nothing).
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

/// [`survey`], calling `observe` with the pages it has read so far every
/// [`OBSERVE_EVERY`] pages (the tree walks, then the pages they did not reach), and once
/// at its end with all it read, so that a caller can show progress. (What the reads map
/// of a mapped file is counted by the database's own observer, [`Database::observed`].)
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
    let total = Cell::new(0);
    let survey = {
        let mut tick = counting(observe, &total);
        let held = PageMap::unrecognised(db.page_count());
        let mut walked = walk_structures(db, schema, all, held, &mut tick);
        // A page a structure holds has its class from the walk, which read it: only the
        // pages no walk reached are read for their content, in file order.
        let content = classify_untouched(db, &walked.page_map, &mut tick);
        walked.page_map = walked.page_map.over(content);
        settled(db, walked, &mut tick)
    };
    observe(total.get());
    survey
}

/// A tick per page read that calls `observe` with the pages read every [`OBSERVE_EVERY`]
/// pages. `total` holds the pages read, for the survey's last call once every page is
/// read.
fn counting<'o, F: FnMut(u64) + ?Sized>(
    observe: &'o mut F,
    total: &'o Cell<u64>,
) -> impl FnMut(PageNo) + 'o {
    move |_| {
        let read = total.get() + 1;
        total.set(read);
        if read.is_multiple_of(OBSERVE_EVERY) {
            observe(read);
        }
    }
}

/// The pages `walked` leaves untouched (unrecognised, owned by none: those its classes
/// laid over by [`PageMap::over`] do not hide) classified by their content, the others
/// left unrecognised: a walk reads every page of a tree already, and a classification
/// of the whole file would read each of them a second time (on a file larger than the
/// page cache, from the disk again).
fn classify_untouched(
    db: &Database<'_>,
    walked: &PageMap,
    tick: &mut dyn FnMut(PageNo),
) -> PageMap {
    PageMap::from_classes((1..=db.page_count()).map(|i| {
        PageNo::new(i)
            .filter(|p| walked.get(*p) == Some((PageClass::Unrecognised, 0)))
            .map_or(PageClass::Unrecognised, |p| {
                tick(p);
                classify_by_content(db, p)
            })
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
    tick: &mut dyn FnMut(PageNo),
) -> Survey {
    let mut map = map;
    let mut findings = Vec::new();

    let freelist = read_freelist(db);
    // The trunks were read for the pages they list; the leaves are only listed.
    for p in &freelist.trunks {
        tick(*p);
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
                    tick(p.page);
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
                            tick(*p);
                            if map.claim(*p, PageClass::Overflow, root, &mut findings) {
                                t.overflow_pages += 1;
                            }
                        }
                        t.findings.extend(chain.finding);
                        // What the cell and its chain hold, not what its size field says:
                        // one damaged varint must not claim a gigabyte.
                        let held = payload.local.len() as u64
                            + chain.pages.len() as u64 * (db.usable_size() as u64 - 4);
                        t.max_payload = t.max_payload.max(payload.total_len.min(held));
                    } else {
                        t.max_payload = t.max_payload.max(payload.total_len);
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

/// The walked survey finished over a map that holds, for every page no walk reached, its
/// class by content too. `tick` is called for each page read.
fn settled(db: &Database<'_>, walked: Survey, tick: &mut dyn FnMut(PageNo)) -> Survey {
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
    map.classify_orphan_overflow(db, tick);
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

impl PageMap {
    /// Follows the overflow chains of the cells on orphan b-tree pages, so that the pages
    /// of an orphaned subtree's payloads are known as overflow pages (owned by no tree)
    /// rather than left unrecognised. Chains stop at any page already held. `tick` is
    /// called for each page read.
    fn classify_orphan_overflow(&mut self, db: &Database<'_>, tick: &mut dyn FnMut(PageNo)) {
        let orphans: Vec<PageNo> = self.orphans().map(|(p, _)| p).collect();
        for no in orphans {
            tick(no);
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
                    tick(p);
                    self.set_class(p, PageClass::Overflow);
                }
            }
        }
    }

    /// `Some(Overflow)` for a page already marked as an orphan's overflow page.
    fn orphan_overflow(&self, page: PageNo) -> Option<PageClass> {
        (self.get(page)? == (PageClass::Overflow, 0)).then_some(PageClass::Overflow)
    }
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

    /// A page a tree holds is read by its walk, not once more for its content: on every
    /// whole catalog fixture the survey reads no more pages than the file has (the pass
    /// over every page before the walks read a healthy file twice).
    #[test]
    fn a_healthy_file_is_read_once() {
        let mut surveyed = 0;
        for f in small_fixtures() {
            let Ok(db) = Database::open(&f.bytes) else {
                continue;
            };
            let mut read = 0u64;
            let s = survey_with_schema(&db, read_schema(&db), SurveyChecks::Structure, &mut |n| {
                read = n
            });
            if s.page_map.orphans().next().is_some() {
                continue;
            }
            // The survey's last call tells every page read.
            assert!(
                read <= u64::from(db.page_count()),
                "{}: {read} reads",
                f.name
            );
            surveyed += 1;
        }
        assert!(surveyed > 10, "{surveyed}");
    }

    /// The survey is the one that classified every page by its content before the walks,
    /// to the last finding, on every catalog fixture whole and damaged: page 1 zeroed
    /// (the freelist then found by its trunks among the untouched pages), every fifth
    /// page zeroed, bytes overwritten all over. It reads fewer pages.
    #[test]
    fn the_survey_is_the_one_that_classified_every_page_first() {
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
                let mut read = 0u64;
                let a =
                    survey_with_schema(&db, read_schema(&db), SurveyChecks::All, &mut |n| read = n);
                let mut earlier = 0u64;
                let mut tick = |_: PageNo| earlier += 1;
                // Every page classified by its content first, as the survey did.
                let map = PageMap::from_classes((1..=db.page_count()).map(|i| {
                    PageNo::new(i).map_or(PageClass::Unrecognised, |p| {
                        tick(p);
                        classify_by_content(&db, p)
                    })
                }));
                let walked = walk_structures(&db, read_schema(&db), true, map, &mut tick);
                let b = settled(&db, walked, &mut tick);
                // The maps page by page (two maps of the same pages may hold them in
                // chunks of other forms), then everything else.
                let runs = |s: &Survey| s.page_map.runs().collect::<Vec<_>>();
                assert_eq!(runs(&a), runs(&b), "{}", f.name);
                let rest = |s: Survey| {
                    let Survey {
                        page_map: _,
                        schema,
                        trees,
                        freelist,
                        findings,
                    } = s;
                    format!("{schema:?} {trees:?} {freelist:?} {findings:?}")
                };
                assert_eq!(rest(a), rest(b), "{}", f.name);
                assert!(read <= earlier, "{}", f.name);
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
