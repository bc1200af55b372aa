//! The views of tools without a renderer of their own: MCP tools (server and tool name, arguments and result as
//! JSON trees), WebSearch (its results as links), the legacy `tool-Thinking` part, and the generic arguments/result view, which shows
//! nothing (a plain name row) when the call has neither.

use leptos::prelude::*;
use serde_json::Value;

use super::input_str;
use super::json_tree::JsonTree;
use crate::components::client_only::IntoRowView;
use crate::i18n::{Key, tr};
use crate::protocol::{ChatToolPart, GenericOutput, WebSearchOutput};

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

/// A result's `text` as text; whatever else it carries as a tree. A text that only repeats the structured content as
/// JSON (what MCP servers are asked to send beside `structuredContent`) is left out: the tree shows it.
#[component]
fn ResultView(output: Value) -> impl IntoView {
    let (text, rest) = match output {
        Value::Object(mut map) => {
            let text = match map.get("text") {
                Some(Value::String(_)) => map.remove("text").and_then(|t| t.as_str().map(str::to_owned)),
                Some(_) | None => None,
            };
            let text = text.filter(|text| !repeats_structured_content(text, map.get("structuredContent")));
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

fn repeats_structured_content(text: &str, structured: Option<&Value>) -> bool {
    structured.is_some_and(|structured| serde_json::from_str::<Value>(text).is_ok_and(|parsed| parsed == *structured))
}

#[component]
pub fn GenericView(part: ReadSignal<ChatToolPart>) -> impl IntoView {
    let input = input_memo(part);
    let output = output_memo(part);
    view! {
        {move || input.get().map(|value| view! {
            <div class="tool-generic__section">
                <p class="tool-generic__label">{tr(Key::Arguments)}</p>
                <JsonTree value/>
            </div>
        })}
        {move || output.get().map(|output| view! {
            <div class="tool-generic__section">
                <p class="tool-generic__label">{tr(Key::ToolResult)}</p>
                <ResultView output/>
            </div>
        })}
    }
}

#[component]
pub fn McpView(part: ReadSignal<ChatToolPart>) -> impl IntoView {
    view! { <div class="tool-generic tool-generic--mcp"><GenericView part/></div> }
}

/// The query, then the results as a list of links (title, address, snippet); a result of another shape (another
/// runtime's web search) in the generic view.
#[component]
pub fn WebSearchView(part: ReadSignal<ChatToolPart>) -> impl IntoView {
    let query = Memo::new(move |_| part.with(|part| input_str(part, "query")));
    let results = Memo::new(move |_| part.with(|part| part.output_as::<WebSearchOutput>().map(owned_results)));
    let output = output_memo(part);
    view! {
        <div class="tool-generic tool-websearch">
            {move || query.get().map(|query| view! { <p class="tool-search__query"><code>{query}</code></p> })}
            {move || match results.get() {
                Some(results) if results.is_empty() => view! { <p class="tool-websearch__none">{tr(Key::NoResults)}</p> }.into_row_view(),
                Some(results) => view! {
                    <ol class="tool-websearch__results">
                        {results.into_iter().map(|result| view! { <SearchResultItem result/> }).collect_view()}
                    </ol>
                }
                .into_row_view(),
                None => output.get().map(|output| view! { <ResultView output/> }).into_row_view(),
            }}
        </div>
    }
}

/// One result of a web search, owned for the view.
#[derive(Debug, Clone, PartialEq)]
struct SearchResult {
    title: String,
    url: String,
    snippet: String,
}

fn owned_results(output: WebSearchOutput<'_>) -> Vec<SearchResult> {
    output
        .results
        .into_iter()
        .map(|result| SearchResult {
            title: result.title.into_owned(),
            url: result.url.into_owned(),
            snippet: result.snippet.into_owned(),
        })
        .collect()
}

/// Only web addresses become links: a search result could name a `javascript:` or `data:` URL.
fn web_link(url: &str) -> Option<&str> {
    let url = url.trim();
    let scheme = url.split_once("://")?.0;
    (scheme.eq_ignore_ascii_case("https") || scheme.eq_ignore_ascii_case("http")).then_some(url)
}

#[component]
fn SearchResultItem(result: SearchResult) -> impl IntoView {
    let SearchResult { title, url, snippet } = result;
    let title = if title.is_empty() { url.clone() } else { title };
    let heading = match web_link(&url) {
        Some(href) => view! {
            <a class="tool-websearch__title" href=href.to_owned() target="_blank" rel="noopener noreferrer">{title}</a>
        }
        .into_row_view(),
        None => view! { <span class="tool-websearch__title">{title}</span> }.into_row_view(),
    };
    view! {
        <li class="tool-websearch__result">
            {heading}
            <span class="tool-websearch__url">{url}</span>
            {(!snippet.is_empty()).then(|| view! { <p class="tool-websearch__snippet">{snippet}</p> })}
        </li>
    }
}

/// A runtime that reports thinking as a `tool-Thinking` call with `input.thought`.
#[component]
pub fn ThinkingToolView(part: ReadSignal<ChatToolPart>) -> impl IntoView {
    let thought = Memo::new(move |_| {
        part.with(|part| {
            input_str(part, "thought").or_else(|| part.output_as::<GenericOutput>().map(|o| o.text.into_owned()))
        })
    });
    view! { <p class="thinking__text">{move || thought.get().unwrap_or_default()}</p> }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_addresses_become_links() {
        assert_eq!(web_link(" https://www.rust-lang.org/ "), Some("https://www.rust-lang.org/"));
        assert_eq!(web_link("HTTP://example.com"), Some("HTTP://example.com"));
        for unsafe_url in
            ["javascript:alert(1)//https://x", "data:text/html,https://", "java\tscript://x", "//x.org", ""]
        {
            assert_eq!(web_link(unsafe_url), None, "{unsafe_url}");
        }
    }

    #[test]
    fn a_text_that_repeats_the_structured_content_is_shown_once() {
        let owner = Owner::new();
        owner.set();
        let render = |output: Value| view! { <ResultView output/> }.to_html();
        let repeated =
            render(serde_json::json!({"text": "{\"sky\": \"clear\"}", "structuredContent": {"sky": "clear"}}));
        assert!(!repeated.contains("tool-output"), "{repeated}");
        assert!(repeated.contains("clear"), "{repeated}");
        let different = render(serde_json::json!({"text": "It is clear.", "structuredContent": {"sky": "clear"}}));
        assert!(different.contains(r#"<pre class="tool-output">It is clear.</pre>"#), "{different}");
        let text_only = render(serde_json::json!({"text": "{\"sky\": \"clear\"}"}));
        assert!(text_only.contains("tool-output"), "{text_only}");
    }

    #[test]
    fn results_render_as_links_with_their_address_and_snippet() {
        let owner = Owner::new();
        owner.set();
        let mut part = ChatToolPart::new("WebSearch", "c1", crate::protocol::ToolState::OutputAvailable);
        part.input = Some(serde_json::json!({"query": "rust"}));
        part.output = Some(serde_json::json!({"query": "rust", "results": [
            {"title": "Rust", "url": "https://www.rust-lang.org/", "snippet": "A language"},
            {"title": "Evil", "url": "javascript:alert(1)", "snippet": ""}
        ]}));
        let (part, _) = signal(part);
        let html = view! { <WebSearchView part/> }.to_html();
        assert!(html.contains(r#"href="https://www.rust-lang.org/""#), "{html}");
        assert!(html.contains(r#"target="_blank""#) && html.contains(r#"rel="noopener noreferrer""#), "{html}");
        assert!(html.contains(">A language<") && html.contains(">Evil<"), "{html}");
        assert!(!html.contains("href=\"javascript"), "{html}");
        assert_eq!(html.matches("<li").count(), 2, "{html}");
    }
}
