//! The collations a schema's SQL names: each word after `COLLATE`, outside strings and
//! comments, unquoted. A recovery gives a stand-in to those its SQLite lacks before it
//! makes the tables and indexes that name them.

/// The collation names `sql` uses, in order of first use, each once (compared without
/// case, as SQLite compares them).
pub fn collations_named(sql: &str) -> Vec<String> {
    let words = words(sql);
    let mut out: Vec<String> = Vec::new();
    for pair in words.windows(2) {
        let [keyword, name] = pair else { continue };
        if keyword.eq_ignore_ascii_case("COLLATE")
            && !name.is_empty()
            && !out.iter().any(|n| n.eq_ignore_ascii_case(name))
        {
            out.push(name.clone());
        }
    }
    out
}

/// The words of `sql`: identifiers and keywords, quoted names unquoted; strings,
/// comments and punctuation dropped (punctuation ends a word, and a string stands as an
/// empty word, so that `COLLATE 'x'` names nothing).
fn words(sql: &str) -> Vec<String> {
    let b: Vec<char> = sql.chars().collect();
    let at = |i: usize| b.get(i).copied().unwrap_or('\0');
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = at(i);
        if c == '-' && at(i + 1) == '-' {
            while i < b.len() && at(i) != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            i += 2;
            while i + 1 < b.len() && !(at(i) == '*' && at(i + 1) == '/') {
                i += 1;
            }
            i += 2;
        } else if matches!(c, '"' | '`' | '[' | '\'') {
            let close = if c == '[' { ']' } else { c };
            let mut word = String::new();
            i += 1;
            while i < b.len() {
                if at(i) == close {
                    if close != ']' && at(i + 1) == close {
                        word.push(close);
                        i += 2;
                        continue;
                    }
                    break;
                }
                word.push(at(i));
                i += 1;
            }
            i += 1;
            out.push(if c == '\'' { String::new() } else { word });
        } else if c.is_alphanumeric() || c == '_' || c == '$' {
            let mut word = String::new();
            while i < b.len() && (at(i).is_alphanumeric() || at(i) == '_' || at(i) == '$') {
                word.push(at(i));
                i += 1;
            }
            out.push(word);
        } else {
            if !c.is_whitespace() {
                out.push(String::new());
            }
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_collate_clause_once_quoted_or_not() {
        assert_eq!(
            collations_named(
                "CREATE TABLE raw(n TEXT COLLATE PHONEBOOK, s TEXT collate \"localized\", \
                 t TEXT COLLATE phonebook, d TEXT DEFAULT 'x COLLATE fake' /* COLLATE no */)"
            ),
            ["PHONEBOOK", "localized"]
        );
        assert_eq!(
            collations_named("CREATE INDEX i ON t(a COLLATE [My Order] DESC)"),
            ["My Order"]
        );
        assert!(collations_named("CREATE TABLE t(a COLLATE 'x')").is_empty());
    }
}
