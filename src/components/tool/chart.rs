//! A tool output's `chart` drawn as inline SVG (axes, ticks, legend, title; lines, markers and bars); a chart that
//! cannot be drawn shows its JSON and why, and the row around it stays intact. Every text is a text node.

use leptos::prelude::*;

use crate::components::client_only::IntoRowView;
use serde_json::Value;

use crate::chart::{Chart, Drawing, TraceKind, Viewport, draw};
use crate::i18n::{Key, fill, t};

/// The chart of a tool output (`output.chart`).
#[component]
pub fn ChartView(
    /// The `{ data, layout }` object as the tool gave it.
    spec: Value,
) -> impl IntoView {
    match Chart::parse(&spec) {
        Ok(chart) => {
            let label = chart.title.clone().unwrap_or_else(|| t(Key::Chart).to_owned());
            view! { <ChartSvg drawing=draw(&chart, Viewport::default()) label/> }.into_row_view()
        }
        Err(error) => {
            let json = serde_json::to_string_pretty(&spec).unwrap_or_default();
            view! {
                <div class="chart chart--malformed">
                    <p class="chart__error">{fill(Key::ChartNotDrawn, &[("error", &error.to_string())])}</p>
                    <pre class="chart__json">{json}</pre>
                </div>
            }
            .into_row_view()
        }
    }
}

#[component]
fn ChartSvg(drawing: Drawing, label: String) -> impl IntoView {
    let Drawing { width, height, plot, title, x_title, y_title, x_ticks, y_ticks, series, legend } = drawing;
    let plot_bottom = plot.y + plot.height;
    let plot_right = plot.x + plot.width;
    view! {
        <figure class="chart">
            <svg
                class="chart__svg"
                viewBox=format!("0 0 {width} {height}")
                role="img"
                aria-label=label
                preserveAspectRatio="xMidYMid meet"
            >
                <g class="chart__grid">
                    {y_ticks
                        .iter()
                        .map(|tick| view! { <line x1=plot.x x2=plot_right y1=tick.y y2=tick.y></line> })
                        .collect_view()}
                </g>
                <g class="chart__axes">
                    <line x1=plot.x x2=plot_right y1=plot_bottom y2=plot_bottom></line>
                    <line x1=plot.x x2=plot.x y1=plot.y y2=plot_bottom></line>
                </g>
                <g class="chart__ticks chart__ticks--y">
                    {y_ticks
                        .into_iter()
                        .map(|tick| view! { <text x=tick.x y=tick.y dy="0.32em">{tick.text}</text> })
                        .collect_view()}
                </g>
                <g class="chart__ticks chart__ticks--x">
                    {x_ticks
                        .into_iter()
                        .map(|tick| view! { <text x=tick.x y=tick.y>{tick.text}</text> })
                        .collect_view()}
                </g>
                {series
                    .into_iter()
                    .enumerate()
                    .map(|(i, series)| {
                        let color = series.color.clone();
                        view! {
                            <g class=format!("chart__series chart__series--{}", kind_class(series.kind)) data-series=i>
                                {series
                                    .bars
                                    .iter()
                                    .map(|bar| {
                                        view! {
                                            <rect
                                                class="chart__bar"
                                                x=bar.x
                                                y=bar.y
                                                width=bar.width
                                                height=bar.height
                                                fill=color.clone()
                                            ></rect>
                                        }
                                    })
                                    .collect_view()}
                                {series
                                    .lines
                                    .iter()
                                    .map(|points| {
                                        view! {
                                            <polyline class="chart__line" points=points.clone() stroke=color.clone()></polyline>
                                        }
                                    })
                                    .collect_view()}
                                {series
                                    .markers
                                    .iter()
                                    .map(|&(x, y)| {
                                        view! { <circle class="chart__marker" cx=x cy=y r="3.5" fill=color.clone()></circle> }
                                    })
                                    .collect_view()}
                            </g>
                        }
                    })
                    .collect_view()}
                <g class="chart__legend">
                    {legend
                        .into_iter()
                        .map(|entry| {
                            let swatch = match entry.kind {
                                TraceKind::Bar => {
                                    view! {
                                        <rect
                                            x=entry.swatch_x
                                            y=entry.label.y - 5.0
                                            width="14"
                                            height="10"
                                            fill=entry.color.clone()
                                        ></rect>
                                    }
                                        .into_row_view()
                                }
                                TraceKind::Lines | TraceKind::Markers | TraceKind::LinesAndMarkers => {
                                    view! {
                                        <line
                                            class="chart__line"
                                            x1=entry.swatch_x
                                            x2=entry.swatch_x + 14.0
                                            y1=entry.label.y
                                            y2=entry.label.y
                                            stroke=entry.color.clone()
                                        ></line>
                                        <circle
                                            cx=entry.swatch_x + 7.0
                                            cy=entry.label.y
                                            r="3"
                                            fill=entry.color.clone()
                                        ></circle>
                                    }
                                        .into_row_view()
                                }
                            };
                            view! {
                                <g class="chart__legend-entry">
                                    {swatch}
                                    <text x=entry.label.x y=entry.label.y dy="0.32em">{entry.label.text}</text>
                                </g>
                            }
                        })
                        .collect_view()}
                </g>
                {title.map(|t| view! { <text class="chart__title" x=t.x y=t.y>{t.text}</text> })}
                {x_title.map(|t| view! { <text class="chart__axis-title" x=t.x y=t.y>{t.text}</text> })}
                {y_title
                    .map(|t| {
                        view! {
                            <text
                                class="chart__axis-title"
                                x=t.x
                                y=t.y
                                transform=format!("rotate(-90 {} {})", t.x, t.y)
                            >
                                {t.text}
                            </text>
                        }
                    })}
            </svg>
        </figure>
    }
}

fn kind_class(kind: TraceKind) -> &'static str {
    match kind {
        TraceKind::Lines => "lines",
        TraceKind::Markers => "markers",
        TraceKind::LinesAndMarkers => "lines-markers",
        TraceKind::Bar => "bar",
    }
}
