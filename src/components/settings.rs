//! The sidebar's settings: system notifications on or off, and the page's language. Turning notifications on is the
//! click that lets the page ask the browser for permission (browsers grant a permission prompt only to a user's
//! gesture).

use leptos::prelude::*;

use crate::i18n::{Key, Lang, lang, t, tr};

/// What the browser allows of system notifications for this site.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NotifyPermission {
    /// Not asked yet: turning the setting on asks.
    #[default]
    Unasked,
    Granted,
    /// Refused; only the browser's site settings can change that.
    Denied,
    /// The browser has no Notification API (or not in this context).
    Unsupported,
}

#[component]
pub fn NotificationSetting(
    /// True when system notifications are on.
    #[prop(into)]
    enabled: Signal<bool>,
    /// What the browser allows.
    #[prop(into)]
    permission: Signal<NotifyPermission>,
    /// Called with the setting the user asks for; `enabled` changes once it is in effect (permission granted).
    on_change: Callback<bool>,
) -> impl IntoView {
    let note = move || match permission.get() {
        NotifyPermission::Denied => Some(t(Key::NotifyBlocked)),
        NotifyPermission::Unsupported => Some(t(Key::NotifyUnsupported)),
        NotifyPermission::Unasked | NotifyPermission::Granted => None,
    };
    view! {
        <label
            class="setting"
            title=tr(Key::NotifyHint)
        >
            <input
                type="checkbox"
                data-testid="notify-setting"
                prop:checked=move || enabled.get()
                disabled=move || permission.get() == NotifyPermission::Unsupported
                on:change=move |event| {
                    let wanted = event_target_checked(&event);
                    // The box shows the setting in effect, not the click: turning it on waits for the permission.
                    let target: leptos::web_sys::HtmlInputElement = event_target(&event);
                    target.set_checked(enabled.get_untracked());
                    on_change.run(wanted);
                }
            />
            <span>{tr(Key::NotifyLabel)}</span>
        </label>
        {move || note().map(|note| view! { <p class="setting__note">{note}</p> })}
    }
}

/// The page's language. The server draws the page in the one the request asks for; a pick here applies at once,
/// without a reload, and is remembered for the next visit (`i18n::switch`).
#[component]
pub fn LanguageSetting() -> impl IntoView {
    view! {
        <label class="setting">
            <span>{tr(Key::LanguageLabel)}</span>
            <select
                data-testid="language-setting"
                prop:value=move || lang().tag()
                on:change=move |event| {
                    let picked = Lang::of_tag(&event_target_value(&event)).unwrap_or_default();
                    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
                    crate::i18n::switch(picked);
                    #[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
                    let _ = picked;
                }
            >
                {Lang::ALL
                    .map(|option| {
                        view! {
                            <option value=option.tag() lang=option.tag() selected=move || lang() == option>
                                {option.own_name()}
                            </option>
                        }
                    })}
            </select>
        </label>
    }
}
