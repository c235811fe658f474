//! The ways a bundle can differ from its manifest, or its manifest from what salvage
//! writes: each a variant with the facts, its sentence rendered by `Display`.

use serde::Serialize;

use crate::report::manifest::{Kind, Role, MANIFEST};

/// One way a bundle differs from its manifest, or its manifest from what salvage writes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
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
    /// The manifest's own SHA-256 is not the one recorded when the bundle was made
    /// (`--manifest-sha256`).
    ManifestChanged {
        /// The hash recorded.
        expected_sha256: String,
        /// The manifest's hash now.
        sha256: String,
    },
    /// The manifest holds a field salvage never writes.
    UnknownField {
        /// Where: `name`, `files[N].name` or `root.name`.
        field: String,
    },
    /// The manifest is not as salvage writes its fields: a key given twice, keys in
    /// another order, the text laid out again.
    ManifestRewritten,
    /// The manifest's format version is not one salvage writes.
    UnknownFormat {
        /// The version it says.
        format_version: u32,
    },
    /// The manifest's kind is not one salvage makes.
    UnknownKind {
        /// The kind it says.
        named: String,
    },
    /// The manifest's command is not the one that makes a bundle of its kind.
    CommandNotKind {
        /// The kind the manifest says.
        bundle: Kind,
        /// The command's subcommand word, if it has one.
        command: Option<String>,
    },
    /// The manifest's `case` or `examiner` is not what its command gave.
    NotAsCommanded {
        /// `case` or `examiner`.
        field: &'static str,
        /// What the manifest says.
        manifest: Option<String>,
        /// What the command line gave (`--case`, `--examiner`).
        command: Option<String>,
    },
    /// A backup's manifest without `root`.
    NoRoot,
    /// A manifest with a `root`, which only a backup's has.
    UnexpectedRoot {
        /// The kind the manifest says.
        bundle: Kind,
    },
    /// A quarantine's or repair archive's manifest that lists no database or several.
    Databases {
        /// The kind the manifest says.
        bundle: Kind,
        /// How many files it lists as `database`.
        count: usize,
    },
    /// The source's file name is not the name of the database copied.
    SourceName {
        /// The source's file name.
        source: String,
        /// The database's path in the bundle.
        database: String,
    },
    /// A path the manifest lists twice (a file, or a backup's folder).
    Duplicate {
        /// The path.
        path: String,
    },
    /// A symbolic link in the bundle, listed or not: never followed.
    Symlink {
        /// Its path in the bundle.
        path: String,
    },
    /// A file the manifest lists that is not a regular file (a folder, a pipe).
    NotAFile {
        /// Its path in the bundle.
        path: String,
    },
    /// A folder in the bundle the manifest does not account for.
    UnlistedFolder {
        /// Its path in the bundle.
        path: String,
    },
    /// A folder a backup's manifest lists that is not there.
    MissingFolder {
        /// Its path in the bundle.
        path: String,
    },
    /// A file whose role salvage never writes.
    UnknownRole {
        /// Its path in the bundle.
        path: String,
        /// The role the manifest says.
        role: String,
    },
    /// A sidecar not named after its database (`DB-wal`, `DB-shm`, `DB-journal`).
    RoleName {
        /// Its path in the bundle.
        path: String,
        /// The role the manifest says.
        role: Role,
        /// The name that role has beside the bundle's database.
        expected: String,
    },
    /// A file with another name besides its own in the bundle (a hard link): whatever
    /// writes through that name changes the bundle's file, and the other name may be a
    /// file outside the bundle put in its place.
    HardLinked {
        /// Its path in the bundle.
        path: String,
        /// How many names it has.
        links: u64,
    },
    /// A file whose first bytes are another kind's than its role's: a backup's database
    /// that does not begin with the SQLite header string; a quarantined or archived
    /// database that begins as a log, or a log that begins as a database or a journal
    /// (damaged evidence that is neither stays what its manifest says); a backup's other
    /// file that is a SQLite database.
    RoleContent {
        /// Its path in the bundle.
        path: String,
        /// The role the manifest says.
        role: Role,
    },
    /// A role a bundle of this kind never holds: a sidecar in a backup, another file in a
    /// quarantine or repair archive.
    RoleNotInKind {
        /// Its path in the bundle.
        path: String,
        /// The role the manifest says.
        role: Role,
        /// The kind the manifest says.
        bundle: Kind,
    },
    /// A copy's modification time is not the one the manifest says its original had.
    Mtime {
        /// Its path in the bundle.
        path: String,
        /// The manifest's `mtime_utc`.
        manifest: String,
        /// The copy's modification time, UTC.
        file: String,
    },
    /// The manifest's own modification time is not its `created_utc`.
    Created {
        /// The manifest's `created_utc`.
        manifest: String,
        /// The manifest file's modification time, UTC.
        file: String,
    },
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let or_none = |v: &Option<String>| v.as_ref().map_or("none".into(), |v| format!("`{v}`"));
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
            Difference::ManifestChanged {
                expected_sha256,
                sha256,
            } => write!(
                f,
                "`{MANIFEST}` is not the manifest recorded: SHA-256 {sha256}; recorded {expected_sha256}"
            ),
            Difference::UnknownField { field } => {
                write!(f, "the manifest holds a field salvage never writes: `{field}`")
            }
            Difference::ManifestRewritten => write!(
                f,
                "`{MANIFEST}` is not as salvage writes it: a key given twice, keys reordered or the text laid out again"
            ),
            Difference::UnknownFormat { format_version } => write!(
                f,
                "the manifest's format version is not one salvage writes: {format_version}"
            ),
            Difference::UnknownKind { named } => {
                write!(f, "the manifest's kind is not one salvage makes: `{named}`")
            }
            Difference::CommandNotKind { bundle, command } => write!(
                f,
                "the manifest's command is not `salvage {}`, which makes a {} bundle: {}",
                bundle.command(),
                bundle.name(),
                or_none(command)
            ),
            Difference::NotAsCommanded {
                field,
                manifest,
                command,
            } => write!(
                f,
                "the manifest's {field} is not the one its command gave: {}; `--{field}` gave {}",
                or_none(manifest),
                or_none(command)
            ),
            Difference::NoRoot => write!(f, "the manifest of a backup has no `root`"),
            Difference::UnexpectedRoot { bundle } => write!(
                f,
                "the manifest of a {} bundle has a `root`, which only a backup has",
                bundle.name()
            ),
            Difference::Databases { bundle, count } => write!(
                f,
                "the manifest of a {} bundle lists {count} databases; such a bundle holds one",
                bundle.name()
            ),
            Difference::SourceName { source, database } => write!(
                f,
                "the manifest's source is not the database copied: `{source}`; the database is `{database}`"
            ),
            Difference::Duplicate { path } => write!(f, "`{path}` is listed twice"),
            Difference::Symlink { path } => {
                write!(f, "`{path}` is a symbolic link, never followed")
            }
            Difference::NotAFile { path } => write!(f, "`{path}` is not a regular file"),
            Difference::UnlistedFolder { path } => {
                write!(f, "the folder `{path}` is not in the manifest")
            }
            Difference::MissingFolder { path } => write!(f, "the folder `{path}` is missing"),
            Difference::UnknownRole { path, role } => {
                write!(f, "`{path}` has a role salvage never writes: `{role}`")
            }
            Difference::RoleName {
                path,
                role,
                expected,
            } => write!(
                f,
                "`{path}` is listed as the {} but is not named as its database's: `{expected}`",
                role.name()
            ),
            Difference::HardLinked { path, links } => write!(
                f,
                "`{path}` has {links} names (hard links): another name outside the bundle reaches the same file"
            ),
            Difference::RoleContent { path, role } => match role {
                Role::Database => write!(
                    f,
                    "`{path}` is listed as the database but does not begin with the SQLite header string"
                ),
                Role::Wal => write!(
                    f,
                    "`{path}` is listed as the wal but does not begin with a write-ahead log's magic number"
                ),
                _ => write!(
                    f,
                    "`{path}` is listed as {} but is a SQLite database, which a backup lists as database",
                    role.name()
                ),
            },
            Difference::RoleNotInKind { path, role, bundle } => write!(
                f,
                "`{path}` is listed as {}, which a {} bundle never holds",
                role.name(),
                bundle.name()
            ),
            Difference::Mtime {
                path,
                manifest,
                file,
            } => write!(
                f,
                "`{path}` was modified at {file}; the manifest says its original was at {manifest}"
            ),
            Difference::Created { manifest, file } => write!(
                f,
                "`{MANIFEST}` was modified at {file}; it says it was made at {manifest}"
            ),
        }
    }
}
