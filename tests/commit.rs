//! `salvage commit`: a withheld recovery committed without a rerun once its loss is
//! accepted, only when the file is the one its run verified; and a rerun refused with
//! every file in its way named, and the commit offered.

use fixtures::Damage;

use crate::recover::{case, Case};
use crate::{report_beside, salvage, TestResult};

/// A recovery withheld (exit 4): `sessions` lost with its only page.
fn withheld(name: &str) -> Result<Case, Box<dyn std::error::Error>> {
    let c = case(name, "agent-4096-utf8", |f| {
        vec![Damage::ZeroPage(f.roots["sessions"])]
    });
    c.recover_expecting(&[], 4)?;
    Ok(c)
}

fn incomplete(c: &Case) -> std::path::PathBuf {
    c.dir.path("out.db.incomplete")
}

/// `salvage commit ARGS`.
fn commit(args: &[&std::ffi::OsStr]) -> std::io::Result<std::process::Output> {
    salvage().arg("commit").args(args).output()
}

fn sha256_hex(path: &std::path::Path) -> Result<String, Box<dyn std::error::Error>> {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(std::fs::read(path)?);
    Ok(digest.iter().map(|b| format!("{b:02x}")).collect())
}

#[test]
fn a_withheld_recovery_is_committed_without_a_rerun_and_the_report_says_so() -> TestResult {
    let c = withheld("commit-accepted")?;
    let before = report_beside(&c.dest);
    let hash = sha256_hex(&incomplete(&c))?;
    assert_eq!(before["output"]["sha256"].as_str(), Some(hash.as_str()));

    // The rerun is refused, naming every file in its way and the commit.
    let again = c.recover(&[])?;
    assert_eq!(again.status.code(), Some(2));
    let said = String::from_utf8(again.stderr)?;
    let commit_line = format!("salvage commit {}", incomplete(&c).display());
    assert!(said.contains(&commit_line), "{said}");
    assert!(said.contains("out.db.report.json"), "{said}");

    let out = commit(&[incomplete(&c).as_os_str()])?;
    let said = String::from_utf8(out.stderr)?;
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(!incomplete(&c).exists());
    // The very file the run verified, now at DEST.
    assert_eq!(sha256_hex(&c.dest)?, hash);
    let after = report_beside(&c.dest);
    assert_eq!(after["output"]["committed"], true);
    assert_eq!(after["output"]["location"], "dest");
    assert_eq!(after["output"]["sha256"].as_str(), Some(hash.as_str()));
    let accepted = &after["output"]["accepted"];
    assert!(
        accepted["utc"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{accepted}"
    );
    assert_eq!(accepted["command_line"][1], "commit", "{accepted}");
    // Still loss: accepting it does not make it clean; nothing else of the report changed.
    assert_eq!(after["flags"]["loss_detected"], true);
    assert_eq!(after["tables"], before["tables"]);
    assert_eq!(after["evidence"], before["evidence"]);
    crate::assert_counts_add_up(&c.dest, &crate::typed_report_beside(&c.dest));
    assert!(said.contains("LOSS DETECTED"), "{said}");
    // Rendered for a person: committed later, by whom it was accepted.
    let shown = salvage()
        .arg("report")
        .arg(c.dir.path("out.db.report.json"))
        .output()?;
    let shown = String::from_utf8(shown.stdout)?;
    assert!(shown.contains("committed at 20"), "{shown}");
    assert!(
        shown.contains("by `salvage commit`, its loss accepted"),
        "{shown}"
    );
    let render = |format: &str| -> Result<String, Box<dyn std::error::Error>> {
        let out = salvage()
            .arg("report")
            .arg(c.dir.path("out.db.report.json"))
            .args(["--format", format])
            .output()?;
        Ok(String::from_utf8(out.stdout)?)
    };
    let page = render("html")?;
    assert!(
        page.contains("by `salvage commit`, its loss accepted"),
        "{page}"
    );
    // In a case file, a second action on the output: when, by what command.
    let doc: serde_json::Value = serde_json::from_str(&render("case")?)?;
    let graph = doc["@graph"].as_array().ok_or("no @graph")?;
    let commit_action = graph
        .iter()
        .find(|n| n["uco-core:name"] == "salvage commit")
        .ok_or("no commit action")?;
    assert_eq!(
        commit_action["uco-action:startTime"]["@value"],
        accepted["utc"]
    );
    let output = graph
        .iter()
        .find(|n| n["@type"] == "uco-observable:File" && n["uco-core:name"] == "output")
        .ok_or("no output file")?;
    assert_eq!(commit_action["uco-action:result"][0]["@id"], output["@id"]);
    // No file but DEST and its report is left.
    let left: Vec<String> = c
        .dir
        .listing()
        .into_iter()
        .filter(|f| f.starts_with("out.db"))
        .collect();
    assert_eq!(left, ["out.db", "out.db.report.json"]);
    Ok(())
}

#[test]
fn a_changed_or_misnamed_output_is_refused_and_nothing_moves() -> TestResult {
    let c = withheld("commit-refused")?;
    let report_before = std::fs::read(c.dir.path("out.db.report.json"))?;
    let listing = c.dir.listing();

    // Not a withheld output's name.
    let out = commit(&[c.src.as_os_str()])?;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr)?.contains("not a withheld output"));

    // One byte of the output changed after its run verified it: a page of a table, so
    // that SQLite may even read it without complaint.
    let mut bytes = std::fs::read(incomplete(&c))?;
    let at = bytes.len() - 100;
    bytes[at] ^= 0x01;
    std::fs::write(incomplete(&c), &bytes)?;
    let out = commit(&[incomplete(&c).as_os_str()])?;
    let said = String::from_utf8(out.stderr)?;
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("not the file its run verified"), "{said}");
    assert!(!c.dest.exists());
    assert_eq!(c.dir.listing(), listing);
    assert_eq!(
        std::fs::read(c.dir.path("out.db.report.json"))?,
        report_before
    );

    // A report of another run.
    let other = withheld("commit-other")?;
    bytes[at] ^= 0x01;
    std::fs::write(incomplete(&c), &bytes)?;
    let out = commit(&[
        incomplete(&c).as_os_str(),
        "--report".as_ref(),
        other.dir.path("out.db.report.json").as_os_str(),
    ])?;
    let said = String::from_utf8(out.stderr)?;
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("is of a run whose output is"), "{said}");

    // A link to the output, not the output: refused.
    let link = c.dir.path("link.db.incomplete");
    std::os::unix::fs::symlink(incomplete(&c), &link)?;
    let out = commit(&[
        link.as_os_str(),
        "--report".as_ref(),
        c.dir.path("out.db.report.json").as_os_str(),
    ])?;
    let said = String::from_utf8(out.stderr)?;
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("is a symbolic link"), "{said}");
    assert!(!c.dir.path("link.db").exists());
    std::fs::remove_file(&link)?;

    // DEST appeared meanwhile: never overwritten.
    std::fs::write(&c.dest, b"someone else's")?;
    let out = commit(&[incomplete(&c).as_os_str()])?;
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read(&c.dest)?, b"someone else's");
    assert!(incomplete(&c).exists());
    Ok(())
}

/// `salvage commit --examiner` records who accepted the loss: in the report beside when
/// and by what command, and in a case file as the commit action's performer, a person of
/// their own beside the examiner who ran the recovery.
#[test]
fn the_examiner_who_commits_performs_the_commit_in_a_case_file() -> TestResult {
    let c = case("commit-examiner", "agent-4096-utf8", |f| {
        vec![Damage::ZeroPage(f.roots["sessions"])]
    });
    c.recover_expecting(&["--examiner", "A. Smith", "--case", "2026-117"], 4)?;
    let out = commit(&[
        incomplete(&c).as_os_str(),
        "--examiner".as_ref(),
        "J. Doe".as_ref(),
    ])?;
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = report_beside(&c.dest);
    assert_eq!(report["output"]["accepted"]["examiner"], "J. Doe");
    assert_eq!(report["run"]["examiner"], "A. Smith");
    let out = salvage()
        .arg("report")
        .arg(c.dir.path("out.db.report.json"))
        .args(["--format", "case"])
        .output()?;
    assert_eq!(out.status.code(), Some(3));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let graph = doc["@graph"].as_array().ok_or("no @graph")?;
    let node = |id: &serde_json::Value| graph.iter().find(|n| n["@id"] == *id);
    let performer = |action: &str| -> Result<String, Box<dyn std::error::Error>> {
        let action = graph
            .iter()
            .find(|n| n["uco-core:name"] == action)
            .ok_or(format!("no action {action}"))?;
        let person = node(&action["uco-action:performer"]["@id"])
            .ok_or(format!("{action}: no performer"))?;
        assert_eq!(person["@type"], "uco-identity:Identity");
        Ok(person["uco-core:name"].as_str().unwrap_or_default().into())
    };
    assert_eq!(performer("salvage commit")?, "J. Doe");
    assert_eq!(performer("salvage recover")?, "A. Smith");
    let people = graph
        .iter()
        .filter(|n| n["@type"] == "uco-identity:Identity")
        .count();
    assert_eq!(people, 2);
    Ok(())
}
