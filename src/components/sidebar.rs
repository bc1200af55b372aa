//! The sessions sidebar: the product name, "New chat", and the list of sessions.

use leptos::prelude::*;

use crate::protocol::SessionSummary;

#[component]
pub fn SessionsSidebar(
    /// Sessions to list, newest first.
    #[prop(into)]
    sessions: Signal<Vec<SessionSummary>>,
    /// The session on screen, if it has been created.
    #[prop(into)]
    current: Signal<Option<String>>,
) -> impl IntoView {
    view! {
        <aside class="sidebar" data-testid="sidebar" aria-label="Sessions">
            <header class="sidebar__header">
                <span class="sidebar__brand">"chatwire"</span>
                <a class="button button--ghost" href="/" rel="external">"New chat"</a>
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
                                <a
                                    href=format!("/s/{}", session.session_id)
                                    aria-current={
                                        let id = session.session_id.clone();
                                        move || current.with(|c| c.as_deref() == Some(id.as_str())).then_some("page")
                                    }
                                    rel="external"
                                >
                                    <span class="sidebar__title">
                                        {if session.title.is_empty() { "New chat".to_owned() } else { session.title.clone() }}
                                    </span>
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
