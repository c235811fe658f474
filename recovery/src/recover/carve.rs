//! `recover --carve`: deleted records from the source's free space (see the `carve` crate),
//! written to `salvage_carved` beside the recovered tables, never into them. A carved
//! record that is a live row as recovered (same rowid and values) is not deleted and is
//! left out; one whose rowid a live row holds with other values is an older version of it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use rusqlite::types::ValueRef;

use carve::{carve_page, Carved, PageRole, Template};
use pager::{Database, PageClass, PageNo, Survey, Value};

use crate::base::error::Error;
use crate::base::output::{quote, Output, SqlValue};
use crate::recover::evidence::Evidence;
use crate::recover::rebuild::Rebuilt;
use crate::recover::tables::Tables;
use crate::report::carved::{CarvedCount, CarvedReport};

/// The carving step (`recover --carve`): deleted records from the source's free space
/// written to `salvage_carved` (and a view per table), its report in the ledger, its
/// names taken.
pub fn step(evidence: &Evidence<'_>, rebuilt: &mut Rebuilt) -> Result<(), Error> {
    let work = &mut rebuilt.work;
    let carved = carve_into(
        &evidence.db,
        &work.out,
        &work.tables,
        &rebuilt.found.survey,
        work.names.taken(),
    )
    .map_err(Error::db("writing carved records"))?;
    for name in carved.registry.iter().chain(carved.views.values()) {
        work.names.take(name);
    }
    work.ledger.carved = Some(carved);
    Ok(())
}

/// A table the carver knows: its template, name, and how a carved record of it is told
/// from a live row.
struct Known {
    template: Template,
    name: String,
    live: LiveRows,
}

/// Where the live rows a carved record is compared with are.
enum LiveRows {
    /// A recovered table: the output's columns in record order (the rowid alias `NULL`),
    /// and the name SQL reaches its rowid by.
    Table(Vec<String>, String),
    /// `sqlite_schema`: the schema rows read.
    Schema,
    /// A dropped table: none is live.
    Dropped,
}

/// The shape of `sqlite_schema` ("Storage Of The SQL Database Schema").
fn schema_template() -> Option<Template> {
    Template::of(&plain_shape(
        "sqlite_schema",
        &[
            ("type", "TEXT"),
            ("name", "TEXT"),
            ("tbl_name", "TEXT"),
            ("rootpage", "INTEGER"),
            ("sql", "TEXT"),
        ],
    ))
}

/// A rowid table of plain columns, each `(name, declared type)`: no key, no constraint.
fn plain_shape(name: &str, columns: &[(&str, &str)]) -> reconstruct::TableShape {
    use reconstruct::{Column, ColumnDefault, ColumnKind, TableShape};
    TableShape {
        name: name.into(),
        columns: columns
            .iter()
            .map(|(name, decl)| Column {
                name: (*name).into(),
                decl_type: (*decl).into(),
                not_null: false,
                pk: 0,
                kind: ColumnKind::Ordinary,
                default: ColumnDefault::None,
            })
            .collect(),
        without_rowid: false,
        strict: false,
        pk_indexed: false,
    }
}

/// How each page is carved: a live table page's free space as its table's (`by_root`
/// gives the template of each root), freed and unclaimed pages whole.
fn roles<'a>(
    survey: &'a Survey,
    by_root: &'a BTreeMap<PageNo, usize>,
) -> impl Iterator<Item = (PageNo, PageRole)> + 'a {
    // A page at a time from the survey's runs: a list of them all held 24 bytes for each
    // of a 20 GB file's 4.9 million pages.
    survey
        .page_map
        .runs()
        .filter_map(move |(first, pages, class, owner)| {
            let role = match class {
                PageClass::TableLeaf | PageClass::TableInterior => match owner {
                    Some(root) => PageRole::Live(by_root.get(&root).copied()),
                    // Orphan leaves' rows are recovered as rows (their tables or
                    // lost_and_found).
                    None => return None,
                },
                PageClass::FreelistLeaf | PageClass::FreelistTrunk => PageRole::Free,
                PageClass::Unrecognised if owner.is_none() => PageRole::Free,
                _ => return None,
            };
            Some(
                (first.get()..first.get().saturating_add(pages))
                    .filter_map(PageNo::new)
                    .map(move |p| (p, role)),
            )
        })
        .flatten()
}

/// The tables dropped from the schema whose CREATE statements are still in its free space
/// (or on freed pages): their shapes, as SQLite parses the statements.
fn dropped_tables(
    db: &Database<'_>,
    survey: &Survey,
    schema: &Template,
    live: &BTreeSet<String>,
) -> Vec<Template> {
    let by_root = BTreeMap::from([(PageNo::FIRST, 0)]);
    let mut out: Vec<Template> = Vec::new();
    for (page, role) in roles(survey, &by_root) {
        if matches!(role, PageRole::Live(None)) {
            continue;
        }
        for c in carve_page(db, page, role, std::slice::from_ref(schema)) {
            let [Value::Text(kind), Value::Text(name), _, root, Value::Text(sql)] =
                c.values.as_slice()
            else {
                continue;
            };
            let name = String::from_utf8_lossy(name).into_owned();
            if kind.as_slice() != b"table"
                || live.contains(&name.to_lowercase())
                || name.to_lowercase().starts_with("sqlite_")
                || out.iter().any(|t| t.name.eq_ignore_ascii_case(&name))
            {
                continue;
            }
            let sql = String::from_utf8_lossy(sql);
            let Ok((shape, _)) = crate::base::output::scratch_shape(&sql) else {
                continue;
            };
            if let Some(mut t) = Template::of(&shape) {
                t.name = name;
                t.dropped = true;
                t.only_on = lone_leaf(db, survey, root);
                out.push(t);
            }
        }
    }
    out
}

/// The root page of a dropped table, when it was freed as a table leaf (the table had no
/// other page), or became a freelist trunk (whose first bytes the list took, the rest
/// still the root's). A root that a live table has taken since says nothing.
fn lone_leaf(db: &Database<'_>, survey: &Survey, root: &Value) -> Option<PageNo> {
    let Value::Integer(n) = root else {
        return None;
    };
    let page = PageNo::new(u32::try_from(*n).ok()?)?;
    let leaf = || {
        db.page(page).is_some_and(|p| {
            p.btree_header()
                .is_ok_and(|h| h.page_type() == pager::PageType::TableLeaf)
        })
    };
    match survey.page_map.class(page) {
        Some(PageClass::FreelistLeaf) => leaf().then_some(page),
        Some(PageClass::FreelistTrunk) => Some(page),
        _ => None,
    }
}

/// Carves every table page's free space and every freed page, and writes what is found,
/// page by page: a record is compared with the live rows and written as it is found, so
/// that memory holds one page's records and a fingerprint of each record written (to
/// write each record once), not the records. A record without its rowid (a freeblock
/// took its header) is compared by its values once every page is carved, in one read of
/// its table: memory holds a fingerprint of each such record, never one of each live
/// row.
pub fn carve_into(
    db: &Database<'_>,
    out: &Output,
    tables: &Tables,
    survey: &Survey,
    taken: &BTreeSet<String>,
) -> rusqlite::Result<CarvedReport> {
    let (known, by_root) = known_tables(db, tables, survey);
    let templates: Vec<Template> = known.iter().map(|k| k.template.clone()).collect();
    // The table is made even when nothing is found: a script reads an empty table.
    let mut report = CarvedReport::default();
    let mut taken = taken.clone();
    let name = out.registry_name("salvage_carved", &taken);
    taken.insert(name.to_lowercase());
    // As wide as the widest record written (none: no value column), grown as they come
    // (a record taken back at the end as a live row's copy may have widened it).
    let mut registry = Registry::create(out, &name, 0)?;
    let mut live_rows = LiveIndex::default();
    let mut unsettled = Unsettled::default();
    out.conn.execute_batch("BEGIN")?;
    std::thread::scope(|scope| -> rusqlite::Result<()> {
        for (_, carved) in carved_in_order(scope, db, roles(survey, &by_root), &templates) {
            for c in carved {
                let values: Vec<SqlValue<'_>> = c
                    .values
                    .iter()
                    .map(|v| SqlValue::from_value(v, db.encoding()))
                    .collect();
                let key = Registry::key(&c, &values);
                let met = registry.met(key, &values)?;
                if met == Met::Written {
                    report.duplicates += 1;
                    continue;
                }
                let state = match c.table.and_then(|i| Some((i, known.get(i)?))) {
                    Some((
                        t,
                        Known {
                            name,
                            live: LiveRows::Table(columns, rowid_name),
                            ..
                        },
                    )) => Some(live_rows.compare(
                        out,
                        (t, name, rowid_name),
                        columns,
                        c.rowid,
                        &values,
                    )?),
                    Some((
                        _,
                        Known {
                            live: LiveRows::Schema,
                            ..
                        },
                    )) => Some(schema_row_live(survey, &c)),
                    _ => None,
                };
                match state {
                    // A copy of a live row met before (this one compared with the row too:
                    // its key alone is no proof).
                    Some(Live::Same) if met == Met::LiveCopy => report.duplicates += 1,
                    Some(Live::Same) => {
                        // Not deleted: a live row as recovered. Later copies are not written
                        // either.
                        registry.remember(key, None);
                        report.live_copies += 1;
                    }
                    state => {
                        let older = matches!(state, Some(Live::Older));
                        let table = c.table.and_then(|i| known.get(i)).map(|k| k.name.as_str());
                        let row = registry.write((&c, &values, key), table, older)?;
                        report.rows += 1;
                        report.previous_versions += u64::from(older);
                        if let (Some(Live::ByValues), Some(t)) = (state, c.table) {
                            unsettled.add(t, &values, (row, c.source.name()));
                        }
                    }
                }
            }
        }
        Ok(())
    })?;
    unsettled.settle(&known, &mut registry, &mut report)?;
    out.conn.execute_batch("COMMIT")?;
    let counts: BTreeMap<(Option<String>, &'static str), u64> = registry
        .counts
        .into_iter()
        .map(|((t, source), n)| {
            (
                (t.and_then(|i| known.get(i)).map(|k| k.name.clone()), source),
                n,
            )
        })
        .fold(BTreeMap::new(), |mut m, (k, n)| {
            *m.entry(k).or_default() += n;
            m
        });
    for k in known
        .iter()
        .filter(|k| counts.keys().any(|(t, _)| t.as_deref() == Some(&k.name)))
    {
        let view = out.registry_name(&format!("salvage_carved_{}", k.name), &taken);
        taken.insert(view.to_lowercase());
        create_view(out, k, &view, &name)?;
        report.views.insert(k.name.clone(), view);
    }
    report.registry = Some(name);
    report.by_source = counts
        .into_iter()
        .map(|((table, source), rows)| CarvedCount {
            table,
            source: source.to_string(),
            rows,
        })
        .collect();
    Ok(report)
}

/// Pages carved in a run of this many, every other run on a second thread.
const CARVE_RUN: usize = 64;

/// Every page of `pages` carved, in their order, on two threads: the pages go in runs of
/// [`CARVE_RUN`], every other run carved by a thread of its own while this one carves the
/// run before it, so that the records come out exactly as one thread would find them.
/// Carving is pure and reads only the evidence; the writing stays with the caller. At
/// most two runs' records are held at once.
fn carved_in_order<'s, 'd: 's>(
    scope: &'s std::thread::Scope<'s, '_>,
    db: &'s Database<'d>,
    mut pages: impl Iterator<Item = (PageNo, PageRole)> + 's,
    templates: &'s [Template],
) -> impl Iterator<Item = (PageNo, Vec<Carved>)> + 's {
    let carve_run = move |run: Vec<(PageNo, PageRole)>| -> Vec<(PageNo, Vec<Carved>)> {
        run.into_iter()
            .map(|(page, role)| (page, carve_page(db, page, role, templates)))
            .collect()
    };
    let (to_helper, runs) = std::sync::mpsc::sync_channel::<Vec<(PageNo, PageRole)>>(1);
    let (from_helper, carved) = std::sync::mpsc::sync_channel(1);
    scope.spawn(move || {
        for run in runs {
            if from_helper.send(carve_run(run)).is_err() {
                break;
            }
        }
    });
    let mut next_run =
        move || -> Vec<(PageNo, PageRole)> { pages.by_ref().take(CARVE_RUN).collect() };
    std::iter::from_fn(move || {
        let own = next_run();
        if own.is_empty() {
            return None;
        }
        // The run after this one goes to the helper before this one is carved.
        let theirs = next_run();
        // A helper gone (it panicked: the scope says so at its end) leaves its run here.
        let sent = !theirs.is_empty() && to_helper.send(theirs.clone()).is_ok();
        let mut done = carve_run(own);
        let received = if sent { carved.recv().ok() } else { None };
        done.extend(received.unwrap_or_else(|| carve_run(theirs)));
        Some(done)
    })
    .flatten()
}

/// The carved records' table as it is written: a row a record (its table, where it was
/// found, how far it is trusted, whether it is a previous version of a live row), its
/// values in positional columns, as many as the widest record (added as one comes).
struct Registry<'o> {
    out: &'o Output,
    name: String,
    width: usize,
    /// Each record met (written, or a live row's copy), by its table, rowid and values'
    /// fingerprint: the registry's row that holds it (0, which no row is: a live row's
    /// copy, not written; 16 bytes an entry where an `Option` took 24). Equal
    /// fingerprints are compared value by value before a record is taken for one met
    /// before.
    met: HashMap<u64, i64, Prints>,
    /// Records written, by table (its index among the known ones) and source.
    counts: BTreeMap<(Option<usize>, &'static str), u64>,
    /// The statements inserting a record and reading one back, by its number of values
    /// (prepared once: looking each up by its text in the connection's cache cost some 4 %
    /// of `--carve`'s processor time).
    statements: HashMap<usize, [rusqlite::Statement<'o>; 2]>,
}

impl<'o> Registry<'o> {
    fn create(out: &'o Output, name: &str, width: usize) -> rusqlite::Result<Registry<'o>> {
        let cols: String = (0..width).map(|i| format!(", c{i}")).collect();
        out.conn.execute_batch(&format!(
            "CREATE TABLE {}(tbl TEXT, source TEXT, page INTEGER, offset INTEGER, \
             confidence REAL, status TEXT, rowid INTEGER, nfield INTEGER{cols})",
            quote(name),
        ))?;
        Ok(Registry {
            out,
            name: name.to_string(),
            width,
            met: HashMap::default(),
            counts: BTreeMap::new(),
            statements: HashMap::new(),
        })
    }

    /// The key a record is met under: its table, rowid and values (as bound), exactly (an
    /// integer and the same whole real are two records, as they were read).
    fn key(c: &Carved, values: &[SqlValue<'_>]) -> u64 {
        use std::hash::{BuildHasher, Hash, Hasher};
        let mut h = Prints::default().build_hasher();
        (c.table, c.rowid, values.len()).hash(&mut h);
        hash_values(&mut h, values.iter().map(SqlValue::value_ref));
        h.finish()
    }

    /// The statements for a record of `n` values: its insert, and its values read back.
    fn statements(&mut self, n: usize) -> rusqlite::Result<&mut [rusqlite::Statement<'o>; 2]> {
        let (conn, name) = (&self.out.conn, &self.name);
        held(&mut self.statements, n, || {
            let name = quote(name);
            let cols: String = (0..n).map(|i| format!(", c{i}")).collect();
            let marks: String = (9..9 + n).map(|i| format!(", ?{i}")).collect();
            Ok([
                conn.prepare(&format!(
                    "INSERT INTO {name}(tbl, source, page, offset, confidence, status, rowid, \
                     nfield{cols}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8{marks})"
                ))?,
                conn.prepare(&format!(
                    "SELECT nfield{cols} FROM {name} WHERE _rowid_ = ?1"
                ))?,
            ])
        })
    }

    /// Whether a record of the same table, rowid and `values` (its own, as bound) was met
    /// before, under `key`: one written is compared with what was written (the first is
    /// kept, the others counted as duplicates); one that was a live row's copy is said
    /// so, for the caller to compare this one with the live row (a key shared by two
    /// records, which a file made to hide one could arrange, then costs a comparison,
    /// never the record).
    fn met(&mut self, key: u64, values: &[SqlValue<'_>]) -> rusqlite::Result<Met> {
        let Some(row) = self.met.get(&key).copied() else {
            return Ok(Met::No);
        };
        if row == NOT_WRITTEN {
            return Ok(Met::LiveCopy);
        }
        // The values as bound, against the values written.
        let values: Vec<ValueRef<'_>> = values.iter().map(SqlValue::value_ref).collect();
        Ok(match self.row_holds(row, &values, exactly)? {
            true => Met::Written,
            false => Met::No,
        })
    }

    /// Whether registry row `row` holds `values`, each compared by `same` with the value
    /// written.
    fn row_holds(
        &mut self,
        row: i64,
        values: &[ValueRef<'_>],
        same: fn(ValueRef<'_>, ValueRef<'_>) -> bool,
    ) -> rusqlite::Result<bool> {
        // No row as wide was written (two keys of records of other widths can be equal):
        // the registry has no column to read the last values from.
        if values.len() > self.width {
            return Ok(false);
        }
        let [_, select] = self.statements(values.len())?;
        let mut rows = select.query([row])?;
        let Some(r) = rows.next()? else {
            return Ok(false);
        };
        if r.get::<_, i64>(0)? != values.len() as i64 {
            return Ok(false);
        }
        for (i, v) in values.iter().enumerate() {
            if !same(*v, r.get_ref(i + 1)?) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Remembers the record met under `key`, written as row `row` of the registry (or
    /// not written).
    fn remember(&mut self, key: u64, row: Option<i64>) {
        self.met.entry(key).or_insert(row.unwrap_or(NOT_WRITTEN));
    }

    /// Writes `c` (its `values` as bound, met under `key`), attributed to `table`;
    /// `older`: a previous version of a live row.
    fn write(
        &mut self,
        (c, values, key): (&Carved, &[SqlValue<'_>], u64),
        table: Option<&str>,
        older: bool,
    ) -> rusqlite::Result<i64> {
        while self.width < values.len() {
            self.out.conn.execute_batch(&format!(
                "ALTER TABLE {} ADD COLUMN c{}",
                quote(&self.name),
                self.width
            ))?;
            self.width += 1;
        }
        let head = [
            table.map_or(SqlValue::Null, |t| SqlValue::Text(t.into())),
            SqlValue::Text(c.source.name().into()),
            SqlValue::Integer(i64::from(c.page.get())),
            SqlValue::Integer(i64::from(c.offset)),
            SqlValue::Real((c.confidence() * 100.0).round() / 100.0),
            SqlValue::Text(if older { "previous version" } else { "deleted" }.into()),
            c.rowid.map_or(SqlValue::Null, SqlValue::Integer),
            SqlValue::Integer(values.len() as i64),
        ];
        let [insert, _] = self.statements(values.len())?;
        insert.execute(rusqlite::params_from_iter(head.iter().chain(values)))?;
        let row = self.out.conn.last_insert_rowid();
        self.remember(key, Some(row));
        let attributed = table.and(c.table);
        *self
            .counts
            .entry((attributed, c.source.name()))
            .or_default() += 1;
        Ok(row)
    }

    /// Takes back registry row `row`, a record of known table `table` from `source`:
    /// it is a live row's copy, not a deleted record.
    fn take_back(&mut self, row: i64, table: usize, source: &'static str) -> rusqlite::Result<()> {
        self.out.conn.execute(
            &format!("DELETE FROM {} WHERE _rowid_ = ?1", quote(&self.name)),
            [row],
        )?;
        if let Some(n) = self.counts.get_mut(&(Some(table), source)) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.counts.remove(&(Some(table), source));
            }
        }
        Ok(())
    }
}

/// Records written without a rowid, each still to be compared with its table's live rows
/// by its values: by table (its index among the known ones), their values' fingerprint
/// ([`fingerprint`]) with the registry row and source of each, in one flat list a table
/// (32 bytes a record, sorted by fingerprint when settled; a map of lists took some 100
/// bytes and an allocation a record, for the most numerous records of a carve).
#[derive(Default)]
struct Unsettled {
    by_table: BTreeMap<usize, Vec<(u64, Written)>>,
}

/// A record's row in the registry, and the source it was carved from.
type Written = (i64, &'static str);

impl Unsettled {
    fn add(&mut self, table: usize, values: &[SqlValue<'_>], (row, source): Written) {
        let print = fingerprint(values.iter().map(SqlValue::value_ref));
        self.by_table
            .entry(table)
            .or_default()
            .push((print, (row, source)));
    }

    /// Reads each table with unsettled records once: a record whose values a live row
    /// holds is that row's copy, taken back from the registry and counted as one.
    fn settle(
        self,
        known: &[Known],
        registry: &mut Registry<'_>,
        report: &mut CarvedReport,
    ) -> rusqlite::Result<()> {
        for (t, prints) in self.by_table {
            let prints = ByPrint::new(prints);
            let Some(Known {
                name,
                live: LiveRows::Table(columns, _),
                ..
            }) = known.get(t)
            else {
                continue;
            };
            let all = format!("SELECT {} FROM {}", columns.join(", "), quote(name));
            // Registry row -> source, of the records found to be live rows' copies.
            let mut copies: BTreeMap<i64, &'static str> = BTreeMap::new();
            let mut stmt = registry.out.conn.prepare(&all)?;
            let mut rows = stmt.query([])?;
            while let Some(row) = rows.next()? {
                // The print from the row in place (a column it has cannot fail to be read;
                // a print only names the records to compare); its values gathered only
                // for those.
                let print = fingerprint(
                    (0..columns.len()).map(|i| row.get_ref(i).unwrap_or(ValueRef::Null)),
                );
                let same = prints.equal(print);
                if same.is_empty() {
                    continue;
                }
                let live = (0..columns.len())
                    .map(|i| row.get_ref(i))
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                for &(_, (record, source)) in same {
                    if !copies.contains_key(&record)
                        && registry.row_holds(record, &live, same_value)?
                    {
                        copies.insert(record, source);
                    }
                }
            }
            drop(rows);
            drop(stmt);
            for (record, source) in copies {
                registry.take_back(record, t, source)?;
                report.rows -= 1;
                report.live_copies += 1;
            }
        }
        Ok(())
    }
}

/// Prepared statements held at most by the registry (one pair per record width) and by
/// the live rows' lookups (one per table): as many as the connection's own cache keeps,
/// since each holds its program and its last values bound (a schema of 2,000 widths held
/// 1.5 GiB of them).
const HELD_STATEMENTS: usize = 16;

/// The statements held in `map` under `key`, made by `prepare` when none are; those held
/// are let go of first when [`HELD_STATEMENTS`] are (a schema of tables of many widths).
fn held<S>(
    map: &mut HashMap<usize, S>,
    key: usize,
    prepare: impl FnOnce() -> rusqlite::Result<S>,
) -> rusqlite::Result<&mut S> {
    if !map.contains_key(&key) && map.len() >= HELD_STATEMENTS {
        map.clear();
    }
    match map.entry(key) {
        std::collections::hash_map::Entry::Occupied(e) => Ok(e.into_mut()),
        std::collections::hash_map::Entry::Vacant(e) => Ok(e.insert(prepare()?)),
    }
}

/// Records without their rowid sorted by fingerprint, with a directory of the prints'
/// first bits: the records a live row's print may be found in one or two reads of memory,
/// where a binary search over the 794,000 records of `carve.sh`'s 2 million rows read
/// twenty (a sixth of the run's processor time, a million live rows looked up). The prints
/// are a hash's, spread evenly; a file made to crowd them under a few first bits costs a
/// binary search among those, no more than before.
struct ByPrint {
    entries: Vec<(u64, Written)>,
    /// Where the entries whose print starts with each value of its first bits begin: one
    /// slot more than those values, the last the entries' end.
    starts: Vec<usize>,
    /// The bits of a print after its first ones.
    shift: u32,
}

impl ByPrint {
    fn new(mut entries: Vec<(u64, Written)>) -> ByPrint {
        entries.sort_unstable_by_key(|&(print, _)| print);
        // At most one slot an entry: the directory is at most a quarter of the entries.
        let bits = entries.len().max(2).ilog2().min(32);
        let shift = u64::BITS - bits;
        let mut starts = Vec::with_capacity((1 << bits) + 1);
        let mut at = 0;
        for slot in 0..=(1u64 << bits) {
            while entries
                .get(at)
                .is_some_and(|&(print, _)| print >> shift < slot)
            {
                at += 1;
            }
            starts.push(at);
        }
        ByPrint {
            entries,
            starts,
            shift,
        }
    }

    /// The entries of fingerprint `print`.
    fn equal(&self, print: u64) -> &[(u64, Written)] {
        let slot = usize::try_from(print >> self.shift).unwrap_or(usize::MAX);
        let (Some(&from), Some(&to)) = (self.starts.get(slot), self.starts.get(slot + 1)) else {
            return &[];
        };
        let within = self.entries.get(from..to).unwrap_or_default();
        let first = within.partition_point(|&(p, _)| p < print);
        let within = within.get(first..).unwrap_or_default();
        let equal = within.partition_point(|&(p, _)| p == print);
        within.get(..equal).unwrap_or_default()
    }
}

/// Whether two values are the same exactly: of one type, and equal (a record's values
/// as bound, against those written).
fn exactly(a: ValueRef<'_>, b: ValueRef<'_>) -> bool {
    match (a, b) {
        (ValueRef::Null, ValueRef::Null) => true,
        (ValueRef::Integer(x), ValueRef::Integer(y)) => x == y,
        (ValueRef::Real(x), ValueRef::Real(y)) => x == y,
        (ValueRef::Text(x), ValueRef::Text(y)) | (ValueRef::Blob(x), ValueRef::Blob(y)) => x == y,
        _ => false,
    }
}

/// The tables the carver knows, each with its template: the schema table, every filled
/// table with a rowid, and the tables the schema dropped whose rows may still be in free
/// space; with the index of each by its root page.
fn known_tables(
    db: &Database<'_>,
    tables: &Tables,
    survey: &Survey,
) -> (Vec<Known>, BTreeMap<PageNo, usize>) {
    let mut known: Vec<Known> = Vec::new();
    let mut by_root: BTreeMap<PageNo, usize> = BTreeMap::new();
    let schema = schema_template();
    if let Some(t) = &schema {
        by_root.insert(PageNo::FIRST, known.len());
        known.push(Known {
            template: t.clone(),
            name: "sqlite_schema".into(),
            live: LiveRows::Schema,
        });
    }
    for (t, shape) in tables.filled() {
        let (Some(template), Some(rowid_name)) = (Template::of(shape), shape.rowid_name()) else {
            continue;
        };
        let alias = shape.rowid_alias();
        let record_columns = shape
            .record_order()
            .into_iter()
            .filter_map(|i| {
                let c = shape.columns.get(i)?;
                Some(if alias == Some(i) {
                    "NULL".to_string()
                } else {
                    quote(&c.name)
                })
            })
            .collect();
        if let Some(root) = t.root {
            by_root.insert(root, known.len());
        }
        known.push(Known {
            template,
            name: t.name.clone(),
            live: LiveRows::Table(record_columns, quote(rowid_name)),
        });
    }
    let live_names: BTreeSet<String> = survey
        .schema
        .rows
        .iter()
        .map(|r| r.name.to_lowercase())
        .chain(tables.iter().map(|t| t.name.to_lowercase()))
        .collect();
    if let Some(schema) = &schema {
        for template in dropped_tables(db, survey, schema, &live_names) {
            known.push(Known {
                name: template.name.clone(),
                template,
                live: LiveRows::Dropped,
            });
        }
    }
    (known, by_root)
}

/// The view `view` of one known table's carved records in `registry`, with the table's
/// column names (the rowid alias, NULL in the record, read from the rowid).
fn create_view(out: &Output, k: &Known, view: &str, registry: &str) -> rusqlite::Result<()> {
    let columns: String = k
        .template
        .slots
        .iter()
        .zip(&k.template.names)
        .enumerate()
        .map(|(i, (s, n))| {
            let value = if s.rowid_alias {
                "rowid".to_string()
            } else {
                format!("c{i}")
            };
            format!(", {value} AS {}", quote(n))
        })
        .collect();
    out.conn.execute(
        &format!(
            "CREATE VIEW {} AS SELECT source, page, offset, confidence, status, rowid{columns} \
             FROM {} WHERE tbl = '{}' AND nfield = {}",
            quote(view),
            quote(registry),
            k.name.replace('\'', "''"),
            k.template.slots.len()
        ),
        [],
    )?;
    Ok(())
}

/// How a carved record stands to the live rows of its table.
enum Live {
    /// A live row has its rowid and its values.
    Same,
    /// A live row has its rowid with other values.
    Older,
    /// No live row is it.
    No,
    /// Without its rowid: compared with the live rows by its values once every page is
    /// carved ([`Unsettled`]).
    ByValues,
}

/// The live rows of the output's tables, as a carved record is compared with them: by
/// rowid, or, for a record whose rowid was overwritten, by its values (later, see
/// [`Unsettled`]). Values compare exactly (an integer equals the same whole real, as
/// SQLite compares numbers; text is not folded by a column's collation: a deleted `abc`
/// is not a live `ABC`).
#[derive(Default)]
struct LiveIndex<'o> {
    /// Per table (its index among the known ones), the statement reading a live row by
    /// its rowid.
    by_rowid: HashMap<usize, rusqlite::Statement<'o>>,
}

impl<'o> LiveIndex<'o> {
    /// How a carved record of `table` (its index, name and the name of its rowid; its
    /// columns in record order are `columns`), of `rowid` and `values` as bound, stands
    /// to its live rows on the output.
    fn compare(
        &mut self,
        out: &'o Output,
        (t, table, rowid_name): (usize, &str, &str),
        columns: &[String],
        rowid: Option<i64>,
        values: &[SqlValue<'_>],
    ) -> rusqlite::Result<Live> {
        if columns.len() != values.len() {
            return Ok(Live::No);
        }
        let Some(rowid) = rowid else {
            return Ok(Live::ByValues);
        };
        let row_of = held(&mut self.by_rowid, t, || {
            out.conn.prepare(&format!(
                "SELECT {} FROM {} WHERE {rowid_name} = ?1",
                columns.join(", "),
                quote(table)
            ))
        })?;
        let mut rows = row_of.query([rowid])?;
        let Some(row) = rows.next()? else {
            return Ok(Live::No);
        };
        for (i, v) in values.iter().enumerate() {
            if !same_value(v.value_ref(), row.get_ref(i)?) {
                return Ok(Live::Older);
            }
        }
        Ok(Live::Same)
    }
}

/// A number as an integer when it is a whole one that fits, so that 5 and 5.0 are one.
fn whole(v: rusqlite::types::ValueRef<'_>) -> rusqlite::types::ValueRef<'_> {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Real(r) if r.fract() == 0.0 && r.abs() < 9.0e15 => ValueRef::Integer(r as i64),
        other => other,
    }
}

/// Whether two values are the same value: the same storage class and bytes, numbers by
/// their value.
fn same_value(a: rusqlite::types::ValueRef<'_>, b: rusqlite::types::ValueRef<'_>) -> bool {
    whole(a) == whole(b)
}

/// A 64-bit digest of a row's values, equal for rows of [`same_value`] values.
fn fingerprint<'v>(values: impl IntoIterator<Item = ValueRef<'v>>) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = Prints::default().build_hasher();
    hash_values(&mut h, values.into_iter().map(whole));
    h.finish()
}

/// In [`Registry::met`], a record met but not written (a live row's copy): registry rows
/// are numbered from 1.
const NOT_WRITTEN: i64 = 0;

/// What [`Registry::met`] knows of a record's key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Met {
    /// Not met, or met with other values.
    No,
    /// Written before with these values: a duplicate.
    Written,
    /// Met before as a live row's copy: the record is compared with the live row.
    LiveCopy,
}

/// The hash of fingerprints, and of the maps keyed by them: foldhash, with a fixed seed (a
/// run's fingerprints are the same at every run). Records with equal fingerprints are
/// compared value by value, so a collision costs a comparison, never a record; SipHash's
/// resistance to chosen collisions (the standard library's) cost some 4 % of `--carve`'s
/// processor time on `bench/carve.sh`'s 2 million rows.
type Prints = foldhash::fast::FixedState;

/// Feeds values into `h` exactly, each with its type (a real by its bits).
fn hash_values<'v>(h: &mut impl std::hash::Hasher, values: impl IntoIterator<Item = ValueRef<'v>>) {
    use std::hash::Hash;
    for v in values {
        match v {
            ValueRef::Null => 0u8.hash(h),
            ValueRef::Integer(i) => (1u8, i).hash(h),
            ValueRef::Real(r) => (2u8, r.to_bits()).hash(h),
            ValueRef::Text(t) => (3u8, t).hash(h),
            ValueRef::Blob(b) => (4u8, b).hash(h),
        }
    }
}

/// Whether a carved schema record is a schema row as read: same name and statement.
fn schema_row_live(survey: &Survey, c: &Carved) -> Live {
    let [_, Value::Text(name), _, _, sql] = c.values.as_slice() else {
        return Live::No;
    };
    let sql = match sql {
        Value::Text(s) => Some(String::from_utf8_lossy(s).into_owned()),
        _ => None,
    };
    let name = String::from_utf8_lossy(name);
    let row = survey.schema.rows.iter().find(|r| r.name == name);
    match row {
        Some(r) if r.sql == sql => Live::Same,
        Some(_) => Live::Older,
        None => Live::No,
    }
}

#[cfg(test)]
mod tests {
    use super::{fingerprint, same_value};
    use rusqlite::types::ValueRef as V;

    /// A key met as a live row's copy is no proof that a record under it is that copy
    /// (two records can share a key; a file made to hide one could arrange it): the
    /// record is said to be met as a copy, for the caller to compare it with the live
    /// row, never taken for a duplicate on its key alone. One written before is compared
    /// with what was written.
    #[test]
    fn a_key_met_before_is_no_proof_of_a_duplicate() {
        use super::{Met, Registry};
        use crate::base::output::{Output, SqlValue, Vacuum};
        let dir = std::env::temp_dir().join(format!("carve-met-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let out = Output::create(
            &dir.join("out.db"),
            4096,
            pager::TextEncoding::Utf8,
            Vacuum::None,
            (0, 0),
        )
        .unwrap();
        let mut registry = Registry::create(&out, "salvage_carved", 0).unwrap();
        let values = [SqlValue::Integer(7), SqlValue::Text("kept".into())];
        let other = [SqlValue::Integer(8), SqlValue::Text("hidden".into())];
        assert_eq!(registry.met(1, &values).unwrap(), Met::No);
        registry.remember(1, None);
        assert_eq!(registry.met(1, &other).unwrap(), Met::LiveCopy);
        out.conn
            .execute_batch(
                "ALTER TABLE salvage_carved ADD COLUMN c0; ALTER TABLE salvage_carved ADD COLUMN c1;
                 INSERT INTO salvage_carved(nfield, c0, c1) VALUES (2, 7, 'kept');",
            )
            .unwrap();
        registry.width = 2;
        registry.remember(2, Some(out.conn.last_insert_rowid()));
        assert_eq!(registry.met(2, &values).unwrap(), Met::Written);
        assert_eq!(registry.met(2, &other).unwrap(), Met::No);
        // A wider record under the same key: compared, not an error that ends the carve.
        let wider = [
            SqlValue::Integer(7),
            SqlValue::Text("kept".into()),
            SqlValue::Null,
        ];
        assert_eq!(registry.met(2, &wider).unwrap(), Met::No);
        drop(registry);
        drop(out);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Carving on two threads gives the records one thread finds, in its order, on a
    /// file of many pages whose free space is full of deleted rows.
    #[test]
    fn two_threads_carve_what_one_finds_in_its_order() {
        use carve::{carve_page, PageRole, Template};
        use pager::{Database, PageNo};
        let dir = std::env::temp_dir().join(format!("carve-order-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.db");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA page_size = 1024; PRAGMA secure_delete = OFF;
             CREATE TABLE t(a TEXT, b INTEGER);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
             INSERT INTO t SELECT printf('row %d of the table', i), i * 7 FROM n;
             DELETE FROM t WHERE rowid % 3 <> 0;",
        )
        .unwrap();
        drop(conn);
        let bytes = std::fs::read(&path).unwrap();
        let db = Database::open(&bytes).unwrap();
        let templates: Vec<Template> =
            Template::of(&super::plain_shape("t", &[("a", "TEXT"), ("b", "INTEGER")]))
                .into_iter()
                .collect();
        // Every page as freed, carved whole: the table's leaves hold the deleted rows.
        let pages = || {
            (1..=db.page_count())
                .filter_map(PageNo::new)
                .map(|p| (p, PageRole::Free))
        };
        let one: Vec<_> = pages()
            .map(|(p, role)| (p, carve_page(&db, p, role, &templates)))
            .collect();
        let two: Vec<_> = std::thread::scope(|scope| {
            super::carved_in_order(scope, &db, pages(), &templates).collect()
        });
        assert!(one.len() > 4 * super::CARVE_RUN, "{} pages", one.len());
        let found: usize = one.iter().map(|(_, c)| c.len()).sum();
        assert!(found > 1000, "{found} records");
        assert_eq!(one, two);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The directory finds every record of a print and no other, whether the prints are
    /// spread (as a hash's are) or crowded under the same first bits (as a file made to
    /// could arrange), and for a print no record has.
    #[test]
    fn records_are_found_by_print_through_the_directory() {
        use super::ByPrint;
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let spread: Vec<u64> = (0..5000).map(|_| next()).collect();
        let crowded: Vec<u64> = (0..5000).map(|i| (next() >> 40) | (i % 7) << 60).collect();
        for prints in [spread, crowded, vec![], vec![u64::MAX, 0, u64::MAX]] {
            // Some prints twice, each entry its own row.
            let entries: Vec<(u64, super::Written)> = prints
                .iter()
                .chain(prints.iter().step_by(3))
                .enumerate()
                .map(|(row, &p)| (p, (row as i64, "freeblock")))
                .collect();
            let by = ByPrint::new(entries.clone());
            for &(p, _) in entries.iter().chain(&[(12345, (0, "none"))]) {
                let mut want: Vec<i64> = entries
                    .iter()
                    .filter(|e| e.0 == p)
                    .map(|e| e.1 .0)
                    .collect();
                let mut got: Vec<i64> = by.equal(p).iter().map(|e| e.1 .0).collect();
                want.sort_unstable();
                got.sort_unstable();
                assert_eq!(got, want, "print {p:#x}");
            }
        }
    }

    #[test]
    fn values_compare_exactly_and_numbers_by_value() {
        // A deleted `abc` is not the live `ABC` of a NOCASE column.
        assert!(!same_value(V::Text(b"abc"), V::Text(b"ABC")));
        assert!(!same_value(V::Text(b"5"), V::Integer(5)));
        assert!(!same_value(V::Blob(b"abc"), V::Text(b"abc")));
        assert!(same_value(V::Integer(5), V::Real(5.0)));
        assert!(!same_value(V::Integer(5), V::Real(5.5)));
        assert!(same_value(V::Null, V::Null));
    }

    #[test]
    fn rows_of_the_same_values_have_one_fingerprint() {
        let a = [V::Integer(1), V::Text(b"hi"), V::Null];
        let b = [V::Real(1.0), V::Text(b"hi"), V::Null];
        let c = [V::Integer(1), V::Blob(b"hi"), V::Null];
        assert_eq!(fingerprint(a), fingerprint(b));
        assert_ne!(fingerprint(a), fingerprint(c));
    }
}
