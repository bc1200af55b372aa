//! The `chatwire` command line: flags with `CHATWIRE_*` environment overrides (DESIGN.md §8).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

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
    Serve(ServeArgs),
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
}

/// What the command line asks for.
pub enum Action {
    Serve(ServeArgs),
    Map(MapArgs),
}

impl Cli {
    /// The action, with the serve flags merged whether given before or after `serve`.
    pub fn action(self) -> Action {
        match self.command {
            Some(Command::Serve(args)) => Action::Serve(ServeArgs {
                addr: args.addr.or(self.serve.addr),
                data_dir: args.data_dir.or(self.serve.data_dir),
            }),
            Some(Command::Map(args)) => Action::Map(args),
            None => Action::Serve(self.serve),
        }
    }
}

impl ServeArgs {
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
    fn map_takes_a_file_or_reads_stdin() {
        let Action::Map(args) = Cli::parse_from(["chatwire", "map", "events.jsonl"]).action() else { panic!("map") };
        assert_eq!(args.file, Some(PathBuf::from("events.jsonl")));
        let Action::Map(args) = Cli::parse_from(["chatwire", "map"]).action() else { panic!("map") };
        assert_eq!(args.file, None);
    }
}
