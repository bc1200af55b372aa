//! Many sessions sending at once: 100 sessions (by default) each POST `/api/chat` at the same moment on the
//! scripted provider, against the real binary on loopback. Prints p50/p99 time from the send to the run's first
//! frame, and the frames per second the server appended and streamed until every run was done.
//!
//! `cargo bench --features ssr --bench concurrent_sends -- [--sessions N] [--rounds R]`
//!
//! Before/after in one run: `BENCH_BINARIES=before=/path/to/old/chatwire:after=/path/to/new/chatwire` runs each
//! binary in turn, round after round (the default is this build's binary alone), so both see the same machine.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{Value, json};

const TOKEN: &str = "bench-token-0123456789";

/// About 50 streamed pieces of text per run, 5 ms apart: a short answer at a fast model's pace.
const SCRIPT: &str = concat!(
    r#"{"chunkChars": 8, "delayMs": 5, "turns": [{"text": "#,
    r#""A short answer, streamed in small pieces the way a fast model writes them, so that every session's run "#,
    r#"appends a few dozen frames to its log while the other ninety-nine do the same thing at the same moment.""#,
    "}]}"
);

struct Running {
    child: std::process::Child,
    base: String,
    _dir: tempfile::TempDir,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(binary: &Path) -> Running {
    use std::io::BufRead;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let script = dir.path().join("script.json");
    std::fs::write(&script, SCRIPT).expect("the script is written");
    let mut child = std::process::Command::new(binary)
        .args(["serve", "--addr", "127.0.0.1:0", "--token", TOKEN, "--data-dir"])
        .arg(dir.path().join("data"))
        .arg("--script")
        .arg(&script)
        .env("RUST_LOG", "error")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{} starts: {e}", binary.display()));
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout is piped"))
        .read_line(&mut line)
        .expect("the server prints its URL");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("{} printed no URL (its stderr says why): {line:?}", binary.display()));
    let base = url.split("/?").next().expect("a base URL").trim_end_matches('/').to_owned();
    Running { child, base, _dir: dir }
}

struct Round {
    first_frame: Vec<Duration>,
    frames: usize,
    elapsed: Duration,
}

async fn round(binary: &Path, sessions: usize) -> Round {
    let server = start(binary);
    let http = reqwest::Client::builder().pool_max_idle_per_host(sessions).build().expect("a client");
    let mut ids = Vec::with_capacity(sessions);
    for _ in 0..sessions {
        let created: Value = http
            .post(format!("{}/api/sessions", server.base))
            .bearer_auth(TOKEN)
            .json(&json!({}))
            .send()
            .await
            .expect("POST /api/sessions")
            .json()
            .await
            .expect("a session");
        ids.push(created["session"]["sessionId"].as_str().expect("a session id").to_owned());
    }
    let began = Instant::now();
    let runs = ids.into_iter().map(|id| {
        let http = http.clone();
        let url = format!("{}/api/chat", server.base);
        tokio::spawn(async move {
            let sent = Instant::now();
            let response = http
                .post(url)
                .bearer_auth(TOKEN)
                .json(&json!({"sessionId": id, "message": "go"}))
                .send()
                .await
                .expect("POST /api/chat");
            assert!(response.status().is_success(), "the send answered {}", response.status());
            let mut body = response.bytes_stream();
            let (mut first, mut lines, mut text) = (None, 0, Vec::new());
            while let Some(chunk) = body.next().await {
                let chunk = chunk.expect("the stream reads");
                first.get_or_insert_with(|| sent.elapsed());
                text.extend_from_slice(&chunk);
                lines += chunk.iter().filter(|b| **b == b'\n').count();
            }
            let last = text.split(|b| *b == b'\n').rev().find(|l| !l.is_empty()).unwrap_or_default();
            assert!(
                last.starts_with(br#"{"type":"done""#),
                "a run did not end in done: {}",
                String::from_utf8_lossy(last)
            );
            (first.expect("the stream carried frames"), lines)
        })
    });
    let mut first_frame = Vec::with_capacity(sessions);
    let mut frames = 0;
    for run in futures_util::future::join_all(runs).await {
        let (first, lines) = run.expect("a run task");
        first_frame.push(first);
        frames += lines;
    }
    Round { first_frame, frames, elapsed: began.elapsed() }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn binaries() -> Vec<(String, PathBuf)> {
    match std::env::var("BENCH_BINARIES") {
        Ok(list) => list
            .split(':')
            .map(|entry| match entry.split_once('=') {
                Some((label, path)) => (label.to_owned(), PathBuf::from(path)),
                None => (entry.to_owned(), PathBuf::from(entry)),
            })
            .collect(),
        Err(_) => vec![("this build".to_owned(), PathBuf::from(env!("CARGO_BIN_EXE_chatwire")))],
    }
}

fn flag(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[tokio::main]
async fn main() {
    let sessions = flag("--sessions", 100);
    let rounds = flag("--rounds", 3);
    let binaries = binaries();
    let mut results: Vec<Vec<Round>> = binaries.iter().map(|_| Vec::new()).collect();
    for _ in 0..rounds {
        for ((_, binary), results) in binaries.iter().zip(&mut results) {
            results.push(round(binary, sessions).await);
        }
    }
    println!("{sessions} sessions sending at once, {rounds} rounds each; medians over rounds");
    println!(
        "{:<16} {:>16} {:>16} {:>14} {:>10}",
        "binary", "first frame p50", "first frame p99", "frames/s", "frames"
    );
    for ((label, _), results) in binaries.iter().zip(results) {
        let stat = |pick: &dyn Fn(&Round) -> f64| median(results.iter().map(pick).collect());
        let p = |q: f64| {
            move |r: &Round| {
                let mut sorted = r.first_frame.clone();
                sorted.sort();
                percentile(&sorted, q).as_secs_f64() * 1000.0
            }
        };
        println!(
            "{:<16} {:>13.1} ms {:>13.1} ms {:>14.0} {:>10.0}",
            label,
            stat(&p(0.5)),
            stat(&p(0.99)),
            stat(&|r| r.frames as f64 / r.elapsed.as_secs_f64()),
            stat(&|r| r.frames as f64),
        );
    }
}
