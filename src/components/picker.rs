//! A native `<select>`: the model picker, New chat's agent picker and the pickers of an agent's options. Keyboard and
//! screen-reader behaviour come with the element, and the pickers share one copy of this code in the WASM.

use leptos::prelude::*;

#[component]
pub fn Picker(
    /// The choices, in order: each a value (what is picked), what is shown, and a hint shown on hover (may be empty).
    options: Signal<Vec<(String, String, String)>>,
    /// The picked value.
    picked: Signal<Option<String>>,
    /// Called with the value the user picks.
    on_pick: Callback<String>,
    /// What is picked (`model`, `agent`, an agent's option): the element's `name`.
    #[prop(into)]
    what: String,
    /// The element's `data-testid`.
    #[prop(into)]
    testid: String,
    /// The accessible name.
    #[prop(into)]
    label: Signal<String>,
    /// What the pick does, as a tooltip.
    #[prop(into)]
    title: Signal<String>,
) -> impl IntoView {
    view! {
        <select
            class="model-picker"
            name=what
            aria-label=label
            title=title
            data-testid=testid
            on:change=move |event| on_pick.run(event_target_value(&event))
        >
            {move || {
                options
                    .get()
                    .into_iter()
                    .map(|(value, shown, hint)| {
                        let this = value.clone();
                        view! {
                            <option
                                value=value
                                title=hint
                                prop:selected=move || picked.with(|picked| picked.as_deref() == Some(this.as_str()))
                            >
                                {shown}
                            </option>
                        }
                    })
                    .collect_view()
            }}
        </select>
    }
}
