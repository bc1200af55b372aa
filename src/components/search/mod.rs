//! The sidebar's search box: asks the server as the user types (after a pause), lists the hits best first with
//! their session's title and the matching snippet, matches highlighted; Esc clears it.

use leptos::either::Either;
use leptos::ev::KeyboardEvent;
use leptos::prelude::*;

use crate::protocol::{SearchHit, SnippetPiece};

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
                placeholder="Search messages"
                aria-label="Search sessions and messages (Esc clears)"
                data-testid="search"
                prop:value=move || text.get()
                on:input=move |event| {
                    let value = event_target_value(&event);
                    text.set(value.clone());
                    ask(value);
                }
                on:keydown=on_key
            />
            <Show when=move || hits.with(Option::is_some)>
                <ul class="search__hits" data-testid="search-hits" aria-label="Search results">
                    <For
                        each=move || hits.get().unwrap_or_default().into_iter().enumerate()
                        key=|(index, hit)| (*index, hit.session_id.clone(), hit.seq)
                        let:entry
                    >
                        <Hit hit=entry.1 on_open/>
                    </For>
                    <Show when=move || hits.with(|hits| hits.as_ref().is_some_and(Vec::is_empty))>
                        <li class="search__none">"No matches."</li>
                    </Show>
                </ul>
            </Show>
        </div>
    }
}

#[component]
fn Hit(
    /// The hit this entry shows.
    hit: SearchHit,
    /// Opens it.
    on_open: Callback<SearchHit>,
) -> impl IntoView {
    let title = if hit.title.is_empty() { "New chat".to_owned() } else { hit.title.clone() };
    let snippet = hit.snippet.clone();
    let shown = StoredValue::new(hit);
    view! {
        <li>
            <button
                class="search__hit"
                type="button"
                data-testid="search-hit"
                on:click=move |_| on_open.run(shown.get_value())
            >
                <span class="search__title">{title}</span>
                <span class="search__snippet">{snippet.into_iter().map(piece).collect_view()}</span>
            </button>
        </li>
    }
}

/// A piece of a snippet as text nodes: the browser never parses what a message said as markup.
fn piece(piece: SnippetPiece) -> impl IntoView {
    if piece.highlight { Either::Left(view! { <mark>{piece.text}</mark> }) } else { Either::Right(piece.text) }
}
