//! The tool renderers as a WASM chunk of their own (`cargo leptos --split`), fetched when the first tool row appears.
//!
//! A page that shows no tool call never downloads the renderers (diffs, ANSI colours, JSON trees, charts, grep
//! highlighting, cards). Until the chunk arrives a tool row is a plain name row with its status; its data lives in
//! signals meanwhile, so nothing streamed is lost, and the row is built whole once the chunk is there. Every row
//! made after that is built at once.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use leptos::prelude::*;
use wasm_split_helpers::{SplitLoaderError, wasm_split};

use super::RowStatus;
use crate::app::ChatActions;
use crate::components::client_only::{IntoRowView, RowView};
use crate::protocol::ChatToolPart;

type BuildRow = fn(ArcRwSignal<ChatToolPart>) -> RowView;

/// The split point: everything only this reaches goes into the chunk.
#[wasm_split(tool_renderers, fallible)]
fn renderers() -> Result<BuildRow, SplitLoaderError> {
    Ok(super::build_tool_row)
}

/// Set once the chunk has loaded; rows drawn before that re-run when it is.
fn loaded() -> &'static ArcRwSignal<Option<BuildRow>> {
    static LOADED: OnceLock<ArcRwSignal<Option<BuildRow>>> = OnceLock::new();
    LOADED.get_or_init(|| ArcRwSignal::new(None))
}

/// A load is under way (or done): one fetch however many rows wait for it.
static LOADING: AtomicBool = AtomicBool::new(false);

pub(super) fn tool_row(tool: ArcRwSignal<ChatToolPart>) -> RowView {
    let loaded = loaded().clone();
    if let Some(build) = loaded.get_untracked() {
        return build(tool);
    }
    start_loading(loaded.clone());
    (move || match loaded.get() {
        Some(build) => untrack(|| build(tool.clone())),
        None => pending_row(&tool),
    })
    .into_row_view()
}

fn start_loading(loaded: ArcRwSignal<Option<BuildRow>>) {
    if LOADING.swap(true, Ordering::Relaxed) {
        return;
    }
    leptos::task::spawn_local(async move {
        match renderers().await {
            Ok(build) => loaded.set(Some(build)),
            Err(error) => {
                // The next tool row that appears tries again; the waiting rows keep their name and status.
                LOADING.store(false, Ordering::Relaxed);
                web_sys::console::error_1(&format!("the tool renderers did not load: {error}").into());
            }
        }
    });
}

/// The row's name and status, in the row's frame, until the renderers are there.
fn pending_row(tool: &ArcRwSignal<ChatToolPart>) -> RowView {
    let actions = use_context::<ChatActions>();
    let name = tool.with_untracked(|part| part.tool_name.clone());
    let part = tool.clone();
    let status = Memo::new(move |_| {
        let run_active = actions.is_none_or(|actions| actions.busy());
        part.with(|part| RowStatus::of(part.state, part.error_text.as_deref(), run_active))
    });
    view! {
        <div class="part part--tool tool-pending" data-status=move || status.get().as_str()>
            <div class="tool__header">
                <span class="tool__name">{name}</span>
                <span class="tool__state">{move || status.get().label()}</span>
            </div>
        </div>
    }
    .into_row_view()
}
