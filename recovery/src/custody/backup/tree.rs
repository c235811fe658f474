//! What a backup copies: the source (one database file, or a folder such as a Chroma
//! persist directory), walked once before anything is created, every file classed as a
//! SQLite database (copied through SQLite), a database's sidecar (not copied: its committed
//! content is in the database's copy, and a live `-wal` beside a copy would be replayed
//! into it) or another file (copied byte for byte).

use std::path::{Path, PathBuf};

use crate::base::dbpath::DatabasePath;
use crate::base::error::Error;
use crate::base::paths::with_suffix;
use crate::custody::bundle::SIDECARS;

/// The first 16 bytes of every SQLite database file ("The Database Header": magic string).
const MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// One file of the source.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Where it is.
    pub path: PathBuf,
    /// Its path inside the backup folder, `/`-separated: `NAME` for a file source,
    /// `NAME/REL` for a file under a folder source.
    pub inside: String,
    /// It begins with the SQLite magic string.
    pub database: bool,
}

/// The source, walked.
#[derive(Clone, Debug)]
pub struct Tree {
    /// The source as given.
    pub path: PathBuf,
    /// What the backup copies: a database file with every symbolic link on the way
    /// resolved (SQLite keeps its `-wal` and `-shm` beside that file, not beside a link);
    /// a folder as given.
    pub source: PathBuf,
    /// The path as given, when it is a symbolic link to the database file `source`.
    pub link: Option<PathBuf>,
    /// Its file name: the backup holds it under this name.
    pub name: String,
    /// It is a folder (else one database file).
    pub folder: bool,
    /// Every folder under a folder source, relative to it, parents first, in the order of
    /// the files.
    pub folders: Vec<String>,
    /// Every file to copy: a folder's files in name order, then its folders' files.
    pub files: Vec<Entry>,
    /// The sidecars of databases under a folder source, relative to it: not copied.
    pub skipped: Vec<String>,
}

impl Tree {
    /// Walks the source at `path`: a SQLite database file, or a folder. Refused (nothing
    /// is created by the walk): a missing path, a file that is not a SQLite database, and
    /// anything under a folder that is neither a folder nor a regular file (a symbolic
    /// link, a socket) or whose name is not UTF-8.
    pub fn walk(path: &Path) -> Result<Tree, Error> {
        let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => refused(
                format!("`{}` does not exist", path.display()),
                "check the path: backup takes a database file, or a folder holding databases",
            ),
            // A loop of symbolic links, a path through a file: refused as for evidence.
            _ => crate::base::paths::check_regular_file(path)
                .err()
                .unwrap_or(Error::Source {
                    path: path.to_path_buf(),
                    source: e,
                }),
        })?;
        let name = source_name(path)?;
        let mut tree = Tree {
            path: path.to_path_buf(),
            source: path.to_path_buf(),
            link: None,
            name: name.clone(),
            folder: meta.is_dir(),
            folders: Vec::new(),
            files: Vec::new(),
            skipped: Vec::new(),
        };
        if meta.is_dir() {
            tree.walk_folder(path, "")?;
        } else {
            let db = DatabasePath::resolve(path)?;
            if !is_database(&db.file)? {
                return Err(refused(
                    format!("`{}` is not a SQLite database", path.display()),
                    "backup takes a SQLite database file, or a folder holding databases and other files",
                ));
            }
            tree.link = db.link().map(Path::to_path_buf);
            tree.files.push(Entry {
                path: db.file.clone(),
                inside: name,
                database: true,
            });
            tree.source = db.file;
        }
        Ok(tree)
    }

    /// The databases to copy.
    pub fn databases(&self) -> impl Iterator<Item = &Entry> {
        self.files.iter().filter(|f| f.database)
    }

    /// Walks the folder at `dir`, `rel` under the source.
    fn walk_folder(&mut self, dir: &Path, rel: &str) -> Result<(), Error> {
        let read = |e| Error::Source {
            path: dir.to_path_buf(),
            source: e,
        };
        let mut entries = std::fs::read_dir(dir)
            .map_err(read)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(read)?;
        entries.sort();
        let (mut here, mut below) = (Vec::new(), Vec::new());
        for path in entries {
            let file_name = path
                .file_name()
                .and_then(|n| n.to_str())
                .ok_or_else(|| {
                    refused(
                        format!("`{}` has a name that is not UTF-8", path.display()),
                        "rename it: a backup's manifest names every file in UTF-8",
                    )
                })?
                .to_owned();
            let child = if rel.is_empty() {
                file_name
            } else {
                format!("{rel}/{file_name}")
            };
            let kind = std::fs::symlink_metadata(&path)
                .map_err(|e| Error::Source {
                    path: path.clone(),
                    source: e,
                })?
                .file_type();
            if kind.is_dir() {
                below.push((path, child));
            } else if kind.is_file() {
                let database = is_database(&path)?;
                here.push(Entry {
                    inside: format!("{}/{child}", self.name),
                    path,
                    database,
                });
            } else {
                return Err(refused(
                    format!(
                        "`{}` is {}",
                        path.display(),
                        if kind.is_symlink() {
                            "a symbolic link"
                        } else {
                            "neither a file nor a folder"
                        }
                    ),
                    "a backup copies regular files and folders only: move it out of the folder, or back up the databases one by one",
                ));
            }
        }
        self.keep_files(here);
        for (path, child) in below {
            self.folders.push(child.clone());
            self.walk_folder(&path, &child)?;
        }
        Ok(())
    }

    /// Keeps the files of one folder, but for the sidecars of the databases among them.
    fn keep_files(&mut self, here: Vec<Entry>) {
        let sidecars: Vec<PathBuf> = here
            .iter()
            .filter(|f| f.database)
            .flat_map(|f| SIDECARS.iter().map(|suffix| with_suffix(&f.path, suffix)))
            .collect();
        for f in here {
            if sidecars.contains(&f.path) {
                let rel = f.inside.split_once('/').map_or("", |(_, rel)| rel);
                self.skipped.push(rel.to_owned());
            } else {
                self.files.push(f);
            }
        }
    }
}

/// The file name of the source, or of the folder it names (`.`).
fn source_name(path: &Path) -> Result<String, Error> {
    let absolute = std::path::absolute(path).map_err(|e| Error::Source {
        path: path.to_path_buf(),
        source: e,
    })?;
    // `absolute` keeps a trailing `.` or `..`; the folder's own name is wanted.
    let named = absolute.canonicalize().unwrap_or(absolute);
    named
        .file_name()
        .and_then(|n| n.to_str())
        .map(str::to_owned)
        .ok_or_else(|| {
            refused(
                format!(
                    "`{}` has no UTF-8 file name to name a backup by",
                    path.display()
                ),
                "back up a database file or a folder below the root, with a UTF-8 name",
            )
        })
}

/// The file begins with the SQLite magic string.
pub fn is_database(path: &Path) -> Result<bool, Error> {
    use std::io::Read;
    let source = |e| Error::Source {
        path: path.to_path_buf(),
        source: e,
    };
    let mut head = [0u8; 16];
    match std::fs::File::open(path)
        .map_err(source)?
        .read_exact(&mut head)
    {
        Ok(()) => Ok(&head == MAGIC),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(source(e)),
    }
}

/// A refusal.
pub fn refused(what: String, hint: &str) -> Error {
    Error::Refused {
        what,
        hint: hint.into(),
    }
}
