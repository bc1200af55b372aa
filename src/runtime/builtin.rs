//! The built-in agent as a `Runtime`: per session, the model's view of the conversation and a workspace; per run,
//! the agent of the model the request picked.

use std::sync::Arc;

use super::agent::Conversation;
use super::attached::{AttachedBytes, IMAGES_UNSUPPORTED, Prompt, files_of, images_refused, user_message};
use super::models::ModelCatalog;
use super::provider::{AssistantBlock, ModelMessage};
use super::seam::RunControl;
use super::seam::{
    Availability, Capabilities, ConversationRef, ConversationSource, EventSender, RunEnd, RunOpening, RunRequest,
    Runtime, RuntimeError, RuntimeFuture, RuntimeSession, SessionSetup,
};
use super::tools::Workspace;
use crate::chat_state::ChatSnapshot;
use crate::protocol::{ChatCommand, Role};

pub struct AgentRuntime {
    models: Arc<ModelCatalog>,
}

impl AgentRuntime {
    pub fn new(models: Arc<ModelCatalog>) -> AgentRuntime {
        AgentRuntime { models }
    }
}

impl Runtime for AgentRuntime {
    fn name(&self) -> &str {
        "agent"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            rerun: Availability::Available,
            compact: Availability::Available,
            conversation: ConversationSource::Transcript,
            steering: Availability::Available,
        }
    }

    fn models(&self) -> Option<Vec<String>> {
        Some(self.models.names().into_iter().map(str::to_owned).collect())
    }

    fn open_session(&self, setup: SessionSetup) -> Result<Box<dyn RuntimeSession>, RuntimeError> {
        let workspace = Workspace::new(&setup.workspace)
            .map_err(|source| RuntimeError::Workspace { path: setup.workspace.display().to_string(), source })?;
        let conversation = conversation_from(&setup.transcript, &setup.attached);
        Ok(Box::new(AgentSession { models: self.models.clone(), conversation, workspace }))
    }

    fn fork_conversation<'a>(
        &'a self,
        _from: SessionSetup,
        _workspace: &'a std::path::Path,
    ) -> RuntimeFuture<'a, Result<Option<ConversationRef>, RuntimeError>> {
        // The built-in agent's conversation is the transcript, which the fork's log already holds.
        Box::pin(std::future::ready(Ok(None)))
    }
}

struct AgentSession {
    models: Arc<ModelCatalog>,
    conversation: Conversation,
    workspace: Workspace,
}

impl RuntimeSession for AgentSession {
    fn open_run(&mut self) -> RuntimeFuture<'_, RunOpening> {
        Box::pin(std::future::ready(RunOpening::default()))
    }

    fn run<'a>(
        &'a mut self,
        request: RunRequest,
        control: &'a RunControl,
        events: &'a EventSender,
    ) -> RuntimeFuture<'a, RunEnd> {
        // The server checked the name; a catalog reloaded since then falls back to the default.
        let agent = self
            .models
            .pick(request.model.as_deref())
            .map_or_else(|| self.models.default_entry().agent.clone(), |entry| entry.agent.clone());
        let model =
            format!("the model {}", request.model.clone().unwrap_or_else(|| self.models.default_entry().name.clone()));
        Box::pin(async move {
            if !agent.takes_images()
                && let Some(message) = images_refused(&model, &request.files)
            {
                // The transcript shows the message, so the conversation has it too: a model that sees images, or
                // this one with a note for them, gets it with the next message.
                self.conversation.messages.push(user_message(&request.prompt, &request.files));
                return RunEnd::Failed { message, code: IMAGES_UNSUPPORTED };
            }
            let (conversation, workspace) = (&mut self.conversation, &self.workspace);
            match request.command {
                Some(ChatCommand::Compact) => {
                    agent.compact_on_request(conversation, request.prompt, control, events).await
                }
                None => {
                    let prompt = Prompt { text: request.prompt, files: request.files };
                    agent.run(conversation, workspace, prompt, &request.options, control, events).await
                }
            }
            RunEnd::Settled { conversation: None }
        })
    }

    fn close(&mut self) -> RuntimeFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
}

/// What the model saw, rebuilt from the transcript after a restart (text and attached files; tool calls are
/// summarized away).
fn conversation_from(snapshot: &ChatSnapshot, attached: &AttachedBytes) -> Conversation {
    let mut conversation = Conversation::default();
    for message in &snapshot.messages {
        let mut text = message.text();
        let (files, missing) = files_of(message, attached);
        for note in missing {
            text = if text.is_empty() { note } else { format!("{text}\n\n{note}") };
        }
        if text.is_empty() && files.is_empty() {
            continue;
        }
        conversation.messages.push(match message.role {
            Role::User => user_message(&text, &files),
            Role::Assistant => ModelMessage::Assistant { blocks: vec![AssistantBlock::Text(text)] },
        });
    }
    conversation
}
