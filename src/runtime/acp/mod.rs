//! Agents over the Agent Client Protocol (DESIGN §12): opencode, Claude Code, Codex, Gemini CLI, goose and the rest,
//! each an outside program spoken to in JSON-RPC on its stdin and stdout, with chatwire as the client. One process per
//! chatwire session, kept warm between runs; its session updates become the agent events every runtime emits.

pub mod offered;
pub mod replay;
mod rpc;
pub mod schema;
mod session;
mod terminal;
pub mod translate;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::seam::{
    Availability, Capabilities, ConversationRef, ConversationSource, OwnConversation, ReplayedConversation, Runtime,
    RuntimeError, RuntimeFuture, RuntimeSession, SessionSetup,
};
use super::tools::Workspace;

/// How one ACP agent is started and watched.
#[derive(Debug, Clone, PartialEq)]
pub struct AcpConfig {
    /// What sessions and the UI call it, e.g. `opencode`.
    pub name: String,
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Variables set on top of chatwire's own environment.
    pub env: BTreeMap<String, String>,
    /// Where the agent runs: the session's workspace, or one directory for every session.
    pub cwd: AgentCwd,
    /// How long starting it, `initialize`, and opening its session may each take.
    pub start_timeout: Duration,
    /// A process idle this long after a run is stopped; the next run starts it again and reopens the session.
    pub idle_stop: Duration,
    /// How long a stopped run may take to end after `session/cancel` before the process is killed.
    pub cancel_grace: Duration,
    /// The longest line the agent may write; a longer one ends the run as malformed (4 MiB: a file read or a tool
    /// output bigger than that is no message a person reads in a chat).
    pub max_line_bytes: usize,
}

/// Where an ACP agent works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentCwd {
    /// The chatwire session's workspace (the default): checkpoints and Restore files see what it changes.
    Workspace,
    /// One directory for every session, e.g. a project the agent already knows.
    Fixed(PathBuf),
}

impl AcpConfig {
    /// An agent started by `command` (its program, then its arguments) under `name`, with the defaults.
    pub fn new(name: impl Into<String>, program: impl Into<PathBuf>, args: Vec<String>) -> AcpConfig {
        AcpConfig {
            name: name.into(),
            program: program.into(),
            args,
            env: BTreeMap::new(),
            cwd: AgentCwd::Workspace,
            start_timeout: Duration::from_secs(60),
            idle_stop: Duration::from_secs(15 * 60),
            cancel_grace: Duration::from_secs(10),
            max_line_bytes: 4 << 20,
        }
    }

    /// The name `--agent-command` gives an agent: its program's file name (`opencode acp` is `opencode`).
    pub fn name_of_command(program: &str) -> String {
        Path::new(program).file_name().map_or_else(|| program.to_owned(), |name| name.to_string_lossy().into_owned())
    }
}

pub struct AcpRuntime {
    config: Arc<AcpConfig>,
}

impl AcpRuntime {
    pub fn new(config: AcpConfig) -> AcpRuntime {
        AcpRuntime { config: Arc::new(config) }
    }

    /// The directory the agent works in for a session whose workspace is `workspace`.
    fn cwd(&self, workspace: &Path) -> PathBuf {
        match &self.config.cwd {
            AgentCwd::Workspace => workspace.to_owned(),
            AgentCwd::Fixed(path) => path.clone(),
        }
    }

    /// Where the agent's own sessions that New chat offers are: the one directory every new session's agent works
    /// in. Without one (each session in a fresh directory of its own) no session of the agent's own CLI can be
    /// there.
    fn own_dir(&self, shared_workspace: Option<&Path>) -> Result<PathBuf, String> {
        match (&self.config.cwd, shared_workspace) {
            (AgentCwd::Fixed(path), _) => Ok(path.clone()),
            (AgentCwd::Workspace, Some(shared)) => Ok(shared.to_owned()),
            (AgentCwd::Workspace, None) => Err(format!(
                "the agent {} works in a new directory for each session, where it has no sessions of its own: start \
                 chatwire with --workspace DIR, or give the agent a `cwd`, to open its sessions of that directory",
                self.config.name
            )),
        }
    }

    /// A session of the agent in `dir`, for listing and replaying.
    fn session_in(&self, dir: &Path) -> Result<session::AcpSession, RuntimeError> {
        let workspace = Workspace::new(dir)
            .map_err(|source| RuntimeError::Workspace { path: dir.display().to_string(), source })?;
        Ok(session::AcpSession::new(self.config.clone(), workspace, None, None))
    }
}

impl Runtime for AcpRuntime {
    fn name(&self) -> &str {
        &self.config.name
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            rerun: Availability::Unavailable(format!(
                "edit and regenerate are not available with the agent {}: ACP's session/fork copies the whole \
                 conversation and cannot go back to before a message",
                self.config.name
            )),
            compact: Availability::Unavailable(format!(
                "/compact is not available with the agent {}: it manages its own context",
                self.config.name
            )),
            conversation: ConversationSource::OwnedByRuntime,
            steering: Availability::Unavailable(format!(
                "{} takes no messages while it works: they wait, and go as its next prompt when its turn ends",
                self.config.name
            )),
        }
    }

    fn own_conversations(&self, shared_workspace: Option<&Path>) -> Availability {
        match self.own_dir(shared_workspace) {
            Ok(_) => Availability::Available,
            Err(why) => Availability::Unavailable(why),
        }
    }

    fn list_conversations<'a>(
        &'a self,
        shared_workspace: Option<&'a Path>,
    ) -> RuntimeFuture<'a, Result<Vec<OwnConversation>, RuntimeError>> {
        Box::pin(async move {
            let dir = self.own_dir(shared_workspace).map_err(RuntimeError::Unavailable)?;
            self.session_in(&dir)?.list_own().await
        })
    }

    fn replay_conversation<'a>(
        &'a self,
        id: &'a str,
        workspace: &'a Path,
    ) -> RuntimeFuture<'a, Result<ReplayedConversation, RuntimeError>> {
        Box::pin(async move { self.session_in(&self.cwd(workspace))?.replay_own(id).await })
    }

    fn open_session(&self, setup: SessionSetup) -> Result<Box<dyn RuntimeSession>, RuntimeError> {
        let root = self.cwd(&setup.workspace);
        let workspace = Workspace::new(&root)
            .map_err(|source| RuntimeError::Workspace { path: root.display().to_string(), source })?;
        let remembered = setup.transcript.agent_options.clone();
        Ok(Box::new(session::AcpSession::new(self.config.clone(), workspace, setup.conversation, remembered)))
    }

    fn fork_conversation<'a>(
        &'a self,
        _from: SessionSetup,
        _workspace: &'a Path,
    ) -> RuntimeFuture<'a, Result<Option<ConversationRef>, RuntimeError>> {
        // Without session/fork the fork starts a new agent session, and its first run says so (`sessionReset`).
        Box::pin(std::future::ready(Ok(None)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_command_is_named_after_its_program() {
        assert_eq!(AcpConfig::name_of_command("opencode"), "opencode");
        assert_eq!(AcpConfig::name_of_command("/home/me/.local/bin/gemini"), "gemini");
    }
}
