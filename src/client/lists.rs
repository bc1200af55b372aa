//! The lists the page loads once it is live, the models and the agents, as a WASM chunk of their own (`cargo leptos
//! --split`): their requests, their decoders and what picks this browser's model and agent from them are not needed
//! to draw the page or to type, and come right after it.
//!
//! Until they are here the composer offers no model picker and a send runs on the server's defaults, as while the
//! requests themselves are on their way. The activity feed (`client::activity`) is followed from here too: it is
//! wanted once the page is live, not to draw it. So are the sidebar's rows (the list of sessions waits for its own
//! request anyway) and the composer's attachments (taking files in and their chips; files taken earlier wait for
//! them): in a chunk of their own each, they shared so much with the others that wasm-split made 16 more shared files
//! of a few hundred bytes, each a round trip on a slow line.

use std::future::Future;
use std::pin::Pin;

use wasm_split_helpers::{SplitLoaderError, wasm_split};

use super::follow::Page;
use super::{activity, rare, reach};
use crate::app::{PageState, preselected_agent, preselected_model};
use crate::client as api;
use crate::components::{
    ATTACH_UI, AttachUi, BuildSessionList, SESSION_LIST, attachments_arrived, session_rows_arrived,
};
use crate::i18n::{Key, fill};
use leptos::prelude::*;

type Load = fn(Page) -> Pin<Box<dyn Future<Output = ()>>>;

/// What the chunk hands the main module.
#[derive(Clone, Copy)]
struct PageLists {
    loads: [Load; 3],
    session_list: BuildSessionList,
    attachments: AttachUi,
}

/// The split point: everything only this reaches goes into the chunk.
#[wasm_split(page_lists, fallible)]
fn page_lists() -> Result<PageLists, SplitLoaderError> {
    Ok(PageLists {
        loads: [
            |page| Box::pin(load_models(page.state)),
            |page| Box::pin(load_agents(page.state)),
            |page| Box::pin(activity::follow(page)),
        ],
        session_list: SESSION_LIST,
        attachments: ATTACH_UI,
    })
}

/// Loads the models and the agents into the page's signals, draws the sidebar's list of sessions, lets the composer
/// take files, and follows the activity feed. A chunk that cannot be fetched says so on the problem line; it is asked
/// for again when the server answers after having been out of reach (`reach::watch`), or at a reload.
pub async fn load(page: Page) {
    let Some(lists) = rare::loaded_or_said(page.state, page_lists().await) else { return };
    session_rows_arrived(lists.session_list);
    attachments_arrived(lists.attachments);
    for load in lists.loads {
        leptos::task::spawn_local(load(page));
    }
}

async fn load_models(state: PageState) {
    match api::models().await {
        Ok(models) => {
            state.model.set(Some(preselected_model(&models, api::remembered_model().as_deref())));
            state.rerun_unavailable.set(models.rerun_unavailable);
            state.attachment_limits.set(models.attachment_limits);
            state.models.set(models.models);
        }
        Err(error) if reach::lost(state, &error) => {}
        Err(error) => state.problem.set(Some(fill(Key::ModelsFailed, &[("error", &error.to_string())]))),
    }
}

async fn load_agents(state: PageState) {
    match api::agents().await {
        Ok(agents) => {
            state.agent.set(Some(preselected_agent(&agents, api::remembered_agent().as_deref())));
            state.agents.set(Some(agents));
        }
        Err(error) if reach::lost(state, &error) => {}
        Err(error) => state.problem.set(Some(fill(Key::AgentsFailed, &[("error", &error.to_string())]))),
    }
}
