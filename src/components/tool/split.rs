//! The tool renderers as a WASM chunk of their own (`cargo leptos --split`), fetched when the first tool row appears.
//!
//! A page that shows no tool call never downloads the renderers (diffs, ANSI colours, JSON trees, charts, grep
//! highlighting, cards), nor the Changes view of a run, which draws its diffs with them. Until the chunk arrives a
//! tool row is a plain name row with its status; its data lives in signals meanwhile, so nothing streamed is lost,
//! and the row is built whole once the chunk is there. Every row made after that is built at once. A failed fetch
//! is retried (see `LazyChunk`).

use std::sync::Arc;

use leptos::prelude::*;
use wasm_split_helpers::{SplitLoaderError, wasm_split};

use super::{RowStatus, ToolRowContext, run_active};
use crate::components::client_only::{IntoRowView, RowView};
use crate::components::lazy_chunk::LazyChunk;
use crate::protocol::{ChangesResponse, ChatToolPart};

/// What the chunk hands the main module.
#[derive(Clone, Copy)]
struct Renderers {
    row: fn(ArcRwSignal<ChatToolPart>) -> RowView,
    changes: fn(Arc<ChangesResponse>) -> RowView,
}

/// The split point: everything only this reaches goes into the chunk.
#[wasm_split(tool_renderers, fallible)]
fn renderers() -> Result<Renderers, SplitLoaderError> {
    Ok(Renderers { row: super::build_tool_row, changes: crate::components::changes::changes_view })
}

static RENDERERS: LazyChunk<Renderers> = LazyChunk::new("the tool renderers");

pub(super) fn tool_row(tool: ArcRwSignal<ChatToolPart>) -> RowView {
    if let Some(renderers) = RENDERERS.get_or_load(renderers) {
        return (renderers.row)(tool);
    }
    (move || match RENDERERS.get() {
        Some(renderers) => untrack(|| (renderers.row)(tool.clone())),
        None => pending_row(&tool),
    })
    .into_row_view()
}

/// A run's Changes view; a run that changed files had tool rows, so the chunk is usually here already.
pub(crate) fn changes_view(response: Arc<ChangesResponse>) -> RowView {
    if let Some(renderers) = RENDERERS.get_or_load(renderers) {
        return (renderers.changes)(response);
    }
    (move || match RENDERERS.get() {
        Some(renderers) => untrack(|| (renderers.changes)(response.clone())),
        None => crate::components::changes::loading_note(),
    })
    .into_row_view()
}

/// The row's name and status, in the row's frame, until the renderers are there.
fn pending_row(tool: &ArcRwSignal<ChatToolPart>) -> RowView {
    let context = use_context::<ToolRowContext>();
    let name = tool.with_untracked(|part| part.tool_name().into_owned());
    let part = tool.clone();
    let status = Memo::new(move |_| {
        let run_active = run_active(context);
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
