//! `recover --provenance`: what every row of a recovered rowid table is and where it was
//! read, in `salvage_provenance`; and per table a view of its rows together with the
//! deleted records carved for it and the versions the logs hold of it
//! (`salvage_rows_TABLE`), each row with its status and its place in the evidence.
//!
//! The load notes the page and cell offset of each row it writes (`recover::whence`); a row
//! taken back and written again is noted again, and the last note wins. What the rebuild
//! made (placeholders, partial rows) and the fields registered as damaged are read from
//! their registries when the table is written.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use pager::PageNo;
use reconstruct::TableId;

use crate::base::error::Error;
use crate::base::output::{quote, Output};
use crate::recover::evidence::{Evidence, EvidenceFiles};
use crate::recover::rebuild::Rebuilt;
use crate::recover::times::{time_columns, TimeColumn};
use crate::recover::whence::{reached_text, Place, Reached};
use crate::report::provenance::{ProvenanceReport, TimeSpan};

/// The provenance step: `salvage_provenance` and the row views, written once every other
/// registry is (the views read them), its report in the ledger, its names taken.
pub fn step(
    files: &EvidenceFiles,
    evidence: &Evidence<'_>,
    rebuilt: &mut Rebuilt,
) -> Result<(), Error> {
    let Some(places) = rebuilt.work.whence.take() else {
        return Ok(());
    };
    let images = Images::of(files, evidence);
    let registries = Registries::of(rebuilt);
    let work = &mut rebuilt.work;
    let times = time_columns(&work.out.conn, &work.out.registries())
        .map_err(Error::db("finding the time columns"))?;
    let mut taken = work.names.taken().clone();
    let name = work.out.registry_name("salvage_provenance", &taken);
    taken.insert(name.to_lowercase());
    let mut report = ProvenanceReport {
        registry: Some(name.clone()),
        ..ProvenanceReport::default()
    };
    let dberr = Error::db("writing where each row was read");
    let tables: Vec<(String, String)> = work
        .tables
        .filled()
        .filter_map(|(t, s)| Some((t.name.clone(), s.rowid_name()?.to_string())))
        .collect();
    write_registry(
        &work.out,
        &name,
        (&places, &images),
        &work.tables,
        &registries,
        &tables,
    )
    .map_err(&dberr)?;
    let count = |sql: &str| -> rusqlite::Result<u64> {
        work.out
            .conn
            .query_row(
                &format!("SELECT count(*) FROM {} {sql}", quote(&name)),
                [],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n.max(0) as u64)
    };
    report.rows = count("").map_err(&dberr)?;
    report.rows_placed = count("WHERE page IS NOT NULL").map_err(&dberr)?;
    for (table, rowid_name) in &tables {
        let view = work
            .out
            .registry_name(&format!("salvage_rows_{table}"), &taken);
        taken.insert(view.to_lowercase());
        let of_table: Vec<&TimeColumn> = times.iter().filter(|t| &t.table == table).collect();
        let decoding = (&registries, of_table.as_slice());
        row_view(&work.out, (table, rowid_name), &view, &name, decoding).map_err(&dberr)?;
        report.views.insert(table.clone(), view);
        for t in of_table {
            report.times.push(span(&work.out, t).map_err(&dberr)?);
        }
    }
    for n in report.registry.iter().chain(report.views.values()) {
        work.names.take(n);
    }
    work.ledger.provenance = Some(report);
    Ok(())
}

/// Which file each page image the load read is in: the main file, a frame of the
/// write-ahead log, or the rollback journal (rolled back); told by where its bytes are.
struct Images<'e, 's> {
    evidence: &'e Evidence<'s>,
    /// The files' bytes: main file, log, journal.
    files: [Option<&'e [u8]>; 3],
    /// Each committed frame's image, by the address of its first byte.
    frames: HashMap<usize, u32>,
}

/// Where one page image was read.
struct Image {
    /// `main file`, `wal` or `journal`.
    file: &'static str,
    /// The image's first byte's offset in that file.
    start: u64,
    /// The log's frame, for an image of the log.
    frame: Option<u32>,
}

impl<'e, 's> Images<'e, 's> {
    fn of(files: &'e EvidenceFiles, evidence: &'e Evidence<'s>) -> Images<'e, 's> {
        let frames = evidence
            .usable_wal()
            .map(|w| {
                w.commits
                    .iter()
                    .flat_map(|c| &c.frames)
                    .map(|(_, f, image)| (image.as_ptr() as usize, f.0))
                    .collect()
            })
            .unwrap_or_default();
        Images {
            evidence,
            files: [
                Some(files.main.bytes()),
                files.wal.as_ref().map(|s| s.bytes()),
                files.journal.as_ref().map(|s| s.bytes()),
            ],
            frames,
        }
    }

    /// Where the image of `page` the load read is.
    fn of_page(&self, page: u32) -> Option<Image> {
        let image = self.evidence.db.page(PageNo::new(page)?)?;
        let at = image.bytes().as_ptr() as usize;
        let names = ["main file", "wal", "journal"];
        let (file, bytes) = names.into_iter().zip(self.files).find_map(|(n, b)| {
            let b = b?;
            let start = b.as_ptr() as usize;
            (start..start + b.len()).contains(&at).then_some((n, start))
        })?;
        Some(Image {
            file,
            start: (at - bytes) as u64,
            frame: self.frames.get(&at).copied(),
        })
    }
}

/// The times of a time column of a recovered table: how many, the earliest and latest,
/// those no application can have written.
fn span(out: &Output, t: &TimeColumn) -> rusqlite::Result<TimeSpan> {
    let decoded = t.epoch.sql_utc(&quote(&t.column));
    out.conn.query_row(
        &format!(
            "SELECT count(d), min(d), max(d), coalesce(sum(d < '1980' OR d >= '2100'), 0) \
             FROM (SELECT {decoded} AS d FROM {})",
            quote(&t.table)
        ),
        [],
        |r| {
            Ok(TimeSpan {
                table: t.table.clone(),
                column: t.column.clone(),
                epoch: t.epoch.name().to_string(),
                why: t.why.clone(),
                values: r.get::<_, i64>(0)?.max(0) as u64,
                first: r.get(1)?,
                last: r.get(2)?,
                implausible: r.get::<_, i64>(3)?.max(0) as u64,
            })
        },
    )
}

/// The registries the provenance reads, by their names in this output.
struct Registries {
    placeholders: Option<String>,
    partial: Option<String>,
    damaged: Option<String>,
    /// Per table, its view of carved records.
    carved: BTreeMap<String, String>,
    /// Per table, its view of log versions.
    history: BTreeMap<String, String>,
}

impl Registries {
    fn of(rebuilt: &Rebuilt) -> Registries {
        let ledger = &rebuilt.work.ledger;
        Registries {
            placeholders: rebuilt.placeholders.registry.clone(),
            partial: rebuilt.partial_registry.clone(),
            damaged: ledger.damaged_fields.name.clone(),
            carved: ledger
                .carved
                .as_ref()
                .map(|c| c.views.clone())
                .unwrap_or_default(),
            history: ledger
                .history
                .as_ref()
                .map(|h| h.views.clone())
                .unwrap_or_default(),
        }
    }
}

/// Writes `salvage_provenance`: a row for every row of each rowid table, read from the
/// file (its last note, when it is still in its table), rebuilt, or a placeholder.
fn write_registry(
    out: &Output,
    name: &str,
    (places, images): (&BTreeMap<TableId, Vec<Place>>, &Images<'_, '_>),
    tables: &crate::recover::tables::Tables,
    registries: &Registries,
    rowid_tables: &[(String, String)],
) -> rusqlite::Result<()> {
    let conn = &out.conn;
    let q = quote(name);
    conn.execute_batch(&format!(
        "CREATE TABLE {q}(tbl TEXT NOT NULL, rowid INTEGER NOT NULL, status TEXT NOT NULL, \
         detail TEXT, page INTEGER, cell_offset INTEGER, frame INTEGER, file TEXT, \
         file_offset INTEGER, PRIMARY KEY (tbl, rowid)) WITHOUT ROWID;
         BEGIN;"
    ))?;
    let rowid_of: BTreeMap<&str, &str> = rowid_tables
        .iter()
        .map(|(t, r)| (t.as_str(), r.as_str()))
        .collect();
    for (id, list) in places {
        let Some(t) = tables.get(*id) else { continue };
        if !rowid_of.contains_key(t.name.as_str()) {
            continue;
        }
        // The last note of each rowid: a row taken back and written again was read there.
        let mut last: BTreeMap<i64, Place> = BTreeMap::new();
        for p in list {
            last.insert(p.rowid, *p);
        }
        let mut insert = conn.prepare_cached(&format!(
            "INSERT INTO {q}(tbl, rowid, status, detail, page, cell_offset, frame, file, \
             file_offset) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
        ))?;
        // Pages are read again for where their images are: once each.
        let mut seen: HashMap<u32, Option<Image>> = HashMap::new();
        for p in last.values() {
            let image = seen.entry(p.page).or_insert_with(|| images.of_page(p.page));
            let status = match p.reached {
                Reached::Tree => "live",
                Reached::Orphan => "live, orphan page",
            };
            insert.execute(rusqlite::params![
                t.name,
                p.rowid,
                status,
                reached_text(p.reached),
                p.page,
                p.offset,
                image.as_ref().and_then(|i| i.frame),
                image.as_ref().map(|i| i.file),
                image
                    .as_ref()
                    .map(|i| (i.start + u64::from(p.offset)) as i64),
            ])?;
        }
    }
    for (table, rowid_name) in rowid_tables {
        let (tq, rq) = (quote(table), quote(rowid_name));
        // A note of a row no longer in its table (taken back, kept elsewhere) says nothing.
        conn.execute(
            &format!(
                "DELETE FROM {q} WHERE tbl = ?1 AND NOT EXISTS \
                 (SELECT 1 FROM {tq} WHERE {tq}.{rq} = {q}.rowid)"
            ),
            [table],
        )?;
        // What the rebuild wrote is that, whatever was read under its rowid before.
        let rebuilt = [
            (
                &registries.partial,
                "'rebuilt', 'from ' || source_index",
                " AND in_table",
            ),
            (&registries.placeholders, "'placeholder', reason", ""),
        ];
        for (registry, said, only) in rebuilt {
            let Some(r) = registry else { continue };
            conn.execute(
                &format!(
                    "INSERT OR REPLACE INTO {q}(tbl, rowid, status, detail) \
                     SELECT ?1, rowid, {said} FROM {} \
                     WHERE lower(tbl) = lower(?1){only} AND rowid IS NOT NULL",
                    quote(r)
                ),
                [table],
            )?;
        }
        if let Some(r) = &registries.damaged {
            conn.execute(
                &format!(
                    "UPDATE {q} SET status = status || ', damaged field' WHERE tbl = ?1 \
                     AND status LIKE 'live%' AND rowid IN \
                     (SELECT rowid FROM {} WHERE lower(tbl) = lower(?1))",
                    quote(r)
                ),
                [table],
            )?;
        }
        // Rows written by no note and no registry (none are expected): said, not guessed.
        conn.execute(
            &format!(
                "INSERT OR IGNORE INTO {q}(tbl, rowid, status) \
                 SELECT ?1, {rq}, 'unknown' FROM {tq}"
            ),
            [table],
        )?;
    }
    conn.execute_batch("COMMIT")
}

/// The columns of a table or view, in order: generated ones too (a stored generated time
/// column is decoded as any other), not a virtual table's hidden ones.
fn columns_of(out: &Output, name: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = out.conn.prepare(&format!(
        "SELECT name FROM pragma_table_xinfo({}) WHERE hidden <> 1 ORDER BY cid",
        sql_text(name)
    ))?;
    let names = stmt.query_map([], |r| r.get(0))?.collect();
    names
}

/// The columns a registry's view (`salvage_carved_T`, `salvage_history_T`) gives after its
/// `fixed` own, by the table's column name (lower case): SQLite names a column that repeats
/// an earlier one `NAME:N`, so a table column named like one of the view's own (`status`,
/// `source`) is read under that name, never the view's own taken for it.
fn view_columns(
    out: &Output,
    view: &str,
    fixed: usize,
) -> rusqlite::Result<BTreeMap<String, String>> {
    let names = columns_of(out, view)?;
    let mut seen: BTreeSet<String> = names.iter().take(fixed).map(|n| n.to_lowercase()).collect();
    let mut by_name = BTreeMap::new();
    for actual in names.into_iter().skip(fixed) {
        let original = match actual.rsplit_once(':') {
            Some((base, n))
                if !n.is_empty()
                    && n.bytes().all(|b| b.is_ascii_digit())
                    && seen.contains(&base.to_lowercase()) =>
            {
                base.to_string()
            }
            _ => actual.clone(),
        };
        seen.insert(original.to_lowercase());
        by_name.entry(original.to_lowercase()).or_insert(actual);
    }
    Ok(by_name)
}

/// `text` as an SQL string literal.
fn sql_text(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The view `view` of `table`'s rows: its own with what `registry` says of each, then
/// its carved records and its log versions, by the table's column names.
fn row_view(
    out: &Output,
    (table, rowid_name): (&str, &str),
    view: &str,
    registry: &str,
    (registries, times): (&Registries, &[&TimeColumn]),
) -> rusqlite::Result<()> {
    let columns = columns_of(out, table)?;
    // Each of the table's columns from a source that has it, NULL from one that does not;
    // then each time column decoded, as UTC.
    let pick = |alias: &str, has: &BTreeMap<String, String>| -> String {
        let value = |c: &str| {
            has.get(&c.to_lowercase())
                .map(|actual| format!("{alias}.{}", quote(actual)))
        };
        let mut out: String = columns
            .iter()
            .map(|c| format!(", {} AS {}", value(c).unwrap_or("NULL".into()), quote(c)))
            .collect();
        for t in times {
            let decoded = value(&t.column).map_or("NULL".into(), |v| t.epoch.sql_utc(&v));
            let name = format!("salvage_utc_{}", t.column);
            out.push_str(&format!(", {decoded} AS {}", quote(&name)));
        }
        out
    };
    let own: BTreeMap<String, String> = columns
        .iter()
        .map(|c| (c.to_lowercase(), c.clone()))
        .collect();
    let mut parts = vec![format!(
        "SELECT p.status AS salvage_status, p.detail AS salvage_source, p.page AS salvage_page, \
         p.cell_offset AS salvage_offset, NULL AS salvage_frame, NULL AS salvage_commit, \
         t.{rid} AS salvage_rowid{cols} FROM {tq} AS t LEFT JOIN {pq} AS p \
         ON p.tbl = {tl} AND p.rowid = t.{rid}",
        rid = quote(rowid_name),
        cols = pick("t", &own),
        tq = quote(table),
        pq = quote(registry),
        tl = sql_text(table),
    )];
    if let Some(carved) = registries.carved.get(table) {
        // source, page, offset, confidence, status, rowid, then the table's columns.
        let has = view_columns(out, carved, 6)?;
        parts.push(format!(
            "SELECT 'carved ' || c.status, c.source, c.page, c.offset, NULL, NULL, c.rowid{} \
             FROM {} AS c",
            pick("c", &has),
            quote(carved)
        ));
    }
    if let Some(logged) = registries.history.get(table) {
        // rowid, version, source, commit_no, op, page, cell_offset, frame, then the
        // table's columns.
        let has = view_columns(out, logged, 8)?;
        parts.push(format!(
            "SELECT 'log version ' || coalesce(h.version, '(older generation)'), \
             h.source || coalesce(', ' || h.op, ''), h.page, h.cell_offset, h.frame, \
             h.commit_no, h.rowid{} FROM {} AS h",
            pick("h", &has),
            quote(logged)
        ));
    }
    out.conn.execute(
        &format!(
            "CREATE VIEW {} AS {}",
            quote(view),
            parts.join(" UNION ALL ")
        ),
        [],
    )?;
    Ok(())
}
