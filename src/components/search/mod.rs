//! The sidebar's search box: asks the server as the user types (after a pause), lists the hits best first with
//! their session's title and the matching snippet, matches highlighted; Esc clears it.
//!
//! In the browser the hit list ([`hits`]) comes from a WASM chunk of its own ([`split`]), fetched when the field
//! gets the focus, so the first page load carries only the field.

mod hits;
#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
mod split;

use leptos::ev::KeyboardEvent;
use leptos::prelude::*;

use crate::components::client_only::RowView;
use crate::i18n::{Key, tr};
use crate::protocol::SearchHit;

/// How long typing must pause before the query is sent: one request per word typed, not one per key.
const DEBOUNCE: std::time::Duration = std::time::Duration::from_millis(150);

#[component]
pub fn SessionSearch(
    /// The hits of the last query answered; `None` while nothing is searched for.
    #[prop(into)]
    hits: Signal<Option<Vec<SearchHit>>>,
    /// Asked with the query as typed (an empty one ends the search).
    on_query: Callback<String>,
    /// Opens the session of a hit at its message.
    on_open: Callback<SearchHit>,
) -> impl IntoView {
    let text = RwSignal::new(String::new());
    let pending = StoredValue::new(None::<TimeoutHandle>);
    let ask = move |query: String| {
        if let Some(handle) = pending.get_value() {
            handle.clear();
        }
        if query.trim().is_empty() {
            pending.set_value(None);
            on_query.run(String::new());
            return;
        }
        pending.set_value(set_timeout_with_handle(move || on_query.run(query), DEBOUNCE).ok());
    };
    // The list is made when a search starts and dropped when it ends, not again for each answer.
    let searching = Memo::new(move |_| hits.with(Option::is_some));
    let on_key = move |event: KeyboardEvent| {
        if event.key() == "Escape" {
            event.prevent_default();
            text.set(String::new());
            ask(String::new());
        }
    };
    view! {
        <div class="search" role="search">
            <input
                class="search__field"
                type="search"
                placeholder=tr(Key::SearchPlaceholder)
                aria-label=tr(Key::SearchLabel)
                data-testid="search"
                prop:value=move || text.get()
                on:input=move |event| {
                    let value = event_target_value(&event);
                    text.set(value.clone());
                    ask(value);
                }
                on:keydown=on_key
                on:focus=move |_| prefetch_hits()
            />
            {move || searching.get().then(|| hits_view(HitsProps { hits, on_open }))}
        </div>
    }
}

/// What the hit list shows and reports to; `Copy`, so it crosses into the chunk as one value.
#[derive(Clone, Copy)]
pub struct HitsProps {
    /// The hits of the last query answered; `Some` while the list is shown.
    pub hits: Signal<Option<Vec<SearchHit>>>,
    /// Opens the session of a hit at its message.
    pub on_open: Callback<SearchHit>,
}

#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
fn hits_view(props: HitsProps) -> RowView {
    split::hits(props)
}

#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
fn prefetch_hits() {
    split::prefetch();
}

/// The server never shows hits (nothing is searched for while it renders), so it needs no chunk.
#[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
fn hits_view(props: HitsProps) -> RowView {
    hits::build_hits(props)
}

#[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
fn prefetch_hits() {}
