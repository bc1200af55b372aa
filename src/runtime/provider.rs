//! The `Provider` trait: one streamed model call (text, thinking, tool calls with argument fragments, usage, stop reason).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::protocol::TokenUsage;

/// A message of the conversation as the model sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelMessage {
    /// `images` go with the text, as the user attached them; text files are already in `text`.
    User {
        text: String,
        images: Vec<ModelImage>,
    },
    Assistant {
        blocks: Vec<AssistantBlock>,
    },
    ToolResult {
        tool_call_id: String,
        tool_name: String,
        text: String,
        is_error: bool,
    },
}

/// An image the user attached, as the providers send it (each encodes it its own way).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelImage {
    pub name: String,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    pub bytes: Arc<[u8]>,
}

/// What an image counts for in the estimates: about the 1,500 tokens a provider bills a mid-sized one.
const IMAGE_CHARS: usize = 6_000;

/// About how many characters of English or code a token stands for: the estimate wherever tokens are not counted
/// by a model (when to compact; what a scripted call reports).
pub const CHARS_PER_TOKEN: u64 = 4;

impl ModelMessage {
    /// A user message of text alone.
    pub fn user(text: impl Into<String>) -> ModelMessage {
        ModelMessage::User { text: text.into(), images: Vec::new() }
    }

    /// The characters of what the model reads of this message: its text, or its blocks' text and tool calls; an
    /// image counts as `IMAGE_CHARS`.
    pub fn chars(&self) -> usize {
        match self {
            ModelMessage::User { text, images } => text.len() + images.len() * IMAGE_CHARS,
            ModelMessage::ToolResult { text, .. } => text.len(),
            ModelMessage::Assistant { blocks } => blocks
                .iter()
                .map(|block| match block {
                    AssistantBlock::Text(text) | AssistantBlock::Thinking(text) => text.len(),
                    AssistantBlock::ToolCall { name, arguments, .. } => name.len() + arguments.to_string().len(),
                })
                .sum(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum AssistantBlock {
    Text(String),
    Thinking(String),
    ToolCall { id: String, name: String, arguments: Value },
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    pub system: String,
    pub messages: Vec<ModelMessage>,
    pub tools: Vec<ToolSpec>,
}

/// One piece of a streamed model answer, in arrival order.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    TextDelta(String),
    ThinkingDelta(String),
    /// The model started a tool call; `index` is its position among this answer's calls.
    ToolCallStart {
        index: usize,
        id: String,
        name: String,
    },
    /// A raw fragment of the call's arguments JSON.
    ToolCallDelta {
        index: usize,
        fragment: String,
    },
    /// What the call used, as the provider counted it (`cost` is left to the agent, which knows the prices).
    Usage(TokenUsage),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelStop {
    /// The answer is complete.
    Stop,
    /// The answer asks for tool calls.
    ToolUse,
    /// The output token limit cut the answer.
    Length,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// Worth another attempt: 429, 5xx, overloaded, a dropped connection.
    #[error("{message}")]
    Retryable { message: String, retry_after: Option<Duration> },
    /// Retrying would fail the same way (bad request, bad key).
    #[error("{0}")]
    Fatal(String),
    /// The conversation no longer fits the model's context window; compacting it may help.
    #[error("{0}")]
    ContextOverflow(String),
    /// The run was stopped while the model was answering.
    #[error("the request was aborted")]
    Aborted,
}

pub type ProviderFuture<'a> = Pin<Box<dyn Future<Output = Result<ModelStop, ProviderError>> + Send + 'a>>;

/// Streams one model call: every piece goes to `sink` as it arrives; the result says how the answer ended.
pub trait Provider: Send + Sync {
    fn name(&self) -> &str;

    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
        sink: &'a mut (dyn FnMut(StreamEvent) + Send),
        cancel: &'a CancellationToken,
    ) -> ProviderFuture<'a>;
}
