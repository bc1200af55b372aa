//! A JSON value as a collapsible tree: objects and arrays fold (the first levels start open), leaves are coloured
//! by type. All of it is text: keys and strings are never markup.

use leptos::prelude::*;

use crate::components::client_only::{IntoRowView, RowView};
use serde_json::Value;

use crate::i18n::{Key, tr};

/// Levels open from the start; deeper ones start folded.
const OPEN_LEVELS: usize = 2;
/// Strings longer than this are cut, with "show all" on the leaf.
const LONG_STRING: usize = 400;

#[component]
pub fn JsonTree(value: Value) -> impl IntoView {
    view! { <div class="json-tree">{node(None, value, 0)}</div> }
}

fn key_view(key: Option<String>) -> impl IntoView {
    key.map(|key| view! { <span class="json-tree__key">{key}</span><span class="json-tree__colon">": "</span> })
}

fn node(key: Option<String>, value: Value, depth: usize) -> RowView {
    match value {
        Value::Object(map) if !map.is_empty() => {
            let count = map.len();
            let children: Vec<(String, Value)> = map.into_iter().collect();
            view! {
                <details class="json-tree__node" open=depth < OPEN_LEVELS>
                    <summary>
                        {key_view(key)}
                        <span class="json-tree__meta">{format!("{{…}} {count} {}", if count == 1 { "key" } else { "keys" })}</span>
                    </summary>
                    <ul class="json-tree__children">
                        {children
                            .into_iter()
                            .map(|(key, value)| view! { <li>{node(Some(key), value, depth + 1)}</li> })
                            .collect_view()}
                    </ul>
                </details>
            }
            .into_row_view()
        }
        Value::Array(items) if !items.is_empty() => {
            let count = items.len();
            view! {
                <details class="json-tree__node" open=depth < OPEN_LEVELS>
                    <summary>
                        {key_view(key)}
                        <span class="json-tree__meta">{format!("[…] {count} {}", if count == 1 { "item" } else { "items" })}</span>
                    </summary>
                    <ul class="json-tree__children">
                        {items
                            .into_iter()
                            .enumerate()
                            .map(|(i, value)| view! { <li>{node(Some(i.to_string()), value, depth + 1)}</li> })
                            .collect_view()}
                    </ul>
                </details>
            }
            .into_row_view()
        }
        leaf => view! { <div class="json-tree__leaf">{key_view(key)}{leaf_view(leaf)}</div> }.into_row_view(),
    }
}

fn leaf_view(value: Value) -> RowView {
    match value {
        Value::String(text) if text.chars().count() > LONG_STRING => {
            let expanded = RwSignal::new(false);
            let short: String = text.chars().take(LONG_STRING).collect();
            view! {
                <span class="json-tree__string">
                    {move || if expanded.get() { text.clone() } else { format!("{short}…") }}
                </span>
                <Show when=move || !expanded.get()>
                    <button class="button button--ghost tool__more" type="button" on:click=move |_| expanded.set(true)>
                        {tr(Key::ShowAllShort)}
                    </button>
                </Show>
            }
            .into_row_view()
        }
        Value::String(text) => view! { <span class="json-tree__string">{text}</span> }.into_row_view(),
        Value::Number(number) => view! { <span class="json-tree__number">{number.to_string()}</span> }.into_row_view(),
        Value::Bool(flag) => view! { <span class="json-tree__bool">{flag.to_string()}</span> }.into_row_view(),
        Value::Null => view! { <span class="json-tree__null">"null"</span> }.into_row_view(),
        Value::Object(_) => view! { <span class="json-tree__meta">"{}"</span> }.into_row_view(),
        Value::Array(_) => view! { <span class="json-tree__meta">"[]"</span> }.into_row_view(),
    }
}
