//! `salvage scan` killed with SIGKILL at moments drawn from fixed seeds, from before it
//! has found anything to after its summary, then run again with the same `OUT` until it
//! ends: each time, every database is done exactly once (what was committed before the
//! kill is kept, its files untouched; the rest is done in the rerun), and `OUT` ends as a
//! scan never killed leaves it: the same summary, the same exit status, every file hashing
//! as its entry says, and nothing else (no `.incomplete`, no temporary file, no state of a
//! database twice).

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use recovery::scan::{EntryOutcome, ScanEntry, ScanSummary};

use crate::{Scratch, TestResult};

/// The seeds of the kills. Each gives the moments of two kills, of a scan and of its
/// first rerun; [`moments`] spreads them over the scan's run.
const SEEDS: [u64; 3] = [0x5ca1_0001, 0x5ca1_0002, 0x5ca1_0003];

/// Extra copies of the extraction's small databases (the WAL pair of `data/notes`, the
/// database and hot journal of `data/mail`) beside it: with them the scan commits an entry
/// every few tens of milliseconds, so that the kills find it between any two, and it still
/// takes about 3 s in a debug build.
const COPIES: usize = 6;

/// SplitMix64: the next value of a seed's stream.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A fraction in `[0, 1)` from a seed's stream.
fn unit(state: &mut u64) -> f64 {
    (splitmix(state) >> 11) as f64 / (1u64 << 53) as f64
}

/// When to kill the runs of the seed at `index` of [`SEEDS`], a scan never killed having
/// taken `whole`: the first kill in the index's share of `[0, 1.1 × whole)` (the first
/// share starts at the spawn, the last reaches past the end, where the kill may find the
/// scan writing its summary or done), then a second kill, of the rerun, anywhere in it
/// (it has less to do: the kill may find it done).
fn moments(index: usize, seed: u64, whole: Duration) -> [Duration; 2] {
    let mut state = seed;
    let share = 1.1 / SEEDS.len() as f64;
    let first = (index as f64 + unit(&mut state)) * share;
    [whole.mul_f64(first), whole.mul_f64(unit(&mut state))]
}

/// `salvage scan SRC -o OUT -j 2 --allow-partial -q`, started, its stderr to `stderr`.
fn start(src: &Path, out: &Path, stderr: Stdio) -> std::io::Result<Child> {
    crate::salvage()
        .arg("scan")
        .arg(src)
        .arg("-o")
        .arg(out)
        .args(["-j", "2", "--allow-partial", "-q"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
}

/// Runs the scan to its end: its exit code and stderr.
fn run_to_end(src: &Path, out: &Path) -> Result<(Option<i32>, String), Box<dyn std::error::Error>> {
    let o = start(src, out, Stdio::piped())?.wait_with_output()?;
    Ok((
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    ))
}

/// Starts the scan and kills it (SIGKILL) `after` its start, unless it ended first.
fn kill_after(src: &Path, out: &Path, after: Duration) -> std::io::Result<()> {
    // Nothing read from it: a pipe that fills would stop the scan before the kill.
    let mut child = start(src, out, Stdio::null())?;
    let deadline = Instant::now() + after;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        if child.try_wait()?.is_some() {
            return Ok(());
        }
        std::thread::sleep(left.min(Duration::from_millis(2)));
    }
    // A child that exited and was not waited for yet is killed without error.
    child.kill()?;
    child.wait()?;
    Ok(())
}

/// Copies every file under `from` into `to`, folders and all.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let target = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_tree(&e.path(), &target)?;
        } else {
            std::fs::copy(e.path(), target)?;
        }
    }
    Ok(())
}

/// Every file under `dir`, relative to it, with `/` between names.
fn files_under(dir: &Path) -> BTreeSet<String> {
    let mut files = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(list) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in list.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            } else if let Ok(rel) = p.strip_prefix(dir) {
                files.insert(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    files
}

fn sha256(path: &Path) -> String {
    use sha2::Digest;
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    format!("{:x}", sha2::Sha256::digest(bytes))
}

/// The files in `OUT` an entry names, each with the SHA-256 the entry gives it: its
/// inspect document (no hash), and every field `F` beside a field `F_sha256` (the output
/// and its report, and any file a later version of the entry adds, such as the image of
/// a lone log), so that a file the scan comes to write is not taken for a stray one.
fn files_of(e: &ScanEntry) -> Vec<(String, Option<String>)> {
    let serde_json::Value::Object(fields) = serde_json::to_value(e).unwrap() else {
        panic!("an entry is an object");
    };
    let text = |k: &str| fields.get(k).and_then(|v| v.as_str()).map(String::from);
    let mut files: Vec<(String, Option<String>)> = fields
        .keys()
        .filter(|k| fields.contains_key(&format!("{k}_sha256")))
        .filter_map(|k| Some((text(k)?, text(&format!("{k}_sha256")))))
        .collect();
    files.extend(e.inspect.clone().map(|i| (i, None)));
    assert!(
        e.output.is_none() || files.iter().any(|(f, _)| Some(f) == e.output.as_ref()),
        "{files:?}"
    );
    files
}

/// The entries committed in `OUT/.scan/`, each as its state file (`NAME.json`) gives it.
/// A state file is renamed into place whole: one that does not read as an entry is a
/// failure of the scan.
fn committed(out: &Path) -> Vec<ScanEntry> {
    let state = out.join(".scan");
    let mut entries: Vec<ScanEntry> = files_under(&state)
        .iter()
        .filter(|f| !f.contains('/') && f.ends_with(".json"))
        .map(|f| {
            let text = std::fs::read(state.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
            serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{f}: not an entry: {e}"))
        })
        .collect();
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    entries
}

/// The identity of a file on disk: a file written again, or removed and made again, has
/// another.
type Identity = Option<(u64, u64, i64, i64)>;

fn identity(path: &Path) -> Identity {
    let m = std::fs::metadata(path).ok()?;
    Some((m.dev(), m.ino(), m.mtime(), m.mtime_nsec()))
}

/// The summary without what differs between two scans of the same source that both did
/// every database: the count of entries taken from an earlier run, and the hash of each
/// loss report, which records its run's times and paths.
fn comparable(summary: &ScanSummary) -> ScanSummary {
    let mut s = summary.clone();
    s.resumed = 0;
    for e in &mut s.entries {
        e.report_sha256 = None;
    }
    s
}

/// Asserts that `got` is `want` but for what [`comparable`] leaves out, naming only the
/// entries that differ.
#[track_caller]
fn assert_same(got: &ScanSummary, want: &ScanSummary, why: &str) {
    let (got, want) = (comparable(got), comparable(want));
    let by_path = |s: &ScanSummary| -> BTreeMap<String, ScanEntry> {
        s.entries
            .iter()
            .map(|e| (e.path.clone(), e.clone()))
            .collect()
    };
    let (killed, clean) = (by_path(&got), by_path(&want));
    let differ: Vec<(&String, Option<&ScanEntry>, Option<&ScanEntry>)> = killed
        .keys()
        .chain(clean.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|p| killed.get(*p) != clean.get(*p))
        .map(|p| (p, killed.get(p), clean.get(p)))
        .collect();
    assert!(
        differ.is_empty(),
        "{why}: entries that differ (after the kills, never killed): {differ:#?}"
    );
    assert_eq!(got, want, "{why}: the summary of a scan never killed");
}

fn summary_in(out: &Path) -> Result<ScanSummary, Box<dyn std::error::Error>> {
    Ok(serde_json::from_slice(&std::fs::read(
        out.join("scan.json"),
    )?)?)
}

/// Kills at moments drawn from [`SEEDS`], each followed by a rerun to the end with the
/// same `OUT`: the rerun keeps every entry committed before (its files untouched), but
/// one whose output was changed since, does each of the others once, removes what the
/// killed run left half done, and leaves `OUT` as a scan never killed does.
#[test]
fn a_scan_killed_at_any_moment_and_run_again_does_every_database_once() -> TestResult {
    let dir = Scratch::new("scan-kill");
    let src = dir.path("extraction");
    let first = src.join("copy-1");
    std::fs::create_dir_all(&first)?;
    fixtures::extraction::extraction(&first, 20)?;
    for k in 2..=COPIES + 1 {
        for folder in ["data/notes", "data/mail"] {
            copy_tree(
                &first.join(folder),
                &src.join(format!("copy-{k}")).join(folder),
            )?;
        }
    }

    // A scan never killed: what every killed one must end as, and how long it takes.
    let clean = dir.path("clean");
    let began = Instant::now();
    let (clean_code, clean_err) = run_to_end(&src, &clean)?;
    let whole = began.elapsed();
    let expected = summary_in(&clean)?;
    assert_eq!(
        clean_code,
        Some(3),
        "a damaged database is loss: {clean_err}"
    );
    assert!(expected.entries.len() >= 7 + 2 * COPIES, "{expected:#?}");
    assert!(
        expected
            .entries
            .iter()
            .all(|e| e.outcome != EntryOutcome::Failed),
        "{expected:#?}"
    );
    let paths: BTreeSet<&str> = expected.entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths.len(), expected.entries.len(), "each path once");

    // How many of the entries each seed's kills left committed: some must leave part.
    let mut left_committed = Vec::new();
    let mut changed_since = 0;
    for (index, seed) in SEEDS.into_iter().enumerate() {
        let out = dir.path(&format!("out-{seed:x}"));
        let kills = moments(index, seed, whole);
        let why = format!("seed {seed:#x}: killed after {kills:?} of a {whole:?} scan");
        for after in &kills {
            kill_after(&src, &out, *after)?;
        }

        // What the killed runs committed, and the identity of each of its files.
        let before = committed(&out);
        left_committed.push(before.len());
        let mut kept: BTreeMap<String, Vec<Identity>> = before
            .iter()
            .filter(|e| e.outcome != EntryOutcome::Failed)
            .map(|e| {
                let files = files_of(e);
                let ids = files.iter().map(|(f, _)| identity(&out.join(f))).collect();
                (e.path.clone(), ids)
            })
            .collect();
        // One committed output (the smallest) changed since its commit, by hand or by a
        // tool: the rerun must check it by its hash and do it again, not take it.
        let changed = before
            .iter()
            .filter(|e| kept.contains_key(&e.path) && e.output.is_some())
            .min_by_key(|e| e.size);
        if let Some(e) = changed {
            let output = out.join(e.output.as_deref().unwrap_or_default());
            let mut bytes = std::fs::read(&output)?;
            bytes.push(0);
            std::fs::write(&output, bytes)?;
            kept.remove(&e.path);
            changed_since += 1;
        }

        let (code, err) = run_to_end(&src, &out)?;
        assert_eq!(code, clean_code, "{why}: {err}");
        let summary = summary_in(&out)?;
        assert_same(&summary, &expected, &why);

        // Every database done once: what was committed before is taken as it was, its
        // files not written again; the rest was done in the rerun.
        assert_eq!(
            summary.resumed,
            kept.len() as u64,
            "{why}: the entries taken from the killed runs"
        );
        for e in &summary.entries {
            let Some(files) = kept.get(&e.path) else {
                continue;
            };
            let now: Vec<Identity> = files_of(e)
                .iter()
                .map(|(f, _)| identity(&out.join(f)))
                .collect();
            assert_eq!(&now, files, "{why}: {} was done again", e.path);
        }
        // One committed state per database, each the summary's entry.
        assert_eq!(
            committed(&out),
            summary.entries,
            "{why}: the committed states"
        );

        // Every file an entry names is there and hashes as the entry says.
        for e in &summary.entries {
            for (file, hash) in files_of(e) {
                let got = sha256(&out.join(&file));
                assert!(
                    hash.is_none_or(|h| h == got),
                    "{why}: {file} against its entry"
                );
            }
        }

        // Nothing in OUT but what the summary names, the state and the pages.
        let mut named: BTreeSet<String> = ["scan.json", "scan.csv", "index.html", "scan.jsonld"]
            .into_iter()
            .map(String::from)
            .collect();
        for e in &summary.entries {
            named.extend(files_of(e).into_iter().map(|(f, _)| f));
            if let Some(r) = &e.report {
                named.insert(format!("{}.html", r.strip_suffix(".json").unwrap_or(r)));
            }
        }
        let stray: Vec<String> = files_under(&out)
            .into_iter()
            .filter(|f| !named.contains(f))
            .filter(|f| {
                // A state file, `.scan/NAME.json`: each is one of the entries above.
                !f.strip_prefix(".scan/")
                    .is_some_and(|name| !name.contains('/') && name.ends_with(".json"))
            })
            .collect();
        assert!(stray.is_empty(), "{why}: left in OUT: {stray:#?}");
        for want in ["scan.json", "scan.csv", "index.html"] {
            assert!(out.join(want).is_file(), "{why}: no {want}");
        }
    }
    // The seeds' kills land mid-scan: some leave part of the entries committed.
    let total = expected.entries.len();
    assert!(
        left_committed.iter().any(|n| (1..total).contains(n)),
        "committed at the kills: {left_committed:?} of {total}"
    );
    assert!(changed_since > 0, "no kill left an output committed");
    Ok(())
}
