//! The sessions sidebar: "New chat", the search box, and the sessions with their status and age; each can be
//! opened, renamed in place, or deleted after a confirmation. While a search has hits to show, they take the list's
//! place.
//!
//! In the browser the list's rows ([`rows`]) come with the lists' WASM chunk ([`chunk`]), fetched once the page is
//! live.

use leptos::prelude::*;
use leptos::wasm_bindgen::JsCast;
use leptos::web_sys::HtmlElement;

use super::SessionSearch;
use super::client_only::{ClientOnly, show_or};
use crate::i18n::{Key, fill, t, tr};
use crate::protocol::{SearchHit, SessionStatus, SessionSummary};

#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
mod chunk;
mod rows;

#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
pub use self::chunk::{BuildSessionList, SESSION_LIST, arrived};

/// What the list of sessions is drawn from: the sidebar's props it passes on to the list's chunk.
#[derive(Clone, Copy)]
pub struct ListProps {
    sessions: Signal<Vec<SessionSummary>>,
    current: Signal<Option<String>>,
    unseen: Signal<Vec<String>>,
    now: Signal<f64>,
    on_rename: Callback<(String, String)>,
    on_delete: Callback<String>,
    default_agent: Signal<Option<String>>,
    /// Where the focus goes when a rename or a delete is over, shared by the rows; the sidebar's, since the list
    /// is gone when its last session is deleted.
    refocus: StoredValue<Option<Refocus>>,
}

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
    let list = ListProps { sessions, current, unseen, now, on_rename, on_delete, default_agent, refocus };
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
                    move || list_view(list),
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

#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
fn list_view(list: ListProps) -> super::client_only::RowView {
    chunk::list(list)
}

/// The server draws no list (it has none before the page asks for it), so it needs no chunk.
#[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
fn list_view(list: ListProps) -> super::client_only::RowView {
    rows::build_list(list)
}

pub(crate) fn focus_first_of(selector: &str) {
    if let Some(element) = document().query_selector(selector).ok().flatten()
        && let Ok(element) = element.dyn_into::<HtmlElement>()
    {
        let _ = element.focus();
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
