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

/// An `INSERT INTO target(cols) VALUES (new.x, …)` inside an `INSERT` trigger: every
/// value is a column of the new row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TriggerInsert {
    /// The table the trigger is on.
    pub table: String,
    /// The table the trigger inserts into.
    pub target: String,
    /// (target column, column of the new row) pairs, in statement order.
    pub pairs: Vec<(String, String)>,
}

/// Whether `name` is one of SQLite's names for a rowid (`rowid`, `oid`, `_rowid_`), or
/// FTS3/4's `docid`.
pub fn is_rowid_name(name: &str) -> bool {
    ["rowid", "oid", "_rowid_", "docid"]
        .iter()
        .any(|n| n.eq_ignore_ascii_case(name))
}

/// The inserts of an `INSERT` trigger that copy columns of the new row as they are. A
/// trigger on another event, or an insert whose values are anything but `new.column`,
/// gives nothing: only a plain copy is evidence.
pub fn trigger_inserts(sql: &str) -> Vec<TriggerInsert> {
    let tokens = tokenize(sql);
    let word = |i: usize, w: &str| {
        tokens
            .get(i)
            .is_some_and(|t| matches!(t, Token::Word(x) if x.eq_ignore_ascii_case(w)))
    };
    // The event: `INSERT ON table`, before BEGIN.
    let Some(begin) = (0..tokens.len()).find(|i| word(*i, "begin")) else {
        return Vec::new();
    };
    let Some(on) = (0..begin).find(|i| word(*i, "insert") && word(i + 1, "on")) else {
        return Vec::new();
    };
    let Some(table) = tokens.get(on + 2).and_then(Token::name) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut i = begin;
    while i < tokens.len() {
        if word(i, "insert") && word(i + 1, "into") {
            if let Some((insert, next)) = copy_insert(&tokens, i + 2, &table) {
                out.push(insert);
                i = next;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// `target ( cols ) VALUES ( new.x , … )` from token `at`; the insert and the token after.
fn copy_insert(tokens: &[Token], at: usize, table: &str) -> Option<(TriggerInsert, usize)> {
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
    (columns.len() == values.len()).then(|| {
        (
            TriggerInsert {
                table: table.to_string(),
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

    #[test]
    fn a_copying_insert_trigger_is_read() {
        let sql = "CREATE TRIGGER notes_ai AFTER INSERT ON \"notes\" BEGIN
              -- keep the index in step
              INSERT INTO notes_fts(rowid, title, [body]) VALUES (new.id, NEW.title, new.\"body\");
            END";
        assert_eq!(
            trigger_inserts(sql),
            vec![TriggerInsert {
                table: "notes".into(),
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
        // A computed value, another event, a SELECT: nothing.
        for sql in [
            "CREATE TRIGGER t AFTER INSERT ON n BEGIN INSERT INTO f(rowid, b) VALUES (new.id, upper(new.b)); END",
            "CREATE TRIGGER t AFTER UPDATE ON n BEGIN INSERT INTO f(rowid, b) VALUES (new.id, new.b); END",
            "CREATE TRIGGER t AFTER INSERT ON n BEGIN INSERT INTO f(rowid, b) SELECT new.id, new.b; END",
            "CREATE TRIGGER t AFTER INSERT ON n BEGIN INSERT INTO f(rowid, b) VALUES (new.id); END",
            "CREATE TRIGGER t AFTER INSERT ON n BEGIN INSERT INTO f(rowid, b) VALUES (new.id, new.b",
            "",
        ] {
            assert_eq!(trigger_inserts(sql), Vec::new(), "{sql}");
        }
    }

    #[test]
    fn every_copying_insert_of_a_trigger_is_read() {
        let sql = "CREATE TRIGGER t AFTER INSERT ON n FOR EACH ROW BEGIN
            UPDATE c SET k = 1;
            INSERT INTO f1(docid, a) VALUES(new.rowid, new.a);
            INSERT INTO 'f2'(rowid, b) VALUES(new.k, new.b);
            END";
        let got = trigger_inserts(sql);
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].target, "f2");
        assert!(is_rowid_name(&got[0].pairs[0].0));
        assert!(is_rowid_name(&got[0].pairs[0].1));
    }
}
