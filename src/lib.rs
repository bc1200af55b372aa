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
pub mod pace;
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

/// Room in the module's read-only data that no code uses, so that splitting it never moves every chunk's data into
/// the first load.
///
/// wasm-split (cargo-leptos `--split`) lays each output module's data out anew within the one read-only segment,
/// with alignment padding per module; when that comes out longer than the segment it was given, it puts the whole
/// segment, every chunk's strings and tables included, into the main module (its warning "Overlong segment 0 by
/// 119 after relocation"; the main module went from 240 KB to 288 KB brotli). Which build overflows is luck of
/// alignment. No module refers to this array, so it is copied into none of them; it only lengthens the segment.
#[cfg(feature = "hydrate")]
#[used]
static SPLIT_DATA_SLACK: [u8; 4096] = [0x5a; 4096];
