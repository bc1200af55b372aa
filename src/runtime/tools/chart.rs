//! The `chart` tool: the model hands over a chart (a Plotly-JSON subset, see `crate::chart`) and the user sees it
//! drawn in the tool's row. It checks the chart, so the model learns at once when a chart cannot be drawn.

use serde_json::{Value, json};

use super::ToolOutput;
use crate::chart::Chart;

pub(crate) const DESCRIPTION: &str = "Show the user a chart (line, scatter or bar) drawn from data you provide, in \
    Plotly JSON: data is a list of traces {type: scatter|bar, mode: lines|markers|lines+markers, name, x, y}, layout \
    has title, xaxis.title and yaxis.title.";

pub(crate) fn parameters() -> Value {
    json!({
        "type": "object",
        "required": ["data"],
        "properties": {
            "data": {"type": "array", "items": {"type": "object", "required": ["y"], "properties": {
                "type": {"type": "string", "enum": ["scatter", "bar"]},
                "mode": {"type": "string", "enum": ["lines", "markers", "lines+markers"]},
                "name": {"type": "string"},
                "x": {"type": "array", "items": {"type": ["number", "string"]}},
                "y": {"type": "array", "items": {"type": ["number", "null"]}}}}},
            "layout": {"type": "object", "properties": {
                "title": {"type": "string"},
                "xaxis": {"type": "object", "properties": {"title": {"type": "string"}}},
                "yaxis": {"type": "object", "properties": {"title": {"type": "string"}}}}}
        }
    })
}

/// Checks the chart and returns it in `details.chart`, which the mapper lifts into the part's `output.chart`.
pub(crate) fn draw(arguments: &Value) -> ToolOutput {
    let chart = json!({
        "data": arguments.get("data").cloned().unwrap_or(Value::Null),
        "layout": arguments.get("layout").cloned().unwrap_or_else(|| json!({})),
    });
    match Chart::parse(&chart) {
        Ok(parsed) => {
            let points: usize = parsed.traces.iter().map(|t| t.y.len()).sum();
            let title = parsed.title.map(|t| format!(" \"{t}\"")).unwrap_or_default();
            let series = parsed.traces.len();
            ToolOutput::ok(format!("Showed the chart{title} to the user: {series} series, {points} points."))
                .with_details(json!({ "chart": chart }))
        }
        Err(error) => ToolOutput::error(format!("the chart cannot be drawn: {error}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_chart_comes_back_in_the_details() {
        let out = draw(&json!({"data": [{"type": "bar", "x": ["a", "b"], "y": [1, 2]}], "layout": {"title": "T"}}));
        assert!(!out.is_error, "{out:?}");
        assert_eq!(out.text, "Showed the chart \"T\" to the user: 1 series, 2 points.");
        let details = out.details.unwrap();
        assert_eq!(details["chart"]["data"][0]["y"], json!([1, 2]));
        assert_eq!(details["chart"]["layout"]["title"], "T");
    }

    #[test]
    fn a_bad_chart_is_an_error_the_model_can_act_on() {
        let out = draw(&json!({"data": [{"type": "pie", "y": [1]}]}));
        assert_eq!(
            out,
            ToolOutput::error("the chart cannot be drawn: data[0].type `pie` is not supported (scatter or bar)")
        );
        assert!(draw(&json!({})).is_error);
    }
}
