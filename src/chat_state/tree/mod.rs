//! The conversation as a tree of messages (DESIGN §11): each message's parent, the children of each message in the
//! order they were made, the child each message shows, and the messages off the shown branch.
//!
//! The shown branch itself lives in `ChatSnapshot::messages`, where every other part of the reducer finds it; the
//! tree only knows its ids, and keeps the messages of the other branches aside ("shelved") until they are shown.

use rustc_hash::FxHashMap;

use crate::protocol::{BranchTree, ChatMessage, Fork, ShelvedMessage};

/// `None` is the session's start: the parent of its first messages.
pub type Parent = Option<String>;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tree {
    parent: FxHashMap<String, Parent>,
    children: FxHashMap<Parent, Vec<String>>,
    /// The child each message shows: the one last shown or made.
    shown: FxHashMap<Parent, String>,
    shelved: FxHashMap<String, ChatMessage>,
}

/// Where a message stands among its siblings, for "‹ 2/3 ›".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Siblings<'a> {
    /// 0-based.
    pub position: usize,
    pub ids: &'a [String],
}

impl Siblings<'_> {
    pub fn previous(&self) -> Option<&str> {
        self.position.checked_sub(1).map(|i| self.ids[i].as_str())
    }

    pub fn next(&self) -> Option<&str> {
        self.ids.get(self.position + 1).map(String::as_str)
    }
}

impl Tree {
    pub fn contains(&self, id: &str) -> bool {
        self.parent.contains_key(id)
    }

    pub fn parent(&self, id: &str) -> Option<&Parent> {
        self.parent.get(id)
    }

    /// A new message under `parent`, shown from there on.
    pub(super) fn add(&mut self, id: &str, parent: Parent) {
        self.parent.insert(id.to_owned(), parent.clone());
        self.children.entry(parent.clone()).or_default().push(id.to_owned());
        self.shown.insert(parent, id.to_owned());
    }

    /// Puts new message `id` between `child` and its parent: `id` takes `child`'s place among its siblings, and
    /// `child` becomes its only child. A steering message delivered while the answer streams goes before it.
    pub(super) fn insert_above(&mut self, id: &str, child: &str) {
        let parent = self.parent.get(child).cloned().flatten();
        if let Some(siblings) = self.children.get_mut(&parent)
            && let Some(slot) = siblings.iter_mut().find(|sibling| *sibling == child)
        {
            *slot = id.to_owned();
        }
        if self.shown.get(&parent).is_some_and(|shown| shown == child) {
            self.shown.insert(parent.clone(), id.to_owned());
        }
        self.parent.insert(id.to_owned(), parent);
        self.parent.insert(child.to_owned(), Some(id.to_owned()));
        self.children.insert(Some(id.to_owned()), vec![child.to_owned()]);
        self.shown.insert(Some(id.to_owned()), child.to_owned());
    }

    /// A message got its final id (a `done` naming it differently from `start`, or a resumed stream's real name).
    pub(super) fn rename(&mut self, old: &str, new: &str) {
        if old == new {
            return;
        }
        let Some(parent) = self.parent.remove(old) else { return };
        if let Some(siblings) = self.children.get_mut(&parent)
            && let Some(slot) = siblings.iter_mut().find(|sibling| *sibling == old)
        {
            *slot = new.to_owned();
        }
        if self.shown.get(&parent).is_some_and(|shown| shown == old) {
            self.shown.insert(parent.clone(), new.to_owned());
        }
        self.parent.insert(new.to_owned(), parent);
        let old_key = Some(old.to_owned());
        let new_key = Some(new.to_owned());
        if let Some(children) = self.children.remove(&old_key) {
            for child in &children {
                self.parent.insert(child.clone(), new_key.clone());
            }
            self.children.insert(new_key.clone(), children);
        }
        if let Some(shown) = self.shown.remove(&old_key) {
            self.shown.insert(new_key, shown);
        }
        if let Some(message) = self.shelved.remove(old) {
            self.shelved.insert(new.to_owned(), message);
        }
    }

    pub fn siblings(&self, id: &str) -> Option<Siblings<'_>> {
        let ids = self.children.get(self.parent.get(id)?)?;
        let position = ids.iter().position(|sibling| sibling == id)?;
        Some(Siblings { position, ids })
    }

    /// The ids from the session's start down to `id`, `id` last; empty for `None`.
    pub fn path_to(&self, id: Option<&str>) -> Vec<String> {
        let mut path = Vec::new();
        let mut at = id.map(str::to_owned);
        while let Some(id) = at {
            // A cycle cannot be built through `add`, `insert_above` and `rename`; the bound keeps a bug from hanging.
            if path.len() > self.parent.len() {
                break;
            }
            at = self.parent.get(&id).cloned().flatten();
            path.push(id);
        }
        path.reverse();
        path
    }

    /// The last message of the branch `id` is on: down from `id` by the child each message shows.
    pub fn leaf_from(&self, id: &str) -> String {
        let mut at = id.to_owned();
        for _ in 0..=self.parent.len() {
            let key = Some(at.clone());
            let next = self.shown.get(&key).or_else(|| self.children.get(&key).and_then(|children| children.last()));
            match next {
                Some(child) => at = child.clone(),
                None => break,
            }
        }
        at
    }

    /// Remembers that each message of `path` shows the next one.
    pub(super) fn show(&mut self, path: &[String]) {
        let mut parent: Parent = None;
        for id in path {
            self.shown.insert(parent, id.clone());
            parent = Some(id.clone());
        }
    }

    pub fn shelved(&self, id: &str) -> Option<&ChatMessage> {
        self.shelved.get(id)
    }

    pub(super) fn shelve(&mut self, message: ChatMessage) {
        self.shelved.insert(message.id.clone(), message);
    }

    pub(super) fn unshelve(&mut self, id: &str) -> Option<ChatMessage> {
        self.shelved.remove(id)
    }

    /// Whether any message has a sibling: only then is there a tree worth sending beside the shown branch.
    pub fn has_branches(&self) -> bool {
        self.children.values().any(|children| children.len() > 1)
    }

    /// What `GET /api/sessions/{id}` sends of the tree beside the shown branch, in an order that rebuilds it.
    pub fn to_wire(&self) -> BranchTree {
        // Parents before children, siblings in the order they were made: walk from the start.
        let mut shelved = Vec::new();
        let mut forks = Vec::new();
        let mut stack: Vec<Parent> = vec![None];
        while let Some(parent) = stack.pop() {
            let Some(children) = self.children.get(&parent) else { continue };
            if children.len() > 1 {
                let shown = self.shown.get(&parent).cloned().unwrap_or_else(|| children[children.len() - 1].clone());
                forks.push(Fork { parent_id: parent.clone(), children: children.clone(), shown });
            }
            for child in children.iter().rev() {
                if let Some(message) = self.shelved.get(child) {
                    shelved.push(ShelvedMessage { parent_id: parent.clone(), message: message.clone() });
                }
                stack.push(Some(child.clone()));
            }
        }
        BranchTree { shelved, forks }
    }

    /// Adds the off-branch messages and the forks of `GET /api/sessions/{id}` to a tree that holds the shown branch.
    pub(super) fn add_wire(&mut self, wire: BranchTree) {
        for ShelvedMessage { parent_id, message } in wire.shelved {
            self.parent.insert(message.id.clone(), parent_id.clone());
            self.children.entry(parent_id.clone()).or_default().push(message.id.clone());
            self.shown.entry(parent_id).or_insert_with(|| message.id.clone());
            self.shelved.insert(message.id.clone(), message);
        }
        for Fork { parent_id, children, shown } in wire.forks {
            self.shown.insert(parent_id.clone(), shown);
            self.children.insert(parent_id, children);
        }
    }
}

#[cfg(test)]
mod tests;
