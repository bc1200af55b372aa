//! ACP agents: the time from a send to its first `delta` with a cold agent process (the session's first run: spawn,
//! `initialize`, `session/new`, the prompt) and a warm one (its next run), for the tests' fake agent
//! (tests/support/fake-acp.mjs, Node) and, when installed, the real opencode 1.18.33 on the tests' fake model server;
//! and chatwire's added latency per update: each of the fake agent's chunks carries the wall-clock microseconds at
//! which it was written to stdout, and the bench reads the `delta` frame off the session's stream on loopback (a
//! figure that includes the stream's pacing, one write per 32 ms at most, `server/stream.rs`); and the CPU part of that
//! path alone (parse, translate, map) over a recorded opencode turn.
//!
//! `cargo bench --features ssr --bench acp -- [--rounds N] [--updates N]` (add `--profile dev` for a quick look).

// A bench is a test program: a failed unwrap ends it with the reason, which is what it should do.
#![allow(clippy::unwrap_used)]

#[path = "support/stamping.rs"]
#[allow(dead_code)]
mod stamping;

#[path = "../tests/support/opencode.rs"]
mod opencode;

#[path = "../tests/support/fake_openai.rs"]
#[allow(dead_code)]
mod fake_openai;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use chatwire::runtime::acp::{AcpConfig, AcpRuntime};
use chatwire::runtime::registry::AgentEntry;
use chatwire::store::{SqliteStore, Store};
use fake_openai::{FakeServer, Reply, openai_text};
use stamping::{StampingProvider, http_request, instance_with};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|at| args.get(at + 1)).map_or(default, |v| v.parse().unwrap())
}

fn fake_agent() -> AgentEntry {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/fake-acp.mjs");
    let config = AcpConfig::new("fake", "node", vec![script.display().to_string(), "normal".into()]);
    AgentEntry { name: "fake".into(), runtime: Arc::new(AcpRuntime::new(config)) }
}

fn opencode(home: &Path, model_url: &str) -> Option<AgentEntry> {
    let mut config = AcpConfig::new("opencode", opencode::executable()?, vec!["acp".into()]);
    config.env = opencode::isolated_env(home, model_url, serde_json::json!({}));
    Some(AgentEntry { name: "opencode".into(), runtime: Arc::new(AcpRuntime::new(config)) })
}

async fn new_session(address: &str, agent: &str) -> String {
    let body = serde_json::json!({"agent": agent}).to_string();
    let mut stream = http_request(address, "POST", "/api/sessions", &body).await;
    let mut body = String::new();
    stream.read_to_string(&mut body).await.unwrap();
    let json = body.split("\r\n\r\n").nth(1).unwrap();
    let value: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    value["session"]["sessionId"].as_str().unwrap().to_owned()
}

/// Sends `message` and reads the stream to its end: the time to the first `delta`, and every `delta`'s text with
/// the wall-clock time it was read.
async fn send(address: &str, session: &str, agent: &str, message: &str) -> (Duration, Vec<(String, SystemTime)>) {
    let body = serde_json::json!({"sessionId": session, "message": message, "agent": agent}).to_string();
    let sent = Instant::now();
    let stream = http_request(address, "POST", "/api/chat", &body).await;
    read_deltas(stream, sent).await
}

async fn read_deltas(mut stream: TcpStream, sent: Instant) -> (Duration, Vec<(String, SystemTime)>) {
    let mut buffer = vec![0_u8; 64 * 1024];
    let mut pending = Vec::new();
    let mut first = None;
    let mut deltas = Vec::new();
    loop {
        let read = stream.read(&mut buffer).await.unwrap();
        if read == 0 {
            break;
        }
        let now = SystemTime::now();
        pending.extend_from_slice(&buffer[..read]);
        let mut consumed = 0;
        while let Some(end) = pending[consumed..].iter().position(|&b| b == b'\n') {
            let line = String::from_utf8_lossy(&pending[consumed..consumed + end]).into_owned();
            consumed += end + 1;
            if line.contains(r#""type":"delta""#) {
                first.get_or_insert_with(|| sent.elapsed());
                let value: serde_json::Value = serde_json::from_str(&line).unwrap();
                deltas.push((value["text"].as_str().unwrap().to_owned(), now));
            }
            if line.contains(r#""type":"done""#) || line.contains(r#""type":"error""#) {
                return (first.unwrap_or_default(), deltas);
            }
        }
        pending.drain(..consumed);
    }
    (first.unwrap_or_default(), deltas)
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    samples[((samples.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() {
    let rounds = arg("--rounds", 5);
    let updates = arg("--updates", 2000);
    let data = tempfile::tempdir().unwrap();
    let model = FakeServer::start(Vec::new(), "/v1").await;
    let mut agents = vec![fake_agent()];
    let opencode = opencode(&data.path().join("opencode-home"), &model.base_url);
    agents.extend(opencode);
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(data.path()).unwrap());
    let provider = StampingProvider { epoch: Instant::now(), events: 1, interval: Duration::ZERO };
    let server = instance_with(store, provider, data.path(), agents.clone(), Some("fake")).await;
    let address = server.address.clone();

    println!("send → first delta, median of {rounds} (cold: a session's first run starts the agent; warm: its next)");
    for agent in agents.iter().map(|entry| entry.name.as_str()) {
        let (mut cold, mut warm) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            if agent == "opencode" {
                model.push([Reply::Sse(openai_text("Hello there.")), Reply::Sse(openai_text("Hello again."))]);
            }
            let session = new_session(&address, agent).await;
            cold.push(send(&address, &session, agent, "hello").await.0);
            warm.push(send(&address, &session, agent, "hello").await.0);
        }
        println!("  {agent:<9} cold {:>10}   warm {:>10}", ms(median(&mut cold)), ms(median(&mut warm)));
    }

    let session = new_session(&address, "fake").await;
    send(&address, &session, "fake", "hello").await;
    let (_, deltas) = send(&address, &session, "fake", &format!("stamp {updates}")).await;
    let mut latencies: Vec<Duration> = deltas
        .iter()
        .filter_map(|(text, read)| {
            let micros: u64 = text.trim_start_matches('<').trim_end_matches('>').parse().ok()?;
            read.duration_since(UNIX_EPOCH + Duration::from_micros(micros)).ok()
        })
        .collect();
    assert!(latencies.len() * 10 >= updates * 9, "only {} of {updates} stamped deltas came", latencies.len());
    println!(
        "agent stdout line → delta read by a viewer on loopback, {} updates: p50 {}  p99 {}  max {}",
        latencies.len(),
        ms(median(&mut latencies)),
        ms(percentile(&mut latencies, 0.99)),
        ms(*latencies.iter().max().unwrap())
    );
    server.stop.cancel();

    // The CPU part of that path, apart from the store and the stream: an agent's stdout line parsed as JSON-RPC, read
    // as a session update, turned into agent events and mapped into frames, over the updates of a real opencode turn.
    let recording = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/acp/opencode-1.18.33/bash-write.jsonl");
    let lines: Vec<String> = std::fs::read_to_string(recording)
        .unwrap()
        .lines()
        .filter(|line| line.contains("session/update"))
        .map(str::to_owned)
        .collect();
    let repeats = 2000;
    let started = Instant::now();
    let mut frames = 0;
    for _ in 0..repeats {
        let mut mapper = chatwire::mapper::EventMapper::new("s", Box::new(|| 0), Box::new(|kind| kind.to_owned()));
        let (mut turn, opening) = chatwire::runtime::acp::translate::Turn::start(Path::new("/w"), None);
        for event in opening {
            frames += mapper.map(event).len();
        }
        for line in &lines {
            let message: serde_json::Value = serde_json::from_str(line).unwrap();
            let update = chatwire::runtime::acp::schema::SessionUpdate::parse(&message["params"]["update"]).unwrap();
            for event in turn.update(update) {
                frames += mapper.map(event).len();
            }
        }
    }
    let per_line = started.elapsed() / (repeats * lines.len()) as u32;
    println!(
        "stdout line → frames, CPU only ({} lines of opencode's bash-write turn × {repeats}, {frames} frames): {:.1} µs a line",
        lines.len(),
        per_line.as_secs_f64() * 1e6
    );
}
