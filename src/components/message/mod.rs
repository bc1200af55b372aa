//! One message of the transcript: its parts, each a keyed row that redraws only when its own signals change.
//!
//! In the browser the rows come from a WASM chunk of their own ([`split`]).

#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
mod split;

use leptos::ev::KeyboardEvent;
use leptos::prelude::*;

#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
pub use self::split::{message_row, prefetch_message_rows, render_markdown, sync_rows, track_message_rows};
use crate::components::client_only::{IntoRowView, RowView, show_or};

use super::changes::{ChangesLoad, ChangesRow};
use super::highlight::highlighter;
use super::rows::{BranchPlace, MarkdownSignals, MessageRow, PartRow, PartSignals};
use super::tool::ToolRow;
use super::tool::{MessageParts, top_level};
use super::usage::UsageLine;
use crate::highlight::{CodeCaches, has_code_block};
use crate::i18n::{Key, fill, tr};
use crate::markdown::{has_code_bar, relabel_code_bars};
use crate::protocol::{ErrorPart, FilePart, Role, byte_size};

/// What a message's Edit, Regenerate and version arrows do; the page provides it.
#[derive(Clone, Copy)]
pub struct MessageActions {
    /// The user message being edited in place, if any.
    pub editing: RwSignal<Option<String>>,
    /// The last message on screen: an answer there offers Regenerate.
    pub last_message: Signal<Option<String>>,
    /// True while a run is active: nothing is edited, regenerated or switched then.
    pub busy: Signal<bool>,
    /// Why this server cannot edit or regenerate (its runtime), if it cannot.
    pub rerun_unavailable: Signal<Option<String>>,
    /// Runs the edited text of a user message: (message id, new text, put the files back as they were before the
    /// message first).
    pub edit: Callback<(String, String, bool)>,
    /// Answers again the user message an answer replied to: (answer id, put the files back as they were before that
    /// message first).
    pub regenerate: Callback<(String, bool)>,
    /// Shows the branch through a sibling message: (its id).
    pub show_branch: Callback<String>,
    /// Puts the workspace's files back as they were before a user message ran: (its id).
    pub restore: Callback<String>,
    /// Forks the session at a message into a new session: (its id).
    pub fork: Callback<String>,
    /// Fetches the diff of a run's changes into the signal: (the run's checkpoint key, where the diff goes).
    pub load_changes: Callback<(String, RwSignal<ChangesLoad>)>,
}

/// A message's row; the server and its tests build it directly.
#[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
pub fn message_row(row: MessageRow) -> RowView {
    build_message(row)
}

#[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
pub fn prefetch_message_rows() {}

#[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
pub fn sync_rows(
    rows: &mut super::rows::TranscriptRows,
    snapshot: &crate::chat_state::ChatSnapshot,
    built: &dyn Fn(usize) -> bool,
) -> super::rows::SyncReport {
    rows.sync(snapshot, built)
}

#[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
pub fn render_markdown(
    rows: &mut super::rows::TranscriptRows,
    snapshot: &crate::chat_state::ChatSnapshot,
    messages: std::ops::Range<usize>,
) {
    rows.render_markdown(snapshot, messages);
}

#[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
pub fn track_message_rows() {}

fn build_message(row: MessageRow) -> RowView {
    view! { <MessageView row/> }.into_row_view()
}

#[component]
fn MessageView(row: MessageRow) -> impl IntoView {
    let role = row.role.as_str();
    let parts = row.parts;
    // A sub-agent's calls are drawn inside their task's group, which finds them through this context.
    provide_context(MessageParts { parts: parts.clone(), draw: part_view });
    let actions = use_context::<MessageActions>();
    let editing = {
        let id = row.id.clone();
        move || actions.is_some_and(|actions| actions.editing.with(|editing| editing.as_deref() == Some(id.as_str())))
    };
    let shown_parts = {
        let parts = parts.clone();
        move || {
            let parts = parts.clone();
            view! {
                <For each=move || top_level(parts.get()) key=|part| part.key.clone() let:part>
                    <PartView part/>
                </For>
            }
        }
    };
    let editor = {
        let (id, parts) = (row.id.clone(), parts.clone());
        move || actions.map(|actions| view! { <MessageEditor id=id.clone() text=typed_text(&parts) actions/> })
    };
    view! {
        <article class=format!("message message--{role}") data-role=role data-message-id=row.id.clone()>
            {show_or(editing.clone(), editor.clone(), shown_parts)}
            {
                let changes = row.changes.clone();
                move || {
                    let load = actions?.load_changes;
                    changes.get().map(|changes| view! { <ChangesRow changes load/> })
                }
            }
            // Copy is handled by the transcript's one click listener, which finds the message by its id.
            <div class="message__actions" hidden=editing>
                <UsageLine usage=row.usage.clone()/>
                {actions.map(|actions| view! { <BranchArrows place=row.place.clone() actions/> })}
                {actions.map(|actions| view! { <RerunButton id=row.id.clone() role=row.role actions/> })}
                {actions
                    .filter(|_| row.role == Role::User)
                    .map(|actions| view! { <RestoreButton id=row.id.clone() actions/> })}
                {actions.map(|actions| view! { <ForkButton id=row.id.clone() role=row.role actions/> })}
                <button type="button" class="message__copy" data-copy-message aria-label=tr(Key::CopyMessage)>
                    {tr(Key::Copy)}
                </button>
            </div>
        </article>
    }
}

/// What the user typed: a user message's text parts.
fn typed_text(parts: &ArcRwSignal<Vec<PartRow>>) -> String {
    parts.with_untracked(|parts| {
        let texts: Vec<String> = parts
            .iter()
            .filter_map(|part| match &part.content {
                PartSignals::Plain(text) => Some(text.get_untracked()),
                PartSignals::Text(_)
                | PartSignals::Thinking { .. }
                | PartSignals::Error(_)
                | PartSignals::File(_)
                | PartSignals::Tool(_) => None,
            })
            .collect();
        texts.join("\n\n")
    })
}

/// "‹ 2/3 ›" on a message that has other versions (edits of it, or other answers to the same message).
#[component]
fn BranchArrows(place: ArcRwSignal<Option<BranchPlace>>, actions: MessageActions) -> impl IntoView {
    move || {
        let place = place.get()?;
        let go = move |target: Option<String>| {
            move |_| {
                if let Some(id) = target.clone() {
                    actions.show_branch.run(id);
                }
            }
        };
        let (previous, next) = (place.previous.is_none(), place.next.is_none());
        Some(view! {
            <span class="message__versions" data-testid="versions">
                <button
                    type="button"
                    class="message__version"
                    aria-label=tr(Key::PreviousVersion)
                    disabled=move || previous || actions.busy.get()
                    on:click=go(place.previous.clone())
                >
                    "‹"
                </button>
                <span class="message__version-number">{format!("{}/{}", place.number, place.count)}</span>
                <button
                    type="button"
                    class="message__version"
                    aria-label=tr(Key::NextVersion)
                    disabled=move || next || actions.busy.get()
                    on:click=go(place.next.clone())
                >
                    "›"
                </button>
            </span>
        })
    }
}

/// Edit on a user message, Regenerate on the last answer; disabled while a run is active, and with the reason on a
/// server whose runtime cannot branch.
#[component]
fn RerunButton(id: String, role: Role, actions: MessageActions) -> impl IntoView {
    let reason = move || actions.rerun_unavailable.get();
    let disabled = move || actions.busy.get() || reason().is_some();
    match role {
        Role::User => {
            let start = move |_| actions.editing.set(Some(id.clone()));
            view! {
                <button type="button" class="message__edit" title=reason disabled=disabled on:click=start>
                    {tr(Key::Edit)}
                </button>
            }
            .into_row_view()
        }
        Role::Assistant => {
            let is_last = {
                let id = id.clone();
                move || actions.last_message.with(|last| last.as_deref() == Some(id.as_str()))
            };
            view! {
                <Show when=is_last.clone()>
                    <RegenerateButton id=id.clone() actions/>
                </Show>
            }
            .into_row_view()
        }
    }
}

/// Regenerate on the last answer: it asks in place whether to keep the files as they are or put them back as they were
/// before the question first (they may have changed since).
#[component]
fn RegenerateButton(id: String, actions: MessageActions) -> impl IntoView {
    let reason = move || actions.rerun_unavailable.get();
    let disabled = move || actions.busy.get() || reason().is_some();
    let asking = RwSignal::new(false);
    let regenerate = move |restore_first: bool| {
        asking.set(false);
        actions.regenerate.run((id.clone(), restore_first));
    };
    show_or(
        move || asking.get(),
        move || {
            view! {
            <span class="message__confirm" role="group" aria-label=tr(Key::Regenerate)>
                <button
                    type="button"
                    class="button button--small button--primary"
                    disabled=disabled
                    on:click={
                        let regenerate = regenerate.clone();
                        move |_| regenerate(false)
                    }
                >
                    {tr(Key::Regenerate)}
                </button>
                <button
                    type="button"
                    class="button button--small"
                    disabled=disabled
                    on:click={
                        let regenerate = regenerate.clone();
                        move |_| regenerate(true)
                    }
                >
                    {tr(Key::RestoreFilesFirst)}
                </button>
                <button type="button" class="button button--small" on:click=move |_| asking.set(false)>
                    {tr(Key::Cancel)}
                </button>
            </span>
            }
        },
        move || {
            view! {
                <button
                    type="button"
                    class="message__regenerate"
                    title=reason
                    disabled=disabled
                    on:click=move |_| asking.set(true)
                >
                    {tr(Key::Regenerate)}
                </button>
            }
        },
    )
}

/// "Restore files" on a user message: it first asks, in place, whether to put the workspace's files back as they
/// were before the message ran (a page dialog is what injected markup would open, so the page opens none).
#[component]
fn RestoreButton(id: String, actions: MessageActions) -> impl IntoView {
    let asking = RwSignal::new(false);
    let confirm_button = NodeRef::<leptos::html::Button>::new();
    Effect::new(move |_| {
        if asking.get()
            && let Some(button) = confirm_button.get()
        {
            let _ = button.focus();
        }
    });
    let restore = move |_| {
        asking.set(false);
        actions.restore.run(id.clone());
    };
    show_or(
        move || asking.get(),
        move || {
            view! {
            <span class="message__confirm" role="group" aria-label=tr(Key::ConfirmRestore)>
                <span class="message__confirm-text">{tr(Key::RestoreQuestion)}</span>
                <button
                    type="button"
                    class="button button--small button--danger"
                    node_ref=confirm_button
                    disabled=move || actions.busy.get()
                    on:click=restore.clone()
                >
                    {tr(Key::Restore)}
                </button>
                <button type="button" class="button button--small" on:click=move |_| asking.set(false)>
                    {tr(Key::Cancel)}
                </button>
            </span>
            }
        },
        move || {
            view! {
                <button
                    type="button"
                    class="message__restore"
                    title=tr(Key::RestoreFilesHint)
                    disabled=move || actions.busy.get()
                    on:click=move |_| asking.set(true)
                >
                    {tr(Key::RestoreFiles)}
                </button>
            }
        },
    )
}

/// "Fork" on every message: a new session with the conversation up to this message (before it, for a message of
/// the user's, whose text then waits in the new session's message box).
#[component]
fn ForkButton(id: String, role: Role, actions: MessageActions) -> impl IntoView {
    let title = match role {
        Role::User => Key::ForkUserHint,
        Role::Assistant => Key::ForkAnswerHint,
    };
    view! {
        <button
            type="button"
            class="message__fork"
            title=tr(title)
            aria-label=tr(Key::ForkLabel)
            disabled=move || actions.busy.get()
            on:click=move |_| actions.fork.run(id.clone())
        >
            {tr(Key::Fork)}
        </button>
    }
}

/// A user message's text in place, to change and run again; Esc or Cancel leaves it as it was.
#[component]
fn MessageEditor(id: String, text: String, actions: MessageActions) -> impl IntoView {
    let draft = RwSignal::new(text);
    let restore_first = RwSignal::new(false);
    let editor = NodeRef::<leptos::html::Textarea>::new();
    Effect::new(move |_| {
        if let Some(editor) = editor.get() {
            let _ = editor.focus();
        }
    });
    let cancel = move || actions.editing.set(None);
    let save = move || {
        let text = draft.get_untracked();
        if text.trim().is_empty() || actions.busy.get_untracked() {
            return;
        }
        actions.editing.set(None);
        actions.edit.run((id.clone(), text, restore_first.get_untracked()));
    };
    let save_on_submit = save.clone();
    let on_keydown = move |event: KeyboardEvent| match event.key().as_str() {
        "Escape" => {
            event.prevent_default();
            cancel();
        }
        "Enter" if event.ctrl_key() || event.meta_key() => {
            event.prevent_default();
            save();
        }
        _ => {}
    };
    view! {
        <form
            class="message__editor"
            on:submit=move |event| {
                event.prevent_default();
                save_on_submit();
            }
        >
            <textarea
                class="message__edit-text"
                aria-label=tr(Key::EditMessage)
                node_ref=editor
                rows=3
                prop:value=move || draft.get()
                on:input=move |event| draft.set(event_target_value(&event))
                on:keydown=on_keydown
            ></textarea>
            <div class="message__edit-buttons">
                <label class="message__edit-restore">
                    <input
                        type="checkbox"
                        prop:checked=move || restore_first.get()
                        on:change=move |event| restore_first.set(event_target_checked(&event))
                    />
                    {tr(Key::RestoreBeforeFirst)}
                </label>
                <button type="button" class="button" on:click=move |_| cancel()>
                    {tr(Key::Cancel)}
                </button>
                <button
                    type="submit"
                    class="button button--primary"
                    disabled=move || draft.with(|text| text.trim().is_empty()) || actions.busy.get()
                >
                    {tr(Key::SaveAndRun)}
                </button>
            </div>
        </form>
    }
}

fn part_view(part: PartRow) -> RowView {
    view! { <PartView part/> }.into_row_view()
}

#[component]
fn PartView(part: PartRow) -> impl IntoView {
    match part.content {
        PartSignals::Plain(text) => {
            view! { <p class="part part--text part--plain">{move || text.get()}</p> }.into_row_view()
        }
        PartSignals::Text(markdown) => view! { <MarkdownView markdown/> }.into_row_view(),
        PartSignals::Thinking { text, open } => view! {
            <details class="part part--thinking" prop:open=move || open.get()>
                <summary>{tr(Key::Thinking)}</summary>
                <p class="thinking__text">{move || text.get()}</p>
            </details>
        }
        .into_row_view(),
        PartSignals::Error(error) => view! { <ErrorRow error/> }.into_row_view(),
        PartSignals::File(file) => view! { <AttachedFileView file/> }.into_row_view(),
        PartSignals::Tool(tool) => view! { <ToolRow tool/> }.into_row_view(),
    }
}

/// A file the user attached: an image as a thumbnail that opens full size in a modal dialog (Esc or the button
/// closes it, and the focus goes back to the thumbnail), a text file as a chip that opens it.
#[component]
fn AttachedFileView(file: FilePart) -> impl IntoView {
    let url = file.url();
    let size = byte_size(file.size);
    if !file.is_image() {
        return view! {
            <a class="attachment attachment--file" href=url target="_blank" rel="noopener" download=file.name.clone()
                data-testid="attachment-file">
                <span class="attachment__name">{file.name.clone()}</span>
                <span class="attachment__size">{size}</span>
            </a>
        }
        .into_row_view();
    }
    let dialog = NodeRef::<leptos::html::Dialog>::new();
    let name = file.name.clone();
    let (title, label) = (format!("{name} · {size}"), fill(Key::EnlargeNamed, &[("name", &name)]));
    let (thumb_alt, dialog_label) = (name.clone(), name.clone());
    view! {
        <span class="attachment attachment--image">
            <button type="button" class="attachment__thumb" title=title aria-label=label
                data-testid="attachment-image"
                on:click=move |_| {
                    if let Some(dialog) = dialog.get_untracked() {
                        let _ = dialog.show_modal();
                    }
                }>
                <img src=url.clone() alt=thumb_alt loading="lazy"/>
            </button>
            <dialog class="lightbox" node_ref=dialog aria-label=dialog_label data-testid="lightbox"
                on:click=move |event| {
                    // A click on the backdrop (the dialog itself, not the image) closes it, as people expect.
                    let Some(shown) = dialog.get_untracked() else { return };
                    let shown_value: leptos::wasm_bindgen::JsValue = shown.clone().into();
                    if event.target().is_some_and(|target| leptos::wasm_bindgen::JsValue::from(target) == shown_value) {
                        shown.close();
                    }
                }>
                <img class="lightbox__image" src=url alt=name/>
                <button class="button lightbox__close" type="button"
                    on:click=move |_| {
                        if let Some(dialog) = dialog.get_untracked() {
                            dialog.close();
                        }
                    }>
                    {tr(Key::Close)}
                </button>
            </dialog>
        </span>
    }
    .into_row_view()
}

/// Finished blocks per group. The browser's work per streamed update (laying out the open tail's ancestors, checking
/// which `content-visibility: auto` boxes are on screen, pre-paint) grows with the number of boxes beside the tail;
/// grouping keeps a long answer's hundreds of blocks to a few dozen boxes, and off-screen groups are skipped whole.
const BLOCKS_PER_GROUP: usize = 16;

/// A block's HTML with its code highlighted, once the highlighter's chunk is there (the first code block asks for
/// it; the block is drawn plain until it comes and again, same text in the same places, when it does), and its code
/// bars in the page's language (drawn again when the language changes).
fn highlighted(html: &str, caches: StoredValue<CodeCaches>) -> String {
    if !has_code_bar(html) {
        return html.to_owned();
    }
    let coloured = has_code_block(html)
        .then(highlighter)
        .flatten()
        .and_then(|highlighter| caches.try_update_value(|caches| (highlighter.markdown)(html, caches)));
    relabel_code_bars(coloured.as_deref().unwrap_or(html))
}

/// Assistant text: finished blocks are built once each; only the open tail's HTML is replaced on a delta.
#[component]
fn MarkdownView(markdown: MarkdownSignals) -> impl IntoView {
    let MarkdownSignals { blocks, tail } = markdown;
    // The streamed code block's highlighted lines, kept from one delta to the next and for the block it becomes.
    let caches = StoredValue::new(CodeCaches::default());
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
                    <div class="markdown__block" inner_html=move || highlighted(&block.html, caches)></div>
                </For>
            </div>
        }
    };
    view! {
        <div class="part part--text markdown">
            <For each=groups key=|group| *group children=group_view/>
            <div class="markdown__block markdown__block--open" inner_html=move || {
                tail.with(|tail| highlighted(tail, caches))
            }></div>
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
