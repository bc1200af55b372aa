//! The question card: a question the agent asks, answered with one of its options or skipped.

use leptos::prelude::*;

use crate::app::ChatActions;
use crate::protocol::{AnswerKind, ChatToolPart, QuestionAnswer};

/// A question the agent is waiting on: its options as buttons, or Skip.
#[component]
pub(super) fn QuestionCard(tool: ChatToolPart) -> impl IntoView {
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
