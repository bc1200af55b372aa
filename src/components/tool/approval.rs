//! The approval card: a tool call that waits for the user (`approval-requested`) shows exactly what would run — the
//! command, the diff of the proposed edit, the content of the write — with Approve and Deny; a denied call keeps
//! showing what was refused.

use leptos::prelude::*;

use crate::components::client_only::IntoRowView;
use serde_json::Value;

use super::ToolRowContext;
use super::diff::{self, DiffLine};
use super::files::DiffView;
use super::lines::NumberedLines;
use crate::i18n::{Key, fill, t, tr};
use crate::protocol::{ApprovalKind, ChatToolPart, ToolKind, ToolState};

/// An approval card's decision, as it hands it to the page.
#[derive(Debug, Clone)]
pub struct Decision {
    pub tool_call_id: String,
    /// True approves the call, false denies it.
    pub approve: bool,
    /// The agent's option the user chose, where the call offers options.
    pub option_id: Option<String>,
    /// The card's "sending" flag, set while the decision travels: the page clears it again if the decision was
    /// not taken, so the buttons work again.
    pub sending: RwSignal<bool>,
}

/// What a call waiting for approval would do, as the card shows it.
#[derive(Debug, Clone, PartialEq)]
pub enum Proposal {
    Command(String),
    /// Python code (`ipython`).
    Code(String),
    Edit {
        path: String,
        lines: Vec<DiffLine>,
    },
    Write {
        path: String,
        content: String,
    },
    /// Any other tool: its arguments as JSON.
    Arguments(String),
}

impl Proposal {
    /// Reads the call's arguments; names other agents use (`old_string`, `file_path`) are accepted too.
    pub fn of(tool: &ChatToolPart) -> Proposal {
        let input = tool.input.clone().unwrap_or(Value::Null);
        let text = |keys: &[&str]| keys.iter().find_map(|k| input.get(*k).and_then(Value::as_str)).map(str::to_owned);
        let path = || text(&["path", "file_path", "filePath"]).unwrap_or_default();
        match tool.kind() {
            ToolKind::Bash => {
                if let Some(command) = text(&["command", "cmd"]) {
                    return Proposal::Command(command);
                }
            }
            ToolKind::IPython => {
                if let Some(code) = text(&["code"]) {
                    return Proposal::Code(code);
                }
            }
            ToolKind::Edit => {
                if let (Some(old), Some(new)) = (text(&["oldText", "old_string"]), text(&["newText", "new_string"])) {
                    return Proposal::Edit { path: path(), lines: diff::replacement(&old, &new) };
                }
            }
            ToolKind::Write => {
                if let Some(content) = text(&["content"]) {
                    return Proposal::Write { path: path(), content };
                }
            }
            ToolKind::Read
            | ToolKind::Grep
            | ToolKind::Glob
            | ToolKind::Ls
            | ToolKind::TodoWrite
            | ToolKind::PlanWrite
            | ToolKind::WebSearch
            | ToolKind::Question
            | ToolKind::Task
            | ToolKind::Agent
            | ToolKind::Chart
            | ToolKind::Thinking
            | ToolKind::Mcp { .. }
            | ToolKind::Other(_) => {}
        }
        Proposal::Arguments(serde_json::to_string_pretty(&input).unwrap_or_default())
    }
}

/// A call waiting for approval (Approve / Deny), or one that was denied (what was refused).
#[component]
pub fn ApprovalCard(
    /// The call, in `approval-requested` or `output-denied`.
    tool: ChatToolPart,
) -> impl IntoView {
    let context = use_context::<ToolRowContext>();
    let waiting = tool.state == ToolState::ApprovalRequested;
    let sending = RwSignal::new(false);
    let proposal = Proposal::of(&tool);
    let verb = match &proposal {
        Proposal::Command(_) => Key::VerbCommand,
        Proposal::Code(_) => Key::VerbCode,
        Proposal::Edit { .. } => Key::VerbEdit,
        Proposal::Write { .. } => Key::VerbWrite,
        Proposal::Arguments(_) => Key::VerbCall,
    };
    let heading = move || fill(if waiting { Key::AgentWants } else { Key::AgentDenied }, &[("verb", t(verb))]);
    let call_id = tool.tool_call_id.clone();
    let decide = move |approve: bool, option_id: Option<String>| {
        let id = call_id.clone();
        move |_| {
            if let Some(context) = context {
                sending.set(true);
                context.decide.run(Decision {
                    tool_call_id: id.clone(),
                    approve,
                    option_id: option_id.clone(),
                    sending,
                });
            }
        }
    };
    let options = tool.approval_options.clone();
    let denied = if waiting { "" } else { " approval--denied" };
    let class = format!("part part--tool tool tool--{} approval{denied}", tool.state.as_str());
    view! {
        <div
            class=class
            role="group"
            aria-label={
                let kind = tool.kind().to_string();
                move || fill(Key::AwaitingApprovalLabel, &[("tool", &kind)])
            }
            data-tool-call-id=tool.tool_call_id.clone()
        >
            <p class="approval__heading">
                <span class="tool__name">{tool.tool_name().into_owned()}</span>
                " "
                <span class="approval__what">{heading}</span>
            </p>
            <ProposalView proposal/>
            {waiting
                .then(|| {
                    if options.is_empty() {
                        view! {
                            <div class="approval__actions">
                                <button
                                    class="button button--primary"
                                    type="button"
                                    disabled=move || sending.get()
                                    on:click=decide(true, None)
                                >
                                    {tr(Key::Approve)}
                                </button>
                                <button
                                    class="button"
                                    type="button"
                                    disabled=move || sending.get()
                                    on:click=decide(false, None)
                                >
                                    {tr(Key::Deny)}
                                </button>
                            </div>
                        }
                            .into_any()
                    } else {
                        // The agent's own options, in its order and words: "always" is a promise the agent keeps.
                        let buttons = options
                            .into_iter()
                            .map(|option| {
                                let class = match option.kind {
                                    ApprovalKind::AllowOnce => "button button--primary",
                                    ApprovalKind::AllowAlways
                                    | ApprovalKind::RejectOnce
                                    | ApprovalKind::RejectAlways
                                    | ApprovalKind::Other(_) => "button",
                                };
                                let kind = option.kind.as_str().to_owned();
                                let click = decide(option.kind.allows(), Some(option.option_id));
                                view! {
                                    <button
                                        class=class
                                        type="button"
                                        data-option-kind=kind
                                        disabled=move || sending.get()
                                        on:click=click
                                    >
                                        {option.name}
                                    </button>
                                }
                            })
                            .collect_view();
                        view! { <div class="approval__actions">{buttons}</div> }.into_any()
                    }
                })}
        </div>
    }
}

#[component]
fn ProposalView(proposal: Proposal) -> impl IntoView {
    match proposal {
        Proposal::Command(command) => view! {
            <pre class="approval__command"><code>"$ "{command}</code></pre>
        }
        .into_row_view(),
        Proposal::Code(code) => {
            view! { <pre class="approval__command approval__code"><code>{code}</code></pre> }.into_row_view()
        }
        Proposal::Edit { path, lines } => view! {
            <p class="approval__path">{path.clone()}</p>
            <div class="approval__diff">
                <DiffView lines path=path.clone()/>
            </div>
        }
        .into_row_view(),
        Proposal::Write { path, content } => view! {
            <p class="approval__path">{path.clone()}</p>
            <div class="approval__content">
                <NumberedLines text=content first_line=1usize fold_after=None path=path.clone()/>
            </div>
        }
        .into_row_view(),
        Proposal::Arguments(json) => view! { <pre class="approval__arguments">{json}</pre> }.into_row_view(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn kinds(lines: &[DiffLine]) -> String {
        lines.iter().map(|l| l.kind.sign()).collect()
    }

    #[test]
    fn the_proposal_follows_the_tool() {
        let part = |name: &str, input: Value| {
            let mut part = ChatToolPart::new(name, "c1", ToolState::ApprovalRequested);
            part.input = Some(input);
            part
        };
        assert_eq!(Proposal::of(&part("Bash", json!({"command": "ls -la"}))), Proposal::Command("ls -la".into()));
        let Proposal::Edit { path, lines } =
            Proposal::of(&part("Edit", json!({"path": "a.py", "oldText": "x = 1", "newText": "x = 2"})))
        else {
            panic!("an edit")
        };
        assert_eq!((path.as_str(), kinds(&lines).as_str()), ("a.py", "−+"));
        assert_eq!(
            Proposal::of(&part("Write", json!({"file_path": "b.txt", "content": "hi"}))),
            Proposal::Write { path: "b.txt".into(), content: "hi".into() }
        );
        assert!(
            matches!(Proposal::of(&part("Read", json!({"path": "c"}))), Proposal::Arguments(json) if json.contains("\"path\""))
        );
        assert!(matches!(Proposal::of(&part("Bash", json!({}))), Proposal::Arguments(_)), "no command, the raw call");
        assert_eq!(Proposal::of(&part("IPython", json!({"code": "1 + 1"}))), Proposal::Code("1 + 1".into()));
    }
}
