//! Task/Agent rows: a collapsible group holding the sub-agent's own rows. A tool call whose id is
//! `<parent id>:<child id>` nests under the row of its parent call when that call is in the same message; the
//! transcript's parts stay in the order they happened, and only the view groups them.

use leptos::prelude::*;
use serde_json::Value;

use crate::components::client_only::RowView;
use crate::components::rows::{PartKey, PartRow};
use crate::protocol::{ChatToolPart, GenericOutput, ToolState};

/// The parts of the message being drawn, for groups that collect their children from it, and what draws a part.
/// The message's rows hand over `draw`: the tool renderers' chunk then does not hold the code of the parts, which
/// is the message rows' chunk's.
#[derive(Clone)]
pub struct MessageParts {
    pub parts: ArcRwSignal<Vec<PartRow>>,
    pub draw: fn(PartRow) -> RowView,
}

/// The id a call nests under: what comes before its last `:`, when `is_tool_call` says a call of that id is there.
pub fn parent_id(id: &str, is_tool_call: impl Fn(&str) -> bool) -> Option<&str> {
    let (parent, child) = id.rsplit_once(':')?;
    (!parent.is_empty() && !child.is_empty() && is_tool_call(parent)).then_some(parent)
}

fn tool_id(part: &PartRow) -> Option<&str> {
    match &part.key {
        PartKey::Tool(id) => Some(id),
        PartKey::Text(_) | PartKey::Thinking(_) | PartKey::Error(_) | PartKey::File(_) => None,
    }
}

/// The parent call of `part` among `parts`, if it nests.
fn parent_in<'a>(part: &'a PartRow, parts: &[PartRow]) -> Option<&'a str> {
    parent_id(tool_id(part)?, |parent| parts.iter().any(|p| tool_id(p) == Some(parent)))
}

/// The parts drawn at the top of a message: all but the nested calls.
pub fn top_level(parts: Vec<PartRow>) -> Vec<PartRow> {
    let nested: Vec<bool> = parts.iter().map(|part| parent_in(part, &parts).is_some()).collect();
    parts.into_iter().zip(nested).filter(|(_, nested)| !nested).map(|(part, _)| part).collect()
}

/// The calls nested right under `parent`.
pub fn children_of(parts: &[PartRow], parent: &str) -> Vec<PartRow> {
    parts.iter().filter(|part| parent_in(part, parts) == Some(parent)).cloned().collect()
}

/// A task given to a sub-agent: what it was asked, its state and report, and its own rows, foldable.
#[component]
pub fn TaskGroup(
    /// The task's tool part.
    tool: ArcRwSignal<ChatToolPart>,
) -> impl IntoView {
    let message = use_context::<MessageParts>();
    let draw = message.as_ref().map(|message| message.draw);
    let parts = message.map(|message| message.parts);
    let id = tool.with_untracked(|t| t.tool_call_id.clone());
    let data_id = id.clone();
    let children = move || parts.as_ref().map(|parts| parts.with(|all| children_of(all, &id))).unwrap_or_default();
    let (summary_tool, report_tool, class_tool) = (tool.clone(), tool.clone(), tool.clone());
    let summary = move || {
        summary_tool.with(|t| {
            let input = t.input.as_ref();
            let field = |key: &str| input.and_then(|i| i.get(key)).and_then(Value::as_str).map(str::to_owned);
            field("description").or_else(|| field("prompt")).unwrap_or_default()
        })
    };
    let report = move || {
        report_tool.with(|t| match t.state {
            ToolState::OutputAvailable => t.output_as::<GenericOutput>().map(|o| o.text.into_owned()),
            ToolState::OutputError | ToolState::OutputDenied => t.error_text.clone(),
            ToolState::InputStreaming | ToolState::InputAvailable | ToolState::ApprovalRequested => None,
        })
    };
    let name = tool.with_untracked(|t| t.tool_name().into_owned());
    let state = move || tool.with(|t| t.state.as_str());
    view! {
        <details
            class=move || format!("part part--tool tool tool--{} task-group", class_tool.with(|t| t.state.as_str()))
            data-tool-call-id=data_id
            open
        >
            <summary class="task-group__summary">
                <span class="tool__name">{name}</span>
                " "
                <span class="task-group__description">{summary}</span>
                " "
                <span class="tool__state">{state}</span>
            </summary>
            <div class="task-group__children">
                <For each=children key=|part| part.key.clone() let:part>
                    {draw.map(|draw| draw(part))}
                </For>
            </div>
            {move || report().map(|text| view! { <p class="task-group__report">{text}</p> })}
        </details>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::rows::PartSignals;

    fn tool_row(id: &str) -> PartRow {
        PartRow {
            key: PartKey::Tool(id.into()),
            content: PartSignals::Tool(ArcRwSignal::new(ChatToolPart::new("Read", id, ToolState::InputAvailable))),
        }
    }

    fn ids(parts: &[PartRow]) -> Vec<&str> {
        parts.iter().filter_map(tool_id).collect()
    }

    #[test]
    fn child_ids_nest_under_a_parent_in_the_same_message() {
        let has = |id: &str| ["call_1", "call_1:call_0"].contains(&id);
        assert_eq!(parent_id("call_1:call_0", has), Some("call_1"));
        assert_eq!(parent_id("call_1:call_0:x", has), Some("call_1:call_0"), "grandchildren nest under the child");
        assert_eq!(parent_id("other:call_0", has), None, "no such parent: drawn on its own");
        assert_eq!(parent_id("call_1", has), None);
        assert_eq!(parent_id("call_1:", has), None);
    }

    #[test]
    fn top_level_leaves_out_nested_calls_and_children_keep_their_order() {
        let parts = vec![
            tool_row("t"),
            tool_row("t:a"),
            tool_row("x"),
            tool_row("t:b"),
            tool_row("t:a:deep"),
            tool_row("lost:c"),
        ];
        assert_eq!(ids(&top_level(parts.clone())), ["t", "x", "lost:c"]);
        assert_eq!(ids(&children_of(&parts, "t")), ["t:a", "t:b"]);
        assert_eq!(ids(&children_of(&parts, "t:a")), ["t:a:deep"]);
        assert!(children_of(&parts, "x").is_empty());
    }
}
