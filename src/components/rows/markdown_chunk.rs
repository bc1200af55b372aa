//! The markdown parser (pulldown-cmark and the HTML writer), in the session's WASM chunk (split point `session`,
//! with the code that follows a session and the message rows: `client::following`), fetched when a session opens or
//! the chat gets the focus: an empty chat never downloads it. Text that comes before it shows unformatted until it is.

use wasm_split_helpers::{SplitLoaderError, wasm_split};

use super::SyncMarkdown;
use crate::components::lazy_chunk::LazyChunk;
use crate::markdown::MarkdownStream;

/// The split point (one of the session chunk's four): everything only they reach goes into the chunk.
#[wasm_split(session, fallible)]
fn parser() -> Result<SyncMarkdown, SplitLoaderError> {
    Ok(MarkdownStream::sync)
}

static PARSER: LazyChunk<SyncMarkdown> = LazyChunk::new("the markdown parser");

/// The parser once its chunk is there; until then `None`, and the chunk is on its way.
pub(super) fn parser_or_load() -> Option<SyncMarkdown> {
    PARSER.get_or_load(parser)
}

/// Starts fetching the parser, if it is not there or on its way: a page opening a session's transcript asks for it
/// alongside the transcript, so the messages are not drawn unformatted while it comes.
pub fn prefetch_parser() {
    let _ = parser_or_load();
}

/// Subscribes the running effect to the parser's arrival.
pub fn track_parser() {
    PARSER.get();
}
