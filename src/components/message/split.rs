//! The transcript's message rows as a WASM chunk of their own (`cargo leptos --split`): the first page load carries
//! the transcript's frame, not what draws a message (its parts, version arrows, Edit, Regenerate, Restore, Fork,
//! the editor, usage, attachments and their lightbox). The chunk is fetched when a session opens or the message box
//! gets the focus, so it is usually there before the first row is; until it is, a message is an empty article of
//! its role, its data kept in signals meanwhile, and the row is built whole once the chunk arrives. A failed fetch
//! is retried (see `LazyChunk`).

use leptos::prelude::*;
use wasm_split_helpers::{SplitLoaderError, wasm_split};

use crate::components::client_only::{IntoRowView, RowView};
use crate::components::lazy_chunk::LazyChunk;
use crate::components::rows::MessageRow;

type BuildMessage = fn(MessageRow) -> RowView;

/// The split point: everything only this reaches goes into the chunk.
#[wasm_split(message_rows, fallible)]
fn builder() -> Result<BuildMessage, SplitLoaderError> {
    Ok(super::build_message)
}

static MESSAGES: LazyChunk<BuildMessage> = LazyChunk::new("the transcript's message rows");

/// Starts fetching the chunk, if it is not there or on its way.
pub fn prefetch_message_rows() {
    let _ = MESSAGES.get_or_load(builder);
}

pub fn message_row(row: MessageRow) -> RowView {
    if let Some(build) = MESSAGES.get_or_load(builder) {
        return build(row);
    }
    (move || match MESSAGES.get() {
        Some(build) => untrack(|| build(row.clone())),
        None => pending(&row),
    })
    .into_row_view()
}

/// The message's place while the chunk comes.
fn pending(row: &MessageRow) -> RowView {
    let role = row.role.as_str();
    view! {
        <article class=format!("message message--{role}") data-role=role data-message-id=row.id.clone() aria-busy="true"></article>
    }
    .into_row_view()
}
