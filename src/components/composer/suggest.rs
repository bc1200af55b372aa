//! What the composer needs only once a `/` or `@` starts a word: which commands or paths to offer, the list's
//! entries, taking one into the draft, and reading and carrying out a slash command. In the browser this is a WASM
//! chunk of its own ([`super::split`]); the message box, its combobox attributes and the empty list stay in the main
//! module.

use leptos::either::Either;
use leptos::ev::MouseEvent;
use leptos::prelude::*;

use super::{Commands, Composing, FileAnswer, PageCommand, Suggestions, option_id, outgoing};
use crate::components::client_only::{IntoRowView, RowView};
use crate::draft::{
    self, Draft, Offered, SlashCommand, command_being_typed, command_names, commands_starting, complete_command,
    complete_mention, mention_being_typed,
};
use crate::i18n::{Key, LiveText, fill, t};
use crate::protocol::{AgentCommand, AgentMode, ChatCommand, StreamingBehavior};

/// What the list offers for the draft, the caret (a byte offset), the word whose list Esc closed, the last answer to
/// a file query and the commands the session's agent offers.
pub type Suggest = fn(&str, usize, Option<usize>, Option<&FileAnswer>, &[AgentCommand]) -> Suggestions;

/// What the chunk hands the composer: plain function pointers, so it crosses as one `Copy` value.
#[derive(Clone, Copy)]
pub struct Suggester {
    pub suggest: Suggest,
    /// Takes the entry at an index into the draft; true when the draft is now a whole command to run (Enter on a
    /// command that needs nothing more).
    pub choose: fn(Composing, usize, bool) -> bool,
    /// The list's entries, following what it shows.
    pub items: fn(Composing) -> RowView,
    /// Reads a draft that starts with `/` and carries its command out: `None` when it is no command (`/etc/hosts`)
    /// and goes as text; else whether it was done (when not, the note says why and the draft stays).
    pub run: fn(Commands, &str, StreamingBehavior) -> Option<bool>,
}

pub const SUGGESTER: Suggester = Suggester { suggest, choose, items, run };

fn suggest(
    text: &str,
    caret: usize,
    dismissed: Option<usize>,
    answer: Option<&FileAnswer>,
    agent: &[AgentCommand],
) -> Suggestions {
    if let Some(typed) = command_being_typed(text, caret) {
        let commands = commands_starting(typed, agent);
        return if commands.is_empty() || dismissed == Some(0) {
            Suggestions::Closed
        } else {
            Suggestions::Commands(commands)
        };
    }
    match mention_being_typed(text, caret) {
        Some(mention) if dismissed != Some(mention.start) => match answer {
            Some((query, Ok(found))) if *query == mention.query && !found.is_empty() => {
                Suggestions::Files { start: mention.start, files: found.clone() }
            }
            Some((_, Ok(_) | Err(_))) | None => Suggestions::Closed,
        },
        Some(_) | None => Suggestions::Closed,
    }
}

fn choose(composing: Composing, index: usize, by_enter: bool) -> bool {
    let at = composing.caret.get_untracked();
    let text = composing.draft.get_untracked();
    match composing.suggestions.get_untracked() {
        Suggestions::Closed => false,
        Suggestions::Commands(commands) => {
            let Some(command) = commands.get(index) else { return false };
            let typed_in_full = command_being_typed(&text, at) == Some(command.name());
            let (completed, at) = complete_command(&text, command.name());
            if by_enter && (typed_in_full || !command.takes_args()) {
                // Run as it is: without the space completing adds for arguments, so a command refused stays in the
                // box as typed.
                composing.draft.set(completed.trim_end().to_owned());
                return true;
            }
            set_draft(composing, completed, at);
            false
        }
        Suggestions::Files { start, files } => {
            if let Some(file) = files.get(index) {
                let (completed, at) = complete_mention(&text, start, at, &file.path);
                set_draft(composing, completed, at);
            }
            false
        }
    }
}

/// Replaces the draft and puts the caret where the edit left it, once the box shows the edited text.
fn set_draft(composing: Composing, text: String, at: usize) {
    if let Some(input) = composing.input.get_untracked() {
        input.set_value(&text);
        let utf16 = draft::utf16_offset(&text, at) as u32;
        let _ = input.set_selection_range(utf16, utf16);
    }
    composing.draft.set(text);
    composing.caret.set(at);
}

fn items(composing: Composing) -> RowView {
    (move || match composing.suggestions.get() {
        Suggestions::Closed => ().into_row_view(),
        Suggestions::Commands(commands) => commands
            .into_iter()
            .enumerate()
            .map(|(index, command)| {
                let name = format!("/{}", command.name());
                let body = match command {
                    Offered::Own(command) => Either::Left(view! {
                        <span class="composer__suggestion-name">{name}</span>
                        <span class="composer__suggestion-args">{command.args_hint()}</span>
                        <span class="composer__suggestion-about">{t(command.about)}</span>
                    }),
                    // Marked as the agent's: it runs there, not in chatwire.
                    Offered::Agent(command) => Either::Right(view! {
                        <span class="composer__suggestion-name">{name}</span>
                        <span class="composer__suggestion-args">{command.hint}</span>
                        <span class="composer__suggestion-about">{command.description}</span>
                        <span class="composer__suggestion-agent" data-testid="agent-command">
                            {composing.agent.get_untracked().unwrap_or_else(|| t(Key::TheAgent).to_owned())}
                        </span>
                    }),
                };
                suggestion(composing, index, body)
            })
            .collect_view()
            .into_row_view(),
        Suggestions::Files { files, .. } => files
            .into_iter()
            .enumerate()
            .map(|(index, file)| {
                let body =
                    view! { <span class="composer__suggestion-path">{marked(&file.path, &file.positions)}</span> };
                suggestion(composing, index, body)
            })
            .collect_view()
            .into_row_view(),
    })
    .into_row_view()
}

fn suggestion(composing: Composing, index: usize, body: impl IntoView + 'static) -> impl IntoView {
    let active = composing.active;
    let is_active = move || active.get() == index;
    view! {
        <li
            class="composer__suggestion"
            class:composer__suggestion--active=is_active
            id=option_id(index)
            role="option"
            aria-selected=move || if is_active() { "true" } else { "false" }
            // A press must not take the focus from the message box.
            on:mousedown=|event: MouseEvent| event.prevent_default()
            on:mousemove=move |_| {
                if !is_active() {
                    active.set(index);
                }
            }
            on:click=move |_| {
                choose(composing, index, false);
            }
        >
            {body}
        </li>
    }
}

/// A path with its matched characters in `<mark>`.
fn marked(path: &str, positions: &[usize]) -> impl IntoView + use<> {
    let mut runs: Vec<(String, bool)> = Vec::new();
    for (at, c) in path.chars().enumerate() {
        let hit = positions.binary_search(&at).is_ok();
        match runs.last_mut() {
            Some((text, was)) if *was == hit => text.push(c),
            _ => runs.push((c.to_string(), hit)),
        }
    }
    runs.into_iter()
        .map(|(text, hit)| if hit { Either::Left(view! { <mark>{text}</mark> }) } else { Either::Right(text) })
        .collect_view()
}

fn run(commands: Commands, text: &str, behavior: StreamingBehavior) -> Option<bool> {
    match commands.agent_commands.with_untracked(|offered| draft::parse(text, offered)) {
        Draft::Text => None,
        Draft::Command(command) => Some(run_command(commands, command, behavior)),
        Draft::Unknown(name) => {
            commands.note.set(Some(LiveText::filled(
                Key::UnknownCommand,
                vec![("command", format!("/{name}")), ("commands", command_names())],
            )));
            Some(false)
        }
        Draft::Invalid(_) => {
            // Read again when drawn, so the note follows the language. Only our own commands are invalid, and the
            // agent's commands never shadow ours, so they need not be offered again.
            let text = text.to_owned();
            commands.note.set(Some(LiveText::new(move || match draft::parse(&text, &[]) {
                Draft::Invalid(message) => message,
                Draft::Text | Draft::Command(_) | Draft::Unknown(_) => String::new(),
            })));
            Some(false)
        }
    }
}

/// Carries a command out; false when it could not be (the note says why), and the draft stays.
fn run_command(c: Commands, command: SlashCommand, behavior: StreamingBehavior) -> bool {
    match command {
        SlashCommand::New => c.on_command.run(PageCommand::NewChat),
        SlashCommand::Export(format) => c.on_command.run(PageCommand::Export(format)),
        SlashCommand::Plan(text) | SlashCommand::Agent(text) if !text.is_empty() && c.disabled.get_untracked() => {
            return false;
        }
        SlashCommand::Plan(text) => {
            c.mode.set(AgentMode::Plan);
            if text.is_empty() {
                c.note.set(Some(LiveText::of(Key::PlanModeNote)));
            } else {
                c.on_send.run(outgoing(text, AgentMode::Plan, behavior));
            }
        }
        SlashCommand::Agent(text) => {
            c.mode.set(AgentMode::Agent);
            if text.is_empty() {
                c.note.set(Some(LiveText::of(Key::AgentModeNote)));
            } else {
                c.on_send.run(outgoing(text, AgentMode::Agent, behavior));
            }
        }
        SlashCommand::Model(name) => {
            let known = c.models.get_untracked();
            let names = known.iter().map(|m| m.name.as_str()).collect::<Vec<_>>().join(", ");
            if name.is_empty() {
                let current = c.model.get_untracked().unwrap_or_default();
                c.note.set(Some(LiveText::filled(Key::ModelsNote, vec![("names", names), ("current", current)])));
                return true;
            }
            match known.iter().find(|m| m.name.eq_ignore_ascii_case(&name)) {
                Some(found) => {
                    c.on_model.run(found.name.clone());
                    c.note.set(Some(LiveText::filled(Key::ModelPicked, vec![("name", found.name.clone())])));
                }
                None => {
                    c.note.set(Some(LiveText::filled(
                        Key::NoSuchModel,
                        vec![("name", format!("{name:?}")), ("names", names)],
                    )));
                    return false;
                }
            }
        }
        SlashCommand::Compact(text) => {
            // The session's agent cannot (pi compacts by itself): said here, and nothing is sent.
            if let Some(why) = c.compact_unavailable.get_untracked() {
                c.note.set(Some(LiveText::fixed(why)));
                return false;
            }
            if c.busy.get_untracked() {
                c.note.set(Some(LiveText::of(Key::CompactWhileRunning)));
                return false;
            }
            if c.disabled.get_untracked() {
                return false;
            }
            let behavior = StreamingBehavior::Steer;
            c.on_send.run(super::Outgoing {
                command: Some(ChatCommand::Compact),
                ..outgoing(text, c.mode.get_untracked(), behavior)
            });
        }
        SlashCommand::Stop => {
            if c.busy.get_untracked() {
                c.on_stop.run(());
            } else {
                c.note.set(Some(LiveText::of(Key::NothingRunning)));
            }
        }
        SlashCommand::Help => {
            let offered = c.agent_commands.get_untracked();
            c.note.set(Some(LiveText::new(move || help(&offered))));
        }
    }
    true
}

/// `/help`'s lines: ours, then the session's agent's.
fn help(offered: &[AgentCommand]) -> String {
    let mut lines: Vec<String> = draft::COMMANDS
        .iter()
        .map(|info| {
            let gap = if info.takes_args() { " " } else { "" };
            format!("/{}{gap}{} — {}", info.name, info.args_hint(), t(info.about))
        })
        .collect();
    for offered in commands_starting("", offered) {
        match offered {
            Offered::Own(_) => {}
            Offered::Agent(command) => {
                let hint = command.hint.map(|hint| format!(" {hint}")).unwrap_or_default();
                lines.push(fill(
                    Key::AgentsCommand,
                    &[("command", &format!("/{}{hint}", command.name)), ("about", &command.description)],
                ));
            }
        }
    }
    lines.join("\n")
}
