//! Finding the SQLite databases under a scan's sources: by their content, never their
//! names, each paired with the write-ahead log, rollback journal and shared-memory file
//! beside it; a log without its database is listed as such. Links are never followed,
//! and nothing is opened with SQLite.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Serialize;

/// What a file found is, by its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
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
#[derive(Clone, Debug, PartialEq, Eq)]
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
    let mut head = [0u8; 100];
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
    Ok(btree_pages(&mut file, size)?.then_some(Kind::HeaderDestroyed))
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

    #[test]
    fn a_btree_page_head_is_told_from_other_bytes() {
        assert!(looks_like_btree(&[13, 0, 0, 0, 3, 0x0f, 0x00, 0], 4096));
        assert!(looks_like_btree(&[5, 0, 0, 0, 1, 0, 0, 0], 65536));
        assert!(!looks_like_btree(&[13, 0, 0, 0, 3, 0x20, 0x00, 0], 4096));
        assert!(!looks_like_btree(&[1, 0, 0, 0, 3, 0x0f, 0x00, 0], 4096));
        assert!(!looks_like_btree(&[13, 0, 0, 0, 3, 0x0f, 0x00, 99], 4096));
    }
}
