//! Unit tests for the corpus loader: parse all 77 keys and check their internal counts.

use super::*;

#[test]
fn loads_all_77_cases_sorted() {
    let cases = load_all();
    assert_eq!(cases.len(), 77, "expected 77 corpus cases");
    let ids: Vec<&str> = cases.iter().map(|c| c.id.as_str()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(ids, sorted);
    assert_eq!(ids.first(), Some(&"01-01"));
    assert_eq!(ids.last(), Some(&"0E-02"));
    for c in &cases {
        assert!(
            c.db_path.is_file() && c.sql_path.is_file() && c.xml_path.is_file(),
            "{}",
            c.id
        );
        assert!(!c.tables.is_empty(), "{}: no tables", c.id);
        assert!(
            c.category.starts_with("Category: "),
            "{}: {:?}",
            c.id,
            c.category
        );
    }
}

#[test]
fn counts_agree_with_meta() {
    let mut total_rows = 0;
    for c in all() {
        let id = &c.id;
        let m = &c.meta;
        assert_eq!(m.tables, Some(c.tables.len()), "{id}: <tables>");
        let count = |k: &str| c.objects.iter().filter(|o| o.kind == k).count();
        assert_eq!(m.views, Some(count("view")), "{id}: <views>");
        assert_eq!(m.triggers, Some(count("trigger")), "{id}: <triggers>");
        // <indices> also counts automatic indices, which get no <element>.
        assert!(m.indices.unwrap() >= count("index"), "{id}: <indices>");
        let rows: usize = c.tables.iter().map(|t| t.rows.len()).sum();
        assert_eq!(m.entries, Some(rows), "{id}: <entries>");
        total_rows += rows;
        for t in &c.tables {
            let tm = &t.meta;
            let n = &t.name;
            assert_eq!(tm.columns, Some(t.columns.len()), "{id} {n:?}: <columns>");
            assert_eq!(t.column_types.len(), t.columns.len());
            assert_eq!(tm.rows_total, Some(t.rows.len()), "{id} {n:?}: <rowsTotal>");
            assert_eq!(
                tm.rows_alive,
                Some(live_rows(t).count()),
                "{id} {n:?}: <rowsAlive>"
            );
            assert_eq!(
                tm.rows_deleted,
                Some(deleted_rows(t).count()),
                "{id} {n:?}: <rowsDeleted>"
            );
            for r in &t.rows {
                assert_eq!(r.values.len(), t.columns.len(), "{id} {n:?}: row width");
            }
        }
    }
    assert_eq!(total_rows, 19696); // 19487 alive + 209 deleted
}

#[test]
fn malformed_keys_are_repaired() {
    let c = load("01-18");
    assert_eq!(c.tables.len(), 1);
    let t = &c.tables[0];
    assert_eq!(t.key_name, "\u{b}\u{c}\n");
    assert_eq!(t.name, "\u{b}\u{c}\r");
    assert_eq!(t.rows.len(), 10);
    assert!(c
        .quirks
        .iter()
        .any(|q| q.contains("U+000B") && q.contains("not allowed")));
    assert!(c
        .quirks
        .iter()
        .any(|q| q.contains("U+000C") && q.contains("not allowed")));

    let c = load("05-04");
    assert_eq!(c.tables.len(), 1);
    assert_eq!(c.tables[0].rows.len(), 10);
    assert_eq!(c.objects.len(), 1);
    assert_eq!(c.objects[0].kind, "index");
    assert_eq!(c.objects[0].name, "surnameZip");
    assert_eq!(
        c.objects[0].statement.as_deref(),
        Some("CREATE INDEX surnameZip ON users(surname,zip)")
    );
    assert!(c
        .quirks
        .iter()
        .any(|q| q.contains("<sql> was never closed")));

    // Every other key is well-formed.
    for c in all() {
        let xml_repairs = c
            .quirks
            .iter()
            .filter(|q| q.contains("not well-formed"))
            .count();
        assert_eq!(
            xml_repairs > 0,
            c.id == "01-18" || c.id == "05-04",
            "{}",
            c.id
        );
    }
}

#[test]
fn weird_names_and_values_are_verbatim() {
    let names: Vec<String> = (1..=17)
        .map(|i| load(&format!("01-{i:02}")).tables[0].name.clone())
        .collect();
    assert_eq!(
        names,
        [
            "\"\"", "A\"b\"c", "[", "]", "", "''", "A'b'c", "--", "#", " ", "%", "%s%s", "(", ")",
            ",", "\t", "\n"
        ]
    );
    assert_eq!(
        load("02-01").tables[0].columns,
        ["\"name\" NOT NULL,", "surname"]
    );
    assert_eq!(
        load("02-02").tables[0].columns,
        ["] name TEXT, 'abc' TEXT [,", "surname"]
    );
    assert_eq!(
        load("04-05").tables[0].name,
        "UTF-16\u{1D11E}\u{1D565}\u{2008A}\u{24F5C}End"
    );
    assert_eq!(load("04-03").tables[0].name, "自由");

    let c = load("05-02");
    let t = &c.tables[0];
    let nulls = t
        .rows
        .iter()
        .flat_map(|r| &r.values)
        .filter(|v| **v == KeyValue::Null)
        .count();
    assert_eq!(nulls, 3);

    // Leading spaces in text cells survive.
    let c = load("0E-02");
    assert!(c.tables[0]
        .rows
        .iter()
        .flat_map(|r| &r.values)
        .any(|v| v.as_text().is_some_and(|s| s.starts_with(' '))));
}

#[test]
fn dropped_tables_only_in_0a_0b() {
    let mut dropped = Vec::new();
    for c in all() {
        for t in c.tables.iter().filter(|t| t.deleted) {
            dropped.push(format!("{}:{}", c.id, t.name));
            assert_eq!(readable_live_rows(c, t).count(), 0);
            assert_eq!(readback(c, &t.name), Readback::Dropped);
        }
    }
    assert_eq!(
        dropped,
        [
            "0A-01:users",
            "0A-02:users",
            "0A-03:users",
            "0A-03:members",
            "0A-04:users",
            "0A-04:members",
            "0A-05:users",
            "0A-05:members",
            "0B-01:users",
            "0B-02:customers"
        ]
    );
}

#[test]
fn key_error_09_01() {
    let c = load("09-01");
    let t = c.table("users").unwrap();
    assert_eq!(live_rows(t).count(), 5000);
    assert_eq!(
        live_rows(t)
            .filter(|r| known_key_error(&c, "users", r))
            .count(),
        1148
    );
    assert_eq!(readable_live_rows(&c, t).count(), 3852);
    for other in load_all().iter().filter(|c| c.id != "09-01") {
        for t in &other.tables {
            assert!(t.rows.iter().all(|r| !known_key_error(other, &t.name, r)));
        }
    }
}

#[test]
fn value_matching() {
    let t = |s: &str| KeyValue::Text(s.to_string());
    assert!(KeyValue::Null.matches(&Actual::Null));
    assert!(!KeyValue::Null.matches(&Actual::Text("NULL".into())));
    assert!(!t("NULL").matches(&Actual::Null));
    assert!(t("20001").matches(&Actual::Integer(20001)));
    assert!(t("-85515699").matches(&Actual::Integer(-85515699)));
    assert!(!t("20001").matches(&Actual::Text("20002".into())));
    assert!(t("20001").matches(&Actual::Text("20001".into())));
    assert!(!t("020001").matches(&Actual::Integer(20001)));
    assert!(t("4818407860.50000").matches(&Actual::Real(4818407860.5)));
    assert!(t("-820077986.37267").matches(&Actual::Real(-820077986.37267)));
    assert!(t("36160566.39522").matches(&Actual::Real(36160566.39522)));
    assert!(!t("36160566.39522").matches(&Actual::Real(36160566.39523)));
    assert!(t("12.00000").matches(&Actual::Integer(12)));
    assert!(t("12.00000").matches(&Actual::Real(12.0)));
    assert!(!t("12.00000").matches(&Actual::Text("12".into())));
    assert!(t("Groß").matches(&Actual::Text("Groß".into())));
    assert!(!t("Groß ").matches(&Actual::Text("Groß".into())));
    assert!(t("00ff").matches(&Actual::Blob(vec![0, 255])));
    assert!(t("X'00FF'").matches(&Actual::Blob(vec![0, 255])));
    assert!(!t("00fe").matches(&Actual::Blob(vec![0, 255])));
    // R-tree: stored as f32, bounds rounded outwards.
    let r = -173.585_37_f32 as f64; // what SQLite returns for the key's -173.58535
    assert!(!t("-173.58535").matches(&Actual::Real(r)));
    assert!(t("-173.58535").matches_f32(&Actual::Real(r)));
    assert!(!t("-173.58000").matches_f32(&Actual::Real(r)));
}

#[test]
fn every_value_is_interpretable() {
    // Every non-NULL key cell is an integer, a five-decimal real, or text; no blob notation.
    let mut reals = 0;
    for c in all() {
        for t in &c.tables {
            for (i, ty) in t.column_types.iter().enumerate() {
                for r in &t.rows {
                    let Some(s) = r.values[i].as_text() else {
                        continue;
                    };
                    match ty.as_str() {
                        // INTEGER columns hold integers, except 02-03 whose `name` column is declared
                        // `[INTEGER, 'abc' TEXT,]` (an identifier!) and holds names.
                        "INTEGER" if c.id != "02-03" => {
                            assert!(s.parse::<i64>().is_ok(), "{} {:?}: {s:?}", c.id, t.name)
                        }
                        "REAL" => {
                            let (_, frac) = s
                                .split_once('.')
                                .unwrap_or_else(|| panic!("{} {s:?}", c.id));
                            assert_eq!(frac.len(), 5, "{} {s:?}", c.id);
                            assert!(s.parse::<f64>().is_ok());
                            reals += 1;
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    assert!(reals > 0);
}

#[test]
fn readback_classes() {
    let mut special = Vec::new();
    for c in all() {
        for t in &c.tables {
            match readback(c, &t.name) {
                Readback::Exact | Readback::Dropped => {}
                r => special.push(format!("{}:{}:{r:?}", c.id, t.name)),
            }
        }
    }
    assert_eq!(
        special,
        [
            "05-02:users:StaleTriggerTimestamp",
            "06-01:coordinates:RTreeFloat32",
            "06-02:coordinates:RTreeFloat32",
            "06-03:users:Fts4Content"
        ]
    );

    // 05-02: the database's row for Simon (as sqlite3 returns it) agrees via row_matches only.
    let c = load("05-02");
    let t = &c.tables[0];
    let row = &t.rows[2];
    let text = |s: &str| Actual::Text(s.to_string());
    let actual = [
        text("Simon"),
        text("Neumann-Richter"),
        text("2017-10-05 21:37:05"),
    ];
    assert!(!row.values[2].matches(&actual[2]));
    assert!(row_matches(&c, t, row, &actual));
    let wrong = [text("Simon"), text("Richter"), text("2017-10-05 21:37:05")];
    assert!(!row_matches(&c, t, row, &wrong));
    assert!(row_matches(
        &c,
        t,
        &t.rows[0],
        &[text("Tilo"), text("Engel"), Actual::Null]
    ));

    // 06-01: first row as SQLite's R-tree returns it (f32, bounds rounded outwards).
    let c = load("06-01");
    let t = &c.tables[0];
    let f = |x: f32| Actual::Real(x as f64);
    let actual = [
        Actual::Integer(23001),
        f(-173.585_37),
        f(-155.495_24),
        f(58.996_67),
        f(65.658_08),
    ];
    assert!(row_matches(&c, t, &t.rows[0], &actual));
    assert!(!row_matches(&c, t, &t.rows[1], &actual));
}

/// The vendored corpus is byte for byte what `SHA256SUMS` lists (the distribution's own
/// files, whose hashes also agree with its `sha256sums.txt`), and nothing else has appeared
/// beside it: no stray `-wal`/`-journal`, no file a test wrote. Checks the vendored folder
/// even when `SALVAGE_NEMETZ_DIR` points the other tests elsewhere.
#[test]
fn vendored_corpus_matches_sha256sums() {
    use sha2::{Digest, Sha256};
    use std::collections::BTreeMap;

    let dir = vendored_dir();
    let manifest_path = dir.join("SHA256SUMS");
    let manifest = std::fs::read_to_string(&manifest_path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", manifest_path.display()));
    let mut listed = BTreeMap::new();
    for (n, line) in manifest.lines().enumerate() {
        let (hash, path) = line
            .split_once("  ")
            .unwrap_or_else(|| panic!("SHA256SUMS line {}: not `HASH  PATH`: {line:?}", n + 1));
        assert!(
            hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()),
            "SHA256SUMS line {}: bad hash {hash:?}",
            n + 1
        );
        assert!(
            listed
                .insert(path.to_string(), hash.to_ascii_lowercase())
                .is_none(),
            "SHA256SUMS lists {path} twice"
        );
    }
    // 77 cases × (.db, .sql, .xml), plus the distribution's README.txt and license.txt.
    assert_eq!(listed.len(), 77 * 3 + 2, "files listed in SHA256SUMS");

    // Every file under the folder, as a `/`-separated relative path, except the three that
    // describe the vendoring itself.
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let e = e.unwrap();
            let name = e.file_name().into_string().expect("non-UTF-8 file name");
            let rel = format!("{prefix}{name}");
            if e.file_type().unwrap().is_dir() {
                walk(&e.path(), &format!("{rel}/"), out);
            } else {
                out.push(rel);
            }
        }
    }
    let mut present = Vec::new();
    walk(&dir, "", &mut present);
    present.retain(|p| !matches!(p.as_str(), "SHA256SUMS" | "README.md" | ".gitattributes"));
    present.sort();
    let expected: Vec<&String> = listed.keys().collect();
    assert_eq!(
        present.iter().collect::<Vec<_>>(),
        expected,
        "files in {} differ from SHA256SUMS",
        dir.display()
    );

    let mut mismatched = Vec::new();
    for (path, want) in &listed {
        let bytes = std::fs::read(dir.join(path)).unwrap();
        let got: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if &got != want {
            mismatched.push(format!("{path}: {got}, SHA256SUMS says {want}"));
        }
    }
    assert!(
        mismatched.is_empty(),
        "vendored corpus files changed:\n{}",
        mismatched.join("\n")
    );
}

#[test]
fn the_only_rowid_alias_of_the_keys_is_03_05_users_id() {
    let mut aliases = Vec::new();
    for c in all() {
        for (t, alias) in c.tables.iter().zip(rowid_aliases(c)) {
            if let Some(i) = alias {
                aliases.push(format!("{}:{}.{}", c.id, t.name, t.columns[i]));
            }
        }
    }
    // 03-02's `INTEGER PRIMARY KEY DESC` is no alias; 03-01 is WITHOUT ROWID.
    assert_eq!(aliases, ["03-05:users.id"]);
}

#[test]
fn removed_rows_are_the_flagged_the_dropped_and_the_09_01_key_errors() {
    let removed: usize = all()
        .iter()
        .flat_map(|c| c.tables.iter().map(move |t| removed_rows(c, t).count()))
        .sum();
    assert_eq!(removed, 209 + 70 + 1148);
}
