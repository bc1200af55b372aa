//! The composer: a textarea where Enter sends and Shift+Enter starts a new line, the model picker (when the server
//! offers several), the Agent/Plan switch, Stop, Steer or Follow-up while a run is active, and Execute/Refine when a
//! plan waits for a decision. Typing `/` at the start lists the slash commands, `@` the workspace's files; the list
//! is a listbox the textarea (a combobox) points into with `aria-activedescendant`, so typing goes on while the
//! arrows move.
//!
//! In the browser what the list shows and how a command is read and run come from a WASM chunk ([`suggest`],
//! [`split`]), fetched when the box gets the focus, so the first page load does not carry them.

mod attach;
#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
mod split;
mod suggest;

use leptos::ev::{KeyboardEvent, SubmitEvent};
use leptos::prelude::*;

use self::attach::Attachments;
#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
pub use self::attach::{ATTACH_UI, AttachUi, arrived as attachments_arrived};
pub use self::attach::{PickedFile, Upload, UploadReply};
use self::suggest::Suggester;
use super::client_only::ClientOnly;
use super::picker::Picker;
use super::usage::ContextMeter;
use crate::draft::{self, ExportFormat, Mention, Offered, command_being_typed, mention_being_typed};
use crate::i18n::{Key, LiveText, t, tr};
use crate::protocol::{
    AgentCommand, AgentMode, AgentOption, AttachmentLimits, AttachmentRef, ChatCommand, ChatPlanState, ContextUse,
    FileMatch, ModelInfo, PlanAction, Rerun, StreamingBehavior,
};

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
    /// A command for the runtime instead of a prompt (`/compact`); `text` is its argument.
    pub command: Option<ChatCommand>,
    /// The files the server keeps for this message, in the order they were added.
    pub attachments: Vec<AttachmentRef>,
}

fn outgoing(text: String, mode: AgentMode, behavior: StreamingBehavior) -> Outgoing {
    Outgoing { text, mode, plan_action: None, behavior, rerun: None, command: None, attachments: Vec::new() }
}

/// A slash command only the page can carry out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageCommand {
    NewChat,
    Export(ExportFormat),
}

/// An answer to a file query: the query it answers, and the paths or why there are none.
pub type FileAnswer = (String, Result<Vec<FileMatch>, String>);

/// Where the answer to a file query goes.
pub type FileReply = Callback<FileAnswer>;

/// What the suggestion list shows.
#[derive(Debug, Clone, PartialEq)]
enum Suggestions {
    Closed,
    Commands(Vec<Offered>),
    /// Paths for the mention whose `@` is at `start`.
    Files {
        start: usize,
        files: Vec<FileMatch>,
    },
}

impl Suggestions {
    fn len(&self) -> usize {
        match self {
            Suggestions::Closed => 0,
            Suggestions::Commands(commands) => commands.len(),
            Suggestions::Files { files, .. } => files.len(),
        }
    }
}

/// The draft and the list, as the chunk's functions read and change them.
#[derive(Clone, Copy)]
struct Composing {
    draft: RwSignal<String>,
    /// The caret, as a byte offset into the draft.
    caret: RwSignal<usize>,
    /// The entry the arrows are on.
    active: RwSignal<usize>,
    suggestions: Memo<Suggestions>,
    input: NodeRef<leptos::html::Textarea>,
    /// The session's agent, named on its commands in the list.
    agent: Signal<Option<String>>,
}

/// What a slash command may act on.
#[derive(Clone, Copy)]
struct Commands {
    on_send: Callback<Outgoing>,
    on_stop: Callback<()>,
    on_command: Callback<PageCommand>,
    on_model: Callback<String>,
    mode: RwSignal<AgentMode>,
    note: RwSignal<Option<LiveText>>,
    models: Signal<Vec<ModelInfo>>,
    model: Signal<Option<String>>,
    busy: Signal<bool>,
    disabled: Signal<bool>,
    /// The session's agent's own commands, which go to it as text.
    agent_commands: Signal<Vec<AgentCommand>>,
    /// Why the session's agent cannot compact (`AgentInfo::compact_unavailable`): `/compact` is refused with it.
    /// Only this text, not the whole `AgentInfo`: a signal of a type of its own costs the suggestions' chunk its
    /// own copy of the signal's code (about 1 KB brotli, measured).
    compact_unavailable: Signal<Option<String>>,
}

const LIST_ID: &str = "composer-suggestions";

fn option_id(index: usize) -> String {
    format!("composer-option-{index}")
}

/// The chunk's functions once loaded, tracked, fetching nothing.
#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
fn suggester() -> Option<Suggester> {
    split::get()
}

/// The chunk's functions once loaded; until then `None`, and the fetch starts.
#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
fn load_suggester() -> Option<Suggester> {
    split::get_or_load()
}

/// The server never opens the list (its draft is empty), and its own tests use the functions directly.
#[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
fn suggester() -> Option<Suggester> {
    Some(suggest::SUGGESTER)
}

#[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
fn load_suggester() -> Option<Suggester> {
    suggester()
}

#[component]
pub fn Composer(
    /// Called when the user sends; while a run is active the message steers it or follows it up.
    on_send: Callback<Outgoing>,
    /// Called when the message box gets the focus: a send may come.
    on_focus: Callback<()>,
    /// Called when the user asks to stop the running agent (Stop button, Esc or `/stop`).
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
    /// Called for the slash commands the page carries out (a new chat, an export).
    on_command: Callback<PageCommand>,
    /// Asks for the workspace paths matching a mention's query; the answer goes to the reply.
    find_files: Callback<(String, FileReply)>,
    /// What the last command said (or why it was not run), shown above the message box; the page may set it too.
    note: RwSignal<Option<LiveText>>,
    /// Uploads a file the user attached.
    upload: Upload,
    /// What the server lets a message attach.
    #[prop(into)]
    limits: Signal<AttachmentLimits>,
    /// The session's agent, by name (its commands carry it in the list).
    #[prop(into)]
    agent: Signal<Option<String>>,
    /// Why the session's agent cannot compact, if it cannot (`AgentInfo::compact_unavailable`; pi): `/compact` is
    /// refused with it and nothing is sent.
    #[prop(into)]
    compact_unavailable: Signal<Option<String>>,
    /// The commands the session's agent offers (an ACP agent's; none for the built-in agent).
    #[prop(into)]
    agent_commands: Signal<Vec<AgentCommand>>,
    /// The settings the session's agent offers (model, mode, effort …), each with its value in force.
    #[prop(into)]
    agent_options: Signal<Vec<AgentOption>>,
    /// Called with an option's id and the value the user picks.
    on_option: Callback<(String, String)>,
) -> impl IntoView {
    let attachments = Attachments::new(limits, note);
    let dragging = RwSignal::new(false);
    let file_input = NodeRef::<leptos::html::Input>::new();
    let draft = RwSignal::new(typed_before_hydration());
    let caret = RwSignal::new(0_usize);
    // The `@` (or, at 0, the `/`) whose list Esc closed: it stays closed until that word is gone.
    let dismissed = RwSignal::new(None::<usize>);
    let active = RwSignal::new(0_usize);
    // The last answer taken, with the query it answers: the list shows it only while that query is the one typed, so
    // Enter never takes a path from a list for other text.
    let files = RwSignal::new(None::<FileAnswer>);
    // A command sent before the chunk that reads it arrived: its text and how it joins a run.
    let waiting = RwSignal::new(None::<(String, StreamingBehavior)>);
    let input = NodeRef::<leptos::html::Textarea>::new();
    Effect::new(move |_| {
        let Some(text) = handed.get() else { return };
        draft.set(text);
        handed.set(None);
        if let Some(input) = input.get_untracked() {
            let _ = input.focus();
        }
    });
    let mention = Memo::new(move |_| draft.with(|d| mention_being_typed(d, caret.get())));
    let reply: FileReply = Callback::new(move |(query, answer): FileAnswer| {
        // An answer to a query typed over since is dropped.
        if mention.with_untracked(|m| m.as_ref().is_some_and(|m| m.query == query)) {
            files.set(Some((query, answer)));
        }
    });
    // Asked for while the chunk may still be on its way, so the paths and the list's code come together.
    Effect::new(move |_| {
        let Some(Mention { start, query }) = mention.get() else { return };
        if dismissed.get_untracked() != Some(start) {
            find_files.run((query, reply));
        }
    });
    // Closed until the chunk is there; then it re-runs.
    let suggestions = Memo::new(move |_| {
        let Some(suggester) = suggester() else { return Suggestions::Closed };
        let (caret, dismissed) = (caret.get(), dismissed.get());
        draft.with(|d| {
            files.with(|answer| {
                agent_commands.with(|offered| (suggester.suggest)(d, caret, dismissed, answer.as_ref(), offered))
            })
        })
    });
    Effect::new(move |_| {
        suggestions.track();
        active.set(0);
    });
    // Its own memo, so that what shows the entries re-runs when the list opens or closes, not at every keystroke.
    let is_open = Memo::new(move |_| suggestions.with(|s| s.len() > 0));
    let open = move || is_open.get();
    let composing = Composing { draft, caret, active, suggestions, input, agent };
    let commands = Commands {
        on_send,
        on_stop,
        on_command,
        on_model,
        mode,
        note,
        models,
        model,
        busy,
        disabled,
        agent_commands,
        compact_unavailable,
    };
    let decision = Signal::derive(move || {
        plan.with(|p| p.as_ref().filter(|p| p.pending_decision).cloned()).filter(|_| !busy.get())
    });
    // Sends `text` (the trimmed draft); true when it went or its command was carried out, and the draft is done.
    let send_text = move |text: String, behavior: StreamingBehavior| -> bool {
        // Only a draft that starts with `/` can be a command; reading it takes the chunk.
        let command = if text.starts_with('/') {
            match load_suggester() {
                Some(suggester) => (suggester.run)(commands, &text, behavior),
                None => {
                    waiting.set(Some((text, behavior)));
                    return false;
                }
            }
        } else {
            None
        };
        command.unwrap_or_else(|| {
            if disabled.get_untracked() || attachments.is_uploading() {
                return false;
            }
            let files = attachments.refs();
            if !files.is_empty() && busy.get_untracked() {
                note.set(Some(LiveText::of(Key::AttachmentsWaitForRun)));
                return false;
            }
            on_send.run(Outgoing { attachments: files, ..outgoing(text, mode.get_untracked(), behavior) });
            attachments.clear();
            true
        })
    };
    let done = move || {
        draft.set(String::new());
        caret.set(0);
        dismissed.set(None);
    };
    let send = move |behavior: StreamingBehavior| {
        let text = draft.with_untracked(|d| d.trim().to_owned());
        if (!text.is_empty() || !attachments.list.with_untracked(Vec::is_empty)) && send_text(text, behavior) {
            done();
        }
    };
    // The chunk came: the command waiting for it goes, unless the draft was changed since.
    Effect::new(move |_| {
        let Some(suggester) = suggester() else { return };
        let Some((text, behavior)) = waiting.get() else { return };
        waiting.set(None);
        if draft.with_untracked(|d| d.trim() == text) {
            let sent = (suggester.run)(commands, &text, behavior).unwrap_or_else(|| send_text(text, behavior));
            if sent {
                done();
            }
        }
    });
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
        on_send.run(Outgoing { plan_action: Some(action), ..outgoing(text, run_mode, behavior) });
        draft.set(String::new());
    };
    // Takes the suggestion at `index`; the list is open, so the chunk is there.
    let choose = move |index: usize, by_enter: bool| -> bool {
        load_suggester().is_some_and(|suggester| (suggester.choose)(composing, index, by_enter))
    };
    let read_caret = move || {
        if let Some(input) = input.get_untracked() {
            let utf16 = input.selection_start().ok().flatten().unwrap_or(0) as usize;
            caret.set(draft.with_untracked(|d| draft::byte_offset(d, utf16)));
        }
    };
    let on_submit = move |event: SubmitEvent| {
        event.prevent_default();
        send(StreamingBehavior::Steer);
    };
    let on_keydown = move |event: KeyboardEvent| {
        let key = event.key();
        if open() {
            let len = suggestions.with_untracked(Suggestions::len);
            let step = |by: isize| active.update(|at| *at = (*at as isize + by).rem_euclid(len as isize) as usize);
            match key.as_str() {
                "ArrowDown" => {
                    event.prevent_default();
                    return step(1);
                }
                "ArrowUp" => {
                    event.prevent_default();
                    return step(-1);
                }
                "Tab" if !event.shift_key() => {
                    event.prevent_default();
                    choose(active.get_untracked(), false);
                    return;
                }
                "Enter" if !event.shift_key() && !event.is_composing() => {
                    event.prevent_default();
                    if choose(active.get_untracked(), true) {
                        send(StreamingBehavior::Steer);
                    }
                    return;
                }
                "Escape" => {
                    // Closes the list only: a run going on is stopped by the next Esc.
                    event.prevent_default();
                    event.stop_propagation();
                    let start = match suggestions.get_untracked() {
                        Suggestions::Files { start, .. } => start,
                        Suggestions::Commands(_) | Suggestions::Closed => 0,
                    };
                    dismissed.set(Some(start));
                    return;
                }
                _ => {}
            }
        }
        // While an IME is composing, Enter confirms the composition and must not send.
        if key == "Enter" && !event.shift_key() && !event.is_composing() {
            event.prevent_default();
            // Alt+Enter queues a follow-up instead of steering.
            send(if event.alt_key() { StreamingBehavior::FollowUp } else { StreamingBehavior::Steer });
        } else if key == "Escape" && busy.get_untracked() {
            on_stop.run(());
        }
    };
    let on_input = move |event: leptos::ev::Event| {
        let text = event_target_value(&event);
        draft.set(text);
        read_caret();
        note.set(None);
        let at = caret.get_untracked();
        let typing =
            draft.with_untracked(|d| command_being_typed(d, at).is_some() || mention_being_typed(d, at).is_some());
        if typing {
            // Usually fetched on focus already; a box focused before hydration did not see that.
            let _ = load_suggester();
        } else {
            dismissed.set(None);
        }
    };
    let empty = move || draft.with(|d| d.trim().is_empty()) && attachments.is_empty();
    let on_paste = move |event: leptos::ev::ClipboardEvent| {
        let files = attach::pasted(&event);
        // Only files are taken over; pasted text goes into the box as usual.
        if !files.is_empty() {
            event.prevent_default();
            attach::take(attachments, files, upload);
        }
    };
    let on_drop = move |event: leptos::ev::DragEvent| {
        event.prevent_default();
        dragging.set(false);
        attach::take(attachments, attach::dropped(&event), upload);
    };
    let on_picked = move |_| {
        if let Some(input) = file_input.get_untracked() {
            attach::take(attachments, attach::picked(&input), upload);
        }
    };
    view! {
        <form class="composer" data-testid="composer" on:submit=on_submit
            data-dragging=move || dragging.get().then_some("true")
            on:dragover=move |event: leptos::ev::DragEvent| {
                event.prevent_default();
                dragging.set(true);
            }
            on:dragleave=move |_| dragging.set(false)
            on:drop=on_drop>
            {ClientOnly(view! {
            <Show when=move || decision.with(Option::is_some)>
                <div class="plan-decision" role="group" aria-label=tr(Key::PlanWaits) data-testid="plan-decision">
                    <p class="plan-decision__title">{tr(Key::PlanReady)}</p>
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
                            {tr(Key::Execute)}
                        </button>
                        <button
                            class="button"
                            type="button"
                            title=tr(Key::RefineHint)
                            on:click=move |_| decide(PlanAction::Refine)
                        >
                            {tr(Key::Refine)}
                        </button>
                    </div>
                </div>
            </Show>
            })}
            <p class="composer__note" role="status" data-testid="composer-note" hidden=move || note.with(Option::is_none)>
                {move || note.with(|note| note.as_ref().map(LiveText::text))}
            </p>
            // Always in the page (empty and hidden while closed), so the box's `aria-controls` names an element that
            // exists; its entries come from the chunk.
            <ul
                class="composer__suggestions"
                id=LIST_ID
                role="listbox"
                aria-label=move || match suggestions.get() {
                    Suggestions::Files { .. } => t(Key::Files),
                    Suggestions::Commands(_) | Suggestions::Closed => t(Key::Commands),
                }
                data-testid="composer-suggestions"
                hidden=move || !open()
            >
                {move || if open() { load_suggester().map(|suggester| untrack(|| (suggester.items)(composing))) } else { None }}
            </ul>
            {ClientOnly(attach::chips(attachments))}
            <div class="composer__row">
                <textarea
                    class="composer__input"
                    name="message"
                    rows="2"
                    placeholder=tr(Key::ComposerPlaceholder)
                    aria-label=tr(Key::Message)
                    role="combobox"
                    aria-autocomplete="list"
                    aria-controls=LIST_ID
                    aria-expanded=move || if open() { "true" } else { "false" }
                    aria-activedescendant=move || open().then(|| option_id(active.get()))
                    node_ref=input
                    prop:value=move || draft.get()
                    on:input=on_input
                    on:keydown=on_keydown
                    on:keyup=move |event: KeyboardEvent| {
                        if matches!(event.key().as_str(), "ArrowLeft" | "ArrowRight" | "Home" | "End") {
                            read_caret();
                        }
                    }
                    on:click=move |_| read_caret()
                    on:focus=move |_| {
                        let _ = load_suggester();
                        on_focus.run(());
                    }
                    on:paste=on_paste
                ></textarea>
                <div class="composer__actions">
                    <input type="file" multiple class="composer__file-input" node_ref=file_input tabindex="-1"
                        aria-hidden="true" data-testid="attach-input" on:change=on_picked/>
                    <button class="button composer__attach" type="button"
                        title=tr(Key::AttachHint)
                        aria-label=tr(Key::AttachFiles) data-testid="attach-button" disabled=move || disabled.get()
                        on:click=move |_| {
                            if let Some(input) = file_input.get_untracked() {
                                input.click();
                            }
                        }>
                        {tr(Key::Attach)}
                    </button>
                    <ContextMeter context/>
                    {ClientOnly(view! {
                        <ModelPicker models model on_model/>
                        <AgentOptionPickers options=agent_options on_option/>
                    })}
                    <div class="mode-switch" role="radiogroup" aria-label=tr(Key::Mode)>
                        <ModeOption mode value=AgentMode::Agent name="Agent" label=Key::ModeAgent hint=Key::ModeAgentHint/>
                        <ModeOption mode value=AgentMode::Plan name="Plan" label=Key::ModePlan hint=Key::ModePlanHint/>
                    </div>
                    {ClientOnly(view! {
                    <Show when=move || busy.get()>
                        <button class="button button--stop" type="button" title=tr(Key::StopHint) on:click=move |_| on_stop.run(())>
                            {tr(Key::Stop)}
                        </button>
                        <button
                            class="button"
                            type="button"
                            title=tr(Key::FollowUpHint)
                            disabled=move || disabled.get() || empty()
                            on:click=move |_| send(StreamingBehavior::FollowUp)
                        >
                            {tr(Key::FollowUp)}
                        </button>
                    </Show>
                    })}
                    <button
                        class="button button--primary"
                        type="submit"
                        title=move || match (attachments.is_uploading(), busy.get()) {
                            (true, _) => t(Key::WaitingForUploads),
                            (false, true) => t(Key::SteerHint),
                            (false, false) => t(Key::SendHint),
                        }
                        disabled=move || disabled.get() || empty() || attachments.is_uploading()
                    >
                        {move || if busy.get() { t(Key::Steer) } else { t(Key::Send) }}
                    </button>
                </div>
            </div>
        </form>
    }
}

/// The model picker, when there is more than one model to pick.
#[component]
fn ModelPicker(
    /// The configured models, the default first.
    models: Signal<Vec<ModelInfo>>,
    /// The picked model's name.
    model: Signal<Option<String>>,
    /// Called with the name the user picks.
    on_model: Callback<String>,
) -> impl IntoView {
    let options = Signal::derive(move || {
        models.with(|models| {
            models
                .iter()
                .map(|info| (info.name.clone(), info.name.clone(), format!("{} · {}", info.provider, info.model)))
                .collect()
        })
    });
    view! {
        <Show when=move || models.with(|models| models.len() > 1)>
            <Picker
                options
                picked=model
                on_pick=on_model
                what="model"
                testid="model-picker"
                label=Signal::derive(|| t(Key::Model).to_owned())
                title=Signal::derive(|| t(Key::ModelHint).to_owned())
            />
        </Show>
    }
}

/// One native select per setting the session's agent offers, showing the value in force; a pick goes to the agent
/// and the select follows what the agent then says it uses.
#[component]
fn AgentOptionPickers(options: Signal<Vec<AgentOption>>, on_option: Callback<(String, String)>) -> impl IntoView {
    move || {
        options
            .get()
            .into_iter()
            .map(|option| {
                let choices = option
                    .choices
                    .iter()
                    .map(|c| (c.value.clone(), c.name.clone(), c.description.clone().unwrap_or_default()));
                let id = option.id.clone();
                view! {
                    <Picker
                        options=Signal::stored(choices.collect())
                        picked=Signal::stored(Some(option.current))
                        on_pick=Callback::new(move |value| on_option.run((id.clone(), value)))
                        what=option.id.clone()
                        testid=format!("agent-option-{}", option.id)
                        label=option.name.clone()
                        title=option.description.unwrap_or(option.name)
                    />
                }
            })
            .collect_view()
    }
}

/// One choice of the Agent/Plan switch: a real radio button, so arrow keys and screen readers work as usual.
#[component]
fn ModeOption(
    /// The selected mode.
    mode: RwSignal<AgentMode>,
    /// The mode this option selects.
    value: AgentMode,
    /// The radio's value, the same in every language.
    name: &'static str,
    /// Visible name.
    label: Key,
    /// What the mode does, as a tooltip.
    hint: Key,
) -> impl IntoView {
    view! {
        <label class="mode-switch__option" title=tr(hint)>
            <input
                type="radio"
                name="mode"
                value=name
                prop:checked=move || mode.get() == value
                on:change=move |_| mode.set(value)
            />
            <span>{tr(label)}</span>
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
