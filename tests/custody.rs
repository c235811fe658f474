//! Custody of the evidence and of the application's database: `quarantine` copies a
//! database and its sidecars byte for byte into a bundle with a manifest, `verify`
//! re-hashes one, and `inspect` and `recover` read a bundle as its database.

use sha2::{Digest, Sha256};

use crate::{Scratch, TestResult};

/// A test step's result with a value.
type Got<T> = Result<T, Box<dyn std::error::Error>>;

fn sha256(path: &std::path::Path) -> Got<String> {
    Ok(Sha256::digest(std::fs::read(path)?)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// The agent store in WAL mode at `dir/state.db`, with its `-wal` and an `-shm`.
fn wal_store(dir: &Scratch) -> Got<std::path::PathBuf> {
    let w = fixtures::build_agent_with_wal();
    let db = dir.path("state.db");
    std::fs::write(&db, &w.main)?;
    std::fs::write(dir.path("state.db-wal"), &w.wal)?;
    std::fs::write(dir.path("state.db-shm"), vec![0u8; 32 << 10])?;
    Ok(db)
}

fn run(args: &[&std::ffi::OsStr]) -> Got<(i32, String, String)> {
    let out = crate::run_salvage(args)?;
    Ok((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// A quarantine copies the database and every sidecar byte for byte (their hashes in the
/// manifest are the originals'), creates nothing beside the source, and the bundle reads
/// as the database: `recover BUNDLE` gives what `recover SRC` gives.
#[test]
fn a_quarantine_copies_every_file_byte_for_byte() -> TestResult {
    let dir = Scratch::new("custody-quarantine");
    let db = wal_store(&dir)?;
    let before = dir.listing();
    let bundle = dir.path("case-7");
    let (code, _, err) = run(&[
        "quarantine".as_ref(),
        db.as_os_str(),
        "--to".as_ref(),
        bundle.as_os_str(),
        "--case".as_ref(),
        "7".as_ref(),
    ])?;
    assert_eq!(code, 0, "{err}");
    let mut after = dir.listing();
    after.retain(|n| n != "case-7");
    assert_eq!(after, before, "nothing made beside the source");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(bundle.join("MANIFEST.json"))?)?;
    assert_eq!(manifest["case"], "7");
    let files = manifest["files"].as_array().ok_or("files")?;
    let roles: Vec<&str> = files.iter().filter_map(|f| f["role"].as_str()).collect();
    assert_eq!(roles, ["database", "wal", "shm"]);
    for f in files {
        let name = f["path"].as_str().ok_or("path")?;
        assert_eq!(
            f["sha256"].as_str(),
            Some(sha256(&dir.path(name))?.as_str())
        );
        assert_eq!(sha256(&bundle.join(name))?, sha256(&dir.path(name))?);
    }
    let (from_src, from_bundle) = (dir.path("a.db"), dir.path("b.db"));
    let a = crate::recover_expecting(&db, &from_src, &[], 0)?;
    let b = crate::recover_expecting(&bundle, &from_bundle, &[], 0)?;
    assert_eq!(a["tables"], b["tables"]);
    assert_eq!(a["wal"]["frames_applied"], b["wal"]["frames_applied"]);
    Ok(())
}

/// `verify` finds one flipped byte in any file of a bundle, and a file added to it.
#[test]
fn verify_finds_a_single_flipped_byte_in_any_file() -> TestResult {
    let dir = Scratch::new("custody-verify");
    let db = wal_store(&dir)?;
    let bundle = dir.path("bundle");
    let manifest = recovery::bundle::make(&db, &bundle, "quarantine", &Default::default())?;
    assert!(recovery::bundle::verify(&bundle)?.intact());
    let (code, out, _) = run(&["verify".as_ref(), bundle.as_os_str()])?;
    assert_eq!(code, 0, "{out}");
    for f in &manifest.files {
        let path = bundle.join(&f.path);
        let original = std::fs::read(&path)?;
        let mut flipped = original.clone();
        let at = flipped.len() / 2 + 3;
        flipped[at] ^= 0x10;
        let mut perms = std::fs::metadata(&path)?.permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(&path, perms)?;
        std::fs::write(&path, &flipped)?;
        let (code, out, _) = run(&["verify".as_ref(), bundle.as_os_str()])?;
        assert_eq!(code, 3, "{out}");
        assert!(out.contains(&format!("`{}` differs", f.path)), "{out}");
        std::fs::write(&path, &original)?;
    }
    std::fs::write(bundle.join("notes.txt"), b"added later")?;
    let v = recovery::bundle::verify(&bundle)?;
    assert_eq!(
        v.differences,
        [recovery::bundle::Difference::Unlisted {
            path: "notes.txt".into()
        }]
    );
    Ok(())
}

/// A quarantine never writes over anything and refuses before creating anything.
#[test]
fn a_quarantine_refuses_before_creating_anything() -> TestResult {
    let dir = Scratch::new("custody-refusals");
    let db = wal_store(&dir)?;
    std::fs::create_dir(dir.path("taken"))?;
    std::fs::create_dir(dir.path("left.incomplete"))?;
    let before = dir.listing();
    for (src, to) in [
        (db.clone(), dir.path("taken")),
        (db.clone(), dir.path("left")),
        (db.clone(), dir.path("no/such/folder")),
        (dir.path("missing.db"), dir.path("new")),
        (dir.path("taken"), dir.path("new")),
    ] {
        let (code, _, err) = run(&[
            "quarantine".as_ref(),
            src.as_os_str(),
            "--to".as_ref(),
            to.as_os_str(),
        ])?;
        assert_eq!(code, 2, "{} -> {}: {err}", src.display(), to.display());
        assert!(err.contains("hint:"), "{err}");
        assert_eq!(dir.listing(), before);
    }
    Ok(())
}
