//! Search over a big store: generates 10,000 sessions × 50 messages (by default) through the store's own `append`,
//! so the index is built as the server builds it, then prints the time that took and p50/p99 of `Store::search`
//! over a set of queries (rare and common words, prefixes, several words, titles, no match). Target: p99 ≤ 50 ms.
//! SQLite first, then PostgreSQL on the tests' own server (Debian's binaries, `fsync=off`); `--sqlite-only` or
//! `--postgres-only` measures one.
//!
//! `cargo bench --features ssr --bench search --profile release -- [--sessions N] [--messages M] [--rounds R]
//! [--sqlite-only | --postgres-only]`
//!
//! The log is written one session per append (50 frames in one transaction), many appends at once, so that the
//! SQLite writer commits them in groups, as it does under load.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chatwire::protocol::{ChatFrame, ChatMessage, ChatMessagePart, MessageFrame, Role};
use chatwire::store::{Append, PostgresStore, SqliteStore, Store};

#[path = "../tests/support/postgres.rs"]
mod postgres;

/// A word list with a long tail: a few words are in most messages, most in few.
const COMMON: [&str; 24] = [
    "the", "file", "test", "build", "error", "function", "change", "run", "code", "fix", "add", "check", "server",
    "request", "value", "type", "module", "crate", "path", "read", "write", "line", "return", "result",
];

/// Sessions appended at once.
const IN_FLIGHT: usize = 64;

struct Options {
    sessions: usize,
    messages: usize,
    rounds: usize,
    sqlite: bool,
    postgres: bool,
}

fn options() -> Options {
    let mut options = Options { sessions: 10_000, messages: 50, rounds: 5, sqlite: true, postgres: true };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().and_then(|v| v.parse().ok()).expect("a number after the flag");
        match arg.as_str() {
            "--sessions" => options.sessions = value(),
            "--messages" => options.messages = value(),
            "--rounds" => options.rounds = value(),
            "--sqlite-only" => options.postgres = false,
            "--postgres-only" => options.sqlite = false,
            _ => {}
        }
    }
    options
}

/// A small deterministic generator (xorshift): the same store every run, no dependency.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A word: common half the time, else one of 50,000 rarer ones, skewed to the first thousands.
    fn word(&mut self) -> String {
        if self.below(2) == 0 {
            COMMON[self.below(COMMON.len() as u64) as usize].to_owned()
        } else {
            let rank = self.below(50_000).min(self.below(50_000)).min(self.below(50_000));
            format!("w{rank}")
        }
    }

    fn text(&mut self, words: usize) -> String {
        (0..words).map(|_| self.word()).collect::<Vec<_>>().join(" ")
    }
}

fn session_frames(random: &mut Random, session: usize, messages: usize) -> Vec<ChatFrame> {
    (0..messages)
        .map(|index| {
            let role = if index % 2 == 0 { Role::User } else { Role::Assistant };
            let length = if role == Role::User { 12 } else { 60 };
            let message = ChatMessage {
                id: format!("m{session}-{index}"),
                role,
                parts: vec![ChatMessagePart::text(random.text(length))],
                created_at: None,
                changes: None,
                usage: None,
            };
            ChatFrame::Message(MessageFrame { seq: None, message })
        })
        .collect()
}

async fn generate(store: Arc<dyn Store>, options: &Options) -> Duration {
    let started = Instant::now();
    let mut random = Random(0x5eed_1234_abcd_0001);
    let mut pending = Vec::new();
    for session in 0..options.sessions {
        let id = format!("s{session}");
        let title = format!("Session about {} {}", random.word(), random.word());
        store.create_session(&id, &title, None, 1).await.expect("a session is made");
        let frames = session_frames(&mut random, session, options.messages);
        let append = Append { session_id: id, run_id: None, frames, ends_run: None, lease: None, now: 2 };
        let store = store.clone();
        pending.push(tokio::spawn(async move { store.append(append).await.map(|_| ()) }));
        if pending.len() == IN_FLIGHT {
            for task in pending.drain(..) {
                task.await.expect("the append task ran").expect("the append succeeded");
            }
        }
    }
    for task in pending {
        task.await.expect("the append task ran").expect("the append succeeded");
    }
    started.elapsed()
}

const QUERIES: [&str; 12] = [
    "w49000",
    "w7",
    "w123",
    "w1",
    "file",
    "the error",
    "fix build test",
    "serv",
    "w12 w34",
    "session about",
    "nothingmatchesthis",
    "\"unbalanced NEAR(",
];

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main]
async fn main() {
    let options = options();
    let dir = tempfile::tempdir().expect("a temporary directory");
    if options.sqlite {
        let sqlite: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path()).expect("the store opens"));
        measure("SQLite", sqlite, &options).await;
    }
    if options.postgres {
        let url = postgres::server().fresh_database().await;
        let store: Arc<dyn Store> = Arc::new(PostgresStore::open(&url).await.expect("the store opens"));
        measure("PostgreSQL", store, &options).await;
    }
}

async fn measure(name: &str, store: Arc<dyn Store>, options: &Options) {
    let built = generate(store.clone(), options).await;
    let messages = options.sessions * options.messages;
    println!(
        "{name}: generated {} sessions × {} messages ({messages}) in {:.1} s ({:.0} messages/s, index included)",
        options.sessions,
        options.messages,
        built.as_secs_f64(),
        messages as f64 / built.as_secs_f64()
    );
    let mut all = Vec::new();
    for query in QUERIES {
        let mut times = Vec::new();
        let mut found = 0;
        for _ in 0..options.rounds {
            let started = Instant::now();
            found = store.search(query, 20).await.expect("the search is answered").len();
            times.push(started.elapsed());
        }
        times.sort();
        println!(
            "{query:>22}: {found:>2} hits, median {:>7.2} ms, max {:>7.2} ms",
            percentile(&times, 0.5).as_secs_f64() * 1e3,
            times[times.len() - 1].as_secs_f64() * 1e3
        );
        all.extend(times);
    }
    all.sort();
    println!(
        "{name}: all queries ({} searches): p50 {:.2} ms, p99 {:.2} ms (target p99 ≤ 50 ms)",
        all.len(),
        percentile(&all, 0.5).as_secs_f64() * 1e3,
        percentile(&all, 0.99).as_secs_f64() * 1e3
    );
}
