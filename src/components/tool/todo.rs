//! TodoWrite and PlanWrite rows: the checklist with done, in-progress and pending items, and a progress line.
//!
//! Each row counts its own items, so an older checklist keeps showing the progress it had; the newest one agrees
//! with the session's `plan` frame, which the mapper computes from the same items.

use leptos::prelude::*;
use serde_json::Value;

use super::output_field;
use crate::protocol::ChatToolPart;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TodoStatus {
    Done,
    InProgress,
    Pending,
}

impl TodoStatus {
    fn parse(status: Option<&str>) -> TodoStatus {
        match status {
            Some("completed" | "done") => TodoStatus::Done,
            Some("in_progress" | "in-progress" | "active") => TodoStatus::InProgress,
            Some(_) | None => TodoStatus::Pending,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            TodoStatus::Done => "done",
            TodoStatus::InProgress => "in-progress",
            TodoStatus::Pending => "pending",
        }
    }

    fn mark(self) -> &'static str {
        match self {
            TodoStatus::Done => "✓",
            TodoStatus::InProgress => "◐",
            TodoStatus::Pending => "○",
        }
    }
}

/// The items of the call's checklist: the output's once it ran, the arguments' while the model writes them.
pub fn todos(part: &ChatToolPart) -> Vec<(String, TodoStatus)> {
    let list = output_field(part, "todos")
        .or_else(|| part.input.as_ref().and_then(|input| input.get("todos")))
        .and_then(Value::as_array);
    list.map(|items| {
        items
            .iter()
            .filter_map(|item| {
                let text = ["text", "content", "step"].iter().find_map(|key| item.get(*key).and_then(Value::as_str))?;
                let status = item.get("status").and_then(Value::as_str).or_else(|| {
                    item.get("completed")
                        .and_then(Value::as_bool)
                        .map(|done| if done { "completed" } else { "pending" })
                });
                Some((text.to_owned(), TodoStatus::parse(status)))
            })
            .collect()
    })
    .unwrap_or_default()
}

#[component]
pub fn TodoView(part: ReadSignal<ChatToolPart>) -> impl IntoView {
    let items = Memo::new(move |_| part.with(todos));
    let done = Memo::new(move |_| items.with(|items| items.iter().filter(|(_, s)| *s == TodoStatus::Done).count()));
    let total = Memo::new(move |_| items.with(Vec::len));
    view! {
        <div class="tool-todo">
            <div class="tool-todo__progress">
                <progress max=move || total.get().max(1) value=move || done.get()></progress>
                <span>{move || format!("{}/{} completed", done.get(), total.get())}</span>
            </div>
            <ul class="tool-todo__list">
                {move || {
                    items
                        .get()
                        .into_iter()
                        .map(|(text, status)| {
                            view! {
                                <li class=format!("tool-todo__item tool-todo__item--{}", status.as_str())>
                                    <span class="tool-todo__mark" aria-hidden="true">{status.mark()}</span>
                                    <span class="tool-todo__text">{text}</span>
                                    <span class="tool-todo__status">{format!(" ({})", status.as_str())}</span>
                                </li>
                            }
                        })
                        .collect_view()
                }}
            </ul>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::ToolState;

    #[test]
    fn items_come_from_the_output_else_the_arguments() {
        let mut part = ChatToolPart::new("TodoWrite", "t1", ToolState::InputStreaming);
        part.input = Some(json!({"todos": [{"text": "Read the code", "status": "in_progress"}, {"text": "Fix"}]}));
        assert_eq!(
            todos(&part),
            vec![("Read the code".to_owned(), TodoStatus::InProgress), ("Fix".to_owned(), TodoStatus::Pending)]
        );
        part.output = Some(json!({"todos": [{"content": "Read the code", "status": "completed"}, {"step": 2}]}));
        assert_eq!(todos(&part), vec![("Read the code".to_owned(), TodoStatus::Done)]);
    }
}
