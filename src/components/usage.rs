//! Token usage as people read it: an answer's usage line, a session's totals, and the composer's context meter.

use leptos::prelude::*;

use crate::i18n::{Key, Lang, fill, lang, plural, t};
use crate::protocol::{ContextUse, MessageUsage, TokenUsage, fixed};

/// "950", "1.2k", "48k", "1.3M": a token count short enough for a footer. In Chinese by ten-thousands, as people
/// there count: "9,500", "1.2万", "130万", "1.3亿".
pub fn short_count(count: u64) -> String {
    match lang() {
        Lang::En => short_count_en(count),
        Lang::ZhCn => short_count_zh(count),
    }
}

fn short_count_zh(count: u64) -> String {
    let wan = count as f64 / 10_000.0;
    let yi = count as f64 / 100_000_000.0;
    if count < 10_000 {
        full_count(count)
    } else if wan < 9.95 {
        format!("{}万", fixed(wan, 1))
    } else if wan < 9_999.5 {
        format!("{}万", fixed(wan, 0))
    } else if yi < 9.95 {
        format!("{}亿", fixed(yi, 1))
    } else {
        format!("{}亿", fixed(yi, 0))
    }
}

fn short_count_en(count: u64) -> String {
    let thousands = count as f64 / 1_000.0;
    let millions = count as f64 / 1_000_000.0;
    if count < 1_000 {
        count.to_string()
    } else if thousands < 9.95 {
        format!("{}k", fixed(thousands, 1))
    } else if thousands < 999.5 {
        format!("{}k", fixed(thousands, 0))
    } else if millions < 9.95 {
        format!("{}M", fixed(millions, 1))
    } else {
        format!("{}M", fixed(millions, 0))
    }
}

/// "1,234,567": a count in full, for tooltips.
pub fn full_count(count: u64) -> String {
    let digits = count.to_string();
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

/// "$0.0016", "$0.42", "$12.50": cents when there are any, four places below a cent so a cheap call is not "$0.00".
pub fn dollars(cost: f64) -> String {
    if cost <= 0.0 {
        "$0".to_owned()
    } else if cost < 0.0001 {
        "<$0.0001".to_owned()
    } else if cost < 0.01 {
        format!("${}", fixed(cost, 4))
    } else {
        format!("${}", fixed(cost, 2))
    }
}

/// "1.2k in · 150 out · 800 cache read · 2 calls · $0.0016": what an answer's run used. The cost is left out when
/// no price is known, rather than shown as free.
pub fn usage_line(usage: &MessageUsage) -> String {
    let mut line = token_counts(&usage.total);
    if usage.calls > 1 {
        line.push_str(" · ");
        line.push_str(&plural(Key::CallsOne, Key::CallsOther, usage.calls as u64));
    }
    if let Some(cost) = usage.total.cost {
        line.push_str(" · ");
        line.push_str(&dollars(cost));
    }
    line
}

fn token_counts(tokens: &TokenUsage) -> String {
    let mut line = fill(Key::InOut, &[("input", &short_count(tokens.input)), ("output", &short_count(tokens.output))]);
    if tokens.cache_read > 0 {
        line.push_str(&fill(Key::CacheRead, &[("n", &short_count(tokens.cache_read))]));
    }
    if tokens.cache_write > 0 {
        line.push_str(&fill(Key::CacheWrite, &[("n", &short_count(tokens.cache_write))]));
    }
    line
}

/// The usage line's tooltip: every count in full.
pub fn usage_details(usage: &MessageUsage) -> String {
    let total = &usage.total;
    let calls = plural(Key::ModelCallsOne, Key::ModelCallsOther, usage.calls as u64);
    let cost = match total.cost {
        Some(cost) => fill(Key::Cost, &[("cost", &dollars(cost))]),
        None => t(Key::CostUnknown).to_owned(),
    };
    fill(
        Key::UsageDetails,
        &[
            ("calls", &calls),
            ("input", &full_count(total.input)),
            ("output", &full_count(total.output)),
            ("read", &full_count(total.cache_read)),
            ("written", &full_count(total.cache_write)),
            ("cost", &cost),
        ],
    )
}

/// "48k tokens · $1.20": a session's totals, for the sidebar.
pub fn session_totals(tokens: &TokenUsage) -> String {
    let mut line = fill(Key::Tokens, &[("n", &short_count(tokens.context_tokens()))]);
    if let Some(cost) = tokens.cost {
        line.push_str(" · ");
        line.push_str(&dollars(cost));
    }
    line
}

/// "12% of 128k", or "15k tokens" when the window is unknown: how full the context is.
pub fn context_label(context: &ContextUse) -> String {
    match (context.fraction(), context.window) {
        (Some(fraction), Some(window)) => {
            let percent = ((fraction * 100.0).round() as u64).to_string();
            fill(Key::PercentOf, &[("percent", &percent), ("window", &short_count(window))])
        }
        (None, _) | (Some(_), None) => fill(Key::Tokens, &[("n", &short_count(context.used))]),
    }
}

/// The meter's tooltip and accessible description.
pub fn context_details(context: &ContextUse) -> String {
    let mut text = match context.window {
        Some(window) => fill(Key::ContextOf, &[("used", &full_count(context.used)), ("window", &full_count(window))]),
        None => fill(Key::ContextTokens, &[("used", &full_count(context.used))]),
    };
    match context.compact_at {
        Some(at) if context.past_compaction() => text.push_str(&fill(Key::PastCompaction, &[("at", &full_count(at))])),
        Some(at) => text.push_str(&fill(Key::CompactsPast, &[("at", &full_count(at))])),
        None => {}
    }
    text
}

/// The line under an answer: its run's tokens and cost.
#[component]
pub fn UsageLine(usage: ArcRwSignal<Option<MessageUsage>>) -> impl IntoView {
    move || {
        usage.get().filter(|usage| !usage.total.is_empty()).map(|usage| {
            view! {
                <span class="message__usage" data-testid="usage" title=usage_details(&usage)>
                    {usage_line(&usage)}
                </span>
            }
        })
    }
}

/// How full the model's context is, after the session's last model call; nothing before the first one.
#[component]
pub fn ContextMeter(#[prop(into)] context: Signal<Option<ContextUse>>) -> impl IntoView {
    move || {
        context.get().map(|context| {
            let details = context_details(&context);
            let full = context.past_compaction();
            // A native meter, not a styled bar: the page's CSP forbids inline styles. Past `high` Chromium draws it
            // in its warning colour.
            let bar = context.window.filter(|&window| window > 0).map(|window| {
                view! {
                    <meter
                        class="context-meter__bar"
                        aria-hidden="true"
                        min="0"
                        max=window.to_string()
                        value=context.used.min(window).to_string()
                        high=context.compact_at.map(|at| at.to_string())
                    ></meter>
                }
            });
            view! {
                <span
                    class="context-meter"
                    class:context-meter--full=full
                    data-testid="context-meter"
                    data-past-compaction=if full { "true" } else { "false" }
                    title=details.clone()
                    role="img"
                    aria-label=details
                >
                    {bar}
                    <span class="context-meter__label">{context_label(&context)}</span>
                </span>
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(input: u64, output: u64, cache_read: u64, cost: Option<f64>) -> TokenUsage {
        TokenUsage { input, output, cache_read, cache_write: 0, cost }
    }

    #[test]
    fn counts_are_short_in_the_line_and_whole_in_the_tooltip() {
        let shown: Vec<String> =
            [0, 999, 1000, 1234, 9_999, 12_345, 999_499, 999_600, 1_250_000, 12_600_000].map(short_count).into();
        // 1,250,000 is 1.3M: a half rounds up, as people round (`format!` rounded it to the even 1.2M).
        assert_eq!(shown, ["0", "999", "1.0k", "1.2k", "10k", "12k", "999k", "1.0M", "1.3M", "13M"]);
        assert_eq!(full_count(1_234_567), "1,234,567");
        assert_eq!(full_count(123), "123");
        assert_eq!(full_count(123_456), "123,456");
    }

    #[test]
    fn a_cheap_call_is_not_shown_as_free() {
        assert_eq!(dollars(0.0016), "$0.0016");
        assert_eq!(dollars(0.00001), "<$0.0001");
        assert_eq!(dollars(0.4249), "$0.42");
        assert_eq!(dollars(12.5), "$12.50");
        assert_eq!(dollars(0.0), "$0");
    }

    #[test]
    fn the_line_names_cache_calls_and_cost_only_when_there_are_any() {
        let one = MessageUsage { total: tokens(1234, 150, 0, None), calls: 1, context: None };
        assert_eq!(usage_line(&one), "1.2k in · 150 out");
        assert!(usage_details(&one).contains("cost unknown"), "{}", usage_details(&one));
        let many = MessageUsage { total: tokens(300, 42, 12_000, Some(0.0016)), calls: 3, context: None };
        assert_eq!(usage_line(&many), "300 in · 42 out · 12k cache read · 3 calls · $0.0016");
        assert_eq!(
            usage_details(&many),
            "3 model calls: 300 input tokens, 42 output, 12,000 read from the cache, 0 written to it; cost $0.0016"
        );
        assert_eq!(session_totals(&many.total), "12k tokens · $0.0016");
    }

    #[test]
    fn the_meter_reads_as_a_share_of_the_window_and_warns_past_compaction() {
        let roomy = ContextUse { used: 15_360, window: Some(128_000), compact_at: Some(108_800) };
        assert_eq!(context_label(&roomy), "12% of 128k");
        assert_eq!(
            context_details(&roomy),
            "Context: 15,360 of 128,000 tokens; the conversation is compacted past 108,800 tokens"
        );
        let full = ContextUse { used: 110_000, ..roomy };
        assert!(context_details(&full).contains("the next message compacts the conversation first"));
        let unknown = ContextUse { used: 15_360, window: None, compact_at: None };
        assert_eq!(context_label(&unknown), "15k tokens");
        assert_eq!(context_details(&unknown), "Context: 15,360 tokens");
    }
}
