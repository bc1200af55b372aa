//! Text shown as numbered lines that may still be growing: complete lines are split off once and each drawn once,
//! only the open last line is redrawn as more text arrives. Long texts fold to their first lines with "Show all".
//! Complete lines of a file whose language is known are highlighted once the highlighter's chunk is there.

use std::sync::Arc;

use leptos::prelude::*;

use crate::components::highlight::highlighter;
use crate::highlight::{CodeCache, Highlighter};
use crate::i18n::{Key, fill, plural};
use crate::markdown::escape_html;

/// The complete lines of a text that grows at its end, split incrementally.
#[derive(Debug, Default)]
pub struct LineSplitter {
    /// The text up to and including the last newline seen.
    complete: String,
    lines: Vec<Arc<str>>,
}

/// What a [`LineSplitter::sync`] found.
#[derive(Debug, PartialEq)]
pub enum LineSync {
    Unchanged,
    /// New complete lines after the ones already reported.
    Appended(Vec<Arc<str>>),
    /// The text is not a continuation of the previous one: all its complete lines.
    Replaced(Vec<Arc<str>>),
}

impl LineSplitter {
    pub fn sync(&mut self, text: &str) -> LineSync {
        if !text.starts_with(self.complete.as_str()) {
            self.complete.clear();
            self.lines.clear();
            let lines = self.take_lines(text);
            return LineSync::Replaced(lines);
        }
        let lines = self.take_lines(text);
        if lines.is_empty() { LineSync::Unchanged } else { LineSync::Appended(lines) }
    }

    fn take_lines(&mut self, text: &str) -> Vec<Arc<str>> {
        let rest = &text[self.complete.len()..];
        let Some(last_newline) = rest.rfind('\n') else { return Vec::new() };
        let fresh: Vec<Arc<str>> =
            rest[..last_newline].split('\n').map(|line| Arc::from(line.strip_suffix('\r').unwrap_or(line))).collect();
        self.complete.push_str(&rest[..=last_newline]);
        self.lines.extend(fresh.iter().cloned());
        fresh
    }

    /// The text after the last complete line.
    pub fn tail<'a>(&self, text: &'a str) -> &'a str {
        text.get(self.complete.len()..).unwrap_or_default()
    }
}

/// Line count and size of a text, for the live "12 lines · 340 B" line.
pub fn size_label(text: &str) -> String {
    let lines = if text.is_empty() { 0 } else { text.lines().count() };
    let lines = plural(Key::LinesOne, Key::LinesOther, lines as u64);
    format!("{lines} · {}", format_bytes(text.len()))
}

pub fn format_bytes(bytes: usize) -> String {
    crate::protocol::byte_size(bytes as u64)
}

/// The new complete lines `fresh` of `text` as HTML: highlighted when a highlighter and a path are given and it
/// finds as many lines as the splitter did, escaped otherwise.
pub fn lines_html(
    highlighter: Option<Highlighter>,
    path: Option<&str>,
    code: &mut CodeCache,
    text: &str,
    fresh: &[Arc<str>],
) -> Vec<Arc<str>> {
    if let (Some(highlighter), Some(path)) = (highlighter, path) {
        let html = (highlighter.new_lines)(code, path, text);
        if html.len() == fresh.len() {
            return html;
        }
    }
    fresh
        .iter()
        .map(|line| {
            let mut plain = String::new();
            escape_html(&mut plain, line);
            Arc::from(plain)
        })
        .collect()
}

/// `text` as numbered lines from `first_line` on, drawn incrementally; past `fold_after` lines only the first
/// `fold_after` are drawn until "Show all" is pressed (`None`: never folded). Each line is kept as HTML: escaped
/// text, or highlighted code when `path` names a file of a known language and the highlighter is there.
#[component]
pub fn NumberedLines(
    #[prop(into)] text: Signal<String>,
    #[prop(into)] first_line: Signal<usize>,
    fold_after: Option<usize>,
    /// The file's path, for its language.
    #[prop(optional, into)]
    path: MaybeProp<String>,
) -> impl IntoView {
    let splitter = StoredValue::new(LineSplitter::default());
    let code = StoredValue::new(CodeCache::default());
    let lines = RwSignal::new(Vec::<(usize, Arc<str>)>::new());
    let tail = RwSignal::new(String::new());
    let generation = StoredValue::new(0usize);
    // The path the drawn lines were highlighted for (`None` inside: drawn plain); a change draws them all anew.
    let drawn_for = StoredValue::new(None::<Option<String>>);
    Effect::new(move |_| {
        let path = path.get().filter(|path| !path.is_empty());
        let highlighter = match path {
            Some(_) if text.with(|text| !text.is_empty()) => highlighter(),
            Some(_) | None => None,
        };
        let highlighted_for = highlighter.and(path);
        let redraw = drawn_for.with_value(|drawn| drawn.as_ref() != Some(&highlighted_for));
        if redraw {
            drawn_for.set_value(Some(highlighted_for.clone()));
            splitter.set_value(LineSplitter::default());
            code.set_value(CodeCache::default());
        }
        text.with(|text| {
            let html = |fresh: Vec<Arc<str>>| {
                let path = highlighted_for.as_deref();
                code.try_update_value(|code| lines_html(highlighter, path, code, text, &fresh)).unwrap_or_default()
            };
            let sync = splitter.try_update_value(|splitter| {
                let sync = splitter.sync(text);
                let open = splitter.tail(text);
                if tail.with_untracked(|old| old != open) {
                    tail.set(open.to_owned());
                }
                sync
            });
            let Some(sync) = sync else { return };
            let numbered = |start: usize, fresh: Vec<Arc<str>>| {
                fresh.into_iter().enumerate().map(move |(i, line)| (start + i, line)).collect::<Vec<_>>()
            };
            // New keys, so no line of the old text is taken for one of the new.
            let replace = |fresh: Vec<Arc<str>>| {
                generation.update_value(|g| *g += 1);
                lines.set(numbered(0, html(fresh)));
            };
            match (redraw, sync) {
                (false, LineSync::Unchanged) => {}
                (false, LineSync::Appended(fresh)) => {
                    let fresh = html(fresh);
                    lines.update(|lines| {
                        let start = lines.len();
                        lines.extend(numbered(start, fresh));
                    });
                }
                (false, LineSync::Replaced(fresh)) => replace(fresh),
                // The splitter started again, so what it found is every line, not those after the ones on screen
                // (appended, they doubled what was drawn before the highlighter came).
                (true, LineSync::Appended(fresh) | LineSync::Replaced(fresh)) => replace(fresh),
                (true, LineSync::Unchanged) => replace(Vec::new()),
            }
        })
    });
    let expanded = RwSignal::new(false);
    let shown = move || {
        let lines = lines.get();
        match fold_after {
            Some(limit) if !expanded.get() && lines.len() > limit => lines[..limit].to_vec(),
            Some(_) | None => lines,
        }
    };
    let hidden = move || match fold_after {
        Some(limit) if !expanded.get() => lines.with(|lines| lines.len().saturating_sub(limit)),
        Some(_) | None => 0,
    };
    let key_generation = move || generation.get_value();
    view! {
        <div class="tool-lines">
            <For each=shown key=move |(index, _)| (key_generation(), *index) let:line>
                <div class="tool-lines__line">
                    <span class="tool-lines__no" aria-hidden="true">{move || first_line.get() + line.0}</span>
                    <span class="tool-lines__text" inner_html=line.1.to_string()></span>
                </div>
            </For>
            <Show when=move || hidden() == 0 && tail.with(|tail| !tail.is_empty())>
                <div class="tool-lines__line tool-lines__line--open">
                    <span class="tool-lines__no" aria-hidden="true">
                        {move || first_line.get() + lines.with(Vec::len)}
                    </span>
                    <span class="tool-lines__text">{move || tail.get()}</span>
                </div>
            </Show>
            <Show when=move || { hidden() > 0 }>
                <button class="button button--ghost tool__more" type="button" on:click=move |_| expanded.set(true)>
                    {move || fill(Key::ShowAll, &[("n", &hidden().to_string())])}
                </button>
            </Show>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Arc<str>]) -> Vec<&str> {
        lines.iter().map(|line| &**line).collect()
    }

    #[test]
    fn complete_lines_are_reported_once_and_the_tail_stays_open() {
        let mut splitter = LineSplitter::default();
        assert_eq!(splitter.sync("fn ma"), LineSync::Unchanged);
        assert_eq!(splitter.tail("fn ma"), "fn ma");
        let LineSync::Appended(lines) = splitter.sync("fn main() {\n    pri") else { panic!("lines expected") };
        assert_eq!(texts(&lines), ["fn main() {"]);
        assert_eq!(splitter.tail("fn main() {\n    pri"), "    pri");
        let LineSync::Appended(lines) = splitter.sync("fn main() {\n    print();\r\n\n}") else { panic!() };
        assert_eq!(texts(&lines), ["    print();", ""]);
        assert_eq!(splitter.sync("fn main() {\n    print();\r\n\n}"), LineSync::Unchanged);
    }

    #[test]
    fn a_text_that_does_not_continue_the_old_one_replaces_it() {
        let mut splitter = LineSplitter::default();
        splitter.sync("a\nb\n");
        let LineSync::Replaced(lines) = splitter.sync("x\ny") else { panic!("a replacement expected") };
        assert_eq!(texts(&lines), ["x"]);
        assert_eq!(splitter.tail("x\ny"), "y");
    }

    #[test]
    fn file_lines_are_highlighted_once_each_and_markup_stays_text() {
        let markup = "x = '<img src=x onerror=alert(1)>'  # </code><script>alert(2)</script>";
        let text = format!("{markup}\ndef f():\n    retu");
        let mut splitter = LineSplitter::default();
        let mut code = CodeCache::default();
        let LineSync::Appended(fresh) = splitter.sync(&text) else { panic!("lines expected") };
        let html = lines_html(highlighter(), Some("app/page.py"), &mut code, &text, &fresh);
        assert_eq!(html.len(), 2);
        assert!(html.iter().all(|line| !line.contains("<img") && !line.contains("<script")), "{html:?}");
        assert!(html[1].contains("<span class=\"hl-keyword\">def</span>"), "{html:?}");
        let more = format!("{text}rn 1\n");
        let LineSync::Appended(fresh) = splitter.sync(&more) else { panic!("a line expected") };
        let html = lines_html(highlighter(), Some("app/page.py"), &mut code, &more, &fresh);
        assert_eq!(html.len(), 1, "only the new line: {html:?}");
        assert!(html[0].contains("<span class=\"hl-keyword\">return</span>"), "{html:?}");
        let plain = lines_html(highlighter(), Some("notes.txt"), &mut CodeCache::default(), &text, &fresh);
        assert_eq!(&*plain[0], "    return 1", "an unknown language is escaped text");
        let plain = lines_html(None, Some("app/page.py"), &mut CodeCache::default(), markup, &[Arc::from(markup)]);
        assert!(plain[0].starts_with("x = &#39;&lt;img"), "before the highlighter comes: {plain:?}");
    }

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(size_label(""), "0 lines · 0 B");
        assert_eq!(size_label("one"), "1 line · 3 B");
        assert_eq!(size_label("a\nb\n"), "2 lines · 4 B");
        assert_eq!(format_bytes(2048), "2 KiB");
        assert_eq!(format_bytes(2560), "2.5 KiB");
        assert_eq!(format_bytes(3 * 1_048_576), "3 MiB");
    }
}
