//! A WASM chunk (`cargo leptos --split`) fetched on first use, and the one value the main module takes from it.
//!
//! The value (a function pointer into the chunk) lives in a signal, so views and effects drawn before the chunk
//! arrived re-run when it does. A failed fetch is logged and tried again, 2 s later, then less and less often.

use std::future::Future;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use leptos::prelude::*;
use wasm_split_helpers::SplitLoaderError;

/// After a failed fetch the next waits this long, twice as long after each failure up to [`LAST_RETRY`].
pub(crate) const FIRST_RETRY: Duration = Duration::from_secs(2);
const LAST_RETRY: Duration = Duration::from_secs(60);

/// Says on the console that the chunk holding `what` did not load and is fetched again in `retry_after`; the wait
/// after the next failure. Shared with the chunks fetched without a `LazyChunk` (`client::following`).
pub(crate) fn retry_later(what: &str, error: &SplitLoaderError, retry_after: Duration) -> Duration {
    let message = format!("{what} did not load ({error}); trying again in {retry_after:?}");
    web_sys::console::error_1(&message.into());
    (retry_after * 2).min(LAST_RETRY)
}

pub struct LazyChunk<T: 'static> {
    /// What the chunk holds, for the console message when it does not load.
    what: &'static str,
    loaded: OnceLock<ArcRwSignal<Option<T>>>,
    /// A fetch is under way (or waiting to be retried) or done: one however many callers wait for it.
    loading: AtomicBool,
}

impl<T: Copy + Send + Sync + 'static> LazyChunk<T> {
    pub const fn new(what: &'static str) -> Self {
        LazyChunk { what, loaded: OnceLock::new(), loading: AtomicBool::new(false) }
    }

    fn signal(&self) -> &ArcRwSignal<Option<T>> {
        self.loaded.get_or_init(|| ArcRwSignal::new(None))
    }

    /// The chunk's value once it has loaded; until then `None`, and the fetch is started by `load` (the split
    /// point's generated function) unless one is under way.
    pub fn get_or_load<L, F>(&'static self, load: L) -> Option<T>
    where
        L: Fn() -> F + Copy + 'static,
        F: Future<Output = Result<T, SplitLoaderError>> + 'static,
    {
        if let Some(value) = self.signal().get_untracked() {
            return Some(value);
        }
        if !self.loading.swap(true, Ordering::Relaxed) {
            self.fetch(load, FIRST_RETRY);
        }
        None
    }

    /// Fetches until the chunk is there; what waits for it keeps showing its placeholder meanwhile.
    fn fetch<L, F>(&'static self, load: L, retry_after: Duration)
    where
        L: Fn() -> F + Copy + 'static,
        F: Future<Output = Result<T, SplitLoaderError>> + 'static,
    {
        leptos::task::spawn_local(async move {
            match load().await {
                Ok(value) => self.signal().set(Some(value)),
                Err(error) => {
                    let next = retry_later(self.what, &error, retry_after);
                    set_timeout(move || self.fetch(load, next), retry_after);
                }
            }
        });
    }

    /// The chunk's value if it has loaded, untracked and without fetching it.
    pub fn loaded(&self) -> Option<T> {
        self.signal().get_untracked()
    }

    /// The chunk's value, tracked: the running view or effect re-runs when the chunk arrives.
    pub fn get(&self) -> Option<T> {
        self.signal().get()
    }
}
