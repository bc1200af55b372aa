//! The real `chatwire` binary, started on a loopback port with its own data dir, and a streaming HTTP client for it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use chatwire::ndjson::{LineEvent, LineSplitter};
use futures_util::StreamExt;
use serde_json::Value;

pub const TOKEN: &str = "test-token-0123456789";

pub struct Server {
    child: Child,
    pub base: String,
    pub data_dir: PathBuf,
    pub http: reqwest::Client,
}

impl Server {
    /// Starts the server on `data_dir` with a script file and extra flags; waits for its URL line.
    pub fn start(data_dir: &Path, script: &Path, extra: &[&str]) -> Server {
        Server::start_with_env(data_dir, script, extra, &[])
    }

    /// Like `start`, with extra environment variables for the server process.
    pub fn start_with_env(data_dir: &Path, script: &Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_chatwire"))
            .envs(env.iter().copied())
            .args(["serve", "--addr", "127.0.0.1:0", "--token", TOKEN])
            .arg("--data-dir")
            .arg(data_dir)
            .arg("--script")
            .arg(script)
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the chatwire binary starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).expect("the server prints its URL");
        let url =
            line.split_whitespace().find(|w| w.starts_with("http://")).unwrap_or_else(|| panic!("no URL in {line:?}"));
        let base = url.split("/?").next().unwrap().trim_end_matches('/').to_owned();
        Server { child, base, data_dir: data_dir.to_owned(), http: reqwest::Client::new() }
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM (what `docker stop` and systemd send) and waits up to `within` for the process to exit.
    pub fn terminate(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        // SAFETY: kill(2) on our own child's pid has no memory effects.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = std::time::Instant::now() + within;
        while std::time::Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("the child can be waited for") {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// The most memory the server process has held so far (VmHWM), in KiB.
    pub fn peak_memory_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).expect("/proc/<pid>/status");
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("a VmHWM line");
        line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("a number of KiB")
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn post(&self, path: &str, body: &Value) -> reqwest::RequestBuilder {
        self.http.post(self.url(path)).bearer_auth(TOKEN).json(body)
    }

    pub fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.http.get(self.url(path)).bearer_auth(TOKEN)
    }

    pub async fn new_session(&self) -> String {
        let created: Value =
            self.post("/api/sessions", &serde_json::json!({})).send().await.unwrap().json().await.unwrap();
        created["session"]["sessionId"].as_str().unwrap().to_owned()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Reads NDJSON lines off a streaming response, one at a time.
pub struct Lines {
    stream: std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    splitter: LineSplitter,
    ready: std::collections::VecDeque<String>,
    ended: bool,
}

impl Lines {
    pub fn new(response: reqwest::Response) -> Lines {
        assert!(response.status().is_success(), "stream answered {}", response.status());
        Lines {
            stream: Box::pin(response.bytes_stream()),
            splitter: LineSplitter::new(64 << 20),
            ready: Default::default(),
            ended: false,
        }
    }

    /// The next line, or `None` at the end of the stream; panics after `within` without one.
    pub async fn next_within(&mut self, within: Duration) -> Option<String> {
        tokio::time::timeout(within, self.next()).await.expect("no line in time")
    }

    pub async fn next(&mut self) -> Option<String> {
        loop {
            if let Some(line) = self.ready.pop_front() {
                return Some(line);
            }
            if self.ended {
                return None;
            }
            match self.stream.next().await {
                Some(Ok(chunk)) => {
                    let ready = &mut self.ready;
                    self.splitter.feed(&chunk, |event| {
                        if let LineEvent::Line(line) = event {
                            ready.push_back(String::from_utf8(line.bytes.to_vec()).unwrap());
                        }
                    });
                }
                Some(Err(_)) | None => self.ended = true,
            }
        }
    }

    /// Every line up to the end of the stream, pings excluded.
    pub async fn rest(&mut self, within: Duration) -> Vec<String> {
        let mut lines = Vec::new();
        while let Some(line) = self.next_within(within).await {
            if line != r#"{"type":"ping"}"# {
                lines.push(line);
            }
        }
        lines
    }
}

pub fn kind(line: &str) -> String {
    serde_json::from_str::<Value>(line).unwrap()["type"].as_str().unwrap().to_owned()
}

pub fn seq(line: &str) -> u64 {
    serde_json::from_str::<Value>(line).unwrap()["seq"].as_u64().unwrap()
}

/// Writes a script file for the scripted provider.
pub fn script_file(dir: &Path, json: &str) -> PathBuf {
    let path = dir.join("script.json");
    std::fs::write(&path, json).unwrap();
    path
}
