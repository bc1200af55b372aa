//! The sidebar's settings: system notifications on or off. Turning them on is the click that lets the page ask the
//! browser for permission (browsers grant a permission prompt only to a user's gesture).

use leptos::prelude::*;

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
        NotifyPermission::Denied => Some("Blocked for this site in the browser's settings."),
        NotifyPermission::Unsupported => Some("This browser cannot show notifications here."),
        NotifyPermission::Unasked | NotifyPermission::Granted => None,
    };
    view! {
        <label
            class="setting"
            title="A system notification when a run finishes, fails or waits for you while this tab is in the background"
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
            <span>"Notify me when a run needs me"</span>
        </label>
        {move || note().map(|note| view! { <p class="setting__note">{note}</p> })}
    }
}
