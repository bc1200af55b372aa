//! The building blocks of the chat page, each in its own file.

mod activity;
mod approval;
mod chart;
mod composer;
mod message;
mod question_card;
mod queue;
mod rows;
mod sidebar;
mod task_group;
mod tool;
mod transcript;

pub use activity::ActivityLine;
pub use composer::Composer;
pub use queue::QueueChips;
pub use sidebar::SessionsSidebar;
pub use transcript::Transcript;
