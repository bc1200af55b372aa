//! One chatwire session's side of an ACP agent: its process, kept warm between runs and stopped when idle; the
//! agent's session, opened with `session/new` or reopened with `session/load`; and the run loop that sends a prompt,
//! turns the agent's updates into agent events, answers its permission requests with approval cards, serves its file
//! reads and writes inside the workspace, and stops it with `session/cancel`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::AcpConfig;
use super::offered::Offered;
use super::replay::Replay;
use super::rpc::{INTERNAL_ERROR, INVALID_PARAMS, Incoming, METHOD_NOT_FOUND, Peer, RpcError};
use super::schema::{
    InitializeResponse, PROTOCOL_VERSION, PermissionRequest, PromptResponse, SessionList, SessionOpened, SessionUpdate,
    StopReason, epoch_ms,
};
use super::terminal::Terminals;
use super::translate::{Turn, TurnEnd};
use crate::protocol::AgentOptionsFrame;
use crate::protocol::{ApprovalKind, ApprovalOption};
use crate::runtime::attached::{AttachedFile, IMAGES_UNSUPPORTED, with_text_files};
use crate::runtime::child::{ChildProcess, ChildSpec};
use crate::runtime::event::AgentEvent;
use crate::runtime::providers::base64_of;
use crate::runtime::seam::{
    ApprovalDecision, ConversationRef, EventSender, OptionError, OptionSetting, OwnConversation, ReplayedConversation,
    RunControl, RunEnd, RunOpening, RunRequest, RuntimeError, RuntimeFuture, RuntimeSession, queue_event,
};
use crate::runtime::tools::Workspace;

/// A running agent process with its session open.
struct Connection {
    peer: Peer,
    incoming: mpsc::Receiver<Incoming>,
    init: InitializeResponse,
    session_id: String,
    /// The commands it asked chatwire to run; dropped with the connection, which kills them.
    terminals: Terminals,
    /// What the agent offers in this session (commands, options), as it last said.
    offered: Offered,
    /// The agent's answers to option settings sent during a turn, which may come after the turn: the next run, or
    /// the next setting, reads them.
    set_answers: mpsc::UnboundedSender<SetAnswer>,
    answered_sets: mpsc::UnboundedReceiver<SetAnswer>,
}

/// The agent's answer to one option setting.
struct SetAnswer {
    setting: OptionSetting,
    answer: Result<Value, RpcError>,
}

impl Connection {
    /// Reads what the agent answered to a setting: `session/set_config_option` answers with all the options,
    /// `session/set_mode` and `session/set_model` with nothing. False when it refused.
    fn take_answer(&mut self, SetAnswer { setting, answer }: SetAnswer, agent: &str) -> bool {
        match answer {
            Ok(answer) if answer.get("configOptions").is_some() => self.offered.answered(&answer),
            Ok(_) => self.offered.accepted(&setting.id, &setting.value),
            Err(error) => {
                tracing::warn!(target: "chatwire::acp", agent, option = %setting.id, value = %setting.value, "the agent did not take the option: {error}");
                return false;
            }
        }
        true
    }
}

/// The process slot a session shares with its idle timer: the timer stops the process only if no run took it since.
#[derive(Default)]
struct Slot {
    connection: Option<Connection>,
    /// Counts the runs that took the connection, so a timer armed before one of them does nothing.
    generation: u64,
}

pub(super) struct AcpSession {
    config: Arc<AcpConfig>,
    workspace: Workspace,
    slot: Arc<Mutex<Slot>>,
    /// The agent's session id, once one was opened: a new process reopens it.
    conversation: Option<String>,
    /// Why the process for the next run could not be started; that run ends with it.
    start_failure: Option<Failure>,
    /// The agent's session's cost as it last said it: each turn's usage carries what the turn added.
    session_cost: Option<f64>,
    /// What the agent offered as the session's log last holds it: a new process (a restart, an idle stop) gets the
    /// same option values again, so a model chosen stays chosen.
    remembered: Option<AgentOptionsFrame>,
}

/// Why a run on the agent failed: its `error` frame's message and code.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Failure {
    message: String,
    code: &'static str,
    /// The agent kept to the protocol and only this run failed (a refusal, the output limit, images it does not
    /// take): its process stays warm for the next run. Any other failure stops it.
    agent_sound: bool,
}

impl Failure {
    fn new(message: String, code: &'static str) -> Failure {
        Failure { message, code, agent_sound: false }
    }

    fn of_the_run(message: String, code: &'static str) -> Failure {
        Failure { message, code, agent_sound: true }
    }
}

impl AcpSession {
    pub(super) fn new(
        config: Arc<AcpConfig>,
        workspace: Workspace,
        conversation: Option<ConversationRef>,
        remembered: Option<AgentOptionsFrame>,
    ) -> AcpSession {
        AcpSession {
            config,
            workspace,
            slot: Arc::default(),
            conversation: conversation.map(ConversationRef::into_string),
            start_failure: None,
            session_cost: None,
            remembered,
        }
    }

    fn take_connection(&self) -> Option<Connection> {
        let mut slot = self.slot.lock().expect("the slot lock is never poisoned");
        slot.generation += 1;
        slot.connection.take().filter(|connection| connection.peer.is_alive())
    }

    /// Puts a connection that behaved back, and stops it after the idle time unless a run takes it first.
    fn keep(&self, connection: Connection) {
        let generation = {
            let mut slot = self.slot.lock().expect("the slot lock is never poisoned");
            slot.connection = Some(connection);
            slot.generation
        };
        let (slot, idle) = (Arc::downgrade(&self.slot), self.config.idle_stop);
        tokio::spawn(async move {
            tokio::time::sleep(idle).await;
            let Some(slot) = slot.upgrade() else { return };
            let stopped = {
                let mut slot = slot.lock().expect("the slot lock is never poisoned");
                if slot.generation != generation {
                    return;
                }
                slot.connection.take()
            };
            if stopped.is_some() {
                tracing::info!(target: "chatwire::acp", "stopped an agent process idle for {idle:?}");
            }
        });
    }

    fn name(&self) -> &str {
        &self.config.name
    }

    /// Starts the agent and says `initialize`.
    async fn start(&self) -> Result<Connection, Failure> {
        let spec = ChildSpec {
            program: self.config.program.clone(),
            args: self.config.args.iter().map(Into::into).collect(),
            env: self.config.env.clone(),
            cwd: self.workspace.root().to_owned(),
            max_line_bytes: self.config.max_line_bytes,
            label: format!("agent {}", self.name()),
        };
        let spawned = ChildProcess::spawn(&spec).map_err(|error| {
            Failure::new(format!("could not start the agent `{}`: {error}", self.name()), "runtime_unavailable")
        })?;
        let (peer, incoming) = Peer::new(spawned);
        let (set_answers, answered_sets) = mpsc::unbounded_channel();
        let mut connection = Connection {
            peer,
            incoming,
            init: InitializeResponse::default(),
            session_id: String::new(),
            terminals: Terminals::new(self.workspace.clone()),
            offered: Offered::default(),
            set_answers,
            answered_sets,
        };
        let capabilities = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true},
            "clientInfo": {"name": "chatwire", "title": "chatwire", "version": env!("CARGO_PKG_VERSION")},
        });
        let init = self.call(&mut connection, "initialize", capabilities).await?;
        connection.init = serde_json::from_value(init)
            .map_err(|error| self.malformed(&connection, format!("its answer to `initialize`: {error}")))?;
        Ok(connection)
    }

    /// Starts the agent and opens its session: `session/load` of the one this chatwire session had when the agent
    /// offers it, else a new one. The bool says the agent started over without the earlier conversation.
    async fn connect(&mut self) -> Result<(Connection, bool), Failure> {
        let mut connection = self.start().await?;
        let cwd = self.workspace.root().display().to_string();
        let mut reset = false;
        if let Some(previous) = self.conversation.clone() {
            if connection.init.agent_capabilities.load_session {
                let load = json!({"sessionId": previous, "cwd": cwd, "mcpServers": []});
                match self.call(&mut connection, "session/load", load).await {
                    Ok(answer) => {
                        connection.session_id = previous;
                        connection.offered.answered(&answer);
                        self.choose_again(&mut connection).await?;
                        return Ok((connection, false));
                    }
                    Err(failure) if connection.peer.is_alive() => {
                        tracing::warn!(target: "chatwire::acp", agent = self.name(), "{}", failure.message);
                    }
                    Err(failure) => return Err(failure),
                }
            }
            reset = true;
        }
        let opened = self.call(&mut connection, "session/new", json!({"cwd": cwd, "mcpServers": []})).await?;
        connection.offered.answered(&opened);
        let opened: SessionOpened = serde_json::from_value(opened)
            .map_err(|error| self.malformed(&connection, format!("its answer to `session/new`: {error}")))?;
        connection.session_id = opened
            .session_id
            .ok_or_else(|| self.malformed(&connection, "its answer to `session/new` has no `sessionId`".into()))?;
        self.choose_again(&mut connection).await?;
        Ok((connection, reset))
    }

    /// Sets again, on a process just started, the option values the session's log holds where the agent now has
    /// others (it may not keep them with the conversation). A value it no longer offers is left as it is.
    async fn choose_again(&self, connection: &mut Connection) -> Result<(), Failure> {
        let Some(remembered) = &self.remembered else { return Ok(()) };
        for option in &remembered.options {
            if connection.offered.current(&option.id).is_none_or(|now| now == option.current) {
                continue;
            }
            let Ok(request) = connection.offered.request(&option.id, &option.current) else { continue };
            let mut params = request.params;
            params["sessionId"] = json!(connection.session_id);
            let setting = OptionSetting { id: option.id.clone(), value: option.current.clone() };
            match self.call(connection, request.method, params).await {
                Ok(answer) => {
                    connection.take_answer(SetAnswer { setting, answer: Ok(answer) }, self.name());
                }
                Err(failure) if connection.peer.is_alive() => {
                    tracing::warn!(target: "chatwire::acp", agent = self.name(), option = %option.id, "{}", failure.message);
                }
                Err(failure) => return Err(failure),
            }
        }
        Ok(())
    }

    /// Tells what the agent offers, as the connection knows it now (the mapper drops it when the log already says
    /// the same), and remembers it for a process started later.
    fn tell_offered(&mut self, connection: &mut Connection, events: &EventSender) {
        while let Ok(answer) = connection.answered_sets.try_recv() {
            connection.take_answer(answer, &self.config.name);
        }
        if let Some(event) = connection.offered.event() {
            if let AgentEvent::AgentOptions(frame) = &event {
                self.remembered = Some(frame.clone());
            }
            let _ = events.send(event);
        }
    }

    /// Sets the options chosen after the last turn's end, before the run ends (no turn loop reads them then).
    async fn set_waiting_options(
        &mut self,
        connection: &mut Connection,
        control: &RunControl,
        events: &EventSender,
    ) -> Result<(), Failure> {
        let settings: Vec<OptionSetting> =
            control.options.lock().expect("the option lock is never poisoned").drain(..).collect();
        for setting in settings {
            match self.set_now(connection, setting).await {
                Ok(()) | Err(OptionError::UnknownOption { .. } | OptionError::UnknownValue { .. }) => {}
                Err(OptionError::Agent(_) | OptionError::Unsupported(_)) if connection.peer.is_alive() => {}
                Err(OptionError::Agent(why) | OptionError::Unsupported(why)) => {
                    return Err(Failure::new(why, "runtime_exit"));
                }
            }
        }
        self.tell_offered(connection, events);
        Ok(())
    }

    /// Sets one option and waits for the agent's answer.
    async fn set_now(&self, connection: &mut Connection, setting: OptionSetting) -> Result<(), OptionError> {
        let request = connection.offered.request(&setting.id, &setting.value)?;
        let mut params = request.params;
        params["sessionId"] = json!(connection.session_id);
        let answer = self
            .call(connection, request.method, params)
            .await
            .map_err(|failure| OptionError::Agent(failure.message))?;
        connection.take_answer(SetAnswer { setting, answer: Ok(answer) }, self.name());
        Ok(())
    }

    /// Sends one option setting during a turn; its answer comes through `Connection::answered_sets`.
    fn send_setting(&self, connection: &Connection, setting: OptionSetting) {
        let request = match connection.offered.request(&setting.id, &setting.value) {
            Ok(request) => request,
            Err(error) => {
                return tracing::warn!(target: "chatwire::acp", agent = self.name(), "not sent: {error}");
            }
        };
        let mut params = request.params;
        params["sessionId"] = json!(connection.session_id);
        let answers = connection.set_answers.clone();
        match connection.peer.send_request(request.method, params) {
            Ok(answer) => {
                tokio::spawn(async move {
                    let answer = answer.await;
                    let _ = answers.send(SetAnswer { setting, answer });
                });
            }
            Err(error) => {
                let _ = answers.send(SetAnswer { setting, answer: Err(error) });
            }
        }
    }

    fn malformed(&self, connection: &Connection, why: String) -> Failure {
        connection.peer.kill();
        Failure::new(format!("agent runtime sent malformed data: {why}"), "runtime_malformed")
    }

    /// Sends a request outside a run and waits for its answer, handling what the agent says meanwhile (a
    /// `session/load` replays the conversation as updates, which have no run to go to).
    async fn call(&self, connection: &mut Connection, method: &str, params: Value) -> Result<Value, Failure> {
        self.call_collecting(connection, method, params, None).await
    }

    /// `call`, keeping the `update`s of the session `replayed` names that the agent sends before it answers.
    async fn call_collecting(
        &self,
        connection: &mut Connection,
        method: &str,
        params: Value,
        mut replayed: Option<(&str, &mut Vec<Value>)>,
    ) -> Result<Value, Failure> {
        let answer = connection.peer.send_request(method, params).map_err(|error| self.rpc_failure(error))?;
        tokio::pin!(answer);
        let deadline = Instant::now() + self.config.start_timeout;
        loop {
            tokio::select! {
                answer = &mut answer => {
                    // What the agent said before it answered is already queued (a `session/load`'s replay): it is
                    // handled here, not left for the first prompt's turn.
                    while let Ok(said) = connection.incoming.try_recv() {
                        if matches!(said, Incoming::Closed(_)) {
                            break;
                        }
                        self.said_outside_run(connection, Some(said), &mut replayed)?;
                    }
                    return answer.map_err(|error| self.rpc_failure(error));
                }
                said = connection.incoming.recv() => self.said_outside_run(connection, said, &mut replayed)?,
                () = tokio::time::sleep_until(deadline) => {
                    connection.peer.kill();
                    return Err(Failure::new(
                        format!(
                            "the agent `{}` did not answer `{method}` within {} s{}",
                            self.name(),
                            self.config.start_timeout.as_secs(),
                            last_words(&connection.peer)
                        ),
                        "runtime_timeout",
                    ));
                }
            }
        }
    }

    /// Handles one thing the agent said while no prompt runs: a replayed update is kept when asked for, a request
    /// is refused.
    fn said_outside_run(
        &self,
        connection: &mut Connection,
        said: Option<Incoming>,
        replayed: &mut Option<(&str, &mut Vec<Value>)>,
    ) -> Result<(), Failure> {
        match said {
            Some(Incoming::Notification { method, mut params }) => {
                if method != "session/update" {
                    return Ok(());
                }
                // What the agent offers may change while it opens the session (a replay on `session/load`).
                let ours = connection.session_id.is_empty()
                    || params.get("sessionId").and_then(Value::as_str) == Some(connection.session_id.as_str());
                if ours && let Ok(update) = SessionUpdate::parse(params.get("update").unwrap_or(&Value::Null)) {
                    connection.offered.update(&update);
                }
                if let Some((session, updates)) = replayed.as_mut()
                    && params.get("sessionId").and_then(Value::as_str) == Some(*session)
                {
                    updates.push(params["update"].take());
                }
                Ok(())
            }
            Some(Incoming::Request { id, method, .. }) => {
                let why = format!("chatwire is not running a prompt; {method} waits for one");
                connection.peer.respond_error(&id, METHOD_NOT_FOUND, &why);
                Ok(())
            }
            Some(Incoming::Malformed(why)) => Err(self.malformed(connection, why)),
            Some(Incoming::Closed(why)) => Err(self.exited(&why)),
            None => Err(self.exited("")),
        }
    }

    fn rpc_failure(&self, error: RpcError) -> Failure {
        match error {
            RpcError::Exited(why) => self.exited(&why),
            RpcError::Failed { .. } => Failure::new(format!("the agent `{}`: {error}", self.name()), "runtime_refused"),
        }
    }

    fn exited(&self, why: &str) -> Failure {
        Failure::new(format!("the agent `{}` exited{why}", self.name()), "runtime_exit")
    }

    /// Drives one run on `connection`: prompt turns until the agent is done and nothing is queued.
    async fn drive(
        &mut self,
        connection: &mut Connection,
        request: RunRequest,
        control: &RunControl,
        events: &EventSender,
    ) -> Result<(), Failure> {
        let mut prompt = self.prompt_blocks(&connection.init, &request.prompt, &request.files)?;
        let _ = events.send(AgentEvent::AgentStart);
        self.tell_offered(connection, events);
        // The prompt as the dialect tells it (the server logged it already; the mapper knows): a queued message told
        // the same way later is then logged as the user's.
        let _ = events.send(AgentEvent::MessageStart(crate::runtime::event::AgentMessage {
            role: crate::runtime::event::MessageRole::User,
            text: request.prompt.clone(),
            ..crate::runtime::event::AgentMessage::opening_answer()
        }));
        loop {
            let end = self.turn(connection, prompt, control, events).await?;
            if let TurnEnd::Failed { message, code } = end {
                let _ = events.send(AgentEvent::AgentEnd);
                return Err(Failure::of_the_run(message, code));
            }
            if control.cancel.is_cancelled() {
                break;
            }
            // ACP has no steering: a message queued during the turn is the next prompt, the user's message first.
            let next = {
                let mut queues = control.queues.lock().expect("the queue lock is never poisoned");
                let next = queues.steering.pop_front().or_else(|| queues.follow_up.pop_front());
                queues.closed = next.is_none();
                if next.is_some() {
                    let _ = events.send(queue_event(&queues));
                }
                next
            };
            let Some(next) = next else {
                self.set_waiting_options(connection, control, events).await?;
                break;
            };
            let _ = events.send(AgentEvent::MessageStart(crate::runtime::event::AgentMessage {
                role: crate::runtime::event::MessageRole::User,
                text: next.clone(),
                ..crate::runtime::event::AgentMessage::opening_answer()
            }));
            prompt = vec![json!({"type": "text", "text": next})];
        }
        let _ = events.send(AgentEvent::AgentEnd);
        Ok(())
    }

    /// The prompt's content blocks: its text, text files as embedded resources where the agent takes them (else
    /// fenced in the text), images where it takes them (else the run is refused, naming them).
    fn prompt_blocks(
        &self,
        init: &InitializeResponse,
        text: &str,
        files: &[AttachedFile],
    ) -> Result<Vec<Value>, Failure> {
        let capabilities = &init.agent_capabilities.prompt_capabilities;
        let images: Vec<&AttachedFile> = files.iter().filter(|file| file.is_image()).collect();
        if !images.is_empty() && !capabilities.image {
            let names: Vec<&str> = images.iter().map(|file| file.name.as_str()).collect();
            return Err(Failure::of_the_run(
                format!(
                    "the agent `{}` does not take images, so it cannot see {}: send the message without them",
                    self.name(),
                    names.join(", ")
                ),
                IMAGES_UNSUPPORTED,
            ));
        }
        let texts: Vec<AttachedFile> = files.iter().filter(|file| !file.is_image()).cloned().collect();
        let mut blocks = Vec::new();
        let text = if capabilities.embedded_context { text.to_owned() } else { with_text_files(text, &texts) };
        if !text.is_empty() {
            blocks.push(json!({"type": "text", "text": text}));
        }
        if capabilities.embedded_context {
            for file in &texts {
                blocks.push(json!({"type": "resource", "resource": {
                    "uri": format!("file:///{}", file.name),
                    "mimeType": file.media_type,
                    "text": String::from_utf8_lossy(&file.bytes),
                }}));
            }
        }
        for image in images {
            blocks.push(json!({"type": "image", "mimeType": image.media_type, "data": base64_of(&image.bytes)}));
        }
        Ok(blocks)
    }

    /// One `session/prompt` and everything the agent says until it answers it.
    async fn turn(
        &mut self,
        connection: &mut Connection,
        prompt: Vec<Value>,
        control: &RunControl,
        events: &EventSender,
    ) -> Result<TurnEnd, Failure> {
        let (turn, opening) = Turn::start(self.workspace.root(), self.session_cost);
        for event in opening {
            let _ = events.send(event);
        }
        let params = json!({"sessionId": connection.session_id, "prompt": prompt});
        let answer = connection.peer.send_request("session/prompt", params).map_err(|error| self.rpc_failure(error))?;
        tokio::pin!(answer);
        let (decided, mut decisions) = mpsc::unbounded_channel::<Decision>();
        let mut state = TurnState { turn, decided, permissions: VecDeque::new(), cancel_sent: None, elsewhere: 0 };
        let outcome = loop {
            let cancel_deadline = state.cancel_sent.map(|at| at + self.config.cancel_grace);
            tokio::select! {
                answer = &mut answer => {
                    // What the agent said before it answered is already queued: it goes first.
                    while let Ok(said) = connection.incoming.try_recv() {
                        self.said(connection, &mut state, Some(said), control, events)?;
                    }
                    break answer;
                }
                said = connection.incoming.recv() => self.said(connection, &mut state, said, control, events)?,
                () = connection.terminals.changed() => show_terminals(&connection.terminals, &mut state.turn, events),
                () = control.wake.notified() => {
                    let settings: Vec<OptionSetting> =
                        control.options.lock().expect("the option lock is never poisoned").drain(..).collect();
                    for setting in settings {
                        self.send_setting(connection, setting);
                    }
                }
                Some(answer) = connection.answered_sets.recv() => {
                    connection.take_answer(answer, &self.config.name);
                    if let Some(event) = connection.offered.event() {
                        let _ = events.send(event);
                    }
                }
                Some(Decision { tool_call_id, decision }) = decisions.recv() => {
                    let permissions = &mut state.permissions;
                    let Some(at) = permissions.iter().position(|waiting| waiting.tool_call_id == tool_call_id) else { continue };
                    let waiting = permissions.remove(at).expect("found just above");
                    let option = waiting.choose(&decision);
                    let outcome = match option {
                        Some(option) => json!({"outcome": "selected", "optionId": option.option_id}),
                        None => json!({"outcome": "cancelled"}),
                    };
                    connection.peer.respond(&waiting.id, json!({"outcome": outcome}));
                    let approved = option.is_some_and(|option| option.kind.allows());
                    let _ = events.send(state.turn.permission_decided(&waiting.tool_call_id, approved));
                }
                () = control.cancel.cancelled(), if state.cancel_sent.is_none() => {
                    connection.peer.notify("session/cancel", json!({"sessionId": connection.session_id}));
                    // The protocol asks the client to answer what it still holds as cancelled.
                    for waiting in state.permissions.drain(..) {
                        control.approvals.lock().expect("the approval lock is never poisoned").remove(&waiting.tool_call_id);
                        connection.peer.respond(&waiting.id, json!({"outcome": {"outcome": "cancelled"}}));
                        let _ = events.send(state.turn.permission_decided(&waiting.tool_call_id, false));
                    }
                    state.cancel_sent = Some(Instant::now());
                }
                () = sleep_until(cancel_deadline) => {
                    connection.peer.kill();
                    return Err(Failure::new(
                        format!("the agent `{}` did not stop within {:?} of being asked to", self.name(), self.config.cancel_grace),
                        "runtime_exit",
                    ));
                }
            }
        };
        let TurnState { turn, cancel_sent, elsewhere, .. } = state;
        if elsewhere > 0 {
            tracing::warn!(target: "chatwire::acp", agent = self.name(), "ignored {elsewhere} updates for sessions other than this one");
        }
        let answer = outcome.map_err(|error| self.rpc_failure(error))?;
        let answer: PromptResponse = serde_json::from_value(answer)
            .map_err(|error| self.malformed(connection, format!("its answer to `session/prompt`: {error}")))?;
        // A turn the user stopped is cancelled whatever reason the agent gave.
        let stop = if cancel_sent.is_some() { StopReason::Cancelled } else { answer.stop_reason };
        self.session_cost = turn.session_cost();
        let (finishing, end) = turn.finish(&stop, answer.usage.as_ref());
        for event in finishing {
            let _ = events.send(event);
        }
        Ok(end)
    }

    /// Handles one thing the agent said during a turn.
    fn said(
        &self,
        connection: &mut Connection,
        state: &mut TurnState,
        said: Option<Incoming>,
        control: &RunControl,
        events: &EventSender,
    ) -> Result<(), Failure> {
        match said {
            Some(Incoming::Notification { method, params }) if method == "session/update" => {
                if params.get("sessionId").and_then(Value::as_str) != Some(connection.session_id.as_str()) {
                    state.elsewhere += 1;
                    return Ok(());
                }
                let update = SessionUpdate::parse(params.get("update").unwrap_or(&Value::Null))
                    .map_err(|why| self.malformed(connection, why))?;
                if connection.offered.update(&update) {
                    if let Some(event) = connection.offered.event() {
                        let _ = events.send(event);
                    }
                    return Ok(());
                }
                if let Some(cost) = params["update"]["cost"]["amount"].as_f64() {
                    state.turn.cost(cost);
                }
                let names_a_call = matches!(update, SessionUpdate::ToolCall(_) | SessionUpdate::ToolCallUpdate(_));
                for event in state.turn.update(update) {
                    let _ = events.send(event);
                }
                // A call may show a terminal whose output came before the call named it.
                if names_a_call {
                    show_terminals(&connection.terminals, &mut state.turn, events);
                }
            }
            Some(Incoming::Notification { method, .. }) => {
                let _ = events.send(AgentEvent::Unknown(method));
            }
            Some(Incoming::Request { id, method, params }) => match method.as_str() {
                "session/request_permission" => {
                    match self.ask_permission(&mut state.turn, params, control, events, &state.decided) {
                        Some(waiting) if state.cancel_sent.is_none() => {
                            state.permissions.push_back(WaitingPermission { id, ..waiting })
                        }
                        Some(_) => connection.peer.respond(&id, json!({"outcome": {"outcome": "cancelled"}})),
                        None => connection.peer.respond_error(
                            &id,
                            INVALID_PARAMS,
                            "chatwire could not read this permission request",
                        ),
                    }
                }
                "fs/read_text_file" => self.read_file(&connection.peer, &id, &params),
                "fs/write_text_file" => self.write_file(&connection.peer, &id, &params),
                "terminal/create" | "terminal/output" | "terminal/kill" | "terminal/release" => {
                    // What a released terminal said last stays with the calls that show it.
                    show_terminals(&connection.terminals, &mut state.turn, events);
                    let terminals = &mut connection.terminals;
                    let answer = match method.as_str() {
                        "terminal/create" => terminals.create(&params),
                        "terminal/output" => terminals.output(&params),
                        "terminal/kill" => terminals.kill(&params),
                        _ => terminals.release(&params),
                    };
                    match answer {
                        Ok(answer) => connection.peer.respond(&id, answer),
                        Err(why) => connection.peer.respond_error(&id, INVALID_PARAMS, &why),
                    }
                }
                "terminal/wait_for_exit" => match connection.terminals.wait_for_exit(&params) {
                    Ok(exited) => {
                        let responder = connection.peer.responder();
                        tokio::spawn(async move { responder.respond(&id, exited.await) });
                    }
                    Err(why) => connection.peer.respond_error(&id, INVALID_PARAMS, &why),
                },
                other => {
                    connection.peer.respond_error(&id, METHOD_NOT_FOUND, &format!("chatwire does not offer {other}"))
                }
            },
            Some(Incoming::Malformed(why)) => return Err(self.malformed(connection, why)),
            Some(Incoming::Closed(why)) => return Err(self.exited(&why)),
            None => return Err(self.exited("")),
        }
        Ok(())
    }

    /// Shows a permission request as an approval card and waits for the user's decision in the background.
    fn ask_permission(
        &self,
        turn: &mut Turn,
        params: Value,
        control: &RunControl,
        events: &EventSender,
        decided: &mpsc::UnboundedSender<Decision>,
    ) -> Option<WaitingPermission> {
        let request: PermissionRequest = serde_json::from_value(params).ok()?;
        let tool_call_id = request.tool_call.tool_call_id.clone();
        let (sender, receiver) = oneshot::channel();
        control.approvals.lock().expect("the approval lock is never poisoned").insert(tool_call_id.clone(), sender);
        for event in turn.permission_asked(&request) {
            let _ = events.send(event);
        }
        let decided = decided.clone();
        let id = tool_call_id.clone();
        tokio::spawn(async move {
            if let Ok(decision) = receiver.await {
                let _ = decided.send(Decision { tool_call_id: id, decision });
            }
        });
        Some(WaitingPermission { id: Value::Null, tool_call_id, options: request.options })
    }

    fn read_file(&self, peer: &Peer, id: &Value, params: &Value) {
        let Some(path) = params.get("path").and_then(Value::as_str) else {
            return peer.respond_error(id, INVALID_PARAMS, "fs/read_text_file needs a `path`");
        };
        let resolved = match self.workspace.resolve(path) {
            Ok(resolved) => resolved,
            Err(why) => return peer.respond_error(id, INVALID_PARAMS, &why),
        };
        let content = match std::fs::read_to_string(&resolved) {
            Ok(content) => content,
            Err(error) => return peer.respond_error(id, INTERNAL_ERROR, &format!("reading {path}: {error}")),
        };
        let first = params.get("line").and_then(Value::as_u64).map_or(0, |line| line.saturating_sub(1) as usize);
        let limit = params.get("limit").and_then(Value::as_u64).map_or(usize::MAX, |limit| limit as usize);
        let content = if first == 0 && limit == usize::MAX {
            content
        } else {
            content.split_inclusive('\n').skip(first).take(limit).collect()
        };
        peer.respond(id, json!({"content": content}));
    }

    fn write_file(&self, peer: &Peer, id: &Value, params: &Value) {
        let (Some(path), Some(content)) =
            (params.get("path").and_then(Value::as_str), params.get("content").and_then(Value::as_str))
        else {
            return peer.respond_error(id, INVALID_PARAMS, "fs/write_text_file needs a `path` and a `content`");
        };
        let resolved = match self.workspace.resolve(path) {
            Ok(resolved) => resolved,
            Err(why) => return peer.respond_error(id, INVALID_PARAMS, &why),
        };
        let written =
            resolved.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| std::fs::write(&resolved, content));
        match written {
            Ok(()) => peer.respond(id, Value::Null),
            Err(error) => peer.respond_error(id, INTERNAL_ERROR, &format!("writing {path}: {error}")),
        }
    }
}

/// What one turn's loop keeps between the things the agent says.
struct TurnState {
    turn: Turn,
    decided: mpsc::UnboundedSender<Decision>,
    permissions: VecDeque<WaitingPermission>,
    cancel_sent: Option<Instant>,
    /// Updates for sessions other than this one: counted, never shown.
    elsewhere: u64,
}

/// A permission request waiting for the user.
struct WaitingPermission {
    /// The agent's request id, answered with the choice.
    id: Value,
    tool_call_id: String,
    options: Vec<ApprovalOption>,
}

impl WaitingPermission {
    /// The option of the user's decision: the one they chose, or for a plain Approve or Deny, allowing or rejecting
    /// once where the agent offers it, else always; `None` when the agent offered no such option.
    fn choose(&self, decision: &ApprovalDecision) -> Option<&ApprovalOption> {
        if let Some(chosen) = &decision.option_id {
            return self.options.iter().find(|option| &option.option_id == chosen);
        }
        let preference = match decision.approve {
            true => [ApprovalKind::AllowOnce, ApprovalKind::AllowAlways],
            false => [ApprovalKind::RejectOnce, ApprovalKind::RejectAlways],
        };
        preference.iter().find_map(|kind| self.options.iter().find(|option| &option.kind == kind))
    }
}

struct Decision {
    tool_call_id: String,
    decision: ApprovalDecision,
}

/// Tells the turn what the open terminals hold, so the calls that show one stream it (unchanged output sends nothing).
fn show_terminals(terminals: &Terminals, turn: &mut Turn, events: &EventSender) {
    for id in terminals.ids() {
        let Some(captured) = terminals.captured(id) else { continue };
        let exit = captured.exit.as_ref().and_then(|exit| exit.code).map(i64::from);
        for event in turn.terminal_output(id, &captured.text(), exit) {
            let _ = events.send(event);
        }
    }
}

fn last_words(peer: &Peer) -> String {
    peer.last_stderr_line().map(|line| format!(" (it last said: {line})")).unwrap_or_default()
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

impl RuntimeSession for AcpSession {
    fn open_run(&mut self) -> RuntimeFuture<'_, RunOpening> {
        Box::pin(async move {
            let conversation = |session: &AcpSession| session.conversation.clone().map(ConversationRef::new);
            if let Some(connection) = self.take_connection() {
                self.keep_for_run(connection);
                return RunOpening { conversation: conversation(self), session_reset: false };
            }
            match self.connect().await {
                Ok((connection, reset)) => {
                    if reset {
                        tracing::warn!(target: "chatwire::acp", agent = self.name(), previous = ?self.conversation, now = %connection.session_id, "the agent started a new session");
                    }
                    self.conversation = Some(connection.session_id.clone());
                    self.keep_for_run(connection);
                    RunOpening { conversation: conversation(self), session_reset: reset }
                }
                Err(failure) => {
                    self.start_failure = Some(failure);
                    RunOpening { conversation: conversation(self), session_reset: false }
                }
            }
        })
    }

    fn run<'a>(
        &'a mut self,
        request: RunRequest,
        control: &'a RunControl,
        events: &'a EventSender,
    ) -> RuntimeFuture<'a, RunEnd> {
        Box::pin(async move {
            if let Some(failure) = self.start_failure.take() {
                return RunEnd::Failed { message: failure.message, code: failure.code };
            }
            let Some(mut connection) = self.take_connection() else {
                return RunEnd::Failed { message: self.exited(" before the run began").message, code: "runtime_exit" };
            };
            let outcome = self.drive(&mut connection, request, control, events).await;
            // A stopped or failed run ends with its queue closed; what still waited is dropped, and the queue says so.
            {
                let mut queues = control.queues.lock().expect("the queue lock is never poisoned");
                queues.closed = true;
                if !queues.steering.is_empty() || !queues.follow_up.is_empty() {
                    queues.steering.clear();
                    queues.follow_up.clear();
                    let _ = events.send(queue_event(&queues));
                }
            }
            match outcome {
                Ok(()) => {
                    self.keep(connection);
                    RunEnd::Settled { conversation: self.conversation.clone().map(ConversationRef::new) }
                }
                Err(failure) => {
                    // Otherwise the connection is dropped here, which kills the agent's process group.
                    if failure.agent_sound && connection.peer.is_alive() {
                        self.keep(connection)
                    }
                    RunEnd::Failed { message: failure.message, code: failure.code }
                }
            }
        })
    }

    fn close(&mut self) -> RuntimeFuture<'_, ()> {
        // Dropping the connection kills the agent's process group.
        drop(self.take_connection());
        Box::pin(std::future::ready(()))
    }

    fn set_option<'a>(
        &'a mut self,
        setting: OptionSetting,
        events: &'a EventSender,
    ) -> RuntimeFuture<'a, Result<(), OptionError>> {
        Box::pin(async move {
            let mut connection = match self.take_connection() {
                Some(connection) => connection,
                None => {
                    let (connection, reset) =
                        self.connect().await.map_err(|failure| OptionError::Agent(failure.message))?;
                    // The next run's `start` cannot say it any more: the process it finds is already on the new
                    // session. The log says it here instead.
                    if reset {
                        tracing::warn!(target: "chatwire::acp", agent = self.name(), previous = ?self.conversation, now = %connection.session_id, "the agent started a new session");
                    }
                    self.conversation = Some(connection.session_id.clone());
                    connection
                }
            };
            let outcome = self.set_now(&mut connection, setting).await;
            self.tell_offered(&mut connection, events);
            if connection.peer.is_alive() {
                self.keep(connection);
            }
            outcome
        })
    }
}

impl AcpSession {
    /// Holds the connection in the slot for the run about to start (no idle timer: `run` takes it at once).
    fn keep_for_run(&self, connection: Connection) {
        self.slot.lock().expect("the slot lock is never poisoned").connection = Some(connection);
    }
}

/// Pages of `session/list` read at most: 100 sessions a page (opencode's), so the 1,000 most recent.
const LIST_PAGES: usize = 10;

impl AcpSession {
    /// The agent's own sessions in the workspace, by a process of their own that is stopped after.
    pub(super) async fn list_own(&self) -> Result<Vec<OwnConversation>, RuntimeError> {
        let mut connection = self.start_listing().await?;
        self.listed(&mut connection).await
    }

    /// Replays the agent's own session `id` of the workspace, by a process of its own that is stopped after (the
    /// imported session's first run reopens it with `session/load`, as any session's run after an idle stop).
    pub(super) async fn replay_own(&self, id: &str) -> Result<ReplayedConversation, RuntimeError> {
        let mut connection = self.start_listing().await?;
        let listed = self.listed(&mut connection).await?;
        let Some(found) = listed.into_iter().find(|conversation| conversation.id == id) else {
            return Err(RuntimeError::UnknownConversation(format!(
                "the agent {} has no session {id} in {}",
                self.name(),
                self.workspace.root().display()
            )));
        };
        let load = json!({"sessionId": id, "cwd": self.workspace.root().display().to_string(), "mcpServers": []});
        let mut updates = Vec::new();
        self.call_collecting(&mut connection, "session/load", load, Some((id, &mut updates)))
            .await
            .map_err(|failure| RuntimeError::Agent(failure.message))?;
        let mut replay = Replay::new(self.workspace.root());
        for update in &updates {
            let update = SessionUpdate::parse(update).map_err(|why| {
                RuntimeError::Agent(format!("the agent {} replayed a malformed update: {why}", self.name()))
            })?;
            replay.update(update);
        }
        Ok(ReplayedConversation { conversation: ConversationRef::new(id), title: found.title, turns: replay.finish() })
    }

    /// Starts the agent for listing, refusing one that cannot both list its sessions and load one.
    async fn start_listing(&self) -> Result<Connection, RuntimeError> {
        let connection = self.start().await.map_err(|failure| RuntimeError::Agent(failure.message))?;
        let capabilities = &connection.init.agent_capabilities;
        if capabilities.session_capabilities.list.is_none() || !capabilities.load_session {
            return Err(RuntimeError::Unavailable(format!(
                "the agent {} cannot open its own sessions here: it does not offer both `session/list` and \
                 `session/load`",
                self.name()
            )));
        }
        Ok(connection)
    }

    async fn listed(&self, connection: &mut Connection) -> Result<Vec<OwnConversation>, RuntimeError> {
        let cwd = self.workspace.root().display().to_string();
        let mut conversations = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..LIST_PAGES {
            let mut params = json!({"cwd": cwd});
            if let Some(cursor) = cursor.take() {
                params["cursor"] = Value::String(cursor);
            }
            let page = self
                .call(connection, "session/list", params)
                .await
                .map_err(|failure| RuntimeError::Agent(failure.message))?;
            let page: SessionList = serde_json::from_value(page).map_err(|error| {
                RuntimeError::Agent(format!("the agent {} answered `session/list` wrongly: {error}", self.name()))
            })?;
            conversations.extend(page.sessions.into_iter().map(|session| OwnConversation {
                updated_at: session.updated_at.as_deref().and_then(epoch_ms),
                id: session.session_id,
                title: session.title.filter(|title| !title.trim().is_empty()),
                cwd: session.cwd,
            }));
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        Ok(conversations)
    }
}
