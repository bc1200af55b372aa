//! The building blocks of the chat page, each in its own file.

mod activity;
mod composer;
mod queue;
mod sidebar;
mod transcript;

pub use activity::ActivityLine;
pub use composer::Composer;
pub use queue::QueueChips;
pub use sidebar::SessionsSidebar;
pub use transcript::Transcript;
