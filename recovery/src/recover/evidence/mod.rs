//! The first stage: the evidence. The source, and the write-ahead log and rollback journal
//! read with it, are mapped read-only and hashed; the database is opened as SQLite would
//! open it (a hot journal rolled back, then the log's committed frames read over it), all
//! in memory; the schema is read from page 1, completed by a scan of the file when page 1
//! is damaged. Nothing is ever written beside the source.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::Path;

use pager::{Database, Finding, Journal, PageNo, Schema, TextEncoding, Value, Wal};
use reconstruct::{RowEvent, TableRows};

use crate::base::error::Error;
use crate::base::observer::{Observer, Progress};
use crate::recover::request::Paths;

pub mod fault;
pub mod indexes;
pub mod logs;
pub mod oracle;
pub mod source;

pub use source::{
    sha256_file, Digests, EnteredFolios, Governor, ReadAhead, Residency, Source, RESIDENT_LIMIT,
};

/// An evidence file the file system says changed during the run.
#[derive(Clone, Copy, Debug)]
pub struct Changed {
    /// Its role, as the report names it: `source`, `wal` or `journal`.
    pub role: &'static str,
    /// Its role in words.
    pub named: &'static str,
    /// How it changed.
    pub how: &'static str,
}

/// The evidence files of a run, mapped read-only.
pub struct EvidenceFiles {
    /// The database file.
    pub main: Source,
    /// The write-ahead log read with it.
    pub wal: Option<Source>,
    /// The rollback journal read with it.
    pub journal: Option<Source>,
}

impl EvidenceFiles {
    /// Each file known to have changed since it was mapped, whatever its hashes say
    /// ([`Source::changed`]), by its role: paths live only in the report's `run`.
    pub fn changed(&self) -> Vec<Changed> {
        [
            ("source", "the source", Some(&self.main)),
            ("wal", "the write-ahead log", self.wal.as_ref()),
            ("journal", "the rollback journal", self.journal.as_ref()),
        ]
        .into_iter()
        .filter_map(|(role, named, s)| {
            Some(Changed {
                role,
                named,
                how: s?.changed()?,
            })
        })
        .collect()
    }

    /// Maps the files the request names.
    pub fn open(paths: &Paths) -> Result<EvidenceFiles, Error> {
        Ok(EvidenceFiles {
            main: Source::open(&paths.src)?,
            wal: paths.wal.as_deref().map(Source::open).transpose()?,
            journal: paths.journal.as_deref().map(Source::open).transpose()?,
        })
    }

    /// Every file, to keep their resident pages in check together.
    pub fn all(&self) -> Vec<&Source> {
        std::iter::once(&self.main)
            .chain(&self.wal)
            .chain(&self.journal)
            .collect()
    }

    /// The folios of these files their readers enter, counted ([`EnteredFolios`]).
    pub fn entered_folios(&self) -> EnteredFolios<'_> {
        EnteredFolios::new(self.all())
    }

    /// A tracker of the bytes read from these files, keeping resident memory flat.
    pub fn residency(&self) -> Residency<'_> {
        Residency::new(self.all(), RESIDENT_LIMIT)
    }

    /// A [`Governor`] of these files' resident pages, on a thread of `scope`.
    pub fn govern<'scope, 'env>(
        &'env self,
        scope: &'scope std::thread::Scope<'scope, 'env>,
    ) -> Governor {
        Governor::start(scope, self.all(), RESIDENT_LIMIT)
    }

    /// The database file read ahead in order while the returned guard lives and
    /// `observer` lets the run go on: the survey walks each tree and the load reads the
    /// tables in key order, and both find the pages read ahead in the page cache (on a
    /// 20 GB store not yet in the cache, in place of reading each on its own fault).
    pub fn read_ahead<'scope, 'env>(
        &'env self,
        scope: &'scope std::thread::Scope<'scope, 'env>,
        observer: &'env dyn Observer,
    ) -> ReadAhead {
        ReadAhead::start(scope, &self.main, move || observer.go_on())
    }
}

/// The main thread's tally of the table rows it read from the evidence: stages tell it
/// each row, by shared reference, and it tells the observer how many table pages and rows
/// were read, and whether to stop. (What the reads map of the files is counted by the
/// evidence's database itself, [`EnteredFolios`].)
pub struct Reader<'s> {
    observer: &'s dyn Observer,
    tally: Cell<Tally>,
    pages: u64,
    /// The caller asked the run to stop (asked every few hundred pages).
    stopped: Cell<bool>,
}

/// Table pages and rows read, and the page of the last row.
#[derive(Clone, Copy, Default)]
struct Tally {
    pages: u64,
    rows: u64,
    last: u32,
}

/// Table pages read between two reports to the observer.
const TELL_EVERY: u64 = 256;

impl<'s> Reader<'s> {
    /// A tally of the rows of `db`, told to `observer`.
    pub fn new(db: &Database<'_>, observer: &'s dyn Observer) -> Reader<'s> {
        Reader {
            observer,
            tally: Cell::new(Tally::default()),
            stopped: Cell::new(false),
            pages: u64::from(db.page_count()),
        }
    }

    /// Whether the caller asked the run to stop: a loop over rows ends early, and the
    /// run at its next stage.
    pub fn stopped(&self) -> bool {
        self.stopped.get()
    }

    /// Records a row read from a table page: the page it starts on.
    pub fn row(&self, page: PageNo) {
        let mut t = self.tally.get();
        t.rows += 1;
        if t.last != page.get() {
            t.last = page.get();
            t.pages += 1;
            if t.pages.is_multiple_of(TELL_EVERY) {
                self.observer.progress(Progress::Read {
                    pages: t.pages,
                    of: self.pages,
                    rows: t.rows,
                });
                if !self.observer.go_on() {
                    self.stopped.set(true);
                }
            }
        }
        self.tally.set(t);
    }
}

/// The evidence read: the database as SQLite would open it, and its schema.
pub struct Evidence<'s> {
    /// The database.
    pub db: Database<'s>,
    /// The write-ahead log read, or why it is unusable.
    pub wal: Option<Result<Wal<'s>, Finding>>,
    /// The rollback journal read.
    pub journal: Option<Journal<'s>>,
    /// The schema: page 1's, completed by a scan when page 1 is damaged.
    pub schema: Schema,
    /// Schema rows found by that scan.
    pub schema_rows_scanned: usize,
}

impl<'s> Evidence<'s> {
    /// Opens the database in `files` as SQLite would; its schema is read by
    /// [`Evidence::read_schema`].
    pub fn open(files: &'s EvidenceFiles, paths: &Paths) -> Result<Evidence<'s>, Error> {
        Evidence::open_as_of(files, paths, None)
    }

    /// [`Evidence::open`] as the database was after commit `as_of` of the write-ahead log
    /// (0: before its first): refused when the log does not have that many.
    pub fn open_as_of(
        files: &'s EvidenceFiles,
        paths: &Paths,
        as_of: Option<u32>,
    ) -> Result<Evidence<'s>, Error> {
        // The log is read frame by frame, its mapped pages let go of as it goes: a log of
        // gigabytes does not stay resident.
        let mut residency = files.residency();
        let mut wal = files.wal.as_ref().map(|w| residency.read_wal(w));
        if let Some(n) = as_of {
            let commits = match &wal {
                Some(Ok(w)) => w.commits.len(),
                _ => 0,
            };
            if n as usize > commits {
                return Err(Error::Refused {
                    what: format!("--as-of {n}: the write-ahead log holds {commits} commits"),
                    hint: "`salvage inspect` lists them; give a number up to that".into(),
                });
            }
            wal = wal.map(|w| w.map(|w| w.as_of(n as usize)));
        }
        let journal = files
            .journal
            .as_ref()
            .map(|j| pager::read_journal(j.bytes()));
        // An empty file is an empty database to SQLite, unless a log gives it pages.
        let logged = wal
            .as_ref()
            .is_some_and(|w| w.as_ref().is_ok_and(|w| !w.pages.is_empty()));
        let main = match logged {
            true => files.main.bytes(),
            false => pager::as_sqlite_reads(files.main.bytes()),
        };
        let db = Database::open_with_logs(
            main,
            journal.as_ref().filter(|j| rolls_back(j)),
            wal.as_ref().and_then(|w| w.as_ref().ok()),
        )
        .map_err(|why| Error::NotADatabase {
            path: paths.src.clone(),
            why,
            looks_like: crate::base::error::looks_like(files.main.bytes()),
        })?;
        Ok(Evidence {
            db,
            wal,
            journal,
            schema: Schema::default(),
            schema_rows_scanned: 0,
        })
    }

    /// Reads the schema: page 1's, completed by a scan of the file when it is damaged.
    pub fn read_schema(&mut self) {
        (self.schema, self.schema_rows_scanned) = schema_with_scan(&self.db);
    }

    /// Names the schema already uses, lower-cased (SQLite compares names without case):
    /// tables the run adds take other names.
    pub fn taken_names(&self) -> std::collections::BTreeSet<String> {
        self.schema
            .rows
            .iter()
            .map(|r| r.name.to_ascii_lowercase())
            .collect()
    }

    /// The database's text encoding.
    pub fn encoding(&self) -> TextEncoding {
        self.db.encoding()
    }

    /// The write-ahead log, when it is usable.
    pub fn usable_wal(&self) -> Option<&Wal<'s>> {
        self.wal.as_ref().and_then(|w| w.as_ref().ok())
    }

    /// Root page in the source of the schema object named `name`.
    pub fn schema_root(&self, name: &str) -> Option<PageNo> {
        self.schema
            .rows
            .iter()
            .find(|r| r.name.eq_ignore_ascii_case(name))
            .and_then(|r| r.rootpage)
    }

    /// The CREATE statement of the schema object named `name`.
    pub fn schema_sql(&self, name: &str) -> Option<&str> {
        self.schema
            .rows
            .iter()
            .find(|r| r.name.eq_ignore_ascii_case(name))
            .and_then(|r| r.sql.as_deref())
    }

    /// The records of a small internal table of the source (`sqlite_stat1`,
    /// `sqlite_sequence`), as stored.
    pub fn internal_records(&self, name: &str) -> Vec<Vec<Value>> {
        let Some(root) = self.schema_root(name) else {
            return Vec::new();
        };
        TableRows::new(&self.db, Some(root), std::iter::empty())
            .filter_map(|e| match e {
                RowEvent::Row(row) => Some(row.record().0),
                RowEvent::Unreadable { .. } => None,
            })
            .collect()
    }

    /// Row counts `sqlite_stat1` recorded at the source's last ANALYZE (the first number
    /// of each index's `stat`), by lower-cased table name.
    pub fn stat1_rows(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        let enc = self.encoding();
        for record in self.internal_records("sqlite_stat1") {
            let (Some(Value::Text(tbl)), Some(Value::Text(stat))) = (record.first(), record.get(2))
            else {
                continue;
            };
            let (Some(tbl), Some(stat)) = (enc.decode(tbl), enc.decode(stat)) else {
                continue;
            };
            if let Some(n) = stat
                .split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok())
            {
                let e = out.entry(tbl.to_lowercase()).or_insert(0);
                *e = (*e).max(n);
            }
        }
        out
    }

    /// The source's `sqlite_sequence` counters, by lower-cased table name.
    pub fn sequences(&self) -> BTreeMap<String, i64> {
        let mut out = BTreeMap::new();
        for record in self.internal_records("sqlite_sequence") {
            if let (Some(Value::Text(name)), Some(Value::Integer(seq))) =
                (record.first(), record.get(1))
            {
                if let Some(name) = self.encoding().decode(name) {
                    out.insert(name.to_lowercase(), *seq);
                }
            }
        }
        out
    }
}

/// Whether a journal is rolled back, as SQLite decides: it is hot (a valid header), unless
/// it names a super-journal that no longer exists (then its transaction committed).
pub fn rolls_back(j: &Journal<'_>) -> bool {
    j.header.is_some() && super_journal_exists(j) != Some(false)
}

/// Whether the super-journal a hot journal names exists (SQLite looks it up by the name as
/// recorded); `None` when it names none.
pub fn super_journal_exists(j: &Journal<'_>) -> Option<bool> {
    j.super_journal
        .as_deref()
        .map(|name| Path::new(name).exists())
}

/// The schema from page 1, completed when it is damaged by the schema rows found on any
/// other table leaf page (not on the freelist). Returns how many rows the scan added.
fn schema_with_scan(db: &Database<'_>) -> (Schema, usize) {
    let mut schema = pager::read_schema(db);
    if schema.findings.is_empty() {
        return (schema, 0);
    }
    let freelist = pager::read_freelist(db);
    let mut skip = pager::PageSet::with_page_count(db.page_count());
    for p in freelist.trunks.iter().chain(&freelist.leaves) {
        skip.insert(*p);
    }
    let found: Vec<pager::SchemaRow> = pager::scan_for_schema_rows(db, &skip)
        .into_iter()
        .filter(|r| {
            !schema
                .rows
                .iter()
                .any(|o| o.name.eq_ignore_ascii_case(&r.name))
        })
        .collect();
    let n = found.len();
    schema.rows.extend(found);
    (schema, n)
}

/// One value per evidence file: the main file, and the log and journal read with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PerFile<D> {
    /// The main file.
    pub main: D,
    /// The write-ahead log.
    pub wal: Option<D>,
    /// The rollback journal.
    pub journal: Option<D>,
}

/// The evidence hashed before the run: each file's SHA-256 and BLAKE3, from one read.
pub type Before = PerFile<Digests>;

/// The evidence hashed after the run: each file's BLAKE3, read afresh from its path. The
/// evidence is unchanged when it equals the BLAKE3 read before; a second SHA-256 would
/// prove no more, at four times the cost.
pub type After = PerFile<String>;

impl<D> PerFile<D> {
    /// `digest` of every evidence file, each opened and read afresh from its path (so
    /// that a file replaced at that path is noticed).
    fn of(paths: &Paths, digest: impl Fn(&Source) -> D) -> Result<PerFile<D>, Error> {
        let of = |path: &Path| Source::open(path).map(|s| digest(&s));
        Ok(PerFile {
            main: of(&paths.src)?,
            wal: paths.wal.as_deref().map(of).transpose()?,
            journal: paths.journal.as_deref().map(of).transpose()?,
        })
    }

    /// `f` of each file's value.
    pub fn map<E>(&self, f: impl Fn(&D) -> E) -> PerFile<E> {
        PerFile {
            main: f(&self.main),
            wal: self.wal.as_ref().map(&f),
            journal: self.journal.as_ref().map(&f),
        }
    }
}

/// The first hash of the logs beside the main file: the write-ahead log's, the rollback
/// journal's.
pub type LogsBefore = (Option<Digests>, Option<Digests>);

impl Before {
    /// Hashes the logs beside the main file before the run (none when there is none),
    /// each opened afresh from its path. `None` when `go_on` said no before the end.
    pub fn read_logs(paths: &Paths, go_on: &dyn Fn() -> bool) -> Result<Option<LogsBefore>, Error> {
        let of = |path: Option<&Path>| match path {
            Some(p) => Ok(Source::open(p)?.digests_while(go_on).map(Some)),
            None => Ok(Some(None)),
        };
        let wal = of(paths.wal.as_deref())?;
        let journal = of(paths.journal.as_deref())?;
        Ok(wal.zip(journal))
    }

    /// Hashes the main file before the run, opened afresh from its path. `None` when
    /// `go_on` said no before the end.
    pub fn read_main(paths: &Paths, go_on: &dyn Fn() -> bool) -> Result<Option<Digests>, Error> {
        Ok(Source::open(&paths.src)?.digests_while(go_on))
    }

    /// The first hash of every file: the main file's and the logs'.
    pub fn joined(main: Digests, (wal, journal): LogsBefore) -> Before {
        PerFile { main, wal, journal }
    }

    /// Whether every file hashed `after` as it did before.
    pub fn unchanged(&self, after: &After) -> bool {
        self.map(|d| d.blake3.clone()) == *after
    }
}

impl After {
    /// Hashes every evidence file after the run.
    pub fn read(paths: &Paths) -> Result<After, Error> {
        PerFile::of(paths, Source::blake3)
    }
}
