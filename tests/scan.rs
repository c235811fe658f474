//! `salvage scan`: a whole extraction at once (`fixtures::extraction`): every database
//! found by its content and recovered as `recover` alone recovers it, the sources never
//! written, a rerun after a kill keeping what was committed, and a bad request refused
//! before anything is created.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use recovery::scan::{scan, EntryOutcome, ScanOptions, ScanSummary};
use recovery::{Outcome, Quiet, RecoverOptions};

use crate::{Scratch, TestResult};

fn options(sources: Vec<PathBuf>, out: PathBuf) -> ScanOptions {
    ScanOptions {
        sources,
        out,
        jobs: 2,
        allow_partial: true,
        carve: false,
        history: false,
        triage_only: false,
    }
}

/// A scratch folder holding `fixtures::extraction` (with `others` other files) in
/// `extraction/`: the folder, that path, and what it holds.
fn extraction(
    name: &str,
    others: u64,
) -> Result<(Scratch, PathBuf, fixtures::extraction::Extraction), Box<dyn std::error::Error>> {
    let dir = Scratch::new(name);
    let src = dir.path("extraction");
    std::fs::create_dir_all(&src)?;
    let made = fixtures::extraction::extraction(&src, others)?;
    Ok((dir, src, made))
}

/// Every file under `dir` with its bytes' SHA-256 (and its modification time).
fn fingerprint(dir: &Path) -> BTreeMap<PathBuf, (String, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else {
                use sha2::Digest;
                let hash = format!("{:x}", sha2::Sha256::digest(std::fs::read(&p).unwrap()));
                let modified = e.metadata().unwrap().modified().unwrap();
                out.insert(p, (hash, modified));
            }
        }
    }
    out
}

/// Every row of every table of a database, by table, in rowid (or key) order.
fn every_row(db: &Path) -> BTreeMap<String, Vec<Vec<rusqlite::types::Value>>> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    tables
        .into_iter()
        .map(|t| {
            let mut stmt = conn
                .prepare(&format!("SELECT * FROM \"{}\"", t.replace('"', "\"\"")))
                .unwrap();
            let n = stmt.column_count();
            let mut rows: Vec<Vec<rusqlite::types::Value>> = stmt
                .query_map([], |r| (0..n).map(|i| r.get(i)).collect())
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            rows.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
            (t, rows)
        })
        .collect()
}

fn entry<'s>(summary: &'s ScanSummary, relative: &Path) -> &'s recovery::scan::ScanEntry {
    summary
        .entries
        .iter()
        .find(|e| Path::new(&e.relative) == relative)
        .unwrap_or_else(|| panic!("no entry for {}: {summary:#?}", relative.display()))
}

/// An extraction of databases among a thousand other files: each database is found by
/// its content (the one whose header is zeroed, named `.bin`, too; the text file named
/// `.db` is not), with its `-wal`, `-shm` or `-journal`; the lone log is listed as one.
/// Each is recovered exactly as `recover` alone recovers it: the same outcome and the
/// same rows. The sources are not written, and the exit status says loss.
#[test]
fn a_scan_finds_every_database_by_its_content_and_recovers_each_as_recover_does() -> TestResult {
    let (dir, src, made) = extraction("scan-extraction", 1000)?;
    let before = fingerprint(&src);
    let out = dir.path("case");
    let summary = scan(&options(vec![src.clone()], out.clone()), &Quiet)?;
    assert_eq!(fingerprint(&src), before, "the sources are never written");
    assert_eq!(summary.skipped_files, made.others);
    let found: Vec<(PathBuf, Vec<String>)> = summary
        .entries
        .iter()
        .filter(|e| !e.kind.starts_with("lone_"))
        .map(|e| {
            let mut sidecars = e.sidecars.clone();
            sidecars.sort();
            (PathBuf::from(&e.relative), sidecars)
        })
        .collect();
    let mut want = made.databases.clone();
    for (_, s) in &mut want {
        s.sort();
    }
    assert_eq!(found, want);
    assert_eq!(entry(&summary, &made.headerless).kind, "header_destroyed");
    // The log without its database is read for what it holds: its pages laid out as a
    // database image, recovered as a database. This one held every page of its
    // database, the schema too: all 300 notes come back in `notes`.
    let lone = entry(&summary, &made.lone_wal);
    assert_eq!(lone.kind, "lone_wal");
    assert!(lone.loss, "the log's database is lost: {lone:?}");
    use sha2::Digest;
    assert_eq!(
        lone.sha256,
        Some(format!(
            "{:x}",
            sha2::Sha256::digest(std::fs::read(src.join(&made.lone_wal))?)
        )),
        "the evidence is the log"
    );
    let image = out.join(lone.image.as_deref().ok_or("an image")?);
    assert_eq!(
        lone.image_sha256,
        Some(format!(
            "{:x}",
            sha2::Sha256::digest(std::fs::read(&image)?)
        ))
    );
    assert_eq!(lone.rows, Some(300), "{lone:?}");
    let notes = &every_row(&out.join(lone.output.as_deref().ok_or("an output")?))["notes"];
    assert_eq!(notes.len(), 300);
    // A hot journal alone holds the pages its transaction changed as they were before it:
    // the mail store's leaves (its page 1 was not changed, so the table is inferred), the
    // subjects its update never committed over.
    let journal = entry(&summary, &made.lone_journal);
    assert_eq!(
        (journal.kind.as_str(), journal.loss),
        ("lone_journal", true)
    );
    let tables = every_row(&out.join(journal.output.as_deref().ok_or("an output")?));
    let mail = tables
        .get("salvage_inferred_1")
        .ok_or("an inferred table")?;
    assert!(mail.len() >= 1000, "{journal:?}");
    assert!(
        mail.iter().all(
            |row| matches!(&row[1], rusqlite::types::Value::Text(t) if t.starts_with("subject "))
        ),
        "the journal's images are from before the update"
    );
    assert!(summary.loss(), "a damaged database is loss");
    for (rel, _) in &made.databases {
        let e = entry(&summary, rel);
        let alone = dir.path(&format!("alone-{}.db", e.relative.replace('/', "_")));
        let mut request = RecoverOptions::new(src.join(rel), &alone);
        request.allow_partial = true;
        let done = recovery::recover(&request, &Quiet)?;
        let rows: u64 = done
            .report
            .tables
            .iter()
            .filter_map(|t| t.rows_in_output)
            .sum();
        let outcome = match done.outcome {
            Outcome::Complete => EntryOutcome::Complete,
            Outcome::PartialCommitted => EntryOutcome::Partial,
            _ => EntryOutcome::Withheld,
        };
        assert_eq!((e.outcome, e.rows), (outcome, Some(rows)), "{}", e.relative);
        let output = out.join(e.output.as_deref().ok_or("an output")?);
        assert_eq!(every_row(&output), every_row(&alone), "{}", e.relative);
    }
    assert_eq!(
        entry(&summary, &made.damaged).outcome,
        EntryOutcome::Partial
    );
    // The summary on disk is the one returned, and the CSV has a row per entry.
    let on_disk: ScanSummary = serde_json::from_slice(&std::fs::read(out.join("scan.json"))?)?;
    assert_eq!(on_disk, summary);
    let csv = std::fs::read_to_string(out.join("scan.csv"))?;
    assert_eq!(csv.lines().count(), summary.entries.len() + 1);
    Ok(())
}

/// The same extraction as a folder, a `.tar`, a `.tar.gz` and a `.zip`, scanned at once:
/// each archive's members are found as the folder's files are (by content, with their
/// sidecars), each archive is hashed, and every database gives the same entry as its
/// copy in the folder (the member's hash is the file's, the outcome and rows the same),
/// named `ARCHIVE!/MEMBER`. Nothing of the spool is left in OUT.
#[test]
fn an_extraction_as_a_tar_a_tar_gz_and_a_zip_scans_as_the_folder_does() -> TestResult {
    use fixtures::extraction::{pack, Packing};
    let (dir, src, _) = extraction("scan-archives", 50)?;
    let packed = [
        (Packing::Tar, dir.path("phone.tar")),
        (Packing::TarGz, dir.path("phone.tar.gz")),
        (Packing::Zip, dir.path("phone.zip")),
    ];
    for (packing, path) in &packed {
        pack(&src, *packing, path)?;
    }
    let mut sources = vec![src.clone()];
    sources.extend(packed.iter().map(|(_, p)| p.clone()));
    let out = dir.path("case");
    let summary = scan(&options(sources, out.clone()), &Quiet)?;
    assert_eq!(summary.archives.len(), 3, "{summary:#?}");
    let key = |e: &recovery::scan::ScanEntry| {
        let mut sidecars = e.sidecars.clone();
        sidecars.sort();
        (
            e.relative.trim_start_matches("./").to_string(),
            e.kind.clone(),
            sidecars,
            e.sha256.clone(),
            e.verdict.clone(),
            e.outcome,
            e.rows,
        )
    };
    let of = |source: &Path| {
        let mut v: Vec<_> = summary
            .entries
            .iter()
            .filter(|e| Path::new(&e.source) == source)
            .map(key)
            .collect();
        v.sort();
        v
    };
    let folder = of(&src);
    assert!(folder.len() >= 7, "{folder:#?}");
    for (packing, path) in &packed {
        assert_eq!(of(path), folder, "{packing:?}");
        let archive = summary
            .archives
            .iter()
            .find(|a| Path::new(&a.path) == path)
            .ok_or("the archive's entry")?;
        use sha2::Digest;
        let hash = format!("{:x}", sha2::Sha256::digest(std::fs::read(path)?));
        assert_eq!(archive.sha256, hash, "{packing:?}");
        assert_eq!(archive.skipped, 51, "{packing:?}: {archive:?}");
        assert!(summary
            .entries
            .iter()
            .filter(|e| Path::new(&e.source) == path)
            .all(|e| e.path.starts_with(&format!("{}!/", path.display()))));
        // Each report names the member and the archive it read: the file it opened was
        // the scan's copy, gone with the spool.
        let mut named = 0;
        for e in summary
            .entries
            .iter()
            .filter(|e| Path::new(&e.source) == path)
        {
            for document in e.inspect.iter().chain(&e.report) {
                named += 1;
                let v: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(out.join(document))?)?;
                let member = &v["run"]["archive_member"];
                assert_eq!(member["archive"], path.display().to_string(), "{document}");
                assert_eq!(member["archive_sha256"], archive.sha256, "{document}");
                assert_eq!(
                    Path::new(member["member"].as_str().unwrap_or_default()),
                    Path::new(&e.relative),
                    "{document}"
                );
            }
        }
        assert!(named >= 10, "{packing:?}: {named} documents");
    }
    // A folder's databases are their own evidence.
    for e in summary
        .entries
        .iter()
        .filter(|e| Path::new(&e.source) == src)
    {
        for document in e.inspect.iter().chain(&e.report) {
            let v: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join(document))?)?;
            assert!(v["run"].get("archive_member").is_none(), "{document}");
        }
    }
    assert!(!out.join(".scan/spool").exists());
    Ok(())
}

/// A scan killed partway leaves some databases committed, one output half written (its
/// `.incomplete`), one committed output changed since, and one entry committed as failed.
/// Run again with the same `OUT`, it keeps what is committed and still hashes as
/// committed, and redoes the rest.
#[test]
fn a_scan_run_again_keeps_what_it_committed_and_redoes_the_rest() -> TestResult {
    let (dir, src, _) = extraction("scan-resume", 10)?;
    let out = dir.path("case");
    let first = scan(&options(vec![src.clone()], out.clone()), &Quiet)?;
    assert_eq!(first.resumed, 0);
    let recovered: Vec<&recovery::scan::ScanEntry> = first
        .entries
        .iter()
        .filter(|e| e.output.is_some())
        .collect();
    assert!(recovered.len() >= 4, "{first:#?}");
    // A kill before the first one's entry was committed: its state is gone and a half
    // output stands where the recovery writes.
    let state = out.join(".scan");
    let lost = recovered[0];
    let output = out.join(lost.output.as_deref().ok_or("output")?);
    // An entry's committed state: the state file that names its output.
    let state_of = |output: &Option<String>| -> Result<PathBuf, Box<dyn std::error::Error>> {
        for e in std::fs::read_dir(&state)? {
            let p = e?.path();
            let text = std::fs::read(&p).unwrap_or_default();
            let c: Option<recovery::scan::ScanEntry> = serde_json::from_slice(&text).ok();
            if c.is_some_and(|c| c.output == *output) {
                return Ok(p);
            }
        }
        Err("no committed state names that output".into())
    };
    let entry_file = state_of(&lost.output)?;
    // One committed as failed (a file that could not be read then) is tried again.
    let failed = state_of(&recovered[2].output)?;
    let mut text: serde_json::Value = serde_json::from_slice(&std::fs::read(&failed)?)?;
    text["outcome"] = "failed".into();
    std::fs::write(&failed, serde_json::to_vec(&text)?)?;
    std::fs::remove_file(&entry_file)?;
    std::fs::remove_file(&output)?;
    let mut incomplete = output.clone().into_os_string();
    incomplete.push(".incomplete");
    std::fs::write(&incomplete, b"half written")?;
    // Killed while its report was being put in place: the report's `.incomplete` too.
    let mut report = out
        .join(lost.report.as_deref().ok_or("report")?)
        .into_os_string();
    report.push(".incomplete");
    std::fs::write(&report, b"{\"half\":")?;
    // Another output changed since it was committed: redone, not trusted.
    let changed = out.join(recovered[1].output.as_deref().ok_or("output")?);
    let mut bytes = std::fs::read(&changed)?;
    bytes.push(0);
    std::fs::write(&changed, &bytes)?;
    let second = scan(&options(vec![src.clone()], out.clone()), &Quiet)?;
    assert_eq!(
        second.resumed as usize,
        first.entries.len() - 3,
        "{second:#?}"
    );
    // The same summary, but for the reports of what was redone: a report records its
    // run's times.
    let strip = |s: &ScanSummary| {
        let mut s = s.clone();
        s.resumed = 0;
        for e in &mut s.entries {
            e.report_sha256 = None;
        }
        s
    };
    assert_eq!(strip(&second), strip(&first), "the same summary");
    for e in &second.entries {
        if let (Some(o), Some(h)) = (&e.output, &e.output_sha256) {
            use sha2::Digest;
            let got = format!("{:x}", sha2::Sha256::digest(std::fs::read(out.join(o))?));
            assert_eq!(&got, h, "{o}");
        }
    }
    Ok(())
}

/// What cannot be scanned is refused before anything is created: an output folder
/// holding files that are no scan's, an output inside the source, a source that is not
/// there.
#[test]
fn a_scan_it_cannot_do_is_refused_before_anything_is_created() -> TestResult {
    let (dir, src, _) = extraction("scan-refused", 3)?;
    let before = fingerprint(&src);
    let busy = dir.path("busy");
    std::fs::create_dir_all(&busy)?;
    std::fs::write(busy.join("notes.txt"), b"mine")?;
    for (sources, out) in [
        (vec![src.clone()], busy.clone()),
        (vec![src.clone()], src.join("case")),
        (vec![dir.path("absent")], dir.path("case")),
    ] {
        let e = scan(&options(sources, out.clone()), &Quiet);
        assert!(
            matches!(e, Err(recovery::Error::Refused { .. })),
            "{}: {e:?}",
            out.display()
        );
    }
    assert_eq!(std::fs::read_dir(&busy)?.count(), 1);
    assert!(!dir.path("case").exists() && !src.join("case").exists());
    assert_eq!(fingerprint(&src), before);
    // The command line says so with exit 2.
    let o = crate::salvage()
        .arg("scan")
        .arg(&src)
        .arg("-o")
        .arg(&busy)
        .output()?;
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    Ok(())
}

/// `salvage scan` for a person: exit 3 when some loss is recorded, `index.html` lists
/// every database with what needs a person's eyes first at the top (the damaged stores,
/// recovered partially, before the others, though one's path sorts last), and every
/// report it links is there as a page of its own.
#[test]
fn the_scan_index_puts_what_needs_a_person_first_and_links_each_report() -> TestResult {
    let (dir, src, made) = extraction("scan-index", 5)?;
    let out = dir.path("case");
    let o = crate::salvage()
        .args(["scan", "--allow-partial", "-q", "-o"])
        .arg(&out)
        .arg(&src)
        .output()?;
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let index = std::fs::read_to_string(out.join("index.html"))?;
    let rows: Vec<&str> = index.split("<tr class=").skip(1).collect();
    assert_eq!(rows.len(), made.databases.len() + 2, "{index}");
    // The two partial recoveries (the damaged store, the one whose header is zeroed)
    // come first, whatever their paths.
    let partial: Vec<usize> = (0..rows.len())
        .filter(|i| rows[*i].contains("loss, partial output"))
        .collect();
    assert_eq!(partial, [0, 1], "{index}");
    assert!(rows[..2]
        .iter()
        .any(|r| r.contains(&made.damaged.display().to_string())));
    assert!(rows.last().is_some_and(|r| r.contains("healthy, complete")));
    let links: Vec<&str> = index
        .split("href=\"")
        .skip(1)
        .filter_map(|l| l.split('"').next())
        .collect();
    assert!(links.len() >= 2 * made.databases.len(), "{links:?}");
    for l in links {
        assert!(out.join(l).is_file(), "{l}");
        if l.ends_with(".report.html") {
            assert!(std::fs::read_to_string(out.join(l))?.contains("<h1>Salvage of"));
        }
    }
    Ok(())
}
