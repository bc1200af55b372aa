//! The composer: a textarea where Enter sends and Shift+Enter starts a new line.

use leptos::ev::{KeyboardEvent, SubmitEvent};
use leptos::prelude::*;

#[component]
pub fn Composer(
    /// Called with the trimmed text when the user sends (while a run is active, it steers the run).
    on_send: Callback<String>,
    /// Called when the user asks to stop the running agent (Stop button or Esc).
    on_stop: Callback<()>,
    /// True while a run is active.
    #[prop(into)]
    running: Signal<bool>,
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
        } else if event.key() == "Escape" && running.get_untracked() {
            on_stop.run(());
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
                <Show when=move || running.get()>
                    <button class="button button--stop" type="button" on:click=move |_| on_stop.run(())>
                        "Stop"
                    </button>
                </Show>
                <button
                    class="button button--primary"
                    type="submit"
                    disabled=move || disabled.get() || draft.with(|d| d.trim().is_empty())
                >
                    {move || if running.get() { "Steer" } else { "Send" }}
                </button>
            </div>
        </form>
    }
}
