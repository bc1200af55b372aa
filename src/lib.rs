//! chatwire: a self-hosted web chat UI for coding agents — one crate, built as the axum server and as the browser WASM.
//!
//! Dependencies point one way: `protocol` ← `ndjson` ← `chat_state` ← the rest.
//! Those three have no `cfg` gates; server-only modules are gated whole.

// The page's view types nest deeply; their layouts exceed the default query depth of 128.
#![recursion_limit = "256"]

pub mod app;
pub mod chart;
pub mod chat_state;
#[cfg(feature = "ssr")]
pub mod checkpoints;
#[cfg(feature = "hydrate")]
pub mod client;
pub mod components;
pub mod draft;
pub mod export;
pub mod fuzzy;
pub mod highlight;
pub mod i18n;
#[cfg(feature = "ssr")]
pub mod mapper;
pub mod markdown;
pub mod ndjson;
pub mod protocol;
#[cfg(feature = "ssr")]
pub mod runtime;
#[cfg(feature = "ssr")]
pub mod server;
#[cfg(feature = "ssr")]
pub mod store;

/// Entry point the boot script calls once the WASM is loaded: takes over the server-rendered page.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    // The page's language and texts first: hydration must draw the words the server drew.
    i18n::start();
    leptos::mount::hydrate_body(app::App);
}
