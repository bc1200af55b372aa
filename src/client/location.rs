//! The page's address in the browser: the path it shows, changed by the page's own links, by the client and by back
//! and forward, without reloading the page.
//!
//! The page has two paths (`/` and `/s/{id}`) and one view for both, so a router is not needed; this is the part of
//! one the page used (with `leptos_router` and `leptos_meta` the module was 44,018 B brotli larger, docs/decisions.md).

use leptos::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{HtmlAnchorElement, MouseEvent};

use crate::app::session_in_path;

/// The window's path now.
pub fn current() -> String {
    window().location().pathname().unwrap_or_else(|_| "/".to_owned())
}

/// Shows `to` in the address bar (a new history entry, or in place of the current one) and in `path`.
pub fn navigate(path: RwSignal<String>, to: &str, replace: bool) {
    if let Ok(history) = window().history() {
        let pushed = if replace {
            history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(to))
        } else {
            history.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(to))
        };
        if pushed.is_err() {
            // A browser that refuses (too many pushes in a burst) still shows the page asked for.
            web_sys::console::warn_1(&format!("could not put {to} in the address bar").into());
        }
    }
    if path.with_untracked(|shown| shown != to) {
        path.set(to.to_owned());
    }
}

/// Keeps `path` on the window's path: back and forward, and clicks on the page's own links (a session in the
/// sidebar, New chat), which open in place as a plain click; a click with a modifier, another button, or on a link
/// elsewhere (an export, an attachment) is the browser's.
pub fn watch(path: RwSignal<String>) {
    std::mem::forget(window_event_listener_untyped("popstate", move |_| path.set(current())));
    std::mem::forget(window_event_listener_untyped("click", move |event| {
        let Ok(event) = event.dyn_into::<MouseEvent>() else { return };
        if event.default_prevented()
            || event.button() != 0
            || event.meta_key()
            || event.ctrl_key()
            || event.shift_key()
            || event.alt_key()
        {
            return;
        }
        let Some(anchor) = event
            .target()
            .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
            .and_then(|element| element.closest("a[href]").ok().flatten())
            .and_then(|element| element.dyn_into::<HtmlAnchorElement>().ok())
        else {
            return;
        };
        let same_origin = window().location().origin().is_ok_and(|origin| anchor.origin() == origin);
        let to = anchor.pathname();
        let in_page = to == "/" || session_in_path(&to).is_some();
        if !same_origin || !in_page || !anchor.target().is_empty() || anchor.has_attribute("download") {
            return;
        }
        event.prevent_default();
        navigate(path, &to, false);
    }));
}
