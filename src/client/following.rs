//! The code that follows a session, in the session's WASM chunk (`cargo leptos --split`, split point `session`):
//! loading its transcript, sending, re-attaching to a run, the frame decoder and the reducer they feed. The first
//! paint and typing need none of it; it is fetched when a session opens or the chat gets the focus, with the
//! transcript's own request going out beside it (`follow::open`), so opening a session waits for whichever of the
//! two comes last.
//!
//! The session's chunk also holds the message rows (`components::message::split`), the markdown parser
//! (`components::rows::markdown_chunk`) and the syntax highlighter (`components::highlight`): showing a session
//! needs all four, and one split point instead of four makes far fewer shared files for the browser to fetch
//! (docs/decisions.md, "One chunk for showing a session").
//!
//! Until it is here the page draws the server's empty transcript and takes keystrokes; a send waits for it. A fetch
//! that fails says so on the problem line and is tried again, 2 s later, then less and less often, and what waited
//! (the send, the session being opened) goes on once it is here: nothing typed is lost.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;

use wasm_split_helpers::{SplitLoaderError, wasm_split};

use super::follow::{self, Page};
use super::rare;
use crate::components::{FIRST_RETRY, Outgoing, retry_later};

type Boxed<T> = Pin<Box<dyn Future<Output = T>>>;

/// What the chunk hands the main module.
#[derive(Clone, Copy)]
pub struct Following {
    listen: fn(Page),
    /// Shows the transcript of the session opened as (generation), from its requested detail.
    pub load: fn(Page, u64, js_sys::Promise) -> Boxed<()>,
    pub send: fn(Page, Outgoing) -> Boxed<()>,
    pub show_branch: fn(Page, String) -> Boxed<()>,
}

/// The split point (one of the session chunk's four): everything only they reach goes into the chunk.
#[wasm_split(session, fallible)]
fn following() -> Result<Following, SplitLoaderError> {
    Ok(Following {
        listen: follow::listen,
        load: |page, generation, detail| Box::pin(follow::show_detail(page, generation, detail)),
        send: |page, outgoing| Box::pin(follow::send(page, outgoing)),
        show_branch: |page, message_id| Box::pin(follow::show_branch(page, message_id)),
    })
}

/// What the chunk holds, for the console message when it does not load.
const WHAT: &str = "the code that follows a session";

thread_local! {
    /// The page's stream listeners and frame batcher are made once, by the first caller that gets the chunk.
    static LISTENING: Cell<bool> = const { Cell::new(false) };
}

/// The chunk, its listeners started, once it is here; a failed fetch says so on the problem line (until the chunk
/// comes) and is tried again.
pub async fn load(page: Page) -> Following {
    let mut retry_after = FIRST_RETRY;
    let following = loop {
        let fetched = following().await;
        let next = fetched.as_ref().err().map(|error| retry_later(WHAT, error, retry_after));
        if let Some(following) = rare::loaded_or_said(page.state, fetched) {
            break following;
        }
        super::Pause::new().sleep(retry_after).await;
        retry_after = next.unwrap_or(retry_after);
    };
    if !LISTENING.replace(true) {
        (following.listen)(page);
    }
    following
}

/// Resolves once the chunk's first fetch has ended, saying whether it loaded (it is not retried from here).
pub async fn fetched() -> bool {
    following().await.is_ok()
}

/// Starts fetching the chunk, if it is not there or on its way.
pub fn prefetch() {
    leptos::task::spawn_local(async {
        fetched().await;
    });
}
