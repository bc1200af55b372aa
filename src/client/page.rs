//! The page's requests as the browser makes them (`connect`): each one a call of the HTTP API whose outcome lands
//! in the page's signals, a failure on the problem line.

use std::time::Duration;

use leptos::prelude::*;

use super::follow::{self, Page};
use super::{following, lists, notify, rare, reach, theme};
use crate::app::{PageRequests, PageState};
use crate::client::{self as api, ClientError};
use crate::components::{ChangesLoad, OwnSessions};
use crate::i18n::{Key, fill, t};
use crate::protocol::{ApprovalRequest, QuestionAnswerRequest, SearchHit};

/// How often the sidebar's relative times are brought up to date.
const CLOCK_TICK: Duration = Duration::from_secs(30);

/// The requests of the page whose signals are `state`.
pub fn connect(state: PageState) -> PageRequests {
    let page = Page::new(state);
    // Here, owned by the page: `start` runs inside an effect that runs again at each navigation, and would take
    // an effect made there down with it.
    reach::watch(state, move || {
        leptos::task::spawn_local(follow::refresh_sessions(state));
        leptos::task::spawn_local(lists::load(page));
        follow::reopen(page);
    });
    PageRequests {
        start: Callback::new(move |()| start(page)),
        open: Callback::new(move |session_id| follow::open(page, session_id)),
        send: Callback::new(move |outgoing| {
            leptos::task::spawn_local(async move { (following::load(page).await.send)(page, outgoing).await })
        }),
        prefetch: Callback::new(move |()| following::prefetch()),
        show_branch: Callback::new(move |message_id| {
            leptos::task::spawn_local(async move { (following::load(page).await.show_branch)(page, message_id).await })
        }),
        restore: Callback::new(move |message_id| {
            leptos::task::spawn_local(async move {
                if let Some(rare) = rare::load(state).await {
                    (rare.restore_files)(page, message_id).await;
                }
            })
        }),
        fork: Callback::new(move |message_id| {
            leptos::task::spawn_local(async move {
                if let Some(rare) = rare::load(state).await {
                    (rare.fork)(page, message_id).await;
                }
            })
        }),
        restore_then_send: Callback::new(move |(message_id, outgoing)| {
            leptos::task::spawn_local(async move {
                let Some(rare) = rare::load(state).await else { return };
                if (rare.restore_files)(page, message_id).await {
                    (following::load(page).await.send)(page, outgoing).await;
                }
            })
        }),
        list_conversations: Callback::new(move |(agent, into): (String, RwSignal<OwnSessions>)| {
            leptos::task::spawn_local(async move {
                match rare::load(state).await {
                    Some(rare) => (rare.list_conversations)(agent, into).await,
                    None => into.set(OwnSessions::Failed(t(Key::PartNotLoadedShort).to_owned())),
                }
            })
        }),
        open_conversation: Callback::new(move |(agent, id): (String, String)| {
            leptos::task::spawn_local(async move {
                if let Some(rare) = rare::load(state).await {
                    (rare.open_conversation)(page, agent, id).await;
                }
            })
        }),
        set_option: Callback::new(move |(id, value): (String, String)| {
            leptos::task::spawn_local(async move {
                if let Some(rare) = rare::load(state).await {
                    (rare.set_option)(state, id, value).await;
                }
            })
        }),
        load_changes: Callback::new(move |(key, into): (String, RwSignal<ChangesLoad>)| {
            leptos::task::spawn_local(async move {
                match rare::load(state).await {
                    Some(rare) => (rare.load_changes)(state, key, into).await,
                    None => into.set(ChangesLoad::Failed(t(Key::PartNotLoadedShort).to_owned())),
                }
            })
        }),
        stop: Callback::new(move |()| {
            leptos::task::spawn_local(async move {
                let Some(id) = state.session_id.get_untracked() else { return };
                if let Err(error) = api::stop(&id).await {
                    state.problem.set(Some(error.to_string()));
                }
            })
        }),
        answer: Callback::new(move |answer: crate::components::Answer| {
            leptos::task::spawn_local(async move {
                let Some(session_id) = state.session_id.get_untracked() else { return answer.sending.set(false) };
                let request =
                    QuestionAnswerRequest { session_id, tool_call_id: answer.tool_call_id, answer: answer.answer };
                if let Err(error) = api::answer_question(&request).await {
                    state.problem.set(Some(fill(Key::AnswerFailed, &[("error", &error.to_string())])));
                    answer.sending.set(false);
                }
            })
        }),
        decide: Callback::new(move |decision: crate::components::Decision| {
            leptos::task::spawn_local(async move {
                let Some(session_id) = state.session_id.get_untracked() else { return decision.sending.set(false) };
                let request = ApprovalRequest {
                    session_id,
                    tool_call_id: decision.tool_call_id,
                    approve: Some(decision.approve),
                    option_id: decision.option_id,
                };
                if let Err(error) = api::decide_approval(&request).await {
                    state.problem.set(Some(fill(Key::DecisionFailed, &[("error", &error.to_string())])));
                    decision.sending.set(false);
                }
            })
        }),
        rename: Callback::new(move |(session_id, title): (String, String)| {
            leptos::task::spawn_local(async move {
                if let Some(rare) = rare::load(state).await {
                    (rare.rename)(state, session_id, title).await;
                }
            })
        }),
        delete: Callback::new(move |session_id| {
            leptos::task::spawn_local(async move {
                if let Some(rare) = rare::load(state).await {
                    (rare.delete)(page, session_id).await;
                }
            })
        }),
        pick_model: Callback::new(move |name: String| {
            api::remember_model(&name);
            state.model.set(Some(name));
        }),
        pick_agent: Callback::new(move |name: String| {
            api::remember_agent(&name);
            state.agent.set(Some(name));
        }),
        go_to: Callback::new(move |session_id: Option<String>| follow::go_to(page, session_id)),
        set_theme: Callback::new(move |theme| {
            theme::apply(theme);
            state.theme.set(theme);
        }),
        set_notify: Callback::new(move |on| notify::set_setting(state, on)),
        search: Callback::new(move |query: String| search(state, query)),
        find_files: Callback::new(move |(query, reply): (String, crate::components::FileReply)| {
            leptos::task::spawn_local(async move {
                match rare::load(state).await {
                    Some(rare) => (rare.find_files)(state, query, reply).await,
                    None => reply.run((query, Err(t(Key::PartNotLoaded).to_owned()))),
                }
            })
        }),
        upload: Callback::new(move |(file, reply): (web_sys::File, crate::components::UploadReply)| {
            leptos::task::spawn_local(async move {
                match rare::load(state).await {
                    Some(rare) => (rare.upload)(file, reply).await,
                    None => reply
                        .run(Err(fill(Key::NotUploaded, &[("name", &file.name()), ("why", t(Key::PartNotLoaded))]))),
                }
            })
        }),
        export: Callback::new(move |format: crate::draft::ExportFormat| {
            if let Some(session_id) = state.session_id.get_untracked() {
                download(&format!("/api/sessions/{session_id}/export?format={}", format.as_str()));
            }
        }),
        open_hit: Callback::new(move |hit: SearchHit| {
            follow::go_to(page, Some(hit.session_id.clone()));
            if let Some(id) = hit.message_id {
                leptos::task::spawn_local(scroll_to_message(page, hit.session_id, id));
            }
        }),
    }
}

/// Fetches the diff of the run with checkpoint `key` into `into` (reached only from the rarer requests' chunk).
pub(super) async fn load_changes(state: PageState, key: String, into: RwSignal<ChangesLoad>) {
    let Some(session_id) = state.session_id.get_untracked() else { return };
    into.set(match api::run_changes(&session_id, &key).await {
        Ok(changes) => ChangesLoad::Loaded(std::sync::Arc::new(changes)),
        Err(error) => ChangesLoad::Failed(error.to_string()),
    });
}

thread_local! {
    /// The number of the last search asked for: an answer to an earlier one arrived late and is dropped.
    static LAST_SEARCH: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn search(state: PageState, query: String) {
    let number = LAST_SEARCH.with(|last| {
        last.set(last.get() + 1);
        last.get()
    });
    if query.trim().is_empty() {
        state.search_hits.set(None);
        return;
    }
    leptos::task::spawn_local(async move {
        let Some(rare) = rare::load(state).await else { return };
        let answer = (rare.search)(query).await;
        if LAST_SEARCH.with(std::cell::Cell::get) != number {
            return;
        }
        match answer {
            Ok(found) => state.search_hits.set(Some(found.hits)),
            Err(error) => state.problem.set(Some(fill(Key::SearchFailed, &[("error", &error.to_string())]))),
        }
    });
}

/// How long a hit's message may take to appear once its session is opened: its transcript is loaded first and, on
/// the first session opened, the rows' chunk; 10 s, for a slow phone on a slow line.
const FIND_MESSAGE_TRIES: u32 = 200;
const FIND_MESSAGE_EVERY: Duration = Duration::from_millis(50);

/// Scrolls the opened session's message `id` into view and marks it (`data-found`) for a moment, first showing the
/// branch it is on when that is not the branch on screen. The id goes into a CSS selector, so only an id of
/// letters, digits, `-` and `_` (every id the server makes) is looked for.
async fn scroll_to_message(page: Page, session_id: String, id: String) {
    if !crate::app::is_plain_id(&id) {
        return;
    }
    let selector = format!("[data-message-id=\"{id}\"]");
    let group_selector = format!("[data-messages~=\"{id}\"]");
    let find = |selector: &str| {
        web_sys::window()
            .and_then(|window| window.document())
            .and_then(|document| document.query_selector(selector).ok().flatten())
    };
    let pause = api::Pause::new();
    let mut branch_shown = false;
    for _ in 0..FIND_MESSAGE_TRIES {
        pause.sleep(FIND_MESSAGE_EVERY).await;
        if !branch_shown && off_branch(page.state, &session_id, &id) {
            // An earlier version of an edited or regenerated message (or what followed it): its hit names it, and
            // the server shows the branch through it, as the version arrows would.
            branch_shown = true;
            (following::load(page).await.show_branch)(page, id.clone()).await;
            continue;
        }
        let Some(element) = find(&selector) else {
            // A message far from the viewport is not built: scrolling to its group's box builds it.
            if let Some(group) = find(&group_selector) {
                group.scroll_into_view();
            }
            continue;
        };
        // One more pause: the transcript scrolls to its end once its rows are in, and that must come first. That
        // scroll may let the message's group go (it was built while near the viewport): then it is looked for again.
        pause.sleep(FIND_MESSAGE_EVERY).await;
        if !element.is_connected() {
            continue;
        }
        element.scroll_into_view();
        let _ = element.set_attribute("data-found", "true");
        pause.sleep(Duration::from_secs(2)).await;
        let _ = element.remove_attribute("data-found");
        return;
    }
}

/// True once session `session_id` is on screen and its message `id` is known but on a branch not shown.
fn off_branch(state: PageState, session_id: &str, id: &str) -> bool {
    state.session_id.with_untracked(|shown| shown.as_deref() == Some(session_id))
        && state.chat.with_untracked(|chat| chat.tree.contains(id) && chat.message(id).is_none())
}

/// Starts the download of `url` as a click on a link would (the answer names the file).
fn download(url: &str) {
    use wasm_bindgen::JsCast;
    let Some(document) = web_sys::window().and_then(|window| window.document()) else { return };
    let Ok(link) = document.create_element("a") else { return };
    let _ = link.set_attribute("href", url);
    let _ = link.set_attribute("download", "");
    link.unchecked_ref::<web_sys::HtmlElement>().click();
}

fn start(page: Page) {
    let state = page.state;
    state.theme.set(theme::current());
    notify::load_setting(state);
    state.now.set(api::now_millis());
    set_interval(move || state.now.set(api::now_millis()), CLOCK_TICK);
    leptos::task::spawn_local(follow::refresh_sessions(state));
    // A session's URL draws its transcript with the chunks that follow it; the lists' chunk and requests would
    // share the line and HTTP/1.1's six connections with those, and its instantiation the main thread with the
    // transcript's build, so they wait until the transcript is on screen (or its request failed), and then for a
    // task of their own: the build runs in the microtasks that follow the snapshot. A chunk that failed to load
    // does not hold them: there is no transcript to wait for then.
    let session_at_start = state.session_id.get_untracked().is_some();
    leptos::task::spawn_local(async move {
        if session_at_start && following::fetched().await {
            page.first_shown().await;
            api::Pause::new().sleep(Duration::ZERO).await;
        }
        lists::load(page).await;
    });
}

/// Renames a session and lists it under its new title (reached only from the rarer requests' chunk).
pub(super) async fn rename(state: PageState, session_id: String, title: String) {
    match api::rename_session(&session_id, &title).await {
        Ok(renamed) => state.sessions.update(|sessions| {
            if let Some(entry) = sessions.iter_mut().find(|s| s.session_id == renamed.session_id) {
                *entry = renamed;
            }
        }),
        Err(error) => state.problem.set(Some(fill(Key::RenameFailed, &[("error", &error.to_string())]))),
    }
}

/// The workspace's files matching an `@` mention being typed (reached only from the rarer requests' chunk).
pub(super) async fn find_files(state: PageState, query: String, reply: crate::components::FileReply) {
    let session = state.session_id.get_untracked();
    let answer = api::files(&query, session.as_deref()).await;
    reply.run((query, answer.map(|found| found.files).map_err(|error| error.to_string())));
}

/// Uploads an attachment (reached only from the rarer requests' chunk).
pub(super) async fn upload(file: web_sys::File, reply: crate::components::UploadReply) {
    let outcome = api::upload_attachment(&file).await.map_err(|error| match error {
        ClientError::Status { message, .. } => message,
        // Said in the page's language; what went wrong (the network's words) stays as the browser said it.
        other => fill(Key::NotUploaded, &[("name", &file.name()), ("why", &other.to_string())]),
    });
    reply.run(outcome);
}

/// Deletes a session and goes to a new chat if it was on screen (reached only from the rarer requests' chunk).
pub(super) async fn delete(page: Page, session_id: String) {
    let state = page.state;
    match api::delete_session(&session_id).await {
        Ok(()) => {
            if state.session_id.get_untracked().as_deref() == Some(session_id.as_str()) {
                page.navigate("/");
            }
            follow::refresh_sessions(state).await;
        }
        Err(ClientError::Status { status: 409, .. }) => state.problem.set(Some(t(Key::DeleteRunning).into())),
        Err(error) => state.problem.set(Some(fill(Key::DeleteFailed, &[("error", &error.to_string())]))),
    }
}
