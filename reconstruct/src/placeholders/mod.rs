//! Placeholder parents: for every child key with no surviving parent row, one minimal
//! parent row that the children themselves prove existed.
//!
//! The key comes from the children (identity values are never invented). Other columns
//! are filled only where evidence or an explicit, labelled rule gives them: a value the
//! children prove (the earliest timestamp, their count), a declared constant default, or
//! a profile's fill (a `source` of 'recovered', a title saying the row was reconstructed).
//! A default that is not constant (the clock) never fills one: the column holds NULL. A
//! NOT NULL column that nothing fills blocks the placeholder, and that is reported. Every
//! placeholder is registered as fabricated, whatever its table's columns.
//!
//! A placeholder is made only where the parent table could have lost the row
//! ([`parent_rows`]): a child key that no row of a table read whole holds is a reference
//! the source already held dangling ([`Dangling`]), a finding and not loss.

use std::collections::BTreeMap;

use pager::Value;

use crate::shape::{Column, ColumnDefault, ColumnKind, TableShape};

mod parents;
mod synthesize;

pub use parents::{parent_rows, ParentFacts, ParentRows};
pub use synthesize::{
    relationships, synthesize, Blocked, Dangling, DanglingProof, ForeignKey, Made, MissingParents,
    ParentStore, PlaceholderOutcome, Synthesis, Unbuilt,
};

/// How one parent column of a placeholder is filled.
#[derive(Clone, Debug, PartialEq)]
pub enum Fill {
    /// A literal value (a profile's explicit choice, e.g. `source = 'recovered'`).
    Value(Value),
    /// A text saying the row was reconstructed; `{key}`, `{count}`, `{child}` are
    /// replaced by the key, the number of surviving children and the child table.
    Label(String),
    /// The smallest value of a child column among the surviving children.
    Min(String),
    /// The largest value of a child column among the surviving children.
    Max(String),
    /// The number of surviving children.
    Count,
    /// The value of this column in the parent rows with the nearest keys on both sides,
    /// when they agree (rows with neighbouring integer keys were written together).
    Neighbour,
    /// The first of these rules that gives a value.
    FirstOf(Vec<Fill>),
}

/// A parent/child relationship: declared by a FOREIGN KEY, or implied by a profile.
#[derive(Clone, Debug, PartialEq)]
pub struct Relationship {
    /// The child table.
    pub child: String,
    /// Its key columns.
    pub child_columns: Vec<String>,
    /// The parent table.
    pub parent: String,
    /// Its key columns, in the same order.
    pub parent_columns: Vec<String>,
    /// How parent columns are filled, by column name.
    pub fills: Vec<(String, Fill)>,
    /// Where the relationship comes from: "foreign key" or "profile NAME".
    pub origin: String,
}

/// What the surviving children of one missing parent prove.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChildEvidence {
    /// The key the children reference.
    pub key: Vec<Value>,
    /// How many children reference it.
    pub count: u64,
    /// Smallest and largest value of each child column a fill asks for.
    pub min: BTreeMap<String, Value>,
    /// See `min`.
    pub max: BTreeMap<String, Value>,
    /// For `Fill::Neighbour` columns: the value both neighbouring parent rows agree on.
    pub neighbour: BTreeMap<String, Value>,
    /// Values of the lost parent row itself that evidence proves (its index entries, a
    /// text copy), by column: they win over every fill.
    pub proven: BTreeMap<String, Value>,
}

/// A parent row to synthesize.
#[derive(Clone, Debug, PartialEq)]
pub struct Placeholder {
    /// The parent table.
    pub table: String,
    /// Column values to insert (key columns first), by name.
    pub columns: Vec<(String, Value)>,
    /// The columns filled by a rule, from the children or by a constant default, beyond
    /// the key.
    pub filled: Vec<String>,
    /// The key the children reference.
    pub key: Vec<Value>,
    /// Surviving children under it.
    pub children: u64,
}

/// The outcome of planning one placeholder.
#[derive(Clone, Debug, PartialEq)]
pub enum PlaceholderPlan {
    /// The row can be synthesized.
    Ready(Placeholder),
    /// It cannot without inventing a value.
    Blocked {
        /// The key the children reference.
        key: Vec<Value>,
        /// Why, as a sentence.
        reason: String,
    },
}

/// Renders a key for reports and labels: `a` or `(a, b)`.
pub fn key_text(key: &[Value]) -> String {
    let one = |v: &Value| match v {
        Value::Null => "NULL".to_string(),
        Value::Integer(i) => i.to_string(),
        Value::Real(r) => r.to_string(),
        Value::Text(t) => String::from_utf8_lossy(t).into_owned(),
        Value::Blob(b) => format!(
            "x'{}'",
            b.iter().map(|x| format!("{x:02x}")).collect::<String>()
        ),
    };
    match key {
        [k] => one(k),
        _ => format!("({})", key.iter().map(one).collect::<Vec<_>>().join(", ")),
    }
}

/// Plans the placeholder for one missing parent of `rel`.
pub fn plan_placeholder(
    parent: &TableShape,
    rel: &Relationship,
    ev: &ChildEvidence,
) -> PlaceholderPlan {
    let mut row = Draft::keyed(parent, rel, ev);
    row.take_proven();
    for (name, rule) in &row.rules() {
        row.fill(name, rule);
    }
    if let Some(c) = row.unfilled_not_null() {
        return PlaceholderPlan::Blocked {
            key: ev.key.clone(),
            reason: format!(
                "column `{}` of `{}` is NOT NULL with no default, and nothing proves its value",
                c.name, rel.parent
            ),
        };
    }
    row.leave_to_defaults();
    PlaceholderPlan::Ready(row.into_placeholder())
}

/// A placeholder row as it is built: the columns given so far, and which of them a rule
/// filled.
struct Draft<'a> {
    parent: &'a TableShape,
    rel: &'a Relationship,
    ev: &'a ChildEvidence,
    /// Column values to insert, by name, the key columns first.
    columns: Vec<(String, Value)>,
    /// The columns filled by a rule or by a constant default, beyond the key.
    filled: Vec<String>,
}

impl<'a> Draft<'a> {
    /// The row with its key columns alone: the key the children reference.
    fn keyed(parent: &'a TableShape, rel: &'a Relationship, ev: &'a ChildEvidence) -> Self {
        let columns = rel
            .parent_columns
            .iter()
            .cloned()
            .zip(ev.key.iter().cloned())
            .collect();
        Draft {
            parent,
            rel,
            ev,
            columns,
            filled: Vec::new(),
        }
    }

    /// Whether the row gives column `name` a value yet.
    fn has(&self, name: &str) -> bool {
        self.columns
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    }

    /// Whether `name` is one of the key's columns.
    fn is_key(&self, name: &str) -> bool {
        self.rel
            .parent_columns
            .iter()
            .any(|k| k.eq_ignore_ascii_case(name))
    }

    /// What the evidence proves of the row itself comes first; no rule overrides it.
    fn take_proven(&mut self) {
        let (parent, ev) = (self.parent, self.ev);
        for (name, value) in &ev.proven {
            let Some(col) = parent.column(name) else {
                continue;
            };
            if !self.has(&col.name) && col.kind == ColumnKind::Ordinary && *value != Value::Null {
                self.columns.push((col.name.clone(), value.clone()));
            }
        }
    }

    /// The rules that fill the other columns: the relationship's, then, for a column
    /// without one, the two marks every placeholder carries where its table has them: a
    /// `source` column says where the row came from and a `title` says what it is.
    fn rules(&self) -> Vec<(String, Fill)> {
        let mut rules: Vec<(String, Fill)> = self.rel.fills.clone();
        for c in &self.parent.columns {
            let named = |n: &str| c.name.eq_ignore_ascii_case(n);
            let ruled = rules.iter().any(|(n, _)| n.eq_ignore_ascii_case(&c.name));
            if ruled || self.is_key(&c.name) || c.kind != ColumnKind::Ordinary {
                continue;
            }
            if named("source") {
                rules.push((
                    c.name.clone(),
                    Fill::Value(Value::Text(b"recovered".to_vec())),
                ));
            } else if named("title") {
                rules.push((
                    c.name.clone(),
                    Fill::Label("[recovered] placeholder rebuilt by salvage: the original row is lost; {count} rows of {child} reference {key}".into()),
                ));
            }
        }
        rules
    }

    /// Fills column `name` by `rule`, unless it is a key column or already given; a rule
    /// that gives nothing (or NULL) leaves it to the table.
    fn fill(&mut self, name: &str, rule: &Fill) {
        let parent = self.parent;
        let Some(col) = parent.column(name) else {
            return;
        };
        if self.is_key(&col.name) || self.has(&col.name) {
            return;
        }
        let value = apply(rule, &col.name, self.ev, &|t| self.label(t));
        if let Some(v) = value.filter(|v| *v != Value::Null) {
            self.columns.push((col.name.clone(), v));
            self.filled.push(col.name.clone());
        }
    }

    /// A label's text with `{key}`, `{count}` and `{child}` replaced.
    fn label(&self, text: &str) -> String {
        text.replace("{key}", &key_text(&self.ev.key))
            .replace("{count}", &self.ev.count.to_string())
            .replace("{child}", &self.rel.child)
    }

    /// The first NOT NULL column that nothing fills and no constant default can: the row
    /// cannot be made without inventing its value.
    fn unfilled_not_null(&self) -> Option<&'a Column> {
        let parent = self.parent;
        let alias = parent.rowid_alias();
        parent
            .columns
            .iter()
            .enumerate()
            .find(|(i, c)| {
                c.not_null
                    && !self.has(&c.name)
                    && c.default != ColumnDefault::Constant
                    && Some(*i) != alias
                    && c.kind == ColumnKind::Ordinary
            })
            .map(|(_, c)| c)
    }

    /// The columns left to the table: a constant default fills them, and is registered
    /// like any fill; a default that is not constant (the clock) never fills a row of the
    /// past, which holds NULL there instead.
    fn leave_to_defaults(&mut self) {
        let parent = self.parent;
        let alias = parent.rowid_alias();
        for (i, c) in parent.columns.iter().enumerate() {
            if self.has(&c.name) || Some(i) == alias || c.kind != ColumnKind::Ordinary {
                continue;
            }
            match c.default {
                ColumnDefault::Constant => self.filled.push(c.name.clone()),
                ColumnDefault::Varying => self.columns.push((c.name.clone(), Value::Null)),
                ColumnDefault::None => {}
            }
        }
    }

    /// The row, ready to be written.
    fn into_placeholder(self) -> Placeholder {
        Placeholder {
            table: self.rel.parent.clone(),
            columns: self.columns,
            filled: self.filled,
            key: self.ev.key.clone(),
            children: self.ev.count,
        }
    }
}

/// The value `rule` gives `column` from what the children prove; `label` renders a label.
fn apply(
    rule: &Fill,
    column: &str,
    ev: &ChildEvidence,
    label: &dyn Fn(&str) -> String,
) -> Option<Value> {
    match rule {
        Fill::Value(v) => Some(v.clone()),
        Fill::Label(t) => Some(Value::Text(label(t).into_bytes())),
        Fill::Min(c) => ev.min.get(c).cloned(),
        Fill::Max(c) => ev.max.get(c).cloned(),
        Fill::Count => Some(Value::Integer(ev.count as i64)),
        Fill::Neighbour => ev.neighbour.get(column).cloned(),
        Fill::FirstOf(rules) => rules
            .iter()
            .find_map(|r| apply(r, column, ev, label).filter(|v| *v != Value::Null)),
    }
}

/// What the placeholder tests share: columns, and a bookshop's `authors` and `books`.
#[cfg(test)]
mod testing {
    use super::*;
    use crate::shape::Column;

    pub fn col(name: &str, t: &str, not_null: bool, pk: u32) -> Column {
        Column {
            name: name.into(),
            decl_type: t.into(),
            not_null,
            pk,
            kind: ColumnKind::Ordinary,
            default: ColumnDefault::None,
        }
    }

    fn table(name: &str, columns: Vec<Column>) -> TableShape {
        TableShape {
            name: name.into(),
            columns,
            without_rowid: false,
            strict: false,
            pk_indexed: false,
        }
    }

    /// `authors(id INTEGER PRIMARY KEY, name TEXT)` and `books(id INTEGER PRIMARY KEY,
    /// author_id INTEGER, author_name TEXT)`.
    pub fn bookshop() -> Vec<TableShape> {
        vec![
            table(
                "authors",
                vec![
                    col("id", "INTEGER", false, 1),
                    col("name", "TEXT", false, 0),
                ],
            ),
            table(
                "books",
                vec![
                    col("id", "INTEGER", false, 1),
                    col("author_id", "INTEGER", false, 0),
                    col("author_name", "TEXT", false, 0),
                ],
            ),
        ]
    }

    /// `books.author_KEY` → `authors.KEY`, a declared foreign key.
    pub fn written_by(key: &str) -> Relationship {
        Relationship {
            child: "books".into(),
            child_columns: vec![format!("author_{key}")],
            parent: "authors".into(),
            parent_columns: vec![key.into()],
            fills: Vec::new(),
            origin: "foreign key".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::col;
    use super::*;

    fn sessions() -> TableShape {
        TableShape {
            name: "sessions".into(),
            columns: vec![
                col("id", "TEXT", false, 1),
                col("source", "TEXT", true, 0),
                col("title", "TEXT", false, 0),
                col("started_at", "INTEGER", true, 0),
                col("model", "TEXT", false, 0),
            ],
            without_rowid: false,
            strict: false,
            pk_indexed: false,
        }
    }

    fn rel(fills: Vec<(String, Fill)>) -> Relationship {
        Relationship {
            child: "messages".into(),
            child_columns: vec!["session_id".into()],
            parent: "sessions".into(),
            parent_columns: vec!["id".into()],
            fills,
            origin: "foreign key".into(),
        }
    }

    fn evidence() -> ChildEvidence {
        ChildEvidence {
            key: vec![Value::Text(b"s1".to_vec())],
            count: 500,
            min: [("timestamp".to_string(), Value::Integer(1700))]
                .into_iter()
                .collect(),
            ..ChildEvidence::default()
        }
    }

    #[test]
    fn placeholder_carries_key_source_title_and_proven_start() {
        let plan = plan_placeholder(
            &sessions(),
            &rel(vec![("started_at".into(), Fill::Min("timestamp".into()))]),
            &evidence(),
        );
        let PlaceholderPlan::Ready(p) = plan else {
            panic!("{plan:?}")
        };
        let get = |n: &str| {
            p.columns
                .iter()
                .find(|(c, _)| c == n)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(get("id"), Some(Value::Text(b"s1".to_vec())));
        assert_eq!(get("source"), Some(Value::Text(b"recovered".to_vec())));
        assert_eq!(get("started_at"), Some(Value::Integer(1700)));
        let title = String::from_utf8(match get("title") {
            Some(Value::Text(t)) => t,
            other => panic!("{other:?}"),
        })
        .unwrap();
        assert!(
            title.contains("500 rows of messages") && title.contains("s1"),
            "{title}"
        );
        assert_eq!(get("model"), None, "nothing proves it: left NULL");
        assert_eq!(p.filled, vec!["started_at", "source", "title"]);
    }

    #[test]
    fn not_null_column_nothing_proves_blocks_the_placeholder() {
        let plan = plan_placeholder(&sessions(), &rel(vec![]), &evidence());
        assert!(
            matches!(plan, PlaceholderPlan::Blocked { ref reason, .. } if reason.contains("started_at")),
            "{plan:?}"
        );
    }
}
