//! The transcript's message rows, in the session's WASM chunk (`cargo leptos --split`, split point `session`, with the
//! code that follows a session, the markdown parser and the highlighter: `client::following`): the first page load
//! carries the transcript's frame, not what keeps its rows in step with the session (`TranscriptRows::sync`) nor what
//! draws a message (its parts, version arrows, Edit, Regenerate, Restore, Fork, the editor, usage, attachments and
//! their lightbox). The chunk is fetched when a session opens or the message box gets the focus, so it is usually there
//! before the first row is; until it is, the transcript of a session with messages is empty (not the empty chat's
//! suggestions), the session kept in the reducer's snapshot meanwhile, and the rows are built whole once the chunk
//! arrives. A failed fetch is retried (see `LazyChunk`).

use std::ops::Range;

use wasm_split_helpers::{SplitLoaderError, wasm_split};

use crate::chat_state::ChatSnapshot;
use crate::components::client_only::{IntoRowView, RowView};
use crate::components::lazy_chunk::LazyChunk;
use crate::components::rows::{MessageRow, SyncReport, TranscriptRows};

/// What the chunk hands the main module.
#[derive(Clone, Copy)]
struct Rows {
    build: fn(MessageRow) -> RowView,
    sync: fn(&mut TranscriptRows, &ChatSnapshot, &dyn Fn(usize) -> bool) -> SyncReport,
    render_markdown: fn(&mut TranscriptRows, &ChatSnapshot, Range<usize>),
}

/// The split point (one of the session chunk's four): everything only they reach goes into the chunk.
#[wasm_split(session, fallible)]
fn builder() -> Result<Rows, SplitLoaderError> {
    Ok(Rows {
        build: super::build_message,
        sync: TranscriptRows::sync,
        render_markdown: TranscriptRows::render_markdown,
    })
}

static MESSAGES: LazyChunk<Rows> = LazyChunk::new("the transcript's message rows");

/// Brings `rows` to `snapshot` once the chunk is here; until then nothing (and the chunk is fetched). Called from
/// an effect that [`track_message_rows`] makes run again when the chunk arrives.
pub fn sync_rows(rows: &mut TranscriptRows, snapshot: &ChatSnapshot, built: &dyn Fn(usize) -> bool) -> SyncReport {
    // An empty chat has no rows to keep, and does not fetch the chunk for them: its first message (or the message
    // box's focus) does.
    let rows_code = if snapshot.messages.is_empty() { MESSAGES.loaded() } else { MESSAGES.get_or_load(builder) };
    match rows_code {
        Some(loaded) => (loaded.sync)(rows, snapshot, built),
        None => SyncReport::default(),
    }
}

/// Parses the text of the messages at `messages` before they are built (`TranscriptRows::render_markdown`). Rows
/// exist only once the chunk has synced them, so its code is here by then.
pub fn render_markdown(rows: &mut TranscriptRows, snapshot: &ChatSnapshot, messages: Range<usize>) {
    if let Some(loaded) = MESSAGES.loaded() {
        (loaded.render_markdown)(rows, snapshot, messages);
    }
}

/// Subscribes the running effect to the chunk's arrival.
pub fn track_message_rows() {
    MESSAGES.get();
}

/// Starts fetching the chunk, if it is not there or on its way.
pub fn prefetch_message_rows() {
    let _ = MESSAGES.get_or_load(builder);
}

/// A message's row. Rows exist only once the chunk has synced them (`sync_rows`), so its code is here by then.
pub fn message_row(row: MessageRow) -> RowView {
    match MESSAGES.loaded() {
        Some(loaded) => (loaded.build)(row),
        None => ().into_row_view(),
    }
}
