//! The run driver: a run opens with its `start` and prompt, then one task per run feeds the runtime's events
//! through the session's mapper into the session's log, until one terminal frame.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;

use super::branch::RerunPlan;
use super::chat::{Chat, ChatError, new_id, now_ms};
use super::checkpoint::summary_of;
use super::sessions::{ActiveRun, SessionLive};
use crate::chat_state::ChatSnapshot;
use crate::mapper::{EventMapper, RunMeta};
use crate::protocol::*;
use crate::runtime::RuntimeSession;
use crate::runtime::event::AgentEvent;
use crate::runtime::seam::{ConversationRef, ConversationSource, ConversationStart, RunEnd, RunRequest, SessionSetup};
use crate::runtime::seam::{OptionError, OptionSetting, RunControl, RunOptions};
use crate::store::{Lease, RunStart, RunStatus, StoreError};

/// The part of a session only its run touches: the mapper that makes its frames, and the runtime's side of it.
pub struct SessionRuntime {
    mapper: EventMapper,
    runtime: Box<dyn RuntimeSession>,
    /// The session's last `seq` when this runtime last saw its log: a log that grew beyond it (another instance ran
    /// the session meanwhile) means the runtime's picture of the conversation is old, and it is opened again.
    seen_seq: Seq,
}

/// How long a new run waits for the session's previous run to let go of its lease (it is logging its end).
const LEASE_WAIT: Duration = Duration::from_secs(5);

impl SessionRuntime {
    /// Ends what the runtime holds for the session (the session is being deleted).
    pub(super) async fn close(&mut self) {
        self.runtime.close().await;
    }
}

impl Chat {
    /// Opens run `run_id` of the session with the request's prompt and spawns the task that drives it. Waits for
    /// the session's previous run to release the runtime first.
    pub(super) async fn start_run(
        self: &Arc<Self>,
        live: &Arc<SessionLive>,
        request: &ChatRequest,
        files: &[FilePart],
        run_id: String,
    ) -> Result<(), ChatError> {
        let rerun = match &request.rerun {
            Some(rerun) => Some(self.plan_rerun(live, rerun).await?),
            None => None,
        };
        let mut runtime = live.runtime.clone().lock_owned().await;
        let (lease, last_seq) = self.take_lease(live, &run_id).await?;
        // A rerun's runtime starts from the conversation before it, not from the branch on screen.
        if let Some(stale) = runtime.as_mut().filter(|state| state.seen_seq != last_seq || rerun.is_some()) {
            stale.close().await;
            *runtime = None;
        }
        if runtime.is_none() {
            match self.load_runtime(live, rerun.as_ref()).await {
                Ok(loaded) => *runtime = Some(loaded),
                Err(error) => {
                    self.give_up_lease(live, &run_id).await;
                    return Err(error);
                }
            }
        }
        let state = runtime.as_mut().expect("loaded just above");
        let answered_again = rerun.as_ref().and_then(|plan| plan.answered_again.clone());
        // The files go to the model as it opens the run; one that is gone fails the send, before anything is logged.
        let attached = match &answered_again {
            Some(message) => self.attached_files(&message.files().cloned().collect::<Vec<_>>()).await,
            None => self.attached_files(files).await,
        };
        let attached = match attached {
            Ok(attached) => attached,
            Err(error) => {
                self.give_up_lease(live, &run_id).await;
                return Err(error);
            }
        };
        let prompt = answered_again.is_none().then(|| ChatMessage {
            id: new_id("msg"),
            role: Role::User,
            parts: prompt_parts(shown_prompt(request), files),
            created_at: Some(now_ms()),
            changes: None,
            usage: None,
        });
        // Restore finds the checkpoint from the message that started the run; a regeneration has no message of its
        // own, so its checkpoint is the run's.
        let checkpoint = prompt.as_ref().map_or_else(|| run_id.clone(), |prompt| prompt.id.clone());
        let options = RunOptions { mode: request.mode.unwrap_or_default(), plan_action: request.plan_action };
        let opening = state.runtime.open_run().await;
        let meta = RunMeta {
            run_id: Some(run_id.clone()),
            prompt,
            mode: options.effective_mode(),
            session_file: opening.conversation.map(ConversationRef::into_string),
            session_reset: opening.session_reset,
            branch: rerun.map(|plan| plan.branch),
            answers_again: answered_again.is_some(),
        };
        let mapper = &mut state.mapper;
        let make = |transcript: &mut _| mapper.reducing_into(transcript, |mapper| mapper.open_run(meta));
        if let Err(error) = self.sessions.log_reduced(live, &run_id, &lease, |_| None, make).await {
            self.give_up_lease(live, &run_id).await;
            return Err(error);
        }
        let (events, receiver) = mpsc::unbounded_channel();
        let control = RunControl::default();
        live.set_active(ActiveRun {
            run_id: run_id.clone(),
            lease: lease.clone(),
            control: control.clone(),
            events: events.clone(),
        });
        let prompt = answered_again.map_or_else(|| request.message.clone(), |message| message.text());
        let run =
            RunRequest { prompt, files: attached, options, model: request.model.clone(), command: request.command };
        let task = RunTask {
            chat: self.clone(),
            live: live.clone(),
            run_id,
            lease,
            control,
            lost: AtomicBool::new(false),
            checkpoint,
        };
        tokio::spawn(task.run(runtime, run, events, receiver));
        Ok(())
    }

    /// Sets one of the session's agent's options to one of its values: checked against what the agent offered (the
    /// session's latest `agent_options`), handed to the session's run wherever it goes (relayed to the instance that
    /// drives it), else set between runs, starting the agent if it is not running. What the agent then offers is
    /// logged as an `agent_options` frame.
    pub async fn set_agent_option(
        self: &Arc<Self>,
        session_id: &str,
        id: String,
        value: String,
    ) -> Result<(), ChatError> {
        let live = self.live(session_id).await?;
        let offered = self.sessions.read_transcript(&live, |kept| kept.snapshot.agent_options.clone()).await?;
        let agent = self.agent_of(&live).await?.name;
        let Some(offered) = offered else {
            return Err(OptionError::Unsupported(format!(
                "the agent {agent} has offered no options in this session (yet): an agent that has them says so when                  it starts, at the session's first run"
            ))
            .into());
        };
        let Some(option) = offered.option(&id) else {
            let offered = offered.options.iter().map(|option| option.id.clone()).collect();
            return Err(OptionError::UnknownOption { id, offered }.into());
        };
        if !option.offers(&value) {
            let choices = option.choices.iter().map(|choice| choice.value.clone()).collect();
            return Err(OptionError::UnknownValue { id, value, choices }.into());
        }
        if option.current == value {
            return Ok(());
        }
        let control = super::relay::Control::SetOption { config_id: id.clone(), value: value.clone() };
        if self.control(session_id, control).await? {
            return Ok(());
        }
        self.set_option_between_runs(&live, OptionSetting { id, value }).await
    }

    /// Sets an option with no run going: the session is held for the moment it takes, as a branch switch holds it.
    async fn set_option_between_runs(&self, live: &Arc<SessionLive>, setting: OptionSetting) -> Result<(), ChatError> {
        let mut runtime = live.runtime.clone().lock_owned().await;
        let setting_id = new_id("option");
        let (lease, last_seq) = self.take_lease(live, &setting_id).await.map_err(|error| match error {
            ChatError::RunInProgress => ChatError::SessionBusy,
            other => other,
        })?;
        if let Some(stale) = runtime.as_mut().filter(|state| state.seen_seq != last_seq) {
            stale.close().await;
            *runtime = None;
        }
        if runtime.is_none() {
            match self.load_runtime(live, None).await {
                Ok(loaded) => *runtime = Some(loaded),
                Err(error) => {
                    self.give_up_lease(live, &setting_id).await;
                    return Err(error);
                }
            }
        }
        let state = runtime.as_mut().expect("loaded just above");
        let (events, mut receiver) = mpsc::unbounded_channel();
        let outcome = state.runtime.set_option(setting, &events).await;
        drop(events);
        let told: Vec<AgentEvent> = std::iter::from_fn(|| receiver.try_recv().ok()).collect();
        let mapper = &mut state.mapper;
        let make = |transcript: &mut _| mapper.reducing_into(transcript, |mapper| map_all(mapper, told));
        let logged = self.sessions.log_reduced(live, &setting_id, &lease, |_| Some(RunStatus::Done), make).await;
        match logged {
            Ok(true) => {}
            // Nothing changed (the agent kept the value it had): the session is let go all the same.
            Ok(false) => {
                if let Err(error) = self.store.finish_run(&setting_id, live.id(), RunStatus::Done, now_ms()).await {
                    tracing::error!(session = %live.id(), "letting the session go after setting an option failed: {error}");
                }
            }
            Err(error) => {
                self.give_up_lease(live, &setting_id).await;
                return Err(error);
            }
        }
        state.seen_seq = live.last_seq();
        Ok(outcome?)
    }

    /// Takes the session's lease for run `run_id`, waiting (briefly) for a previous run that is logging its end,
    /// and ending first a run whose instance died; returns the lease and the session's last `seq` before the run.
    pub(super) async fn take_lease(&self, live: &SessionLive, run_id: &str) -> Result<(Lease, Seq), ChatError> {
        let deadline = tokio::time::Instant::now() + LEASE_WAIT;
        loop {
            let start =
                self.store.start_run(run_id, live.id(), &self.instance, self.config.lease_ttl, now_ms()).await?;
            match start {
                RunStart::Started { lease, last_seq } => {
                    live.bump(last_seq);
                    return Ok((lease, last_seq));
                }
                RunStart::Busy(holder) if holder.expired && holder.run_id.is_some() => {
                    let stale = holder.run_id.as_deref().expect("checked just above");
                    self.end_stale_run(live.id(), stale).await?;
                }
                RunStart::Busy(_) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                RunStart::Busy(_) => return Err(ChatError::RunInProgress),
            }
        }
    }

    /// Ends a run that was recorded but could not open (its runtime or its first frames failed), so that its lease
    /// does not hold the session until it expires.
    pub(super) async fn give_up_lease(&self, live: &SessionLive, run_id: &str) {
        if let Err(error) = self.store.finish_run(run_id, live.id(), RunStatus::Failed, now_ms()).await {
            tracing::error!(run = %run_id, "recording the end of a run that could not open failed: {error}");
        }
    }

    /// Opens the runtime's side of the session on the shown branch, or on the conversation before a rerun.
    async fn load_runtime(&self, live: &SessionLive, rerun: Option<&RerunPlan>) -> Result<SessionRuntime, ChatError> {
        let workspace = self.workspace_of(live.id());
        let kept = self.sessions.transcript(live).await?;
        warn_of_missing_files(live.id(), &workspace, &kept);
        std::fs::create_dir_all(&workspace)
            .map_err(|source| ChatError::Workspace { path: workspace.display().to_string(), source })?;
        let seen_seq = kept.snapshot.last_seq;
        let runtime = self.runtime_of(live).await?;
        let reads_transcript = runtime.capabilities().conversation == ConversationSource::Transcript;
        let attached = match (reads_transcript, rerun) {
            (false, _) => Default::default(),
            (true, Some(plan)) => self.attached_bytes(&plan.context).await?,
            (true, None) => self.attached_bytes(&kept.snapshot.messages).await?,
        };
        let setup = match rerun {
            Some(plan) => SessionSetup {
                session_id: live.id().to_owned(),
                workspace,
                attached,
                transcript: ChatSnapshot::of_messages(plan.context.clone(), seen_seq),
                conversation: plan.conversation.clone(),
                start: plan.start.clone(),
            },
            None => SessionSetup {
                session_id: live.id().to_owned(),
                workspace,
                attached,
                conversation: kept.runtime_files.shown(&kept.snapshot),
                transcript: kept.snapshot,
                start: ConversationStart::Whole,
            },
        };
        let runtime = runtime.open_session(setup)?;
        let mapper = EventMapper::new(live.id(), Box::new(now_ms), Box::new(new_id));
        Ok(SessionRuntime { mapper, runtime, seen_seq })
    }
}

/// Workspaces live on one instance's disk: a session that ran elsewhere (another instance without a shared data dir)
/// finds none here, and the operator should hear of it. (A runtime that keeps its own conversation files, like pi,
/// says itself when it cannot reopen one.)
fn warn_of_missing_files(session_id: &str, workspace: &std::path::Path, kept: &super::sessions::Kept) {
    if !kept.snapshot.messages.is_empty() && !workspace.exists() {
        tracing::warn!(
            session = %session_id,
            workspace = %workspace.display(),
            "this session has run before, but its workspace is not on this server's disk: its run starts in an empty \
             workspace. Share the data directory between instances, or route each session to one instance \
             (README, \"Running several instances\")"
        );
    }
}

struct RunTask {
    chat: Arc<Chat>,
    live: Arc<SessionLive>,
    run_id: String,
    lease: Lease,
    control: RunControl,
    /// Set once an append was refused because the lease is gone: the run stops, and logs nothing more.
    lost: AtomicBool,
    /// The name of the checkpoint of the workspace taken before the runtime starts (`before/<name>`).
    checkpoint: String,
}

/// How a run's terminal frame ends the run in the store.
fn ending(frame: &ChatFrame) -> Option<RunStatus> {
    if let ChatFrame::Done(_) = frame {
        Some(RunStatus::Done)
    } else {
        frame.is_terminal().then_some(RunStatus::Failed)
    }
}

impl RunTask {
    /// Logs the frames the mapper makes of `work`, reducing each once into the session's transcript; a batch that
    /// ends the run ends it in the same transaction. True when it did.
    async fn record(&self, mapper: &mut EventMapper, work: impl FnOnce(&mut EventMapper) -> Vec<ChatFrame>) -> bool {
        let ends_run = |frames: &[ChatFrame]| frames.last().and_then(ending);
        if self.lost.load(Ordering::Relaxed) {
            return false;
        }
        let make = |transcript: &mut _| mapper.reducing_into(transcript, work);
        match self.chat.sessions.log_reduced(&self.live, &self.run_id, &self.lease, ends_run, make).await {
            Ok(ended) => ended,
            Err(ChatError::Store(StoreError::LeaseLost(_))) => {
                tracing::warn!(run = %self.run_id, "another server took this run's session over; the run stops here");
                self.lost.store(true, Ordering::Relaxed);
                self.control.cancel.cancel();
                false
            }
            Err(error) => {
                tracing::error!(run = %self.run_id, "logging frames failed: {error}");
                false
            }
        }
    }

    async fn run(
        self,
        mut runtime: tokio::sync::OwnedMutexGuard<Option<SessionRuntime>>,
        request: RunRequest,
        events: mpsc::UnboundedSender<AgentEvent>,
        mut receiver: mpsc::UnboundedReceiver<AgentEvent>,
    ) {
        // After `start` is out (the page shows the run at once), before any tool can touch a file.
        self.chat.checkpoint_before(self.live.id(), &self.checkpoint).await;
        {
            let SessionRuntime { mapper, runtime, .. } =
                runtime.as_mut().expect("start_run loads the runtime before spawning the run");
            let drive = runtime.run(request, &self.control, &events);
            tokio::pin!(drive);
            let mut ended = false;
            // The active run keeps a sender for queueing, so the channel never closes by itself: the run is over when
            // the runtime returns, and whatever it sent before that is drained. Events that are already waiting go
            // into one batch, one transaction.
            // The built-in agent's last event settles the run: it and whatever follows wait until the checkpoint
            // after the run is taken, so the run's end is logged only once its files are recorded.
            let mut settling: Vec<AgentEvent> = Vec::new();
            let end = loop {
                let mut events = Vec::new();
                tokio::select! {
                    biased;
                    Some(event) = receiver.recv() => {
                        events.push(event);
                        while let Ok(event) = receiver.try_recv() {
                            events.push(event);
                        }
                    }
                    end = &mut drive => break end,
                }
                if !settling.is_empty() {
                    settling.append(&mut events);
                } else if let Some(at) = events.iter().position(|event| matches!(event, AgentEvent::AgentSettled)) {
                    settling = events.split_off(at);
                }
                ended |= self.record(mapper, |mapper| map_all(mapper, events)).await;
            };
            settling.extend(std::iter::from_fn(|| receiver.try_recv().ok()));
            let events = settling;
            // The note kept beside the checkpoints of what the run changed lets Restore put back only what runs
            // changed. A run that ended early (its runtime sent malformed data) has already logged its end.
            let changed = if ended { None } else { self.chat.checkpoint_after(self.live.id(), &self.checkpoint).await };
            // What the run changed goes on its answer, ahead of the frames that end the run; a run that changed no
            // file says nothing of it.
            let changed = changed
                .filter(|changes| !changes.files.is_empty())
                .map(|changes| summary_of(&self.checkpoint, &changes));
            let run_id = self.run_id.clone();
            let finish = move |mapper: &mut EventMapper| {
                // Last before the run's end: after what the agent said, ahead of its settling (the built-in agent's
                // last event, or pi's end told below).
                let mut events = events;
                let settles_at = events.iter().position(|event| matches!(event, AgentEvent::AgentSettled));
                let settling = events.split_off(settles_at.unwrap_or(events.len()));
                let mut frames = map_all(mapper, events);
                frames.extend(changed.map(|changes| mapper.changes(changes)).unwrap_or_default());
                frames.extend(map_all(mapper, settling));
                match end {
                    // The built-in agent settles the run with its own last event; pi's end is told here.
                    RunEnd::Settled { conversation } if mapper.is_run_open() => {
                        frames.extend(mapper.settle_run(conversation.map(ConversationRef::into_string)));
                    }
                    RunEnd::Failed { message, code } if mapper.is_run_open() => {
                        tracing::warn!(run = %run_id, "{message}");
                        frames.extend(mapper.fail(message, code));
                    }
                    RunEnd::Settled { .. } | RunEnd::Failed { .. } => {}
                }
                if mapper.is_run_open() {
                    frames.extend(mapper.fail("the agent stopped without finishing its run", "runtime_exit"));
                }
                frames
            };
            ended |= self.record(mapper, finish).await;
            // The terminal frame could not be logged: the run still ends, so the session does not look busy (unless
            // another instance took it over, which ends it).
            if !ended
                && !self.lost.load(Ordering::Relaxed)
                && let Err(error) =
                    self.chat.store.finish_run(&self.run_id, self.live.id(), RunStatus::Failed, now_ms()).await
            {
                tracing::error!(run = %self.run_id, "recording the end of the run failed: {error}");
            }
        }
        if let Some(state) = runtime.as_mut() {
            state.seen_seq = self.live.last_seq();
        }
        // Release the runtime before the session looks idle, so the next send finds it free.
        drop(runtime);
        self.live.clear_active(&self.run_id);
    }
}

fn map_all(mapper: &mut EventMapper, events: Vec<AgentEvent>) -> Vec<ChatFrame> {
    let mut frames = Vec::new();
    for event in events {
        mapper.map_into(event, &mut frames);
    }
    frames
}

/// The parts of a logged prompt: its text, then its files; a message of files alone has no empty text part.
fn prompt_parts(text: String, files: &[FilePart]) -> Vec<ChatMessagePart> {
    let text = (!text.is_empty() || files.is_empty()).then(|| ChatMessagePart::text(text));
    text.into_iter().chain(files.iter().cloned().map(ChatMessagePart::File)).collect()
}

/// What the transcript shows for a send: the text, the command as typed, or the plan action when it came without
/// text.
fn shown_prompt(request: &ChatRequest) -> String {
    if let Some(command) = request.command {
        return format!("{} {}", command.as_str(), request.message.trim()).trim_end().to_owned();
    }
    match (request.message.trim().is_empty(), request.plan_action) {
        (true, Some(PlanAction::Execute)) => "Execute the plan.".into(),
        (true, Some(PlanAction::Refine)) => "Refine the plan.".into(),
        (true, None) | (false, _) => request.message.clone(),
    }
}
