//! The server half: command line, HTTP router, web assets. Compiled only with the `ssr` feature.

mod activity;
pub mod assets;
mod attachments;
mod boot_script;
mod branch;
mod caught_panic;
pub mod chat;
mod checkpoint;
pub mod cli;
pub mod config;
pub mod error;
pub mod extract;
mod files;
mod fingerprint;
mod fork;
pub mod http;
mod import;
mod lease;
pub mod listener;
pub(crate) mod purge;
mod relay;
mod run;
mod runtime_files;
pub mod security;
mod send;
mod sessions;
pub mod stream;
#[cfg(test)]
mod tests;
mod wake;

use std::process::ExitCode;

use clap::Parser;

use std::sync::Arc;
use std::time::Duration;

use self::assets::SiteAssets;
use self::chat::{Chat, ChatConfig};
use self::cli::{Action, Cli, MapArgs, ServeArgs};
use self::http::{AppState, router};
use self::security::Security;

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("reading the Leptos configuration: {0}")]
    Config(String),
    #[error("creating the data directory {path}: {source}")]
    DataDir { path: std::path::PathBuf, source: std::io::Error },
    #[error("listening on {addr}: {source}")]
    Bind { addr: std::net::SocketAddr, source: std::io::Error },
    #[error("serving HTTP: {0}")]
    Serve(std::io::Error),
    #[error("refusing to listen on {0} without an access token: --no-auth is only allowed on a loopback address")]
    OpenWithoutAuth(std::net::SocketAddr),
    #[error(transparent)]
    Models(#[from] self::config::ConfigError),
    #[error("opening the session store: {0}")]
    Store(#[from] crate::store::StoreError),
    #[error("{0}")]
    Chat(#[from] self::chat::ChatError),
}

/// Entry point of the `chatwire` binary.
pub async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().action() {
        Action::Serve(args) => match serve(*args).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("chatwire: {error}");
                ExitCode::FAILURE
            }
        },
        Action::Map(args) => map(args),
    }
}

/// `chatwire map`: exit status 1 when any line was bad (the frames are written all the same).
fn map(args: MapArgs) -> ExitCode {
    let mut counter = 0_u64;
    let mut mapper = crate::mapper::EventMapper::new(
        args.session_id,
        Box::new(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0)
        }),
        // Counter ids keep the output of two runs over the same file comparable with diff.
        Box::new(move |kind| {
            counter += 1;
            format!("{kind}-{counter}")
        }),
    );
    let input: Box<dyn std::io::Read> = match &args.file {
        Some(path) => match std::fs::File::open(path) {
            Ok(file) => Box::new(file),
            Err(error) => {
                eprintln!("chatwire map: {}: {error}", path.display());
                return ExitCode::FAILURE;
            }
        },
        None => Box::new(std::io::stdin().lock()),
    };
    match crate::mapper::replay(&mut mapper, input, std::io::stdout().lock(), std::io::stderr().lock()) {
        Ok(report) if report.bad_lines == 0 => ExitCode::SUCCESS,
        Ok(report) => {
            eprintln!("chatwire map: {} of {} lines were not valid agent events", report.bad_lines, report.lines);
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("chatwire map: {error}");
            ExitCode::FAILURE
        }
    }
}

pub async fn serve(args: ServeArgs) -> Result<(), StartError> {
    let args = args.with_older_variables(&|name| std::env::var(name).ok());
    let mut leptos = leptos_options()?;
    let addr = args.addr_or(leptos.site_addr);
    leptos.site_addr = addr;
    if args.no_auth && !addr.ip().is_loopback() {
        return Err(StartError::OpenWithoutAuth(addr));
    }
    let token = (!args.no_auth).then(|| args.token.clone().unwrap_or_else(random_token));

    let data_dir = args.data_dir();
    std::fs::create_dir_all(&data_dir).map_err(|source| StartError::DataDir { path: data_dir.clone(), source })?;
    let store: Arc<dyn crate::store::Store> = match &args.database_url {
        Some(url) => Arc::new(crate::store::PostgresStore::open(url).await?),
        None => Arc::new(crate::store::SqliteStore::open(&data_dir)?),
    };
    let file = self::config::ConfigFile::from_args(&args)?;
    // The config file's MCP servers are the built-in agent's tools (pi and ACP agents use their own configuration).
    let mcp = match self::config::mcp_servers(file.as_ref(), &args)? {
        Some(servers) => {
            servers.start().await;
            Some(Arc::new(servers))
        }
        None => None,
    };
    let env = |name: &str| std::env::var(name).ok();
    let models = Arc::new(self::config::catalog_with(&args, file.as_ref(), mcp.clone(), addr, &env)?);
    let agents = self::config::agents(&args, file.as_ref(), models.clone())?;
    let agent_names = agents.names();
    let config = ChatConfig {
        data_dir: data_dir.clone(),
        workspace: args.workspace.clone(),
        keepalive: Duration::from_secs(args.keepalive_secs.max(1)),
        lease_ttl: args.lease_ttl(),
        checkpoint_file_limit: args.checkpoint_file_limit,
        attachments: args.attachment_limits(),
    };
    let chat = Chat::open(store, agents, models, config).await?;
    let purging = tokio::spawn(purge::forget_old_requests(chat.store.clone(), self::chat::now_ms));

    let mut allowed_hosts: Vec<String> =
        ["localhost", "127.0.0.1", "::1"].into_iter().map(str::to_owned).chain(args.allowed_hosts.clone()).collect();
    if !addr.ip().is_unspecified() {
        allowed_hosts.push(addr.ip().to_string());
    }
    let security = Arc::new(Security { token: token.clone(), allowed_hosts });
    let assets = SiteAssets::detect(leptos.site_root.as_ref());
    let state = AppState { leptos, assets: assets.clone(), chat, security };

    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|source| StartError::Bind { addr, source })?;
    let local = listener.local_addr().map_err(|source| StartError::Bind { addr, source })?;
    let approval = args.approval_for(addr);
    tracing::info!(data_dir = %data_dir.display(), assets = %assets.describe(), ?approval, agents = agent_names, "starting");
    // stdout carries exactly the URL line, so scripts and tests can pick it up.
    match &token {
        Some(token) => println!("chatwire listening on http://{local}/?token={token}"),
        None => println!("chatwire listening on http://{local}/"),
    }
    let streams_end = state.chat.streams_end.clone();
    let chat = state.chat.clone();
    let served = listener::serve(listener, router(state), shutdown_signal(), streams_end).await;
    purging.abort();
    // Runs this server was driving end with it: letting their leases go now has another instance end them at once
    // instead of after a lease time.
    if let Err(error) = chat.store.expire_leases(&chat.instance).await {
        tracing::warn!("letting this server's run leases go failed: {error}");
    }
    // MCP servers run in process groups of their own, which a Ctrl-C on the terminal does not reach.
    if let Some(mcp) = mcp {
        mcp.shutdown().await;
    }
    served.map_err(StartError::Serve)
}

/// Leptos' options: `Leptos.toml`, compiled in, under the `LEPTOS_*` variables cargo-leptos sets when it runs us.
fn leptos_options() -> Result<leptos::prelude::LeptosOptions, StartError> {
    crate::app::options::leptos_options().map_err(|e| StartError::Config(e.to_string()))
}

/// 244 random bits as hex, from the operating system's generator (the randomness behind UUID v4).
fn random_token() -> String {
    format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple())
}

async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
}
