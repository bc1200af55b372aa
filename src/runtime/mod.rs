//! Agent runtimes and the event dialect they speak (server only).

pub mod agent;
pub mod event;
pub mod pi;
pub mod provider;
pub mod scripted;
pub mod tools;
