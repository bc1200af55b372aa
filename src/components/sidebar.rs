//! The sessions sidebar: "New chat", the search box, and the sessions with their status and age; each can be
//! opened, renamed in place, or deleted after a confirmation. While a search has hits to show, they take the list's
//! place.

use leptos::ev::KeyboardEvent;
use leptos::prelude::*;
use leptos::wasm_bindgen::JsCast;
use leptos::web_sys::HtmlElement;

use super::SessionSearch;
use super::client_only::{ClientOnly, IntoRowView, show_or};
use super::usage::session_totals;
use crate::i18n::{Key, fill, t, tr};
use crate::protocol::{SearchHit, SessionStatus, SessionSummary};

#[component]
pub fn SessionsSidebar<F>(
    /// Sessions to list, newest first.
    #[prop(into)]
    sessions: Signal<Vec<SessionSummary>>,
    /// The session on screen, if it has been created.
    #[prop(into)]
    current: Signal<Option<String>>,
    /// Sessions with run events the user has not seen (finished, failed, waiting): their rows are marked.
    #[prop(into)]
    unseen: Signal<Vec<String>>,
    /// The browser's clock in ms since the epoch, for relative times (0 before the page is interactive).
    #[prop(into)]
    now: Signal<f64>,
    /// Called with a session id and its new title.
    on_rename: Callback<(String, String)>,
    /// Called with the id of a session the user confirmed to delete.
    on_delete: Callback<String>,
    /// The hits of the search box's last query; `None` while nothing is searched for.
    #[prop(into)]
    search_hits: Signal<Option<Vec<SearchHit>>>,
    /// Called with the search box's query as typed.
    on_search: Callback<String>,
    /// Opens a search hit's session at its message.
    on_open_hit: Callback<SearchHit>,
    /// The server's default agent while it offers several, and each row then names its session's agent (a session
    /// not bound yet runs on the default); `None` with one agent, and no row names it.
    #[prop(into)]
    default_agent: Signal<Option<String>>,
    /// Shown below the list (the page's settings). A type of its own rather than `Children`, which would erase it
    /// into an `AnyView` and keep that type's hydration code twice in the WASM.
    children: TypedChildren<F>,
) -> impl IntoView
where
    F: IntoView + 'static,
{
    let children = children.into_inner();
    let refocus = StoredValue::new(None::<Refocus>);
    // A deleted row takes its focused button with it: the focus goes to the list's first session, or to New chat.
    Effect::new(move || {
        sessions.track();
        if refocus.with_value(|r| r == &Some(Refocus::List)) {
            refocus.set_value(None);
            if focus_is_lost() {
                focus_first_of(".sidebar__list .sidebar__link, [data-testid=\"new-chat\"]");
            }
        }
    });
    view! {
        <aside class="sidebar" id="sidebar" data-testid="sidebar" aria-label=tr(Key::Sessions)>
            <header class="sidebar__header">
                <h1 class="sidebar__brand">"chatwire"</h1>
                <a class="button button--ghost" href="/" data-testid="new-chat">{tr(Key::NewChat)}</a>
            </header>
            <SessionSearch hits=search_hits on_query=on_search on_open=on_open_hit/>
            <nav class="sidebar__list" hidden=move || search_hits.with(Option::is_some)>
                // The list is loaded after the page, so the server has none to render and nothing here is hydrated.
                {ClientOnly(show_or(
                    move || sessions.with(|s| !s.is_empty()),
                    move || view! {
                        <ul>
                            <For
                                each=move || sessions.get()
                                key=|session| {
                                    let SessionSummary { session_id, title, updated_at, status, agent, .. } = session;
                                    (session_id.clone(), title.clone(), *updated_at, *status, agent.clone())
                                }
                                let:session
                            >
                                <SessionItem session current unseen now on_rename on_delete refocus default_agent/>
                            </For>
                        </ul>
                    },
                    || view! { <p class="sidebar__empty">{tr(Key::NoSessions)}</p> },
                ))}
            </nav>
            <footer class="sidebar__footer">{children()}</footer>
        </aside>
    }
}

/// What a row of the list is doing: showing the session, editing its title, or asking to confirm a delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ItemMode {
    Show,
    Rename,
    ConfirmDelete,
}

/// Where the keyboard focus goes once a row's rename or delete is over. The field or the confirmation that had it
/// is gone by then, and a renamed row is rebuilt with its new title, so the row that appears picks the focus up.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Refocus {
    /// The row's button that started it (Rename after a rename, Delete after a cancelled delete), once the row
    /// shows `title`: a saved title comes back from the server as a new row.
    Button { session_id: String, title: String, started_by: ItemMode },
    /// The row was deleted.
    List,
}

/// Whether nothing has the focus any more (the element that had it was removed), so moving it takes it from no one.
fn focus_is_lost() -> bool {
    let document = document();
    document.active_element().is_none_or(|element| document.body().is_some_and(|body| *body == element))
}

pub(super) fn focus_first_of(selector: &str) {
    if let Some(element) = document().query_selector(selector).ok().flatten()
        && let Ok(element) = element.dyn_into::<HtmlElement>()
    {
        let _ = element.focus();
    }
}

#[component]
fn SessionItem(
    /// The session this row shows.
    session: SessionSummary,
    /// The session on screen.
    current: Signal<Option<String>>,
    /// Sessions with run events the user has not seen.
    unseen: Signal<Vec<String>>,
    /// The browser's clock.
    now: Signal<f64>,
    /// Renames a session.
    on_rename: Callback<(String, String)>,
    /// Deletes a session.
    on_delete: Callback<String>,
    /// Where the focus goes when a rename or a delete is over, shared by the rows.
    refocus: StoredValue<Option<Refocus>>,
    /// The server's default agent while it offers several; `None`: the row names no agent.
    default_agent: Signal<Option<String>>,
) -> impl IntoView {
    let item_mode = RwSignal::new(ItemMode::Show);
    let id = StoredValue::new(session.session_id.clone());
    let untitled = session.title.is_empty();
    let title = if untitled { t(Key::NewChat).to_owned() } else { session.title.clone() };
    let draft = RwSignal::new(title.clone());
    let is_current = move || current.with(|c| id.with_value(|id| c.as_deref() == Some(id.as_str())));
    let is_unseen = move || unseen.with(|marked| id.with_value(|id| marked.contains(id)));
    let status = session.status;
    let updated_at = session.updated_at;
    let totals = session.usage.filter(|usage| !usage.is_empty());
    // The row's agent, empty (and so hidden by CSS) with one agent: a text that changes costs less WASM than a span
    // that comes and goes.
    let agent = StoredValue::new(session.agent.clone());
    let agent = move || default_agent.get().map(|default| agent.get_value().unwrap_or(default));
    // Back to showing the row, with the focus on the button that left it when the keyboard ended it.
    let show_again = move |started_by: Option<ItemMode>, title: String| {
        refocus.set_value(started_by.map(|started_by| Refocus::Button {
            session_id: id.get_value(),
            title,
            started_by,
        }));
        item_mode.set(ItemMode::Show);
    };
    let row_title = StoredValue::new(title);
    // The row's actions are named after it, in the page's language; one closure for all four (one copy in the WASM).
    let named = move |key: Key| Signal::derive(move || fill(key, &[("title", &row_title.get_value())]));
    let save = move |started_by: Option<ItemMode>| {
        let title = draft.with_untracked(|t| t.trim().to_owned());
        if title.is_empty() {
            show_again(started_by, row_title.get_value());
        } else {
            show_again(started_by, title.clone());
            on_rename.run((id.get_value(), title));
        }
    };
    let on_key = move |event: KeyboardEvent| match event.key().as_str() {
        "Enter" => {
            event.prevent_default();
            save(Some(ItemMode::Rename));
        }
        "Escape" => show_again(Some(ItemMode::Rename), row_title.get_value()),
        _ => {}
    };
    // `autofocus` only works on page load; a field or button that appears later is focused by hand.
    let rename_field = NodeRef::<leptos::html::Input>::new();
    let confirm_button = NodeRef::<leptos::html::Button>::new();
    let rename_button = NodeRef::<leptos::html::Button>::new();
    let delete_button = NodeRef::<leptos::html::Button>::new();
    Effect::new(move || {
        let (Some(rename), Some(delete)) = (rename_button.get(), delete_button.get()) else { return };
        let started_by = refocus.with_value(|refocus| match refocus {
            Some(Refocus::Button { session_id, title, started_by }) => (id.with_value(|id| id == session_id)
                && row_title.with_value(|shown| shown == title))
            .then_some(*started_by),
            Some(Refocus::List) | None => None,
        });
        let button = match started_by {
            Some(ItemMode::Rename) => rename,
            Some(ItemMode::ConfirmDelete) => delete,
            Some(ItemMode::Show) | None => return,
        };
        refocus.set_value(None);
        if focus_is_lost() {
            let _ = button.focus();
        }
    });
    Effect::new(move || {
        if let Some(field) = rename_field.get() {
            let _ = field.focus();
            // The title goes in first: the field's `prop:value` may be applied after this runs, and a value set
            // after `select` would put the caret at its end, so typing would add to the title, not replace it.
            field.set_value(&draft.get_untracked());
            field.select();
        }
    });
    Effect::new(move || {
        if let Some(button) = confirm_button.get() {
            let _ = button.focus();
        }
    });
    view! {
        <li
            class="sidebar__item"
            class:sidebar__item--current=is_current
            data-session-id=id.get_value()
            data-unseen=move || is_unseen().then_some("true")
        >
            {move || match item_mode.get() {
                ItemMode::Show => view! {
                    <a
                        class="sidebar__link"
                        href=format!("/s/{}", id.get_value())
                        aria-current=move || is_current().then_some("page")
                    >
                        <span class="sidebar__title">
                            <span class="sidebar__unseen" role="img" aria-label=tr(Key::NewActivity) hidden=move || !is_unseen()></span>
                            {move || if untitled { t(Key::NewChat).to_owned() } else { row_title.get_value() }}
                        </span>
                        <span class="sidebar__meta">
                            <span class=format!("badge badge--{}", status.as_str())>{move || status_label(status)}</span>
                            <time class="sidebar__time">
                                {move || relative_time(updated_at, now.get())}
                            </time>
                            <span class="sidebar__agent" data-testid="session-row-agent">{move || agent().unwrap_or_default()}</span>
                            {totals.clone().map(|totals| view! { <span class="sidebar__usage" data-testid="session-usage">{move || session_totals(&totals)}</span> })}
                        </span>
                    </a>
                    <span class="sidebar__actions">
                        <button
                            class="button button--small"
                            type="button"
                            aria-label=named(Key::RenameNamed)
                            on:click=move |_| item_mode.set(ItemMode::Rename)
                            node_ref=rename_button
                        >
                            {tr(Key::Rename)}
                        </button>
                        <button
                            class="button button--small"
                            type="button"
                            aria-label=named(Key::DeleteNamed)
                            on:click=move |_| item_mode.set(ItemMode::ConfirmDelete)
                            node_ref=delete_button
                        >
                            {tr(Key::Delete)}
                        </button>
                        <a
                            class="button button--small"
                            href=format!("/api/sessions/{}/export?format=md", id.get_value())
                            download
                            aria-label=named(Key::ExportMarkdownNamed)
                        >
                            "MD"
                        </a>
                        <a
                            class="button button--small"
                            href=format!("/api/sessions/{}/export?format=json", id.get_value())
                            download
                            aria-label=named(Key::ExportJsonNamed)
                        >
                            "JSON"
                        </a>
                    </span>
                }
                .into_row_view(),
                ItemMode::Rename => view! {
                    <input
                        class="sidebar__rename"
                        type="text"
                        aria-label=tr(Key::NewTitle)
                        prop:value=move || draft.get()
                        on:input=move |event| draft.set(event_target_value(&event))
                        on:keydown=on_key
                        on:blur=move |_| {
                            // Leaving the field for elsewhere saves too, and the focus stays where it went.
                            if item_mode.get_untracked() == ItemMode::Rename {
                                save(None);
                            }
                        }
                        node_ref=rename_field
                    />
                }
                .into_row_view(),
                ItemMode::ConfirmDelete => view! {
                    <span class="sidebar__confirm" role="group" aria-label=tr(Key::ConfirmDelete)>
                        <span>{tr(Key::DeleteQuestion)}</span>
                        <button
                            class="button button--small button--danger"
                            type="button"
                            on:click=move |_| {
                                refocus.set_value(Some(Refocus::List));
                                item_mode.set(ItemMode::Show);
                                on_delete.run(id.get_value());
                            }
                            node_ref=confirm_button
                        >
                            {tr(Key::Delete)}
                        </button>
                        <button class="button button--small" type="button" on:click=move |_| show_again(Some(ItemMode::ConfirmDelete), row_title.get_value())>
                            {tr(Key::Cancel)}
                        </button>
                    </span>
                }
                .into_row_view(),
            }}
        </li>
    }
}

/// The badge text; idle sessions show none.
pub(crate) fn status_label(status: SessionStatus) -> &'static str {
    match status {
        SessionStatus::Idle => "",
        SessionStatus::Running => t(Key::StatusRunning),
        SessionStatus::Interrupted => t(Key::StatusInterrupted),
        SessionStatus::Failed => t(Key::StatusFailed),
    }
}

/// "just now", "5 min ago", "3 h ago", "2 d ago"; empty before the browser's clock is known (server rendering).
pub fn relative_time(then_ms: u64, now_ms: f64) -> String {
    if now_ms <= 0.0 {
        return String::new();
    }
    let seconds = ((now_ms - then_ms as f64) / 1000.0).max(0.0) as u64;
    match seconds {
        0..45 => t(Key::JustNow).to_owned(),
        45..3_600 => fill(Key::MinutesAgo, &[("n", &seconds.div_ceil(60).max(1).to_string())]),
        3_600..86_400 => fill(Key::HoursAgo, &[("n", &(seconds / 3_600).to_string())]),
        _ => fill(Key::DaysAgo, &[("n", &(seconds / 86_400).to_string())]),
    }
}

#[cfg(test)]
mod tests {
    use super::relative_time;

    #[test]
    fn relative_time_rounds_to_a_readable_unit() {
        let now = 10_000_000_000.0;
        let ago = |seconds: u64| relative_time(10_000_000_000 - seconds * 1000, now);
        assert_eq!(ago(0), "just now");
        assert_eq!(ago(44), "just now");
        assert_eq!(ago(45), "1 min ago");
        assert_eq!(ago(61), "2 min ago");
        assert_eq!(ago(3_599), "60 min ago");
        assert_eq!(ago(3_600), "1 h ago");
        assert_eq!(ago(86_399), "23 h ago");
        assert_eq!(ago(3 * 86_400), "3 d ago");
        assert_eq!(relative_time(5, 0.0), "", "no clock while rendering on the server");
        assert_eq!(relative_time(20_000_000_000, now), "just now", "a clock behind the server's is not negative");
    }
}
