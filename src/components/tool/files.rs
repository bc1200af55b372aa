//! Read, Write and Edit rows: the path as soon as the model has written it, the content growing line by line while
//! the arguments stream (with a live size), then the file with line numbers or the edit's diff.

use leptos::prelude::*;

use crate::components::client_only::IntoRowView;
use serde_json::Value;

use super::diff::{self, DiffLine};
use super::input_str;
use super::lines::{NumberedLines, format_bytes, size_label};
use crate::components::highlight::highlighter;
use crate::highlight::DiffSide;
use crate::i18n::{Key, fill, plural, tr};
use crate::markdown::escape_html;
use crate::protocol::{ChatToolPart, EditOutput, ReadOutput, ToolState, WriteOutput};

/// Read results longer than this many lines fold.
const READ_FOLD_LINES: usize = 60;

#[component]
fn PathLine(path: Memo<Option<String>>, #[prop(into)] detail: Signal<Option<String>>) -> impl IntoView {
    view! {
        <div class="tool-file__path">
            <span class="tool-file__name">{move || path.get().unwrap_or_else(|| "…".to_owned())}</span>
            {move || detail.get().map(|detail| view! { <span class="tool-file__detail">{detail}</span> })}
        </div>
    }
}

fn path_memo(part: ReadSignal<ChatToolPart>) -> Memo<Option<String>> {
    Memo::new(move |_| part.with(|part| input_str(part, "path").or_else(|| input_str(part, "file_path"))))
}

fn streaming(part: ReadSignal<ChatToolPart>) -> Memo<bool> {
    Memo::new(move |_| part.with(|part| part.state == ToolState::InputStreaming))
}

#[component]
pub fn ReadView(part: ReadSignal<ChatToolPart>) -> impl IntoView {
    let path = path_memo(part);
    let offset = Memo::new(move |_| {
        part.with(|part| part.input.as_ref().and_then(|i| i.get("offset")).and_then(Value::as_u64).unwrap_or(1)).max(1)
            as usize
    });
    let limit =
        Memo::new(move |_| part.with(|part| part.input.as_ref().and_then(|i| i.get("limit")).and_then(Value::as_u64)));
    // The tool appends "[Showing lines a-b of n. …]" to a partial read; it is shown as a notice, not as a line.
    let content = Memo::new(move |_| {
        part.with(|part| {
            let read = part.output_as::<ReadOutput>()?;
            Some(split_notice(&read.content, read.truncated))
        })
    });
    let range = Signal::derive(move || {
        let first = offset.get();
        let shown = content.with(|c| c.as_ref().map(|(text, notice)| (text.lines().count(), notice.is_some())));
        match shown {
            Some((count, partial)) if count > 0 && (first > 1 || partial || limit.get().is_some()) => {
                Some(line_range(first, first + count - 1))
            }
            Some((count, _)) => Some(plural(Key::LinesOne, Key::LinesOther, count as u64)),
            None => match limit.get() {
                Some(limit) => Some(line_range(first, first + limit as usize - 1)),
                None => (first > 1).then(|| fill(Key::FromLine, &[("first", &first.to_string())])),
            },
        }
    });
    let text = Signal::derive(move || content.with(|c| c.as_ref().map(|(text, _)| text.clone()).unwrap_or_default()));
    let notice = move || content.with(|c| c.as_ref().and_then(|(_, notice)| notice.clone()));
    view! {
        <div class="tool-file">
            <PathLine path detail=range/>
            <Show when=move || content.with(Option::is_some)>
                <NumberedLines text first_line=offset fold_after=Some(READ_FOLD_LINES) path/>
            </Show>
            {move || notice().map(|notice| view! { <p class="tool-file__notice">{notice}</p> })}
        </div>
    }
}

/// "lines 3–9".
fn line_range(first: usize, last: usize) -> String {
    fill(Key::LineRange, &[("first", &first.to_string()), ("last", &last.to_string())])
}

/// Splits a trailing `\n\n[…]` continuation notice off a read's content.
fn split_notice(text: &str, truncated: bool) -> (String, Option<String>) {
    if truncated
        && let Some(at) = text.rfind("\n\n[")
        && text.ends_with(']')
    {
        return (text[..at].to_owned(), Some(text[at + 2..].trim_matches(['[', ']']).to_owned()));
    }
    (text.to_owned(), None)
}

#[component]
pub fn WriteView(part: ReadSignal<ChatToolPart>) -> impl IntoView {
    let path = path_memo(part);
    let is_streaming = streaming(part);
    let content = Memo::new(move |_| part.with(|part| input_str(part, "content").unwrap_or_default()));
    let written = Memo::new(move |_| part.with(|part| part.output_as::<WriteOutput>().map(|o| o.bytes)));
    let detail = Signal::derive(move || {
        if let Some(bytes) = written.get() {
            return Some(fill(Key::Wrote, &[("size", &format_bytes(bytes as usize))]));
        }
        let label = content.with(|content| size_label(content));
        Some(if is_streaming.get() { fill(Key::Writing, &[("what", &label)]) } else { label })
    });
    view! {
        <div class="tool-file">
            <PathLine path detail/>
            <NumberedLines text=content first_line=1usize fold_after=None path/>
        </div>
    }
}

#[component]
pub fn EditView(part: ReadSignal<ChatToolPart>) -> impl IntoView {
    let path = path_memo(part);
    let is_streaming = streaming(part);
    let old_text =
        Memo::new(move |_| part.with(|part| input_str(part, "oldText").or_else(|| input_str(part, "old_string"))));
    let new_text = Memo::new(move |_| {
        part.with(|part| input_str(part, "newText").or_else(|| input_str(part, "new_string")).unwrap_or_default())
    });
    let output_diff = Memo::new(move |_| {
        part.with(|part| {
            part.output_as::<EditOutput>().map(|o| o.diff).filter(|d| !d.is_empty()).map(|d| d.into_owned())
        })
    });
    // While the model writes, the new text grows line by line; once the arguments are complete, the replacement
    // (or, after the tool ran, the file's real diff with its line numbers).
    let lines = Memo::new(move |_| {
        if is_streaming.get() {
            return None;
        }
        Some(match output_diff.get() {
            Some(unified) => diff::parse_unified(&unified),
            None => diff::replacement(&old_text.get().unwrap_or_default(), &new_text.get()),
        })
    });
    let detail = Signal::derive(move || {
        if is_streaming.get() {
            return Some(fill(Key::Writing, &[("what", &new_text.with(|text| size_label(text)))]));
        }
        lines.with(|lines| {
            lines.as_ref().map(|lines| {
                let (added, removed) = diff::counts(lines);
                format!("+{added} −{removed}")
            })
        })
    });
    view! {
        <div class="tool-file">
            <PathLine path detail/>
            {move || {
                match lines.get() {
                    None => {
                        view! { <NumberedLines text=new_text first_line=1usize fold_after=None path/> }.into_row_view()
                    }
                    Some(lines) => {
                        view! { <DiffView lines path=path.get_untracked().unwrap_or_default()/> }.into_row_view()
                    }
                }
            }}
        </div>
    }
}

/// Diff lines with their old and new numbers; added and removed lines coloured, and their code highlighted once
/// the highlighter is there, when `path`'s language is known.
#[component]
pub fn DiffView(
    lines: Vec<DiffLine>,
    /// The file's path, for its language.
    #[prop(optional, into)]
    path: String,
) -> impl IntoView {
    let number = |n: Option<usize>| n.map(|n| n.to_string()).unwrap_or_default();
    let sides: Vec<DiffSide> = lines.iter().map(|line| line.kind.side()).collect();
    let rows = move || {
        let pairs: Vec<(DiffSide, &str)> =
            sides.iter().zip(&lines).map(|(side, line)| (*side, line.text.as_str())).collect();
        let html =
            (!path.is_empty()).then(highlighter).flatten().and_then(|highlighter| (highlighter.diff)(&path, &pairs));
        lines
            .iter()
            .enumerate()
            .map(|(index, line)| {
                let text = match html.as_ref().and_then(|html| html.get(index)) {
                    Some(html) => html.clone(),
                    None => {
                        let mut plain = String::new();
                        escape_html(&mut plain, &line.text);
                        plain
                    }
                };
                let line = line.clone();
                view! {
                    <div class=line.kind.class() role="row">
                        <span class="diff-line__no" aria-hidden="true">{number(line.old)}</span>
                        <span class="diff-line__no" aria-hidden="true">{number(line.new)}</span>
                        <span class="diff-line__sign" role="cell" aria-label=line.kind.spoken()>
                            {line.kind.sign()}
                        </span>
                        <span class="diff-line__text" role="cell" inner_html=text></span>
                    </div>
                }
            })
            .collect_view()
    };
    view! {
        <div class="tool-diff" role="table" aria-label=tr(Key::Changes)>
            {rows}
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::split_notice;

    #[test]
    fn a_partial_read_loses_its_notice_to_the_notice_line() {
        let text = "line 3\nline 4\n\n[Showing lines 3-4 of 10. Use offset=5 to continue.]";
        assert_eq!(
            split_notice(text, true),
            ("line 3\nline 4".to_owned(), Some("Showing lines 3-4 of 10. Use offset=5 to continue.".to_owned()))
        );
        assert_eq!(split_notice(text, false).1, None, "an untruncated read is all content");
    }
}
