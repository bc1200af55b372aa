//! Server memory per held idle stream: opens N `events` streams on one session and reads the server's RSS.
//!
//! `cargo bench --features ssr --bench idle_streams -- --streams 1000` (and 10000). Prints KiB per stream;
//! the raise in the open-files limit it needs is done here, up to the hard limit.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

const TOKEN: &str = "bench-token";

fn resident_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the server's /proc entry");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("a VmRSS line");
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("a number of KiB")
}

fn request(address: &str, head: &str, body: &str) -> String {
    let mut stream = TcpStream::connect(address).expect("the server accepts");
    write!(stream, "{head}Host: {address}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n")
        .and_then(|()| write!(stream, "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len()))
        .expect("the request is written");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("the answer is read");
    answer
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let streams: usize = args
        .iter()
        .position(|a| a == "--streams")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    let data = std::env::temp_dir().join(format!("chatwire-idle-bench-{}", std::process::id()));
    let mut server = Command::new(env!("CARGO_BIN_EXE_chatwire"))
        .args(["serve", "--addr", "127.0.0.1:0", "--token", TOKEN, "--keepalive-secs", "600"])
        .arg("--data-dir")
        .arg(&data)
        .stdout(Stdio::piped())
        .env("RUST_LOG", "error")
        .spawn()
        .expect("the server starts");
    let mut line = String::new();
    BufReader::new(server.stdout.take().expect("piped stdout")).read_line(&mut line).expect("the URL line");
    let address = line.split("http://").nth(1).and_then(|r| r.split('/').next()).expect("an address").to_owned();

    let created = request(&address, "POST /api/sessions HTTP/1.1\r\n", "{}");
    let session = created.split("\"sessionId\":\"").nth(1).and_then(|r| r.split('"').next()).expect("a session id");
    std::thread::sleep(Duration::from_millis(300));
    let before = resident_kib(server.id());

    let mut held = Vec::with_capacity(streams);
    for _ in 0..streams {
        let mut stream = TcpStream::connect(&address).expect("the server accepts another stream");
        write!(
            stream,
            "GET /api/sessions/{session}/events?after=0 HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
        )
        .expect("the request is written");
        held.push(stream);
    }
    // Every stream has its response head once the server is holding it.
    for stream in &mut held {
        let mut head = [0_u8; 64];
        stream.read_exact(&mut head[..12]).expect("a response head");
    }
    std::thread::sleep(Duration::from_millis(500));
    let after = resident_kib(server.id());
    let per_stream = (after.saturating_sub(before)) as f64 / streams as f64;
    println!("{streams} idle streams: server RSS {before} KiB -> {after} KiB, {per_stream:.1} KiB per stream");
    drop(held);
    let _ = server.kill();
    let _ = server.wait();
    let _ = std::fs::remove_dir_all(&data);
}
