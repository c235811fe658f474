//! The fourth stage: the rebuild. What the rows could not bring back is rebuilt from other
//! evidence, every rebuilt row registered and still counted as lost:
//!
//! - loss bounds for each damaged table ([`reconstruct::bound_table`], on the second core
//!   while the indexes are made), which also prove lost rows by their surviving index
//!   entries and full-text copies;
//! - partial rows from that evidence ([`partial`]), and from full-text copies keyed by a
//!   column (`keyed`), registered in `salvage_partial_rows`;
//! - placeholder parents for children whose parent row is lost ([`placeholders`]),
//!   registered in `salvage_placeholders` (children whose parent table lost no row that
//!   could hold their key reference a row the source never held: reported, not rebuilt).

use reconstruct::{Bounded, BoundsInput, LossBounds, ResolvedCopy, TableStatus, TextCopy};

use crate::base::error::Error;
use crate::base::observer::{enter, Observer, Stage};
use crate::recover::evidence::Evidence;
use crate::recover::ledger::Ledger;
use crate::recover::load::{Found, Loaded};
use crate::recover::plan::Work;
use crate::recover::profiles::Profiles;

mod keyed;
pub mod partial;
pub mod placeholders;

/// The output with every row rebuilt that evidence allows: what the finish completes.
pub struct Rebuilt {
    /// The output, its tables, the record.
    pub work: Work,
    /// What the load found beyond the tables' rows.
    pub found: Found,
    /// The partial rows' registry, once one is written.
    pub partial_registry: Option<String>,
    /// Placeholder parents made and refused.
    pub placeholders: reconstruct::PlaceholderOutcome,
    /// The profiles that applied: name and description.
    pub profiles: Vec<[String; 2]>,
}

/// The text copies the schema's triggers and the profiles state, resolved against the
/// source and the output; those that cannot be used are warned about.
pub fn text_copies(
    evidence: &Evidence<'_>,
    loaded: &mut Loaded,
    profiles: &Profiles,
) -> Vec<ResolvedCopy> {
    let names = loaded.work.tables.filled_names();
    let stated: Vec<TextCopy> = profiles
        .applying(&names)
        .iter()
        .filter_map(|p| p.text_copies(evidence.encoding()).ok())
        .flatten()
        // A profile's copy applies only where its full-text table exists.
        .filter(|c| {
            evidence
                .schema
                .rows
                .iter()
                .any(|r| r.name.eq_ignore_ascii_case(&c.fts))
        })
        .collect();
    let (copies, unusable) = reconstruct::textcopy::resolve(
        &evidence.schema,
        &loaded.work.out,
        stated,
        &loaded.work.tables.shapes(),
    );
    loaded.work.ledger.warnings.extend(unusable);
    copies
}

/// Whether the rebuild reads the source: text copies keyed by a column (read while the
/// partial rows are taken in) and virtual tables (refilled from their shadow tables in
/// the source). The second hash of the source waits for them.
pub fn reads_source_late(copies: &[ResolvedCopy], ledger: &Ledger) -> bool {
    copies.iter().any(|c| c.copy.key.is_some()) || !ledger.created_virtual_tables().is_empty()
}

/// What bounding each damaged table's loss needs, taken out of the load's record so that
/// it can be worked out on the second core while the output is finished.
pub fn bounds_inputs(
    evidence: &Evidence<'_>,
    loaded: &mut Loaded,
    copies: &[ResolvedCopy],
) -> Vec<BoundsInput> {
    let sequences = evidence.sequences();
    let analyzed = evidence.stat1_rows();
    let mut out = Vec::new();
    for t in loaded.work.tables.iter_mut() {
        let Some(shape) = &t.shape else { continue };
        let rowids = std::mem::take(&mut t.written_rowids);
        if shape.without_rowid || t.status != TableStatus::Recovered {
            continue;
        }
        let tree = t
            .root
            .and_then(|r| loaded.found.survey.trees.iter().find(|tr| tr.root == r));
        let lost: Vec<pager::LostChild> = tree.map(|tr| tr.lost.clone()).unwrap_or_default();
        let suspect = tree.map_or(0, |tr| {
            tr.findings
                .iter()
                .filter(|f| reconstruct::disguises_cells(f))
                .count() as u64
        });
        if lost.is_empty()
            && !t.loss.root_lost
            && t.loss.rejected == 0
            && t.loss.unreadable_cells == 0
            && t.loss.unwritable == 0
            && suspect == 0
        {
            continue;
        }
        let rowids = rowids.settled();
        let indexes = crate::recover::evidence::indexes::table_indexes(evidence, &t.name);
        // A counter below a recovered rowid contradicts the rows: it proves nothing.
        let sequence = sequences
            .get(&t.name.to_lowercase())
            .copied()
            .filter(|seq| rowids.last().is_none_or(|last| last <= *seq));
        out.push(BoundsInput {
            table: t.id,
            sequence,
            analyzed_rows: analyzed.get(&t.name.to_lowercase()).copied(),
            lost,
            root_lost: t.loss.root_lost,
            known: reconstruct::KnownMissing {
                rejected: t.loss.rejected,
                rejected_unproven: t.loss.rejected_unproven,
                // Rows read but written nowhere are as missing as undecodable ones.
                unreadable: t.loss.unreadable_cells + t.loss.unwritable,
                suspect,
            },
            rejected_rowids: std::mem::take(&mut t.rejected_rowids),
            rowids,
            indexes,
            copies: copies
                .iter()
                .filter(|c| c.copy.key.is_none() && c.copy.table.eq_ignore_ascii_case(&t.name))
                .cloned()
                .collect(),
        });
    }
    out
}

/// What the rebuild is given besides the loaded output.
pub struct RebuildInputs<'a> {
    /// Each damaged table's bounds and the rows they prove.
    pub bounded: Vec<Bounded>,
    /// The text copies resolved.
    pub copies: &'a [ResolvedCopy],
    /// The profiles chosen.
    pub profiles: &'a Profiles,
    /// Rebuild partial rows (otherwise they stay evidence).
    pub partial_rows: bool,
    /// Write placeholder parents for lost parents (otherwise the children keep their
    /// references, and the loss is reported).
    pub placeholders: bool,
}

impl Rebuilt {
    /// Takes each table's loss bounds in, writes the partial rows they prove, then the
    /// placeholder parents. Partial rows go in first: they may reference a lost parent.
    pub fn run<'s>(
        evidence: &Evidence<'s>,
        loaded: Loaded,
        inputs: RebuildInputs<'_>,
        observer: &dyn Observer,
    ) -> Result<Rebuilt, Error> {
        let Loaded { mut work, found } = loaded;
        let Work {
            out,
            tables,
            ledger,
            names,
            ..
        } = &mut work;
        if inputs.partial_rows && inputs.bounded.iter().any(|b| !b.partial.is_empty()) {
            enter(observer, Stage::PartialRows)?;
        }
        let mut partial_registry = None;
        let taken = names.taken().clone();
        for b in inputs.bounded {
            keyed::take_bounds(
                &keyed::Context {
                    evidence,
                    out,
                    taken: &taken,
                    copies: inputs.copies,
                    write: inputs.partial_rows,
                },
                b,
                tables,
                ledger,
                &mut partial_registry,
            )
            .map_err(Error::db("writing partial rows"))?;
        }
        enter(observer, Stage::Placeholders)?;
        if let Some(name) = &partial_registry {
            names.take(name);
        }
        let taken = names.taken().clone();
        let (placeholders, profiles) = placeholders::rebuild_parents(
            &placeholders::Context {
                evidence,
                out,
                survey: &found.survey,
                profiles: inputs.profiles,
                taken: &taken,
                make: inputs.placeholders,
            },
            tables,
            ledger,
        )
        .map_err(Error::db("rebuilding lost parent rows"))?;
        if let Some(name) = &placeholders.registry {
            names.take(name);
        }
        // A placeholder stands for a row its children prove existed: the table lost it.
        for t in tables.iter_mut().filter(|t| t.loss.placeholders > 0) {
            t.bounds
                .get_or_insert_with(LossBounds::default)
                .add_placeholder_proof(t.loss.placeholders);
        }
        Ok(Rebuilt {
            work,
            found,
            partial_registry,
            placeholders,
            profiles,
        })
    }
}
