//! The sidebar's list of sessions, built in the browser from the chunk `split::list` fetches: a row per session with
//! its status, age and usage, renamed in place or deleted after a confirmation, and where the keyboard focus goes
//! when either is over.

use leptos::ev::KeyboardEvent;
use leptos::prelude::*;

use super::{ItemMode, ListProps, Refocus, focus_is_lost, relative_time, status_label};
use crate::components::client_only::{IntoRowView, RowView};
use crate::components::usage::session_totals;
use crate::i18n::{Key, fill, t, tr};
use crate::protocol::SessionSummary;

/// The list: one row per session, newest first.
pub(super) fn build_list(props: ListProps) -> RowView {
    let ListProps { sessions, current, unseen, now, on_rename, on_delete, default_agent, refocus } = props;
    view! {
        <ul>
            <For
                each=move || sessions.get()
                key=|session| {
                    let SessionSummary { session_id, title, updated_at, status, agent, .. } = session;
                    (session_id.clone(), title.clone(), *updated_at, *status, agent.clone())
                }
                let:session
            >
                <SessionItem session current unseen now on_rename on_delete refocus default_agent/>
            </For>
        </ul>
    }
    .into_row_view()
}

#[component]
fn SessionItem(
    /// The session this row shows.
    session: SessionSummary,
    /// The session on screen.
    current: Signal<Option<String>>,
    /// Sessions with run events the user has not seen.
    unseen: Signal<Vec<String>>,
    /// The browser's clock.
    now: Signal<f64>,
    /// Renames a session.
    on_rename: Callback<(String, String)>,
    /// Deletes a session.
    on_delete: Callback<String>,
    /// Where the focus goes when a rename or a delete is over, shared by the rows.
    refocus: StoredValue<Option<Refocus>>,
    /// The server's default agent while it offers several; `None`: the row names no agent.
    default_agent: Signal<Option<String>>,
) -> impl IntoView {
    let item_mode = RwSignal::new(ItemMode::Show);
    let id = StoredValue::new(session.session_id.clone());
    let untitled = session.title.is_empty();
    let title = if untitled { t(Key::NewChat).to_owned() } else { session.title.clone() };
    let draft = RwSignal::new(title.clone());
    let is_current = move || current.with(|c| id.with_value(|id| c.as_deref() == Some(id.as_str())));
    let is_unseen = move || unseen.with(|marked| id.with_value(|id| marked.contains(id)));
    let status = session.status;
    let updated_at = session.updated_at;
    let totals = session.usage.filter(|usage| !usage.is_empty());
    // The row's agent, empty (and so hidden by CSS) with one agent: a text that changes costs less WASM than a span
    // that comes and goes.
    let agent = StoredValue::new(session.agent.clone());
    let agent = move || default_agent.get().map(|default| agent.get_value().unwrap_or(default));
    // Back to showing the row, with the focus on the button that left it when the keyboard ended it.
    let show_again = move |started_by: Option<ItemMode>, title: String| {
        refocus.set_value(started_by.map(|started_by| Refocus::Button {
            session_id: id.get_value(),
            title,
            started_by,
        }));
        item_mode.set(ItemMode::Show);
    };
    let row_title = StoredValue::new(title);
    // The row's actions are named after it, in the page's language; one closure for all four (one copy in the WASM).
    let named = move |key: Key| Signal::derive(move || fill(key, &[("title", &row_title.get_value())]));
    let save = move |started_by: Option<ItemMode>| {
        let title = draft.with_untracked(|t| t.trim().to_owned());
        if title.is_empty() {
            show_again(started_by, row_title.get_value());
        } else {
            show_again(started_by, title.clone());
            on_rename.run((id.get_value(), title));
        }
    };
    let on_key = move |event: KeyboardEvent| match event.key().as_str() {
        "Enter" => {
            event.prevent_default();
            save(Some(ItemMode::Rename));
        }
        "Escape" => show_again(Some(ItemMode::Rename), row_title.get_value()),
        _ => {}
    };
    // `autofocus` only works on page load; a field or button that appears later is focused by hand.
    let rename_field = NodeRef::<leptos::html::Input>::new();
    let confirm_button = NodeRef::<leptos::html::Button>::new();
    let rename_button = NodeRef::<leptos::html::Button>::new();
    let delete_button = NodeRef::<leptos::html::Button>::new();
    Effect::new(move || {
        let (Some(rename), Some(delete)) = (rename_button.get(), delete_button.get()) else { return };
        let started_by = refocus.with_value(|refocus| match refocus {
            Some(Refocus::Button { session_id, title, started_by }) => (id.with_value(|id| id == session_id)
                && row_title.with_value(|shown| shown == title))
            .then_some(*started_by),
            Some(Refocus::List) | None => None,
        });
        let button = match started_by {
            Some(ItemMode::Rename) => rename,
            Some(ItemMode::ConfirmDelete) => delete,
            Some(ItemMode::Show) | None => return,
        };
        refocus.set_value(None);
        if focus_is_lost() {
            let _ = button.focus();
        }
    });
    Effect::new(move || {
        if let Some(field) = rename_field.get() {
            let _ = field.focus();
            // The title goes in first: the field's `prop:value` may be applied after this runs, and a value set
            // after `select` would put the caret at its end, so typing would add to the title, not replace it.
            field.set_value(&draft.get_untracked());
            field.select();
        }
    });
    Effect::new(move || {
        if let Some(button) = confirm_button.get() {
            let _ = button.focus();
        }
    });
    view! {
        <li
            class="sidebar__item"
            class:sidebar__item--current=is_current
            data-session-id=id.get_value()
            data-unseen=move || is_unseen().then_some("true")
        >
            {move || match item_mode.get() {
                ItemMode::Show => view! {
                    <a
                        class="sidebar__link"
                        href=format!("/s/{}", id.get_value())
                        aria-current=move || is_current().then_some("page")
                    >
                        <span class="sidebar__title">
                            <span class="sidebar__unseen" role="img" aria-label=tr(Key::NewActivity) hidden=move || !is_unseen()></span>
                            {move || if untitled { t(Key::NewChat).to_owned() } else { row_title.get_value() }}
                        </span>
                        <span class="sidebar__meta">
                            <span class=format!("badge badge--{}", status.as_str())>{move || status_label(status)}</span>
                            <time class="sidebar__time">
                                {move || relative_time(updated_at, now.get())}
                            </time>
                            <span class="sidebar__agent" data-testid="session-row-agent">{move || agent().unwrap_or_default()}</span>
                            {totals.clone().map(|totals| view! { <span class="sidebar__usage" data-testid="session-usage">{move || session_totals(&totals)}</span> })}
                        </span>
                    </a>
                    <span class="sidebar__actions">
                        <button
                            class="button button--small"
                            type="button"
                            aria-label=named(Key::RenameNamed)
                            on:click=move |_| item_mode.set(ItemMode::Rename)
                            node_ref=rename_button
                        >
                            {tr(Key::Rename)}
                        </button>
                        <button
                            class="button button--small"
                            type="button"
                            aria-label=named(Key::DeleteNamed)
                            on:click=move |_| item_mode.set(ItemMode::ConfirmDelete)
                            node_ref=delete_button
                        >
                            {tr(Key::Delete)}
                        </button>
                        <a
                            class="button button--small"
                            href=format!("/api/sessions/{}/export?format=md", id.get_value())
                            download
                            aria-label=named(Key::ExportMarkdownNamed)
                        >
                            "MD"
                        </a>
                        <a
                            class="button button--small"
                            href=format!("/api/sessions/{}/export?format=json", id.get_value())
                            download
                            aria-label=named(Key::ExportJsonNamed)
                        >
                            "JSON"
                        </a>
                    </span>
                }
                .into_row_view(),
                ItemMode::Rename => view! {
                    <input
                        class="sidebar__rename"
                        type="text"
                        aria-label=tr(Key::NewTitle)
                        prop:value=move || draft.get()
                        on:input=move |event| draft.set(event_target_value(&event))
                        on:keydown=on_key
                        on:blur=move |_| {
                            // Leaving the field for elsewhere saves too, and the focus stays where it went.
                            if item_mode.get_untracked() == ItemMode::Rename {
                                save(None);
                            }
                        }
                        node_ref=rename_field
                    />
                }
                .into_row_view(),
                ItemMode::ConfirmDelete => view! {
                    <span class="sidebar__confirm" role="group" aria-label=tr(Key::ConfirmDelete)>
                        <span>{tr(Key::DeleteQuestion)}</span>
                        <button
                            class="button button--small button--danger"
                            type="button"
                            on:click=move |_| {
                                refocus.set_value(Some(Refocus::List));
                                item_mode.set(ItemMode::Show);
                                on_delete.run(id.get_value());
                            }
                            node_ref=confirm_button
                        >
                            {tr(Key::Delete)}
                        </button>
                        <button class="button button--small" type="button" on:click=move |_| show_again(Some(ItemMode::ConfirmDelete), row_title.get_value())>
                            {tr(Key::Cancel)}
                        </button>
                    </span>
                }
                .into_row_view(),
            }}
        </li>
    }
}
