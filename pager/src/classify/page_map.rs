//! The page map: every page's class ([`PageClass`]) and the root of the b-tree that owns
//! it, as the survey settles them, kept in chunks of 4096 pages so that a file padded
//! with millions of zeroed pages costs a few bytes per chunk.
//!
//! ```text
//! pages   1 ........... 4096 | 4097 ........... 8192 | 8193 ...
//! chunk   Uniform(class,     | Mixed { classes: [..],| Uniform(zeroed, 0)
//!                 owner)     |         owners: [..] }|
//! ```
//!
//! A page has one owner: a tree that claims a page another tree already holds leaves it
//! with the first, and the claim is a [`Finding::PageInTwoTrees`].

use super::PageClass;
use crate::finding::Finding;
use crate::types::PageNo;

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

/// Every page's class and owning b-tree, in chunks of 4096 pages (`CHUNK`): a chunk whose
/// pages all agree (zeroed padding, a run of unclaimed pages) is one entry, so the map of a
/// file padded to any size stays small; pages of varied content cost 5 bytes each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageMap {
    /// Pages mapped.
    len: usize,
    chunks: Vec<Chunk>,
}

impl PageMap {
    /// A map of pages 1.. with these classes, owned by no tree.
    pub(super) fn from_classes(classes: impl IntoIterator<Item = PageClass>) -> PageMap {
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

    /// `pages` pages, each unrecognised and owned by none.
    pub(super) fn unrecognised(pages: u32) -> PageMap {
        PageMap::from_classes((1..=pages).map(|_| PageClass::Unrecognised))
    }

    /// The class and owner (0 for none) of `page`.
    pub(super) fn get(&self, page: PageNo) -> Option<(PageClass, u32)> {
        let i = page.index();
        if i >= self.len {
            return None;
        }
        self.chunks.get(i / CHUNK)?.at(i % CHUNK)
    }

    /// Sets the class and owner of `page`; a uniform chunk becomes page by page when they
    /// differ from its own.
    pub(super) fn set(&mut self, page: PageNo, class: PageClass, owner: u32) {
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
    pub(super) fn over(self, content: PageMap) -> PageMap {
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
    pub(super) fn set_class(&mut self, page: PageNo, class: PageClass) {
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
    pub(super) fn held(&self, page: PageNo) -> Option<PageClass> {
        let (class, owner) = self.get(page)?;
        let free = matches!(class, PageClass::FreelistTrunk | PageClass::FreelistLeaf);
        (owner != 0 || free).then_some(class)
    }

    /// Records that the b-tree rooted at `root` holds `page` as `class`. A page another
    /// tree already holds stays with it: the finding is recorded and `false` returned.
    pub(super) fn claim(
        &mut self,
        page: PageNo,
        class: PageClass,
        root: PageNo,
        findings: &mut Vec<Finding>,
    ) -> bool {
        let Some((held, owner)) = self.get(page) else {
            return false;
        };
        if owner == 0 && matches!(held, PageClass::FreelistTrunk | PageClass::FreelistLeaf) {
            findings.push(Finding::TreePageOnFreelist { page, root });
        }
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
