//! The page's colour theme: the one picked in this browser (the quick switcher's toggle), kept in `localStorage`
//! and set as `data-theme` on the root, where the stylesheet's `color-scheme` rules read it; else the system's.
//! The shell's inline script sets the stored one before the first paint (`app::THEME_SCRIPT`, same key).

use crate::client::{store, stored};
use crate::components::Theme;

const THEME_KEY: &str = "chatwire.theme";

/// The theme shown now.
pub fn current() -> Theme {
    stored(THEME_KEY).as_deref().and_then(Theme::parse).unwrap_or_else(system)
}

fn system() -> Theme {
    let dark = web_sys::window()
        .and_then(|window| window.match_media("(prefers-color-scheme: dark)").ok().flatten())
        .is_some_and(|query| query.matches());
    if dark { Theme::Dark } else { Theme::Light }
}

/// Shows the theme and remembers it for the next visit.
pub fn apply(theme: Theme) {
    if let Some(root) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.document_element()) {
        let _ = root.set_attribute("data-theme", theme.as_str());
    }
    store(THEME_KEY, theme.as_str());
}
