//! The pure chat reducer of DESIGN.md §6: `apply(&mut ChatSnapshot, &ChatFrame)`, shared by the server and the browser.
//!
//! Appends cost O(appended text): messages and parts are found through
//! indexes, never by cloning or scanning the transcript per frame.

pub mod attention;
pub mod tree;

use rustc_hash::FxHashMap;
use serde_json::{Map, Value};

use crate::protocol::*;
use tree::Tree;

/// Everything a viewer knows about one session, rebuilt from its frames.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatSnapshot {
    pub messages: Vec<ChatMessage>,
    /// Highest `seq` applied; frames at or below it are already in the snapshot.
    pub last_seq: Seq,
    /// The run in progress, if any.
    pub run: Option<RunInProgress>,
    /// What the agent is doing right now, for the activity line (which words it).
    pub activity: Option<Activity>,
    /// The last frame streamed output (text, thinking or a tool call's arguments), which the transcript shows as it
    /// comes: sign enough that the agent works, so the activity line's dot holds still (docs/decisions.md).
    pub output_streaming: bool,
    pub queue: QueueFrame,
    pub plan: Option<ChatPlanState>,
    /// The agent's own commands and options, as its latest `agent_options` frame said them (ACP agents only).
    pub agent_options: Option<AgentOptionsFrame>,
    /// The message of the last `error` frame, until the next run starts.
    pub last_error: Option<String>,
    /// Every message with its place in the conversation tree; `messages` is the branch it shows.
    pub tree: Tree,
    message_index: FxHashMap<String, usize>,
    tool_index: FxHashMap<String, (usize, usize)>,
    /// Set by `state{message_start}`: a new model message starts new text and thinking parts,
    /// so the answers of successive turns are not run together.
    new_model_message: bool,
}

/// What the running agent is doing, as the last `start`, `state`, `compaction` or `retry` frame says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Activity {
    /// Under way, with nothing more specific said: the run started (or was resumed), or a compaction or retry ended.
    Working,
    /// The lifecycle phase a `state` frame entered, with the runtime's own status text when it sent one (pi's
    /// extensions do, through `state.message`).
    Phase { phase: LifecycleName, status: Option<String> },
    /// The older turns are being summarized to fit the context window.
    Compacting,
    /// A failed model call is tried again after `delay_ms`: this is try `attempt` of `max_attempts`.
    Retrying { attempt: u32, max_attempts: u32, delay_ms: u64 },
}

#[derive(Debug, Clone, PartialEq)]
pub struct RunInProgress {
    pub run_id: Option<String>,
    /// Index in `messages` of the assistant message this run streams into.
    pub message: usize,
}

/// What applying one frame did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    Changed,
    /// The frame's `seq` was already applied; nothing changed.
    AlreadySeen,
    /// A frame that carries nothing for the transcript (`ping`); it only tells that the output paused.
    Ignored,
}

/// Placeholder id prefix for an assistant message whose `start` this viewer never saw.
const UNNAMED_ASSISTANT: &str = "pending-assistant";

impl ChatSnapshot {
    /// The snapshot of `GET /api/sessions/{id}`: its messages, and its `pending` message as the run in progress,
    /// so that the frames of `events?after=lastSeq` stream into that message rather than a new one.
    pub fn from_detail(detail: SessionDetail) -> ChatSnapshot {
        let mut snapshot = ChatSnapshot::default();
        for message in detail.messages {
            snapshot.push_message(message);
        }
        if let Some(pending) = detail.pending {
            let index = snapshot.push_message(pending);
            // The run's `start` is behind `lastSeq`: its id is unknown, and the message already has its real id.
            snapshot.run = Some(RunInProgress { run_id: None, message: index });
            snapshot.activity = Some(Activity::Working);
        }
        if let Some(branches) = detail.branches {
            snapshot.tree.add_wire(branches);
        }
        snapshot.last_seq = detail.last_seq;
        snapshot.plan = detail.plan;
        snapshot.agent_options = detail.agent_options;
        snapshot
    }

    /// A transcript of just these messages, one after the other: the conversation a rerun's runtime is given.
    pub fn of_messages(messages: Vec<ChatMessage>, last_seq: Seq) -> ChatSnapshot {
        let mut snapshot = ChatSnapshot::default();
        for message in messages {
            snapshot.push_message(message);
        }
        snapshot.last_seq = last_seq;
        snapshot
    }

    /// The shown branch, the other branches, and the answer in progress, as `GET /api/sessions/{id}` sends them.
    pub fn to_detail(&self, session: SessionSummary) -> SessionDetail {
        let mut messages = self.messages.clone();
        let pending = self.run.as_ref().map(|run| messages.remove(run.message));
        let branches = self.tree.has_branches().then(|| self.tree.to_wire());
        SessionDetail {
            session,
            messages,
            last_seq: self.last_seq,
            pending,
            plan: self.plan.clone(),
            branches,
            agent_options: self.agent_options.clone(),
        }
    }

    pub fn is_running(&self) -> bool {
        self.run.is_some()
    }

    /// How full the model's context is: as the shown branch's last counted model call left it.
    pub fn context(&self) -> Option<ContextUse> {
        self.messages.iter().rev().find_map(|message| message.usage.as_ref()?.context.clone())
    }

    pub fn message(&self, id: &str) -> Option<&ChatMessage> {
        self.message_index.get(id).map(|&i| &self.messages[i])
    }

    /// A message of any branch, shown or not.
    pub fn any_message(&self, id: &str) -> Option<&ChatMessage> {
        self.message(id).or_else(|| self.tree.shelved(id))
    }

    /// The messages from the session's start down to `last`, whichever branch that is on.
    pub fn branch_messages(&self, last: Option<&str>) -> Vec<ChatMessage> {
        self.tree.path_to(last).iter().filter_map(|id| self.any_message(id).cloned()).collect()
    }

    /// Lets the server's mapper move a finished run's parts into its `done` frame instead of copying them;
    /// applying that `done` puts them back.
    pub fn message_mut(&mut self, id: &str) -> Option<&mut ChatMessage> {
        self.message_index.get(id).map(|&i| &mut self.messages[i])
    }

    fn push_message(&mut self, message: ChatMessage) -> usize {
        if let Some(&existing) = self.message_index.get(&message.id) {
            self.messages[existing] = message;
            self.reindex_tools(existing);
            return existing;
        }
        let index = self.messages.len();
        if !self.tree.contains(&message.id) {
            self.tree.add(&message.id, self.messages.last().map(|last| last.id.clone()));
        }
        self.message_index.insert(message.id.clone(), index);
        self.messages.push(message);
        self.reindex_tools(index);
        index
    }

    /// Inserts a new message at `at`, moving the ones after it (in practice only the run's answer) down by one.
    fn insert_message(&mut self, at: usize, message: ChatMessage) {
        match self.messages.get(at) {
            Some(below) => self.tree.insert_above(&message.id, &below.id),
            None => self.tree.add(&message.id, self.messages.last().map(|last| last.id.clone())),
        }
        self.messages.insert(at, message);
        for index in at..self.messages.len() {
            self.message_index.insert(self.messages[index].id.clone(), index);
            self.reindex_tools(index);
        }
    }

    fn reindex_tools(&mut self, message: usize) {
        for (part_index, part) in self.messages[message].parts.iter().enumerate() {
            if let Some(tool) = part.as_tool() {
                self.tool_index.insert(tool.tool_call_id.clone(), (message, part_index));
            }
        }
    }

    /// The assistant message a streamed frame belongs to: the named one, else the run's, else a new one.
    fn streaming_target(&mut self, message_id: Option<&str>) -> usize {
        if let Some(id) = message_id
            && let Some(&index) = self.message_index.get(id)
        {
            return index;
        }
        if let Some(run) = &self.run {
            let index = run.message;
            // A resumed stream may name the run's message differently from `start.id`; adopt the new name.
            if let Some(id) = message_id
                && self.messages[index].id.starts_with(UNNAMED_ASSISTANT)
            {
                self.rename_message(index, id);
            }
            return index;
        }
        // Numbered: a second run whose `start` was missed must not overwrite the first one's message.
        let id = match message_id {
            Some(id) => id.to_owned(),
            None => format!("{UNNAMED_ASSISTANT}-{}", self.messages.len()),
        };
        let index = self.push_message(ChatMessage {
            id,
            role: Role::Assistant,
            parts: Vec::new(),
            created_at: None,
            changes: None,
            usage: None,
        });
        self.run = Some(RunInProgress { run_id: None, message: index });
        index
    }

    fn rename_message(&mut self, index: usize, id: &str) {
        let old = std::mem::replace(&mut self.messages[index].id, id.to_owned());
        self.tree.rename(&old, id);
        self.message_index.remove(&old);
        self.message_index.insert(id.to_owned(), index);
    }

    /// Makes `messages` the branch from the session's start down to `last` (`None`: no message at all), keeping
    /// the messages it leaves aside for when their branch is shown again.
    fn show_branch_to(&mut self, last: Option<&str>) {
        let path = self.tree.path_to(last);
        if path.len() == self.messages.len() && path.iter().zip(&self.messages).all(|(id, message)| *id == message.id) {
            return;
        }
        let mut on_screen: FxHashMap<String, ChatMessage> =
            self.messages.drain(..).map(|message| (message.id.clone(), message)).collect();
        for id in &path {
            if let Some(message) = on_screen.remove(id).or_else(|| self.tree.unshelve(id)) {
                self.messages.push(message);
            }
        }
        for (_, message) in on_screen {
            self.tree.shelve(message);
        }
        self.tree.show(&path);
        self.message_index.clear();
        self.tool_index.clear();
        for index in 0..self.messages.len() {
            self.message_index.insert(self.messages[index].id.clone(), index);
            self.reindex_tools(index);
        }
    }

    fn append_text(&mut self, message_id: Option<&str>, text: &str, thinking: bool) {
        let index = self.streaming_target(message_id);
        let parts = &mut self.messages[index].parts;
        let last = if std::mem::take(&mut self.new_model_message) { None } else { parts.last_mut() };
        match (last, thinking) {
            (Some(ChatMessagePart::Text(part)), false) => part.text.push_str(text),
            (Some(ChatMessagePart::Thinking(part)), true) => part.text.push_str(text),
            (_, false) => parts.push(ChatMessagePart::text(text)),
            (_, true) => parts.push(ChatMessagePart::thinking(text)),
        }
    }

    fn upsert_tool(&mut self, message_id: Option<&str>, part: ChatToolPart) {
        if let Some(&(message, part_index)) = self.tool_index.get(&part.tool_call_id) {
            match &mut self.messages[message].parts[part_index] {
                ChatMessagePart::Tool(existing) => **existing = part,
                other => *other = ChatMessagePart::tool(part),
            }
            return;
        }
        let message = self.streaming_target(message_id);
        let parts = &mut self.messages[message].parts;
        self.tool_index.insert(part.tool_call_id.clone(), (message, parts.len()));
        parts.push(ChatMessagePart::tool(part));
    }

    /// Brings a known tool part up to `part` (copying only what changed), or adds it.
    fn update_tool(&mut self, message_id: Option<&str>, part: &ChatToolPart) {
        match self.tool_mut(&part.tool_call_id) {
            Some(existing) => assign_tool_part(existing, part),
            None => self.upsert_tool(message_id, part.clone()),
        }
    }

    /// The tool part with this call id, wherever it is in the transcript.
    pub fn tool(&self, tool_call_id: &str) -> Option<&ChatToolPart> {
        let &(message, part) = self.tool_index.get(tool_call_id)?;
        match &self.messages[message].parts[part] {
            ChatMessagePart::Tool(tool) => Some(tool),
            ChatMessagePart::Text(_)
            | ChatMessagePart::Thinking(_)
            | ChatMessagePart::Error(_)
            | ChatMessagePart::File(_) => None,
        }
    }

    fn tool_mut(&mut self, tool_call_id: &str) -> Option<&mut ChatToolPart> {
        let &(message, part) = self.tool_index.get(tool_call_id)?;
        match &mut self.messages[message].parts[part] {
            ChatMessagePart::Tool(tool) => Some(tool),
            ChatMessagePart::Text(_)
            | ChatMessagePart::Thinking(_)
            | ChatMessagePart::Error(_)
            | ChatMessagePart::File(_) => None,
        }
    }

    /// Nothing waits for a run that has ended: its queue goes with it.
    fn end_run(&mut self) {
        self.run = None;
        self.activity = None;
        self.queue = QueueFrame::default();
    }
}

/// Applies one frame. Re-applying a frame whose `seq` is already in the snapshot changes nothing.
pub fn apply(snapshot: &mut ChatSnapshot, frame: &ChatFrame) -> Applied {
    if let Some(seq) = frame.seq() {
        if seq <= snapshot.last_seq {
            return Applied::AlreadySeen;
        }
        snapshot.last_seq = seq;
    }
    snapshot.output_streaming = streams_output(frame);
    match frame {
        ChatFrame::Start(start) => {
            // A branching run shows the branch up to where it attaches; the run's messages follow from there.
            if let Some(branch) = &start.branch
                && snapshot.run.is_none()
                && branch.parent_id.as_deref().is_none_or(|parent| snapshot.tree.contains(parent))
            {
                snapshot.show_branch_to(branch.parent_id.as_deref());
            }
            let index = match snapshot.message_index.get(&start.id) {
                Some(&index) => index,
                None => match &snapshot.run {
                    // Frames of this run arrived before its `start` (a resumed stream): give them their real id.
                    Some(run) if run.run_id.is_none() => {
                        let index = run.message;
                        snapshot.rename_message(index, &start.id);
                        index
                    }
                    Some(_) | None => snapshot.push_message(ChatMessage {
                        id: start.id.clone(),
                        role: Role::Assistant,
                        parts: Vec::new(),
                        created_at: None,
                        changes: None,
                        usage: None,
                    }),
                },
            };
            snapshot.run = Some(RunInProgress { run_id: Some(start.run_id.clone()), message: index });
            snapshot.last_error = None;
            snapshot.activity = Some(Activity::Working);
        }
        ChatFrame::Message(MessageFrame { message, .. }) => {
            // The prompt is logged after `start`, steering and follow-ups while the answer streams: the run's
            // assistant message stays last, where `GET /api/sessions/{id}` puts its `pending` message too.
            match snapshot.run.as_ref().map(|run| run.message) {
                Some(run_message) if !snapshot.message_index.contains_key(&message.id) => {
                    snapshot.insert_message(run_message, message.clone());
                    if let Some(run) = &mut snapshot.run {
                        run.message = run_message + 1;
                    }
                }
                Some(_) | None => {
                    snapshot.push_message(message.clone());
                }
            }
        }
        ChatFrame::Delta(delta) => snapshot.append_text(delta.message_id.as_deref(), &delta.text, false),
        ChatFrame::Thinking(thinking) => snapshot.append_text(thinking.message_id.as_deref(), &thinking.text, true),
        ChatFrame::ToolDraft(draft) => {
            if snapshot.tool_mut(&draft.tool_call_id).is_none() {
                let mut part = ChatToolPart::new(&draft.tool_name, &draft.tool_call_id, ToolState::InputStreaming);
                part.index = Some(draft.index);
                snapshot.upsert_tool(draft.message_id.as_deref(), part);
            }
        }
        ChatFrame::ToolArgsDelta(args) => {
            if let Some(tool) = snapshot.tool_mut(&args.tool_call_id) {
                append_at_path(tool.input.get_or_insert_with(|| Value::Object(Map::new())), &args.path, &args.text);
            }
        }
        ChatFrame::Tool(tool) => snapshot.update_tool(tool.message_id.as_deref(), &tool.part),
        ChatFrame::Plan(plan) => snapshot.plan = Some(plan.state.clone()),
        ChatFrame::State(state) => {
            if state.state.name == LifecycleName::MessageStart {
                snapshot.new_model_message = true;
            }
            snapshot.activity = match state.state.name {
                LifecycleName::AgentEnd | LifecycleName::AgentSettled => None,
                phase @ (LifecycleName::AgentStart
                | LifecycleName::TurnStart
                | LifecycleName::TurnEnd
                | LifecycleName::MessageStart
                | LifecycleName::MessageEnd) => Some(Activity::Phase { phase, status: state.state.message.clone() }),
            };
        }
        ChatFrame::Queue(queue) => {
            snapshot.queue =
                QueueFrame { seq: None, steering: queue.steering.clone(), follow_up: queue.follow_up.clone() }
        }
        // Switching branches under a streaming answer would move it off screen: the server never logs that, and a
        // frame naming an unknown message is one this reducer cannot follow.
        ChatFrame::Branch(branch) => {
            if snapshot.run.is_none() && snapshot.tree.contains(&branch.message_id) {
                snapshot.show_branch_to(Some(&branch.message_id));
            }
        }
        // The answer the run streams into, named or not: a stream joined mid-run still puts the summary on it.
        ChatFrame::Changes(changes) => {
            let named = changes.message_id.as_deref().and_then(|id| snapshot.message_index.get(id).copied());
            if let Some(index) = named.or(snapshot.run.as_ref().map(|run| run.message)) {
                snapshot.messages[index].changes = Some(Box::new(changes.summary()));
            }
        }
        // Like `changes`: the named answer, else the run's.
        ChatFrame::Usage(usage) => {
            let named = usage.message_id.as_deref().and_then(|id| snapshot.message_index.get(id).copied());
            if let Some(index) = named.or(snapshot.run.as_ref().map(|run| run.message)) {
                let kept = snapshot.messages[index].usage.get_or_insert_default();
                kept.add_call(&usage.usage, usage.context.as_ref());
            }
        }
        // A state, not a delta: the latest says all the agent offers, with or without a run.
        ChatFrame::AgentOptions(offered) => {
            snapshot.agent_options = Some(AgentOptionsFrame { seq: None, ..offered.clone() })
        }
        ChatFrame::Compaction(CompactionFrame::Start(_)) => snapshot.activity = Some(Activity::Compacting),
        ChatFrame::Compaction(CompactionFrame::End(_)) => snapshot.activity = Some(Activity::Working),
        ChatFrame::Retry(RetryFrame::Start(retry)) => {
            snapshot.activity = Some(Activity::Retrying {
                attempt: retry.attempt,
                max_attempts: retry.max_attempts,
                delay_ms: retry.delay_ms,
            })
        }
        ChatFrame::Retry(RetryFrame::End(_)) => snapshot.activity = Some(Activity::Working),
        ChatFrame::Done(done) => {
            let index = match (&snapshot.run, snapshot.message_index.get(&done.message.id)) {
                (_, Some(&index)) => Some(index),
                (Some(run), None) => Some(run.message),
                (None, None) => None,
            };
            match index {
                Some(index) => {
                    let old = std::mem::replace(&mut snapshot.messages[index], done.message.clone());
                    // A `done` without the run's changes or usage (its maker did not move them into it) keeps them.
                    if snapshot.messages[index].changes.is_none() {
                        snapshot.messages[index].changes = old.changes;
                    }
                    if snapshot.messages[index].usage.is_none() {
                        snapshot.messages[index].usage = old.usage;
                    }
                    let old_id = old.id;
                    snapshot.tree.rename(&old_id, &done.message.id);
                    snapshot.message_index.remove(&old_id);
                    snapshot.message_index.insert(done.message.id.clone(), index);
                    snapshot.reindex_tools(index);
                }
                None => {
                    snapshot.push_message(done.message.clone());
                }
            }
            snapshot.end_run();
        }
        ChatFrame::Error(error) => {
            if let Some(run) = &snapshot.run {
                let index = run.message;
                snapshot.messages[index]
                    .parts
                    .push(ChatMessagePart::Error(ErrorPart { title: None, message: error.message.clone() }));
            }
            snapshot.last_error = Some(error.message.clone());
            snapshot.end_run();
        }
        ChatFrame::Ping => return Applied::Ignored,
    }
    Applied::Changed
}

/// Whether `frame` adds to output the transcript shows as it streams. A `ping` is not: during a pause in the
/// output it lets the activity line's dot pulse again.
fn streams_output(frame: &ChatFrame) -> bool {
    match frame {
        ChatFrame::Delta(_) | ChatFrame::Thinking(_) | ChatFrame::ToolArgsDelta(_) => true,
        ChatFrame::Start(_)
        | ChatFrame::Message(_)
        | ChatFrame::ToolDraft(_)
        | ChatFrame::Tool(_)
        | ChatFrame::Plan(_)
        | ChatFrame::State(_)
        | ChatFrame::Queue(_)
        | ChatFrame::Branch(_)
        | ChatFrame::Changes(_)
        | ChatFrame::Usage(_)
        | ChatFrame::AgentOptions(_)
        | ChatFrame::Compaction(_)
        | ChatFrame::Retry(_)
        | ChatFrame::Done(_)
        | ChatFrame::Error(_)
        | ChatFrame::Ping => false,
    }
}

/// Makes `target` equal to `source`, copying only the fields that differ. Every `tool` frame repeats the call's
/// whole input, which is usually what the part already holds: comparing it costs far less than copying it.
fn assign_tool_part(target: &mut ChatToolPart, source: &ChatToolPart) {
    let ChatToolPart {
        kind,
        tool_call_id,
        state,
        index,
        input,
        output,
        error_text,
        duration_ms,
        approval_options,
        extra,
    } = source;
    if target.kind != *kind {
        target.kind.clone_from(kind);
    }
    if target.tool_call_id != *tool_call_id {
        target.tool_call_id.clone_from(tool_call_id);
    }
    target.state = *state;
    target.index = *index;
    target.duration_ms = *duration_ms;
    if target.input != *input {
        target.input.clone_from(input);
    }
    if target.output != *output {
        target.output.clone_from(output);
    }
    if target.error_text != *error_text {
        target.error_text.clone_from(error_text);
    }
    if target.approval_options != *approval_options {
        target.approval_options.clone_from(approval_options);
    }
    if target.extra != *extra {
        target.extra.clone_from(extra);
    }
}

/// The value of `key`, inserted as `null` if missing. A tool's arguments have a handful of keys: a scan finds one
/// faster than hashing the key, and the key is copied only when it is new, not once per delta.
fn argument_mut<'a>(map: &'a mut Map<String, Value>, key: &str) -> &'a mut Value {
    const SCANNED: usize = 8;
    let position = if map.len() <= SCANNED { map.keys().position(|existing| existing == key) } else { None };
    match position {
        Some(position) => map.values_mut().nth(position).expect("the key was found at this position"),
        None => {
            if !map.contains_key(key) {
                map.insert(key.to_owned(), Value::Null);
            }
            map.get_mut(key).expect("inserted just above")
        }
    }
}

/// Appends `text` to the string at `path` inside a tool's arguments, creating what is missing on the way.
fn append_at_path(root: &mut Value, path: &[PathSegment], text: &str) {
    let mut node = root;
    for segment in path {
        node = match segment {
            PathSegment::Key(key) => {
                if !node.is_object() {
                    *node = Value::Object(Map::new());
                }
                let Value::Object(map) = node else { unreachable!("made an object just above") };
                argument_mut(map, key)
            }
            PathSegment::Index(index) => {
                if !node.is_array() {
                    *node = Value::Array(Vec::new());
                }
                let Value::Array(items) = node else { unreachable!("made an array just above") };
                let index = usize::try_from(*index).unwrap_or(usize::MAX).min(items.len());
                if index == items.len() {
                    items.push(Value::Null);
                }
                &mut items[index]
            }
        };
    }
    match node {
        Value::String(existing) => existing.push_str(text),
        other => *other = Value::String(text.to_owned()),
    }
}

#[cfg(test)]
mod tests;
