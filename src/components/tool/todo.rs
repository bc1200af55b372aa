//! TodoWrite and PlanWrite rows: the checklist with done, in-progress and pending items, and a progress line.
//!
//! Each row counts its own items, so an older checklist keeps showing the progress it had; the newest one agrees
//! with the session's `plan` frame, which the mapper computes from the same items.

use leptos::prelude::*;

use crate::i18n::{Key, fill, t};
use crate::protocol::{ChatToolPart, TodoItem, TodoStatus};

/// The modifier class of an item's status.
fn status_class(status: TodoStatus) -> &'static str {
    match status {
        TodoStatus::Completed => "done",
        TodoStatus::InProgress => "in-progress",
        TodoStatus::Pending => "pending",
    }
}

/// The status in words, for screen readers (the mark is drawn for the eyes).
fn status_key(status: TodoStatus) -> Key {
    match status {
        TodoStatus::Completed => Key::TodoDone,
        TodoStatus::InProgress => Key::TodoInProgress,
        TodoStatus::Pending => Key::TodoPending,
    }
}

fn mark(status: TodoStatus) -> &'static str {
    match status {
        TodoStatus::Completed => "✓",
        TodoStatus::InProgress => "◐",
        TodoStatus::Pending => "○",
    }
}

#[component]
pub fn TodoView(part: ReadSignal<ChatToolPart>) -> impl IntoView {
    let items = Memo::new(move |_| part.with(ChatToolPart::checklist));
    let done = Memo::new(move |_| items.with(|items| items.iter().filter(|item| item.is_completed()).count()));
    let total = Memo::new(move |_| items.with(Vec::len));
    view! {
        <div class="tool-todo">
            <div class="tool-todo__progress">
                <progress max=move || total.get().max(1) value=move || done.get()></progress>
                <span>{move || fill(Key::Completed, &[("done", &done.get().to_string()), ("total", &total.get().to_string())])}</span>
            </div>
            <ul class="tool-todo__list">
                {move || {
                    items
                        .get()
                        .into_iter()
                        .map(|TodoItem { text, status }| {
                            let class = status_class(status);
                            view! {
                                <li class=format!("tool-todo__item tool-todo__item--{class}")>
                                    <span class="tool-todo__mark" aria-hidden="true">{mark(status)}</span>
                                    <span class="tool-todo__text">{text}</span>
                                    <span class="tool-todo__status">{move || fill(Key::TodoStatus, &[("status", t(status_key(status)))])}</span>
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
            part.checklist(),
            vec![TodoItem::new("Read the code", TodoStatus::InProgress), TodoItem::new("Fix", TodoStatus::Pending)]
        );
        part.output = Some(json!({"todos": [{"content": "Read the code", "status": "completed"}, {"step": 2}]}));
        assert_eq!(part.checklist(), vec![TodoItem::new("Read the code", TodoStatus::Completed)]);
    }
}
