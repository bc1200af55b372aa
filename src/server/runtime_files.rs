//! Which of the runtime's own conversations (pi's session files, an ACP agent's sessions) holds each branch of a
//! session: a run's `done` names the conversation its branch ended in, so a send after a branch switch, and an edit of
//! a message on another branch, reopen the conversation of that branch rather than the one the log named last.

use rustc_hash::FxHashMap;

use crate::chat_state::ChatSnapshot;
use crate::protocol::*;
use crate::runtime::seam::ConversationRef;

#[derive(Debug, Clone, Default)]
pub(super) struct RuntimeFiles {
    /// The file the log named last (a `start` or `done` frame's `sessionFile`).
    pub last: Option<String>,
    /// The file each `done` named, by the last message of the branch it ended.
    by_leaf: FxHashMap<String, String>,
}

impl RuntimeFiles {
    /// Notes the file `frame` names; `snapshot` has `frame` applied already, so its last message ends the branch
    /// the run worked on.
    pub fn note(&mut self, frame: &ChatFrame, snapshot: &ChatSnapshot) {
        if let ChatFrame::Start(StartFrame { session_file: Some(file), .. }) = frame {
            self.last = Some(file.clone());
        }
        if let ChatFrame::Done(DoneFrame { session_file: Some(file), .. }) = frame {
            if let Some(leaf) = snapshot.messages.last() {
                self.by_leaf.insert(leaf.id.clone(), file.clone());
            }
            self.last = Some(file.clone());
        }
    }

    /// The file holding the branch down to `leaf`: the one the last run on that branch ended in. A session without
    /// branches keeps the file the log named last (also what a log from before branches says).
    pub fn through(&self, snapshot: &ChatSnapshot, leaf: Option<&str>) -> Option<ConversationRef> {
        let on_path = snapshot.tree.path_to(leaf).iter().rev().find_map(|id| self.by_leaf.get(id)).cloned();
        let file = match on_path {
            Some(file) => Some(file),
            None if !snapshot.tree.has_branches() => self.last.clone(),
            None => None,
        };
        file.map(ConversationRef::new)
    }

    /// The file of the branch on screen.
    pub fn shown(&self, snapshot: &ChatSnapshot) -> Option<ConversationRef> {
        self.through(snapshot, snapshot.messages.last().map(|message| message.id.as_str()))
    }
}
