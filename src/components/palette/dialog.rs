//! The quick switcher's dialog: a combobox (the text field, which keeps the focus) over a listbox of entries, the
//! active one named by `aria-activedescendant` (the ARIA 1.2 combobox pattern), so screen readers read the entry
//! the arrows land on while typing goes on in the field.

use leptos::either::Either;
use leptos::ev::{KeyboardEvent, MouseEvent};
use leptos::prelude::*;

use super::DialogProps;
use super::entries::{PaletteSource, Ranked, entries, rank, segments};
use crate::components::client_only::{IntoRowView, RowView};
use crate::i18n::{Key, tr};

const LIST_ID: &str = "palette-list";

fn option_id(index: usize) -> String {
    format!("palette-option-{index}")
}

/// The dialog, built when the switcher opens.
pub fn build_dialog(props: DialogProps) -> RowView {
    let query = RwSignal::new(String::new());
    let active = RwSignal::new(0_usize);
    let ranked = Memo::new(move |_| {
        let all = props.sessions.with(|sessions| {
            props.current.with(|current| {
                props.models.with(|models| {
                    props.model.with(|model| {
                        entries(&PaletteSource {
                            sessions,
                            current: current.as_deref(),
                            models,
                            model: model.as_deref(),
                            mode: props.mode.get(),
                            theme: props.theme.get(),
                        })
                    })
                })
            })
        });
        query.with(|query| rank(all, query))
    });
    let count = move || ranked.with(Vec::len);
    let choose = move |index: usize| {
        if let Some(choice) = ranked.with_untracked(|ranked| ranked.get(index).map(|r| r.entry.choice.clone())) {
            props.on_choose.run(choice);
        }
    };
    let step = move |by: isize| {
        let len = ranked.with_untracked(Vec::len);
        if len > 0 {
            active.update(|at| *at = (*at as isize + by).rem_euclid(len as isize) as usize);
        }
    };
    let on_keydown = move |event: KeyboardEvent| match event.key().as_str() {
        "ArrowDown" => {
            event.prevent_default();
            step(1);
        }
        "ArrowUp" => {
            event.prevent_default();
            step(-1);
        }
        "Enter" if !event.is_composing() => {
            event.prevent_default();
            choose(active.get_untracked());
        }
        "Escape" => {
            event.prevent_default();
            // The composer's Esc stops a run; this one only closes the switcher.
            event.stop_propagation();
            props.on_close.run(());
        }
        // The field is the dialog's only focusable element: Tab and Shift+Tab stay in it (a modal traps focus).
        "Tab" => event.prevent_default(),
        _ => {}
    };
    let input = NodeRef::<leptos::html::Input>::new();
    Effect::new(move || {
        if let Some(field) = input.get() {
            let _ = field.focus();
        }
    });
    let list = NodeRef::<leptos::html::Ul>::new();
    // The active entry stays in view as the arrows move it.
    Effect::new(move || {
        let index = active.get();
        ranked.track();
        let Some(list) = list.get() else { return };
        let Some(option) = list.children().item(index as u32) else { return };
        let option: &leptos::web_sys::HtmlElement = leptos::wasm_bindgen::JsCast::unchecked_ref(&option);
        let (top, bottom) = (option.offset_top(), option.offset_top() + option.offset_height());
        if top < list.scroll_top() {
            list.set_scroll_top(top);
        } else if bottom > list.scroll_top() + list.client_height() {
            list.set_scroll_top(bottom - list.client_height());
        }
    });
    let on_backdrop = move |event: MouseEvent| {
        // Only a press on the backdrop itself, not one inside the dialog that bubbled up.
        if event.target() == event.current_target() {
            props.on_close.run(());
        }
    };
    view! {
        <div class="palette" data-testid="palette" on:mousedown=on_backdrop>
            <div class="palette__dialog" role="dialog" aria-modal="true" aria-label=tr(Key::QuickSwitcher)>
                <input
                    class="palette__input"
                    type="text"
                    role="combobox"
                    aria-label=tr(Key::PaletteLabel)
                    aria-expanded="true"
                    aria-controls=LIST_ID
                    aria-autocomplete="list"
                    aria-activedescendant=move || (count() > 0).then(|| option_id(active.get()))
                    autocomplete="off"
                    spellcheck="false"
                    placeholder=tr(Key::PalettePlaceholder)
                    node_ref=input
                    prop:value=move || query.get()
                    on:input=move |event| {
                        query.set(event_target_value(&event));
                        active.set(0);
                    }
                    on:keydown=on_keydown
                />
                <ul class="palette__list" id=LIST_ID role="listbox" aria-label=tr(Key::SessionsAndActions) node_ref=list>
                    {move || {
                        ranked
                            .get()
                            .into_iter()
                            .enumerate()
                            .map(|(index, ranked)| entry_view(index, ranked, active, choose))
                            .collect_view()
                    }}
                </ul>
                <Show when=move || count() == 0>
                    <p class="palette__empty">{tr(Key::NothingMatches)}</p>
                </Show>
                <p class="palette__hint" aria-hidden="true">{tr(Key::PaletteHint)}</p>
            </div>
        </div>
    }
    .into_row_view()
}

fn entry_view(
    index: usize,
    ranked: Ranked,
    active: RwSignal<usize>,
    choose: impl Fn(usize) + 'static,
) -> impl IntoView {
    let Ranked { entry, positions } = ranked;
    let is_active = move || active.get() == index;
    let label = segments(&entry.label, &positions)
        .into_iter()
        .map(|(text, hit)| if hit { Either::Left(view! { <mark>{text}</mark> }) } else { Either::Right(text) })
        .collect_view();
    view! {
        <li
            class="palette__option"
            class:palette__option--active=is_active
            id=option_id(index)
            role="option"
            aria-selected=move || if is_active() { "true" } else { "false" }
            data-kind=entry.kind.as_str()
            // A press must not take the focus from the field.
            on:mousedown=|event: MouseEvent| event.prevent_default()
            on:mousemove=move |_| {
                if !is_active() {
                    active.set(index);
                }
            }
            on:click=move |_| choose(index)
        >
            <span class="palette__label">{label}</span>
            {entry.detail.map(|detail| view! { <span class="palette__detail">{detail}</span> })}
            <span class="palette__kind">{entry.kind.label()}</span>
        </li>
    }
}
