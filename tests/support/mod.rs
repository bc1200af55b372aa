//! Helpers shared by the integration tests: golden files and proptest strategies.
// Each test crate uses a different subset of these helpers.
#![allow(dead_code)]
// Test code: a failed unwrap fails the test with the reason.
#![allow(clippy::unwrap_used)]

#[cfg(feature = "ssr")]
pub mod fake_openai;
pub mod golden;
pub mod invariants;
#[cfg(feature = "ssr")]
pub mod mapper;
#[cfg(feature = "ssr")]
pub mod opencode;
#[cfg(feature = "ssr")]
pub mod postgres;
#[cfg(feature = "ssr")]
pub mod server;
pub mod strategies;
