//! The `scripted` provider: plays model turns from a script file, offline. It is the default, so the app works without an API key.
//!
//! Script format (JSON):
//!
//! ```json
//! {
//!   "chunkChars": 12,        // default size of each streamed piece of text or argument JSON
//!   "delayMs": 20,           // default pause between pieces
//!   "turns": [
//!     {
//!       "thinking": "…", "text": "…",
//!       "toolCalls": [
//!         { "name": "write", "arguments": { "path": "a.txt", "content": "…" } },
//!         { "name": "web_search", "arguments": { "query": "…" }, "whenOffered": true }
//!       ],
//!       "usage": { "input": 1200, "output": 40, "cacheRead": 0, "cacheWrite": 0 },  // optional: what the call
//!                                         // reports; otherwise a quarter of the request's characters in and a
//!                                         // quarter of the turn's out, as a rough token count
//!       "stop": "length",                 // optional: end as if the output limit was hit
//!       "fail": { "status": 503, "message": "Service Unavailable", "times": 1 },  // optional
//!       "chunkChars": 4, "delayMs": 5     // optional per-turn pacing
//!     }
//!   ],
//!   "subagents": [            // optional: what sub-agents started by the `task` tool play
//!     { "prompt": "…", "turns": [ … ] }
//!   ]
//! }
//! ```
//!
//! The k-th model call of a conversation plays turn k (wrapping around at the
//! end), so a run goes on until a turn without tool calls. A conversation whose
//! first message is a sub-agent's `prompt` (a `task` call's `prompt` argument)
//! plays that sub-agent's turns instead, by the same rule. A `fail` makes the
//! first `times` attempts at that point of a conversation fail (5xx, 429 and
//! 408 are retryable, other statuses are not), which exercises automatic retry.
//! A call marked `whenOffered` is made only when the request offers a tool of
//! that name, as a real model can only call the tools it was given: the demo
//! searches the web and asks an MCP server only where those are configured.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::provider::{
    CHARS_PER_TOKEN, ModelMessage, ModelRequest, ModelStop, Provider, ProviderError, ProviderFuture, StreamEvent,
};
use crate::protocol::TokenUsage;

/// The demo the app plays when no script is given: every frame type, every built-in tool, a question and a retry.
pub const DEMO_SCRIPT: &str = include_str!("demo-script.json");

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Script {
    #[serde(default = "default_chunk_chars")]
    pub chunk_chars: usize,
    #[serde(default = "default_delay_ms")]
    pub delay_ms: u64,
    pub turns: Vec<ScriptTurn>,
    #[serde(default)]
    pub subagents: Vec<ScriptSubagent>,
}

/// The turns a sub-agent plays when its task's prompt is `prompt`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptSubagent {
    pub prompt: String,
    pub turns: Vec<ScriptTurn>,
}

fn default_chunk_chars() -> usize {
    12
}

fn default_delay_ms() -> u64 {
    20
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptTurn {
    #[serde(default)]
    pub thinking: String,
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub tool_calls: Vec<ScriptToolCall>,
    pub stop: Option<ScriptStop>,
    pub fail: Option<ScriptFailure>,
    pub chunk_chars: Option<usize>,
    pub delay_ms: Option<u64>,
    pub usage: Option<ScriptUsage>,
}

/// The tokens a scripted call says it used.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptUsage {
    #[serde(default)]
    pub input: u64,
    #[serde(default)]
    pub output: u64,
    #[serde(default)]
    pub cache_read: u64,
    #[serde(default)]
    pub cache_write: u64,
}

impl ScriptUsage {
    fn to_tokens(self) -> TokenUsage {
        let ScriptUsage { input, output, cache_read, cache_write } = self;
        TokenUsage { input, output, cache_read, cache_write, cost: None }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptToolCall {
    pub name: String,
    #[serde(default)]
    pub arguments: Value,
    /// Skip the call unless the request offers a tool of this name.
    #[serde(default)]
    pub when_offered: bool,
}

impl ScriptToolCall {
    fn is_made_for(&self, request: &ModelRequest) -> bool {
        !self.when_offered || request.tools.iter().any(|tool| tool.name == self.name)
    }
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScriptStop {
    Length,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptFailure {
    pub status: u16,
    pub message: String,
    #[serde(default = "one")]
    pub times: u32,
}

fn one() -> u32 {
    1
}

#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("reading the script {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("the script is not valid: {0}")]
    Invalid(#[from] serde_json::Error),
    #[error("the script (or one of its sub-agents) has no turns")]
    Empty,
}

impl Script {
    pub fn parse(json: &str) -> Result<Script, ScriptError> {
        let script: Script = serde_json::from_str(json)?;
        if script.turns.is_empty() || script.subagents.iter().any(|s| s.turns.is_empty()) {
            return Err(ScriptError::Empty);
        }
        Ok(script)
    }

    pub fn load(path: &std::path::Path) -> Result<Script, ScriptError> {
        let json = std::fs::read_to_string(path)
            .map_err(|source| ScriptError::Read { path: path.display().to_string(), source })?;
        Script::parse(&json)
    }

    pub fn demo() -> Script {
        Script::parse(DEMO_SCRIPT).expect("the bundled demo script is valid (checked by a test)")
    }
}

pub struct ScriptedProvider {
    script: Script,
    /// Failed attempts so far, per conversation state: a retry sends the same conversation again.
    failures: Mutex<HashMap<u64, u32>>,
}

impl ScriptedProvider {
    pub fn new(script: Script) -> Self {
        ScriptedProvider { script, failures: Mutex::new(HashMap::new()) }
    }
}

/// The characters a model would read for `request`: the system prompt, every message and the tools offered. A script
/// without `usage` reports a token for every [`CHARS_PER_TOKEN`] of them, so the demo's usage line and context meter
/// move as a real model's would (a zero input read as a bug).
fn request_chars(request: &ModelRequest) -> usize {
    let tool_chars =
        |tool: &super::provider::ToolSpec| tool.name.len() + tool.description.len() + tool.parameters.to_string().len();
    request.system.len()
        + request.messages.iter().map(ModelMessage::chars).sum::<usize>()
        + request.tools.iter().map(tool_chars).sum::<usize>()
}

fn conversation_key(messages: &[ModelMessage]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    format!("{messages:?}").hash(&mut hasher);
    hasher.finish()
}

/// Splits `text` into pieces of `size` characters (never inside a character).
fn pieces(text: &str, size: usize) -> impl Iterator<Item = &str> {
    let size = size.max(1);
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let cut = rest.char_indices().nth(size).map(|(i, _)| i).unwrap_or(rest.len());
        let (piece, tail) = rest.split_at(cut);
        rest = tail;
        Some(piece)
    })
}

async fn pause(delay: Duration, cancel: &CancellationToken) -> Result<(), ProviderError> {
    if cancel.is_cancelled() {
        return Err(ProviderError::Aborted);
    }
    if delay.is_zero() {
        // Still give the task's other work (the run's recorder) a turn, as a network read would.
        tokio::task::yield_now().await;
        return Ok(());
    }
    tokio::select! {
        () = tokio::time::sleep(delay) => Ok(()),
        () = cancel.cancelled() => Err(ProviderError::Aborted),
    }
}

impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
    }

    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
        sink: &'a mut (dyn FnMut(StreamEvent) + Send),
        cancel: &'a CancellationToken,
    ) -> ProviderFuture<'a> {
        Box::pin(async move {
            let calls_so_far = request.messages.iter().filter(|m| matches!(m, ModelMessage::Assistant { .. })).count();
            let turns = match request.messages.first() {
                Some(ModelMessage::User { text, .. }) => {
                    self.script.subagents.iter().find(|s| s.prompt == *text).map_or(&self.script.turns, |s| &s.turns)
                }
                Some(ModelMessage::Assistant { .. } | ModelMessage::ToolResult { .. }) | None => &self.script.turns,
            };
            let turn = &turns[calls_so_far % turns.len()];
            let chunk = turn.chunk_chars.unwrap_or(self.script.chunk_chars);
            let delay = Duration::from_millis(turn.delay_ms.unwrap_or(self.script.delay_ms));

            if let Some(fail) = &turn.fail {
                let key = conversation_key(&request.messages);
                let failed_before = {
                    let mut failures = self.failures.lock().expect("the failure counter lock is never poisoned");
                    let count = failures.entry(key).or_insert(0);
                    *count += 1;
                    *count - 1
                };
                if failed_before < fail.times {
                    pause(delay, cancel).await?;
                    let message = format!("{} {}", fail.status, fail.message);
                    return Err(match fail.status {
                        408 | 429 | 500..=599 => ProviderError::Retryable { message, retry_after: None },
                        _ => ProviderError::Fatal(message),
                    });
                }
            }

            for piece in pieces(&turn.thinking, chunk) {
                pause(delay, cancel).await?;
                sink(StreamEvent::ThinkingDelta(piece.to_owned()));
            }
            for piece in pieces(&turn.text, chunk) {
                pause(delay, cancel).await?;
                sink(StreamEvent::TextDelta(piece.to_owned()));
            }
            let calls: Vec<&ScriptToolCall> = turn.tool_calls.iter().filter(|call| call.is_made_for(request)).collect();
            for (index, call) in calls.iter().enumerate() {
                pause(delay, cancel).await?;
                let id = format!("call_{calls_so_far}_{index}");
                sink(StreamEvent::ToolCallStart { index, id, name: call.name.clone() });
                let arguments = serde_json::to_string(&call.arguments).expect("a JSON value serializes");
                for piece in pieces(&arguments, chunk) {
                    pause(delay, cancel).await?;
                    sink(StreamEvent::ToolCallDelta { index, fragment: piece.to_owned() });
                }
            }
            let usage = match &turn.usage {
                Some(usage) => usage.to_tokens(),
                None => TokenUsage {
                    input: request_chars(request) as u64 / CHARS_PER_TOKEN,
                    output: (turn.text.len() + turn.thinking.len()) as u64 / CHARS_PER_TOKEN,
                    ..TokenUsage::default()
                },
            };
            sink(StreamEvent::Usage(usage));
            Ok(match (turn.stop, calls.is_empty()) {
                (Some(ScriptStop::Length), _) => ModelStop::Length,
                (None, false) => ModelStop::ToolUse,
                (None, true) => ModelStop::Stop,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::provider::{AssistantBlock, ToolSpec};
    use super::*;

    #[test]
    fn the_demo_script_is_valid_and_ends_with_an_answer() {
        let demo = Script::demo();
        let last = demo.turns.last().unwrap();
        assert!(last.tool_calls.is_empty() && last.text.contains("```") && last.text.contains('|'));
        let names: std::collections::BTreeSet<&str> =
            demo.turns.iter().flat_map(|t| &t.tool_calls).map(|c| c.name.as_str()).collect();
        for tool in [
            "bash",
            "ipython",
            "read",
            "write",
            "edit",
            "grep",
            "glob",
            "ls",
            "todo_write",
            "question",
            "chart",
            "task",
        ] {
            assert!(names.contains(tool), "the demo never calls {tool}");
        }
        for optional in ["web_search", "mcp__weather__lookup"] {
            let call = demo.turns.iter().flat_map(|t| &t.tool_calls).find(|c| c.name == optional);
            assert!(call.is_some_and(|c| c.when_offered), "the demo never calls {optional}, or calls it unoffered");
        }
        assert!(demo.turns.iter().any(|t| t.fail.is_some()), "the demo has no injected failure");
        assert!(demo.turns.iter().any(|t| !t.thinking.is_empty()), "the demo never thinks");
        let tasks: Vec<&str> = demo
            .turns
            .iter()
            .flat_map(|t| &t.tool_calls)
            .filter(|c| c.name == "task")
            .filter_map(|c| c.arguments.get("prompt").and_then(Value::as_str))
            .collect();
        for prompt in &tasks {
            assert!(demo.subagents.iter().any(|s| s.prompt == *prompt), "no sub-agent plays the task {prompt:?}");
        }
    }

    fn offering(tools: &[&str]) -> ModelRequest {
        ModelRequest {
            system: String::new(),
            messages: vec![ModelMessage::user("go")],
            tools: tools
                .iter()
                .map(|name| ToolSpec { name: (*name).to_owned(), description: String::new(), parameters: Value::Null })
                .collect(),
        }
    }

    /// The names of the calls the provider streams, and how the answer stops.
    async fn calls_made(script: &str, request: &ModelRequest) -> (Vec<(String, usize)>, ModelStop) {
        let provider = ScriptedProvider::new(Script::parse(script).unwrap());
        let mut started = Vec::new();
        let stop = provider
            .stream(
                request,
                &mut |event| {
                    if let StreamEvent::ToolCallStart { index, name, .. } = event {
                        started.push((name, index));
                    }
                },
                &CancellationToken::new(),
            )
            .await
            .unwrap();
        (started, stop)
    }

    #[tokio::test]
    async fn a_turn_without_usage_reports_a_quarter_of_the_characters_read_and_written() {
        let provider =
            ScriptedProvider::new(Script::parse(r#"{"delayMs": 0, "turns": [{"text": "12345678"}]}"#).unwrap());
        let request = ModelRequest {
            system: "s".repeat(40),
            messages: vec![
                ModelMessage::user("u".repeat(20)),
                ModelMessage::Assistant { blocks: vec![AssistantBlock::Text("a".repeat(12))] },
            ],
            tools: vec![ToolSpec { name: "ls".into(), description: "d".repeat(6), parameters: Value::Null }],
        };
        let mut reported = Vec::new();
        let usage = |event| {
            if let StreamEvent::Usage(usage) = event {
                reported.push(usage);
            }
        };
        provider.stream(&request, &mut { usage }, &CancellationToken::new()).await.unwrap();
        // 40 + 20 + 12 + (2 + 6 + 4 for `null`) = 84 characters in, 8 out.
        assert_eq!(reported, vec![TokenUsage { input: 21, output: 2, ..TokenUsage::default() }]);
    }

    #[tokio::test]
    async fn calls_marked_when_offered_are_made_only_when_their_tool_is_offered() {
        let script = r#"{"delayMs": 0, "turns": [{"text": "Looking.", "toolCalls": [
            {"name": "web_search", "arguments": {"query": "q"}, "whenOffered": true},
            {"name": "ls", "arguments": {}},
            {"name": "mcp__weather__lookup", "arguments": {"city": "Lisbon"}, "whenOffered": true}
        ]}]}"#;
        let named = |calls: &[(&str, usize)]| calls.iter().map(|(n, i)| ((*n).to_owned(), *i)).collect::<Vec<_>>();

        let (calls, stop) = calls_made(script, &offering(&["ls", "web_search", "mcp__weather__lookup"])).await;
        assert_eq!(calls, named(&[("web_search", 0), ("ls", 1), ("mcp__weather__lookup", 2)]));
        assert_eq!(stop, ModelStop::ToolUse);

        let (calls, _) = calls_made(script, &offering(&["ls", "mcp__weather__lookup"])).await;
        assert_eq!(calls, named(&[("ls", 0), ("mcp__weather__lookup", 1)]), "indices stay dense");

        let only_optional = r#"{"delayMs": 0, "turns": [{"text": "Maybe.", "toolCalls": [
            {"name": "web_search", "arguments": {"query": "q"}, "whenOffered": true}]}]}"#;
        let (calls, stop) = calls_made(only_optional, &offering(&["ls"])).await;
        assert!(calls.is_empty());
        assert_eq!(stop, ModelStop::Stop, "an answer without calls ends the run, as a model's would");
    }

    #[test]
    fn pieces_never_split_a_character() {
        let parts: Vec<&str> = pieces("héllo😀wörld", 3).collect();
        assert_eq!(parts.concat(), "héllo😀wörld");
        assert!(parts.iter().all(|p| p.chars().count() <= 3));
    }
}
