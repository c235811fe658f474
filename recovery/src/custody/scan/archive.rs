//! A case's archives: a `.tar` (gzip'd too) is read as a stream, a `.zip` by its central
//! directory. Neither lets SQLite or the page reader map a member in place, so each
//! member is spooled into a private folder of the scan's output, and kept there only
//! where it is SQLite's (a database, a log or journal, a `-shm` beside one); every other
//! member is counted and removed as soon as it is read. The archive itself is hashed in
//! the same read (a tar), or once more (a zip, read out of order).

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use super::find::sniff;

/// What kind of archive a file is, by its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArchiveKind {
    /// A POSIX tar (`ustar` at byte 257).
    Tar,
    /// A gzip stream, read as a tar.
    TarGz,
    /// A zip archive.
    Zip,
}

/// The archive kind of the file at `path`; `None` for any other file.
pub fn archive_kind(path: &Path) -> Option<ArchiveKind> {
    let mut head = [0u8; 262];
    let n = File::open(path).and_then(|mut f| f.read(&mut head)).ok()?;
    let head = head.get(..n)?;
    if head.starts_with(&[0x1f, 0x8b]) {
        return Some(ArchiveKind::TarGz);
    }
    if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        return Some(ArchiveKind::Zip);
    }
    (head.get(257..262) == Some(b"ustar".as_slice())).then_some(ArchiveKind::Tar)
}

/// What spooling an archive found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Spooled {
    /// SHA-256 of the archive, hex.
    pub sha256: String,
    /// Members kept (SQLite's).
    pub kept: u64,
    /// Members that are not SQLite's, counted and removed.
    pub skipped: u64,
    /// Their bytes.
    pub skipped_bytes: u64,
    /// Members not spooled: links, devices, a path that leaves the archive's root
    /// (`../`, an absolute path), a member unreadable; each with why.
    pub refused: Vec<String>,
}

/// Spools every member of the archive at `path` into the folder `into` (created), under
/// its path in the archive.
pub fn spool(path: &Path, kind: ArchiveKind, into: &Path) -> std::io::Result<Spooled> {
    std::fs::create_dir_all(into)?;
    let mut out = Spooled::default();
    match kind {
        ArchiveKind::Tar | ArchiveKind::TarGz => {
            let mut hashing = Hashing {
                inner: BufReader::new(File::open(path)?),
                hash: Sha256::new(),
            };
            {
                let stream: Box<dyn Read + '_> = match kind {
                    ArchiveKind::TarGz => Box::new(flate2::read::MultiGzDecoder::new(&mut hashing)),
                    _ => Box::new(&mut hashing),
                };
                let mut archive = tar::Archive::new(stream);
                for member in archive.entries()? {
                    let mut member = member?;
                    let name = member.path()?.into_owned();
                    if !member.header().entry_type().is_file() {
                        if !member.header().entry_type().is_dir() {
                            out.refused
                                .push(format!("{}: not a regular file", name.display()));
                        }
                        continue;
                    }
                    let size = member.size();
                    keep_if_sqlite(&name, size, &mut member, into, &mut out)?;
                }
            }
            // The rest of the file (a tar's zero blocks past its end) is hashed too.
            std::io::copy(&mut hashing, &mut std::io::sink())?;
            out.sha256 = hex(&hashing.hash.finalize());
        }
        ArchiveKind::Zip => {
            let mut zip = zip::ZipArchive::new(BufReader::new(File::open(path)?))
                .map_err(std::io::Error::other)?;
            for i in 0..zip.len() {
                let mut member = match zip.by_index(i) {
                    Ok(m) => m,
                    Err(e) => {
                        out.refused.push(format!("member {i}: {e}"));
                        continue;
                    }
                };
                if !member.is_file() {
                    continue;
                }
                // A name that is not text is one bad member, named by its place.
                let name = match member.name() {
                    Ok(n) => PathBuf::from(n.as_ref()),
                    Err(e) => {
                        out.refused.push(format!("member {i}: {e}"));
                        continue;
                    }
                };
                let size = member.size();
                keep_if_sqlite(&name, size, &mut member, into, &mut out)?;
            }
            let mut file = File::open(path)?;
            let mut hash = Sha256::new();
            std::io::copy(&mut file, &mut HashWriter(&mut hash))?;
            out.sha256 = hex(&hash.finalize());
        }
    }
    Ok(out)
}

/// Writes one member under `into`, then keeps it only where it is SQLite's.
fn keep_if_sqlite(
    name: &Path,
    size: u64,
    member: &mut dyn Read,
    into: &Path,
    out: &mut Spooled,
) -> std::io::Result<()> {
    let Some(relative) = inside(name) else {
        out.refused.push(format!(
            "{}: its path leaves the archive's root",
            name.display()
        ));
        return Ok(());
    };
    let target = into.join(&relative);
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)?;
    }
    if std::fs::symlink_metadata(&target).is_ok() {
        out.refused
            .push(format!("{}: a second member of that path", name.display()));
        return Ok(());
    }
    let mut file = File::create_new(&target)?;
    std::io::copy(member, &mut file)?;
    drop(file);
    let companion = ["-wal", "-journal", "-shm"]
        .iter()
        .any(|s| relative.to_string_lossy().ends_with(s));
    if companion || sniff(&target, size)?.is_some() {
        out.kept += 1;
    } else {
        std::fs::remove_file(&target)?;
        out.skipped += 1;
        out.skipped_bytes += size;
    }
    Ok(())
}

/// A member's path made relative and kept inside the archive's root; `None` for one
/// that would leave it.
fn inside(name: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in name.components() {
        match c {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A reader that hashes what passes through it.
struct Hashing<R> {
    inner: R,
    hash: Sha256,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(buf.get(..n).unwrap_or_default());
        Ok(n)
    }
}

/// A writer into a hash.
struct HashWriter<'h>(&'h mut Sha256);

impl Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_never_leaves_the_spool() {
        assert_eq!(inside(Path::new("a/./b.db")), Some(PathBuf::from("a/b.db")));
        assert_eq!(inside(Path::new("../b.db")), None);
        assert_eq!(inside(Path::new("/etc/passwd")), None);
        assert_eq!(inside(Path::new("a/../../b")), None);
        assert_eq!(inside(Path::new(".")), None);
    }
}
