//! The `chatwire` binary: the web server with the app and its assets built in.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    chatwire::server::main().await
}
