//! The floors of `recovery` (`docs/architecture.md`): every `crate::` path a module names
//! is on its own floor or one below, and within a floor, in a module before its own in the
//! floor's order (a folder's own files may name each other). A change that makes a floor
//! reach up, or two modules of a floor reach each other, fails here, naming the file and
//! the path.

use std::path::Path;

/// The floors, lowest first, each with its modules in the order they may import.
const FLOORS: &[(&str, &[&str])] = &[
    (
        "base",
        &[
            "observer",
            "error",
            "crash",
            "paths",
            "writeback",
            "files",
            "dbpath",
            "sqlite",
            "place",
            "priority",
            "readahead",
            "output",
        ],
    ),
    (
        "report",
        &[
            "common",
            "map",
            "manifest",
            "carved",
            "history",
            "provenance",
            "inspect",
            "loss",
        ],
    ),
    (
        "recover",
        &[
            "profiles",
            "times",
            "request",
            "evidence",
            "tables",
            "damaged",
            "ledger",
            "whence",
            "plan",
            "objects",
            "load",
            "rebuild",
            "carve",
            "history",
            "provenance",
            "finish",
        ],
    ),
    ("inspect", &[]),
    ("export", &[]),
    ("custody", &["bundle", "backup", "repair", "scan"]),
];

/// Where a module path (`["recover", "load", "claims"]`) stands: its floor, then its
/// module's place in the floor (0 for a floor's own root file, which may name all of it).
fn rank(path: &[&str]) -> Option<(usize, usize)> {
    let top = path.first()?;
    // `inspect` and `export` are one floor: neither names the other.
    let floor = match *top {
        "export" => FLOORS.iter().position(|(n, _)| *n == "inspect")?,
        _ => FLOORS.iter().position(|(n, _)| n == top)?,
    };
    let order = FLOORS.get(floor)?.1;
    Some(match path.get(1) {
        Some(m) => (
            floor,
            order.iter().position(|o| o == m).map_or(0, |i| i + 1),
        ),
        None => (floor, usize::MAX),
    })
}

/// Every `.rs` file under `dir`, as its module path.
fn modules(dir: &Path, prefix: &[String], out: &mut Vec<(Vec<String>, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("the source folder")
        .map(|e| e.expect("an entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path
            .file_stem()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        if path.is_dir() {
            let mut p = prefix.to_vec();
            p.push(name);
            modules(&path, &p, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let mut p = prefix.to_vec();
            if name != "mod" && name != "lib" {
                p.push(name);
            }
            out.push((p, std::fs::read_to_string(&path).expect("a source file")));
        }
    }
}

/// The `crate::` paths a source names outside comments, as their first two segments.
fn named(source: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for line in source.lines() {
        let code = line.split("//").next().unwrap_or_default();
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let path: Vec<String> = rest
                .split("::")
                .take(2)
                .map(|s| {
                    s.chars()
                        .take_while(|c| c.is_ascii_lowercase() || *c == '_' || c.is_ascii_digit())
                        .collect::<String>()
                })
                .take_while(|s| !s.is_empty())
                .collect();
            if !path.is_empty() {
                out.push(path);
            }
        }
    }
    out
}

#[test]
fn every_module_imports_only_downwards() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    modules(&src, &[], &mut all);
    let mut upward = Vec::new();
    for (module, source) in &all {
        if module.is_empty() {
            continue; // lib.rs, the front door, names every floor
        }
        let me: Vec<&str> = module.iter().map(String::as_str).collect();
        let Some(mine) = rank(&me) else {
            upward.push(format!("{} is on no floor", module.join("::")));
            continue;
        };
        for path in named(source) {
            let them: Vec<&str> = path.iter().map(String::as_str).collect();
            let same_folder = me.len() > 1 && them.len() > 1 && me[..2] == them[..2];
            match rank(&them) {
                Some(theirs) if theirs > mine && !same_folder => upward.push(format!(
                    "{} names crate::{}",
                    module.join("::"),
                    path.join("::")
                )),
                _ => {}
            }
        }
    }
    upward.sort();
    upward.dedup();
    assert!(
        upward.is_empty(),
        "imports that reach up:\n{}",
        upward.join("\n")
    );
}
