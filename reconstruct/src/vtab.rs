//! Virtual tables as their CREATE statements declare them: the module, and for full-text
//! tables (FTS3/4/5) where their text lives.
//!
//! Full-text tables are derived data: their shadow tables are never copied.
//! Each is rebuilt on the output from canonical rows instead:
//!
//! - its own stored text (the default: the source's `NAME_content` shadow table holds every
//!   row's columns), inserted into the new table, which indexes it afresh;
//! - an external content table (`content=TABLE`): the recovered rows of that table, by
//!   the module's `'rebuild'` command;
//! - contentless (`content=''`): nothing stores the text, so the index cannot be rebuilt.

/// Where an FTS table's text lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Content {
    /// In its own `NAME_content` shadow table.
    Own,
    /// In another table of the schema.
    External(String),
    /// Nowhere: only the index had it.
    Contentless,
}

/// The full-text columns of a record of a `NAME_content` shadow table, in order: its
/// first column is its INTEGER PRIMARY KEY (stored as NULL, the rowid holds it).
pub fn content_columns(record: &[pager::Value]) -> &[pager::Value] {
    record.get(1..).unwrap_or_default()
}

/// The module a `CREATE VIRTUAL TABLE` statement names (lower case), whatever white space
/// surrounds `USING`.
pub fn module(sql: &str) -> Option<String> {
    let lower = sql.to_ascii_lowercase();
    let using = find_word(&lower, "using")?;
    Some(
        lower
            .get(using + 5..)?
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect(),
    )
}

/// The FTS flavour of a `CREATE VIRTUAL TABLE` statement, or `None` for another module.
pub fn classify(sql: &str) -> Option<Content> {
    let lower = sql.to_ascii_lowercase();
    let using = find_word(&lower, "using")?;
    let module = module(sql)?;
    if !matches!(module.as_str(), "fts3" | "fts4" | "fts5") {
        return None;
    }
    let mut from = using;
    while let Some(at) = find_word(lower.get(from..)?, "content").map(|i| i + from) {
        from = at + 7;
        let rest = sql.get(from..)?.trim_start();
        let Some(rest) = rest.strip_prefix('=') else {
            continue;
        };
        let value = option_value(rest.trim_start());
        return Some(if value.is_empty() {
            Content::Contentless
        } else {
            Content::External(value)
        });
    }
    Some(Content::Own)
}

/// Whether a `CREATE VIRTUAL TABLE` statement sets the module option `name` (`name=…`),
/// such as FTS4's `compress`.
pub fn has_option(sql: &str, name: &str) -> bool {
    let lower = sql.to_ascii_lowercase();
    let Some(using) = find_word(&lower, "using") else {
        return false;
    };
    let mut from = using;
    while let Some(at) = lower
        .get(from..)
        .and_then(|rest| find_word(rest, name))
        .map(|i| i + from)
    {
        from = at + name.len();
        if lower
            .get(from..)
            .is_some_and(|rest| rest.trim_start().starts_with('='))
        {
            return true;
        }
    }
    false
}

/// The suffixes of the shadow tables FTS3, FTS4 and FTS5 make (`NAME_content`, …).
const FTS_SHADOWS: [&str; 8] = [
    "content", "segments", "segdir", "docsize", "stat", "data", "idx", "config",
];

/// The full-text table of `fts_tables` whose shadow table `name` would be, if any.
pub fn fts_shadow_of<'n>(name: &str, fts_tables: &'n [String]) -> Option<&'n str> {
    let lower = name.to_ascii_lowercase();
    fts_tables
        .iter()
        .find(|t| {
            lower
                .strip_prefix(&format!("{}_", t.to_ascii_lowercase()))
                .is_some_and(|suffix| FTS_SHADOWS.contains(&suffix))
        })
        .map(String::as_str)
}

/// The columns a full-text table declares, in order, from its `CREATE VIRTUAL TABLE`
/// statement: each module argument that is not an option (`name=value`, or FTS3's
/// `tokenize NAME`), by its first word, dequoted. `None` when the statement has no
/// argument list or declares no column. What SQLite itself would parse, without the
/// module: a full-text table whose tokenizer this build lacks keeps its text in a plain
/// table of these columns.
pub fn fts_columns(sql: &str) -> Option<Vec<String>> {
    let lower = sql.to_ascii_lowercase();
    let using = find_word(&lower, "using")?;
    let open = using + sql.get(using..)?.find('(')?;
    let mut columns = Vec::new();
    for arg in split_arguments(sql.get(open + 1..)?) {
        let arg = arg.trim();
        let first = first_word(arg);
        let option = top_level_equals(arg) || first.eq_ignore_ascii_case("tokenize");
        if !option && !first.is_empty() {
            columns.push(first);
        }
    }
    (!columns.is_empty()).then_some(columns)
}

/// The tokenizer an FTS3 or FTS4 table declares (`tokenize NAME …` or `tokenize=NAME …`),
/// dequoted, or `None` for another module or the default (`simple`). An application may
/// declare one of its own (Thunderbird's `mozporter`), which no SQLite ships.
pub fn fts3_tokenizer(sql: &str) -> Option<String> {
    if !matches!(module(sql)?.as_str(), "fts3" | "fts4") {
        return None;
    }
    let lower = sql.to_ascii_lowercase();
    let using = find_word(&lower, "using")?;
    let open = using + sql.get(using..)?.find('(')?;
    split_arguments(sql.get(open + 1..)?)
        .into_iter()
        .find_map(|arg| {
            let arg = arg.trim();
            let rest = arg
                .get(..8)
                .filter(|w| w.eq_ignore_ascii_case("tokenize"))
                .and_then(|_| arg.get(8..))?;
            // `tokenize` as a word: a column named `tokenizer_x` is a column.
            if !rest.starts_with(|c: char| c.is_whitespace() || c == '=') {
                return None;
            }
            let rest = rest.trim_start();
            let rest = rest.strip_prefix('=').unwrap_or(rest).trim_start();
            // As SQLite reads it: a quoted name whole, else the run of identifier
            // characters (`porter(x)` and `porter-x` name `porter`).
            let name = match rest.starts_with(['\'', '"', '`', '[']) {
                true => first_word(rest),
                false => rest
                    .chars()
                    .take_while(|c| {
                        c.is_ascii_alphanumeric() || *c == '_' || *c == '$' || !c.is_ascii()
                    })
                    .collect(),
            };
            (!name.is_empty()).then_some(name)
        })
}

/// The arguments of a module argument list that starts after its `(`: split at commas
/// outside quotes and nested parentheses, up to the list's closing `)`.
fn split_arguments(s: &str) -> Vec<&str> {
    let (mut args, mut depth, mut start, mut quote) = (Vec::new(), 0usize, 0usize, None);
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"' | '`') => quote = Some(c),
            (None, '[') => quote = Some(']'),
            (None, '(') => depth += 1,
            (None, ')') if depth == 0 => {
                args.push(&s[start..i]);
                return args;
            }
            (None, ')') => depth -= 1,
            (None, ',') if depth == 0 => {
                args.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    args
}

/// Whether an argument holds `=` outside quotes: an option, not a column.
fn top_level_equals(arg: &str) -> bool {
    let mut quote = None;
    for c in arg.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"' | '`') => quote = Some(c),
            (None, '[') => quote = Some(']'),
            (None, '=') => return true,
            _ => {}
        }
    }
    false
}

/// An argument's first word, dequoted (a quoted name may hold spaces).
fn first_word(arg: &str) -> String {
    match arg.chars().next() {
        Some('\'' | '"' | '`' | '[') => option_value(arg),
        _ => arg
            .split(|c: char| c.is_whitespace())
            .next()
            .unwrap_or("")
            .to_string(),
    }
}

/// Index of `word` in `s` as a whole word (not part of an identifier such as
/// `content_rowid`).
fn find_word(s: &str, word: &str) -> Option<usize> {
    let ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    let mut from = 0;
    while let Some(i) = s.get(from..)?.find(word).map(|i| i + from) {
        let before = s.get(..i)?.chars().next_back();
        let after = s.get(i + word.len()..)?.chars().next();
        if !ident(before) && !ident(after) {
            return Some(i);
        }
        from = i + word.len();
    }
    None
}

/// An option's value: quoted ('…', "…", […], `…`) or bare up to `,` or `)`.
fn option_value(s: &str) -> String {
    let close = match s.chars().next() {
        Some('\'') => Some('\''),
        Some('"') => Some('"'),
        Some('`') => Some('`'),
        Some('[') => Some(']'),
        _ => None,
    };
    match close {
        Some(close) => s
            .get(1..)
            .and_then(|v| v.split(close).next())
            .unwrap_or("")
            .to_string(),
        None => s.split([',', ')']).next().unwrap_or("").trim().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_fts3_tokenizer_is_read_in_either_spelling() {
        let t = |sql: &str| fts3_tokenizer(sql);
        assert_eq!(
            t("CREATE VIRTUAL TABLE m USING fts3(tokenize mozporter, body, subject)"),
            Some("mozporter".into())
        );
        assert_eq!(
            t("create virtual table m using FTS4(a, TOKENIZE = \"icu\" en_US)"),
            Some("icu".into())
        );
        assert_eq!(t("CREATE VIRTUAL TABLE m USING fts4(a, tokenizer_x)"), None);
        assert_eq!(
            t("CREATE VIRTUAL TABLE m USING fts4(a, tokenize=porter-x)"),
            Some("porter".into())
        );
        assert_eq!(
            t("CREATE VIRTUAL TABLE m USING fts3(a, tokenize porter(x))"),
            Some("porter".into())
        );
        assert_eq!(t("CREATE VIRTUAL TABLE m USING fts4(a, b)"), None);
        assert_eq!(
            t("CREATE VIRTUAL TABLE m USING fts5(a, tokenize=porter)"),
            None
        );
    }

    #[test]
    fn the_three_kinds_of_content_are_told_apart() {
        assert_eq!(
            classify("CREATE VIRTUAL TABLE t USING fts5(a, b)"),
            Some(Content::Own)
        );
        assert_eq!(
            classify("create virtual table t using FTS5(a, content='docs', content_rowid='id')"),
            Some(Content::External("docs".into()))
        );
        assert_eq!(
            classify("CREATE VIRTUAL TABLE t USING fts4(a, content=\"\")"),
            Some(Content::Contentless)
        );
        assert_eq!(
            classify("CREATE VIRTUAL TABLE t USING fts4(content=notes, body)"),
            Some(Content::External("notes".into()))
        );
        // A column named like the option is not the option.
        assert_eq!(
            classify("CREATE VIRTUAL TABLE t USING fts5(content_text, content)"),
            Some(Content::Own)
        );
        assert_eq!(
            classify("CREATE VIRTUAL TABLE r USING rtree(id, x0, x1)"),
            None
        );
        let zipped = "CREATE VIRTUAL TABLE t USING fts4(a, compress=zip, uncompress=unzip)";
        assert_eq!(
            fts_columns("CREATE VIRTUAL TABLE t USING fts5(title, \"the body\" UNINDEXED, tokenize = 'app (x, y)', prefix='2 3')"),
            Some(vec!["title".to_string(), "the body".to_string()])
        );
        assert_eq!(
            fts_columns("CREATE VIRTUAL TABLE t USING fts3(a TEXT, [b c], tokenize porter)"),
            Some(vec!["a".to_string(), "b c".to_string()])
        );
        assert_eq!(fts_columns("CREATE VIRTUAL TABLE t USING fts4"), None);
        assert!(has_option(zipped, "compress"));
        assert!(!has_option(
            "CREATE VIRTUAL TABLE t USING fts4(compress, b)",
            "compress"
        ));
    }
}
