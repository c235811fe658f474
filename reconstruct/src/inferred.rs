//! What a table inferred from orphan records is made as: the decision the load carries
//! out for each shape of orphan records no table of the schema fits.
//!
//! Its name comes from the strongest evidence there is: a table an application profile
//! knows, whose CREATE statement the records fit ([`KnownMatch`]); else the table a
//! surviving index names ([`Naming`]); else a name of the run's own
//! (`salvage_inferred_N`). Its statement is the known one, or columns `c0, c1, …`
//! declared without a type (every value keeps its storage class), a column an index's
//! entries identify taking its name. What proves it is typed ([`Evidence`]), and so is
//! why it is inferred ([`InferredReason`]): the report's sentence is rendered from them.

use crate::naming::{KnownMatch, KnownTable, Naming};
use crate::plan::{Confidence, Evidence, InferredTable};

/// How one inferred table is made.
#[derive(Clone, Debug, PartialEq)]
pub struct InferredMade {
    /// Its name in the output.
    pub name: String,
    /// Its CREATE TABLE statement.
    pub sql: String,
    /// What proves its rows are one table's, in the order found.
    pub evidence: Vec<Evidence>,
    /// How sure that is: low for the records' shape alone, medium for one kind of
    /// naming evidence, high for both.
    pub confidence: Confidence,
    /// Why it is inferred and how it is named, for the report.
    pub reason: InferredReason,
}

/// Why a table is inferred, and how it is named: the facts of its report sentence.
#[derive(Clone, Debug, PartialEq)]
pub struct InferredReason {
    /// The storage class seen most in each column.
    pub columns: Vec<&'static str>,
    /// Records sampled to infer it.
    pub sampled: u32,
    /// The orphan page groups holding its rows.
    pub groups: usize,
    /// Cells in them.
    pub cells: u64,
    /// The index that names it, the entries it matched, and the record positions its
    /// entries identify (said only without a known statement).
    pub named_by: Option<Naming>,
    /// The known statement it fits: where it is known from, records fitting of those
    /// sampled, its columns, the next best known table.
    pub known: Option<KnownFit>,
    /// Known tables of several names its records fit alike, none named (name, and where
    /// it is known from): said only without a known statement or an index naming it.
    pub undecided: Vec<(String, String)>,
    /// Its records are rows of this table of SQLite's own (`sqlite_schema`,
    /// `sqlite_sequence`), on a page no tree reaches.
    pub sqlite: Option<&'static str>,
    /// The one known table (name, and where it is known from) its records fit better than
    /// any other, left unnamed because no evidence detects its application: said only
    /// without a known statement, an index naming it or names fitting alike.
    pub unconfirmed: Option<(String, String)>,
}

/// How an inferred table's records fit a known CREATE statement.
#[derive(Clone, Debug, PartialEq)]
pub struct KnownFit {
    /// Where the statement is known from: "profile NAME".
    pub origin: String,
    /// Records that fit it.
    pub fitting: u32,
    /// Records sampled.
    pub sampled: u32,
    /// Its columns.
    pub columns: usize,
    /// The next best known table of another name, and how many records fit it.
    pub runner_up: Option<(String, u32)>,
    /// Orphan index trees traced to the table, keyed as the known table's indexes are.
    pub indexes: u32,
    /// Names its records fit as well, which other tables took ([`KnownMatch::taken_by_others`]).
    pub taken_by_others: Vec<String>,
    /// Other statements of its name its records fit as well, whose columns are named
    /// otherwise ([`KnownMatch::columns_alike`]).
    pub columns_alike: Vec<crate::ColumnsAlike>,
    /// Named among names its records fit alike by the keys a column refers to
    /// ([`KnownMatch::referred`]).
    pub referred: Option<crate::references::Referred>,
}

impl std::fmt::Display for InferredReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "its CREATE statement is lost: {} columns ({}) inferred from {} sampled records of {} orphan page groups ({} cells)",
            self.columns.len(),
            self.columns.join(", "),
            self.sampled,
            self.groups,
            self.cells
        )?;
        if let Some(n) = &self.named_by {
            write!(
                f,
                "; named by index `{}`, whose schema row survives: {} of its {} entries name rows of these pages",
                n.index, n.matched, n.entries
            )?;
            if !n.columns.is_empty() && self.known.is_none() {
                let named: Vec<String> = n
                    .columns
                    .iter()
                    .map(|(p, c)| format!("`{c}` (c{p})"))
                    .collect();
                write!(f, ", and their values identify {}", named.join(", "))?;
            }
        }
        if let Some(k) = &self.known {
            write!(
                f,
                "; {} knows its CREATE statement: {} of {} sampled records fit its {} columns",
                k.origin, k.fitting, k.sampled, k.columns
            )?;
            if let Some((name, fitting)) = &k.runner_up {
                write!(f, " (next best `{name}`: {fitting})")?;
            }
            if !k.taken_by_others.is_empty() {
                let names: Vec<String> =
                    k.taken_by_others.iter().map(|n| format!("`{n}`")).collect();
                write!(
                    f,
                    "; they fit {} as well, which another table's records fit better: this is the name left",
                    names.join(" and ")
                )?;
            }
            if k.indexes > 0 {
                write!(
                    f,
                    ", and {} orphan index trees key its rows as its indexes do",
                    k.indexes
                )?;
            }
            if let Some(r) = &k.referred {
                let others: Vec<String> = r.others.iter().map(|o| format!("`{o}`")).collect();
                write!(
                    f,
                    "; its records fit {} as well, but {} of its {} sampled `{}` values are keys of `{}`, which it refers to, and those tables' references are not borne out: named by the keys it refers to",
                    others.join(", "),
                    r.found,
                    r.of,
                    r.column,
                    r.parent
                )?;
            }
            for other in &k.columns_alike {
                let differ: Vec<String> = other
                    .differ
                    .iter()
                    .map(|(i, here, there)| format!("c{i} `{here}` (there `{there}`)"))
                    .collect();
                write!(
                    f,
                    "; its records fit as well another statement of it {} knows, which names {} otherwise: records hold values, not names, and those columns' names are not decided",
                    other.origin,
                    differ.join(", ")
                )?;
            }
        }
        if let Some(name) = self.sqlite {
            write!(
                f,
                "; its records are rows of SQLite's own `{name}` on a page no tree reaches, kept apart from the application's tables"
            )?;
        }
        if let [(_, origin), _, ..] = self.undecided.as_slice() {
            let same = self.undecided.iter().all(|(_, o)| o == origin);
            let names: Vec<String> = self
                .undecided
                .iter()
                .map(|(n, o)| match same {
                    true => format!("`{n}`"),
                    false => format!("`{n}` ({o})"),
                })
                .collect();
            if let Some((last, first)) = names.split_last() {
                write!(f, "; its records fit {} and {last}", first.join(", "))?;
            }
            if same {
                write!(f, " of {origin}")?;
            }
            write!(
                f,
                " alike, and no evidence decides between them: it takes none of their names"
            )?;
        }
        if let Some((name, origin)) = &self.unconfirmed {
            write!(
                f,
                "; its records fit `{name}` of {origin} better than any other known table, but no other evidence identifies that application (one table's shape is not enough): it takes no name"
            )?;
            if let Some(profile) = origin.strip_prefix("profile ") {
                write!(f, " (`--profile {profile}` names it)")?;
            }
        }
        Ok(())
    }
}

/// Decides how the inferred `table` is made, from the index that names it and the known
/// table it fits (each when there is one, and its name still free); `generated` gives a
/// name of the run's own when neither names it. `undecided` lists the known tables of
/// several names its records fit alike ([`crate::Undecided`]), which its reason names;
/// `sqlite` the table of SQLite's own its records are rows of, if they are.
pub fn make_inferred(
    table: &InferredTable,
    naming: Option<&Naming>,
    known: Option<(&KnownMatch, &KnownTable)>,
    undecided: &[(String, String)],
    unconfirmed: Option<&(String, String)>,
    sqlite: Option<&'static str>,
    generated: impl FnOnce() -> String,
) -> InferredMade {
    let name = match (known, naming) {
        (Some((_, k)), _) => k.shape.name.clone(),
        (None, Some(n)) => n.table.clone(),
        (None, None) => generated(),
    };
    let sql = match known {
        Some((_, k)) => k.sql.clone(),
        None => {
            let columns: Vec<String> = (0..table.columns.len())
                .map(|i| {
                    let named = naming.and_then(|n| n.columns.get(&i));
                    quote(&named.cloned().unwrap_or_else(|| format!("c{i}")))
                })
                .collect();
            format!("CREATE TABLE {}({})", quote(&name), columns.join(", "))
        }
    };
    let mut evidence = vec![Evidence::LostSchema {
        sampled: table.sampled,
    }];
    if let Some(n) = naming {
        evidence.push(Evidence::NamedByIndex {
            index: n.index.clone(),
            entries: n.entries,
            matched: n.matched,
        });
    }
    if let Some((m, k)) = known {
        evidence.push(Evidence::KnownSchema {
            origin: k.origin.clone(),
            sampled: m.sampled,
            fitting: m.fitting,
            runner_up: m.runner_up.clone(),
            indexes: m.indexes,
            keyed_exactly: m.keyed_exactly,
        });
    }
    let confidence = match (naming.is_some(), known.is_some()) {
        (true, true) => Confidence::High,
        (true, false) | (false, true) => Confidence::Medium,
        (false, false) => Confidence::Low,
    };
    let reason = InferredReason {
        columns: table.columns.clone(),
        sampled: table.sampled,
        groups: table.groups.len(),
        cells: table.groups.iter().map(|g| g.cells).sum(),
        named_by: naming.cloned(),
        known: known.map(|(m, k)| KnownFit {
            origin: k.origin.clone(),
            fitting: m.fitting,
            sampled: m.sampled,
            columns: k.shape.columns.len(),
            runner_up: m.runner_up.clone(),
            indexes: m.indexes,
            taken_by_others: m.taken_by_others.clone(),
            columns_alike: m.columns_alike.clone(),
            referred: m.referred.clone(),
        }),
        undecided: match (known, naming) {
            (None, None) => undecided.to_vec(),
            _ => Vec::new(),
        },
        unconfirmed: match (known, naming, undecided, sqlite) {
            (None, None, [], None) => unconfirmed.cloned(),
            _ => None,
        },
        sqlite,
    };
    InferredMade {
        name,
        sql,
        evidence,
        confidence,
        reason,
    }
}

/// Quotes an identifier for SQL: `"name"` with inner quotes doubled.
fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn table() -> InferredTable {
        InferredTable {
            columns: vec!["integer", "text"],
            groups: Vec::new(),
            sampled: 12,
        }
    }

    fn naming() -> Naming {
        Naming {
            inferred: 0,
            table: "notes".into(),
            index: "notes_by_title".into(),
            entries: 40,
            matched: 38,
            columns: BTreeMap::from([(1, "title".to_string())]),
        }
    }

    #[test]
    fn records_alone_make_a_table_of_the_run_s_own_name_with_low_confidence() {
        let made = make_inferred(&table(), None, None, &[], None, None, || {
            "salvage_inferred_1".into()
        });
        assert_eq!(made.name, "salvage_inferred_1");
        assert_eq!(made.sql, r#"CREATE TABLE "salvage_inferred_1"("c0", "c1")"#);
        assert_eq!(made.confidence, Confidence::Low);
        assert_eq!(made.evidence, [Evidence::LostSchema { sampled: 12 }]);
        assert_eq!(
            made.reason.to_string(),
            "its CREATE statement is lost: 2 columns (integer, text) inferred from 12 sampled records of 0 orphan page groups (0 cells)"
        );
    }

    #[test]
    fn an_index_names_the_table_and_the_columns_its_entries_identify() {
        let made = make_inferred(
            &table(),
            Some(&naming()),
            None,
            &[],
            None,
            None,
            || unreachable!(),
        );
        assert_eq!(made.name, "notes");
        assert_eq!(made.sql, r#"CREATE TABLE "notes"("c0", "title")"#);
        assert_eq!(made.confidence, Confidence::Medium);
        assert!(made.reason.to_string().ends_with(
            "; named by index `notes_by_title`, whose schema row survives: 38 of its 40 entries name rows of these pages, and their values identify `title` (c1)"
        ));
    }
}
