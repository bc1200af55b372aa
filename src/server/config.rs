//! The models the server offers, from the command line or a TOML file, each built into a provider and its agent.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use super::cli::{ProviderKind, ServeArgs};
use crate::runtime::Runtime;
use crate::runtime::acp::{AcpConfig, AcpRuntime, AgentCwd};
use crate::runtime::agent::{Agent, AgentConfig};
use crate::runtime::builtin::AgentRuntime;
use crate::runtime::mcp::{McpConfigError, McpServerConfig, McpServers, McpSettings};
use crate::runtime::models::{CatalogError, ModelCatalog, ModelEntry};
use crate::runtime::pi::{PiConfig, PiRuntime};
use crate::runtime::price::TokenPrice;
use crate::runtime::provider::Provider;
use crate::runtime::providers::anthropic::AnthropicProvider;
use crate::runtime::providers::openai::OpenAiProvider;
use crate::runtime::providers::{ApiKey, Endpoint, http_client};
use crate::runtime::registry::{AgentEntry, Agents, AgentsError};
use crate::runtime::scripted::{Script, ScriptError, ScriptedProvider};
use crate::runtime::tools::{OptionalTools, SearchBackend, find_python3};

const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com/v1";
const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// The `--config` file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// The name of the model picked when a request names none [default: the first].
    pub default: Option<String>,
    /// [default: the model the flags describe]
    #[serde(default, rename = "model")]
    pub models: Vec<ModelConfig>,
    /// The backend of the `web_search` tool.
    pub search: Option<SearchConfig>,
    /// MCP servers whose tools the built-in agent offers, by name (`[mcp.<name>]`).
    #[serde(default)]
    pub mcp: BTreeMap<String, McpServerConfig>,
    /// Agents that speak the Agent Client Protocol, by name (`[agent.<name>]`).
    #[serde(default, rename = "agent")]
    pub agents: BTreeMap<String, AcpAgentConfig>,
}

/// One `[agent.<name>]` table: an ACP agent.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcpAgentConfig {
    /// The executable, looked up on `PATH`.
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables set on top of chatwire's own environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Where the agent works [default: each session's workspace]; a relative path is taken from the config file's
    /// directory.
    pub cwd: Option<PathBuf>,
    /// How long starting it and opening its session may each take [default: 60].
    pub start_timeout_secs: Option<u64>,
    /// How long its process may stay idle after a run [default: --agent-idle-secs].
    pub idle_secs: Option<u64>,
}

/// The `[search]` table of the file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchConfig {
    /// A SearXNG-compatible JSON search API; `--search-url` wins over it.
    pub url: String,
}

/// One `[[model]]` of the file, or the model the flags describe.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// What the browser lists and sends as `model` [default: the model id, or the provider's name].
    pub name: Option<String>,
    pub provider: ProviderKind,
    /// The model id the provider knows; required for `openai` and `anthropic`.
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub context_window: Option<u64>,
    pub max_tokens: Option<u32>,
    /// The script of a `scripted` model.
    pub script: Option<PathBuf>,
    /// US dollars per million tokens (`input`, `output`, and optionally `cache_read`, `cache_write`) [default: no
    /// price, and no cost shown].
    pub price: Option<TokenPrice>,
    /// Whether the model reads images; a message with images to one that does not ends in an error naming them
    /// [default: true].
    pub images: Option<bool>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading the config file {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("the config file {path} is not valid: {message}")]
    Invalid { path: String, message: String },
    #[error("--model is required with --provider {0} (the model id the provider knows, e.g. {1})")]
    ModelMissing(&'static str, &'static str),
    #[error("the API key variable {0} is not set (or empty); export it, or name another with --api-key-env")]
    KeyMissing(String),
    #[error("the default model {0:?} is not among the configured ones: {1}")]
    UnknownDefault(String, String),
    #[error("the search URL is not usable: {0}")]
    SearchUrl(String),
    #[error(transparent)]
    Script(#[from] ScriptError),
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error(transparent)]
    Mcp(#[from] McpConfigError),
    #[error(transparent)]
    Agents(#[from] AgentsError),
    #[error("--agent-command is empty")]
    EmptyAgentCommand,
    #[error("the agent name {0:?} is not usable: use letters, digits, `-`, `_` and `.`")]
    BadAgentName(String),
}

impl ConfigFile {
    pub fn load(path: &Path) -> Result<ConfigFile, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Read { path: path.display().to_string(), source })?;
        ConfigFile::parse(&text).map_err(|message| ConfigError::Invalid { path: path.display().to_string(), message })
    }

    pub fn parse(text: &str) -> Result<ConfigFile, String> {
        toml::from_str(text).map_err(|error| error.to_string())
    }

    /// The `--config` file, if one is given.
    pub fn from_args(args: &ServeArgs) -> Result<Option<ConfigFile>, ConfigError> {
        args.config.as_deref().map(ConfigFile::load).transpose()
    }
}

/// The agents this server offers: the built-in one over `models`, pi when `--pi-command` or `--default-agent pi`
/// asks for it, the config file's `[agent.NAME]` tables and each `--agent-command`; `--default-agent` names the agent
/// of sessions that name none.
pub fn agents(args: &ServeArgs, file: Option<&ConfigFile>, models: Arc<ModelCatalog>) -> Result<Agents, ConfigError> {
    let builtin: Arc<dyn Runtime> = Arc::new(AgentRuntime::new(models));
    let mut entries = vec![AgentEntry { name: builtin.name().to_owned(), runtime: builtin }];
    let pi: Arc<dyn Runtime> = Arc::new(PiRuntime::new(pi_config(args)));
    if args.pi_command.is_some() || args.default_agent.as_deref() == Some(pi.name()) {
        entries.push(AgentEntry { name: pi.name().to_owned(), runtime: pi });
    }
    for config in acp_agents(args, file)? {
        let runtime: Arc<dyn Runtime> = Arc::new(AcpRuntime::new(config));
        entries.push(AgentEntry { name: runtime.name().to_owned(), runtime });
    }
    Ok(Agents::new(entries, args.default_agent.as_deref())?)
}

/// The ACP agents of the config file, then of `--agent-command`.
fn acp_agents(args: &ServeArgs, file: Option<&ConfigFile>) -> Result<Vec<AcpConfig>, ConfigError> {
    let idle = Duration::from_secs(args.agent_idle_secs.max(1));
    let base = args.config.as_deref().and_then(Path::parent).unwrap_or(Path::new("."));
    let mut configs = Vec::new();
    for (name, table) in file.map(|file| &file.agents).into_iter().flatten() {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')) {
            return Err(ConfigError::BadAgentName(name.clone()));
        }
        let mut config = AcpConfig::new(name.clone(), &table.command, table.args.clone());
        config.env = table.env.clone();
        if let Some(cwd) = &table.cwd {
            config.cwd = AgentCwd::Fixed(base.join(cwd));
        }
        if let Some(secs) = table.start_timeout_secs {
            config.start_timeout = Duration::from_secs(secs.max(1));
        }
        config.idle_stop = table.idle_secs.map_or(idle, |secs| Duration::from_secs(secs.max(1)));
        configs.push(config);
    }
    for command in &args.agent_commands {
        let mut words = command.split_whitespace().map(str::to_owned);
        let program = words.next().ok_or(ConfigError::EmptyAgentCommand)?;
        let mut config = AcpConfig::new(AcpConfig::name_of_command(&program), program, words.collect());
        config.idle_stop = idle;
        configs.push(config);
    }
    Ok(configs)
}

fn pi_config(args: &ServeArgs) -> PiConfig {
    let mut words = args.pi_command.as_deref().unwrap_or("pi").split_whitespace().map(str::to_owned);
    let program = words.next().unwrap_or_else(|| "pi".to_owned()).into();
    let timeout = Duration::from_secs(args.pi_timeout_secs.max(1));
    PiConfig { program, args: words.collect(), timeout, ..PiConfig::default() }
}

/// The MCP servers of the config file, not started yet; `None` when it names none. A relative `cwd` is taken from the
/// config file's directory; a server without one runs in `--workspace` if given, else where chatwire was started.
pub fn mcp_servers(file: Option<&ConfigFile>, args: &ServeArgs) -> Result<Option<McpServers>, ConfigError> {
    let Some(file) = file.filter(|file| !file.mcp.is_empty()) else {
        return Ok(None);
    };
    let config_dir = args.config.as_deref().and_then(Path::parent).map(Path::to_path_buf).unwrap_or_default();
    let default_cwd = match &args.workspace {
        Some(workspace) => workspace.clone(),
        None => std::env::current_dir().unwrap_or_default(),
    };
    let configs = file
        .mcp
        .iter()
        .map(|(name, config)| {
            let cwd = config.cwd.as_ref().map(|cwd| config_dir.join(cwd));
            (name.clone(), McpServerConfig { cwd, ..config.clone() })
        })
        .collect();
    let settings = McpSettings { default_cwd, max_output_bytes: args.tool_limits().max_output_bytes };
    Ok(Some(McpServers::new(configs, &settings)?))
}

/// The model catalog the command line asks for, for a server on `addr` (the default approval policy depends on it);
/// `env` reads environment variables (the API keys).
pub fn catalog(
    args: &ServeArgs,
    addr: SocketAddr,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ModelCatalog, ConfigError> {
    catalog_with(args, ConfigFile::from_args(args)?.as_ref(), None, addr, env)
}

/// The model catalog of the flags and the config `file`, whose agents offer the tools of `mcp` too.
pub fn catalog_with(
    args: &ServeArgs,
    file: Option<&ConfigFile>,
    mcp: Option<Arc<McpServers>>,
    addr: SocketAddr,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ModelCatalog, ConfigError> {
    let search_url = args.search_url.clone().or_else(|| file?.search.as_ref().map(|search| search.url.clone()));
    let (models, default) = match file.filter(|file| !file.models.is_empty()) {
        Some(file) => (file.models.clone(), args.model.clone().or(file.default.clone())),
        None => {
            let flags = ModelConfig {
                name: None,
                provider: args.provider,
                model: args.model.clone(),
                base_url: args.base_url.clone(),
                api_key_env: args.api_key_env.clone(),
                context_window: args.context_window,
                max_tokens: args.max_tokens,
                script: args.script.clone(),
                price: None,
                images: None,
            };
            (vec![flags], None)
        }
    };
    // The built-in agent is offered beside any other, so its tools are looked for whatever the default agent is.
    let optional = optional_tools(search_url.as_deref(), find_python3)?;
    let client = http_client();
    let mut entries = models
        .iter()
        .map(|model| entry(model, args, addr, &optional, &client, env, mcp.clone()))
        .collect::<Result<Vec<ModelEntry>, ConfigError>>()?;
    if let Some(default) = default {
        let at = entries.iter().position(|entry| entry.name == default).ok_or_else(|| {
            let names: Vec<&str> = entries.iter().map(|entry| entry.name.as_str()).collect();
            ConfigError::UnknownDefault(default.clone(), names.join(", "))
        })?;
        let chosen = entries.remove(at);
        entries.insert(0, chosen);
    }
    Ok(ModelCatalog::new(entries)?)
}

/// The optional tools this server offers, checked once at startup and logged: `ipython` when `find_python` finds a
/// python3, `web_search` when a search URL is configured.
fn optional_tools(
    search_url: Option<&str>,
    find_python: impl FnOnce() -> Option<(PathBuf, String)>,
) -> Result<OptionalTools, ConfigError> {
    let web_search = search_url.map(SearchBackend::new).transpose().map_err(ConfigError::SearchUrl)?;
    match &web_search {
        Some(backend) => tracing::info!(url = backend.url(), "web_search tool offered"),
        None => tracing::info!("web_search tool not offered: no --search-url"),
    }
    let python = match find_python() {
        Some((path, version)) => {
            tracing::info!(python = %path.display(), version = %version, "ipython tool offered");
            Some(path)
        }
        None => {
            tracing::info!("ipython tool not offered: no python3 on PATH");
            None
        }
    };
    Ok(OptionalTools { python, web_search })
}

fn entry(
    config: &ModelConfig,
    args: &ServeArgs,
    addr: SocketAddr,
    optional: &OptionalTools,
    client: &reqwest::Client,
    env: &dyn Fn(&str) -> Option<String>,
    mcp: Option<Arc<McpServers>>,
) -> Result<ModelEntry, ConfigError> {
    let context_window = config.context_window.or(args.context_window).unwrap_or(DEFAULT_CONTEXT_WINDOW);
    let (provider, model, base_url): (Arc<dyn Provider>, String, String) = match config.provider {
        ProviderKind::Scripted => {
            let script = match &config.script {
                Some(path) => Script::load(path)?,
                None => Script::demo(),
            };
            let model = config.script.as_ref().map_or("demo".to_owned(), |path| path.display().to_string());
            (Arc::new(ScriptedProvider::new(script)), model, String::new())
        }
        ProviderKind::Openai => {
            let model = config.model.clone().ok_or(ConfigError::ModelMissing("openai", "qwen2.5-coder"))?;
            let base_url = config.base_url.clone().unwrap_or_else(|| OPENAI_BASE_URL.to_owned());
            // Local servers (Ollama, llama.cpp) take no key, so the default variable may be unset.
            let api_key = api_key(config.api_key_env.as_deref(), "OPENAI_API_KEY", false, env)?;
            let endpoint =
                Endpoint { base_url: base_url.clone(), model: model.clone(), api_key, max_tokens: config.max_tokens };
            (Arc::new(OpenAiProvider::new(client.clone(), endpoint)), model, base_url)
        }
        ProviderKind::Anthropic => {
            let model = config.model.clone().ok_or(ConfigError::ModelMissing("anthropic", "claude-sonnet-4-5"))?;
            let base_url = config.base_url.clone().unwrap_or_else(|| ANTHROPIC_BASE_URL.to_owned());
            let api_key = api_key(config.api_key_env.as_deref(), "ANTHROPIC_API_KEY", true, env)?;
            let endpoint =
                Endpoint { base_url: base_url.clone(), model: model.clone(), api_key, max_tokens: config.max_tokens };
            (Arc::new(AnthropicProvider::new(client.clone(), endpoint)), model, base_url)
        }
    };
    let agent_config = AgentConfig {
        max_retries: args.max_retries,
        retry_base_delay: Duration::from_millis(args.retry_base_ms),
        context_window,
        compaction_threshold: args.compaction_threshold.clamp(0.1, 1.0),
        tool_limits: args.tool_limits(),
        approval: args.approval_for(addr),
        optional_tools: optional.clone(),
        price: config.price.clone(),
        takes_images: config.images.unwrap_or(true),
        ..AgentConfig::default()
    };
    let name = config.name.clone().unwrap_or_else(|| match config.provider {
        ProviderKind::Scripted => "scripted".to_owned(),
        ProviderKind::Openai | ProviderKind::Anthropic => model.clone(),
    });
    let provider_name = config.provider.as_str();
    tracing::info!(name = %name, provider = provider_name, model = %model, base_url = %base_url, context_window, "model configured");
    let agent = Agent::new(provider, agent_config);
    let agent = match mcp {
        Some(mcp) => agent.with_mcp(mcp),
        None => agent,
    };
    Ok(ModelEntry { name, provider: provider_name.to_owned(), model, context_window, agent: Arc::new(agent) })
}

/// The key from the variable `named`, else from `default_var`; a named variable must be set, the default one only
/// when `required`.
fn api_key(
    named: Option<&str>,
    default_var: &str,
    required: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<ApiKey>, ConfigError> {
    let variable = named.unwrap_or(default_var);
    match env(variable).map(|key| key.trim().to_owned()).filter(|key| !key.is_empty()) {
        Some(key) => Ok(Some(ApiKey::new(key))),
        None if required || named.is_some() => Err(ConfigError::KeyMissing(variable.to_owned())),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::cli::{Action, Cli};
    use clap::Parser;

    const LOOPBACK: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 3000);

    fn serve_args(flags: &[&str]) -> ServeArgs {
        let Action::Serve(args) = Cli::parse_from(std::iter::once("chatwire").chain(flags.iter().copied())).action()
        else {
            panic!("serve")
        };
        *args
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn ollama_needs_no_key_and_is_named_by_its_model() {
        let args = serve_args(&[
            "--provider",
            "openai",
            "--base-url",
            "http://127.0.0.1:11434/v1",
            "--model",
            "qwen2.5-coder",
        ]);
        let catalog = catalog(&args, LOOPBACK, &no_env).unwrap();
        let entry = catalog.default_entry();
        assert_eq!(
            (entry.name.as_str(), entry.provider.as_str(), entry.context_window),
            ("qwen2.5-coder", "openai", 128_000)
        );
    }

    #[test]
    fn anthropic_needs_its_key_and_a_named_variable_must_be_set() {
        let args = serve_args(&["--provider", "anthropic", "--model", "claude-sonnet-4-5"]);
        let error = catalog(&args, LOOPBACK, &no_env).err().unwrap();
        assert_eq!(error.to_string().split(' ').nth(4), Some("ANTHROPIC_API_KEY"));
        let env = |name: &str| (name == "ANTHROPIC_API_KEY").then(|| "sk-ant-x".to_owned());
        assert!(catalog(&args, LOOPBACK, &env).is_ok());
        let args = serve_args(&["--provider", "openai", "--model", "m", "--api-key-env", "MY_KEY"]);
        assert!(matches!(catalog(&args, LOOPBACK, &no_env), Err(ConfigError::KeyMissing(name)) if name == "MY_KEY"));
        let args = serve_args(&["--provider", "openai"]);
        assert!(matches!(catalog(&args, LOOPBACK, &no_env), Err(ConfigError::ModelMissing("openai", _))));
    }

    #[test]
    fn a_config_file_lists_several_models_and_names_the_default() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chatwire.toml");
        std::fs::write(
            &path,
            r#"
default = "claude"

[[model]]
name = "local"
provider = "openai"
base_url = "http://127.0.0.1:11434/v1"
model = "qwen2.5-coder"
context_window = 32768
images = false

[[model]]
name = "claude"
provider = "anthropic"
model = "claude-sonnet-4-5"
api_key_env = "WORK_ANTHROPIC_KEY"

[[model]]
provider = "scripted"
"#,
        )
        .unwrap();
        let args = serve_args(&["--config", path.to_str().unwrap()]);
        let env = |name: &str| (name == "WORK_ANTHROPIC_KEY").then(|| "k".to_owned());
        let models = catalog(&args, LOOPBACK, &env).unwrap();
        assert_eq!(models.names(), ["claude", "local", "scripted"]);
        assert_eq!(models.pick(Some("local")).unwrap().context_window, 32_768);
        assert!(!models.pick(Some("local")).unwrap().agent.takes_images(), "images = false");
        assert!(models.pick(Some("claude")).unwrap().agent.takes_images(), "images by default");
        assert!(models.pick(Some("gpt")).is_none());
        let args = serve_args(&["--config", path.to_str().unwrap(), "--model", "nope"]);
        assert!(matches!(catalog(&args, LOOPBACK, &env), Err(ConfigError::UnknownDefault(..))));
        assert_eq!(models.default_entry().agent.config().optional_tools.web_search, None, "no [search], no tool");
        std::fs::write(&path, "[[model]]\nprovider = \"openai\"\nmodle = \"x\"\n").unwrap();
        let error = catalog(&serve_args(&["--config", path.to_str().unwrap()]), LOOPBACK, &env).err().unwrap();
        assert!(error.to_string().contains("unknown field `modle`"), "{error}");
    }

    #[test]
    fn the_search_url_comes_from_the_flag_or_the_config_file() {
        let search = |args: &ServeArgs| {
            let catalog = catalog(args, LOOPBACK, &no_env).unwrap();
            catalog.default_entry().agent.config().optional_tools.web_search.as_ref().map(|b| b.url().to_owned())
        };
        assert_eq!(search(&serve_args(&[])), None);
        assert_eq!(
            search(&serve_args(&["--search-url", "http://127.0.0.1:8888/search"])).as_deref(),
            Some("http://127.0.0.1:8888/search")
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chatwire.toml");
        std::fs::write(
            &path,
            "[search]\nurl = \"https://searx.example/search\"\n\n[[model]]\nprovider = \"scripted\"\n",
        )
        .unwrap();
        let file = path.to_str().unwrap();
        assert_eq!(search(&serve_args(&["--config", file])).as_deref(), Some("https://searx.example/search"));
        assert_eq!(
            search(&serve_args(&["--config", file, "--search-url", "http://127.0.0.1:1/s"])).as_deref(),
            Some("http://127.0.0.1:1/s"),
            "the flag wins"
        );
        assert_eq!(
            search(&serve_args(&["--runtime", "pi", "--search-url", "http://127.0.0.1:1/s"])).as_deref(),
            Some("http://127.0.0.1:1/s"),
            "the built-in agent is offered beside pi"
        );
        let error = catalog(&serve_args(&["--search-url", "ftp://x/"]), LOOPBACK, &no_env).err().unwrap();
        assert!(matches!(error, ConfigError::SearchUrl(ref m) if m.contains("not an http(s) URL")), "{error}");
    }

    #[test]
    fn ipython_is_offered_only_with_a_python3() {
        let found = || Some((PathBuf::from("/usr/bin/python3"), "Python 3.11.2".to_owned()));
        let optional = optional_tools(None, found).unwrap();
        assert_eq!(optional, OptionalTools { python: Some(PathBuf::from("/usr/bin/python3")), web_search: None });
        assert_eq!(optional_tools(None, || None).unwrap(), OptionalTools::default());
    }

    #[test]
    fn mcp_servers_come_from_the_config_file_and_the_model_from_the_flags() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chatwire.toml");
        let file = "[mcp.files]\ncommand = \"mcp-files\"\nargs = [\".\"]\ncwd = \"site\"\nenv = { A = \"1\" }\n\n\
                    [mcp.git]\ncommand = \"mcp-git\"\ntool_timeout_secs = 5\n";
        std::fs::write(&path, file).unwrap();
        let args = serve_args(&["--config", path.to_str().unwrap(), "--workspace", "/srv/project"]);
        let loaded = ConfigFile::from_args(&args).unwrap();
        let models = catalog_with(&args, loaded.as_ref(), None, LOOPBACK, &no_env).unwrap();
        assert_eq!(models.names(), ["scripted"], "a file without models keeps the flags' model");
        let files = &loaded.as_ref().unwrap().mcp["files"];
        assert_eq!((files.command.as_str(), files.args.as_slice()), ("mcp-files", [".".to_owned()].as_slice()));
        assert_eq!(files.env["A"], "1");
        assert!(mcp_servers(loaded.as_ref(), &args).unwrap().is_some_and(|servers| !servers.is_empty()));
        assert!(mcp_servers(None, &args).unwrap().is_none());

        std::fs::write(&path, "[mcp.a__b]\ncommand = \"x\"\n").unwrap();
        let loaded = ConfigFile::from_args(&args).unwrap();
        assert!(matches!(mcp_servers(loaded.as_ref(), &args), Err(ConfigError::Mcp(McpConfigError::BadName(_)))));
        std::fs::write(&path, "[mcp.a]\ncommand = \"x\"\nargv = []\n").unwrap();
        let error = ConfigFile::from_args(&args).err().unwrap();
        assert!(error.to_string().contains("unknown field `argv`"), "{error}");
    }
}
