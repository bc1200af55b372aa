//! The building blocks of the chat page, each in its own file.

mod composer;
mod message;
mod rows;
mod sidebar;
mod tool;
mod transcript;

pub use composer::Composer;
pub use sidebar::SessionsSidebar;
pub use transcript::Transcript;
