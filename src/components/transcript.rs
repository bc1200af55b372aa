//! The transcript: one row per message, or an empty state with prompt suggestions.

use leptos::prelude::*;

use crate::app::ChatActions;
use crate::chat_state::ChatSnapshot;
use crate::protocol::{AnswerKind, ChatMessage, ChatMessagePart, ChatToolPart, QuestionAnswer, ToolState};

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
        ChatMessagePart::Tool(tool) if tool.tool_name == "Question" && tool.state == ToolState::InputAvailable => {
            view! { <QuestionCard tool=*tool/> }.into_any()
        }
        ChatMessagePart::Tool(tool) => view! {
            <div class=format!("part part--tool tool tool--{}", tool.state.as_str())>
                <span class="tool__name">{tool.tool_name.clone()}</span>
                <span class="tool__state">{tool.state.as_str()}</span>
                {tool.error_text.clone().map(|text| view! { <span class="tool__error">{text}</span> })}
            </div>
        }
        .into_any(),
    }
}

/// A question the agent is waiting on: its options as buttons, or Skip.
#[component]
fn QuestionCard(tool: ChatToolPart) -> impl IntoView {
    let actions = use_context::<ChatActions>();
    let input = tool.input.clone().unwrap_or_default();
    let question = input.get("question").and_then(|q| q.as_str()).unwrap_or("The agent asks:").to_owned();
    let options: Vec<(String, String)> = input
        .get("options")
        .and_then(|o| o.as_array())
        .map(|options| {
            options
                .iter()
                .filter_map(|o| {
                    let id = o.get("id").and_then(|v| v.as_str())?.to_owned();
                    let label = o.get("label").and_then(|v| v.as_str()).unwrap_or(&id).to_owned();
                    Some((id, label))
                })
                .collect()
        })
        .unwrap_or_default();
    let answered = RwSignal::new(false);
    let answer = move |answer: QuestionAnswer| {
        if let Some(actions) = actions {
            answered.set(true);
            actions.answer(tool.tool_call_id.clone(), answer);
        }
    };
    let skip = answer.clone();
    view! {
        <div class="part question" role="group" aria-label="Question from the agent">
            <p class="question__text">{question}</p>
            <div class="question__options">
                {options
                    .into_iter()
                    .map(|(id, label)| {
                        let answer = answer.clone();
                        view! {
                            <button
                                class="button"
                                type="button"
                                disabled=move || answered.get()
                                on:click=move |_| answer(QuestionAnswer {
                                    kind: AnswerKind::Single,
                                    selected_ids: Some(vec![id.clone()]),
                                    text: None,
                                })
                            >
                                {label}
                            </button>
                        }
                    })
                    .collect_view()}
                <button
                    class="button button--ghost"
                    type="button"
                    disabled=move || answered.get()
                    on:click=move |_| skip(QuestionAnswer { kind: AnswerKind::Skip, selected_ids: None, text: None })
                >
                    "Skip"
                </button>
            </div>
        </div>
    }
}
