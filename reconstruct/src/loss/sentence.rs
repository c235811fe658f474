//! The words of a report: each [`LossSignal`] rendered to its sentence, lower-case, its
//! names in backticks, its counts agreeing with their nouns ([`N`]).

use std::fmt;

use super::{FailingCheck, LossSignal};

/// `n` and a noun, the noun in the plural unless `n` is 1 ("1 page", "2 pages"); a
/// noun phrase ending in a preposition ("row with") puts its first word in the plural.
pub struct N<'a>(pub u64, pub &'a str);

impl fmt::Display for N<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let N(n, noun) = *self;
        if n == 1 {
            return write!(f, "1 {noun}");
        }
        match noun.split_once(' ') {
            Some((first, rest)) if rest == "with" => write!(f, "{n} {first}s {rest}"),
            _ => write!(f, "{n} {noun}s"),
        }
    }
}

/// "is" or "are", agreeing with `n`.
fn are(n: u64) -> &'static str {
    if n == 1 {
        "is"
    } else {
        "are"
    }
}

/// "was" or "were", agreeing with `n`.
fn was(n: u64) -> &'static str {
    if n == 1 {
        "was"
    } else {
        "were"
    }
}

/// "1 row of `t` fails one of its CHECK constraints (rowid 2), as the file holds it ...".
impl fmt::Display for FailingCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let FailingCheck {
            table,
            rows,
            rowids,
        } = self;
        let (fails, it) = if *rows == 1 {
            ("fails", "it")
        } else {
            ("fail", "them")
        };
        write!(
            f,
            "{} of `{table}` {fails} one of its CHECK constraints",
            N(*rows, "row")
        )?;
        if !rowids.is_empty() {
            let listed: Vec<String> = rowids.iter().map(i64::to_string).collect();
            let more = if (rowids.len() as u64) < *rows {
                ", ..."
            } else {
                ""
            };
            let noun = if rowids.len() == 1 { "rowid" } else { "rowids" };
            write!(f, " ({noun} {}{more})", listed.join(", "))?;
        }
        write!(f, ", as the file holds {it} and as SQLite reads {it} (written with the checks off, judged otherwise by the SQLite that wrote {it}, or changed by damage that left the record whole: these look alike)")
    }
}

impl fmt::Display for LossSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use LossSignal::*;
        match self {
            RootUnreadable { table } => write!(f, "table `{table}`: its root page is unreadable"),
            SubtreesLost { table, pointers } => write!(f, "table `{table}`: {} of its b-tree could not be followed", N(*pointers, "child pointer")),
            RowsFromOrphans { table, rows } => write!(f, "table `{table}`: {} came from orphan pages, outside its b-tree", N(*rows, "row")),
            DamagedFields { table, rows } => write!(f, "table `{table}`: {} damaged fields, each stored as NULL or as its index entry's value (the bytes read are registered)", N(*rows, "row with")),
            UndecodableCells { table, cells } => write!(f, "table `{table}`: {} could not be decoded", N(*cells, "cell")),
            KeyConflicts { table, rows } => write!(f, "table `{table}`: {} conflicted with a row of the same key", N(*rows, "row")),
            RowsRefused { table, rows } => write!(f, "table `{table}`: {} {} refused by its constraints", N(*rows, "row"), was(*rows)),
            TreeMoved { table, root, named_by, sampled, fitting, fitting_named, by_index } => {
                write!(f, "table `{table}` is filled from root page {root}, which the schema row of `{named_by}` names: {fitting} of {sampled} sampled records fit `{table}`, {fitting_named} fit `{named_by}`")?;
                if let Some([looked_up, held, held_named]) = by_index {
                    write!(f, ", and of {looked_up} rows looked up, {held} are in the indexes of `{table}` and {held_named} in those of `{named_by}`")?;
                }
                write!(f, " (the schema's root pages were swapped or damaged)")
            }
            RootNotATable { table, root } => write!(f, "table `{table}`: its schema row names root page {root}, an index b-tree page, which holds none of its rows"),
            RootOfAnotherTable { table, root, holder } => write!(f, "table `{table}`: its schema row names root page {root}, which holds the rows of `{holder}`: its own rows are not found"),
            PageOfAnother { table, page, holder, cells, outside, sampled, fitting, looked_up, held } => {
                write!(f, "table `{table}`: page {page}, which its b-tree reaches, is {holder}'s: {outside} of its {cells} keys lie outside the range the pointer assigns, {fitting} of {sampled} records fit the table")?;
                if *looked_up > 0 {
                    write!(f, ", {held} of {looked_up} rows are in its indexes")?;
                }
                write!(f, "; its rows are not read as the table's")
            }
            TreeKeptApart { table, root, named_by, sampled, fitting_named } => write!(f, "the b-tree at root page {root}, which the schema row of `{named_by}` names, is kept as `{table}`: {fitting_named} of {sampled} sampled records fit `{named_by}` and no other table is free to take them"),
            RowsUnwritable { table, rows } => write!(f, "table `{table}`: {} {} refused by the table and by lost_and_found, and {} not in the output", N(*rows, "row"), was(*rows), are(*rows)),
            TreeFindings { table, findings } => write!(f, "table `{table}`: {} in its b-tree", N(*findings, "finding")),
            LostAndFound { rows, groups } => write!(f, "{} from {} could not be given a table and {} in `lost_and_found`", N(*rows, "row"), N(*groups, "orphan page group"), are(*rows)),
            PagesUnreadable { pages } => write!(f, "{} {} zeroed or unrecognisable and may have held rows", N(*pages, "page"), are(*pages)),
            SchemaDamaged { findings } => write!(f, "the schema table has {}; tables may be missing", N(*findings, "finding")),
            FileCutShort { finding } => write!(f, "the file is cut short: {finding}"),
            PagesMissing { present, declared } => write!(f, "the file holds {} but its header declares {declared}: pages are missing", N(u64::from(*present), "page")),
            WalUnusable { path, why } => write!(f, "the write-ahead log `{path}` is unusable ({why}): transactions committed only to it are not recovered"),
            WalFramesIgnored { frame, after: 0 } => write!(f, "write-ahead log frame {frame}, the last, is damaged: the transaction it commits is not recovered"),
            WalFramesIgnored { frame, after } => write!(f, "write-ahead log frame {frame} is damaged: {} after it {} ignored, and transactions among them are not recovered", N(u64::from(*after), "frame"), are(u64::from(*after))),
            JournalPageSizeRefused { journal, database } => write!(f, "the hot rollback journal is not rolled back: its header's page size {journal} disagrees with the database's {database} and no page 1 image in it proves it; the file is read as it stands and may hold changes of a transaction that never committed"),
            WalPageSizeRefused { wal, database } => write!(f, "the write-ahead log is not read: its header's page size {wal} disagrees with the database's {database} and no page 1 image in it proves it; transactions committed only to it are not recovered"),
            JournalRecordsDamaged { records } => write!(f, "{} of the hot rollback journal {} damaged and not rolled back: the pages they held may carry changes of a transaction that never committed", N(u64::from(*records), "record"), are(u64::from(*records))),
            PlaceholdersMade { parent, child, placeholders, children } => write!(f, "{children} `{child}` rows kept under {placeholders} reconstructed `{parent}` rows; the `{parent}` rows themselves are lost (their metadata is gone) and the placeholders are registered as fabricated"),
            ParentsNotRebuilt { parent, child, keys, children, reason } => write!(f, "{children} `{child}` rows reference {keys} lost `{parent}` rows that could not be rebuilt ({reason}); they are kept with dangling references"),
            FullTextRebuildFailed { table, content, error } => write!(f, "full-text table `{table}`: rebuilding its index from `{content}` failed: {error}"),
            FullTextContentless { table } => write!(f, "full-text table `{table}` is contentless: no stored text to rebuild its index from, so the index is lost"),
            FullTextContentMissing { table, shadow } => write!(f, "full-text table `{table}`: its stored text (`{shadow}`) is not in the schema; the table is left empty"),
            FullTextIncomplete { table, rows, damaged, unreadable, refused, tree } => write!(
                f,
                "full-text table `{table}`: {rows} rows of its stored text rebuilt ({damaged} with damaged text); {unreadable} cells unreadable, {refused} rows refused{}",
                tree.as_ref().map_or(String::new(), |t| format!("; {t}"))
            ),
            RtreeIncomplete { table, node_table, rows, refused, damaged, tree, defects } => write!(
                f,
                "R-tree `{table}`: {rows} rows rebuilt from `{node_table}`; {refused} refused, {damaged} node blobs damaged{}; node defects: {}",
                tree.as_ref().map_or(String::new(), |t| format!("; {t}")),
                if defects.is_empty() { "none".to_string() } else { defects.join("; ") }
            ),
            VirtualTableEmpty { table, shadows } => write!(
                f,
                "virtual table `{table}` is created empty: its data in {} is not carried over",
                shadows.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")
            ),
            TableMissing { table, profile } => write!(f, "table `{table}` (expected by profile `{profile}`) is missing: the schema is damaged and may have lost it"),
            PartialRowsRebuilt { table, rows, registry } => write!(f, "{rows} lost `{table}` rows rebuilt from their index entries and full-text copies alone (other columns are NULL); registered in `{registry}`"),
            PartialRowsRefused { table, rows, registry } => write!(f, "{rows} lost `{table}` rows proven by index entries or full-text copies could not be rebuilt: the table's constraints refused what the evidence holds; their known values are kept in `{registry}`"),
            RowsLost { table, lower: 0, upper, .. } => match upper {
                // Nothing proves a row lost: only that some may be.
                None => write!(f, "table `{table}`: rows may be lost, how many is unknown"),
                Some(u) => write!(f, "table `{table}`: up to {} may be lost", N(*u, "row")),
            },
            RowsLost { table, lower, upper, by_index, by_text } => write!(
                f,
                "table `{table}`: at least {} lost{}{}",
                N(*lower, "row"),
                upper.map_or(", how many more is unknown".to_string(), |u| format!(", at most {u}")),
                match (by_index, by_text) {
                    (0, 0) => String::new(),
                    (i, 0) => format!(" ({i} proven by index entries)"),
                    (0, t) => format!(" ({t} proven by full-text copies)"),
                    (i, t) => format!(" ({i} proven by index entries, {t} more by full-text copies)"),
                }
            ),
            TableInferred { table, rows } => write!(f, "table `{table}` holds {} of a table whose schema row is lost; its name and columns are inferred", N(*rows, "row")),
            TableNotRecovered { table, reason } => write!(f, "table `{table}` could not be recovered: {reason}"),
            ObjectNotCreated { object, name, reason } => write!(f, "the {object} `{name}` could not be re-created: {reason}"),
            SqliteCheckUnexplained { problems, first } => write!(f, "SQLite's own integrity check of the source reports {} that no other sign of loss or finding explains (the first: {first}): rows may be missing or in another table's place", N(*problems, "problem")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn sentences_of_table_counts_agree_in_number() {
        let say = |s: LossSignal| s.to_string();
        let t = || "a".to_string();
        assert_eq!(
            say(LossSignal::RootUnreadable { table: t() }),
            "table `a`: its root page is unreadable"
        );
        assert_eq!(
            say(LossSignal::SubtreesLost {
                table: t(),
                pointers: 1
            }),
            "table `a`: 1 child pointer of its b-tree could not be followed"
        );
        assert_eq!(
            say(LossSignal::SubtreesLost {
                table: t(),
                pointers: 2
            }),
            "table `a`: 2 child pointers of its b-tree could not be followed"
        );
        assert_eq!(
            say(LossSignal::DamagedFields {
                table: t(),
                rows: 1
            }),
            "table `a`: 1 row with damaged fields, each stored as NULL or as its index entry's value (the bytes read are registered)"
        );
        assert_eq!(
            say(LossSignal::DamagedFields {
                table: t(),
                rows: 3
            }),
            "table `a`: 3 rows with damaged fields, each stored as NULL or as its index entry's value (the bytes read are registered)"
        );
        assert_eq!(
            say(LossSignal::RowsRefused {
                table: t(),
                rows: 1
            }),
            "table `a`: 1 row was refused by its constraints"
        );
        assert_eq!(
            say(LossSignal::RowsUnwritable { table: t(), rows: 2 }),
            "table `a`: 2 rows were refused by the table and by lost_and_found, and are not in the output"
        );
        assert_eq!(
            say(LossSignal::LostAndFound { rows: 1, groups: 1 }),
            "1 row from 1 orphan page group could not be given a table and is in `lost_and_found`"
        );
        assert_eq!(
            say(LossSignal::PagesUnreadable { pages: 4 }),
            "4 pages are zeroed or unrecognisable and may have held rows"
        );
    }

    #[test]
    fn sentences_of_rows_lost_say_their_bounds_and_proof() {
        let lost = |lower, upper, by_index, by_text| {
            LossSignal::RowsLost {
                table: "m".into(),
                lower,
                upper,
                by_index,
                by_text,
            }
            .to_string()
        };
        assert_eq!(
            lost(1, None, 0, 0),
            "table `m`: at least 1 row lost, how many more is unknown"
        );
        assert_eq!(
            lost(3, Some(7), 3, 0),
            "table `m`: at least 3 rows lost, at most 7 (3 proven by index entries)"
        );
        assert_eq!(
            lost(2, Some(2), 0, 2),
            "table `m`: at least 2 rows lost, at most 2 (2 proven by full-text copies)"
        );
        assert_eq!(
            lost(5, None, 3, 2),
            "table `m`: at least 5 rows lost, how many more is unknown (3 proven by index entries, 2 more by full-text copies)"
        );
        // Nothing proves a row lost ("at least 0 rows lost" was said).
        assert_eq!(
            lost(0, None, 0, 0),
            "table `m`: rows may be lost, how many is unknown"
        );
        assert_eq!(lost(0, Some(1), 0, 0), "table `m`: up to 1 row may be lost");
    }

    #[test]
    fn sentences_with_optional_parts() {
        let page = |looked_up| LossSignal::PageOfAnother {
            table: "a".into(),
            page: 7,
            holder: "`b`".into(),
            cells: 10,
            outside: 9,
            sampled: 10,
            fitting: 0,
            looked_up,
            held: 0,
        };
        assert_eq!(
            page(0).to_string(),
            "table `a`: page 7, which its b-tree reaches, is `b`'s: 9 of its 10 keys lie outside the range the pointer assigns, 0 of 10 records fit the table; its rows are not read as the table's"
        );
        assert_eq!(
            page(4).to_string(),
            "table `a`: page 7, which its b-tree reaches, is `b`'s: 9 of its 10 keys lie outside the range the pointer assigns, 0 of 10 records fit the table, 0 of 4 rows are in its indexes; its rows are not read as the table's"
        );
        let rtree = |defects: Vec<String>, tree: Option<String>| LossSignal::RtreeIncomplete {
            table: "geo".into(),
            node_table: "geo_node".into(),
            rows: 5,
            refused: 1,
            damaged: 2,
            tree,
            defects,
        };
        assert_eq!(
            rtree(vec![], None).to_string(),
            "R-tree `geo`: 5 rows rebuilt from `geo_node`; 1 refused, 2 node blobs damaged; node defects: none"
        );
        assert_eq!(
            rtree(owned(&["node 3 cut short", "node 9 loops"]), Some("1 page lost".into()))
                .to_string(),
            "R-tree `geo`: 5 rows rebuilt from `geo_node`; 1 refused, 2 node blobs damaged; 1 page lost; node defects: node 3 cut short; node 9 loops"
        );
        assert_eq!(
            LossSignal::VirtualTableEmpty {
                table: "docs".into(),
                shadows: owned(&["docs_data", "docs_idx"]),
            }
            .to_string(),
            "virtual table `docs` is created empty: its data in `docs_data`, `docs_idx` is not carried over"
        );
        assert_eq!(
            LossSignal::PlaceholdersMade {
                parent: "sessions".into(),
                child: "messages".into(),
                placeholders: 2,
                children: 5,
            }
            .to_string(),
            "5 `messages` rows kept under 2 reconstructed `sessions` rows; the `sessions` rows themselves are lost (their metadata is gone) and the placeholders are registered as fabricated"
        );
    }

    /// One signal of every kind. The match makes a new variant fail to compile here
    /// until it is added, so that its sentence is checked below.
    fn one_of_each() -> Vec<LossSignal> {
        use LossSignal::*;
        let t = || "a".to_string();
        #[rustfmt::skip]
        let all = vec![
            RootUnreadable { table: t() },
            SubtreesLost { table: t(), pointers: 2 },
            RowsFromOrphans { table: t(), rows: 2 },
            DamagedFields { table: t(), rows: 2 },
            UndecodableCells { table: t(), cells: 2 },
            KeyConflicts { table: t(), rows: 2 },
            RowsUnwritable { table: t(), rows: 2 },
            TreeMoved { table: t(), root: 3, named_by: "b".into(), sampled: 4, fitting: 4, fitting_named: 0, by_index: None },
            TreeMoved { table: t(), root: 3, named_by: "b".into(), sampled: 4, fitting: 4, fitting_named: 4, by_index: Some([4, 4, 0]) },
            RootNotATable { table: t(), root: 3 },
            RootOfAnotherTable { table: t(), root: 3, holder: "b".into() },
            PageOfAnother { table: t(), page: 3, holder: "the freelist".into(), cells: 4, outside: 4, sampled: 4, fitting: 0, looked_up: 0, held: 0 },
            TreeKeptApart { table: "a_2".into(), root: 3, named_by: "a".into(), sampled: 4, fitting_named: 0 },
            RowsRefused { table: t(), rows: 2 },
            TreeFindings { table: t(), findings: 2 },
            LostAndFound { rows: 2, groups: 2 },
            PagesUnreadable { pages: 2 },
            SchemaDamaged { findings: 2 },
            FileCutShort { finding: "file length is not a multiple of the page size 512: 1280 bytes".into() },
            PagesMissing { present: 2, declared: 3 },
            WalUnusable { path: "db-wal".into(), why: "header checksum mismatch".into() },
            WalFramesIgnored { frame: 3, after: 2 },
            JournalRecordsDamaged { records: 2 },
            JournalPageSizeRefused { journal: 65536, database: 4096 },
            WalPageSizeRefused { wal: 1024, database: 4096 },
            PlaceholdersMade { parent: "p".into(), child: "c".into(), placeholders: 2, children: 2 },
            ParentsNotRebuilt { parent: "p".into(), child: "c".into(), keys: 2, children: 2, reason: "placeholders were not asked for".into() },
            FullTextRebuildFailed { table: "f".into(), content: t(), error: "SQL logic error".into() },
            FullTextContentless { table: "f".into() },
            FullTextContentMissing { table: "f".into(), shadow: "f_content".into() },
            FullTextIncomplete { table: "f".into(), rows: 2, damaged: 1, unreadable: 1, refused: 0, tree: None },
            RtreeIncomplete { table: "r".into(), node_table: "r_node".into(), rows: 2, refused: 0, damaged: 1, tree: None, defects: Vec::new() },
            VirtualTableEmpty { table: "v".into(), shadows: owned(&["v_data"]) },
            TableMissing { table: t(), profile: "agent".into() },
            PartialRowsRebuilt { table: t(), rows: 2, registry: "salvage_partial_rows".into() },
            PartialRowsRefused { table: t(), rows: 2, registry: "salvage_partial_rows".into() },
            RowsLost { table: t(), lower: 2, upper: None, by_index: 0, by_text: 0 },
            TableInferred { table: t(), rows: 2 },
            TableNotRecovered { table: t(), reason: "no CREATE statement".into() },
            ObjectNotCreated { object: "index".into(), name: "i".into(), reason: "no such column: x".into() },
            SqliteCheckUnexplained { problems: 2, first: "row 1 missing from index i".into() },
        ];
        for s in &all {
            match s {
                RootUnreadable { .. }
                | SubtreesLost { .. }
                | RowsFromOrphans { .. }
                | DamagedFields { .. }
                | UndecodableCells { .. }
                | KeyConflicts { .. }
                | RowsUnwritable { .. }
                | TreeMoved { .. }
                | RootNotATable { .. }
                | RootOfAnotherTable { .. }
                | PageOfAnother { .. }
                | TreeKeptApart { .. }
                | RowsRefused { .. }
                | TreeFindings { .. }
                | LostAndFound { .. }
                | PagesUnreadable { .. }
                | SchemaDamaged { .. }
                | FileCutShort { .. }
                | PagesMissing { .. }
                | WalUnusable { .. }
                | WalFramesIgnored { .. }
                | JournalRecordsDamaged { .. }
                | JournalPageSizeRefused { .. }
                | WalPageSizeRefused { .. }
                | PlaceholdersMade { .. }
                | ParentsNotRebuilt { .. }
                | FullTextRebuildFailed { .. }
                | FullTextContentless { .. }
                | FullTextContentMissing { .. }
                | FullTextIncomplete { .. }
                | RtreeIncomplete { .. }
                | VirtualTableEmpty { .. }
                | TableMissing { .. }
                | PartialRowsRebuilt { .. }
                | PartialRowsRefused { .. }
                | RowsLost { .. }
                | TableInferred { .. }
                | TableNotRecovered { .. }
                | ObjectNotCreated { .. }
                | SqliteCheckUnexplained { .. } => {}
            }
        }
        all
    }

    #[test]
    fn every_sentence_keeps_the_house_style() {
        // Lower case (a name of a thing aside), no trailing period, names in backticks,
        // no placeholder left unfilled.
        for s in one_of_each() {
            let text = s.to_string();
            let first = text.chars().next().unwrap();
            assert!(
                !first.is_uppercase() || text.starts_with("R-tree ") || text.starts_with("SQLite"),
                "{text}"
            );
            assert!(!text.ends_with('.') && text.trim() == text, "{text}");
            assert!(!text.contains('{') && !text.contains('}'), "{text}");
            assert!(
                !text.contains(" 2 row ") && !text.contains(" 1 rows "),
                "{text}"
            );
        }
    }

    #[test]
    fn a_count_of_one_is_singular() {
        let ones = [
            LossSignal::SchemaDamaged { findings: 1 },
            LossSignal::PagesMissing {
                present: 1,
                declared: 3,
            },
            LossSignal::WalFramesIgnored { frame: 3, after: 1 },
            LossSignal::JournalRecordsDamaged { records: 1 },
        ];
        for s in ones {
            let text = s.to_string();
            for plural in ["1 findings", "1 pages", "1 frames are", "1 records are"] {
                assert!(!text.contains(plural), "{text}");
            }
        }
    }

    #[test]
    fn every_sentence_names_what_it_is_about() {
        for s in one_of_each() {
            let text = s.to_string();
            let names: Vec<&str> = match &s {
                LossSignal::LostAndFound { .. } => vec!["`lost_and_found`"],
                LossSignal::PagesUnreadable { .. }
                | LossSignal::SchemaDamaged { .. }
                | LossSignal::FileCutShort { .. }
                | LossSignal::PagesMissing { .. }
                | LossSignal::WalFramesIgnored { .. }
                | LossSignal::JournalRecordsDamaged { .. }
                | LossSignal::JournalPageSizeRefused { .. }
                | LossSignal::WalPageSizeRefused { .. } => vec![],
                LossSignal::WalUnusable { .. } => vec!["`db-wal`"],
                LossSignal::PlaceholdersMade { .. } | LossSignal::ParentsNotRebuilt { .. } => {
                    vec!["`p`", "`c`"]
                }
                LossSignal::FullTextRebuildFailed { .. } => vec!["`f`", "`a`"],
                LossSignal::FullTextContentless { .. }
                | LossSignal::FullTextIncomplete { .. }
                | LossSignal::FullTextContentMissing { .. } => vec!["`f`"],
                LossSignal::RtreeIncomplete { .. } => vec!["`r`", "`r_node`"],
                LossSignal::VirtualTableEmpty { .. } => vec!["`v`", "`v_data`"],
                LossSignal::TreeKeptApart { .. } => vec!["`a_2`", "`a`"],
                LossSignal::ObjectNotCreated { .. } => vec!["`i`"],
                LossSignal::SqliteCheckUnexplained { .. } => vec![],
                _ => vec!["`a`"],
            };
            for name in names {
                assert!(text.contains(name), "{name} not in: {text}");
            }
        }
    }

    #[test]
    fn a_failing_check_names_its_rows_in_number() {
        let one = FailingCheck {
            table: "t".into(),
            rows: 1,
            rowids: vec![2],
        };
        let s = one.to_string();
        assert!(s.starts_with("1 row of `t` fails one of its CHECK constraints (rowid 2), as the file holds it and as SQLite reads it"), "{s}");
        let some = FailingCheck {
            table: "t".into(),
            rows: 30,
            rowids: vec![2, 5],
        };
        assert!(some.to_string().starts_with(
            "30 rows of `t` fail one of its CHECK constraints (rowids 2, 5, ...), as the file holds them"
        ));
        let keyed = FailingCheck {
            table: "k".into(),
            rows: 2,
            rowids: vec![],
        };
        assert!(keyed
            .to_string()
            .starts_with("2 rows of `k` fail one of its CHECK constraints, as"));
    }
}
