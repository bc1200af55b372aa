//! Every native integration test, as one test crate: each crate of its own linked the whole server again, and
//! linking them was most of `cargo test`'s time. The modules that drive the server need the `ssr` feature.

// Test code: a failed unwrap fails the test with the reason.
#![allow(clippy::unwrap_used)]

#[path = "../support/mod.rs"]
mod support;

#[cfg(feature = "ssr")]
mod acp_replay;
#[cfg(feature = "ssr")]
mod acp_runtime;
#[cfg(feature = "ssr")]
mod agent_loop;
mod chat_state;
#[cfg(feature = "ssr")]
mod instances;
#[cfg(feature = "ssr")]
mod mcp;
mod ndjson;
#[cfg(feature = "ssr")]
mod opencode_real;
#[cfg(feature = "ssr")]
mod pi_real;
#[cfg(feature = "ssr")]
mod pi_replay;
#[cfg(feature = "ssr")]
mod pi_runtime;
#[cfg(feature = "ssr")]
mod pi_vectors;
mod protocol;
#[cfg(feature = "ssr")]
mod providers;
#[cfg(feature = "ssr")]
mod server;
