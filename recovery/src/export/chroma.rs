//! `salvage export`: a salvaged Chroma store as JSON lines, one object per embedding, ready
//! to re-upsert into a vector store. Reads the database with SQLite, read-only.
//!
//! Each line: `id` (the user-facing embedding id; for a lost `embeddings` row, the one its
//! unique index entry proves, `null` when nothing does), `internal_id`, `collection`
//! (`null` when unknown; `collection_inferred` when it comes from a reconstructed row's
//! neighbours), `document`, `metadata` with its types
//! kept, `reconstructed`, and `partial` (one of its rows was rebuilt from index entries or
//! a full-text copy: values may be missing). An embedding whose `embeddings` row is a registered
//! placeholder, or whose metadata survives with no `embeddings` row at all, is exported
//! under its internal id and marked reconstructed. Rows with no metadata are exported too.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;

use rusqlite::{Connection, OpenFlags, OptionalExtension};
use serde_json::{json, Map, Value};

use crate::base::error::Error;

/// The metadata key Chroma stores an embedding's document under.
const DOCUMENT_KEY: &str = "chroma:document";

/// A salvaged Chroma store opened for export, checked to be one.
pub struct Export {
    conn: Connection,
    collection: Option<String>,
}

/// What an export wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExportSummary {
    /// Lines written.
    pub written: u64,
    /// Of those, embeddings whose `embeddings` row was reconstructed.
    pub reconstructed: u64,
    /// Of those, embeddings with a row rebuilt in part (values missing).
    pub partial: u64,
    /// Of those, embeddings of unknown collection.
    pub unknown: u64,
    /// Embeddings of unknown collection left out by the collection filter.
    pub unknown_skipped: u64,
    /// The reader closed the pipe before the end: the rest was not written.
    pub closed: bool,
}

impl ExportSummary {
    /// Whether every line is an original embedding and none was left out.
    pub fn clean(&self) -> bool {
        self.closed || self.reconstructed + self.partial + self.unknown + self.unknown_skipped == 0
    }
}

impl Export {
    /// Opens the database at `db` read-only and checks that it is a Chroma store holding
    /// the collection named `collection`, when one is.
    pub fn open(db: &Path, collection: Option<&str>) -> Result<Export, Error> {
        crate::base::paths::check_regular_file(db)?;
        let refused = |what: String, hint: &str| Error::Refused {
            what,
            hint: hint.into(),
        };
        let recover_first = format!(
            "a damaged store is recovered first: `salvage recover {} -o recovered.sqlite3`, then export from recovered.sqlite3",
            db.display()
        );
        let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(|e| refused(format!("`{}`: {e}", db.display()), &recover_first))?;
        crate::export::csv::check_readable(&conn, db, None)?;
        let tables: BTreeSet<String> = conn
            .prepare("SELECT lower(name) FROM sqlite_schema WHERE type = 'table'")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(|e| {
                refused(
                    format!("`{}` is not a readable database: {e}", db.display()),
                    &recover_first,
                )
            })?;
        let needed = [
            "collections",
            "segments",
            "embeddings",
            "embedding_metadata",
        ];
        if let Some(missing) = needed.iter().find(|t| !tables.contains(**t)) {
            return Err(refused(
                format!(
                    "`{}` is not a Chroma store: it has no `{missing}` table",
                    db.display()
                ),
                "export reads a salvaged chroma.sqlite3",
            ));
        }
        if let Some(name) = collection {
            let known: Option<i64> = conn
                .query_row("SELECT 1 FROM collections WHERE name = ?1", [name], |r| {
                    r.get(0)
                })
                .optional()
                .map_err(Error::read_db("reading the salvaged database"))?;
            if known.is_none() {
                return Err(refused(
                    format!("no collection named `{name}` in `{}`", db.display()),
                    "leave out --collection to export every collection",
                ));
            }
        }
        Ok(Export {
            conn,
            collection: collection.map(str::to_string),
        })
    }

    /// Writes one JSON line per embedding to `sink`. A closed pipe ends the export early,
    /// and is no error (see [`ExportSummary::closed`]).
    pub fn write_to(&self, sink: &mut dyn Write) -> Result<ExportSummary, Error> {
        let conn = &self.conn;
        let db = Error::read_db("reading the salvaged database");
        let Registered {
            placeholders,
            partial,
        } = self.registered()?;
        let made = |table: &str, rowid: Option<i64>| {
            rowid.is_some_and(|r| placeholders.contains_key(&(table.to_string(), r)))
        };
        // A column of a placeholder that a rule filled (a label, a neighbour's value);
        // the others hold what evidence proves of the lost row (its index entries).
        let filled = |table: &str, rowid: i64, column: &str| {
            placeholders
                .get(&(table.to_string(), rowid))
                .is_some_and(|f| f.contains(column))
        };
        // Every internal id with an `embeddings` row or a metadata row, in id order: metadata
        // whose embedding row is gone is not dropped.
        let mut stmt = conn
            .prepare(
                "SELECT ids.id, e.embedding_id, c.name, s.rowid, c.rowid
                 FROM (SELECT id FROM embeddings UNION SELECT id FROM embedding_metadata WHERE id IS NOT NULL) AS ids
                 LEFT JOIN embeddings e ON e.id = ids.id
                 LEFT JOIN segments s ON s.id = e.segment_id
                 LEFT JOIN collections c ON c.id = s.collection
                 ORDER BY ids.id",
            )
            .map_err(db)?;
        let mut meta = conn
            .prepare(
                "SELECT key, string_value, int_value, float_value, bool_value
                 FROM embedding_metadata WHERE id = ?1 ORDER BY key",
            )
            .map_err(db)?;
        let mut rows = stmt.query([]).map_err(db)?;
        let mut out = std::io::BufWriter::new(sink);
        let (mut written, mut reconstructed, mut unknown, mut partial_lines) =
            (0u64, 0u64, 0u64, 0u64);
        let mut unknown_skipped = 0u64;
        while let Some(row) = rows.next().map_err(db)? {
            let internal: i64 = row.get(0).map_err(db)?;
            let id: Option<String> = row.get(1).map_err(db)?;
            let segment_made = made("segments", row.get(3).map_err(db)?);
            // A placeholder collection's name is a label salvage made up: the real one is
            // unknown.
            let collection: Option<String> = if made("collections", row.get(4).map_err(db)?) {
                None
            } else {
                row.get(2).map_err(db)?
            };
            let rebuilt = id.is_none() || made("embeddings", Some(internal));
            // A placeholder's id and segment are real when its index entries proved them.
            let id_proven = !filled("embeddings", internal, "embedding_id");
            let segment_proven = !filled("embeddings", internal, "segment_id");
            if let Some(wanted) = &self.collection {
                if collection.as_deref() != Some(wanted.as_str()) {
                    unknown_skipped += u64::from(collection.is_none());
                    continue;
                }
            }
            let (document, metadata) = metadata(&mut meta, internal).map_err(db)?;
            let line = json!({
                "id": if rebuilt && !id_proven { None } else { id },
                "internal_id": internal,
                // A reconstructed row's segment, hence its collection, was inferred from its
                // neighbouring ids, not read, unless its index entries proved it.
                "collection_inferred": ((rebuilt && !segment_proven) || segment_made)
                    && collection.is_some(),
                "collection": collection,
                "document": document,
                "metadata": metadata,
                "reconstructed": rebuilt,
                "partial": partial.contains(&internal),
            });
            let written_ok = serde_json::to_writer(&mut out, &line)
                .map_err(std::io::Error::from)
                .and_then(|()| out.write_all(b"\n"));
            match written_ok {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                    return Ok(ExportSummary {
                        closed: true,
                        ..ExportSummary::default()
                    })
                }
                other => other.map_err(Error::Output)?,
            }
            written += 1;
            reconstructed += u64::from(rebuilt);
            unknown += u64::from(collection.is_none());
            partial_lines += u64::from(partial.contains(&internal));
        }
        match out.flush() {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                return Ok(ExportSummary {
                    closed: true,
                    ..ExportSummary::default()
                })
            }
            other => other.map_err(Error::Output)?,
        }
        Ok(ExportSummary {
            written,
            reconstructed,
            partial: partial_lines,
            unknown,
            unknown_skipped,
            closed: false,
        })
    }
}

/// What the salvage that made the database registered.
struct Registered {
    /// Placeholder rows (embeddings, segments, collections): (lower-cased table, rowid),
    /// with the columns a rule filled.
    placeholders: BTreeMap<(String, i64), BTreeSet<String>>,
    /// Internal ids with a row rebuilt from evidence (index entries, full-text copies):
    /// their other values are missing.
    partial: BTreeSet<i64>,
}

impl Export {
    fn registered(&self) -> Result<Registered, Error> {
        let conn = &self.conn;
        let registries = crate::base::output::registries(conn);
        let db = Error::read_db("reading the salvaged database");
        let quote = crate::base::output::quote;
        let placeholders = if let Some(registry) = registries.get("salvage_placeholders") {
            conn.prepare(&format!(
                "SELECT lower(tbl), rowid, filled_columns FROM {} WHERE rowid IS NOT NULL",
                quote(registry)
            ))
            .and_then(|mut s| {
                s.query_map([], |r| {
                    let filled: String = r.get(2)?;
                    Ok((
                        (r.get(0)?, r.get(1)?),
                        filled.split(',').map(str::to_string).collect(),
                    ))
                })?
                .collect()
            })
            .map_err(db)?
        } else {
            BTreeMap::new()
        };
        let partial = if let Some(registry) = registries.get("salvage_partial_rows") {
            let registry = quote(registry);
            conn.prepare(&format!(
                "SELECT e.id FROM embeddings e JOIN {registry} p
                     ON lower(p.tbl) = 'embeddings' AND p.rowid = e.rowid AND p.in_table
                 UNION
                 SELECT m.id FROM embedding_metadata m JOIN {registry} p
                     ON lower(p.tbl) = 'embedding_metadata' AND p.rowid = m.rowid AND p.in_table"
            ))
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(db)?
        } else {
            BTreeSet::new()
        };
        Ok(Registered {
            placeholders,
            partial,
        })
    }
}

/// An embedding's document and the rest of its metadata, typed.
fn metadata(
    meta: &mut rusqlite::Statement<'_>,
    internal: i64,
) -> rusqlite::Result<(Value, Map<String, Value>)> {
    let mut document = Value::Null;
    let mut metadata = Map::new();
    let mut values = meta.query([internal])?;
    while let Some(m) = values.next()? {
        let key: String = m.get(0)?;
        let value = typed(m)?;
        if key == DOCUMENT_KEY {
            document = value;
        } else {
            metadata.insert(key, value);
        }
    }
    Ok((document, metadata))
}

/// The value of a metadata row, from whichever typed column holds it, by its storage
/// class: text, integer, float; `bool_value` as a boolean (Chroma keeps 0/1 there). A BLOB,
/// which Chroma never writes, is kept as `{"blob_hex": …}` rather than dropped.
fn typed(m: &rusqlite::Row<'_>) -> rusqlite::Result<Value> {
    use rusqlite::types::ValueRef;
    for column in 1..=4 {
        let v = match m.get_ref(column)? {
            ValueRef::Null => continue,
            ValueRef::Integer(i) if column == 4 => Value::Bool(i != 0),
            ValueRef::Integer(i) => i.into(),
            ValueRef::Real(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
            ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned().into(),
            ValueRef::Blob(b) => {
                json!({ "blob_hex": b.iter().map(|x| format!("{x:02x}")).collect::<String>() })
            }
        };
        return Ok(v);
    }
    Ok(Value::Null)
}
