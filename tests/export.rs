//! `salvage export`: a salvaged Chroma store as JSON lines, one embedding per line, with
//! its metadata's types kept; embeddings whose `embeddings` row was lost are exported
//! under their internal id, marked reconstructed, never dropped.

use std::collections::BTreeMap;

use fixtures::{Damage, Fixture, Value};
use serde_json::json;

use crate::recover::case;
use crate::TestResult;

/// The fixture's metadata, as the export should give it: internal id -> (document,
/// metadata object).
fn expected_metadata(f: &Fixture) -> BTreeMap<i64, (serde_json::Value, serde_json::Value)> {
    let mut out: BTreeMap<i64, (serde_json::Value, serde_json::Value)> = BTreeMap::new();
    for row in &f.table("embedding_metadata").unwrap().rows {
        let v = &row.values;
        let Value::Integer(id) = v[0] else {
            panic!("{v:?}")
        };
        let Value::Text(key) = &v[1] else {
            panic!("{v:?}")
        };
        let value = match (&v[2], &v[3], &v[4], &v[5]) {
            (Value::Text(s), ..) => json!(s),
            (_, Value::Integer(i), ..) => json!(i),
            (_, _, Value::Real(r), _) => json!(r),
            (_, _, _, Value::Integer(b)) => json!(*b != 0),
            other => panic!("{other:?}"),
        };
        let e = out
            .entry(id)
            .or_insert((serde_json::Value::Null, json!({})));
        if key == "chroma:document" {
            e.0 = value;
        } else {
            e.1[key] = value;
        }
    }
    out
}

fn export(
    db: &std::path::Path,
    extra: &[&str],
) -> std::io::Result<(Option<i32>, Vec<serde_json::Value>)> {
    let out = crate::salvage()
        .arg("export")
        .arg(db)
        .args(extra)
        .output()?;
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    Ok((out.status.code(), lines))
}

#[test]
fn every_embedding_is_exported_with_its_document_and_typed_metadata() -> TestResult {
    let c = case("export-healthy", "vector-4096-utf8", |_| vec![]);
    assert_eq!(c.recover(&[])?.status.code(), Some(0));
    let (code, lines) = export(&c.dest, &[])?;
    assert_eq!(code, Some(0));
    let embeddings = &c.fixture.table("embeddings").unwrap().rows;
    assert_eq!(lines.len(), embeddings.len());
    let meta = expected_metadata(&c.fixture);
    for line in &lines {
        let id = line["internal_id"].as_i64().unwrap();
        let row = embeddings
            .iter()
            .find(|r| r.values[0] == Value::Integer(id))
            .unwrap();
        let Value::Text(embedding_id) = &row.values[2] else {
            panic!()
        };
        assert_eq!(line["id"], json!(embedding_id));
        assert_eq!(line["reconstructed"], false);
        assert!(line["collection"].is_string(), "{line}");
        let (document, metadata) = meta
            .get(&id)
            .cloned()
            .unwrap_or((serde_json::Value::Null, json!({})));
        assert_eq!(line["document"], document, "{id}");
        assert_eq!(line["metadata"], metadata, "{id}");
    }
    // Types survive: integers stay integers, booleans booleans.
    assert!(lines.iter().any(|l| l["metadata"]["chunk_index"].is_i64()));
    assert!(lines
        .iter()
        .any(|l| l["metadata"]["is_public"].is_boolean()));
    assert!(lines.iter().any(|l| l["metadata"]["score"].is_f64()));
    // One collection: only its lines.
    let (code, some) = export(&c.dest, &["--collection", "code_snippets"])?;
    assert_eq!(code, Some(0));
    assert!(!some.is_empty() && some.len() < lines.len());
    assert!(some.iter().all(|l| l["collection"] == "code_snippets"));
    assert_eq!(
        some.len(),
        lines
            .iter()
            .filter(|l| l["collection"] == "code_snippets")
            .count()
    );
    // Not a Chroma store, and an unknown collection: refused.
    let agent = case("export-agent", "agent-4096-utf8", |_| vec![]);
    assert_eq!(agent.recover(&[])?.status.code(), Some(0));
    assert_eq!(export(&agent.dest, &[])?.0, Some(2));
    assert_eq!(export(&c.dest, &["--collection", "no-such"])?.0, Some(2));
    Ok(())
}

/// The collection of each embedding of the fixture, by internal id.
fn collections_of(f: &Fixture) -> BTreeMap<i64, String> {
    let text = |v: &Value| match v {
        Value::Text(t) => t.clone(),
        other => panic!("{other:?}"),
    };
    let table = |name: &str| &f.table(name).unwrap().rows;
    let collection_name: BTreeMap<String, String> = table("collections")
        .iter()
        .map(|r| (text(&r.values[0]), text(&r.values[1])))
        .collect();
    let segment_collection: BTreeMap<String, String> = table("segments")
        .iter()
        .map(|r| (text(&r.values[0]), text(&r.values[3])))
        .collect();
    table("embeddings")
        .iter()
        .map(|r| {
            let Value::Integer(id) = r.values[0] else {
                panic!()
            };
            let collection = &segment_collection[&text(&r.values[1])];
            (id, collection_name[collection].clone())
        })
        .collect()
}

/// `embeddings` rows lost with their table's pages. While the UNIQUE(segment_id,
/// embedding_id) index survives, its entries prove each lost row's id and segment: the
/// export carries every real id and collection (once `id: null`, `collection: null` and
/// labels in the table), marked reconstructed, exit 3. With the index lost too, the ids
/// are unknown (`null`) and the export still exits 3.
#[test]
fn embeddings_whose_row_is_lost_are_exported_as_reconstructed() -> TestResult {
    for index_lost in [false, true] {
        let c = case(
            &format!("export-lost-{index_lost}"),
            "vector-4096-utf8",
            |f| {
                let leaves = fixtures::table_pages(&f.bytes, f.roots["embeddings"]).leaves;
                let mut d = vec![Damage::ZeroPage(leaves[0])];
                if index_lost {
                    let index =
                        fixtures::table_pages(&f.bytes, f.roots["sqlite_autoindex_embeddings_1"]);
                    d.extend(
                        index
                            .leaves
                            .iter()
                            .chain(&index.interior)
                            .map(|p| Damage::ZeroPage(*p)),
                    );
                }
                d
            },
        );
        assert_eq!(c.recover(&["--allow-partial"])?.status.code(), Some(3));
        let (code, lines) = export(&c.dest, &[])?;
        assert_eq!(
            code,
            Some(3),
            "an export with reconstructed rows is not clean"
        );
        let meta = expected_metadata(&c.fixture);
        let collections = collections_of(&c.fixture);
        // Every embedding that has metadata is there, the lost ones included.
        for id in meta.keys() {
            assert!(
                lines.iter().any(|l| l["internal_id"] == *id),
                "{id} dropped"
            );
        }
        let embeddings = &c.fixture.table("embeddings").unwrap().rows;
        let real_id = |id: i64| {
            let row = embeddings
                .iter()
                .find(|r| r.values[0] == Value::Integer(id))
                .unwrap();
            let Value::Text(embedding_id) = &row.values[2] else {
                panic!()
            };
            json!(embedding_id)
        };
        // Every surviving embedding round-trips: its id, document and typed metadata.
        for line in lines.iter().filter(|l| l["reconstructed"] == false) {
            let id = line["internal_id"].as_i64().unwrap();
            assert_eq!(line["id"], real_id(id));
            let (document, metadata) = meta
                .get(&id)
                .cloned()
                .unwrap_or((serde_json::Value::Null, json!({})));
            assert_eq!(
                (&line["document"], &line["metadata"]),
                (&document, &metadata),
                "{id}"
            );
        }
        let rebuilt: Vec<&serde_json::Value> = lines
            .iter()
            .filter(|l| l["reconstructed"] == true)
            .collect();
        assert!(!rebuilt.is_empty());
        for line in rebuilt {
            let id = line["internal_id"].as_i64().unwrap();
            if index_lost {
                assert!(line["id"].is_null(), "{line}");
                assert_eq!(
                    line["collection_inferred"],
                    !line["collection"].is_null(),
                    "{line}"
                );
            } else {
                assert_eq!(line["id"], real_id(id), "{line}");
                assert_eq!(line["collection"], json!(collections[&id]), "{line}");
                assert_eq!(line["collection_inferred"], false, "{line}");
            }
            assert_eq!(line["document"], meta[&id].0, "{id}");
            assert_eq!(line["metadata"], meta[&id].1, "{id}");
        }
    }
    Ok(())
}

/// Embeddings whose segment row was lost keep their ids, but their collection is unknown:
/// exported with `collection: null`, counted, and never a clean (exit 0) export; under
/// `--collection` they are left out and the exit says so.
#[test]
fn embeddings_of_a_lost_segment_have_an_unknown_collection() -> TestResult {
    let c = case("export-segment-lost", "vector-4096-utf8", |f| {
        vec![Damage::ZeroPage(f.roots["segments"])]
    });
    assert_eq!(c.recover(&["--allow-partial"])?.status.code(), Some(3));
    let (code, lines) = export(&c.dest, &[])?;
    assert_eq!(code, Some(3));
    assert_eq!(
        lines.len(),
        c.fixture.table("embeddings").unwrap().rows.len()
    );
    assert!(lines
        .iter()
        .all(|l| l["collection"].is_null() && l["id"].is_string()));
    let (code, some) = export(&c.dest, &["--collection", "project_docs"])?;
    assert_eq!(code, Some(3));
    assert!(some.is_empty());
    Ok(())
}

/// `-o FILE` writes the same lines as stdout, through `FILE.incomplete`, and never over an
/// existing file.
#[test]
fn export_to_a_file_is_atomic_and_never_overwrites() -> TestResult {
    let c = case("export-file", "vector-4096-utf8", |_| vec![]);
    assert_eq!(c.recover(&[])?.status.code(), Some(0));
    let (_, stdout_lines) = export(&c.dest, &[])?;
    let file = c.dir.path("lines.jsonl");
    let run = |extra: &[&std::ffi::OsStr]| {
        crate::salvage()
            .arg("export")
            .arg(&c.dest)
            .args(extra)
            .output()
    };
    let out = run(&["-o".as_ref(), file.as_os_str()])?;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    let written: Vec<serde_json::Value> = std::fs::read_to_string(&file)?
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(written, stdout_lines);
    assert!(!c.dir.path("lines.jsonl.incomplete").exists());
    // An existing file, or a leftover FILE.incomplete, is refused and left as it was.
    let before = std::fs::read(&file)?;
    assert_eq!(
        run(&["-o".as_ref(), file.as_os_str()])?.status.code(),
        Some(2)
    );
    assert_eq!(std::fs::read(&file)?, before);
    let other = c.dir.path("other.jsonl");
    std::fs::write(c.dir.path("other.jsonl.incomplete"), b"left over")?;
    assert_eq!(
        run(&["-o".as_ref(), other.as_os_str()])?.status.code(),
        Some(2)
    );
    assert!(!other.exists());
    Ok(())
}

/// `--format csv`: a table's rows, every storage class and the characters CSV must
/// quote, read back by an independent CSV reader as the same rows; NULL and `''` apart
/// on the line; refusals before anything is created.
#[test]
fn a_table_exported_as_csv_reads_back_as_its_rows() -> TestResult {
    let dir = crate::Scratch::new("export-csv");
    let db = dir.path("any.db");
    let conn = rusqlite::Connection::open(&db)?;
    conn.execute_batch(
        "CREATE TABLE \"odd, name\"(id INTEGER PRIMARY KEY, t TEXT, r REAL, b BLOB, n);
         INSERT INTO \"odd, name\" VALUES
           (1, 'plain', 0.1, x'00ff10', NULL),
           (2, 'comma, \"quote\" and
line', 1e300, x'', ''),
           (3, ' edge spaces ', -2.0, NULL, 9223372036854775807),
           (4, 'crlf' || char(13, 10) || 'end', 3.0, x'41', -9223372036854775808),
           (5, 'ünïcödé ✓', 1.5e-300, NULL, 42);",
    )?;
    // What SQLite holds, as the export promises to write it.
    let expected: Vec<Vec<String>> = conn
        .prepare("SELECT id, t, quote(r), hex(b), n FROM \"odd, name\" ORDER BY id")?
        .query_map([], |row| {
            Ok(vec![
                row.get::<_, i64>(0)?.to_string(),
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, Option<String>>(3)?
                    .unwrap_or_default()
                    .to_lowercase(),
                match row.get_ref(4)? {
                    rusqlite::types::ValueRef::Integer(n) => n.to_string(),
                    rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into(),
                    _ => String::new(),
                },
            ])
        })?
        .collect::<Result<_, _>>()?;
    drop(conn);
    let out = dir.path("rows.csv");
    let run = crate::run_salvage(&[
        "export".as_ref(),
        db.as_os_str(),
        "--format".as_ref(),
        "csv".as_ref(),
        "--table".as_ref(),
        "ODD, NAME".as_ref(),
        "-o".as_ref(),
        out.as_os_str(),
    ])?;
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = std::fs::read_to_string(&out)?;
    let mut reader = csv::ReaderBuilder::new().from_reader(text.as_bytes());
    let header: Vec<String> = reader.headers()?.iter().map(str::to_string).collect();
    assert_eq!(header, ["id", "t", "r", "b", "n"]);
    let rows: Vec<Vec<String>> = reader
        .records()
        .map(|r| r.map(|r| r.iter().map(str::to_string).collect()))
        .collect::<Result<_, _>>()?;
    // Reals compare as the values they read back to, to the bit.
    let real = |s: &str| s.parse::<f64>().map(f64::to_bits).ok();
    for (got, want) in rows.iter().zip(&expected) {
        assert_eq!(real(&got[2]), real(&want[2]), "{got:?}");
        assert!(got[2].contains(['.', 'e']), "{got:?}");
        let (mut got, mut want) = (got.clone(), want.clone());
        got.remove(2);
        want.remove(2);
        assert_eq!(got, want);
    }
    assert_eq!(rows.len(), expected.len());
    // On the line, NULL is an empty field and the empty string a quoted one.
    let lines: Vec<&str> = text.split("\r\n").collect();
    assert!(lines[1].ends_with(",00ff10,"), "{}", lines[1]);
    assert!(text.contains(",\"\",\"\"\r\n"), "{text}");
    // Refused, nothing created: no such table, a table without --format csv, no --table.
    for (args, says) in [
        (vec!["--format", "csv", "--table", "nope"], "odd, name"),
        (vec!["--table", "odd, name"], "--format csv"),
        (vec!["--format", "csv"], "--table"),
    ] {
        let target = dir.path("refused.csv");
        let mut all: Vec<&std::ffi::OsStr> = vec!["export".as_ref(), db.as_os_str()];
        all.extend(args.iter().map(std::ffi::OsStr::new));
        all.extend(["-o".as_ref(), target.as_os_str()]);
        let run = crate::run_salvage(&all)?;
        assert_eq!(run.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8(run.stderr)?.contains(says), "{args:?}");
        assert!(!target.exists() && !dir.path("refused.csv.incomplete").exists());
    }
    // A damaged store: SQLite cannot read it, and the hint says to recover it first.
    let damaged = dir.path("damaged.db");
    let mut bytes = std::fs::read(&db)?;
    bytes[..16].fill(0);
    std::fs::write(&damaged, bytes)?;
    let run = crate::run_salvage(&[
        "export".as_ref(),
        damaged.as_os_str(),
        "--format".as_ref(),
        "csv".as_ref(),
        "--table".as_ref(),
        "t".as_ref(),
    ])?;
    assert_eq!(run.status.code(), Some(2));
    assert!(String::from_utf8(run.stderr)?.contains("salvage recover"));
    Ok(())
}

/// An export reads with SQLite, which stops at a damaged page ("malformed") or reads a
/// damaged tree short without a word. So a database SQLite's own check does not call
/// `ok` where the export reads is refused at once (exit 2, the recovery named as the
/// way), nothing created; a table the damage spares is exported. A Chroma store and a
/// timeline, which read the whole file, are refused the same way.
#[test]
fn an_export_of_a_damaged_table_is_refused_before_anything_is_written() -> TestResult {
    let c = case("export-damaged", "agent-4096-utf8", |f| {
        let leaves = fixtures::table_pages(&f.bytes, f.roots["messages"]).leaves;
        vec![Damage::ZeroPage(*leaves.last().unwrap())]
    });
    let run = |table: &str, out: &std::path::Path| {
        crate::salvage()
            .args(["export", "--format", "csv", "--table", table])
            .arg(&c.src)
            .arg("-o")
            .arg(out)
            .output()
    };
    let csv = c.dir.path("messages.csv");
    let o = run("messages", &csv)?;
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("is damaged") && err.contains("salvage recover"),
        "{err}"
    );
    assert!(!csv.exists() && !c.dir.path("messages.csv.incomplete").exists());
    // The damage is in `messages` alone: `sessions` reads whole.
    let sessions = c.dir.path("sessions.csv");
    let o = run("sessions", &sessions)?;
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(sessions.exists());
    for args in [&["timeline"][..], &["export"][..]] {
        let o = crate::salvage().args(args).arg(&c.src).output()?;
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    Ok(())
}

/// A messenger's attachments: BLOBs of several kinds (a JPEG, a PNG, a keyed archive,
/// bytes of no kind), some long enough to spill into overflow pages. The recovery's
/// report counts each column's BLOBs by kind; `export --blobs DIR` writes each as a file
/// with its kind's extension, its hash in the manifest equal to the BLOB's as SQLite
/// reads it.
#[test]
fn blobs_are_counted_by_kind_and_exported_as_files_whose_hashes_match() -> TestResult {
    use sha2::Digest;
    let dir = crate::Scratch::new("export-blobs");
    let src = dir.path("attachments.db");
    let conn = rusqlite::Connection::open(&src)?;
    conn.execute_batch(
        "CREATE TABLE attachment(id INTEGER PRIMARY KEY, name TEXT, data BLOB, thumb BLOB);",
    )?;
    let jpeg = |n: usize| {
        let mut b = b"\xff\xd8\xff\xe0\0\x10JFIF\0".to_vec();
        b.extend((0..n).map(|i| (i * 7) as u8));
        b
    };
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x10".to_vec();
    let plist = b"bplist00\xd4\x01\x02\x03\x04\x05\x06\x07\x0aX$versionY$archiverT$top_\x10\x0fNSKeyedArchiver".to_vec();
    let mut want = Vec::new();
    for i in 0..30i64 {
        let data: Vec<u8> = match i % 3 {
            0 => jpeg(100 + 500 * i as usize),
            1 => plist.clone(),
            _ => vec![0x42; 20],
        };
        conn.execute(
            "INSERT INTO attachment VALUES (?1, ?2, ?3, ?4)",
            rusqlite::params![i, format!("file {i}"), data, png],
        )?;
        want.push((i, data));
    }
    drop(conn);
    let out = dir.path("out.db");
    let o = crate::salvage()
        .arg("recover")
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .output()?;
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path("out.db.report.json"))?)?;
    let table = report["tables"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "attachment"))
        .ok_or("the table's report")?;
    assert_eq!(
        table["blob_kinds"],
        json!({
            "data": { "jpeg": 10, "nskeyedarchiver": 10, "unknown": 10 },
            "thumb": { "png": 30 }
        })
    );
    // Every human rendering says it too.
    for format in ["text", "markdown", "html"] {
        let o = crate::salvage()
            .args(["report", "--format", format])
            .arg(dir.path("out.db.report.json"))
            .output()?;
        let page = String::from_utf8_lossy(&o.stdout);
        assert!(
            page.contains("10 jpeg, 10 nskeyedarchiver, 10 unknown"),
            "{format}: {page}"
        );
        assert!(page.contains("30 png"), "{format}");
    }
    let blobs = dir.path("blobs");
    let o = crate::salvage()
        .args(["export", "--blobs"])
        .arg(&blobs)
        .arg(&out)
        .output()?;
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let manifest = std::fs::read_to_string(blobs.join("manifest.csv"))?;
    assert_eq!(manifest.lines().count(), 1 + 60);
    for (rowid, data) in &want {
        let ext = match rowid % 3 {
            0 => "jpg",
            1 => "plist",
            _ => "bin",
        };
        let file = blobs.join(format!("attachment/{rowid}.data.{ext}"));
        assert_eq!(std::fs::read(&file)?, *data, "{}", file.display());
        let hash = format!("{:x}", sha2::Sha256::digest(data));
        assert!(
            manifest.contains(&format!("attachment,{rowid},data,")) && manifest.contains(&hash),
            "{rowid}"
        );
        assert_eq!(
            std::fs::read(blobs.join(format!("attachment/{rowid}.thumb.png")))?,
            png
        );
    }
    // Never over an existing folder.
    let again = crate::salvage()
        .args(["export", "--blobs"])
        .arg(&blobs)
        .arg(&out)
        .output()?;
    assert_eq!(again.status.code(), Some(2));
    // The same rows as a workbook (read back by openpyxl in the Python tests): a zip
    // package, committed whole; without -o, refused.
    let book = dir.path("case.xlsx");
    let o = crate::salvage()
        .args(["export", "--format", "xlsx", "-o"])
        .arg(&book)
        .arg(&out)
        .output()?;
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(std::fs::read(&book)?.starts_with(b"PK\x03\x04"));
    assert!(!dir.path("case.xlsx.incomplete").exists());
    let o = crate::salvage()
        .args(["export", "--format", "xlsx"])
        .arg(&out)
        .output()?;
    assert_eq!(o.status.code(), Some(2));
    Ok(())
}
