//! chatwire: a self-hosted web chat UI for coding agents — one crate, built as the axum server and as the browser WASM.
//!
//! Dependencies point one way: `protocol` ← `ndjson` ← `chat_state` ← the rest.
//! Those three have no `cfg` gates; server-only modules are gated whole.

pub mod ndjson;
pub mod protocol;
