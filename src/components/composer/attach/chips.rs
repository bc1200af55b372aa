//! The chips above the message box: a file on its way up or kept by the server, each with its size and a button
//! that removes it; images as thumbnails once uploaded.

use leptos::prelude::*;

use super::{Attachments, Pending};
use crate::components::client_only::{IntoRowView, RowView};
use crate::i18n::{Key, fill, tr};
use crate::protocol::{FilePart, byte_size};

pub(super) fn build_chips(attachments: Attachments) -> RowView {
    view! { <AttachmentChips attachments/> }.into_row_view()
}

/// The chips above the message box.
#[component]
fn AttachmentChips(attachments: Attachments) -> impl IntoView {
    view! {
        <ul class="composer__attachments" aria-label=tr(Key::Attachments) data-testid="attachments"
            hidden=move || attachments.is_empty()>
            <For each=move || attachments.list.get() key=|pending| (pending.key, pending.uploaded.is_some()) let:pending>
                <AttachmentChip pending attachments/>
            </For>
        </ul>
    }
}

#[component]
fn AttachmentChip(pending: Pending, attachments: Attachments) -> impl IntoView {
    let Pending { key, name, size, uploaded } = pending;
    let uploaded_already = uploaded.is_some();
    let thumbnail =
        uploaded.filter(FilePart::is_image).map(|file| view! { <img class="chip__thumb" src=file.url() alt=""/> });
    // The chip is keyed by whether its upload is done, so it is drawn anew, thumbnail and all, once it is.
    let size = match uploaded_already {
        true => byte_size(size),
        false => fill(Key::Uploading, &[("size", &byte_size(size))]),
    };
    let label = fill(Key::RemoveNamed, &[("name", &name)]);
    view! {
        <li class="chip" data-testid="attachment-chip" data-uploading=(!uploaded_already).then_some("true")>
            {thumbnail}
            <span class="chip__name">{name}</span>
            <span class="chip__size">{size}</span>
            <button type="button" class="chip__remove" aria-label=label on:click=move |_| attachments.remove(key)>
                "×"
            </button>
        </li>
    }
}
