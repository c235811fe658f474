//! Checking a bundle against its manifest. Every file the manifest lists is re-hashed as
//! the regular file it must be (a symbolic link is never followed), every file, link and
//! folder the manifest does not account for is named, and every field that can be checked
//! against the files is:
//!
//! | field | checked against |
//! |---|---|
//! | `kind` | the kinds salvage makes (`quarantine`, `repair-archive`, `backup`) |
//! | `command` | its subcommand word, for the kind (`quarantine`, `repair`, `backup`) |
//! | `case`, `examiner` | `--case`, `--examiner` in `command` |
//! | `source` | its file name is the database's (a quarantine, a repair's archive) |
//! | `created_utc` | the manifest's own modification time |
//! | `files[].path` | listed once, a regular file inside the bundle |
//! | `files[].role` | the file's name beside the database's, and its first bytes |
//! | `files[].mtime_utc` | the copy's modification time |
//! | `root` | a backup's only; its `folders` are the bundle's folders |
//! | the whole file | what salvage writes for those fields: no other field, no key twice |
//!
//! Times are compared to the second, and one second apart still agrees: a manifest says
//! whole seconds, and some file systems (FAT) keep times to two seconds. A bundle copied
//! must keep its files' times (`cp -a`, `rsync -a`). Bundles of format version 1 carry no
//! such times; their times are not compared.
//!
//! A manifest rewritten whole, its hashes and fields made to agree with changed files, is
//! a bundle like any other: only the manifest's own SHA-256, printed when the bundle was
//! made and kept apart from it (the case notes), tells ([`verify_anchored`]).

use std::collections::BTreeSet;
use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::time::SystemTime;

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{safe_relative, BackupRoot, Kind, Manifest, ManifestFile, Role, MANIFEST};
use crate::base::error::Error;
use crate::base::files::{hash_open, hex, utc};
use crate::report::manifest::not_a_manifest;

mod difference;

pub use difference::Difference;

/// The first four bytes of a write-ahead log ("WAL File Format": magic number), for
/// checksums over little-endian and big-endian words.
const WAL_MAGIC: [[u8; 4]; 2] = [[0x37, 0x7f, 0x06, 0x82], [0x37, 0x7f, 0x06, 0x83]];

/// The first eight bytes of a rollback journal's header ("The Rollback Journal": magic
/// number).
const JOURNAL_MAGIC: [u8; 8] = [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7];

/// The first manifest format version whose files carry the times `verify` compares.
const TIMED_SINCE: u32 = 2;

/// What checking a bundle found.
#[derive(Clone, Debug, Serialize)]
pub struct Verification {
    /// The manifest read (without any field salvage never writes).
    pub manifest: Manifest,
    /// The SHA-256 of `MANIFEST.json` as read, lower-case hex.
    pub manifest_sha256: String,
    /// Files that match it.
    pub matching: Vec<String>,
    /// Every difference: the manifest's own first, then its files in manifest order,
    /// then what it does not account for, by path.
    pub differences: Vec<Difference>,
}

impl Verification {
    /// Whether every file is as the manifest says, the manifest as salvage writes it, and
    /// nothing else is there.
    pub fn intact(&self) -> bool {
        self.differences.is_empty()
    }
}

/// Checks the bundle at `dir` against its manifest: [`verify_anchored`] without the
/// manifest's own hash.
pub fn verify(dir: &Path) -> Result<Verification, Error> {
    verify_anchored(dir, None)
}

/// Checks the bundle at `dir` against its manifest, and the manifest against
/// `manifest_sha256` when given (the hash recorded when the bundle was made): every file
/// it lists re-hashed, every field checked against the files (the module's table), and
/// every file, link and folder it does not account for named. Refused when `dir` is not
/// a bundle at all (not a folder, no manifest of its own, a manifest that is not JSON of
/// its fields).
pub fn verify_anchored(dir: &Path, manifest_sha256: Option<&str>) -> Result<Verification, Error> {
    check_bundle(dir)?;
    let read = ManifestRead::read(dir)?;
    let manifest = &read.manifest;
    let kind = Kind::parse(&manifest.kind);
    let mut check = Check {
        dir,
        manifest,
        kind,
        timed: manifest.format_version >= TIMED_SINCE,
        matching: Vec::new(),
        differences: Vec::new(),
    };
    if let Some(expected) = manifest_sha256 {
        if !expected.trim().eq_ignore_ascii_case(&read.sha256) {
            check.differences.push(Difference::ManifestChanged {
                expected_sha256: expected.trim().to_ascii_lowercase(),
                sha256: read.sha256.clone(),
            });
        }
    }
    check.manifest_itself(&read);
    check.fields();
    let mut seen = BTreeSet::new();
    for f in &manifest.files {
        if seen.insert(f.path.as_str()) {
            check.file(f);
        } else {
            check.differences.push(Difference::Duplicate {
                path: f.path.clone(),
            });
        }
    }
    check.contents()?;
    let (matching, differences) = (check.matching, check.differences);
    Ok(Verification {
        manifest: read.manifest,
        manifest_sha256: read.sha256,
        matching,
        differences,
    })
}

/// `MANIFEST.json` as read, from one open file: its bytes, their hash, its modification
/// time, and the manifest they hold without the fields salvage never writes.
struct ManifestRead {
    /// The bytes.
    bytes: Vec<u8>,
    /// Their SHA-256, lower-case hex.
    sha256: String,
    /// The file's modification time.
    modified: Option<SystemTime>,
    /// The manifest.
    manifest: Manifest,
    /// The fields salvage never writes, taken out of it: `name`, `files[N].name`,
    /// `root.name`.
    unknown: Vec<String>,
}

impl ManifestRead {
    /// Reads the manifest of the bundle at `dir`, never through a symbolic link.
    fn read(dir: &Path) -> Result<ManifestRead, Error> {
        use std::io::Read;
        let path = dir.join(MANIFEST);
        let io = |e| Error::Source {
            path: path.clone(),
            source: e,
        };
        let mut file = open_no_follow(&path).map_err(io)?;
        let modified = file.metadata().map_err(io)?.modified().ok();
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io)?;
        let mut value: Value =
            serde_json::from_slice(&bytes).map_err(|e| not_a_manifest(&path, e))?;
        let unknown = strip_unknown(&mut value);
        let manifest = serde_json::from_value(value).map_err(|e| not_a_manifest(&path, e))?;
        Ok(ManifestRead {
            sha256: hex(&Sha256::digest(&bytes)),
            bytes,
            modified,
            manifest,
            unknown,
        })
    }
}

/// Takes the fields salvage never writes out of a manifest's JSON, naming each.
fn strip_unknown(value: &mut Value) -> Vec<String> {
    let mut unknown = Vec::new();
    strip(value, fields_of::<Manifest>(), "", &mut unknown);
    if let Some(files) = value.get_mut("files").and_then(Value::as_array_mut) {
        for (n, file) in files.iter_mut().enumerate() {
            let at = format!("files[{n}].");
            strip(file, fields_of::<ManifestFile>(), &at, &mut unknown);
        }
    }
    if let Some(root) = value.get_mut("root") {
        strip(root, fields_of::<BackupRoot>(), "root.", &mut unknown);
    }
    unknown
}

/// Takes the keys not in `known` out of `value`, an object, naming each after `at`.
fn strip(value: &mut Value, known: &[&str], at: &str, unknown: &mut Vec<String>) {
    let Some(object) = value.as_object_mut() else {
        return;
    };
    let extra: Vec<String> = object
        .keys()
        .filter(|k| !known.contains(&k.as_str()))
        .cloned()
        .collect();
    for key in extra {
        object.remove(&key);
        unknown.push(format!("{at}{key}"));
    }
}

/// The field names `T`'s derived `Deserialize` reads: what it asks a deserializer for,
/// caught by one that answers nothing else. The manifest's structs deny every other.
fn fields_of<T: serde::de::DeserializeOwned>() -> &'static [&'static str] {
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(FieldNames(&mut fields));
    fields
}

/// A deserializer that only records the field names of the struct asked for.
struct FieldNames<'f>(&'f mut &'static [&'static str]);

impl<'de> serde::Deserializer<'de> for FieldNames<'_> {
    type Error = serde::de::value::Error;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(serde::de::Error::custom(
            "only a struct's field names are read",
        ))
    }

    fn deserialize_struct<V: serde::de::Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = fields;
        Err(serde::de::Error::custom("the field names are read"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// The checks of one bundle, and what they found.
struct Check<'b> {
    /// The bundle folder.
    dir: &'b Path,
    /// Its manifest.
    manifest: &'b Manifest,
    /// Its kind, when salvage makes it.
    kind: Option<Kind>,
    /// Its format carries times to compare.
    timed: bool,
    /// Files that match the manifest.
    matching: Vec<String>,
    /// What differs.
    differences: Vec<Difference>,
}

impl Check<'_> {
    /// The manifest file itself: fields salvage never writes, its form, its time.
    fn manifest_itself(&mut self, read: &ManifestRead) {
        self.differences
            .extend(read.unknown.iter().map(|field| Difference::UnknownField {
                field: field.clone(),
            }));
        // Written by `seal` as exactly this: anything else was written by something else.
        let as_written = serde_json::to_vec_pretty(self.manifest).ok();
        if read.unknown.is_empty() && as_written.as_deref() != Some(read.bytes.as_slice()) {
            self.differences.push(Difference::ManifestRewritten);
        }
        if self.timed {
            if let Some(modified) = read.modified {
                if !same_time(&self.manifest.created_utc, modified) {
                    self.differences.push(Difference::Created {
                        manifest: self.manifest.created_utc.clone(),
                        file: utc(modified),
                    });
                }
            }
        }
    }

    /// The manifest's fields against each other: format, kind, command, case and
    /// examiner, root, the database and the source.
    fn fields(&mut self) {
        let m = self.manifest;
        if m.format_version == 0 || m.format_version > super::FORMAT_VERSION {
            self.differences.push(Difference::UnknownFormat {
                format_version: m.format_version,
            });
        }
        let Some(kind) = self.kind else {
            self.differences.push(Difference::UnknownKind {
                named: m.kind.clone(),
            });
            return;
        };
        if !m.command.is_empty() {
            // The subcommand is the first word after the program that is not an option.
            let word = m.command.iter().skip(1).find(|a| !a.starts_with('-'));
            if word.map(String::as_str) != Some(kind.command()) {
                self.differences.push(Difference::CommandNotKind {
                    bundle: kind,
                    command: word.cloned(),
                });
            }
            for (field, said) in [("case", &m.case), ("examiner", &m.examiner)] {
                let given = option_value(&m.command, &format!("--{field}"));
                if given != *said {
                    self.differences.push(Difference::NotAsCommanded {
                        field,
                        manifest: said.clone(),
                        command: given,
                    });
                }
            }
        }
        match (kind, &m.root) {
            (Kind::Backup, None) => self.differences.push(Difference::NoRoot),
            (Kind::Quarantine | Kind::RepairArchive, Some(_)) => self
                .differences
                .push(Difference::UnexpectedRoot { bundle: kind }),
            _ => {}
        }
        if kind == Kind::Backup {
            return;
        }
        let databases: Vec<&ManifestFile> = m
            .files
            .iter()
            .filter(|f| Role::parse(&f.role) == Some(Role::Database))
            .collect();
        if databases.len() != 1 {
            self.differences.push(Difference::Databases {
                bundle: kind,
                count: databases.len(),
            });
        }
        if let Some(db) = databases.first() {
            let source = Path::new(&m.source)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if source != db.path {
                self.differences.push(Difference::SourceName {
                    source,
                    database: db.path.clone(),
                });
            }
        }
    }

    /// One file the manifest lists: a regular file with its hash, its role's name and
    /// first bytes, and its time.
    fn file(&mut self, f: &ManifestFile) {
        let path = f.path.clone();
        let Some(rel) = safe_relative(&f.path) else {
            self.differences.push(Difference::Missing {
                path,
                error: "the manifest names a path outside the bundle".into(),
            });
            return;
        };
        let at = self.dir.join(rel);
        let found = match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.is_symlink() => Err(Difference::Symlink { path }),
            Ok(meta) if !meta.is_file() => Err(Difference::NotAFile { path }),
            Ok(_) => read_regular(&at).map_err(|e| Difference::Missing {
                path,
                error: e.to_string(),
            }),
            Err(e) => Err(Difference::Missing {
                path,
                error: e.to_string(),
            }),
        };
        let found = match found {
            Ok(found) => found,
            Err(difference) => return self.differences.push(difference),
        };
        if found.hashed.size == f.size && found.hashed.sha256 == f.sha256 {
            self.matching.push(f.path.clone());
        } else {
            self.differences.push(Difference::Changed {
                path: f.path.clone(),
                expected_size: f.size,
                expected_sha256: f.sha256.clone(),
                size: found.hashed.size,
                sha256: found.hashed.sha256.clone(),
            });
        }
        self.role(f, &found.head);
        if found.links > 1 {
            self.differences.push(Difference::HardLinked {
                path: f.path.clone(),
                links: found.links,
            });
        }
        if let (true, Some(said), Some(modified)) = (self.timed, &f.mtime_utc, found.modified) {
            if !same_time(said, modified) {
                self.differences.push(Difference::Mtime {
                    path: f.path.clone(),
                    manifest: said.clone(),
                    file: utc(modified),
                });
            }
        }
    }

    /// A file's role against the bundle's kind, its name and its first bytes `head`.
    fn role(&mut self, f: &ManifestFile, head: &[u8]) {
        let path = f.path.clone();
        let Some(role) = Role::parse(&f.role) else {
            self.differences.push(Difference::UnknownRole {
                path,
                role: f.role.clone(),
            });
            return;
        };
        let out_of_place = match self.kind {
            Some(Kind::Backup) => role.suffix().is_some(),
            Some(Kind::Quarantine | Kind::RepairArchive) => role == Role::Other,
            None => false,
        };
        if let (true, Some(bundle)) = (out_of_place, self.kind) {
            self.differences.push(Difference::RoleNotInKind {
                path: path.clone(),
                role,
                bundle,
            });
        }
        // A sidecar lies beside its database under its name and suffix.
        if let (Some(suffix), Some(db)) = (role.suffix(), self.manifest.database()) {
            let expected = format!("{}{suffix}", db.path);
            if self.kind != Some(Kind::Backup) && f.path != expected {
                self.differences.push(Difference::RoleName {
                    path: path.clone(),
                    role,
                    expected,
                });
            }
        }
        let database = head.starts_with(pager::header::HEADER_STRING);
        let wal = WAL_MAGIC.iter().any(|m| head.starts_with(m));
        let log = wal || head.starts_with(&JOURNAL_MAGIC);
        // A backup's databases were copied through SQLite, and are whole; a quarantine or
        // an archive holds evidence byte for byte, damage included (a database whose
        // header is wiped, a log whose magic number is): there the role is contradicted
        // only by bytes that are positively another kind of file.
        let whole = self.kind == Some(Kind::Backup);
        let fits = match role {
            Role::Database if whole => head.is_empty() || database,
            Role::Database => !log,
            Role::Wal => head.is_empty() || wal || (!database && !head.starts_with(&JOURNAL_MAGIC)),
            // A backup copies every SQLite database through SQLite, as `database`.
            Role::Other => !database,
            Role::Shm | Role::Journal => true,
        };
        if !fits {
            self.differences
                .push(Difference::RoleContent { path, role });
        }
    }

    /// What the bundle folder holds that the manifest does not account for: files, links,
    /// folders; and a backup's folders that are not there.
    fn contents(&mut self) -> Result<(), Error> {
        let mut found = Contents::default();
        found.walk(self.dir, "").map_err(|e| Error::Source {
            path: self.dir.to_path_buf(),
            source: e,
        })?;
        let listed: BTreeSet<&str> = self
            .manifest
            .files
            .iter()
            .map(|f| f.path.as_str())
            .collect();
        let mut unaccounted: Vec<Difference> = Vec::new();
        for path in found.files.into_iter().chain(found.others) {
            if path != MANIFEST && !listed.contains(path.as_str()) {
                unaccounted.push(Difference::Unlisted { path });
            }
        }
        // A listed link is named with its file.
        for path in found.links {
            if !listed.contains(path.as_str()) {
                unaccounted.push(Difference::Symlink { path });
            }
        }
        let mut expected = BTreeSet::new();
        if let Some(root) = self.manifest.root.as_ref().filter(|r| r.folder) {
            expected.insert(root.name.clone());
            for folder in &root.folders {
                let path = format!("{}/{folder}", root.name);
                if !expected.insert(path.clone()) {
                    unaccounted.push(Difference::Duplicate { path });
                }
            }
        }
        let there: BTreeSet<String> = found.folders.into_iter().collect();
        for path in there.difference(&expected) {
            unaccounted.push(Difference::UnlistedFolder { path: path.clone() });
        }
        for path in expected.difference(&there) {
            unaccounted.push(Difference::MissingFolder { path: path.clone() });
        }
        unaccounted.sort_by(|a, b| path_of(a).cmp(path_of(b)));
        self.differences.extend(unaccounted);
        Ok(())
    }
}

/// The path a difference about the bundle's contents names.
fn path_of(difference: &Difference) -> &str {
    match difference {
        Difference::Unlisted { path }
        | Difference::Symlink { path }
        | Difference::Duplicate { path }
        | Difference::UnlistedFolder { path }
        | Difference::MissingFolder { path } => path,
        _ => "",
    }
}

/// What a bundle folder holds, as `/`-separated paths relative to it, never following a
/// symbolic link.
#[derive(Default)]
struct Contents {
    /// Regular files.
    files: Vec<String>,
    /// Folders.
    folders: Vec<String>,
    /// Symbolic links.
    links: Vec<String>,
    /// Anything else: pipes, sockets, devices.
    others: Vec<String>,
}

impl Contents {
    /// Walks the folder `dir`, at `rel` in the bundle (empty at its top).
    fn walk(&mut self, dir: &Path, rel: &str) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let kind = entry.file_type()?;
            if kind.is_dir() {
                self.walk(&entry.path(), &path)?;
                self.folders.push(path);
            } else if kind.is_symlink() {
                self.links.push(path);
            } else if kind.is_file() {
                self.files.push(path);
            } else {
                self.others.push(path);
            }
        }
        Ok(())
    }
}

/// A file of a bundle as read: its hash, its first bytes, its modification time.
struct Found {
    /// Its length and SHA-256.
    hashed: super::files::Copied,
    /// Its first 16 bytes (fewer when it is shorter).
    head: Vec<u8>,
    /// Its modification time.
    modified: Option<SystemTime>,
    /// How many names it has (hard links): 1 when the bundle's name is its only one.
    links: u64,
}

/// Reads the regular file at `path`, never through a symbolic link: opened once, so that
/// its time, first bytes and hash are of one file.
fn read_regular(path: &Path) -> std::io::Result<Found> {
    let file = open_no_follow(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut head = vec![0u8; 16];
    let mut got = 0;
    while let Some(rest) = head.get_mut(got..).filter(|r| !r.is_empty()) {
        match file.read_at(rest, got as u64)? {
            0 => break,
            n => got += n,
        }
    }
    head.truncate(got);
    use std::os::unix::fs::MetadataExt as _;
    Ok(Found {
        hashed: hash_open(file)?,
        head,
        modified: meta.modified().ok(),
        links: meta.nlink(),
    })
}

/// Opens the file at `path` to read, failing on a symbolic link instead of following it
/// (`O_NOFOLLOW`).
fn open_no_follow(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// The value given to the option `flag` (`--case X` or `--case=X`) in a command line; the
/// last one when given twice.
fn option_value(command: &[String], flag: &str) -> Option<String> {
    let mut value = None;
    let mut args = command.iter().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--" {
            break;
        }
        if arg == flag {
            value = args.next().cloned();
        } else if let Some(v) = arg.strip_prefix(flag).and_then(|v| v.strip_prefix('=')) {
            value = Some(v.to_owned());
        }
    }
    value
}

/// Whether the time `file` is the time `said` (a manifest's, to the second): the same
/// second, or one apart (a file system that keeps times to two seconds).
fn same_time(said: &str, file: SystemTime) -> bool {
    let Some(said) = crate::base::files::parse_utc(said) else {
        return false;
    };
    let second = std::time::Duration::from_secs(1);
    match file.duration_since(said) {
        // `file` is at or after `said`: in its second or the next.
        Ok(after) => after < 2 * second,
        Err(before) => before.duration() <= second,
    }
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
