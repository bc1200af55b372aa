//! Bash and IPython rows: the command or code, its output in terminal colours (live while it runs: each partial result
//! replaces the last), the exit code and a truncation notice; long output folds to its head and tail.

use leptos::prelude::*;

use super::ansi::{self, Span};
use super::input_str;
use super::lines::format_bytes;
use crate::components::client_only::IntoRowView;
use crate::i18n::{Key, fill, t, tr};
use crate::protocol::{BashOutput, ChatToolPart, GenericOutput};

/// Output longer than this many lines is folded to its first and last lines.
const FOLD_LINES: usize = 40;
const HEAD_LINES: usize = 12;
const TAIL_LINES: usize = 12;

#[component]
pub fn BashView(part: ReadSignal<ChatToolPart>) -> impl IntoView {
    let command = Memo::new(move |_| part.with(|part| input_str(part, "command").unwrap_or_default()));
    let output = Memo::new(move |_| part.with(|part| part.output_as::<BashOutput>().map(|o| o.output.into_owned())));
    view! {
        <div class="tool-bash">
            <pre class="tool-bash__command"><span class="tool-bash__prompt" aria-hidden="true">"$ "</span>{move || command.get()}</pre>
            {move || output.get().map(|output| view! { <TerminalOutput output/> })}
            <ExitFooter part/>
        </div>
    }
}

/// IPython: the code, then its output as text (a traceback included), the exit code and a truncation notice.
#[component]
pub fn IPythonView(part: ReadSignal<ChatToolPart>) -> impl IntoView {
    let code = Memo::new(move |_| part.with(|part| input_str(part, "code").unwrap_or_default()));
    let output = Memo::new(move |_| {
        part.with(|part| {
            part.output_as::<BashOutput>()
                .map(|o| o.output)
                .or_else(|| part.output_as::<GenericOutput>().map(|o| o.text))
                .map(|text| text.into_owned())
        })
    });
    view! {
        <div class="tool-bash tool-ipython">
            <pre class="tool-bash__command"><span class="tool-bash__prompt" aria-hidden="true">{tr(Key::CodeIn)}</span>{move || code.get()}</pre>
            {move || output.get().map(|output| view! { <TerminalOutput output/> })}
            <ExitFooter part/>
        </div>
    }
}

/// The exit code (red when not 0) and the truncation notice of a command or a Python run.
#[component]
fn ExitFooter(part: ReadSignal<ChatToolPart>) -> impl IntoView {
    let exit_code = Memo::new(move |_| part.with(|part| part.output_as::<BashOutput>().and_then(|o| o.exit_code)));
    let truncation = Memo::new(move |_| part.with(truncation_notice));
    view! {
        <div class="tool-bash__footer">
            {move || {
                exit_code
                    .get()
                    .map(|code| {
                        let class = if code == 0 { "tool-bash__exit" } else { "tool-bash__exit tool-bash__exit--failed" };
                        view! { <span class=class>{fill(Key::ExitCode, &[("code", &code.to_string())])}</span> }
                    })
            }}
            {move || truncation.get().map(|notice| view! { <span class="tool-bash__truncated">{notice}</span> })}
        </div>
    }
}

/// "Output truncated: 1.2 MiB in total, full output in /tmp/…"
fn truncation_notice(part: &ChatToolPart) -> Option<String> {
    let output = part.output_as::<BashOutput>().filter(|o| o.truncated)?;
    let mut notice = t(Key::OutputTruncated).to_owned();
    if let Some(total) = output.total_bytes {
        notice.push_str(&fill(Key::InTotal, &[("size", &format_bytes(total as usize))]));
    }
    if let Some(path) = output.full_output_path {
        notice.push_str(&fill(Key::FullOutputIn, &[("path", &path)]));
    }
    Some(notice)
}

/// Terminal output with its colours; folded to head and tail when long, until "Show all".
#[component]
fn TerminalOutput(output: String) -> impl IntoView {
    let lines = ansi::parse_lines(&output);
    let total = lines.len();
    if total <= FOLD_LINES {
        return view! { <pre class="tool-output">{render_lines(lines)}</pre> }.into_row_view();
    }
    let expanded = RwSignal::new(false);
    let hidden = total - HEAD_LINES - TAIL_LINES;
    let head = lines[..HEAD_LINES].to_vec();
    let tail = lines[total - TAIL_LINES..].to_vec();
    let all = StoredValue::new(lines);
    view! {
        <pre class="tool-output">
            {move || {
                if expanded.get() {
                    render_lines(all.get_value()).into_row_view()
                } else {
                    view! {
                        {render_lines(head.clone())}
                        <button
                            class="button button--ghost tool__more"
                            type="button"
                            on:click=move |_| expanded.set(true)
                        >
                            {move || fill(Key::ShowAll, &[("n", &hidden.to_string())])}
                        </button>
                        {"\n"}
                        {render_lines(tail.clone())}
                    }
                    .into_row_view()
                }
            }}
        </pre>
    }
    .into_row_view()
}

fn render_lines(lines: Vec<Vec<Span>>) -> impl IntoView {
    lines
        .into_iter()
        .map(|line| {
            let spans = line
                .into_iter()
                .map(|span| {
                    let classes = span.style.classes();
                    if classes.is_empty() {
                        view! { <span>{span.text}</span> }.into_row_view()
                    } else {
                        view! { <span class=classes>{span.text}</span> }.into_row_view()
                    }
                })
                .collect_view();
            view! { <span class="tool-output__line">{spans}{"\n"}</span> }
        })
        .collect_view()
}
