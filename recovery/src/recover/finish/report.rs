//! The loss report of a finished run, built from its typed state. The signals of loss are
//! gathered here in the report's order and judged once ([`reconstruct::Verdict::of`]);
//! only then are they rendered to sentences.

use pager::{Database, PageNo, Survey};
use reconstruct::{
    file_signals, placeholder_signals, signals_after_counts, table_signals, Attribution,
    LossSignal, OrphanGroup, PlaceholderOutcome, TableFacts, TableStatus, Verdict,
};
use std::collections::BTreeMap;

use crate::recover::evidence::logs::LogOutcome;
use crate::recover::ledger::Ledger;
use crate::recover::load::LostAndFound;
use crate::recover::tables::Tables;
use crate::report::*;
use crate::report::{damaged_page_runs, page_size_decision, FindingList, Tool};

/// Everything a loss report is built from.
pub struct LossReportParts<'p> {
    /// The database as read.
    pub db: &'p Database<'p>,
    /// The survey of every page.
    pub survey: &'p Survey,
    /// The schema rows used, and those found by scanning.
    pub schema_rows: (usize, usize),
    /// The tables.
    pub tables: &'p Tables,
    /// What the run did besides rows.
    pub ledger: &'p Ledger,
    /// Rows no table could be given.
    pub lost_and_found: &'p LostAndFound,
    /// Orphan table-page groups no evidence settles.
    pub unattributed: &'p [OrphanGroup],
    /// Of those, the groups whose records fit more than one table equally, by top page,
    /// with every table each could be.
    pub candidates: &'p [(PageNo, Vec<String>)],
    /// Orphan index-page groups.
    pub index_groups: u64,
    /// The partial rows' registry.
    pub partial_registry: Option<&'p str>,
    /// Placeholders made and refused.
    pub placeholders: &'p PlaceholderOutcome,
    /// The profiles that applied.
    pub profiles: &'p [[String; 2]],
    /// The write-ahead log's part.
    pub wal: LogOutcome<WalReport>,
    /// The rollback journal's part.
    pub journal: LogOutcome<JournalReport>,
    /// Collations the schema names that this build lacks, each given a stand-in in
    /// binary order on the output.
    pub stand_ins: &'p [String],
    /// The output passed its checks.
    pub verified: bool,
    /// The source's proof of being unchanged.
    pub source: SourceProof,
}

/// Every sign of loss of the run, in the report's order.
fn signals(p: &LossReportParts<'_>) -> Vec<LossSignal> {
    let mut out: Vec<LossSignal> = p.ledger.roots.clone();
    // A table whose schema row names another table's tree, or an index's, has no root
    // of its own: that signal says so, not that its root is unreadable.
    let rootless = |table: &str| {
        p.ledger.roots.iter().any(|s| {
            matches!(s, LossSignal::RootOfAnotherTable { table: t, .. }
                | LossSignal::RootNotATable { table: t, .. } if t == table)
        })
    };
    out.extend(p.tables.filled().flat_map(|(t, _)| {
        table_signals(&t.name, &t.loss)
            .into_iter()
            .filter(|s| !matches!(s, LossSignal::RootUnreadable { .. }) || !rootless(&t.name))
    }));
    out.extend(file_signals(
        p.survey,
        (p.lost_and_found.orphan_rows, p.unattributed.len()),
        p.db.findings(),
        &p.ledger.vouched_pages,
    ));
    if p.lost_and_found.unwritable > 0 {
        out.push(LossSignal::RowsUnwritable {
            table: p
                .lost_and_found
                .name
                .clone()
                .unwrap_or_else(|| "lost_and_found".into()),
            rows: p.lost_and_found.unwritable,
        });
    }
    out.extend(p.wal.signal.clone());
    out.extend(p.journal.signal.clone());
    out.extend(placeholder_signals(p.placeholders));
    out.extend(p.ledger.virtual_tables.iter().cloned());
    out.extend(p.ledger.missing_tables.iter().cloned());
    let facts: Vec<TableFacts<'_>> = p
        .tables
        .iter()
        .map(|t| TableFacts {
            name: &t.name,
            status: t.status,
            reason: t.reason.as_deref(),
            loss: &t.loss,
            bounds: t.bounds.as_ref(),
        })
        .collect();
    out.extend(signals_after_counts(&facts, p.partial_registry));
    // A schema object not made again is loss of the schema (a table's own failure is
    // its table's signal).
    out.extend(
        p.ledger
            .objects
            .iter()
            .filter(|o| o.status == ObjectStatus::Failed && o.kind != ObjectKind::VirtualTable)
            .map(|o| LossSignal::ObjectNotCreated {
                object: o.kind.to_string(),
                name: o.name.clone(),
                reason: o.reason.clone().unwrap_or_default(),
            }),
    );
    // SQLite calls the source malformed where nothing else this run found says so.
    let findings = p.db.findings().len() + p.survey.all_findings().count();
    out.extend(reconstruct::sqlite_check_signal(
        &p.source.sqlite_check.problems,
        &p.source.sqlite_check.failing_checks,
        &out,
        (findings, !p.ledger.warnings.is_empty()),
    ));
    out
}

/// Why a group is in `lost_and_found` although its records fit tables: which tables, and
/// that nothing tells them apart.
fn candidates_sentence(tables: &[String]) -> String {
    let named: Vec<String> = tables.iter().map(|t| format!("`{t}`")).collect();
    format!(
        "its records fit {} equally, and no child pointer, key range or index entry tells which table's they are: none is chosen",
        named.join(" and ")
    )
}

fn group_report(a: &Attribution) -> OrphanGroupReport {
    OrphanGroupReport {
        top: a.group.top.get(),
        pages: a.group.pages.len(),
        cells: a.group.cells,
        rowids: a.group.rowids.map(|(lo, hi)| [lo, hi]),
        confidence: Some(a.confidence.name().to_string()),
        evidence: a.evidence.iter().map(evidence_sentence).collect(),
    }
}

fn evidence_sentence(e: &reconstruct::Evidence) -> String {
    match e {
        reconstruct::Evidence::ChildPointer { parent } => format!("a child pointer of surviving interior {parent} points to it"),
        reconstruct::Evidence::RowidRange { parent, lower, upper } => format!(
            "its rowids lie in ({}, {}], the range surviving interior {parent} assigns to a child it can no longer reach",
            lower.map_or("-inf".into(), |v| v.to_string()),
            upper.map_or("+inf".into(), |v| v.to_string())
        ),
        reconstruct::Evidence::LostSchema { sampled } => format!(
            "no table of the schema fits its records: a table of its own is inferred from {sampled} sampled records"
        ),
        reconstruct::Evidence::NamedByIndex { index, entries, matched } => format!(
            "index `{index}`, whose schema row survives, names its table: {matched} of its {entries} entries name rows of these pages"
        ),
        reconstruct::Evidence::IndexEntries { looked_up, held } => format!(
            "the table's own indexes hold {held} of {looked_up} of its rows looked up (their keyed values and rowids), and no other table's do"
        ),
        reconstruct::Evidence::KnownSchema { origin, sampled, fitting, runner_up, indexes, keyed_exactly } => format!(
            "{fitting} of {sampled} sampled records of its table fit a CREATE statement {origin} knows{}{}",
            runner_up.as_ref().map_or(String::new(), |(n, k)| format!("; next best `{n}`: {k}")),
            match (indexes, keyed_exactly) {
                (0, _) => String::new(),
                (n, true) => format!("; {n} orphan index trees key its rows as its indexes do, every one"),
                (n, false) => format!("; {n} orphan index trees key its rows as some of its indexes do"),
            }
        ),
        reconstruct::Evidence::Shape { sampled, fitting, runner_up } => format!(
            "{fitting} of {sampled} sampled records fit the table's columns{}",
            runner_up.as_ref().map_or(String::new(), |(n, k)| format!("; next best `{n}`: {k}"))
        ),
    }
}

fn table_reports(p: &LossReportParts<'_>) -> Vec<TableReport> {
    p.tables
        .iter()
        .map(|t| {
            let tree = t
                .root
                .and_then(|root| p.survey.trees.iter().find(|tr| tr.root == root));
            // A table whose b-tree gave nothing is not "recovered", whatever was rebuilt in it.
            let lost = t.status == TableStatus::Recovered && t.loss.root_lost && t.loss.written() == 0;
            // A virtual table refilled from canonical rows was not skipped: it says so, in
            // the words of its `schema_objects` entry.
            let rebuilt = p.ledger.objects.iter().find(|o| {
                t.status == TableStatus::Skipped
                    && o.kind == ObjectKind::VirtualTable
                    && o.status == ObjectStatus::Rebuilt
                    && o.name.eq_ignore_ascii_case(&t.name)
            });
            TableReport {
                name: t.name.clone(),
                status: match (lost, rebuilt) {
                    (true, _) => TableStatus::Lost,
                    (_, Some(_)) => TableStatus::Rebuilt,
                    _ => t.status,
                },
                reason: rebuilt.and_then(|o| o.reason.clone()).or_else(|| t.reason.clone()).or_else(|| {
                    lost.then(|| {
                        "its root page is unreadable and no orphan page holds its rows: not one of them could be read".to_string()
                    })
                }),
                root: t.root.map(PageNo::get),
                // A virtual table refilled row by row (rebuilt, or made a plain table of its
                // columns when its module is missing here) holds the rows refilled.
                rows_in_output: match p.ledger.refilled.get(rebuilt.map_or(&t.name, |o| &o.name)) {
                    Some(refilled) => Some(*refilled),
                    None if lost
                        || matches!(t.status, TableStatus::Recovered | TableStatus::Inferred) =>
                    {
                        Some(t.loss.written() + t.loss.placeholders + t.loss.partial_rows)
                    }
                    None => None,
                },
                rows_written: t.loss.written(),
                rows_from_tree: t.loss.from_tree,
                rows_from_orphans: t.loss.from_orphans,
                rows_damaged: t.loss.damaged_rows,
                cells_unreadable: t.loss.unreadable_cells,
                conflicts: t.loss.conflicts,
                rejected_to_lost_and_found: t.loss.rejected,
                rows_unwritable: t.loss.unwritable,
                placeholders: t.loss.placeholders,
                rows_partial: t.loss.partial_rows,
                partial_refused: t.loss.partial_refused,
                texts_not_in_encoding: t.loss.texts_not_in_encoding,
                blob_kinds: blob_kinds(t),
                lost_rows: t.bounds.as_ref().map(|b| LostRows {
                    lower_bound: b.lower,
                    upper_bound: b.upper,
                    proven_by_index: b.proven_by_index,
                    proven_by_text: b.proven_by_text,
                    evidence: b.evidence.clone(),
                }),
                lost_subtrees: tree
                    .map(|tr| {
                        tr.lost
                            .iter()
                            .map(|l| LostSubtree {
                                parent: l.parent.get(),
                                child: l.child,
                                rowid_above: l.bounds.lower,
                                rowid_up_to: l.bounds.upper,
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
                orphan_groups: t.orphans.iter().map(group_report).collect(),
                findings: FindingList::new(
                    tree.map(|tr| tr.findings.as_slice()).unwrap_or_default(),
                ),
            }
        })
        .collect()
}

fn placeholder_report(p: &LossReportParts<'_>) -> PlaceholderReport {
    let mut made = Listed::default();
    for m in &p.placeholders.made {
        made.push(PlaceholderEntry {
            table: m.table.clone(),
            rowid: m.rowid,
            key: m.key.clone(),
            child_table: m.child_table.clone(),
            children: m.children,
            filled_columns: m.filled.clone(),
            relationship: m.origin.clone(),
        });
    }
    let mut blocked = Listed::default();
    for b in &p.placeholders.blocked {
        blocked.push(BlockedEntry {
            table: b.table.clone(),
            key: b.key.clone(),
            child_table: b.child_table.clone(),
            children: b.children,
            reason: b.why.to_string(),
        });
    }
    let mut dangling = Listed::default();
    for d in &p.placeholders.dangling {
        dangling.push(d.clone());
    }
    PlaceholderReport {
        profiles: p.profiles.to_vec(),
        registry: p.placeholders.registry.clone(),
        made,
        blocked,
        dangling,
    }
}

/// Builds the loss report: committed nowhere yet, paths left to [`LossReport::run`].
pub fn build(p: LossReportParts<'_>) -> LossReport {
    let signals = signals(&p);
    let flags = Verdict::of(&signals, p.verified);
    let loss: Vec<String> = signals.iter().map(ToString::to_string).collect();
    let warnings = warnings(&p, &loss);
    LossReport {
        format_version: FORMAT_VERSION,
        tool: Tool::this(),
        source: p.source.clone(),
        wal: p.wal.report.clone(),
        journal: p.journal.report.clone(),
        geometry: geometry(p.db),
        pages: page_summary(&p),
        schema: SchemaSource {
            rows: p.schema_rows.0,
            rows_found_by_scan: p.schema_rows.1,
            findings: FindingList::new(&p.survey.schema.findings),
            stand_in_collations: p.stand_ins.to_vec(),
            stand_in_tokenizers: stand_in_tokenizers(p.ledger),
        },
        applications: applications(p.tables, p.survey.schema.findings.is_empty()),
        tables: table_reports(&p),
        lost_and_found: lost_and_found_report(&p),
        placeholders: placeholder_report(&p),
        partial_rows: PartialRowsReport {
            registry: p.partial_registry.map(str::to_string),
            rows: p.tables.iter().map(|t| t.loss.partial_rows).sum(),
            refused: p.tables.iter().map(|t| t.loss.partial_refused).sum(),
        },
        carved: p.ledger.carved.clone(),
        history: p.ledger.history.clone(),
        provenance: p.ledger.provenance.clone(),
        damaged_fields: DamagedFieldsReport {
            registry: p.ledger.damaged_fields.name.clone(),
            fields: p.ledger.damaged_fields.fields,
        },
        schema_objects: p.ledger.objects.clone(),
        conflicts: p.ledger.conflicts.clone(),
        flags,
        evidence: FlagEvidence {
            loss,
            signals,
            verified: p.ledger.verified.clone(),
        },
        warnings,
        output: OutputState {
            committed: false,
            location: OutputLocation::None,
            sha256: None,
            accepted: None,
        },
        repair: None,
        run: RunPaths {
            started_utc: String::new(),
            finished_utc: String::new(),
            command_line: Vec::new(),
            case: None,
            examiner: None,
            build: String::new(),
            source_path: String::new(),
            source_link: None,
            dest_path: String::new(),
            report_path: String::new(),
            wal_path: None,
            journal_path: None,
            repair: None,
            archive_member: None,
        },
    }
}

/// The applications the tables identify: the schema's, and the profiles that named tables
/// from their records (an inferred table keeps `salvage_inferred_N` when nothing named it).
/// `schema_whole`: the schema was read without a finding.
fn applications(tables: &Tables, schema_whole: bool) -> Vec<crate::report::Identified> {
    let present: Vec<crate::recover::profiles::Present> = tables
        .iter()
        .filter(|t| t.status != TableStatus::Missing)
        .map(|t| crate::recover::profiles::Present {
            name: t.name.clone(),
            from_schema: t.status != TableStatus::Inferred,
            columns: t
                .shape
                .as_ref()
                .map(|s| s.columns.iter().map(|c| c.name.clone()).collect())
                .unwrap_or_default(),
            affinities: t
                .shape
                .as_ref()
                .map(|s| s.columns.iter().map(|c| c.affinity()).collect())
                .unwrap_or_default(),
            types: t
                .shape
                .as_ref()
                .filter(|_| t.status != TableStatus::Inferred)
                .map(|s| s.columns.iter().map(|c| c.decl_type.clone()).collect())
                .unwrap_or_default(),
        })
        .collect();
    let named_by: Vec<String> = tables
        .iter()
        .filter_map(|t| t.known_from.as_deref()?.strip_prefix("profile "))
        .map(str::to_string)
        .collect();
    crate::recover::profiles::identify(&present, &named_by, schema_whole)
}

/// The tokenizers given a stand-in, each once, in name order.
fn stand_in_tokenizers(ledger: &Ledger) -> Vec<String> {
    let mut names: Vec<String> = ledger.tokenizer_stand_ins.values().cloned().collect();
    names.sort();
    names.dedup();
    names
}

/// Every warning of the run, in the report's order: the ledger's, the header's size
/// below the file's, text kept not valid in the file's encoding, the journal's, the
/// dangling references (never loss), then each sentence of loss.
fn warnings(p: &LossReportParts<'_>, loss: &[String]) -> Vec<String> {
    let db = p.db;
    let mut warnings = p.ledger.warnings.clone();
    if pager::is_empty_database(db.bytes()) {
        warnings.push(
            "the source is an empty file (0 bytes): SQLite opens it as an empty database, and so it is read; the output is an empty database".into(),
        );
    }
    // So is a tokenizer: the application's index is copied as it was.
    for (table, name) in &p.ledger.tokenizer_stand_ins {
        warnings.push(format!(
            "full-text table `{table}` names the tokenizer `{name}`, which this build lacks: it was made with its declared SQL over a stand-in (a copy of `simple`), and its shadow tables were copied as stored, the index as the file holds it, unchecked (SQLite's check of it needs the application's tokenizer: a damaged index is copied as it is); queries split their words as `simple` does (register the application's tokenizer to query it as the application does)"
        ));
    }
    // A collation this build lacks is a note on the schema, not loss: every row is there.
    for name in p.stand_ins {
        warnings.push(format!(
            "the schema names the collation `{name}`, which this build lacks: a stand-in comparing bytes (BINARY's order) made its tables and indexes with their declared SQL, every row as stored; an index on it is in binary order, not the application's (run `REINDEX {name}` where the application's collation is registered)"
        ));
    }
    // A valid in-header size below the file's: SQLite would read only that many pages;
    // every page of the file is read here, and the report says so.
    for f in db.findings() {
        if let pager::Finding::DatabaseSizeMismatch { declared, actual } = f {
            if actual > declared {
                warnings.push(format!(
                    "the header declares {declared} pages but the file holds {actual}: all {actual} were read (SQLite would read {declared})"
                ));
            } else if !reconstruct::reaches_past_end(p.survey, *actual) {
                warnings.push(format!(
                    "the header declares {declared} pages but the file holds {actual}, and no pointer of the file reaches past its end: no page is missing (SQLite, which trusts the header, calls the file malformed)"
                ));
            }
        }
    }
    // Rows that fail their table's CHECK constraint as the file holds them: kept as read,
    // and named.
    warnings.extend(
        p.source
            .sqlite_check
            .failing_checks
            .iter()
            .map(|c| format!("{c}; recovered as read, each value as the file holds it")),
    );
    // Text SQLite was given as it is: kept, and said, but no loss.
    for t in p.tables.iter().filter(|t| t.loss.texts_not_in_encoding > 0) {
        warnings.push(format!(
            "table `{}`: {} not valid {} (the file's text encoding), kept byte for byte as stored: SQLite stores whatever bytes an application binds as text, and bytes damaged in place read so too",
            t.name,
            reconstruct::loss::N(t.loss.texts_not_in_encoding, "text value"),
            db.encoding()
        ));
    }
    warnings.extend(p.wal.warning.iter().cloned());
    warnings.extend(p.journal.warning.iter().cloned());
    // A reference the source already held dangling: said, never loss.
    warnings.extend(p.placeholders.dangling.iter().map(ToString::to_string));
    warnings.extend(loss.iter().cloned());
    warnings
}

/// The page geometry and text encoding used, and where each came from.
fn geometry(db: &pager::Database<'_>) -> Geometry {
    let (page_size_source, page_size_evidence) = page_size_decision(db);
    Geometry {
        page_size: db.page_size().get(),
        page_size_source: page_size_source.to_string(),
        page_size_evidence,
        reserved_space: db.reserved_space(),
        text_encoding: db.encoding().to_string(),
        text_encoding_source: match db.encoding_source() {
            pager::EncodingSource::Header => "header",
            pager::EncodingSource::Inferred { .. } => "inferred",
        }
        .to_string(),
        page_count: db.page_count(),
        findings: FindingList::new(db.findings()),
    }
}

/// Pages per class, orphan b-tree pages, the damaged pages in runs, the page map.
fn page_summary(p: &LossReportParts<'_>) -> PageSummary {
    let mut damaged = Listed::default();
    for run in damaged_page_runs(p.db, p.survey) {
        let pages = run.pages();
        damaged.push_counting(
            DamagedPage {
                page: run.first,
                last: (run.last != run.first).then_some(run.last),
                class: run.class.map_or("past_end", |c| c.name()).to_string(),
                why: run.why,
            },
            pages,
        );
    }
    PageSummary {
        by_class: p
            .survey
            .page_map
            .counts()
            .into_iter()
            .map(|(c, n)| (c.name().to_string(), n))
            .collect(),
        orphan_btree_pages: p.survey.page_map.orphans().count() as u32,
        damaged,
        map: page_map(p),
    }
}

/// The rows no table could be given, and the orphan groups they came from.
fn lost_and_found_report(p: &LossReportParts<'_>) -> LostAndFoundReport {
    LostAndFoundReport {
        table: p
            .lost_and_found
            .name
            .clone()
            .filter(|_| p.lost_and_found.rows > 0),
        rows: p.lost_and_found.rows,
        groups: p
            .unattributed
            .iter()
            .map(|g| OrphanGroupReport {
                top: g.top.get(),
                pages: g.pages.len(),
                cells: g.cells,
                rowids: g.rowids.map(|(lo, hi)| [lo, hi]),
                confidence: None,
                evidence: p
                    .candidates
                    .iter()
                    .filter(|(top, _)| *top == g.top)
                    .map(|(_, tables)| candidates_sentence(tables))
                    .collect(),
            })
            .collect(),
        index_groups: p.index_groups,
        widest_record: Some(p.lost_and_found.widest).filter(|w| *w > 0),
    }
}

/// The page map: each b-tree page by the table or index whose tree reaches it, each orphan
/// page by the table it was given to.
fn page_map(p: &LossReportParts<'_>) -> crate::report::map::PageMapReport {
    use std::collections::HashMap;
    let mut names: Vec<String> = vec!["sqlite_schema".into()];
    let mut objects: HashMap<PageNo, usize> = HashMap::from([(PageNo::FIRST, 0)]);
    for row in p.survey.schema.rows.iter().filter(|r| r.has_btree()) {
        if let Some(root) = row.rootpage {
            objects.entry(root).or_insert(names.len());
            names.push(row.name.clone());
        }
    }
    let mut given: HashMap<PageNo, usize> = HashMap::new();
    for t in p.tables.iter().filter(|t| !t.orphans.is_empty()) {
        let at = names.len();
        names.push(t.name.clone());
        for a in &t.orphans {
            for page in &a.group.pages {
                given.insert(*page, at);
            }
        }
    }
    crate::report::map::page_map(&p.survey.page_map, &objects, &given, &names)
}

/// A table's BLOB kinds by column name (a place past the table's columns, a record longer
/// than its shape, by its place: `cN`).
fn blob_kinds(t: &crate::recover::tables::TableRun) -> BTreeMap<String, BTreeMap<String, u64>> {
    let order = t
        .shape
        .as_ref()
        .map(|s| s.record_order())
        .unwrap_or_default();
    let mut kinds: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for ((place, kind), n) in &t.blob_kinds.0 {
        let column = order
            .get(*place)
            .and_then(|c| t.shape.as_ref()?.columns.get(*c))
            .map_or_else(|| format!("c{place}"), |c| c.name.clone());
        let kind = kind.map_or("unknown", reconstruct::Magic::name);
        *kinds
            .entry(column)
            .or_default()
            .entry(kind.to_string())
            .or_insert(0) += n;
    }
    kinds
}
