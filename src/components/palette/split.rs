//! The switcher's dialog (and the fuzzy scorer it ranks with) as a WASM chunk of its own (`cargo leptos --split`),
//! fetched when the switcher is first wanted. Until it arrives the dialog is an empty frame that says it is loading;
//! a failed fetch is retried (see `LazyChunk`).

use leptos::prelude::*;
use wasm_split_helpers::{SplitLoaderError, wasm_split};

use super::DialogProps;
use crate::components::client_only::{IntoRowView, RowView};
use crate::components::lazy_chunk::LazyChunk;
use crate::i18n::{Key, tr};

type BuildDialog = fn(DialogProps) -> RowView;

/// The split point: everything only this reaches goes into the chunk.
#[wasm_split(quick_switcher, fallible)]
fn builder() -> Result<BuildDialog, SplitLoaderError> {
    Ok(super::dialog::build_dialog)
}

static DIALOG: LazyChunk<BuildDialog> = LazyChunk::new("the quick switcher");

/// Starts fetching the chunk, if it is not there or on its way.
pub(super) fn prefetch() {
    let _ = DIALOG.get_or_load(builder);
}

pub(super) fn dialog(props: DialogProps) -> RowView {
    if let Some(build) = DIALOG.get_or_load(builder) {
        return build(props);
    }
    (move || match DIALOG.get() {
        Some(build) => untrack(|| build(props)),
        None => loading(props),
    })
    .into_row_view()
}

/// The dialog's frame while the chunk comes, holding the focus: Esc and a click outside already close it.
fn loading(props: DialogProps) -> RowView {
    let frame = NodeRef::<leptos::html::Div>::new();
    Effect::new(move || {
        if let Some(frame) = frame.get() {
            let _ = frame.focus();
        }
    });
    view! {
        <div class="palette" data-testid="palette" on:mousedown=move |_| props.on_close.run(())>
            <div
                class="palette__dialog"
                role="dialog"
                aria-modal="true"
                aria-label=tr(Key::QuickSwitcher)
                aria-busy="true"
                tabindex="-1"
                node_ref=frame
                on:keydown=move |event| {
                    if event.key() == "Escape" {
                        props.on_close.run(());
                    }
                }
            >
                <p class="palette__empty">{tr(Key::Loading)}</p>
            </div>
        </div>
    }
    .into_row_view()
}
