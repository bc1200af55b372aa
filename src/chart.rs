//! Charts that tool outputs carry as `chart: { data, layout }`, a Plotly-JSON subset (DESIGN.md §2): parsing with
//! errors that name the bad field, nice axis ticks, and the geometry of an SVG drawing of the chart.
//!
//! The subset: `data` is a list of traces `{ type: "scatter" | "bar", mode?, x?, y, name?, marker?: { color },
//! line?: { color } }` (`mode` of a scatter is `lines`, `markers` or `lines+markers`, the default); `layout` has
//! `title`, `xaxis.title` and `yaxis.title`, each a string or `{ text }`. `y` holds numbers (`null` is a gap);
//! `x` holds numbers or category names (without `x`, points are numbered from 0). Bars, and any trace with category
//! names, put the x axis into categories; otherwise it is numeric. Pure and target-independent, so it is tested
//! natively and the browser only turns a [`Drawing`] into SVG elements.

use serde_json::Value;

/// Most points a chart may have in all; a larger one is shown as its JSON.
pub const MAX_POINTS: usize = 5_000;

/// Colours of the traces, in order (Plotly's default palette); legible on light and dark backgrounds alike.
pub const PALETTE: [&str; 8] = ["#636efa", "#ef553b", "#00cc96", "#ab63fa", "#ffa15a", "#19d3f3", "#ff6692", "#b6e880"];

/// A parsed chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: Option<String>,
    pub x_title: Option<String>,
    pub y_title: Option<String>,
    pub traces: Vec<Trace>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub name: Option<String>,
    pub kind: TraceKind,
    pub x: Vec<XValue>,
    /// `None` is a gap (JSON `null`).
    pub y: Vec<Option<f64>>,
    /// A colour the trace asked for (`#rgb`, `#rrggbb`, `#rrggbbaa`); others are ignored.
    pub color: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceKind {
    Lines,
    Markers,
    LinesAndMarkers,
    Bar,
}

#[derive(Debug, Clone, PartialEq)]
pub enum XValue {
    Number(f64),
    Category(String),
}

/// Why a chart cannot be drawn.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChartError {
    #[error("a chart must be an object with `data` and `layout`")]
    NotAnObject,
    #[error("`data` must be a non-empty list of traces")]
    NoData,
    #[error("data[{0}] must be an object")]
    TraceNotAnObject(usize),
    #[error("data[{trace}].type `{kind}` is not supported (scatter or bar)")]
    UnknownType { trace: usize, kind: String },
    #[error("data[{trace}].mode `{mode}` is not supported (lines, markers or lines+markers)")]
    UnknownMode { trace: usize, mode: String },
    #[error("data[{0}].orientation: only vertical bars are supported")]
    HorizontalBars(usize),
    #[error("data[{0}].y must be a list of numbers")]
    MissingY(usize),
    #[error("data[{trace}].{axis}[{index}] is not {expected}")]
    BadValue { trace: usize, axis: char, index: usize, expected: &'static str },
    #[error("data[{trace}] has {x} x values but {y} y values")]
    LengthMismatch { trace: usize, x: usize, y: usize },
    #[error("{field} must be a string or {{ text }}")]
    BadText { field: String },
    #[error("the chart has {0} points, more than the {MAX_POINTS} drawn")]
    TooManyPoints(usize),
    #[error("the chart has no numbers to draw")]
    NothingToDraw,
}

impl Chart {
    /// Parses `{ data, layout }`; `layout` may be absent.
    pub fn parse(value: &Value) -> Result<Chart, ChartError> {
        let object = value.as_object().ok_or(ChartError::NotAnObject)?;
        let data = object.get("data").and_then(Value::as_array).filter(|d| !d.is_empty()).ok_or(ChartError::NoData)?;
        let traces = data.iter().enumerate().map(|(i, trace)| parse_trace(i, trace)).collect::<Result<Vec<_>, _>>()?;
        let points: usize = traces.iter().map(|t| t.y.len()).sum();
        if points > MAX_POINTS {
            return Err(ChartError::TooManyPoints(points));
        }
        if traces.iter().all(|t| t.y.iter().all(Option::is_none)) {
            return Err(ChartError::NothingToDraw);
        }
        let layout = object.get("layout").filter(|l| !l.is_null());
        let axis_title = |axis: &str| -> Result<Option<String>, ChartError> {
            let title = layout.and_then(|l| l.get(axis)).and_then(|a| a.get("title"));
            text(title, &format!("layout.{axis}.title"))
        };
        Ok(Chart {
            title: text(layout.and_then(|l| l.get("title")), "layout.title")?,
            x_title: axis_title("xaxis")?,
            y_title: axis_title("yaxis")?,
            traces,
        })
    }

    /// True when the x axis shows categories (bars, or category names anywhere) rather than numbers.
    pub fn categorical(&self) -> bool {
        self.traces.iter().any(|t| t.kind == TraceKind::Bar || t.x.iter().any(|x| matches!(x, XValue::Category(_))))
    }
}

/// A title: a string, `{ text }`, or absent; an empty one counts as absent.
fn text(value: Option<&Value>, field: &str) -> Result<Option<String>, ChartError> {
    let text = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(text)) => text,
        Some(Value::Object(map)) => match map.get("text") {
            Some(Value::String(text)) => text,
            None | Some(Value::Null) => return Ok(None),
            Some(_) => return Err(ChartError::BadText { field: field.to_owned() }),
        },
        Some(_) => return Err(ChartError::BadText { field: field.to_owned() }),
    };
    Ok(Some(text.trim().to_owned()).filter(|t| !t.is_empty()))
}

fn parse_trace(index: usize, trace: &Value) -> Result<Trace, ChartError> {
    let map = trace.as_object().ok_or(ChartError::TraceNotAnObject(index))?;
    let kind = match map.get("type").and_then(Value::as_str).unwrap_or("scatter") {
        "scatter" | "scattergl" => match map.get("mode").and_then(Value::as_str) {
            None => TraceKind::LinesAndMarkers,
            Some(mode) => {
                let flags: Vec<&str> = mode.split('+').map(str::trim).filter(|f| *f != "text").collect();
                match (flags.contains(&"lines"), flags.contains(&"markers"), flags.len()) {
                    (true, true, 2) => TraceKind::LinesAndMarkers,
                    (true, false, 1) => TraceKind::Lines,
                    (false, true, 1) => TraceKind::Markers,
                    _ => return Err(ChartError::UnknownMode { trace: index, mode: mode.to_owned() }),
                }
            }
        },
        "bar" => {
            if map.get("orientation").and_then(Value::as_str) == Some("h") {
                return Err(ChartError::HorizontalBars(index));
            }
            TraceKind::Bar
        }
        other => return Err(ChartError::UnknownType { trace: index, kind: other.to_owned() }),
    };
    let y_values = map.get("y").and_then(Value::as_array).ok_or(ChartError::MissingY(index))?;
    let y = y_values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            match v {
                Value::Null => Some(None),
                Value::Number(n) => n.as_f64().filter(|n| n.is_finite()).map(Some),
                _ => None,
            }
            .ok_or(ChartError::BadValue { trace: index, axis: 'y', index: i, expected: "a number" })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let x = match map.get("x") {
        None | Some(Value::Null) => (0..y.len()).map(|i| XValue::Number(i as f64)).collect(),
        Some(Value::Array(values)) => values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                match v {
                    Value::Number(n) => n.as_f64().filter(|n| n.is_finite()).map(XValue::Number),
                    Value::String(s) => Some(XValue::Category(s.clone())),
                    _ => None,
                }
                .ok_or(ChartError::BadValue {
                    trace: index,
                    axis: 'x',
                    index: i,
                    expected: "a number or a name",
                })
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err(ChartError::BadValue { trace: index, axis: 'x', index: 0, expected: "a list" }),
    };
    if x.len() != y.len() {
        return Err(ChartError::LengthMismatch { trace: index, x: x.len(), y: y.len() });
    }
    let name = map.get("name").and_then(Value::as_str).map(str::trim).filter(|n| !n.is_empty()).map(str::to_owned);
    let color = ["marker", "line"]
        .iter()
        .find_map(|key| map.get(*key).and_then(|m| m.get("color")).and_then(Value::as_str))
        .filter(|c| is_hex_color(c))
        .map(str::to_owned);
    Ok(Trace { name, kind, x, y, color })
}

fn is_hex_color(color: &str) -> bool {
    color
        .strip_prefix('#')
        .is_some_and(|hex| matches!(hex.len(), 3 | 6 | 8) && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Axis ticks: round values (1, 2 or 5 × 10ⁿ apart) that cover the data.
#[derive(Debug, Clone, PartialEq)]
pub struct Ticks {
    pub step: f64,
    /// From the first tick at or below the data's minimum to the first at or above its maximum.
    pub values: Vec<f64>,
}

impl Ticks {
    /// About `target` ticks over `[min, max]`; an empty span is widened around its value.
    pub fn nice(min: f64, max: f64, target: usize) -> Ticks {
        let (min, max) = if max > min {
            (min, max)
        } else if min == 0.0 {
            (0.0, 1.0)
        } else {
            (min - min.abs() / 2.0, max + max.abs() / 2.0)
        };
        let step = nice_step((max - min) / target.max(1) as f64);
        // The epsilon keeps a value that is a multiple of the step from gaining a tick by rounding error.
        let first = (min / step + 1e-9).floor();
        let last = (max / step - 1e-9).ceil();
        let values = (0..=((last - first) as usize)).map(|i| clean((first + i as f64) * step)).collect();
        Ticks { step, values }
    }

    pub fn min(&self) -> f64 {
        self.values[0]
    }

    pub fn max(&self) -> f64 {
        self.values[self.values.len() - 1]
    }

    /// A tick value as its label: as many decimals as the step needs, no `-0`.
    pub fn label(&self, value: f64) -> String {
        let decimals = (-(self.step.log10() + 1e-9).floor()).max(0.0) as usize;
        let text = format!("{value:.decimals$}");
        if text.trim_start_matches('-').chars().all(|c| c == '0' || c == '.') { text.replace('-', "") } else { text }
    }
}

/// The round number (1, 2 or 5 × 10ⁿ) at or above `raw`.
fn nice_step(raw: f64) -> f64 {
    let magnitude = 10_f64.powf(raw.log10().floor());
    let normalized = raw / magnitude;
    let nice = if normalized <= 1.0 {
        1.0
    } else if normalized <= 2.0 {
        2.0
    } else if normalized <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

/// Drops the floating-point noise of `k × step` (0.30000000000000004 → 0.3).
fn clean(value: f64) -> f64 {
    (value * 1e9).round() / 1e9
}

/// A linear map from data values to pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    pub domain: (f64, f64),
    pub range: (f64, f64),
}

impl Scale {
    pub fn map(&self, value: f64) -> f64 {
        let (d0, d1) = self.domain;
        let (r0, r1) = self.range;
        if d1 == d0 { (r0 + r1) / 2.0 } else { r0 + (value - d0) / (d1 - d0) * (r1 - r0) }
    }
}

/// The size of the drawing and the room kept around the plot for titles, ticks and the legend.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Viewport {
    pub width: f64,
    pub height: f64,
}

impl Default for Viewport {
    fn default() -> Self {
        Viewport { width: 640.0, height: 360.0 }
    }
}

/// A piece of text and where it goes.
#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    pub text: String,
    pub x: f64,
    pub y: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
}

/// One trace as shapes.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub kind: TraceKind,
    pub color: String,
    /// Polyline `points` attributes, one per run of points without a gap.
    pub lines: Vec<String>,
    pub markers: Vec<(f64, f64)>,
    pub bars: Vec<Rect>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LegendEntry {
    pub label: Label,
    pub kind: TraceKind,
    pub color: String,
    /// Where the colour swatch goes (left of the label).
    pub swatch_x: f64,
}

/// Everything an SVG of the chart draws, in viewport pixels (y grows downwards).
#[derive(Debug, Clone, PartialEq)]
pub struct Drawing {
    pub width: f64,
    pub height: f64,
    pub plot: Rect,
    pub title: Option<Label>,
    pub x_title: Option<Label>,
    /// Drawn rotated by −90° around its position.
    pub y_title: Option<Label>,
    pub x_ticks: Vec<Label>,
    pub y_ticks: Vec<Label>,
    pub series: Vec<Series>,
    pub legend: Vec<LegendEntry>,
}

/// About how wide a character of the tick and legend font is, to place the legend without measuring text.
const CHAR_WIDTH: f64 = 7.0;
const LEGEND_SWATCH: f64 = 18.0;
const LEGEND_GAP: f64 = 16.0;
const LEGEND_ROW: f64 = 18.0;
/// Category names longer than this are shortened on the axis.
const MAX_CATEGORY_CHARS: usize = 14;
const MAX_CATEGORY_TICKS: usize = 12;

/// Where an x value goes on the plot, in pixels.
type XPosition = Box<dyn Fn(&XValue) -> f64>;

/// Lays `chart` out in `viewport`.
pub fn draw(chart: &Chart, viewport: Viewport) -> Drawing {
    let Viewport { width, height } = viewport;
    let mut top = 12.0;
    let title = chart.title.as_ref().map(|text| {
        top += 24.0;
        Label { text: text.clone(), x: width / 2.0, y: 22.0 }
    });

    // The legend flows left to right under the title, wrapping onto more rows when needed.
    let named = chart.traces.iter().any(|t| t.name.is_some());
    let mut legend = Vec::new();
    if named {
        let mut x = 56.0;
        let mut row_y = top + 6.0;
        for (i, trace) in chart.traces.iter().enumerate() {
            let text = trace.name.clone().unwrap_or_else(|| format!("trace {i}"));
            let entry_width = LEGEND_SWATCH + 4.0 + text.chars().count() as f64 * CHAR_WIDTH;
            if x + entry_width > width - 16.0 && x > 56.0 {
                x = 56.0;
                row_y += LEGEND_ROW;
            }
            legend.push(LegendEntry {
                label: Label { text, x: x + LEGEND_SWATCH + 4.0, y: row_y },
                kind: trace.kind,
                color: color_of(trace, i),
                swatch_x: x,
            });
            x += entry_width + LEGEND_GAP;
        }
        top = row_y + LEGEND_ROW;
    }

    let left = if chart.y_title.is_some() { 72.0 } else { 56.0 };
    let bottom = if chart.x_title.is_some() { 52.0 } else { 32.0 };
    let plot =
        Rect { x: left, y: top, width: (width - left - 16.0).max(40.0), height: (height - top - bottom).max(40.0) };

    let has_bars = chart.traces.iter().any(|t| t.kind == TraceKind::Bar);
    let ys = chart.traces.iter().flat_map(|t| t.y.iter().flatten().copied());
    let (mut y_min, mut y_max) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), y| (lo.min(y), hi.max(y)));
    if has_bars {
        y_min = y_min.min(0.0);
        y_max = y_max.max(0.0);
    }
    let y_ticks = Ticks::nice(y_min, y_max, 5);
    let y_scale = Scale { domain: (y_ticks.min(), y_ticks.max()), range: (plot.y + plot.height, plot.y) };
    let y_tick_labels =
        y_ticks.values.iter().map(|&v| Label { text: y_ticks.label(v), x: plot.x - 8.0, y: y_scale.map(v) }).collect();

    let tick_y = plot.y + plot.height + 18.0;
    let (x_position, band, x_tick_labels): (XPosition, f64, Vec<Label>) = if chart.categorical() {
        let categories = categories(chart);
        let band = plot.width / categories.len().max(1) as f64;
        let every = categories.len().div_ceil(MAX_CATEGORY_TICKS);
        let labels = categories
            .iter()
            .enumerate()
            .filter(|(i, _)| i % every == 0)
            .map(|(i, name)| Label { text: shorten(name), x: plot.x + band * (i as f64 + 0.5), y: tick_y })
            .collect();
        let at = move |x: &XValue| {
            let name = category_name(x);
            let i = categories.iter().position(|c| *c == name).unwrap_or(0);
            plot.x + band * (i as f64 + 0.5)
        };
        (Box::new(at), band, labels)
    } else {
        let xs = chart.traces.iter().flat_map(|t| t.x.iter()).filter_map(|x| match x {
            XValue::Number(n) => Some(*n),
            XValue::Category(_) => None,
        });
        let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(x), hi.max(x)));
        let ticks = Ticks::nice(lo, hi, 6);
        let scale = Scale { domain: (ticks.min(), ticks.max()), range: (plot.x, plot.x + plot.width) };
        let labels = ticks.values.iter().map(|&v| Label { text: ticks.label(v), x: scale.map(v), y: tick_y }).collect();
        let at = move |x: &XValue| match x {
            XValue::Number(n) => scale.map(*n),
            XValue::Category(_) => plot.x,
        };
        (Box::new(at), 0.0, labels)
    };

    // Bars of several traces stand side by side in each category, 80 % of the band in all.
    let bar_traces: Vec<usize> =
        chart.traces.iter().enumerate().filter(|(_, t)| t.kind == TraceKind::Bar).map(|(i, _)| i).collect();
    let bar_width = band * 0.8 / bar_traces.len().max(1) as f64;
    let baseline = y_scale.map(0.0_f64.clamp(y_ticks.min(), y_ticks.max()));
    let series = chart
        .traces
        .iter()
        .enumerate()
        .map(|(i, trace)| {
            let points: Vec<Option<(f64, f64)>> = trace
                .x
                .iter()
                .zip(&trace.y)
                .map(|(x, y)| y.map(|y| (round(x_position(x)), round(y_scale.map(y)))))
                .collect();
            let mut series = Series {
                kind: trace.kind,
                color: color_of(trace, i),
                lines: Vec::new(),
                markers: Vec::new(),
                bars: Vec::new(),
            };
            match trace.kind {
                TraceKind::Bar => {
                    let slot = bar_traces.iter().position(|&b| b == i).unwrap_or(0) as f64;
                    let offset = -band * 0.4 + bar_width * slot;
                    series.bars = points
                        .iter()
                        .flatten()
                        .map(|&(x, y)| Rect {
                            x: round(x + offset),
                            y: round(y.min(baseline)),
                            width: round(bar_width),
                            height: round((y - baseline).abs()),
                        })
                        .collect();
                }
                TraceKind::Lines | TraceKind::Markers | TraceKind::LinesAndMarkers => {
                    if trace.kind != TraceKind::Markers {
                        series.lines = points
                            .split(Option::is_none)
                            .filter(|run| run.len() > 1)
                            .map(|run| {
                                run.iter().flatten().map(|(x, y)| format!("{x},{y}")).collect::<Vec<_>>().join(" ")
                            })
                            .collect();
                    }
                    if trace.kind != TraceKind::Lines {
                        series.markers = points.iter().flatten().copied().collect();
                    }
                }
            }
            series
        })
        .collect();

    Drawing {
        width,
        height,
        plot,
        title,
        x_title: chart.x_title.as_ref().map(|text| Label {
            text: text.clone(),
            x: plot.x + plot.width / 2.0,
            y: plot.y + plot.height + 42.0,
        }),
        y_title: chart.y_title.as_ref().map(|text| Label {
            text: text.clone(),
            x: 18.0,
            y: plot.y + plot.height / 2.0,
        }),
        x_ticks: x_tick_labels,
        y_ticks: y_tick_labels,
        series,
        legend,
    }
}

fn color_of(trace: &Trace, index: usize) -> String {
    trace.color.clone().unwrap_or_else(|| PALETTE[index % PALETTE.len()].to_owned())
}

/// The distinct x values of all traces as category names, in order of first appearance.
fn categories(chart: &Chart) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for x in chart.traces.iter().flat_map(|t| t.x.iter()) {
        let name = category_name(x);
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

fn category_name(x: &XValue) -> String {
    match x {
        XValue::Category(name) => name.clone(),
        XValue::Number(n) => format!("{}", clean(*n)),
    }
}

fn shorten(name: &str) -> String {
    if name.chars().count() <= MAX_CATEGORY_CHARS {
        return name.to_owned();
    }
    let kept: String = name.chars().take(MAX_CATEGORY_CHARS - 1).collect();
    format!("{kept}…")
}

/// One decimal is finer than a pixel; it keeps the SVG short.
fn round(value: f64) -> f64 {
    (value * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn line_and_bars() -> Value {
        json!({
            "data": [
                {"type": "bar", "name": "lines", "x": ["a.rs", "b.rs", "c.rs"], "y": [120, 40, 75]},
                {"type": "scatter", "mode": "lines+markers", "name": "tests", "x": ["a.rs", "b.rs", "c.rs"], "y": [10, null, 30]}
            ],
            "layout": {"title": {"text": "Code size"}, "xaxis": {"title": "file"}, "yaxis": {"title": {"text": "lines"}}}
        })
    }

    #[test]
    fn parses_the_plotly_subset() {
        let chart = Chart::parse(&line_and_bars()).unwrap();
        assert_eq!(chart.title.as_deref(), Some("Code size"));
        assert_eq!((chart.x_title.as_deref(), chart.y_title.as_deref()), (Some("file"), Some("lines")));
        assert_eq!(chart.traces[0].kind, TraceKind::Bar);
        assert_eq!(chart.traces[1].kind, TraceKind::LinesAndMarkers);
        assert_eq!(chart.traces[1].y, [Some(10.0), None, Some(30.0)]);
        assert!(chart.categorical());
        let numbered = Chart::parse(&json!({"data": [{"y": [3, 1, 2], "mode": "lines"}]})).unwrap();
        assert_eq!(numbered.traces[0].x, [XValue::Number(0.0), XValue::Number(1.0), XValue::Number(2.0)]);
        assert!(!numbered.categorical() && numbered.title.is_none());
    }

    #[test]
    fn malformed_charts_name_what_is_wrong() {
        let cases = [
            (json!([1, 2]), "a chart must be an object"),
            (json!({"data": []}), "`data` must be a non-empty list"),
            (json!({"data": [{"type": "pie", "y": [1]}]}), "data[0].type `pie`"),
            (json!({"data": [{"y": [1, "two"]}]}), "data[0].y[1] is not a number"),
            (json!({"data": [{"x": [1], "y": [1, 2]}]}), "1 x values but 2 y values"),
            (json!({"data": [{"y": [1], "mode": "bubbles"}]}), "mode `bubbles`"),
            (json!({"data": [{"type": "bar", "orientation": "h", "y": [1]}]}), "only vertical bars"),
            (json!({"data": [{"x": [1]}]}), "data[0].y must be a list"),
            (json!({"data": [{"y": [1]}], "layout": {"title": 5}}), "layout.title must be"),
            (json!({"data": [{"y": [null]}]}), "no numbers"),
            (json!({"data": [{"y": vec![1; MAX_POINTS + 1]}]}), "more than the 5000"),
        ];
        for (value, expected) in cases {
            let error = Chart::parse(&value).unwrap_err().to_string();
            assert!(error.contains(expected), "{value}: {error}");
        }
    }

    #[test]
    fn ticks_are_round_and_cover_the_data() {
        let ticks = Ticks::nice(3.0, 97.0, 5);
        assert_eq!(ticks.step, 20.0);
        assert_eq!(ticks.values, [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        let ticks = Ticks::nice(0.1, 0.35, 5);
        assert_eq!(ticks.step, 0.05);
        assert_eq!(ticks.values.first(), Some(&0.1));
        assert_eq!(ticks.values.last(), Some(&0.35));
        assert_eq!(ticks.label(0.3), "0.30", "two decimals for a step of 0.05");
        let ticks = Ticks::nice(-7.0, 12.0, 5);
        assert_eq!((ticks.min(), ticks.max(), ticks.step), (-10.0, 15.0, 5.0));
        assert_eq!(ticks.label(0.0), "0");
        assert_eq!(Ticks::nice(5.0, 5.0, 5).values, [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], "an empty span is widened");
        assert_eq!(Ticks::nice(0.0, 0.0, 5).values, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
        let big = Ticks::nice(0.0, 12_345.0, 4);
        assert_eq!((big.step, big.max()), (5_000.0, 15_000.0));
        assert_eq!(Ticks::nice(-0.4, 0.4, 4).label(-0.0), "0.0");
    }

    #[test]
    fn scales_map_the_domain_onto_the_range() {
        let scale = Scale { domain: (0.0, 100.0), range: (300.0, 20.0) };
        assert_eq!(scale.map(0.0), 300.0);
        assert_eq!(scale.map(100.0), 20.0);
        assert_eq!(scale.map(25.0), 230.0);
        assert_eq!(Scale { domain: (5.0, 5.0), range: (0.0, 10.0) }.map(5.0), 5.0);
    }

    #[test]
    fn bars_stand_on_zero_and_lines_break_at_gaps() {
        let chart = Chart::parse(&line_and_bars()).unwrap();
        let drawing = draw(&chart, Viewport::default());
        let plot = drawing.plot;
        let bottom = plot.y + plot.height;
        let bars = &drawing.series[0].bars;
        assert_eq!(bars.len(), 3);
        for bar in bars {
            assert!((bar.y + bar.height - bottom).abs() < 0.2, "a bar does not stand on the x axis: {bar:?}");
            assert!(bar.x >= plot.x && bar.x + bar.width <= plot.x + plot.width + 0.2);
        }
        assert!(bars[0].height > bars[2].height && bars[2].height > bars[1].height, "heights follow the values");
        let line = &drawing.series[1];
        assert!(line.lines.is_empty(), "a gap after the first point leaves no segment of two points");
        assert_eq!(line.markers.len(), 2);
        assert_eq!(drawing.x_ticks.iter().map(|t| t.text.as_str()).collect::<Vec<_>>(), ["a.rs", "b.rs", "c.rs"]);
        assert_eq!(drawing.y_ticks.first().map(|t| t.text.as_str()), Some("0"));
        assert_eq!(drawing.y_ticks.last().map(|t| t.text.as_str()), Some("150"), "120 rounded up to a tick");
        assert_eq!(drawing.legend.iter().map(|e| e.label.text.as_str()).collect::<Vec<_>>(), ["lines", "tests"]);
        assert_eq!(drawing.title.as_ref().unwrap().text, "Code size");
        assert_eq!(drawing.y_title.as_ref().unwrap().text, "lines");
    }

    #[test]
    fn numeric_lines_span_the_plot() {
        let chart = Chart::parse(&json!({"data": [{"x": [0, 5, 10], "y": [1, 3, 2], "mode": "lines"}]})).unwrap();
        let drawing = draw(&chart, Viewport::default());
        let plot = drawing.plot;
        assert!(drawing.legend.is_empty(), "no names, no legend");
        let points: Vec<(f64, f64)> = drawing.series[0].lines[0]
            .split(' ')
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect();
        assert_eq!(points.len(), 3);
        assert_eq!(points[0].0, plot.x);
        assert_eq!(points[2].0, round(plot.x + plot.width));
        assert!(points[1].1 < points[2].1 && points[2].1 < points[0].1, "higher values are drawn higher");
        assert!(drawing.series[0].markers.is_empty());
    }

    #[test]
    fn many_categories_show_every_kth_label_and_long_names_are_shortened() {
        let x: Vec<String> = (0..30).map(|i| format!("a rather long category {i}")).collect();
        let chart = Chart::parse(&json!({"data": [{"type": "bar", "x": x, "y": vec![1; 30]}]})).unwrap();
        let drawing = draw(&chart, Viewport::default());
        assert_eq!(drawing.x_ticks.len(), 10);
        assert!(drawing.x_ticks.iter().all(|t| t.text.chars().count() == MAX_CATEGORY_CHARS));
    }
}
