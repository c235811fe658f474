//! Text copies: a full-text table that stores its own text (FTS3/4/5, neither external
//! content nor contentless) keeps a second copy of some columns of another table, row by
//! row, under a rowid that names the row it was copied from. When that row's page is
//! lost, the copy proves the row existed and gives back its text.
//!
//! What ties the two tables is evidence, never a guess from names:
//! - a trigger that copies every inserted row, `AFTER INSERT ON t BEGIN INSERT INTO
//!   fts(rowid, a, b) VALUES (new.id, new.a, new.b); END` ([`trigger_inserts`]);
//! - an application profile that states the copy (Chroma keeps each document in
//!   `embedding_fulltext_search` under its embedding's id).

use pager::Value;

pub mod resolve;

pub use resolve::{resolve, Columns};

/// One table's columns copied into a full-text table.
#[derive(Clone, Debug, PartialEq)]
pub struct TextCopy {
    /// The full-text table holding the copy.
    pub fts: String,
    /// The table the text was copied from.
    pub table: String,
    /// The table column the full-text rowid equals; `None`: the table's own rowid.
    pub key: Option<String>,
    /// Columns with a fixed value in every row the copy stands for (Chroma: `key =
    /// 'chroma:document'`), in the database encoding.
    pub when: Vec<(String, Value)>,
    /// (table column, full-text column) pairs the copy holds.
    pub columns: Vec<(String, String)>,
    /// Where the copy was learnt: `trigger NAME` or `profile NAME`.
    pub origin: String,
}

/// An `INSERT INTO target(cols) VALUES (new.x, …)` inside an `AFTER INSERT` trigger:
/// one row of values, every value a column of the new row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TriggerInsert {
    /// The table the trigger inserts into.
    pub target: String,
    /// (target column, column of the new row) pairs, in statement order, as written.
    pub pairs: Vec<(String, String)>,
}

/// The event a trigger fires on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TriggerEvent {
    /// `INSERT`.
    Insert,
    /// `DELETE`.
    Delete,
    /// `UPDATE` (of any columns).
    Update,
}

/// What a trigger's SQL says, as far as text copies need it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TriggerInfo {
    /// The table the trigger is on.
    pub table: String,
    /// The event it fires on.
    pub event: TriggerEvent,
    /// `AFTER` (not `BEFORE` or `INSTEAD OF`): it fires only for a change that happened.
    pub after: bool,
    /// For `UPDATE OF col, …`: the columns whose update fires it (empty: any update).
    pub update_of: Vec<String>,
    /// It has a `WHEN` clause: it fires only for some rows.
    pub when: bool,
    /// Tables its body writes to (`INSERT INTO`, `REPLACE INTO`, `DELETE FROM`, `UPDATE`).
    pub writes: Vec<String>,
    /// Its plain copying inserts (only for an `AFTER INSERT` trigger).
    pub copies: Vec<TriggerInsert>,
}

/// Reads a `CREATE TRIGGER` statement: its table, event and timing, the tables its body
/// writes to, and the inserts that copy the new row's columns as they are (an insert whose
/// values are anything but one row of `new.column` is no copy). `None` when the statement
/// is not read as a trigger.
pub fn read_trigger(sql: &str) -> Option<TriggerInfo> {
    let tokens = tokenize(sql);
    let word = |i: usize, w: &str| {
        tokens
            .get(i)
            .is_some_and(|t| matches!(t, Token::Word(x) if x.eq_ignore_ascii_case(w)))
    };
    // CREATE [TEMP] TRIGGER [IF NOT EXISTS] [schema.]name [BEFORE|AFTER|INSTEAD OF]
    //     DELETE|INSERT|UPDATE [OF col, …] ON table [FOR EACH ROW] [WHEN expr] BEGIN …
    let mut i = (0..tokens.len().min(4)).find(|i| word(*i, "trigger"))? + 1;
    if word(i, "if") && word(i + 1, "not") && word(i + 2, "exists") {
        i += 3;
    }
    i += 1; // the name
    if tokens.get(i) == Some(&Token::Punct('.')) {
        i += 2;
    }
    let after = word(i, "after");
    if after || word(i, "before") {
        i += 1;
    } else if word(i, "instead") && word(i + 1, "of") {
        i += 2;
    }
    let event = if word(i, "insert") {
        TriggerEvent::Insert
    } else if word(i, "delete") {
        TriggerEvent::Delete
    } else if word(i, "update") {
        TriggerEvent::Update
    } else {
        return None;
    };
    i += 1;
    let mut update_of = Vec::new();
    if event == TriggerEvent::Update && word(i, "of") {
        i += 1;
        loop {
            update_of.push(tokens.get(i)?.name()?);
            i += 1;
            if tokens.get(i) != Some(&Token::Punct(',')) {
                break;
            }
            i += 1;
        }
    }
    if !word(i, "on") {
        return None;
    }
    let table = tokens.get(i + 1)?.name()?;
    i += 2;
    if word(i, "for") && word(i + 1, "each") && word(i + 2, "row") {
        i += 3;
    }
    let when = word(i, "when");
    let begin = (i..tokens.len()).find(|i| word(*i, "begin"))?;
    let mut writes = Vec::new();
    let mut copies = Vec::new();
    let mut i = begin;
    while i < tokens.len() {
        // INSERT [OR action] INTO t, REPLACE INTO t, DELETE FROM t, UPDATE [OR action] t.
        let or = usize::from(word(i + 1, "or")) * 2;
        let target = if (word(i, "insert") || word(i, "replace")) && word(i + 1 + or, "into") {
            Some(i + 2 + or)
        } else if word(i, "delete") && word(i + 1, "from") {
            Some(i + 2)
        } else if word(i, "update") {
            Some(i + 1 + or)
        } else {
            None
        };
        if let Some(name) = target.and_then(|t| tokens.get(t)).and_then(Token::name) {
            if !writes
                .iter()
                .any(|w: &String| w.eq_ignore_ascii_case(&name))
            {
                writes.push(name);
            }
        }
        if event == TriggerEvent::Insert && after && word(i, "insert") && word(i + 1, "into") {
            if let Some((insert, next)) = copy_insert(&tokens, i + 2) {
                copies.push(insert);
                i = next;
                continue;
            }
        }
        i += 1;
    }
    Some(TriggerInfo {
        table,
        event,
        after,
        update_of,
        when,
        writes,
        copies,
    })
}

/// `target ( cols ) VALUES ( new.x , … )` from token `at`, ending the statement; the
/// insert and the token after.
fn copy_insert(tokens: &[Token], at: usize) -> Option<(TriggerInsert, usize)> {
    let target = tokens.get(at)?.name()?;
    let (columns, at) = list(tokens, at + 1, |t, i| Some((t.get(i)?.name()?, i + 1)))?;
    if !tokens
        .get(at)
        .is_some_and(|t| matches!(t, Token::Word(w) if w.eq_ignore_ascii_case("values")))
    {
        return None;
    }
    let (values, next) = list(tokens, at + 1, |t, i| {
        let new = t.get(i)?.name()?;
        if !new.eq_ignore_ascii_case("new") || t.get(i + 1)? != &Token::Punct('.') {
            return None;
        }
        Some((t.get(i + 2)?.name()?, i + 3))
    })?;
    // One row of values, then the statement's end: a second row would be another row's.
    let ends = match tokens.get(next) {
        None | Some(Token::Punct(';')) => true,
        Some(Token::Word(w)) => w.eq_ignore_ascii_case("end"),
        _ => false,
    };
    (ends && columns.len() == values.len()).then(|| {
        (
            TriggerInsert {
                target,
                pairs: columns.into_iter().zip(values).collect(),
            },
            next,
        )
    })
}

/// A parenthesised, comma-separated list of items read by `item`; the items and the token
/// after the closing parenthesis.
fn list<T>(
    tokens: &[Token],
    at: usize,
    item: impl Fn(&[Token], usize) -> Option<(T, usize)>,
) -> Option<(Vec<T>, usize)> {
    if tokens.get(at)? != &Token::Punct('(') {
        return None;
    }
    let mut out = Vec::new();
    let mut i = at + 1;
    loop {
        let (x, next) = item(tokens, i)?;
        out.push(x);
        match tokens.get(next)? {
            Token::Punct(',') => i = next + 1,
            Token::Punct(')') => return Some((out, next + 1)),
            _ => return None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    /// A bare word (keyword or identifier).
    Word(String),
    /// A quoted identifier ("…", […], `…`).
    Quoted(String),
    /// A string literal.
    Literal(String),
    /// Any other character that is not white space.
    Punct(char),
}

impl Token {
    /// The identifier a token names, bare or quoted.
    fn name(&self) -> Option<String> {
        match self {
            Token::Word(w) | Token::Quoted(w) => Some(w.clone()),
            // SQLite accepts a string literal where an identifier is expected.
            Token::Literal(s) => Some(s.clone()),
            Token::Punct(_) => None,
        }
    }
}

/// SQL tokens: words, quoted identifiers, string literals and single characters;
/// comments and white space dropped. Unterminated quotes run to the end.
fn tokenize(sql: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            '-' if chars.peek() == Some(&'-') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
            }
            '\'' | '"' | '`' | '[' => {
                let close = if c == '[' { ']' } else { c };
                let mut text = String::new();
                while let Some(x) = chars.next() {
                    if x == close {
                        // A doubled quote is one quote character (not inside […]).
                        if close != ']' && chars.peek() == Some(&close) {
                            chars.next();
                            text.push(close);
                            continue;
                        }
                        break;
                    }
                    text.push(x);
                }
                out.push(if c == '\'' {
                    Token::Literal(text)
                } else {
                    Token::Quoted(text)
                });
            }
            c if c.is_alphanumeric() || c == '_' || c == '$' => {
                let mut word = String::from(c);
                while let Some(&x) = chars.peek() {
                    if x.is_alphanumeric() || x == '_' || x == '$' {
                        word.push(x);
                        chars.next();
                    } else {
                        break;
                    }
                }
                out.push(Token::Word(word));
            }
            c => out.push(Token::Punct(c)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copies(sql: &str) -> Vec<TriggerInsert> {
        read_trigger(sql).map(|t| t.copies).unwrap_or_default()
    }

    #[test]
    fn a_copying_insert_trigger_is_read() {
        let sql = "CREATE TRIGGER notes_ai AFTER INSERT ON \"notes\" BEGIN
              -- keep the index in step
              INSERT INTO notes_fts(rowid, title, [body]) VALUES (new.id, NEW.title, new.\"body\");
            END";
        let t = read_trigger(sql).unwrap();
        assert_eq!(
            (t.table.as_str(), t.event, t.after),
            ("notes", TriggerEvent::Insert, true)
        );
        assert_eq!(t.writes, ["notes_fts"]);
        assert_eq!(
            t.copies,
            vec![TriggerInsert {
                target: "notes_fts".into(),
                pairs: vec![
                    ("rowid".into(), "id".into()),
                    ("title".into(), "title".into()),
                    ("body".into(), "body".into()),
                ],
            }]
        );
    }

    #[test]
    fn anything_but_a_plain_copy_is_no_evidence() {
        // A computed value, another event, BEFORE, a SELECT, two rows, a short list.
        for sql in [
            "CREATE TRIGGER t AFTER INSERT ON n BEGIN INSERT INTO f(rowid, b) VALUES (new.id, upper(new.b)); END",
            "CREATE TRIGGER t AFTER UPDATE ON n BEGIN INSERT INTO f(rowid, b) VALUES (new.id, new.b); END",
            "CREATE TRIGGER t BEFORE INSERT ON n BEGIN INSERT INTO f(rowid, b) VALUES (new.id, new.b); END",
            "CREATE TRIGGER t AFTER INSERT ON n BEGIN INSERT INTO f(rowid, b) SELECT new.id, new.b; END",
            "CREATE TRIGGER t AFTER INSERT ON n BEGIN INSERT INTO f(rowid, b) VALUES (new.id, new.b), (new.p, new.c); END",
            "CREATE TRIGGER t AFTER INSERT ON n BEGIN INSERT INTO f(rowid, b) VALUES (new.id); END",
            "CREATE TRIGGER t AFTER INSERT ON n BEGIN INSERT INTO f(rowid, b) VALUES (new.id, new.b",
            "",
        ] {
            assert_eq!(copies(sql), Vec::new(), "{sql}");
        }
    }

    #[test]
    fn the_tables_a_trigger_writes_to_are_read() {
        let sql = "CREATE TRIGGER t AFTER UPDATE OF body ON n FOR EACH ROW BEGIN
            UPDATE OR IGNORE c SET k = 1;
            INSERT OR REPLACE INTO f1(docid, a) VALUES(new.rowid, new.a);
            DELETE FROM 'f2' WHERE rowid = old.k;
            REPLACE INTO f3 VALUES (1);
            END";
        let t = read_trigger(sql).unwrap();
        assert_eq!((t.table.as_str(), t.event), ("n", TriggerEvent::Update));
        assert_eq!(t.writes, ["c", "f1", "f2", "f3"]);
        assert!(t.copies.is_empty(), "only an INSERT trigger copies");
        let t = read_trigger("CREATE TRIGGER d AFTER DELETE ON n BEGIN INSERT INTO f(f, rowid, b) VALUES ('delete', old.id, old.b); END").unwrap();
        assert_eq!(
            (t.event, t.writes),
            (TriggerEvent::Delete, vec!["f".to_string()])
        );
        assert_eq!(read_trigger("CREATE VIEW v AS SELECT 1"), None);
        let t = read_trigger("CREATE TRIGGER IF NOT EXISTS main.\"after\" UPDATE OF a, \"b\" ON n WHEN new.a > 0 BEGIN DELETE FROM f; END").unwrap();
        assert_eq!(
            (t.after, t.when, t.update_of),
            (false, true, vec!["a".to_string(), "b".to_string()])
        );
    }

    #[test]
    fn a_trigger_named_like_a_keyword_is_read_by_position() {
        let t = read_trigger(
            "CREATE TRIGGER after BEFORE INSERT ON notes BEGIN INSERT INTO f(rowid, a) VALUES (new.id, new.a); END",
        )
        .unwrap();
        assert!(!t.after);
        assert!(t.copies.is_empty(), "a BEFORE trigger copies nothing");
    }

    #[test]
    fn a_long_hostile_header_is_read_in_linear_time() {
        let sql = format!(
            "CREATE TRIGGER t AFTER {} BEGIN END",
            "insert ".repeat(200_000)
        );
        let started = std::time::Instant::now();
        assert_eq!(read_trigger(&sql), None);
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    /// Any arrangement of the words a trigger is made of is read without a panic.
    #[test]
    fn any_token_soup_is_read_without_a_panic() {
        const WORDS: [&str; 24] = [
            "CREATE", "TRIGGER", "IF", "NOT", "EXISTS", "AFTER", "BEFORE", "INSTEAD", "OF",
            "INSERT", "UPDATE", "DELETE", "ON", "BEGIN", "END", "INTO", "VALUES", "new", ".", "(",
            ")", ",", ";", "'x",
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            let mut sql = String::new();
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            let len = (state >> 58) as usize;
            for _ in 0..len {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1);
                sql.push_str(WORDS[(state >> 33) as usize % WORDS.len()]);
                sql.push(' ');
            }
            let _ = read_trigger(&sql);
            let _ = read_trigger(&format!("CREATE TRIGGER t AFTER INSERT ON n BEGIN {sql}"));
        }
    }
}
