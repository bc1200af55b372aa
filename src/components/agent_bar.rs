//! The chat's header line when the server offers several agents: in New chat, the picker of the agent the new
//! session will run on; in a session, the agent it runs on, which it keeps for life. With one agent it is hidden.
//!
//! Both lines are always in the page and shown or hidden by attribute: cheaper in the WASM than views that come and
//! go (issue 39's byte budget).

use leptos::prelude::*;

use super::picker::Picker;

#[component]
pub fn AgentBar(
    /// True when the server offers more than one agent; the line shows only then.
    #[prop(into)]
    several: Signal<bool>,
    /// The agents, in the server's order, each with a hint (may be empty).
    #[prop(into)]
    agents: Signal<Vec<(String, String)>>,
    /// True in New chat (no session on screen yet): the agent can still be picked.
    #[prop(into)]
    new_chat: Signal<bool>,
    /// The agent on screen: the session's, or the one New chat picked; `None` while it is not known.
    #[prop(into)]
    agent: Signal<Option<String>>,
    /// Called with an agent's name when the user picks it.
    on_pick: Callback<String>,
) -> impl IntoView {
    view! {
        <header class="agent-bar" data-testid="agent-bar" hidden=move || !several.get()>
            <label class="agent-bar__agent" hidden=move || !new_chat.get()>
                "Agent "
                <Picker
                    options=agents
                    picked=agent
                    on_pick
                    what="agent"
                    testid="agent-picker"
                    label="Agent"
                    title="The agent the new chat runs on, for its whole life"
                />
            </label>
            <p class="agent-bar__agent" hidden=move || new_chat.get() title="A session runs on one agent for life">
                "Agent " <strong data-testid="session-agent">{move || agent.get()}</strong>
            </p>
        </header>
    }
}
