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

#[path = "support/stamping.rs"]
mod stamping;

use std::sync::Arc;
use std::time::{Duration, Instant};

use chatwire::store::{PostgresStore, SqliteStore, Store};
use stamping::{StampingProvider, http_request, instance, read_stamps};
use tokio::io::AsyncReadExt;

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
