//! The approval card: a tool call that waits for the user (`approval-requested`) shows exactly what would run — the
//! command, the diff of the proposed edit, the content of the write — with Approve and Deny; a denied call keeps
//! showing what was refused.

use leptos::prelude::*;
use serde_json::Value;

use crate::app::ChatActions;
use crate::protocol::{ChatToolPart, ToolState};

/// What a call waiting for approval would do, as the card shows it.
#[derive(Debug, Clone, PartialEq)]
pub enum Proposal {
    Command(String),
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffKind {
    Context,
    Removed,
    Added,
}

impl DiffKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DiffKind::Context => "context",
            DiffKind::Removed => "removed",
            DiffKind::Added => "added",
        }
    }

    fn sign(self) -> &'static str {
        match self {
            DiffKind::Context => " ",
            DiffKind::Removed => "-",
            DiffKind::Added => "+",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine {
    pub kind: DiffKind,
    pub text: String,
}

/// Line pairs above which the edit's middle is shown as all removed, then all added, instead of being diffed.
const MAX_DIFF_CELLS: usize = 250_000;

impl Proposal {
    /// Reads the call's arguments; names other agents use (`old_string`, `file_path`) are accepted too.
    pub fn of(tool: &ChatToolPart) -> Proposal {
        let input = tool.input.clone().unwrap_or(Value::Null);
        let text = |keys: &[&str]| keys.iter().find_map(|k| input.get(*k).and_then(Value::as_str)).map(str::to_owned);
        let path = || text(&["path", "file_path", "filePath"]).unwrap_or_default();
        match tool.tool_name.as_str() {
            "Bash" => {
                if let Some(command) = text(&["command", "cmd"]) {
                    return Proposal::Command(command);
                }
            }
            "Edit" => {
                if let (Some(old), Some(new)) = (text(&["oldText", "old_string"]), text(&["newText", "new_string"])) {
                    return Proposal::Edit { path: path(), lines: edit_lines(&old, &new) };
                }
            }
            "Write" => {
                if let Some(content) = text(&["content"]) {
                    return Proposal::Write { path: path(), content };
                }
            }
            _ => {}
        }
        Proposal::Arguments(serde_json::to_string_pretty(&input).unwrap_or_default())
    }
}

/// The lines of an edit that replaces `old` by `new`: shared leading and trailing lines as context, the middle as a
/// line diff (longest common subsequence).
pub fn edit_lines(old: &str, new: &str) -> Vec<DiffLine> {
    let old: Vec<&str> = old.lines().collect();
    let new: Vec<&str> = new.lines().collect();
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..].iter().rev().zip(new[prefix..].iter().rev()).take_while(|(a, b)| a == b).count();
    let line = |kind, text: &&str| DiffLine { kind, text: (*text).to_owned() };
    let mut lines: Vec<DiffLine> = old[..prefix].iter().map(|t| line(DiffKind::Context, t)).collect();
    let (old_mid, new_mid) = (&old[prefix..old.len() - suffix], &new[prefix..new.len() - suffix]);
    if old_mid.len().saturating_mul(new_mid.len()) > MAX_DIFF_CELLS {
        lines.extend(old_mid.iter().map(|t| line(DiffKind::Removed, t)));
        lines.extend(new_mid.iter().map(|t| line(DiffKind::Added, t)));
    } else {
        lines.extend(lcs_diff(old_mid, new_mid));
    }
    lines.extend(old[old.len() - suffix..].iter().map(|t| line(DiffKind::Context, t)));
    lines
}

/// A line diff by longest common subsequence; removals come before additions where both are possible.
fn lcs_diff(old: &[&str], new: &[&str]) -> Vec<DiffLine> {
    let (n, m) = (old.len(), new.len());
    // common[i][j]: the length of the longest common subsequence of old[i..] and new[j..].
    let mut common = vec![vec![0_u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            common[i][j] =
                if old[i] == new[j] { common[i + 1][j + 1] + 1 } else { common[i + 1][j].max(common[i][j + 1]) };
        }
    }
    let mut lines = Vec::with_capacity(n + m);
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && old[i] == new[j] {
            lines.push(DiffLine { kind: DiffKind::Context, text: old[i].to_owned() });
            (i, j) = (i + 1, j + 1);
        } else if i < n && (j == m || common[i + 1][j] >= common[i][j + 1]) {
            lines.push(DiffLine { kind: DiffKind::Removed, text: old[i].to_owned() });
            i += 1;
        } else {
            lines.push(DiffLine { kind: DiffKind::Added, text: new[j].to_owned() });
            j += 1;
        }
    }
    lines
}

/// A call waiting for approval (Approve / Deny), or one that was denied (what was refused).
#[component]
pub fn ApprovalCard(
    /// The call, in `approval-requested` or `output-denied`.
    tool: ChatToolPart,
) -> impl IntoView {
    let actions = use_context::<ChatActions>();
    let waiting = tool.state == ToolState::ApprovalRequested;
    let sending = RwSignal::new(false);
    let proposal = Proposal::of(&tool);
    let verb = match &proposal {
        Proposal::Command(_) => "run this command",
        Proposal::Edit { .. } => "make this edit",
        Proposal::Write { .. } => "write this file",
        Proposal::Arguments(_) => "make this call",
    };
    let heading = if waiting {
        format!("The agent wants to {verb}.")
    } else {
        format!("Denied: the agent was not allowed to {verb}, and nothing was run.")
    };
    let call_id = tool.tool_call_id.clone();
    let decide = move |approve: bool| {
        let id = call_id.clone();
        move |_| {
            if let Some(actions) = actions {
                actions.approve(id.clone(), approve, sending);
            }
        }
    };
    let denied = if waiting { "" } else { " approval--denied" };
    let class = format!("part part--tool tool tool--{} approval{denied}", tool.state.as_str());
    view! {
        <div
            class=class
            role="group"
            aria-label=format!("{} call awaiting approval", tool.tool_name)
            data-tool-call-id=tool.tool_call_id.clone()
        >
            <p class="approval__heading">
                <span class="tool__name">{tool.tool_name.clone()}</span>
                " "
                <span class="approval__what">{heading}</span>
            </p>
            <ProposalView proposal/>
            {waiting
                .then(|| {
                    view! {
                        <div class="approval__actions">
                            <button
                                class="button button--primary"
                                type="button"
                                disabled=move || sending.get()
                                on:click=decide(true)
                            >
                                "Approve"
                            </button>
                            <button class="button" type="button" disabled=move || sending.get() on:click=decide(false)>
                                "Deny"
                            </button>
                        </div>
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
        .into_any(),
        Proposal::Edit { path, lines } => view! {
            <p class="approval__path">{path}</p>
            <pre class="approval__diff">
                {lines
                    .into_iter()
                    .map(|line| {
                        view! {
                            <span class=format!("diff-line diff-line--{}", line.kind.as_str())>
                                {line.kind.sign()}
                                {line.text}
                                "\n"
                            </span>
                        }
                    })
                    .collect_view()}
            </pre>
        }
        .into_any(),
        Proposal::Write { path, content } => {
            let lines: Vec<String> = content.lines().map(str::to_owned).collect();
            view! {
                <p class="approval__path">{path}</p>
                <pre class="approval__content">
                    {lines
                        .into_iter()
                        .enumerate()
                        .map(|(i, line)| {
                            view! {
                                <span class="approval__line">
                                    <span class="approval__line-number">{i + 1}</span>
                                    {line}
                                    "\n"
                                </span>
                            }
                        })
                        .collect_view()}
                </pre>
            }
            .into_any()
        }
        Proposal::Arguments(json) => view! { <pre class="approval__arguments">{json}</pre> }.into_any(),
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
    fn an_edit_diff_keeps_shared_lines_as_context() {
        let lines = edit_lines("a\nb\nc\nd\n", "a\nB\nc\nd\ne\n");
        assert_eq!(kinds(&lines), " -+  +");
        assert_eq!(lines[1].text, "b");
        assert_eq!(lines[2].text, "B");
        assert_eq!(lines[5].text, "e");
        assert_eq!(kinds(&edit_lines("one line", "one line, changed")), "-+");
        assert_eq!(kinds(&edit_lines("", "new\nlines")), "++");
        assert_eq!(kinds(&edit_lines("x\ny\nz", "x\nz")), " - ");
    }

    #[test]
    fn a_large_edit_is_shown_removed_then_added() {
        let old: String = (0..600).map(|i| format!("old {i}\n")).collect();
        let new: String = (0..600).map(|i| format!("new {i}\n")).collect();
        let lines = edit_lines(&old, &new);
        assert_eq!(lines.len(), 1200);
        assert!(lines[..600].iter().all(|l| l.kind == DiffKind::Removed));
        assert!(lines[600..].iter().all(|l| l.kind == DiffKind::Added));
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
        assert_eq!((path.as_str(), kinds(&lines).as_str()), ("a.py", "-+"));
        assert_eq!(
            Proposal::of(&part("Write", json!({"file_path": "b.txt", "content": "hi"}))),
            Proposal::Write { path: "b.txt".into(), content: "hi".into() }
        );
        assert!(
            matches!(Proposal::of(&part("Read", json!({"path": "c"}))), Proposal::Arguments(json) if json.contains("\"path\""))
        );
        assert!(matches!(Proposal::of(&part("Bash", json!({}))), Proposal::Arguments(_)), "no command, the raw call");
    }
}
