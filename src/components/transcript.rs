//! The transcript: one row per message, or an empty state with prompt suggestions.

use leptos::prelude::*;

use crate::chat_state::ChatSnapshot;
use crate::protocol::{ChatMessage, ChatMessagePart};

const SUGGESTIONS: [&str; 3] =
    ["Explain what this repository does", "Find and fix a failing test", "Add a README section on configuration"];

#[component]
pub fn Transcript(
    /// The session as the reducer has built it.
    chat: ReadSignal<ChatSnapshot>,
    /// Called with a suggestion's text when the user picks one.
    on_suggestion: Callback<String>,
) -> impl IntoView {
    let message_ids = move || chat.with(|c| c.messages.iter().map(|m| m.id.clone()).collect::<Vec<_>>());
    view! {
        <section class="transcript" data-testid="transcript" aria-live="polite">
            <Show
                when=move || chat.with(|c| !c.messages.is_empty())
                fallback=move || view! { <EmptyState on_suggestion/> }
            >
                <For each=message_ids key=|id| id.clone() let:id>
                    {
                        let id = StoredValue::new(id);
                        let message = Memo::new(move |_| chat.with(|c| id.with_value(|id| c.message(id).cloned())));
                        move || message.get().map(|message| view! { <MessageRow message/> })
                    }
                </For>
            </Show>
            <Show when=move || chat.with(|c| c.activity.is_some())>
                <p class="transcript__activity">{move || chat.with(|c| c.activity.clone())}</p>
            </Show>
        </section>
    }
}

#[component]
fn EmptyState(on_suggestion: Callback<String>) -> impl IntoView {
    view! {
        <div class="empty-state">
            <h1>"What should the agent do?"</h1>
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
        </div>
    }
}

#[component]
fn MessageRow(message: ChatMessage) -> impl IntoView {
    let role = message.role.as_str();
    view! {
        <article class=format!("message message--{role}") data-role=role data-message-id=message.id.clone()>
            {message.parts.into_iter().map(|part| view! { <PartView part/> }).collect_view()}
        </article>
    }
}

#[component]
fn PartView(part: ChatMessagePart) -> impl IntoView {
    match part {
        ChatMessagePart::Text(text) => view! { <p class="part part--text">{text.text}</p> }.into_any(),
        ChatMessagePart::Thinking(thinking) => view! {
            <details class="part part--thinking">
                <summary>"Thinking"</summary>
                <p>{thinking.text}</p>
            </details>
        }
        .into_any(),
        ChatMessagePart::Error(error) => view! {
            <p class="part part--error" role="alert">
                {error.title.map(|title| view! { <strong>{title}": "</strong> })}
                {error.message}
            </p>
        }
        .into_any(),
        ChatMessagePart::Tool(tool) => view! {
            <div class=format!("part part--tool tool tool--{}", tool.state.as_str())>
                <span class="tool__name">{tool.tool_name.clone()}</span>
                <span class="tool__state">{tool.state.as_str()}</span>
            </div>
        }
        .into_any(),
    }
}
