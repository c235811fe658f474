//! The catalogue of application schemas (`recovery/profiles/catalogue/`, issue #35): with
//! page 1 zeroed, a database of a catalogued application gets its tables' names back from
//! its records, and the report names the application; a database no entry describes gets
//! no name from the catalogue.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fixtures::catalogue::{Application, Rows};
use recovery::Outcome;

use crate::{allow_partial, recover_in_process, Scratch, TestResult};

fn catalogue_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("recovery")
        .join("profiles")
        .join("catalogue")
}

/// Every entry of the catalogue, in file name order.
fn entries() -> Vec<Application> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(catalogue_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| Application::parse(&std::fs::read_to_string(f).unwrap()).unwrap())
        .collect()
}

/// The catalogue entry named `name`.
fn entry(name: &str) -> Result<Application, String> {
    entries()
        .into_iter()
        .find(|e| e.name == name)
        .ok_or(format!("no catalogue entry {name}"))
}

/// The first row (by rowid) of `table` in `db`, every value; `None` when SQLite cannot
/// read it.
fn first_row(db: &Path, table: &str) -> Option<Vec<rusqlite::types::Value>> {
    let conn = rusqlite::Connection::open(db).ok()?;
    let mut stmt = conn
        .prepare(&format!("SELECT * FROM \"{table}\" ORDER BY rowid LIMIT 1"))
        .ok()?;
    let n = stmt.column_count();
    stmt.query_row([], |r| (0..n).map(|i| r.get(i)).collect())
        .ok()
}

/// Rows of the source's tables, and of those how many came back in a table of their name.
struct Outcomes {
    rows: u64,
    named: u64,
    /// Tables whose rows did not all come back under their name: name, rows, named.
    short: Vec<(String, u64, u64)>,
    /// Tables of the output named from their records with a name the source lacks.
    wrong: Vec<String>,
    identified: bool,
}

/// Builds version `k` of `entry` (each table's `k`-th version, or its last), each table
/// given `rows`, zeroes page 1, recovers, and counts.
fn zero_page_one(
    dir: &Scratch,
    entry: &Application,
    k: usize,
    rows: Rows,
) -> Result<Outcomes, String> {
    let src = dir.path(&format!("{}-{k}.db", entry.name));
    let dest = dir.path(&format!("{}-{k}-out.db", entry.name));
    let held = entry
        .write(&src, k, 4096, rows, 35 + k as u64)
        .map_err(|e| format!("{}: {e}", entry.name))?;
    // Each table's first row, to tell a table named from its records holds the rows of the
    // source's table of that name (two tables may hold as many rows: a count alone cannot
    // tell their names swapped).
    let first_rows: BTreeMap<String, Option<Vec<rusqlite::types::Value>>> = held
        .keys()
        .map(|t| (t.to_ascii_lowercase(), first_row(&src, t)))
        .collect();
    let mut bytes = std::fs::read(&src).map_err(|e| e.to_string())?;
    fixtures::apply(&mut bytes, &fixtures::Damage::ZeroPage(1)).map_err(|e| e.to_string())?;
    std::fs::write(&src, &bytes).map_err(|e| e.to_string())?;
    let done = recover_in_process(&allow_partial(&src, &dest), Outcome::PartialCommitted)
        .map_err(|e| format!("{}: {e}", entry.name))?;
    let mut out = Outcomes {
        rows: 0,
        named: 0,
        short: Vec::new(),
        wrong: done
            .report
            .tables
            .iter()
            .filter(|t| {
                t.status == reconstruct::TableStatus::Inferred
                    && !t.name.starts_with("salvage_inferred_")
                    && first_rows
                        .get(&t.name.to_ascii_lowercase())
                        .is_none_or(|want| *want != first_row(&dest, &t.name))
            })
            .map(|t| t.name.clone())
            .collect(),
        identified: done
            .report
            .applications
            .iter()
            // The shipped `chroma` profile names a Chroma store of any version.
            .any(|a| entry.name.starts_with(&a.profile)),
    };
    for (table, rows) in held {
        let named = done
            .report
            .tables
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(&table))
            .and_then(|t| t.rows_in_output)
            .unwrap_or(0)
            .min(rows);
        out.rows += rows;
        out.named += named;
        if named < rows {
            out.short.push((table, rows, named));
        }
    }
    Ok(out)
}

/// Every catalogued application's database, each version, with page 1 zeroed. No table is
/// ever given a name its database lacks; the rows come back in tables of their own names
/// where the records single a table out among all the catalogue's (and, once the
/// application is known, among its own); the report names the application wherever a
/// table was named. Where records fit several applications' tables alike (a key and a
/// value; `nssPrivate` and `nssPublic`, one shape in two files), the table keeps its
/// `salvage_inferred_N` name: evidence does not decide. The floors are the figures of
/// 2026-12-07 (docs/profiles.md).
#[test]
fn with_page_one_zeroed_a_catalogued_database_gets_its_names_back() -> TestResult {
    let dir = Scratch::new("catalogue-page-one");
    let mut failures = Vec::new();
    let (mut rows, mut named) = (0u64, 0u64);
    let (mut versions_all, mut whole, mut identified) = (0, 0, 0);
    let mut lines = Vec::new();
    for entry in entries() {
        for k in 0..entry.versions() {
            let o = match zero_page_one(&dir, &entry, k, Rows::Around(60)) {
                Ok(o) => o,
                Err(e) => {
                    failures.push(e);
                    continue;
                }
            };
            versions_all += 1;
            rows += o.rows;
            named += o.named;
            whole += usize::from(o.named * 100 >= o.rows * 99);
            identified += usize::from(o.identified);
            if !o.wrong.is_empty() || (o.named > 0 && !o.identified) {
                failures.push(format!(
                    "{} version {k}: named {:?} (not in its schema), identified: {}",
                    entry.name, o.wrong, o.identified
                ));
            }
            lines.push(format!(
                "{} v{k}: {}/{} rows named{}",
                entry.name,
                o.named,
                o.rows,
                if o.short.is_empty() {
                    String::new()
                } else {
                    format!(
                        ", unnamed {:?}",
                        o.short.iter().map(|s| &s.0).collect::<Vec<_>>()
                    )
                }
            ));
        }
    }
    eprintln!(
        "catalogue: {named} of {rows} rows named; {whole} of {versions_all} databases with 99 % or more; {identified} identified\n{}",
        lines.join("\n")
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(named * 100 >= rows * 97, "{named} of {rows} rows named");
    assert!(
        whole * 100 >= versions_all * 86,
        "{whole} of {versions_all} databases whole"
    );
    Ok(())
}

/// Each table's columns, by name and declared type and in order, of each of `statements`
/// (as SQLite makes them), by the table's name, lower case.
fn columns_of(statements: &[&str]) -> BTreeMap<String, Vec<(String, String)>> {
    let mut shapes = BTreeMap::new();
    for sql in statements {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(sql).unwrap();
        let table: String = conn
            .query_row(
                "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let columns: Vec<(String, String)> = conn
            .prepare("SELECT lower(name), lower(type) FROM pragma_table_info(?1) ORDER BY cid")
            .unwrap()
            .query_map([&table], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        shapes.insert(table.to_ascii_lowercase(), columns);
    }
    shapes
}

/// The versions of `entry` a database of version `tag` cannot be told from: each that
/// writes the same tables, every one of them also in the shape `tag`'s database has
/// (column names and declared types).
fn alike(entry: &Application, tag: &str) -> Vec<String> {
    let mine = columns_of(&entry.statements_of(tag));
    entry
        .tags
        .iter()
        .filter(|other| {
            let theirs: Vec<(String, Vec<(String, String)>)> = entry
                .tables
                .iter()
                .flat_map(|(table, statements)| {
                    statements
                        .iter()
                        .zip(&entry.written_by[table])
                        .filter(|(_, by)| by.is_empty() || by.contains(other))
                        .map(|(sql, _)| columns_of(&[sql]).into_iter().next().unwrap())
                        .collect::<Vec<_>>()
                })
                .collect();
            let names: std::collections::BTreeSet<&String> = theirs.iter().map(|t| &t.0).collect();
            names.len() == mine.len()
                && mine
                    .iter()
                    .all(|(t, c)| theirs.iter().any(|(n, x)| n == t && x == c))
        })
        .cloned()
        .collect()
}

/// Every version of every catalogued application, as SQLite writes it: `inspect` names
/// the application and the version its tables are of, or the versions it cannot be told
/// from (the same tables in the same shapes), never another. With page 1 zeroed, the
/// tables named from their records tell the version alone in three databases of four,
/// and never name a version their database is not.
#[test]
fn each_version_of_an_application_is_told_by_its_tables() -> TestResult {
    let dir = Scratch::new("catalogue-versions");
    let mut failures = Vec::new();
    let (mut databases, mut told, mut zeroed_told, mut zeroed_any) = (0, 0, 0, 0);
    let (mut in_part, mut alike_told) = (Vec::new(), Vec::new());
    for entry in entries() {
        for (k, tag) in entry.tags.iter().enumerate() {
            // A version the catalogue knows only some tables of (those that tell it from
            // the others), not those it is detected by, writes no database of it.
            let tables = columns_of(&entry.statements_of(tag));
            if !entry.detect.iter().all(|t| tables.contains_key(t)) {
                in_part.push(format!("{} {tag}", entry.name));
                continue;
            }
            let src = dir.path(&format!("{}-{k}.db", entry.name));
            let dest = dir.path(&format!("{}-{k}-out.db", entry.name));
            entry.write_version(&src, tag, 4096, Rows::Around(40), 350 + k as u64)?;
            databases += 1;
            let want = alike(&entry, tag);
            let inspected = recovery::inspect::inspect_file(&src, false)?;
            let version = inspected
                .applications
                .iter()
                .find(|a| a.profile == entry.name)
                .and_then(|a| a.version.clone());
            match version {
                Some(v) if v.tags == want && v.unknown.is_empty() => {
                    told += usize::from(want.len() == 1);
                    if want.len() > 1 {
                        alike_told.push(format!("{} {want:?}", entry.name));
                    }
                }
                other => failures.push(format!(
                    "{} {tag}: told {:?}, not {want:?}",
                    entry.name,
                    other.map(|v| (v.tags, v.unknown))
                )),
            }
            let mut bytes = std::fs::read(&src)?;
            fixtures::apply(&mut bytes, &fixtures::Damage::ZeroPage(1))?;
            std::fs::write(&src, &bytes)?;
            let done = recovery::recover(&allow_partial(&src, &dest), &recovery::Quiet)?;
            let version = done
                .report
                .applications
                .iter()
                .find(|a| a.profile == entry.name)
                .and_then(|a| a.version.clone());
            if let Some(v) = version {
                zeroed_any += 1;
                if !v.tags.contains(tag) {
                    failures.push(format!(
                        "{} {tag}, page 1 zeroed: told {:?}",
                        entry.name, v.tags
                    ));
                }
                zeroed_told += usize::from(v.tags == [tag.clone()]);
            }
        }
    }
    eprintln!(
        "versions: {databases} databases, {told} told alone by inspect; page 1 zeroed: {zeroed_any} told, {zeroed_told} alone; known in part: {in_part:?}; alike: {alike_told:?}"
    );
    // As a person reads it: Chromium's Top Sites of version 4 (its `top_sites` had a
    // `redirects` column that version 5 dropped).
    let top_sites = entry("chromium-top-sites")?;
    let src = dir.path("top-sites-4.db");
    top_sites.write_version(&src, "version 4", 4096, Rows::Each(5), 1)?;
    let out = crate::salvage().arg("inspect").arg(&src).output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        text.contains(
            "(profile chromium-top-sites), version 4 (2 tables as it writes them), by its schema"
        ),
        "{text}"
    );
    // A later version the catalogue lacks (a column added to `top_sites`): the nearest
    // versions are named as such, with the table none of them writes.
    let conn = rusqlite::Connection::open(&src)?;
    conn.execute_batch("ALTER TABLE top_sites ADD COLUMN pinned INTEGER")?;
    drop(conn);
    let out = crate::salvage().arg("inspect").arg(&src).output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        text.contains("(profile chromium-top-sites), nearest version")
            && text.contains(
                "the columns of `top_sites` are those of no version it knows: a version the profile lacks"
            ),
        "{text}"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The figures of 2026-12-07: 139 of 141 told alone (the others alike), and with
    // page 1 zeroed 111.
    assert!(told * 100 >= databases * 90, "{told} of {databases}");
    assert!(
        zeroed_told * 4 >= databases * 3,
        "{zeroed_told} of {databases} told with page 1 zeroed"
    );
    Ok(())
}

/// KDE's `ResourceScoreCache` upgraded from KDE 4 has `lastUpdate` before `firstUpdate`; a
/// fresh one the other way round. Both are integers of one range: with page 1 zeroed the
/// records cannot tell which column is which, and the table's reason says so, naming the
/// two columns, rather than giving one statement's names as if decided.
#[test]
fn columns_two_versions_name_otherwise_are_not_decided_by_records() -> TestResult {
    let dir = Scratch::new("catalogue-columns-alike");
    let kde = entry("kde-activities-resources")?;
    let src = dir.path("kde.db");
    let dest = dir.path("kde-out.db");
    kde.write_version(
        &src,
        "upgraded from KDE 4 schema 1.01",
        4096,
        Rows::Around(40),
        7,
    )?;
    let mut bytes = std::fs::read(&src)?;
    fixtures::apply(&mut bytes, &fixtures::Damage::ZeroPage(1))?;
    std::fs::write(&src, &bytes)?;
    let done = recovery::recover(&allow_partial(&src, &dest), &recovery::Quiet)?;
    let cache = done
        .report
        .tables
        .iter()
        .find(|t| t.name == "ResourceScoreCache")
        .ok_or("ResourceScoreCache not named")?;
    let reason = cache.reason.clone().unwrap_or_default();
    assert!(
        reason.contains("`firstUpdate` (there `lastUpdate`)")
            && reason.contains("`lastUpdate` (there `firstUpdate`)")
            && reason.contains("not decided"),
        "{reason}"
    );
    // A table whose statements agree on their names says nothing of the kind.
    let event = done
        .report
        .tables
        .iter()
        .find(|t| t.name == "ResourceEvent")
        .ok_or("ResourceEvent not named")?;
    assert!(
        !event
            .reason
            .clone()
            .unwrap_or_default()
            .contains("not decided"),
        "{:?}",
        event.reason
    );
    Ok(())
}

/// Databases no catalogue entry describes (the differential generator's random schemas,
/// and the test fixtures of other shapes), with page 1 zeroed: no table is given a name
/// from the catalogue, and no application is identified.
#[test]
fn a_database_the_catalogue_lacks_gets_no_name_from_it() -> TestResult {
    let dir = Scratch::new("catalogue-unknown");
    let mut named = Vec::new();
    let mut files = Vec::new();
    let mut no_sequence = Vec::new();
    for seed in 0..24u64 {
        let db = fixtures::random::random_database(0xca7a_0000 + seed, &dir.path(""))
            .map_err(|e| e.to_string())?;
        files.push(db.path);
    }
    for name in [
        "generic-4096-utf8",
        "generic-512-utf16be",
        "messenger-4096-utf8",
    ] {
        let path = dir.path(&format!("{name}.db"));
        let e = fixtures::catalog_entries()
            .into_iter()
            .find(|e| e.name == name)
            .ok_or(name)?;
        std::fs::write(&path, fixtures::build(e.kind, &e.options).bytes)
            .map_err(|e| e.to_string())?;
        files.push(path);
    }
    // Tables of common shapes: a review table (an id, three texts, a real), and a job
    // queue whose two tables have the shapes of an agent store's sessions and messages.
    for (name, sql) in [
        (
            "reviews",
            "CREATE TABLE reviews(id INTEGER PRIMARY KEY, title TEXT, body TEXT, author TEXT, rating REAL);
             WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 60)
             INSERT INTO reviews(title, body, author, rating) SELECT 'title ' || x, 'body ' || x, 'a' || x, x / 7.0 FROM i;",
        ),
        (
            "jobs",
            "CREATE TABLE jobs(id TEXT PRIMARY KEY, queue TEXT NOT NULL, name TEXT, created INTEGER NOT NULL, worker TEXT, attempts INTEGER);
             CREATE TABLE logs(id INTEGER PRIMARY KEY, job_id TEXT NOT NULL, level TEXT NOT NULL, line TEXT, at INTEGER NOT NULL);
             WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 40)
             INSERT INTO jobs SELECT 'job' || x, 'default', 'n' || x, 1700000000 + x, 'w1', x % 3 FROM i;
             WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 300)
             INSERT INTO logs(job_id, level, line, at) SELECT 'job' || (x % 40 + 1), 'info', 'line ' || x, 1700000000 + x FROM i;",
        ),
        // Found by a review: generic stores whose AUTOINCREMENT tables have names some
        // catalogued application also uses (`users` and `messages`, `notes` and `folders`,
        // `users` and `items`): names alone name nothing.
        (
            "chat",
            "CREATE TABLE users(id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, status INTEGER, avatar BLOB);
             CREATE TABLE messages(id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INTEGER NOT NULL, is_read INTEGER, sent INTEGER, date INTEGER, body TEXT);
             CREATE TABLE settings(key TEXT PRIMARY KEY, value TEXT);
             WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 20)
             INSERT INTO users(name, status, avatar) SELECT 'user' || x, x % 2, CAST(printf('%016x', x * 2654435761) AS BLOB) FROM i;
             WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 200)
             INSERT INTO messages(user_id, is_read, sent, date, body) SELECT x % 20 + 1, x % 2, 1, 1700000000 + x * 60, 'hello ' || x FROM i;
             INSERT INTO settings VALUES ('theme', 'dark'), ('lang', 'en');",
        ),
        (
            "notesapp",
            "CREATE TABLE notes(id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT, body TEXT, created INTEGER);
             CREATE TABLE folders(id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT);
             CREATE TABLE settings(key TEXT PRIMARY KEY, value TEXT);
             CREATE TABLE tags(id INTEGER PRIMARY KEY, title TEXT);
             WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 80)
             INSERT INTO notes(title, body, created) SELECT 'note ' || x, 'body ' || x, 1700000000 + x FROM i;
             WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 12)
             INSERT INTO folders(title) SELECT 'folder ' || x FROM i;
             WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 20)
             INSERT INTO settings SELECT 'k' || x, 'v' || x FROM i;
             WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 25)
             INSERT INTO tags(title) SELECT 'tag' || x FROM i;",
        ),
        (
            "shop",
            "CREATE TABLE users(id INTEGER PRIMARY KEY AUTOINCREMENT, username TEXT NOT NULL);
             CREATE TABLE items(id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT, qty INTEGER);
             CREATE TABLE rules(id INTEGER PRIMARY KEY, pattern TEXT, strict INTEGER);
             WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 50)
             INSERT INTO users(username) SELECT 'user' || x FROM i;
             WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 70)
             INSERT INTO items(title, qty) SELECT 'item ' || x, x * 3 FROM i;
             WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 40)
             INSERT INTO rules(pattern, strict) SELECT '^a' || x || '$', x % 2 FROM i;",
        ),
        // One table fitting a catalogued one alone, beside a table of an id, an integer
        // and a blob (and a third whose first field is not NULL): no second piece of
        // evidence.
        (
            "events",
            "CREATE TABLE events(id INTEGER PRIMARY KEY, user_id INTEGER, name TEXT, payload BLOB, score REAL, value, created INTEGER NOT NULL, seq INTEGER);
             CREATE TABLE thumbs(id INTEGER PRIMARY KEY, event_id INTEGER NOT NULL, image BLOB);
             CREATE TABLE log(parent INTEGER, name TEXT, data BLOB);
             WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 60)
             INSERT INTO events(user_id, name, payload, score, value, created, seq) SELECT x % 5, 'event' || x, CAST(printf('%020x', x * 2654435761) AS BLOB), x * 0.25, CASE WHEN x % 2 THEN 'v' || x ELSE x END, 1700000000 + x, x FROM i;
             WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 30)
             INSERT INTO thumbs(event_id, image) SELECT x, CAST(printf('%030x', x * 40503) AS BLOB) FROM i;
             WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 30)
             INSERT INTO log(parent, name, data) SELECT CASE WHEN x IN (10, 20) THEN 3 END, 'line ' || x, CAST(printf('%05x', x) AS BLOB) FROM i;",
        ),
        // The job queue beside a settings table of one row: a single record fits many
        // tables, and is no part of a joint fit.
        (
            "jobs-settings",
            "CREATE TABLE jobs(id TEXT PRIMARY KEY, queue TEXT NOT NULL, name TEXT, created INTEGER NOT NULL, worker TEXT, attempts INTEGER);
             CREATE TABLE logs(id INTEGER PRIMARY KEY, job_id TEXT NOT NULL, level TEXT NOT NULL, line TEXT, at INTEGER NOT NULL);
             CREATE TABLE settings(key TEXT PRIMARY KEY, value TEXT);
             WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 40)
             INSERT INTO jobs SELECT 'job' || x, 'default', 'n' || x, 1700000000 + x, 'w1', x % 3 FROM i;
             WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 300)
             INSERT INTO logs(job_id, level, line, at) SELECT 'job' || (x % 40 + 1), 'info', 'line ' || x, 1700000000 + x FROM i;
             INSERT INTO settings VALUES ('concurrency', '4');",
        ),
        // Words and their counts are no `sqlite_sequence`: its names are tables of the file.
        (
            "words",
            "CREATE TABLE word_counts(word TEXT, n INTEGER);
             INSERT INTO word_counts VALUES ('apple', 3), ('banana', 7), ('cherry', 2), ('date', 9), ('elder', 1);
             CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT, at INTEGER);
             WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 30)
             INSERT INTO notes(body, at) SELECT 'b' || x, x FROM i;",
        ),
        // Records of nine values fit the first nine of a catalogued table of 26 columns:
        // a short record is not eight columns of evidence.
        (
            "short",
            "CREATE TABLE t0(id INTEGER PRIMARY KEY, c0 TEXT, c1 TEXT, c2 INTEGER, c3 TEXT, c4, c5, c6 INTEGER, c7 INTEGER);
             CREATE TABLE t1(id INTEGER PRIMARY KEY, c0 INTEGER);
             WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 13)
             INSERT INTO t0(c0, c1, c2, c3, c4, c5, c6, c7) SELECT 'hello world' || x, 'alpha' || x, x % 5, 'note' || x, CASE WHEN x % 3 THEN 'gamma' || x END, CASE WHEN x % 2 THEN x * 7919 ELSE 'x' || x END, x * 104729, x * 1299709 FROM i;
             INSERT INTO t1(c0) VALUES (289220), (NULL);",
        ),
    ] {
        let path = dir.path(&format!("{name}.db"));
        rusqlite::Connection::open(&path)?.execute_batch(sql)?;
        if !sql.contains("AUTOINCREMENT") {
            no_sequence.push(path.clone());
        }
        files.push(path);
    }
    for src in files {
        let mut bytes = std::fs::read(&src).map_err(|e| e.to_string())?;
        if fixtures::apply(&mut bytes, &fixtures::Damage::ZeroPage(1)).is_err() {
            continue;
        }
        let src0 = src.with_extension("zeroed.db");
        std::fs::write(&src0, &bytes).map_err(|e| e.to_string())?;
        let dest = src.with_extension("out.db");
        let Ok(done) = recovery::recover(&allow_partial(&src0, &dest), &recovery::Quiet) else {
            continue;
        };
        for t in &done.report.tables {
            if t.status == reconstruct::TableStatus::Inferred
                && !t.name.starts_with("salvage_inferred_")
            {
                named.push(format!("{}: {} ({:?})", src.display(), t.name, t.reason));
            }
            // A file without an AUTOINCREMENT table has no `sqlite_sequence`.
            if no_sequence.contains(&src)
                && t.reason
                    .as_deref()
                    .is_some_and(|r| r.contains("sqlite_sequence"))
            {
                named.push(format!("{}: {} ({:?})", src.display(), t.name, t.reason));
            }
        }
        if !done.report.applications.is_empty() {
            named.push(format!(
                "{}: identified {:?}",
                src.display(),
                done.report.applications
            ));
        }
    }
    assert!(named.is_empty(), "{}", named.join("\n"));
    Ok(())
}

/// A record shorter than a known table fits it (columns added by ALTER TABLE since), but it
/// is evidence of the columns it holds only: a table of an id and six common values fits
/// Telegram's `enc_chats` of 19 columns best, and detects nothing.
#[test]
fn a_short_record_is_no_strong_evidence() -> TestResult {
    let dir = Scratch::new("catalogue-short");
    let src = dir.path("short.db");
    rusqlite::Connection::open(&src)?.execute_batch(
        "CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c BLOB, d BLOB, e BLOB, f INTEGER);
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 60)
         INSERT INTO t(a, b, c, d, e, f) SELECT x * 3, 'b' || x, CAST('c' || x AS BLOB),
             CAST('d' || x AS BLOB), CAST('e' || x AS BLOB), x % 5 FROM i;",
    )?;
    let mut bytes = std::fs::read(&src)?;
    fixtures::apply(&mut bytes, &fixtures::Damage::ZeroPage(1)).map_err(|e| e.to_string())?;
    std::fs::write(&src, &bytes)?;
    let done = recover_in_process(
        &allow_partial(&src, &dir.path("out.db")),
        Outcome::PartialCommitted,
    )?;
    let named: Vec<&str> = done
        .report
        .tables
        .iter()
        .map(|t| t.name.as_str())
        .filter(|n| !n.starts_with("salvage_inferred_"))
        .collect();
    assert!(named.is_empty(), "{named:?}");
    assert!(
        done.report.applications.is_empty(),
        "{:?}",
        done.report.applications
    );
    Ok(())
}

/// Identification by the schema takes a table's columns, not its name alone: qutebrowser's
/// `History` is not Mem0's `history`, nor is a shell's full-text `history`.
#[test]
fn a_table_name_alone_identifies_no_application() -> TestResult {
    let dir = Scratch::new("catalogue-names");
    let src = dir.path("history.sqlite");
    rusqlite::Connection::open(&src)?.execute_batch(
        "CREATE TABLE History (url NOT NULL, title NOT NULL, atime NOT NULL, redirect NOT NULL);
         CREATE TABLE CompletionHistory (url PRIMARY KEY, title NOT NULL, last_atime NOT NULL);
         CREATE TABLE CompletionMetaInfo (key PRIMARY KEY, value);
         INSERT INTO History VALUES ('https://example.org', 'x', 1700000000, 0);",
    )?;
    let done = recovery::recover(&allow_partial(&src, &dir.path("out.db")), &recovery::Quiet)?;
    let found: Vec<&str> = done
        .report
        .applications
        .iter()
        .map(|a| a.profile.as_str())
        .collect();
    assert_eq!(found, ["qutebrowser-history"]);
    // A virtual table's columns are not read from its statement: its name alone is no
    // evidence either (Mem0 keeps a `history` table).
    let src = dir.path("shell.sqlite");
    rusqlite::Connection::open(&src)?.execute_batch(
        "CREATE VIRTUAL TABLE history USING fts5(line);
         CREATE TABLE prefs(k TEXT, v TEXT);
         INSERT INTO history VALUES ('ls -la'), ('cd /tmp');
         INSERT INTO prefs VALUES ('prompt', '$');",
    )?;
    let done = recovery::recover(
        &allow_partial(&src, &dir.path("shell.db")),
        &recovery::Quiet,
    )?;
    assert!(
        done.report.applications.is_empty(),
        "{:?}",
        done.report.applications
    );
    Ok(())
}

/// Android's account store is tables of common shapes (an id and a few texts), which fit
/// other applications' tables as well: their shapes alone detect nothing. Its
/// `sqlite_sequence`, on a leaf of its own, lists its AUTOINCREMENT tables by name, and
/// names the application.
#[test]
fn sqlite_sequence_names_an_application_its_shapes_do_not() -> TestResult {
    let dir = Scratch::new("catalogue-sequence");
    let entry = entry("android-accounts-ce")?;
    let o = zero_page_one(&dir, &entry, 0, Rows::Each(60))?;
    assert!(
        o.identified && o.wrong.is_empty(),
        "{:?} {:?}",
        o.short,
        o.wrong
    );
    assert!(o.named >= 300, "{} of {} rows named", o.named, o.rows);
    Ok(())
}

/// Entry `name`'s first version, 60 rows a table, written as `file` in `dir`, page 1
/// zeroed, recovered to `out.db` beside it.
fn first_version_zeroed(
    dir: &Scratch,
    name: &str,
    file: &str,
) -> Result<recovery::Recovery, Box<dyn std::error::Error>> {
    let (src, dest) = (dir.path(file), dir.path("out.db"));
    entry(name)?.write(&src, 0, 4096, Rows::Each(60), 35)?;
    let mut bytes = std::fs::read(&src)?;
    fixtures::apply(&mut bytes, &fixtures::Damage::ZeroPage(1))?;
    std::fs::write(&src, &bytes)?;
    Ok(recover_in_process(
        &allow_partial(&src, &dest),
        Outcome::PartialCommitted,
    )?)
}

/// Entry `name`'s first version with page 1 zeroed: the application identified, no table
/// given a wrong name, and every table named but those of `unnamed`.
fn named_but(name: &str, unnamed: &[&str]) -> TestResult {
    named_but_in(name, 0, unnamed)
}

/// [`named_but`], of the entry's version `k`.
fn named_but_in(name: &str, k: usize, unnamed: &[&str]) -> TestResult {
    let dir = Scratch::new(&format!("catalogue-{name}-{k}"));
    let entry = entry(name)?;
    let o = zero_page_one(&dir, &entry, k, Rows::Each(60))?;
    let short: Vec<&str> = o.short.iter().map(|s| s.0.as_str()).collect();
    assert!(
        o.identified && o.wrong.is_empty() && short == unnamed,
        "{name}: unnamed {short:?}, wrong {:?}, identified {}",
        o.wrong,
        o.identified
    );
    Ok(())
}

/// Chromium's `favicons` and `icon_mapping` are each an id, a URL and an integer: their
/// records fit both alike. Their orphan index trees tell them apart (`icon_mapping` is
/// keyed on its URL and on its icon, `favicons` on its URL alone), rule out tables of
/// other applications that fit `favicon_bitmaps` too, and so name the application.
#[test]
fn index_trees_tell_tables_of_one_shape_apart() -> TestResult {
    named_but("chromium-favicons", &[])
}

/// CrewAI's long-term memory is one table of an id and a few common columns: its shape
/// alone names nothing. Its `sqlite_sequence` row names the table with the largest rowid
/// it was given, and one inferred table has that largest rowid and fits it: the table is
/// named, and the application with it.
#[test]
fn a_sequence_row_names_the_table_of_its_largest_rowid() -> TestResult {
    named_but("crewai-long-term-memory", &[])
}

/// Firefox's form history: `moz_formhistory` fits no other known table, but its other
/// tables are of common shapes, so no second table confirms it. Its three index trees,
/// keyed exactly as its three indexes are, do: the application is detected, and its
/// tables of common shapes are named after it, and so is `moz_history_to_sources`, a
/// WITHOUT ROWID table, from its own tree once the application is known.
#[test]
fn index_trees_keyed_as_its_indexes_detect_an_application() -> TestResult {
    named_but("firefox-formhistory", &[])
}

/// KDE's activity store: its event table and its resource-info table are three texts and
/// two integers each, and its records fit both alike. Every orphan index tree of the file
/// is traced to a table, and none to the event table's records: the resource-info table,
/// whose primary key keeps an index of every row, cannot be theirs, so the event table
/// is, and the application with it.
#[test]
fn an_index_tree_the_file_lacks_rules_its_table_out() -> TestResult {
    named_but("kde-activities-resources", &[])
}

/// CrewAI's kickoff task outputs: one table of seven columns, one short of the eight a
/// table alone needs to name its application; its primary key's index tree, keyed exactly
/// as its index, is the eighth piece of evidence.
#[test]
fn an_index_tree_keyed_as_its_index_is_evidence_as_a_column_is() -> TestResult {
    named_but("crewai-kickoff-task-outputs", &[])
}

/// Android's blocked numbers: `blocked` and `android_metadata` both hold rowids 1 to 60,
/// so the largest rowid its `sqlite_sequence` row gives is two tables'. Only one of them
/// has records that fit a table named `blocked`: that one is named, and the application
/// with it.
#[test]
fn a_sequence_row_names_the_one_table_of_its_rowid_that_fits_the_name() -> TestResult {
    named_but("android-blockednumbers", &[])
}

/// Firefox's permissions store is two tables. Neither is unique in the whole catalogue (a
/// host, a type and five integers fit several applications'). But among the application's
/// own, its two tables are the database's two, and each holds values of the format the
/// application writes there (hosts; URIs): together that detects the application, and
/// both take their names. Its first version stayed unnamed before. (Android's user
/// dictionary, `words` beside `android_metadata`, is not detected so: `android_metadata`
/// is every Android app's, and its locales no evidence of this one.)
#[test]
fn two_tables_holding_their_formats_name_their_application() -> TestResult {
    named_but_in("firefox-permissions", 0, &[])?;
    named_but_in("firefox-permissions", 1, &[])
}

/// Chroma 0.4's collection and segment metadata are one shape: an id, a key and three
/// values, their ids both UUIDs. Each declares a foreign key to another parent:
/// `collection_id` to `collections`, `segment_id` to `segments`, both named from their
/// own records. The ids of one table are keys of its parent and none of the other's, which
/// tells them apart. Both stayed unnamed, their records fitting both names alike. In the
/// later version, `embedding_metadata` fits the shipped `chroma` profile's
/// `embedding_metadata_array` alike, and both refer to `embeddings`: no reference tells
/// them apart, and it stays unnamed.
#[test]
fn tables_of_one_shape_are_told_apart_by_the_keys_they_refer_to() -> TestResult {
    named_but_in("chroma-0-4", 0, &[])?;
    named_but_in("chroma-0-4", 1, &["embedding_metadata"])
}

/// Chromium's top sites: `top_sites` (a URL, a rank and a title) fits no other known table
/// as well, but its other table is a key and a value, as common as a table gets. One
/// table's shape does not identify an application, so neither is named; the table's
/// reason tells the examiner which known table its records fit best, and the profile
/// that names it when asked for.
#[test]
fn a_table_whose_application_is_not_detected_is_told_its_best_fit() -> TestResult {
    let dir = Scratch::new("catalogue-unconfirmed");
    let done = first_version_zeroed(&dir, "chromium-top-sites", "Top Sites")?;
    assert!(
        done.report.applications.is_empty(),
        "{:#?}",
        done.report.applications
    );
    let told: Vec<&str> = done
        .report
        .tables
        .iter()
        .filter(|t| t.name.starts_with("salvage_inferred_"))
        .filter_map(|t| t.reason.as_deref())
        .filter(|r| {
            r.contains("its records fit `top_sites` of profile chromium-top-sites better than any other known table")
                && r.ends_with("(`--profile chromium-top-sites` names it)")
        })
        .collect();
    assert_eq!(told.len(), 1, "{:#?}", done.report.tables);
    Ok(())
}

/// Android's media store: `thumbnails` and `videothumbnails` are each an id, a file path
/// and four integers, and no evidence tells their records apart (the paths of both are
/// paths). Neither name is given, and each of the two tables says which names its records
/// fit alike, so that an examiner knows where to look. The leaf of its `sqlite_sequence` is
/// a table of its own too, and says whose rows it holds.
#[test]
fn a_table_that_fits_two_names_alike_names_both_candidates() -> TestResult {
    let dir = Scratch::new("catalogue-undecided");
    let done = first_version_zeroed(&dir, "android-media", "external.db")?;
    let undecided: Vec<&str> = done
        .report
        .tables
        .iter()
        .filter_map(|t| t.reason.as_deref())
        .filter(|r| {
            r.contains("`thumbnails` and `videothumbnails` of profile android-media alike")
                || r.contains("`videothumbnails` and `thumbnails` of profile android-media alike")
        })
        .collect();
    assert_eq!(undecided.len(), 2, "{:#?}", done.report.tables);
    let sequence = done.report.tables.iter().filter(|t| {
        t.reason
            .as_deref()
            .is_some_and(|r| r.contains("rows of SQLite's own `sqlite_sequence`"))
    });
    assert_eq!(sequence.count(), 1, "{:#?}", done.report.tables);
    Ok(())
}

/// Zeitgeist's lookup tables are each an id and a unique text: their shapes and index
/// trees are one. What tells them apart is what the application writes in them, which its
/// catalogue entry names (`formats`): an actor is an `application://` URI, a MIME type is
/// a MIME type, and the records of `text` have neither format, nor a URI's. Those three are
/// named; `uri`, `interpretation` and `manifestation` all hold URIs, and stay unnamed with
/// the three names as candidates. All six stayed unnamed before.
#[test]
fn tables_of_one_shape_are_told_apart_by_the_format_of_their_values() -> TestResult {
    named_but_in(
        "zeitgeist-activity",
        1,
        &["interpretation", "manifestation", "uri"],
    )
}

/// Firefox's `moz_icons_to_pages` is a WITHOUT ROWID table: its rows are the records of an
/// index b-tree, which no inferred table's rows explain. Once the application is known by
/// its other tables, the tree whose records fit that table alone (full width, each primary
/// key once) is made that table, with its known statement, every row as the source holds
/// it. It went to `lost_and_found`.
#[test]
fn a_without_rowid_table_of_an_identified_application_is_named_from_its_tree() -> TestResult {
    let dir = Scratch::new("catalogue-without-rowid");
    let entry = entry("firefox-favicons")?;
    let (src, dest) = (dir.path("favicons.sqlite"), dir.path("out.db"));
    entry.write(&src, 0, 4096, Rows::Each(60), 35)?;
    let want = crate::recover::rows_of(&src, "moz_icons_to_pages", true);
    assert_eq!(want.len(), 60);
    let mut bytes = std::fs::read(&src)?;
    fixtures::apply(&mut bytes, &fixtures::Damage::ZeroPage(1))?;
    std::fs::write(&src, &bytes)?;
    let done = recover_in_process(&allow_partial(&src, &dest), Outcome::PartialCommitted)?;
    assert_eq!(
        crate::recover::rows_of(&dest, "moz_icons_to_pages", true),
        want
    );
    let t = done
        .table("moz_icons_to_pages")
        .ok_or("moz_icons_to_pages")?;
    assert!(
        t.reason
            .as_deref()
            .is_some_and(|r| r.contains("WITHOUT ROWID") && r.contains("firefox-favicons")),
        "{:?}",
        t.reason
    );
    let sql: String = rusqlite::Connection::open(&dest)?.query_row(
        "SELECT sql FROM sqlite_schema WHERE name = 'moz_icons_to_pages'",
        [],
        |r| r.get(0),
    )?;
    assert!(sql.contains("WITHOUT ROWID"), "{sql}");
    assert_eq!(done.report.lost_and_found.rows, 0);
    Ok(())
}

/// An index keyed on an expression (`upper(title)`) holds entries that trace to no
/// column of its table: with page 1 lost, its tree is an orphan index tree no inferred
/// table explains, as a WITHOUT ROWID table's is. Its entries (text, then a rowid) fit a
/// WITHOUT ROWID table of text and integer the application also knows, which this file
/// lacks; but their last values are the rowids of the inferred `notes` rows, so they are an
/// index's entries, and no `tags` table is made of them.
#[test]
fn an_index_on_an_expression_is_not_taken_for_a_without_rowid_table() -> TestResult {
    let done = notes_under_a_profile(
        "catalogue-expression-index",
        "CREATE INDEX notes_upper ON notes(upper(title))",
        "CREATE TABLE tags(name TEXT PRIMARY KEY, n INTEGER) WITHOUT ROWID",
    )?;
    let names: Vec<&str> = done.report.tables.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"notes"), "{names:?}");
    assert!(!names.contains(&"tags"), "{names:?}");
    Ok(())
}

/// Anki's `deck_config` and `notetypes` are each an id, a name, two integers and a blob:
/// their records fit both alike. `notetypes`' two index trees name its table; the other
/// table, whose records fit `notetypes` as well, has `deck_config` left, the one name of
/// its application its records fit that no other table took. It stayed unnamed.
#[test]
fn a_table_gets_the_one_name_left_when_evidence_gave_the_others_away() -> TestResult {
    let dir = Scratch::new("catalogue-name-left");
    let entry = entry("anki-collection")?;
    let o = zero_page_one(&dir, &entry, 1, Rows::Each(60))?;
    let short: Vec<&str> = o.short.iter().map(|s| s.0.as_str()).collect();
    assert!(
        o.identified && o.wrong.is_empty() && short.is_empty(),
        "unnamed {short:?}, wrong {:?}",
        o.wrong
    );
    Ok(())
}

/// An index on `lower(title)` over titles already in lower case holds the titles as they
/// are: its tree traces to the `title` column, as an index on `title` would. It once ruled
/// its own table out (keyed as none of its indexes on columns), leaving a table of the
/// same columns with an index on `title` to take the name unopposed. Such a tree may be
/// an index on an expression: both tables fit alike, and neither name is given.
#[test]
fn a_tree_of_an_index_on_an_expression_does_not_rule_its_table_out() -> TestResult {
    let done = notes_under_a_profile(
        "catalogue-expression-traced",
        "CREATE INDEX notes_lower ON notes(lower(title))",
        "CREATE TABLE drafts(id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT, created INTEGER); CREATE INDEX drafts_title ON drafts(title)",
    )?;
    let names: Vec<&str> = done.report.tables.iter().map(|t| t.name.as_str()).collect();
    assert!(!names.contains(&"drafts"), "{names:?}");
    let inferred = done
        .report
        .tables
        .iter()
        .find(|t| t.name.starts_with("salvage_inferred_"))
        .ok_or(format!("{names:?}"))?;
    let reason = inferred.reason.as_deref().unwrap_or_default();
    assert!(
        reason.contains("`notes`") && reason.contains("`drafts`"),
        "{reason}"
    );
    Ok(())
}

/// A store of 300 notes (lower-case titles) with index `index`, page 1 zeroed, recovered
/// under a profile that knows `notes` with that index and the table of `other`.
fn notes_under_a_profile(
    name: &str,
    index: &str,
    other: &str,
) -> Result<recovery::Recovery, Box<dyn std::error::Error>> {
    let dir = Scratch::new(name);
    let src = dir.path("notes.db");
    let notes = "CREATE TABLE notes(id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT, created INTEGER)";
    rusqlite::Connection::open(&src)?.execute_batch(&format!(
        "{notes}; {index};
         WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < 300)
         INSERT INTO notes SELECT x, 'title ' || x, 'body of note ' || x, 1700000000 + x FROM i;"
    ))?;
    let mut bytes = std::fs::read(&src)?;
    fixtures::apply(&mut bytes, &fixtures::Damage::ZeroPage(1))?;
    std::fs::write(&src, &bytes)?;
    let profile = dir.path("notes.json");
    let schema = serde_json::json!([format!("{notes}; {index}"), other]);
    std::fs::write(
        &profile,
        serde_json::json!({"name": "notes", "detect": {"tables": ["notes"]}, "schema": schema})
            .to_string(),
    )?;
    let options = recovery::RecoverOptions {
        profile: recovery::ProfileChoice::File(profile),
        ..allow_partial(&src, &dir.path("out.db"))
    };
    Ok(recover_in_process(&options, Outcome::PartialCommitted)?)
}
