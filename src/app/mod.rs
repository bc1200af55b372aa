//! The Leptos application: the HTML shell rendered by the server and the `App` the browser hydrates.

use leptos::prelude::*;
use leptos_meta::{MetaTags, Title, provide_meta_context};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::path;

mod actions;

pub use self::actions::ChatActions;
use crate::chat_state::ChatSnapshot;
use crate::components::{Composer, SessionsSidebar, Transcript};

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
    view! {
        <Title text="chatwire"/>
        <Router>
            <Routes fallback=|| view! { <p class="not-found">"There is no page here."</p> }>
                <Route path=path!("/") view=ChatPage/>
                <Route path=path!("/s/:session_id") view=ChatPage/>
            </Routes>
        </Router>
    }
}

/// The chat layout: sessions on the left, the transcript and the composer on the right.
#[component]
fn ChatPage() -> impl IntoView {
    let params = leptos_router::hooks::use_params_map();
    let actions = ChatActions::new(params.with_untracked(|p| p.get("session_id")));
    provide_context(actions);
    // Effects run only in the browser, so this flips once the WASM has taken over the page.
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| {
        hydrated.set(true);
        actions.load();
    });
    let on_send = Callback::new(move |text: String| actions.send(text));
    let on_stop = Callback::new(move |()| actions.stop());
    let running = Signal::derive(move || actions.chat.with(ChatSnapshot::is_running));

    view! {
        <div class="app" data-hydrated=move || if hydrated.get() { "true" } else { "false" }>
            <SessionsSidebar sessions=actions.sessions current=actions.session_id/>
            <main class="chat">
                <Transcript chat=actions.chat.read_only() on_suggestion=on_send/>
                <Show when=move || actions.problem.with(Option::is_some)>
                    <p class="chat__problem" role="alert">{move || actions.problem.get()}</p>
                </Show>
                <Composer on_send on_stop running disabled=Signal::derive(move || !hydrated.get())/>
            </main>
        </div>
    }
}
