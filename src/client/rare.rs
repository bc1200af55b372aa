//! The page's rarer requests (fork, restore files, a run's changes, an agent's option, a
//! search, a session's rename and delete, the files an `@` mention lists, an attachment's upload) as a WASM chunk of
//! their own (`cargo leptos --split`), fetched the first time one of them is asked for.
//!
//! Each is a click away and then waits on the server anyway; their response types (the fork's workspace, the
//! restore's file lists, the diff) and the code that lands them in the page's signals are not on the first load.

use std::future::Future;
use std::pin::Pin;

use leptos::prelude::*;
use wasm_split_helpers::{SplitLoaderError, wasm_split};

use super::follow::{self, Page};
use crate::app::PageState;
use crate::client::ClientError;
use crate::components::{ChangesLoad, FileReply, OwnSessions, UploadReply};
use crate::i18n::{Key, fill, t};
use crate::protocol::{AgentOptionRequest, SearchResponse};

type Boxed<T> = Pin<Box<dyn Future<Output = T>>>;

/// What the chunk hands the main module.
#[derive(Clone, Copy)]
pub struct Rare {
    pub fork: fn(Page, String) -> Boxed<()>,
    pub restore_files: fn(Page, String) -> Boxed<bool>,
    pub load_changes: fn(PageState, String, RwSignal<ChangesLoad>) -> Boxed<()>,
    pub list_conversations: fn(String, RwSignal<OwnSessions>) -> Boxed<()>,
    pub open_conversation: fn(Page, String, String) -> Boxed<()>,
    pub set_option: fn(PageState, String, String) -> Boxed<()>,
    pub search: fn(String) -> Boxed<Result<SearchResponse, ClientError>>,
    pub rename: fn(PageState, String, String) -> Boxed<()>,
    pub delete: fn(Page, String) -> Boxed<()>,
    pub find_files: fn(PageState, String, FileReply) -> Boxed<()>,
    pub upload: fn(web_sys::File, UploadReply) -> Boxed<()>,
}

/// The split point: everything only this reaches goes into the chunk.
#[wasm_split(rare_requests, fallible)]
fn rare() -> Result<Rare, SplitLoaderError> {
    Ok(Rare {
        fork: |page, message_id| Box::pin(follow::fork(page, message_id)),
        restore_files: |page, message_id| Box::pin(follow::restore_files(page, message_id)),
        load_changes: |state, key, into| Box::pin(super::page::load_changes(state, key, into)),
        list_conversations: |agent, into| Box::pin(list_conversations(agent, into)),
        open_conversation: |page, agent, id| Box::pin(follow::open_conversation(page, agent, id)),
        set_option: |state, id, value| Box::pin(set_option(state, id, value)),
        search: |query| Box::pin(async move { super::search(&query).await }),
        rename: |state, id, title| Box::pin(super::page::rename(state, id, title)),
        delete: |page, id| Box::pin(super::page::delete(page, id)),
        find_files: |state, query, reply| Box::pin(super::page::find_files(state, query, reply)),
        upload: |file, reply| Box::pin(super::page::upload(file, reply)),
    })
}

/// Sets the session's agent's option `config_id` to `value`.
async fn set_option(state: PageState, config_id: String, value: String) {
    let Some(session_id) = state.session_id.get_untracked() else { return };
    // Cleared only when it says something: clearing draws the pickers again, which would show the old value while
    // the agent takes the new one.
    if state.problem.with_untracked(Option::is_some) {
        state.problem.set(None);
    }
    let request = AgentOptionRequest { config_id, value };
    match super::set_agent_option(&session_id, &request).await {
        // What the agent then offers also comes as an `agent_options` frame, in the stream of a run going on; with
        // none going the server logs it, and this page, following no stream, shows the value here.
        Ok(()) if state.session_id.with_untracked(|on_screen| on_screen.as_deref() == Some(session_id.as_str())) => {
            state.chat.update(|chat| {
                let mut options = chat.agent_options.iter_mut().flat_map(|offered| &mut offered.options);
                if let Some(option) = options.find(|option| option.id == request.config_id) {
                    option.current = request.value;
                }
            })
        }
        Ok(()) => {}
        Err(error) => state.problem.set(Some(fill(Key::OptionFailed, &[("error", &error.to_string())]))),
    }
}

/// Lists the agent's own conversations into `into`.
async fn list_conversations(agent: String, into: RwSignal<OwnSessions>) {
    into.set(OwnSessions::Loading);
    match super::agent_conversations(&agent).await {
        Ok(listed) => into.set(OwnSessions::Loaded(listed.conversations)),
        Err(error) => into.set(OwnSessions::Failed(error.to_string())),
    }
}

/// A chunk's value, or `None` with the problem line saying so; the line is cleared again once a later ask gets a
/// chunk. Shared by the chunks of the page's requests (this one and `lists`).
pub fn loaded_or_said<T, E>(state: PageState, fetched: Result<T, E>) -> Option<T> {
    match fetched {
        Ok(value) => {
            if state.problem.with_untracked(|problem| problem.as_deref() == Some(t(Key::PartNotLoaded))) {
                state.problem.set(None);
            }
            Some(value)
        }
        Err(_) => {
            state.problem.set(Some(t(Key::PartNotLoaded).to_owned()));
            None
        }
    }
}

/// The chunk's requests; a failed fetch says so on the problem line (until a later ask gets the chunk) and is tried
/// again at the next ask.
pub async fn load(state: PageState) -> Option<Rare> {
    loaded_or_said(state, rare().await)
}
