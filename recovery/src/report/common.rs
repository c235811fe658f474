//! What the inspect document and the loss report share: the tool, lists of findings, how
//! the page size was decided, why each damaged page is damaged.

use std::collections::BTreeMap;

use pager::{Database, Finding, PageClass, PageNo, PageSizeSource, Survey};
use serde::{Deserialize, Serialize};

/// Findings listed per list at most; the counts beside each list are always complete.
pub const FINDINGS_LISTED: usize = 1000;

/// What SQLite's own `PRAGMA integrity_check` says of the source as read (the main file
/// with its log applied): run on a private copy in memory, never on the evidence. A file
/// SQLite calls malformed is never called complete or healthy without a finding or a
/// sign of loss that explains it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SqliteCheck {
    /// `ok`, `problems`, or `not_run`.
    pub state: SqliteCheckState,
    /// The problems, as SQLite words them (at most its first thousand).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// Why it was not run: the file is larger than the check's limit, or its schema
    /// needs a module, function or collation this build lacks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_run: Option<String>,
    /// For each table SQLite says fails its CHECK constraint, the rows that do, found by
    /// the constraint's expressions in SQLite's read of the same copy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failing_checks: Vec<reconstruct::FailingCheck>,
}

/// What SQLite's check came to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SqliteCheckState {
    /// SQLite finds nothing wrong.
    Ok,
    /// SQLite reports problems.
    Problems,
    /// The check was not run (why, in `not_run`).
    #[default]
    NotRun,
}

impl SqliteCheck {
    /// A check not run, and why.
    pub fn not_run(why: impl Into<String>) -> SqliteCheck {
        SqliteCheck {
            state: SqliteCheckState::NotRun,
            problems: Vec::new(),
            not_run: Some(why.into()),
            failing_checks: Vec::new(),
        }
    }

    /// Whether SQLite listed every problem it found: its list stops at a thousand.
    pub fn complete(&self) -> bool {
        self.state == SqliteCheckState::Problems
            && self.problems.len() < crate::base::sqlite::CHECK_LINES as usize
    }
}

/// The tool that wrote a document.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Tool {
    /// `salvage`.
    pub name: String,
    /// The version that wrote the document.
    pub version: String,
}

impl Tool {
    /// This build: the version, the platform and whether it was built optimized, e.g.
    /// `salvage 0.1.0 (x86_64-linux, release)`.
    pub fn build() -> String {
        format!(
            "salvage {} ({}-{}, {})",
            env!("CARGO_PKG_VERSION"),
            std::env::consts::ARCH,
            std::env::consts::OS,
            if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
        )
    }

    /// This tool.
    pub fn this() -> Tool {
        Tool {
            name: "salvage".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// How well the file's pages fit one candidate page size, when the page size was
/// inferred.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PageSizeEvidenceReport {
    /// The candidate page size, in bytes.
    pub page_size: u32,
    /// Pages examined at this size (a sample spread over the whole file).
    pub pages_checked: u64,
    /// Of those, pages whose b-tree page header parses at this size.
    pub btree_headers: u64,
    /// Of those, pages whose cells end exactly at the usable end of a page of this size.
    pub exact_fits: u64,
}

/// A list of findings with its complete count; at most [`FINDINGS_LISTED`] are listed.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FindingList {
    /// How many findings there are in all, however many are listed.
    pub count: usize,
    /// The first [`FINDINGS_LISTED`] of them, in the order they were met.
    pub listed: Vec<FindingReport>,
}

impl FindingList {
    /// No finding at all.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

impl FindingList {
    /// Counts `findings` and lists the first [`FINDINGS_LISTED`].
    pub fn new<'f>(findings: impl IntoIterator<Item = &'f Finding>) -> FindingList {
        let mut count = 0;
        let mut listed = Vec::new();
        for f in findings {
            count += 1;
            if listed.len() < FINDINGS_LISTED {
                listed.push(FindingReport::from(f));
            }
        }
        FindingList { count, listed }
    }
}

/// One finding: `{ "kind", "page", "message" }`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FindingReport {
    /// The `Finding` variant, snake_case (every kind is listed in `docs/pager.md`).
    pub kind: String,
    /// The page it concerns; `null` for header and whole-file findings.
    pub page: Option<u32>,
    /// What was found, as a sentence with the location and the raw value observed.
    pub message: String,
}

impl From<&Finding> for FindingReport {
    fn from(f: &Finding) -> FindingReport {
        FindingReport {
            kind: f.kind().to_string(),
            page: f.page().map(PageNo::get),
            message: f.to_string(),
        }
    }
}

/// How the page size in use was decided ("header", "wal" or "inferred"), with the
/// evidence for every candidate size when it was inferred.
pub fn page_size_decision(db: &Database<'_>) -> (&'static str, Vec<PageSizeEvidenceReport>) {
    match db.page_size_source() {
        PageSizeSource::Header => ("header", Vec::new()),
        PageSizeSource::Wal => ("wal", Vec::new()),
        PageSizeSource::Journal => ("journal", Vec::new()),
        PageSizeSource::Inferred { evidence } => (
            "inferred",
            evidence
                .iter()
                .map(|e| PageSizeEvidenceReport {
                    page_size: e.page_size.get(),
                    pages_checked: e.pages_checked,
                    btree_headers: e.btree_headers,
                    exact_fits: e.exact_fits,
                })
                .collect(),
        ),
    }
}

/// A run of consecutive damaged pages of one class, damaged for the same reasons.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DamagedRun {
    /// Its first page.
    pub first: u32,
    /// Its last page (the first, for a run of one).
    pub last: u32,
    /// The pages' class; `None` for pages a finding names past the file's last page.
    pub class: Option<PageClass>,
    /// Why, one sentence each (at most eight findings, then "orphan …" or "… that no
    /// structure claims").
    pub why: Vec<String>,
}

impl DamagedRun {
    /// Pages in the run.
    pub fn pages(&self) -> u64 {
        u64::from(self.last - self.first) + 1
    }
}

/// The damaged pages in runs, in page order: every page a finding names, every orphan
/// b-tree page, and every zeroed or unrecognised page that no structure claims. Pages one
/// after another of one class and the same reasons make one run, so that a file padded
/// with gigabytes of zeros gives one entry, not millions.
pub fn damaged_page_runs(db: &Database<'_>, survey: &Survey) -> Vec<DamagedRun> {
    let mut named: BTreeMap<PageNo, Vec<String>> = BTreeMap::new();
    for f in db.findings().iter().chain(survey.all_findings()) {
        if let Some(p) = f.page() {
            let reasons = named.entry(p).or_default();
            if reasons.len() < 8 {
                reasons.push(f.to_string());
            }
        }
    }
    let map = &survey.page_map;
    for (p, c) in map.orphans() {
        named
            .entry(p)
            .or_default()
            .push(format!("orphan {c}: no b-tree of the schema reaches it"));
    }
    let mut runs: Vec<DamagedRun> = Vec::new();
    let mut add =
        |first: u32, last: u32, class: Option<PageClass>, why: Vec<String>| match runs.last_mut() {
            Some(r) if r.last + 1 == first && r.class == class && r.why == why => r.last = last,
            _ => runs.push(DamagedRun {
                first,
                last,
                class,
                why,
            }),
        };
    // Run by run of the map, so that a run of zeroed padding costs one step, not one per page.
    for (first, pages, class, owner) in map.runs() {
        let last = first.get().saturating_add(pages - 1);
        let unclaimed =
            matches!(class, PageClass::Zeroed | PageClass::Unrecognised) && owner.is_none();
        let plain = || vec![format!("{class} that no structure claims")];
        let inside: Vec<PageNo> = PageNo::new(last)
            .map(|end| named.range(first..=end).map(|(p, _)| *p).collect())
            .unwrap_or_default();
        let mut next = first.get();
        for p in inside {
            if unclaimed && next < p.get() {
                add(next, p.get() - 1, Some(class), plain());
            }
            let mut why = named.remove(&p).unwrap_or_default();
            if unclaimed {
                why.extend(plain());
            }
            add(p.get(), p.get(), Some(class), why);
            next = p.get() + 1;
        }
        if unclaimed && next <= last {
            add(next, last, Some(class), plain());
        }
    }
    // Pages findings name past the file's end.
    for (p, why) in named {
        add(p.get(), p.get(), None, why);
    }
    runs
}

/// An application whose database this is, by the catalogue of application schemas
/// (`recovery/profiles/catalogue/`) and the shipped profiles.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identified {
    /// The profile (`--profile NAME`), one per application database.
    pub profile: String,
    /// The application, as a person names it.
    pub application: String,
    /// What kind of application (browser, messenger, mobile-os, …); empty for a shipped
    /// profile without one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub category: String,
    /// How: `schema` (every table the profile is detected by is in the schema) or
    /// `records` (some of them were named from their records, the schema row being lost).
    pub by: IdentifiedBy,
    /// The tables the profile is detected by.
    pub detected_by: Vec<String>,
    /// Of the tables the profile knows (every version), how many the database has.
    pub tables_present: usize,
    /// How many tables the profile knows.
    pub tables_known: usize,
    /// The versions its schema is known from (the provenance's).
    pub versions: Vec<String>,
    /// The version the tables are of, as their columns tell it; none where no table is
    /// as a version the profile names writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<VersionFit>,
}

/// The versions of an application whose statements the tables fit best.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionFit {
    /// Their tags: one where the evidence decides, several where it cannot tell them
    /// apart; none where no table is as a version of the profile writes it.
    pub tags: Vec<String>,
    /// How many tables have the columns (by name, in order) of a statement of theirs.
    pub tables: usize,
    /// Versions that fit as many tables by their columns' names were ruled out by their
    /// declared types.
    #[serde(default)]
    pub types_decided: bool,
    /// Versions that fit as many tables were ruled out by tables of theirs the schema
    /// lacks (the schema being whole).
    #[serde(default)]
    pub absent_decided: bool,
    /// The tables of the profile's names whose columns are those of no statement of any
    /// version it knows: the tables are of a version the profile lacks, and `tags` are the
    /// nearest it knows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown: Vec<String>,
}

/// How an application was identified.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdentifiedBy {
    /// By the tables of its schema.
    Schema,
    /// By records fitting its tables, their schema rows lost.
    Records,
}

/// A member of an archive, where a database was read from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchiveMember {
    /// The archive, as given.
    pub archive: String,
    /// Its SHA-256, hex, of the whole archive as read.
    pub archive_sha256: String,
    /// The member's path inside the archive.
    pub member: String,
}
