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
