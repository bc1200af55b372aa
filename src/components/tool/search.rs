//! Grep, Glob and Ls rows: the query, the files found with counts, and for Grep each matching line with its number
//! and the match highlighted.

use leptos::prelude::*;

use crate::components::client_only::IntoRowView;
use regex_lite::{Regex, RegexBuilder};
use serde_json::Value;

use super::input_str;
use crate::i18n::{Key, fill, plural, t};
use crate::protocol::{ChatToolPart, MatchesOutput};

/// The matches of one file.
#[derive(Debug, Clone, PartialEq)]
pub struct FileMatches {
    pub path: String,
    pub lines: Vec<(usize, String)>,
}

/// The tool's `path:line:text` lines grouped by file, in order; lines that are not matches (the tool's
/// "[Showing the first N matches]") are returned as notices.
pub fn group_matches(matches: &[String]) -> (Vec<FileMatches>, Vec<String>) {
    let mut files: Vec<FileMatches> = Vec::new();
    let mut notices = Vec::new();
    for entry in matches {
        match split_match(entry) {
            Some((path, line, text)) => match files.last_mut() {
                Some(file) if file.path == path => file.lines.push((line, text.to_owned())),
                Some(_) | None => {
                    files.push(FileMatches { path: path.to_owned(), lines: vec![(line, text.to_owned())] })
                }
            },
            None => notices.push(entry.trim_matches(['[', ']']).to_owned()),
        }
    }
    (files, notices)
}

/// `path:12:text` → (path, 12, text). The first `:<digits>:` ends the path, so paths may contain colons.
fn split_match(entry: &str) -> Option<(&str, usize, &str)> {
    let mut search = 0;
    while let Some(colon) = entry[search..].find(':').map(|i| search + i) {
        let rest = &entry[colon + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if colon > 0 && digits > 0 && rest[digits..].starts_with(':') {
            let line = rest[..digits].parse().ok()?;
            return Some((&entry[..colon], line, &rest[digits + 1..]));
        }
        search = colon + 1;
    }
    None
}

/// The grep pattern as the browser can match it; a pattern it cannot compile is matched literally.
pub fn matcher(pattern: &str, ignore_case: bool) -> Option<Regex> {
    if pattern.is_empty() {
        return None;
    }
    RegexBuilder::new(pattern)
        .case_insensitive(ignore_case)
        .build()
        .or_else(|_| RegexBuilder::new(&regex_lite::escape(pattern)).case_insensitive(ignore_case).build())
        .ok()
}

/// `text` cut into plain and matching pieces (`true` for a match).
pub fn highlight(text: &str, matcher: Option<&Regex>) -> Vec<(String, bool)> {
    let Some(matcher) = matcher else { return vec![(text.to_owned(), false)] };
    let mut pieces = Vec::new();
    let mut at = 0;
    for found in matcher.find_iter(text).filter(|m| !m.is_empty()) {
        if found.start() > at {
            pieces.push((text[at..found.start()].to_owned(), false));
        }
        pieces.push((found.as_str().to_owned(), true));
        at = found.end();
    }
    if at < text.len() || pieces.is_empty() {
        pieces.push((text[at..].to_owned(), false));
    }
    pieces
}

fn matches_of(part: &ChatToolPart) -> Option<Vec<String>> {
    part.output_as::<MatchesOutput>().map(|o| o.matches.into_iter().map(|line| line.into_owned()).collect())
}

#[component]
pub fn GrepView(part: ReadSignal<ChatToolPart>) -> impl IntoView {
    let pattern = Memo::new(move |_| part.with(|part| input_str(part, "pattern").unwrap_or_default()));
    let scope = Memo::new(move |_| {
        part.with(|part| {
            let mut scope = Vec::new();
            if let Some(path) = input_str(part, "path") {
                scope.push(fill(Key::InPath, &[("path", &path)]));
            }
            if let Some(glob) = input_str(part, "glob") {
                scope.push(fill(Key::FilesGlob, &[("glob", &glob)]));
            }
            if part.input.as_ref().and_then(|i| i.get("ignoreCase")).and_then(Value::as_bool) == Some(true) {
                scope.push(t(Key::IgnoringCase).to_owned());
            }
            scope.join(" · ")
        })
    });
    let results = Memo::new(move |_| part.with(|part| matches_of(part).map(|matches| group_matches(&matches))));
    let body = move || {
        let (files, notices) = results.get()?;
        let ignore_case = part.with_untracked(|part| {
            part.input.as_ref().and_then(|i| i.get("ignoreCase")).and_then(Value::as_bool) == Some(true)
        });
        let regex = matcher(&pattern.get_untracked(), ignore_case);
        let line_count: usize = files.iter().map(|file| file.lines.len()).sum();
        let summary = if files.is_empty() {
            t(Key::NoMatchesFound).to_owned()
        } else {
            let matches = plural(Key::MatchesOne, Key::MatchesOther, line_count as u64);
            fill(
                Key::MatchesInFiles,
                &[("matches", &matches), ("files", &plural(Key::FilesOne, Key::FilesOther, files.len() as u64))],
            )
        };
        Some(view! {
            <p class="tool-search__count">{summary}</p>
            {files
                .into_iter()
                .map(|file| {
                    let count = file.lines.len();
                    view! {
                        <div class="tool-search__file">
                            <div class="tool-search__path">
                                <span>{file.path}</span>
                                <span class="tool-search__file-count">{count}</span>
                            </div>
                            {file
                                .lines
                                .into_iter()
                                .map(|(line, text)| {
                                    view! {
                                        <div class="tool-search__match">
                                            <span class="tool-lines__no">{line}</span>
                                            <span class="tool-search__text">
                                                {highlight(&text, regex.as_ref())
                                                    .into_iter()
                                                    .map(|(piece, hit)| {
                                                        if hit {
                                                            view! { <mark>{piece}</mark> }.into_row_view()
                                                        } else {
                                                            piece.into_row_view()
                                                        }
                                                    })
                                                    .collect_view()}
                                            </span>
                                        </div>
                                    }
                                })
                                .collect_view()}
                        </div>
                    }
                })
                .collect_view()}
            {notices.into_iter().map(|notice| view! { <p class="tool-search__notice">{notice}</p> }).collect_view()}
        })
    };
    view! {
        <div class="tool-search">
            <div class="tool-search__query">
                <code>{move || pattern.get()}</code>
                <span class="tool-search__scope">{move || scope.get()}</span>
            </div>
            {body}
        </div>
    }
}

/// Glob and Ls: the pattern or directory, then the files found.
#[component]
pub fn FileListView(part: ReadSignal<ChatToolPart>) -> impl IntoView {
    let query = Memo::new(move |_| {
        part.with(|part| {
            let pattern = input_str(part, "pattern");
            let path = input_str(part, "path");
            match (pattern, path) {
                (Some(pattern), Some(path)) => fill(Key::PatternInPath, &[("pattern", &pattern), ("path", &path)]),
                (Some(pattern), None) => pattern,
                (None, Some(path)) => path,
                (None, None) => ".".to_owned(),
            }
        })
    });
    let entries = Memo::new(move |_| part.with(matches_of));
    let body = move || {
        let entries = entries.get()?;
        // Ls says "(empty directory)"; the tools' bracketed lines are notices.
        let (notices, files): (Vec<String>, Vec<String>) = entries
            .into_iter()
            .partition(|entry| (entry.starts_with('[') && entry.ends_with(']')) || entry == "(empty directory)");
        let summary = if files.is_empty() {
            t(Key::NothingFound).to_owned()
        } else {
            plural(Key::EntriesOne, Key::EntriesOther, files.len() as u64)
        };
        Some(view! {
            <p class="tool-search__count">{summary}</p>
            <ul class="tool-search__list">
                {files
                    .into_iter()
                    .map(|file| {
                        let class = if file.ends_with('/') { "tool-search__entry tool-search__entry--dir" } else { "tool-search__entry" };
                        view! { <li class=class>{file}</li> }
                    })
                    .collect_view()}
            </ul>
            {notices
                .into_iter()
                .map(|notice| view! { <p class="tool-search__notice">{notice.trim_matches(['[', ']', '(', ')']).to_owned()}</p> })
                .collect_view()}
        })
    };
    view! {
        <div class="tool-search">
            <div class="tool-search__query">
                <code>{move || query.get()}</code>
            </div>
            {body}
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_group_by_file_and_notices_stay_apart() {
        let matches: Vec<String> = [
            "README.md:1:say hello",
            "src/a:b.rs:2:fn hello() {}",
            "src/a:b.rs:7:x: 1:2",
            "[Showing the first 3 matches]",
        ]
        .map(str::to_owned)
        .to_vec();
        let (files, notices) = group_matches(&matches);
        assert_eq!(
            files,
            vec![
                FileMatches { path: "README.md".into(), lines: vec![(1, "say hello".into())] },
                FileMatches {
                    path: "src/a:b.rs".into(),
                    lines: vec![(2, "fn hello() {}".into()), (7, "x: 1:2".into())]
                },
            ]
        );
        assert_eq!(notices, vec!["Showing the first 3 matches".to_owned()]);
    }

    #[test]
    fn highlighting_marks_each_match_and_falls_back_to_literal() {
        let regex = matcher(r"hel+o", false);
        assert_eq!(
            highlight("say hello, hello!", regex.as_ref()),
            vec![
                ("say ".into(), false),
                ("hello".into(), true),
                (", ".into(), false),
                ("hello".into(), true),
                ("!".into(), false)
            ]
        );
        let caseless = matcher("HELLO", true);
        assert_eq!(highlight("Hello", caseless.as_ref()), vec![("Hello".into(), true)]);
        let literal = matcher("f(", false);
        assert_eq!(
            highlight("call f(x)", literal.as_ref()),
            vec![("call ".into(), false), ("f(".into(), true), ("x)".into(), false)]
        );
        assert_eq!(highlight("no match", matcher("zzz", false).as_ref()), vec![("no match".into(), false)]);
        assert_eq!(
            highlight("any", matcher("x*", false).as_ref()),
            vec![("any".into(), false)],
            "empty matches mark nothing"
        );
    }
}
