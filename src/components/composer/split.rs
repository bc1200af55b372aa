//! The suggestion list's entries and the slash commands' reading ([`super::suggest`]) as a WASM chunk of its own
//! (`cargo leptos --split`), fetched when the message box gets the focus or a `/` or `@` starts a word. Until it
//! arrives the list stays closed and typing goes on as usual; a command sent meanwhile waits for it. A failed fetch
//! is retried (see `LazyChunk`).

use wasm_split_helpers::{SplitLoaderError, wasm_split};

use super::suggest::Suggester;
use crate::components::lazy_chunk::LazyChunk;

/// The split point: everything only this reaches goes into the chunk.
#[wasm_split(composer_suggestions, fallible)]
fn suggester() -> Result<Suggester, SplitLoaderError> {
    Ok(super::suggest::SUGGESTER)
}

static SUGGESTER: LazyChunk<Suggester> = LazyChunk::new("the composer's suggestions");

/// The chunk's functions once loaded, starting the fetch if it is not there or on its way (untracked).
pub(super) fn get_or_load() -> Option<Suggester> {
    SUGGESTER.get_or_load(suggester)
}

/// The chunk's functions once loaded, tracked: what reads them re-runs when the chunk arrives. Fetches nothing.
pub(super) fn get() -> Option<Suggester> {
    SUGGESTER.get()
}
