//! The evidence file: validated, opened read-only, mapped. The one place the file map is made.

use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::run::Error;

/// The source database, mapped read-only.
pub struct Source {
    /// The path as given.
    pub path: PathBuf,
    map: Option<Mmap>,
}

impl Source {
    /// Validates `path` (exists, regular file, readable) and maps it read-only.
    pub fn open(path: &Path) -> Result<Source, Error> {
        let meta = std::fs::metadata(path).map_err(|e| Error::Source {
            path: path.to_owned(),
            source: e,
        })?;
        if meta.is_dir() {
            return Err(Error::NotAFile {
                path: path.to_owned(),
                what: "a directory",
            });
        }
        if !meta.is_file() {
            return Err(Error::NotAFile {
                path: path.to_owned(),
                what: "not a regular file",
            });
        }
        let file = File::open(path).map_err(|e| Error::Source {
            path: path.to_owned(),
            source: e,
        })?;
        if meta.len() == 0 {
            // A zero-length file cannot be mapped; it is simply empty.
            return Ok(Source {
                path: path.to_owned(),
                map: None,
            });
        }
        // SAFETY: the evidence file is opened read-only and mapped read-only; nothing in this
        // process writes to it, and the salvage procedure requires that nothing else writes
        // to the evidence while we run (a quarantined copy). Bytes changed underneath us
        // could only give wrong findings, never memory unsafety in `pager`, which treats
        // every byte as untrusted and checks every bound.
        #[allow(unsafe_code)]
        // reason: memory-mapping is the only way to read a 2 GB file at 1 GB/s without copying it
        let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::Source {
            path: path.to_owned(),
            source: e,
        })?;
        Ok(Source {
            path: path.to_owned(),
            map: Some(map),
        })
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or_default()
    }
}

/// The SHA-256 of `bytes`, in lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}
