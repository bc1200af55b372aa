//! The Leptos application: the HTML shell rendered by the server and the `App` the browser hydrates.

use leptos::prelude::*;
use leptos_meta::{MetaTags, Title, provide_meta_context};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::path;

mod actions;

pub use self::actions::{ChatActions, Link};
use crate::chat_state::ChatSnapshot;
use crate::components::{
    ActivityLine, Answer, Composer, Decision, Outgoing, QueueChips, SessionsSidebar, ToolRowContext, Transcript,
};
use crate::protocol::{AgentMode, StreamingBehavior};

/// URLs of the page's content-hashed script, WASM module and stylesheet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageAssets {
    pub script: String,
    pub wasm: String,
    pub stylesheet: String,
}

/// The whole HTML document. `assets` is `None` only when the site was not built; the page then renders without scripts.
pub fn shell(options: LeptosOptions, assets: Option<PageAssets>) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <meta name="color-scheme" content="light dark"/>
                <link rel="icon" href="/favicon.svg" type="image/svg+xml"/>
                <AutoReload options/>
                {assets.map(|assets| view! { <PageScripts assets/> })}
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

/// Loads the stylesheet and boots the WASM, which then hydrates the server-rendered page.
///
/// Leptos' own `HydrationScripts` reads the hashed names from a `hash.txt`
/// beside the executable at run time; ours come from the asset table, so a
/// release binary copied alone anywhere still finds them.
#[component]
fn PageScripts(
    /// Where the hashed files are served.
    assets: PageAssets,
) -> impl IntoView {
    let boot = format!(
        "import init, {{ hydrate }} from {:?};\ninit({{ module_or_path: {:?} }}).then(() => hydrate());",
        assets.script, assets.wasm
    );
    view! {
        <link rel="stylesheet" href=assets.stylesheet/>
        <link rel="modulepreload" href=assets.script/>
        <link rel="preload" href=assets.wasm r#as="fetch" r#type="application/wasm" crossorigin=""/>
        <script type="module" nonce=leptos::nonce::use_nonce()>{boot}</script>
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    // The chat page lives outside `Routes`: switching sessions changes the URL (so back and forward work) without
    // rebuilding the page or dropping the run being followed. `Routes` still names the paths the server renders.
    view! {
        <Title text="chatwire"/>
        <Router>
            <ChatPage/>
            <Routes fallback=|| view! { <p class="not-found">"There is no page here."</p> }>
                <Route path=path!("/") view=|| ()/>
                <Route path=path!("/s/:session_id") view=|| ()/>
            </Routes>
        </Router>
    }
}

/// The session a page path names: `/s/{id}`.
pub fn session_in_path(path: &str) -> Option<String> {
    let id = path.strip_prefix("/s/")?.trim_end_matches('/');
    (!id.is_empty() && !id.contains('/')).then(|| id.to_owned())
}

/// The chat layout: sessions on the left; the transcript, the activity line and the composer on the right.
#[component]
fn ChatPage() -> impl IntoView {
    let location = leptos_router::hooks::use_location();
    let actions = ChatActions::new(location.pathname.with_untracked(|path| session_in_path(path)));
    provide_context(ToolRowContext {
        run_active: Signal::derive(move || actions.busy()),
        answer: Callback::new(move |reply: Answer| actions.answer(reply.tool_call_id, reply.answer, reply.sending)),
        decide: Callback::new(move |reply: Decision| actions.approve(reply.tool_call_id, reply.approve, reply.sending)),
    });
    // Effects run only in the browser, so this flips once the WASM has taken over the page.
    let hydrated = RwSignal::new(false);
    Effect::new(move |started: Option<()>| {
        let session = location.pathname.with(|path| session_in_path(path));
        if started.is_none() {
            hydrated.set(true);
            actions.start();
        }
        actions.open(session);
    });
    let on_send = Callback::new(move |outgoing: Outgoing| actions.send(outgoing));
    let on_suggestion = Callback::new(move |text: String| {
        actions.send(Outgoing { text, mode: AgentMode::Agent, plan_action: None, behavior: StreamingBehavior::Steer })
    });
    let on_stop = Callback::new(move |()| actions.stop());
    let busy = Signal::derive(move || actions.busy());
    let running = Signal::derive(move || actions.chat.with(ChatSnapshot::is_running));
    let plan = Signal::derive(move || actions.chat.with(|c| c.plan.clone()));
    let queue = Signal::derive(move || actions.chat.with(|c| c.queue.clone()));
    let activity = Signal::derive(move || actions.chat.with(|c| c.activity.clone()));
    let output_streaming = Signal::derive(move || actions.chat.with(|c| c.output_streaming));
    let reconnecting = Signal::derive(move || match actions.link.get() {
        Link::Reconnecting { attempt } => Some(attempt),
        Link::Idle | Link::Live => None,
    });

    view! {
        <div class="app" data-hydrated=move || if hydrated.get() { "true" } else { "false" }>
            <SessionsSidebar
                sessions=actions.sessions
                current=actions.session_id
                now=actions.now
                on_rename=Callback::new(move |(id, title)| actions.rename(id, title))
                on_delete=Callback::new(move |id| actions.delete(id))
            />
            <main class="chat">
                <Transcript chat=actions.chat.read_only() on_suggestion/>
                <ActivityLine activity running output_streaming reconnecting/>
                <Show when=move || actions.problem.with(Option::is_some)>
                    <p class="chat__problem" role="alert">{move || actions.problem.get()}</p>
                </Show>
                <QueueChips queue/>
                <Composer
                    on_send
                    on_stop
                    busy
                    plan
                    disabled=Signal::derive(move || !hydrated.get())
                    models=actions.models
                    model=actions.model
                    on_model=Callback::new(move |name| actions.pick_model(name))
                />
            </main>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::session_in_path;

    #[test]
    fn a_session_path_names_its_session() {
        assert_eq!(session_in_path("/s/abc-1"), Some("abc-1".into()));
        assert_eq!(session_in_path("/s/abc-1/"), Some("abc-1".into()));
        assert_eq!(session_in_path("/"), None);
        assert_eq!(session_in_path("/s/"), None);
        assert_eq!(session_in_path("/s/a/b"), None);
        assert_eq!(session_in_path("/other"), None);
    }
}
