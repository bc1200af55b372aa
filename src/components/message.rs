//! One message of the transcript: its parts, each a keyed row that redraws only when its own signals change.

use leptos::prelude::*;

use crate::components::client_only::IntoRowView;

use super::rows::{MarkdownSignals, MessageRow, PartRow, PartSignals};
use super::tool::ToolRow;
use super::tool::{MessageParts, top_level};
use crate::protocol::ErrorPart;

#[component]
pub fn MessageView(row: MessageRow) -> impl IntoView {
    let role = row.role.as_str();
    let parts = row.parts;
    // A sub-agent's calls are drawn inside their task's group, which finds them through this context.
    provide_context(MessageParts(parts.clone()));
    view! {
        <article class=format!("message message--{role}") data-role=role data-message-id=row.id>
            <For each=move || top_level(parts.get()) key=|part| part.key.clone() let:part>
                <PartView part/>
            </For>
            // Handled by the transcript's one click listener, which finds the message by its id.
            <div class="message__actions">
                <button type="button" class="message__copy" data-copy-message aria-label="Copy message as Markdown">
                    "Copy"
                </button>
            </div>
        </article>
    }
}

#[component]
pub(super) fn PartView(part: PartRow) -> impl IntoView {
    match part.content {
        PartSignals::Plain(text) => {
            view! { <p class="part part--text part--plain">{move || text.get()}</p> }.into_row_view()
        }
        PartSignals::Text(markdown) => view! { <MarkdownView markdown/> }.into_row_view(),
        PartSignals::Thinking { text, open } => view! {
            <details class="part part--thinking" prop:open=move || open.get()>
                <summary>"Thinking"</summary>
                <p class="thinking__text">{move || text.get()}</p>
            </details>
        }
        .into_row_view(),
        PartSignals::Error(error) => view! { <ErrorRow error/> }.into_row_view(),
        PartSignals::Tool(tool) => view! { <ToolRow tool/> }.into_row_view(),
    }
}

/// Finished blocks per group. The browser's work per streamed update (laying out the open tail's ancestors, checking
/// which `content-visibility: auto` boxes are on screen, pre-paint) grows with the number of boxes beside the tail;
/// grouping keeps a long answer's hundreds of blocks to a few dozen boxes, and off-screen groups are skipped whole.
const BLOCKS_PER_GROUP: usize = 16;

/// Assistant text: finished blocks are built once each; only the open tail's HTML is replaced on a delta.
#[component]
fn MarkdownView(markdown: MarkdownSignals) -> impl IntoView {
    let MarkdownSignals { blocks, tail } = markdown;
    let groups = {
        let blocks = blocks.clone();
        move || 0..blocks.with(|blocks| blocks.len().div_ceil(BLOCKS_PER_GROUP))
    };
    let group_view = move |group: usize| {
        let blocks = blocks.clone();
        let in_group = move || {
            blocks.with(|blocks| {
                let start = (group * BLOCKS_PER_GROUP).min(blocks.len());
                let end = (start + BLOCKS_PER_GROUP).min(blocks.len());
                blocks[start..end].to_vec()
            })
        };
        view! {
            <div class="markdown__group">
                <For each=in_group key=|block| block.key let:block>
                    <div class="markdown__block" inner_html=block.html.to_string()></div>
                </For>
            </div>
        }
    };
    view! {
        <div class="part part--text markdown">
            <For each=groups key=|group| *group children=group_view/>
            <div class="markdown__block markdown__block--open" inner_html=move || tail.get()></div>
        </div>
    }
}

#[component]
fn ErrorRow(error: ArcRwSignal<ErrorPart>) -> impl IntoView {
    move || {
        let ErrorPart { title, message } = error.get();
        view! {
            <p class="part part--error" role="alert">
                {title.map(|title| view! { <strong>{title}": "</strong> })}
                {message}
            </p>
        }
    }
}
