//! Embeds the catalogue of application schemas (`profiles/catalogue/*.json`, one file per
//! application database) in the library: `$OUT_DIR/catalogue.rs` lists every file, by name
//! order, as `(stem, include_str!(path))`.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let dir = Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"))
        .join("profiles")
        .join("catalogue");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut code = String::from(
        "/// The catalogue's files: name and text.\npub const CATALOGUE: &[(&str, &str)] = &[\n",
    );
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
        let stem = f.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        let _ = writeln!(
            code,
            "    ({stem:?}, include_str!({:?})),",
            f.display().to_string()
        );
    }
    code.push_str("];\n");
    let out = Path::new(&std::env::var("OUT_DIR").expect("set by cargo")).join("catalogue.rs");
    std::fs::write(out, code).expect("OUT_DIR is writable");
}
