//! Event → bytes-on-the-wire latency: a model's text delta through the agent loop, the mapper, the session log and
//! the HTTP stream to a reading socket, against a raw tokio write of the same lines on loopback in the same run.
//!
//! `cargo bench --features ssr --bench stream_latency -- [--events N] [--interval-us U]` prints p50/p90/p99/max
//! of both paths and their ratio. Each delta carries the nanoseconds at which the provider emitted it, so the
//! reader measures the whole path with one clock.

// A bench is a test program: a failed unwrap ends it with the reason, which is what it should do.
#![allow(clippy::unwrap_used)]

#[path = "support/stamping.rs"]
mod stamping;

use std::sync::Arc;
use std::time::{Duration, Instant};

use chatwire::store::SqliteStore;
use stamping::{StampingProvider, http_request, instance, read_stamps};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

async fn through_chatwire(events: usize, interval: Duration) -> Vec<Duration> {
    let epoch = Instant::now();
    let data = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(data.path()).unwrap());
    let server = instance(store, StampingProvider { epoch, events, interval }, data.path()).await;

    let mut created = String::new();
    http_request(&server.address, "POST", "/api/sessions", "{}").await.read_to_string(&mut created).await.unwrap();
    let session = created.split("\"sessionId\":\"").nth(1).and_then(|r| r.split('"').next()).unwrap().to_owned();
    let body = format!(r#"{{"sessionId":"{session}","message":"go"}}"#);
    let stream = http_request(&server.address, "POST", "/api/chat", &body).await;
    let (samples, _) = read_stamps(stream, epoch, events).await;
    server.stop.cancel();
    server.server.await.unwrap().unwrap();
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
    let (samples, _) = read_stamps(stream, epoch, events).await;
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
