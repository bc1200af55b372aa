//! The question card: what the agent asks, answered with option buttons (single select), checkboxes and Submit
//! (multi-select), a free-text field when allowed, or Skip. Once answered it shows the recorded answer; a question
//! that timed out or was cancelled says so.
//!
//! Questions come from the built-in `question` tool (`{ question, options: [{ id, label }], multiple, allowText }`)
//! and from pi's `extension_ui_request` (`select { title, options: [string] }`, `confirm { title, message }`,
//! `input { title, placeholder }`), whose fields the mapper keeps as the part's input.

use leptos::prelude::*;

use crate::components::client_only::IntoRowView;
use serde_json::Value;

use super::ToolRowContext;
use crate::i18n::{Key, t, tr};
use crate::protocol::{AnswerKind, ChatToolPart, QuestionAnswer, QuestionOutput, SKIPPED_ANSWER, ToolState};

/// A question card's answer, as it hands it to the page.
#[derive(Debug, Clone)]
pub struct Answer {
    pub tool_call_id: String,
    pub answer: QuestionAnswer,
    /// The card's "sending" flag, set while the answer travels: the page clears it again if the answer was not
    /// taken, so the card can be answered again.
    pub sending: RwSignal<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestionOption {
    pub id: String,
    pub label: String,
}

/// A question as the card asks it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QuestionSpec {
    pub text: String,
    /// More words under the question (pi's `confirm` message).
    pub detail: Option<String>,
    pub options: Vec<QuestionOption>,
    pub multiple: bool,
    pub allow_text: bool,
    pub placeholder: Option<String>,
}

impl QuestionSpec {
    pub fn from_input(input: &Value) -> QuestionSpec {
        let text = |key: &str| input.get(key).and_then(Value::as_str).map(str::to_owned);
        let options: Vec<QuestionOption> = input
            .get("options")
            .and_then(Value::as_array)
            .map(|options| {
                options
                    .iter()
                    .filter_map(|option| match option {
                        Value::String(label) => Some(QuestionOption { id: label.clone(), label: label.clone() }),
                        Value::Object(_) => {
                            let id = option.get("id").and_then(Value::as_str)?.to_owned();
                            let label = option.get("label").and_then(Value::as_str).unwrap_or(&id).to_owned();
                            Some(QuestionOption { id, label })
                        }
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        let method = input.get("method").and_then(Value::as_str);
        let question = text("question").or_else(|| text("title")).unwrap_or_else(|| t(Key::AgentAsksColon).to_owned());
        match method {
            Some("confirm") => QuestionSpec {
                text: question,
                detail: text("message"),
                options: [("yes", Key::Yes), ("no", Key::No)]
                    .map(|(id, label)| QuestionOption { id: id.into(), label: t(label).into() })
                    .to_vec(),
                ..QuestionSpec::default()
            },
            Some("input") => QuestionSpec {
                text: question,
                allow_text: true,
                placeholder: text("placeholder"),
                ..QuestionSpec::default()
            },
            _ => {
                let flag = |key: &str| input.get(key).and_then(Value::as_bool).unwrap_or(false);
                // Without options there is nothing to pick: the answer can only be typed.
                let allow_text = flag("allowText") || options.is_empty();
                QuestionSpec {
                    text: question,
                    detail: None,
                    multiple: flag("multiple") && !options.is_empty(),
                    options,
                    allow_text,
                    placeholder: text("placeholder"),
                }
            }
        }
    }

    fn label_of(&self, id: &str) -> Option<&str> {
        self.options.iter().find(|o| o.id == id).map(|o| o.label.as_str())
    }

    /// The recorded answer in the user's words: picked option ids become their labels.
    ///
    /// The server records picks as `id, id` followed by `; text` when text was typed too.
    pub fn shown_answer(&self, answer: &str) -> String {
        if let Some(label) = self.label_of(answer) {
            return label.to_owned();
        }
        let (picked, typed) = match answer.split_once("; ") {
            Some((picked, typed)) => (picked, Some(typed)),
            None => (answer, None),
        };
        let labels: Option<Vec<&str>> = picked.split(", ").map(|id| self.label_of(id)).collect();
        match (labels, typed) {
            (Some(labels), None) => labels.join(", "),
            (Some(labels), Some(typed)) => format!("{} — {typed}", labels.join(", ")),
            (None, _) => answer.to_owned(),
        }
    }
}

/// Where a question stands, from its part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuestionOutcome {
    /// The model is still writing the question.
    Drafting,
    Waiting,
    Answered(String),
    Skipped,
    TimedOut(String),
    /// Stopped with the run, withdrawn, or ended without an answer.
    Cancelled(String),
}

impl QuestionOutcome {
    pub fn of(spec: &QuestionSpec, tool: &ChatToolPart) -> QuestionOutcome {
        match tool.state {
            ToolState::InputStreaming => QuestionOutcome::Drafting,
            ToolState::InputAvailable | ToolState::ApprovalRequested => QuestionOutcome::Waiting,
            ToolState::OutputAvailable => {
                let answer = tool.output_as::<QuestionOutput>();
                match answer.as_ref().map(|o| o.answer.as_ref()) {
                    Some(SKIPPED_ANSWER) => QuestionOutcome::Skipped,
                    Some(answer) => QuestionOutcome::Answered(spec.shown_answer(answer)),
                    None => QuestionOutcome::Answered(String::new()),
                }
            }
            ToolState::OutputError | ToolState::OutputDenied => {
                let why = tool.error_text.clone().unwrap_or_else(|| t(Key::QuestionWithdrawn).to_owned());
                // The built-in agent's timeout reads "no answer to \"…\" within 600 s".
                if why.starts_with("no answer to") || why.contains("timed out") {
                    QuestionOutcome::TimedOut(why)
                } else {
                    QuestionOutcome::Cancelled(why)
                }
            }
        }
    }
}

/// A question of the agent, answerable while the agent waits on it.
#[component]
pub fn QuestionCard(
    /// The question's tool part (`tool-Question`).
    tool: ChatToolPart,
) -> impl IntoView {
    let context = use_context::<ToolRowContext>();
    let spec = QuestionSpec::from_input(tool.input.as_ref().unwrap_or(&Value::Null));
    let outcome = QuestionOutcome::of(&spec, &tool);
    let sending = RwSignal::new(false);
    let typed = RwSignal::new(String::new());
    let picked = RwSignal::new(Vec::<String>::new());
    let call_id = tool.tool_call_id.clone();
    let send = move |answer: QuestionAnswer| {
        if let Some(context) = context {
            sending.set(true);
            context.answer.run(Answer { tool_call_id: call_id.clone(), answer, sending });
        }
    };
    // Typed text goes along with a pick; alone it is a text answer.
    let typed_text = move || Some(typed.get_untracked().trim().to_owned()).filter(|t| !t.is_empty());
    let state = tool.state.as_str();
    let QuestionSpec { text, detail, options, multiple, allow_text, placeholder } = spec;

    let body = match outcome {
        QuestionOutcome::Drafting => {
            view! { <p class="question__status">{tr(Key::WritingQuestion)}</p> }.into_row_view()
        }
        QuestionOutcome::Answered(answer) => view! {
            <p class="question__answer">
                <span class="question__answer-label">{tr(Key::Answered)}</span>
                <span class="question__answer-text">{answer}</span>
            </p>
        }
        .into_row_view(),
        QuestionOutcome::Skipped => view! { <p class="question__answer">{tr(Key::Skipped)}</p> }.into_row_view(),
        QuestionOutcome::TimedOut(why) => {
            view! { <p class="question__status question__status--ended">{tr(Key::TimedOut)}{why}</p> }.into_row_view()
        }
        QuestionOutcome::Cancelled(why) => {
            view! { <p class="question__status question__status--ended">{tr(Key::Cancelled)}{why}</p> }.into_row_view()
        }
        QuestionOutcome::Waiting => {
            let option_controls = options
                .into_iter()
                .map(|QuestionOption { id, label }| {
                    if multiple {
                        let checked_id = id.clone();
                        view! {
                            <label class="question__choice">
                                <input
                                    type="checkbox"
                                    prop:checked=move || picked.with(|p| p.contains(&checked_id))
                                    disabled=move || sending.get()
                                    on:change=move |_| {
                                        picked.update(|p| {
                                            match p.iter().position(|x| *x == id) {
                                                Some(at) => {
                                                    p.remove(at);
                                                }
                                                None => p.push(id.clone()),
                                            }
                                        })
                                    }
                                />
                                <span>{label}</span>
                            </label>
                        }
                        .into_row_view()
                    } else {
                        let send = send.clone();
                        view! {
                            <button
                                class="button"
                                type="button"
                                disabled=move || sending.get()
                                on:click=move |_| send(QuestionAnswer {
                                    kind: AnswerKind::Single,
                                    selected_ids: Some(vec![id.clone()]),
                                    text: typed_text(),
                                })
                            >
                                {label}
                            </button>
                        }
                        .into_row_view()
                    }
                })
                .collect_view();
            let submit_send = send.clone();
            let submit = move |_| {
                let ids = picked.get_untracked();
                let text = typed_text();
                let answer = match (multiple, ids.is_empty()) {
                    (true, false) => QuestionAnswer { kind: AnswerKind::Multi, selected_ids: Some(ids), text },
                    (true, true) | (false, _) => QuestionAnswer { kind: AnswerKind::Text, selected_ids: None, text },
                };
                submit_send(answer);
            };
            let nothing_to_submit =
                move || sending.get() || (picked.with(Vec::is_empty) && typed.with(|t| t.trim().is_empty()));
            let skip = send.clone();
            view! {
                <div class="question__options">{option_controls}</div>
                {allow_text
                    .then(|| {
                        view! {
                            <input
                                class="question__text-input"
                                type="text"
                                aria-label=tr(Key::YourAnswer)
                                placeholder=placeholder.unwrap_or_else(|| t(Key::TypeAnswer).to_owned())
                                prop:value=move || typed.get()
                                disabled=move || sending.get()
                                on:input=move |event| typed.set(event_target_value(&event))
                            />
                        }
                    })}
                <div class="question__actions">
                    {(multiple || allow_text)
                        .then(|| {
                            view! {
                                <button
                                    class="button button--primary"
                                    type="button"
                                    disabled=nothing_to_submit
                                    on:click=submit
                                >
                                    {tr(Key::Submit)}
                                </button>
                            }
                        })}
                    <button
                        class="button button--ghost"
                        type="button"
                        disabled=move || sending.get()
                        on:click=move |_| skip(QuestionAnswer { kind: AnswerKind::Skip, selected_ids: None, text: None })
                    >
                        {tr(Key::Skip)}
                    </button>
                </div>
            }
            .into_row_view()
        }
    };
    view! {
        <div
            class=format!("part part--tool tool tool--{state} question")
            role="group"
            aria-label=tr(Key::QuestionFromAgent)
            data-tool-call-id=tool.tool_call_id.clone()
        >
            <p class="question__label">{tr(Key::Question)}</p>
            <p class="question__text">{text}</p>
            {detail.map(|detail| view! { <p class="question__detail">{detail}</p> })}
            {body}
        </div>
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn part(state: ToolState, input: Value) -> ChatToolPart {
        let mut part = ChatToolPart::new("Question", "q1", state);
        part.input = Some(input);
        part
    }

    #[test]
    fn built_in_and_pi_questions_become_one_spec() {
        let built_in = QuestionSpec::from_input(&json!({
            "question": "Which?", "options": [{"id": "a", "label": "Apple"}, {"id": "b"}], "multiple": true
        }));
        assert_eq!(built_in.text, "Which?");
        assert_eq!(built_in.options[1], QuestionOption { id: "b".into(), label: "b".into() });
        assert!(built_in.multiple && !built_in.allow_text);
        let select = QuestionSpec::from_input(&json!({"method": "select", "title": "Pick", "options": ["x", "y"]}));
        assert_eq!((select.text.as_str(), select.options.len(), select.multiple), ("Pick", 2, false));
        let confirm =
            QuestionSpec::from_input(&json!({"method": "confirm", "title": "Sure?", "message": "It deletes"}));
        assert_eq!(confirm.options.iter().map(|o| o.id.as_str()).collect::<Vec<_>>(), ["yes", "no"]);
        assert_eq!(confirm.detail.as_deref(), Some("It deletes"));
        let input = QuestionSpec::from_input(&json!({"method": "input", "title": "Name?", "placeholder": "me"}));
        assert!(input.allow_text && input.options.is_empty());
        assert_eq!(input.placeholder.as_deref(), Some("me"));
        assert!(QuestionSpec::from_input(&json!({"question": "Free?"})).allow_text, "no options: typed only");
    }

    #[test]
    fn the_recorded_answer_is_shown_in_the_users_words() {
        let spec = QuestionSpec::from_input(&json!({
            "question": "Which?", "options": [{"id": "a", "label": "Apple"}, {"id": "b", "label": "Banana"}]
        }));
        let answered = |answer: &str| {
            let mut tool = part(ToolState::OutputAvailable, Value::Null);
            tool.output = Some(json!({ "answer": answer }));
            QuestionOutcome::of(&spec, &tool)
        };
        assert_eq!(answered("a"), QuestionOutcome::Answered("Apple".into()));
        assert_eq!(answered("a, b"), QuestionOutcome::Answered("Apple, Banana".into()));
        assert_eq!(answered("b; ripe ones"), QuestionOutcome::Answered("Banana — ripe ones".into()));
        assert_eq!(answered("something else"), QuestionOutcome::Answered("something else".into()));
        assert_eq!(answered(SKIPPED_ANSWER), QuestionOutcome::Skipped);
    }

    #[test]
    fn a_question_without_an_answer_says_why() {
        let spec = QuestionSpec::default();
        let ended = |why: &str| {
            let mut tool = part(ToolState::OutputError, Value::Null);
            tool.error_text = Some(why.into());
            QuestionOutcome::of(&spec, &tool)
        };
        assert!(matches!(ended("no answer to \"Go?\" within 600 s"), QuestionOutcome::TimedOut(_)));
        assert!(matches!(ended("the run was stopped before the question was answered"), QuestionOutcome::Cancelled(_)));
        assert_eq!(QuestionOutcome::of(&spec, &part(ToolState::InputAvailable, Value::Null)), QuestionOutcome::Waiting);
        assert_eq!(
            QuestionOutcome::of(&spec, &part(ToolState::InputStreaming, Value::Null)),
            QuestionOutcome::Drafting
        );
    }
}
