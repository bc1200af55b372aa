//! Event → bytes-on-the-wire latency: a model's text delta through the agent loop, the mapper, the session log and
//! the HTTP stream to a reading socket, against a raw tokio write of the same lines on loopback in the same run.
//!
//! `cargo bench --features ssr --bench stream_latency -- [--events N] [--interval-us U]` prints p50/p90/p99/max
//! of both paths and their ratio. Each delta carries the nanoseconds at which the provider emitted it, so the
//! reader measures the whole path with one clock.

// A bench is a test program: a failed unwrap ends it with the reason, which is what it should do.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use chatwire::runtime::agent::{Agent, AgentConfig};
use chatwire::runtime::builtin::AgentRuntime;
use chatwire::runtime::models::{ModelCatalog, ModelEntry};
use chatwire::runtime::provider::{ModelRequest, ModelStop, Provider, ProviderFuture, StreamEvent};
use chatwire::server::assets::SiteAssets;
use chatwire::server::chat::{Chat, ChatConfig};
use chatwire::server::http::{AppState, router};
use chatwire::server::security::Security;
use chatwire::store::SqliteStore;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// Emits `events` text deltas `interval` apart, each the emit time in nanoseconds since `epoch`, then stops.
struct StampingProvider {
    epoch: Instant,
    events: usize,
    interval: Duration,
}

impl Provider for StampingProvider {
    fn name(&self) -> &str {
        "stamping"
    }

    fn stream<'a>(
        &'a self,
        _request: &'a ModelRequest,
        sink: &'a mut (dyn FnMut(StreamEvent) + Send),
        _cancel: &'a CancellationToken,
    ) -> ProviderFuture<'a> {
        Box::pin(async move {
            let mut ticks = tokio::time::interval(self.interval);
            for _ in 0..self.events {
                ticks.tick().await;
                sink(StreamEvent::TextDelta(format!("<{}>", self.epoch.elapsed().as_nanos())));
            }
            Ok(ModelStop::Stop)
        })
    }
}

/// Reads `stream` until `expected` delta lines have arrived; each line's `<nanos>` stamp gives one latency sample.
/// (The final message repeats every stamp; only `delta` frames count.)
async fn read_stamps(mut stream: TcpStream, epoch: Instant, expected: usize) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(expected);
    let mut buffer = vec![0_u8; 64 * 1024];
    let mut pending = Vec::new();
    while samples.len() < expected {
        let read = stream.read(&mut buffer).await.expect("the stream reads");
        if read == 0 {
            break;
        }
        let now = epoch.elapsed();
        pending.extend_from_slice(&buffer[..read]);
        let mut consumed = 0;
        while let Some(end) = pending[consumed..].iter().position(|&b| b == b'\n') {
            let line = std::str::from_utf8(&pending[consumed..consumed + end]).unwrap();
            consumed += end + 1;
            if !line.contains(r#""type":"delta""#) {
                continue;
            }
            let stamp = line.split('<').nth(1).and_then(|rest| rest.split('>').next()).expect("a stamped delta");
            samples.push(now.saturating_sub(Duration::from_nanos(stamp.parse().unwrap())));
        }
        pending.drain(..consumed);
    }
    samples
}

async fn http_request(address: &str, method: &str, path: &str, body: &str) -> TcpStream {
    let mut stream = TcpStream::connect(address).await.expect("the server accepts");
    stream.set_nodelay(true).unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream
}

async fn through_chatwire(events: usize, interval: Duration) -> Vec<Duration> {
    let epoch = Instant::now();
    let data = tempfile::tempdir().unwrap();
    let agent = Agent::new(Arc::new(StampingProvider { epoch, events, interval }), AgentConfig::default());
    let entry = ModelEntry {
        name: "stamping".into(),
        provider: "stamping".into(),
        model: "stamping".into(),
        context_window: 128_000,
        agent: Arc::new(agent),
    };
    let models = Arc::new(ModelCatalog::new(vec![entry]).unwrap());
    let config = ChatConfig {
        data_dir: data.path().into(),
        workspace: None,
        keepalive: Duration::from_secs(15),
        lease_ttl: Duration::from_secs(15),
    };
    let store = Arc::new(SqliteStore::open(data.path()).unwrap());
    let runtime = Arc::new(AgentRuntime::new(models.clone()));
    let chat = Chat::open(store, runtime, models, config).await.unwrap();
    let security = Arc::new(Security { token: None, allowed_hosts: vec!["127.0.0.1".into()] });
    let leptos = leptos::prelude::LeptosOptions::builder().output_name("chatwire").site_root("target/site").build();
    let state = AppState { leptos, assets: SiteAssets::detect("target/site"), chat: chat.clone(), security };
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let stop = CancellationToken::new();
    let server = tokio::spawn(chatwire::server::listener::serve(
        listener,
        router(state),
        stop.clone().cancelled_owned(),
        chat.streams_end.clone(),
    ));

    let mut created = String::new();
    http_request(&address, "POST", "/api/sessions", "{}").await.read_to_string(&mut created).await.unwrap();
    let session = created.split("\"sessionId\":\"").nth(1).and_then(|r| r.split('"').next()).unwrap().to_owned();
    let body = format!(r#"{{"sessionId":"{session}","message":"go"}}"#);
    let stream = http_request(&address, "POST", "/api/chat", &body).await;
    let samples = read_stamps(stream, epoch, events).await;
    stop.cancel();
    server.await.unwrap().unwrap();
    samples
}

/// The floor: the same stamped lines written straight to a loopback socket by a tokio task.
async fn raw_tokio(events: usize, interval: Duration) -> Vec<Duration> {
    let epoch = Instant::now();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let writer = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        socket.set_nodelay(true).unwrap();
        let mut ticks = tokio::time::interval(interval);
        for _ in 0..events {
            ticks.tick().await;
            let line = format!("{{\"type\":\"delta\",\"text\":\"<{}>\"}}\n", epoch.elapsed().as_nanos());
            socket.write_all(line.as_bytes()).await.unwrap();
        }
    });
    let stream = TcpStream::connect(address).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let samples = read_stamps(stream, epoch, events).await;
    writer.await.unwrap();
    samples
}

fn percentiles(mut samples: Vec<Duration>) -> [Duration; 4] {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    [at(0.50), at(0.90), at(0.99), *samples.last().unwrap()]
}

fn flag(args: &[String], name: &str, default: u64) -> u64 {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let events = flag(&args, "--events", 2000) as usize;
    let interval = Duration::from_micros(flag(&args, "--interval-us", 2000));
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let floor = runtime.block_on(raw_tokio(events, interval));
    let ours = runtime.block_on(through_chatwire(events, interval));
    assert_eq!(ours.len(), events, "every delta arrived through chatwire");
    let [f50, f90, f99, fmax] = percentiles(floor);
    let [c50, c90, c99, cmax] = percentiles(ours);
    println!("{events} deltas, one every {interval:?}; latency from emit to the reader's socket:");
    println!("  raw tokio write: p50 {f50:>10.1?}  p90 {f90:>10.1?}  p99 {f99:>10.1?}  max {fmax:>10.1?}");
    println!("  chatwire:        p50 {c50:>10.1?}  p90 {c90:>10.1?}  p99 {c99:>10.1?}  max {cmax:>10.1?}");
    let ratio = |ours: Duration, floor: Duration| ours.as_secs_f64() / floor.as_secs_f64();
    println!("  ratio:           p50 {:>9.1}×  p99 {:>9.1}×", ratio(c50, f50), ratio(c99, f99));
}
