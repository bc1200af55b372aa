//! Syntax highlighting of code to HTML: `<span class="hl-keyword">` and the like, every piece of the code escaped.
//!
//! hl-lite's hand-written lexers cover Rust, Python, JavaScript/TypeScript, JSON, TOML, YAML, shell, HTML, CSS,
//! Markdown and Dockerfiles; `lexers` adds Go, C, C++, SQL and diffs. Code that grows at its end (a streamed answer,
//! a file being written) is highlighted a line at a time: each complete line once, while the open last line stays
//! plain until its newline arrives. In the browser all of this lives in a WASM chunk of its own
//! (`components::highlight`), reached only through [`highlighter`].

mod lexers;

use std::sync::Arc;

use lexers::CFamily;

use crate::markdown::escape_html;

/// What a piece of code is, as a class of the stylesheet (`hl-<name>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Plain,
    Keyword,
    String,
    Comment,
    Number,
    Type,
    Function,
    Attribute,
    Property,
    Tag,
    Operator,
    Punctuation,
    Constant,
    Variable,
    /// An added line of a diff.
    Inserted,
    /// A removed line of a diff.
    Deleted,
    /// A diff's file and hunk headers.
    Meta,
}

impl Class {
    fn of(kind: hl_lite::Kind) -> Class {
        match kind {
            hl_lite::Kind::Plain => Class::Plain,
            hl_lite::Kind::Keyword => Class::Keyword,
            hl_lite::Kind::String => Class::String,
            hl_lite::Kind::Comment => Class::Comment,
            hl_lite::Kind::Number => Class::Number,
            hl_lite::Kind::Type => Class::Type,
            hl_lite::Kind::Function => Class::Function,
            hl_lite::Kind::Attribute => Class::Attribute,
            hl_lite::Kind::Property => Class::Property,
            hl_lite::Kind::Tag => Class::Tag,
            hl_lite::Kind::Operator => Class::Operator,
            hl_lite::Kind::Punctuation => Class::Punctuation,
            hl_lite::Kind::Constant => Class::Constant,
            hl_lite::Kind::Variable => Class::Variable,
        }
    }

    /// The class attribute of the span, or `None` for plain text (which gets no span).
    pub fn class(self) -> Option<&'static str> {
        match self {
            Class::Plain => None,
            Class::Keyword => Some("hl-keyword"),
            Class::String => Some("hl-string"),
            Class::Comment => Some("hl-comment"),
            Class::Number => Some("hl-number"),
            Class::Type => Some("hl-type"),
            Class::Function => Some("hl-function"),
            Class::Attribute => Some("hl-attribute"),
            Class::Property => Some("hl-property"),
            Class::Tag => Some("hl-tag"),
            Class::Operator => Some("hl-operator"),
            Class::Punctuation => Some("hl-punctuation"),
            Class::Constant => Some("hl-constant"),
            Class::Variable => Some("hl-variable"),
            Class::Inserted => Some("hl-inserted"),
            Class::Deleted => Some("hl-deleted"),
            Class::Meta => Some("hl-meta"),
        }
    }
}

/// A language the highlighter knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// One of hl-lite's.
    Lite(hl_lite::Lang),
    Go,
    C,
    Cpp,
    Sql,
    Diff,
}

impl Language {
    /// From a fence's info string (its first word) or a file extension, case-insensitively: `rust`, `rs`, `py`,
    /// `c++`, `golang`…
    pub fn from_name(name: &str) -> Option<Language> {
        let name = name.trim().to_ascii_lowercase();
        Some(match name.as_str() {
            "go" | "golang" => Language::Go,
            "c" | "h" => Language::C,
            "cpp" | "c++" | "cc" | "cxx" | "hpp" | "hh" | "hxx" => Language::Cpp,
            "sql" | "sqlite" | "postgres" | "postgresql" | "psql" | "mysql" => Language::Sql,
            "diff" | "patch" | "udiff" => Language::Diff,
            "pyi" => Language::Lite(hl_lite::Lang::Python),
            "ksh" | "fish" => Language::Lite(hl_lite::Lang::Bash),
            "htm" | "xhtml" => Language::Lite(hl_lite::Lang::Html),
            "mts" | "cts" => Language::Lite(hl_lite::Lang::TypeScript),
            other => Language::Lite(hl_lite::Lang::from_slug(other)?),
        })
    }

    /// From a file's path: its extension, or names such as `Dockerfile`.
    pub fn from_path(path: &str) -> Option<Language> {
        let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
        if let Some((_, extension)) = name.rsplit_once('.')
            && let Some(language) = Language::from_name(extension)
        {
            return Some(language);
        }
        hl_lite::Lang::from_path(name).map(Language::Lite)
    }

    /// Whether the lexer may start afresh at a line that no token runs into. Not for the lexers that carry more
    /// than a token across lines (a heredoc's end word, a template literal's nesting, a `<script>` in HTML, YAML's
    /// block scalars, Markdown's fences, whether CSS is inside a rule's braces): those re-read the code from its start, and still draw each line once.
    fn restartable(self) -> bool {
        match self {
            Language::Lite(lang) => match lang {
                hl_lite::Lang::Rust
                | hl_lite::Lang::Python
                | hl_lite::Lang::Json
                | hl_lite::Lang::Toml
                | hl_lite::Lang::Dockerfile => true,
                hl_lite::Lang::Bash
                | hl_lite::Lang::Css
                | hl_lite::Lang::Html
                | hl_lite::Lang::JavaScript
                | hl_lite::Lang::TypeScript
                | hl_lite::Lang::Markdown
                | hl_lite::Lang::Yaml => false,
            },
            Language::Go | Language::C | Language::Cpp | Language::Sql | Language::Diff => true,
        }
    }
}

/// `code` cut into classified pieces that, joined, are `code` again.
pub fn pieces(language: Language, code: &str) -> Vec<(Class, &str)> {
    match language {
        Language::Lite(lang) => {
            hl_lite::highlight(lang, code).into_iter().map(|span| (Class::of(span.kind), span.text)).collect()
        }
        Language::Go => lexers::c_family(code, CFamily::Go),
        Language::C => lexers::c_family(code, CFamily::C),
        Language::Cpp => lexers::c_family(code, CFamily::Cpp),
        Language::Sql => lexers::sql(code),
        Language::Diff => lexers::diff(code),
    }
}

fn push_piece(out: &mut String, class: Class, text: &str) {
    if text.is_empty() {
        return;
    }
    match class.class() {
        Some(name) => {
            out.push_str("<span class=\"");
            out.push_str(name);
            out.push_str("\">");
            escape_html(out, text);
            out.push_str("</span>");
        }
        None => escape_html(out, text),
    }
}

/// `code` highlighted whole, its lines joined by `\n` (each line's spans closed on it, so a line stands alone).
pub fn highlight(language: Language, code: &str) -> String {
    let mut cache = CodeCache::default();
    let complete = if code.ends_with('\n') { code.to_owned() } else { format!("{code}\n") };
    cache.sync(language, &complete);
    let mut html = cache.lines.join("\n");
    if code.ends_with('\n') {
        html.push('\n');
    }
    html
}

/// The highlighted complete lines of a piece of code that grows at its end.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CodeCache {
    language: Option<Language>,
    /// The code up to and including its last newline, as highlighted so far.
    complete: String,
    /// HTML of each complete line, without its newline.
    lines: Vec<String>,
    /// Where in `complete` the lexer may start afresh: the start of a line that no token runs into.
    restart: usize,
    /// The number of the line that starts at `restart`.
    restart_line: usize,
}

impl CodeCache {
    /// HTML of the complete lines so far.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// Highlights the complete lines of `code` that are not yet; returns the index of the first new line (0 when
    /// `code` does not continue what was highlighted, which is highlighted anew).
    pub fn sync(&mut self, language: Language, code: &str) -> usize {
        let complete = &code[..code.rfind('\n').map_or(0, |newline| newline + 1)];
        if self.language != Some(language) || !complete.starts_with(self.complete.as_str()) {
            *self = CodeCache { language: Some(language), ..CodeCache::default() };
        }
        let first_new = self.lines.len();
        if complete.len() == self.complete.len() {
            return first_new;
        }
        let region = &complete[self.restart..];
        let mut line = String::new();
        let mut line_number = self.restart_line;
        let mut offset = 0;
        // The last line start (before the region's end) where no token other than plain text runs across.
        let mut clean = (0, self.restart_line);
        for (class, text) in pieces(language, region) {
            let mut rest = text;
            while let Some(newline) = rest.find('\n') {
                let segment = &rest[..newline];
                if line_number >= first_new {
                    push_piece(&mut line, class, segment.strip_suffix('\r').unwrap_or(segment));
                    self.lines.push(std::mem::take(&mut line));
                }
                line_number += 1;
                offset += newline + 1;
                rest = &rest[newline + 1..];
                let inside_token = class != Class::Plain && !rest.is_empty();
                if !inside_token && offset < region.len() {
                    clean = (offset, line_number);
                }
            }
            if line_number >= first_new {
                push_piece(&mut line, class, rest);
            }
            offset += rest.len();
        }
        if language.restartable() {
            self.restart += clean.0;
            self.restart_line = clean.1;
        }
        self.complete.push_str(&complete[self.complete.len()..]);
        first_new
    }
}

/// The caches of the code blocks of one answer: the block being streamed finds the cache it grew in, and so does
/// the finished block it becomes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CodeCaches {
    caches: Vec<CodeCache>,
}

/// Code blocks remembered per answer; a block beyond these is highlighted from its start at each change.
const CACHED_BLOCKS: usize = 4;

impl CodeCaches {
    fn for_code(&mut self, language: Language, code: &str) -> &mut CodeCache {
        let found = self
            .caches
            .iter()
            .enumerate()
            .filter(|(_, cache)| cache.language == Some(language) && code.starts_with(cache.complete.as_str()))
            .max_by_key(|(_, cache)| cache.complete.len())
            .map(|(index, _)| index);
        let index = match found {
            Some(index) => index,
            None => {
                if self.caches.len() == CACHED_BLOCKS {
                    self.caches.remove(0);
                }
                self.caches.push(CodeCache::default());
                self.caches.len() - 1
            }
        };
        &mut self.caches[index]
    }
}

/// Undoes [`escape_html`], exactly: the markdown writer is the only source of the text this reads.
fn unescape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let (decoded, length) = [("&amp;", '&'), ("&lt;", '<'), ("&gt;", '>'), ("&quot;", '"'), ("&#39;", '\'')]
            .iter()
            .find(|(entity, _)| rest.starts_with(entity))
            .map_or(('&', 1), |(entity, decoded)| (*decoded, entity.len()));
        out.push(decoded);
        rest = &rest[length..];
    }
    out.push_str(rest);
    out
}

const CODE_OPEN: &str = "<pre><code class=\"language-";
const CODE_CLOSE: &str = "</code></pre>";

/// Highlights the fenced code blocks of rendered markdown (the HTML of `crate::markdown`, whose code text is
/// escaped, so `</code>` cannot occur inside it). A block of an unknown language stays as it was; a block's last
/// line stays plain until it is complete.
pub fn highlight_markdown(html: &str, caches: &mut CodeCaches) -> String {
    let mut out = String::with_capacity(html.len() + html.len() / 2);
    let mut rest = html;
    while let Some(open) = rest.find(CODE_OPEN) {
        let after_class = &rest[open + CODE_OPEN.len()..];
        let (Some(quote), Some(close)) = (after_class.find('"'), after_class.find(CODE_CLOSE)) else { break };
        let Some(body_start) = after_class[quote..].find('>').map(|at| quote + at + 1).filter(|&at| at <= close) else {
            break;
        };
        let language = Language::from_name(&unescape_html(&after_class[..quote]));
        let head_end = open + CODE_OPEN.len() + body_start;
        out.push_str(&rest[..head_end]);
        let body = &after_class[body_start..close];
        match language {
            Some(language) => {
                let code = unescape_html(body);
                let cache = caches.for_code(language, &code);
                cache.sync(language, &code);
                for line in cache.lines() {
                    out.push_str(line);
                    out.push('\n');
                }
                escape_html(&mut out, &code[cache.complete.len()..]);
            }
            None => out.push_str(body),
        }
        out.push_str(CODE_CLOSE);
        rest = &after_class[close + CODE_CLOSE.len()..];
    }
    out.push_str(rest);
    out
}

/// Whether rendered markdown has a code block the highlighter would colour (of any language: the language is
/// looked up in the highlighter's chunk).
pub fn has_code_block(html: &str) -> bool {
    html.contains(CODE_OPEN)
}

/// The complete lines of a growing file (`path` names it, for its language) that are new since the last call, as
/// HTML; none when the language is unknown.
pub fn highlight_new_lines(cache: &mut CodeCache, path: &str, text: &str) -> Vec<Arc<str>> {
    let Some(language) = Language::from_path(path) else { return Vec::new() };
    let first = cache.sync(language, text);
    cache.lines[first..].iter().map(|line| Arc::from(line.as_str())).collect()
}

/// Which side of a diff a line belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffSide {
    /// A context line, in both the old and the new file.
    Both,
    Old,
    New,
    /// A header or a note: not code.
    Neither,
}

/// The text of each diff line as HTML, the old and the new file each highlighted as the run of its own lines (so a
/// comment opened on a context line carries on into the added lines); `None` when `path`'s language is unknown.
pub fn highlight_diff(path: &str, lines: &[(DiffSide, &str)]) -> Option<Vec<String>> {
    let language = Language::from_path(path)?;
    let side = |keep: fn(DiffSide) -> bool| {
        let mut text = String::new();
        for (_, line) in lines.iter().filter(|(side, _)| keep(*side)) {
            text.push_str(line);
            text.push('\n');
        }
        let mut cache = CodeCache::default();
        cache.sync(language, &text);
        cache.lines
    };
    let old = side(|side| matches!(side, DiffSide::Both | DiffSide::Old));
    let new = side(|side| matches!(side, DiffSide::Both | DiffSide::New));
    let (mut old, mut new) = (old.into_iter(), new.into_iter());
    let html = lines
        .iter()
        .map(|(side, text)| {
            let plain = || {
                let mut html = String::new();
                escape_html(&mut html, text);
                html
            };
            match side {
                DiffSide::Both => {
                    old.next();
                    new.next().unwrap_or_else(plain)
                }
                DiffSide::Old => old.next().unwrap_or_else(plain),
                DiffSide::New => new.next().unwrap_or_else(plain),
                DiffSide::Neither => plain(),
            }
        })
        .collect();
    Some(html)
}

/// The text of each line of a diff, with the side it is on, to HTML (see [`highlight_diff`]).
pub type HighlightDiff = fn(&str, &[(DiffSide, &str)]) -> Option<Vec<String>>;

/// What the browser's highlighter chunk hands the main module: every entry point, as function pointers.
#[derive(Clone, Copy)]
pub struct Highlighter {
    pub markdown: fn(&str, &mut CodeCaches) -> String,
    pub new_lines: fn(&mut CodeCache, &str, &str) -> Vec<Arc<str>>,
    pub diff: HighlightDiff,
}

/// The highlighter; in the browser only the chunk's split point calls this, so the code stays in the chunk.
pub fn highlighter() -> Highlighter {
    Highlighter { markdown: highlight_markdown, new_lines: highlight_new_lines, diff: highlight_diff }
}

#[cfg(test)]
mod tests;
