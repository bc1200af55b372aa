//! The search's hit list: each hit's session title and its snippet, the matches highlighted, best first; a click
//! opens the hit. In the browser it comes from a WASM chunk of its own (see [`super::split`]).

use leptos::either::Either;
use leptos::prelude::*;

use super::HitsProps;
use crate::components::client_only::{IntoRowView, RowView};
use crate::i18n::{Key, t, tr};
use crate::protocol::{SearchHit, SnippetPiece};

pub fn build_hits(props: HitsProps) -> RowView {
    let HitsProps { hits, on_open } = props;
    view! {
        <ul class="search__hits" data-testid="search-hits" aria-label=tr(Key::SearchResults)>
            <For
                each=move || hits.get().unwrap_or_default().into_iter().enumerate()
                key=|(index, hit)| (*index, hit.session_id.clone(), hit.seq)
                let:entry
            >
                <Hit hit=entry.1 on_open/>
            </For>
            <Show when=move || hits.with(|hits| hits.as_ref().is_some_and(Vec::is_empty))>
                <li class="search__none">{tr(Key::NoMatches)}</li>
            </Show>
        </ul>
    }
    .into_row_view()
}

#[component]
fn Hit(
    /// The hit this entry shows.
    hit: SearchHit,
    /// Opens it.
    on_open: Callback<SearchHit>,
) -> impl IntoView {
    let title = if hit.title.is_empty() { t(Key::NewChat).to_owned() } else { hit.title.clone() };
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
