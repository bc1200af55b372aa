//! The search's hit list as a WASM chunk of its own (`cargo leptos --split`), fetched when the search field gets
//! the focus: the first page load carries only the field. Until the chunk arrives the list is an empty one that
//! says it is loading; a failed fetch is retried (see `LazyChunk`).

use leptos::prelude::*;
use wasm_split_helpers::{SplitLoaderError, wasm_split};

use super::HitsProps;
use crate::components::client_only::{IntoRowView, RowView};
use crate::components::lazy_chunk::LazyChunk;
use crate::i18n::{Key, tr};

type BuildHits = fn(HitsProps) -> RowView;

/// The split point: everything only this reaches goes into the chunk.
#[wasm_split(search_hits, fallible)]
fn builder() -> Result<BuildHits, SplitLoaderError> {
    Ok(super::hits::build_hits)
}

static HITS: LazyChunk<BuildHits> = LazyChunk::new("the search's hit list");

/// Starts fetching the chunk, if it is not there or on its way.
pub(super) fn prefetch() {
    let _ = HITS.get_or_load(builder);
}

pub(super) fn hits(props: HitsProps) -> RowView {
    if let Some(build) = HITS.get_or_load(builder) {
        return build(props);
    }
    (move || match HITS.get() {
        Some(build) => untrack(|| build(props)),
        None => loading(),
    })
    .into_row_view()
}

/// The list's place while the chunk comes.
fn loading() -> RowView {
    view! {
        <ul class="search__hits" data-testid="search-hits" aria-label=tr(Key::SearchResults) aria-busy="true">
            <li class="search__none">{tr(Key::Loading)}</li>
        </ul>
    }
    .into_row_view()
}
