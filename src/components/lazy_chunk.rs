//! A WASM chunk (`cargo leptos --split`) fetched on first use, and the one value the main module takes from it.
//!
//! The value (a function pointer into the chunk) lives in a signal, so views and effects drawn before the chunk
//! arrived re-run when it does. A failed fetch is logged and tried again on a use a few seconds later.

use std::future::Future;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use leptos::prelude::*;
use wasm_split_helpers::SplitLoaderError;

/// How long after a failed fetch the next use may try again.
const RETRY_AFTER: Duration = Duration::from_secs(5);

pub struct LazyChunk<T: 'static> {
    /// What the chunk holds, for the console message when it does not load.
    what: &'static str,
    loaded: OnceLock<ArcRwSignal<Option<T>>>,
    /// A fetch is under way or done: one fetch however many callers wait for it.
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
    pub fn get_or_load<F>(&'static self, load: impl FnOnce() -> F + 'static) -> Option<T>
    where
        F: Future<Output = Result<T, SplitLoaderError>> + 'static,
    {
        if let Some(value) = self.signal().get_untracked() {
            return Some(value);
        }
        if !self.loading.swap(true, Ordering::Relaxed) {
            leptos::task::spawn_local(async move {
                match load().await {
                    Ok(value) => self.signal().set(Some(value)),
                    Err(error) => {
                        web_sys::console::error_1(&format!("{} did not load: {error}", self.what).into());
                        // Callers ask on every sync while an answer streams: the next fetch waits a while.
                        set_timeout(move || self.loading.store(false, Ordering::Relaxed), RETRY_AFTER);
                    }
                }
            });
        }
        None
    }

    /// The chunk's value, tracked: the running view or effect re-runs when the chunk arrives.
    pub fn get(&self) -> Option<T> {
        self.signal().get()
    }
}
