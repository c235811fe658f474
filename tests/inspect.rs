//! `salvage inspect` end to end: the real binary on real files.

use std::ffi::OsStr;

use crate::{run_salvage, Scratch, TestResult};

fn json_of(out: &std::process::Output) -> Result<serde_json::Value, Box<dyn std::error::Error>> {
    Ok(serde_json::from_slice(&out.stdout)?)
}

#[test]
fn healthy_corpus_file_exits_zero_with_a_healthy_verdict() -> TestResult {
    let case = crate::nemetz::load("01-01");
    let out = run_salvage(&[
        OsStr::new("inspect"),
        case.db_path.as_os_str(),
        OsStr::new("--json"),
    ])?;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j = json_of(&out)?;
    assert_eq!(j["format_version"], 1);
    assert_eq!(j["verdict"]["healthy"], true);
    assert_eq!(j["header"]["in_use"]["page_size"], 4096);
    assert_eq!(j["header"]["in_use"]["page_size_source"], "header");
    Ok(())
}

#[test]
fn every_corpus_file_is_inspected_by_the_binary() -> TestResult {
    for case in crate::nemetz::all() {
        let out = run_salvage(&[
            OsStr::new("inspect"),
            case.db_path.as_os_str(),
            OsStr::new("--json"),
        ])?;
        let code = out.status.code();
        assert!(
            matches!(code, Some(0) | Some(3)),
            "{}: exit {code:?}: {}",
            case.id,
            String::from_utf8_lossy(&out.stderr)
        );
        let j = json_of(&out)?;
        assert!(j["pages"]["total"].as_u64().unwrap_or(0) > 0, "{}", case.id);
        let human = run_salvage(&[OsStr::new("inspect"), case.db_path.as_os_str()])?;
        assert_eq!(human.status.code(), code, "{}", case.id);
        assert!(
            String::from_utf8_lossy(&human.stdout).contains("verdict:"),
            "{}",
            case.id
        );
    }
    Ok(())
}

#[test]
fn inspect_never_writes_beside_the_source() -> TestResult {
    let dir = Scratch::new("inspect-no-sidecars");
    let src = dir.path("evidence.db");
    std::fs::copy(crate::nemetz::load("09-01").db_path, &src)?;
    let before = std::fs::read(&src)?;
    let out = run_salvage(&[
        OsStr::new("inspect"),
        src.as_os_str(),
        OsStr::new("--json"),
        OsStr::new("--sha256"),
    ])?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(dir.listing(), vec!["evidence.db".to_string()]);
    assert_eq!(std::fs::read(&src)?, before);
    let j = json_of(&out)?;
    assert_eq!(j["source"]["sha256"].as_str().map(str::len), Some(64));
    Ok(())
}

#[test]
fn input_that_is_not_a_database_is_refused_with_a_message() -> TestResult {
    let dir = Scratch::new("inspect-not-a-db");
    // A 0-byte file is no such input: SQLite reads it as an empty database
    // (quirks::an_empty_file_is_an_empty_database).
    let cases: [(&str, Vec<u8>); 2] = [
        (
            "notes.txt",
            b"meeting notes\nnothing to see here\n".repeat(300),
        ),
        (
            "random.bin",
            (0..200_000u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                .collect(),
        ),
    ];
    for (name, bytes) in cases {
        let path = dir.path(name);
        std::fs::write(&path, bytes)?;
        let out = run_salvage(&[OsStr::new("inspect"), path.as_os_str()])?;
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("error: "), "{name}: {err}");
        assert!(err.contains(name), "{name}: message names the path: {err}");
        assert!(out.stdout.is_empty(), "{name}");
    }
    Ok(())
}

#[test]
fn missing_path_and_directory_are_refused_naming_the_path() -> TestResult {
    let dir = Scratch::new("inspect-bad-paths");
    let missing = dir.path("no-such.db");
    let out = run_salvage(&[OsStr::new("inspect"), missing.as_os_str()])?;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such.db"));
    let folder = dir.path("folder.db");
    std::fs::create_dir(&folder)?;
    let out = run_salvage(&[OsStr::new("inspect"), folder.as_os_str()])?;
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("folder.db") && err.contains("directory"),
        "{err}"
    );
    Ok(())
}

#[test]
fn docs_list_every_finding_kind() -> TestResult {
    // Every `kind` the reader can report is named in the pager model's findings table.
    let source = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../pager/src/finding.rs"
    ))?;
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/pager.md"))?;
    let kinds: Vec<&str> = source
        .lines()
        .filter_map(|l| {
            l.trim()
                .split_once("{ .. } => \"")
                .map(|(_, k)| k.trim_end_matches("\","))
        })
        .collect();
    assert!(kinds.len() > 40, "{}", kinds.len());
    for k in kinds {
        assert!(
            docs.contains(&format!("| `{k}` |")),
            "docs/pager.md does not list `{k}`"
        );
    }
    Ok(())
}

/// `--sha256` shows the hash in the text report too, not only in `--json`: the SHA-256 of
/// the file's bytes, on a line of its own.
#[test]
fn sha256_is_in_the_text_report() -> TestResult {
    use sha2::{Digest, Sha256};
    let dir = Scratch::new("inspect-sha256-text");
    let src = dir.path("evidence.db");
    {
        let conn = rusqlite::Connection::open(&src)?;
        conn.execute_batch("CREATE TABLE t(a); INSERT INTO t VALUES (1), ('two');")?;
    }
    let bytes = std::fs::read(&src)?;
    let hash: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let out = run_salvage(&[
        OsStr::new("inspect"),
        src.as_os_str(),
        OsStr::new("--sha256"),
    ])?;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l == format!("sha256: {hash} ({} bytes)", bytes.len())),
        "{text}"
    );
    let out = run_salvage(&[OsStr::new("inspect"), src.as_os_str()])?;
    assert!(!String::from_utf8_lossy(&out.stdout).contains(&hash));
    Ok(())
}

/// A database given by a symbolic link is the file it points to: its `-wal` is the one
/// beside that file, where SQLite keeps it, not beside the link (where there is none).
#[test]
fn a_database_given_by_a_link_is_read_with_the_log_beside_the_file() -> TestResult {
    let dir = Scratch::new("inspect-link");
    std::fs::create_dir(dir.path("real"))?;
    let db = dir.path("real/live.db");
    let conn = rusqlite::Connection::open(&db)?;
    conn.pragma_update(None, "journal_mode", "wal")?;
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    conn.execute_batch("CREATE TABLE t(a); INSERT INTO t VALUES (1), (2);")?;
    let link = dir.path("link.db");
    std::os::unix::fs::symlink("real/live.db", &link)?;
    let out = run_salvage(&[
        OsStr::new("inspect"),
        link.as_os_str(),
        OsStr::new("--json"),
    ])?;
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j = json_of(&out)?;
    assert!(
        j["sidecars"]["wal"]["frames_committed"].as_u64() > Some(0),
        "{}",
        j["sidecars"]
    );
    drop(conn);
    Ok(())
}

/// A database in WAL mode in which every table is still in the log (nothing checkpointed
/// yet): its main file is one page, with 0 for the schema format and the text encoding,
/// as SQLite leaves a file it has created nothing in, and reads as format 1 and UTF-8.
/// SQLite's integrity check calls that file `ok`, and so does `inspect`: healthy, exit 0,
/// the log beside it named. It said "damaged: 2 findings".
#[test]
fn a_wal_database_whose_tables_are_all_in_its_log_is_healthy() -> TestResult {
    let dir = Scratch::new("inspect-fresh-wal");
    let live = dir.path("live.db");
    let conn = rusqlite::Connection::open(&live)?;
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; CREATE TABLE t(a); INSERT INTO t VALUES (1), (2);",
    )?;
    let db = dir.path("copy.db");
    std::fs::copy(&live, &db)?;
    std::fs::copy(dir.path("live.db-wal"), dir.path("copy.db-wal"))?;
    drop(conn);
    let main = std::fs::read(&db)?;
    assert_eq!(
        (main.len(), main[44..48].to_vec(), main[56..60].to_vec()),
        (4096, vec![0; 4], vec![0; 4])
    );
    // SQLite on the main file alone.
    let alone = dir.path("alone.db");
    std::fs::copy(&db, &alone)?;
    let ok: String =
        rusqlite::Connection::open(&alone)?
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    assert_eq!(ok, "ok");
    let out = run_salvage(&["inspect".as_ref(), "--json".as_ref(), db.as_os_str()])?;
    let r = json_of(&out)?;
    assert_eq!(out.status.code(), Some(0), "{r}");
    assert_eq!(r["verdict"]["healthy"], true, "{r}");
    assert!(r["sidecars"]["wal"].is_object(), "{r}");
    Ok(())
}

/// A table `t` of six rows on page 2, then page 2's b-tree page header scribbled over
/// (cell count 120, the cell content area and the fragmented free bytes out of range):
/// 121 findings whose sentences, joined on the damaged page's line, run far past a line.
/// With a write-ahead log of committed frames beside it, so that the verdict is long too.
/// The same database undamaged, with its log, is `healthy.db`.
fn scribbled_with_a_log(dir: &Scratch) -> Result<std::path::PathBuf, Box<dyn std::error::Error>> {
    let live = dir.path("live.db");
    let conn = rusqlite::Connection::open(&live)?;
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
         CREATE TABLE t(a); INSERT INTO t VALUES ('one'), ('two'), ('three'), ('four'), ('five'), ('six');
         PRAGMA wal_checkpoint(TRUNCATE);
         INSERT INTO t VALUES ('seven');",
    )?;
    let db = dir.path("evidence.db");
    let mut bytes = std::fs::read(&live)?;
    bytes[4096 + 4..4096 + 8].copy_from_slice(b"xxxx");
    std::fs::write(&db, bytes)?;
    std::fs::copy(dir.path("live.db-wal"), dir.path("evidence.db-wal"))?;
    std::fs::copy(&live, dir.path("healthy.db"))?;
    std::fs::copy(dir.path("live.db-wal"), dir.path("healthy.db-wal"))?;
    drop(conn);
    Ok(db)
}

/// The lines of `salvage inspect SRC` (on a pipe), and its exit code.
fn inspect_text(
    src: &std::path::Path,
) -> Result<(String, Option<i32>), Box<dyn std::error::Error>> {
    let out = run_salvage(&[OsStr::new("inspect"), src.as_os_str()])?;
    Ok((String::from_utf8(out.stdout)?, out.status.code()))
}

/// The verdict of the text report as one line: its first paragraph after the path, the
/// lines it was wrapped into joined again.
fn verdict_of(text: &str) -> String {
    text.split("\n\n")
        .next()
        .unwrap_or_default()
        .split_once("verdict: ")
        .map(|(_, v)| v.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// What lies beside the file is a sentence of its own in the verdict, after the counts'
/// sentence ended with a period: never "… pages Beside it".
#[test]
fn the_verdict_says_what_lies_beside_the_file_in_a_sentence_of_its_own() -> TestResult {
    let dir = Scratch::new("inspect-beside-sentence");
    let db = scribbled_with_a_log(&dir)?;
    let (text, code) = inspect_text(&db)?;
    assert_eq!(code, Some(3), "{text}");
    let verdict = verdict_of(&text);
    assert!(
        verdict.contains(
            "orphan b-tree pages. Beside it: a write-ahead log with committed frames. The file alone is not the database;"
        ),
        "{verdict}"
    );
    // A healthy file's verdict too.
    let (text, code) = inspect_text(&dir.path("healthy.db"))?;
    assert_eq!(code, Some(0), "{text}");
    let verdict = verdict_of(&text);
    assert!(
        verdict.contains("read without a finding. Beside it: a write-ahead log"),
        "{verdict}"
    );
    Ok(())
}

/// Every count agrees with its noun: "1 page", "1 finding", "1 table or index", never
/// "1 pages".
#[test]
fn counts_agree_with_their_nouns() -> TestResult {
    let dir = Scratch::new("inspect-plurals");
    // One page: nothing was ever created in it but its header's user version.
    let one_page = dir.path("one-page.db");
    rusqlite::Connection::open(&one_page)?.execute_batch("PRAGMA user_version = 7;")?;
    let (text, code) = inspect_text(&one_page)?;
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(
        verdict_of(&text),
        "healthy: 1 page, 0 tables and indexes read without a finding"
    );
    assert!(text.contains(" 1 page in the file\n"), "{text}");
    // One table, its header string damaged: one finding.
    let one_table = dir.path("one-table.db");
    rusqlite::Connection::open(&one_table)?
        .execute_batch("CREATE TABLE t(a); INSERT INTO t VALUES (1);")?;
    let (text, _) = inspect_text(&one_table)?;
    assert_eq!(
        verdict_of(&text),
        "healthy: 2 pages, 1 table or index read without a finding"
    );
    let mut bytes = std::fs::read(&one_table)?;
    bytes[10] = b'X';
    std::fs::write(&one_table, bytes)?;
    let (text, code) = inspect_text(&one_table)?;
    assert_eq!(code, Some(3), "{text}");
    assert_eq!(
        verdict_of(&text),
        "damaged: 1 finding, 0 damaged pages, 0 orphan b-tree pages"
    );
    // The log beside a file: one of its frames committed, of one.
    let live = dir.path("live.db");
    let conn = rusqlite::Connection::open(&live)?;
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE t(a);
         PRAGMA wal_checkpoint(TRUNCATE); INSERT INTO t VALUES (1);",
    )?;
    let copy = dir.path("copy.db");
    std::fs::copy(&live, &copy)?;
    std::fs::copy(dir.path("live.db-wal"), dir.path("copy.db-wal"))?;
    drop(conn);
    let (text, _) = inspect_text(&copy)?;
    assert!(
        text.contains(", 1 of 1 frame committed, 1 page newer"),
        "{text}"
    );
    Ok(())
}

/// Written to a pipe or a file, the text report's sentences are wrapped at 100 columns
/// (the tables are 80 wide); a long finding or verdict is continued on indented lines.
#[test]
fn the_text_report_is_wrapped_at_100_columns_off_a_terminal() -> TestResult {
    let dir = Scratch::new("inspect-wrapped");
    let db = scribbled_with_a_log(&dir)?;
    for args in [&[][..], &["--sha256", "--audit"][..]] {
        let out = run_salvage(
            &[OsStr::new("inspect"), db.as_os_str()]
                .into_iter()
                .chain(args.iter().map(OsStr::new))
                .collect::<Vec<_>>(),
        )?;
        let text = String::from_utf8(out.stdout)?;
        let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
        assert!(widest <= 100, "{widest} columns:\n{text}");
        // Filled to the width, not to 80.
        assert!(widest > 90, "{widest} columns:\n{text}");
        // Nothing lost by the wrapping: the damaged page's reasons, joined again.
        let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            joined.contains("page 2 (table_leaf): cell content area out of range on page 2:"),
            "{text}"
        );
    }
    Ok(())
}

/// On a terminal, the text report is wrapped at the terminal's width.
#[test]
fn on_a_terminal_the_text_report_is_wrapped_at_its_width() -> TestResult {
    let dir = Scratch::new("inspect-terminal");
    let db = scribbled_with_a_log(&dir)?;
    let mut command = crate::salvage();
    command.arg("inspect").arg(&db);
    let (seen, status) = crate::on_a_pty(command, crate::Shown::Stdout, 88, None)?;
    assert_eq!(status, Some(3));
    let text = seen.replace("\r\n", "\n");
    assert!(text.contains("verdict: damaged"), "{text}");
    let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!((81..=88).contains(&widest), "{widest} columns:\n{text}");
    Ok(())
}
