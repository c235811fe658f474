//! A small, tolerant XML reader for the Nemetz corpus answer keys.
//!
//! The keys are simple (no namespaces that matter, no mixed content that matters, no
//! entities in practice), but two of them are not well-formed XML:
//!
//! * `01-18.xml` carries the raw control characters U+000B and U+000C (the table name),
//!   which XML 1.0 forbids anywhere in a document. We keep every character verbatim.
//! * `05-04.xml` never closes the `<sql>` element of its index `<element>`; the closing
//!   `</element>` arrives while `<sql>` is still open. We close unclosed elements
//!   implicitly when an ancestor's end tag arrives, and ignore end tags that match
//!   nothing that is open.
//!
//! Every such repair is reported as a warning so that the caller can record it.
//! Text is kept byte-exact (no trimming, no end-of-line normalisation), because leading
//! spaces, tabs and newlines are significant in table names and cell contents.

/// One element of the tree. `text` is the concatenation of the element's own character
/// data (not that of its children), with entities decoded.
#[derive(Debug, Clone, Default)]
pub struct Element {
    pub name: String,
    pub attrs: Vec<(String, String)>,
    pub children: Vec<Element>,
    pub text: String,
}

impl Element {
    pub fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }

    pub fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }

    /// Text of the first child called `name` (exact, untrimmed).
    pub fn child_text(&self, name: &str) -> Option<&str> {
        self.child(name).map(|c| c.text.as_str())
    }

    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Result of a parse: a synthetic document node whose children are the top-level
/// elements, plus a list of human-readable notes about every repair made.
#[derive(Debug)]
pub struct Parsed {
    pub document: Element,
    pub warnings: Vec<String>,
}

fn line_of(src: &str, pos: usize) -> usize {
    src.as_bytes()[..pos.min(src.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn decode_entities(raw: &str) -> String {
    if !raw.contains('&') {
        return raw.to_string();
    }
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp..];
        let decoded = after.find(';').filter(|&semi| semi <= 12).and_then(|semi| {
            let ent = &after[1..semi];
            let ch = match ent {
                "lt" => Some('<'),
                "gt" => Some('>'),
                "amp" => Some('&'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                _ if ent.starts_with("#x") || ent.starts_with("#X") => {
                    u32::from_str_radix(&ent[2..], 16)
                        .ok()
                        .and_then(char::from_u32)
                }
                _ if ent.starts_with('#') => ent[1..].parse::<u32>().ok().and_then(char::from_u32),
                _ => None,
            };
            ch.map(|c| (c, semi))
        });
        match decoded {
            Some((c, semi)) => {
                out.push(c);
                rest = &after[semi + 1..];
            }
            None => {
                // Not an entity we know: keep the ampersand literally (tolerant).
                out.push('&');
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Parse the attributes and name of a start tag body (between `<` and `>`, without a
/// trailing `/`).
fn parse_tag_body(body: &str) -> (String, Vec<(String, String)>) {
    let body = body.trim_start();
    let name_end = body
        .find(|c: char| c.is_whitespace() || c == '/' || c == '>')
        .unwrap_or(body.len());
    let name = body[..name_end].to_string();
    let mut attrs = Vec::new();
    let mut rest = &body[name_end..];
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        let Some(eq) = rest.find('=') else { break };
        let key = rest[..eq].trim().to_string();
        let after = rest[eq + 1..].trim_start();
        let Some(q) = after.chars().next() else { break };
        if q == '"' || q == '\'' {
            let inner = &after[1..];
            let end = inner.find(q).unwrap_or(inner.len());
            attrs.push((key, decode_entities(&inner[..end])));
            rest = if end < inner.len() {
                &inner[end + 1..]
            } else {
                ""
            };
        } else {
            // Unquoted attribute value (not XML, but tolerate it).
            let end = after.find(char::is_whitespace).unwrap_or(after.len());
            attrs.push((key, decode_entities(&after[..end])));
            rest = &after[end..];
        }
    }
    (name, attrs)
}

/// Find the `>` that ends a start tag beginning at `from`, skipping quoted attribute values.
fn find_tag_end(src: &str, from: usize) -> Option<usize> {
    let bytes = src.as_bytes();
    let mut quote: Option<u8> = None;
    for (i, &b) in bytes.iter().enumerate().skip(from) {
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'"' || b == b'\'' => quote = Some(b),
            None if b == b'>' => return Some(i),
            None => {}
        }
    }
    None
}

pub fn parse(src: &str) -> Parsed {
    let mut warnings: Vec<String> = Vec::new();
    // stack[0] is the synthetic document node.
    let mut stack: Vec<Element> = vec![Element {
        name: "#document".into(),
        ..Default::default()
    }];
    let mut pos = 0usize;
    let bytes = src.as_bytes();
    let mut reported_ctrl: Vec<char> = Vec::new();

    fn attach(stack: &mut Vec<Element>) {
        let done = stack.pop().expect("stack underflow");
        stack.last_mut().expect("document node").children.push(done);
    }

    while pos < bytes.len() {
        if bytes[pos] != b'<' {
            let end = src[pos..].find('<').map(|i| pos + i).unwrap_or(src.len());
            let raw = &src[pos..end];
            for (off, c) in raw.char_indices() {
                let bad = (c < ' ' && c != '\t' && c != '\n' && c != '\r')
                    || c == '\u{FFFE}'
                    || c == '\u{FFFF}';
                if bad && !reported_ctrl.contains(&c) {
                    reported_ctrl.push(c);
                    warnings.push(format!(
                        "line {}: character U+{:04X} is not allowed in XML 1.0; kept verbatim",
                        line_of(src, pos + off),
                        c as u32
                    ));
                }
            }
            stack
                .last_mut()
                .unwrap()
                .text
                .push_str(&decode_entities(raw));
            pos = end;
            continue;
        }
        let rest = &src[pos..];
        if rest.starts_with("<?") {
            pos = rest.find("?>").map(|i| pos + i + 2).unwrap_or(src.len());
        } else if rest.starts_with("<!--") {
            pos = rest.find("-->").map(|i| pos + i + 3).unwrap_or(src.len());
        } else if rest.starts_with("<![CDATA[") {
            let end = rest.find("]]>").unwrap_or(rest.len());
            stack.last_mut().unwrap().text.push_str(&rest[9..end]);
            pos = (pos + end + 3).min(src.len());
        } else if rest.starts_with("<!") {
            pos = rest.find('>').map(|i| pos + i + 1).unwrap_or(src.len());
        } else if rest.starts_with("</") {
            let end = rest.find('>').unwrap_or(rest.len());
            let name = rest[2..end].trim();
            match stack.iter().rposition(|e| e.name == name) {
                Some(idx) if idx > 0 => {
                    while stack.len() > idx + 1 {
                        let unclosed = stack.last().unwrap().name.clone();
                        warnings.push(format!(
                            "line {}: <{}> was never closed; closed implicitly by </{}>",
                            line_of(src, pos),
                            unclosed,
                            name
                        ));
                        attach(&mut stack);
                    }
                    attach(&mut stack);
                }
                _ => warnings.push(format!(
                    "line {}: end tag </{}> matches no open element; ignored",
                    line_of(src, pos),
                    name
                )),
            }
            pos = (pos + end + 1).min(src.len());
        } else {
            let Some(end) = find_tag_end(src, pos + 1) else {
                warnings.push(format!(
                    "line {}: unterminated tag; rest of file ignored",
                    line_of(src, pos)
                ));
                break;
            };
            let mut body = &src[pos + 1..end];
            let self_closing = body.ends_with('/');
            if self_closing {
                body = &body[..body.len() - 1];
            }
            let (name, attrs) = parse_tag_body(body);
            let el = Element {
                name,
                attrs,
                ..Default::default()
            };
            if self_closing {
                stack.last_mut().unwrap().children.push(el);
            } else {
                stack.push(el);
            }
            pos = end + 1;
        }
    }
    while stack.len() > 1 {
        warnings.push(format!(
            "<{}> was never closed; closed at end of file",
            stack.last().unwrap().name
        ));
        attach(&mut stack);
    }
    Parsed {
        document: stack.pop().unwrap(),
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repairs_unclosed_element_and_keeps_control_chars() {
        let p = parse("<?xml version='1.0'?><a><b x=\"1\"><c>\u{b}\u{c}\n</c><d>t</a>");
        assert_eq!(p.document.children.len(), 1);
        let a = &p.document.children[0];
        let b = a.child("b").unwrap();
        assert_eq!(b.attr("x"), Some("1"));
        assert_eq!(b.child_text("c"), Some("\u{b}\u{c}\n"));
        assert_eq!(b.child_text("d"), Some("t"));
        assert!(p.warnings.iter().any(|w| w.contains("U+000B")));
        assert!(p
            .warnings
            .iter()
            .any(|w| w.contains("<b> was never closed")));
    }

    #[test]
    fn entities_and_self_closing() {
        let p = parse("<r><n /><m>a&lt;b&amp;c&#x41;&bogus</m></r>");
        let r = &p.document.children[0];
        assert_eq!(r.child_text("n"), Some(""));
        assert_eq!(r.child_text("m"), Some("a<b&cA&bogus"));
        assert!(p.warnings.is_empty());
    }
}
