//! The sessions sidebar: the product name, "New chat", and the list of sessions.

use leptos::prelude::*;

use crate::protocol::SessionSummary;

#[component]
pub fn SessionsSidebar(
    /// Sessions to list, newest first.
    #[prop(optional, into)]
    sessions: Signal<Vec<SessionSummary>>,
) -> impl IntoView {
    view! {
        <aside class="sidebar" data-testid="sidebar" aria-label="Sessions">
            <header class="sidebar__header">
                <span class="sidebar__brand">"chatwire"</span>
                <a class="button button--ghost" href="/">"New chat"</a>
            </header>
            <nav class="sidebar__list">
                <Show
                    when=move || sessions.with(|s| !s.is_empty())
                    fallback=|| view! { <p class="sidebar__empty">"No sessions yet."</p> }
                >
                    <ul>
                        <For
                            each=move || sessions.get()
                            key=|session| (session.session_id.clone(), session.updated_at)
                            let:session
                        >
                            <li class="sidebar__item">
                                <a href=format!("/s/{}", session.session_id)>
                                    <span class="sidebar__title">{session.title.clone()}</span>
                                    <span class=format!("badge badge--{}", session.status.as_str())>
                                        {session.status.as_str()}
                                    </span>
                                </a>
                            </li>
                        </For>
                    </ul>
                </Show>
            </nav>
        </aside>
    }
}
