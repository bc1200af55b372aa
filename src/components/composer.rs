//! The composer: a textarea where Enter sends and Shift+Enter starts a new line.

use leptos::ev::{KeyboardEvent, SubmitEvent};
use leptos::prelude::*;

#[component]
pub fn Composer(
    /// Called with the trimmed text when the user sends.
    on_send: Callback<String>,
    /// True while sending is not possible (e.g. before the page is interactive).
    #[prop(into)]
    disabled: Signal<bool>,
) -> impl IntoView {
    let draft = RwSignal::new(String::new());
    let send = move || {
        let text = draft.with_untracked(|d| d.trim().to_owned());
        if text.is_empty() || disabled.get_untracked() {
            return;
        }
        on_send.run(text);
        draft.set(String::new());
    };
    let on_submit = move |event: SubmitEvent| {
        event.prevent_default();
        send();
    };
    let on_keydown = move |event: KeyboardEvent| {
        // While an IME is composing, Enter confirms the composition and must not send.
        if event.key() == "Enter" && !event.shift_key() && !event.is_composing() {
            event.prevent_default();
            send();
        }
    };
    view! {
        <form class="composer" data-testid="composer" on:submit=on_submit>
            <textarea
                class="composer__input"
                name="message"
                rows="3"
                placeholder="Ask the agent… (Enter sends, Shift+Enter for a new line)"
                aria-label="Message"
                prop:value=move || draft.get()
                on:input=move |event| draft.set(event_target_value(&event))
                on:keydown=on_keydown
            ></textarea>
            <div class="composer__actions">
                <button
                    class="button button--primary"
                    type="submit"
                    disabled=move || disabled.get() || draft.with(|d| d.trim().is_empty())
                >
                    "Send"
                </button>
            </div>
        </form>
    }
}
