//! The quick switcher: Ctrl+K (Cmd+K on a Mac) opens a modal palette over the sessions and the page's actions,
//! filtered as you type (fuzzy, by title); arrows move, Enter chooses, Esc closes, and the focus goes back to where
//! it was.
//!
//! In the browser the dialog comes from a WASM chunk of its own ([`split`]), fetched when the switcher is first
//! wanted (already when Ctrl or Cmd goes down), so the first page load does not carry it.

mod dialog;
mod entries;
#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
mod split;

use leptos::ev::KeyboardEvent;
use leptos::prelude::*;
use leptos::wasm_bindgen::JsCast;
use leptos::web_sys::HtmlElement;

pub use self::entries::{PaletteChoice, Theme};
use crate::components::client_only::RowView;
use crate::i18n::{Key, tr};
use crate::protocol::{AgentMode, ModelInfo, SessionSummary};

/// Whether the switcher is open, and where the focus was when it opened. Made by the page, which hands it to the
/// switcher and to whatever else opens it.
#[derive(Clone, Copy)]
pub struct Switcher {
    open: RwSignal<bool>,
    return_to: StoredValue<Option<HtmlElement>, LocalStorage>,
}

impl Switcher {
    pub fn new() -> Self {
        Switcher { open: RwSignal::new(false), return_to: StoredValue::new_local(None) }
    }

    /// True while the dialog is open (tracked).
    pub fn is_open(self) -> bool {
        self.open.get()
    }

    pub fn open(self) {
        if self.open.get_untracked() {
            return;
        }
        let focused = document().active_element().and_then(|element| element.dyn_into::<HtmlElement>().ok());
        self.return_to.set_value(focused);
        prefetch_dialog();
        self.open.set(true);
    }

    /// Closes the dialog and gives the focus back to the element that had it, if that is still on the page.
    pub fn close(self) {
        if !self.open.get_untracked() {
            return;
        }
        self.open.set(false);
        if let Some(element) = self.return_to.try_update_value(Option::take).flatten()
            && element.is_connected()
        {
            let _ = element.focus();
        }
    }

    pub fn toggle(self) {
        if self.open.get_untracked() { self.close() } else { self.open() }
    }
}

impl Default for Switcher {
    fn default() -> Self {
        Self::new()
    }
}

/// What the dialog shows and reports to; `Copy`, so it crosses into the chunk as one value.
#[derive(Clone, Copy)]
pub struct DialogProps {
    pub sessions: Signal<Vec<SessionSummary>>,
    pub current: Signal<Option<String>>,
    pub models: Signal<Vec<ModelInfo>>,
    pub model: Signal<Option<String>>,
    pub mode: Signal<AgentMode>,
    pub theme: Signal<Theme>,
    /// An entry was chosen; the switcher has closed.
    pub on_choose: Callback<PaletteChoice>,
    pub on_close: Callback<()>,
}

/// True for the switcher's shortcut: Ctrl+K, or Cmd+K on a Mac. The K key also counts by its place on the keyboard,
/// for layouts where it types another letter (Cyrillic, Greek).
fn is_shortcut(event: &KeyboardEvent) -> bool {
    (event.ctrl_key() || event.meta_key())
        && !event.alt_key()
        && !event.shift_key()
        && (event.key().eq_ignore_ascii_case("k") || event.code() == "KeyK")
}

#[component]
pub fn QuickSwitcher(
    /// Open or closed; the page's, so that a button elsewhere can open it too.
    switcher: Switcher,
    /// The sessions to go to.
    #[prop(into)]
    sessions: Signal<Vec<SessionSummary>>,
    /// The session on screen.
    #[prop(into)]
    current: Signal<Option<String>>,
    /// The configured models; each is an action when there are several.
    #[prop(into)]
    models: Signal<Vec<ModelInfo>>,
    /// The model the next message runs on.
    #[prop(into)]
    model: Signal<Option<String>>,
    /// The mode of the next message; the other one is an action.
    #[prop(into)]
    mode: Signal<AgentMode>,
    /// The theme shown; the other one is an action.
    #[prop(into)]
    theme: Signal<Theme>,
    /// Called with the chosen entry's action, after the switcher closed (and gave the focus back).
    on_choose: Callback<PaletteChoice>,
) -> impl IntoView {
    // Effects run only in the browser: the server adds no listener.
    Effect::new(move |_| {
        let handle = window_event_listener(leptos::ev::keydown, move |event| {
            if is_shortcut(&event) {
                event.prevent_default();
                switcher.toggle();
            } else if matches!(event.key().as_str(), "Control" | "Meta") {
                prefetch_dialog();
            }
        });
        on_cleanup(move || handle.remove());
    });
    let props = DialogProps {
        sessions,
        current,
        models,
        model,
        mode,
        theme,
        on_choose: Callback::new(move |choice| {
            switcher.close();
            on_choose.run(choice);
        }),
        on_close: Callback::new(move |()| switcher.close()),
    };
    move || switcher.is_open().then(|| dialog_view(props))
}

/// A button that opens the switcher, for the mouse and for finding out that it exists.
#[component]
pub fn SwitcherButton(
    /// The switcher it opens.
    switcher: Switcher,
) -> impl IntoView {
    view! {
        <button
            class="button button--ghost switcher-button"
            type="button"
            title=tr(Key::SwitcherHint)
            aria-keyshortcuts="Control+K Meta+K"
            data-testid="switcher-button"
            on:click=move |_| switcher.open()
            on:pointerenter=move |_| prefetch_dialog()
        >
            {tr(Key::Switch)}
            <kbd class="switcher-button__keys">"Ctrl K"</kbd>
        </button>
    }
}

#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
fn dialog_view(props: DialogProps) -> RowView {
    split::dialog(props)
}

#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
fn prefetch_dialog() {
    split::prefetch();
}

/// The server never opens the switcher; its own tests build the dialog directly.
#[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
fn dialog_view(props: DialogProps) -> RowView {
    dialog::build_dialog(props)
}

#[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
fn prefetch_dialog() {}
