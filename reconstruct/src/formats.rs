//! What an application writes in a text column: a URL, a file path, a MIME type, a UUID,
//! a phone number, … A catalogue entry names the format of such columns (`formats`), as
//! the application's source writes them. With the schema lost, two known tables of one
//! shape (an id and a text) fit an inferred table's records alike; the format of its texts
//! tells them apart where the shapes cannot, and a format its texts do not have rules a
//! table out.

use pager::{TextEncoding, Value};
use serde::{Deserialize, Serialize};

/// A format of text values, recognised by its syntax alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// `http://`, `https://` or `ftp://` and a host: a web address.
    Url,
    /// Any URI: a scheme (`file`, `application`, `content`, …), a colon, and the rest.
    Uri,
    /// An absolute file path (`/storage/emulated/0/…`, `C:\…`).
    Path,
    /// An e-mail address.
    Email,
    /// A phone number: digits (three to twenty), with `+`, spaces, dashes, dots and
    /// parentheses.
    Phone,
    /// A MIME type (`text/plain`, `image/jpeg; q=1`).
    Mime,
    /// A UUID in its 8-4-4-4-12 hexadecimal form.
    Uuid,
    /// Hexadecimal digits, an even number and at least sixteen (a hash, a key).
    Hex,
    /// A JSON object or array.
    Json,
    /// A locale (`en`, `en_US`, `pt-BR`, `zh_Hant_TW`).
    Locale,
    /// A host name of two labels or more (`www.example.org`).
    Host,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 11] = [
        Format::Url,
        Format::Uri,
        Format::Path,
        Format::Email,
        Format::Phone,
        Format::Mime,
        Format::Uuid,
        Format::Hex,
        Format::Json,
        Format::Locale,
        Format::Host,
    ];

    /// Its name in a catalogue entry (`url`, `mime`, …).
    pub fn name(self) -> &'static str {
        match self {
            Format::Url => "url",
            Format::Uri => "uri",
            Format::Path => "path",
            Format::Email => "email",
            Format::Phone => "phone",
            Format::Mime => "mime",
            Format::Uuid => "uuid",
            Format::Hex => "hex",
            Format::Json => "json",
            Format::Locale => "locale",
            Format::Host => "host",
        }
    }

    /// The format of a name; `None` for one this reader does not know.
    pub fn parse(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Whether `text` has this format.
    pub fn holds(self, text: &str) -> bool {
        if text.is_empty() || text.len() > 4096 {
            return false;
        }
        match self {
            Format::Url => url(text),
            Format::Uri => uri(text),
            Format::Path => path(text),
            Format::Email => email(text),
            Format::Phone => phone(text),
            Format::Mime => mime(text),
            Format::Uuid => uuid(text),
            Format::Hex => {
                text.len() >= 16
                    && text.len().is_multiple_of(2)
                    && text.bytes().all(|b| b.is_ascii_hexdigit())
            }
            Format::Json => json(text),
            Format::Locale => locale(text),
            Format::Host => host(text),
        }
    }
}

/// Not empty, and no white space or control character.
fn solid(text: &str) -> bool {
    !text.is_empty() && !text.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// A URI scheme: a letter, then letters, digits, `+`, `-` or `.`; two characters at least
/// (one is a drive letter).
fn scheme(s: &str) -> bool {
    s.len() >= 2
        && s.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

fn uri(text: &str) -> bool {
    text.split_once(':')
        .is_some_and(|(s, rest)| scheme(s) && solid(rest))
}

fn url(text: &str) -> bool {
    let lower = text.get(..8).unwrap_or(text).to_ascii_lowercase();
    let rest = ["http://", "https://", "ftp://"]
        .iter()
        .find(|p| lower.starts_with(*p))
        .map(|p| &text[p.len()..]);
    rest.is_some_and(|r| {
        solid(r)
            && !r.starts_with('/')
            && r.split(['/', '?', '#'])
                .next()
                .is_some_and(|h| !h.is_empty())
    })
}

fn path(text: &str) -> bool {
    let unix = text.len() >= 2 && text.starts_with('/') && !text.starts_with("//");
    let windows = text.len() >= 4
        && matches!(text.as_bytes(), [d, b':', b'\\' | b'/', ..] if d.is_ascii_alphabetic());
    (unix || windows) && !text.contains(['\0', '\n', '\r'])
}

fn email(text: &str) -> bool {
    let Some((local, domain)) = text.rsplit_once('@') else {
        return false;
    };
    solid(local) && !local.contains('@') && host(domain)
}

fn phone(text: &str) -> bool {
    let body = text.strip_prefix('+').unwrap_or(text);
    let digits = body.bytes().filter(u8::is_ascii_digit).count();
    (3..=20).contains(&digits)
        && body
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b' ' | b'-' | b'.' | b'(' | b')'))
}

fn mime(text: &str) -> bool {
    let essence = text.split(';').next().unwrap_or_default().trim();
    let Some((kind, sub)) = essence.split_once('/') else {
        return false;
    };
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&b))
    };
    let kind = kind.to_ascii_lowercase();
    let known = [
        "application",
        "audio",
        "chemical",
        "font",
        "image",
        "inode",
        "message",
        "model",
        "multipart",
        "text",
        "video",
    ];
    (known.contains(&kind.as_str()) || kind.starts_with("x-")) && token(sub)
}

fn uuid(text: &str) -> bool {
    text.len() == 36
        && text.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

fn json(text: &str) -> bool {
    let t = text.trim();
    (t.starts_with('{') && t.ends_with('}')) || (t.starts_with('[') && t.ends_with(']'))
}

fn locale(text: &str) -> bool {
    let mut parts = text.split(['_', '-']);
    let language = parts.next().unwrap_or_default();
    (2..=3).contains(&language.len())
        && language.bytes().all(|b| b.is_ascii_lowercase())
        && text.len() <= 20
        && parts.all(|p| (2..=8).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_alphanumeric()))
}

fn host(text: &str) -> bool {
    let labels: Vec<&str> = text.split('.').collect();
    labels.len() >= 2
        && text.len() <= 253
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
        // A number (`1.5`) is not a host: its last label has a letter.
        && labels.last().is_some_and(|l| l.bytes().any(|b| b.is_ascii_alphabetic()))
}

/// What an application writes in one column: one of `formats`, and, where it always
/// writes one, a prefix (Zeitgeist's actors are all `application://…`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ColumnFormat {
    /// The formats its values have, any one of them (an MMS address is a phone number
    /// or an e-mail address).
    pub formats: Vec<Format>,
    /// Text every value starts with.
    pub prefix: Option<String>,
}

/// How a column's sampled values bear on its known format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nine values in ten have it (at least [`FORMAT_LEAST`] texts compared): evidence of
    /// the table, weighing one, or two where the prefix is part of it.
    Held(u64),
    /// Fewer than half have it (at least [`FORMAT_LEAST`] compared): the column is not
    /// this one.
    Contradicted,
    /// Too few values to say, or between the two.
    Unknown,
}

/// Values compared, at least, before a format is held or contradicted.
pub const FORMAT_LEAST: usize = 4;

impl ColumnFormat {
    /// Whether `text` has the format.
    pub fn holds(&self, text: &str) -> bool {
        self.prefix.as_deref().is_none_or(|p| text.starts_with(p))
            && self.formats.iter().any(|f| f.holds(text))
    }

    /// What the values at one record position say of the format: NULLs say nothing; a
    /// value that is not text (or text that does not decode) does not have it.
    pub fn judge<'v>(
        &self,
        values: impl Iterator<Item = &'v Value>,
        encoding: TextEncoding,
    ) -> Verdict {
        let (mut held, mut seen) = (0usize, 0usize);
        for v in values {
            let text = match v {
                Value::Null => continue,
                Value::Text(t) => encoding.decode(t),
                _ => None,
            };
            seen += 1;
            held += usize::from(text.is_some_and(|t| self.holds(&t)));
        }
        if seen < FORMAT_LEAST {
            Verdict::Unknown
        } else if held * 10 >= seen * 9 {
            Verdict::Held(1 + u64::from(self.prefix.is_some()))
        } else if held * 2 < seen {
            Verdict::Contradicted
        } else {
            Verdict::Unknown
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holds(f: Format, yes: &[&str], no: &[&str]) {
        for t in yes {
            assert!(f.holds(t), "{} should hold {t:?}", f.name());
        }
        for t in no {
            assert!(!f.holds(t), "{} should not hold {t:?}", f.name());
        }
    }

    #[test]
    fn each_format_knows_its_values_and_no_others() {
        holds(
            Format::Url,
            &[
                "https://example.org/a?b#c",
                "http://10.0.0.1:8080",
                "FTP://h/x",
            ],
            &[
                "https://",
                "https:///x",
                "example.org",
                "https://a b",
                "file:///etc",
            ],
        );
        holds(
            Format::Uri,
            &[
                "file:///home/u/a.txt",
                "application://firefox.desktop",
                "content://sms/1",
                "mailto:a@b.c",
            ],
            &["C:\\x", "note", "a: b", ":x"],
        );
        holds(
            Format::Path,
            &["/storage/emulated/0/DCIM/a.jpg", "C:\\Users\\a", "/x"],
            &["/", "//server/share", "relative/a", "/a\nb"],
        );
        holds(
            Format::Email,
            &["user@example.org", "a.b+c@mail.example.co.uk"],
            &["@example.org", "user@", "user@host", "a b@example.org"],
        );
        holds(
            Format::Phone,
            &["+1 (555) 010-2030", "5551234", "+441632960983", "112"],
            &["12", "555-CALL", "+", "1234567890123456789012"],
        );
        holds(
            Format::Mime,
            &[
                "text/plain",
                "image/jpeg",
                "application/vnd.ms-excel; charset=x",
                "x-scheme-handler/http",
            ],
            &["text", "plain/text", "image/", "note/a b"],
        );
        holds(
            Format::Uuid,
            &["123e4567-e89b-12d3-a456-426614174000"],
            &[
                "123e4567e89b12d3a456426614174000",
                "123e4567-e89b-12d3-a456-42661417400g",
            ],
        );
        holds(
            Format::Hex,
            &["00ff00ff00ff00ff"],
            &["00ff", "00ff00ff00ff00f", "xyz0000000000000"],
        );
        holds(Format::Json, &["{\"a\": 1}", " [1, 2] "], &["{", "a", "1"]);
        holds(
            Format::Locale,
            &["en", "en_US", "pt-BR", "zh_Hant_TW"],
            &["EN", "english", "e", "en_"],
        );
        holds(
            Format::Host,
            &["www.example.org", "example.org", "xn--bcher-kva.example"],
            &["example", "1.5", "-a.org", "a..org", "https://example.org"],
        );
        for f in Format::ALL {
            assert_eq!(Format::parse(f.name()), Some(f));
            assert!(!f.holds(""));
        }
    }

    #[test]
    fn a_column_is_judged_by_nine_values_in_ten() {
        let actor = ColumnFormat {
            formats: vec![Format::Uri],
            prefix: Some("application://".into()),
        };
        let text = |s: &str| Value::Text(s.as_bytes().to_vec());
        let apps: Vec<Value> = (0..9)
            .map(|i| text(&format!("application://app{i}.desktop")))
            .chain([Value::Null, text("file:///x")])
            .collect();
        assert_eq!(
            actor.judge(apps.iter(), TextEncoding::Utf8),
            Verdict::Held(2)
        );
        let files: Vec<Value> = (0..9).map(|i| text(&format!("file:///f{i}"))).collect();
        assert_eq!(
            actor.judge(files.iter(), TextEncoding::Utf8),
            Verdict::Contradicted
        );
        assert_eq!(
            actor.judge(files[..3].iter(), TextEncoding::Utf8),
            Verdict::Unknown
        );
        let numbers = vec![Value::Integer(1); 5];
        assert_eq!(
            actor.judge(numbers.iter(), TextEncoding::Utf8),
            Verdict::Contradicted
        );
        // UTF-16 text is judged as its characters.
        let utf16: Vec<Value> = (0..5)
            .map(|i| Value::Text(TextEncoding::Utf16le.encode(&format!("application://{i}"))))
            .collect();
        assert_eq!(
            actor.judge(utf16.iter(), TextEncoding::Utf16le),
            Verdict::Held(2)
        );
    }
}
