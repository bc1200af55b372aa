//! The phone layout's sessions drawer: below 720 px wide the sidebar is off-canvas (style/main.css, "Phones"), and
//! the menu button in a slim bar above the chat slides it in over the chat, as phone chat apps do. The drawer is
//! only a class on the page's root; the CSS does the rest, so a wider screen, where the sidebar always shows, is not
//! affected by it.

use leptos::ev::{KeyboardEvent, MouseEvent};
use leptos::prelude::*;
use leptos::wasm_bindgen::JsCast;
use leptos::web_sys::Element;

use super::sidebar::focus_first_of;
use crate::i18n::{Key, t, tr};
use crate::protocol::SessionSummary;

/// Whether the sessions drawer is open.
#[derive(Debug, Clone, Copy)]
pub struct Drawer {
    open: RwSignal<bool>,
}

impl Drawer {
    pub fn new() -> Self {
        Self { open: RwSignal::new(false) }
    }

    pub fn is_open(self) -> bool {
        self.open.get()
    }

    pub fn close(self) {
        if self.open.get_untracked() {
            self.open.set(false);
        }
    }

    /// The page root's classes: `app--drawer` while the drawer is open.
    pub fn app_class(self) -> &'static str {
        if self.is_open() { "app app--drawer" } else { "app" }
    }

    /// For a click anywhere on the page: one that opens a session (a row, a search hit) or a new chat from the drawer
    /// also closes it, including the session already on screen, which changes no path.
    pub fn close_on_choice(self, event: MouseEvent) {
        let chosen = event.target().and_then(|target| target.dyn_into::<Element>().ok()).is_some_and(|element| {
            element
                .closest("#sidebar :is(.sidebar__link, [data-testid=\"new-chat\"], .search__hit)")
                .ok()
                .flatten()
                .is_some()
        });
        if chosen {
            self.close();
        }
    }
}

impl Default for Drawer {
    fn default() -> Self {
        Self::new()
    }
}

/// The bar's title: the session on screen, "New chat" for a chat not started (or not titled yet), and the app's
/// name while the list that has the title is still loading.
pub fn bar_title(sessions: &[SessionSummary], current: Option<&str>) -> String {
    let Some(current) = current else { return t(Key::NewChat).to_owned() };
    match sessions.iter().find(|session| session.session_id == current) {
        Some(session) if session.title.is_empty() => t(Key::NewChat).to_owned(),
        Some(session) => session.title.clone(),
        None => "chatwire".to_owned(),
    }
}

/// The slim bar above the chat on a phone: the menu button (its three lines are drawn by the CSS) and the chat's
/// title. Hidden on a wider screen.
#[component]
pub fn ChatBar(
    /// The drawer the menu button opens.
    drawer: Drawer,
    /// What the chat is called (see [`bar_title`]).
    #[prop(into)]
    title: Signal<String>,
) -> impl IntoView {
    let menu = NodeRef::<leptos::html::Button>::new();
    // An element of the hidden drawer takes no focus, so the focus moves once the class is on the page: into the
    // drawer when it opens, back to the menu button when it closes, unless something else took it meanwhile (the
    // composer, say).
    Effect::new(move |was_open: Option<bool>| {
        let open = drawer.open.get();
        if was_open.is_some_and(|was_open| was_open != open) {
            request_animation_frame(move || {
                if open {
                    focus_first_of("#sidebar [data-testid=\"new-chat\"]");
                } else if focus_in_drawer_or_lost()
                    && let Some(menu) = menu.get_untracked()
                {
                    let _ = menu.focus();
                }
            });
        }
        open
    });
    // Esc closes it from anywhere, except in a text field, where Esc is the field's (the search box clears, a
    // rename is cancelled).
    let esc = window_event_listener(leptos::ev::keydown, move |event: KeyboardEvent| {
        if event.key() == "Escape"
            && drawer.open.get_untracked()
            && !event.default_prevented()
            && !from_text_field(&event)
        {
            drawer.close();
        }
    });
    on_cleanup(move || esc.remove());
    view! {
        <header class="chat-bar">
            <button
                type="button"
                class="chat-bar__menu"
                node_ref=menu
                aria-label=tr(Key::Sessions)
                aria-controls="sidebar"
                aria-expanded=move || if drawer.is_open() { "true" } else { "false" }
                data-testid="menu"
                on:click=move |_| drawer.open.update(|open| *open = !*open)
            ></button>
            // The page's heading on a phone, where the sidebar's is in the closed drawer.
            <h1 class="chat-bar__title">{move || title.get()}</h1>
        </header>
    }
}

fn from_text_field(event: &KeyboardEvent) -> bool {
    event
        .target()
        .and_then(|target| target.dyn_into::<Element>().ok())
        .is_some_and(|element| element.matches("input:not([type=\"checkbox\"]), textarea").unwrap_or(false))
}

fn focus_in_drawer_or_lost() -> bool {
    let document = document();
    document.active_element().is_none_or(|element| {
        document.body().is_some_and(|body| *body == element) || element.closest("#sidebar").ok().flatten().is_some()
    })
}

#[cfg(test)]
mod tests {
    use super::bar_title;
    use crate::protocol::{SessionStatus, SessionSummary};

    fn session(id: &str, title: &str) -> SessionSummary {
        SessionSummary {
            session_id: id.into(),
            title: title.into(),
            created_at: 0,
            updated_at: 0,
            status: SessionStatus::Idle,
            message_count: 0,
            last_seq: 0,
            usage: None,
            agent: None,
        }
    }

    #[test]
    fn the_bar_names_the_session_on_screen_or_says_what_it_is_waiting_for() {
        let sessions = [session("a", "Fix the build"), session("b", "")];
        for (current, shown) in [
            (None, "New chat"),
            (Some("a"), "Fix the build"),
            (Some("b"), "New chat"),
            (Some("not-loaded-yet"), "chatwire"),
        ] {
            assert_eq!(bar_title(&sessions, current), shown, "{current:?}");
        }
    }
}
