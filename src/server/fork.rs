//! Fork to a new session (DESIGN §11): a new session whose log holds the branch up to a message, with its own copy
//! of the workspace put back as it stood there (or the shared `--workspace`), and its own copy of the runtime's
//! conversation file.

use std::path::Path;
use std::sync::Arc;

use super::chat::{Chat, ChatError, new_id};
use crate::chat_state::ChatSnapshot;
use crate::protocol::*;
use crate::runtime::seam::{ConversationRef, ConversationStart, SessionSetup, UserMessageAt};
use crate::store::RunStatus;

/// Where a fork cuts the branch.
struct ForkPoint {
    /// The messages the new session starts with.
    messages: Vec<ChatMessage>,
    /// The text of the user message forked at, which the new session does not hold.
    draft: Option<String>,
    /// The first user message after what the fork holds, if the branch has one: its checkpoint is the files as they
    /// stood at the fork's point, and the runtime's file is cut just before it.
    next_prompt: Option<(String, UserMessageAt)>,
}

impl Chat {
    /// `POST /api/sessions/{id}/fork`. Forking at a user message holds what came before it and hands the message's
    /// text back; forking at an answer holds the branch down to that answer. Refused while a run is going: its
    /// files and the runtime's conversation are moving.
    pub async fn fork_session(self: &Arc<Self>, session_id: &str, message_id: &str) -> Result<ForkResponse, ChatError> {
        let live = self.live(session_id).await?;
        let _one_at_a_time = live.sending.lock().await;
        if live.active_run_id().is_some() {
            return Err(ChatError::SessionBusy);
        }
        let kept = self.sessions.transcript(&live).await?;
        let snapshot = &kept.snapshot;
        let message = snapshot.any_message(message_id).ok_or_else(|| ChatError::UnknownMessage(message_id.into()))?;
        let point = fork_point(snapshot, message);
        let from = SessionSetup {
            session_id: session_id.to_owned(),
            workspace: self.workspace_of(session_id),
            transcript: ChatSnapshot::default(),
            attached: Default::default(),
            conversation: kept.runtime_files.through(snapshot, Some(&snapshot.tree.leaf_from(message_id))),
            start: match &point.next_prompt {
                Some((_, at)) => ConversationStart::BeforeUserMessage(at.clone()),
                None => ConversationStart::Whole,
            },
        };

        let source =
            self.store.session(session_id).await?.ok_or_else(|| ChatError::UnknownSession(session_id.into()))?;
        let title = if source.title.is_empty() { "Fork".to_owned() } else { format!("{} (fork)", source.title) };
        // The fork goes on with the conversation the source's agent made: on that agent.
        let agent = self.agent_of(&live).await?.name;
        let session = self.create_session(Some(title), Some(agent)).await?;
        let forked = self.fill_fork(&session.session_id, from, point).await;
        match forked {
            Ok((draft, workspace)) => {
                let session = self.store.session(&session.session_id).await?.unwrap_or(session);
                Ok(ForkResponse { session, draft, workspace })
            }
            Err(error) => {
                // Half a fork is no use to anyone: the new session goes, and the error says why.
                if let Err(cleanup) = self.delete(&session.session_id).await {
                    tracing::warn!(session = %session.session_id, "removing a fork that failed: {cleanup}");
                }
                Err(error)
            }
        }
    }

    async fn fill_fork(
        self: &Arc<Self>,
        fork_id: &str,
        from: SessionSetup,
        point: ForkPoint,
    ) -> Result<(Option<String>, ForkedWorkspace), ChatError> {
        let shared = self.config.workspace.is_some();
        let source_id = from.session_id.clone();
        if !shared {
            self.copy_session_files(&source_id, fork_id).await?;
        }
        let workspace = self.workspace_of(fork_id);
        let source = self.live(&source_id).await?;
        let runtime_file = self.runtime_of(&source).await?.fork_conversation(from, &workspace).await?;
        self.log_messages(fork_id, "fork", point.messages, runtime_file).await?;
        let files = match (shared, &point.next_prompt) {
            (true, _) => ForkedWorkspace::Shared,
            (false, Some((prompt_id, _))) if self.has_checkpoint(fork_id, prompt_id).await => {
                ForkedWorkspace::Copied { restored: Some(self.restore_files(fork_id, prompt_id).await?) }
            }
            (false, _) => ForkedWorkspace::Copied { restored: None },
        };
        Ok((point.draft, files))
    }

    /// Copies the source session's workspace and checkpoints to the fork's (the checkpoints keep the messages'
    /// ids, so Restore files works in the fork on the messages it holds).
    async fn copy_session_files(&self, source_id: &str, fork_id: &str) -> Result<(), ChatError> {
        let copies = [
            (self.workspace_of(source_id), self.workspace_of(fork_id)),
            (self.shadow_of(source_id), self.shadow_of(fork_id)),
        ];
        tokio::task::spawn_blocking(move || {
            for (from, to) in &copies {
                if from.exists() {
                    copy_tree(from, to)
                        .map_err(|source| ChatError::Workspace { path: to.display().to_string(), source })?;
                }
            }
            Ok(())
        })
        .await
        .expect("copying files does not panic")
    }

    /// Logs a new session's first messages (a fork's, an imported conversation's) as one settled run (`fork-…`,
    /// `import-…`, under the session's lease): its `message` frames, and a `done` on the last of them naming the
    /// runtime's conversation, which the session's first run reopens.
    pub(super) async fn log_messages(
        &self,
        fork_id: &str,
        kind: &str,
        messages: Vec<ChatMessage>,
        runtime_file: Option<ConversationRef>,
    ) -> Result<(), ChatError> {
        let Some(last) = messages.last().cloned() else { return Ok(()) };
        let live = self.live(fork_id).await?;
        let run_id = new_id(kind);
        let (lease, _) = self.take_lease(&live, &run_id).await?;
        let mut frames: Vec<ChatFrame> =
            messages.into_iter().map(|message| ChatFrame::Message(MessageFrame { seq: None, message })).collect();
        frames.push(ChatFrame::Done(DoneFrame {
            seq: None,
            run_id: run_id.clone(),
            message: last,
            session_id: fork_id.to_owned(),
            session_file: runtime_file.map(ConversationRef::into_string),
            session_reset: None,
        }));
        if let Err(error) = self.sessions.log(&live, Some(&run_id), &lease, frames, Some(RunStatus::Done)).await {
            self.give_up_lease(&live, &run_id).await;
            return Err(error);
        }
        Ok(())
    }
}

fn fork_point(snapshot: &ChatSnapshot, message: &ChatMessage) -> ForkPoint {
    let user_messages = |messages: &[ChatMessage]| messages.iter().filter(|m| m.role == Role::User).count();
    if message.role == Role::User {
        let parent = snapshot.tree.parent(&message.id).cloned().flatten();
        let messages = snapshot.branch_messages(parent.as_deref());
        let at = UserMessageAt { index: user_messages(&messages), text: message.text() };
        return ForkPoint { messages, draft: Some(message.text()), next_prompt: Some((message.id.clone(), at)) };
    }
    let messages = snapshot.branch_messages(Some(&message.id));
    let below = snapshot.branch_messages(Some(&snapshot.tree.leaf_from(&message.id)));
    let next_prompt = below
        .get(messages.len()..)
        .and_then(|after| after.iter().find(|m| m.role == Role::User))
        .map(|prompt| (prompt.id.clone(), UserMessageAt { index: user_messages(&messages), text: prompt.text() }));
    ForkPoint { messages, draft: None, next_prompt }
}

/// Copies a directory tree: files with their permissions, symbolic links as links (never followed, so a link out of
/// the workspace is not copied through).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&source)?, &target)?;
        } else if kind.is_dir() {
            copy_tree(&source, &target)?;
        } else {
            std::fs::copy(&source, &target)?;
        }
    }
    Ok(())
}
