//! The `openai` provider: the Chat Completions streaming API, as served by OpenAI, OpenRouter, Ollama, llama.cpp,
//! vLLM and LM Studio.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{Endpoint, base64_of, cut_off, events, next_event, send, unreadable};
use crate::protocol::TokenUsage;
use crate::runtime::provider::{
    AssistantBlock, ModelMessage, ModelRequest, ModelStop, Provider, ProviderError, ProviderFuture, StreamEvent,
};

const NAME: &str = "openai";

pub struct OpenAiProvider {
    client: reqwest::Client,
    endpoint: Endpoint,
}

impl OpenAiProvider {
    pub fn new(client: reqwest::Client, endpoint: Endpoint) -> Self {
        OpenAiProvider { client, endpoint }
    }
}

/// The request body: the system prompt as the first message, tools as JSON Schema functions.
pub fn request_body(endpoint: &Endpoint, request: &ModelRequest) -> Value {
    let mut messages = vec![json!({"role": "system", "content": request.system})];
    for message in &request.messages {
        messages.push(match message {
            ModelMessage::User { text, images } if images.is_empty() => json!({"role": "user", "content": text}),
            ModelMessage::User { text, images } => {
                let mut content = vec![json!({"type": "text", "text": text})];
                content.extend(images.iter().map(|image| {
                    let url = format!("data:{};base64,{}", image.media_type, base64_of(&image.bytes));
                    json!({"type": "image_url", "image_url": {"url": url}})
                }));
                json!({"role": "user", "content": content})
            }
            ModelMessage::Assistant { blocks } => assistant_message(blocks),
            ModelMessage::ToolResult { tool_call_id, text, .. } => {
                json!({"role": "tool", "tool_call_id": tool_call_id, "content": text})
            }
        });
    }
    let mut body = json!({
        "model": endpoint.model,
        "stream": true,
        "stream_options": {"include_usage": true},
        "messages": messages,
    });
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name, "description": tool.description, "parameters": tool.parameters}})
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    if let Some(max_tokens) = endpoint.max_tokens {
        body["max_tokens"] = json!(max_tokens);
    }
    body
}

/// An assistant turn as the API takes it back: the text, and the calls with their arguments as JSON text.
/// Thinking is not sent back; the API has no place for it.
fn assistant_message(blocks: &[AssistantBlock]) -> Value {
    let mut text = String::new();
    let mut calls = Vec::new();
    for block in blocks {
        match block {
            AssistantBlock::Text(part) => text.push_str(part),
            AssistantBlock::Thinking(_) => {}
            AssistantBlock::ToolCall { id, name, arguments } => {
                let arguments = match arguments {
                    Value::String(raw) => raw.clone(),
                    other => other.to_string(),
                };
                calls.push(json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}));
            }
        }
    }
    let mut message = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    message
}

/// A tool call as its chunks arrive: arguments that come before the name wait until it is known.
#[derive(Default)]
struct CallChunks {
    id: Option<String>,
    started: bool,
    waiting_arguments: String,
}

/// The state of one streamed answer.
#[derive(Default)]
struct Answer {
    calls: BTreeMap<usize, CallChunks>,
    finish_reason: Option<String>,
}

impl Answer {
    /// Handles one `data:` chunk.
    fn chunk(&mut self, chunk: &Value, sink: &mut (dyn FnMut(StreamEvent) + Send)) -> Result<(), ProviderError> {
        if let Some(error) = chunk.get("error") {
            return Err(stream_error(error));
        }
        if let Some(usage) = chunk.get("usage").filter(|usage| usage.is_object()) {
            let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
            // OpenAI's `prompt_tokens` include the cached ones.
            let cached = usage["prompt_tokens_details"].get("cached_tokens").and_then(Value::as_u64).unwrap_or(0);
            sink(StreamEvent::Usage(TokenUsage {
                input: count("prompt_tokens").saturating_sub(cached),
                output: count("completion_tokens"),
                cache_read: cached,
                cache_write: 0,
                cost: None,
            }));
        }
        let Some(choice) = chunk.get("choices").and_then(Value::as_array).and_then(|choices| choices.first()) else {
            return Ok(());
        };
        if let Some(delta) = choice.get("delta") {
            // DeepSeek and vLLM say `reasoning_content`, OpenRouter and Ollama `reasoning`.
            for key in ["reasoning_content", "reasoning"] {
                if let Some(thinking) = delta.get(key).and_then(Value::as_str).filter(|t| !t.is_empty()) {
                    sink(StreamEvent::ThinkingDelta(thinking.to_owned()));
                }
            }
            if let Some(text) = delta.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                sink(StreamEvent::TextDelta(text.to_owned()));
            }
            for (position, call) in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten().enumerate()
            {
                self.call_chunk(position, call, sink);
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_owned());
        }
        Ok(())
    }

    fn call_chunk(&mut self, position: usize, call: &Value, sink: &mut (dyn FnMut(StreamEvent) + Send)) {
        // Servers that send each call whole (Ollama) may leave out `index`; their position stands in for it.
        let index = call.get("index").and_then(Value::as_u64).map_or(position, |i| i as usize);
        let chunks = self.calls.entry(index).or_default();
        if let Some(id) = call.get("id").and_then(Value::as_str).filter(|id| !id.is_empty()) {
            chunks.id.get_or_insert_with(|| id.to_owned());
        }
        let function = call.get("function");
        let fragment = function.and_then(|f| f.get("arguments")).and_then(Value::as_str).unwrap_or("");
        if !chunks.started {
            match function.and_then(|f| f.get("name")).and_then(Value::as_str).filter(|n| !n.is_empty()) {
                Some(name) => {
                    chunks.started = true;
                    let id = chunks.id.clone().unwrap_or_else(|| format!("call_{index}"));
                    sink(StreamEvent::ToolCallStart { index, id, name: name.to_owned() });
                    let waiting = std::mem::take(&mut chunks.waiting_arguments) + fragment;
                    if !waiting.is_empty() {
                        sink(StreamEvent::ToolCallDelta { index, fragment: waiting });
                    }
                }
                None => chunks.waiting_arguments.push_str(fragment),
            }
        } else if !fragment.is_empty() {
            sink(StreamEvent::ToolCallDelta { index, fragment: fragment.to_owned() });
        }
    }

    /// How the answer ended, once the stream is over.
    fn finish(self, saw_done: bool) -> Result<ModelStop, ProviderError> {
        if self.calls.values().any(|call| !call.started) {
            return Err(ProviderError::Fatal(format!("{NAME} sent a tool call without a name")));
        }
        let has_calls = !self.calls.is_empty();
        match self.finish_reason.as_deref() {
            None if !saw_done => Err(cut_off(NAME)),
            Some("length") => Ok(ModelStop::Length),
            Some("content_filter") => {
                Err(ProviderError::Fatal(format!("{NAME} stopped the answer: its content filter was triggered")))
            }
            // Some servers end a tool-calling answer with `stop`; the calls decide.
            _ if has_calls => Ok(ModelStop::ToolUse),
            _ => Ok(ModelStop::Stop),
        }
    }
}

/// An `error` object sent inside the stream (OpenRouter and vLLM do this after a 200).
fn stream_error(error: &Value) -> ProviderError {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .or_else(|| error.as_str())
        .unwrap_or("an unspecified error")
        .to_owned();
    let code = error.get("code").map(|code| code.to_string()).unwrap_or_default();
    let message = format!("{NAME} reported an error: {message}");
    if super::is_context_overflow(&message) || code.contains("context_length_exceeded") {
        return ProviderError::ContextOverflow(message);
    }
    let retryable = ["429", "500", "502", "503", "504", "rate_limit", "server_error", "overloaded"]
        .iter()
        .any(|needle| code.contains(needle) || message.to_lowercase().contains(needle));
    match retryable {
        true => ProviderError::Retryable { message, retry_after: None },
        false => ProviderError::Fatal(message),
    }
}

impl Provider for OpenAiProvider {
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
            let mut http =
                self.client.post(self.endpoint.url("chat/completions")).json(&request_body(&self.endpoint, request));
            if let Some(key) = &self.endpoint.api_key {
                http = http.bearer_auth(key.expose());
            }
            let mut stream = events(send(NAME, http, cancel).await?);
            let mut answer = Answer::default();
            let mut saw_done = false;
            while let Some(event) = next_event(NAME, &mut stream, cancel).await? {
                let data = event.data.trim();
                if data == "[DONE]" {
                    saw_done = true;
                    break;
                }
                if data.is_empty() {
                    continue;
                }
                let chunk: Value = serde_json::from_str(data).map_err(|error| unreadable(NAME, data, &error))?;
                answer.chunk(&chunk, sink)?;
            }
            answer.finish(saw_done)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::provider::ToolSpec;

    #[test]
    fn an_image_goes_as_an_image_url_part_with_a_data_url() {
        let endpoint = Endpoint { base_url: "http://h/v1".into(), model: "m".into(), api_key: None, max_tokens: None };
        let body = request_body(&endpoint, &super::super::request_with_image());
        assert_eq!(
            body["messages"][1]["content"],
            json!([
                {"type": "text", "text": "what is it?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
            ])
        );
    }

    #[test]
    fn the_request_carries_the_conversation_tools_and_usage_option() {
        let endpoint = Endpoint { base_url: "http://h/v1".into(), model: "m".into(), api_key: None, max_tokens: None };
        let request = ModelRequest {
            system: "sys".into(),
            messages: vec![
                ModelMessage::user("hi"),
                ModelMessage::Assistant {
                    blocks: vec![
                        AssistantBlock::Thinking("hmm".into()),
                        AssistantBlock::ToolCall {
                            id: "c1".into(),
                            name: "ls".into(),
                            arguments: json!({"path": "."}),
                        },
                    ],
                },
                ModelMessage::ToolResult {
                    tool_call_id: "c1".into(),
                    tool_name: "ls".into(),
                    text: "a.txt".into(),
                    is_error: false,
                },
            ],
            tools: vec![ToolSpec {
                name: "ls".into(),
                description: "list".into(),
                parameters: json!({"type": "object"}),
            }],
        };
        let body = request_body(&endpoint, &request);
        assert_eq!(body["stream_options"], json!({"include_usage": true}));
        assert_eq!(body["messages"][0], json!({"role": "system", "content": "sys"}));
        assert_eq!(
            body["messages"][2],
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{\"path\":\".\"}"}}]})
        );
        assert_eq!(body["messages"][3], json!({"role": "tool", "tool_call_id": "c1", "content": "a.txt"}));
        assert_eq!(body["tools"][0]["function"]["parameters"], json!({"type": "object"}));
        assert!(body.get("max_tokens").is_none());
    }
}
