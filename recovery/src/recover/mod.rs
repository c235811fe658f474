//! The recovery, in stages: each stage is a module and a type that hands its state to the
//! next (the crate's doc draws them), with the second core's work beside them.
//!
//! Its modules, in the order a run goes through them, each importing only from those
//! before it, from [`crate::report`] (the documents' schemas) and from [`crate::base`]:
//! [`request`], [`evidence`], then the run's shared record ([`tables`], [`ledger`],
//! [`objects`], [`profiles`]), [`plan`], [`load`], [`rebuild`], the optional steps
//! ([`carve`], [`history`]), and [`finish`].

pub mod carve;
pub mod damaged;
pub mod evidence;
pub mod finish;
pub mod history;
pub mod ledger;
pub mod load;
pub mod objects;
pub mod plan;
pub mod profiles;
pub mod provenance;
pub mod rebuild;
pub mod request;
pub mod tables;
pub mod times;
pub mod whence;

use std::sync::mpsc;

pub use request::{Log, RecoverOptions};

use crate::base::error::Error;
use crate::base::observer::{enter, Background, Observer, Progress, Stage};
use crate::base::{priority, writeback};

use evidence::{Evidence, EvidenceFiles, Reader};
use finish::Finish;
pub use finish::{Outcome, Recovery};
use load::Bulk;
use plan::Work;
use rebuild::{RebuildInputs, Rebuilt};
use request::Request;

/// Recovers a damaged database: checks the request before anything is created, then
/// runs every stage. Damage in the source never ends the run; only I/O on the source or
/// the output, or a refused request, does.
pub fn recover(options: &RecoverOptions, observer: &dyn Observer) -> Result<Recovery, Error> {
    recover_with(options, observer, &Given::default())
}

/// What a caller in this crate (a repair) knows of a recovery's evidence, or asks of its
/// output, beyond [`RecoverOptions`].
#[derive(Clone, Debug, Default)]
pub(crate) struct Given {
    /// The digests of files this process has just read whole, as it copied them: a run
    /// whose every evidence file is one of them (the copy) takes them as its first hash
    /// instead of reading the files again. The second hash is read as in every run.
    pub digests: Vec<(std::path::PathBuf, evidence::Digests)>,
    /// Check the output with `PRAGMA integrity_check` (each index against its table as
    /// well), not `quick_check`: an application is to use it.
    pub integrity_check: bool,
    /// Put the output in write-ahead-log mode before it is checked and hashed: the mode of
    /// the original an application is to use it in place of.
    pub wal_mode: bool,
}

impl Given {
    /// The first hash of the evidence at `paths`, when every file's digests are given.
    fn before(&self, paths: &request::Paths) -> Option<evidence::Before> {
        let resolved = |p: &std::path::Path| std::fs::canonicalize(p).ok();
        let of = |p: &std::path::Path| {
            let p = resolved(p)?;
            self.digests
                .iter()
                .find(|(q, _)| resolved(q).as_ref() == Some(&p))
                .map(|(_, d)| d.clone())
        };
        let log = |p: &Option<std::path::PathBuf>| match p {
            Some(p) => of(p).map(Some),
            None => Some(None),
        };
        Some(evidence::Before {
            main: of(&paths.src)?,
            wal: log(&paths.wal)?,
            journal: log(&paths.journal)?,
        })
    }
}

/// [`recover`], with what the caller knows or asks beyond the options.
pub(crate) fn recover_with(
    options: &RecoverOptions,
    observer: &dyn Observer,
    given: &Given,
) -> Result<Recovery, Error> {
    let request = Request::check(options)?;
    let files = EvidenceFiles::open(&request.paths)?;
    // Every page the run reads from the evidence, on any thread, counted by the folio it
    // maps: the maps are let go of before they pass the limit.
    let folios = files.entered_folios();
    let entered = |image: &[u8]| folios.entered(image);
    let mut evidence = Evidence::open_as_of(&files, &request.paths, request.as_of)?;
    evidence.db = evidence.db.observed(&entered);
    let done = run(&request, &files, &mut evidence, observer, given);
    // Stopped by its caller: the partial output is the run's own, and would block the
    // next run.
    if let Err(Error::Stopped) = &done {
        let _ = std::fs::remove_file(&request.paths.incomplete);
    }
    done
}

/// The stages, with the second core's work beside them.
fn run<'s>(
    request: &Request,
    files: &'s EvidenceFiles,
    evidence: &mut Evidence<'s>,
    observer: &'s dyn Observer,
    given: &Given,
) -> Result<Recovery, Error> {
    let paths = &request.paths;
    std::thread::scope(|scope| {
        // Every reader of the map is held to the residency limit, whether it tells a
        // tracker what it read or not; the thread ends with the run.
        let _governor = files.govern(scope);
        // The source read ahead in order; it ends with the run, whatever ends the run.
        let _read_ahead = files.read_ahead(scope, observer);
        evidence.read_schema();
        let evidence: &Evidence<'s> = evidence;
        // SQLite's own check of the source as read, on a private copy, at a low priority.
        let oracle = scope.spawn(|| {
            priority::background();
            evidence::oracle::sqlite_check(&evidence.db)
        });
        let reader = Reader::new(&evidence.db, observer);
        let mut work = Work::make(evidence, paths)?;
        work.whence = whence::Whence::asked(request.provenance);
        let hashed = given.before(paths);
        let mut second = SecondCore::survey_then_hash(scope, (evidence, paths, observer), hashed);
        let bulk = Bulk::run(evidence, work, &reader, observer)?;
        enter(observer, Stage::Surveying)?;
        let survey = second.survey()?;
        // SQLite's check names rows an index lacks: the pages that hold them are weighed
        // against their tree's indexes, and the rows looked up in them.
        let sqlite_check = oracle.join().unwrap_or_else(|_| {
            crate::report::SqliteCheck::not_run("SQLite's check ended in a panic")
        });
        let named = reconstruct::rows_missing_from_index(&sqlite_check.problems);
        let mut loaded = bulk.load(
            evidence,
            survey,
            (&request.profiles, &named),
            &reader,
            observer,
        )?;
        let copies = rebuild::text_copies(evidence, &mut loaded, &request.profiles);
        // Loss bounds read only the source and the load's record: on the second core.
        let inputs = rebuild::bounds_inputs(evidence, &mut loaded, &copies);
        // The second hash proves that nothing read from the source changed during the run,
        // so it starts after the last read: right after the loss bounds on the second
        // core, unless the first still has the source to read: in the rebuild, in the
        // lookup of the rows SQLite's check names (a walk of the source's index), or in a
        // step the request adds (carving, history, provenance).
        let late_reads = rebuild::reads_source_late(&copies, &loaded.work.ledger)
            || !named.is_empty()
            || request.carve
            || request.history
            || request.provenance;
        let mut second = second.bounds_then_hash(scope, inputs, late_reads);
        loaded.create_indexes(evidence, observer)?;
        let bounded = second.bounded()?;
        let inputs = RebuildInputs {
            bounded,
            copies: &copies,
            profiles: &request.profiles,
            partial_rows: request.partial_rows,
            placeholders: request.placeholders,
        };
        let mut rebuilt = Rebuilt::run(evidence, loaded, inputs, observer)?;
        let complete = sqlite_check.complete();
        load::named_rows(evidence, &mut rebuilt.work, (&named, complete)).map_err(Error::db(
            "checking rows SQLite's check names against their index",
        ))?;
        if request.carve {
            carve::step(evidence, &mut rebuilt)?;
        }
        if request.history {
            history::step(files, evidence, &mut rebuilt)?;
        }
        provenance::step(files, evidence, &mut rebuilt)?;
        let mut finish = Finish::objects(evidence, rebuilt, observer)?;
        if given.wal_mode {
            finish.wal_mode()?;
        }
        let second = second.hash_late(scope);
        // The output is whole: while SQLite checks it, it is hashed on the second core (it
        // is only read from here on) and set on its way to the disk for the commit's sync.
        // The descriptors this opens stay open until SQLite has closed the output: closing
        // one would drop SQLite's locks on it.
        let output_hash = scope.spawn(|| {
            let writeback = writeback::Writeback::of_whole(&paths.incomplete);
            let output = evidence::Source::open(&paths.incomplete).ok();
            let sha256 = output.as_ref().map(evidence::Source::sha256);
            (sha256, (output, writeback))
        });
        finish.verify(observer, given.integrity_check)?;
        let hashes = second.hashes()?;
        let (output_hash, open) = output_hash.join().map_err(|_| Error::WorkerPanicked {
            work: Background::OutputHash,
        })?;
        observer.done();
        let (before, after) = hashes;
        let proof = finish::commit::Proof {
            before,
            after,
            changed: files.changed(),
            output_sha256: output_hash,
            sqlite_check,
        };
        let recovery = finish.commit(evidence, request, proof);
        // The commit closed SQLite's connection first.
        drop(open);
        recovery
    })
}

/// The second core's work beside the stages, in the order the first core needs it: the
/// survey of every page, then the loss bounds, while the evidence is hashed before the
/// run (at a lower priority) and after its last read.
struct SecondCore<'scope, 's> {
    /// The evidence, the paths and the observer the work reads and tells.
    evidence: &'s Evidence<'s>,
    paths: &'s request::Paths,
    observer: &'s dyn Observer,
    /// The survey, once sent.
    survey: Option<mpsc::Receiver<pager::Survey>>,
    /// The survey's thread, then the first hash of the evidence.
    first: Option<std::thread::ScopedJoinHandle<'scope, Result<evidence::Before, Error>>>,
    /// The loss bounds, once sent.
    bounded: Option<mpsc::Receiver<Vec<reconstruct::Bounded>>>,
    /// The bounds' thread, then the second hash when nothing reads the source late.
    bounds: Option<std::thread::ScopedJoinHandle<'scope, Option<Result<evidence::After, Error>>>>,
    /// The second hash, when it had to wait for the first core's last read.
    late: Option<std::thread::ScopedJoinHandle<'scope, Result<evidence::After, Error>>>,
    /// Whether the first core reads the source after the bounds.
    late_reads: bool,
}

impl<'scope, 's: 'scope> SecondCore<'scope, 's> {
    /// Surveys every page while the first core loads the tables' own rows (which need
    /// only the schema; the orphan pages the survey finds are planned after), then hashes
    /// the main file at a lower priority: nothing waits for the hash until the commit, and
    /// the loss bounds, which the first core waits for, get the second core first. The
    /// logs beside it are hashed from the start, on a thread of their own at the same
    /// lower priority: the survey does not wait for them, and a log of gigabytes hashed
    /// after the main file was the run's last work, a core idle beside it (a 2 GB store
    /// with a log of 2.55 GB: 8.2 to 8.9 s, from 9.3 to 11.1). The main file is not hashed
    /// beside its survey: on the stores without a log that was no quicker, and sometimes
    /// slower. A change made to a file before its hash read it is seen by its times,
    /// compared at the end. A first hash the caller already has (`hashed`) is not read
    /// again; a run stopped by its caller stops hashing.
    fn survey_then_hash(
        scope: &'scope std::thread::Scope<'scope, '_>,
        (evidence, paths, observer): (&'s Evidence<'s>, &'s request::Paths, &'s dyn Observer),
        hashed: Option<evidence::Before>,
    ) -> SecondCore<'scope, 's> {
        let go_on = move || observer.go_on();
        let logs =
            (hashed.is_none() && (paths.wal.is_some() || paths.journal.is_some())).then(|| {
                scope.spawn(move || {
                    priority::background();
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        evidence::Before::read_logs(paths, &go_on)
                    }))
                    .unwrap_or(Err(Error::WorkerPanicked {
                        work: Background::FirstHash,
                    }))
                })
            });
        let (survey_tx, survey_rx) = mpsc::channel();
        let first = scope.spawn(move || {
            let of = u64::from(evidence.db.page_count());
            // What the survey maps of the files is counted by the evidence's database,
            // page by page (`EnteredFolios`).
            let survey = pager::survey_with_schema(
                &evidence.db,
                evidence.schema.clone(),
                pager::SurveyChecks::Structure,
                &mut |pages| {
                    // Every page is read once: walked (an overflow chain's and a freelist
                    // trunk's too), or classified when no walk reached it. The orphan pages
                    // and their chains are read once more at the end: the count stays at
                    // `of` then.
                    let steps = pages.min(of);
                    observer.progress(Progress::Surveyed { steps, of });
                },
            );
            observer.finished(Background::Survey);
            let _ = survey_tx.send(survey);
            // A run stopped by its caller needs no hash: its end waits for this thread.
            if !observer.go_on() {
                return Err(Error::Stopped);
            }
            if let Some(before) = hashed {
                observer.finished(Background::FirstHash);
                return Ok(before);
            }
            priority::background();
            // The thread is joined only before the commit: a panic here is returned as an
            // error, so that a run that ends early with its own error never meets it.
            let panicked = || Error::WorkerPanicked {
                work: Background::FirstHash,
            };
            let main = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                evidence::Before::read_main(paths, &go_on)
            }))
            .unwrap_or_else(|_| Err(panicked()));
            let logs = match logs.map(std::thread::ScopedJoinHandle::join) {
                None => Ok(Some((None, None))),
                Some(joined) => joined.unwrap_or_else(|_| Err(panicked())),
            };
            let hashes = match (main, logs) {
                (Err(e), _) | (_, Err(e)) => Err(e),
                (Ok(Some(main)), Ok(Some(logs))) => Ok(evidence::Before::joined(main, logs)),
                _ => Err(Error::Stopped),
            };
            observer.finished(Background::FirstHash);
            hashes
        });
        SecondCore {
            evidence,
            paths,
            observer,
            survey: Some(survey_rx),
            first: Some(first),
            bounded: None,
            bounds: None,
            late: None,
            late_reads: false,
        }
    }

    /// The survey, waited for. A thread that ended without it is joined here, its panic
    /// an error, not a crash of the whole run.
    fn survey(&mut self) -> Result<pager::Survey, Error> {
        match self.survey.take().and_then(|rx| rx.recv().ok()) {
            Some(survey) => Ok(survey),
            None => {
                if let Some(h) = self.first.take() {
                    let _ = h.join();
                }
                Err(Error::WorkerPanicked {
                    work: Background::Survey,
                })
            }
        }
    }

    /// Bounds each damaged table's loss, then (unless the first core still reads the
    /// source) hashes the evidence a second time.
    fn bounds_then_hash(
        mut self,
        scope: &'scope std::thread::Scope<'scope, '_>,
        inputs: Vec<reconstruct::BoundsInput>,
        late_reads: bool,
    ) -> SecondCore<'scope, 's> {
        let (bounds_tx, bounds_rx) = mpsc::channel();
        let (evidence, paths, observer) = (self.evidence, self.paths, self.observer);
        self.bounds = Some(scope.spawn(move || {
            let bounded: Vec<reconstruct::Bounded> = inputs
                .into_iter()
                .map(|input| reconstruct::bound_table(&evidence.db, input))
                .collect();
            observer.finished(Background::LossBounds);
            let _ = bounds_tx.send(bounded);
            (!late_reads).then(|| second_hash(paths, observer))
        }));
        self.bounded = Some(bounds_rx);
        self.late_reads = late_reads;
        self
    }

    /// The loss bounds, waited for. A thread that ended without them is joined here, its
    /// panic an error.
    fn bounded(&mut self) -> Result<Vec<reconstruct::Bounded>, Error> {
        match self.bounded.take().and_then(|rx| rx.recv().ok()) {
            Some(bounded) => Ok(bounded),
            None => {
                if let Some(h) = self.bounds.take() {
                    let _ = h.join();
                }
                Err(Error::WorkerPanicked {
                    work: Background::LossBounds,
                })
            }
        }
    }

    /// Starts the second hash now that the first core's last read is done, when it had
    /// to wait for it.
    fn hash_late(
        mut self,
        scope: &'scope std::thread::Scope<'scope, '_>,
    ) -> SecondCore<'scope, 's> {
        let (paths, observer) = (self.paths, self.observer);
        if self.late_reads {
            self.late = Some(scope.spawn(move || second_hash(paths, observer)));
        }
        self
    }

    /// The evidence's hashes before and after the run, every thread joined (a panic is
    /// an error naming its work).
    fn hashes(self) -> Result<(evidence::Before, evidence::After), Error> {
        let panicked = |work| move |_| Error::WorkerPanicked { work };
        let before = self
            .first
            .ok_or(Error::WorkerPanicked {
                work: Background::FirstHash,
            })?
            .join()
            .map_err(panicked(Background::FirstHash))??;
        let early = match self.bounds {
            Some(h) => h.join().map_err(panicked(Background::LossBounds))?,
            None => None,
        };
        let after = match self.late {
            Some(h) => h.join().map_err(panicked(Background::SecondHash))?,
            None => early.ok_or(Error::WorkerPanicked {
                work: Background::SecondHash,
            })?,
        }?;
        Ok((before, after))
    }
}

/// The evidence hashed after the run: nothing read from the source changed meanwhile.
fn second_hash(paths: &request::Paths, observer: &dyn Observer) -> Result<evidence::After, Error> {
    let hashes = evidence::After::read(paths);
    observer.finished(Background::SecondHash);
    hashes
}
