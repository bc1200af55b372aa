//! The wire contract of DESIGN.md §2–§3: chat frames, messages and parts, and the HTTP bodies.
//!
//! Everything here is plain data with serde: camelCase field names, optional
//! fields omitted (never `null`), unknown fields ignored. It compiles for both
//! the server and the browser, so it has no `cfg` gates.

mod activity;
mod agent_options;
mod api;
mod changes;
mod frame;
mod message;
mod tool;
mod usage;
mod validate;

pub use activity::*;
pub use agent_options::*;
pub use api::*;
pub use changes::*;
pub use frame::*;
pub use message::*;
pub use tool::*;
pub use usage::*;
pub use validate::{FrameError, parse_frame, validate_frame};
