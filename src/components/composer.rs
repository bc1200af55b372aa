//! The composer: a textarea where Enter sends and Shift+Enter starts a new line, the model picker (when the server
//! offers several), the Agent/Plan switch, Stop, Steer or Follow-up while a run is active, and Execute/Refine when a
//! plan waits for a decision.

use leptos::ev::{KeyboardEvent, SubmitEvent};
use leptos::prelude::*;

use super::usage::ContextMeter;
use crate::protocol::{AgentMode, ChatPlanState, ContextUse, ModelInfo, PlanAction, Rerun, StreamingBehavior};

/// A message as the composer hands it over.
#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    pub text: String,
    pub mode: AgentMode,
    pub plan_action: Option<PlanAction>,
    /// How the message joins a run that is already active (ignored when none is).
    pub behavior: StreamingBehavior,
    /// Set for an edit or a regeneration of an earlier message: the run starts a branch of its own.
    pub rerun: Option<Rerun>,
}

#[component]
pub fn Composer(
    /// Called when the user sends; while a run is active the message steers it or follows it up.
    on_send: Callback<Outgoing>,
    /// Called when the user asks to stop the running agent (Stop button or Esc).
    on_stop: Callback<()>,
    /// True while a run is active (or the page is re-attaching to one).
    #[prop(into)]
    busy: Signal<bool>,
    /// The session's plan, as the last `plan` frame left it.
    #[prop(into)]
    plan: Signal<Option<ChatPlanState>>,
    /// True while sending is not possible (e.g. before the page is interactive).
    #[prop(into)]
    disabled: Signal<bool>,
    /// The models the server offers; the picker shows only when there are several.
    #[prop(into)]
    models: Signal<Vec<ModelInfo>>,
    /// The model sends run on.
    #[prop(into)]
    model: Signal<Option<String>>,
    /// Called with a model's name when the user picks it.
    on_model: Callback<String>,
    /// The mode of the next message: the Agent/Plan switch, which the quick switcher can also flip.
    mode: RwSignal<AgentMode>,
    /// Text the page hands over to edit and send, which replaces the draft and is then cleared.
    handed: RwSignal<Option<String>>,
    /// How full the model's context is after the session's last model call.
    #[prop(into)]
    context: Signal<Option<ContextUse>>,
) -> impl IntoView {
    let draft = RwSignal::new(typed_before_hydration());
    let input = NodeRef::<leptos::html::Textarea>::new();
    Effect::new(move |_| {
        let Some(text) = handed.get() else { return };
        draft.set(text);
        handed.set(None);
        if let Some(input) = input.get_untracked() {
            let _ = input.focus();
        }
    });
    let decision = Signal::derive(move || {
        plan.with(|p| p.as_ref().filter(|p| p.pending_decision).cloned()).filter(|_| !busy.get())
    });
    let send = move |behavior: StreamingBehavior| {
        let text = draft.with_untracked(|d| d.trim().to_owned());
        if text.is_empty() || disabled.get_untracked() {
            return;
        }
        on_send.run(Outgoing { text, mode: mode.get_untracked(), plan_action: None, behavior, rerun: None });
        draft.set(String::new());
    };
    let decide = move |action: PlanAction| {
        if disabled.get_untracked() {
            return;
        }
        // Refine takes the draft as the requested change; Execute needs no text.
        let text = match action {
            PlanAction::Refine => draft.with_untracked(|d| d.trim().to_owned()),
            PlanAction::Execute => String::new(),
        };
        let run_mode = match action {
            PlanAction::Execute => AgentMode::Agent,
            PlanAction::Refine => AgentMode::Plan,
        };
        mode.set(run_mode);
        let behavior = StreamingBehavior::Steer;
        on_send.run(Outgoing { text, mode: run_mode, plan_action: Some(action), behavior, rerun: None });
        draft.set(String::new());
    };
    let on_submit = move |event: SubmitEvent| {
        event.prevent_default();
        send(StreamingBehavior::Steer);
    };
    let on_keydown = move |event: KeyboardEvent| {
        // While an IME is composing, Enter confirms the composition and must not send.
        if event.key() == "Enter" && !event.shift_key() && !event.is_composing() {
            event.prevent_default();
            // Alt+Enter queues a follow-up instead of steering.
            send(if event.alt_key() { StreamingBehavior::FollowUp } else { StreamingBehavior::Steer });
        } else if event.key() == "Escape" && busy.get_untracked() {
            on_stop.run(());
        }
    };
    let empty = move || draft.with(|d| d.trim().is_empty());
    view! {
        <form class="composer" data-testid="composer" on:submit=on_submit>
            <Show when=move || decision.with(Option::is_some)>
                <div class="plan-decision" role="group" aria-label="The plan waits for your decision" data-testid="plan-decision">
                    <p class="plan-decision__title">"Plan ready"</p>
                    <ol class="plan-decision__steps">
                        {move || {
                            decision
                                .get()
                                .map(|plan| {
                                    plan.todos.into_iter().map(|todo| view! { <li>{todo.text}</li> }).collect_view()
                                })
                        }}
                    </ol>
                    <div class="plan-decision__actions">
                        <button class="button button--primary" type="button" on:click=move |_| decide(PlanAction::Execute)>
                            "Execute"
                        </button>
                        <button
                            class="button"
                            type="button"
                            title="Revise the plan; the text in the message box says what to change"
                            on:click=move |_| decide(PlanAction::Refine)
                        >
                            "Refine"
                        </button>
                    </div>
                </div>
            </Show>
            <div class="composer__row">
                <textarea
                    class="composer__input"
                    name="message"
                    rows="2"
                    placeholder="Ask the agent… (Enter sends, Shift+Enter for a new line)"
                    aria-label="Message"
                    node_ref=input
                    prop:value=move || draft.get()
                    on:input=move |event| draft.set(event_target_value(&event))
                    on:keydown=on_keydown
                ></textarea>
                <div class="composer__actions">
                    <ContextMeter context/>
                    <ModelPicker models model on_model/>
                    <div class="mode-switch" role="radiogroup" aria-label="Mode">
                        <ModeOption mode value=AgentMode::Agent label="Agent" hint="The agent works on the task"/>
                        <ModeOption mode value=AgentMode::Plan label="Plan" hint="The agent only plans; you decide"/>
                    </div>
                    <Show when=move || busy.get()>
                        <button class="button button--stop" type="button" title="Stop the run (Esc)" on:click=move |_| on_stop.run(())>
                            "Stop"
                        </button>
                        <button
                            class="button"
                            type="button"
                            title="Deliver when the agent would otherwise stop (Alt+Enter)"
                            disabled=move || disabled.get() || empty()
                            on:click=move |_| send(StreamingBehavior::FollowUp)
                        >
                            "Follow-up"
                        </button>
                    </Show>
                    <button
                        class="button button--primary"
                        type="submit"
                        title=move || if busy.get() { "Deliver after the current tool calls (Enter)" } else { "Send (Enter)" }
                        disabled=move || disabled.get() || empty()
                    >
                        {move || if busy.get() { "Steer" } else { "Send" }}
                    </button>
                </div>
            </div>
        </form>
    }
}

/// A native `<select>` of the configured models: keyboard and screen-reader behaviour come with it.
#[component]
fn ModelPicker(
    /// The configured models, the default first.
    models: Signal<Vec<ModelInfo>>,
    /// The picked model's name.
    model: Signal<Option<String>>,
    /// Called with the name the user picks.
    on_model: Callback<String>,
) -> impl IntoView {
    view! {
        <Show when=move || models.with(|models| models.len() > 1)>
            <select
                class="model-picker"
                name="model"
                aria-label="Model"
                title="The model that answers your next message"
                data-testid="model-picker"
                on:change=move |event| on_model.run(event_target_value(&event))
            >
                {move || {
                    models
                        .get()
                        .into_iter()
                        .map(|info| {
                            let hint = format!("{} · {}", info.provider, info.model);
                            let value = info.name.clone();
                            let name = info.name;
                            let picked = value.clone();
                            view! {
                                <option
                                    value=value
                                    title=hint
                                    prop:selected=move || model.with(|model| model.as_deref() == Some(picked.as_str()))
                                >
                                    {name}
                                </option>
                            }
                        })
                        .collect_view()
                }}
            </select>
        </Show>
    }
}

/// One choice of the Agent/Plan switch: a real radio button, so arrow keys and screen readers work as usual.
#[component]
fn ModeOption(
    /// The selected mode.
    mode: RwSignal<AgentMode>,
    /// The mode this option selects.
    value: AgentMode,
    /// Visible name.
    label: &'static str,
    /// What the mode does, as a tooltip.
    hint: &'static str,
) -> impl IntoView {
    view! {
        <label class="mode-switch__option" title=hint>
            <input
                type="radio"
                name="mode"
                value=label
                prop:checked=move || mode.get() == value
                on:change=move |_| mode.set(value)
            />
            <span>{label}</span>
        </label>
    }
}

/// What was typed into the server-rendered message box while the page was still loading: hydration would otherwise
/// set the box to the empty draft and lose it. Read only while hydrating (the app is not marked hydrated yet), so a
/// composer built later never picks up another's text.
fn typed_before_hydration() -> String {
    #[cfg(feature = "hydrate")]
    {
        let document = leptos::prelude::document();
        if document.query_selector(".app[data-hydrated=\"true\"]").ok().flatten().is_some() {
            return String::new();
        }
        let textarea = document.query_selector("textarea.composer__input").ok().flatten();
        textarea
            .and_then(|textarea| js_sys::Reflect::get(&textarea, &"value".into()).ok())
            .and_then(|value| value.as_string())
            .unwrap_or_default()
    }
    #[cfg(not(feature = "hydrate"))]
    String::new()
}
