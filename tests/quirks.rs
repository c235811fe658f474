//! The file format's documented quirks, each on a healthy file SQLite wrote: SQLite is the
//! oracle. Each file is recovered in-process; the recovery is complete (exit 0) and every
//! table holds exactly the rows, with the rowids, that SQLite reads from the source.

use rusqlite::Connection;

use crate::recover::rows_of;
use crate::{recover_in_process, Scratch, TestResult};
use recovery::{Outcome, RecoverOptions};

/// A table's declaration, and whether it is WITHOUT ROWID.
struct Quirk {
    name: &'static str,
    create: &'static str,
    without_rowid: bool,
}

/// Which primary keys are the rowid, and which are not (SQLite's documentation, "ROWIDs and
/// the INTEGER PRIMARY KEY"): only a column declared exactly `INTEGER`, and not `DESC` when
/// the key is declared on the column; `DESC` in a table constraint keeps the alias.
const QUIRKS: &[Quirk] = &[
    Quirk {
        name: "alias",
        create: "CREATE TABLE alias(id INTEGER PRIMARY KEY, v TEXT)",
        without_rowid: false,
    },
    Quirk {
        name: "alias_asc",
        create: "CREATE TABLE alias_asc(id integer primary key asc, v TEXT)",
        without_rowid: false,
    },
    Quirk {
        name: "column_desc",
        create: "CREATE TABLE column_desc(id INTEGER PRIMARY KEY DESC, v TEXT)",
        without_rowid: false,
    },
    Quirk {
        name: "constraint_desc",
        create: "CREATE TABLE constraint_desc(id INTEGER, v TEXT, PRIMARY KEY(id DESC))",
        without_rowid: false,
    },
    Quirk {
        name: "int_key",
        create: "CREATE TABLE int_key(id INT PRIMARY KEY, v TEXT)",
        without_rowid: false,
    },
    Quirk {
        name: "bigint_key",
        create: "CREATE TABLE bigint_key(id BIGINT PRIMARY KEY, v TEXT)",
        without_rowid: false,
    },
    Quirk {
        name: "counted",
        create: "CREATE TABLE counted(id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT)",
        without_rowid: false,
    },
    Quirk {
        name: "two_column_key",
        create: "CREATE TABLE two_column_key(a INTEGER, b INTEGER, v TEXT, PRIMARY KEY(a, b))",
        without_rowid: false,
    },
    Quirk {
        name: "no_rowid",
        create: "CREATE TABLE no_rowid(id INTEGER PRIMARY KEY DESC, v TEXT) WITHOUT ROWID",
        without_rowid: true,
    },
];

/// A store with every quirk's table, each holding rows whose keys are not their rowids'
/// order (negative, large, out of order), and some rows deleted.
fn store(path: &std::path::Path) -> rusqlite::Result<()> {
    let conn = Connection::open(path)?;
    for q in QUIRKS {
        conn.execute_batch(q.create)?;
        for i in 0..120i64 {
            let key = (i * 7919) % 1000 - 500;
            let v = format!("{}-{i}-{}", q.name, "x".repeat((i % 13) as usize * 9));
            if q.name == "two_column_key" {
                conn.execute(
                    "INSERT INTO two_column_key(a, b, v) VALUES (?1, ?2, ?3)",
                    rusqlite::params![key, i, v],
                )?;
            } else {
                conn.execute(
                    &format!("INSERT INTO {}(id, v) VALUES (?1, ?2)", q.name),
                    rusqlite::params![key, v],
                )?;
            }
        }
        conn.execute(&format!("DELETE FROM {} WHERE v LIKE '%-3%'", q.name), [])?;
    }
    Ok(())
}

#[test]
fn every_primary_key_quirk_recovers_as_sqlite_reads_it() -> TestResult {
    let dir = Scratch::new("quirks");
    let (src, dest) = (dir.path("quirks.db"), dir.path("out.db"));
    store(&src)?;
    let done = recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Complete)?;
    for q in QUIRKS {
        let expected = rows_of(&src, q.name, q.without_rowid);
        assert!(!expected.is_empty(), "{}", q.name);
        assert_eq!(
            rows_of(&dest, q.name, q.without_rowid),
            expected,
            "{}: {}",
            q.name,
            q.create
        );
        let t = done.table(q.name).ok_or(q.name)?;
        assert_eq!(t.rows_in_output, Some(expected.len() as u64), "{}", q.name);
    }
    Ok(())
}

/// Android's contacts store declares its names `COLLATE PHONEBOOK`, a collation of the
/// platform's own that no SQLite ships. The file is healthy (SQLite reads every row without
/// it), so the recovery is complete: the table and its index are made with their declared
/// SQL over a stand-in comparing bytes, every row as stored, and the stand-in is a note on
/// the schema, not loss. The table was once made plain and the run reported loss.
#[test]
fn a_collation_this_build_lacks_gets_a_stand_in_not_loss() -> TestResult {
    let dir = Scratch::new("quirks-collation");
    let (src, dest) = (dir.path("contacts2.db"), dir.path("out.db"));
    {
        let conn = Connection::open(&src)?;
        // Not BINARY's order: letters before digits, case ignored.
        conn.create_collation("PHONEBOOK", |a: &str, b: &str| {
            let key = |s: &str| {
                (
                    s.starts_with(|c: char| c.is_ascii_digit()),
                    s.to_lowercase(),
                )
            };
            key(a).cmp(&key(b))
        })?;
        // UTF-16, as on Android: SQLite then asks for a missing collation in UTF-16,
        // which rusqlite's callback never answers.
        conn.execute_batch(
            "PRAGMA encoding = 'UTF-16le';
             CREATE TABLE raw_contacts(_id INTEGER PRIMARY KEY AUTOINCREMENT,
                 display_name TEXT COLLATE PHONEBOOK, sort_key TEXT COLLATE PHONEBOOK,
                 starred INTEGER NOT NULL DEFAULT 0);
             CREATE INDEX raw_contact_sort_key1_index ON raw_contacts (sort_key);",
        )?;
        for i in 0..400i64 {
            let name = format!("{}contact {i}", if i % 3 == 0 { "9" } else { "Ab" });
            conn.execute(
                "INSERT INTO raw_contacts(display_name, sort_key, starred) VALUES (?1, ?1, ?2)",
                rusqlite::params![name, i % 2],
            )?;
        }
    }
    let done = recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Complete)?;
    assert_eq!(
        rows_of(&dest, "raw_contacts", false),
        rows_of(&src, "raw_contacts", false)
    );
    assert_eq!(done.report.schema.stand_in_collations, ["PHONEBOOK"]);
    assert!(
        done.report
            .warnings
            .iter()
            .any(|w| w.contains("REINDEX PHONEBOOK")),
        "{:#?}",
        done.report.warnings
    );
    let out = Connection::open(&dest)?;
    let sql: Vec<String> = out
        .prepare("SELECT sql FROM sqlite_schema WHERE name LIKE 'raw_contact%' ORDER BY name")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    assert_eq!(sql.len(), 2, "{sql:?}");
    assert!(
        sql.iter().any(|s| s.contains("COLLATE PHONEBOOK")),
        "{sql:?}"
    );
    Ok(())
}

/// A 0-byte file is an empty database to SQLite (it writes the header with its first
/// table): the recovery is complete, its output an empty database, and `inspect` calls it
/// healthy. It was refused as "the file is empty".
#[test]
fn an_empty_file_is_an_empty_database() -> TestResult {
    let dir = Scratch::new("quirks-empty");
    let (src, dest) = (dir.path("empty.db"), dir.path("out.db"));
    std::fs::write(&src, b"")?;
    let done = recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Complete)?;
    assert!(done.report.tables.is_empty(), "{:?}", done.report.tables);
    assert!(done
        .report
        .warnings
        .iter()
        .any(|w| w.contains("empty file")));
    let tables: i64 =
        Connection::open(&dest)?
            .query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
    assert_eq!(tables, 0);
    assert_eq!(std::fs::metadata(&src)?.len(), 0, "the source is untouched");
    let inspected = recovery::inspect::inspect_file(&src, false)?;
    assert!(inspected.verdict.healthy, "{:?}", inspected.verdict);
    assert!(inspected.verdict.summary.contains("empty"));
    Ok(())
}

/// In a UTF-16 file, a STORED generated column over a blob (`b || ''`) holds the blob's
/// bytes as text, odd lengths included: SQLite wrote it, its check calls the file `ok`,
/// and the output computes the same bytes again from the row. It is no damage (it was
/// registered as text not in the file's encoding, and the run withheld), and a table
/// declared `WITHOUT ROWID, STRICT` is read as WITHOUT ROWID (its options were once
/// looked for only at the statement's end).
#[test]
fn generated_text_and_table_options_as_sqlite_writes_them() -> TestResult {
    let dir = Scratch::new("quirks-generated");
    let (src, dest) = (dir.path("utf16.db"), dir.path("out.db"));
    {
        let conn = Connection::open(&src)?;
        conn.execute_batch(
            "PRAGMA encoding = 'UTF-16le';
             CREATE TABLE blobs(id INTEGER PRIMARY KEY, b BLOB, g TEXT AS (b || '') STORED);
             CREATE TABLE keyed(k TEXT NOT NULL PRIMARY KEY, n INT) WITHOUT ROWID, STRICT;",
        )?;
        for i in 0..50i64 {
            let blob: Vec<u8> = (0..(i % 7 + 1)).map(|j| (i * 31 + j * 7) as u8).collect();
            conn.execute(
                "INSERT INTO blobs(id, b) VALUES (?1, ?2)",
                rusqlite::params![i, blob],
            )?;
            conn.execute(
                "INSERT INTO keyed VALUES (?1, ?2)",
                rusqlite::params![format!("key {i}"), i],
            )?;
        }
    }
    recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Complete)?;
    assert_eq!(rows_of(&dest, "keyed", true), rows_of(&src, "keyed", true));
    let bytes = |db: &std::path::Path| -> rusqlite::Result<Vec<Vec<u8>>> {
        Connection::open(db)?
            .prepare("SELECT CAST(g AS BLOB) FROM blobs ORDER BY id")?
            .query_map([], |r| r.get(0))?
            .collect()
    };
    assert_eq!(bytes(&dest)?, bytes(&src)?);
    Ok(())
}

/// What of the header the application that opens the output reads or relies on comes
/// back as the source holds it: its auto-vacuum mode (NONE, FULL, INCREMENTAL: a browser
/// keeps its history in INCREMENTAL; the output was always NONE), its user version (the
/// schema's version, which it reads at every start to choose its upgrades: one of 2^31
/// or more came back as 0) and its application ID; every row as SQLite reads it. And its
/// text encoding, when it has no table yet.
#[test]
fn the_header_fields_an_application_reads_come_back() -> TestResult {
    let dir = Scratch::new("quirks-header-fields");
    for (mode, version) in [(0, -1i64), (1, 2_147_483_647), (2, -2_000_000_000)] {
        let (src, dest) = (
            dir.path(&format!("mode{mode}.db")),
            dir.path(&format!("mode{mode}-out.db")),
        );
        {
            let conn = Connection::open(&src)?;
            conn.execute_batch(&format!(
                "PRAGMA page_size = 1024; PRAGMA auto_vacuum = {mode};
                 PRAGMA user_version = {version}; PRAGMA application_id = 1196444487;
                 CREATE TABLE visits(id INTEGER PRIMARY KEY, url TEXT, at INTEGER);
                 CREATE TABLE notes(body TEXT, n REAL);
                 WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 400)
                 INSERT INTO visits(url, at) SELECT 'https://example.org/' || x, 1700000000 + x FROM i;
                 INSERT INTO notes SELECT url, at / 3.0 FROM visits;
                 DELETE FROM visits WHERE id % 3 = 0;"
            ))?;
        }
        recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Complete)?;
        let fields = |db: &std::path::Path| -> rusqlite::Result<(i64, i64, i64)> {
            Connection::open(db)?.query_row(
                "SELECT (SELECT auto_vacuum FROM pragma_auto_vacuum),
                        (SELECT user_version FROM pragma_user_version),
                        (SELECT application_id FROM pragma_application_id)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
        };
        assert_eq!(fields(&src)?, (mode, version, 1196444487));
        assert_eq!(fields(&dest)?, fields(&src)?, "auto_vacuum {mode}");
        for table in ["visits", "notes"] {
            assert_eq!(rows_of(&dest, table, false), rows_of(&src, table, false));
        }
    }
    // A database of no table yet, in UTF-16: SQLite writes the encoding into the header
    // with the first table, and the output (of no table either) was read as UTF-8.
    let (src, dest) = (dir.path("empty16.db"), dir.path("empty16-out.db"));
    Connection::open(&src)?
        .execute_batch("PRAGMA encoding = 'UTF-16be'; CREATE TABLE x(a); DROP TABLE x; VACUUM;")?;
    recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Complete)?;
    let encoding = |db: &std::path::Path| -> rusqlite::Result<String> {
        Connection::open(db)?.query_row("PRAGMA encoding", [], |r| r.get(0))
    };
    assert_eq!(encoding(&src)?, "UTF-16be");
    assert_eq!(encoding(&dest)?, "UTF-16be");
    Ok(())
}

/// `sqlite_stat1`, the planner's statistics, is evidence as well: each index's row count
/// at the last ANALYZE. Its rows come back as SQLite reads them (it was left out, with
/// "run ANALYZE on the output").
#[test]
fn the_planner_statistics_come_back() -> TestResult {
    let dir = Scratch::new("quirks-stat1");
    let (src, dest) = (dir.path("analyzed.db"), dir.path("out.db"));
    store(&src)?;
    Connection::open(&src)?.execute_batch("ANALYZE")?;
    let done = recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Complete)?;
    let stats = |db: &std::path::Path| -> rusqlite::Result<Vec<(String, Option<String>, String)>> {
        Connection::open(db)?
            .prepare("SELECT tbl, idx, stat FROM sqlite_stat1 ORDER BY tbl, idx")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect()
    };
    let expected = stats(&src)?;
    assert!(expected.len() > 3, "{expected:?}");
    assert_eq!(stats(&dest)?, expected);
    let t = done.table("sqlite_stat1").ok_or("sqlite_stat1")?;
    assert_eq!(t.rows_in_output, Some(expected.len() as u64));
    Ok(())
}

/// Registers `name` on `conn` as a copy of SQLite's `porter` tokenizer: an application's
/// own tokenizer (Thunderbird's `mozporter`), which no SQLite ships.
fn register_tokenizer(conn: &Connection, name: &str) -> rusqlite::Result<()> {
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER,
        true,
    )?;
    conn.query_row(
        "SELECT fts3_tokenizer(?1, fts3_tokenizer('porter'))",
        [name],
        |_| Ok(()),
    )
}

/// A mail client's full-text index declared with its own tokenizer (`fts3(tokenize
/// mozporter, …)`). The file is healthy: every row is there, and the index is the
/// application's. The table is made with its declared SQL over a stand-in tokenizer, and its
/// shadow tables are copied as they are (a rebuild would tokenize the text another way):
/// a schema note, not loss. It was made as a plain table, its shadow tables dropped, and
/// the run reported loss.
#[test]
fn a_tokenizer_this_build_lacks_gets_a_stand_in_not_loss() -> TestResult {
    let dir = Scratch::new("quirks-tokenizer");
    let (src, dest) = (dir.path("global-messages-db.sqlite"), dir.path("out.db"));
    {
        let conn = Connection::open(&src)?;
        register_tokenizer(&conn, "mozporter")?;
        conn.execute_batch(
            "CREATE TABLE messages(id INTEGER PRIMARY KEY, folderID INTEGER, date INTEGER);
             CREATE VIRTUAL TABLE messagesText USING fts3(tokenize mozporter, body, subject,
                 attachmentNames, author, recipients);
             CREATE VIRTUAL TABLE contactsText USING fts4(name, tokenize=mozporter);",
        )?;
        for i in 0..300i64 {
            conn.execute(
                "INSERT INTO messages(id, folderID, date) VALUES (?1, ?2, ?3)",
                rusqlite::params![i, i % 7, 1_700_000_000_000_000i64 + i],
            )?;
            conn.execute(
                "INSERT INTO messagesText(docid, body, subject, author, recipients)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                rusqlite::params![
                    i,
                    format!("meeting notes {i}: running, runs and ran again"),
                    format!("subject {}", i % 11),
                    format!("author{}@example.org", i % 5),
                    "team@example.org"
                ],
            )?;
        }
        conn.execute("DELETE FROM messagesText WHERE docid % 10 = 3", [])?;
        conn.execute_batch(
            "INSERT INTO contactsText(name) SELECT 'author' || (id % 5) || ' running' FROM messages",
        )?;
    }
    let shadow = |db: &std::path::Path| -> rusqlite::Result<Vec<(String, i64)>> {
        let conn = Connection::open(db)?;
        [
            "messagesText_content",
            "messagesText_segments",
            "messagesText_segdir",
            "contactsText_content",
            "contactsText_segments",
            "contactsText_segdir",
            "contactsText_docsize",
            "contactsText_stat",
        ]
        .iter()
        .map(|name| {
            let n = conn.query_row(&format!("SELECT count(*) FROM {name}"), [], |r| r.get(0))?;
            Ok((name.to_string(), n))
        })
        .collect()
    };
    let done = recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Complete)?;
    assert_eq!(done.report.schema.stand_in_tokenizers, ["mozporter"]);
    assert_eq!(shadow(&dest)?, shadow(&src)?);
    for table in [
        "messagesText_content",
        "messagesText_segdir",
        "contactsText_segments",
        "contactsText_docsize",
        "contactsText_stat",
    ] {
        assert_eq!(
            rows_of(&dest, table, false),
            rows_of(&src, table, false),
            "{table}"
        );
    }
    let out = Connection::open(&dest)?;
    let sql: String = out.query_row(
        "SELECT sql FROM sqlite_schema WHERE name = 'messagesText'",
        [],
        |r| r.get(0),
    )?;
    assert!(sql.contains("tokenize mozporter"), "{sql}");
    // With the application's tokenizer registered, its index answers as it did.
    register_tokenizer(&out, "mozporter")?;
    let hits: i64 = out.query_row(
        "SELECT count(*) FROM messagesText WHERE messagesText MATCH 'run'",
        [],
        |r| r.get(0),
    )?;
    assert_eq!(hits, 270);
    Ok(())
}

/// An UPDATE that moves a row of an AUTOINCREMENT table to a larger rowid leaves the
/// table's `sqlite_sequence` counter where it was: SQLite raises it only on INSERT (and
/// takes the larger of counter and rowid for the next row). The output keeps the source's
/// counter, not the one its own inserts raised (the UNIQUE index sends the rows through
/// SQL). The fuzzer found it (docs/fuzzing.md).
#[test]
fn an_autoincrement_counter_an_update_passed_is_kept_as_the_source_holds_it() -> TestResult {
    let dir = Scratch::new("quirks-sequence");
    let (src, dest) = (dir.path("counted.db"), dir.path("out.db"));
    {
        let conn = Connection::open(&src)?;
        conn.execute_batch(
            "CREATE TABLE notes(id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT UNIQUE);",
        )?;
        for i in 0..20i64 {
            conn.execute(
                "INSERT INTO notes(title) VALUES (?1)",
                [format!("note {i}")],
            )?;
        }
        conn.execute("UPDATE notes SET id = 5000 WHERE id = 7", [])?;
    }
    let seq = |db: &std::path::Path| -> rusqlite::Result<i64> {
        Connection::open(db)?.query_row(
            "SELECT seq FROM sqlite_sequence WHERE name = 'notes'",
            [],
            |r| r.get(0),
        )
    };
    assert_eq!(seq(&src)?, 20);
    recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Complete)?;
    assert_eq!(
        rows_of(&dest, "notes", false),
        rows_of(&src, "notes", false)
    );
    assert_eq!(seq(&dest)?, 20);
    Ok(())
}

/// Text in an INTEGER column of a UTF-16 file is judged as its characters, not its bytes:
/// U+370D is `0D 37` in UTF-16le, which read as single bytes is "\r7", a number INTEGER
/// affinity would have converted. It was registered as a field SQLite never stores, and a
/// healthy file withheld. The fuzzer found it (docs/fuzzing.md).
#[test]
fn utf16_text_in_a_numeric_column_is_judged_as_its_characters() -> TestResult {
    let dir = Scratch::new("quirks-utf16-numeric");
    let (src, dest) = (dir.path("utf16.db"), dir.path("out.db"));
    {
        let conn = Connection::open(&src)?;
        conn.execute_batch(
            "PRAGMA encoding = 'UTF-16le';
             CREATE TABLE readings(id INTEGER PRIMARY KEY, n INTEGER, r REAL);",
        )?;
        for (i, text) in ["\u{370d}", "\u{3120}", "7\u{3000}", "\u{3931}"]
            .iter()
            .enumerate()
        {
            conn.execute(
                "INSERT INTO readings VALUES (?1, ?2, ?2)",
                rusqlite::params![i as i64, text],
            )?;
        }
    }
    let done = recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Complete)?;
    assert_eq!(done.report.damaged_fields.fields, 0);
    assert_eq!(
        rows_of(&dest, "readings", false),
        rows_of(&src, "readings", false)
    );
    Ok(())
}

/// A column declared REAL whose records hold integers beyond 2^53 (written before the
/// column was declared so, as older versions of SQLite left them too): SQLite reads each
/// as its nearest real. The check of rows on overflow pages against their index keeps the
/// integer the record holds, and the recovery goes on: every row is there.
#[test]
fn integers_beyond_2_53_in_a_real_column_are_checked_as_the_record_holds_them() -> TestResult {
    let dir = Scratch::new("real-integers");
    let src = dir.path("s.db");
    let conn = Connection::open(&src)?;
    conn.execute_batch(
        "PRAGMA page_size = 1024;
         CREATE TABLE t(x, pad);
         CREATE INDEX t_x ON t(x);",
    )?;
    for i in 0..20i64 {
        // Each row spills onto overflow pages: those are the rows checked.
        conn.execute(
            "INSERT INTO t VALUES (?1, zeroblob(3000))",
            [(1i64 << 53) + 1 + 2 * i],
        )?;
    }
    conn.execute_batch(
        "PRAGMA writable_schema = ON;
         UPDATE sqlite_schema SET sql = 'CREATE TABLE t(x REAL, pad)' WHERE name = 't';
         PRAGMA writable_schema = OFF;",
    )?;
    drop(conn);
    let dest = dir.path("out.db");
    let done = recovery::recover(&crate::allow_partial(&src, &dest), &recovery::Quiet)?;
    crate::assert_counts_add_up(&dest, &done.report);
    let out = Connection::open(&dest)?;
    let n: i64 = out.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?;
    assert_eq!(n, 20);
    Ok(())
}
