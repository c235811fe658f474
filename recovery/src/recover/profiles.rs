//! Application profiles: relationships a schema implies without declaring them, how to
//! fill a placeholder parent's columns, the tables an application creates (to name a table
//! whose schema row is lost) and which of their columns are times. Profiles are data (JSON,
//! `docs/profiles.md`); the shipped ones are embedded in the binary (`agent`, `chroma`, and
//! the catalogue of application schemas, `profiles/catalogue/`), and `--profile FILE`
//! loads a user's.

use std::collections::BTreeMap;

use pager::{TextEncoding, Value};
use reconstruct::{Fill, KnownTable, Relationship, TextCopy};
use serde::Deserialize;

/// The profiles shipped with the binary beside the catalogue.
const SHIPPED: [(&str, &str); 2] = [
    ("agent", include_str!("../../profiles/agent.json")),
    ("chroma", include_str!("../../profiles/chroma.json")),
];

/// The catalogue of application schemas (`profiles/catalogue/*.json`, listed by the
/// build script): one profile per application database, with its provenance.
mod catalogue {
    include!(concat!(env!("OUT_DIR"), "/catalogue.rs"));
}

/// Every shipped profile's file: name and text.
fn shipped_files() -> impl Iterator<Item = &'static (&'static str, &'static str)> {
    SHIPPED.iter().chain(catalogue::CATALOGUE)
}

/// A profile as written in its file.
#[derive(Clone, Debug, Deserialize)]
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
    /// and its indexes are made again. A statement only some versions write names them.
    #[serde(default)]
    pub schema: Vec<Statement>,
    /// The application, as a person names it (catalogue entries).
    #[serde(default)]
    pub application: String,
    /// What kind of application: browser, messenger, mobile-os, mail, desktop-os, photos,
    /// productivity, credentials, ai-agent, vector-store, media (catalogue entries).
    #[serde(default)]
    pub category: String,
    /// The names the database's file has on disk.
    #[serde(default)]
    pub files: Vec<String>,
    /// Where the schema is known from: each source read, and the version it is of.
    #[serde(default)]
    pub provenance: Vec<Provenance>,
    /// The columns that hold a point in time, with their epoch and unit.
    #[serde(default)]
    pub timestamps: Vec<TimestampColumn>,
    /// The columns whose texts have a format (URLs, paths, MIME types, …): evidence of
    /// their table when the schema is lost (`reconstruct::formats`).
    #[serde(default)]
    pub formats: Vec<FormatColumn>,
}

/// A column whose texts the application writes in a known format.
#[derive(Clone, Debug, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct FormatColumn {
    /// The table.
    pub table: String,
    /// The column.
    pub column: String,
    /// Its format (`url`, `uri`, `path`, `email`, `phone`, `mime`, `uuid`, `hex`, `json`,
    /// `locale`, `host`), or several, any of which a value may have.
    pub format: OneOrMore,
    /// Text every value starts with, where the application always writes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
}

/// One format, or a list of them.
#[derive(Clone, Debug, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum OneOrMore {
    /// `"url"`.
    One(reconstruct::Format),
    /// `["phone", "email"]`.
    More(Vec<reconstruct::Format>),
}

impl FormatColumn {
    /// The format as naming judges it.
    pub fn column_format(&self) -> reconstruct::ColumnFormat {
        reconstruct::ColumnFormat {
            formats: match &self.format {
                OneOrMore::One(f) => vec![*f],
                OneOrMore::More(f) => f.clone(),
            },
            prefix: self.prefix.clone(),
        }
    }
}

/// A CREATE TABLE statement of a profile's schema (with its indexes): written as text, it
/// is of every version; as `{"sql": …, "versions": […]}`, of the versions whose provenance
/// `tag`s it lists.
#[derive(Clone, Debug, Deserialize, serde::Serialize, PartialEq, Eq, Hash)]
#[serde(untagged)]
pub enum Statement {
    /// Every version writes it.
    Every(String),
    /// The versions named write it.
    Of(VersionedStatement),
}

/// A statement only some versions write.
#[derive(Clone, Debug, Deserialize, serde::Serialize, PartialEq, Eq, Hash)]
#[serde(deny_unknown_fields)]
pub struct VersionedStatement {
    /// The statements.
    pub sql: String,
    /// The versions that write it: tags of the profile's provenance.
    pub versions: Vec<String>,
}

impl Statement {
    /// Its SQL.
    pub fn sql(&self) -> &str {
        match self {
            Statement::Every(sql) => sql,
            Statement::Of(v) => &v.sql,
        }
    }

    /// Whether version `tag` writes it.
    pub fn of(&self, tag: &str) -> bool {
        match self {
            Statement::Every(_) => true,
            Statement::Of(v) => v.versions.iter().any(|t| t == tag),
        }
    }
}

/// One source a profile's schema was taken from.
#[derive(Clone, Debug, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// The source: repository, path and commit, or a URL.
    pub source: String,
    /// The application's version (release, tag, date or database version) it is of.
    pub version: String,
    /// That version's short name, as the report gives it and the schema's statements
    /// name it; none for a source that is of no one version (a note on time encodings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// What it covers.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// A column holding a point in time.
#[derive(Clone, Debug, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TimestampColumn {
    /// The table.
    pub table: String,
    /// The column.
    pub column: String,
    /// How the application writes it.
    pub epoch: reconstruct::time::Epoch,
    /// What happened at that time, in a few words ("Page visited").
    pub label: String,
}

/// A full-text table's copy of another table's columns.
#[derive(Clone, Debug, Deserialize)]
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
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Detect {
    /// Tables that must all exist (names compared without case) for `--profile auto` to
    /// use the profile. A profile chosen by name or file applies without them; each one
    /// absent from the schema is then reported with status `missing`, as for `expect`.
    pub tables: Vec<String>,
}

/// A relationship between a child table and its parent table, as a foreign key would
/// declare it.
#[derive(Clone, Debug, Deserialize)]
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
#[derive(Clone, Debug, Deserialize)]
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

    /// The versions its provenance names (their tags), in its order, each once.
    pub fn versions(&self) -> Vec<&str> {
        let mut tags: Vec<&str> = Vec::new();
        for t in self.provenance.iter().filter_map(|v| v.tag.as_deref()) {
            if !tags.contains(&t) {
                tags.push(t);
            }
        }
        tags
    }

    /// Whether every version a statement names is one its provenance tags (a version may
    /// write two statements of a table: a new database's, and one an upgrade altered).
    pub fn check_versions(&self) -> Result<(), String> {
        if let Some(v) = self
            .provenance
            .iter()
            .find(|v| v.tag.as_deref().is_some_and(|t| t.trim().is_empty()))
        {
            return Err(format!(
                "the provenance entry of version `{}` has an empty tag",
                v.version
            ));
        }
        let tags = self.versions();
        let known = self.known_tables()?;
        for (statement, k) in self.schema.iter().zip(&known) {
            let Statement::Of(v) = statement else {
                continue;
            };
            if v.versions.is_empty() {
                return Err(format!(
                    "the statement of {} names no version",
                    k.shape.name
                ));
            }
            for t in &v.versions {
                if !tags.contains(&t.as_str()) {
                    return Err(format!(
                        "the statement of {} names version `{t}`, which no provenance entry is tagged",
                        k.shape.name
                    ));
                }
            }
        }
        Ok(())
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
            std::sync::Mutex<std::collections::HashMap<Vec<Statement>, Parsed>>,
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
            .map(|statement| {
                let sql = statement.sql();
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
                let (keys, every_row_indexed) =
                    index_keys(&conn, name, &shape).map_err(|e| refuse(e.to_string()))?;
                let order = shape.record_order();
                let formats = self
                    .formats
                    .iter()
                    .filter(|f| f.table.eq_ignore_ascii_case(name))
                    .filter_map(|f| {
                        let col = shape
                            .columns
                            .iter()
                            .position(|c| c.name.eq_ignore_ascii_case(&f.column))?;
                        Some((order.iter().position(|c| *c == col)?, f.column_format()))
                    })
                    .collect();
                let references =
                    references(&conn, name, &shape).map_err(|e| refuse(e.to_string()))?;
                Ok(KnownTable {
                    origin: format!("profile {}", self.name),
                    sql: stored.clone(),
                    shape,
                    indexes,
                    keys,
                    every_row_indexed,
                    formats,
                    references,
                })
            })
            .collect()
    }
}

/// The columns of `table` (of `shape`) that declare a foreign key of one column, each with
/// its record position.
fn references(
    conn: &rusqlite::Connection,
    table: &str,
    shape: &reconstruct::TableShape,
) -> rusqlite::Result<Vec<reconstruct::references::Reference>> {
    let order = shape.record_order();
    let links: Vec<(i64, String, String, Option<String>)> = conn
        .prepare("SELECT id, \"from\", \"table\", \"to\" FROM pragma_foreign_key_list(?1)")?
        .query_map([table], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?
        .collect::<Result<_, _>>()?;
    Ok(links
        .iter()
        // A key of several columns is not one column's values.
        .filter(|(id, ..)| links.iter().filter(|l| l.0 == *id).count() == 1)
        .filter_map(|(_, from, parent, key)| {
            let at = shape
                .columns
                .iter()
                .position(|c| c.name.eq_ignore_ascii_case(from))?;
            Some(reconstruct::references::Reference {
                position: order.iter().position(|c| *c == at)?,
                column: from.clone(),
                parent: parent.clone(),
                key: key.clone(),
            })
        })
        .collect())
}

/// Each index of `table` (those its UNIQUE and PRIMARY KEY constraints make too), as the
/// record positions of the columns it keys on (`None` for one keyed on an expression);
/// and whether one its constraints make (part of the CREATE TABLE statement, so in every
/// file that table is in, where a CREATE INDEX may be missing) holds every row.
fn index_keys(
    conn: &rusqlite::Connection,
    table: &str,
    shape: &reconstruct::TableShape,
) -> rusqlite::Result<(Vec<Option<Vec<usize>>>, bool)> {
    let order = shape.record_order();
    let names: Vec<(String, bool)> = conn
        // A constraint's index (origin `u` or `pk`) is never partial.
        .prepare("SELECT name, origin <> 'c' FROM pragma_index_list(?1) ORDER BY seq DESC")?
        .query_map([table], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let mut every_row = false;
    let keys = names
        .iter()
        .map(|(index, of_constraint)| {
            let cids: Vec<i64> = conn
                .prepare("SELECT cid FROM pragma_index_info(?1) ORDER BY seqno")?
                .query_map([index], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            let key: Option<Vec<usize>> = cids
                .iter()
                .map(|cid| {
                    let cid = usize::try_from(*cid).ok()?;
                    order.iter().position(|c| *c == cid)
                })
                .collect();
            every_row |= key.is_some() && *of_constraint;
            Ok(key)
        })
        .collect::<rusqlite::Result<_>>()?;
    Ok((keys, every_row))
}

/// The shipped profiles, parsed once per process (the catalogue is some 650 KB of JSON,
/// which every run's profiles, report and identification read). A shipped profile that
/// does not parse is a bug caught by the tests.
pub fn shipped_parsed() -> &'static [Profile] {
    static PARSED: std::sync::OnceLock<Vec<Profile>> = std::sync::OnceLock::new();
    PARSED.get_or_init(|| {
        shipped_files()
            .filter_map(|(_, text)| Profile::parse(text).ok())
            .collect()
    })
}

/// The shipped profiles, as a run owns them.
pub fn shipped() -> Vec<Profile> {
    shipped_parsed().to_vec()
}

/// A table of a database, as identification reads it.
#[derive(Clone, Debug, Default)]
pub struct Present {
    /// Its name.
    pub name: String,
    /// Whether the schema names it (else it was named from its records).
    pub from_schema: bool,
    /// Its columns, when known.
    pub columns: Vec<String>,
    /// Their affinities, for a table named from its records: what its records tell of
    /// its columns (no names).
    pub affinities: Vec<reconstruct::Affinity>,
    /// Their declared types, for a table of the schema.
    pub types: Vec<String>,
}

/// The applications whose databases these tables are, by every shipped profile: each one
/// whose detect tables all exist (by name, without case) with the columns of a version the
/// profile knows (four in five of them, two at least, where the table's columns are
/// known: a `history` table is not every application's that has one), and each one named
/// in `named_by` (its known tables named tables from their records, their schema rows
/// lost). In profile order. `schema_whole`: the schema was read without a finding (else a
/// table absent may be a table lost).
pub fn identify(
    tables: &[Present],
    named_by: &[String],
    schema_whole: bool,
) -> Vec<crate::report::Identified> {
    use crate::report::{Identified, IdentifiedBy};
    let find = |t: &str| tables.iter().find(|x| x.name.eq_ignore_ascii_case(t));
    shipped_parsed()
        .iter()
        .filter_map(|p| {
            // By name first: only a profile whose detect tables are all there, or which
            // named tables, has its statements parsed (by SQLite, once per process).
            let named = named_by.contains(&p.name);
            let by_name = p
                .detect
                .tables
                .iter()
                .all(|t| find(t).is_some_and(|x| x.from_schema));
            if !named && !by_name {
                return None;
            }
            let known_tables = p.known_tables().unwrap_or_default();
            // Four in five of a known version's columns, two at least, are the table's; a
            // table whose columns are not known (a virtual table's) is no evidence.
            let fits = |t: &Present| {
                !t.columns.is_empty()
                    && known_tables
                        .iter()
                        .filter(|k| k.shape.name.eq_ignore_ascii_case(&t.name))
                        .any(|k| {
                            let shared = k
                                .shape
                                .columns
                                .iter()
                                .filter(|c| {
                                    t.columns.iter().any(|x| x.eq_ignore_ascii_case(&c.name))
                                })
                                .count();
                            shared >= 2.min(k.shape.columns.len())
                                && shared * 5 >= k.shape.columns.len() * 4
                        })
            };
            let by_schema = p
                .detect
                .tables
                .iter()
                .all(|t| find(t).is_some_and(|x| x.from_schema && fits(x)));
            let by = match (by_schema, named) {
                (true, _) => IdentifiedBy::Schema,
                (false, true) => IdentifiedBy::Records,
                (false, false) => return None,
            };
            let known = distinct_names(&known_tables);
            Some(Identified {
                application: match p.application.is_empty() {
                    true => p.description.clone(),
                    false => p.application.clone(),
                },
                category: p.category.clone(),
                by,
                detected_by: p.detect.tables.clone(),
                tables_present: known.iter().filter(|k| find(k).is_some()).count(),
                tables_known: known.len(),
                versions: p.provenance.iter().map(|v| v.version.clone()).collect(),
                version: fitting_versions(p, &known_tables, tables, schema_whole),
                profile: p.name.clone(),
            })
        })
        .collect()
}

/// The tables' names, lower case, each once, in order.
fn distinct_names<'a>(tables: impl IntoIterator<Item = &'a KnownTable>) -> Vec<String> {
    let mut names: Vec<String> = tables
        .into_iter()
        .map(|k| k.shape.name.to_ascii_lowercase())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The versions of `p` whose statements the tables fit best ([`crate::report::VersionFit`]):
/// those with the most tables whose columns are, by name and in order, those of one of its
/// statements; of them, those with the most whose declared types are its too; of them,
/// where the schema is whole (no finding in it, every table in it: a table named from
/// records tells of a damaged schema, whose rows of whole tables may be lost too), those
/// with the fewest of their tables absent. `None` for a profile that tags no version.
fn fitting_versions(
    p: &Profile,
    known: &[KnownTable],
    tables: &[Present],
    schema_whole: bool,
) -> Option<crate::report::VersionFit> {
    let versions = p.versions();
    if versions.is_empty() {
        return None;
    }
    let schema_whole = schema_whole && tables.iter().all(|t| t.from_schema);
    // A table named from its records fits as well every statement whose columns have its
    // affinities in its order: the records hold values, not names (Plasma's
    // ResourceScoreCache and KDE 4's differ in the order of two INTEGER columns alone).
    let named = |k: &KnownTable, t: &Present| {
        k.shape.columns.len() == t.columns.len()
            && (k
                .shape
                .columns
                .iter()
                .zip(&t.columns)
                .all(|(c, x)| c.name.eq_ignore_ascii_case(x))
                || (!t.from_schema
                    && t.affinities.len() == t.columns.len()
                    && k.shape
                        .columns
                        .iter()
                        .zip(&t.affinities)
                        .all(|(c, a)| c.affinity() == *a)))
    };
    // The tables of the profile's names whose columns no statement of any version has: a
    // version the profile does not know (a later Chroma's `collections` without `topic`).
    let mut unknown: Vec<String> = tables
        .iter()
        .filter(|t| !t.columns.is_empty())
        .filter(|t| {
            let of_name = known
                .iter()
                .filter(|k| k.shape.name.eq_ignore_ascii_case(&t.name));
            of_name.clone().next().is_some() && !of_name.clone().any(|k| named(k, t))
        })
        .map(|t| t.name.clone())
        .collect();
    unknown.sort();
    unknown.dedup();
    // Per version: tables as it writes them by column names; of those, by declared types
    // too; its tables absent.
    let scored: Vec<(&str, usize, usize, usize)> = versions
        .into_iter()
        .map(|tag| {
            let written: Vec<&KnownTable> = known
                .iter()
                .zip(&p.schema)
                .filter(|(_, s)| s.of(tag))
                .map(|(k, _)| k)
                .collect();
            let names = distinct_names(written.iter().copied());
            let (mut fit, mut typed, mut absent) = (0, 0, 0);
            for name in &names {
                let Some(t) = tables.iter().find(|t| t.name.eq_ignore_ascii_case(name)) else {
                    absent += 1;
                    continue;
                };
                let of_name = || {
                    written.iter().filter(|k| {
                        k.shape.name.eq_ignore_ascii_case(name)
                            && k.shape.columns.len() == t.columns.len()
                    })
                };
                let named = |k: &&&KnownTable| named(k, t);
                // A schema's declared types are the application's too (darktable's
                // `images` took `datetime_taken` from CHAR(20) to INTEGER).
                let declared = |k: &&&KnownTable| {
                    t.types.len() != t.columns.len()
                        || k.shape
                            .columns
                            .iter()
                            .zip(&t.types)
                            .all(|(c, x)| c.decl_type.eq_ignore_ascii_case(x))
                };
                fit += usize::from(of_name().any(|k| named(&k)));
                typed += usize::from(of_name().any(|k| named(&k) && declared(&k)));
            }
            (tag, fit, typed, absent)
        })
        .collect();
    let Some(most) = scored.iter().map(|s| s.1).max().filter(|m| *m > 0) else {
        return Some(crate::report::VersionFit {
            tags: Vec::new(),
            tables: 0,
            types_decided: false,
            absent_decided: false,
            unknown,
        });
    };
    let fitting = || scored.iter().filter(move |s| s.1 == most);
    let most_typed = fitting().map(|s| s.2).max().unwrap_or(0);
    let typed = || fitting().filter(move |s| s.2 == most_typed);
    let fewest = typed().map(|s| s.3).min().unwrap_or(0);
    Some(crate::report::VersionFit {
        tags: typed()
            .filter(|s| !schema_whole || s.3 == fewest)
            .map(|s| s.0.to_string())
            .collect(),
        tables: most,
        types_decided: fitting().any(|s| s.2 < most_typed),
        absent_decided: schema_whole && typed().any(|s| s.3 > fewest),
        unknown,
    })
}

/// What the records of inferred tables name ([`name_from_records`]).
#[derive(Clone, Debug, Default)]
pub struct Named {
    /// The inferred tables whose records fit a known table, each with that table.
    pub tables: Vec<(reconstruct::KnownMatch, reconstruct::KnownTable)>,
    /// Those whose records fit known tables of several names alike (of the applications
    /// detected, under `--profile auto`): each keeps a name of its own.
    pub undecided: Vec<reconstruct::Undecided>,
    /// Those whose records are rows of one of SQLite's own tables (`sqlite_schema`,
    /// `sqlite_sequence`) on a leaf no tree reaches, with that table's name: never an
    /// application's table.
    pub sqlites: Vec<(usize, &'static str)>,
    /// Those whose records fit one known table better than any other of the whole
    /// catalogue's, left unnamed because no evidence detects its application (one table's
    /// shape is not enough): the inferred table, the known table's name and its origin.
    pub unconfirmed: Vec<(usize, String, String)>,
}

/// The inferred tables whose records fit a table a chosen profile knows, each with that
/// table (see `load::known_tables`, which gives the inferred tables already named by an
/// index in `fixed`, and `docs/profiles.md`). `taken` names tables that exist; `schema`
/// holds the schema's names, lower case.
pub fn name_from_records(
    db: &pager::Database<'_>,
    inferred: &[reconstruct::InferredTable],
    trees: &reconstruct::IndexTrees,
    mut fixed: std::collections::BTreeMap<usize, String>,
    taken: &dyn Fn(&str) -> bool,
    schema: &std::collections::BTreeSet<String>,
    profiles: &Profiles,
) -> Named {
    use std::collections::{BTreeMap, BTreeSet};
    let samples = reconstruct::sample_inferred(db, inferred);
    let mut sqlites: Vec<(usize, &'static str)> = Vec::new();
    // Rows of `sqlite_schema` on a leaf page outside the schema's tree are the schema's,
    // never an application's table (five columns fit many).
    let enc = db.encoding();
    for (i, sample) in samples.tables.iter().enumerate() {
        if schema_rows(sample, enc) {
            fixed.insert(i, String::from("\0schema"));
            sqlites.push((i, "sqlite_schema"));
        }
    }
    // Its value is the largest rowid the table was given: the one inferred table whose
    // largest rowid it is, of those whose records fit a known table of that name, is taken
    // for the table it names.
    let largest: Vec<Option<i64>> = inferred
        .iter()
        .map(|t| t.groups.iter().filter_map(|g| g.rowids.map(|r| r.1)).max())
        .collect();
    // `sqlite_sequence` keeps a row (name, largest rowid) for each AUTOINCREMENT table: on a
    // leaf no tree reaches, its rows name the application's tables. It is never one of the
    // application's tables itself. Pairs of a word and a count are common, so records of
    // that shape are taken for its rows only where they name the file's tables: half of
    // them at least, each a table of the schema or one whose largest rowid is its value.
    let mut sequence: Vec<(String, i64)> = Vec::new();
    for (i, sample) in samples.tables.iter().enumerate() {
        let Some(rows) = sequence_rows(sample, enc) else {
            continue;
        };
        let tables = rows
            .iter()
            .filter(|(name, seq)| {
                schema.contains(&name.to_lowercase())
                    || largest
                        .iter()
                        .enumerate()
                        .any(|(t, l)| t != i && *l == Some(*seq))
            })
            .count();
        if tables == 0 || tables * 2 < rows.len() {
            continue;
        }
        fixed.insert(i, String::from("\0sqlite_sequence"));
        sqlites.push((i, "sqlite_sequence"));
        sequence.extend(rows);
    }
    let parsed: Vec<(&Profile, Vec<reconstruct::KnownTable>)> = profiles
        .chosen()
        .map(|p| (p, p.known_tables().unwrap_or_default()))
        .filter(|(_, k)| !k.is_empty())
        .collect();
    // A table of that name whose columns hold nine of the inferred table's records in ten.
    let fits_name = |i: usize, name: &str| {
        let Some(sample) = samples.tables.get(i).filter(|s| !s.is_empty()) else {
            return false;
        };
        parsed.iter().flat_map(|(_, k)| k).any(|k| {
            k.shape.name.eq_ignore_ascii_case(name)
                && sample.iter().filter(|r| k.shape.fit(r).is_some()).count() * 10
                    >= sample.len() * 9
        })
    };
    let mut by_rowid: BTreeSet<usize> = BTreeSet::new();
    for (name, seq) in &sequence {
        let at: Vec<usize> = (0..inferred.len())
            .filter(|i| largest.get(*i).copied().flatten() == Some(*seq) && fits_name(*i, name))
            .collect();
        if let [t] = at.as_slice() {
            if !fixed.contains_key(t) && !taken(name) {
                fixed.insert(*t, name.clone());
                by_rowid.insert(*t);
            }
        }
    }
    let run = |known: &[reconstruct::KnownTable], fixed: &BTreeMap<usize, String>, least: usize| {
        let m = reconstruct::match_sampled(&samples, trees, inferred, known, fixed, taken, least);
        Named {
            tables: m
                .named
                .into_iter()
                .filter_map(|m| Some((m.clone(), known.get(m.known)?.clone())))
                .collect(),
            undecided: m.undecided,
            sqlites: Vec::new(),
            unconfirmed: Vec::new(),
        }
    };
    // Tables left undecided among names of one shape: the keys a column refers to may
    // tell which (`reconstruct::references`).
    let by_references = |named: &mut Named, known: &[reconstruct::KnownTable]| {
        let matches: Vec<reconstruct::KnownMatch> =
            named.tables.iter().map(|(m, _)| m.clone()).collect();
        let referred = reconstruct::references::decide_by_references(
            db,
            &samples,
            inferred,
            known,
            &matches,
            &fixed,
            &named.undecided,
            taken,
        );
        for m in referred {
            named.undecided.retain(|u| u.inferred != m.inferred);
            if let Some(k) = known.get(m.known) {
                named.tables.push((m, k.clone()));
            }
        }
    };
    if !profiles.detects() {
        let known: Vec<reconstruct::KnownTable> =
            parsed.iter().flat_map(|(_, k)| k.iter().cloned()).collect();
        let mut named = run(&known, &fixed, 2);
        by_references(&mut named, &known);
        return Named { sqlites, ..named };
    }
    // Every profile's tables compete: a name is given where the records single it out
    // among them all. Then only the profiles those names detect compete again, so that a
    // table of a generic shape is named once its application is known by another.
    // An application whose tables (three or more, or two holding its formats), matched
    // among its own alone, account for every inferred table of the database, each record
    // as wide as its table, is detected by that joint fit, where no other application's
    // tables do the same: a store of a few tables of common shapes (an agent's sessions
    // and messages) fits other applications' tables one by one, but not all of them at
    // once.
    let explained: Vec<usize> = samples
        .tables
        .iter()
        .enumerate()
        .filter(|(i, sample)| !fixed.contains_key(i) && sample.iter().any(|r| r.len() >= 2))
        .map(|(i, _)| i)
        .collect();
    // The inferred tables with records, not named by an index.
    let holding: Vec<usize> = samples
        .tables
        .iter()
        .enumerate()
        .filter(|(i, sample)| !fixed.contains_key(i) && !sample.is_empty())
        .map(|(i, _)| i)
        .collect();
    let jointly: Vec<&str> = parsed
        .iter()
        .filter(|(p, known)| {
            let own = run(known, &fixed, 2).tables;
            // Each table of three records or more (one row fits many tables by chance).
            let whole = |(m, k): &(reconstruct::KnownMatch, reconstruct::KnownTable)| {
                m.sampled >= 3
                    && m.fitting == m.sampled
                    && samples
                        .tables
                        .get(m.inferred)
                        .is_some_and(|s| s.iter().all(|r| r.len() == k.shape.columns.len()))
            };
            let detect = |k: &reconstruct::KnownTable| {
                p.detect
                    .tables
                    .iter()
                    .any(|t| k.shape.name.eq_ignore_ascii_case(t))
            };
            let three = own.len() >= 3
                && own.iter().all(whole)
                && own.iter().any(|(_, k)| detect(k))
                && explained
                    .iter()
                    .all(|i| own.iter().any(|(m, _)| m.inferred == *i));
            // A database of two tables is its application's where, among its own, they
            // are exactly its two tables: each holding values of a format the application
            // writes there (hosts, URLs), one of three columns or more, neither a table
            // other applications make as it is (Android's `android_metadata`, of every
            // app). A key and a value beside one table fit many applications; formats in
            // both, each table the application's own, do not.
            let shared = |k: &reconstruct::KnownTable| {
                parsed.iter().any(|(other, tables)| {
                    other.name != p.name && tables.iter().any(|t| t.shape == k.shape)
                })
            };
            let pair = || {
                let own = run(known, &fixed, 1).tables;
                own.len() == 2
                    && own
                        .iter()
                        .all(|t| whole(t) && t.0.formats > 0 && !shared(&t.1))
                    && own.iter().any(|(m, k)| detect(k) && evidenced(m, k) >= 3)
                    && holding
                        .iter()
                        .all(|i| own.iter().any(|(m, _)| m.inferred == *i))
            };
            // The second match is run only where the database has two tables.
            three || (holding.len() == 2 && pair())
        })
        .map(|(p, _)| p.name.as_str())
        .collect();
    let jointly: Option<String> = match jointly.as_slice() {
        [one] => Some(one.to_string()),
        _ => None,
    };
    // The one application that has a table of every name `sqlite_sequence` lists is
    // detected by them where the file bears those names out: two names or more, each with
    // a table whose records are as wide as the application's table of that name and nine
    // in ten of them fit it; or one name, whose table its largest rowid found, as wide as
    // it, of two columns or more besides its key, every sampled record fitting (below).
    // Names alone (`users`, `messages`) are every other application's.
    let named: Vec<&str> = parsed
        .iter()
        .filter(|(_, known)| {
            !sequence.is_empty()
                && sequence.iter().all(|(n, _)| {
                    let of_name = || {
                        known
                            .iter()
                            .filter(|k| k.shape.name.eq_ignore_ascii_case(n))
                    };
                    of_name().next().is_some()
                        && (sequence.len() == 1
                            || samples.tables.iter().enumerate().any(|(i, sample)| {
                                // A table named already is borne out for its own name.
                                fixed.get(&i).is_none_or(|f| f.eq_ignore_ascii_case(n))
                                    && !sample.is_empty()
                                    && of_name().any(|k| {
                                        let wide = k.shape.record_order().len();
                                        sample
                                            .iter()
                                            .filter(|r| r.len() == wide && k.shape.fit(r).is_some())
                                            .count()
                                            * 10
                                            >= sample.len() * 9
                                    })
                            }))
                })
        })
        .map(|(p, _)| p.name.as_str())
        .collect();
    let by_sequence: Option<String> = match named.as_slice() {
        [one] => Some(one.to_string()),
        _ => None,
    };
    // Once only detected applications compete, a table of one column besides its key
    // (Android's `android_metadata`) is named where it alone fits.
    let mut live = parsed;
    let mut least = 2;
    // The tables the whole catalogue's first round names: one left unnamed at the end (its
    // application not detected) is told the table it fits best.
    let mut first: Option<Vec<(usize, String, String)>> = None;
    let of_live = |live: &[(&Profile, Vec<reconstruct::KnownTable>)], origin: &str| {
        live.iter()
            .any(|(p, _)| origin.strip_prefix("profile ") == Some(p.name.as_str()))
    };
    loop {
        let known: Vec<reconstruct::KnownTable> =
            live.iter().flat_map(|(_, k)| k.iter().cloned()).collect();
        let mut named = run(&known, &fixed, least);
        let first = first.get_or_insert_with(|| {
            named
                .tables
                .iter()
                // A name left by elimination is no fit better than any other.
                .filter(|(m, _)| m.taken_by_others.is_empty())
                .map(|(m, k)| (m.inferred, k.shape.name.clone(), k.origin.clone()))
                .collect()
        });
        let matches = &named.tables;
        let before = live.len();
        // A match is evidence for every application that creates the table as the
        // matched statement does (two eras of one store share most statements).
        let explains: Vec<BTreeSet<usize>> = live
            .iter()
            .map(|(_, tables)| {
                matches
                    .iter()
                    .filter(|(_, k)| {
                        tables
                            .iter()
                            .any(|t| t.shape == k.shape && t.keys == k.keys)
                    })
                    .map(|(m, _)| m.inferred)
                    .collect()
            })
            .collect();
        let found: Vec<bool> = live
            .iter()
            .zip(&explains)
            .map(|((p, _), explained)| {
                let own: Vec<(reconstruct::KnownMatch, reconstruct::KnownTable)> = matches
                    .iter()
                    .filter(|(m, _)| explained.contains(&m.inferred))
                    .cloned()
                    .collect();
                let found_by_rowid = own
                    .iter()
                    .filter(|(m, k)| {
                        by_rowid.contains(&m.inferred)
                            && m.sampled >= 3
                            && m.fitting == m.sampled
                            && m.width == k.shape.record_order().len()
                            && evidenced(m, k) >= 2
                    })
                    .count();
                jointly.as_deref() == Some(p.name.as_str())
                    || (by_sequence.as_deref() == Some(p.name.as_str())
                        && (sequence.len() >= 2 || found_by_rowid >= 1))
                    || detected(p, &own, schema)
            })
            .collect();
        // An application whose tables account for every table a detected one's do, and
        // more, is as well evidenced (another era of the same store, whose detect tables
        // differ).
        let keep: Vec<bool> = explains
            .iter()
            .zip(&found)
            .map(|(mine, is)| {
                *is || explains.iter().zip(&found).any(|(theirs, detected)| {
                    *detected
                        && theirs.len() >= 2
                        && mine.len() > theirs.len()
                        && mine.is_superset(theirs)
                })
            })
            .collect();
        let mut keep = keep.into_iter();
        live.retain(|_| keep.next().unwrap_or(false));
        if live.len() == before {
            by_references(&mut named, &known);
            // Told only of a table whose application is not detected, and whose name no
            // table has.
            named.unconfirmed = first
                .iter()
                .filter(|(i, name, origin)| {
                    !of_live(&live, origin)
                        && named.tables.iter().all(|(m, k)| {
                            m.inferred != *i && !k.shape.name.eq_ignore_ascii_case(name)
                        })
                })
                .cloned()
                .collect();
            return Named { sqlites, ..named };
        }
        least = 1;
    }
}

/// Columns (besides the rowid) of a known table whose fitting records alone identify its
/// application (see `known_tables`).
const STRONG_COLUMNS: usize = 8;

/// The rows (a table's name, its largest rowid) of records that are all `sqlite_sequence`
/// rows: two values, a name (an identifier) and an integer, each name once; `None`
/// otherwise.
fn sequence_rows(
    sample: &[Vec<pager::Value>],
    enc: pager::TextEncoding,
) -> Option<Vec<(String, i64)>> {
    let mut names: Vec<(String, i64)> = Vec::new();
    for r in sample {
        let [pager::Value::Text(name), pager::Value::Integer(seq)] = r.as_slice() else {
            return None;
        };
        let name = enc.decode(name)?;
        let identifier = !name.is_empty()
            && name.len() <= 128
            && name
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '$');
        if !identifier || names.iter().any(|(n, _)| n.eq_ignore_ascii_case(&name)) {
            return None;
        }
        names.push((name, *seq));
    }
    (!names.is_empty()).then_some(names)
}

/// Whether nine sampled records in ten are `sqlite_schema` rows: five values, the first
/// `table`, `index`, `view` or `trigger`, the last a CREATE statement or NULL.
fn schema_rows(sample: &[Vec<pager::Value>], enc: pager::TextEncoding) -> bool {
    let kinds: Vec<Vec<u8>> = ["table", "index", "view", "trigger"]
        .iter()
        .map(|k| enc.encode(k))
        .collect();
    let create = enc.encode("CREATE");
    let is_row = |r: &Vec<pager::Value>| match r.as_slice() {
        [pager::Value::Text(kind), _, _, _, sql] => {
            kinds.contains(kind)
                && match sql {
                    pager::Value::Null => true,
                    pager::Value::Text(t) => t
                        .get(..create.len())
                        .is_some_and(|h| h.eq_ignore_ascii_case(&create)),
                    _ => false,
                }
        }
        _ => false,
    };
    !sample.is_empty() && sample.iter().filter(|r| is_row(r)).count() * 10 >= sample.len() * 9
}

/// Whether a profile's own matches (and the schema's names) detect its application. A
/// match is *alone* where no table of another name fits its records at all, or only
/// tables whose indexes the orphan index trees traced to it are not.
/// Detected: every table it is detected by is in the schema; or one of them was named
/// from records as wide as it of eight columns or more ([`STRONG_COLUMNS`]), or, alone, from records
/// whose columns and index trees keyed exactly as its indexes are number eight; or, where
/// it is detected by two tables or more, one of them was named, alone, from records of
/// three columns or more, beside another of its tables named so; or one of them was named, alone,
/// from records of three columns or more, with two index trees or more traced to it
/// keyed exactly as its indexes are. Shapes alone (a table of five common columns
/// fitting one profile's) never detect an application: a table of a generic shape (a key
/// and a value, as every Chromium store's `meta`) is named only once its application is
/// known by another.
fn detected(
    p: &crate::recover::profiles::Profile,
    own: &[(reconstruct::KnownMatch, reconstruct::KnownTable)],
    schema: &std::collections::BTreeSet<String>,
) -> bool {
    // A name left to a table once other tables took the names its records fit as well is
    // no evidence of the application.
    let own: Vec<&(reconstruct::KnownMatch, reconstruct::KnownTable)> = own
        .iter()
        .filter(|(m, _)| m.taken_by_others.is_empty())
        .collect();
    let is_detect = |k: &reconstruct::KnownTable| {
        p.detect
            .tables
            .iter()
            .any(|t| k.shape.name.eq_ignore_ascii_case(t))
    };
    let in_schema = p
        .detect
        .tables
        .iter()
        .all(|t| schema.contains(&t.to_ascii_lowercase()));
    let whole = |m: &reconstruct::KnownMatch| m.sampled >= 3 && m.fitting == m.sampled;
    // No table of another name fits, or only ones the index trees outrank it.
    let alone = |m: &reconstruct::KnownMatch| m.runner_up.is_none() || m.outranked_by_indexes;
    // Each index tree keyed exactly as the table's indexes is evidence as a column is.
    let keyed_columns = |m: &reconstruct::KnownMatch| match m.keyed_exactly {
        true => usize::try_from(m.indexes).unwrap_or(0),
        false => 0,
    };
    // Records as wide as the table: a short record fits the first columns of many wider
    // tables (its later ones added since), which says less than its width.
    let strong = own.iter().any(|(m, k)| {
        is_detect(k)
            && whole(m)
            && m.width == k.shape.record_order().len()
            && (evidenced(m, k) >= STRONG_COLUMNS
                || (alone(m) && evidenced(m, k) + keyed_columns(m) >= STRONG_COLUMNS))
    });
    let unique = |(m, k): &&(reconstruct::KnownMatch, reconstruct::KnownTable)| {
        whole(m) && evidenced(m, k) >= 3 && alone(m)
    };
    // Two of its tables named alone from records of three columns or more, one of them a
    // table it is detected by: a table of a key and a value or two beside one match is no
    // second piece of evidence.
    let two_unique = own.iter().any(|t| is_detect(&t.1) && unique(t))
        && own.iter().filter(|t| unique(t)).count() >= 2;
    // Two index trees or more keyed exactly as its indexes are, alone among the tables
    // that fit: evidence no shape of a few columns gives.
    let keyed = own.iter().any(|(m, k)| {
        is_detect(k)
            && whole(m)
            && evidenced(m, k) >= 3
            && m.keyed_exactly
            && m.indexes >= 2
            && alone(m)
    });
    let several = p.detect.tables.len() >= 2;
    !own.is_empty() && (in_schema || strong || keyed || (several && two_unique))
}

/// The columns besides its INTEGER PRIMARY KEY whose values a match's records hold: a
/// record shorter than its table (columns added by ALTER TABLE since) is evidence of its
/// first columns only.
fn evidenced(m: &reconstruct::KnownMatch, k: &reconstruct::KnownTable) -> usize {
    m.width
        .min(k.shape.record_order().len())
        .saturating_sub(usize::from(k.shape.rowid_alias().is_some()))
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
            name if shipped_files().any(|(n, _)| *n == name) => {
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
                    format!("`{name}` is neither a shipped profile (agent, chroma, or one of the catalogue's: `salvage profiles`) nor a readable file: {e}")
                })?;
                let p = Profile::parse(&text).map_err(|e| format!("profile `{name}`: {e}"))?;
                p.relationships()
                    .map_err(|e| format!("profile `{name}`: {e}"))?;
                p.text_copies(TextEncoding::Utf8)
                    .map_err(|e| format!("profile `{name}`: {e}"))?;
                p.check_versions()
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
        for (name, text) in shipped_files() {
            let p = Profile::parse(text)
                .map_err(|e| format!("{name}: {e}"))
                .unwrap();
            assert_eq!(p.name, *name, "a profile's file is named after it");
        }
        assert_eq!(shipped().len(), shipped_files().count());
        for p in shipped() {
            if SHIPPED.iter().any(|(n, _)| *n == p.name) {
                assert!(!p.relationships().unwrap().is_empty(), "{}", p.name);
            }
            p.text_copies(TextEncoding::Utf16le).unwrap();
            assert!(!p.known_tables().unwrap().is_empty(), "{}", p.name);
        }
    }

    /// Every catalogue entry says what application it is and where its schema is known
    /// from; it is detected by two tables or more of its schema; its times are columns of
    /// its tables.
    #[test]
    fn catalogue_entries_are_complete() {
        const CATEGORIES: [&str; 11] = [
            "browser",
            "messenger",
            "mobile-os",
            "mail",
            "desktop-os",
            "photos",
            "productivity",
            "credentials",
            "ai-agent",
            "vector-store",
            "media",
        ];
        assert!(!catalogue::CATALOGUE.is_empty());
        for (name, text) in catalogue::CATALOGUE {
            let p = Profile::parse(text).unwrap();
            assert!(!p.application.is_empty(), "{name}");
            assert!(
                CATEGORIES.contains(&p.category.as_str()),
                "{name}: {}",
                p.category
            );
            assert!(!p.provenance.is_empty(), "{name}");
            let known = p
                .known_tables()
                .map_err(|e| format!("{name}: {e}"))
                .unwrap();
            let has = |t: &str| known.iter().any(|k| k.shape.name.eq_ignore_ascii_case(t));
            // Its versions are named, and a table written in several shapes says which
            // version writes each.
            assert!(
                !p.versions().is_empty(),
                "{name}: no provenance entry is tagged"
            );
            p.check_versions()
                .map_err(|e| format!("{name}: {e}"))
                .unwrap();
            for (statement, k) in p.schema.iter().zip(&known) {
                let shapes = known
                    .iter()
                    .filter(|x| x.shape.name.eq_ignore_ascii_case(&k.shape.name))
                    .count();
                assert!(
                    shapes == 1 || matches!(statement, Statement::Of(_)),
                    "{name}: {} has {shapes} statements, one of every version",
                    k.shape.name
                );
            }
            assert!(!p.detect.tables.is_empty(), "{name}");
            for t in &p.detect.tables {
                assert!(has(t), "{name}: detect table {t}");
            }
            for ts in &p.timestamps {
                assert!(
                    known
                        .iter()
                        .any(|k| k.shape.name.eq_ignore_ascii_case(&ts.table)
                            && k.shape
                                .columns
                                .iter()
                                .any(|c| c.name.eq_ignore_ascii_case(&ts.column))),
                    "{name}: timestamp {}.{}",
                    ts.table,
                    ts.column
                );
            }
            for f in &p.formats {
                assert!(
                    known
                        .iter()
                        .any(|k| k.formats.iter().any(|(_, c)| *c == f.column_format())
                            && k.shape.name.eq_ignore_ascii_case(&f.table)),
                    "{name}: format of {}.{}",
                    f.table,
                    f.column
                );
            }
        }
    }

    /// A profile of two versions: `notes` changed shape in version 2, which added
    /// `tags`; `meta` is alike in both.
    fn two_versions() -> Profile {
        Profile::parse(
            r#"{"name": "two", "detect": {"tables": ["notes", "meta"]},
                "provenance": [
                    {"source": "a", "version": "the first release", "tag": "1"},
                    {"source": "b", "version": "the second release", "tag": "2"},
                    {"source": "c", "version": "its time encodings"}],
                "schema": [
                    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT)",
                    {"sql": "CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)",
                     "versions": ["1"]},
                    {"sql": "CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT, tag TEXT)",
                     "versions": ["2"]},
                    {"sql": "CREATE TABLE tags(id INTEGER PRIMARY KEY, name TEXT)",
                     "versions": ["2"]}]}"#,
        )
        .unwrap()
    }

    fn present(name: &str, columns: &[&str], from_schema: bool) -> Present {
        Present {
            name: name.into(),
            from_schema,
            columns: columns.iter().map(|c| c.to_string()).collect(),
            affinities: Vec::new(),
            types: Vec::new(),
        }
    }

    /// The version whose statements the most tables are as written; of versions alike so
    /// far, the one whose tables a whole schema does not lack; several where nothing
    /// tells them apart; none where no table is as a version writes it.
    #[test]
    fn the_tables_tell_their_version() {
        let p = two_versions();
        assert_eq!(p.versions(), ["1", "2"]);
        p.check_versions().unwrap();
        let known = p.known_tables().unwrap();
        let tell = |tables: &[Present]| {
            fitting_versions(&p, &known, tables, true).map(|v| (v.tags, v.tables, v.absent_decided))
        };
        let meta = present("meta", &["key", "value"], true);
        let old = present("notes", &["id", "body"], true);
        let new = present("notes", &["ID", "Body", "tag"], true);
        let tags = present("tags", &["id", "name"], true);
        assert_eq!(
            tell(&[meta.clone(), old.clone()]),
            Some((vec!["1".into()], 2, false))
        );
        assert_eq!(
            tell(&[meta.clone(), new.clone(), tags.clone()]),
            Some((vec!["2".into()], 3, false))
        );
        // Version 2's notes without its tags table: the shape decides, not the absence.
        assert_eq!(
            tell(&[meta.clone(), new.clone()]),
            Some((vec!["2".into()], 2, false))
        );
        // Only the table both write: version 2's tags table is lacking from a whole
        // schema; from a damaged one, nothing tells them apart.
        assert_eq!(
            tell(std::slice::from_ref(&meta)),
            Some((vec!["1".into()], 1, true))
        );
        let named = present("notes", &["a", "b", "c", "d"], false);
        assert_eq!(
            tell(&[meta.clone(), named]),
            Some((vec!["1".into(), "2".into()], 1, false))
        );
        // Named from its records as version 2's notes, whose `body` and `tag` are both
        // TEXT: a record cannot tell that statement from one that swaps them.
        let mut swapped = p.clone();
        swapped.schema.push(Statement::Of(VersionedStatement {
            sql: "CREATE TABLE notes(id INTEGER PRIMARY KEY, tag TEXT, body TEXT)".into(),
            versions: vec!["1".into()],
        }));
        let known = swapped.known_tables().unwrap();
        let mut named = new.clone();
        named.from_schema = false;
        named.affinities = vec![
            reconstruct::Affinity::Integer,
            reconstruct::Affinity::Text,
            reconstruct::Affinity::Text,
        ];
        assert_eq!(
            fitting_versions(&swapped, &known, &[meta.clone(), named.clone()], true)
                .map(|v| v.tags),
            Some(vec!["1".into(), "2".into()])
        );
        named.from_schema = true;
        assert_eq!(
            fitting_versions(&swapped, &known, &[meta.clone(), named], true).map(|v| v.tags),
            Some(vec!["2".into()])
        );
        // Of a schema's tables, the declared types tell two statements of one column
        // list apart; without them, the names alone count.
        let mut retyped = p.clone();
        retyped.schema.push(Statement::Of(VersionedStatement {
            sql: "CREATE TABLE notes(id INTEGER PRIMARY KEY, body BLOB)".into(),
            versions: vec!["2".into()],
        }));
        let known = retyped.known_tables().unwrap();
        let typed = |types: &[&str]| {
            let mut notes = old.clone();
            notes.types = types.iter().map(|t| t.to_string()).collect();
            fitting_versions(&retyped, &known, &[meta.clone(), notes], true)
                .map(|v| (v.tags, v.types_decided, v.absent_decided))
        };
        assert_eq!(
            typed(&["INTEGER", "TEXT"]),
            Some((vec!["1".into()], true, false))
        );
        assert_eq!(
            typed(&["integer", "blob"]),
            Some((vec!["2".into()], true, false))
        );
        // Without types, version 2's `tags`, absent from a whole schema, decides.
        assert_eq!(typed(&[]), Some((vec!["1".into()], false, true)));
        // Columns in another order, or another shape: no version, and the table is of
        // one the profile does not know.
        let unknown = |tables: &[Present]| {
            fitting_versions(&p, &p.known_tables().unwrap(), tables, true)
                .map(|v| (v.tags, v.unknown))
        };
        assert_eq!(
            unknown(&[present("meta", &["value", "key"], true)]),
            Some((vec![], vec!["meta".into()]))
        );
        // A later version's notes, with a column no version has: version 2 is the
        // nearest, and the report says the table is of none of them.
        assert_eq!(
            unknown(&[
                meta.clone(),
                present("notes", &["id", "body", "tag", "pinned"], true),
                tags.clone()
            ]),
            Some((vec!["2".into()], vec!["notes".into()]))
        );
        // A schema read with findings: a table absent may be a table lost, and decides
        // nothing.
        assert_eq!(
            fitting_versions(
                &p,
                &p.known_tables().unwrap(),
                std::slice::from_ref(&meta),
                false
            )
            .map(|v| (v.tags, v.absent_decided)),
            Some((vec!["1".into(), "2".into()], false))
        );
        // A profile that tags no version tells none.
        let mut untagged = p.clone();
        untagged.schema = untagged
            .schema
            .iter()
            .map(|s| Statement::Every(s.sql().to_string()))
            .collect();
        untagged.provenance.iter_mut().for_each(|v| v.tag = None);
        assert_eq!(
            fitting_versions(
                &untagged,
                &untagged.known_tables().unwrap(),
                std::slice::from_ref(&meta),
                true
            ),
            None
        );
        // A statement naming a version no provenance entry tags is refused.
        let mut wrong = p.clone();
        if let Statement::Of(v) = &mut wrong.schema[1] {
            v.versions = vec!["3".into()];
        }
        assert!(wrong.check_versions().unwrap_err().contains("`3`"));
        // A tag of nothing names no version.
        let mut blank = p.clone();
        blank.provenance[0].tag = Some(" ".into());
        assert!(blank.check_versions().unwrap_err().contains("empty tag"));
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
