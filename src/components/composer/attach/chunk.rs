//! Taking files in and drawing their chips come with the lists the page loads once it is live (`client::lists`, a
//! WASM chunk of its own with `cargo leptos --split`): a message without files needs none of it. Files taken before
//! that chunk is here wait for it.

use std::time::Duration;

use leptos::prelude::*;

use super::{Attachments, Picked, Upload};
use crate::components::client_only::RowView;

/// What the lists' chunk hands the composer.
#[derive(Clone, Copy)]
pub struct AttachUi {
    take: fn(Attachments, Vec<Picked>, Upload),
    chips: fn(Attachments) -> RowView,
}

/// The chunk's functions, for `client::lists`.
pub const ATTACH_UI: AttachUi = AttachUi { take: super::admit::take, chips: super::chips::build_chips };

thread_local! {
    static UI: ArcRwSignal<Option<AttachUi>> = ArcRwSignal::new(None);
}

/// How often files taken before the chunk is here look for it.
const WAIT_STEP: Duration = Duration::from_millis(100);

/// The lists' chunk is here: files can be taken.
pub fn arrived(ui: AttachUi) {
    UI.with(|slot| slot.set(Some(ui)));
}

/// Admits the files the limits allow and uploads them, once the chunk is here.
pub fn take(attachments: Attachments, files: Vec<Picked>, upload: Upload) {
    if files.is_empty() {
        return;
    }
    match UI.with(|ui| ui.get_untracked()) {
        Some(ui) => (ui.take)(attachments, files, upload),
        None => set_timeout(move || take(attachments, files, upload), WAIT_STEP),
    }
}

/// The chips, drawn once the chunk is here: until then no file can have been taken.
pub fn chips(attachments: Attachments) -> impl IntoView {
    move || UI.with(|ui| ui.get()).map(|ui| untrack(|| (ui.chips)(attachments)))
}
