//! Naming a table whose schema row is lost from an index whose schema row survives.
//!
//! An index's CREATE statement names its table and the columns it keys on, and each of
//! its entries holds those columns' values and the rowid of its row. When the table's
//! own schema row is lost, its b-tree comes back as an inferred table (`c0, c1, …`); if
//! the rowids of the index entries are the rowids of that inferred table, the index names
//! it, and the values of its entries find which record position is which keyed column.
//! A match needs most entries' rows present and their values agreeing; otherwise the
//! table stays inferred.
//!
//! An application profile may also know the application's tables (their CREATE
//! statements, per schema version): an inferred table whose sampled records fit one known
//! table's columns, clearly better than any other's, takes its name and its statement.

use std::collections::{BTreeMap, BTreeSet};

use pager::{Database, PageNo, TextEncoding, Value};

use crate::formats::{ColumnFormat, Verdict};
use crate::plan::InferredTable;
use crate::rows::{RowEvent, TableRows};
use crate::shape::{Affinity, TableShape};

/// Index entries sampled to map record positions to keyed columns.
const SAMPLE: usize = 64;

/// An index whose table's schema row is lost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrphanIndex {
    /// The index's name.
    pub name: String,
    /// The table its CREATE statement names.
    pub table: String,
    /// Its root page.
    pub root: PageNo,
    /// The columns it keys on, in order (see [`index_columns`]).
    pub columns: Vec<String>,
}

/// An inferred table the evidence names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Naming {
    /// Which inferred table (its position in the list given).
    pub inferred: usize,
    /// The table's name, from the index.
    pub table: String,
    /// The index that names it.
    pub index: String,
    /// Index entries read.
    pub entries: u64,
    /// Of those, entries whose rowid is a row of the inferred table.
    pub matched: u64,
    /// Record positions identified as keyed columns, by the values of sampled entries.
    pub columns: BTreeMap<usize, String>,
}

/// The column names of a `CREATE INDEX … ON table(columns)` statement, in key order;
/// `None` for an index on an expression (or a statement that does not parse that way).
pub fn index_columns(sql: &str) -> Option<Vec<String>> {
    // The first parenthesis opens the column list: `CREATE INDEX name ON table(`.
    let open = sql.find('(')?;
    let close = open + sql[open..].rfind(')')?;
    let list = &sql[open + 1..close];
    // A WHERE clause after the list (a partial index) lies beyond `close`, unless it
    // holds parentheses itself: then the list ends at the first ')' at depth 0.
    let mut depth = 0;
    let mut end = list.len();
    for (i, c) in list.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => {
                end = i;
                break;
            }
            ')' => depth -= 1,
            _ => {}
        }
    }
    let list = &list[..end];
    if list.contains('(') {
        return None;
    }
    list.split(',')
        .map(|term| {
            let term = term.trim_start();
            // A quoted name runs to its closing quote; a bare one to the first space.
            let close = match term.chars().next()? {
                '"' => Some('"'),
                '`' => Some('`'),
                '[' => Some(']'),
                '\'' => Some('\''),
                _ => None,
            };
            let name = match close {
                Some(q) => term.get(1..)?.split(q).next()?,
                None => term.split_whitespace().next()?,
            };
            (!name.is_empty()).then(|| name.to_string())
        })
        .collect()
}

/// Matches each orphan index against the inferred tables: the one holding the rows of
/// at least nine in ten of its entries is its table. Each inferred table and each table
/// name is given once; the index with the most entries decides first.
pub fn name_inferred(
    db: &Database<'_>,
    inferred: &[InferredTable],
    indexes: &[OrphanIndex],
) -> Vec<Naming> {
    if inferred.is_empty() || indexes.is_empty() {
        return Vec::new();
    }
    // Each inferred table's rowids (as runs: a few thousand for millions of rows): its
    // records are decoded for the sampled entries only (held all, a table of a file whose
    // schema page was lost was held whole).
    let rowids: Vec<crate::Rowids> = inferred
        .iter()
        .map(|t| {
            TableRows::new(db, None, t.groups.iter())
                .filter_map(|e| match e {
                    RowEvent::Row(r) => r.rowid(),
                    RowEvent::Unreadable { .. } => None,
                })
                .collect::<crate::RowidSet>()
                .settled()
        })
        .collect();
    // Each index's entries counted, and those of each table's rows, in one pass; the key
    // values are read again for the sample only.
    let mut counted: Vec<(usize, usize, Vec<usize>)> = indexes
        .iter()
        .enumerate()
        .map(|(i, ix)| {
            let mut of_table = vec![0; rowids.len()];
            let mut all = 0;
            for (_, rowid) in pager::search::index_entries(db, ix.root) {
                all += 1;
                for (n, r) in of_table.iter_mut().zip(&rowids) {
                    *n += usize::from(r.contains(rowid));
                }
            }
            (i, all, of_table)
        })
        .collect();
    counted.sort_by_key(|(_, all, _)| std::cmp::Reverse(*all));
    let mut out: Vec<Naming> = Vec::new();
    for (i, all, of_table) in counted {
        let Some(ix) = indexes.get(i) else { continue };
        let taken = |t: usize, name: &str| {
            out.iter()
                .any(|n| n.inferred == t || n.table.eq_ignore_ascii_case(name))
        };
        if all == 0 {
            continue;
        }
        // Spread over the index: under twice `SAMPLE`, of which `map_columns` takes the
        // first `SAMPLE` whose rows the table holds.
        let stride = (all / SAMPLE).max(1);
        let sample: Entries = pager::search::index_entries(db, ix.root)
            .step_by(stride)
            .map(compared_entry)
            .collect();
        let wanted: BTreeSet<i64> = sample.iter().map(|(_, rowid)| *rowid).collect();
        // Every table holding nine of the index's rowids in ten is a candidate (most tables
        // hold the rowids 1 to N, so rowids alone rarely tell two apart); the one whose
        // records hold the entries' key values in the most columns, then the most rowids,
        // is taken, and a tie names neither.
        let mut candidates: Vec<Candidate> = of_table
            .iter()
            .copied()
            .enumerate()
            .filter(|(t, matched)| !taken(*t, &ix.table) && matched * 10 >= all * 9)
            .filter_map(|(t, matched)| {
                let table = inferred.get(t)?;
                let columns = map_columns(&ix.columns, &sample, &records_of(db, table, &wanted));
                Some(((columns.len(), matched), t, columns))
            })
            .collect();
        candidates.sort_by_key(|c| std::cmp::Reverse(c.0));
        let Some(((_, matched), t, columns)) = (match candidates.as_slice() {
            [first, second, ..] if first.0 == second.0 => None,
            [first, ..] => Some(first.clone()),
            [] => None,
        }) else {
            continue;
        };
        out.push(Naming {
            inferred: t,
            table: ix.table.clone(),
            index: ix.name.clone(),
            entries: all as u64,
            matched: matched as u64,
            columns,
        });
    }
    out
}

/// A table an index may name: (key columns its records hold the entries' values in,
/// entries whose rowid it holds), which inferred table, and the record positions of
/// the key columns.
type Candidate = ((usize, usize), usize, BTreeMap<usize, String>);

/// The records of an inferred table's rows of the rowids `wanted`, by rowid (only theirs
/// decoded), as they are compared with index keys ([`compared`]).
fn records_of(
    db: &Database<'_>,
    table: &InferredTable,
    wanted: &BTreeSet<i64>,
) -> BTreeMap<i64, Vec<Value>> {
    TableRows::new(db, None, table.groups.iter())
        .filter_map(|e| match e {
            RowEvent::Row(r) => {
                let rowid = r.rowid().filter(|id| wanted.contains(id))?;
                Some((rowid, compared(r.record().0)))
            }
            RowEvent::Unreadable { .. } => None,
        })
        .collect()
}

/// A table an application is known to create: its CREATE statement as SQLite stores it,
/// and the shape SQLite parsed from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnownTable {
    /// Where it is known from: "profile NAME".
    pub origin: String,
    /// The CREATE TABLE statement.
    pub sql: String,
    /// Its columns.
    pub shape: TableShape,
    /// The indexes the application makes on it: name and CREATE INDEX statement.
    pub indexes: Vec<(String, String)>,
    /// Each of its indexes (those its constraints make too): the record positions of the
    /// columns it keys on, in key order; `None` for one keyed on an expression.
    pub keys: Vec<Option<Vec<usize>>>,
    /// One of its indexes holds an entry for every row and is in every file the table is
    /// in: one its PRIMARY KEY or UNIQUE constraints make (a CREATE INDEX may be missing
    /// from a file, made by another version or never). A file whose index trees are all
    /// traced ([`IndexTrees::complete`]) shows such an index's tree beside the table's
    /// rows.
    pub every_row_indexed: bool,
    /// The formats the application writes in some of its columns, by record position
    /// (a catalogue entry's `formats`).
    pub formats: Vec<(usize, ColumnFormat)>,
    /// Its columns that declare a foreign key (see [`crate::references`]).
    pub references: Vec<crate::references::Reference>,
}

/// An inferred table whose records fit a known table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnownMatch {
    /// Which inferred table (its position in the list given).
    pub inferred: usize,
    /// Which known table (its position in the list given).
    pub known: usize,
    /// Records sampled.
    pub sampled: u32,
    /// Of those, records that fit the known table's columns.
    pub fitting: u32,
    /// Values of the widest record sampled (a record shorter than the table is evidence
    /// of its first columns only).
    pub width: usize,
    /// The next best known table of another name and how many sampled records fit it.
    pub runner_up: Option<(String, u32)>,
    /// Orphan index trees traced to the inferred table ([`keyed_positions`]), every one
    /// keyed as an index of the known table is.
    pub indexes: u32,
    /// Those trees are the known table's indexes, every one (its indexes on expressions
    /// aside); a runner-up whose indexes they are not wholly is outranked by that alone.
    pub keyed_exactly: bool,
    /// The runner-up is outranked by the index trees: they are all this table's indexes
    /// and not all the runner-up's.
    pub outranked_by_indexes: bool,
    /// Names the records fit as well, each taken by another inferred table whose records
    /// fit it better: this table has the one name left (named by elimination, which is
    /// no evidence of its application by itself).
    pub taken_by_others: Vec<String>,
    /// The weight of the known table's column formats the records' values have (one a
    /// format, two a format with its prefix; see [`ColumnFormat::judge`]): evidence of the
    /// table beyond its shape.
    pub formats: u32,
    /// Other statements of the name (other versions) the records fit as well (by the rank
    /// of their indexes, and within a point per sampled record, as names tie) whose
    /// columns are named otherwise: each as the columns that differ, by position,
    /// named here and there. The records hold values, not names: these columns' names
    /// are not decided.
    pub columns_alike: Vec<ColumnsAlike>,
    /// Named among names its records fit alike by the keys a column refers to
    /// ([`crate::references::decide_by_references`]).
    pub referred: Option<crate::references::Referred>,
}

/// Another statement of a table's name its records fit as well ([`KnownMatch::columns_alike`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnsAlike {
    /// Where it is known from: "profile NAME".
    pub origin: String,
    /// The columns named otherwise: position, the name given, the name it has there.
    pub differ: Vec<(usize, String, String)>,
}

/// The statements of `chosen`'s name among `tied` (known positions) whose columns, as
/// many, are named otherwise at some position ([`KnownMatch::columns_alike`]).
fn columns_alike(known: &[KnownTable], chosen: usize, tied: &[usize]) -> Vec<ColumnsAlike> {
    let Some(c) = known.get(chosen) else {
        return Vec::new();
    };
    let mut out: Vec<ColumnsAlike> = Vec::new();
    for other in tied
        .iter()
        .filter(|k| **k != chosen)
        .filter_map(|k| known.get(*k))
    {
        if other.shape.columns.len() != c.shape.columns.len() {
            continue;
        }
        let differ: Vec<(usize, String, String)> = c
            .shape
            .columns
            .iter()
            .zip(&other.shape.columns)
            .enumerate()
            .filter(|(_, (a, b))| !a.name.eq_ignore_ascii_case(&b.name))
            .map(|(i, (a, b))| (i, a.name.clone(), b.name.clone()))
            .collect();
        if !differ.is_empty()
            && !out
                .iter()
                .any(|o| o.differ == differ && o.origin == other.origin)
        {
            out.push(ColumnsAlike {
                origin: other.origin.clone(),
                differ,
            });
        }
    }
    out
}

/// An inferred table whose records fit known tables of two names or more alike, none
/// clearly better: no evidence decides, and it takes none of their names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Undecided {
    /// Which inferred table (its position in the list given).
    pub inferred: usize,
    /// The known tables it fits alike, best first: name, and where it is known from.
    pub candidates: Vec<(String, String)>,
}

/// What [`match_sampled`] decides: the inferred tables named, and those it fits to
/// several names alike.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Matching {
    /// The inferred tables named, in their order.
    pub named: Vec<KnownMatch>,
    /// The inferred tables left unnamed because their records fit several names alike.
    pub undecided: Vec<Undecided>,
}

/// Records sampled from each inferred table to match it against known tables.
const KNOWN_SAMPLE: usize = 256;

/// Bytes of text and blob values the records sampled from one inferred table hold at
/// most (the record that passes it is the last taken), and from all of them: records of
/// large values (8 MB each in a test) sampled 256 to a table held gigabytes.
const SAMPLE_BYTES: (usize, usize) = (8 << 20, 64 << 20);

/// Records sampled from each inferred table, and the text encoding they are in.
#[derive(Clone, Debug, PartialEq)]
pub struct Samples {
    /// Each inferred table's records, in the tables' order.
    pub tables: Vec<Vec<Vec<Value>>>,
    /// The database's text encoding: texts are judged as their characters.
    pub encoding: TextEncoding,
}

/// Records sampled from each inferred table ([`match_sampled`] matches them against
/// known tables), read once for as many matches as a caller runs.
pub fn sample_inferred(db: &Database<'_>, inferred: &[InferredTable]) -> Samples {
    Samples {
        tables: {
            let mut left = SAMPLE_BYTES.1;
            inferred
                .iter()
                .map(|t| sample_records(db, t, &mut left))
                .collect()
        },
        encoding: db.encoding(),
    }
}

/// Matches inferred tables against the tables an application is known to create, from
/// records sampled already ([`sample_inferred`]) and the index trees traced to them
/// ([`keyed_positions`], in `inferred`'s order; none where empty). Only where those trees
/// are all the file's indexes hold ([`IndexTrees::complete`]) does a table whose indexes
/// they are, every one, outrank one they are some of.
///
/// A known table fits when nine sampled records in ten fit its columns (`TableShape::fit`:
/// the rowid alias stored as NULL, NOT NULL columns holding a value, values their affinity
/// admits, a short record only where ALTER TABLE ADD COLUMN could have made it) and nine
/// values in ten that are not NULL have the storage class its declared types call for
/// (see [`typed_as_declared`]; a table's records are evidence of its types), and every
/// index tree traced to the inferred table keys columns as one of its indexes does (an
/// index the known table lacks rules it out), and no column the application writes in a
/// known format ([`KnownTable::formats`]) holds values that mostly lack it. Each such
/// format the values have adds its weight to the score of every fitting record (a
/// column of URLs is more evidence than a column of any text). Of its versions (known tables of one name),
/// the best fitting one stands for the name: the one whose indexes the trees are, then by
/// score. Known tables of fewer than `least_columns` columns besides their INTEGER
/// PRIMARY KEY (and never fewer than one) are not matched: a record of one value is next
/// to no evidence of its table (a full-text table's content shadow table fits any such
/// (key, text) table), unless the known tables are those of an application the database
/// is known to be, as the caller decides.
///
/// An inferred table takes a name only when it fits clearly better than any other name:
/// the index trees are all that name's indexes and not the other's, or it fits by a
/// point of `fit`'s score per record more. `fixed` gives inferred tables already named (by
/// an index): those only take a known version of that name. `taken` names tables that
/// exist; they are never given again, and each name goes to one inferred table, the one
/// whose records fit it best. An inferred table that fits names alike is listed as
/// [`Undecided`], with each of them.
pub fn match_sampled(
    samples: &Samples,
    trees: &IndexTrees,
    inferred: &[InferredTable],
    known: &[KnownTable],
    fixed: &BTreeMap<usize, String>,
    taken: &dyn Fn(&str) -> bool,
    least_columns: usize,
) -> Matching {
    let candidates: Vec<(usize, &KnownTable)> = known
        .iter()
        .enumerate()
        // A record of one value besides the rowid is next to no evidence of its table.
        .filter(|(_, k)| {
            !k.shape.without_rowid
                && k.shape.columns.len() - usize::from(k.shape.rowid_alias().is_some())
                    >= least_columns.max(1)
        })
        .collect();
    if candidates.is_empty() {
        return Matching::default();
    }
    let mut undecided: Vec<Undecided> = Vec::new();
    let mut alike_of: Vec<Alike> = Vec::new();
    // Each match with its score per sampled record and its cells.
    let mut found: Vec<(KnownMatch, f64, u64)> = Vec::new();
    for (t, (table, sample)) in inferred.iter().zip(&samples.tables).enumerate() {
        let Ok(sampled) = u32::try_from(sample.len()) else {
            continue;
        };
        if sampled == 0 {
            continue;
        }
        let complete = trees.complete;
        let trees: &[Vec<usize>] = trees.keyed.get(t).map_or(&[], Vec::as_slice);
        // Per name: its best version as (known index, index rank, fitting records, total
        // score, weight of the formats held).
        let mut by_name: BTreeMap<String, (usize, u8, u32, u64, u32)> = BTreeMap::new();
        // Every version that fits, with its rank, fitting records and score.
        let mut versions: Vec<(usize, u8, u32, u64)> = Vec::new();
        for (k, table) in &candidates {
            let name = table.shape.name.to_ascii_lowercase();
            if fixed
                .get(&t)
                .is_some_and(|f| !f.eq_ignore_ascii_case(&name))
            {
                continue;
            }
            if !fixed.contains_key(&t) && taken(&name) {
                continue;
            }
            let Some(rank) = index_rank(trees, table, complete) else {
                continue;
            };
            // Where index trees may be missing (not every one traced, pages lost), an
            // index no tree shows may be one of them: being some of a table's indexes is
            // then no worse than being all of another's.
            let rank = if complete { rank } else { rank.min(1) };
            let (mut fitting, mut score, mut typed, mut values) = (0u32, 0u64, 0u64, 0u64);
            for record in sample {
                if let Some(s) = table.shape.fit(record) {
                    fitting += 1;
                    score += u64::from(s);
                    let (t, v) = typed_as_declared(&table.shape, record);
                    typed += t;
                    values += v;
                }
            }
            if fitting * 10 < sampled * 9 || typed * 10 < values * 9 {
                continue;
            }
            let Some(formats) = formats_held(table, sample, samples.encoding) else {
                continue;
            };
            score += u64::from(formats) * u64::from(fitting);
            versions.push((*k, rank, fitting, score));
            let better = by_name
                .get(&name)
                .is_none_or(|(_, r, f, s, _)| (rank, fitting, score) > (*r, *f, *s));
            if better {
                by_name.insert(name, (*k, rank, fitting, score, formats));
            }
        }
        let mut ranked: Vec<(usize, u8, u32, u64, u32)> = by_name.into_values().collect();
        ranked.sort_by_key(|(k, r, f, s, _)| {
            (
                std::cmp::Reverse(*r),
                std::cmp::Reverse(*s),
                std::cmp::Reverse(*f),
                *k,
            )
        });
        let Some(&(k, rank, fitting, score, formats)) = ranked.first() else {
            continue;
        };
        let runner_up = ranked.get(1).copied();
        let per = |s: u64| s as f64 / f64::from(sampled);
        // Within a point per sampled record (in whole numbers: a format's weight is one
        // point per record exactly).
        let within = |s: u64, s2: u64| s < s2 + u64::from(sampled);
        let close = runner_up.is_some_and(|(_, _, _, s2, _)| within(score, s2));
        let outranked = runner_up.is_some_and(|(_, r2, _, _, _)| r2 < rank);
        if close && !outranked {
            let alike = ranked
                .iter()
                .filter(|(_, r, _, s, _)| *r == rank && within(score, *s));
            alike_of.push(Alike {
                inferred: t,
                known: alike.clone().map(|(k, _, f, _, _)| (*k, *f)).collect(),
                sampled,
                width: sample.iter().map(Vec::len).max().unwrap_or(0),
            });
            undecided.push(Undecided {
                inferred: t,
                candidates: alike
                    .filter_map(|(k, _, _, _, _)| {
                        let k = known.get(*k)?;
                        Some((k.shape.name.clone(), k.origin.clone()))
                    })
                    .collect(),
            });
            continue;
        }
        let cells = table.groups.iter().map(|g| g.cells).sum();
        found.push((
            KnownMatch {
                inferred: t,
                known: k,
                sampled,
                fitting,
                width: sample.iter().map(Vec::len).max().unwrap_or(0),
                runner_up: runner_up
                    .and_then(|(k2, _, f2, _, _)| Some((known.get(k2)?.shape.name.clone(), f2))),
                indexes: match rank {
                    0 => 0,
                    _ => u32::try_from(trees.len()).unwrap_or(u32::MAX),
                },
                // A tree taken for an index on an expression is no evidence of one.
                keyed_exactly: known.get(k).is_some_and(|kt| {
                    index_rank(trees, kt, complete) == Some(2) && loose_trees(trees, kt) == 0
                }),
                outranked_by_indexes: outranked,
                taken_by_others: Vec::new(),
                formats,
                columns_alike: columns_alike(
                    known,
                    k,
                    &versions
                        .iter()
                        .filter(|(k2, r2, _, s2)| {
                            *r2 == rank
                                && within(score, *s2)
                                && known.get(*k2).is_some_and(|x| {
                                    known.get(k).is_some_and(|c| {
                                        x.shape.name.eq_ignore_ascii_case(&c.shape.name)
                                    })
                                })
                        })
                        .map(|v| v.0)
                        .collect::<Vec<_>>(),
                ),
                referred: None,
            },
            per(score),
            cells,
        ));
    }
    // Each name once: the inferred table whose records fit it best (by score per record),
    // then the one with the most cells, takes it.
    found.sort_by(|(_, a, ca), (_, b, cb)| b.total_cmp(a).then(cb.cmp(ca)));
    let mut out: Vec<KnownMatch> = Vec::new();
    for (m, _, _) in found {
        let name = |m: &KnownMatch| {
            known
                .get(m.known)
                .map(|k| k.shape.name.to_ascii_lowercase())
        };
        if out.iter().any(|o| name(o) == name(&m)) {
            continue;
        }
        out.push(m);
    }
    // A table whose records fit several names alike, all but one of them taken by other
    // tables that fit them better, has the one left.
    let name = |k: usize| known.get(k).map(|k| k.shape.name.to_ascii_lowercase());
    let given: BTreeSet<Option<String>> = out.iter().map(|m| name(m.known)).collect();
    for a in alike_of {
        let (left, gone): (Vec<_>, Vec<_>) = a
            .known
            .into_iter()
            .partition(|(k, _)| !given.contains(&name(*k)));
        let [(k, fitting)] = left.as_slice() else {
            continue;
        };
        if gone.is_empty() || out.iter().any(|m| name(m.known) == name(*k)) {
            continue;
        }
        undecided.retain(|u| u.inferred != a.inferred);
        out.push(KnownMatch {
            inferred: a.inferred,
            known: *k,
            sampled: a.sampled,
            fitting: *fitting,
            width: a.width,
            runner_up: None,
            indexes: 0,
            keyed_exactly: false,
            outranked_by_indexes: false,
            taken_by_others: gone
                .iter()
                .filter_map(|(k, _)| Some(known.get(*k)?.shape.name.clone()))
                .collect(),
            formats: 0,
            columns_alike: Vec::new(),
            referred: None,
        });
    }
    out.sort_by_key(|m| m.inferred);
    Matching {
        named: out,
        undecided,
    }
}

/// The weight of the known table's column formats that the sampled records' values have
/// ([`ColumnFormat::judge`]); `None` when the values of one such column mostly lack its
/// format: the records are not that table's.
fn formats_held(known: &KnownTable, sample: &[Vec<Value>], encoding: TextEncoding) -> Option<u32> {
    let mut held = 0u32;
    for (p, format) in &known.formats {
        match format.judge(sample.iter().filter_map(|r| r.get(*p)), encoding) {
            Verdict::Held(w) => held += u32::try_from(w).unwrap_or(u32::MAX),
            Verdict::Contradicted => return None,
            Verdict::Unknown => {}
        }
    }
    Some(held)
}

/// An undecided table's names alike, with what a match by elimination needs.
struct Alike {
    /// Which inferred table.
    inferred: usize,
    /// Each known table of a name its records fit alike, with the records that fit it.
    known: Vec<(usize, u32)>,
    /// Records sampled.
    sampled: u32,
    /// Values of the widest record sampled.
    width: usize,
}

/// How the index trees traced to an inferred table (their keys' record positions) agree
/// with a known table's indexes: `None` when more are keyed as none of its indexes on
/// columns than it has indexes on expressions (an index on `lower(title)` over titles
/// already in lower case traces to `title`: such a tree may be one), so that it cannot be
/// that table's, or when none was traced though the file's trees are all traced
/// (`complete`) and the known table's constraints keep an index of every row (its tree
/// would be there, [`KnownTable::every_row_indexed`]); 2 when its indexes on columns are
/// all among them; 1 when some are; 0 when no tree was traced (nothing is known).
fn index_rank(trees: &[Vec<usize>], known: &KnownTable, complete: bool) -> Option<u8> {
    let keys = &known.keys;
    if trees.is_empty() {
        return (!(complete && known.every_row_indexed)).then_some(0);
    }
    if loose_trees(trees, known) > keys.iter().filter(|k| k.is_none()).count() {
        return None;
    }
    let every = keys.iter().flatten().all(|k| trees.contains(k));
    Some(if every { 2 } else { 1 })
}

/// The trees keyed as none of the known table's indexes on columns.
fn loose_trees(trees: &[Vec<usize>], known: &KnownTable) -> usize {
    trees
        .iter()
        .filter(|t| {
            !known
                .keys
                .iter()
                .any(|k| k.as_deref() == Some(t.as_slice()))
        })
        .count()
}

/// The orphan index trees traced to the inferred tables, as matching reads them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IndexTrees {
    /// Per inferred table, the record positions each tree traced to it keys on
    /// ([`keyed_positions`]).
    pub keyed: Vec<Vec<Vec<usize>>>,
    /// Those trees are all the file's indexes hold: every orphan index tree traced, no
    /// page lost but page 1.
    pub complete: bool,
}

impl IndexTrees {
    /// From the trees traced ([`traced_groups`]) to the `inferred` tables, in a file of
    /// `pages_lost` pages zeroed or unrecognisable (page 1 among them, when it is).
    pub fn new(traced: &[Option<(usize, Vec<usize>)>], inferred: usize, pages_lost: u64) -> Self {
        IndexTrees {
            keyed: keyed_positions(traced, inferred),
            complete: traced.iter().all(Option::is_some) && pages_lost <= 1,
        }
    }
}

/// Entries of an orphan index tree read to trace it to an inferred table.
const TRACE_ENTRIES: usize = 4096;

/// Up to [`SAMPLE`] of a tree's first [`TRACE_ENTRIES`] entries, spread evenly over them
/// (in the tree's order).
pub(crate) fn spread<T>(entries: impl Iterator<Item = T>) -> Vec<T> {
    let all: Vec<T> = entries.take(TRACE_ENTRIES).collect();
    let stride = (all.len() / SAMPLE).max(1);
    all.into_iter().step_by(stride).take(SAMPLE).collect()
}

/// Key values compared, per keyed column, before a tree is traced to a table.
const TRACE_LEAST: usize = 4;

/// Key columns of a tree traced, at most (SQLite's default limit of an index's columns is
/// 2000; a file may claim any number): a wider tree is traced to no table.
const TRACE_KEYS: usize = 64;

/// Record positions compared with each key column, at most (SQLite's default column
/// limit).
const TRACE_POSITIONS: usize = 2000;

/// Pairs of a tree and an inferred table compared in a run, at most: a file of many small
/// trees and tables (a hostile one) leaves the rest untraced rather than take hours.
const TRACE_PAIRS: usize = 1_000_000;

/// The orphan index trees traced to the inferred tables ([`traced_groups`]): for each of
/// the `inferred` tables (in their order), the record positions each tree traced to it
/// keys on, in key order, each list once. A tree is traced to a table when nine in
/// ten of its sampled entries' rowids are rows of that table and, for every key column,
/// one record position alone holds the entries' values in nine rows in ten (at least
/// [`TRACE_LEAST`] values that are not NULL compared); a tree that traces so to two
/// tables, or a key column that two positions fit alike, traces to none.
pub fn keyed_positions(
    traced: &[Option<(usize, Vec<usize>)>],
    inferred: usize,
) -> Vec<Vec<Vec<usize>>> {
    let mut out: Vec<Vec<Vec<usize>>> = vec![Vec::new(); inferred];
    for (t, positions) in traced.iter().flatten() {
        if let Some(list) = out.get_mut(*t) {
            if !list.contains(positions) {
                list.push(positions.clone());
            }
        }
    }
    out
}

/// Each orphan index tree (`index_groups`, in order) traced to an inferred table, as
/// [`keyed_positions`] traces it: the table and the record positions its keys hold;
/// `None` for a tree traced to none (the entries of an index whose table is not among
/// them, or the records of a WITHOUT ROWID table, whose b-tree is an index b-tree).
pub fn traced_groups(
    db: &Database<'_>,
    inferred: &[InferredTable],
    index_groups: &[crate::plan::OrphanGroup],
) -> Vec<Option<(usize, Vec<usize>)>> {
    if inferred.is_empty() || index_groups.is_empty() {
        return vec![None; index_groups.len()];
    }
    let trees: Vec<Entries> = index_groups
        .iter()
        .map(|g| spread(pager::search::index_entries(db, g.top).map(compared_entry)))
        .collect();
    let wanted: BTreeSet<i64> = trees.iter().flatten().map(|(_, r)| *r).collect();
    // Each inferred table's records of the rowids sampled (records decoded only for those).
    let rows: Vec<BTreeMap<i64, Vec<Value>>> = inferred
        .iter()
        .map(|t| records_of(db, t, &wanted))
        .collect();
    let mut budget = TRACE_PAIRS;
    trees
        .iter()
        .map(|tree| {
            let width = tree.iter().map(|(k, _)| k.len()).min().unwrap_or(0);
            if width == 0 || width > TRACE_KEYS || budget < rows.len() {
                return None;
            }
            budget -= rows.len();
            let traced: Vec<(usize, Vec<usize>)> = rows
                .iter()
                .enumerate()
                .filter_map(|(t, r)| Some((t, trace(tree, width, r)?)))
                .collect();
            match <[_; 1]>::try_from(traced) {
                Ok([one]) => Some(one),
                Err(_) => None,
            }
        })
        .collect()
}

/// The record positions of a sampled index tree's `width` key columns in the rows of one
/// table (by rowid), when the tree traces to it (see [`keyed_positions`]).
fn trace(tree: &Entries, width: usize, rows: &BTreeMap<i64, Vec<Value>>) -> Option<Vec<usize>> {
    let pairs: Vec<(&Vec<Value>, &Vec<Value>)> = tree
        .iter()
        .filter_map(|(key, rowid)| Some((key, rows.get(rowid)?)))
        .collect();
    if pairs.is_empty() || pairs.len() * 10 < tree.len() * 9 {
        return None;
    }
    let record_width = pairs
        .iter()
        .map(|(_, r)| r.len())
        .max()
        .unwrap_or(0)
        .min(TRACE_POSITIONS);
    let mut positions: Vec<usize> = Vec::with_capacity(width);
    for k in 0..width {
        let fits: Vec<(usize, usize)> = (0..record_width)
            .filter(|p| !positions.contains(p))
            .filter_map(|p| {
                let (agree, seen) = agreement(&pairs, k, p);
                (seen >= TRACE_LEAST && agree * 10 >= seen * 9).then_some((p, agree))
            })
            .collect();
        let best = fits.iter().map(|(_, a)| *a).max()?;
        let mut at_best = fits.iter().filter(|(_, a)| *a == best);
        let (Some(&(p, _)), None) = (at_best.next(), at_best.next()) else {
            return None;
        };
        positions.push(p);
    }
    Some(positions)
}

/// Of a record's values that are not NULL (the rowid alias aside), how many have the
/// storage class its column's declared type calls for, and how many there are: text in
/// TEXT, integers in INTEGER, numbers in REAL, numbers or text (dates) in NUMERIC, anything
/// in a column without a type or declared BLOB.
pub fn typed_as_declared(shape: &TableShape, record: &[Value]) -> (u64, u64) {
    let alias = shape.rowid_alias();
    let (mut typed, mut values) = (0, 0);
    for (value, col) in record.iter().zip(shape.record_order()) {
        let Some(c) = shape.columns.get(col) else {
            continue;
        };
        if Some(col) == alias || *value == Value::Null {
            continue;
        }
        values += 1;
        typed += u64::from(matches!(
            (c.affinity(), value),
            (Affinity::Text, Value::Text(_))
                | (Affinity::Integer, Value::Integer(_))
                | (Affinity::Real, Value::Integer(_) | Value::Real(_))
                | (
                    Affinity::Numeric,
                    Value::Integer(_) | Value::Real(_) | Value::Text(_)
                )
                | (Affinity::Blob, _)
        ));
    }
    (typed, values)
}

/// Up to [`KNOWN_SAMPLE`] whole records of an inferred table, spread over its groups, and
/// no more than [`SAMPLE_BYTES`] allow of the bytes `left` to all the samples.
fn sample_records(db: &Database<'_>, table: &InferredTable, left: &mut usize) -> Vec<Vec<Value>> {
    let cells: u64 = table.groups.iter().map(|g| g.cells).sum();
    let stride = usize::try_from(cells / KNOWN_SAMPLE as u64)
        .unwrap_or(usize::MAX)
        .max(1);
    TableRows::new(db, None, table.groups.iter())
        .filter_map(|e| match e {
            RowEvent::Row(r) => Some(r),
            RowEvent::Unreadable { .. } => None,
        })
        .step_by(stride)
        .filter_map(|r| {
            let (values, complete) = r.record();
            complete.then_some(values)
        })
        .take(KNOWN_SAMPLE)
        .scan(0usize, |held, values| {
            if *held >= SAMPLE_BYTES.0 || *left == 0 {
                return None;
            }
            let bytes = values.iter().map(Value::held_bytes).sum::<usize>();
            *held += bytes;
            *left = left.saturating_sub(bytes);
            Some(values)
        })
        .collect()
}

/// Of index entries paired with their rows (key values, record), how many hold key column
/// `k`'s value at record position `p`, and how many were compared (a NULL key proves
/// nothing).
fn agreement<K: AsRef<[Value]>, R: AsRef<[Value]>>(
    pairs: &[(K, R)],
    k: usize,
    p: usize,
) -> (usize, usize) {
    let (mut agree, mut seen) = (0, 0);
    for (key, record) in pairs {
        let (Some(a), Some(b)) = (key.as_ref().get(k), record.as_ref().get(p)) else {
            continue;
        };
        if *a == Value::Null {
            continue;
        }
        seen += 1;
        agree += usize::from(a == b);
    }
    (agree, seen)
}

/// Index entries: each one's key values and its rowid.
type Entries = Vec<(Vec<Value>, i64)>;

/// Bytes of a text or blob value that key values are compared with record values by.
const COMPARED_BYTES: usize = 256;

/// A record's values as they are compared with index entries' keys (or a WITHOUT ROWID
/// table's records with their neighbours', `keyed`): a text or blob value
/// longer than [`COMPARED_BYTES`] stands in as its first bytes and its length (equal
/// values stay equal; two long values alike in both are taken for equal). Records of
/// large values (8 MB each in a test) sampled whole held a gigabyte.
pub(crate) fn compared(record: Vec<Value>) -> Vec<Value> {
    let stand_in = |bytes: Vec<u8>| {
        let mut short = bytes.get(..COMPARED_BYTES).unwrap_or_default().to_vec();
        short.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        short
    };
    record
        .into_iter()
        .map(|v| match v {
            Value::Text(b) if b.len() > COMPARED_BYTES => Value::Text(stand_in(b)),
            Value::Blob(b) if b.len() > COMPARED_BYTES => Value::Blob(stand_in(b)),
            other => other,
        })
        .collect()
}

/// An index entry's key values as they are compared ([`compared`]), and its rowid.
fn compared_entry((key, rowid): (Vec<Value>, i64)) -> (Vec<Value>, i64) {
    (compared(key), rowid)
}

/// For each keyed column, the record position whose values equal the sampled entries'
/// values in nine rows in ten (a position is given once, NULLs prove nothing).
fn map_columns(
    columns: &[String],
    entries: &[(Vec<Value>, i64)],
    rows: &BTreeMap<i64, Vec<Value>>,
) -> BTreeMap<usize, String> {
    let sample: Vec<(&Vec<Value>, &Vec<Value>)> = entries
        .iter()
        .filter_map(|(key, rowid)| Some((key, rows.get(rowid)?)))
        .take(SAMPLE)
        .collect();
    let mut out = BTreeMap::new();
    let mut used = BTreeSet::new();
    for (k, name) in columns.iter().enumerate() {
        let width = sample.iter().map(|(_, r)| r.len()).max().unwrap_or(0);
        let best = (0..width)
            .filter(|p| !used.contains(p))
            .map(|p| {
                let (agree, seen) = agreement(&sample, k, p);
                (p, agree, seen)
            })
            .filter(|(_, agree, seen)| *seen > 0 && agree * 10 >= seen * 9)
            .max_by_key(|(_, agree, _)| *agree);
        if let Some((p, _, _)) = best {
            used.insert(p);
            out.insert(p, name.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(keys: Vec<Option<Vec<usize>>>, every_row_indexed: bool) -> KnownTable {
        KnownTable {
            origin: String::new(),
            sql: String::new(),
            shape: TableShape {
                name: "t".into(),
                columns: Vec::new(),
                without_rowid: false,
                strict: false,
                pk_indexed: false,
            },
            indexes: Vec::new(),
            keys,
            every_row_indexed,
            formats: Vec::new(),
            references: Vec::new(),
        }
    }

    #[test]
    fn index_trees_rank_a_known_table_by_its_indexes() {
        let t = known(vec![Some(vec![1]), Some(vec![2, 1]), None], true);
        assert_eq!(
            index_rank(&[], &t, false),
            Some(0),
            "no tree: nothing known"
        );
        assert_eq!(
            index_rank(&[], &t, true),
            None,
            "every tree traced, none to it: its index is not there"
        );
        assert_eq!(
            index_rank(&[], &known(vec![Some(vec![1])], false), true),
            Some(0),
            "a CREATE INDEX a file may lack"
        );
        assert_eq!(
            index_rank(&[vec![1]], &t, false),
            Some(1),
            "some of its indexes"
        );
        assert_eq!(
            index_rank(&[vec![2, 1], vec![1]], &t, true),
            Some(2),
            "all its indexes on columns"
        );
        assert_eq!(
            index_rank(&[vec![1, 2]], &t, false),
            Some(1),
            "keyed as none on columns: its index on an expression, perhaps"
        );
        assert_eq!(
            index_rank(&[vec![1, 2], vec![0]], &t, false),
            None,
            "two trees, one index on an expression"
        );
        assert_eq!(
            index_rank(
                &[vec![1, 2]],
                &known(vec![Some(vec![1]), Some(vec![2, 1])], true),
                false
            ),
            None,
            "keyed as none of them"
        );
        assert_eq!(
            index_rank(&[vec![0]], &known(Vec::new(), false), false),
            None,
            "a table without indexes"
        );
    }

    /// Long values compare by their start and length: equal ones stay equal, short ones
    /// are themselves, and a long one never equals a short one or one of another length.
    #[test]
    fn long_values_are_compared_by_their_start_and_length() {
        let long = |n: usize, last: u8| {
            let mut b = vec![b'a'; n];
            b[n - 1] = last;
            b
        };
        let record = compared;
        let a = record(vec![Value::Text(long(1000, b'x')), Value::Integer(7)]);
        assert_eq!(
            a,
            record(vec![Value::Text(long(1000, b'x')), Value::Integer(7)])
        );
        // A difference past the start is not seen; one of length is.
        assert_eq!(
            a,
            record(vec![Value::Text(long(1000, b'y')), Value::Integer(7)])
        );
        assert_ne!(
            a,
            record(vec![Value::Text(long(1001, b'x')), Value::Integer(7)])
        );
        // Kept short, and of its storage class.
        assert!(matches!(&a[0], Value::Text(t) if t.len() == COMPARED_BYTES + 8));
        assert_ne!(
            record(vec![Value::Blob(long(1000, b'x'))]),
            record(vec![Value::Text(long(1000, b'x'))])
        );
        let short = vec![Value::Text(long(COMPARED_BYTES, b'x')), Value::Null];
        assert_eq!(record(short.clone()), short);
        assert_ne!(
            record(vec![Value::Blob(long(COMPARED_BYTES + 8, b'x'))]),
            record(vec![Value::Blob(long(COMPARED_BYTES + 200, b'x'))])
        );
    }

    #[test]
    fn the_columns_an_index_keys_on() {
        let cols = |sql: &str| index_columns(sql);
        assert_eq!(
            cols("CREATE INDEX i ON t(a, b DESC)"),
            Some(vec!["a".into(), "b".into()])
        );
        assert_eq!(
            cols("CREATE UNIQUE INDEX \"i\" ON \"my t\" (\"x y\" COLLATE NOCASE, [z])"),
            Some(vec!["x y".into(), "z".into()])
        );
        assert_eq!(
            cols("CREATE INDEX i ON t(a) WHERE b IS NOT NULL AND (c > 1)"),
            Some(vec!["a".into()])
        );
        assert_eq!(cols("CREATE INDEX i ON t(lower(a))"), None);
    }
}
