//! Agent runtimes and the event dialect they speak (server only).

pub mod event;
