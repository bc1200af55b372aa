//! Agent runtimes and the event dialect they speak (server only); `seam` is the trait the server drives them by.

pub mod acp;
pub mod agent;
pub mod attached;
pub mod builtin;
pub mod child;
pub mod event;
pub mod mcp;
pub mod models;
pub mod pi;
pub mod price;
pub mod provider;
pub mod providers;
pub mod registry;
pub mod scripted;
pub mod seam;
pub mod tools;

pub use seam::{Runtime, RuntimeSession};
