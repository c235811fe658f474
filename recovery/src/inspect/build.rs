//! The `inspect` document built from what the reader found: the header as declared and
//! as used, the pages by class, every b-tree, the freelist, the damaged pages, the
//! verdict; and the log and journal beside the file, read.

use pager::{Database, EncodingSource, Finding, PageClass, PageNo, PageSize, Survey};
use reconstruct::N;

use crate::report::inspect::*;
use crate::report::{damaged_page_runs, page_size_decision, DamagedRun, FindingList, Tool};

impl WalSidecar {
    /// Reads the log's bytes, over the main file `main` (for the rows each commit
    /// changed; `observe` is told of each page image read, and `read` of the log's bytes
    /// as its frames are read); an unusable header, or a page size the database's
    /// disagrees with (unproven by the log's own page 1), gives `usable: false` and its
    /// finding.
    pub fn of<'a>(
        bytes: &'a [u8],
        main: &'a [u8],
        (observe, read): (&'a pager::Observe<'a>, &mut dyn FnMut(u64)),
    ) -> WalSidecar {
        let declared = declared_page_size(main);
        match pager::read_wal_telling(bytes, read) {
            Ok(w) if !w.page_size_proven(declared) => {
                let refused = Finding::WalPageSizeDisagrees {
                    wal: w.header.page_size,
                    database: declared.map_or(0, PageSize::get),
                };
                WalSidecar {
                    size: bytes.len() as u64,
                    usable: false,
                    page_size: Some(w.header.page_size),
                    frames_present: w.frames_present,
                    frames_committed: w.frames_committed,
                    pages_committed: 0,
                    database_size: None,
                    timeline: Vec::new(),
                    older_generation_frames: 0,
                    findings: FindingList::new(std::iter::once(&refused).chain(&w.findings)),
                }
            }
            Ok(w) => WalSidecar {
                // Each step summed up as it is read: one step's rows in memory at a time.
                timeline: {
                    let mut timeline = Vec::new();
                    history::wal_history_each(main, None, &w, observe, &mut |step| {
                        timeline.push(crate::report::history::StepReport::of(&step));
                    });
                    timeline
                },
                older_generation_frames: w
                    .strays
                    .iter()
                    .filter(|s| matches!(s.kind, pager::StrayKind::OlderGeneration { .. }))
                    .count(),
                size: bytes.len() as u64,
                usable: true,
                page_size: Some(w.header.page_size),
                frames_present: w.frames_present,
                frames_committed: w.frames_committed,
                pages_committed: w.pages.len(),
                database_size: w.db_size,
                findings: FindingList::new(&w.findings),
            },
            Err(f) => WalSidecar {
                size: bytes.len() as u64,
                usable: false,
                page_size: None,
                frames_present: 0,
                frames_committed: 0,
                pages_committed: 0,
                database_size: None,
                timeline: Vec::new(),
                older_generation_frames: 0,
                findings: FindingList::new(std::slice::from_ref(&f)),
            },
        }
    }
}

/// The page size the main file's header declares, if it is one.
fn declared_page_size(main: &[u8]) -> Option<PageSize> {
    PageSize::from_header_field(pager::DatabaseHeader::parse(main).page_size_raw)
}

impl JournalSidecar {
    /// Reads the journal's bytes, beside the main file `main` (whose page size the
    /// journal's must agree with, or prove).
    pub fn of(bytes: &[u8], main: &[u8]) -> JournalSidecar {
        let j = pager::read_journal(bytes);
        let declared = declared_page_size(main);
        let refused = j.header.and_then(|h| {
            let database = declared?.get();
            (!j.page_size_proven(declared)).then_some(Finding::JournalPageSizeDisagrees {
                journal: h.page_size,
                database,
            })
        });
        JournalSidecar {
            size: bytes.len() as u64,
            hot: j.header.is_some(),
            refused: refused.is_some(),
            records_valid: j.records_valid,
            records_ignored: j.records_ignored,
            pages_restored: if refused.is_some() { 0 } else { j.pages.len() },
            pages_before: j.original_pages(),
            super_journal: j.super_journal.clone(),
            findings: FindingList::new(refused.iter().chain(&j.findings)),
        }
    }
}

/// Builds the report from the reader's results.
pub fn build(
    db: &Database<'_>,
    survey: &Survey,
    source: SourceInfo,
    run: RunInfo,
) -> InspectReport {
    let h = db.header();
    let map = &survey.page_map;
    let orphans = map.orphans().count();
    let (damaged_pages, damaged_page_count) = damaged_pages(db, survey);
    let file_findings: Vec<&Finding> = db.findings().iter().chain(&survey.findings).collect();
    let finding_count = db.findings().iter().chain(survey.all_findings()).count();
    // SQLite's own check of the same bytes: where it finds problems, the file is never
    // called healthy, and a problem no finding explains is said as such.
    let sqlite_check = crate::recover::evidence::oracle::sqlite_check(db);
    let unexplained = reconstruct::sqlite_check_signal(
        &sqlite_check.problems,
        &sqlite_check.failing_checks,
        &[],
        (finding_count + damaged_pages.len(), false),
    );
    let healthy =
        finding_count == 0 && damaged_pages.is_empty() && sqlite_check.problems.is_empty();
    let summary = if healthy {
        // The trees but the schema's own.
        let objects = match survey.trees.len().saturating_sub(1) {
            1 => "1 table or index".to_string(),
            n => format!("{n} tables and indexes"),
        };
        format!(
            "healthy: {}, {objects} read without a finding",
            N(db.page_count().into(), "page")
        )
    } else if let Some(signal) = unexplained {
        format!("damaged: {signal}")
    } else if finding_count == 0
        && damaged_pages.is_empty()
        && !sqlite_check.failing_checks.is_empty()
    {
        // Every page reads whole; SQLite's check finds rows its constraints refuse.
        let rows: Vec<String> = sqlite_check
            .failing_checks
            .iter()
            .map(ToString::to_string)
            .collect();
        format!(
            "not healthy by SQLite's check, every page read without a finding: {}",
            rows.join("; ")
        )
    } else {
        format!(
            "damaged: {}, {}, {}",
            N(finding_count as u64, "finding"),
            N(damaged_page_count, "damaged page"),
            N(orphans as u64, "orphan b-tree page")
        )
    };
    InspectReport {
        format_version: FORMAT_VERSION,
        tool: Tool::this(),
        source,
        sidecars: Sidecars::default(),
        header: HeaderReport {
            declared: declared_header(db),
            in_use: in_use(db),
        },
        pages: PagesReport {
            total: db.page_count(),
            by_class: map
                .counts()
                .into_iter()
                .map(|(c, n)| (c.name(), n))
                .collect(),
            orphan_btree_pages: orphans as u32,
            orphan_overflow_pages: map.orphan_overflow_pages(),
        },
        schema: survey
            .schema
            .rows
            .iter()
            .map(|r| SchemaEntry {
                kind: r.kind.as_str().to_string(),
                name: r.name.clone(),
                tbl_name: r.tbl_name.clone(),
                rootpage: r.rootpage.map(PageNo::get),
                sql: r.sql.clone(),
            })
            .collect(),
        applications: applications(db, survey),
        trees: survey.trees.iter().map(tree_report).collect(),
        freelist: FreelistReport {
            first_trunk: h.first_freelist_trunk,
            declared_count: h.freelist_count,
            trunk_pages: survey.freelist.trunks.len(),
            leaf_pages: survey.freelist.leaves.len(),
            findings: FindingList::new(&survey.freelist.findings),
        },
        damaged_pages,
        findings: FindingList::new(file_findings),
        sqlite_check,
        verdict: Verdict {
            healthy,
            finding_count,
            damaged_page_count,
            summary,
        },
        audit: None,
        run,
    }
}

/// The applications the schema's tables identify; when the schema holds no table (page 1
/// lost), those whose tables the orphan pages' records fit, as `recover` would name them.
fn applications(db: &Database<'_>, survey: &Survey) -> Vec<crate::report::Identified> {
    use crate::recover::profiles::Present;
    // A table's columns as SQLite parses its statement in a scratch database (never the
    // evidence).
    let mut tables: Vec<Present> = survey
        .schema
        .rows
        .iter()
        .filter(|r| r.kind == pager::SchemaKind::Table)
        .map(|r| {
            let shape = r
                .sql
                .as_deref()
                .filter(|sql| !reconstruct::is_virtual(Some(sql)))
                .and_then(|sql| crate::base::output::scratch_shape(sql).ok())
                .map(|(shape, _)| shape.columns)
                .unwrap_or_default();
            Present {
                name: r.name.clone(),
                from_schema: true,
                columns: shape.iter().map(|c| c.name.clone()).collect(),
                affinities: Vec::new(),
                types: shape.into_iter().map(|c| c.decl_type).collect(),
            }
        })
        .collect();
    let mut named_by = Vec::new();
    if tables.is_empty() && survey.page_map.orphans().next().is_some() {
        let plan = reconstruct::plan(db, survey, &[]);
        let traced = reconstruct::traced_groups(db, &plan.inferred, &plan.index_groups);
        if let Ok(profiles) = crate::recover::profiles::ProfileChoice::Auto.load() {
            let schema = std::collections::BTreeSet::new();
            let named = crate::recover::profiles::name_from_records(
                db,
                &plan.inferred,
                &reconstruct::IndexTrees::new(
                    &traced,
                    plan.inferred.len(),
                    crate::recover::load::pages_lost(survey),
                ),
                std::collections::BTreeMap::new(),
                &|_| false,
                &schema,
                &profiles,
            );
            for (_, k) in named.tables {
                tables.push(Present {
                    name: k.shape.name.clone(),
                    from_schema: false,
                    columns: k.shape.columns.iter().map(|c| c.name.clone()).collect(),
                    affinities: k.shape.columns.iter().map(|c| c.affinity()).collect(),
                    types: Vec::new(),
                });
                if let Some(p) = k.origin.strip_prefix("profile ") {
                    named_by.push(p.to_string());
                }
            }
        }
    }
    crate::recover::profiles::identify(&tables, &named_by, survey.schema.findings.is_empty())
}

/// The header's raw values as stored.
fn declared_header(db: &Database<'_>) -> DeclaredHeader {
    let h = db.header();
    DeclaredHeader {
        header_string_valid: h.has_header_string(),
        page_size: h.page_size_raw,
        write_version: h.write_version,
        read_version: h.read_version,
        reserved_space: h.reserved_space,
        payload_fractions: [
            h.max_payload_fraction,
            h.min_payload_fraction,
            h.leaf_payload_fraction,
        ],
        file_change_counter: h.file_change_counter,
        database_size: h.database_size,
        database_size_valid: h.database_size_valid(),
        first_freelist_trunk: h.first_freelist_trunk,
        freelist_count: h.freelist_count,
        schema_cookie: h.schema_cookie,
        schema_format: h.schema_format,
        default_cache_size: h.default_cache_size,
        largest_root_page: h.largest_root_page,
        text_encoding: h.text_encoding_raw,
        user_version: h.user_version,
        incremental_vacuum: h.incremental_vacuum,
        application_id: h.application_id,
        version_valid_for: h.version_valid_for,
        sqlite_version: h.sqlite_version,
    }
}

/// The geometry and encoding the reader used, and where each came from.
fn in_use(db: &Database<'_>) -> InUse {
    let h = db.header();
    let (page_size_source, page_size_evidence) = page_size_decision(db);
    let (text_encoding_source, text_encoding_evidence) = match db.encoding_source() {
        EncodingSource::Header => ("header", None),
        EncodingSource::Inferred { counts } => ("inferred", Some(*counts)),
    };
    InUse {
        page_size: db.page_size().get(),
        page_size_source,
        page_size_evidence,
        reserved_space: db.reserved_space(),
        usable_size: db.usable_size(),
        text_encoding: db.encoding().to_string(),
        text_encoding_source,
        text_encoding_evidence,
        page_count: db.page_count(),
        auto_vacuum: h.auto_vacuum(),
        incremental_vacuum: h.incremental_vacuum != 0,
    }
}

/// One b-tree as walked.
fn tree_report(t: &pager::TreeSurvey) -> TreeReport {
    TreeReport {
        name: t.name.clone(),
        kind: t.kind.as_str().to_string(),
        root: t.root.get(),
        pages: t.pages,
        overflow_pages: t.overflow_pages,
        depth: t.depth,
        cells: t.cells,
        lost_children: t
            .lost
            .iter()
            .map(|l| LostChildReport {
                parent: l.parent.get(),
                child: l.child,
                rowid_above: l.bounds.lower,
                rowid_up_to: l.bounds.upper,
            })
            .collect(),
        findings: FindingList::new(&t.findings),
    }
}

/// The damaged pages, in runs, and how many pages they are.
fn damaged_pages(db: &Database<'_>, survey: &Survey) -> (Vec<DamagedPage>, u64) {
    let runs = damaged_page_runs(db, survey);
    let count: u64 = runs.iter().map(DamagedRun::pages).sum();
    let pages = runs
        .into_iter()
        .map(|r| DamagedPage {
            page: r.first,
            last: (r.last != r.first).then_some(r.last),
            class: r.class.map_or("past_end", PageClass::name),
            why: r.why,
        })
        .collect();
    (pages, count)
}
