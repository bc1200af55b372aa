//! The building blocks of the chat page, each in its own file.

mod activity;
mod agent_bar;
mod changes;
mod client_only;
mod composer;
mod drawer;
mod groups;
mod highlight;
#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
mod lazy_chunk;
mod message;
mod palette;
mod picker;
mod queue;
mod rows;
mod search;
mod settings;
mod sidebar;
mod tool;
mod transcript;
mod usage;

pub use activity::ActivityLine;
pub use agent_bar::{AgentBar, OwnSessions};
pub use changes::ChangesLoad;
pub use client_only::ClientOnly;
#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
pub use composer::{ATTACH_UI, AttachUi, attachments_arrived};
pub use composer::{Composer, FileReply, Outgoing, PageCommand, PickedFile, Upload, UploadReply};
pub use drawer::{ChatBar, Drawer, bar_title};
#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
pub(crate) use lazy_chunk::{FIRST_RETRY, retry_later};
pub use message::{MessageActions, prefetch_message_rows};
pub use palette::{PaletteChoice, QuickSwitcher, Switcher, SwitcherButton, Theme};
pub use queue::QueueChips;
pub use rows::prefetch_parser;
pub use search::SessionSearch;
pub use settings::{LanguageSetting, NotificationSetting, NotifyPermission};
pub use sidebar::SessionsSidebar;
#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
pub use sidebar::{BuildSessionList, SESSION_LIST, arrived as session_rows_arrived};
pub use tool::{Answer, CustomRenderer, Decision, ToolRenderers, ToolRowContext};
pub use transcript::Transcript;
