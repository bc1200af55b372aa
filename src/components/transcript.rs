//! The transcript: keyed message rows that follow new output while the reader is at the bottom, or an empty state
//! with prompt suggestions and, for a returning user, the sessions they worked in last.

use leptos::prelude::*;

use super::client_only::ClientOnly;
use super::message::MessageView;
use super::rows::{TranscriptRows, track_parser};
use super::sidebar::relative_time;
use crate::chat_state::ChatSnapshot;
use crate::protocol::{ChatMessagePart, SessionSummary};

const SUGGESTIONS: [&str; 3] =
    ["Explain what this repository does", "Find and fix a failing test", "Add a README section on configuration"];

/// How many of the latest sessions the empty state offers to go back to; the sidebar lists them all.
const RECENT_SESSIONS: usize = 5;

/// Messages are drawn in groups of this many, each a box the browser skips as a whole while it is off screen
/// (`content-visibility` in style/main.css). One such box per message made the visibility checks of 200 earlier
/// messages cost more, while an answer streamed, than drawing the answer (docs/decisions.md).
const MESSAGE_GROUP: usize = 16;

/// How close to the bottom, in pixels, still counts as "at the bottom" (a wheel notch or rounding).
const BOTTOM_SLACK: i32 = 48;

#[component]
pub fn Transcript(
    /// The session as the reducer has built it.
    chat: ReadSignal<ChatSnapshot>,
    /// Called with a suggestion's text when the user picks one.
    on_suggestion: Callback<String>,
    /// Every session, newest first: the empty state offers the latest.
    #[prop(into)]
    sessions: Signal<Vec<SessionSummary>>,
    /// The session on screen, which the empty state does not offer to open.
    #[prop(into)]
    current: Signal<Option<String>>,
    /// The browser's clock in ms since the epoch, for the sessions' ages.
    #[prop(into)]
    now: Signal<f64>,
) -> impl IntoView {
    let rows = StoredValue::new(chat.with_untracked(|snapshot| {
        let mut rows = TranscriptRows::default();
        rows.sync(snapshot);
        rows
    }));
    let message_rows = RwSignal::from(rows.with_value(TranscriptRows::view));
    let scroller = NodeRef::<leptos::html::Section>::new();
    // Whether the view sticks to new output: true until the reader scrolls up, again once they are back at the bottom.
    let follow = RwSignal::new(true);
    let last_scroll_top = StoredValue::new(0);

    // Once the views have applied what just changed (their effects run as tasks on the microtask queue, before the
    // frame renders), in that same frame: a scroll one animation frame later made the browser lay out and paint twice.
    let scroll_to_bottom = move || {
        leptos::task::spawn_local(async move {
            leptos::task::tick().await;
            if follow.get_untracked()
                && let Some(element) = scroller.get_untracked()
            {
                element.set_scroll_top(element.scroll_height());
            }
        })
    };
    // Stream frames reach the snapshot at most every other animation frame (`client::FrameBatcher`), so the rows
    // are brought up to date as the snapshot changes, in the same frame: one markdown re-parse of the open tail,
    // one DOM update, layout and paint per batch. A hidden tab waits for its next animation frame, when shown.
    let sync_scheduled = StoredValue::new(false);
    let sync_rows = move || {
        sync_scheduled.set_value(false);
        let report =
            chat.with_untracked(|snapshot| rows.try_update_value(|rows| rows.sync(snapshot))).unwrap_or_default();
        if report.session_replaced && !follow.get_untracked() {
            follow.set(true);
        }
        let changed = report.rows_changed || !report.parts_updated.is_empty();
        if changed && follow.get_untracked() {
            scroll_to_bottom();
        }
    };
    Effect::new(move |_| {
        chat.track();
        // Text that came before the markdown parser's chunk is rendered when the chunk arrives.
        track_parser();
        if sync_scheduled.get_value() {
            return;
        }
        if page_is_hidden() {
            sync_scheduled.set_value(true);
            request_animation_frame(sync_rows);
        } else {
            // Only the snapshot (and the parser's arrival) should re-run this effect, not what the sync reads.
            untrack(sync_rows);
        }
    });
    let on_scroll = move |_| {
        let Some(element) = scroller.get_untracked() else { return };
        let top = element.scroll_top();
        let at_bottom = element.scroll_height() - top - element.client_height() <= BOTTOM_SLACK;
        // Content growing below never moves `scrollTop`; only the reader scrolling up does.
        let scrolled_up = top < last_scroll_top.get_value();
        last_scroll_top.set_value(top);
        let next = if at_bottom {
            true
        } else if scrolled_up {
            false
        } else {
            follow.get_untracked()
        };
        if next != follow.get_untracked() {
            follow.set(next);
        }
    };
    let jump_to_latest = move |_| {
        follow.set(true);
        scroll_to_bottom();
    };
    let unshown_error = move || {
        chat.with(|c| {
            let error = c.last_error.as_ref()?;
            let shown = c
                .messages
                .last()
                .and_then(|m| m.parts.last())
                .is_some_and(|part| matches!(part, ChatMessagePart::Error(shown) if &shown.message == error));
            (!shown).then(|| error.clone())
        })
    };
    let has_messages = move || message_rows.with(|rows| !rows.is_empty());
    let group_count = move || message_rows.with(|rows| rows.len().div_ceil(MESSAGE_GROUP));
    // A group keeps its place while messages are added after it, so its finished rows are never rebuilt.
    let group_rows = move |group: usize| {
        message_rows
            .with(|rows| rows.iter().skip(group * MESSAGE_GROUP).take(MESSAGE_GROUP).cloned().collect::<Vec<_>>())
    };

    view! {
        <section
            class="transcript"
            data-testid="transcript"
            aria-label="Conversation"
            node_ref=scroller
            on:scroll=on_scroll
            on:click=move |event| copy(event, chat)
        >
            <Show when=has_messages fallback=move || view! { <EmptyState on_suggestion sessions current now/> }>
                // The server renders an empty transcript; the rows are only ever built in the browser.
                {ClientOnly(view! {
                    <For each=move || 0..group_count() key=|group| *group let:group>
                        <div class="message-group">
                            <For each=move || group_rows(group) key=|row| row.id.clone() let:row>
                                <MessageView row/>
                            </For>
                        </div>
                    </For>
                })}
            </Show>
            {move || unshown_error().map(|message| view! { <p class="part part--error transcript__error" role="alert">{message}</p> })}
            <Show when=move || !follow.get() && has_messages()>
                <button class="button jump-latest" type="button" data-testid="jump-latest" on:click=jump_to_latest>
                    "Jump to latest ↓"
                </button>
            </Show>
        </section>
    }
}

/// Whether the tab is in the background, where the browser draws nothing.
fn page_is_hidden() -> bool {
    #[cfg(feature = "hydrate")]
    return document().hidden();
    #[cfg(not(feature = "hydrate"))]
    false
}

/// The transcript's Copy buttons, on one listener: a code block's copies its code, a message's copies the message
/// as Markdown (`crate::export`).
fn copy(event: leptos::ev::MouseEvent, chat: ReadSignal<ChatSnapshot>) {
    #[cfg(feature = "hydrate")]
    browser::copy(event, chat);
    #[cfg(not(feature = "hydrate"))]
    let _ = (event, chat);
}

#[cfg(feature = "hydrate")]
mod browser {
    use std::time::Duration;

    use js_sys::{Function, Promise, Reflect};
    use leptos::prelude::*;
    use wasm_bindgen::{JsCast, JsValue};
    use wasm_bindgen_futures::JsFuture;
    use web_sys::Element;

    use crate::chat_state::ChatSnapshot;

    pub fn copy(event: leptos::ev::MouseEvent, chat: ReadSignal<ChatSnapshot>) {
        let Some(button) = event
            .target()
            .and_then(|target| target.dyn_into::<Element>().ok())
            .and_then(|element| element.closest("[data-copy], [data-copy-message]").ok().flatten())
        else {
            return;
        };
        let text = if button.has_attribute("data-copy-message") {
            let Some(id) =
                button.closest("[data-message-id]").ok().flatten().and_then(|m| m.get_attribute("data-message-id"))
            else {
                return;
            };
            let markdown = chat.with_untracked(|snapshot| {
                snapshot.messages.iter().find(|message| message.id == id).map(crate::export::message_markdown)
            });
            let Some(markdown) = markdown else { return };
            markdown
        } else {
            let Some(code) =
                button.closest(".code").ok().flatten().and_then(|block| block.query_selector("code").ok().flatten())
            else {
                return;
            };
            code.text_content().unwrap_or_default()
        };
        leptos::task::spawn_local(async move {
            let label = match write_clipboard(&text).await {
                Ok(()) => "Copied",
                Err(_) => "Copy failed",
            };
            button.set_text_content(Some(label));
            set_timeout(move || button.set_text_content(Some("Copy")), Duration::from_millis(1500));
        });
    }

    /// `navigator.clipboard.writeText`, which exists only in secure contexts (https or localhost).
    async fn write_clipboard(text: &str) -> Result<(), JsValue> {
        let navigator = Reflect::get(&window(), &"navigator".into())?;
        let clipboard = Reflect::get(&navigator, &"clipboard".into())?;
        let write: Function = Reflect::get(&clipboard, &"writeText".into())?.dyn_into()?;
        let promise: Promise = write.call1(&clipboard, &text.into())?.dyn_into()?;
        JsFuture::from(promise).await.map(drop)
    }
}

#[component]
fn EmptyState(
    on_suggestion: Callback<String>,
    sessions: Signal<Vec<SessionSummary>>,
    current: Signal<Option<String>>,
    now: Signal<f64>,
) -> impl IntoView {
    let recent = Memo::new(move |_| {
        let current = current.get();
        sessions.with(|sessions| {
            sessions
                .iter()
                .filter(|session| current.as_deref() != Some(session.session_id.as_str()))
                .take(RECENT_SESSIONS)
                .cloned()
                .collect::<Vec<_>>()
        })
    });
    view! {
        <div class="empty-state">
            <h2>"What should the agent do?"</h2>
            <ul class="empty-state__suggestions">
                {SUGGESTIONS
                    .iter()
                    .map(|text| {
                        view! {
                            <li>
                                <button class="button button--suggestion" type="button" on:click=move |_| on_suggestion.run(text.to_string())>
                                    {*text}
                                </button>
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
            <Show when=move || recent.with(|recent| !recent.is_empty())>
                <section class="empty-state__recent" aria-labelledby="recent-sessions" data-testid="recent-sessions">
                    <h3 id="recent-sessions">"Pick up where you left off"</h3>
                    <ul>
                        <For
                            each=move || recent.get()
                            key=|session| (session.session_id.clone(), session.title.clone(), session.updated_at)
                            let:session
                        >
                            <li>
                                <a class="empty-state__session" href=format!("/s/{}", session.session_id)>
                                    <span class="empty-state__title">{session.title}</span>
                                    <time class="empty-state__time">{move || relative_time(session.updated_at, now.get())}</time>
                                </a>
                            </li>
                        </For>
                    </ul>
                </section>
            </Show>
        </div>
    }
}
