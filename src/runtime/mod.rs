//! Agent runtimes and the event dialect they speak (server only).

pub mod agent;
pub mod event;
pub mod mcp;
pub mod models;
pub mod pi;
pub mod provider;
pub mod providers;
pub mod scripted;
pub mod tools;
