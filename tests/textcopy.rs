//! Full-text tables that store their own text keep a second copy of another table's
//! columns. When that table's page is lost, the copy proves the rows existed and gives
//! their text back, as partial rows: learnt from a copying trigger (keyed by rowid), or
//! from the Chroma profile (documents keyed by their embedding's id).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use fixtures::{Damage, Value};
use rusqlite::Connection;

use recovery::{Outcome, RecoverOptions, Recovery};

use crate::recover::{rowids_on, rows_of};
use crate::{Scratch, TestResult};

/// `salvage recover SRC -o DEST --allow-partial`, in-process: the partial output committed.
fn recover_partial(src: &Path, dest: &Path) -> Result<Recovery, recovery::Error> {
    crate::recover_in_process(&crate::allow_partial(src, dest), Outcome::PartialCommitted)
}

/// Writes `bytes` with `damage` applied as `dir/evidence.db`.
fn damaged(dir: &Scratch, mut bytes: Vec<u8>, damage: &[Damage]) -> std::path::PathBuf {
    for d in damage {
        fixtures::apply(&mut bytes, d).unwrap();
    }
    let src = dir.path("evidence.db");
    std::fs::write(&src, &bytes).unwrap();
    src
}

/// Builds a database at `path` with `sql`, and returns its bytes.
fn built(path: &Path, sql: &str, fill: impl Fn(&Connection) -> rusqlite::Result<()>) -> Vec<u8> {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(sql).unwrap();
    fill(&conn).unwrap();
    drop(conn);
    std::fs::read(path).unwrap()
}

fn registry(db: &Path, table: &str) -> Vec<(Option<i64>, String, String, i64)> {
    let conn = Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT rowid, columns_known, source_index, in_table FROM salvage_partial_rows WHERE tbl = ?1 ORDER BY rowid",
        )
        .unwrap();
    stmt.query_map([table], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

const NOTES: &str = "
    CREATE TABLE notes(id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT, created INTEGER);
    CREATE VIRTUAL TABLE notes_fts USING fts5(title, body);
    CREATE TRIGGER notes_ai AFTER INSERT ON notes BEGIN
        INSERT INTO notes_fts(rowid, title, body) VALUES (new.id, new.title, new.body);
    END;";

/// The triggers that keep `notes_fts` in step with `notes`.
const IN_STEP: &str = "
    CREATE TRIGGER notes_ad AFTER DELETE ON notes BEGIN
        DELETE FROM notes_fts WHERE rowid = old.id;
    END;
    CREATE TRIGGER notes_au AFTER UPDATE ON notes BEGIN
        UPDATE notes_fts SET title = new.title, body = new.body WHERE rowid = old.id;
    END;";

/// 300 notes (every seventh deleted again), `sql` run first; the bytes and the rows.
fn notes(dir: &Scratch, sql: &str) -> (Vec<u8>, BTreeMap<i64, Vec<Value>>) {
    let bytes = built(&dir.path("healthy.db"), sql, |c| {
        for i in 0..300i64 {
            c.execute(
                "INSERT INTO notes(id, title, body, created) VALUES (?1, ?2, ?3, ?4)",
                (
                    i * 2 + 5,
                    format!("note {i}"),
                    format!("body of note {i} {}", "words ".repeat((i % 40) as usize)),
                    1_700_000_000 + i,
                ),
            )?;
        }
        c.execute("DELETE FROM notes WHERE id % 7 = 0", [])?;
        Ok(())
    });
    (bytes, rows_of(&dir.path("healthy.db"), "notes", false))
}

/// `notes` with one leaf zeroed: the source, and the rowids that were on it.
fn notes_leaf_lost(dir: &Scratch, bytes: Vec<u8>) -> (std::path::PathBuf, BTreeSet<i64>) {
    let root = fixtures::format::root_page(&bytes, "notes").unwrap();
    let leaf = fixtures::table_pages(&bytes, root).leaves[2];
    let lost: BTreeSet<i64> = rowids_on(&bytes, leaf).into_iter().collect();
    assert!(lost.len() > 5);
    (damaged(dir, bytes, &[Damage::ZeroPage(leaf)]), lost)
}

/// A notes table kept in step with its own-content full-text table by triggers; no index
/// proves anything. A lost leaf of `notes` comes back from the copies: rowid, title and
/// body exact, `created` NULL, registered, and still counted as lost.
#[test]
fn a_trigger_copy_gives_back_the_text_of_lost_rows() -> TestResult {
    let dir = Scratch::new("textcopy-trigger");
    let (bytes, healthy) = notes(&dir, &format!("{NOTES}{IN_STEP}"));
    let (src, lost) = notes_leaf_lost(&dir, bytes);

    let dest = dir.path("out.db");
    let done = recover_partial(&src, &dest)?;
    let got = rows_of(&dest, "notes", false);
    assert_eq!(
        got.len(),
        healthy.len(),
        "every lost row is rebuilt, no deleted one"
    );
    for (rowid, row) in &got {
        if lost.contains(rowid) {
            assert_eq!(
                row[..3],
                healthy[rowid][..3],
                "row {rowid}: id, title, body"
            );
            assert_eq!(
                row[3],
                Value::Null,
                "row {rowid}: `created` is not in the copy"
            );
        } else {
            assert_eq!(row, &healthy[rowid], "row {rowid}");
        }
    }
    let registered = registry(&dest, "notes");
    assert_eq!(
        registered
            .iter()
            .filter_map(|r| r.0)
            .collect::<BTreeSet<_>>(),
        lost
    );
    for (rowid, columns, source, in_table) in &registered {
        assert_eq!(
            (columns.as_str(), source.as_str(), *in_table),
            ("body,title", "notes_fts", 1),
            "{rowid:?}"
        );
    }
    let t = crate::table(&done, "notes");
    assert_eq!(t.rows_partial, lost.len() as u64);
    let bounds = t.lost_rows.as_ref().ok_or("notes lost rows")?;
    assert_eq!(bounds.proven_by_text, lost.len() as u64);
    assert_eq!(bounds.lower_bound, lost.len() as u64);
    assert!(bounds.upper_bound >= Some(lost.len() as u64));
    assert!(!done.verdict().complete);

    // Without partial rows the copies are still evidence: the same proof, nothing written.
    let dest = dir.path("off.db");
    let options = RecoverOptions {
        partial_rows: false,
        ..crate::allow_partial(&src, &dest)
    };
    let done = crate::recover_in_process(&options, Outcome::PartialCommitted)?;
    assert_eq!(
        rows_of(&dest, "notes", false).len(),
        healthy.len() - lost.len()
    );
    assert_eq!(
        crate::table(&done, "notes")
            .lost_rows
            .as_ref()
            .map(|l| l.proven_by_text),
        Some(lost.len() as u64)
    );
    Ok(())
}

/// A copy nothing keeps in step (for every row and copied column) still holds deleted rows
/// and old text; a full-text table two tables feed mixes their rows; a rowid taken from a
/// column that may be NULL is sometimes the full-text table's own: none is evidence. The
/// lost rows stay lost, and a warning says why.
#[test]
fn a_copy_not_kept_in_step_or_shared_is_no_evidence() -> TestResult {
    let shared = "
        CREATE TABLE tasks(id INTEGER PRIMARY KEY, title TEXT, body TEXT);
        CREATE TRIGGER tasks_ai AFTER INSERT ON tasks BEGIN
            INSERT INTO notes_fts(rowid, title, body) VALUES (new.id + 100000, new.title, new.body);
        END;";
    let fed_on_update = "
        CREATE TABLE tasks(id INTEGER PRIMARY KEY, title TEXT);
        CREATE TRIGGER tasks_au AFTER UPDATE ON tasks BEGIN
            INSERT INTO notes_fts(rowid, title) VALUES (new.id + 100000, new.title);
        END;";
    let some_deletes = IN_STEP.replace(
        "AFTER DELETE ON notes BEGIN",
        "AFTER DELETE ON notes WHEN old.id > 100 BEGIN",
    );
    let title_only = IN_STEP.replace("AFTER UPDATE ON notes", "AFTER UPDATE OF title ON notes");
    let by_created = format!("{NOTES}{IN_STEP}").replace(
        "VALUES (new.id, new.title, new.body)",
        "VALUES (new.created, new.title, new.body)",
    );
    for (name, sql, why) in [
        ("insert-only", NOTES.to_string(), "no AFTER DELETE trigger"),
        (
            "shared",
            format!("{NOTES}{IN_STEP}{shared}"),
            "fed by 2 tables",
        ),
        (
            "fed-on-update",
            format!("{NOTES}{IN_STEP}{fed_on_update}"),
            "fed by 2 tables",
        ),
        (
            "some-deletes",
            format!("{NOTES}{some_deletes}"),
            "no AFTER DELETE trigger",
        ),
        (
            "title-only",
            format!("{NOTES}{title_only}"),
            "no AFTER UPDATE trigger",
        ),
        ("by-created", by_created, "not a NOT NULL integer column"),
    ] {
        let dir = Scratch::new(&format!("textcopy-{name}"));
        let (bytes, healthy) = notes(&dir, &sql);
        let (src, lost) = notes_leaf_lost(&dir, bytes);
        let dest = dir.path("out.db");
        let done = recover_partial(&src, &dest)?;
        let got = rows_of(&dest, "notes", false);
        assert_eq!(got.len(), healthy.len() - lost.len(), "{name}");
        let warnings = &done.report.warnings;
        assert!(
            warnings.iter().any(|w| w.contains(why)),
            "{name}: {warnings:?}"
        );
        let t = crate::table(&done, "notes");
        assert_eq!(
            t.lost_rows.as_ref().map(|l| l.proven_by_text),
            Some(0),
            "{name}"
        );
    }
    Ok(())
}

/// `embedding_metadata` by rowid: (id, key, string_value).
type Metadata = BTreeMap<i64, (i64, String, Value)>;

/// The Chroma store, whose full-text table holds each document under its embedding's id
/// as Chroma keeps it. Returns the bytes and the metadata rows.
fn chroma(dir: &Scratch) -> (Vec<u8>, Metadata) {
    let f = fixtures::build_named("vector-4096-utf8").unwrap();
    let path = dir.path("healthy.db");
    std::fs::write(&path, &f.bytes).unwrap();
    let bytes = f.bytes;
    let rows = rows_of(&path, "embedding_metadata", false)
        .into_iter()
        .map(|(rowid, v)| {
            let (Value::Integer(id), Value::Text(key)) = (&v[0], &v[1]) else {
                panic!("{v:?}")
            };
            (rowid, (*id, key.clone(), v[2].clone()))
        })
        .collect();
    (bytes, rows)
}

/// Chroma's documents are copied in `embedding_fulltext_search` under their embedding's
/// id. With `embedding_metadata` leaves lost, the primary-key index proves each lost row's
/// (id, key) and the copy gives back each lost document: the export has them again.
#[test]
fn lost_chroma_documents_come_back_from_the_full_text_copy() -> TestResult {
    let dir = Scratch::new("textcopy-chroma");
    let (bytes, healthy) = chroma(&dir);
    let root = fixtures::format::root_page(&bytes, "embedding_metadata")?;
    let leaves = fixtures::table_pages(&bytes, root).leaves;
    let zeroed = [leaves[1], leaves[4]];
    let lost: BTreeSet<i64> = zeroed.iter().flat_map(|p| rowids_on(&bytes, *p)).collect();
    let lost_documents: BTreeSet<i64> = lost
        .iter()
        .copied()
        .filter(|r| healthy[r].1 == "chroma:document")
        .collect();
    assert!(!lost_documents.is_empty());
    let src = damaged(&dir, bytes, &zeroed.map(Damage::ZeroPage));

    let dest = dir.path("out.db");
    let done = recover_partial(&src, &dest)?;
    let got = rows_of(&dest, "embedding_metadata", false);
    for rowid in &lost_documents {
        let row = got
            .get(rowid)
            .unwrap_or_else(|| panic!("lost document row {rowid} not rebuilt"));
        let (id, key, document) = &healthy[rowid];
        assert_eq!(
            (&row[0], &row[1], &row[2]),
            (&Value::Integer(*id), &Value::Text(key.clone()), document),
            "row {rowid}"
        );
    }
    for (rowid, _, source, _) in registry(&dest, "embedding_metadata") {
        let rowid = rowid.unwrap();
        assert!(lost.contains(&rowid));
        assert_eq!(
            source.contains("embedding_fulltext_search"),
            lost_documents.contains(&rowid),
            "{rowid}: {source}"
        );
    }
    // Rows an index proves and a copy fills are counted once, as proven by the index.
    let t = crate::table(&done, "embedding_metadata");
    let bounds = t.lost_rows.as_ref().ok_or("embedding_metadata lost rows")?;
    assert_eq!(bounds.proven_by_text, 0);
    assert_eq!(bounds.proven_by_index, lost.len() as u64);

    // The export carries every lost document again, on lines marked partial (the other
    // values of their rows are gone): not a clean export.
    let out = crate::salvage().arg("export").arg(&dest).output()?;
    assert_eq!(out.status.code(), Some(3));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for rowid in &lost_documents {
        let (id, _, Value::Text(document)) = &healthy[rowid] else {
            panic!()
        };
        let line = lines
            .iter()
            .find(|l| l["internal_id"] == *id)
            .unwrap_or_else(|| panic!("{id} not exported"));
        assert_eq!(line["document"], *document, "{id}");
        assert_eq!(line["partial"], true, "{id}");
    }
    let lost_ids: BTreeSet<i64> = lost.iter().map(|r| healthy[r].0).collect();
    for line in &lines {
        let id = line["internal_id"].as_i64().unwrap();
        assert_eq!(line["partial"], lost_ids.contains(&id), "{id}");
    }
    Ok(())
}

/// With the primary-key index of `embedding_metadata` lost too, nothing gives the lost
/// rows' rowids: each lost document still comes back under a new rowid, from its copy
/// alone, and is counted as proven by it.
#[test]
fn a_copy_alone_proves_a_lost_document_and_gives_it_back() -> TestResult {
    let dir = Scratch::new("textcopy-chroma-noindex");
    let (bytes, healthy) = chroma(&dir);
    let root = fixtures::format::root_page(&bytes, "embedding_metadata")?;
    let leaf = fixtures::table_pages(&bytes, root).leaves[3];
    let lost: BTreeSet<i64> = rowids_on(&bytes, leaf).into_iter().collect();
    let lost_documents: BTreeMap<i64, Value> = lost
        .iter()
        .filter(|r| healthy[r].1 == "chroma:document")
        .map(|r| (healthy[r].0, healthy[r].2.clone()))
        .collect();
    assert!(!lost_documents.is_empty());
    let index = fixtures::format::root_page(&bytes, "sqlite_autoindex_embedding_metadata_1")?;
    let mut damage: Vec<Damage> = fixtures::table_pages(&bytes, index)
        .all()
        .into_iter()
        .map(Damage::ZeroPage)
        .collect();
    damage.push(Damage::ZeroPage(leaf));
    let src = damaged(&dir, bytes, &damage);

    let dest = dir.path("out.db");
    let done = recover_partial(&src, &dest)?;
    let conn = Connection::open(&dest)?;
    let mut stmt = conn.prepare(
        "SELECT m.id, m.string_value FROM embedding_metadata m JOIN salvage_partial_rows p
             ON p.tbl = 'embedding_metadata' AND p.rowid = m.rowid
          WHERE m.key = 'chroma:document' AND p.source_index = 'embedding_fulltext_search'",
    )?;
    let rebuilt: BTreeMap<i64, Value> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    assert_eq!(rebuilt, lost_documents);
    let t = crate::table(&done, "embedding_metadata");
    let bounds = t.lost_rows.as_ref().ok_or("embedding_metadata lost rows")?;
    assert_eq!(bounds.proven_by_text, lost_documents.len() as u64);
    assert!(bounds.lower_bound >= lost_documents.len() as u64);
    Ok(())
}
