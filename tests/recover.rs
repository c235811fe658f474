//! A recovery end to end on fixtures: the output compared row by row with what SQLite read
//! from the healthy database, and the flags and the report checked exactly, in-process
//! through the library; the real binary for its exit codes, refusals and commit protocol.

use recovery::report::{LossReport, ObjectStatus};
use recovery::{LossSignal, Outcome, RecoverOptions, TableStatus};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Output;

use fixtures::{Damage, Fixture, Value};
use rusqlite::Connection;

use crate::{run_salvage, Scratch, TestResult};

/// A damaged copy of a fixture in a scratch folder.
pub struct Case {
    pub dir: Scratch,
    pub src: PathBuf,
    pub dest: PathBuf,
    pub fixture: Fixture,
}

pub fn case(name: &str, fixture: &str, damage: impl Fn(&Fixture) -> Vec<Damage>) -> Case {
    let f = fixtures::build_named(fixture).unwrap_or_else(|| panic!("no fixture {fixture}"));
    let mut bytes = f.bytes.clone();
    for d in damage(&f) {
        fixtures::apply(&mut bytes, &d).unwrap_or_else(|e| panic!("{name}: {d:?}: {e}"));
    }
    let dir = Scratch::new(&format!("recover-{name}"));
    let src = dir.path("evidence.db");
    std::fs::write(&src, &bytes).unwrap();
    let dest = dir.path("out.db");
    Case {
        dir,
        src,
        dest,
        fixture: f,
    }
}

impl Case {
    pub fn recover(&self, extra: &[&str]) -> std::io::Result<Output> {
        let mut args: Vec<&OsStr> = vec![
            OsStr::new("recover"),
            self.src.as_os_str(),
            OsStr::new("-o"),
            self.dest.as_os_str(),
        ];
        args.extend(extra.iter().map(OsStr::new));
        run_salvage(&args)
    }

    /// Runs `recover` with `extra` arguments, checks its exit code, and returns the report.
    pub fn recover_expecting(
        &self,
        extra: &[&str],
        code: i32,
    ) -> std::io::Result<serde_json::Value> {
        crate::recover_expecting(&self.src, &self.dest, extra, code)
    }

    /// The options of `salvage recover SRC -o DEST`.
    pub fn options(&self) -> RecoverOptions {
        RecoverOptions::new(&self.src, &self.dest)
    }

    /// The options of `salvage recover SRC -o DEST --allow-partial`.
    pub fn allow_partial(&self) -> RecoverOptions {
        crate::allow_partial(&self.src, &self.dest)
    }

    /// The loss report a run of the binary wrote beside DEST, typed.
    pub fn typed_report(&self) -> LossReport {
        crate::typed_report_beside(&self.dest)
    }

    pub fn report(&self) -> serde_json::Value {
        let path = self.dir.path("out.db.report.json");
        serde_json::from_slice(
            &std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
        )
        .unwrap()
    }

    pub fn incomplete(&self) -> PathBuf {
        self.dir.path("out.db.incomplete")
    }
}

/// Rows of `table` in `db`, keyed by rowid (or by position for WITHOUT ROWID tables,
/// after sorting), values as SELECT returns them.
pub fn rows_of(db: &Path, table: &str, without_rowid: bool) -> BTreeMap<i64, Vec<Value>> {
    let conn = Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let q = format!("\"{}\"", table.replace('"', "\"\""));
    let sql = if without_rowid {
        format!("SELECT 0, * FROM {q}")
    } else {
        format!("SELECT rowid, * FROM {q}")
    };
    let mut stmt = conn.prepare(&sql).unwrap();
    let n = stmt.column_count();
    let mut rows: Vec<(i64, Vec<Value>)> = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                (1..n)
                    .map(|i| r.get::<_, Value>(i))
                    .collect::<Result<Vec<_>, _>>()?,
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    if without_rowid {
        rows.sort_by(|a, b| format!("{:?}", a.1).cmp(&format!("{:?}", b.1)));
        rows.iter_mut()
            .enumerate()
            .for_each(|(i, r)| r.0 = i as i64);
    }
    rows.into_iter().collect()
}

/// The fixture's rows of `table` in the same form.
pub fn expected_rows(f: &Fixture, table: &str) -> BTreeMap<i64, Vec<Value>> {
    let t = f.table(table).unwrap();
    let mut rows: Vec<(i64, Vec<Value>)> = t
        .rows
        .iter()
        .map(|r| (r.rowid.unwrap_or(0), r.values.clone()))
        .collect();
    if t.without_rowid {
        rows.sort_by(|a, b| format!("{:?}", a.1).cmp(&format!("{:?}", b.1)));
        rows.iter_mut()
            .enumerate()
            .for_each(|(i, r)| r.0 = i as i64);
    }
    rows.into_iter().collect()
}

/// Asserts two row maps are equal, naming only the first difference (a failure must stay
/// readable however large the tables).
#[track_caller]
pub fn assert_same_rows(
    got: &BTreeMap<i64, Vec<Value>>,
    want: &BTreeMap<i64, Vec<Value>>,
    what: &str,
) {
    if got == want {
        return;
    }
    let short = |v: Option<&Vec<Value>>| format!("{v:?}").chars().take(200).collect::<String>();
    let first = got
        .keys()
        .chain(want.keys())
        .find(|k| got.get(k) != want.get(k));
    match first {
        Some(k) => panic!(
            "{what}: {} rows vs {} expected; first difference at rowid {k}: got {} want {}",
            got.len(),
            want.len(),
            short(got.get(k)),
            short(want.get(k))
        ),
        None => panic!("{what}: differ"),
    }
}

/// The rowids of the cells on a table leaf page, by the fixtures' own reader.
/// Every table of the fixture (but `sqlite_sequence`) holds in DEST exactly the rows
/// SQLite read back from the healthy build.
pub fn assert_every_table_as_built(c: &Case, label: &str) {
    for t in c
        .fixture
        .tables
        .iter()
        .filter(|t| t.name != "sqlite_sequence")
    {
        assert_same_rows(
            &rows_of(&c.dest, &t.name, t.without_rowid),
            &expected_rows(&c.fixture, &t.name),
            &format!("{label} {}", t.name),
        );
    }
}

pub fn rowids_on(bytes: &[u8], page: u32) -> Vec<i64> {
    let h = fixtures::format::DatabaseHeader::read(bytes).unwrap();
    let p = fixtures::format::BtreePage::read(bytes, &h, page).unwrap();
    (0..p.cell_count)
        .filter_map(|i| p.cell(i).ok().and_then(|c| c.rowid))
        .collect()
}

fn code(out: &Output) -> Option<i32> {
    out.status.code()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn every_healthy_fixture_is_recovered_completely_row_for_row() -> TestResult {
    for entry in fixtures::catalog_entries() {
        let c = case(entry.name, entry.name, |_| vec![]);
        let done = crate::recover_in_process(&c.options(), Outcome::Complete)?;
        let r = &done.report;
        assert!(r.flags.complete, "{}", entry.name);
        assert!(!r.flags.loss_detected, "{}: {:?}", entry.name, r.evidence);
        assert!(r.flags.verified);
        assert!(r.source.unchanged);
        assert!(!c.incomplete().exists());
        assert_every_table_as_built(&c, entry.name);
        // sqlite_sequence counters survive.
        if let Some(seq) = c.fixture.table("sqlite_sequence") {
            let got = rows_of(&c.dest, "sqlite_sequence", false);
            let mut got: Vec<_> = got.into_values().collect();
            let mut want: Vec<_> = seq.rows.iter().map(|r| r.values.clone()).collect();
            got.sort_by_key(|v| format!("{v:?}"));
            want.sort_by_key(|v| format!("{v:?}"));
            assert_eq!(got, want, "{}", entry.name);
        }
    }
    Ok(())
}

#[test]
fn zeroed_leaf_with_allow_partial_commits_everything_else_and_exits_3() -> TestResult {
    let c = case("zeroed-leaf-partial", "agent-4096-utf8", |f| {
        let leaves = fixtures::table_pages(&f.bytes, f.roots["messages"]).leaves;
        vec![Damage::ZeroPage(leaves[3])]
    });
    let leaf = fixtures::table_pages(&c.fixture.bytes, c.fixture.roots["messages"]).leaves[3];
    let lost = rowids_on(&c.fixture.bytes, leaf);
    assert!(!lost.is_empty());
    c.recover_expecting(&["--allow-partial"], 3)?;
    let r = c.typed_report();
    assert!(r.flags.loss_detected);
    assert!(r.flags.partial);
    assert!(!r.flags.complete);
    assert!(r.flags.verified);
    assert!(r.output.committed);
    let got = rows_of(&c.dest, "messages", false);
    let mut want = expected_rows(&c.fixture, "messages");
    want.retain(|rowid, _| !lost.contains(rowid));
    assert_same_rows(&got, &want, "every intact row, and nothing else");
    // The lost subtree's rowid range is reported.
    let messages = r
        .tables
        .iter()
        .find(|t| t.name == "messages")
        .ok_or("messages")?;
    assert_eq!(messages.lost_subtrees.len(), 1);
    Ok(())
}

#[test]
fn loss_without_allow_partial_withholds_the_output_and_exits_4() -> TestResult {
    let c = case("zeroed-leaf-withheld", "agent-4096-utf8", |f| {
        let leaves = fixtures::table_pages(&f.bytes, f.roots["messages"]).leaves;
        vec![Damage::ZeroPage(leaves[3])]
    });
    c.recover_expecting(&[], 4)?;
    assert!(!c.dest.exists(), "nothing committed");
    assert!(
        c.incomplete().exists(),
        "the result is kept, not thrown away"
    );
    let r = c.typed_report();
    assert!(!r.output.committed);
    assert!(r.flags.loss_detected);
    // A second run refuses to reuse the .incomplete file.
    let again = c.recover(&["--allow-partial"])?;
    assert_eq!(code(&again), Some(2), "{}", stderr(&again));
    assert!(stderr(&again).contains(".incomplete"));
    Ok(())
}

#[test]
fn orphan_leaves_under_a_zeroed_interior_page_go_back_to_their_table() -> TestResult {
    let c = case("zeroed-interior", "agent-512-deep", |f| {
        let walk = fixtures::format::walk_btree(&f.bytes, f.roots["messages"]).0;
        vec![Damage::ZeroPage(walk.pages.interior[1])]
    });
    let done = crate::recover_in_process(&c.allow_partial(), Outcome::PartialCommitted)?;
    let r = &done.report;
    let messages = crate::table(&done, "messages");
    assert!(messages.rows_from_orphans > 0, "{messages:?}");
    assert_eq!(r.lost_and_found.rows, 0, "{:?}", r.lost_and_found);
    // Only the interior page was lost: every row is still on a leaf, and all come back.
    assert_same_rows(
        &rows_of(&c.dest, "messages", false),
        &expected_rows(&c.fixture, "messages"),
        "rows",
    );
    assert!(
        r.flags.loss_detected,
        "rows outside the b-tree are not a clean recovery"
    );
    Ok(())
}

#[test]
fn broken_overflow_chain_gives_null_not_garbage() -> TestResult {
    let c = case("overflow-break", "agent-4096-utf8", |_| {
        vec![Damage::OverflowBreak {
            table: "messages".into(),
        }]
    });
    let done = crate::recover_in_process(&c.allow_partial(), Outcome::PartialCommitted)?;
    let messages = crate::table(&done, "messages");
    // The cut content leaves `timestamp` (NOT NULL, stored after it) without its bytes too:
    // NULL is never allowed there, and nothing is invented, so the row is kept in
    // lost_and_found under the table's root page, with its intact fields.
    assert_eq!(messages.rejected_to_lost_and_found, 1);
    let got = rows_of(&c.dest, "messages", false);
    let want = expected_rows(&c.fixture, "messages");
    assert_eq!(got.len(), want.len() - 1);
    assert!(
        got.iter().all(|(k, v)| want.get(k) == Some(v)),
        "no row differs from the original"
    );
    let (rowid, lost) = want.iter().find(|(k, _)| !got.contains_key(k)).unwrap();
    let conn = Connection::open_with_flags(&c.dest, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let (root, id, c1, c2): (i64, i64, Value, Value) =
        conn.query_row("SELECT rootpgno, id, c1, c2 FROM lost_and_found", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?;
    assert_eq!(root, i64::from(c.fixture.roots["messages"]));
    assert_eq!(id, *rowid);
    assert_eq!(
        (&c1, &c2),
        (&lost[1], &lost[2]),
        "session_id and role intact"
    );
    let content: Value = conn.query_row("SELECT c3 FROM lost_and_found", [], |r| r.get(0))?;
    assert_eq!(
        content,
        Value::Null,
        "the cut content is NULL, not a fragment"
    );
    Ok(())
}

#[test]
fn source_is_never_touched_and_nothing_is_written_beside_it() -> TestResult {
    let c = case("source-untouched", "agent-4096-utf8", |_| vec![]);
    let before = std::fs::read(&c.src)?;
    c.recover_expecting(&[], 0)?;
    assert_eq!(std::fs::read(&c.src)?, before);
    assert_eq!(
        c.dir.listing(),
        vec!["evidence.db", "out.db", "out.db.report.json"]
    );
    let r = c.typed_report();
    assert_eq!(r.source.blake3_before.len(), 64);
    assert_eq!(r.source.blake3_before, r.source.blake3_after);
    Ok(())
}

/// `--history` and `--profile` reach the library from the command line (what each does is
/// tested in-process: `history`, `placeholders`): the report has the history section, and
/// no profile applied.
#[test]
fn the_history_and_profile_arguments_reach_the_library() -> TestResult {
    let c = case("arguments", "agent-512-utf8", |_| vec![]);
    c.recover_expecting(&["--history", "--profile", "none"], 0)?;
    let r = c.typed_report();
    assert!(r.history.is_some());
    assert!(r.placeholders.profiles.is_empty(), "{:?}", r.placeholders);
    // Without them: no history, and the agent profile detected.
    let dest = c.dir.path("default.db");
    crate::recover_expecting(&c.src, &dest, &[], 0)?;
    let r = crate::typed_report_beside(&dest);
    assert!(r.history.is_none());
    assert!(
        r.placeholders
            .profiles
            .iter()
            .any(|[name, _]| name == "agent"),
        "{:?}",
        r.placeholders
    );
    Ok(())
}

#[test]
fn refusals_create_nothing() -> TestResult {
    let c = case("refusals", "agent-512-utf8", |_| vec![]);
    // DEST exists.
    std::fs::write(&c.dest, b"precious")?;
    let out = c.recover(&[])?;
    assert_eq!(code(&out), Some(2));
    assert_eq!(std::fs::read(&c.dest)?, b"precious");
    assert_eq!(c.dir.listing(), vec!["evidence.db", "out.db"]);
    std::fs::remove_file(&c.dest)?;
    // DEST is the source's WAL sidecar.
    let wal = c.dir.path("evidence.db-wal");
    let out = run_salvage(&[
        OsStr::new("recover"),
        c.src.as_os_str(),
        OsStr::new("-o"),
        wal.as_os_str(),
    ])?;
    assert_eq!(code(&out), Some(2), "{}", stderr(&out));
    // DEST is the source itself.
    let out = run_salvage(&[
        OsStr::new("recover"),
        c.src.as_os_str(),
        OsStr::new("-o"),
        c.src.as_os_str(),
    ])?;
    assert_eq!(code(&out), Some(2));
    // SRC missing; DEST folder missing.
    let missing = c.dir.path("nope.db");
    let out = run_salvage(&[
        OsStr::new("recover"),
        missing.as_os_str(),
        OsStr::new("-o"),
        c.dest.as_os_str(),
    ])?;
    assert_eq!(code(&out), Some(2));
    // DEST is a folder: said as such, with the file it should name.
    let out = run_salvage(&[
        OsStr::new("recover"),
        c.src.as_os_str(),
        OsStr::new("-o"),
        c.dir.path("").as_os_str(),
    ])?;
    assert_eq!(code(&out), Some(2));
    assert!(stderr(&out).contains("is a folder"), "{}", stderr(&out));
    assert!(stderr(&out).contains("recovered.db`"), "{}", stderr(&out));
    let nested = c.dir.path("no/such/dir/out.db");
    let out = run_salvage(&[
        OsStr::new("recover"),
        c.src.as_os_str(),
        OsStr::new("-o"),
        nested.as_os_str(),
    ])?;
    assert_eq!(code(&out), Some(2));
    // The report is the output, its `.incomplete`, or a file SQLite writes beside it (the
    // first once failed halfway with "File exists", the second committed both).
    for report in ["out.db", "out.db.incomplete", "out.db-journal"] {
        let report = c.dir.path(report);
        let out = run_salvage(&[
            OsStr::new("recover"),
            c.src.as_os_str(),
            OsStr::new("-o"),
            c.dest.as_os_str(),
            OsStr::new("--report"),
            report.as_os_str(),
        ])?;
        assert_eq!(code(&out), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains("hint:"), "{}", stderr(&out));
    }
    // SRC is a loop of symbolic links (once exit 1).
    let (a, b) = (c.dir.path("loop-a"), c.dir.path("loop-b"));
    std::os::unix::fs::symlink(&b, &a)?;
    std::os::unix::fs::symlink(&a, &b)?;
    let out = run_salvage(&[
        OsStr::new("recover"),
        a.as_os_str(),
        OsStr::new("-o"),
        c.dest.as_os_str(),
    ])?;
    assert_eq!(code(&out), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("loop of symbolic links"),
        "{}",
        stderr(&out)
    );
    assert_eq!(c.dir.listing(), vec!["evidence.db", "loop-a", "loop-b"]);
    Ok(())
}

/// Every row of every output table that shares a table with the fixture is either the
/// original row under its rowid, or that row with some fields NULL (damaged, never
/// invented); returns the rows that match exactly.
fn assert_no_garbage(c: &Case, name: &str) -> u64 {
    assert_no_garbage_in(&c.fixture, &c.dest, name)
}

/// The rows of `dest` registered as rebuilt (partial rows, placeholders), as
/// (lower-cased table, rowid).
pub fn rebuilt_rows(dest: &Path) -> std::collections::BTreeSet<(String, i64)> {
    let mut out = std::collections::BTreeSet::new();
    if let Ok(conn) = Connection::open(dest) {
        for registry in ["salvage_partial_rows", "salvage_placeholders"] {
            let sql = format!("SELECT lower(tbl), rowid FROM {registry} WHERE rowid IS NOT NULL");
            if let Ok(mut stmt) = conn.prepare(&sql) {
                let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)));
                out.extend(rows.into_iter().flatten().flatten());
            }
        }
    }
    out
}

/// [`assert_no_garbage`] for the output `dest` recovered from a damaged `fixture`.
pub fn assert_no_garbage_in(fixture: &Fixture, dest: &Path, name: &str) -> u64 {
    let mut exact = 0;
    let present = |table: &str| {
        Connection::open(dest)
            .and_then(|c| {
                c.query_row(
                    "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?1",
                    [table],
                    |r| r.get::<_, i64>(0),
                )
            })
            .is_ok_and(|n| n > 0)
    };
    // Rows registered as rebuilt (partial rows, placeholders) carry values the evidence
    // or a profile gave, not the file's bytes: they are checked where they are made.
    let registered = rebuilt_rows(dest);
    let mut damaged: std::collections::BTreeSet<(String, i64, String)> = Default::default();
    if let Ok(conn) = Connection::open(dest) {
        let sql = "SELECT lower(tbl), rowid, lower(col) FROM salvage_damaged_fields WHERE rowid IS NOT NULL AND col IS NOT NULL";
        if let Ok(mut stmt) = conn.prepare(sql) {
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)));
            damaged.extend(rows.into_iter().flatten().flatten());
        }
    }
    // A table whose schema row is lost is recovered under an inferred name, not checked here.
    for t in fixture
        .tables
        .iter()
        .filter(|t| t.name != "sqlite_sequence" && present(&t.name))
    {
        let got = rows_of(dest, &t.name, t.without_rowid);
        if t.without_rowid {
            let want: Vec<_> = expected_rows(fixture, &t.name).into_values().collect();
            let same = |v: &Vec<Value>, o: &Vec<Value>| {
                v.len() == o.len() && v.iter().zip(o).all(|(g, o)| g == o || *g == Value::Null)
            };
            for v in got.values() {
                assert!(
                    want.iter().any(|o| same(v, o)),
                    "{name} {}: row not in the original: {v:?}",
                    t.name
                );
                exact += 1;
            }
            continue;
        }
        let want = expected_rows(fixture, &t.name);
        let rebuilt = |rowid: &i64| registered.contains(&(t.name.to_lowercase(), *rowid));
        for (rowid, v) in got.iter().filter(|(r, _)| !rebuilt(r)) {
            let original = want
                .get(rowid)
                .unwrap_or_else(|| panic!("{name} {}: rowid {rowid} never existed", t.name));
            for ((g, o), column) in v.iter().zip(original).zip(&t.columns) {
                assert!(
                    g == o || *g == Value::Null,
                    "{name} {} rowid {rowid}: {g:?} is not {o:?}",
                    t.name
                );
                // A NULL that is damage says so in the output itself.
                let registered =
                    damaged.contains(&(t.name.to_lowercase(), *rowid, column.to_lowercase()));
                assert!(
                    g == o || registered,
                    "{name} {} rowid {rowid}: `{column}` is NULL, was {o:?}, and is not in salvage_damaged_fields",
                    t.name
                );
            }
            exact += u64::from(v == original);
        }
    }
    exact
}

#[test]
fn every_damage_kind_recovers_without_garbage() -> TestResult {
    type Make = fn(&Fixture) -> Vec<Damage>;
    let cases: Vec<(&str, &str, Make)> = vec![
        ("zero-leaf", "agent-4096-utf8", |f| {
            vec![Damage::ZeroPage(
                fixtures::table_pages(&f.bytes, f.roots["messages"]).leaves[2],
            )]
        }),
        ("zero-range", "agent-512-utf8", |f| {
            let l = fixtures::table_pages(&f.bytes, f.roots["messages"]).leaves[10];
            vec![Damage::ZeroPages {
                first: l,
                last: l + 20,
            }]
        }),
        ("random-page", "vector-4096-utf8", |f| {
            vec![Damage::RandomPage {
                page: f.roots["embedding_metadata"],
                seed: 5,
            }]
        }),
        ("truncate", "agent-512-utf8", |f| {
            vec![Damage::TruncateAt(f.bytes.len() as u64 * 2 / 3)]
        }),
        ("page-size", "agent-65536-utf8", |_| {
            vec![Damage::HeaderPageSize(0)]
        }),
        ("encoding", "generic-512-utf16be", |_| {
            vec![Damage::HeaderTextEncoding(0)]
        }),
        ("db-size", "agent-4096-utf8", |_| {
            vec![Damage::HeaderDatabaseSize(7)]
        }),
        ("child-cycle", "agent-512-deep", |_| {
            vec![Damage::ChildPointerCycle {
                table: "messages".into(),
            }]
        }),
        ("overflow-cycle", "agent-4096-utf8", |_| {
            vec![Damage::OverflowCycle {
                table: "messages".into(),
            }]
        }),
        ("overflow-break", "agent-4096-utf8", |_| {
            vec![Damage::OverflowBreak {
                table: "messages".into(),
            }]
        }),
        ("freelist-cycle", "agent-4096-utf8", |_| {
            vec![Damage::FreelistCycle]
        }),
        ("cell-pointer", "agent-4096-utf8", |f| {
            vec![Damage::CellPointerOutOfRange {
                page: fixtures::table_pages(&f.bytes, f.roots["messages"]).leaves[1],
                index: 0,
            }]
        }),
        ("page-one", "agent-512-utf8", |_| vec![Damage::ZeroPage(1)]),
        ("without-rowid-leaf", "generic-512-utf16be", |f| {
            let p = fixtures::table_pages(&f.bytes, f.roots["kv"]);
            vec![Damage::ZeroPage(*p.leaves.get(1).unwrap_or(&p.leaves[0]))]
        }),
        ("autovacuum-leaf", "agent-4096-autovacuum", |f| {
            vec![Damage::ZeroPage(
                fixtures::table_pages(&f.bytes, f.roots["messages"]).leaves[5],
            )]
        }),
    ];
    for (name, fixture, damage) in cases {
        let c = case(&format!("sweep-{name}"), fixture, damage);
        let done = recovery::recover(&c.allow_partial(), &recovery::Quiet)?;
        crate::assert_counts_add_up(&c.dest, &done.report);
        let outcome = done.outcome;
        assert!(
            matches!(outcome, Outcome::Complete | Outcome::PartialCommitted),
            "{name}: {outcome:?}: {:?}",
            done.report.evidence.loss
        );
        let r = &done.report;
        assert!(r.flags.verified, "{name}");
        assert!(r.source.unchanged, "{name}");
        // Damage that loses no row may still be complete (a stale header size); any loss
        // is a partial output committed.
        assert_eq!(
            outcome == Outcome::PartialCommitted,
            r.flags.loss_detected,
            "{name}"
        );
        let exact = assert_no_garbage(&c, name);
        assert!(exact > 0, "{name}: nothing recovered");
    }
    Ok(())
}

#[test]
fn page_one_zeroed_schema_rows_found_elsewhere_put_every_row_back() -> TestResult {
    // At 512-byte pages the schema spans several pages: page 1 is its root.
    let c = case("page-one-scan", "agent-512-utf8", |_| {
        vec![Damage::ZeroPage(1)]
    });
    let done = crate::recover_in_process(&c.allow_partial(), Outcome::PartialCommitted)?;
    assert!(done.report.schema.rows_found_by_scan >= 3);
    for t in ["sessions", "messages", "state_meta"] {
        assert_same_rows(
            &rows_of(&c.dest, t, false),
            &expected_rows(&c.fixture, t),
            t,
        );
    }
    // The freelist is lost with the header: its stale pages do not leak into live tables.
    assert_eq!(
        assert_no_garbage(&c, "page-one-scan"),
        c.fixture
            .tables
            .iter()
            .filter(|t| t.name != "sqlite_sequence")
            .map(|t| t.rows.len() as u64)
            .sum::<u64>()
    );
    Ok(())
}

#[test]
fn page_one_zeroed_with_the_whole_schema_gives_inferred_tables() -> TestResult {
    let c = case("page-one-inferred", "agent-4096-utf8", |_| {
        vec![Damage::ZeroPage(1)]
    });
    // No profile: nothing knows the application's tables.
    let options = RecoverOptions {
        profile: recovery::ProfileChoice::None,
        ..c.allow_partial()
    };
    let done = crate::recover_in_process(&options, Outcome::PartialCommitted)?;
    let inferred: Vec<&recovery::report::TableReport> = done
        .report
        .tables
        .iter()
        .filter(|t| t.status == TableStatus::Inferred)
        .collect();
    assert!(inferred.len() >= 3, "{inferred:?}");
    // The messages rows are all in one inferred table, rowids and values intact (the
    // INTEGER PRIMARY KEY column was stored as NULL: it reads as NULL, the rowid keeps it).
    let messages = expected_rows(&c.fixture, "messages");
    let holder = inferred
        .iter()
        .find(|t| t.rows_written == messages.len() as u64)
        .expect("a table with every message");
    let got = rows_of(&c.dest, &holder.name, false);
    for (rowid, want) in &messages {
        let row = &got[rowid];
        assert_eq!(row[0], Value::Null);
        assert_eq!(&row[1..], &want[1..], "rowid {rowid}");
    }
    crate::assert_signal!(done, LossSignal::TableInferred { .. });
    Ok(())
}

/// With the whole schema lost, the agent profile's known CREATE statements name the
/// tables whose records fit them: every row back in its own table under its own columns
/// (the INTEGER PRIMARY KEY from the rowid), the index the profile knows made again, and
/// the evidence in the report.
#[test]
fn a_profile_that_knows_the_schema_names_the_lost_tables() -> TestResult {
    let c = case("page-one-known", "agent-4096-utf8", |_| {
        vec![Damage::ZeroPage(1)]
    });
    let done = crate::recover_in_process(&c.allow_partial(), Outcome::PartialCommitted)?;
    for t in ["sessions", "messages", "state_meta"] {
        let entry = crate::table(&done, t);
        assert_eq!(entry.status, TableStatus::Inferred, "{entry:?}");
        assert!(
            entry
                .reason
                .as_deref()
                .is_some_and(|r| r.contains("profile agent knows its CREATE statement")),
            "{entry:?}"
        );
        let evidence = &entry.orphan_groups.first().ok_or(t)?.evidence;
        assert!(
            evidence
                .iter()
                .any(|e| e.contains("fit a CREATE statement profile agent knows")),
            "{evidence:?}"
        );
        assert_same_rows(
            &rows_of(&c.dest, t, false),
            &expected_rows(&c.fixture, t),
            t,
        );
    }
    // The dropped table's pages are on the freelist, whose trunk page is found without
    // the header: deleted rows, not a live table.
    let inferred: Vec<&str> = done
        .report
        .tables
        .iter()
        .filter(|t| t.status == TableStatus::Inferred)
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(inferred, ["sessions", "messages", "state_meta"]);
    let conn = Connection::open(&c.dest)?;
    let sql: String = conn.query_row(
        "SELECT sql FROM sqlite_schema WHERE name = 'messages'",
        [],
        |r| r.get(0),
    )?;
    assert!(sql.contains("session_id TEXT NOT NULL"), "{sql}");
    let index = done
        .report
        .schema_objects
        .iter()
        .find(|o| o.name == "idx_messages_session")
        .ok_or("the profile's index")?;
    assert_eq!(index.status, ObjectStatus::Created, "{index:?}");
    crate::assert_signal!(done, LossSignal::TableInferred { .. });
    Ok(())
}

/// A profile file's known schema names a lost table from its records: `notes` (three
/// typed columns) comes back under its name with its index, while the (key, text) table
/// stays inferred although `config` would fit it: a record of one value besides the rowid
/// is next to no evidence (a full-text content table has that shape too).
#[test]
fn a_profile_file_names_a_lost_table_but_not_from_one_value() -> TestResult {
    let dir = crate::Scratch::new("profile-file-schema");
    let src = dir.path("src.db");
    let conn = Connection::open(&src)?;
    conn.execute_batch(
        "CREATE TABLE notes(id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT, created INTEGER);
         CREATE TABLE config(id INTEGER PRIMARY KEY, json TEXT);
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 300)
         INSERT INTO notes SELECT x, 'title ' || x, 'body of note ' || x, 1700000000 + x FROM i;
         INSERT INTO config VALUES (1, '{\"a\": 1}'), (2, '{\"b\": 2}');",
    )?;
    drop(conn);
    let want = rows_of(&src, "notes", false);
    let mut bytes = std::fs::read(&src)?;
    bytes[..4096].fill(0);
    std::fs::write(&src, &bytes)?;
    let profile = dir.path("notes.json");
    std::fs::write(
        &profile,
        r#"{"name": "notes", "detect": {"tables": ["notes"]}, "schema": [
            "CREATE TABLE notes(id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT, created INTEGER); CREATE INDEX notes_title ON notes(title)",
            "CREATE TABLE config(id INTEGER PRIMARY KEY, json TEXT)"]}"#,
    )?;
    let dest = dir.path("out.db");
    let options = RecoverOptions {
        profile: recovery::ProfileChoice::File(profile),
        ..crate::allow_partial(&src, &dest)
    };
    let done = crate::recover_in_process(&options, Outcome::PartialCommitted)?;
    let names: Vec<&str> = done.report.tables.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"notes"), "{names:?}");
    assert!(!names.contains(&"config"), "{names:?}");
    assert_same_rows(&rows_of(&dest, "notes", false), &want, "notes");
    let index: i64 = Connection::open(&dest)?.query_row(
        "SELECT count(*) FROM sqlite_schema WHERE name = 'notes_title'",
        [],
        |r| r.get(0),
    )?;
    assert_eq!(index, 1);
    Ok(())
}

/// A profile's tables are never given to another application's records: the vector
/// store's tables, with its schema lost, hold text, integers and blobs where the agent
/// store's declared types call for others (once named `sessions` and `messages`).
#[test]
fn a_profile_does_not_name_another_applications_tables() -> TestResult {
    for fixture in ["vector-4096-utf8", "generic-4096-utf8", "chat-4096-utf8"] {
        let c = case(&format!("page-one-foreign-{fixture}"), fixture, |_| {
            vec![Damage::ZeroPage(1)]
        });
        let done = crate::recover_in_process(&c.allow_partial(), Outcome::PartialCommitted)?;
        let agent = ["sessions", "messages", "state_meta"];
        for t in &done.report.tables {
            let name = t.name.as_str();
            assert!(
                !agent.contains(&name) || c.fixture.tables.iter().any(|f| f.name == name),
                "{fixture}: `{name}` named from another application's schema: {t:?}"
            );
        }
        assert_no_garbage(&c, fixture);
    }
    Ok(())
}

/// Two tables of one record shape whose schema is lost: their trees hold the same rowids,
/// so they are two inferred tables (once merged into one, the second's rows dropped as
/// key conflicts).
#[test]
fn lost_tables_of_one_shape_stay_apart() -> TestResult {
    let dir = crate::Scratch::new("same-shape-inferred");
    let src = dir.path("src.db");
    let conn = Connection::open(&src)?;
    conn.execute_batch(
        "CREATE TABLE a(name TEXT, n INTEGER); CREATE TABLE b(name TEXT, n INTEGER);
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 400)
         INSERT INTO a SELECT 'alpha ' || x, x FROM i;
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 300)
         INSERT INTO b SELECT 'beta ' || x, x * 7 FROM i;",
    )?;
    let (a, b) = (rows_of(&src, "a", false), rows_of(&src, "b", false));
    drop(conn);
    let mut bytes = std::fs::read(&src)?;
    bytes[..4096].fill(0);
    std::fs::write(&src, &bytes)?;
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(
        &crate::allow_partial(&src, &dest),
        Outcome::PartialCommitted,
    )?;
    let r = &done.report;
    let inferred: Vec<String> = r
        .tables
        .iter()
        .filter(|t| t.status == TableStatus::Inferred)
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(inferred.len(), 2, "{:?}", r.tables);
    let mut got: Vec<BTreeMap<i64, Vec<Value>>> =
        inferred.iter().map(|t| rows_of(&dest, t, false)).collect();
    got.sort_by_key(|rows| std::cmp::Reverse(rows.len()));
    assert_eq!((&got[0], &got[1]), (&a, &b));
    assert_eq!(r.conflicts.count, 0);
    Ok(())
}

/// The same collision in tables whose schema asks SQLite to settle conflicts itself
/// (`ON CONFLICT IGNORE` on the key, `ON CONFLICT REPLACE` on a UNIQUE column, as Android
/// schemas do): a colliding row is never silently dropped or put over a recovered one; it
/// is a conflict kept in `lost_and_found`, and every count says what the table holds (once
/// the ignored rows were counted as written, and replaced rows vanished unreported).
#[test]
fn a_schema_that_ignores_or_replaces_conflicts_does_not_hide_them() -> TestResult {
    let dir = Scratch::new("conflict-clauses");
    let src = dir.path("app.db");
    {
        let conn = Connection::open(&src)?;
        conn.execute_batch(
            "PRAGMA page_size = 4096;
             CREATE TABLE notes(id INTEGER PRIMARY KEY ON CONFLICT IGNORE, body TEXT);
             CREATE TABLE tags(id INTEGER PRIMARY KEY, name TEXT UNIQUE ON CONFLICT REPLACE, note INTEGER);",
        )?;
        let tx = conn.unchecked_transaction()?;
        for i in 0..400i64 {
            tx.execute(
                "INSERT INTO notes(id, body) VALUES (?1, ?2)",
                rusqlite::params![i + 1, format!("note {i} {}", "x".repeat(150))],
            )?;
            tx.execute(
                "INSERT INTO tags(name, note) VALUES (?1, ?2)",
                rusqlite::params![format!("tag-{i}-{}", "y".repeat(120)), i + 1],
            )?;
        }
        tx.commit()?;
    }
    let mut bytes = std::fs::read(&src)?;
    let roots: BTreeMap<String, u32> = {
        let conn = Connection::open(&src)?;
        let mut stmt =
            conn.prepare("SELECT name, rootpage FROM sqlite_schema WHERE type = 'table'")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<Result<_, _>>()?
    };
    // Each table's root lost, and a stale copy of one of its leaves appended.
    for table in ["notes", "tags"] {
        let root = roots[table];
        let leaf = fixtures::table_pages(&bytes, root).leaves[2] as usize;
        let copy = bytes[(leaf - 1) * 4096..leaf * 4096].to_vec();
        bytes.extend_from_slice(&copy);
        let at = (root as usize - 1) * 4096;
        bytes[at..at + 4096].fill(0);
    }
    let pages = (bytes.len() / 4096) as u32;
    bytes[28..32].copy_from_slice(&pages.to_be_bytes());
    std::fs::write(&src, &bytes)?;

    let dest = dir.path("out.db");
    // Also checks every table's rows_in_output against the output's count.
    let done = crate::recover_in_process(
        &crate::allow_partial(&src, &dest),
        Outcome::PartialCommitted,
    )?;
    let r = &done.report;
    for table in ["notes", "tags"] {
        let listed = r
            .conflicts
            .listed
            .iter()
            .filter(|l| l.table == table)
            .count();
        assert!(listed > 3, "{table}: {:?}", r.conflicts);
        let t = crate::table(&done, table);
        assert_eq!(t.conflicts, listed as u64, "{t:?}");
        assert_eq!(t.rows_in_output, Some(400), "{t:?}");
    }
    Ok(())
}

/// A table whose root page is lost, and beside its leaves a stale copy of one of them (a
/// page rewritten elsewhere, its old image left behind): every orphan leaf is given to
/// the table its records fit, and the copy's rows collide with the live ones. Each such
/// row is kept in `lost_and_found` with its values and listed as a conflict (once
/// dropped, named only by its cell).
#[test]
fn rows_that_collide_on_a_key_are_kept() -> TestResult {
    let c = case("conflicts-kept", "agent-4096-utf8", |f| {
        vec![Damage::ZeroPage(f.roots["messages"])]
    });
    let mut bytes = std::fs::read(&c.src)?;
    let leaf =
        fixtures::table_pages(&c.fixture.bytes, c.fixture.roots["messages"]).leaves[3] as usize;
    let copy = bytes[(leaf - 1) * 4096..leaf * 4096].to_vec();
    bytes.extend_from_slice(&copy);
    let pages = (bytes.len() / 4096) as u32;
    bytes[28..32].copy_from_slice(&pages.to_be_bytes());
    std::fs::write(&c.src, &bytes)?;
    let header = fixtures::format::DatabaseHeader::read(&bytes)?;
    let stale = fixtures::format::BtreePage::read(&bytes, &header, pages)?;
    let rowids: Vec<i64> = (0..stale.cell_count)
        .map(|i| stale.cell(i).map(|c| c.rowid.unwrap_or(0)))
        .collect::<Result<_, _>>()?;
    assert!(rowids.len() > 3);

    let done = crate::recover_in_process(&c.allow_partial(), Outcome::PartialCommitted)?;
    let listed = &done.report.conflicts.listed;
    assert_eq!(listed.len(), rowids.len(), "{:?}", done.report.conflicts);
    assert!(listed
        .iter()
        .all(|l| l.table == "messages" && l.kept_in.as_deref() == Some("lost_and_found")));
    crate::assert_signal!(done, LossSignal::KeyConflicts { table, rows } if table == "messages" && *rows == rowids.len() as u64);
    // Each is in lost_and_found with its values, under the table's root page.
    let conn = Connection::open(&c.dest)?;
    let kept: Vec<(i64, String)> = conn
        .prepare("SELECT id, c2 FROM lost_and_found WHERE rootpgno = ?1 ORDER BY id")?
        .query_map([c.fixture.roots["messages"]], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let messages = expected_rows(&c.fixture, "messages");
    assert_eq!(kept.len(), rowids.len());
    for (id, role) in kept {
        assert_eq!(Value::Text(role), messages[&id][2], "row {id}");
    }
    Ok(())
}

/// Records of a table whose schema row is gone (a key/value tree) are never forced into a
/// wide table whose first columns they happen to fit: a record shorter than a table fits
/// it only when ALTER TABLE ADD COLUMN could have added the columns it lacks, and a NOT
/// NULL column without a default never is (once attributed to the wide table, refused by
/// its constraints, and counted as its loss).
#[test]
fn a_short_record_is_not_forced_into_a_wide_table() -> TestResult {
    let dir = crate::Scratch::new("short-records");
    let src = dir.path("src.db");
    let conn = Connection::open(&src)?;
    let wide: Vec<String> = (3..40).map(|i| format!("c{i} INTEGER NOT NULL")).collect();
    conn.execute_batch(&format!(
        "CREATE TABLE wide(a TEXT, b TEXT, {});
         CREATE TABLE kv(key TEXT NOT NULL, value TEXT);
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 300)
         INSERT INTO kv SELECT 'key ' || x, 'value ' || x FROM i;
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 300)
         INSERT INTO wide SELECT 'a' || x, 'b' || x, {} FROM i;
         PRAGMA writable_schema = ON;
         DELETE FROM sqlite_schema WHERE name = 'kv';",
        wide.join(", "),
        vec!["x"; 37].join(", ")
    ))?;
    drop(conn);
    let leaf = fixtures::table_pages(&std::fs::read(&src)?, root_of(&src, "wide")?).leaves[2];
    let mut bytes = std::fs::read(&src)?;
    bytes[(leaf as usize - 1) * 4096..leaf as usize * 4096].fill(0);
    std::fs::write(&src, &bytes)?;
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(
        &crate::allow_partial(&src, &dest),
        Outcome::PartialCommitted,
    )?;
    let wide = crate::table(&done, "wide");
    assert_eq!(wide.rows_from_orphans, 0, "{wide:?}");
    assert_eq!(wide.rejected_to_lost_and_found, 0, "{wide:?}");
    let lost_and_found = &done.report.lost_and_found;
    assert_eq!(lost_and_found.rows, 300, "{lost_and_found:?}");
    Ok(())
}

/// The root page `sqlite_schema` gives a table.
fn root_of(db: &Path, table: &str) -> rusqlite::Result<u32> {
    Connection::open(db)?.query_row(
        "SELECT rootpage FROM sqlite_schema WHERE name = ?1",
        [table],
        |r| r.get(0),
    )
}

/// A serial type changed in place (text to an integer of the same length: the record
/// still adds up) leaves a value SQLite never stores, a number in a TEXT column; so too
/// numeric text in an INTEGER column. Copied as they are, they failed the output's own
/// integrity check, and the whole recovery was withheld (exit 1). Each is a damaged
/// field: NULL, counted, the run goes on. Text that is no number in an INTEGER column is
/// a value SQLite stores, and is kept.
#[test]
fn a_value_no_affinity_allows_is_a_damaged_field() -> TestResult {
    let dir = crate::Scratch::new("affinity-damage");
    let src = dir.path("src.db");
    let conn = Connection::open(&src)?;
    conn.execute_batch(
        "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, n INTEGER);
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 50)
         INSERT INTO t SELECT x, 'row' || x, x FROM i;
         UPDATE t SET name = 'abc', n = CAST('xy' AS BLOB) WHERE id = 7;",
    )?;
    drop(conn);
    let mut bytes = std::fs::read(&src)?;
    #[rustfmt::skip]
    let seven = [
        0x04, 0x00, 0x13, 0x10, // record header: 4 bytes; NULL, text(3), blob(2)
        b'a', b'b', b'c',
    ];
    let at = bytes
        .windows(seven.len())
        .position(|w| w == seven)
        .ok_or("row 7's record")?;
    bytes[at + 2] = 0x03; // text(3) -> a 3-byte integer: "abc" read as 0x616263
    bytes[at + 3] = 0x11; // blob(2) -> text(2): "xy" stays non-numeric, kept
    std::fs::write(&src, &bytes)?;
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(
        &crate::allow_partial(&src, &dest),
        Outcome::PartialCommitted,
    )?;
    let t = crate::table(&done, "t");
    assert_eq!(t.rows_written, 50, "{t:?}");
    assert_eq!(t.rows_damaged, 1, "{t:?}");
    let conn = Connection::open(&dest)?;
    let (name, n): (Option<String>, String) =
        conn.query_row("SELECT name, n FROM t WHERE id = 7", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    assert_eq!((name, n.as_str()), (None, "xy"));
    // The NULL says it is damage, and what the record held.
    let registered: (String, i64, String, String, i64) = conn.query_row(
        "SELECT tbl, rowid, col, reason, original FROM salvage_damaged_fields",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
    )?;
    assert_eq!(
        registered,
        (
            "t".into(),
            7,
            "name".into(),
            "affinity_never_stores".into(),
            0x61_6263
        )
    );
    assert_eq!(done.report.damaged_fields.fields, 1);
    crate::assert_signal!(done, LossSignal::DamagedFields { table, rows } if table == "t" && *rows == 1);
    Ok(())
}

/// Records written before ALTER TABLE ADD COLUMN hold fewer values than the table has
/// columns; when the schema then says the column is NOT NULL with no default (a schema
/// edited, or damaged), such a record reads as NULL there. Copied as they were, they
/// failed the output's own integrity check and the whole recovery was withheld (exit 1);
/// they are refused by the table and kept in `lost_and_found`.
#[test]
fn short_records_a_not_null_column_refuses_are_kept_apart() -> TestResult {
    let dir = crate::Scratch::new("short-not-null");
    let src = dir.path("src.db");
    let conn = Connection::open(&src)?;
    conn.execute_batch(
        "CREATE TABLE t(id INTEGER PRIMARY KEY, a TEXT);
         WITH RECURSIVE i(x) AS (SELECT 1000 UNION ALL SELECT x + 1 FROM i WHERE x < 1039)
         INSERT INTO t SELECT x, 'old ' || x FROM i;
         ALTER TABLE t ADD COLUMN b INTEGER NOT NULL DEFAULT 5;
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 100)
         INSERT INTO t SELECT x, 'new ' || x, x FROM i;
         PRAGMA writable_schema = ON;
         UPDATE sqlite_schema SET sql = 'CREATE TABLE t(id INTEGER PRIMARY KEY, a TEXT, b INTEGER NOT NULL)'
             WHERE name = 't';",
    )?;
    drop(conn);
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(
        &crate::allow_partial(&src, &dest),
        Outcome::PartialCommitted,
    )?;
    let t = crate::table(&done, "t");
    assert_eq!(
        (t.rows_written, t.rejected_to_lost_and_found),
        (100, 40),
        "{t:?}"
    );
    assert_eq!(done.report.lost_and_found.rows, 40);
    Ok(())
}

/// Bytes in a leaf's content area that parse as a cell, where a real cell was overwritten
/// and its pointer lost: a record one value wider than the table, which SQL would take
/// (dropping the extra value). It is no row of the table: kept in `lost_and_found`,
/// never written into the table, and every other row of the leaf is in its table.
#[test]
fn a_cell_found_in_the_content_area_must_fit_its_table() -> TestResult {
    let c = case("unlisted-misfit", "agent-4096-utf8", |_| vec![]);
    let mut bytes = std::fs::read(&c.src)?;
    let leaf = fixtures::table_pages(&c.fixture.bytes, c.fixture.roots["messages"]).leaves[4];
    let header = fixtures::format::DatabaseHeader::read(&bytes)?;
    let page = fixtures::format::BtreePage::read(&bytes, &header, leaf)?;
    let victim = page.cell(0)?;
    let base = (leaf as usize - 1) * 4096;
    #[rustfmt::skip]
    let fake = [
        0x0f,             // payload: 15 bytes
        0x86, 0x8d, 0x20, // rowid 100000
        0x07, 0x00, 0x15, 0x11, 0x00, 0x01, 0x01, // header: NULL, text(4), text(2), NULL, int, int
        b's', b'e', b's', b's', b'a', b'b', 0x05, 0x06,
    ];
    bytes[base + victim.offset..base + victim.offset + fake.len()].copy_from_slice(&fake);
    bytes[base + 8..base + 10].copy_from_slice(&0xfff0u16.to_be_bytes()); // pointer 0: past the page
    std::fs::write(&c.src, &bytes)?;
    let done = crate::recover_in_process(&c.allow_partial(), Outcome::PartialCommitted)?;
    let messages = crate::table(&done, "messages");
    assert_eq!(messages.rejected_to_lost_and_found, 1, "{messages:?}");
    let got = rows_of(&c.dest, "messages", false);
    let want = expected_rows(&c.fixture, "messages");
    assert_eq!(
        got.len(),
        want.len() - 1,
        "only the overwritten row is lost"
    );
    assert!(!got.contains_key(&100_000));
    Ok(())
}

/// A NULL that is damage is told from a NULL that was NULL, with SQL: an overflow page
/// zeroed leaves a row's long text unreadable, NULL in its table and in
/// `salvage_damaged_fields` with its reason. Text overwritten with bytes that are not
/// UTF-8 is the file's bytes, which an application may have written so: kept as it is,
/// and counted in a warning, never registered as damage.
#[test]
fn damaged_fields_are_registered_with_their_reason() -> TestResult {
    let dir = crate::Scratch::new("damaged-fields");
    let src = dir.path("src.db");
    let conn = Connection::open(&src)?;
    conn.execute_batch(
        "CREATE TABLE t(id INTEGER PRIMARY KEY, title TEXT, body TEXT, note TEXT);
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 20)
         INSERT INTO t SELECT x, 'title ' || x, printf('%.5000c', char(64 + x)), NULL FROM i;",
    )?;
    drop(conn);
    let mut bytes = std::fs::read(&src)?;
    // An overflow page of row 3's body ("CCC…") zeroed: the chain ends there.
    let page = bytes
        .chunks(4096)
        .position(|p| p[4..4096].iter().all(|b| *b == b'C'))
        .ok_or("an overflow page of row 3")?;
    bytes[page * 4096..(page + 1) * 4096].fill(0);
    let at = bytes
        .windows(8)
        .position(|w| w == b"title 7G") // its body is "GGG…"
        .ok_or("row 7's title")?;
    bytes[at] = 0xff;
    std::fs::write(&src, &bytes)?;
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(
        &crate::allow_partial(&src, &dest),
        Outcome::PartialCommitted,
    )?;
    let conn = Connection::open(&dest)?;
    let reasons = registered_fields(&conn)?;
    assert!(
        reasons
            .iter()
            .any(|(_, col, why)| col == "body" && why == "unreadable"),
        "{reasons:?} {:?}",
        done.report.tables
    );
    let title: Vec<u8> = conn.query_row(
        "SELECT CAST(title AS BLOB) FROM t WHERE id = 7 AND typeof(title) = 'text'",
        [],
        |r| r.get(0),
    )?;
    assert_eq!(title, b"\xffitle 7");
    assert!(!reasons.iter().any(|(id, _, _)| *id == 7));
    assert_eq!(crate::table(&done, "t").texts_not_in_encoding, 1);
    // Each registered field is NULL in its table; a NULL that was NULL is not registered.
    let not_null: i64 = conn.query_row(
        "SELECT count(*) FROM salvage_damaged_fields d JOIN t ON t.rowid = d.rowid
         WHERE (d.col = 'title' AND t.title IS NOT NULL) OR (d.col = 'body' AND t.body IS NOT NULL)",
        [],
        |r| r.get(0),
    )?;
    assert_eq!(not_null, 0);
    assert!(!reasons.iter().any(|(_, col, _)| col == "note"));
    assert_eq!(done.report.damaged_fields.fields, reasons.len() as u64);
    assert_eq!(
        crate::table(&done, "t").rows_damaged,
        reasons
            .iter()
            .map(|x| x.0)
            .collect::<std::collections::BTreeSet<_>>()
            .len() as u64
    );
    Ok(())
}

/// A table whose schema row is lost comes back under its name when an index whose schema
/// row survives names it: the index entries' rowids are the rows of the orphan b-tree,
/// and their values say which column is which (once `salvage_inferred_1(c0, c1, …)`,
/// every row out of its table). The index is re-created on it.
#[test]
fn a_surviving_index_names_a_table_whose_schema_row_is_lost() -> TestResult {
    let dir = crate::Scratch::new("named-by-index");
    let src = dir.path("src.db");
    let conn = Connection::open(&src)?;
    conn.execute_batch(
        "CREATE TABLE other(k TEXT, v TEXT);
         CREATE TABLE notes(id INTEGER PRIMARY KEY, title TEXT, body TEXT, created INTEGER);
         CREATE INDEX notes_title ON notes(title);
         INSERT INTO other VALUES ('a', 'b');
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 400)
         INSERT INTO notes SELECT x, 'title ' || x, 'body of note ' || x, 1700000000 + x FROM i;",
    )?;
    drop(conn);
    let want = rows_of(&src, "notes", false);
    let mut bytes = std::fs::read(&src)?;
    // The schema cell holding `notes`' CREATE TABLE statement, zeroed.
    crate::zero_schema_cell(&mut bytes, b"CREATE TABLE notes")?;
    std::fs::write(&src, &bytes)?;
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(
        &crate::allow_partial(&src, &dest),
        Outcome::PartialCommitted,
    )?;
    let notes = crate::table(&done, "notes");
    assert_eq!(
        notes.status,
        TableStatus::Inferred,
        "{:?}",
        done.report.tables
    );
    assert!(
        notes
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("notes_title")),
        "{notes:?}"
    );
    assert_named_column(&dest, ("notes", "title", 1), &want)?;
    let conn = Connection::open(&dest)?;
    let index: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = 'notes_title'",
        [],
        |r| r.get(0),
    )?;
    assert_eq!(index, 1, "{:?}", done.report.schema_objects);
    Ok(())
}

/// Two tables lose their schema rows, and an index of one survives. Both hold its
/// entries' rowids (each table's rowids are 1 to N), so the rowids do not say which table
/// is the index's: the key values do. The index's table is named, the other keeps an
/// inferred name (found by a review: the table created second, of more rows, took the
/// name, and the named table's own rows went to `salvage_inferred_1`).
#[test]
fn a_surviving_index_names_the_table_its_key_values_are_in() -> TestResult {
    let dir = crate::Scratch::new("named-by-index-values");
    let src = dir.path("src.db");
    let conn = Connection::open(&src)?;
    conn.execute_batch(
        "CREATE TABLE t_a(id INTEGER PRIMARY KEY, x TEXT);
         CREATE TABLE t_b(id INTEGER PRIMARY KEY, y INTEGER, z TEXT);
         CREATE INDEX idx_a ON t_a(x);
         WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 50)
         INSERT INTO t_a(x) SELECT 'name ' || n FROM i;
         WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 80)
         INSERT INTO t_b(y, z) SELECT n * 7, 'zz ' || n FROM i;",
    )?;
    drop(conn);
    let want = rows_of(&src, "t_a", false);
    let mut bytes = std::fs::read(&src)?;
    crate::zero_schema_cell(&mut bytes, b"CREATE TABLE t_a")?;
    crate::zero_schema_cell(&mut bytes, b"CREATE TABLE t_b")?;
    std::fs::write(&src, &bytes)?;
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(
        &crate::allow_partial(&src, &dest),
        Outcome::PartialCommitted,
    )?;
    let t_a = crate::table(&done, "t_a");
    assert!(
        t_a.reason.as_deref().is_some_and(|r| r.contains("idx_a")),
        "{:?}",
        done.report.tables
    );
    assert_named_column(&dest, ("t_a", "x", 1), &want)
}

/// The rows of `table` in `dest`, named by an index: as many as `want` holds, and in each
/// the text of `column` (position `at` of the source's row) the source's.
fn assert_named_column(
    dest: &Path,
    (table, column, at): (&str, &str, usize),
    want: &BTreeMap<i64, Vec<Value>>,
) -> TestResult {
    let got: Vec<(i64, String)> = Connection::open(dest)?
        .prepare(&format!(
            "SELECT rowid, {column} FROM {table} ORDER BY rowid"
        ))?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    assert_eq!(got.len(), want.len());
    for (rowid, text) in &got {
        assert_eq!(Value::Text(text.clone()), want[rowid][at], "row {rowid}");
    }
    Ok(())
}

/// `dir/src.db` made by `sql` (rows 1 to 9 of `t`, each with a long body followed by
/// `tag-N`), with the last overflow page of row 5 (the end of its body, then its tag)
/// overwritten with `z`.
fn tag_overwritten(
    dir: &crate::Scratch,
    sql: &str,
) -> Result<std::path::PathBuf, Box<dyn std::error::Error>> {
    let src = dir.path("src.db");
    Connection::open(&src)?.execute_batch(sql)?;
    let mut bytes = std::fs::read(&src)?;
    let page = bytes
        .chunks(4096)
        .position(|p| p.windows(9).any(|w| w == b"aaaatag-5"))
        .ok_or("row 5's last overflow page")?;
    bytes[page * 4096 + 4..(page + 1) * 4096].fill(b'z');
    std::fs::write(&src, &bytes)?;
    Ok(src)
}

/// An overflow page overwritten with other bytes leaves no structural trace: the row
/// decodes whole, with wrong values (once written as data, `rows_damaged` 0). The table's
/// own index entry for the row holds a second copy of the keyed column: where it
/// disagrees, its value is written and the value read is registered
/// (`disagrees_with_index`). The unindexed column it also overwrote stays as read: nothing
/// in the file can tell.
#[test]
fn a_value_its_index_entry_contradicts_is_corrected_and_registered() -> TestResult {
    let dir = crate::Scratch::new("index-witness");
    let src = tag_overwritten(
        &dir,
        "CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT, tag TEXT);
         CREATE INDEX t_tag ON t(tag);
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 9)
         INSERT INTO t SELECT x, printf('%.5000c', 'a'), 'tag-' || x FROM i;",
    )?;
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(
        &crate::allow_partial(&src, &dest),
        Outcome::PartialCommitted,
    )?;
    let conn = Connection::open(&dest)?;
    let tag: String = conn.query_row("SELECT tag FROM t WHERE id = 5", [], |r| r.get(0))?;
    assert_eq!(tag, "tag-5");
    let registered: (i64, String, String, String) = conn.query_row(
        "SELECT rowid, col, reason, original FROM salvage_damaged_fields",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    )?;
    assert_eq!(
        registered,
        (
            5,
            "tag".into(),
            "disagrees_with_index".into(),
            "zzzzz".into()
        )
    );
    assert_eq!(crate::table(&done, "t").rows_damaged, 1);
    let integrity: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    assert_eq!(integrity, "ok");
    Ok(())
}

/// The same in a table with a column named `rowid` that holds another row's rowid: the
/// correction goes to the row the index entry names, not to the row whose column holds
/// that number.
#[test]
fn a_contradicted_value_is_corrected_in_its_own_row_beside_a_column_named_rowid() -> TestResult {
    let dir = crate::Scratch::new("index-witness-rowid-column");
    let src = tag_overwritten(
        &dir,
        "CREATE TABLE t(rowid INTEGER, body TEXT, tag TEXT);
         CREATE INDEX t_tag ON t(tag);
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 9)
         INSERT INTO t(_rowid_, rowid, body, tag)
             SELECT x, x + 4, printf('%.5000c', 'a'), 'tag-' || x FROM i;",
    )?;
    let dest = dir.path("out.db");
    crate::recover_in_process(
        &crate::allow_partial(&src, &dest),
        Outcome::PartialCommitted,
    )?;
    let conn = Connection::open(&dest)?;
    let rows: Vec<(i64, i64, String)> = conn
        .prepare("SELECT _rowid_, rowid, tag FROM t ORDER BY _rowid_")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let want: Vec<(i64, i64, String)> = (1..=9).map(|x| (x, x + 4, format!("tag-{x}"))).collect();
    assert_eq!(rows, want);
    let registered: i64 = conn.query_row(
        "SELECT rowid FROM salvage_damaged_fields WHERE reason = 'disagrees_with_index'",
        [],
        |r| r.get(0),
    )?;
    assert_eq!(registered, 5);
    Ok(())
}

/// The same, with the index keyed on the rowid alias too and a column before the long
/// one: the values the bulk writer kept of each row read from overflow pages (the alias
/// is the rowid, stored as NULL in the record) are those SQLite reads back, which debug
/// builds check row by row.
#[test]
fn kept_keys_with_the_rowid_alias_find_the_contradicted_value() -> TestResult {
    let dir = crate::Scratch::new("index-witness-alias");
    let src = tag_overwritten(
        &dir,
        "CREATE TABLE t(id INTEGER PRIMARY KEY, n INTEGER, body TEXT, tag TEXT);
         CREATE INDEX t_tag ON t(tag, id, n);
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 9)
         INSERT INTO t SELECT x, x * 10, printf('%.5000c', 'a'), 'tag-' || x FROM i;",
    )?;
    let dest = dir.path("out.db");
    crate::recover_in_process(
        &crate::allow_partial(&src, &dest),
        Outcome::PartialCommitted,
    )?;
    let conn = Connection::open(&dest)?;
    let rows: Vec<(i64, i64, String)> = conn
        .prepare("SELECT id, n, tag FROM t ORDER BY id")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    let expected: Vec<(i64, i64, String)> =
        (1..=9).map(|x| (x, x * 10, format!("tag-{x}"))).collect();
    assert_eq!(rows, expected);
    let registered: Vec<(i64, String)> = conn
        .prepare("SELECT rowid, col FROM salvage_damaged_fields")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    assert_eq!(registered, vec![(5, "tag".to_string())]);
    Ok(())
}

/// An overflow pointer damaged to lead to a b-tree page, as a chain's last page: the chain
/// reads whole, and the page's bytes once became the row's last values, written as data.
/// A last page whose next pointer is not 0 does not end a chain as SQLite ends one: the
/// values read from it are NULL and registered (`overflow_page_suspect`, with the bytes
/// read).
#[test]
fn values_read_from_a_page_that_ends_no_chain_are_registered() -> TestResult {
    let dir = crate::Scratch::new("suspect-overflow");
    let src = dir.path("src.db");
    let conn = Connection::open(&src)?;
    conn.execute_batch(
        "CREATE TABLE t(id INTEGER PRIMARY KEY, body TEXT, tag TEXT);
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 9)
         INSERT INTO t SELECT x, printf('%.9000c', 'a'), 'tag-' || x FROM i;",
    )?;
    let root: i64 = conn.query_row(
        "SELECT rootpage FROM sqlite_schema WHERE name = 't'",
        [],
        |r| r.get(0),
    )?;
    drop(conn);
    let mut bytes = std::fs::read(&src)?;
    let page_of = |bytes: &[u8], pattern: &[u8]| {
        bytes
            .chunks(4096)
            .position(|p| p.windows(pattern.len()).any(|w| w == pattern))
    };
    // Row 5's last overflow page, and the page before it in the chain.
    let last = page_of(&bytes, b"aaaatag-5").ok_or("row 5's last page")? as u32 + 1;
    let before = bytes
        .chunks(4096)
        .position(|p| p[..4] == last.to_be_bytes())
        .ok_or("the page before it")?;
    bytes[before * 4096..before * 4096 + 4].copy_from_slice(&(root as u32).to_be_bytes());
    std::fs::write(&src, &bytes)?;
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(
        &crate::allow_partial(&src, &dest),
        Outcome::PartialCommitted,
    )?;
    let conn = Connection::open(&dest)?;
    let tag: Option<String> = conn.query_row("SELECT tag FROM t WHERE id = 5", [], |r| r.get(0))?;
    assert_eq!(tag, None);
    let reasons = registered_fields(&conn)?;
    assert_eq!(
        reasons,
        vec![
            (5, "body".into(), "overflow_page_suspect".into()),
            (5, "tag".into(), "overflow_page_suspect".into())
        ]
    );
    assert_eq!(crate::table(&done, "t").rows_damaged, 1);
    Ok(())
}

/// Values of zeros (`zeroblob(N)`, a buffer allocated to be filled later, text padded
/// with NULs) end their overflow chain on a page of nothing but zeros. A healthy database
/// of them, at every page size, is read row for row as SQLite reads it: complete, exit 0,
/// no page called zeroed and no field damaged. A wiped last page stays lost when a value
/// begins on it, which nothing vouches for: here a text after a value of zeros (a wiped
/// page after a value that was not zeros: `zeroed_last_overflow_page_is_missing_not_zeros`,
/// `pager`).
#[test]
fn values_of_zeros_that_end_on_a_page_of_zeros_are_read_as_written() -> TestResult {
    let dir = crate::Scratch::new("zero-values");
    for page_size in [512, 1024, 4096, 65536] {
        let src = dir.path(&format!("src-{page_size}.db"));
        let conn = Connection::open(&src)?;
        conn.execute_batch(&format!(
            "PRAGMA page_size = {page_size};
             CREATE TABLE t(id INTEGER PRIMARY KEY, data BLOB, padded TEXT, v, n INTEGER);
             CREATE INDEX t_padded ON t(padded);
             WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 40)
             INSERT INTO t SELECT x, zeroblob(x * {page_size} / 7), NULL, NULL, x FROM i;
             WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 12)
             INSERT INTO t SELECT 100 + x,
               CAST(randomblob(x * 10) || zeroblob({page_size} + x * {page_size} / 3) AS BLOB),
               NULL, NULL, 1 FROM i;
             WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 12)
             INSERT INTO t SELECT 150 + x, NULL,
               'head ' || CAST(zeroblob({page_size} + x * {page_size} / 5) AS TEXT), NULL, 0 FROM i;
             INSERT INTO t VALUES (200, zeroblob(3 * {page_size}), NULL, NULL, NULL);
             INSERT INTO t VALUES (300, zeroblob(3 * {page_size}), NULL, 'ZZZZ', NULL);
             INSERT INTO t VALUES (400, zeroblob(3 * {page_size}), NULL, NULL, 0);"
        ))?;
        drop(conn);
        let inspected = crate::run_salvage(&["inspect".as_ref(), src.as_os_str()])?;
        let said = String::from_utf8_lossy(&inspected.stdout);
        assert!(said.contains("verdict: healthy"), "{page_size}: {said}");
        let dest = dir.path(&format!("out-{page_size}.db"));
        let done = crate::recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Complete)?;
        assert!(
            done.verdict().complete,
            "{page_size}: {:?}",
            done.report.evidence
        );
        assert_eq!(crate::table(&done, "t").rows_damaged, 0, "{page_size}");
        assert_same_rows(
            &rows_of(&dest, "t", false),
            &rows_of(&src, "t", false),
            &format!("{page_size}"),
        );
        if page_size != 4096 {
            continue;
        }
        // Row 300's last page: zeros but for its text, 'ZZZZ'. Wiped, nothing vouches for
        // a value that begins on it: not read as NULs, nor the blob as whole, both NULL
        // and registered.
        let mut bytes = std::fs::read(&src)?;
        let last = bytes
            .chunks(4096)
            .position(|p| {
                let marks: Vec<usize> = (0..p.len()).filter(|&i| p[i] != 0).collect();
                marks.len() == 4 && marks.iter().all(|&i| p[i] == 0x5a) && marks[3] - marks[0] == 3
            })
            .ok_or("row 300's last page")?;
        bytes[last * 4096..(last + 1) * 4096].fill(0);
        let wiped = dir.path("wiped.db");
        std::fs::write(&wiped, &bytes)?;
        let dest = dir.path("out-wiped.db");
        crate::recover_in_process(
            &crate::allow_partial(&wiped, &dest),
            Outcome::PartialCommitted,
        )?;
        let conn = Connection::open(&dest)?;
        let (data, v): (Option<Vec<u8>>, Option<String>) =
            conn.query_row("SELECT data, v FROM t WHERE id = 300", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?;
        assert_eq!((data, v), (None, None));
        let reasons = registered_fields(&conn)?;
        assert!(
            reasons.iter().any(|r| r.0 == 300 && r.1 == "v"),
            "{reasons:?}"
        );
    }
    Ok(())
}

/// SQLite stores whatever bytes an application binds as text (Latin-1 through the UTF-8
/// API, a lone surrogate from a UTF-16 string) and reads them back as they are. A healthy
/// UTF-8 database holding such text is recovered byte for byte, type for type, indexes and
/// all: complete, exit 0, the texts counted in a warning, no field damaged. In a UTF-16
/// file SQL cannot write such text back as the same bytes: each is NULL, registered
/// (`text_not_in_encoding`) with its exact bytes.
#[test]
fn text_not_valid_in_its_encoding_is_kept_as_sqlite_keeps_it() -> TestResult {
    let dir = crate::Scratch::new("raw-text");
    for (encoding, bad) in [
        ("UTF-8", ["x'ff00fe41'", "x'c3'", "x'6361666580'"]),
        ("UTF-16le", ["x'00d84100'", "x'00dc'", "x'41003fd8'"]),
    ] {
        let utf8 = encoding == "UTF-8";
        let src = dir.path(&format!("src-{encoding}.db"));
        let conn = Connection::open(&src)?;
        conn.execute_batch(&format!(
            "PRAGMA encoding = '{encoding}';
             CREATE TABLE t(id INTEGER PRIMARY KEY, a TEXT, b BLOB, c, n INTEGER);
             CREATE INDEX t_a ON t(a);
             WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 50)
             INSERT INTO t SELECT x, 'fine ' || x, NULL, NULL, x FROM i;
             INSERT INTO t VALUES (100, CAST({0} AS TEXT), CAST({1} AS TEXT),
                                  CAST({2} AS TEXT), CAST({1} AS TEXT));
             INSERT INTO t VALUES (101, CAST({2} AS TEXT), 'ok', 1, 2);",
            bad[0], bad[1], bad[2]
        ))?;
        drop(conn);
        let dest = dir.path(&format!("out-{encoding}.db"));
        let (outcome, options) = if utf8 {
            (Outcome::Complete, RecoverOptions::new(&src, &dest))
        } else {
            (Outcome::PartialCommitted, crate::allow_partial(&src, &dest))
        };
        let done = crate::recover_in_process(&options, outcome)?;
        let r = &done.report;
        let t = crate::table(&done, "t");
        let exact = |db: &Path, sql: &str| -> rusqlite::Result<Vec<(i64, String)>> {
            let conn = Connection::open(db)?;
            let mut stmt = conn.prepare(sql)?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect()
        };
        if utf8 {
            assert!(r.flags.complete, "{:?}", r.evidence);
            assert_eq!(t.rows_damaged, 0);
            assert_eq!(t.texts_not_in_encoding, 5);
            assert!(
                r.warnings
                    .iter()
                    .any(|w| w.contains("5 text values not valid")),
                "{:?}",
                r.warnings
            );
            let rows = "SELECT id, typeof(a) || hex(a) || typeof(b) || hex(b) || typeof(c)
                               || hex(c) || typeof(n) || hex(n) FROM t ORDER BY id";
            assert_eq!(exact(&dest, rows)?, exact(&src, rows)?);
        } else {
            assert_eq!((t.rows_damaged, t.texts_not_in_encoding), (2, 0));
            let registered = exact(
                &dest,
                "SELECT rowid, col || ' ' || reason || ' ' || hex(original)
                   FROM salvage_damaged_fields ORDER BY rowid, col",
            )?;
            let want = [
                (100, "a", 0),
                (100, "b", 1),
                (100, "c", 2),
                (100, "n", 1),
                (101, "a", 2),
            ]
            .map(|(id, col, i)| {
                let hex = bad[i].trim_start_matches("x'").trim_end_matches('\'');
                (
                    id,
                    format!("{col} text_not_in_encoding {}", hex.to_uppercase()),
                )
            });
            assert_eq!(registered, want);
        }
    }
    Ok(())
}

/// A file from an older SQLite holds text in a numeric column that SQLite now converts
/// on the way in (`'1\0'` in an INTEGER column stayed text before 3.44): its own
/// `quick_check` today reports "TEXT value in t.n". It is the file's bytes, kept as they
/// are: the output verifies, the run is complete, and a warning names the column.
#[test]
fn text_an_older_sqlite_kept_in_a_numeric_column_is_kept_and_verifies() -> TestResult {
    let dir = crate::Scratch::new("older-text");
    let src = dir.path("src.db");
    crate::older_sqlite_text(&src)?;
    let conn = Connection::open(&src)?;
    let said: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
    assert_eq!(said, "TEXT value in t.n", "the file as this SQLite sees it");
    let lines = conn
        .prepare("PRAGMA quick_check(100000)")?
        .query_map([], |r| r.get::<_, String>(0))?
        .count();
    assert_eq!(lines, 1200);
    drop(conn);
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Complete)?;
    let r = &done.report;
    assert!(r.flags.complete, "{:?}", r.evidence);
    assert!(
        r.warnings.iter().any(|w| w.contains("(t.n)")),
        "{:?}",
        r.warnings
    );
    let conn = Connection::open(&dest)?;
    let kept: (String, String) =
        conn.query_row("SELECT typeof(n), hex(n) FROM t WHERE id = 1", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    assert_eq!(kept, ("text".into(), "3100".into()));
    Ok(())
}

/// A next-page pointer damaged to lead into the middle of another row's chain, where the
/// lengths agree: both chains read whole and end as SQLite ends one, and the second row
/// once got the first row's text as its own. An overflow page two chains claim may be
/// either row's: in both rows the values read from it are NULL and registered
/// (`overflow_page_suspect`), the other rows untouched.
#[test]
fn values_read_from_a_page_two_chains_claim_are_registered() -> TestResult {
    let dir = crate::Scratch::new("contested-overflow");
    let src = dir.path("src.db");
    let conn = Connection::open(&src)?;
    conn.execute_batch(
        "CREATE TABLE t(id INTEGER PRIMARY KEY, tag TEXT, body TEXT);
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 6)
         INSERT INTO t SELECT x, 'tag-' || x, printf('%.10000c', char(96 + x)) FROM i;",
    )?;
    drop(conn);
    let mut bytes = std::fs::read(&src)?;
    // A row's two overflow pages: the one whose next pointer is 0 is its last.
    let pages_of = |bytes: &[u8], c: u8| -> Vec<usize> {
        bytes
            .chunks(4096)
            .enumerate()
            .filter(|(_, p)| p[4..].iter().all(|b| *b == c))
            .map(|(i, _)| i)
            .collect()
    };
    let split = |pages: Vec<usize>, bytes: &[u8]| {
        let last = *pages
            .iter()
            .find(|p| bytes[**p * 4096..**p * 4096 + 4] == [0; 4])
            .unwrap();
        let first = *pages.iter().find(|p| **p != last).unwrap();
        (first, last)
    };
    let (_, b_last) = split(pages_of(&bytes, b'b'), &bytes);
    let (c_first, _) = split(pages_of(&bytes, b'c'), &bytes);
    // Row 3's first overflow page now leads to row 2's last one.
    bytes[c_first * 4096..c_first * 4096 + 4].copy_from_slice(&(b_last as u32 + 1).to_be_bytes());
    std::fs::write(&src, &bytes)?;
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(
        &crate::allow_partial(&src, &dest),
        Outcome::PartialCommitted,
    )?;
    let conn = Connection::open(&dest)?;
    let bodies: Vec<(i64, Option<String>)> = conn
        .prepare("SELECT id, body FROM t ORDER BY id")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (id, body) in &bodies {
        let want =
            (*id != 2 && *id != 3).then(|| char::from(96 + *id as u8).to_string().repeat(10000));
        assert_eq!(body, &want, "row {id}");
    }
    let reasons = registered_fields(&conn)?;
    assert_eq!(
        reasons,
        vec![
            (2, "body".into(), "overflow_page_suspect".into()),
            (3, "body".into(), "overflow_page_suspect".into())
        ]
    );
    let tags: i64 = conn.query_row("SELECT count(*) FROM t WHERE tag IS NOT NULL", [], |r| {
        r.get(0)
    })?;
    assert_eq!(tags, 6);
    assert_eq!(crate::table(&done, "t").rows_damaged, 2);
    Ok(())
}

#[test]
fn loss_bounds_contain_the_true_number_of_lost_rows() -> TestResult {
    type Make = fn(&Fixture) -> Vec<Damage>;
    let cases: Vec<(&str, &str, Make)> = vec![
        ("bounds-leaf", "agent-4096-utf8", |f| {
            vec![Damage::ZeroPage(
                fixtures::table_pages(&f.bytes, f.roots["messages"]).leaves[6],
            )]
        }),
        ("bounds-leaves", "agent-512-deep", |f| {
            let l = fixtures::table_pages(&f.bytes, f.roots["messages"]).leaves;
            vec![
                Damage::ZeroPage(l[3]),
                Damage::ZeroPage(l[50]),
                Damage::RandomPage {
                    page: l[400],
                    seed: 2,
                },
            ]
        }),
        ("bounds-interior", "agent-512-deep", |f| {
            vec![Damage::ZeroPage(
                fixtures::format::walk_btree(&f.bytes, f.roots["messages"])
                    .0
                    .pages
                    .interior[2],
            )]
        }),
    ];
    for (name, fixture, damage) in cases {
        let c = case(name, fixture, damage);
        let done = crate::recover_in_process(&c.allow_partial(), Outcome::PartialCommitted)?;
        let truth = (expected_rows(&c.fixture, "messages").len()
            - rows_of(&c.dest, "messages", false).len()) as u64;
        let m = crate::table(&done, "messages");
        let lost = m.lost_rows.as_ref().ok_or(name)?;
        let lower = lost.lower_bound;
        assert!(
            lower <= truth,
            "{name}: lower bound {lower} above the {truth} rows lost"
        );
        if let Some(upper) = lost.upper_bound {
            assert!(
                truth <= upper,
                "{name}: {truth} rows lost, above the upper bound {upper}"
            );
        }
        // Every lost row here had an index entry: the proof is exact.
        assert_eq!(lost.proven_by_index, truth, "{name}");
    }
    // A healthy database: nothing lost, nothing bounded, complete.
    let c = case("bounds-healthy", "agent-512-deep", |_| vec![]);
    let done = crate::recover_in_process(&c.options(), Outcome::Complete)?;
    assert!(done.report.tables.iter().all(|t| t.lost_rows.is_none()));
    assert!(done.verdict().complete);
    Ok(())
}

/// The last leaf of an AUTOINCREMENT table is its hot end: the lost range above the last
/// surviving divider is open at its top, and only `sqlite_sequence` closes it. One store is
/// UTF-16BE, so the counter's table name is decoded, not compared as bytes.
#[test]
fn sqlite_sequence_bounds_the_loss_at_the_hot_end_of_a_table() -> TestResult {
    let table = "items";
    for fixture in ["generic-512-utf16be", "generic-1024-autovacuum"] {
        let name = format!("bounds-sequence-{fixture}");
        let c = case(&name, fixture, |f| {
            let leaves = fixtures::table_pages(&f.bytes, f.roots[table]).leaves;
            assert!(leaves.len() > 2, "{table} fits one page");
            vec![Damage::ZeroPage(*leaves.last().unwrap())]
        });
        // Without partial rows, the table holds exactly the rows that survived whole.
        let options = RecoverOptions {
            partial_rows: false,
            ..c.allow_partial()
        };
        let done = crate::recover_in_process(&options, Outcome::PartialCommitted)?;
        let truth =
            (expected_rows(&c.fixture, table).len() - rows_of(&c.dest, table, false).len()) as u64;
        assert!(truth > 0, "{name}");
        let t = crate::table(&done, table);
        let lost = t.lost_rows.as_ref().ok_or(name.clone())?;
        let upper = lost
            .upper_bound
            .unwrap_or_else(|| panic!("{name}: {lost:?}"));
        assert!(lost.lower_bound <= truth, "{name}: {lost:?}");
        assert!(truth <= upper, "{name}: {truth} lost, above {lost:?}");
        assert!(
            lost.evidence.iter().any(|e| e.contains("sqlite_sequence")),
            "{name}: {lost:?}"
        );
    }
    Ok(())
}

/// `sqlite_stat1`'s count from the last ANALYZE is shown beside the bounds as a hint: how
/// many rows the table held then, against how many came back.
#[test]
fn the_last_analyze_count_is_reported_as_a_hint() -> TestResult {
    let f = fixtures::build_named("agent-4096-utf8").unwrap();
    let dir = Scratch::new("recover-stat1");
    let src = dir.path("evidence.db");
    std::fs::write(&src, &f.bytes)?;
    Connection::open(&src)?.execute_batch("ANALYZE")?;
    let mut bytes = std::fs::read(&src)?;
    let leaf = fixtures::table_pages(&bytes, f.roots["messages"]).leaves[6];
    fixtures::apply(&mut bytes, &Damage::ZeroPage(leaf))?;
    std::fs::write(&src, &bytes)?;
    let dest = dir.path("out.db");
    let options = RecoverOptions {
        partial_rows: false,
        ..crate::allow_partial(&src, &dest)
    };
    let done = crate::recover_in_process(&options, Outcome::PartialCommitted)?;
    let total = expected_rows(&f, "messages").len();
    let got = rows_of(&dest, "messages", false).len();
    let m = crate::table(&done, "messages");
    let hint = format!(
        "sqlite_stat1 counted {total} rows at the last ANALYZE; {got} are recovered, {} fewer",
        total - got
    );
    let lost = m.lost_rows.as_ref().ok_or("messages lost rows")?;
    assert!(
        lost.evidence.iter().any(|e| e.contains(&hint)),
        "{hint}\n{lost:?}"
    );
    Ok(())
}

/// A parent row's count of its children (the agent profile's `message_count`) shows how
/// many children of surviving parents did not come back: a hint beside the bounds.
#[test]
fn counts_kept_in_parent_rows_are_reported_as_a_hint() -> TestResult {
    let c = case("parent-count", "agent-4096-utf8", |f| {
        vec![Damage::ZeroPage(
            fixtures::table_pages(&f.bytes, f.roots["messages"]).leaves[6],
        )]
    });
    let options = RecoverOptions {
        partial_rows: false,
        ..c.allow_partial()
    };
    let done = crate::recover_in_process(&options, Outcome::PartialCommitted)?;
    let truth =
        expected_rows(&c.fixture, "messages").len() - rows_of(&c.dest, "messages", false).len();
    let m = crate::table(&done, "messages");
    let hint = format!("count {truth} more `messages` rows in `message_count`");
    let lost = m.lost_rows.as_ref().ok_or("messages lost rows")?;
    assert!(
        lost.evidence.iter().any(|e| e.contains(&hint)),
        "{hint}\n{lost:?}"
    );
    Ok(())
}

/// Healthy databases that SQLite reads without complaint and that once failed: 500 rows
/// of an indexed 0/1 flag (serial types 8 and 9 were ordered as equal: the output failed
/// its own integrity check, exit 1), and 9 rows of indexed 3,000-character text (the
/// index's last entry fell on a leaf boundary: a panic, exit 101). Each recovers whole,
/// and every index lists its rows in SQLite's order.
#[test]
fn indexed_flags_and_leaf_boundaries_recover_completely() -> TestResult {
    let dir = Scratch::new("recover-bulk-index-edges");
    type MakeValue = Box<dyn Fn(i64) -> Value>;
    let cases: [(&str, &str, MakeValue, i64); 2] = [
        (
            "flags",
            "CREATE TABLE m(id INTEGER PRIMARY KEY, t INTEGER, txt TEXT); CREATE INDEX m_t ON m(t);",
            Box::new(|i| Value::Integer((i * 7919 % 13) & 1)),
            500,
        ),
        (
            "long-text",
            "CREATE TABLE m(id INTEGER PRIMARY KEY, t TEXT, txt TEXT); CREATE INDEX m_t ON m(t);",
            Box::new(|i| Value::Text(i.to_string().repeat(3000))),
            9,
        ),
    ];
    for (name, schema, value, rows) in cases {
        let src = dir.path(&format!("{name}.db"));
        let dest = dir.path(&format!("{name}.out.db"));
        let conn = Connection::open(&src)?;
        conn.execute_batch(schema)?;
        for i in 0..rows {
            conn.execute(
                "INSERT INTO m(t, txt) VALUES (?1, ?2)",
                rusqlite::params![value(i), format!("row {i}")],
            )?;
        }
        drop(conn);
        crate::recover_in_process(&RecoverOptions::new(&src, &dest), Outcome::Complete)?;
        assert_eq!(
            rows_of(&src, "m", false),
            rows_of(&dest, "m", false),
            "{name}"
        );
        let by_index = |db: &Path| -> rusqlite::Result<Vec<(Value, i64)>> {
            let conn = Connection::open(db)?;
            let mut stmt = conn.prepare("SELECT t, id FROM m INDEXED BY m_t WHERE t IS NOT NULL OR t IS NULL ORDER BY t, id")?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect()
        };
        assert_eq!(by_index(&src)?, by_index(&dest)?, "{name}: index order");
        let lookups: i64 = Connection::open(&dest)?.query_row(
            "SELECT count(*) FROM m AS a WHERE (SELECT count(*) FROM m INDEXED BY m_t WHERE t = a.t) = 0",
            [],
            |r| r.get(0),
        )?;
        assert_eq!(lookups, 0, "{name}: every row is found through the index");
    }
    Ok(())
}

/// Damage inside leaves whose tree is whole leaves every cell in the content area: cell
/// pointers that land inside their cells (once exit 1: a misread key refused by the
/// INTEGER PRIMARY KEY ended the run; then garbage keys in `lost_and_found` and 6 % of
/// rows lost), cell counts zeroed (once no sign at all, then 6 % of rows lost), a pointer
/// past its page's end (once counted as a row lost). Every row comes back, once, the
/// damage is named on the table, and the partial output commits. A cell whose bytes are
/// gone as well as its pointer is lost, and the bounds hold the truth.
#[test]
fn damage_inside_leaves_is_counted_and_never_ends_the_run() -> TestResult {
    type Make = fn(&Fixture) -> Vec<Damage>;
    let leaves = |f: &Fixture| fixtures::table_pages(&f.bytes, f.roots["messages"]).leaves;
    let cases: Vec<(&str, Make)> = vec![
        ("leaf-pointers-shifted", |f| {
            let l = fixtures::table_pages(&f.bytes, f.roots["messages"]).leaves;
            (3..8)
                .map(|i| Damage::CellPointersShifted {
                    page: l[i],
                    seed: i as u64,
                })
                .collect()
        }),
        ("leaf-count-zeroed", |f| {
            let l = fixtures::table_pages(&f.bytes, f.roots["messages"]).leaves;
            (3..8).map(|i| Damage::CellCountZeroed(l[i])).collect()
        }),
        ("leaf-pointer-past-end", |f| {
            let l = fixtures::table_pages(&f.bytes, f.roots["messages"]).leaves;
            vec![Damage::CellPointerOutOfRange {
                page: l[4],
                index: 0,
            }]
        }),
    ];
    // A signal of the table `messages`. `LossSignal` has no accessor for the table a
    // variant names; every variant about a table serializes it as `table`.
    let on_messages = |done: &recovery::Recovery| {
        done.signals()
            .iter()
            .any(|s| serde_json::to_value(s).is_ok_and(|v| v["table"] == "messages"))
    };
    for (name, damage) in cases {
        let c = case(name, "agent-4096-utf8", damage);
        assert!(leaves(&c.fixture).len() > 8);
        let done = crate::recover_in_process(&c.allow_partial(), Outcome::PartialCommitted)?;
        assert!(
            on_messages(&done),
            "{name}: no signal names `messages`: {:?}",
            done.report.evidence
        );
        assert_eq!(
            rows_of(&c.dest, "messages", false),
            expected_rows(&c.fixture, "messages"),
            "{name}: every row, once, as written"
        );
        assert_eq!(lost_and_found_rows(&c.dest)?, 0, "{name}: no garbage kept");
    }

    // The first cell of a leaf zeroed, its pointer sent past the page's end.
    let c = case("leaf-cell-gone", "agent-4096-utf8", |_| vec![]);
    let leaf = leaves(&c.fixture)[4];
    let mut bytes = std::fs::read(&c.src)?;
    let header = fixtures::format::DatabaseHeader::read(&bytes)?;
    let cell = fixtures::format::BtreePage::read(&bytes, &header, leaf)?.cell(0)?;
    let payload = cell.payload.ok_or("a leaf cell has a payload")?;
    let end = payload.local_offset
        + payload.local_len
        + if payload.first_overflow.is_some() {
            4
        } else {
            0
        };
    let base = (leaf as usize - 1) * 4096;
    bytes[base + cell.offset..base + end].fill(0);
    bytes[base + 8..base + 10].copy_from_slice(&0xfff0u16.to_be_bytes());
    std::fs::write(&c.src, &bytes)?;
    let done = crate::recover_in_process(&c.allow_partial(), Outcome::PartialCommitted)?;
    assert!(
        on_messages(&done),
        "no signal names `messages`: {:?}",
        done.report.evidence
    );
    let expected = expected_rows(&c.fixture, "messages");
    let got = rows_of(&c.dest, "messages", false);
    assert_eq!(expected.len() - got.len(), 1, "one row lost");
    let lost = crate::table(&done, "messages")
        .lost_rows
        .as_ref()
        .ok_or("messages lost rows")?;
    assert_eq!(lost.lower_bound, 1, "{lost:?}");
    assert!(lost.upper_bound.is_none_or(|u| u >= 1), "{lost:?}");
    Ok(())
}

/// Rows in `lost_and_found`, 0 when the output has none.
fn lost_and_found_rows(db: &Path) -> rusqlite::Result<i64> {
    let conn = Connection::open(db)?;
    let exists: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_schema WHERE name = 'lost_and_found'",
        [],
        |r| r.get(0),
    )?;
    if exists == 0 {
        return Ok(0);
    }
    conn.query_row("SELECT count(*) FROM lost_and_found", [], |r| r.get(0))
}

/// Root pages swapped in `sqlite_schema` (an anti-forensic edit), between tables of
/// different shapes and between a table and an index: each table is filled from the
/// b-tree its records fit, every row of the store comes back in its own table (once each
/// table's rows went into the other, refused or mangled, and parents were fabricated), and
/// the report says which tree moved and why.
#[test]
fn swapped_root_pages_go_back_to_the_tables_their_records_fit() -> TestResult {
    let cases = [
        ("roots-tables", "agent-4096-utf8", "sessions", "state_meta"),
        (
            "roots-index",
            "agent-4096-utf8",
            "sessions",
            "idx_messages_session",
        ),
        ("roots-wide", "chat-4096-utf8", "message", "kvtable"),
        (
            "roots-joins",
            "chat-4096-utf8",
            "attachment",
            "chat_message_join",
        ),
    ];
    for (name, fixture, a, b) in cases {
        let c = case(name, fixture, |_| {
            vec![Damage::RootPagesSwapped {
                a: a.into(),
                b: b.into(),
            }]
        });
        let done = crate::recover_in_process(&c.allow_partial(), Outcome::PartialCommitted)?;
        assert_every_table_as_built(&c, name);
        crate::assert_signal!(done, LossSignal::TreeMoved { table, .. } if table == a);
        assert_eq!(done.report.placeholders.made.count, 0, "{name}");
    }
    Ok(())
}

/// Two tables of one shape and the same rowids, one with an index of its rowid alias
/// alone: when the other table's own index refutes its tree (its rows edited in place,
/// their index entries not), that rowid index holds the tree's rowids as it holds any
/// tree's, and is no proof that the rows are its table's. The tree is not moved to it
/// (once it was, and the table's own rows went to an inferred table); each table keeps
/// the tree its schema row names, and the run reports the loss.
#[test]
fn an_index_of_the_rowid_alone_is_no_witness_that_a_tree_is_its_tables() -> TestResult {
    let dir = Scratch::new("rowid-index-witness");
    let src = dir.path("two.db");
    let conn = rusqlite::Connection::open(&src)?;
    conn.execute_batch(
        "CREATE TABLE a(id INTEGER PRIMARY KEY, x TEXT);
         CREATE TABLE b(id INTEGER PRIMARY KEY, x TEXT);
         CREATE INDEX a_x ON a(x);
         CREATE INDEX b_id ON b(id);
         WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 150)
         INSERT INTO a SELECT n, printf('arow-%04d', n) FROM i;
         WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 150)
         INSERT INTO b SELECT n, printf('brow-%04d', n) FROM i;",
    )?;
    let root: i64 = conn.query_row(
        "SELECT rootpage FROM sqlite_schema WHERE name = 'a'",
        [],
        |r| r.get(0),
    )?;
    let root = usize::try_from(root)?;
    drop(conn);
    // `a`'s rows, on its one leaf, edited in place: its index still names the old values.
    let mut bytes = std::fs::read(&src)?;
    let leaf = &mut bytes[(root - 1) * 4096..root * 4096];
    let mut edited = 0;
    for at in 0..leaf.len() - 5 {
        if &leaf[at..at + 5] == b"arow-" {
            leaf[at] = b'z';
            edited += 1;
        }
    }
    assert_eq!(edited, 150);
    std::fs::write(&src, &bytes)?;
    let dest = dir.path("out.db");
    crate::recover_in_process(
        &crate::allow_partial(&src, &dest),
        recovery::Outcome::PartialCommitted,
    )?;
    let conn = rusqlite::Connection::open(&dest)?;
    let rows = |table: &str| -> rusqlite::Result<Vec<String>> {
        conn.prepare(&format!("SELECT x FROM {table} ORDER BY id"))?
            .query_map([], |r| r.get(0))?
            .collect()
    };
    let own =
        |prefix: &str| -> Vec<String> { (1..=150).map(|n| format!("{prefix}-{n:04}")).collect() };
    assert_eq!(rows("b")?, own("brow"));
    assert_eq!(rows("a")?, own("zrow"));
    Ok(())
}

/// An in-header database size below the file's, kept valid by the version-valid-for
/// number: SQLite would read only that many pages; every page is read, every row comes
/// back, and the report says what the header claimed.
#[test]
fn a_header_that_understates_the_size_hides_no_page() -> TestResult {
    let c = case("header-understated", "agent-4096-utf8", |_| {
        vec![Damage::HeaderDatabaseSize(50)]
    });
    let done = crate::recover_in_process(&c.options(), Outcome::Complete)?;
    for t in ["sessions", "messages", "state_meta"] {
        assert_same_rows(
            &rows_of(&c.dest, t, false),
            &expected_rows(&c.fixture, t),
            t,
        );
    }
    let pages = c.fixture.bytes.len() / 4096;
    let warning =
        format!("the header declares 50 pages but the file holds {pages}: all {pages} were read");
    let warnings = &done.report.warnings;
    assert!(
        warnings.iter().any(|w| w.contains(&warning)),
        "{warnings:?}"
    );
    Ok(())
}

/// The rows of the output's `salvage_damaged_fields`: rowid, column and reason, in rowid
/// and column order.
fn registered_fields(conn: &Connection) -> rusqlite::Result<Vec<(i64, String, String)>> {
    conn.prepare("SELECT rowid, col, reason FROM salvage_damaged_fields ORDER BY rowid, col")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect()
}

/// With page 1 zeroed, a WITHOUT ROWID table's b-tree is an index b-tree no schema row
/// names and no table's rowids explain: its records are kept in `lost_and_found`, as
/// SQLite's `.recover` keeps them, not taken for an index and left out.
#[test]
fn a_without_rowid_tables_records_survive_page_one_lost() -> TestResult {
    let dir = Scratch::new("without-rowid-page-one");
    let src = dir.path("kv.db");
    rusqlite::Connection::open(&src)?.execute_batch(
        "CREATE TABLE kv(k TEXT PRIMARY KEY, v INTEGER) WITHOUT ROWID;
         CREATE TABLE t(id INTEGER PRIMARY KEY, x TEXT);
         CREATE INDEX t_x ON t(x);
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 300)
         INSERT INTO kv SELECT 'key' || x, x FROM i;
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 50)
         INSERT INTO t SELECT x, 'v' || x FROM i;",
    )?;
    let mut bytes = std::fs::read(&src)?;
    fixtures::apply(&mut bytes, &fixtures::Damage::ZeroPage(1)).map_err(|e| e.to_string())?;
    std::fs::write(&src, &bytes)?;
    let dest = dir.path("out.db");
    let done = crate::recover_in_process(
        &crate::allow_partial(&src, &dest),
        recovery::Outcome::PartialCommitted,
    )?;
    let conn = rusqlite::Connection::open(&dest)?;
    let kept: i64 = conn.query_row(
        "SELECT count(*) FROM lost_and_found WHERE c0 LIKE 'key%' AND c1 = CAST(substr(c0, 4) AS INTEGER)",
        [],
        |r| r.get(0),
    )?;
    assert_eq!(kept, 300);
    // The index of `t` traces to its rows: index data, not kept as rows.
    assert_eq!(done.report.lost_and_found.rows, 300);
    Ok(())
}
