//! Lexers for the languages hl-lite has none for: Go, C, C++ (one C-family lexer with a keyword set each), SQL and
//! unified diffs. Forward-only and line-local except inside a block comment or a Go raw string, like hl-lite's.

use super::Class;

/// Which keyword set the C-family lexer uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CFamily {
    Go,
    C,
    Cpp,
}

const GO_KEYWORDS: &[&str] = &[
    "break",
    "case",
    "chan",
    "const",
    "continue",
    "default",
    "defer",
    "else",
    "fallthrough",
    "for",
    "func",
    "go",
    "goto",
    "if",
    "import",
    "interface",
    "map",
    "package",
    "range",
    "return",
    "select",
    "struct",
    "switch",
    "type",
    "var",
];
const GO_TYPES: &[&str] = &[
    "any",
    "bool",
    "byte",
    "complex64",
    "complex128",
    "error",
    "float32",
    "float64",
    "int",
    "int8",
    "int16",
    "int32",
    "int64",
    "rune",
    "string",
    "uint",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "uintptr",
];
const GO_CONSTANTS: &[&str] = &["true", "false", "nil", "iota"];

const C_KEYWORDS: &[&str] = &[
    "auto",
    "break",
    "case",
    "const",
    "continue",
    "default",
    "do",
    "else",
    "enum",
    "extern",
    "for",
    "goto",
    "if",
    "inline",
    "register",
    "restrict",
    "return",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "volatile",
    "while",
    "_Static_assert",
    "_Atomic",
    "_Noreturn",
];
const C_TYPES: &[&str] = &[
    "bool", "char", "double", "float", "int", "long", "short", "signed", "unsigned", "void", "size_t", "ssize_t",
    "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "FILE", "_Bool",
];
const C_CONSTANTS: &[&str] = &["NULL", "true", "false", "EOF"];

const CPP_KEYWORDS: &[&str] = &[
    "alignas",
    "alignof",
    "catch",
    "class",
    "co_await",
    "co_return",
    "co_yield",
    "concept",
    "const_cast",
    "constexpr",
    "consteval",
    "decltype",
    "delete",
    "dynamic_cast",
    "explicit",
    "export",
    "final",
    "friend",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "operator",
    "override",
    "private",
    "protected",
    "public",
    "reinterpret_cast",
    "requires",
    "static_assert",
    "static_cast",
    "template",
    "this",
    "throw",
    "try",
    "typeid",
    "typename",
    "using",
    "virtual",
];
const CPP_TYPES: &[&str] = &["std", "string", "vector", "wchar_t", "char8_t", "char16_t", "char32_t"];
const CPP_CONSTANTS: &[&str] = &["nullptr"];

const SQL_KEYWORDS: &[&str] = &[
    "add",
    "all",
    "alter",
    "and",
    "as",
    "asc",
    "begin",
    "between",
    "by",
    "cascade",
    "case",
    "check",
    "column",
    "commit",
    "constraint",
    "create",
    "cross",
    "database",
    "default",
    "delete",
    "desc",
    "distinct",
    "drop",
    "else",
    "end",
    "exists",
    "foreign",
    "from",
    "full",
    "grant",
    "group",
    "having",
    "if",
    "in",
    "index",
    "inner",
    "insert",
    "into",
    "is",
    "join",
    "key",
    "left",
    "like",
    "limit",
    "not",
    "offset",
    "on",
    "or",
    "order",
    "outer",
    "primary",
    "references",
    "replace",
    "returning",
    "revoke",
    "right",
    "rollback",
    "schema",
    "select",
    "set",
    "table",
    "then",
    "transaction",
    "trigger",
    "union",
    "unique",
    "update",
    "using",
    "values",
    "view",
    "when",
    "where",
    "with",
];
const SQL_TYPES: &[&str] = &[
    "bigint",
    "blob",
    "boolean",
    "char",
    "date",
    "decimal",
    "double",
    "float",
    "int",
    "integer",
    "numeric",
    "real",
    "serial",
    "smallint",
    "text",
    "timestamp",
    "varchar",
];
const SQL_CONSTANTS: &[&str] = &["null", "true", "false"];

/// Collects classified pieces, merging neighbours of one class so the output stays small.
pub struct Pieces<'a> {
    source: &'a str,
    pub out: Vec<(Class, &'a str)>,
}

impl<'a> Pieces<'a> {
    pub fn new(source: &'a str) -> Self {
        Pieces { source, out: Vec::new() }
    }

    pub fn push(&mut self, class: Class, start: usize, end: usize) {
        if start == end {
            return;
        }
        if let Some((last, text)) = self.out.last_mut()
            && *last == class
            && text.as_ptr() as usize + text.len() == self.source[start..].as_ptr() as usize
        {
            let begin = text.as_ptr() as usize - self.source.as_ptr() as usize;
            *text = &self.source[begin..end];
            return;
        }
        self.out.push((class, &self.source[start..end]));
    }
}

fn is_ident_start(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || byte == b'_'
}

fn is_ident(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// The end of a run of bytes from `at` for which `keep` holds.
fn run_while(bytes: &[u8], mut at: usize, keep: impl Fn(u8) -> bool) -> usize {
    while at < bytes.len() && keep(bytes[at]) {
        at += 1;
    }
    at
}

/// The end of a quoted literal opened at `at` by `quote`; backslash escapes; unterminated literals stop at the line's
/// end unless `multiline`.
fn quoted(bytes: &[u8], at: usize, quote: u8, escapes: bool, multiline: bool) -> usize {
    let mut i = at + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if escapes => i += 2,
            b'\n' if !multiline => return i,
            byte if byte == quote => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// The end of a number starting at `at`: digits, letters (hex, suffixes), `_`, `'`, `.`, and a sign after an exponent.
fn number(bytes: &[u8], at: usize) -> usize {
    let mut i = at + 1;
    while i < bytes.len() {
        let byte = bytes[i];
        let signed_exponent = matches!(byte, b'+' | b'-') && matches!(bytes[i - 1], b'e' | b'E' | b'p' | b'P');
        if byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.' | b'\'') || signed_exponent {
            i += 1;
        } else {
            break;
        }
    }
    i
}

/// Whether the next byte after `at` on this line, past spaces, is `(`: a call or a definition.
fn called(bytes: &[u8], at: usize) -> bool {
    let next = run_while(bytes, at, |byte| byte == b' ' || byte == b'\t');
    bytes.get(next) == Some(&b'(')
}

fn operator_or_punctuation(byte: u8) -> Option<Class> {
    match byte {
        b'+' | b'-' | b'*' | b'/' | b'%' | b'=' | b'<' | b'>' | b'!' | b'&' | b'|' | b'^' | b'~' | b'?' | b':' => {
            Some(Class::Operator)
        }
        b'(' | b')' | b'{' | b'}' | b'[' | b']' | b';' | b',' | b'.' => Some(Class::Punctuation),
        _ => None,
    }
}

/// Word lists a word is looked up in, one or more per class.
type WordSets = &'static [&'static [&'static str]];

pub fn c_family(source: &str, family: CFamily) -> Vec<(Class, &str)> {
    let (keywords, types, constants): (WordSets, WordSets, WordSets) = match family {
        CFamily::Go => (&[GO_KEYWORDS], &[GO_TYPES], &[GO_CONSTANTS]),
        CFamily::C => (&[C_KEYWORDS], &[C_TYPES], &[C_CONSTANTS]),
        CFamily::Cpp => (&[C_KEYWORDS, CPP_KEYWORDS], &[C_TYPES, CPP_TYPES], &[C_CONSTANTS, CPP_CONSTANTS]),
    };
    let among = |sets: &[&[&str]], word: &str| sets.iter().any(|set| set.contains(&word));
    let bytes = source.as_bytes();
    let mut pieces = Pieces::new(source);
    let mut at = 0;
    // Only spaces since the line began: where a `#` starts a preprocessor line.
    let mut line_start = true;
    // After `#include`, `<stdio.h>` is a path, not two comparisons.
    let mut include = false;
    while at < bytes.len() {
        let byte = bytes[at];
        let start = at;
        let class = if byte == b'\n' {
            at += 1;
            line_start = true;
            include = false;
            pieces.push(Class::Plain, start, at);
            continue;
        } else if byte == b' ' || byte == b'\t' || byte == b'\r' {
            at = run_while(bytes, at, |byte| byte == b' ' || byte == b'\t' || byte == b'\r');
            pieces.push(Class::Plain, start, at);
            continue;
        } else if bytes[at..].starts_with(b"//") {
            at = run_while(bytes, at, |byte| byte != b'\n');
            Class::Comment
        } else if bytes[at..].starts_with(b"/*") {
            at = source[at + 2..].find("*/").map_or(bytes.len(), |end| at + 2 + end + 2);
            Class::Comment
        } else if byte == b'#' && line_start && family != CFamily::Go {
            at = run_while(bytes, at + 1, |byte| byte == b' ' || byte == b'\t');
            at = run_while(bytes, at, is_ident);
            include = source[start..at].ends_with("include") || source[start..at].ends_with("import");
            Class::Keyword
        } else if byte == b'<' && include {
            at = quoted(bytes, at, b'>', false, false);
            Class::String
        } else if byte == b'"' {
            at = quoted(bytes, at, b'"', true, false);
            Class::String
        } else if byte == b'\'' {
            at = quoted(bytes, at, b'\'', true, false);
            Class::String
        } else if byte == b'`' && family == CFamily::Go {
            at = quoted(bytes, at, b'`', false, true);
            Class::String
        } else if byte.is_ascii_digit() {
            at = number(bytes, at);
            Class::Number
        } else if is_ident_start(byte) {
            at = run_while(bytes, at, is_ident);
            let word = &source[start..at];
            if among(keywords, word) {
                Class::Keyword
            } else if among(types, word) {
                Class::Type
            } else if among(constants, word) {
                Class::Constant
            } else if called(bytes, at) {
                Class::Function
            } else {
                Class::Plain
            }
        } else if let Some(class) = operator_or_punctuation(byte) {
            at += 1;
            class
        } else {
            // Anything else, one character at a time (never splitting one).
            at += source[at..].chars().next().map_or(1, char::len_utf8);
            Class::Plain
        };
        line_start = false;
        pieces.push(class, start, at);
    }
    pieces.out
}

pub fn sql(source: &str) -> Vec<(Class, &str)> {
    let bytes = source.as_bytes();
    let mut pieces = Pieces::new(source);
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        let start = at;
        let class = if byte.is_ascii_whitespace() {
            at = run_while(bytes, at, |byte| byte.is_ascii_whitespace());
            Class::Plain
        } else if bytes[at..].starts_with(b"--") {
            at = run_while(bytes, at, |byte| byte != b'\n');
            Class::Comment
        } else if bytes[at..].starts_with(b"/*") {
            at = source[at + 2..].find("*/").map_or(bytes.len(), |end| at + 2 + end + 2);
            Class::Comment
        } else if byte == b'\'' {
            // `''` inside a string is a quote; read as two strings side by side, which merge.
            at = quoted(bytes, at, b'\'', false, true);
            Class::String
        } else if byte == b'"' || byte == b'`' {
            at = quoted(bytes, at, byte, false, false);
            Class::Variable
        } else if byte.is_ascii_digit() {
            at = number(bytes, at);
            Class::Number
        } else if is_ident_start(byte) {
            at = run_while(bytes, at, is_ident);
            let word = source[start..at].to_ascii_lowercase();
            if SQL_KEYWORDS.contains(&word.as_str()) {
                Class::Keyword
            } else if SQL_TYPES.contains(&word.as_str()) {
                Class::Type
            } else if SQL_CONSTANTS.contains(&word.as_str()) {
                Class::Constant
            } else if called(bytes, at) {
                Class::Function
            } else {
                Class::Plain
            }
        } else if let Some(class) = operator_or_punctuation(byte) {
            at += 1;
            class
        } else {
            at += source[at..].chars().next().map_or(1, char::len_utf8);
            Class::Plain
        };
        pieces.push(class, start, at);
    }
    pieces.out
}

/// A unified diff, a line at a time: added, removed, hunk headers and file headers.
pub fn diff(source: &str) -> Vec<(Class, &str)> {
    let mut pieces = Pieces::new(source);
    let mut at = 0;
    for line in source.split_inclusive('\n') {
        let body = line.strip_suffix('\n').unwrap_or(line);
        let class = if ["+++ ", "--- ", "diff ", "@@"].iter().any(|head| body.starts_with(head)) {
            Class::Meta
        } else if body.starts_with('+') {
            Class::Inserted
        } else if body.starts_with('-') {
            Class::Deleted
        } else {
            Class::Plain
        };
        pieces.push(class, at, at + body.len());
        pieces.push(Class::Plain, at + body.len(), at + line.len());
        at += line.len();
    }
    pieces.out
}
