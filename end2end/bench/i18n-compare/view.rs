// The page every variant draws, included by each crate's lib.rs (`include!`). It differs only in the macros the
// crate defines before including it: `tx!` (a text node), `ta!` (an attribute's text), `tname!` (a text with a
// `{title}` value), `tplural!` (a count) and `switch!` (the language switch's click handler): 67 of the table's 300
// keys, drawn 70 times (46 text nodes, the switch's label among them; 22 attributes; one text with a value; one
// plural).
// Beside the texts, what chatwire's page does anyway (so that no variant is charged for it): a JSON list fetched
// with gloo-net and parsed with serde_json.

#[component]
fn Sidebar() -> impl IntoView {
    let i18n = ctx!();
    let sessions = RwSignal::new(Vec::<String>::new());
    leptos::task::spawn_local(async move {
        if let Ok(response) = gloo_net::http::Request::get("/api/sessions").send().await
            && let Ok(list) = response.text().await
            && let Ok(list) = serde_json::from_str::<Vec<String>>(&list)
        {
            sessions.set(list);
        }
    });
    let title = RwSignal::new(String::from("Untitled draft"));
    view! {
        <nav aria-label=ta!(i18n, SessionsAndActions)>
            <h2>{tx!(i18n, Sessions)}</h2>
            <button title=ta!(i18n, NewChat)>{tx!(i18n, NewChat)}</button>
            <p>{tx!(i18n, NoSessions)}</p>
            <span>{tx!(i18n, NewActivity)}</span>
            <ul>{move || sessions.get().into_iter().map(|s| view! { <li>{s}</li> }).collect_view()}</ul>
            <button>{tx!(i18n, Rename)}</button>
            <p>{tname!(i18n, RenameNamed, title)}</p>
            <button>{tx!(i18n, Delete)}</button>
            <p>{tx!(i18n, ConfirmDelete)}</p>
            <p>{tx!(i18n, DeleteQuestion)}</p>
            <button>{tx!(i18n, Cancel)}</button>
            <span>{tx!(i18n, StatusRunning)}</span>
            <span>{tx!(i18n, StatusInterrupted)}</span>
            <span>{tx!(i18n, StatusFailed)}</span>
            <span>{tx!(i18n, JustNow)}</span>
            <input placeholder=ta!(i18n, SearchPlaceholder) aria-label=ta!(i18n, SearchLabel)/>
            <button on:click=switch!(i18n)>{tx!(i18n, SwitchLanguage)}</button>
        </nav>
    }
}

#[component]
fn Transcript() -> impl IntoView {
    let i18n = ctx!();
    let count = RwSignal::new(1);
    view! {
        <main aria-label=ta!(i18n, Conversation)>
            <h1>{tx!(i18n, EmptyHeading)}</h1>
            <button>{tx!(i18n, SuggestExplain)}</button>
            <button>{tx!(i18n, SuggestFix)}</button>
            <button>{tx!(i18n, SuggestReadme)}</button>
            <h3>{tx!(i18n, RecentHeading)}</h3>
            <p>{tx!(i18n, Loading)}</p>
            <p>{tx!(i18n, Untitled)}</p>
            <button title=ta!(i18n, JumpToLatest)>{tx!(i18n, JumpToLatest)}</button>
            <button aria-label=ta!(i18n, CopyMessage)>{tx!(i18n, Copy)}</button>
            <button>{tx!(i18n, Edit)}</button>
            <button>{tx!(i18n, Regenerate)}</button>
            <button>{tx!(i18n, Restore)}</button>
            <button>{tx!(i18n, Fork)}</button>
            <button aria-label=ta!(i18n, Close)>"×"</button>
            <p>{tx!(i18n, PlanReady)}</p>
            <button>{tx!(i18n, Execute)}</button>
            <button title=ta!(i18n, RefineHint)>{tx!(i18n, Refine)}</button>
            <p>{tx!(i18n, AgentAsksColon)}</p>
            <button>{tx!(i18n, Approve)}</button>
            <button>{tx!(i18n, Deny)}</button>
            <button>{tx!(i18n, Yes)}</button>
            <button>{tx!(i18n, No)}</button>
            <input placeholder=ta!(i18n, TypeAnswer)/>
            <button>{tx!(i18n, Submit)}</button>
            <button>{tx!(i18n, Skip)}</button>
            <button on:click=move |_| count.update(|n| *n += 1)>{tplural!(i18n, Files, count)}</button>
        </main>
    }
}

#[component]
fn Composer() -> impl IntoView {
    let i18n = ctx!();
    view! {
        <form aria-label=ta!(i18n, Message)>
            <textarea placeholder=ta!(i18n, ComposerPlaceholder)></textarea>
            <button aria-label=ta!(i18n, AttachFiles) title=ta!(i18n, AttachHint)>{tx!(i18n, Attach)}</button>
            <span>{tx!(i18n, Files)}</span>
            <span>{tx!(i18n, Commands)}</span>
            <label>{tx!(i18n, Mode)}</label>
            <button title=ta!(i18n, ModeAgentHint)>{tx!(i18n, ModeAgent)}</button>
            <button title=ta!(i18n, ModePlanHint)>{tx!(i18n, ModePlan)}</button>
            <button title=ta!(i18n, StopHint)>{tx!(i18n, Stop)}</button>
            <button title=ta!(i18n, SendHint)>{tx!(i18n, Send)}</button>
            <label title=ta!(i18n, ModelHint)>{tx!(i18n, Model)}</label>
            <input placeholder=ta!(i18n, PalettePlaceholder) aria-label=ta!(i18n, PaletteLabel)/>
            <button aria-label=ta!(i18n, Dismiss)>"×"</button>
        </form>
    }
}

#[component]
fn Page() -> impl IntoView {
    view! {
        <Sidebar/>
        <Transcript/>
        <Composer/>
    }
}
