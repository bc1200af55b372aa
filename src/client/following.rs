//! The code that follows a session as a WASM chunk of its own (`cargo leptos --split`): loading its transcript,
//! sending, re-attaching to a run, the frame decoder and the reducer they feed. The first paint and typing need none
//! of it; it is fetched when a session opens or the chat gets the focus, with the transcript's own request going
//! out beside it (`follow::open`), so opening a session waits for whichever of the two comes last.
//!
//! Until it is here the page draws the server's empty transcript and takes keystrokes; a send waits for it. A fetch
//! that fails says so on the problem line and is tried again, 2 s later, then less and less often, and what waited
//! (the send, the session being opened) goes on once it is here: nothing typed is lost.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use wasm_split_helpers::{SplitLoaderError, wasm_split};

use super::follow::{self, Page};
use super::rare;
use crate::components::Outgoing;

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

/// The split point: everything only this reaches goes into the chunk.
#[wasm_split(following, fallible)]
fn following() -> Result<Following, SplitLoaderError> {
    Ok(Following {
        listen: follow::listen,
        load: |page, generation, detail| Box::pin(follow::show_detail(page, generation, detail)),
        send: |page, outgoing| Box::pin(follow::send(page, outgoing)),
        show_branch: |page, message_id| Box::pin(follow::show_branch(page, message_id)),
    })
}

thread_local! {
    /// The page's stream listeners and frame batcher are made once, by the first caller that gets the chunk.
    static LISTENING: Cell<bool> = const { Cell::new(false) };
}

/// After a failed fetch the next waits this long, twice as long after each failure up to [`LAST_RETRY`].
const FIRST_RETRY: Duration = Duration::from_secs(2);
const LAST_RETRY: Duration = Duration::from_secs(60);

/// The chunk, its listeners started, once it is here; a failed fetch says so on the problem line (until the chunk
/// comes) and is tried again.
pub async fn load(page: Page) -> Following {
    let mut retry_after = FIRST_RETRY;
    let following = loop {
        let fetched = following().await;
        if let Err(error) = &fetched {
            let message =
                format!("the code that follows a session did not load ({error}); trying again in {retry_after:?}");
            web_sys::console::error_1(&message.into());
        }
        if let Some(following) = rare::loaded_or_said(page.state, fetched) {
            break following;
        }
        super::Pause::new().sleep(retry_after).await;
        retry_after = (retry_after * 2).min(LAST_RETRY);
    };
    if !LISTENING.replace(true) {
        (following.listen)(page);
    }
    following
}

/// Starts fetching the chunk, if it is not there or on its way.
pub fn prefetch() {
    leptos::task::spawn_local(async {
        let _ = following().await;
    });
}
