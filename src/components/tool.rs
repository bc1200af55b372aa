//! Tool rows: a name-and-state line, and the cards of part B of the tool-rows issue — approval, question, chart,
//! task group. Kept apart so richer tool views can replace the plain line.

use leptos::prelude::*;

use super::approval::ApprovalCard;
use super::chart::ChartView;
use super::question_card::QuestionCard;
use super::task_group::{TaskGroup, is_task};
use crate::protocol::{ChatToolPart, ToolState};

/// One tool call of a message, redrawn whenever its part changes.
#[component]
pub fn ToolRow(tool: ArcRwSignal<ChatToolPart>) -> impl IntoView {
    // A group keeps its element (and whether the user folded it) while its task runs; a call's name never changes.
    if tool.with_untracked(|t| is_task(&t.tool_name)) {
        return view! { <TaskGroup tool/> }.into_any();
    }
    (move || {
        let tool = tool.get();
        match (tool.tool_name.as_str(), tool.state) {
            ("Question", _) => view! { <QuestionCard tool/> }.into_any(),
            (_, ToolState::ApprovalRequested | ToolState::OutputDenied) => view! { <ApprovalCard tool/> }.into_any(),
            _ => {
                let chart = tool.output.as_ref().and_then(|output| output.get("chart")).cloned();
                view! {
                    <div
                        class=format!("part part--tool tool tool--{}", tool.state.as_str())
                        data-tool-call-id=tool.tool_call_id.clone()
                    >
                        <span class="tool__name">{tool.tool_name.clone()}</span>
                        <span class="tool__state">{tool.state.as_str()}</span>
                        {tool.error_text.clone().map(|text| view! { <span class="tool__error">{text}</span> })}
                        {chart.map(|spec| view! { <ChartView spec/> })}
                    </div>
                }
                .into_any()
            }
        }
    })
    .into_any()
}
