//! The Leptos application: the HTML shell rendered by the server and the `App` the browser hydrates.

use leptos::prelude::*;

mod actions;
#[cfg(feature = "ssr")]
pub mod options;

pub use self::actions::{
    Link, PageRequests, PageState, fork_summary, models_of, preselected_agent, preselected_model, restore_summary,
    skips_ahead,
};
use crate::chat_state::ChatSnapshot;
use crate::chat_state::attention::counted_title;
#[cfg(feature = "hydrate")]
use crate::client::connect;
use crate::components::{
    ActivityLine, AgentBar, ChatBar, ClientOnly, Composer, Drawer, LanguageSetting, MessageActions,
    NotificationSetting, Outgoing, PageCommand, PaletteChoice, QueueChips, QuickSwitcher, SessionsSidebar, Switcher,
    SwitcherButton, ToolRowContext, Transcript, bar_title, prefetch_message_rows, prefetch_parser,
};
use crate::i18n::{Key, Lang, LiveText, tr};
use crate::protocol::{AgentMode, AttachmentRef, Rerun, RerunKind, StreamingBehavior};

/// The server's requests: it renders the page and never runs a handler, so there is nothing for them to do.
#[cfg(not(feature = "hydrate"))]
fn connect(_state: PageState) -> PageRequests {
    PageRequests {
        start: Callback::new(|()| {}),
        open: Callback::new(|_| {}),
        send: Callback::new(|_| {}),
        prefetch: Callback::new(|()| {}),
        stop: Callback::new(|()| {}),
        answer: Callback::new(|_| {}),
        decide: Callback::new(|_| {}),
        rename: Callback::new(|_| {}),
        delete: Callback::new(|_| {}),
        pick_model: Callback::new(|_| {}),
        pick_agent: Callback::new(|_| {}),
        go_to: Callback::new(|_| {}),
        set_theme: Callback::new(|_| {}),
        set_notify: Callback::new(|_| {}),
        search: Callback::new(|_| {}),
        open_hit: Callback::new(|_| {}),
        show_branch: Callback::new(|_| {}),
        restore: Callback::new(|_| {}),
        restore_then_send: Callback::new(|_| {}),
        fork: Callback::new(|_| {}),
        list_conversations: Callback::new(|_| {}),
        open_conversation: Callback::new(|_| {}),
        load_changes: Callback::new(|_| {}),
        find_files: Callback::new(|_| {}),
        export: Callback::new(|_| {}),
        upload: Callback::new(|_| {}),
        set_option: Callback::new(|_| {}),
    }
}

/// Puts the theme picked in this browser on the root before the first paint, so a dark pick never flashes light.
/// The client keeps it up to date afterwards (`client::theme`); the key is the one it writes.
const THEME_SCRIPT: &str = "try{var t=localStorage.getItem('chatwire.theme');\
if(t==='light'||t==='dark')document.documentElement.dataset.theme=t}catch(e){}";

/// `public/favicon.svg` as a `data:` URL: in the page, the icon costs no request of its own, which on a slow line
/// would share the line with the WASM's download (the browser asks for it while the page is loading).
fn favicon_data_url() -> String {
    let mut url = String::from("data:image/svg+xml,");
    for c in include_str!("../../public/favicon.svg").trim().chars() {
        match c {
            '%' => url.push_str("%25"),
            '#' => url.push_str("%23"),
            '<' => url.push_str("%3C"),
            '>' => url.push_str("%3E"),
            '"' => url.push('\''),
            '\n' => {}
            c => url.push(c),
        }
    }
    url
}

/// The page's content-hashed WASM module, how it gets the module's script, and its stylesheet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageAssets {
    pub wasm: String,
    pub script: PageScript,
    pub stylesheet: Stylesheet,
    /// The URLs of the chunk that draws a session's transcript ([`SESSION_SPLIT`]), its own file first; empty in a
    /// build without chunks.
    pub session_chunk: Vec<String>,
}

/// The name of the chunk that draws a session's transcript, as its split points give it
/// (`components::message::split`, `client::following`): a session's page asks for its files early
/// ([`early_fetch_script`]).
pub const SESSION_SPLIT: &str = "session";

/// How the page gets the WASM module's JavaScript glue and, in a split build, the loader of its chunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageScript {
    /// Both merged into the page itself (release builds, `server::boot_script`): they come in the round trip in
    /// which the line would otherwise idle until the WASM's first byte, instead of sharing the line with it.
    Inline {
        source: &'static str,
        /// The local names, in `source`, of the glue's `default` and `hydrate` exports.
        init: &'static str,
        hydrate: &'static str,
    },
    /// Links to the files (development, or a release whose files could not be merged).
    Linked { glue: String, split_loader: Option<String> },
}

impl PageAssets {
    /// The page's `Link` header: the same preloads as its `<head>`, which a browser acts on as soon as the response's
    /// headers are in, before the page's own bytes (on a slow line the page takes a round trip or more). For a page
    /// at `/s/{id}`, `path`, also the transcript of that session: the client asks for it when hydrated
    /// (`client::follow::open`), and takes the preloaded answer instead of waiting that long.
    pub fn preload_header(&self, path: &str) -> String {
        let mut links = vec![format!("<{}>; rel=preload; as=fetch; type=\"application/wasm\"; crossorigin", self.wasm)];
        match &self.script {
            PageScript::Inline { .. } => {}
            PageScript::Linked { glue, split_loader } => {
                links.push(format!("<{glue}>; rel=modulepreload"));
                links.extend(split_loader.iter().map(|loader| format!("<{loader}>; rel=modulepreload")));
            }
        }
        // Only ids that need no escaping: anything else in a `Link` header could end the entry or the header.
        if let Some(session) = session_in_path(path).filter(|id| is_plain_id(id)) {
            links.push(format!("</api/sessions/{session}>; rel=preload; as=fetch; crossorigin"));
        }
        links.join(", ")
    }
}

/// How the page gets its stylesheet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stylesheet {
    /// In the page itself (release builds): the first paint waits for no second request, which costs a round trip
    /// and shares the line with the WASM's download (docs/decisions.md, "The stylesheet in the page").
    Inline(&'static str),
    /// A link to the file (development): `cargo leptos watch` swaps the linked file when it changes.
    Link(String),
}

/// The whole HTML document. `assets` is `None` only when the site was not built; the page then renders without scripts.
pub fn shell(options: LeptosOptions, assets: Option<PageAssets>) -> impl IntoView {
    let lang = page_language();
    provide_context(lang);
    view! {
        <!DOCTYPE html>
        <html lang=lang.tag()>
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <meta name="color-scheme" content="light dark"/>
                <link rel="icon" href=favicon_data_url() type="image/svg+xml"/>
                <link rel="manifest" href="/manifest.webmanifest"/>
                <link rel="apple-touch-icon" href="/icon-192.png"/>
                <meta name="theme-color" content="#2f6feb"/>
                <script nonce=leptos::nonce::use_nonce()>{THEME_SCRIPT}</script>
                <title>"chatwire"</title>
                <PageTexts lang/>
                <AutoReload options/>
                {assets.clone().map(|assets| view! { <PageHead assets/> })}
            </head>
            <body>
                <App/>
                {assets.map(|assets| view! { <BootScript assets/> })}
            </body>
        </html>
    }
}

/// The language of the request the page is drawn for: the switch's cookie, else `Accept-Language`, else English.
#[cfg(feature = "ssr")]
fn page_language() -> Lang {
    use axum::http::header::{ACCEPT_LANGUAGE, COOKIE};
    let Some(parts) = use_context::<axum::http::request::Parts>() else {
        return Lang::default();
    };
    let header = |name| parts.headers.get(name).and_then(|value| value.to_str().ok());
    Lang::negotiate(header(COOKIE), header(ACCEPT_LANGUAGE))
}

#[cfg(not(feature = "ssr"))]
fn page_language() -> Lang {
    Lang::default()
}

/// The zh-CN texts for the browser: inlined into a zh-CN page (hydration needs them before anything is drawn), and
/// where to fetch them when an English page is switched to zh-CN.
#[cfg(feature = "ssr")]
#[component]
fn PageTexts(lang: Lang) -> impl IntoView {
    let (texts, path) = crate::i18n::zh_cn_wire();
    let inlined = match lang {
        Lang::En => "",
        Lang::ZhCn => texts.as_str(),
    };
    view! { <meta name=crate::i18n::TEXTS_META content=inlined data-src=path.as_str()/> }
}

#[cfg(not(feature = "ssr"))]
#[component]
fn PageTexts(lang: Lang) -> impl IntoView {
    let _ = lang;
}

/// The page's head part of its assets: the preloads, then the stylesheet.
#[component]
fn PageHead(
    /// Where the hashed files are served.
    assets: PageAssets,
) -> impl IntoView {
    let fetch_early = early_fetch_script(&assets, &page_path())
        .map(|script| view! { <script nonce=leptos::nonce::use_nonce()>{script}</script> });
    let preloads = match assets.script {
        PageScript::Inline { .. } => None,
        PageScript::Linked { glue, split_loader } => Some(view! {
            <link rel="modulepreload" href=glue/>
            {split_loader.map(|loader| view! { <link rel="modulepreload" href=loader/> })}
        }),
    };
    let stylesheet = match assets.stylesheet {
        Stylesheet::Inline(css) => view! { <style nonce=leptos::nonce::use_nonce() inner_html=css></style> }.into_any(),
        Stylesheet::Link(href) => view! { <link rel="stylesheet" href=href/> }.into_any(),
    };
    // The preloads first: the WASM's download starts as soon as these bytes of the page are in, not after the
    // stylesheet's.
    view! {
        {preloads}
        <link rel="preload" href=assets.wasm r#as="fetch" r#type="application/wasm" crossorigin=""/>
        {fetch_early}
        {stylesheet}
    }
}

/// Boots the WASM, which then hydrates the server-rendered page; then registers the service worker
/// (`public/sw.js`) that lets the installed app open without the server. At the end of the body: a module script
/// runs once the page is parsed wherever it stands, and there its ~9 KB (inline in a release build) come after the
/// body's, which the first paint waits for.
///
/// Leptos' own `HydrationScripts` reads the hashed names from a `hash.txt`
/// beside the executable at run time; ours come from the asset table, so a
/// release binary copied alone anywhere still finds them.
#[component]
fn BootScript(
    /// Where the hashed files are served.
    assets: PageAssets,
) -> impl IntoView {
    view! { <script type="module" nonce=leptos::nonce::use_nonce()>{boot_source(&assets, &page_path())}</script> }
}

/// The boot script's text for a page at `path`: on a session's page it asks for the session's chunk
/// ([`early_fetch_script`]) before hydrating, if that has not been done.
fn boot_source(assets: &PageAssets, path: &str) -> String {
    let (import, init, hydrate) = match &assets.script {
        PageScript::Inline { source, init, hydrate } => (source.to_string(), *init, *hydrate),
        PageScript::Linked { glue, .. } => (format!("import init, {{ hydrate }} from {glue:?};"), "init", "hydrate"),
    };
    let fetch_early = match fetches_early(assets, path) {
        true => format!("globalThis.{FETCH_EARLY}?.();\n  "),
        false => String::new(),
    };
    format!(
        "{import}\n{init}({{ module_or_path: {wasm:?} }}).then(() => {{\n  {fetch_early}{hydrate}();\n  \
         if ('serviceWorker' in navigator) navigator.serviceWorker.register('/sw.js').catch(() => {{}});\n}});",
        wasm = assets.wasm,
    )
}

/// The global function by which the boot script asks for the session's chunk before hydrating.
const FETCH_EARLY: &str = "chatwireFetchEarly";

/// On a session's page (`/s/{id}`), a script that asks for the session's chunk as soon as the main module's bytes
/// are in; `None` on any other page, or in a build without chunks.
///
/// The transcript is drawn with that chunk, which the client asks for once it is hydrated: on a line of a few
/// Mbit/s its ~16 files (~230 KB) then started downloading only after the main module had been compiled and had
/// hydrated the page. Asked for with the page they would share the line with the main module and delay typing; so
/// they wait for its bytes, and download while it compiles and hydrates. As preloads, which the loader's own
/// `fetch` then takes. In the head, as a classic script: a module script runs only once the page is parsed, often
/// after the bytes are in. (Asked for at once when the main module is cached, they only compete with its
/// instantiation for the CPU: on two cores the open of a long session was no faster.)
fn early_fetch_script(assets: &PageAssets, path: &str) -> Option<String> {
    if !fetches_early(assets, path) {
        return None;
    }
    Some(format!(
        r#"(() => {{
  let asked = false;
  const fetchEarly = globalThis.{FETCH_EARLY} = () => {{
    if (asked) return;
    asked = true;
    for (const href of {files:?}) {{
      document.head.append(Object.assign(document.createElement('link'), {{ rel: 'preload', as: 'fetch', crossOrigin: '', href }}));
    }}
  }};
  try {{
    new PerformanceObserver((list, observer) => {{
      if (!list.getEntries().some((entry) => new URL(entry.name).pathname === {wasm:?})) return;
      observer.disconnect();
      fetchEarly();
    }}).observe({{ type: 'resource', buffered: true }});
  }} catch {{}}
}})();"#,
        files = assets.session_chunk,
        wasm = assets.wasm,
    ))
}

/// Whether the page at `path` asks for the session's chunk itself: a session's page, in a build with chunks.
fn fetches_early(assets: &PageAssets, path: &str) -> bool {
    session_in_path(path).is_some() && !assets.session_chunk.is_empty()
}

/// The page: one view for both of its paths, `/` (a new chat) and `/s/{id}` (a session); the server answers only
/// those with it. Going from one session to another changes the URL (so back and forward work) without rebuilding
/// the page or dropping the run being followed (`client::location`).
#[component]
pub fn App() -> impl IntoView {
    view! { <ChatPage/> }
}

/// The path of the page being drawn: the request's on the server, the window's in the browser.
pub fn page_path() -> String {
    #[cfg(feature = "ssr")]
    return use_context::<axum::http::request::Parts>()
        .map_or_else(|| "/".to_owned(), |parts| parts.uri.path().to_owned());
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    return crate::client::location::current();
    #[cfg(not(any(feature = "ssr", feature = "hydrate")))]
    "/".to_owned()
}

/// An id of letters, digits, `-` and `_` (every id the server makes): it goes into a header, a URL or a CSS
/// selector as it is.
pub fn is_plain_id(id: &str) -> bool {
    !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The session a page path names: `/s/{id}`.
pub fn session_in_path(path: &str) -> Option<String> {
    let id = path.strip_prefix("/s/")?.trim_end_matches('/');
    (!id.is_empty() && !id.contains('/')).then(|| id.to_owned())
}

/// The chat layout: sessions on the left; the transcript, the activity line and the composer on the right.
#[component]
fn ChatPage() -> impl IntoView {
    let state = PageState::new(page_path());
    let requests = connect(state);
    let busy = Signal::derive(move || state.busy());
    // The agent of what is on screen decides what the page offers: its models, whether it can edit and regenerate.
    let models = Signal::derive(move || {
        let agent = state.agent_info();
        state.models.with(|all| models_of(all, agent.as_ref()))
    });
    let rerun_unavailable = Signal::derive(move || match state.agent_info() {
        Some(info) => info.rerun_unavailable,
        None => state.rerun_unavailable.get(),
    });
    provide_context(ToolRowContext { run_active: busy, answer: requests.answer, decide: requests.decide });
    provide_context(message_actions(state, requests, busy, rerun_unavailable));
    // Effects run only in the browser, so this flips once the WASM has taken over the page.
    let hydrated = RwSignal::new(false);
    Effect::new(move |started: Option<()>| {
        let session = state.path.with(|path| session_in_path(path));
        if started.is_none() {
            hydrated.set(true);
            requests.start.run(());
        }
        if session.is_some() {
            // Its messages need the markdown parser's and the rows' chunks: all are fetched at once, not one after
            // the other.
            prefetch_parser();
            prefetch_message_rows();
        }
        requests.open.run(session);
    });
    let on_suggestion = Callback::new(move |text: String| {
        requests.send.run(Outgoing {
            text,
            mode: AgentMode::Agent,
            plan_action: None,
            behavior: StreamingBehavior::Steer,
            rerun: None,
            command: None,
            attachments: Vec::new(),
        })
    });
    let running = Signal::derive(move || state.chat.with(ChatSnapshot::is_running));
    let last_error = Signal::derive(move || state.chat.with(|chat| chat.last_error.clone()));
    let plan = Signal::derive(move || state.chat.with(|c| c.plan.clone()));
    let queue = Signal::derive(move || state.chat.with(|c| c.queue.clone()));
    let activity = Signal::derive(move || state.chat.with(|c| c.activity.clone()));
    let output_streaming = Signal::derive(move || state.chat.with(|c| c.output_streaming));
    let reconnecting = Signal::derive(move || state.reconnecting());
    let several_agents = Signal::derive(move || state.several_agents());
    // Named in the sidebar's rows only when there is a choice; a row of a session not bound yet names the default.
    let default_agent = Signal::derive(move || {
        state
            .agents
            .with(|agents| agents.as_ref().filter(|_| several_agents.get()).map(|agents| agents.default.clone()))
    });
    let switcher = Switcher::new();
    let on_choose = Callback::new(move |choice: PaletteChoice| match choice {
        PaletteChoice::Open(session_id) => requests.go_to.run(Some(session_id)),
        PaletteChoice::NewChat => requests.go_to.run(None),
        PaletteChoice::Mode(mode) => state.mode.set(mode),
        PaletteChoice::Model(name) => requests.pick_model.run(name),
        PaletteChoice::Theme(theme) => requests.set_theme.run(theme),
    });
    // What the session's agent offers, as the reducer keeps its latest `agent_options` frame; its own memo, so the
    // composer's pickers are drawn again when that changes, not at every frame.
    let offered = Memo::new(move |_| state.chat.with(|chat| chat.agent_options.clone().unwrap_or_default()));
    let agent_commands = Signal::derive(move || offered.with(|offered| offered.commands.clone()));
    let agent_options = Signal::derive(move || {
        // A refused pick says so on the problem line; drawing the pickers again then shows the value in force.
        state.problem.track();
        offered.with(|offered| offered.options.clone())
    });
    let note = RwSignal::new(None::<LiveText>);
    // The tab's title counts what happened in runs while it was hidden; the server's title is the plain name.
    Effect::new(move |_| document().set_title(&counted_title("chatwire", state.unseen.get())));
    let on_command = Callback::new(move |command: PageCommand| match command {
        PageCommand::NewChat => requests.go_to.run(None),
        PageCommand::Export(format) => match state.session_id.get_untracked() {
            Some(_) => requests.export.run(format),
            None => note.set(Some(LiveText::of(Key::NothingToExport))),
        },
    });

    let drawer = Drawer::new();
    // Opening a session from anywhere (the quick switcher, back and forward) puts the drawer away too.
    Effect::new(move |seen: Option<()>| {
        state.path.track();
        if seen.is_some() {
            drawer.close();
        }
    });

    view! {
        <div
            class=move || drawer.app_class()
            data-hydrated=move || if hydrated.get() { "true" } else { "false" }
            on:click=move |event| drawer.close_on_choice(event)
        >
            <SessionsSidebar
                sessions=state.sessions
                current=state.session_id
                unseen=state.unseen_sessions
                now=state.now
                on_rename=requests.rename
                on_delete=requests.delete
                search_hits=state.search_hits
                on_search=requests.search
                on_open_hit=requests.open_hit
                default_agent
            >
                <SwitcherButton switcher/>
                <NotificationSetting
                    enabled=state.notify
                    permission=state.notify_permission
                    on_change=requests.set_notify
                />
                <LanguageSetting/>
            </SessionsSidebar>
            // Covers the chat behind the open drawer on a phone; a tap on it closes the drawer.
            <div class="scrim" aria-hidden="true" on:click=move |_| drawer.close()></div>
            <main class="chat">
                <ChatBar
                    drawer
                    title=Signal::derive(move || {
                        state.sessions.with(|sessions| state.session_id.with(|id| bar_title(sessions, id.as_deref())))
                    })
                />
                // Hidden until the agents are loaded, which the server does not wait for: not hydrated.
                {ClientOnly(view! {
                <AgentBar
                    several=several_agents
                    can_open=Signal::derive(move || {
                        state.agent_info().is_some_and(|agent| agent.open_unavailable.is_none())
                    })
                    now=state.now
                    on_list=requests.list_conversations
                    on_open=requests.open_conversation
                    agents=Signal::derive(move || {
                        state.agents.with(|agents| {
                            let agents = agents.iter().flat_map(|agents| &agents.agents);
                            agents.map(|agent| (agent.name.clone(), agent.name.clone(), String::new())).collect()
                        })
                    })
                    new_chat=Signal::derive(move || state.session_id.with(Option::is_none))
                    agent=Signal::derive(move || state.agent_info().map(|agent| agent.name))
                    on_pick=requests.pick_agent
                />
                })}
                <Transcript chat=state.chat.read_only() on_suggestion sessions=state.sessions current=state.session_id now=state.now/>
                <ActivityLine activity running output_streaming reconnecting last_error/>
                // What only a run or a request in the browser can show: the server renders none of it, so none of
                // it is hydrated.
                {ClientOnly(view! {
                <Show when=move || state.unreachable.get()>
                    <p class="chat__unreachable" role="alert" data-testid="unreachable">
                        {tr(Key::Unreachable)}
                    </p>
                </Show>
                <Show when=move || state.problem.with(Option::is_some)>
                    <p class="chat__problem" role="alert">{move || state.problem.get()}</p>
                </Show>
                <Show when=move || state.notice.with(Option::is_some)>
                    <p class="chat__notice" role="status" data-testid="notice">
                        {move || state.notice.with(|notice| notice.as_ref().map(LiveText::text))}
                        <button type="button" class="chat__notice-close" aria-label=tr(Key::Dismiss) on:click=move |_| state.notice.set(None)>
                            "×"
                        </button>
                    </p>
                </Show>
                <QueueChips
                    queue
                    no_steering=Signal::derive(move || state.agent_info().and_then(|agent| agent.steer_unavailable))
                />
                })}
                <Composer
                    on_send=requests.send
                    // A send may come: its code and the rows that draw what is sent are fetched while it is typed.
                    on_focus=Callback::new(move |()| {
                        requests.prefetch.run(());
                        prefetch_message_rows();
                    })
                    on_stop=requests.stop
                    busy
                    plan
                    disabled=Signal::derive(move || !hydrated.get())
                    models
                    model=state.model
                    on_model=requests.pick_model
                    mode=state.mode
                    handed=state.handed
                    context=Signal::derive(move || state.chat.with(ChatSnapshot::context))
                    on_command
                    find_files=requests.find_files
                    note
                    upload=requests.upload
                    limits=state.attachment_limits
                    agent=Signal::derive(move || state.agent_info().map(|agent| agent.name))
                    compact_unavailable=Signal::derive(move || state.agent_info().and_then(|agent| agent.compact_unavailable))
                    agent_commands
                    agent_options
                    on_option=requests.set_option
                />
            </main>
        </div>
        // Closed until asked for: the server draws nothing of it to hydrate.
        {ClientOnly(view! {
        <QuickSwitcher
            switcher
            sessions=state.sessions
            current=state.session_id
            models
            model=state.model
            mode=state.mode
            theme=state.theme
            on_choose
        />
        })}
    }
}

/// Edit, Regenerate and the version arrows of the transcript's messages, as sends and branch switches.
fn message_actions(
    state: PageState,
    requests: PageRequests,
    busy: Signal<bool>,
    rerun_unavailable: Signal<Option<String>>,
) -> MessageActions {
    // `restore_before`: the message whose checkpoint the files go back to before the run, when asked to.
    let rerun = move |text: String, kind: RerunKind, message_id: String, restore_before: bool| {
        let outgoing = Outgoing {
            text,
            mode: state.mode.get_untracked(),
            plan_action: None,
            behavior: StreamingBehavior::Steer,
            rerun: Some(Rerun { kind, message_id: message_id.clone() }),
            command: None,
            // An edit keeps the message's files; a regeneration answers the message as it was, files and all.
            attachments: match kind {
                RerunKind::Edit => state.chat.with_untracked(|chat| {
                    chat.any_message(&message_id)
                        .map(|message| {
                            message
                                .files()
                                .map(|file| AttachmentRef { id: file.id.clone(), name: file.name.clone() })
                                .collect()
                        })
                        .unwrap_or_default()
                }),
                RerunKind::Regenerate => Vec::new(),
            },
        };
        if restore_before {
            requests.restore_then_send.run((message_id, outgoing));
        } else {
            requests.send.run(outgoing);
        }
    };
    MessageActions {
        editing: RwSignal::new(None),
        last_message: Memo::new(move |_| state.chat.with(|chat| chat.messages.last().map(|m| m.id.clone()))).into(),
        busy,
        rerun_unavailable,
        edit: Callback::new(move |(id, text, restore_first): (String, String, bool)| {
            rerun(text, RerunKind::Edit, id, restore_first)
        }),
        regenerate: Callback::new(move |(answer, restore_first): (String, bool)| {
            // The answer's parent is the message it replied to.
            let asked = state.chat.with_untracked(|chat| chat.tree.parent(&answer).cloned().flatten());
            if let Some(asked) = asked {
                rerun(String::new(), RerunKind::Regenerate, asked, restore_first);
            }
        }),
        show_branch: requests.show_branch,
        restore: requests.restore,
        fork: requests.fork,
        load_changes: requests.load_changes,
    }
}

#[cfg(test)]
mod tests {
    use super::{PageAssets, PageScript, Stylesheet, boot_source, early_fetch_script, session_in_path};

    #[test]
    fn a_session_path_names_its_session() {
        assert_eq!(session_in_path("/s/abc-1"), Some("abc-1".into()));
        assert_eq!(session_in_path("/s/abc-1/"), Some("abc-1".into()));
        assert_eq!(session_in_path("/"), None);
        assert_eq!(session_in_path("/s/"), None);
        assert_eq!(session_in_path("/s/a/b"), None);
        assert_eq!(session_in_path("/other"), None);
    }

    #[test]
    fn a_session_page_preloads_its_transcript() {
        let assets = PageAssets {
            wasm: "/pkg/chatwire.h.wasm".into(),
            script: PageScript::Linked { glue: "/pkg/chatwire.h.js".into(), split_loader: None },
            stylesheet: Stylesheet::Link("/pkg/chatwire.h.css".into()),
            session_chunk: Vec::new(),
        };
        let session = "</api/sessions/abc-1>; rel=preload; as=fetch; crossorigin";
        assert!(assets.preload_header("/s/abc-1").ends_with(&format!(", {session}")));
        assert!(!assets.preload_header("/").contains("/api/"));
        assert!(!assets.preload_header("/s/a%3E%2C").contains("/api/"), "an id that would need escaping is left out");
    }

    #[test]
    fn a_session_page_asks_for_the_session_chunk_before_hydrating() {
        let assets = PageAssets {
            wasm: "/pkg/chatwire.h.wasm".into(),
            script: PageScript::Inline { source: "function i(){}function h(){}", init: "i", hydrate: "h" },
            stylesheet: Stylesheet::Inline(""),
            session_chunk: vec!["/pkg/split_session.s.wasm".into(), "/pkg/chunk_9.c.wasm".into()],
        };
        let head = early_fetch_script(&assets, "/s/abc-1").expect("a session's page asks for its chunk");
        assert!(head.contains(r#"for (const href of ["/pkg/split_session.s.wasm", "/pkg/chunk_9.c.wasm"])"#), "{head}");
        assert!(head.contains(r#"new URL(entry.name).pathname === "/pkg/chatwire.h.wasm""#), "{head}");
        let boot = boot_source(&assets, "/s/abc-1");
        assert!(boot.contains("then(() => {\n  globalThis.chatwireFetchEarly?.();\n  h();"), "{boot}");

        assert_eq!(early_fetch_script(&assets, "/"), None);
        let new_chat = boot_source(&assets, "/");
        assert!(new_chat.contains("then(() => {\n  h();"), "{new_chat}");
        let unsplit = PageAssets { session_chunk: Vec::new(), ..assets };
        assert_eq!(early_fetch_script(&unsplit, "/s/abc-1"), None, "a build without chunks");
    }
}
