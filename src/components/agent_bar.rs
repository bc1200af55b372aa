//! The chat's header line when the server offers several agents: in New chat, the picker of the agent the new
//! session will run on; in a session, the agent it runs on, which it keeps for life. With one agent it is hidden,
//! unless New chat's agent can open its own sessions: then it offers them ("Open a session of opencode").
//!
//! Both lines are always in the page and shown or hidden by attribute: cheaper in the WASM than views that come and
//! go (issue 39's byte budget).

use leptos::prelude::*;

use super::client_only::{ClientOnly, IntoRowView};
use super::picker::Picker;
use super::sidebar::relative_time;
use crate::i18n::{Key, fill, t, tr};
use crate::protocol::AgentConversation;

/// The agent's own sessions, as New chat lists them: not asked for, on their way, here, or refused.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum OwnSessions {
    #[default]
    Closed,
    Loading,
    Loaded(Vec<AgentConversation>),
    Failed(String),
}

#[component]
pub fn AgentBar(
    /// True when the server offers more than one agent; the line shows only then.
    #[prop(into)]
    several: Signal<bool>,
    /// The agents, in the server's order, each with a hint (may be empty).
    #[prop(into)]
    agents: Signal<Vec<(String, String, String)>>,
    /// True in New chat (no session on screen yet): the agent can still be picked.
    #[prop(into)]
    new_chat: Signal<bool>,
    /// The agent on screen: the session's, or the one New chat picked; `None` while it is not known.
    #[prop(into)]
    agent: Signal<Option<String>>,
    /// Called with an agent's name when the user picks it.
    on_pick: Callback<String>,
    /// True when the agent on screen can open its own sessions (`openUnavailable` absent).
    #[prop(into)]
    can_open: Signal<bool>,
    /// The browser's clock, for the sessions' times.
    #[prop(into)]
    now: Signal<f64>,
    /// Lists an agent's own sessions into the signal.
    on_list: Callback<(String, RwSignal<OwnSessions>)>,
    /// Opens one: (agent, its id).
    on_open: Callback<(String, String)>,
) -> impl IntoView {
    let own = RwSignal::new(OwnSessions::Closed);
    let offered = move || new_chat.get() && can_open.get();
    // Another agent picked, or a session opened: the list was of the agent before.
    Effect::new(move |_| {
        agent.track();
        new_chat.track();
        own.set(OwnSessions::Closed);
    });
    let list = move |_| {
        if let Some(name) = agent.get_untracked() {
            own.set(OwnSessions::Loading);
            on_list.run((name, own));
        }
    };
    let entries = move || match own.get() {
        OwnSessions::Closed => Vec::new(),
        OwnSessions::Loading => vec![Err(t(Key::Loading).to_owned())],
        OwnSessions::Failed(why) => vec![Err(why)],
        OwnSessions::Loaded(listed) if listed.is_empty() => vec![Err(t(Key::NoOwnSessions).to_owned())],
        OwnSessions::Loaded(listed) => listed.into_iter().map(Ok).collect(),
    };
    view! {
        <header class="agent-bar" data-testid="agent-bar" hidden=move || !several.get() && !offered()>
            <label class="agent-bar__agent" hidden=move || !new_chat.get()>
                {tr(Key::AgentLabel)}
                <Picker
                    options=agents
                    picked=agent
                    on_pick
                    what="agent"
                    testid="agent-picker"
                    label=Signal::derive(|| t(Key::Agent).to_owned())
                    title=Signal::derive(|| t(Key::AgentHint).to_owned())
                />
            </label>
            <button
                type="button"
                class="agent-bar__open"
                data-testid="open-own-session"
                hidden=move || !offered()
                title=tr(Key::OpenOwnHint)
                on:click=list
            >
                {move || fill(Key::OpenOwn, &[("agent", &agent.get().unwrap_or_default())])}
            </button>
            <ul class="agent-bar__own" data-testid="own-sessions" hidden=move || !offered()>
                // Listed only in the browser, once asked for: the server renders none, nothing to hydrate.
                {ClientOnly(move || {
                    entries()
                        .into_iter()
                        .map(|entry| match entry {
                            Err(said) => view! { <li class="agent-bar__said">{said}</li> }.into_row_view(),
                            Ok(conversation) => {
                                let AgentConversation { id, title, updated_at, .. } = conversation;
                                let when = move || updated_at.map(|at| relative_time(at, now.get())).unwrap_or_default();
                                let open = move |_| {
                                    if let Some(name) = agent.get_untracked() {
                                        on_open.run((name, id.clone()));
                                    }
                                };
                                view! {
                                    <li>
                                        <button type="button" data-testid="own-session" on:click=open>
                                            {title.unwrap_or_else(|| t(Key::Untitled).to_owned())}
                                            " " <time>{when}</time>
                                        </button>
                                    </li>
                                }
                                    .into_row_view()
                            }
                        })
                        .collect_view()
                })}
            </ul>
            <p class="agent-bar__agent" hidden=move || new_chat.get() title=tr(Key::AgentForLife)>
                {tr(Key::AgentLabel)} <strong data-testid="session-agent">{move || agent.get()}</strong>
            </p>
        </header>
    }
}
