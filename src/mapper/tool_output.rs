//! Runtime results normalized per tool kind (DESIGN.md §2): the typed outputs of `protocol` for the built-in
//! tools, the MCP shape, and `{ text, chart?, details? }` for the rest.

use std::borrow::Cow;

use serde_json::{Map, Value, json};

use crate::protocol::{
    BashOutput, EditOutput, GenericOutput, MatchesOutput, QuestionOutput, ReadOutput, ToolKind, ToolOutputView,
    WebSearchOutput, WriteOutput,
};
use crate::runtime::event::ToolResult;

/// The last line pi appends to the output of a command that failed.
const EXIT_CODE_PREFIX: &str = "Command exited with code ";

/// The `output` of a finished (or running) tool, shaped for its renderer.
pub fn normalize_output(kind: &ToolKind, args: &Value, result: &ToolResult, finished: bool, is_error: bool) -> Value {
    let details = result.details.as_ref();
    match kind {
        // Our `ipython` tool runs like bash and reports like it: output, exit code, truncation.
        ToolKind::Bash | ToolKind::IPython => {
            let mut output = result.text.clone();
            let mut exit_code = None;
            if let Some(at) = output.rfind(EXIT_CODE_PREFIX)
                && let Ok(code) = output[at + EXIT_CODE_PREFIX.len()..].trim().parse::<i64>()
            {
                exit_code = Some(code);
                output.truncate(at);
                output.truncate(output.trim_end_matches('\n').len());
            }
            if finished && !is_error && exit_code.is_none() {
                exit_code = Some(0);
            }
            let truncation = details.and_then(|d| d.get("truncation")).filter(|t| !t.is_null());
            BashOutput {
                output: Cow::Owned(output),
                exit_code,
                truncated: truncation.is_some(),
                total_bytes: truncation.and_then(|t| t.get("totalBytes")).and_then(Value::as_u64),
                full_output_path: details
                    .and_then(|d| d.get("fullOutputPath"))
                    .and_then(Value::as_str)
                    .map(Cow::Borrowed),
            }
            .into_output()
        }
        ToolKind::Read => ReadOutput {
            content: Cow::Borrowed(&result.text),
            truncated: details.and_then(|d| d.get("truncation")).is_some(),
        }
        .into_output(),
        ToolKind::Write => {
            let bytes = args.get("content").and_then(Value::as_str).map(str::len).unwrap_or(0);
            WriteOutput { bytes: bytes as u64 }.into_output()
        }
        ToolKind::Edit => EditOutput {
            diff: Cow::Borrowed(details.and_then(|d| d.get("diff")).and_then(Value::as_str).unwrap_or_default()),
            first_changed_line: details.and_then(|d| d.get("firstChangedLine")).and_then(Value::as_u64),
        }
        .into_output(),
        ToolKind::Grep | ToolKind::Glob | ToolKind::Ls => {
            MatchesOutput { matches: result.text.lines().filter(|l| !l.is_empty()).map(Cow::Borrowed).collect() }
                .into_output()
        }
        // The items exactly as the model wrote them (the wire keeps what it sent); readers take them as
        // `protocol::TodosOutput`.
        ToolKind::TodoWrite | ToolKind::PlanWrite => {
            let todos = args.get("todos").cloned().unwrap_or_else(|| Value::Array(Vec::new()));
            json!({ "todos": todos })
        }
        ToolKind::Question => QuestionOutput { answer: Cow::Borrowed(&result.text) }.into_output(),
        ToolKind::WebSearch => web_search_output(args, result).unwrap_or_else(|| generic_output(result)),
        ToolKind::Mcp { .. } => {
            // An MCP result's structured content and non-text items sit beside its text, not under `details`, so the
            // result tree opens on them.
            let mut map = Map::new();
            map.insert("text".into(), Value::String(result.text.clone()));
            let mut details = details.cloned();
            for key in ["structuredContent", "content"] {
                if let Some(value) = details.as_mut().and_then(Value::as_object_mut).and_then(|d| d.remove(key)) {
                    map.insert(key.into(), value);
                }
            }
            if let Some(details) = details.filter(|d| d.as_object().is_none_or(|d| !d.is_empty())) {
                map.insert("details".into(), details);
            }
            Value::Object(map)
        }
        ToolKind::Task | ToolKind::Agent | ToolKind::Chart | ToolKind::Thinking | ToolKind::Other(_) => {
            generic_output(result)
        }
    }
}

/// `{ query, results: [{ title, url, snippet }] }` from our `web_search` tool's details; `None` for a result of
/// another shape (another runtime's web search), which keeps the generic view.
fn web_search_output(args: &Value, result: &ToolResult) -> Option<Value> {
    let mut output = WebSearchOutput::from_output(result.details.as_ref()?)?;
    if output.query.is_empty() {
        output.query = args.get("query").and_then(Value::as_str).unwrap_or_default().into();
    }
    Some(output.into_output())
}

/// The result's text, its chart lifted to `output.chart`, and any other details as they are.
fn generic_output(result: &ToolResult) -> Value {
    // A chart in the details (our `chart` tool, or any runtime's) is lifted to `output.chart`, where the UI
    // draws it; the rest of the details stay as they were.
    let mut details = result.details.clone();
    let chart = details.as_mut().and_then(Value::as_object_mut).and_then(|d| d.remove("chart"));
    GenericOutput {
        text: Cow::Borrowed(&result.text),
        chart: chart.map(Cow::Owned),
        details: details.filter(|d| d.as_object().is_none_or(|d| !d.is_empty())).map(Cow::Owned),
    }
    .into_output()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_in_the_details_becomes_the_outputs_chart() {
        let chart = json!({"data": [{"y": [1, 2]}], "layout": {}});
        let result = ToolResult { text: "Showed the chart".into(), details: Some(json!({ "chart": chart })) };
        let output = normalize_output(&ToolKind::Chart, &Value::Null, &result, true, false);
        assert_eq!(output, json!({"text": "Showed the chart", "chart": chart}));
        let result = ToolResult { text: "t".into(), details: Some(json!({"chart": 1, "rows": 3})) };
        let output = normalize_output(&"Report".into(), &Value::Null, &result, true, false);
        assert_eq!(output, json!({"text": "t", "chart": 1, "details": {"rows": 3}}));
    }

    #[test]
    fn an_mcp_results_structured_content_sits_beside_its_text() {
        let details = json!({"structuredContent": {"n": 1}, "content": [{"type": "image"}], "other": true});
        let result = ToolResult { text: "{\"n\":1}".into(), details: Some(details) };
        let output = normalize_output(&"mcp__srv__count".into(), &Value::Null, &result, true, false);
        assert_eq!(
            output,
            json!({"text": "{\"n\":1}", "structuredContent": {"n": 1}, "content": [{"type": "image"}],
                "details": {"other": true}})
        );
        let plain = ToolResult { text: "hi".into(), details: None };
        assert_eq!(normalize_output(&"mcp__srv__hi".into(), &Value::Null, &plain, true, false), json!({"text": "hi"}));
    }

    #[test]
    fn bash_output_takes_the_exit_code_off_the_text() {
        let result = ToolResult { text: "boom\n\nCommand exited with code 2".into(), details: None };
        let output = normalize_output(&ToolKind::Bash, &Value::Null, &result, true, true);
        assert_eq!(output, json!({"output": "boom", "exitCode": 2}));
        let ok = ToolResult { text: "hi\n".into(), details: None };
        assert_eq!(
            normalize_output(&ToolKind::Bash, &Value::Null, &ok, true, false),
            json!({"output": "hi\n", "exitCode": 0})
        );
    }

    #[test]
    fn ipython_reports_like_bash() {
        let result =
            ToolResult { text: "Traceback …\nZeroDivisionError\n\nCommand exited with code 1".into(), details: None };
        let output = normalize_output(&ToolKind::IPython, &Value::Null, &result, true, true);
        assert_eq!(output, json!({"output": "Traceback …\nZeroDivisionError", "exitCode": 1}));
        let details =
            json!({"truncation": {"totalBytes": 9000, "shownBytes": 10}, "fullOutputPath": ".chatwire/python-1.log"});
        let long = ToolResult { text: "tail\n".into(), details: Some(details) };
        assert_eq!(
            normalize_output(&ToolKind::IPython, &Value::Null, &long, true, false),
            json!({"output": "tail\n", "exitCode": 0, "truncated": true, "totalBytes": 9000,
                "fullOutputPath": ".chatwire/python-1.log"})
        );
    }

    #[test]
    fn web_search_results_come_from_the_details() {
        let results = json!([{"title": "Rust", "url": "https://www.rust-lang.org/", "snippet": "A language"}]);
        let result = ToolResult { text: "1. Rust".into(), details: Some(json!({"query": "rust", "results": results})) };
        let output = normalize_output(&ToolKind::WebSearch, &json!({"query": "ignored"}), &result, true, false);
        assert_eq!(output, json!({"query": "rust", "results": results}));
        let other = ToolResult { text: "some runtime's own text".into(), details: None };
        let output = normalize_output(&ToolKind::WebSearch, &json!({"query": "rust"}), &other, true, false);
        assert_eq!(output, json!({"text": "some runtime's own text"}), "another shape keeps the generic view");
    }
}
