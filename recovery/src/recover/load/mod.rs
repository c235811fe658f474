//! The third stage: the load. Every table's rows go into the output, from its own b-tree
//! and from the orphan pages the evidence attributes to it.
//!
//! 1. [`Bulk::run`]: rowid tables whose rows arrive in rowid order are written as b-tree
//!    pages straight into the file ([`bulk`]); this needs only the schema, so it runs while the survey of every page goes on on the second core.
//! 2. [`Bulk::load`]: with the survey in, each table's b-tree damage is counted, the orphan
//!    pages are attributed ([`reconstruct::plan()`]) and tables whose CREATE statement is
//!    lost are inferred from them; then the rows the bulk writer could not take, the orphan
//!    rows, and every other table go through SQL (`rows`), refused rows and unattributed
//!    orphans to `lost_and_found`, and `sqlite_sequence` is carried over.
//! 3. [`Loaded::create_indexes`]: the schema's indexes, built by SQLite from the rows.

use std::collections::{BTreeMap, BTreeSet};

use pager::{PageNo, Survey, Value};
use reconstruct::{
    Attribution, OrphanGroup, RowEvent, TableId, TableRows, TableStatus, TableTarget,
};

use crate::base::error::Error;
use crate::base::observer::{enter, Observer, Stage};
use crate::base::output::{quote, Output, SqlValue};
use crate::recover::evidence::{Evidence, Reader};
use crate::recover::ledger::Ledger;
use crate::recover::plan::Work;
use crate::recover::profiles::Profiles;
use crate::recover::tables::Tables;
use crate::recover::whence::Whence;

pub mod bulk;
mod bulk_tables;
pub(crate) mod claims;
mod contested;
mod crosscheck;
pub mod lost_and_found;
mod rows;

use bulk_tables::BulkTable;
pub use crosscheck::named_rows;
pub use lost_and_found::LostAndFound;
use rows::{Sink, TableWriter};

/// The output after the bulk writer: tree rows of bulk-loaded tables in.
pub struct Bulk {
    work: Work,
    /// Rows of bulk-loaded tables that go through SQL instead (out of rowid order,
    /// damaged, or refused by a NOT NULL column).
    deferred: BTreeMap<TableId, Vec<reconstruct::RowPlace>>,
}

/// The output with every row in: what the rebuild works on.
pub struct Loaded {
    /// The output, its tables with what they got back, the record.
    pub work: Work,
    /// What the load found beyond the tables' rows.
    pub found: Found,
}

/// What the load found beyond the tables' rows: the survey of every page, and what no
/// table could be given.
pub struct Found {
    /// The survey of every page.
    pub survey: Survey,
    /// Rows no table could be given.
    pub lost_and_found: LostAndFound,
    /// Orphan table-page groups no evidence settles (their rows are in `lost_and_found`).
    pub unattributed: Vec<OrphanGroup>,
    /// Of those, the groups whose records fit more than one table equally: each by its top
    /// page, with every table it could be.
    pub candidates: Vec<(PageNo, Vec<String>)>,
    /// Orphan index-page groups: index data, rebuilt from the tables instead.
    pub index_groups: u64,
}

impl Bulk {
    /// Writes the tree rows of every table the bulk writer can take straight into the
    /// output file.
    pub fn run<'s>(
        evidence: &Evidence<'s>,
        work: Work,
        reader: &Reader<'_>,
        observer: &dyn Observer,
    ) -> Result<Bulk, Error> {
        let mut work = work;
        let candidates = bulk_tables::bulk_tables(&work.out, &work.tables);
        let mut jobs = Vec::with_capacity(candidates.len());
        for (id, root) in candidates {
            let Some((t, shape)) = work
                .tables
                .get(id)
                .and_then(|t| Some((t, t.shape.as_ref()?)))
            else {
                continue;
            };
            jobs.push(BulkTable {
                id,
                root,
                shape: shape.clone(),
                source_root: t.root,
                keyed: crosscheck::keyed_columns(evidence, shape),
                provenance: work.whence.on(),
            });
        }
        let mut deferred = BTreeMap::new();
        if jobs.is_empty() {
            return Ok(Bulk { work, deferred });
        }
        let page_size = evidence.db.page_size().get();
        let written = work
            .out
            .with_file_closed(|path| {
                let mut writer = bulk::BulkWriter::open(path, page_size)?;
                let mut done = Vec::with_capacity(jobs.len());
                // Bytes of values kept for the cross-check, all tables together.
                let mut kept = 0;
                for job in &jobs {
                    observer.stage(Stage::Recovering {
                        table: &job.shape.name,
                    });
                    // Stopped: the rest is not written, and the run ends below.
                    if !observer.go_on() {
                        break;
                    }
                    done.push(bulk_tables::write_table(
                        &mut writer,
                        evidence,
                        job,
                        reader,
                        &mut kept,
                    )?);
                }
                writer.finish()?;
                Ok(done)
            })
            .map_err(Error::Output)?;
        if !observer.go_on() {
            return Err(Error::Stopped);
        }
        for (job, table) in jobs.iter().zip(written) {
            if let Some(t) = work.tables.get_mut(job.id) {
                t.loss.from_tree += table.rows;
                t.loss.unreadable_cells += table.unreadable;
                t.written_rowids = table.rowids;
                t.spilled_rowids = table.spilled;
                t.spilled_values = table.kept;
                t.blob_kinds.merge(table.blob_kinds);
            }
            work.whence.extend(job.id, table.places);
            deferred.insert(job.id, table.later);
        }
        Ok(Bulk { work, deferred })
    }

    /// Takes the survey in, attributes the orphan pages, and writes every other row.
    pub fn load<'s>(
        self,
        evidence: &Evidence<'s>,
        survey: Survey,
        (profiles, named): (&Profiles, &[(i64, String)]),
        reader: &Reader<'_>,
        observer: &dyn Observer,
    ) -> Result<Loaded, Error> {
        let Bulk {
            mut work,
            mut deferred,
        } = self;
        let Work {
            out,
            tables,
            ledger,
            names,
            whence,
        } = &mut work;
        let mut survey = survey;
        // Pages a table's tree reaches that are another table's, or free: cut from it
        // before its loss is counted and its orphans attributed.
        let suspects = claims::suspects(evidence, &survey, tables, named);
        let cuts = claims::cut_foreign_pages(
            evidence,
            (&mut survey, &suspects),
            out,
            tables,
            &mut deferred,
            ledger,
        )?;
        // From here on rows go through SQL, where the file's own expressions run (generated
        // columns, then indexes, views, triggers and the rows rebuilt): no value they make
        // may be much longer than the longest the file holds.
        let longest = longest_payload(&evidence.db, &survey);
        let _ = out.limit_length(longest.saturating_mul(2).saturating_add(1 << 16));
        count_tree_damage(tables, &survey);
        // Rows the bulk writer copied whose chains reach an overflow page another chain
        // claims are taken back, to be written with those fields registered.
        let contested = contested::Contested::of(&evidence.db, &survey);
        take_back_contested(evidence, out, tables, &mut deferred, &contested)?;
        enter(observer, Stage::PlanningOrphans)?;
        let (plan, candidates) = attribute_orphans(evidence, &survey, out, tables, profiles);
        let taken = names.taken().clone();
        let sources = RowSources {
            evidence,
            cuts: &cuts,
            contested: &contested,
            reader,
            observer,
            taken: &taken,
        };
        let mut lost_and_found = LostAndFound::default();
        for id in tables.filled().map(|(t, _)| t.id).collect::<Vec<TableId>>() {
            let places = deferred.remove(&id);
            let sink = (&mut lost_and_found, &mut *whence);
            sources.write_table(id, places, out, tables, ledger, sink)?;
        }
        enter(observer, Stage::LostAndFound)?;
        lost_and_found
            .keep_orphans(out, &evidence.db, &plan.lost_and_found, &taken)
            .map_err(Error::db("writing lost_and_found"))?;
        crosscheck::cross_check(evidence, out, tables, ledger, &taken)
            .map_err(Error::db("checking rows against their index entries"))?;
        carry_sequence(evidence, out).map_err(Error::db("carrying sqlite_sequence over"))?;
        for name in lost_and_found
            .name
            .iter()
            .chain(&ledger.damaged_fields.name)
        {
            names.take(name);
        }
        Ok(Loaded {
            work,
            found: Found {
                survey,
                lost_and_found,
                unattributed: plan.lost_and_found,
                candidates,
                index_groups: plan.index_groups.len() as u64,
            },
        })
    }
}

/// What each table's tree says of its loss: child pointers that could not be followed,
/// findings, a root that is unreadable (a recovered table whose root reaches no tree).
fn count_tree_damage(tables: &mut Tables, survey: &Survey) {
    for t in tables.iter_mut() {
        match t
            .root
            .and_then(|root| survey.trees.iter().find(|tr| tr.root == root))
        {
            Some(tree) => {
                t.loss.lost_subtrees = tree.lost.len() as u64;
                t.loss.tree_findings = tree.findings.len() as u64;
                t.loss.root_lost = tree.pages == 0;
            }
            None => t.loss.root_lost = t.status == TableStatus::Recovered,
        }
    }
}

/// Takes back the rows the bulk writer copied whose chains reach an overflow page
/// another chain claims, into the rows each table writes through SQL, where those fields
/// are registered.
fn take_back_contested(
    evidence: &Evidence<'_>,
    out: &Output,
    tables: &mut Tables,
    deferred: &mut BTreeMap<TableId, Vec<reconstruct::RowPlace>>,
    contested: &contested::Contested,
) -> Result<(), Error> {
    for (id, later) in deferred.iter_mut() {
        let Some(t) = tables.get_mut(*id) else {
            continue;
        };
        if !contested.involves(t.root) {
            continue;
        }
        let Some(rowid_name) = t.shape.as_ref().and_then(|s| s.rowid_name()) else {
            continue;
        };
        let delete = format!(
            "DELETE FROM {} WHERE {} = ?1",
            quote(&t.name),
            quote(rowid_name)
        );
        for event in TableRows::new(&evidence.db, t.root, std::iter::empty()) {
            let RowEvent::Row(mut row) = event else {
                continue;
            };
            let Some(rowid) = row.rowid() else { continue };
            if !contested.mark(&evidence.db, &mut row) {
                continue;
            }
            let removed = out
                .conn
                .execute(&delete, [rowid])
                .map_err(Error::db("taking back a row"))?;
            if removed > 0 {
                t.loss.from_tree = t.loss.from_tree.saturating_sub(1);
                t.written_rowids.remove(rowid);
                t.spilled_rowids.remove(rowid);
                t.spilled_values.remove(&rowid);
                later.push(row.place());
            }
        }
    }
    Ok(())
}

/// What writing a table's rows through SQL reads besides the output.
struct RowSources<'a, 's, 'r> {
    /// The evidence.
    evidence: &'a Evidence<'s>,
    /// Pages cut from a table's tree (another table's, or free).
    cuts: &'a claims::Cuts,
    /// Overflow pages two chains claim.
    contested: &'a contested::Contested,
    /// The rows read, for the residency of the map.
    reader: &'a Reader<'r>,
    /// Progress.
    observer: &'a dyn Observer,
    /// The names the output's tables take.
    taken: &'a std::collections::BTreeSet<String>,
}

impl RowSources<'_, '_, '_> {
    /// Writes the rows of table `id` the bulk writer did not: for a bulk-loaded table the
    /// rows it set aside (`places`, read again from their cells), else the table's tree;
    /// then its orphan rows. A row no table takes goes to `lost_and_found`.
    fn write_table(
        &self,
        id: TableId,
        places: Option<Vec<reconstruct::RowPlace>>,
        out: &Output,
        tables: &mut Tables,
        ledger: &mut Ledger,
        (lost_and_found, whence): (&mut LostAndFound, &mut Whence),
    ) -> Result<(), Error> {
        let db = &self.evidence.db;
        let Some(t) = tables.get_mut(id) else {
            return Ok(());
        };
        let Some(shape) = t.shape.clone() else {
            return Ok(());
        };
        // A bulk-loaded table is said again only when it has rows left to write.
        match &places {
            None => self
                .observer
                .stage(Stage::Recovering { table: &shape.name }),
            Some(p) if !p.is_empty() || !t.orphans.is_empty() => {
                self.observer.stage(Stage::SetAside { table: &shape.name });
            }
            Some(_) => {}
        }
        let (tree, places): (Option<PageNo>, Vec<reconstruct::RowPlace>) = match places {
            Some(places) => (None, places),
            None => (t.root.filter(|_| !t.loss.root_lost), Vec::new()),
        };
        let groups: Vec<Attribution> = t.orphans.clone();
        let cut = tree.and_then(|r| self.cuts.get(&r)).cloned();
        // A row set aside is read again from its cell as it goes in: only where it is
        // was kept.
        let rows = places
            .into_iter()
            .map(|p| p.read(db))
            .chain(TableRows::new(db, tree, groups.iter().map(|a| &a.group)).without(cut));
        let dberr = Error::db("writing rows");
        // A shadow table of a full-text table made over a stand-in tokenizer is copied as
        // stored: SQLite's defensive mode, which keeps shadow tables read-only to SQL, is
        // off while its rows, and nothing else, go in.
        let stand_ins: Vec<String> = ledger.tokenizer_stand_ins.keys().cloned().collect();
        let shadow = reconstruct::vtab::fts_shadow_of(&shape.name, &stand_ins).is_some();
        let defensive = |on: bool| {
            out.conn
                .set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_DEFENSIVE, on)
                .map(|_| ())
        };
        if shadow {
            defensive(false).map_err(&dberr)?;
        }
        let write = || -> Result<(), Error> {
            out.conn.execute_batch("BEGIN").map_err(&dberr)?;
            let writer = TableWriter::new(&shape);
            let mut sink = Sink {
                out,
                enc: self.evidence.encoding(),
                lost: lost_and_found,
                ledger,
                whence,
                taken: self.taken,
            };
            for event in rows {
                match event {
                    RowEvent::Unreadable { .. } => t.loss.unreadable_cells += 1,
                    RowEvent::Row(mut row) => {
                        self.reader.row(row.raw.location.page);
                        self.contested.mark(db, &mut row);
                        sink.insert_row(t, &shape, &writer, &row).map_err(&dberr)?
                    }
                }
            }
            out.conn.execute_batch("COMMIT").map_err(&dberr)
        };
        let written = write();
        // On again whatever happened: no later statement writes with it off.
        if shadow {
            defensive(true).map_err(&dberr)?;
        }
        written
    }
}

impl Loaded {
    /// Re-creates the schema's indexes. Reads nothing from the source.
    pub fn create_indexes(
        &mut self,
        evidence: &Evidence<'_>,
        observer: &dyn Observer,
    ) -> Result<(), Error> {
        enter(observer, Stage::Indexes)?;
        crate::recover::objects::create_objects(evidence, &mut self.work, pager::SchemaKind::Index);
        Ok(())
    }
}

/// Attributes the orphan pages of the survey to the filled tables, and creates a table
/// for each shape of orphan records no table of the schema fits (tables whose CREATE
/// statement is lost). Returns the plan, its attributions handed to the tables, and the
/// tables each group no evidence settles could be, by name.
fn attribute_orphans(
    evidence: &Evidence<'_>,
    survey: &Survey,
    out: &Output,
    tables: &mut Tables,
    profiles: &Profiles,
) -> (reconstruct::Plan, Vec<(PageNo, Vec<String>)>) {
    // Index entries witness whose an orphan's rows are: read only when there are orphans.
    let orphans = survey.page_map.orphans().next().is_some();
    let targets: Vec<(TableId, TableTarget)> = tables
        .filled()
        .map(|(t, shape)| {
            let indexes = match orphans && !shape.without_rowid {
                true => crate::recover::evidence::indexes::witnesses(evidence, &t.name),
                false => Vec::new(),
            };
            (
                t.id,
                TableTarget {
                    shape: shape.clone(),
                    root: t.root,
                    indexes,
                },
            )
        })
        .collect();
    let just_targets: Vec<TableTarget> = targets.iter().map(|(_, t)| t.clone()).collect();
    let mut plan = reconstruct::plan(&evidence.db, survey, &just_targets);
    let candidates: Vec<(PageNo, Vec<String>)> = std::mem::take(&mut plan.candidates)
        .into_iter()
        .map(|(top, at)| {
            let names = at
                .iter()
                .filter_map(|&i| targets.get(i).and_then(|(id, _)| tables.get(*id)))
                .map(|t| t.name.clone())
                .collect();
            (top, names)
        })
        .collect();
    for ((id, _), groups) in targets.iter().zip(std::mem::take(&mut plan.attributed)) {
        if let Some(t) = tables.get_mut(*id) {
            t.orphans = groups;
        }
    }
    // An index whose table's schema row is lost names that table, when its entries'
    // rowids are an inferred table's rows.
    let orphan_indexes: Vec<reconstruct::OrphanIndex> = evidence
        .schema
        .rows
        .iter()
        .filter(|r| r.kind == pager::SchemaKind::Index && tables.named(&r.tbl_name).is_none())
        .filter_map(|r| {
            Some(reconstruct::OrphanIndex {
                name: r.name.clone(),
                table: r.tbl_name.clone(),
                root: r.rootpage?,
                columns: reconstruct::index_columns(r.sql.as_deref()?)?,
            })
        })
        .collect();
    let namings = reconstruct::name_inferred(&evidence.db, &plan.inferred, &orphan_indexes);
    let traced = reconstruct::traced_groups(&evidence.db, &plan.inferred, &plan.index_groups);
    let trees = reconstruct::IndexTrees::new(&traced, plan.inferred.len(), pages_lost(survey));
    let known = known_tables(evidence, &plan, &trees, &namings, tables, profiles);
    // With no table's schema row left, an orphan index tree whose entries trace to no
    // inferred table indexes no table here: it holds the records of a WITHOUT ROWID table
    // (whose b-tree is an index b-tree), or the entries of an index whose table's pages
    // are gone. Either way its values are in no other row: a WITHOUT ROWID table of an
    // application identified takes them where they fit it alone, `lost_and_found` keeps
    // the rest. (Where the schema still names tables, an orphan index tree may be the
    // index of one of them, which this does not trace: it is left as index data.)
    if !evidence
        .schema
        .rows
        .iter()
        .any(|r| r.kind == pager::SchemaKind::Table)
    {
        let mut untraced = Vec::new();
        for (group, traced) in std::mem::take(&mut plan.index_groups)
            .into_iter()
            .zip(traced)
        {
            match traced {
                Some(_) => plan.index_groups.push(group),
                None => untraced.push(group),
            }
        }
        let left = name_keyed_trees(
            evidence,
            out,
            tables,
            profiles,
            &known,
            &plan.inferred,
            untraced,
        );
        plan.lost_and_found.extend(left);
    }
    for (i, table) in std::mem::take(&mut plan.inferred).into_iter().enumerate() {
        // Each name once: an index or a known table that names a table already made
        // names nothing here.
        let naming = namings
            .iter()
            .find(|n| n.inferred == i)
            .filter(|n| tables.named(&n.table).is_none());
        let undecided = known
            .undecided
            .iter()
            .find(|u| u.inferred == i)
            .map_or(&[][..], |u| u.candidates.as_slice());
        let sqlite = known
            .sqlites
            .iter()
            .find(|(t, _)| *t == i)
            .map(|(_, name)| *name);
        let unconfirmed = known
            .unconfirmed
            .iter()
            .find(|(t, _, _)| *t == i)
            .map(|(_, name, origin)| (name.clone(), origin.clone()));
        let known = known
            .tables
            .iter()
            .find(|(m, _)| m.inferred == i)
            .filter(|(_, k)| tables.named(&k.shape.name).is_none())
            .map(|(m, k)| (m, k));
        let made = reconstruct::make_inferred(
            &table,
            naming,
            known,
            undecided,
            unconfirmed.as_ref(),
            sqlite,
            || crate::recover::plan::inferred_name(evidence, tables),
        );
        let Some(shape) = out
            .create_object(pager::SchemaKind::Table, &made.sql)
            .ok()
            .and_then(|()| out.shape(&made.name, false).ok())
        else {
            continue;
        };
        let reason = made.reason.to_string();
        let id = tables.push(
            made.name,
            None,
            TableStatus::Inferred,
            Some(reason),
            Some(shape),
        );
        if let Some(t) = tables.get_mut(id) {
            if let Some((_, k)) = known {
                known_from(t, k);
            }
            t.orphans = table
                .groups
                .into_iter()
                .map(|group| Attribution {
                    group,
                    evidence: made.evidence.clone(),
                    confidence: made.confidence,
                })
                .collect();
        }
    }
    (plan, candidates)
}

/// Records that a table's name and statement are `k`'s, and its indexes with them.
fn known_from(t: &mut crate::recover::tables::TableRun, k: &reconstruct::KnownTable) {
    t.known_from = Some(k.origin.clone());
    t.known_indexes = k
        .indexes
        .iter()
        .map(|(n, sql)| (k.origin.clone(), n.clone(), sql.clone()))
        .collect();
}

/// Makes the WITHOUT ROWID tables that orphan index trees `untraced` hold, of the
/// applications whose tables the records named (`known`): each tree whose records fit one
/// such table alone ([`reconstruct::name_without_rowid`]) is that table's, made with its
/// known statement and indexes. Returns the trees it gave no table.
fn name_keyed_trees(
    evidence: &Evidence<'_>,
    out: &Output,
    tables: &mut Tables,
    profiles: &Profiles,
    known: &crate::recover::profiles::Named,
    inferred: &[reconstruct::InferredTable],
    untraced: Vec<reconstruct::OrphanGroup>,
) -> Vec<reconstruct::OrphanGroup> {
    let origins: BTreeSet<&str> = known
        .tables
        .iter()
        .map(|(_, k)| k.origin.as_str())
        .collect();
    if untraced.is_empty() || origins.is_empty() {
        return untraced;
    }
    let schema = evidence.taken_names();
    let candidates: Vec<reconstruct::KnownTable> = profiles
        .chosen()
        .filter(|p| origins.contains(format!("profile {}", p.name).as_str()))
        .flat_map(|p| p.known_tables().unwrap_or_default())
        .filter(|k| {
            k.shape.without_rowid
                && !schema.contains(&k.shape.name.to_ascii_lowercase())
                && tables.named(&k.shape.name).is_none()
        })
        .collect();
    let keyed = reconstruct::name_without_rowid(&evidence.db, &untraced, &candidates, inferred);
    let mut groups: Vec<Option<reconstruct::OrphanGroup>> =
        untraced.into_iter().map(Some).collect();
    for m in keyed {
        let (Some(k), Some(slot)) = (candidates.get(m.known), groups.get_mut(m.group)) else {
            continue;
        };
        let Some(group) = slot.take() else { continue };
        let reason = m.reason(k, &group);
        let made = out
            .create_object(pager::SchemaKind::Table, &k.sql)
            .ok()
            .and_then(|()| out.shape(&k.shape.name, true).ok());
        let Some(shape) = made else {
            *slot = Some(group);
            continue;
        };
        let id = tables.push(
            k.shape.name.clone(),
            None,
            TableStatus::Inferred,
            Some(reason),
            Some(shape),
        );
        if let Some(t) = tables.get_mut(id) {
            known_from(t, k);
            t.orphans = vec![Attribution {
                group,
                evidence: vec![m.evidence],
                confidence: m.confidence,
            }];
        }
    }
    groups.into_iter().flatten().collect()
}

/// The inferred tables whose records fit a table a chosen profile knows, each with that
/// table. A profile chosen by name or file: its known tables compete (each name given
/// once, to the inferred table that fits it best). Under `--profile auto`, with the
/// catalogue's dozens of applications, tables of a generic shape fit many applications'
/// tables alike: only the profiles the matches detect ([`detected`]) keep their names,
/// and they are matched again among themselves, until no profile drops out.
fn known_tables(
    evidence: &Evidence<'_>,
    plan: &reconstruct::Plan,
    trees: &reconstruct::IndexTrees,
    namings: &[reconstruct::Naming],
    tables: &Tables,
    profiles: &Profiles,
) -> crate::recover::profiles::Named {
    if plan.inferred.is_empty() {
        return crate::recover::profiles::Named::default();
    }
    let schema = evidence.taken_names();
    let fixed: BTreeMap<usize, String> = namings
        .iter()
        .map(|n| (n.inferred, n.table.clone()))
        .collect();
    let taken =
        |name: &str| schema.contains(&name.to_ascii_lowercase()) || tables.named(name).is_some();
    crate::recover::profiles::name_from_records(
        &evidence.db,
        &plan.inferred,
        trees,
        fixed,
        &taken,
        &schema,
        profiles,
    )
}

/// The longest payload of any cell the run may write: in the schema's trees (the survey
/// measured them) and on the orphan pages (a table whose schema row is lost has no tree).
fn longest_payload(db: &pager::Database<'_>, survey: &Survey) -> u64 {
    // An orphan cell's chain is not followed: its payload is at most its local bytes and
    // every overflow page of the file, whatever its size field says.
    let overflow_pages: u64 = survey
        .page_map
        .counts()
        .iter()
        .filter(|(c, _)| *c == pager::PageClass::Overflow)
        .map(|(_, n)| u64::from(*n))
        .sum();
    let spill_room = overflow_pages * (db.usable_size() as u64).saturating_sub(4);
    let in_trees = survey
        .trees
        .iter()
        .map(|t| t.max_payload)
        .max()
        .unwrap_or(0);
    let orphans = survey
        .page_map
        .orphans()
        .filter_map(|(p, _)| db.page(p))
        .flat_map(|page| {
            let cells: Vec<u64> = page
                .btree_header()
                .map(|h| {
                    page.cells(&h)
                        .flatten()
                        .filter_map(|c| {
                            let p = c.cell.payload()?;
                            Some(p.total_len.min(p.local.len() as u64 + spill_room))
                        })
                        .collect()
                })
                .unwrap_or_default();
            cells
        })
        .max()
        .unwrap_or(0);
    in_trees.max(orphans)
}

/// Carries `sqlite_sequence` counters over as the source holds them. A counter may be below
/// the table's largest rowid (an UPDATE of the rowid does not raise it); SQLite takes the
/// larger of the two for the next row, so the source's value is kept, not the one the
/// output's inserts left. A table whose counter did not survive keeps the inserts' value.
fn carry_sequence(evidence: &Evidence<'_>, out: &Output) -> rusqlite::Result<()> {
    if !out.has_table("sqlite_sequence") {
        return Ok(());
    }
    for record in evidence.internal_records("sqlite_sequence") {
        let (Some(Value::Text(name)), Some(Value::Integer(seq))) = (record.first(), record.get(1))
        else {
            continue;
        };
        let name_value = Value::Text(name.clone());
        let name = SqlValue::from_value(&name_value, evidence.encoding());
        let changed = out.conn.execute(
            "UPDATE sqlite_sequence SET seq = ?2 WHERE name = ?1",
            rusqlite::params![name, seq],
        )?;
        if changed == 0 {
            out.conn.execute(
                "INSERT INTO sqlite_sequence(name, seq) VALUES (?1, ?2)",
                rusqlite::params![name, seq],
            )?;
        }
    }
    Ok(())
}

/// Pages zeroed or unrecognisable: structures (index trees among them) may have been there.
pub(crate) fn pages_lost(survey: &Survey) -> u64 {
    survey
        .page_map
        .counts()
        .iter()
        .filter(|(c, _)| matches!(c, pager::PageClass::Zeroed | pager::PageClass::Unrecognised))
        .map(|(_, n)| u64::from(*n))
        .sum()
}
