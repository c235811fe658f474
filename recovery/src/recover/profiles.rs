//! Application profiles: relationships a schema implies without declaring them, and how
//! to fill a placeholder parent's columns. Profiles are data (JSON, `docs/profiles.md`);
//! the shipped ones are embedded in the binary, and `--profile FILE` loads a user's.

use std::collections::BTreeMap;

use pager::{TextEncoding, Value};
use reconstruct::{Fill, KnownTable, Relationship, TextCopy};
use serde::Deserialize;

/// The profiles shipped with the binary.
const SHIPPED: [(&str, &str); 2] = [
    ("agent", include_str!("../../profiles/agent.json")),
    ("chroma", include_str!("../../profiles/chroma.json")),
];

/// A profile as written in its file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// The profile's name, as `--profile` and the report (`placeholders.profiles`, "profile
    /// NAME") give it.
    pub name: String,
    /// What application the profile is for, in a sentence; empty when not given.
    #[serde(default)]
    pub description: String,
    /// When `--profile auto` uses the profile.
    pub detect: Detect,
    /// Other tables the application creates: each one absent from the schema is reported
    /// with status `missing`, never left out of the report.
    #[serde(default)]
    pub expect: Vec<String>,
    /// Parent-child relationships the schema implies without declaring them, with the
    /// rules that fill a placeholder parent's columns; one over the same columns as a
    /// declared foreign key gives it its fill rules.
    #[serde(default)]
    pub relationships: Vec<ProfileRelationship>,
    /// Full-text tables that keep their own copy of another table's text, row by row
    /// (see `reconstruct::textcopy`).
    #[serde(default)]
    pub text_copies: Vec<ProfileTextCopy>,
    /// The CREATE TABLE statements the application writes, one per table and schema
    /// version, each followed by the CREATE INDEX statements of its indexes (separated
    /// by `;`): a table whose schema row is lost is named from the one its records fit,
    /// and its indexes are made again.
    #[serde(default)]
    pub schema: Vec<String>,
}

/// A full-text table's copy of another table's columns.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileTextCopy {
    /// The full-text table holding the copy; the entry applies only where it exists.
    pub fts: String,
    /// The table the text was copied from.
    pub table: String,
    /// The table column the full-text rowid equals; absent: the table's own rowid.
    pub rowid: Option<String>,
    /// Columns with a fixed value in every row the copy stands for (optional).
    #[serde(default, rename = "where")]
    pub when: BTreeMap<String, serde_json::Value>,
    /// Table column to the full-text column holding its text.
    pub columns: BTreeMap<String, String>,
}

/// When a profile applies: every table it names exists.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Detect {
    /// Tables that must all exist (names compared without case) for `--profile auto` to
    /// use the profile. A profile chosen by name or file applies without them; each one
    /// absent from the schema is then reported with status `missing`, as for `expect`.
    pub tables: Vec<String>,
}

/// A relationship between a child table and its parent table, as a foreign key would
/// declare it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileRelationship {
    /// The child table.
    pub child: String,
    /// The child's columns that reference the parent, in key order.
    pub child_columns: Vec<String>,
    /// The parent table.
    pub parent: String,
    /// The parent's key columns, in the order of `child_columns`.
    pub parent_columns: Vec<String>,
    /// Parent column name to fill rule, ordered by column name.
    #[serde(default)]
    pub fill: BTreeMap<String, FillRule>,
}

/// One fill rule: exactly one of the fields.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FillRule {
    /// `{"value": V}`: the literal V, a string, integer, real, boolean (1 or 0) or
    /// `{"blob": "hex"}`; a JSON `null` counts as no rule given.
    pub value: Option<serde_json::Value>,
    /// `{"label": "text"}`: the text with `{key}`, `{count}` (surviving children) and
    /// `{child}` (child table) replaced.
    pub label: Option<String>,
    /// `{"min": "col"}`: the smallest value of the child column among the surviving
    /// children.
    pub min: Option<String>,
    /// `{"max": "col"}`: the largest value of the child column among the surviving
    /// children.
    pub max: Option<String>,
    /// `{"count": true}`: the number of surviving children.
    #[serde(default)]
    pub count: bool,
    /// `{"neighbour": true}`: the value the parent rows with the nearest integer keys on
    /// both sides agree on.
    #[serde(default)]
    pub neighbour: bool,
    /// A rule to use when this one gives no value.
    #[serde(rename = "else")]
    pub otherwise: Option<Box<FillRule>>,
}

impl FillRule {
    fn to_fill(&self, column: &str) -> Result<Fill, String> {
        let set = [
            self.value.is_some(),
            self.label.is_some(),
            self.min.is_some(),
            self.max.is_some(),
            self.count,
            self.neighbour,
        ];
        if set.iter().filter(|b| **b).count() != 1 {
            return Err(format!(
                "fill of `{column}`: give exactly one of value, label, min, max, count, neighbour"
            ));
        }
        let first = if let Some(v) = &self.value {
            Fill::Value(
                json_value(v)
                    .ok_or_else(|| format!("fill of `{column}`: unsupported value {v}"))?,
            )
        } else if let Some(l) = &self.label {
            Fill::Label(l.clone())
        } else if let Some(c) = &self.min {
            Fill::Min(c.clone())
        } else if let Some(c) = &self.max {
            Fill::Max(c.clone())
        } else if self.count {
            Fill::Count
        } else {
            Fill::Neighbour
        };
        Ok(match &self.otherwise {
            Some(other) => Fill::FirstOf(vec![first, other.to_fill(column)?]),
            None => first,
        })
    }
}

/// A JSON literal as a column value: null, integers, reals, strings, `{"blob": "hex"}`.
fn json_value(v: &serde_json::Value) -> Option<Value> {
    Some(match v {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Integer(i64::from(*b)),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::Integer(i),
            None => Value::Real(n.as_f64()?),
        },
        serde_json::Value::String(s) => Value::Text(s.clone().into_bytes()),
        serde_json::Value::Object(o) => {
            let hex = o.get("blob")?.as_str()?;
            let bytes: Option<Vec<u8>> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
                .collect();
            Value::Blob(bytes?)
        }
        serde_json::Value::Array(_) => return None,
    })
}

impl Profile {
    /// Parses a profile file's text.
    pub fn parse(text: &str) -> Result<Profile, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }

    /// Whether every table the profile names exists (names compared without case).
    pub fn applies(&self, tables: &[String]) -> bool {
        self.detect
            .tables
            .iter()
            .all(|t| tables.iter().any(|x| x.eq_ignore_ascii_case(t)))
    }

    /// The profile's relationships with their fill rules.
    pub fn relationships(&self) -> Result<Vec<Relationship>, String> {
        self.relationships
            .iter()
            .map(|r| {
                let fills = r
                    .fill
                    .iter()
                    .map(|(c, rule)| Ok((c.clone(), rule.to_fill(c)?)))
                    .collect::<Result<_, String>>()?;
                Ok(Relationship {
                    child: r.child.clone(),
                    child_columns: r.child_columns.clone(),
                    parent: r.parent.clone(),
                    parent_columns: r.parent_columns.clone(),
                    fills,
                    origin: format!("profile {}", self.name),
                })
            })
            .collect()
    }
}

impl Profile {
    /// The profile's text copies, fixed values in the database's text encoding.
    pub fn text_copies(&self, enc: TextEncoding) -> Result<Vec<TextCopy>, String> {
        self.text_copies
            .iter()
            .map(|c| {
                let when = c
                    .when
                    .iter()
                    .map(|(col, v)| {
                        let value = json_value(v).ok_or_else(|| {
                            format!("text copy `{}`: unsupported value {v}", c.fts)
                        })?;
                        Ok((
                            col.clone(),
                            match value {
                                Value::Text(t) => {
                                    Value::Text(enc.encode(&String::from_utf8_lossy(&t)))
                                }
                                other => other,
                            },
                        ))
                    })
                    .collect::<Result<_, String>>()?;
                if c.columns.is_empty() {
                    return Err(format!("text copy `{}`: no columns", c.fts));
                }
                Ok(TextCopy {
                    fts: c.fts.clone(),
                    table: c.table.clone(),
                    key: c.rowid.clone(),
                    when,
                    columns: c
                        .columns
                        .iter()
                        .map(|(t, f)| (t.clone(), f.clone()))
                        .collect(),
                    origin: format!("profile {}", self.name),
                })
            })
            .collect()
    }
}

impl Profile {
    /// The tables of the profile's `schema`, each entry run by SQLite in a scratch
    /// in-memory database; an entry that does not create exactly one ordinary table (and
    /// indexes on it) is refused. Parsed once per process for each distinct schema (the
    /// shipped profiles' dozens of statements once took a third of a small file's run).
    pub fn known_tables(&self) -> Result<Vec<KnownTable>, String> {
        type Parsed = Result<Vec<KnownTable>, String>;
        static PARSED: std::sync::OnceLock<
            std::sync::Mutex<std::collections::HashMap<Vec<String>, Parsed>>,
        > = std::sync::OnceLock::new();
        let cache = PARSED.get_or_init(Default::default);
        if let Some(known) = cache.lock().ok().and_then(|c| c.get(&self.schema).cloned()) {
            return known;
        }
        let known = self.parse_known_tables();
        if let Ok(mut c) = cache.lock() {
            c.insert(self.schema.clone(), known.clone());
        }
        known
    }

    /// [`Profile::known_tables`], parsed.
    fn parse_known_tables(&self) -> Result<Vec<KnownTable>, String> {
        self.schema
            .iter()
            .map(|sql| {
                let refuse = |why: String| format!("schema statement `{sql}`: {why}");
                let conn =
                    rusqlite::Connection::open_in_memory().map_err(|e| refuse(e.to_string()))?;
                conn.execute_batch(sql).map_err(|e| refuse(e.to_string()))?;
                let made: Vec<(String, String, bool)> = conn
                    .prepare(
                        "SELECT t.name, s.sql, t.wr FROM pragma_table_list AS t
                         JOIN sqlite_schema AS s ON s.name = t.name
                         WHERE t.schema = 'main' AND s.type = 'table'
                         AND lower(substr(t.name, 1, 7)) <> 'sqlite_'",
                    )
                    .and_then(|mut st| {
                        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                            .collect()
                    })
                    .map_err(|e| refuse(e.to_string()))?;
                let [(name, stored, without_rowid)] = made.as_slice() else {
                    return Err(refuse("it must create exactly one table".into()));
                };
                if reconstruct::is_virtual(Some(stored)) {
                    return Err(refuse("a virtual table has no records to match".into()));
                }
                let shape = crate::base::output::table_shape(&conn, name, *without_rowid)
                    .map_err(|e| refuse(e.to_string()))?;
                let indexes: Vec<(String, String)> = conn
                    .prepare(
                        "SELECT name, sql FROM sqlite_schema WHERE type = 'index'
                         AND sql IS NOT NULL ORDER BY rowid",
                    )
                    .and_then(|mut st| st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
                    .map_err(|e| refuse(e.to_string()))?;
                let others: i64 = conn
                    .query_row(
                        "SELECT count(*) FROM sqlite_schema WHERE type NOT IN ('table', 'index')",
                        [],
                        |r| r.get(0),
                    )
                    .map_err(|e| refuse(e.to_string()))?;
                if others > 0 {
                    return Err(refuse("only a table and its indexes".into()));
                }
                Ok(KnownTable {
                    origin: format!("profile {}", self.name),
                    sql: stored.clone(),
                    shape,
                    indexes,
                })
            })
            .collect()
    }
}

/// The shipped profiles, parsed. A shipped profile that does not parse is a bug caught by
/// the tests.
pub fn shipped() -> Vec<Profile> {
    SHIPPED
        .iter()
        .filter_map(|(_, text)| Profile::parse(text).ok())
        .collect()
}

/// Which profiles a run uses, as the request names them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProfileChoice {
    /// Every shipped profile whose tables exist.
    Auto,
    /// None: declared foreign keys only.
    None,
    /// A shipped profile, by name (`agent`, `chroma`).
    Shipped(String),
    /// A profile file (`docs/profiles.md`).
    File(std::path::PathBuf),
}

impl ProfileChoice {
    /// Reads a choice as the command line spells it: `auto`, `none`, a shipped profile's
    /// name, or else the path of a profile file.
    pub fn parse(text: &str) -> ProfileChoice {
        match text {
            "auto" => ProfileChoice::Auto,
            "none" => ProfileChoice::None,
            name if SHIPPED.iter().any(|(n, _)| *n == name) => {
                ProfileChoice::Shipped(name.to_string())
            }
            path => ProfileChoice::File(path.into()),
        }
    }

    /// Loads the profiles chosen, checking a profile file's rules: an unknown or invalid
    /// profile is refused before a run creates anything.
    pub fn load(&self) -> Result<Profiles, String> {
        Ok(match self {
            ProfileChoice::None => Profiles::default(),
            ProfileChoice::Auto => Profiles {
                profiles: shipped(),
                detect: true,
            },
            ProfileChoice::Shipped(name) => Profiles {
                profiles: shipped().into_iter().filter(|p| p.name == *name).collect(),
                detect: false,
            },
            ProfileChoice::File(path) => {
                let name = path.display();
                let text = std::fs::read_to_string(path).map_err(|e| {
                    format!("`{name}` is neither a shipped profile (agent, chroma) nor a readable file: {e}")
                })?;
                let p = Profile::parse(&text).map_err(|e| format!("profile `{name}`: {e}"))?;
                p.relationships()
                    .map_err(|e| format!("profile `{name}`: {e}"))?;
                p.text_copies(TextEncoding::Utf8)
                    .map_err(|e| format!("profile `{name}`: {e}"))?;
                p.known_tables()
                    .map_err(|e| format!("profile `{name}`: {e}"))?;
                Profiles {
                    profiles: vec![p],
                    detect: false,
                }
            }
        })
    }
}

/// The profiles a request chose, loaded.
#[derive(Debug, Default)]
pub struct Profiles {
    profiles: Vec<Profile>,
    /// Only those whose tables exist apply (`auto`).
    detect: bool,
}

impl Profiles {
    /// Every profile chosen, whether or not it applies.
    pub fn chosen(&self) -> impl Iterator<Item = &Profile> {
        self.profiles.iter()
    }

    /// Whether only the profiles whose tables exist apply (`auto`).
    pub fn detects(&self) -> bool {
        self.detect
    }

    /// The profiles that apply to a database with these tables.
    pub fn applying(&self, tables: &[String]) -> Vec<&Profile> {
        self.profiles
            .iter()
            .filter(|p| !self.detect || p.applies(tables))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_profiles_parse_and_their_rules_are_valid() {
        assert_eq!(shipped().len(), SHIPPED.len());
        for p in shipped() {
            assert!(!p.relationships().unwrap().is_empty(), "{}", p.name);
            p.text_copies(TextEncoding::Utf16le).unwrap();
            assert!(!p.known_tables().unwrap().is_empty(), "{}", p.name);
        }
    }

    #[test]
    fn detection_needs_every_table() {
        let agent = shipped().into_iter().find(|p| p.name == "agent").unwrap();
        assert!(agent.applies(&["Sessions".into(), "messages".into(), "x".into()]));
        assert!(!agent.applies(&["messages".into()]));
    }

    #[test]
    fn a_rule_must_say_one_thing() {
        let text = r#"{"name":"x","detect":{"tables":[]},"relationships":[{"child":"c","child_columns":["k"],"parent":"p","parent_columns":["id"],"fill":{"t":{"label":"a","count":true}}}]}"#;
        assert!(Profile::parse(text).unwrap().relationships().is_err());
    }
}
