//! The sidebar's rows come with the lists the page loads once it is live (`client::lists`, a WASM chunk of its own
//! with `cargo leptos --split`): the first paint, typing and sending need none of them, and the list waits for its
//! own request anyway (on a phone it is in the closed drawer). Until they are here the list's place stays empty.

use leptos::prelude::*;

use super::ListProps;
use crate::components::client_only::{IntoRowView, RowView};

/// Builds the list of sessions; in the lists' chunk.
pub type BuildSessionList = fn(ListProps) -> RowView;

thread_local! {
    static LIST: ArcRwSignal<Option<BuildSessionList>> = ArcRwSignal::new(None);
}

/// The builder, for `client::lists`.
pub const SESSION_LIST: BuildSessionList = super::rows::build_list;

/// The lists' chunk is here: the list is drawn.
pub fn arrived(build: BuildSessionList) {
    LIST.with(|list| list.set(Some(build)));
}

pub(super) fn list(props: ListProps) -> RowView {
    (move || LIST.with(|list| list.get()).map(|build| untrack(|| build(props)))).into_row_view()
}
