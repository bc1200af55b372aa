//! The agents a server offers, by name (DESIGN §12): the built-in agent, pi, ACP agents. A session is bound to one
//! of them; the server looks it up here by the session's agent name and never names a runtime itself.

use std::sync::Arc;

use super::seam::Runtime;

/// One agent the server offers.
#[derive(Clone)]
pub struct AgentEntry {
    /// What sessions, the API and the UI call it (`agent`, `pi`, `opencode`); unique.
    pub name: String,
    pub runtime: Arc<dyn Runtime>,
}

/// The agents, in the order the UI lists them, with the one new sessions get.
#[derive(Clone)]
pub struct Agents {
    entries: Vec<AgentEntry>,
    default: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentsError {
    #[error("no agent is configured")]
    Empty,
    #[error("two agents are called `{0}`: give each its own name")]
    Duplicate(String),
    #[error("the default agent `{0}` is not one of the agents ({1})")]
    UnknownDefault(String, String),
}

impl Agents {
    /// `default` names the agent of new sessions; `None` takes the first.
    pub fn new(entries: Vec<AgentEntry>, default: Option<&str>) -> Result<Agents, AgentsError> {
        if entries.is_empty() {
            return Err(AgentsError::Empty);
        }
        for (at, entry) in entries.iter().enumerate() {
            if entries[..at].iter().any(|earlier| earlier.name == entry.name) {
                return Err(AgentsError::Duplicate(entry.name.clone()));
            }
        }
        let default = match default {
            None => 0,
            Some(name) => entries
                .iter()
                .position(|entry| entry.name == name)
                .ok_or_else(|| AgentsError::UnknownDefault(name.to_owned(), names(&entries)))?,
        };
        Ok(Agents { entries, default })
    }

    /// A server of one agent, under the runtime's own name.
    pub fn single(runtime: Arc<dyn Runtime>) -> Agents {
        Agents { entries: vec![AgentEntry { name: runtime.name().to_owned(), runtime }], default: 0 }
    }

    pub fn entries(&self) -> &[AgentEntry] {
        &self.entries
    }

    pub fn default_entry(&self) -> &AgentEntry {
        &self.entries[self.default]
    }

    pub fn get(&self, name: &str) -> Option<&AgentEntry> {
        self.entries.iter().find(|entry| entry.name == name)
    }

    /// The agent a session runs on: the one it names, or the default for a session from before agents had names.
    /// A name this server does not offer (any more) is `None`.
    pub fn of_session(&self, name: Option<&str>) -> Option<&AgentEntry> {
        match name {
            Some(name) => self.get(name),
            None => Some(self.default_entry()),
        }
    }

    /// The names, comma separated, for messages that list them.
    pub fn names(&self) -> String {
        names(&self.entries)
    }
}

fn names(entries: &[AgentEntry]) -> String {
    entries.iter().map(|entry| entry.name.as_str()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::pi::{PiConfig, PiRuntime};

    fn entry(name: &str) -> AgentEntry {
        AgentEntry { name: name.into(), runtime: Arc::new(PiRuntime::new(PiConfig::default())) }
    }

    #[test]
    fn the_default_is_the_named_one_or_the_first() {
        let agents = Agents::new(vec![entry("agent"), entry("opencode")], Some("opencode")).unwrap();
        assert_eq!(agents.default_entry().name, "opencode");
        assert_eq!(agents.of_session(None).unwrap().name, "opencode");
        assert_eq!(agents.of_session(Some("agent")).unwrap().name, "agent");
        assert!(agents.of_session(Some("goose")).is_none());
        assert_eq!(Agents::new(vec![entry("agent"), entry("pi")], None).unwrap().default_entry().name, "agent");
    }

    #[test]
    fn names_are_unique_and_the_default_is_one_of_them() {
        let twice = Agents::new(vec![entry("pi"), entry("pi")], None).err();
        assert_eq!(twice, Some(AgentsError::Duplicate("pi".into())));
        let unknown = Agents::new(vec![entry("agent"), entry("pi")], Some("goose")).err();
        assert_eq!(unknown, Some(AgentsError::UnknownDefault("goose".into(), "agent, pi".into())));
        assert_eq!(Agents::new(Vec::new(), None).err(), Some(AgentsError::Empty));
    }
}
