//! The real `chatwire` binary, started on a loopback port with its own data dir, and a streaming HTTP client for it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use chatwire::ndjson::{LineEvent, LineSplitter};
use futures_util::StreamExt;
use serde_json::Value;

pub const TOKEN: &str = "test-token-0123456789";

/// One chatwire server, or several instances of it on one PostgreSQL database with one shared data dir. Requests
/// go to the instances in turn, so that a test written for one server checks that several give the same answers.
pub struct Server {
    instances: Vec<Instance>,
    turn: std::sync::atomic::AtomicUsize,
    launch: Launch,
    /// The first instance's address.
    pub base: String,
    /// The PostgreSQL database the instances share, if they do.
    pub database_url: Option<String>,
    pub data_dir: PathBuf,
    pub http: reqwest::Client,
}

struct Instance {
    child: Option<Child>,
    base: String,
}

/// How to start an instance again.
struct Launch {
    args: Vec<std::ffi::OsString>,
    env: Vec<(String, String)>,
}

impl Server {
    /// Starts the server on `data_dir` with a script file and extra flags; waits for its URL line.
    pub fn start(data_dir: &Path, script: &Path, extra: &[&str]) -> Server {
        Server::start_with_env(data_dir, script, extra, &[])
    }

    /// Like `start`, with extra environment variables for the server process.
    pub fn start_with_env(data_dir: &Path, script: &Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
        Server::launch(1, data_dir, script, extra, env)
    }

    /// `count` instances on one fresh database of the tests' PostgreSQL server, sharing `data_dir`.
    pub async fn cluster(count: usize, data_dir: &Path, script: &Path, extra: &[&str]) -> Server {
        let url = crate::support::postgres::server().fresh_database().await;
        let mut extra: Vec<&str> = extra.to_vec();
        extra.extend(["--database-url", &url]);
        let mut server = Server::launch(count, data_dir, script, &extra, &[]);
        server.database_url = Some(url);
        server
    }

    fn launch(count: usize, data_dir: &Path, script: &Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
        let mut args: Vec<std::ffi::OsString> =
            ["serve", "--addr", "127.0.0.1:0", "--token", TOKEN, "--data-dir"].iter().map(Into::into).collect();
        args.push(data_dir.into());
        args.push("--script".into());
        args.push(script.into());
        args.extend(extra.iter().map(Into::into));
        let launch = Launch { args, env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect() };
        let instances: Vec<Instance> = (0..count).map(|_| launch.spawn()).collect();
        Server {
            base: instances[0].base.clone(),
            database_url: None,
            instances,
            turn: Default::default(),
            launch,
            data_dir: data_dir.to_owned(),
            http: reqwest::Client::new(),
        }
    }

    /// Kills every instance.
    pub fn kill(&mut self) {
        for index in 0..self.instances.len() {
            self.kill_instance(index);
        }
    }

    /// SIGKILLs instance `index` (a crash: no shutdown of any kind).
    pub fn kill_instance(&mut self, index: usize) {
        if let Some(mut child) = self.instances[index].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts instance `index` again (on a new port) after it was killed.
    pub fn restart_instance(&mut self, index: usize) {
        self.kill_instance(index);
        self.instances[index] = self.launch.spawn();
    }

    /// The process id of instance `index`, while it runs.
    pub fn instance_pid(&self, index: usize) -> Option<u32> {
        self.instances[index].child.as_ref().map(Child::id)
    }

    pub fn instance_count(&self) -> usize {
        self.instances.len()
    }

    /// Sends SIGTERM (what `docker stop` and systemd send) to the first instance and waits up to `within` for it to
    /// exit.
    pub fn terminate(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let child = self.instances[0].child.as_mut().expect("the instance runs");
        // SAFETY: kill(2) on our own child's pid has no memory effects.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = std::time::Instant::now() + within;
        while std::time::Instant::now() < deadline {
            if let Some(status) = child.try_wait().expect("the child can be waited for") {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// The most memory the first instance has held so far (VmHWM), in KiB.
    pub fn peak_memory_kib(&self) -> u64 {
        let child = self.instances[0].child.as_ref().expect("the instance runs");
        let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).expect("/proc/<pid>/status");
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("a VmHWM line");
        line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("a number of KiB")
    }

    /// `path` on the next running instance in turn.
    pub fn url(&self, path: &str) -> String {
        let running: Vec<&Instance> = self.instances.iter().filter(|i| i.child.is_some()).collect();
        let turn = self.turn.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("{}{path}", running[turn % running.len()].base)
    }

    /// `path` on instance `index`.
    pub fn instance_url(&self, index: usize, path: &str) -> String {
        format!("{}{path}", self.instances[index].base)
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

impl Launch {
    fn spawn(&self) -> Instance {
        let mut child = Command::new(env!("CARGO_BIN_EXE_chatwire"))
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .args(&self.args)
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
        Instance { child: Some(child), base }
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

    /// Reads lines until one of frame type `kind` (say, the first `delta` of a run that is going); panics at the end of
    /// the stream, or after `within` without a line.
    pub async fn skip_to(&mut self, frame_kind: &str, within: Duration) {
        loop {
            let line =
                self.next_within(within).await.unwrap_or_else(|| panic!("the stream ended before a {frame_kind}"));
            if kind(&line) == frame_kind {
                return;
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
