//! The syntax highlighter as the views reach it: in the browser part of the session's WASM chunk (split point
//! `session`, `client::following`), there once a session is shown or the chat has the focus; on the server and in
//! native tests linked in.

#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
mod chunk {
    use wasm_split_helpers::{SplitLoaderError, wasm_split};

    use crate::components::lazy_chunk::LazyChunk;
    use crate::highlight::Highlighter;

    /// The split point (one of the session chunk's four): what only they reach (here the lexers and the HTML they
    /// make) goes into the chunk.
    #[wasm_split(session, fallible)]
    fn load() -> Result<Highlighter, SplitLoaderError> {
        Ok(crate::highlight::highlighter())
    }

    static HIGHLIGHTER: LazyChunk<Highlighter> = LazyChunk::new("the syntax highlighter");

    /// The highlighter, tracked (the running view re-runs when the chunk arrives); until then `None`, and the chunk
    /// is on its way.
    pub fn highlighter() -> Option<crate::highlight::Highlighter> {
        HIGHLIGHTER.get_or_load(load);
        HIGHLIGHTER.get()
    }
}

#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
pub use chunk::highlighter;

/// The server and the native tests link the highlighter in.
#[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
pub fn highlighter() -> Option<crate::highlight::Highlighter> {
    Some(crate::highlight::highlighter())
}
