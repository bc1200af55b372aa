//! The `anthropic` provider: the Messages streaming API (`message_start`, `content_block_*`, `message_delta`,
//! `message_stop`, `ping`, `error`).

use std::collections::HashMap;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{Endpoint, base64_of, cut_off, events, next_event, send, unreadable};
use crate::protocol::TokenUsage;
use crate::runtime::provider::{
    AssistantBlock, ModelImage, ModelMessage, ModelRequest, ModelStop, Provider, ProviderError, ProviderFuture,
    StreamEvent,
};

const NAME: &str = "anthropic";
const API_VERSION: &str = "2023-06-01";
/// `max_tokens` is required by the API; this is used when the configuration gives none.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

pub struct AnthropicProvider {
    client: reqwest::Client,
    endpoint: Endpoint,
}

impl AnthropicProvider {
    pub fn new(client: reqwest::Client, endpoint: Endpoint) -> Self {
        AnthropicProvider { client, endpoint }
    }
}

/// Images first, as Anthropic's guide has them, then the text.
fn user_blocks(text: &str, images: &[ModelImage]) -> Vec<Value> {
    let mut blocks: Vec<Value> = images
        .iter()
        .map(|image| {
            json!({"type": "image", "source": {
                "type": "base64", "media_type": image.media_type, "data": base64_of(&image.bytes)}})
        })
        .collect();
    blocks.push(json!({"type": "text", "text": text}));
    blocks
}

/// The request body. Roles must alternate, so consecutive messages of one role (tool results, then a steering
/// message) are merged into one message of several blocks. Thinking is not sent back: without the signature the
/// API would refuse it, and a request without thinking enabled does not need it.
pub fn request_body(endpoint: &Endpoint, request: &ModelRequest) -> Value {
    let mut messages: Vec<(&str, Vec<Value>)> = Vec::new();
    for message in &request.messages {
        let (role, blocks) = match message {
            ModelMessage::User { text, images } => ("user", user_blocks(text, images)),
            ModelMessage::Assistant { blocks } => ("assistant", assistant_blocks(blocks)),
            ModelMessage::ToolResult { tool_call_id, text, is_error, .. } => (
                "user",
                vec![
                    json!({"type": "tool_result", "tool_use_id": tool_call_id, "content": text, "is_error": is_error}),
                ],
            ),
        };
        let blocks: Vec<Value> = blocks.into_iter().filter(|block| block["text"] != json!("")).collect();
        if blocks.is_empty() {
            continue;
        }
        match messages.last_mut() {
            Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
            _ => messages.push((role, blocks)),
        }
    }
    let messages: Vec<Value> =
        messages.into_iter().map(|(role, content)| json!({"role": role, "content": content})).collect();
    let mut body = json!({
        "model": endpoint.model,
        "max_tokens": endpoint.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "system": request.system,
        "messages": messages,
        "stream": true,
    });
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| json!({"name": tool.name, "description": tool.description, "input_schema": tool.parameters}))
            .collect();
        body["tools"] = Value::Array(tools);
    }
    body
}

fn assistant_blocks(blocks: &[AssistantBlock]) -> Vec<Value> {
    blocks
        .iter()
        .filter_map(|block| match block {
            AssistantBlock::Text(text) => Some(json!({"type": "text", "text": text})),
            AssistantBlock::Thinking(_) => None,
            AssistantBlock::ToolCall { id, name, arguments } => {
                // Arguments that did not parse go back as an empty object; the tool result already said why.
                let input = if arguments.is_object() { arguments.clone() } else { json!({}) };
                Some(json!({"type": "tool_use", "id": id, "name": name, "input": input}))
            }
        })
        .collect()
}

/// What a content block of the answer is, by its index.
#[derive(Debug, Clone, Copy)]
enum Block {
    Text,
    Thinking,
    /// The n-th tool call of the answer.
    ToolUse(usize),
    /// A kind this provider does not show (`redacted_thinking`, server tools); its deltas are skipped.
    Unshown,
}

#[derive(Default)]
struct Answer {
    blocks: HashMap<u64, Block>,
    tool_calls: usize,
    usage: TokenUsage,
    stop_reason: Option<String>,
    stopped: bool,
}

impl Answer {
    fn event(&mut self, event: &Value, sink: &mut (dyn FnMut(StreamEvent) + Send)) -> Result<(), ProviderError> {
        let text = |value: &Value, key: &str| value.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        match event.get("type").and_then(Value::as_str).unwrap_or("") {
            "message_start" => {
                let usage = &event["message"]["usage"];
                let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
                // Anthropic counts cached prompt tokens apart from `input_tokens`.
                self.usage = TokenUsage {
                    input: count("input_tokens"),
                    output: count("output_tokens"),
                    cache_read: count("cache_read_input_tokens"),
                    cache_write: count("cache_creation_input_tokens"),
                    cost: None,
                };
            }
            "content_block_start" => {
                let block = &event["content_block"];
                let kind = match block.get("type").and_then(Value::as_str).unwrap_or("") {
                    "text" => {
                        let start = text(block, "text");
                        if !start.is_empty() {
                            sink(StreamEvent::TextDelta(start));
                        }
                        Block::Text
                    }
                    "thinking" => Block::Thinking,
                    "tool_use" => {
                        let call = self.tool_calls;
                        self.tool_calls += 1;
                        sink(StreamEvent::ToolCallStart {
                            index: call,
                            id: text(block, "id"),
                            name: text(block, "name"),
                        });
                        Block::ToolUse(call)
                    }
                    _ => Block::Unshown,
                };
                self.blocks.insert(index, kind);
            }
            "content_block_delta" => {
                let delta = &event["delta"];
                match (self.blocks.get(&index).copied(), delta.get("type").and_then(Value::as_str).unwrap_or("")) {
                    (Some(Block::Text), "text_delta") => sink(StreamEvent::TextDelta(text(delta, "text"))),
                    (Some(Block::Thinking), "thinking_delta") => {
                        sink(StreamEvent::ThinkingDelta(text(delta, "thinking")))
                    }
                    (Some(Block::ToolUse(call)), "input_json_delta") => {
                        let fragment = text(delta, "partial_json");
                        if !fragment.is_empty() {
                            sink(StreamEvent::ToolCallDelta { index: call, fragment });
                        }
                    }
                    // Signatures, citations and deltas of blocks not shown carry nothing to display.
                    (Some(Block::Text | Block::Thinking | Block::ToolUse(_) | Block::Unshown) | None, _) => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = event["delta"].get("stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(output) = event["usage"].get("output_tokens").and_then(Value::as_u64) {
                    self.usage.output = output;
                }
            }
            "message_stop" => self.stopped = true,
            "error" => return Err(stream_error(&event["error"])),
            // `ping`, `content_block_stop`, and event types added after this was written.
            _ => {}
        }
        Ok(())
    }

    fn finish(self, sink: &mut (dyn FnMut(StreamEvent) + Send)) -> Result<ModelStop, ProviderError> {
        if !self.stopped {
            return Err(cut_off(NAME));
        }
        sink(StreamEvent::Usage(self.usage));
        match self.stop_reason.as_deref() {
            Some("tool_use") => Ok(ModelStop::ToolUse),
            Some("max_tokens" | "model_context_window_exceeded") => Ok(ModelStop::Length),
            Some("refusal") => Err(ProviderError::Fatal(format!("{NAME} declined to answer (stop reason: refusal)"))),
            // `end_turn`, `stop_sequence`, `pause_turn`, none given, or a reason added later.
            _ if self.tool_calls > 0 => Ok(ModelStop::ToolUse),
            _ => Ok(ModelStop::Stop),
        }
    }
}

/// An `error` event: `overloaded_error`, `api_error` and `rate_limit_error` are worth retrying.
fn stream_error(error: &Value) -> ProviderError {
    let kind = error.get("type").and_then(Value::as_str).unwrap_or("error");
    let detail = error.get("message").and_then(Value::as_str).unwrap_or("no details given");
    let message = format!("{NAME} reported {kind}: {detail}");
    if super::is_context_overflow(detail) {
        return ProviderError::ContextOverflow(message);
    }
    match kind {
        "overloaded_error" | "api_error" | "rate_limit_error" | "timeout_error" => {
            ProviderError::Retryable { message, retry_after: None }
        }
        _ => ProviderError::Fatal(message),
    }
}

impl Provider for AnthropicProvider {
    fn name(&self) -> &str {
        NAME
    }

    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
        sink: &'a mut (dyn FnMut(StreamEvent) + Send),
        cancel: &'a CancellationToken,
    ) -> ProviderFuture<'a> {
        Box::pin(async move {
            let mut http = self
                .client
                .post(self.endpoint.url("messages"))
                .header("anthropic-version", API_VERSION)
                .json(&request_body(&self.endpoint, request));
            if let Some(key) = &self.endpoint.api_key {
                http = http.header("x-api-key", key.expose());
            }
            let mut stream = events(send(NAME, http, cancel).await?);
            let mut answer = Answer::default();
            while let Some(event) = next_event(NAME, &mut stream, cancel).await? {
                let data = event.data.trim();
                if data.is_empty() {
                    continue;
                }
                let value: Value = serde_json::from_str(data).map_err(|error| unreadable(NAME, data, &error))?;
                answer.event(&value, sink)?;
                if answer.stopped {
                    break;
                }
            }
            answer.finish(sink)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_goes_as_a_base64_block_before_the_text() {
        let endpoint = Endpoint { base_url: "http://h/v1".into(), model: "m".into(), api_key: None, max_tokens: None };
        let body = request_body(&endpoint, &super::super::request_with_image());
        assert_eq!(
            body["messages"][0]["content"],
            json!([
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="}},
                {"type": "text", "text": "what is it?"},
            ])
        );
    }

    #[test]
    fn tool_results_and_a_following_message_merge_into_one_user_turn() {
        let endpoint = Endpoint { base_url: "http://h/v1".into(), model: "m".into(), api_key: None, max_tokens: None };
        let result = |id: &str| ModelMessage::ToolResult {
            tool_call_id: id.into(),
            tool_name: "ls".into(),
            text: "ok".into(),
            is_error: false,
        };
        let request = ModelRequest {
            system: "sys".into(),
            messages: vec![
                ModelMessage::user("hi"),
                ModelMessage::Assistant {
                    blocks: vec![
                        AssistantBlock::Thinking("hmm".into()),
                        AssistantBlock::Text(String::new()),
                        AssistantBlock::ToolCall { id: "a".into(), name: "ls".into(), arguments: json!({}) },
                        AssistantBlock::ToolCall { id: "b".into(), name: "ls".into(), arguments: json!("{bad") },
                    ],
                },
                result("a"),
                result("b"),
                ModelMessage::user("also this"),
            ],
            tools: vec![],
        };
        let body = request_body(&endpoint, &request);
        assert_eq!(body["max_tokens"], json!(DEFAULT_MAX_TOKENS));
        assert_eq!(body["system"], json!("sys"));
        assert!(body.get("tools").is_none());
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[1]["content"].as_array().unwrap().len(), 2, "thinking and empty text are left out");
        assert_eq!(messages[1]["content"][1]["input"], json!({}));
        let roles: Vec<&str> =
            messages[2]["content"].as_array().unwrap().iter().map(|b| b["type"].as_str().unwrap()).collect();
        assert_eq!(roles, ["tool_result", "tool_result", "text"]);
    }
}
