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
pub mod rebuild;
pub mod request;
pub mod tables;

use std::sync::mpsc;

pub use request::{Log, RecoverOptions};

use crate::base::error::Error;
use crate::base::observer::{Background, Observer, Progress, Stage};
use crate::base::{priority, writeback};

use evidence::{Evidence, EvidenceFiles, Reader};
use finish::Finish;
pub use finish::{Outcome, Recovery};
use load::Bulk;
use plan::SchemaPlan;
use rebuild::{RebuildInputs, Rebuilt};
use request::Request;

/// Recovers a damaged database: checks the request before anything is created, then
/// runs every stage. Damage in the source never ends the run; only I/O on the source or
/// the output, or a refused request, does.
pub fn recover(options: &RecoverOptions, observer: &dyn Observer) -> Result<Recovery, Error> {
    let request = Request::check(options)?;
    let files = EvidenceFiles::open(&request.paths)?;
    let mut evidence = Evidence::open_as_of(&files, &request.paths, request.as_of)?;
    run(&request, &files, &mut evidence, observer)
}

/// The stages, with the second core's work beside them.
fn run<'s>(
    request: &Request,
    files: &'s EvidenceFiles,
    evidence: &mut Evidence<'s>,
    observer: &'s dyn Observer,
) -> Result<Recovery, Error> {
    let paths = &request.paths;
    let panicked = |work| move |_| Error::WorkerPanicked { work };
    std::thread::scope(|scope| {
        evidence.read_schema();
        let evidence: &Evidence<'s> = evidence;
        let reader = Reader::new(files, u64::from(evidence.db.page_count()), observer);
        let plan = SchemaPlan::make(evidence, paths)?;
        // The second core surveys every page while the first loads the tables' own rows,
        // which need only the schema; the orphan pages the survey finds are planned after.
        // Then it hashes the evidence, read from the file (not through the map, which
        // would keep every page resident), at a lower priority: nothing waits for the hash
        // until the commit, and the loss bounds, which the first core waits for, get the
        // second core first. A change made to the file before the hash read it is seen by
        // its times, compared at the end.
        let (survey_tx, survey_rx) = mpsc::channel();
        let survey_then_hash = scope.spawn(move || {
            let mut residency = files.residency();
            let page_size = u64::from(evidence.db.page_size().get());
            let of = 2 * u64::from(evidence.db.page_count());
            let survey = pager::survey_with_schema(
                &evidence.db,
                evidence.schema.clone(),
                pager::SurveyChecks::Structure,
                &mut |steps| {
                    residency.read(pager::OBSERVE_EVERY * page_size);
                    observer.progress(Progress::Surveyed { steps, of });
                },
            );
            observer.finished(Background::Survey);
            let _ = survey_tx.send(survey);
            priority::background();
            // The thread is joined only before the commit: a panic here is returned as an
            // error, so that a run that ends early with its own error never meets it.
            let hashes = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                evidence::Before::read(paths)
            }))
            .unwrap_or(Err(Error::WorkerPanicked {
                work: Background::FirstHash,
            }));
            observer.finished(Background::FirstHash);
            hashes
        });
        let bulk = Bulk::run(evidence, plan, &reader, observer)?;
        observer.stage(Stage::Surveying);
        let Ok(survey) = survey_rx.recv() else {
            // The thread ended without its survey: joined here, its panic is an error,
            // not a crash of the whole run.
            let _ = survey_then_hash.join();
            return Err(Error::WorkerPanicked {
                work: Background::Survey,
            });
        };
        let mut loaded = bulk.load(evidence, survey, &request.profiles, &reader, observer)?;
        let copies = rebuild::text_copies(evidence, &mut loaded, &request.profiles);
        // Loss bounds read only the source and the load's record: on the second core.
        let inputs = rebuild::bounds_inputs(evidence, &mut loaded, &copies);
        // The second hash proves that nothing read from the source changed during the run,
        // so it starts after the last read: right after the loss bounds on the second
        // core, unless the first still has the source to read.
        let late_reads = rebuild::reads_source_late(&copies, &loaded.ledger);
        let second_hash = || {
            let hashes = evidence::After::read(paths);
            observer.finished(Background::SecondHash);
            hashes
        };
        let (bounds_tx, bounds_rx) = mpsc::channel();
        let second_core = scope.spawn(move || {
            let mut residency = files.residency();
            let bounded: Vec<reconstruct::Bounded> = inputs
                .into_iter()
                .map(|input| {
                    reconstruct::bound_table(&evidence.db, input, &mut |n| residency.read(n))
                })
                .collect();
            observer.finished(Background::LossBounds);
            let _ = bounds_tx.send(bounded);
            (!late_reads).then(second_hash)
        });
        loaded.create_indexes(evidence, observer);
        let Ok(bounded) = bounds_rx.recv() else {
            // The thread ended without its result: joined here, its panic is an error,
            // not a crash of the whole run.
            let _ = second_core.join();
            return Err(Error::WorkerPanicked {
                work: Background::LossBounds,
            });
        };
        let rebuilt = Rebuilt::run(
            evidence,
            loaded,
            RebuildInputs {
                bounded,
                copies: &copies,
                profiles: &request.profiles,
                partial_rows: request.partial_rows,
                placeholders: request.placeholders,
            },
            &reader,
            observer,
        )?;
        let mut rebuilt = rebuilt;
        if request.carve {
            let mut residency = files.residency();
            let carved = carve::carve_into(
                &evidence.db,
                &rebuilt.out,
                &rebuilt.tables,
                &rebuilt.survey,
                &evidence.taken_names(),
                &mut |n| residency.read(n),
            )
            .map_err(Error::db("writing carved records"))?;
            rebuilt.ledger.carved = Some(carved);
        }
        if request.history {
            let journal = files.journal.as_ref().map(|j| {
                let db = &evidence.db;
                pager::read_persisted_journal(j.bytes(), db.page_size(), db.page_count())
            });
            let mut residency = files.residency();
            let read = history::read(
                files.main.bytes(),
                evidence.usable_wal(),
                journal.as_ref(),
                &mut |n| residency.read(n),
            );
            let mut taken = evidence.taken_names();
            taken.extend(
                rebuilt
                    .ledger
                    .carved
                    .iter()
                    .filter_map(|c| c.registry.clone()),
            );
            let mut readings = history::Reading::of_schema(&evidence.schema);
            history::Reading::of_history(&mut readings, &read);
            let report =
                history::write(&rebuilt.out, &read, evidence.encoding(), &readings, &taken)
                    .map_err(Error::db("writing the history of the logs"))?;
            rebuilt.ledger.history = Some(report);
        }
        let mut finish = Finish::objects(evidence, rebuilt, observer)?;
        let late_hash = late_reads.then(|| scope.spawn(second_hash));
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
        finish.verify(observer);
        let before = survey_then_hash
            .join()
            .map_err(panicked(Background::FirstHash))??;
        let early = second_core
            .join()
            .map_err(panicked(Background::LossBounds))?;
        let after = match late_hash {
            Some(h) => h.join().map_err(panicked(Background::SecondHash))?,
            None => early.ok_or(Error::WorkerPanicked {
                work: Background::SecondHash,
            })?,
        }?;
        let (output_hash, open) = output_hash
            .join()
            .map_err(panicked(Background::OutputHash))?;
        observer.done();
        let recovery = finish.commit(
            evidence,
            request,
            (before, after),
            output_hash,
            files.changed(),
        );
        // The commit closed SQLite's connection first.
        drop(open);
        recovery
    })
}
