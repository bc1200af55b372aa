//! Several instances: frames appended per second, and append → viewer latency (p50/p99/max) on one instance and
//! across two instances, on SQLite and on PostgreSQL, in one run.
//!
//! `cargo bench --profile dev --features ssr --bench instances -- [--events N] [--interval-us U]` starts its own
//! PostgreSQL (Debian's binaries, as the tests do). Each delta carries the nanoseconds at which the provider
//! emitted it, and every instance lives in this process, so one clock measures the whole path: provider → mapper
//! → store append → wake-up (a `watch` on one instance, `NOTIFY` or the sweep across instances) → the viewer's
//! stream, paced at one chunk per 32 ms as a browser's is.

// A bench is a test program: a failed unwrap ends it with the reason, which is what it should do.
#![allow(clippy::unwrap_used)]

#[path = "../tests/support/postgres.rs"]
#[allow(dead_code)]
mod postgres;

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
use chatwire::store::{PostgresStore, SqliteStore, Store};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// Emits `events` text deltas `interval` apart (as fast as it can for a zero interval), each the emit time in
/// nanoseconds since `epoch`.
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
            let mut ticks = tokio::time::interval(self.interval.max(Duration::from_nanos(1)));
            for _ in 0..self.events {
                if !self.interval.is_zero() {
                    ticks.tick().await;
                } else {
                    tokio::task::yield_now().await;
                }
                sink(StreamEvent::TextDelta(format!("<{}>", self.epoch.elapsed().as_nanos())));
            }
            Ok(ModelStop::Stop)
        })
    }
}

/// One chatwire instance in this process, serving HTTP on a loopback port.
struct Instance {
    address: String,
    stop: CancellationToken,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn instance(store: Arc<dyn Store>, provider: StampingProvider, data: &std::path::Path) -> Instance {
    let agent = Agent::new(Arc::new(provider), AgentConfig::default());
    let entry = ModelEntry {
        name: "stamping".into(),
        provider: "stamping".into(),
        model: "stamping".into(),
        context_window: 128_000,
        agent: Arc::new(agent),
    };
    let models = Arc::new(ModelCatalog::new(vec![entry]).unwrap());
    let config = ChatConfig {
        data_dir: data.into(),
        workspace: None,
        keepalive: Duration::from_secs(15),
        lease_ttl: Duration::from_secs(15),
    };
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
    Instance { address, stop, server }
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

/// Reads `stream` until `expected` delta lines have arrived; each line's stamp gives one latency sample.
async fn read_stamps(mut stream: TcpStream, epoch: Instant, expected: usize) -> (Vec<Duration>, Duration) {
    let mut samples = Vec::with_capacity(expected);
    let mut buffer = vec![0_u8; 64 * 1024];
    let mut pending = Vec::new();
    let mut last = Duration::ZERO;
    while samples.len() < expected {
        let read = stream.read(&mut buffer).await.expect("the stream reads");
        if read == 0 {
            break;
        }
        let now = epoch.elapsed();
        last = now;
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
    (samples, last)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Case {
    SqliteOne,
    PostgresOne,
    PostgresAcross,
}

impl Case {
    fn label(self) -> &'static str {
        match self {
            Case::SqliteOne => "SQLite, viewer on the run's instance    ",
            Case::PostgresOne => "PostgreSQL, viewer on the run's instance",
            Case::PostgresAcross => "PostgreSQL, viewer on another instance ",
        }
    }
}

/// One run of `events` deltas on instance A, watched from A or from B; returns the latency samples and the
/// deltas per second that reached the viewer (first emit to last arrival).
async fn measure(case: Case, events: usize, interval: Duration) -> (Vec<Duration>, f64) {
    let epoch = Instant::now();
    let data = tempfile::tempdir().unwrap();
    let provider = || StampingProvider { epoch, events, interval };
    let (a, b) = match case {
        Case::SqliteOne => {
            let store: Arc<dyn Store> = Arc::new(SqliteStore::open(data.path()).unwrap());
            (instance(store, provider(), data.path()).await, None)
        }
        Case::PostgresOne | Case::PostgresAcross => {
            let url = postgres::server().fresh_database().await;
            let store_a: Arc<dyn Store> = Arc::new(PostgresStore::open(&url).await.unwrap());
            let a = instance(store_a, provider(), data.path()).await;
            let b = if case == Case::PostgresAcross {
                let store_b: Arc<dyn Store> = Arc::new(PostgresStore::open(&url).await.unwrap());
                Some(instance(store_b, provider(), data.path()).await)
            } else {
                None
            };
            (a, b)
        }
    };
    let mut created = String::new();
    http_request(&a.address, "POST", "/api/sessions", "{}").await.read_to_string(&mut created).await.unwrap();
    let session = created.split("\"sessionId\":\"").nth(1).and_then(|r| r.split('"').next()).unwrap().to_owned();
    let viewer_address = b.as_ref().map_or(&a.address, |b| &b.address).clone();
    // The viewer attaches first and tails the session; the run starts after it.
    let viewer = http_request(&viewer_address, "GET", &format!("/api/sessions/{session}/events?after=0"), "").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let body = format!(r#"{{"sessionId":"{session}","message":"go"}}"#);
    let started = epoch.elapsed();
    let _run = http_request(&a.address, "POST", "/api/chat", &body).await;
    let (samples, last) = read_stamps(viewer, epoch, events).await;
    assert_eq!(samples.len(), events, "every delta reached the viewer");
    let rate = events as f64 / (last - started).as_secs_f64();
    for instance in std::iter::once(a).chain(b) {
        instance.stop.cancel();
        instance.server.await.unwrap().unwrap();
    }
    (samples, rate)
}

fn percentiles(mut samples: Vec<Duration>) -> [Duration; 3] {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    [at(0.50), at(0.99), *samples.last().unwrap()]
}

fn flag(args: &[String], name: &str, default: u64) -> u64 {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let events = flag(&args, "--events", 2000) as usize;
    let interval = Duration::from_micros(flag(&args, "--interval-us", 2000));
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let cases = [Case::SqliteOne, Case::PostgresOne, Case::PostgresAcross];
    println!("{events} deltas, one every {interval:?}: latency from the provider's emit to the viewer's socket");
    for case in cases {
        let (samples, _) = runtime.block_on(measure(case, events, interval));
        let [p50, p99, max] = percentiles(samples);
        println!("  {}  p50 {p50:>9.1?}  p99 {p99:>9.1?}  max {max:>9.1?}", case.label());
    }
    println!("{events} deltas as fast as the provider emits them: deltas appended and delivered per second");
    for case in cases {
        let (_, rate) = runtime.block_on(measure(case, events, Duration::ZERO));
        println!("  {}  {rate:>9.0} frames/s", case.label());
    }
}
