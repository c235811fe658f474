//! Finding the SQLite databases under a scan's sources: by their content, never their
//! names, each paired with the write-ahead log, rollback journal and shared-memory file
//! beside it; a log without its database is listed as such. Links are never followed,
//! and nothing is opened with SQLite.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// What a file found is, by its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// It starts with SQLite's header string.
    Database,
    /// Its header is destroyed, but its pages are b-tree pages of one page size.
    HeaderDestroyed,
    /// A write-ahead log (`-wal`) whose database is not beside it.
    LoneWal,
    /// A rollback journal (`-journal`) whose database is not beside it.
    LoneJournal,
}

/// A database (or a lone log) found under a source.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Found {
    /// Which source (its place in the scan's list).
    pub source: usize,
    /// The file.
    pub path: PathBuf,
    /// Its path inside its source (the file's name where the source is the file itself).
    pub relative: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// What it is.
    pub kind: Kind,
    /// The files beside it that belong to it (`-wal`, `-journal`, `-shm`), by name.
    pub sidecars: Vec<String>,
}

/// Everything found under the sources.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Discovery {
    /// The databases and lone logs, largest first (so that the last minutes of a parallel
    /// scan are not one big file on one core).
    pub found: Vec<Found>,
    /// Files that are not SQLite's, counted and skipped.
    pub skipped_files: u64,
    /// Their bytes.
    pub skipped_bytes: u64,
    /// Symbolic links, not followed.
    pub links: u64,
    /// What could not be read, and why.
    pub unreadable: Vec<(PathBuf, String)>,
}

/// SQLite's header string.
const MAGIC: &[u8; 16] = b"SQLite format 3\0";
/// A write-ahead log's first four bytes, big-endian checksums or little.
const WAL_MAGIC: [[u8; 4]; 2] = [[0x37, 0x7f, 0x06, 0x82], [0x37, 0x7f, 0x06, 0x83]];
/// A rollback journal's header.
const JOURNAL_MAGIC: [u8; 8] = [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7];
/// The names a database's companions take: its name and one of these.
const SIDECARS: [&str; 3] = ["-wal", "-journal", "-shm"];

/// Walks every source (a folder, recursively, or a single file) and finds the
/// databases in it.
pub fn discover(sources: &[PathBuf]) -> Discovery {
    let mut out = Discovery::default();
    let mut files: Vec<(usize, PathBuf, PathBuf, u64)> = Vec::new();
    for (i, source) in sources.iter().enumerate() {
        match std::fs::symlink_metadata(source) {
            Ok(m) if m.is_dir() => walk(i, source, Path::new(""), &mut files, &mut out),
            Ok(m) if m.is_file() => {
                let name = source.file_name().map(PathBuf::from).unwrap_or_default();
                files.push((i, source.clone(), name, m.len()));
            }
            Ok(_) => out.links += 1,
            Err(e) => out.unreadable.push((source.clone(), e.to_string())),
        }
    }
    let paths: BTreeSet<&Path> = files.iter().map(|(_, p, _, _)| p.as_path()).collect();
    let mut kinds: BTreeMap<PathBuf, Kind> = BTreeMap::new();
    for (_, path, _, size) in &files {
        match sniff(path, *size) {
            Ok(Some(kind)) => {
                kinds.insert(path.clone(), kind);
            }
            Ok(None) => {}
            Err(e) => out.unreadable.push((path.clone(), e.to_string())),
        }
    }
    let is_database =
        |p: &Path| matches!(kinds.get(p), Some(Kind::Database | Kind::HeaderDestroyed));
    for (source, path, relative, size) in &files {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let name = name.unwrap_or_default();
        // A companion of a database beside it belongs to that database.
        let owner = SIDECARS.iter().find_map(|s| {
            let stem = name.strip_suffix(s)?;
            let owner = path.with_file_name(stem);
            (paths.contains(owner.as_path()) && is_database(&owner)).then_some(owner)
        });
        if owner.is_some() {
            continue;
        }
        let kind = match kinds.get(path) {
            Some(k) => *k,
            // An empty or unrecognised `-shm`, or any other file.
            None => {
                out.skipped_files += 1;
                out.skipped_bytes += size;
                continue;
            }
        };
        let sidecars = match kind {
            Kind::Database | Kind::HeaderDestroyed => SIDECARS
                .iter()
                .map(|s| format!("{name}{s}"))
                .filter(|n| paths.contains(path.with_file_name(n).as_path()))
                .collect(),
            Kind::LoneWal | Kind::LoneJournal => Vec::new(),
        };
        out.found.push(Found {
            source: *source,
            path: path.clone(),
            relative: relative.clone(),
            size: *size,
            kind,
            sidecars,
        });
    }
    out.found
        .sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.path.cmp(&b.path)));
    out
}

/// Every regular file under `dir`, links counted and not followed.
fn walk(
    source: usize,
    dir: &Path,
    relative: &Path,
    files: &mut Vec<(usize, PathBuf, PathBuf, u64)>,
    out: &mut Discovery,
) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            out.unreadable.push((dir.to_path_buf(), e.to_string()));
            return;
        }
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        let rel = relative.join(entry.file_name());
        match entry.file_type() {
            Ok(t) if t.is_symlink() => out.links += 1,
            Ok(t) if t.is_dir() => walk(source, &path, &rel, files, out),
            Ok(t) if t.is_file() => match entry.metadata() {
                Ok(m) => files.push((source, path, rel, m.len())),
                Err(e) => out.unreadable.push((path, e.to_string())),
            },
            Ok(_) => {}
            Err(e) => out.unreadable.push((path, e.to_string())),
        }
    }
}

/// What the file is by its content: a database (by its header, or by its pages when the
/// header is destroyed), a log or journal (by theirs, named `-wal` or `-journal`), or
/// nothing of SQLite's.
pub(super) fn sniff(path: &Path, size: u64) -> std::io::Result<Option<Kind>> {
    if size < 32 {
        return Ok(None);
    }
    let mut file = File::open(path)?;
    // The header, and the b-tree page header of page 1 after it.
    let mut head = [0u8; 108];
    let n = read_up_to(&mut file, &mut head)?;
    let head = head.get(..n).unwrap_or_default();
    if head.starts_with(MAGIC) {
        return Ok(Some(Kind::Database));
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let name = name.unwrap_or_default();
    if WAL_MAGIC.iter().any(|m| head.starts_with(m)) {
        return Ok(Some(Kind::LoneWal));
    }
    // A journal's header is zeroed once its transaction is done: its name says it.
    if head.starts_with(&JOURNAL_MAGIC)
        || (name.ends_with("-journal") && head.iter().all(|b| *b == 0))
    {
        return Ok(Some(Kind::LoneJournal));
    }
    // Past the first page only where the first page could be a destroyed page 1: among
    // a phone's many thousand media and text files, one read each.
    if !size.is_multiple_of(512) || says_what_it_is(head) {
        return Ok(None);
    }
    Ok(btree_pages(&mut file, size)?.then_some(Kind::HeaderDestroyed))
}

/// Whether a file's first bytes say it is something other than SQLite's: the signature
/// of a common kind of file (images, media, archives, documents, property lists,
/// executables), or text. A page 1 whose header is zeroed, or overwritten with bytes of
/// no kind, does not; nor does one whose b-tree page header (at offset 100) survives.
fn says_what_it_is(head: &[u8]) -> bool {
    // A protocol buffer's fields are a guess, never a kind.
    if reconstruct::magic(head).is_some_and(|m| m != reconstruct::Magic::ProtobufLike) {
        return true;
    }
    let header = head.get(..100).unwrap_or(head);
    if header.iter().all(|b| *b == 0) {
        return false;
    }
    if let Some(page) = head
        .get(100..108)
        .and_then(|h| <&[u8; 8]>::try_from(h).ok())
    {
        if looks_like_btree(page, 65536) {
            return false;
        }
    }
    // Text: no control bytes but white space, and valid UTF-8 (a character cut at the
    // end of the sample aside).
    let text = header
        .iter()
        .all(|b| *b >= 0x20 || matches!(b, b'\t' | b'\n' | b'\r' | 0x0c));
    text && match std::str::from_utf8(header) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none(),
    }
}

/// Fills `buf` from the file's current place, short only at its end.
fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(buf.get_mut(n..).unwrap_or_default())? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Pages sampled, at most, to tell a file of b-tree pages.
const SAMPLED_PAGES: u64 = 64;

/// Whether the file is pages of one size (a power of two from 512 to 65536, two pages or
/// more), and, of its sampled pages that are not all zeros and do not begin with a page
/// number (an overflow or freelist page), at least half and two or more begin as b-tree
/// pages do: a page type (2, 5, 10, 13), a first free block and a cell
/// content area inside the page, a plausible number of cells, at most 60 fragmented
/// bytes. Pages of 8 KiB read as 4 KiB pass too, so the smallest size that passes is the
/// file's; a file of another kind passes next to never.
fn btree_pages(file: &mut File, size: u64) -> std::io::Result<bool> {
    let mut page_size = 512u64;
    while page_size <= 65536 {
        if size.is_multiple_of(page_size) && size / page_size >= 2 {
            let pages = size / page_size;
            let stride = (pages / SAMPLED_PAGES).max(1);
            let (mut btree, mut other) = (0u32, 0u32);
            let mut head = [0u8; 8];
            // Page 1 is skipped: its header is what is destroyed.
            let mut page = 1;
            while page < pages && btree + other < SAMPLED_PAGES as u32 {
                file.seek(SeekFrom::Start(page * page_size))?;
                let n = read_up_to(file, &mut head)?;
                if head.iter().all(|b| *b == 0) {
                    page += stride;
                    continue;
                }
                let first = u64::from(u32::from_be_bytes([head[0], head[1], head[2], head[3]]));
                if n == head.len() && looks_like_btree(&head, page_size) {
                    btree += 1;
                } else if first <= pages {
                    // An overflow or freelist page starts with a page number (or 0): no
                    // evidence either way.
                } else {
                    other += 1;
                }
                // Pages of another kind from the first: not this page size.
                if other >= 4 && btree == 0 {
                    break;
                }
                page += stride;
            }
            if btree >= 2 && btree >= other {
                return Ok(true);
            }
        }
        page_size *= 2;
    }
    Ok(false)
}

/// A b-tree page's first eight bytes, as SQLite writes them.
fn looks_like_btree(head: &[u8; 8], page_size: u64) -> bool {
    let [kind, f0, f1, c0, c1, a0, a1, frag] = *head;
    let u16_at = |a: u8, b: u8| u64::from(u16::from_be_bytes([a, b]));
    let freeblock = u16_at(f0, f1);
    let cells = u16_at(c0, c1);
    let content = match u16_at(a0, a1) {
        0 => 65536,
        c => c,
    };
    matches!(kind, 2 | 5 | 10 | 13)
        && freeblock < page_size
        && content <= page_size
        && content >= 8
        && cells * 2 < page_size
        && frag <= 60
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of `pages` pages of 4096 bytes whose pages after the first are table leaf
    /// pages, and whose first page is `first`.
    fn pages_after(first: &[u8], pages: usize) -> Vec<u8> {
        let mut bytes = vec![0u8; 4096 * pages];
        for page in bytes.chunks_mut(4096).skip(1) {
            page[..8].copy_from_slice(&[13, 0, 0, 0, 3, 0x0f, 0x00, 0]);
        }
        bytes[..first.len()].copy_from_slice(first);
        bytes
    }

    fn sniffed(name: &str, bytes: &[u8]) -> Option<Kind> {
        let dir = std::env::temp_dir().join(format!("salvage-sniff-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).ok();
        let path = dir.join(name);
        std::fs::write(&path, bytes).ok();
        let kind = sniff(&path, bytes.len() as u64).ok().flatten();
        std::fs::remove_dir_all(&dir).ok();
        kind
    }

    #[test]
    fn only_a_first_page_that_could_be_a_destroyed_page_one_is_read_past() {
        // Pages 2 on are b-tree pages in each: only the first page differs.
        let zeroed = pages_after(&[0; 100], 16);
        assert_eq!(sniffed("zeroed", &zeroed), Some(Kind::HeaderDestroyed));
        let mut leaf_header = [0x41u8; 108];
        leaf_header[100..].copy_from_slice(&[13, 0, 0, 0, 1, 0x0f, 0xc0, 0]);
        let kept_page_header = pages_after(&leaf_header, 16);
        assert_eq!(
            sniffed("kept", &kept_page_header),
            Some(Kind::HeaderDestroyed)
        );
        let noise: Vec<u8> = (0u32..4096)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        assert_eq!(
            sniffed("noise", &pages_after(&noise, 16)),
            Some(Kind::HeaderDestroyed)
        );
        // A JPEG, a text or a property list: one read of the first page, whatever follows.
        let text = "Meeting notes, 3 December: bring the disk images.\n".repeat(100);
        for (name, first) in [
            ("photo.jpg", &b"\xff\xd8\xff\xe0\0\x10JFIF\0"[..]),
            ("notes.txt", &text.as_bytes()[..4096]),
            ("prefs.plist", &b"bplist00\xd1\x01\x02"[..]),
            ("clip.mp4", &b"\0\0\0\x20ftypisom"[..]),
        ] {
            assert_eq!(sniffed(name, &pages_after(first, 16)), None, "{name}");
        }
    }

    #[test]
    fn a_btree_page_head_is_told_from_other_bytes() {
        assert!(looks_like_btree(&[13, 0, 0, 0, 3, 0x0f, 0x00, 0], 4096));
        assert!(looks_like_btree(&[5, 0, 0, 0, 1, 0, 0, 0], 65536));
        assert!(!looks_like_btree(&[13, 0, 0, 0, 3, 0x20, 0x00, 0], 4096));
        assert!(!looks_like_btree(&[1, 0, 0, 0, 3, 0x0f, 0x00, 0], 4096));
        assert!(!looks_like_btree(&[13, 0, 0, 0, 3, 0x0f, 0x00, 99], 4096));
    }
}
