//! Tool rows: a header with the call's status and duration, and a body chosen by tool kind (DESIGN.md §6): the
//! built-in renderers, then `mcp__<server>__<tool>`, then the custom renderers registered by name, then the generic
//! arguments/result view, which is a plain name row when the call has nothing to show.
//!
//! Three kinds of call take the whole row instead: a question (its card), a call waiting for approval or denied
//! (the approval card, for as long as it is in that state), and a Task/Agent call (a group of the sub-agent's rows).
//!
//! The body is chosen once per row (a call keeps its name); inside it, each piece reads only the fields it shows
//! through memos, so a streamed argument delta redraws the growing text, not the row.

mod ansi;
mod approval;
mod bash;
mod chart;
mod diff;
mod files;
mod generic;
mod json_tree;
mod lines;
mod question_card;
mod registry;
mod search;
#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
mod split;
mod task_group;
mod todo;

use leptos::prelude::*;

use crate::components::client_only::{IntoRowView, RowView};

use crate::i18n::{Key, fill, t};
use crate::protocol::{ChatToolPart, INTERRUPTED_TOOL_ERROR, ToolKind, ToolState};

use approval::ApprovalCard;
pub use approval::Decision;
use chart::ChartView;
pub use question_card::Answer;
use question_card::QuestionCard;
pub use registry::{CustomRenderer, ToolRenderers};

/// What tool rows need of the page that shows them, provided as context by it (the app does). Rows drawn without
/// one (the server's own tests) take the run for active, and their cards' buttons do nothing.
#[derive(Clone, Copy)]
pub struct ToolRowContext {
    /// True while a run is active or the page is re-attaching to one; a call still running after that was cut off.
    pub run_active: Signal<bool>,
    /// Sends a question card's answer.
    pub answer: Callback<Answer>,
    /// Sends an approval card's decision.
    pub decide: Callback<Decision>,
}

/// Whether the run the rows belong to is active, as far as the page says.
fn run_active(context: Option<ToolRowContext>) -> bool {
    context.is_none_or(|context| context.run_active.get())
}
pub(crate) use diff::parse_unified;
pub(crate) use files::DiffView;
#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
pub(crate) use split::changes_view;
use task_group::TaskGroup;
pub(crate) use task_group::{MessageParts, top_level};

/// What the row says about its call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowStatus {
    Drafting,
    Running,
    AwaitingApproval,
    Done,
    Failed,
    Denied,
    /// The run ended before the call had a result.
    Interrupted,
}

impl RowStatus {
    pub fn of(state: ToolState, error_text: Option<&str>, run_active: bool) -> RowStatus {
        match state {
            ToolState::OutputAvailable => RowStatus::Done,
            ToolState::OutputDenied => RowStatus::Denied,
            ToolState::OutputError if error_text == Some(INTERRUPTED_TOOL_ERROR) => RowStatus::Interrupted,
            ToolState::OutputError => RowStatus::Failed,
            ToolState::InputStreaming | ToolState::InputAvailable | ToolState::ApprovalRequested if !run_active => {
                RowStatus::Interrupted
            }
            ToolState::InputStreaming => RowStatus::Drafting,
            ToolState::InputAvailable => RowStatus::Running,
            ToolState::ApprovalRequested => RowStatus::AwaitingApproval,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RowStatus::Drafting => "drafting",
            RowStatus::Running => "running",
            RowStatus::AwaitingApproval => "awaiting-approval",
            RowStatus::Done => "done",
            RowStatus::Failed => "error",
            RowStatus::Denied => "denied",
            RowStatus::Interrupted => "interrupted",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            RowStatus::Drafting => t(Key::ToolDrafting),
            RowStatus::Running => t(Key::ToolRunning),
            RowStatus::AwaitingApproval => t(Key::ToolAwaitingApproval),
            RowStatus::Done => t(Key::ToolDone),
            RowStatus::Failed => t(Key::ToolError),
            RowStatus::Denied => t(Key::ToolDenied),
            RowStatus::Interrupted => t(Key::ToolInterrupted),
        }
    }
}

/// `850 ms`, `1.2 s`, `2 min 05 s`.
pub fn format_duration(ms: u64) -> String {
    if ms < 1000 {
        fill(Key::DurationMs, &[("n", &ms.to_string())])
    } else if ms < 60_000 {
        fill(Key::DurationS, &[("n", &crate::protocol::fixed(ms as f64 / 1000.0, 1))])
    } else {
        let secs = (ms + 500) / 1000;
        fill(Key::DurationMin, &[("min", &(secs / 60).to_string()), ("s", &format!("{:02}", secs % 60))])
    }
}

/// The renderer a tool kind gets.
#[derive(Clone)]
pub enum Dispatch {
    /// A renderer of our own; the kind is one of those [`Dispatch::resolve`] gives it to.
    Builtin(ToolKind),
    Mcp {
        server: String,
        tool: String,
    },
    Custom(CustomRenderer),
    Generic,
}

impl Dispatch {
    pub fn resolve(kind: &ToolKind, custom: &ToolRenderers) -> Dispatch {
        match kind {
            ToolKind::Bash
            | ToolKind::IPython
            | ToolKind::Read
            | ToolKind::Write
            | ToolKind::Edit
            | ToolKind::Grep
            | ToolKind::Glob
            | ToolKind::Ls
            | ToolKind::WebSearch
            | ToolKind::TodoWrite
            | ToolKind::PlanWrite
            | ToolKind::Question
            | ToolKind::Task
            | ToolKind::Agent
            | ToolKind::Thinking => Dispatch::Builtin(kind.clone()),
            ToolKind::Mcp { server, tool } => Dispatch::Mcp { server: server.clone(), tool: tool.clone() },
            // A chart is drawn for any tool (below the body); the `chart` tool itself has no body of its own.
            ToolKind::Chart | ToolKind::Other(_) => match custom.get(&kind.part_name()) {
                Some(renderer) => Dispatch::Custom(renderer),
                None => Dispatch::Generic,
            },
        }
    }
}

/// A string argument of the call, as far as it has been written.
pub(crate) fn input_str(part: &ChatToolPart, key: &str) -> Option<String> {
    part.input_str(key).map(str::to_owned)
}

/// One tool call of a message. The row's root keeps `tool tool--<state>` for styling and tests.
///
/// In the browser the renderers come from a WASM chunk of their own, fetched when the first tool row appears (see
/// [`split`]); the server and its tests build rows directly.
#[component]
pub fn ToolRow(tool: ArcRwSignal<ChatToolPart>) -> impl IntoView {
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    let row = split::tool_row(tool);
    #[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
    let row = build_tool_row(tool);
    row
}

/// The row of a tool call, its renderer chosen by the tool's name.
fn build_tool_row(tool: ArcRwSignal<ChatToolPart>) -> RowView {
    let (kind, name) = tool.with_untracked(|part| (part.kind.clone(), part.tool_name().into_owned()));
    let custom = use_context::<ToolRenderers>().unwrap_or_default();
    let dispatch = Dispatch::resolve(&kind, &custom);
    if let Dispatch::Builtin(ToolKind::Task | ToolKind::Agent) = dispatch {
        return view! { <TaskGroup tool/> }.into_row_view();
    }
    let part = RwSignal::from(tool).read_only();
    if let Dispatch::Builtin(ToolKind::Question) = dispatch {
        return (move || view! { <QuestionCard tool=part.get()/> }).into_row_view();
    }
    let carded = Memo::new(move |_| {
        part.with(|part| matches!(part.state, ToolState::ApprovalRequested | ToolState::OutputDenied))
    });
    (move || {
        if carded.get() {
            view! { <ApprovalCard tool=part.get()/> }.into_row_view()
        } else {
            view! { <StandardRow part name=name.clone() dispatch=dispatch.clone()/> }.into_row_view()
        }
    })
    .into_row_view()
}

/// The header with status and duration, the tool's body, and its error.
#[component]
fn StandardRow(part: ReadSignal<ChatToolPart>, name: String, dispatch: Dispatch) -> impl IntoView {
    let context = use_context::<ToolRowContext>();
    let state = Memo::new(move |_| part.with(|part| part.state));
    let status = Memo::new(move |_| {
        let run_active = run_active(context);
        part.with(|part| RowStatus::of(part.state, part.error_text.as_deref(), run_active))
    });
    let duration = Memo::new(move |_| part.with(|part| part.duration_ms));
    let title = match &dispatch {
        Dispatch::Mcp { server, tool } => view! {
            <span class="tool__name">{tool.clone()}</span>
            <span class="tool__server">{format!("mcp · {server}")}</span>
        }
        .into_row_view(),
        Dispatch::Builtin(_) | Dispatch::Custom(_) | Dispatch::Generic => {
            view! { <span class="tool__name">{name.clone()}</span> }.into_row_view()
        }
    };
    let error = Memo::new(move |_| {
        part.with(|part| match part.state {
            // chatwire's own words for a run that stopped are the page's; a tool's own error is the tool's.
            ToolState::OutputError if part.error_text.as_deref() == Some(INTERRUPTED_TOOL_ERROR) => {
                Some(t(Key::ToolCutShort).to_owned())
            }
            ToolState::OutputError | ToolState::OutputDenied => part.error_text.clone(),
            ToolState::InputStreaming
            | ToolState::InputAvailable
            | ToolState::ApprovalRequested
            | ToolState::OutputAvailable => None,
        })
    });
    let chart = Memo::new(move |_| part.with(|part| part.chart().cloned()));
    let body = tool_body(part, &dispatch);
    view! {
        <div
            class=move || format!("part part--tool tool tool--{}", state.get().as_str())
            data-tool=name
            data-tool-call-id=part.with_untracked(|part| part.tool_call_id.clone())
            data-status=move || status.get().as_str()
        >
            <div class="tool__header">
                {title}
                <span class="tool__state">{move || status.get().label()}</span>
                {move || duration.get().map(|ms| view! { <span class="tool__duration">{format_duration(ms)}</span> })}
            </div>
            <div class="tool__body">{body}</div>
            {move || chart.get().map(|spec| view! { <ChartView spec/> })}
            {move || error.get().map(|text| view! { <p class="tool__error">{text}</p> })}
        </div>
    }
}

fn tool_body(part: ReadSignal<ChatToolPart>, dispatch: &Dispatch) -> RowView {
    match dispatch {
        Dispatch::Builtin(kind) => match kind {
            ToolKind::Bash => view! { <bash::BashView part/> }.into_row_view(),
            ToolKind::IPython => view! { <bash::IPythonView part/> }.into_row_view(),
            ToolKind::Read => view! { <files::ReadView part/> }.into_row_view(),
            ToolKind::Write => view! { <files::WriteView part/> }.into_row_view(),
            ToolKind::Edit => view! { <files::EditView part/> }.into_row_view(),
            ToolKind::Grep => view! { <search::GrepView part/> }.into_row_view(),
            ToolKind::Glob | ToolKind::Ls => view! { <search::FileListView part/> }.into_row_view(),
            ToolKind::WebSearch => view! { <generic::WebSearchView part/> }.into_row_view(),
            ToolKind::TodoWrite | ToolKind::PlanWrite => view! { <todo::TodoView part/> }.into_row_view(),
            ToolKind::Thinking => view! { <generic::ThinkingToolView part/> }.into_row_view(),
            // Questions and tasks take the whole row (see `ToolRow`) and never reach this; `resolve` gives the
            // other kinds no built-in renderer.
            ToolKind::Question
            | ToolKind::Task
            | ToolKind::Agent
            | ToolKind::Chart
            | ToolKind::Mcp { .. }
            | ToolKind::Other(_) => view! { <generic::GenericView part/> }.into_row_view(),
        },
        Dispatch::Mcp { .. } => view! { <generic::McpView part/> }.into_row_view(),
        Dispatch::Custom(renderer) => renderer.render(part).into_row_view(),
        Dispatch::Generic => view! { <generic::GenericView part/> }.into_row_view(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const MARKUP: &str = "<img src=x onerror=alert(1)>";

    /// Every renderer, drawn as the server would draw it, with markup in every argument and output field.
    #[test]
    fn no_renderer_turns_tool_text_into_markup() {
        let owner = Owner::new();
        owner.set();
        let input = json!({
            "command": MARKUP, "code": MARKUP, "path": MARKUP, "content": MARKUP, "oldText": MARKUP,
            "newText": MARKUP, "pattern": MARKUP, "query": MARKUP, "thought": MARKUP, "question": MARKUP,
            "description": MARKUP, "prompt": MARKUP,
            "options": [{"id": MARKUP, "label": MARKUP}],
            "todos": [{"text": MARKUP, "status": "completed"}], MARKUP: [MARKUP, {"nested": MARKUP}],
        });
        let output = json!({
            "output": format!("\u{1b}[31m{MARKUP}\u{1b}[0m"), "exitCode": 1, "truncated": true,
            "fullOutputPath": MARKUP, "content": MARKUP, "bytes": 3,
            "diff": format!("--- a/{MARKUP}\n+++ b/{MARKUP}\n@@ -1 +1 @@\n-{MARKUP}\n+{MARKUP}\n"),
            "matches": [format!("{MARKUP}:1:{MARKUP}"), MARKUP], "todos": [{"text": MARKUP, "status": "pending"}],
            "text": MARKUP, "answer": MARKUP, "details": {MARKUP: MARKUP},
            "results": [{"title": MARKUP, "url": MARKUP, "snippet": MARKUP}],
        });
        let names = [
            "Bash",
            "IPython",
            "Read",
            "Write",
            "Edit",
            "Grep",
            "Glob",
            "Ls",
            "WebSearch",
            "TodoWrite",
            "PlanWrite",
            "Question",
            "Task",
            "Agent",
            "Thinking",
            "mcp__server__tool",
            "SomethingElse",
        ];
        for name in names {
            for state in ToolState::ALL {
                let mut part = ChatToolPart::new(name, "call-1", state);
                part.input = Some(input.clone());
                part.output = state.is_terminal().then(|| output.clone());
                part.error_text = Some(MARKUP.to_owned());
                let html = view! { <ToolRow tool=ArcRwSignal::new(part)/> }.to_html();
                assert!(!html.contains("<img"), "{name} in {state:?} made an element: {html}");
                assert!(
                    html.contains("&lt;img src=x onerror=alert(1)&gt;"),
                    "{name} in {state:?} lost the text: {html}"
                );
            }
        }
    }

    /// The text of HTML: tags dropped, our escapes undone.
    fn text_of(html: &str) -> String {
        let mut text = String::new();
        let mut in_tag = false;
        for c in html.chars() {
            match c {
                '<' => in_tag = true,
                '>' if in_tag => in_tag = false,
                c if !in_tag => text.push(c),
                _ => {}
            }
        }
        text.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&amp;", "&")
    }

    /// An Edit row's diff of a code file is highlighted (file lines are drawn by an effect, which the server does
    /// not run: `lines::tests` covers them), and markup in the code is still text.
    #[test]
    fn highlighted_diffs_keep_markup_as_text() {
        let owner = Owner::new();
        owner.set();
        let added = format!("x = \"{MARKUP}\"  # </code><script>alert(2)</script>");
        for path in ["app/page.py", "web/index.html", "src/lib.rs"] {
            let mut part = ChatToolPart::new("Edit", "call-1", ToolState::OutputAvailable);
            part.input = Some(json!({ "path": path, "oldText": "y = 1\n", "newText": format!("{added}\n") }));
            part.output =
                Some(json!({ "diff": format!("--- a/{path}\n+++ b/{path}\n@@ -1,1 +1,1 @@\n-y = 1\n+{added}\n") }));
            let html = view! { <ToolRow tool=ArcRwSignal::new(part)/> }.to_html();
            assert!(!html.contains("<img") && !html.contains("<script"), "{path} made an element: {html}");
            assert!(html.contains("class=\"hl-"), "{path} is highlighted: {html}");
            assert!(html.contains("diff-line--added") && html.contains("diff-line--removed"), "{html}");
            assert!(text_of(&html).contains(&added), "{path} lost the text: {html}");
        }
    }

    #[test]
    fn a_failed_call_shows_its_error_once() {
        let owner = Owner::new();
        owner.set();
        let mut part = ChatToolPart::new("mcp__srv__lookup", "call-1", ToolState::OutputError);
        part.input = Some(json!({"key": "k"}));
        part.output = Some(json!({"text": "the lookup failed", "details": {"code": 7}}));
        part.error_text = Some("the lookup failed".to_owned());
        let html = view! { <ToolRow tool=ArcRwSignal::new(part)/> }.to_html();
        assert_eq!(html.matches("the lookup failed").count(), 1, "{html}");
        assert!(html.contains("code"), "the rest of the result is still shown: {html}");
    }

    #[test]
    fn a_row_takes_whether_its_run_is_active_from_the_pages_context() {
        let owner = Owner::new();
        owner.set();
        let row = || {
            let part = ChatToolPart::new("Bash", "call-1", ToolState::InputAvailable);
            view! { <ToolRow tool=ArcRwSignal::new(part)/> }.to_html()
        };
        assert!(row().contains(r#"data-status="running""#), "without a context the run counts as active");
        let run_active = RwSignal::new(true);
        provide_context(ToolRowContext {
            run_active: run_active.into(),
            answer: Callback::new(|_| {}),
            decide: Callback::new(|_| {}),
        });
        assert!(row().contains(r#"data-status="running""#));
        run_active.set(false);
        assert!(row().contains(r#"data-status="interrupted""#), "a call still open when its run ended: {}", row());
    }

    #[test]
    fn status_follows_the_state_and_an_ended_run_interrupts_open_calls() {
        use RowStatus::*;
        use ToolState::*;
        assert_eq!(RowStatus::of(InputStreaming, None, true), Drafting);
        assert_eq!(RowStatus::of(InputAvailable, None, true), Running);
        assert_eq!(RowStatus::of(ApprovalRequested, None, true), AwaitingApproval);
        assert_eq!(RowStatus::of(OutputAvailable, None, true), Done);
        assert_eq!(RowStatus::of(OutputError, Some("boom"), true), Failed);
        assert_eq!(RowStatus::of(OutputDenied, Some("denied by the user"), false), Denied);
        assert_eq!(RowStatus::of(OutputError, Some(INTERRUPTED_TOOL_ERROR), false), Interrupted);
        for open in [InputStreaming, InputAvailable, ApprovalRequested] {
            assert_eq!(RowStatus::of(open, None, false), Interrupted, "{open:?}");
        }
        assert_eq!(RowStatus::of(OutputAvailable, None, false), Done);
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(format_duration(0), "0 ms");
        assert_eq!(format_duration(850), "850 ms");
        assert_eq!(format_duration(1234), "1.2 s");
        assert_eq!(format_duration(125_000), "2 min 05 s");
    }

    #[test]
    fn dispatch_goes_builtin_then_mcp_then_custom_then_generic() {
        let custom = ToolRenderers::default().register("Deploy", |_| ().into_any());
        let kind = |name: &str| match Dispatch::resolve(&ToolKind::from_part_name(name), &custom) {
            Dispatch::Builtin(kind) => format!("builtin {kind:?}"),
            Dispatch::Mcp { server, tool } => format!("mcp {server} {tool}"),
            Dispatch::Custom(_) => "custom".to_owned(),
            Dispatch::Generic => "generic".to_owned(),
        };
        assert_eq!(kind("Bash"), "builtin Bash");
        assert_eq!(kind("Agent"), "builtin Agent");
        assert_eq!(kind("Glob"), "builtin Glob");
        assert_eq!(kind("mcp__github__search_issues"), "mcp github search_issues");
        assert_eq!(kind("mcp__broken"), "generic");
        assert_eq!(kind("Deploy"), "custom");
        assert_eq!(kind("WebFetch"), "generic");
        let overridden = ToolRenderers::default().register("Bash", |_| ().into_any());
        assert!(
            matches!(Dispatch::resolve(&ToolKind::Bash, &overridden), Dispatch::Builtin(ToolKind::Bash)),
            "built-ins come first"
        );
    }
}
