//! Several instances on one PostgreSQL database, as real processes: a question answered on another instance,
//! keepalives everywhere, owners SIGKILLed at random moments while viewers elsewhere keep reattaching, and a killed
//! listener connection. The reliability tests of `server.rs` also run against three instances.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::server::{WAIT, chat, read_until, replay_run};
use crate::support::server::{Lines, Server, TOKEN, kind, script_file, seq};

fn is_terminal(line: &str) -> bool {
    matches!(kind(line).as_str(), "done" | "error")
}

#[tokio::test]
async fn a_question_asked_on_one_instance_is_answered_on_another_and_only_once() {
    let dir = tempfile::tempdir().unwrap();
    let script = r#"{"delayMs": 0, "turns": [
      {"text": "One question.", "toolCalls": [{"name": "question", "arguments": {
        "question": "Include the listing?", "options": [{"id": "yes", "label": "Yes"}, {"id": "no", "label": "No"}]}}]},
      {"text": "Thanks."}]}"#;
    let server = Server::cluster(3, &dir.path().join("data"), &script_file(dir.path(), script), &[]).await;
    let session = server.new_session().await;
    let mut run = chat(&server, &session, json!({"message": "ask"})).await;
    let asked = read_until(&mut run, "\"type\":\"tool-Question\"").await;
    let part: Value = serde_json::from_str(asked.last().unwrap()).unwrap();
    let call = part["part"]["toolCallId"].as_str().unwrap().to_owned();
    let body = json!({"sessionId": session, "toolCallId": call, "answer": {"kind": "single", "selectedIds": ["yes"]}});
    // The question is registered once the agent reaches it, a moment after its part is logged.
    let deadline = Instant::now() + WAIT;
    loop {
        let answered = server.post("/api/chat/question", &body).send().await.unwrap();
        match answered.status().as_u16() {
            200 => break,
            404 if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(50)).await,
            status => panic!("answering the question: {status}"),
        }
    }
    for _ in 0..server.instance_count() {
        let again = server.post("/api/chat/question", &body).send().await.unwrap();
        assert_eq!(again.status(), 404, "an answered question is no longer waiting, on any instance");
    }
    let rest = run.rest(WAIT).await;
    let done: Value = serde_json::from_str(rest.last().unwrap()).unwrap();
    assert_eq!(done["type"], "done");
    assert_eq!(done["message"]["parts"][1]["output"], json!({"answer": "yes"}), "the answer reached the agent");
}

#[tokio::test]
async fn a_quiet_stream_gets_keepalives_on_every_instance() {
    let dir = tempfile::tempdir().unwrap();
    let script = script_file(dir.path(), r#"{"turns": [{"text": "unused"}]}"#);
    let server = Server::cluster(3, &dir.path().join("data"), &script, &["--keepalive-secs", "1"]).await;
    let session = server.new_session().await;
    for index in 0..server.instance_count() {
        let url = server.instance_url(index, &format!("/api/sessions/{session}/events?after=0"));
        let response = server.http.get(url).bearer_auth(TOKEN).send().await.unwrap();
        let mut lines = Lines::new(response);
        let first = lines.next_within(Duration::from_secs(5)).await.expect("a keepalive");
        assert_eq!(first, r#"{"type":"ping"}"#, "instance {index}");
    }
}

/// A small deterministic generator, seeded per run (the seed is printed, to replay a failure).
struct Random(u64);

impl Random {
    fn seeded() -> Random {
        let seed = std::env::var("CHATWIRE_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
        });
        eprintln!("random seed {seed} (CHATWIRE_TEST_SEED={seed} replays it)");
        Random(seed | 1)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

/// Follows a session from the instances in `on` until its run's terminal frame, dropping its stream now and then
/// and reattaching (to any of them) after the last `seq` it saw. Returns every frame it saw, in order; panics on a
/// gap or a duplicate.
async fn follow(server: &Server, on: Vec<usize>, session: String, seed: u64) -> Vec<String> {
    let mut random = Random(seed | 1);
    let mut seen: Vec<String> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline, "session {session}: no terminal frame within a minute");
        let after = seen.last().map_or(0, |l| seq(l));
        let instance = on[random.below(on.len() as u64) as usize];
        let url = server.instance_url(instance, &format!("/api/sessions/{session}/events?after={after}"));
        let Ok(response) = server.http.get(url).bearer_auth(TOKEN).send().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let mut lines = Lines::new(response);
        let keep_for = 1 + random.below(40);
        let mut taken = 0;
        while let Some(line) = lines.next_within(Duration::from_secs(30)).await {
            if line == r#"{"type":"ping"}"# {
                continue;
            }
            let expected = seen.last().map_or(1, |l| seq(l) + 1);
            assert_eq!(
                seq(&line),
                expected,
                "session {session}: a gap or a duplicate after reattaching to instance {instance} after {after}, \
                 {taken} frames into this stream: {line} after {:?}",
                seen.last()
            );
            let terminal = is_terminal(&line);
            seen.push(line);
            if terminal {
                return seen;
            }
            taken += 1;
            if taken == keep_for {
                break;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn owners_killed_at_random_moments_leave_every_run_ended_once_and_every_seen_frame_logged() {
    const ROUNDS: usize = 5;
    const SESSIONS_PER_ROUND: usize = 10;
    let dir = tempfile::tempdir().unwrap();
    // About two seconds of streaming per run, so that a kill lands before, during or after it.
    let script = r#"{"chunkChars": 4, "delayMs": 15, "turns": [{"text": "Counting slowly: one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty twenty-one twenty-two twenty-three twenty-four twenty-five twenty-six twenty-seven twenty-eight twenty-nine thirty."}]}"#;
    let mut server =
        Server::cluster(3, &dir.path().join("data"), &script_file(dir.path(), script), &["--lease-secs", "1"]).await;
    let mut random = Random::seeded();
    let mut runs = 0;
    for round in 0..ROUNDS {
        let owner = round % server.instance_count();
        let others: Vec<usize> = (0..server.instance_count()).filter(|i| *i != owner).collect();
        let mut sessions = Vec::new();
        let mut owner_streams = Vec::new();
        for _ in 0..SESSIONS_PER_ROUND {
            let created = server
                .http
                .post(server.instance_url(owner, "/api/sessions"))
                .bearer_auth(TOKEN)
                .json(&json!({}))
                .send()
                .await
                .unwrap();
            let session = created.json::<Value>().await.unwrap()["session"]["sessionId"].as_str().unwrap().to_owned();
            let started = server
                .http
                .post(server.instance_url(owner, "/api/chat"))
                .bearer_auth(TOKEN)
                .json(&json!({"sessionId": session, "message": "count"}))
                .send()
                .await
                .unwrap();
            assert_eq!(started.status(), 200);
            owner_streams.push(started);
            sessions.push(session);
        }
        let server_ref = &server;
        let viewers: Vec<_> = sessions
            .iter()
            .map(|session| follow(server_ref, others.clone(), session.clone(), random.below(u64::MAX)))
            .collect();
        let kill_after = Duration::from_millis(random.below(2500));
        // SIGKILL the owner at a random moment (before, during or after its runs) while the viewers go on.
        let killing = async {
            tokio::time::sleep(kill_after).await;
            kill_during(server_ref, owner);
        };
        let (seen, ()) = tokio::join!(futures_util::future::join_all(viewers), killing);
        drop(owner_streams);
        // Reaped, and out of the rotation of requests.
        server.kill_instance(owner);
        for (session, seen) in sessions.iter().zip(&seen) {
            let log = replay_run(&server, session, 0).await;
            let seqs: Vec<u64> = log.iter().map(|l| seq(l)).collect();
            assert_eq!(seqs, (1..=log.len() as u64).collect::<Vec<_>>(), "round {round}: seqs skip or repeat");
            assert_eq!(log.iter().filter(|l| is_terminal(l)).count(), 1, "round {round}: one terminal frame");
            assert!(is_terminal(log.last().unwrap()));
            let logged: BTreeMap<u64, &String> = log.iter().map(|l| (seq(l), l)).collect();
            for frame in seen {
                assert_eq!(logged.get(&seq(frame)), Some(&frame), "round {round}: a frame a viewer saw is not logged");
            }
            runs += 1;
        }
        server.restart_instance(owner);
        // The session is usable again from any instance.
        let next = chat(&server, &sessions[0], json!({"message": "again"})).await.rest(WAIT).await;
        assert_eq!(kind(next.last().unwrap()), "done", "round {round}: a new run after the owner died: {next:?}");
    }
    assert!(runs >= 50, "{runs} runs");
}

/// SIGKILLs instance `index` of a server the caller only borrows (the viewers hold it too): by pid, as a crash.
fn kill_during(server: &Server, index: usize) {
    let pid = server.instance_pid(index).expect("the owner runs");
    // SAFETY: kill(2) on our own child's pid has no memory effects.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
}

#[tokio::test]
async fn a_listener_connection_killed_mid_run_costs_a_viewer_on_another_instance_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let script = r#"{"chunkChars": 3, "delayMs": 15, "turns": [{"text": "A slow answer that keeps streaming for a while, long enough for the listener to be cut off in the middle of it and come back."}]}"#;
    let server = Server::cluster(2, &dir.path().join("data"), &script_file(dir.path(), script), &[]).await;
    let session = server.new_session().await;
    let started = server
        .http
        .post(server.instance_url(0, "/api/chat"))
        .bearer_auth(TOKEN)
        .json(&json!({"sessionId": session, "message": "go"}))
        .send()
        .await
        .unwrap();
    let _owner_stream = Lines::new(started);
    let url = server.instance_url(1, &format!("/api/sessions/{session}/events?after=0"));
    let mut viewer = Lines::new(server.http.get(url).bearer_auth(TOKEN).send().await.unwrap());
    let mut seen = Vec::new();
    while seen.len() < 5 {
        seen.push(viewer.next_within(WAIT).await.unwrap());
    }
    let (admin, connection) =
        tokio_postgres::connect(server.database_url.as_deref().unwrap(), tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let listeners = "SELECT pid FROM pg_stat_activity WHERE application_name = 'chatwire-listener' \
                     AND datname = current_database()";
    let killed = admin.query(&format!("SELECT pg_terminate_backend(pid) FROM ({listeners}) AS l"), &[]).await.unwrap();
    assert_eq!(killed.len(), 2, "each instance has one listener");
    // The viewer tails the session, not the run: it reads until the run's terminal frame.
    while !is_terminal(seen.last().unwrap()) {
        let line = viewer.next_within(WAIT).await.expect("the tail goes on");
        if line != r#"{"type":"ping"}"# {
            seen.push(line);
        }
    }
    let seqs: Vec<u64> = seen.iter().map(|l| seq(l)).collect();
    assert_eq!(seqs, (1..=seen.len() as u64).collect::<Vec<_>>(), "no gap, no duplicate");
    assert_eq!(seen, replay_run(&server, &session, 0).await);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let back = admin.query(listeners, &[]).await.unwrap().len();
        if back == 2 {
            break;
        }
        assert!(Instant::now() < deadline, "the listeners did not come back ({back} of 2)");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
