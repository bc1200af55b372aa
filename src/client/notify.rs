//! Telling the user that a run needs them while they are not looking at its session (the tab hidden, or another
//! session on screen): a "(N) " in front of the tab title, a dot on the favicon and a mark on the session's row in
//! the sidebar until the session is seen (the tab visible with it open), and, when the setting is on, a system
//! notification whose click brings the window forward on that session. The session on screen is told of by its own
//! frames, every session by the activity feed (`client::activity`); an event both bring counts once.
//!
//! Which frames are such events, and how they are counted, is `chat_state::attention`; this is the browser's half:
//! visibility, the Notification API, the title and the icon, the stored setting.

use std::cell::RefCell;

use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Notification, NotificationOptions, NotificationPermission};

use crate::app::PageState;
use crate::chat_state::attention::{Attention, AttentionEvent, Unseen};
use crate::client::page_hidden;
use crate::components::NotifyPermission;
use crate::protocol::{Activity, ChatFrame};

/// Where the browser remembers the setting: "on" or "off".
const SETTING_KEY: &str = "chatwire.notify";

/// The page's icon with a dot in the corner: the same drawing as `public/favicon.svg`.
const ICON_WITH_DOT: &str = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'%3E\
%3Crect width='32' height='32' rx='7' fill='%232f6feb'/%3E\
%3Cpath d='M8 11h16M8 16h11M8 21h14' stroke='%23fff' stroke-width='2.6' stroke-linecap='round'/%3E\
%3Ccircle cx='25' cy='7' r='6.5' fill='%23e5484d' stroke='%23fff' stroke-width='2'/%3E%3C/svg%3E";

/// The unseen events, and the favicon's own address to put back.
#[derive(Default)]
pub struct Notices {
    unseen: RefCell<Unseen>,
    plain_icon: RefCell<Option<String>>,
}

impl Notices {
    /// Looks at frames of `session_id` as they arrive (before they are applied: a hidden tab gets no animation
    /// frames, so the batcher holds them until it is shown). `open` shows a session, for a notification's click.
    pub fn frames(
        &self,
        state: PageState,
        session_id: &str,
        frames: &[ChatFrame],
        open: impl Fn(String) + Copy + 'static,
    ) {
        for frame in frames {
            let Some(event) = Attention::of(frame) else { continue };
            self.take(state, session_id, &event, !page_hidden(), open);
        }
    }

    /// Looks at an event of the activity feed: it counts unless the user looks at its session as it comes (the tab
    /// visible with that session on screen).
    pub fn activity(&self, state: PageState, activity: &Activity, open: impl Fn(String) + Copy + 'static) {
        let (Some(session_id), Some(event)) = (activity.session_id(), Attention::of_activity(activity)) else {
            return;
        };
        let on_screen = state.session_id.with_untracked(|shown| shown.as_deref() == Some(session_id));
        self.take(state, session_id, &event, on_screen && !page_hidden(), open);
    }

    fn take(
        &self,
        state: PageState,
        session_id: &str,
        event: &AttentionEvent,
        looking: bool,
        open: impl Fn(String) + Copy + 'static,
    ) {
        if !self.unseen.borrow_mut().note(session_id, event, looking) {
            return;
        }
        self.show_count(state);
        if state.notify.get_untracked() {
            notify(state, session_id, &event.attention, open);
        }
    }

    /// The tab is visible with the session on screen: its events are seen.
    pub fn look(&self, state: PageState) {
        if page_hidden() {
            return;
        }
        let Some(session_id) = state.session_id.get_untracked() else { return };
        self.unseen.borrow_mut().seen(&session_id);
        self.show_count(state);
    }

    fn show_count(&self, state: PageState) {
        let marked = self.unseen.borrow().sessions();
        if state.unseen_sessions.with_untracked(|shown| *shown != marked) {
            state.unseen_sessions.set(marked);
        }
        let total = self.unseen.borrow().total();
        if state.unseen.get_untracked() == total {
            return;
        }
        state.unseen.set(total);
        let Some(link) = document().query_selector("link[rel~='icon']").ok().flatten() else { return };
        let mut plain = self.plain_icon.borrow_mut();
        let plain = plain.get_or_insert_with(|| link.get_attribute("href").unwrap_or_else(|| "/favicon.svg".into()));
        let _ = link.set_attribute("href", if total > 0 { ICON_WITH_DOT } else { plain.as_str() });
    }
}

fn supported() -> bool {
    js_sys::Reflect::has(&window(), &"Notification".into()).unwrap_or(false)
}

fn permission() -> NotifyPermission {
    if !supported() {
        return NotifyPermission::Unsupported;
    }
    match Notification::permission() {
        NotificationPermission::Granted => NotifyPermission::Granted,
        NotificationPermission::Denied => NotifyPermission::Denied,
        NotificationPermission::Default => NotifyPermission::Unasked,
        // A value newer than web-sys knows: treat it as not asked, so the setting asks again.
        _ => NotifyPermission::Unasked,
    }
}

/// Reads the stored setting and the browser's permission, once the page is interactive.
pub fn load_setting(state: PageState) {
    let permission = permission();
    state.notify_permission.set(permission);
    let stored = crate::client::stored(SETTING_KEY);
    state.notify.set(permission == NotifyPermission::Granted && stored.as_deref() == Some("on"));
}

/// Turns the setting on or off. Called from the setting's change event: asking for permission needs that gesture,
/// and the request is made before anything is awaited.
pub fn set_setting(state: PageState, on: bool) {
    if !on {
        crate::client::store(SETTING_KEY, "off");
        state.notify.set(false);
        return;
    }
    match permission() {
        NotifyPermission::Granted => {
            crate::client::store(SETTING_KEY, "on");
            state.notify.set(true);
        }
        NotifyPermission::Unsupported | NotifyPermission::Denied => state.notify_permission.set(permission()),
        NotifyPermission::Unasked => {
            let Ok(asked) = Notification::request_permission() else { return };
            leptos::task::spawn_local(async move {
                let _ = JsFuture::from(asked).await;
                let permission = permission();
                state.notify_permission.set(permission);
                if permission == NotifyPermission::Granted {
                    crate::client::store(SETTING_KEY, "on");
                    state.notify.set(true);
                }
            });
        }
    }
}

/// A system notification for the session's event; its click brings the window forward on that session. The title
/// is the session's; a session this tab has just created may not be in its list yet, which is then loaded first.
fn notify(state: PageState, session_id: &str, attention: &Attention, open: impl Fn(String) + 'static) {
    if permission() != NotifyPermission::Granted {
        return;
    }
    let (session_id, body) = (session_id.to_owned(), attention.body());
    leptos::task::spawn_local(async move {
        let title = match session_title(state, &session_id) {
            Some(title) => title,
            None => {
                crate::client::follow::refresh_sessions(state).await;
                session_title(state, &session_id).unwrap_or_else(|| "chatwire".to_owned())
            }
        };
        let options = NotificationOptions::new();
        options.set_body(&body);
        // One notification per session: a newer event replaces the older one instead of piling up.
        options.set_tag(&format!("chatwire-{session_id}"));
        let Ok(notification) = Notification::new_with_options(&title, &options) else { return };
        let shown = notification.clone();
        let on_click = Closure::once_into_js(move || {
            let _ = window().focus();
            shown.close();
            open(session_id);
        });
        notification.set_onclick(Some(on_click.unchecked_ref()));
    });
}

fn session_title(state: PageState, session_id: &str) -> Option<String> {
    state.sessions.with_untracked(|sessions| {
        sessions.iter().find(|s| s.session_id == session_id).map(|s| s.title.clone()).filter(|t| !t.is_empty())
    })
}
