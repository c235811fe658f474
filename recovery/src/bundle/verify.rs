//! Checking a bundle against its manifest: every file it lists re-hashed, every file it
//! does not list named.

use std::path::Path;

use serde::Serialize;

use super::files::hash_file;
use super::{safe_relative, Manifest, MANIFEST};
use crate::error::Error;

/// One way a bundle's files differ from its manifest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Difference {
    /// A file the manifest lists is not there (or cannot be read).
    Missing {
        /// Its path in the bundle.
        path: String,
        /// Why it cannot be read.
        error: String,
    },
    /// A file's length or hash is not the manifest's.
    Changed {
        /// Its path in the bundle.
        path: String,
        /// The manifest's length and hash.
        expected_size: u64,
        /// The manifest's hash.
        expected_sha256: String,
        /// The length now.
        size: u64,
        /// The hash now.
        sha256: String,
    },
    /// A file in the bundle the manifest does not list.
    Unlisted {
        /// Its path in the bundle.
        path: String,
    },
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Difference::Missing { path, error } => write!(f, "`{path}` is missing: {error}"),
            Difference::Changed {
                path,
                expected_size,
                expected_sha256,
                size,
                sha256,
            } => write!(
                f,
                "`{path}` differs: {size} bytes, SHA-256 {sha256}; the manifest says {expected_size} bytes, {expected_sha256}"
            ),
            Difference::Unlisted { path } => write!(f, "`{path}` is not in the manifest"),
        }
    }
}

/// What re-hashing a bundle found.
#[derive(Clone, Debug, Serialize)]
pub struct Verification {
    /// The manifest read.
    pub manifest: Manifest,
    /// Files that match it.
    pub matching: Vec<String>,
    /// Every difference, in manifest order, then unlisted files by name.
    pub differences: Vec<Difference>,
}

impl Verification {
    /// Whether every file is as the manifest says and nothing else is there.
    pub fn intact(&self) -> bool {
        self.differences.is_empty()
    }
}

/// Re-hashes every file the manifest of the bundle at `dir` lists, and lists every file
/// there that it does not.
pub fn verify(dir: &Path) -> Result<Verification, Error> {
    check_bundle(dir)?;
    let manifest = Manifest::read(dir)?;
    let (mut matching, mut differences) = (Vec::new(), Vec::new());
    for f in &manifest.files {
        let Some(rel) = safe_relative(&f.path) else {
            differences.push(Difference::Missing {
                path: f.path.clone(),
                error: "the manifest names a path outside the bundle".into(),
            });
            continue;
        };
        match hash_file(&dir.join(rel)) {
            Err(e) => differences.push(Difference::Missing {
                path: f.path.clone(),
                error: e.to_string(),
            }),
            Ok(now) if now.size == f.size && now.sha256 == f.sha256 => {
                matching.push(f.path.clone())
            }
            Ok(now) => differences.push(Difference::Changed {
                path: f.path.clone(),
                expected_size: f.size,
                expected_sha256: f.sha256.clone(),
                size: now.size,
                sha256: now.sha256,
            }),
        }
    }
    let mut unlisted: Vec<String> = Vec::new();
    list_files(dir, dir, &mut unlisted).map_err(|e| Error::Source {
        path: dir.to_path_buf(),
        source: e,
    })?;
    unlisted.sort();
    differences.extend(
        unlisted
            .into_iter()
            .filter(|p| p != MANIFEST && !manifest.files.iter().any(|f| &f.path == p))
            .map(|path| Difference::Unlisted { path }),
    );
    Ok(Verification {
        manifest,
        matching,
        differences,
    })
}

/// Every file under `dir`, as `/`-separated paths relative to `root`.
fn list_files(root: &Path, dir: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            list_files(root, &path, out)?;
        } else if let Ok(rel) = path.strip_prefix(root) {
            out.push(
                rel.components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/"),
            );
        }
    }
    Ok(())
}

/// Refuses `dir` when it is not a bundle at all: nothing there, a file, a loop of symbolic
/// links, or a folder without a manifest of its own (a regular file, not a link, which
/// is never followed). `dir` itself may be given by a link to the folder.
fn check_bundle(dir: &Path) -> Result<(), Error> {
    let not_a_bundle = |why: &str| {
        Error::Refused {
        what: format!("`{}` is not a bundle: {why}", dir.display()),
        hint: "a bundle is a folder made by `salvage quarantine`, `salvage backup` or a repair (its archive), holding MANIFEST.json".into(),
    }
    };
    let meta = std::fs::metadata(dir).map_err(|e| match e.raw_os_error() {
        _ if e.kind() == std::io::ErrorKind::NotFound => not_a_bundle("nothing is there"),
        Some(libc::ELOOP) => not_a_bundle("it is a loop of symbolic links"),
        Some(libc::ENOTDIR) => not_a_bundle("a path through something that is not a folder"),
        _ => Error::Source {
            path: dir.to_path_buf(),
            source: e,
        },
    })?;
    if !meta.is_dir() {
        return Err(not_a_bundle(if meta.is_file() {
            "it is a file, not a folder"
        } else {
            "it is not a folder"
        }));
    }
    let manifest = dir.join(MANIFEST);
    match std::fs::symlink_metadata(&manifest) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(m) if m.is_symlink() => Err(not_a_bundle(
            "its MANIFEST.json is a symbolic link, which verify never follows",
        )),
        Ok(_) => Err(not_a_bundle("its MANIFEST.json is not a file")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(not_a_bundle("it holds no MANIFEST.json"))
        }
        Err(e) => Err(Error::Source {
            path: manifest,
            source: e,
        }),
    }
}
