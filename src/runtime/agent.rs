//! The built-in agent loop: model calls, tool runs, steering and follow-up queues, automatic retry and abort,
//! reported as pi-dialect `AgentEvent`s so the same mapper serves it and an external pi.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::event::{
    AgentEvent, AgentMessage, AssistantMessageEvent, MessageRole, StopReason, ToolCall, ToolCallHeader, ToolResult,
};
use super::provider::{
    AssistantBlock, ModelMessage, ModelRequest, ModelStop, Provider, ProviderError, StreamEvent, ToolSpec,
};
use super::tools::{Tool, ToolContext, ToolLimits, ToolOutput, Workspace, builtin_tools};

const SYSTEM_PROMPT: &str = "You are a coding agent working in the user's workspace directory. \
Use the tools to look at files, change them and run commands; keep a todo list with todo_write for multi-step work; \
ask the user with question when a decision is theirs. Answer in Markdown.";

#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Model calls after the first failed one (429, 5xx, network).
    pub max_retries: u32,
    /// The first retry waits this long; each further one twice as long.
    pub retry_base_delay: Duration,
    pub tool_limits: ToolLimits,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig { max_retries: 3, retry_base_delay: Duration::from_secs(2), tool_limits: ToolLimits::default() }
    }
}

/// Messages waiting for the running agent.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Queues {
    /// Delivered after the current tool calls, before the next model call.
    pub steering: VecDeque<String>,
    /// Delivered when the agent would otherwise stop.
    pub follow_up: VecDeque<String>,
}

/// Handles a run shares with the requests that steer, answer or stop it.
#[derive(Clone, Default)]
pub struct RunControl {
    pub cancel: CancellationToken,
    pub queues: Arc<Mutex<Queues>>,
    /// Questions waiting for the user, by tool call id.
    pub questions: Arc<Mutex<HashMap<String, oneshot::Sender<String>>>>,
}

impl RunControl {
    /// Queues a message for the running agent and reports the new queue.
    pub fn enqueue(&self, text: String, steer: bool, events: &mpsc::UnboundedSender<AgentEvent>) {
        let mut queues = self.queues.lock().expect("the queue lock is never poisoned");
        if steer {
            queues.steering.push_back(text)
        } else {
            queues.follow_up.push_back(text)
        }
        let _ = events.send(queue_event(&queues));
    }

    /// Delivers the user's answer to a pending question; false when no such question waits.
    pub fn answer(&self, tool_call_id: &str, answer: String) -> bool {
        let waiting = self.questions.lock().expect("the question lock is never poisoned").remove(tool_call_id);
        waiting.is_some_and(|sender| sender.send(answer).is_ok())
    }
}

fn queue_event(queues: &Queues) -> AgentEvent {
    AgentEvent::QueueUpdate {
        steering: queues.steering.iter().cloned().collect(),
        follow_up: queues.follow_up.iter().cloned().collect(),
    }
}

/// What the model has seen of one session.
#[derive(Debug, Default, Clone)]
pub struct Conversation {
    pub messages: Vec<ModelMessage>,
}

pub struct Agent {
    provider: Arc<dyn Provider>,
    tools: Vec<Box<dyn Tool>>,
    config: AgentConfig,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AgentState {
    /// Between `agent_start` and `agent_end`.
    Active,
    /// `agent_end` already sent (a retry wait was cancelled).
    Ended,
}

/// A tool call as it streams in.
struct CallDraft {
    content_index: usize,
    id: String,
    name: String,
    arguments: String,
}

struct Emitter<'a> {
    events: &'a mpsc::UnboundedSender<AgentEvent>,
}

impl Emitter<'_> {
    fn send(&self, event: AgentEvent) {
        // A closed channel means nobody listens any more; the run still finishes its work.
        let _ = self.events.send(event);
    }

    fn message(&self, role: MessageRole, text: String, stop_reason: Option<StopReason>, error: Option<String>) {
        let message = AgentMessage { role, text, stop_reason, error_message: error, timestamp: None };
        self.send(AgentEvent::MessageStart(message.clone()));
        self.send(AgentEvent::MessageEnd(message));
    }
}

impl Agent {
    pub fn new(provider: Arc<dyn Provider>, config: AgentConfig) -> Self {
        let tools = builtin_tools(config.tool_limits.clone());
        Agent { provider, tools, config }
    }

    fn tool_specs(&self) -> Vec<ToolSpec> {
        let mut specs: Vec<ToolSpec> = self
            .tools
            .iter()
            .map(|tool| ToolSpec {
                name: tool.name().to_owned(),
                description: tool.description().to_owned(),
                parameters: tool.parameters(),
            })
            .collect();
        specs.push(ToolSpec {
            name: "todo_write".into(),
            description:
                "Replace the task checklist; each todo has text and a status of pending, in_progress or completed."
                    .into(),
            parameters: json!({"type": "object", "required": ["todos"], "properties": {"todos": {"type": "array",
                "items": {"type": "object", "required": ["text", "status"], "properties": {
                    "text": {"type": "string"},
                    "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}}}}}}),
        });
        specs.push(ToolSpec {
            name: "question".into(),
            description: "Ask the user and wait for the answer: options to pick from, and/or free text.".into(),
            parameters: json!({"type": "object", "required": ["question"], "properties": {
                "question": {"type": "string"},
                "options": {"type": "array", "items": {"type": "object", "properties": {
                    "id": {"type": "string"}, "label": {"type": "string"}}}},
                "multiple": {"type": "boolean"}, "allowText": {"type": "boolean"},
                "timeoutSeconds": {"type": "number"}}}),
        });
        specs
    }

    /// Runs the agent on `prompt` until it has settled; every step goes to `events`, ending with `agent_settled`.
    pub async fn run(
        &self,
        conversation: &mut Conversation,
        workspace: &Workspace,
        prompt: String,
        control: &RunControl,
        events: &mpsc::UnboundedSender<AgentEvent>,
    ) {
        let emit = Emitter { events };
        emit.send(AgentEvent::AgentStart);
        emit.send(AgentEvent::TurnStart);
        conversation.messages.push(ModelMessage::User { text: prompt.clone() });
        emit.message(MessageRole::User, prompt, None, None);
        if self.turns(conversation, workspace, control, &emit).await == AgentState::Active {
            emit.send(AgentEvent::AgentEnd);
        }
        emit.send(AgentEvent::AgentSettled);
    }

    /// The model/tool loop; says whether the agent is still between `agent_start` and `agent_end` when it returns.
    async fn turns(
        &self,
        conversation: &mut Conversation,
        workspace: &Workspace,
        control: &RunControl,
        emit: &Emitter<'_>,
    ) -> AgentState {
        let mut failed_attempts = 0_u32;
        loop {
            let request = ModelRequest {
                system: SYSTEM_PROMPT.into(),
                messages: conversation.messages.clone(),
                tools: self.tool_specs(),
            };
            emit.send(AgentEvent::MessageStart(AgentMessage {
                role: MessageRole::Assistant,
                text: String::new(),
                stop_reason: None,
                error_message: None,
                timestamp: None,
            }));
            let (outcome, blocks, calls) = self.call_model(&request, control, emit).await;
            let text: String = blocks
                .iter()
                .filter_map(|b| match b {
                    AssistantBlock::Text(t) => Some(t.as_str()),
                    AssistantBlock::Thinking(_) | AssistantBlock::ToolCall { .. } => None,
                })
                .collect();
            let stop = match outcome {
                Ok(stop) => stop,
                Err(ProviderError::Retryable { message, retry_after }) if failed_attempts < self.config.max_retries => {
                    emit.message(MessageRole::Assistant, text, Some(StopReason::Error), Some(message.clone()));
                    emit.send(AgentEvent::TurnEnd);
                    emit.send(AgentEvent::AgentEnd);
                    failed_attempts += 1;
                    let delay =
                        retry_after.unwrap_or(self.config.retry_base_delay * 2_u32.saturating_pow(failed_attempts - 1));
                    emit.send(AgentEvent::AutoRetryStart {
                        attempt: failed_attempts,
                        max_attempts: self.config.max_retries,
                        delay_ms: delay.as_millis() as u64,
                        error_message: message,
                    });
                    let waited = tokio::select! {
                        () = tokio::time::sleep(delay) => true,
                        () = control.cancel.cancelled() => false,
                    };
                    if !waited {
                        emit.send(AgentEvent::AutoRetryEnd {
                            success: false,
                            attempt: failed_attempts,
                            final_error: Some("Retry cancelled".into()),
                        });
                        return AgentState::Ended;
                    }
                    emit.send(AgentEvent::AgentStart);
                    emit.send(AgentEvent::TurnStart);
                    continue;
                }
                Err(error) => {
                    let (reason, message) = match &error {
                        ProviderError::Aborted => (StopReason::Aborted, "Request was aborted".to_owned()),
                        ProviderError::Retryable { message, .. } | ProviderError::Fatal(message) => {
                            (StopReason::Error, message.clone())
                        }
                    };
                    if !text.is_empty() {
                        conversation
                            .messages
                            .push(ModelMessage::Assistant { blocks: vec![AssistantBlock::Text(text.clone())] });
                    }
                    emit.message(MessageRole::Assistant, text, Some(reason), Some(message.clone()));
                    if failed_attempts > 0 {
                        emit.send(AgentEvent::AutoRetryEnd {
                            success: false,
                            attempt: failed_attempts,
                            final_error: Some(message),
                        });
                    }
                    emit.send(AgentEvent::TurnEnd);
                    return AgentState::Active;
                }
            };
            let reason = match stop {
                ModelStop::Stop => StopReason::Stop,
                ModelStop::ToolUse => StopReason::ToolUse,
                ModelStop::Length => StopReason::Length,
            };
            emit.message(MessageRole::Assistant, text, Some(reason), None);
            if failed_attempts > 0 {
                emit.send(AgentEvent::AutoRetryEnd { success: true, attempt: failed_attempts, final_error: None });
                failed_attempts = 0;
            }
            conversation.messages.push(ModelMessage::Assistant { blocks });

            for call in calls {
                let (result, is_error) = if control.cancel.is_cancelled() {
                    (ToolResult { text: "not run: the run was stopped".into(), details: None }, true)
                } else {
                    emit.send(AgentEvent::ToolExecutionStart {
                        tool_call_id: call.id.clone(),
                        tool_name: call.name.clone(),
                        args: call.arguments.clone(),
                    });
                    let output = self.run_tool(&call, workspace, control, emit).await;
                    (ToolResult { text: output.text, details: output.details }, output.is_error)
                };
                emit.send(AgentEvent::ToolExecutionEnd {
                    tool_call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    result: result.clone(),
                    is_error,
                });
                emit.message(MessageRole::ToolResult, result.text.clone(), None, None);
                conversation.messages.push(ModelMessage::ToolResult {
                    tool_call_id: call.id,
                    tool_name: call.name,
                    text: result.text,
                    is_error,
                });
            }
            emit.send(AgentEvent::TurnEnd);
            if control.cancel.is_cancelled() {
                return AgentState::Active;
            }
            let asked_for_tools = stop == ModelStop::ToolUse;
            let Some(next) = self.next_queued(control, asked_for_tools) else {
                if asked_for_tools {
                    emit.send(AgentEvent::TurnStart);
                    continue;
                }
                return AgentState::Active;
            };
            emit.send(queue_event(&control.queues.lock().expect("the queue lock is never poisoned")));
            emit.send(AgentEvent::TurnStart);
            conversation.messages.push(ModelMessage::User { text: next.clone() });
            emit.message(MessageRole::User, next, None, None);
        }
    }

    /// The next message to deliver: steering at every turn boundary, follow-ups only when the agent would stop.
    fn next_queued(&self, control: &RunControl, agent_continues: bool) -> Option<String> {
        let mut queues = control.queues.lock().expect("the queue lock is never poisoned");
        queues.steering.pop_front().or_else(|| if agent_continues { None } else { queues.follow_up.pop_front() })
    }

    /// Streams one model call, translating its pieces into `message_update` events.
    async fn call_model(
        &self,
        request: &ModelRequest,
        control: &RunControl,
        emit: &Emitter<'_>,
    ) -> (Result<ModelStop, ProviderError>, Vec<AssistantBlock>, Vec<ToolCall>) {
        let mut blocks: Vec<AssistantBlock> = Vec::new();
        let mut drafts: Vec<CallDraft> = Vec::new();
        let mut by_index: HashMap<usize, usize> = HashMap::new();
        let mut sink = |piece: StreamEvent| match piece {
            StreamEvent::TextDelta(delta) => {
                let content_index = match blocks.last_mut() {
                    Some(AssistantBlock::Text(text)) => {
                        text.push_str(&delta);
                        blocks.len() - 1
                    }
                    _ => {
                        blocks.push(AssistantBlock::Text(delta.clone()));
                        blocks.len() - 1
                    }
                };
                emit.send(AgentEvent::MessageUpdate(AssistantMessageEvent::TextDelta { content_index, delta }));
            }
            StreamEvent::ThinkingDelta(delta) => {
                let content_index = match blocks.last_mut() {
                    Some(AssistantBlock::Thinking(text)) => {
                        text.push_str(&delta);
                        blocks.len() - 1
                    }
                    _ => {
                        blocks.push(AssistantBlock::Thinking(delta.clone()));
                        blocks.len() - 1
                    }
                };
                emit.send(AgentEvent::MessageUpdate(AssistantMessageEvent::ThinkingDelta { content_index, delta }));
            }
            StreamEvent::ToolCallStart { index, id, name } => {
                let content_index = blocks.len();
                blocks.push(AssistantBlock::ToolCall { id: id.clone(), name: name.clone(), arguments: Value::Null });
                by_index.insert(index, drafts.len());
                drafts.push(CallDraft { content_index, id: id.clone(), name: name.clone(), arguments: String::new() });
                emit.send(AgentEvent::MessageUpdate(AssistantMessageEvent::ToolcallStart {
                    content_index,
                    call: Some(ToolCallHeader { id, name }),
                }));
            }
            StreamEvent::ToolCallDelta { index, fragment } => {
                if let Some(draft) = by_index.get(&index).map(|&i| &mut drafts[i]) {
                    draft.arguments.push_str(&fragment);
                    emit.send(AgentEvent::MessageUpdate(AssistantMessageEvent::ToolcallDelta {
                        content_index: draft.content_index,
                        delta: fragment,
                        call: Some(ToolCallHeader { id: draft.id.clone(), name: draft.name.clone() }),
                    }));
                }
            }
            StreamEvent::Usage { .. } => {}
        };
        let outcome = self.provider.stream(request, &mut sink, &control.cancel).await;
        let mut calls = Vec::new();
        for draft in drafts {
            // Unparsable arguments stay visible as text; the tool then reports them as its error.
            let arguments = match serde_json::from_str::<Value>(&draft.arguments) {
                Ok(value) => value,
                Err(_) if draft.arguments.trim().is_empty() => json!({}),
                Err(_) => Value::String(draft.arguments.clone()),
            };
            if let AssistantBlock::ToolCall { arguments: slot, .. } = &mut blocks[draft.content_index] {
                *slot = arguments.clone();
            }
            let call = ToolCall { id: draft.id, name: draft.name, arguments };
            emit.send(AgentEvent::MessageUpdate(AssistantMessageEvent::ToolcallEnd {
                content_index: draft.content_index,
                call: call.clone(),
            }));
            calls.push(call);
        }
        (outcome, blocks, calls)
    }

    async fn run_tool(
        &self,
        call: &ToolCall,
        workspace: &Workspace,
        control: &RunControl,
        emit: &Emitter<'_>,
    ) -> ToolOutput {
        if let Value::String(raw) = &call.arguments {
            return ToolOutput {
                text: format!("the arguments are not valid JSON: {raw}"),
                details: None,
                is_error: true,
            };
        }
        match call.name.as_str() {
            "todo_write" => todo_write(&call.arguments),
            "question" => self.question(call, control).await,
            name => match self.tools.iter().find(|tool| tool.name() == name) {
                Some(tool) => {
                    let events = emit.events.clone();
                    let id = call.id.clone();
                    let tool_name = call.name.clone();
                    let args = call.arguments.clone();
                    let progress = move |partial: ToolOutput| {
                        let _ = events.send(AgentEvent::ToolExecutionUpdate {
                            tool_call_id: id.clone(),
                            tool_name: tool_name.clone(),
                            args: args.clone(),
                            partial_result: ToolResult { text: partial.text, details: partial.details },
                        });
                    };
                    let context = ToolContext { workspace, cancel: control.cancel.clone(), progress: &progress };
                    tool.run(call.arguments.clone(), context).await
                }
                None => ToolOutput { text: format!("there is no tool named `{name}`"), details: None, is_error: true },
            },
        }
    }

    async fn question(&self, call: &ToolCall, control: &RunControl) -> ToolOutput {
        let Some(question) = call.arguments.get("question").and_then(Value::as_str) else {
            return ToolOutput { text: "`question` is missing".into(), details: None, is_error: true };
        };
        let timeout =
            call.arguments.get("timeoutSeconds").and_then(Value::as_f64).unwrap_or(600.0).clamp(1.0, 86_400.0);
        let (sender, receiver) = oneshot::channel();
        control.questions.lock().expect("the question lock is never poisoned").insert(call.id.clone(), sender);
        let outcome = tokio::select! {
            answer = receiver => answer.map_err(|_| "the question was withdrawn".to_owned()),
            () = control.cancel.cancelled() => Err("the run was stopped before the question was answered".to_owned()),
            () = tokio::time::sleep(Duration::from_secs_f64(timeout)) => {
                Err(format!("no answer to \"{question}\" within {timeout:.0} s"))
            }
        };
        control.questions.lock().expect("the question lock is never poisoned").remove(&call.id);
        match outcome {
            Ok(answer) => ToolOutput { text: answer, details: None, is_error: false },
            Err(message) => ToolOutput { text: message, details: None, is_error: true },
        }
    }
}

/// `todo_write`: validates the checklist; the mapper turns it into `plan` frames.
fn todo_write(arguments: &Value) -> ToolOutput {
    let Some(todos) = arguments.get("todos").and_then(Value::as_array) else {
        return ToolOutput { text: "`todos` must be an array".into(), details: None, is_error: true };
    };
    let mut done = 0;
    for (i, todo) in todos.iter().enumerate() {
        let text_ok = todo.get("text").is_some_and(Value::is_string);
        let status = todo.get("status").and_then(Value::as_str);
        if !text_ok || !matches!(status, Some("pending" | "in_progress" | "completed")) {
            return ToolOutput {
                text: format!("todos[{i}] needs `text` and a `status` of pending, in_progress or completed"),
                details: None,
                is_error: true,
            };
        }
        done += usize::from(status == Some("completed"));
    }
    ToolOutput {
        text: format!("Updated the checklist: {done} of {} done", todos.len()),
        details: None,
        is_error: false,
    }
}
