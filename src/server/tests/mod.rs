//! In-process tests of the HTTP surface: the router called with `tower::ServiceExt::oneshot`, no socket.

mod activity;
mod agents;
mod app;
mod attachments;
mod branches;
mod checkpoints;
mod core;
mod edge;
mod files;
mod forks;
mod gate;
mod instances;
mod language;
mod routes;
mod search;
mod stream;
