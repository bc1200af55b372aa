//! The chat's header line when the server offers several agents: in New chat, the picker of the agent the new
//! session will run on; in a session, the agent it runs on, which it keeps for life. With one agent there is no line.

use leptos::either::Either;
use leptos::prelude::*;

#[component]
pub fn AgentBar(
    /// True when the server offers more than one agent; the line shows only then.
    #[prop(into)]
    several: Signal<bool>,
    /// The agents' names, in the server's order.
    #[prop(into)]
    agents: Signal<Vec<String>>,
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
        <Show when=move || several.get()>
            <header class="agent-bar" data-testid="agent-bar">
                {move || {
                    if new_chat.get() {
                        Either::Left(view! { <AgentPicker agents agent on_pick/> })
                    } else {
                        Either::Right(view! {
                            <p class="agent-bar__agent" title="A session runs on one agent for life">
                                "Agent " <strong data-testid="session-agent">{move || agent.get()}</strong>
                            </p>
                        })
                    }
                }}
            </header>
        </Show>
    }
}

/// A native `<select>` of the agents, as the model picker is: keyboard and screen-reader behaviour come with it.
#[component]
fn AgentPicker(
    /// The agents' names.
    agents: Signal<Vec<String>>,
    /// The picked agent's name.
    agent: Signal<Option<String>>,
    /// Called with the name the user picks.
    on_pick: Callback<String>,
) -> impl IntoView {
    view! {
        <label class="agent-bar__agent">
            "Agent "
            <select
                class="model-picker"
                name="agent"
                title="The agent the new chat runs on, for its whole life"
                data-testid="agent-picker"
                on:change=move |event| on_pick.run(event_target_value(&event))
            >
                {move || {
                    agents
                        .get()
                        .into_iter()
                        .map(|name| {
                            let (value, picked) = (name.clone(), name.clone());
                            view! {
                                <option
                                    value=value
                                    prop:selected=move || agent.with(|agent| agent.as_deref() == Some(picked.as_str()))
                                >
                                    {name}
                                </option>
                            }
                        })
                        .collect_view()
                }}
            </select>
        </label>
    }
}
