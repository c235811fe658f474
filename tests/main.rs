//! Workspace-level end-to-end tests: one binary, one module per subject. They run the real
//! `salvage` binary and the real `pager` on real files: databases built by SQLite through
//! rusqlite and damaged at byte level by `fixtures`, and the third-party Nemetz corpus.

mod corpus;
mod damage;
mod export;
mod fts;
mod golden;
mod hostile;
mod inspect;
mod nemetz;
mod partial;
mod placeholders;
mod readback;
mod recover;
mod wal;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The `salvage` binary under test.
pub fn salvage() -> Command {
    Command::new(env!("CARGO_BIN_EXE_salvage"))
}

/// Runs `salvage` with `args` and returns its output.
pub fn run_salvage(args: &[&std::ffi::OsStr]) -> std::io::Result<Output> {
    salvage().args(args).output()
}

/// A fresh scratch folder under the target dir, removed when dropped.
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let dir =
            Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }

    /// Every file name in the folder, sorted.
    pub fn listing(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
