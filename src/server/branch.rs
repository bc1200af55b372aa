//! Branches (DESIGN §11): where an edit or a regeneration attaches and what its runtime is given, and moving the
//! transcript between sibling branches with a logged `branch` frame.

use std::sync::Arc;

use super::chat::{Chat, ChatError, new_id};
use super::sessions::SessionLive;
use crate::protocol::*;
use crate::runtime::seam::{ConversationRef, ConversationStart, UserMessageAt};
use crate::store::RunStatus;

/// What an edit or a regeneration runs on.
pub(super) struct RerunPlan {
    /// Where the run's branch attaches, for its `start`.
    pub branch: BranchPoint,
    /// The conversation before the run, which the runtime is opened with instead of the shown branch.
    pub context: Vec<ChatMessage>,
    /// For a regeneration, the message answered again: the run's prompt (its text and files), not logged a second
    /// time.
    pub answered_again: Option<ChatMessage>,
    /// The runtime's file of the branch the message is on, and the message's place in it: a runtime that keeps
    /// its own conversation (pi) goes back to just before that message.
    pub conversation: Option<ConversationRef>,
    pub start: ConversationStart,
}

impl Chat {
    pub(super) async fn plan_rerun(&self, live: &SessionLive, rerun: &Rerun) -> Result<RerunPlan, ChatError> {
        if let Some(why) = self.runtime_of(live).await?.capabilities().rerun.reason() {
            return Err(ChatError::CannotBranch(why.to_owned()));
        }
        let kept = self.sessions.transcript(live).await?;
        let snapshot = &kept.snapshot;
        let id = rerun.message_id.as_str();
        let message = snapshot.any_message(id).ok_or_else(|| ChatError::UnknownMessage(id.to_owned()))?;
        if message.role != Role::User {
            return Err(ChatError::NotAUserMessage(id.to_owned()));
        }
        let parent = snapshot.tree.parent(id).cloned().flatten();
        let context = snapshot.branch_messages(parent.as_deref());
        let at = UserMessageAt {
            index: context.iter().filter(|earlier| earlier.role == Role::User).count(),
            text: message.text(),
        };
        let conversation = kept.runtime_files.through(snapshot, Some(&snapshot.tree.leaf_from(id)));
        let start = ConversationStart::BeforeUserMessage(at);
        Ok(match rerun.kind {
            RerunKind::Edit => RerunPlan {
                branch: BranchPoint { parent_id: parent },
                context,
                answered_again: None,
                conversation,
                start,
            },
            RerunKind::Regenerate => RerunPlan {
                branch: BranchPoint { parent_id: Some(id.to_owned()) },
                context,
                answered_again: Some(message.clone()),
                conversation,
                start,
            },
        })
    }

    /// `POST /api/sessions/{id}/branch`: shows the branch through `message_id`, down to the message that branch
    /// last showed, by logging a `branch` frame naming that last message; refused while a run is going.
    pub async fn show_branch(self: &Arc<Self>, session_id: &str, message_id: &str) -> Result<BranchFrame, ChatError> {
        let live = self.live(session_id).await?;
        let _one_at_a_time = live.sending.lock().await;
        if live.active_run_id().is_some() {
            return Err(ChatError::SessionBusy);
        }
        if !self.sessions.transcript(&live).await?.snapshot.tree.contains(message_id) {
            return Err(ChatError::UnknownMessage(message_id.to_owned()));
        }
        // A switch is a run of one frame: its lease keeps it from landing in the middle of another instance's run.
        let switch_id = new_id("branch");
        let (lease, _) = self.take_lease(&live, &switch_id).await.map_err(|error| match error {
            ChatError::RunInProgress => ChatError::SessionBusy,
            other => other,
        })?;
        let leaf = self.sessions.transcript(&live).await?.snapshot.tree.leaf_from(message_id);
        let frame = ChatFrame::Branch(BranchFrame { seq: None, message_id: leaf.clone() });
        match self.sessions.log(&live, Some(&switch_id), &lease, vec![frame], Some(RunStatus::Done)).await {
            Ok(seq) => Ok(BranchFrame { seq, message_id: leaf }),
            Err(error) => {
                self.give_up_lease(&live, &switch_id).await;
                Err(error)
            }
        }
    }
}
