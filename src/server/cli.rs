//! The `chatwire` command line: flags with `CHATWIRE_*` environment overrides (DESIGN.md §8).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::protocol::AttachmentLimits;
use crate::runtime::agent::ApprovalPolicy;
use crate::runtime::tools::ToolLimits;

#[derive(Debug, Parser)]
#[command(name = "chatwire", version, about = "Self-hosted web chat UI for coding agents")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Flags of `serve`, which is what runs when no subcommand is given.
    #[command(flatten)]
    pub serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the web server (the default).
    Serve(Box<ServeArgs>),
    /// Read agent events (pi RPC JSONL) and print, as NDJSON, the frames a browser viewing that session would receive.
    Map(MapArgs),
}

#[derive(Debug, Clone, Args)]
pub struct MapArgs {
    /// The JSONL file to read [default: standard input].
    pub file: Option<PathBuf>,
    /// The session id the frames name.
    #[arg(long, default_value = "session")]
    pub session_id: String,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on [default: 127.0.0.1:3000, or LEPTOS_SITE_ADDR under `cargo leptos watch`].
    #[arg(long, env = "CHATWIRE_ADDR")]
    pub addr: Option<SocketAddr>,
    /// Where sessions and logs are kept [default: the platform data dir + /chatwire].
    #[arg(long, env = "CHATWIRE_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// A PostgreSQL database for sessions and logs instead of the SQLite file in the data dir, e.g.
    /// `postgres://chatwire@db.internal/chatwire`; several instances may share one (README, "Running several
    /// instances").
    #[arg(long, env = "CHATWIRE_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Seconds a run's lease lasts unless its server renews it: a server that dies has its runs ended by another
    /// within this time (fractions allowed, at least 0.3).
    #[arg(long, env = "CHATWIRE_LEASE_SECS", default_value_t = 15.0)]
    pub lease_secs: f64,
    /// The directory the agent works in, shared by all sessions [default: a fresh directory per session under the data dir].
    #[arg(long, env = "CHATWIRE_WORKSPACE")]
    pub workspace: Option<PathBuf>,
    /// Files larger than this many bytes are left out of the checkpoints of the workspace taken before each run (and
    /// so are never restored); 0 turns checkpoints off.
    #[arg(long, env = "CHATWIRE_CHECKPOINT_FILE_LIMIT", default_value_t = 1 << 20)]
    pub checkpoint_file_limit: u64,
    /// The largest file, in bytes, a message may attach (an image or a text file).
    #[arg(long, env = "CHATWIRE_ATTACHMENT_FILE_LIMIT", default_value_t = AttachmentLimits::default().per_file)]
    pub attachment_file_limit: u64,
    /// The most bytes of attachments one message may carry, all its files together.
    #[arg(long, env = "CHATWIRE_ATTACHMENT_MESSAGE_LIMIT", default_value_t = AttachmentLimits::default().per_message)]
    pub attachment_message_limit: u64,
    /// Access token for the browser (via the printed URL) and API clients (`Authorization: Bearer`) [default: random per start].
    #[arg(long, env = "CHATWIRE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Turn authentication off; refused unless the address is loopback.
    #[arg(long, env = "CHATWIRE_NO_AUTH")]
    pub no_auth: bool,
    /// Another host name the server may be reached by (e.g. behind a reverse proxy); repeatable.
    #[arg(long = "allowed-host", env = "CHATWIRE_ALLOWED_HOSTS", value_delimiter = ',')]
    pub allowed_hosts: Vec<String>,
    /// The agent of sessions that name none, and the one New chat offers first in a browser that has picked none:
    /// `agent` (the built-in one), `pi`, or any other the server offers [default: agent]. `--runtime` (and
    /// CHATWIRE_RUNTIME) is its older name.
    #[arg(long, alias = "runtime", env = "CHATWIRE_DEFAULT_AGENT", value_name = "AGENT")]
    pub default_agent: Option<String>,
    /// How to start pi, which is offered beside the built-in agent when this is given or `--default-agent pi`: the
    /// executable and any arguments before `--mode rpc`, split on spaces [default: pi].
    #[arg(long, env = "CHATWIRE_PI_COMMAND")]
    pub pi_command: Option<String>,
    /// Seconds pi may leave a command unanswered before the run ends as hung; a pi quiet this long is asked for its
    /// state, so a hang shows within twice this time.
    #[arg(long, env = "CHATWIRE_PI_TIMEOUT_SECS", default_value_t = 60)]
    pub pi_timeout_secs: u64,
    /// An agent that speaks the Agent Client Protocol, offered beside the built-in one: its program and arguments,
    /// split on spaces (e.g. "opencode acp"), named after its program; repeatable. The config file's `[agent.NAME]`
    /// tables say more (environment, working directory).
    #[arg(long = "agent-command", env = "CHATWIRE_AGENT_COMMAND", value_name = "COMMAND")]
    pub agent_commands: Vec<String>,
    /// Seconds an ACP agent's process may stay idle after a run before it is stopped (the next run starts it again).
    #[arg(long, env = "CHATWIRE_AGENT_IDLE_SECS", default_value_t = 900)]
    pub agent_idle_secs: u64,
    /// The model provider of the built-in agent.
    #[arg(long, env = "CHATWIRE_PROVIDER", value_enum, default_value_t = ProviderKind::Scripted)]
    pub provider: ProviderKind,
    /// Script the `scripted` provider plays [default: the bundled demo].
    #[arg(long, env = "CHATWIRE_SCRIPT")]
    pub script: Option<PathBuf>,
    /// The model id the provider knows (e.g. qwen2.5-coder, gpt-4.1-mini, claude-sonnet-4-5); with --config, the
    /// name of the model picked by default.
    #[arg(long, env = "CHATWIRE_MODEL")]
    pub model: Option<String>,
    /// The provider's API base URL [default: https://api.openai.com/v1 or https://api.anthropic.com/v1].
    #[arg(long, env = "CHATWIRE_BASE_URL")]
    pub base_url: Option<String>,
    /// The name of the environment variable holding the API key [default: OPENAI_API_KEY (optional) or
    /// ANTHROPIC_API_KEY]. The key itself is never a flag, so it stays out of process lists and shell history.
    #[arg(long, env = "CHATWIRE_API_KEY_ENV")]
    pub api_key_env: Option<String>,
    /// The model's context window in tokens [default: 128000].
    #[arg(long, env = "CHATWIRE_CONTEXT_WINDOW")]
    pub context_window: Option<u64>,
    /// Most tokens in one answer [default: the server's for openai, 8192 for anthropic].
    #[arg(long, env = "CHATWIRE_MAX_TOKENS")]
    pub max_tokens: Option<u32>,
    /// A TOML file that configures several models, which the browser can pick among, and MCP servers whose tools the
    /// agent offers (see the README).
    #[arg(long, env = "CHATWIRE_CONFIG")]
    pub config: Option<PathBuf>,
    /// Retries of a model call that failed with 408, 409, 429, 5xx or a network error.
    #[arg(long, env = "CHATWIRE_MAX_RETRIES", default_value_t = 3)]
    pub max_retries: u32,
    /// Milliseconds before the first retry; each further retry waits twice as long (Retry-After wins).
    #[arg(long, env = "CHATWIRE_RETRY_BASE_MS", default_value_t = 2000)]
    pub retry_base_ms: u64,
    /// Compact the conversation when it passes this fraction of the context window.
    #[arg(long, env = "CHATWIRE_COMPACTION_THRESHOLD", default_value_t = 0.8)]
    pub compaction_threshold: f64,
    /// Seconds of quiet after which a stream gets a keepalive.
    #[arg(long, env = "CHATWIRE_KEEPALIVE_SECS", default_value_t = 15)]
    pub keepalive_secs: u64,
    /// How long a bash call may run when it names no timeout of its own.
    #[arg(long, env = "CHATWIRE_BASH_TIMEOUT_SECS", default_value_t = 120)]
    pub bash_timeout_secs: u64,
    /// Most bytes of command output a bash result keeps (the rest goes to a file in the workspace).
    #[arg(long, env = "CHATWIRE_MAX_TOOL_OUTPUT_BYTES", default_value_t = 50 * 1024)]
    pub max_tool_output_bytes: usize,
    /// Most lines one read call returns.
    #[arg(long, env = "CHATWIRE_MAX_READ_LINES", default_value_t = 2000)]
    pub max_read_lines: usize,
    /// A SearXNG-compatible search API (`GET <url>?q=…&format=json`) for the agent's `web_search` tool, e.g.
    /// http://127.0.0.1:8888/search; without it (or `[search] url` in --config) the tool is not offered.
    #[arg(long, env = "CHATWIRE_SEARCH_URL")]
    pub search_url: Option<String>,
    /// Which tool calls wait for the user's approval in the browser [default: never on a loopback address, writes
    /// otherwise].
    #[arg(long, env = "CHATWIRE_APPROVE", value_enum)]
    pub approve: Option<Approve>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Approve {
    /// Every tool call runs at once.
    Never,
    /// Commands, code and file changes (bash, ipython, write, edit) and MCP tools not marked read-only wait for approval.
    Writes,
    /// Every workspace tool call waits, reading ones too (`all` is accepted as an alias).
    #[value(alias = "all")]
    Always,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// Plays model turns from a script file; offline, no API key.
    Scripted,
    /// The Chat Completions API: OpenAI, OpenRouter, Ollama, llama.cpp, vLLM, LM Studio.
    Openai,
    /// The Anthropic Messages API.
    Anthropic,
}

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Scripted => "scripted",
            ProviderKind::Openai => "openai",
            ProviderKind::Anthropic => "anthropic",
        }
    }
}

/// What the command line asks for.
pub enum Action {
    Serve(Box<ServeArgs>),
    Map(MapArgs),
}

impl Cli {
    /// The action, with the serve flags merged whether given before or after `serve`.
    pub fn action(self) -> Action {
        match self.command {
            Some(Command::Serve(args)) => Action::Serve(Box::new(args.or(self.serve))),
            Some(Command::Map(args)) => Action::Map(args),
            None => Action::Serve(Box::new(self.serve)),
        }
    }
}

impl ServeArgs {
    /// Flags given after `serve`, completed by those given before it.
    fn or(self, before: ServeArgs) -> ServeArgs {
        let mut allowed_hosts = self.allowed_hosts;
        allowed_hosts.extend(before.allowed_hosts);
        ServeArgs {
            addr: self.addr.or(before.addr),
            data_dir: self.data_dir.or(before.data_dir),
            database_url: self.database_url.or(before.database_url),
            lease_secs: self.lease_secs,
            workspace: self.workspace.or(before.workspace),
            checkpoint_file_limit: self.checkpoint_file_limit,
            attachment_file_limit: self.attachment_file_limit,
            attachment_message_limit: self.attachment_message_limit,
            token: self.token.or(before.token),
            no_auth: self.no_auth || before.no_auth,
            allowed_hosts,
            default_agent: self.default_agent.or(before.default_agent),
            pi_command: self.pi_command.or(before.pi_command),
            pi_timeout_secs: self.pi_timeout_secs,
            agent_commands: if self.agent_commands.is_empty() { before.agent_commands } else { self.agent_commands },
            agent_idle_secs: self.agent_idle_secs,
            provider: self.provider,
            script: self.script.or(before.script),
            model: self.model.or(before.model),
            base_url: self.base_url.or(before.base_url),
            api_key_env: self.api_key_env.or(before.api_key_env),
            context_window: self.context_window.or(before.context_window),
            max_tokens: self.max_tokens.or(before.max_tokens),
            config: self.config.or(before.config),
            max_retries: self.max_retries,
            retry_base_ms: self.retry_base_ms,
            compaction_threshold: self.compaction_threshold,
            keepalive_secs: self.keepalive_secs,
            approve: self.approve.or(before.approve),
            bash_timeout_secs: self.bash_timeout_secs,
            max_tool_output_bytes: self.max_tool_output_bytes,
            max_read_lines: self.max_read_lines,
            search_url: self.search_url.or(before.search_url),
        }
    }

    /// The flags whose older variable is read when neither the flag nor its own variable is given: `CHATWIRE_RUNTIME`
    /// for `--default-agent`, so a deployment configured before agents had names starts as it did.
    pub fn with_older_variables(self, env: &dyn Fn(&str) -> Option<String>) -> ServeArgs {
        ServeArgs { default_agent: self.default_agent.or_else(|| env("CHATWIRE_RUNTIME")), ..self }
    }

    /// What a message may attach (`--attachment-file-limit`, `--attachment-message-limit`).
    pub fn attachment_limits(&self) -> AttachmentLimits {
        AttachmentLimits {
            per_file: self.attachment_file_limit,
            per_message: self.attachment_message_limit,
            ..AttachmentLimits::default()
        }
    }

    /// How long a run's lease lasts (`--lease-secs`, never under 0.3 s).
    pub fn lease_ttl(&self) -> std::time::Duration {
        let secs = if self.lease_secs.is_finite() { self.lease_secs.max(0.3) } else { 15.0 };
        std::time::Duration::from_secs_f64(secs)
    }

    /// The approval policy: as given, else none on a loopback address (the person at the keyboard started the
    /// agent) and writes otherwise (someone on the network could be driving it).
    pub fn approval_for(&self, addr: SocketAddr) -> ApprovalPolicy {
        match self.approve {
            Some(Approve::Never) => ApprovalPolicy::Never,
            Some(Approve::Writes) => ApprovalPolicy::Writes,
            Some(Approve::Always) => ApprovalPolicy::Always,
            None if addr.ip().is_loopback() => ApprovalPolicy::Never,
            None => ApprovalPolicy::Writes,
        }
    }

    pub fn tool_limits(&self) -> ToolLimits {
        ToolLimits {
            bash_timeout: std::time::Duration::from_secs(self.bash_timeout_secs.max(1)),
            max_output_bytes: self.max_tool_output_bytes.max(1024),
            max_read_lines: self.max_read_lines.max(1),
        }
    }

    pub fn addr_or(&self, leptos_site_addr: SocketAddr) -> SocketAddr {
        self.addr.unwrap_or(leptos_site_addr)
    }

    pub fn data_dir(&self) -> PathBuf {
        self.data_dir.clone().unwrap_or_else(|| dirs::data_dir().unwrap_or_else(|| PathBuf::from(".")).join("chatwire"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approvals_default_to_none_on_loopback_and_writes_elsewhere() {
        let args = |extra: &[&str]| match Cli::parse_from([&["chatwire", "serve"], extra].concat()).action() {
            Action::Serve(args) => args,
            Action::Map(_) => panic!("expected serve"),
        };
        let loopback: SocketAddr = "127.0.0.1:3000".parse().unwrap();
        let public: SocketAddr = "0.0.0.0:3000".parse().unwrap();
        assert_eq!(args(&[]).approval_for(loopback), ApprovalPolicy::Never);
        assert_eq!(args(&[]).approval_for(public), ApprovalPolicy::Writes);
        assert_eq!(args(&["--approve", "always"]).approval_for(loopback), ApprovalPolicy::Always);
        assert_eq!(args(&["--approve", "all"]).approval_for(loopback), ApprovalPolicy::Always, "the older name");
        assert_eq!(args(&["--approve", "never"]).approval_for(public), ApprovalPolicy::Never);
    }

    #[test]
    fn serve_flags_work_with_and_without_the_subcommand() {
        let with = Cli::parse_from(["chatwire", "serve", "--addr", "127.0.0.1:0", "--data-dir", "/tmp/x"]).action();
        let without = Cli::parse_from(["chatwire", "--addr", "127.0.0.1:0", "--data-dir", "/tmp/x"]).action();
        for action in [with, without] {
            let Action::Serve(args) = action else { panic!("expected serve") };
            assert_eq!(args.addr, Some("127.0.0.1:0".parse().unwrap()));
            assert_eq!(args.data_dir(), PathBuf::from("/tmp/x"));
        }
    }

    #[test]
    fn the_default_agent_keeps_its_older_flag_and_variable() {
        let serve = |flags: &[&str]| match Cli::parse_from([&["chatwire"], flags].concat()).action() {
            Action::Serve(args) => args,
            Action::Map(_) => panic!("expected serve"),
        };
        let older = |name: &str| (name == "CHATWIRE_RUNTIME").then(|| "pi".to_owned());
        assert_eq!(serve(&["--default-agent", "pi"]).default_agent.as_deref(), Some("pi"));
        assert_eq!(serve(&["--runtime", "pi"]).default_agent.as_deref(), Some("pi"), "the older flag");
        assert_eq!(serve(&["serve", "--runtime", "pi"]).default_agent.as_deref(), Some("pi"));
        assert_eq!(serve(&[]).with_older_variables(&older).default_agent.as_deref(), Some("pi"), "the older variable");
        let flagged = serve(&["--default-agent", "agent"]).with_older_variables(&older);
        assert_eq!(flagged.default_agent.as_deref(), Some("agent"), "the flag wins over the older variable");
        assert_eq!(serve(&[]).with_older_variables(&|_| None).default_agent, None);
    }

    #[test]
    fn map_takes_a_file_or_reads_stdin() {
        let Action::Map(args) = Cli::parse_from(["chatwire", "map", "events.jsonl"]).action() else { panic!("map") };
        assert_eq!(args.file, Some(PathBuf::from("events.jsonl")));
        let Action::Map(args) = Cli::parse_from(["chatwire", "map"]).action() else { panic!("map") };
        assert_eq!(args.file, None);
    }
}
