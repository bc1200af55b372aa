//! The server half: command line, HTTP router, web assets. Compiled only with the `ssr` feature.

pub mod assets;
pub mod cli;
mod fingerprint;
pub mod http;

use std::process::ExitCode;

use clap::Parser;
use leptos::config::get_configuration;

use self::assets::SiteAssets;
use self::cli::{Action, Cli, MapArgs, ServeArgs};
use self::http::{AppState, router};

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
}

/// Entry point of the `chatwire` binary.
pub async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().action() {
        Action::Serve(args) => match serve(args).await {
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
    // `None`: only the environment (set by cargo-leptos when it runs us), over compiled-in defaults.
    let mut leptos = get_configuration(None).map_err(|e| StartError::Config(e.to_string()))?.leptos_options;
    let addr = args.addr_or(leptos.site_addr);
    leptos.site_addr = addr;

    let data_dir = args.data_dir();
    std::fs::create_dir_all(&data_dir).map_err(|source| StartError::DataDir { path: data_dir.clone(), source })?;

    let assets = SiteAssets::detect(leptos.site_root.as_ref());
    let state = AppState { leptos, assets: assets.clone(), runtime_name: "agent" };

    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|source| StartError::Bind { addr, source })?;
    let local = listener.local_addr().map_err(|source| StartError::Bind { addr, source })?;
    tracing::info!(data_dir = %data_dir.display(), assets = %assets.describe(), "starting");
    // stdout carries exactly the URL line, so scripts and tests can pick it up.
    println!("chatwire listening on http://{local}/");

    axum::serve(listener, router(state)).with_graceful_shutdown(shutdown_signal()).await.map_err(StartError::Serve)
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
