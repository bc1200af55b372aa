//! Streaming scanner over a tool call's arguments JSON as the model writes it: fragments in, decoded string-argument text out.
//!
//! It tracks where in the JSON document it is (the path of keys and array
//! indexes) and, inside a string value, decodes escapes — including `\uXXXX`
//! and surrogate pairs split across fragments — so the UI can show a file's
//! content growing character by character. Structure, numbers, booleans and
//! keys produce no output.

use crate::protocol::{ArgsPath, PathSegment};

/// Decoded text appended to the string at `path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgsText {
    pub path: ArgsPath,
    pub text: String,
}

#[derive(Debug, Clone)]
enum Container {
    /// Inside an object; `key` is the key of the value being read (once known).
    Object {
        key: Option<String>,
    },
    Array {
        index: u64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StringRole {
    Key,
    Value,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Escape {
    None,
    /// Just read a backslash.
    Started,
    /// Reading the hex digits of `\uXXXX`.
    Unicode {
        digits: u8,
        value: u32,
    },
}

/// Scans one tool call's arguments; feed it every fragment in order.
#[derive(Debug, Clone)]
pub struct ArgsScanner {
    stack: Vec<Container>,
    /// `Some` while inside a string.
    string: Option<StringRole>,
    key_buffer: String,
    escape: Escape,
    /// A high surrogate waiting for its low half.
    high_surrogate: Option<u32>,
    /// True when the next value in the current container is expected (not a separator).
    awaiting_value: bool,
    /// Index in this feed's output of the piece the string being read extends, once known: the path is compared
    /// once per string and fragment, not once per character.
    open_piece: Option<usize>,
    /// Length of the fragment being fed: a piece never holds more, so its text is allocated once.
    fragment_len: usize,
    /// The path of the string being read, built once per string rather than once per fragment.
    current_path: Option<ArgsPath>,
}

impl Default for ArgsScanner {
    fn default() -> Self {
        ArgsScanner {
            stack: Vec::new(),
            string: None,
            key_buffer: String::new(),
            escape: Escape::None,
            high_surrogate: None,
            awaiting_value: true,
            open_piece: None,
            fragment_len: 0,
            current_path: None,
        }
    }
}

impl ArgsScanner {
    pub fn new() -> Self {
        ArgsScanner::default()
    }

    /// Scans one fragment; returns the string-argument text it added, one entry per run of text on the same path.
    pub fn feed(&mut self, fragment: &str) -> Vec<ArgsText> {
        let mut out: Vec<ArgsText> = Vec::new();
        self.feed_into(fragment, &mut out);
        out
    }

    /// Like `feed`, appending to `out`.
    pub fn feed_into(&mut self, fragment: &str, out: &mut Vec<ArgsText>) {
        self.open_piece = None;
        self.fragment_len = fragment.len();
        for ch in fragment.chars() {
            match self.string {
                Some(role) => self.string_char(ch, role, out),
                None => self.structure_char(ch),
            }
        }
    }

    fn path(&mut self) -> ArgsPath {
        let stack = &self.stack;
        self.current_path
            .get_or_insert_with(|| {
                stack
                    .iter()
                    .map(|container| match container {
                        Container::Object { key } => PathSegment::Key(key.clone().unwrap_or_default()),
                        Container::Array { index } => PathSegment::Index(*index),
                    })
                    .collect::<Vec<_>>()
                    .into()
            })
            .clone()
    }

    fn structure_char(&mut self, ch: char) {
        // Every structural character may move to another value; whitespace, the common case, does not.
        if !matches!(ch, ' ' | '\n' | '\r' | '\t') {
            self.current_path = None;
        }
        match ch {
            '{' => {
                self.stack.push(Container::Object { key: None });
                self.awaiting_value = false;
            }
            '[' => {
                self.stack.push(Container::Array { index: 0 });
                self.awaiting_value = true;
            }
            '}' | ']' => {
                self.stack.pop();
                self.awaiting_value = false;
            }
            ',' => match self.stack.last_mut() {
                Some(Container::Array { index }) => {
                    *index += 1;
                    self.awaiting_value = true;
                }
                Some(Container::Object { key }) => {
                    *key = None;
                    self.awaiting_value = false;
                }
                None => {}
            },
            ':' => self.awaiting_value = true,
            '"' => {
                let is_key = matches!(self.stack.last(), Some(Container::Object { .. })) && !self.awaiting_value;
                self.string = Some(if is_key { StringRole::Key } else { StringRole::Value });
                self.key_buffer.clear();
            }
            // Numbers, literals and whitespace carry nothing the UI streams.
            _ => {}
        }
    }

    fn string_char(&mut self, ch: char, role: StringRole, out: &mut Vec<ArgsText>) {
        match self.escape.clone() {
            Escape::None => match ch {
                '\\' => self.escape = Escape::Started,
                '"' => {
                    self.flush_surrogate(role, out);
                    self.string = None;
                    self.open_piece = None;
                    match role {
                        StringRole::Key => {
                            if let Some(Container::Object { key }) = self.stack.last_mut() {
                                *key = Some(std::mem::take(&mut self.key_buffer));
                            }
                            self.current_path = None;
                        }
                        StringRole::Value => self.awaiting_value = false,
                    }
                }
                other => {
                    self.flush_surrogate(role, out);
                    self.emit(role, other, out);
                }
            },
            Escape::Started => {
                self.escape = Escape::None;
                let decoded = match ch {
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    'b' => '\u{8}',
                    'f' => '\u{c}',
                    'u' => {
                        self.escape = Escape::Unicode { digits: 0, value: 0 };
                        return;
                    }
                    // `\"`, `\\`, `\/` and anything a lenient writer might send stand for themselves.
                    other => other,
                };
                self.flush_surrogate(role, out);
                self.emit(role, decoded, out);
            }
            Escape::Unicode { digits, value } => {
                let Some(digit) = ch.to_digit(16) else {
                    // Not hex: the escape is broken; keep the character and move on.
                    self.escape = Escape::None;
                    self.flush_surrogate(role, out);
                    self.emit(role, char::REPLACEMENT_CHARACTER, out);
                    return;
                };
                let value = value * 16 + digit;
                if digits < 3 {
                    self.escape = Escape::Unicode { digits: digits + 1, value };
                    return;
                }
                self.escape = Escape::None;
                self.code_unit(value, role, out);
            }
        }
    }

    fn code_unit(&mut self, unit: u32, role: StringRole, out: &mut Vec<ArgsText>) {
        match unit {
            0xD800..=0xDBFF => {
                self.flush_surrogate(role, out);
                self.high_surrogate = Some(unit);
            }
            0xDC00..=0xDFFF => match self.high_surrogate.take() {
                Some(high) => {
                    let combined = 0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00);
                    self.emit(role, char::from_u32(combined).unwrap_or(char::REPLACEMENT_CHARACTER), out);
                }
                None => self.emit(role, char::REPLACEMENT_CHARACTER, out),
            },
            _ => {
                self.flush_surrogate(role, out);
                self.emit(role, char::from_u32(unit).unwrap_or(char::REPLACEMENT_CHARACTER), out);
            }
        }
    }

    /// A high surrogate not followed by a low one stands alone: it becomes U+FFFD, as a lenient decoder would make it.
    fn flush_surrogate(&mut self, role: StringRole, out: &mut Vec<ArgsText>) {
        if self.high_surrogate.take().is_some() {
            self.emit(role, char::REPLACEMENT_CHARACTER, out);
        }
    }

    fn emit(&mut self, role: StringRole, ch: char, out: &mut Vec<ArgsText>) {
        match role {
            StringRole::Key => self.key_buffer.push(ch),
            StringRole::Value => match self.open_piece {
                Some(piece) => out[piece].text.push(ch),
                None => {
                    match out.last_mut() {
                        Some(last) if self.path_matches(&last.path) => last.text.push(ch),
                        _ => {
                            let mut text = String::with_capacity(self.fragment_len);
                            text.push(ch);
                            out.push(ArgsText { path: self.path(), text });
                        }
                    }
                    self.open_piece = Some(out.len() - 1);
                }
            },
        }
    }

    fn path_matches(&self, path: &[PathSegment]) -> bool {
        path.len() == self.stack.len()
            && self.stack.iter().zip(path).all(|(container, segment)| match (container, segment) {
                (Container::Object { key }, PathSegment::Key(k)) => key.as_deref().unwrap_or_default() == k,
                (Container::Array { index }, PathSegment::Index(i)) => index == i,
                (Container::Object { .. }, PathSegment::Index(_)) | (Container::Array { .. }, PathSegment::Key(_)) => {
                    false
                }
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;
    use std::collections::BTreeMap;

    fn key(k: &str) -> PathSegment {
        PathSegment::Key(k.into())
    }

    /// Every string leaf of `value` with its path.
    fn string_leaves(value: &Value, path: &mut Vec<PathSegment>, out: &mut BTreeMap<String, String>) {
        match value {
            Value::String(text) => {
                out.insert(serde_json::to_string(path).unwrap(), text.clone());
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    path.push(PathSegment::Index(i as u64));
                    string_leaves(item, path, out);
                    path.pop();
                }
            }
            Value::Object(map) => {
                for (k, item) in map {
                    path.push(key(k));
                    string_leaves(item, path, out);
                    path.pop();
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    fn scanned(fragments: &[&str]) -> BTreeMap<String, String> {
        let mut scanner = ArgsScanner::new();
        let mut out = BTreeMap::<String, String>::new();
        for fragment in fragments {
            for piece in scanner.feed(fragment) {
                out.entry(serde_json::to_string(&piece.path).unwrap()).or_default().push_str(&piece.text);
            }
        }
        out
    }

    #[test]
    fn string_arguments_stream_with_their_paths() {
        let mut scanner = ArgsScanner::new();
        assert_eq!(
            scanner.feed(r#"{"path":"src/ma"#),
            vec![ArgsText { path: vec![key("path")].into(), text: "src/ma".into() }]
        );
        assert_eq!(
            scanner.feed(r#"in.rs","content":"fn main() {\n"#),
            vec![
                ArgsText { path: vec![key("path")].into(), text: "in.rs".into() },
                ArgsText { path: vec![key("content")].into(), text: "fn main() {\n".into() },
            ]
        );
        assert_eq!(scanner.feed(r#""}"#), vec![]);
    }

    #[test]
    fn escapes_split_across_fragments_decode() {
        let fragments = [r#"{"c":"a\"#, r#"nb\u00"#, r#"e9 \ud83d"#, r#"\ude00 \\ \/ \t""#, "}"];
        assert_eq!(scanned(&fragments)["[\"c\"]"], "a\nbé 😀 \\ / \t");
    }

    #[test]
    fn nested_arrays_and_objects_get_indexes_in_the_path() {
        let args = r#"{"todos":[{"text":"one","done":true},{"text":"two"}],"n":3,"tags":["x","y"]}"#;
        let out = scanned(&[args]);
        assert_eq!(out[r#"["todos",0,"text"]"#], "one");
        assert_eq!(out[r#"["todos",1,"text"]"#], "two");
        assert_eq!(out[r#"["tags",1]"#], "y");
        assert_eq!(out.len(), 4);
    }

    #[test]
    fn a_lone_high_surrogate_becomes_a_replacement_character() {
        assert_eq!(scanned(&[r#"{"c":"a\ud800b"}"#])["[\"c\"]"], "a\u{fffd}b");
    }

    fn arguments() -> impl Strategy<Value = Value> {
        let text = proptest::collection::vec(
            prop_oneof![any::<char>(), Just('"'), Just('\\'), Just('\n'), Just('😀'), Just('\u{2028}')],
            0..20,
        )
        .prop_map(String::from_iter);
        let leaf =
            prop_oneof![text.clone().prop_map(Value::String), any::<i32>().prop_map(Value::from), Just(Value::Null)];
        let tree = leaf.prop_recursive(3, 20, 4, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::vec(("[a-z]{1,6}", inner), 0..4)
                    .prop_map(|entries| Value::Object(entries.into_iter().collect())),
            ]
        });
        proptest::collection::vec(("[a-z]{1,8}", tree), 0..5).prop_map(|e| Value::Object(e.into_iter().collect()))
    }

    proptest! {
        #[test]
        fn any_split_of_the_arguments_gives_the_same_strings(
            args in arguments(),
            ascii_escapes in any::<bool>(),
            cuts in proptest::collection::vec(any::<proptest::sample::Index>(), 0..12),
        ) {
            let mut encoded = serde_json::to_string(&args).unwrap();
            if ascii_escapes {
                // Models often write non-ASCII as \uXXXX escapes (surrogate pairs for emoji).
                encoded = encoded.chars().map(|c| if c.is_ascii() { c.to_string() } else {
                    c.encode_utf16(&mut [0; 2]).iter().map(|u| format!("\\u{u:04x}")).collect()
                }).collect();
            }
            let mut boundaries: Vec<usize> = cuts.iter().map(|i| i.index(encoded.len() + 1)).collect();
            boundaries.retain(|&b| encoded.is_char_boundary(b));
            boundaries.sort_unstable();
            let mut fragments = Vec::new();
            let mut start = 0;
            for b in boundaries {
                fragments.push(&encoded[start..b]);
                start = b;
            }
            fragments.push(&encoded[start..]);

            let mut expected = BTreeMap::new();
            string_leaves(&args, &mut Vec::new(), &mut expected);
            expected.retain(|_, text| !text.is_empty());
            prop_assert_eq!(scanned(&fragments), expected);
        }
    }
}
