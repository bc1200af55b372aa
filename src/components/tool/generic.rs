//! The views of tools without a renderer of their own: MCP tools (server and tool name, arguments and result as
//! JSON trees), WebSearch, the legacy `tool-Thinking` part, and the generic arguments/result view, which shows
//! nothing (a plain name row) when the call has neither.

use leptos::prelude::*;
use serde_json::Value;

use super::json_tree::JsonTree;
use super::{input_str, output_field};
use crate::protocol::ChatToolPart;

fn input_memo(part: ReadSignal<ChatToolPart>) -> Memo<Option<Value>> {
    Memo::new(move |_| part.with(|part| part.input.clone().filter(|input| !is_empty(input))))
}

fn output_memo(part: ReadSignal<ChatToolPart>) -> Memo<Option<Value>> {
    Memo::new(move |_| {
        part.with(|part| {
            let mut output = part.output.clone()?;
            // A failed call's text is its error, which the row already shows under the body.
            if let (Some(error), Value::Object(map)) = (&part.error_text, &mut output)
                && map.get("text").and_then(Value::as_str) == Some(error.as_str())
            {
                map.remove("text");
            }
            Some(output).filter(|output| !is_empty(output))
        })
    })
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(map) => map.is_empty(),
        Value::Array(_) | Value::String(_) | Value::Number(_) | Value::Bool(_) => false,
    }
}

/// A result's `text` as text; whatever else it carries as a tree.
#[component]
fn ResultView(output: Value) -> impl IntoView {
    let (text, rest) = match output {
        Value::Object(mut map) => {
            let text = match map.get("text") {
                Some(Value::String(_)) => map.remove("text").and_then(|t| t.as_str().map(str::to_owned)),
                Some(_) | None => None,
            };
            (text, (!map.is_empty()).then_some(Value::Object(map)))
        }
        Value::String(text) => (Some(text), None),
        other => (None, Some(other)),
    };
    view! {
        {text.filter(|t| !t.is_empty()).map(|text| view! { <pre class="tool-output">{text}</pre> })}
        {rest.map(|value| view! { <JsonTree value/> })}
    }
}

#[component]
pub fn GenericView(part: ReadSignal<ChatToolPart>) -> impl IntoView {
    let input = input_memo(part);
    let output = output_memo(part);
    view! {
        {move || input.get().map(|value| view! {
            <div class="tool-generic__section">
                <p class="tool-generic__label">"Arguments"</p>
                <JsonTree value/>
            </div>
        })}
        {move || output.get().map(|output| view! {
            <div class="tool-generic__section">
                <p class="tool-generic__label">"Result"</p>
                <ResultView output/>
            </div>
        })}
    }
}

#[component]
pub fn McpView(part: ReadSignal<ChatToolPart>) -> impl IntoView {
    view! { <div class="tool-generic tool-generic--mcp"><GenericView part/></div> }
}

#[component]
pub fn WebSearchView(part: ReadSignal<ChatToolPart>) -> impl IntoView {
    let query = Memo::new(move |_| part.with(|part| input_str(part, "query")));
    let output = output_memo(part);
    view! {
        <div class="tool-generic">
            {move || query.get().map(|query| view! { <p class="tool-search__query"><code>{query}</code></p> })}
            {move || output.get().map(|output| view! { <ResultView output/> })}
        </div>
    }
}

/// A runtime that reports thinking as a `tool-Thinking` call with `input.thought`.
#[component]
pub fn ThinkingToolView(part: ReadSignal<ChatToolPart>) -> impl IntoView {
    let thought = Memo::new(move |_| {
        part.with(|part| {
            input_str(part, "thought").or_else(|| output_field(part, "text").and_then(Value::as_str).map(str::to_owned))
        })
    });
    view! { <p class="thinking__text">{move || thought.get().unwrap_or_default()}</p> }
}
