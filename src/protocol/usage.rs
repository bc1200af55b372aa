//! Token usage and cost: what one model call used, what a run's answer used in all, and how full the context is.

use serde::{Deserialize, Serialize};

/// Tokens and cost of one model call, or a sum of calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    /// Prompt tokens read at the full price (not from the provider's cache).
    pub input: u64,
    pub output: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write: u64,
    /// In US dollars; `None` when no price is known for the model, so that unknown never reads as free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

impl TokenUsage {
    /// Adds `other` in. The cost is the sum of the known costs: a call of an unpriced model adds tokens only.
    pub fn add(&mut self, other: &TokenUsage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.cost = match (self.cost, other.cost) {
            (Some(mine), Some(theirs)) => Some(mine + theirs),
            (known @ Some(_), None) | (None, known @ Some(_)) => known,
            (None, None) => None,
        };
    }

    /// Every token the call's context held: its prompt, cached or not, and its answer, which the next call reads.
    pub fn context_tokens(&self) -> u64 {
        self.input + self.cache_read + self.cache_write + self.output
    }

    /// Nothing counted: a call that failed before the provider said anything, or a provider that counts nothing.
    pub fn is_empty(&self) -> bool {
        self.context_tokens() == 0 && self.cost.is_none_or(|cost| cost == 0.0)
    }
}

/// How full the model's context was after a call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextUse {
    /// Tokens in the context: the last call's prompt and answer.
    pub used: u64,
    /// The model's context window, when the runtime knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u64>,
    /// Past this many tokens the runtime compacts the conversation before its next call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compact_at: Option<u64>,
}

impl ContextUse {
    /// `used` as a share of the window, at most 1.
    pub fn fraction(&self) -> Option<f64> {
        self.window.filter(|&window| window > 0).map(|window| (self.used as f64 / window as f64).min(1.0))
    }

    /// The next call will compact first (or would, where the runtime compacts at all).
    pub fn past_compaction(&self) -> bool {
        self.compact_at.is_some_and(|at| self.used > at)
    }
}

/// What the run that wrote an answer used, over all its model calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageUsage {
    pub total: TokenUsage,
    pub calls: u32,
    /// After the run's last call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextUse>,
}

impl MessageUsage {
    /// Counts one more call.
    pub fn add_call(&mut self, call: &TokenUsage, context: Option<&ContextUse>) {
        self.total.add(call);
        self.calls += 1;
        if let Some(context) = context {
            self.context = Some(context.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(input: u64, output: u64, cost: Option<f64>) -> TokenUsage {
        TokenUsage { input, output, cache_read: 0, cache_write: 0, cost }
    }

    #[test]
    fn sums_count_every_token_and_only_known_costs() {
        let mut total = TokenUsage::default();
        total.add(&tokens(1200, 40, None));
        assert_eq!(total.cost, None, "no price known yet: unknown, not free");
        total.add(&TokenUsage { cache_read: 800, cache_write: 100, ..tokens(300, 150, Some(0.5)) });
        total.add(&tokens(10, 5, Some(0.25)));
        assert_eq!((total.input, total.output, total.cache_read, total.cache_write), (1510, 195, 800, 100));
        assert_eq!(total.cost, Some(0.75));
        assert_eq!(total.context_tokens(), 1510 + 195 + 800 + 100);
    }

    #[test]
    fn a_message_keeps_the_last_calls_context() {
        let mut usage = MessageUsage::default();
        let first = ContextUse { used: 1240, window: Some(128_000), compact_at: Some(108_800) };
        usage.add_call(&tokens(1200, 40, None), Some(&first));
        usage.add_call(&tokens(1300, 150, None), None);
        assert_eq!(usage.calls, 2);
        assert_eq!(usage.context, Some(first), "a call that tells no context leaves the last one");
        let second = ContextUse { used: 120_000, window: Some(128_000), compact_at: Some(108_800) };
        usage.add_call(&tokens(118_000, 2000, None), Some(&second));
        assert_eq!(usage.context.as_ref().unwrap().fraction(), Some(120_000.0 / 128_000.0));
        assert!(usage.context.unwrap().past_compaction());
    }

    #[test]
    fn a_context_without_a_window_has_no_fraction() {
        let context = ContextUse { used: 5, window: None, compact_at: None };
        assert_eq!(context.fraction(), None);
        assert!(!context.past_compaction());
        assert_eq!(ContextUse { used: 9, window: Some(4), compact_at: None }.fraction(), Some(1.0));
    }

    #[test]
    fn the_wire_form_leaves_out_zero_cache_counts_and_unknown_cost() {
        let json = serde_json::to_value(tokens(3, 4, None)).unwrap();
        assert_eq!(json, serde_json::json!({"input": 3, "output": 4}));
        let back: TokenUsage = serde_json::from_value(serde_json::json!({"input": 3, "output": 4})).unwrap();
        assert_eq!(back, tokens(3, 4, None));
    }
}
