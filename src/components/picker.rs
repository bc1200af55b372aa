//! A native `<select>` of names: the model picker and New chat's agent picker. Keyboard and screen-reader behaviour
//! come with the element, and the two pickers share one copy of this code in the WASM.

use leptos::prelude::*;

#[component]
pub fn Picker(
    /// The choices, in order: each a name (what is shown and picked) and a hint shown on hover (may be empty).
    options: Signal<Vec<(String, String)>>,
    /// The picked name.
    picked: Signal<Option<String>>,
    /// Called with the name the user picks.
    on_pick: Callback<String>,
    /// What is picked (`model`, `agent`): the element's `name`.
    what: &'static str,
    /// The element's `data-testid`.
    testid: &'static str,
    /// The accessible name.
    label: &'static str,
    /// What the pick does, as a tooltip.
    title: &'static str,
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
                    .map(|(name, hint)| {
                        let (value, this) = (name.clone(), name.clone());
                        view! {
                            <option
                                value=value
                                title=hint
                                prop:selected=move || picked.with(|picked| picked.as_deref() == Some(this.as_str()))
                            >
                                {name}
                            </option>
                        }
                    })
                    .collect_view()
            }}
        </select>
    }
}
