//! What every `Store` must do, written against the trait so that each implementation runs the same checks.

use std::sync::Arc;

use super::*;
use crate::protocol::{ChatMessage, ChatMessagePart, DeltaFrame, DoneFrame, Role, SearchHit, TokenUsage, UsageFrame};

pub fn deltas(session_id: &str, run_id: Option<&str>, count: usize) -> Append {
    let frame = |i: usize| ChatFrame::Delta(DeltaFrame { seq: None, text: format!("piece {i}"), message_id: None });
    Append {
        session_id: session_id.into(),
        run_id: run_id.map(str::to_owned),
        frames: (0..count).map(frame).collect(),
        ends_run: None,
        lease: None,
        now: 2,
    }
}

const TTL: Duration = Duration::from_secs(60);

async fn started(store: &dyn Store, run_id: &str, session_id: &str, owner: &str, ttl: Duration) -> Lease {
    match store.start_run(run_id, session_id, owner, ttl, 1).await.unwrap() {
        RunStart::Started { lease, .. } => lease,
        RunStart::Busy(holder) => panic!("the session is held by {holder:?}"),
    }
}

fn done(session_id: &str, run_id: &str) -> Append {
    let message = ChatMessage {
        id: "m1".into(),
        role: Role::Assistant,
        parts: Vec::new(),
        created_at: None,
        changes: None,
        usage: None,
    };
    let frame = ChatFrame::Done(DoneFrame {
        seq: None,
        run_id: run_id.into(),
        message,
        session_id: session_id.into(),
        session_file: None,
        session_reset: None,
    });
    Append { frames: vec![frame], ends_run: Some(RunStatus::Done), ..deltas(session_id, Some(run_id), 0) }
}

/// Every implementation under test, each over a fresh, empty store: SQLite in a temporary directory, and a new
/// database on the tests' PostgreSQL server.
async fn stores() -> Vec<(Arc<dyn Store>, tempfile::TempDir)> {
    raw_stores().await.into_iter().map(|(store, _, dir)| (store, dir)).collect()
}

/// `stores`, each with its database as a test reads it past the `Store` trait.
pub async fn raw_stores() -> Vec<(Arc<dyn Store>, RawDatabase, tempfile::TempDir)> {
    let dir = tempfile::tempdir().unwrap();
    let sqlite: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path()).unwrap());
    let file = RawDatabase::Sqlite(dir.path().join("chatwire.db"));
    let url = super::postgres::test_server::server().fresh_database().await;
    let postgres: Arc<dyn Store> = Arc::new(PostgresStore::open(&url).await.unwrap());
    vec![(sqlite, file, dir), (postgres, RawDatabase::Postgres(url), tempfile::tempdir().unwrap())]
}

/// A store's database, opened apart from the store: what the trait cannot show, such as rows a search would not
/// return anyway (its join to `sessions` hides a document whose session is gone).
pub enum RawDatabase {
    Sqlite(std::path::PathBuf),
    Postgres(String),
}

impl RawDatabase {
    /// The rows the search index holds for `session_id`, and in all. For SQLite that is `search_docs`, checked
    /// against the FTS5 table: its per-document sizes (`search_fts_docsize`) must be as many, and its
    /// `integrity-check` (which for an external-content table compares the index with `search_docs`) must pass,
    /// or words of deleted documents would stay in the index unseen.
    pub async fn index_rows(&self, session_id: &str) -> (i64, i64) {
        match self {
            RawDatabase::Sqlite(path) => {
                let connection = rusqlite::Connection::open(path).unwrap();
                let count = |sql: &str| connection.query_row(sql, [session_id], |row| row.get::<_, i64>(0)).unwrap();
                let of_session = count("SELECT count(*) FROM search_docs WHERE session_id = ?1");
                let all = count("SELECT count(*) FROM search_docs WHERE ?1 IS NOT NULL");
                let sized = count("SELECT count(*) FROM search_fts_docsize WHERE ?1 IS NOT NULL");
                assert_eq!(sized, all, "the FTS5 table holds as many documents as search_docs");
                connection
                    .execute("INSERT INTO search_fts (search_fts, rank) VALUES ('integrity-check', 1)", [])
                    .expect("the FTS5 index matches search_docs");
                (of_session, all)
            }
            RawDatabase::Postgres(url) => {
                let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
                let connection = tokio::spawn(connection);
                let row = client
                    .query_one(
                        "SELECT count(*) FILTER (WHERE session_id = $1), count(*) FROM search_docs",
                        &[&session_id],
                    )
                    .await
                    .unwrap();
                drop(client);
                connection.await.unwrap().unwrap();
                (row.get(0), row.get(1))
            }
        }
    }
}

#[tokio::test]
async fn appends_get_consecutive_seqs_across_batches_and_lines_carry_them() {
    for (store, _dir) in stores().await {
        store.create_session("s1", "", None, 1).await.unwrap();
        let first = store.append(deltas("s1", Some("r1"), 3)).await.unwrap();
        let second = store.append(deltas("s1", Some("r1"), 2)).await.unwrap();
        let seqs: Vec<Seq> = first.iter().chain(&second).map(|a| a.logged.seq).collect();
        assert_eq!(seqs, [1, 2, 3, 4, 5]);
        assert_eq!(second[0].frame.seq(), Some(4));
        let logged = store.frames_after("s1", 3, 10).await.unwrap();
        assert_eq!(logged.iter().map(|f| f.seq).collect::<Vec<_>>(), [4, 5]);
        assert_eq!(logged[0].line, r#"{"type":"delta","seq":4,"text":"piece 0"}"#);
        assert_eq!(logged[0].run_id.as_deref(), Some("r1"));
        assert_eq!(store.last_seq("s1").await.unwrap(), Some(5));
        assert_eq!(store.session("s1").await.unwrap().unwrap().last_seq, 5);
        assert_eq!(store.frames_after("s1", 0, 2).await.unwrap().len(), 2, "the limit holds");
    }
}

#[tokio::test]
async fn appending_to_a_missing_session_is_an_error() {
    for (store, _dir) in stores().await {
        assert!(matches!(store.append(deltas("nope", None, 1)).await, Err(StoreError::NoSession(_))));
        assert_eq!(store.last_seq("nope").await.unwrap(), None);
    }
}

#[tokio::test]
async fn deleting_a_session_deletes_its_log() {
    for (store, _dir) in stores().await {
        store.create_session("s1", "t", None, 1).await.unwrap();
        store.append(deltas("s1", None, 1)).await.unwrap();
        assert!(store.delete_session("s1").await.unwrap());
        assert!(!store.delete_session("s1").await.unwrap());
        assert!(store.frames_after("s1", 0, 10).await.unwrap().is_empty());
        assert!(store.session("s1").await.unwrap().is_none());
    }
}

#[tokio::test]
async fn a_terminal_frame_ends_its_run_in_the_same_append() {
    for (store, _dir) in stores().await {
        store.create_session("s1", "", None, 1).await.unwrap();
        let lease = started(store.as_ref(), "r1", "s1", "me", TTL).await;
        assert_eq!(store.session("s1").await.unwrap().unwrap().status, SessionStatus::Running);
        store.append(Append { lease: Some(lease.clone()), ..deltas("s1", Some("r1"), 1) }).await.unwrap();
        store.append(Append { lease: Some(lease), ..done("s1", "r1") }).await.unwrap();
        // Nothing else was called after the append: what a crash right after it leaves behind.
        assert_eq!(store.lease_holder("s1").await.unwrap(), None, "the terminal frame released the lease");
        assert_eq!(store.stale_runs().await.unwrap(), []);
        assert_eq!(store.run_status("r1").await.unwrap(), Some(RunStatus::Done));
        let session = store.session("s1").await.unwrap().unwrap();
        assert_eq!(session.status, SessionStatus::Idle);
        assert_eq!(session.message_count, 1, "a done counts as a message");
        assert_eq!(store.run_terminal_kind("s1", "r1").await.unwrap().as_deref(), Some("done"));
        assert_eq!(store.run_terminal_kind("s1", "r2").await.unwrap(), None);
    }
}

#[tokio::test]
async fn a_cursor_beyond_every_seq_reads_nothing() {
    for (store, _dir) in stores().await {
        store.create_session("s1", "", None, 1).await.unwrap();
        store.append(deltas("s1", None, 1)).await.unwrap();
        assert_eq!(store.frames_after("s1", u64::MAX, 10).await.unwrap(), []);
        assert_eq!(store.frames_after("s1", i64::MAX as u64 + 1, 10).await.unwrap(), []);
        assert_eq!(store.frames_after("s1", 0, 10).await.unwrap().len(), 1);
    }
}

#[tokio::test]
async fn of_many_concurrent_claims_of_one_request_id_exactly_one_wins() {
    for (store, _dir) in stores().await {
        store.create_session("s1", "", None, 1).await.unwrap();
        let claims = (0..16).map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let record = RequestRecord {
                    session_id: "s1".into(),
                    body_hash: "h".into(),
                    run_id: format!("run-{i}"),
                    after_seq: 0,
                };
                store.claim_request("req-1", &record, 10).await.unwrap()
            })
        });
        let mut winners = 0;
        let mut taken_runs = Vec::new();
        for claim in futures_util::future::join_all(claims).await {
            match claim.unwrap() {
                RequestClaim::Claimed => winners += 1,
                RequestClaim::Taken(record) => taken_runs.push(record.run_id),
            }
        }
        assert_eq!(winners, 1);
        taken_runs.dedup();
        assert_eq!(taken_runs.len(), 1, "every loser sees the one winner's record");
        store.set_request_run("req-1", "run-moved").await.unwrap();
        let record = RequestRecord { session_id: "s1".into(), body_hash: "h".into(), run_id: "x".into(), after_seq: 0 };
        assert!(matches!(store.claim_request("req-1", &record, 11).await.unwrap(),
            RequestClaim::Taken(taken) if taken.run_id == "run-moved"));
    }
}

#[tokio::test]
async fn old_request_ids_are_forgotten_and_can_be_used_again() {
    for (store, _dir) in stores().await {
        store.create_session("s1", "", None, 1).await.unwrap();
        let record = RequestRecord { session_id: "s1".into(), body_hash: "h".into(), run_id: "r".into(), after_seq: 0 };
        store.claim_request("old", &record, 100).await.unwrap();
        store.claim_request("new", &record, 200).await.unwrap();
        assert_eq!(store.forget_requests_before(150).await.unwrap(), 1);
        assert_eq!(store.claim_request("old", &record, 300).await.unwrap(), RequestClaim::Claimed);
        assert!(matches!(store.claim_request("new", &record, 300).await.unwrap(), RequestClaim::Taken(_)));
    }
}

#[tokio::test]
async fn sessions_are_listed_most_recent_first_and_titled_once() {
    for (store, _dir) in stores().await {
        store.create_session("a", "", None, 1).await.unwrap();
        store.create_session("b", "Named", None, 2).await.unwrap();
        store.title_if_unset("a", "From the first message").await.unwrap();
        store.title_if_unset("b", "Not this").await.unwrap();
        assert!(store.rename_session("a", "Renamed", 5).await.unwrap());
        assert!(!store.rename_session("zz", "x", 5).await.unwrap());
        let listed = store.sessions().await.unwrap();
        let titles: Vec<(&str, &str)> = listed.iter().map(|s| (s.session_id.as_str(), s.title.as_str())).collect();
        assert_eq!(titles, [("a", "Renamed"), ("b", "Named")]);
    }
}

#[tokio::test]
async fn a_session_keeps_the_agent_it_was_first_bound_to() {
    for (store, _dir) in stores().await {
        let named = store.create_session("named", "", Some("pi"), 1).await.unwrap();
        assert_eq!(named.agent.as_deref(), Some("pi"));
        assert_eq!(store.bind_agent("named", "agent").await.unwrap().as_deref(), Some("pi"), "bound at creation");
        assert_eq!(store.create_session("later", "", None, 2).await.unwrap().agent, None);
        assert_eq!(store.bind_agent("later", "opencode").await.unwrap().as_deref(), Some("opencode"));
        assert_eq!(store.bind_agent("later", "agent").await.unwrap().as_deref(), Some("opencode"), "bound for life");
        store.append(deltas("later", None, 1)).await.unwrap();
        assert_eq!(store.session("later").await.unwrap().unwrap().agent.as_deref(), Some("opencode"));
        let listed: Vec<(String, Option<String>)> =
            store.sessions().await.unwrap().into_iter().map(|s| (s.session_id, s.agent)).collect();
        assert_eq!(listed, [("later".into(), Some("opencode".into())), ("named".into(), Some("pi".into()))]);
        assert_eq!(store.bind_agent("nope", "agent").await.unwrap(), None, "no such session");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_many_concurrent_bindings_of_a_session_one_wins_and_all_learn_which() {
    for (store, _dir) in stores().await {
        store.create_session("s1", "", None, 1).await.unwrap();
        let binds = (0..16).map(|i| {
            let store = store.clone();
            tokio::spawn(async move { store.bind_agent("s1", &format!("agent-{i}")).await.unwrap() })
        });
        let mut bound: Vec<Option<String>> =
            futures_util::future::join_all(binds).await.into_iter().map(Result::unwrap).collect();
        bound.dedup();
        assert_eq!(bound.len(), 1, "every binding answered the one winner: {bound:?}");
        assert_eq!(store.session("s1").await.unwrap().unwrap().agent, bound[0]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_appends_keep_every_log_gap_free_and_a_bad_one_fails_alone() {
    for (store, _dir) in stores().await {
        for i in 0..8 {
            store.create_session(&format!("s{i}"), "", None, 1).await.unwrap();
        }
        let appends: Vec<_> = (0..160)
            .map(|k| {
                let store = store.clone();
                tokio::spawn(async move { store.append(deltas(&format!("s{}", k % 8), None, 3)).await })
            })
            .collect();
        let bad = tokio::spawn({
            let store = store.clone();
            async move { store.append(deltas("nope", None, 1)).await }
        });
        for append in futures_util::future::join_all(appends).await {
            assert_eq!(append.unwrap().unwrap().len(), 3);
        }
        assert!(matches!(bad.await.unwrap(), Err(StoreError::NoSession(_))));
        for i in 0..8 {
            let seqs: Vec<Seq> =
                store.frames_after(&format!("s{i}"), 0, 1000).await.unwrap().iter().map(|f| f.seq).collect();
            assert_eq!(seqs, (1..=60).collect::<Vec<Seq>>(), "session s{i}");
        }
    }
}

#[tokio::test]
async fn a_run_holds_its_session_until_its_end_and_a_lost_lease_cannot_append() {
    for (store, _dir) in stores().await {
        store.create_session("s1", "", None, 1).await.unwrap();
        let lease = started(store.as_ref(), "r1", "s1", "a", TTL).await;
        let RunStart::Busy(holder) = store.start_run("r2", "s1", "b", TTL, 1).await.unwrap() else {
            panic!("a second run started on a held session")
        };
        assert_eq!((holder.owner.as_str(), holder.run_id.as_deref(), holder.expired), ("a", Some("r1"), false));
        assert_eq!(store.take_over("r1", "s1", "b", TTL).await.unwrap(), None, "a live lease is not taken over");
        assert_eq!(store.renew_leases("a", TTL).await.unwrap(), ["s1"]);
        assert_eq!(store.renew_leases("b", TTL).await.unwrap(), Vec::<String>::new());
        store.expire_leases("a").await.unwrap();
        assert_eq!(
            store.stale_runs().await.unwrap(),
            [InterruptedRun { run_id: "r1".into(), session_id: "s1".into() }]
        );
        let taken = store.take_over("r1", "s1", "b", TTL).await.unwrap().expect("an expired lease is taken over");
        assert_eq!(taken.generation, lease.generation + 1);
        assert_eq!(store.take_over("r1", "s1", "c", TTL).await.unwrap(), None, "only one instance takes it over");
        let lost = store.append(Append { lease: Some(lease.clone()), ..deltas("s1", Some("r1"), 1) }).await;
        assert!(matches!(lost, Err(StoreError::LeaseLost(_))), "{lost:?}");
        assert_eq!(store.last_seq("s1").await.unwrap(), Some(0), "the refused append left nothing");
        store.append(Append { lease: Some(taken), ..done("s1", "r1") }).await.unwrap();
        assert_eq!(store.lease_holder("s1").await.unwrap(), None);
        assert_eq!(store.take_over("r1", "s1", "c", TTL).await.unwrap(), None, "an ended run is not taken over");
        let next = started(store.as_ref(), "r2", "s1", "b", TTL).await;
        assert_eq!(next.generation, lease.generation + 2);
    }
}

#[tokio::test]
async fn a_lease_not_renewed_in_time_expires_by_itself() {
    for (store, _dir) in stores().await {
        store.create_session("s1", "", None, 1).await.unwrap();
        started(store.as_ref(), "r1", "s1", "a", Duration::from_millis(150)).await;
        assert_eq!(store.stale_runs().await.unwrap(), []);
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(store.lease_holder("s1").await.unwrap().unwrap().expired);
        assert_eq!(store.stale_runs().await.unwrap().len(), 1);
        assert!(matches!(store.start_run("r2", "s1", "b", TTL, 1).await.unwrap(), RunStart::Busy(h) if h.expired));
    }
}

#[tokio::test]
async fn controls_wait_for_their_owner_and_are_forgotten_once_answered() {
    for (store, _dir) in stores().await {
        store.create_session("s1", "", None, 1).await.unwrap();
        let first = store.post_control("s1", "r1", "a", r#"{"type":"stop"}"#, 10).await.unwrap();
        let second = store.post_control("s1", "r1", "a", r#"{"type":"x"}"#, 10).await.unwrap();
        store.post_control("s1", "r1", "b", "{}", 10).await.unwrap();
        let pending = store.pending_controls("a").await.unwrap();
        assert_eq!(pending.iter().map(|c| c.id).collect::<Vec<_>>(), [first, second]);
        assert_eq!(pending[0].body, r#"{"type":"stop"}"#);
        assert_eq!(store.take_control_reply(first).await.unwrap(), None, "no answer yet");
        store.answer_control(first, "true").await.unwrap();
        assert_eq!(store.pending_controls("a").await.unwrap().len(), 1);
        assert_eq!(store.take_control_reply(first).await.unwrap().as_deref(), Some("true"));
        assert_eq!(store.take_control_reply(first).await.unwrap(), None, "taken once");
        store.forget_requests_before(11).await.unwrap();
        assert_eq!(store.pending_controls("a").await.unwrap(), [], "old controls are purged");
    }
}

fn said(session_id: &str, id: &str, role: Role, parts: Vec<ChatMessagePart>) -> Append {
    let message = ChatMessage { id: id.into(), role, parts, created_at: None, changes: None, usage: None };
    let frame = ChatFrame::Message(crate::protocol::MessageFrame { seq: None, message });
    Append { frames: vec![frame], ..deltas(session_id, None, 0) }
}

/// An answer as a run logs it: a `done` frame with the whole message.
fn answered(session_id: &str, id: &str, text: &str) -> Append {
    let message = ChatMessage {
        id: id.into(),
        role: Role::Assistant,
        parts: vec![ChatMessagePart::text(text)],
        created_at: None,
        changes: None,
        usage: None,
    };
    let frame = ChatFrame::Done(DoneFrame {
        seq: None,
        run_id: "r1".into(),
        message,
        session_id: session_id.into(),
        session_file: None,
        session_reset: None,
    });
    Append { frames: vec![frame], ..deltas(session_id, Some("r1"), 0) }
}

pub fn prompt(session_id: &str, id: &str, text: &str) -> Append {
    said(session_id, id, Role::User, vec![ChatMessagePart::text(text)])
}

/// A logged prompt as it is stored, for databases written by hand.
pub fn prompt_line(seq: Seq, id: &str, text: &str) -> String {
    let Append { mut frames, .. } = prompt("s1", id, text);
    frames[0].set_seq(seq);
    let mut line = crate::ndjson::encode_frame(&frames[0]);
    line.pop();
    line
}

fn marked(hit: &SearchHit) -> String {
    hit.snippet.iter().map(|p| if p.highlight { format!("[{}]", p.text) } else { p.text.clone() }).collect()
}

#[tokio::test]
async fn a_logged_message_is_found_with_its_seq_and_a_highlighted_snippet() {
    for (store, _dir) in stores().await {
        store.create_session("s1", "", None, 1).await.unwrap();
        store.create_session("s2", "", None, 1).await.unwrap();
        store.append(deltas("s1", None, 2)).await.unwrap();
        store.append(prompt("s1", "m1", "Please refactor the Parser in src/parse.rs")).await.unwrap();
        store.append(prompt("s2", "m2", "nothing to see")).await.unwrap();
        let hits = store.search("refact parse", 10).await.unwrap();
        assert_eq!(hits.len(), 1, "{hits:?}");
        assert_eq!(
            (hits[0].session_id.as_str(), hits[0].seq, hits[0].message_id.as_deref()),
            ("s1", Some(3), Some("m1"))
        );
        assert_eq!(marked(&hits[0]), "Please [refactor] the [Parser] in src/[parse].rs");
        assert!(store.search("refactor missing", 10).await.unwrap().is_empty(), "every word must match");
        assert_eq!(store.search("SEE", 10).await.unwrap()[0].session_id, "s2", "case does not matter");
    }
}

#[tokio::test]
async fn titles_are_found_kept_current_on_rename_and_gone_with_their_session() {
    for (store, _dir) in stores().await {
        store.create_session("s1", "Deploy checklist", None, 1).await.unwrap();
        store.create_session("s2", "", None, 1).await.unwrap();
        store.title_if_unset("s2", "Kernel panic").await.unwrap();
        let hit = store.search("deploy", 10).await.unwrap();
        assert_eq!((hit.len(), hit[0].session_id.as_str(), hit[0].seq), (1, "s1", None));
        assert_eq!(marked(&hit[0]), "[Deploy] checklist");
        assert_eq!(store.search("kernel", 10).await.unwrap()[0].session_id, "s2");
        store.rename_session("s1", "Release notes", 2).await.unwrap();
        assert!(store.search("deploy", 10).await.unwrap().is_empty(), "the old title is forgotten");
        let hit = store.search("release", 10).await.unwrap();
        assert_eq!((hit.len(), hit[0].title.as_str()), (1, "Release notes"));
        store.append(prompt("s1", "m1", "release it on friday")).await.unwrap();
        assert_eq!(store.search("release", 10).await.unwrap().len(), 2);
        assert_eq!(store.search("release", 1).await.unwrap().len(), 1, "the limit holds");
        assert!(store.delete_session("s1").await.unwrap());
        assert!(store.search("release", 10).await.unwrap().is_empty(), "a deleted session is not found");
        assert!(store.search("friday", 10).await.unwrap().is_empty());
        assert_eq!(store.search("kernel", 10).await.unwrap().len(), 1);
    }
}

#[tokio::test]
async fn a_deleted_session_leaves_no_row_in_the_search_index() {
    for (store, raw, _dir) in raw_stores().await {
        for id in ["gone", "kept"] {
            store.create_session(id, "Wombat notes", None, 1).await.unwrap();
            store.append(prompt(id, &format!("{id}-q"), "where do wombats sleep")).await.unwrap();
            store.append(answered(id, &format!("{id}-a"), "wombats sleep in burrows")).await.unwrap();
        }
        store.rename_session("gone", "Wombat burrows", 2).await.unwrap();
        assert_eq!(raw.index_rows("gone").await, (3, 6), "a title, a prompt and an answer each");
        assert!(store.delete_session("gone").await.unwrap());
        assert_eq!(raw.index_rows("gone").await, (0, 3), "the other session's documents stay");
        let hits = store.search("wombat", 10).await.unwrap();
        assert!(hits.iter().all(|hit| hit.session_id == "kept") && hits.len() == 3, "{hits:?}");
    }
}

#[tokio::test]
async fn hits_are_ranked_a_title_above_a_message_and_more_matches_above_fewer() {
    for (store, _dir) in stores().await {
        store.create_session("few", "", None, 1).await.unwrap();
        store.create_session("many", "", None, 1).await.unwrap();
        store.create_session("titled", "kubernetes notes", None, 1).await.unwrap();
        store.append(prompt("few", "m1", "kubernetes is one of five words")).await.unwrap();
        store.append(prompt("many", "m2", "kubernetes kubernetes kubernetes and more words")).await.unwrap();
        let hits = store.search("kubernetes", 10).await.unwrap();
        let order: Vec<&str> = hits.iter().map(|hit| hit.session_id.as_str()).collect();
        assert_eq!(order, ["titled", "many", "few"], "{hits:?}");
        assert!(hits[0].rank > hits[1].rank && hits[1].rank > hits[2].rank);
    }
}

#[tokio::test]
async fn answers_and_tool_commands_are_indexed_but_thinking_is_not() {
    for (store, _dir) in stores().await {
        store.create_session("s1", "", None, 1).await.unwrap();
        let mut bash = crate::protocol::ChatToolPart::new("Bash", "t1", crate::protocol::ToolState::OutputAvailable);
        bash.input = Some(serde_json::json!({ "command": "grep -rn frobnicate ." }));
        bash.output = Some(serde_json::json!({ "output": "outputword" }));
        let message = ChatMessage {
            id: "a1".into(),
            role: Role::Assistant,
            parts: vec![
                ChatMessagePart::thinking("secretthought"),
                ChatMessagePart::tool(bash),
                ChatMessagePart::text("The answer is visible"),
            ],
            created_at: None,
            changes: None,
            usage: None,
        };
        let frame = ChatFrame::Done(DoneFrame {
            seq: None,
            run_id: "r1".into(),
            message,
            session_id: "s1".into(),
            session_file: None,
            session_reset: None,
        });
        store.append(Append { frames: vec![frame], ..deltas("s1", Some("r1"), 0) }).await.unwrap();
        assert_eq!(store.search("visible", 10).await.unwrap()[0].message_id.as_deref(), Some("a1"));
        assert_eq!(store.search("frobnicate", 10).await.unwrap().len(), 1, "a tool's command is indexed");
        assert!(store.search("secretthought", 10).await.unwrap().is_empty(), "thinking is not indexed");
        assert!(store.search("outputword", 10).await.unwrap().is_empty(), "tool output is not indexed");
        assert!(store.search("piece", 10).await.unwrap().is_empty(), "deltas are not indexed");
    }
}

#[tokio::test]
async fn hostile_queries_are_answered() {
    let long = "word ".repeat(2048);
    let queries = [
        "",
        "   ",
        "\"",
        "\"unbalanced",
        "*",
        "foo*",
        "a:b",
        "body:x",
        "(",
        "())",
        "NEAR(a b)",
        "a NEAR b",
        "-x",
        "^x",
        "a AND OR NOT b",
        "'",
        "'; DROP TABLE sessions; --",
        "\\",
        "a & b | !c",
        "x:*",
        "<->",
        "\u{0}",
        "日本語",
        long.as_str(),
    ];
    for (store, _dir) in stores().await {
        store.create_session("s1", "Some title", None, 1).await.unwrap();
        store.append(prompt("s1", "m1", "a word, and NEAR body x")).await.unwrap();
        for query in queries {
            let hits = store.search(query, 10).await;
            assert!(hits.is_ok(), "{query:?}: {hits:?}");
        }
        assert_eq!(store.search("\"near", 10).await.unwrap().len(), 1, "NEAR is a word like any other");
        assert!(store.search("\"*:(", 10).await.unwrap().is_empty(), "no word, no hits");
    }
}

#[tokio::test]
async fn a_query_matching_more_than_are_ranked_ranks_the_newest() {
    for (store, _dir) in stores().await {
        store.create_session("s1", "", None, 1).await.unwrap();
        let count = search::RANKED_AT_MOST as usize + 50;
        let frames = (0..count)
            .map(|i| {
                let text = if i == 0 { "common common common common".to_owned() } else { format!("common {i}") };
                let message = ChatMessage {
                    id: format!("m{i}"),
                    role: Role::User,
                    parts: vec![ChatMessagePart::text(text)],
                    created_at: None,
                    changes: None,
                    usage: None,
                };
                ChatFrame::Message(crate::protocol::MessageFrame { seq: None, message })
            })
            .collect();
        store.append(Append { frames, ..deltas("s1", None, 0) }).await.unwrap();
        let hits = store.search("common", 50).await.unwrap();
        assert_eq!(hits.len(), 50);
        assert!(hits.iter().all(|hit| hit.seq.unwrap() > 50), "only the newest are ranked: {:?}", hits[0].seq);
    }
}

/// A batch of the `usage` frames of model calls that each used `usage`.
pub fn calls_used(session_id: &str, usage: TokenUsage, calls: usize) -> Append {
    let frame = ChatFrame::Usage(UsageFrame { seq: None, run_id: None, message_id: None, usage, context: None });
    Append { frames: vec![frame; calls], ..deltas(session_id, None, 0) }
}

fn used(session_id: &str, input: u64, cache_read: u64, cost: Option<f64>) -> Append {
    calls_used(session_id, TokenUsage { input, output: 10, cache_read, cache_write: 0, cost }, 2)
}

#[tokio::test]
async fn sessions_sum_the_usage_of_their_logged_calls() {
    for (store, _dir) in stores().await {
        store.create_session("s1", "", None, 1).await.unwrap();
        store.create_session("s2", "", None, 1).await.unwrap();
        store.append(deltas("s1", None, 2)).await.unwrap();
        assert_eq!(store.session("s1").await.unwrap().unwrap().usage, None, "nothing counted yet");
        store.append(used("s1", 100, 0, None)).await.unwrap();
        let unpriced = store.session("s1").await.unwrap().unwrap().usage.unwrap();
        assert_eq!((unpriced.input, unpriced.output, unpriced.cost), (200, 20, None), "no price: unknown, not free");
        store.append(used("s1", 1, 500, Some(0.25))).await.unwrap();
        let listed = store.sessions().await.unwrap();
        let s1 = listed.iter().find(|s| s.session_id == "s1").unwrap().usage.clone().unwrap();
        assert_eq!(
            s1,
            TokenUsage { input: 202, output: 40, cache_read: 1000, cache_write: 0, cost: Some(0.5) },
            "both calls of each batch, and only the known costs"
        );
        assert_eq!(listed.iter().find(|s| s.session_id == "s2").unwrap().usage, None, "another session's own");
    }
}

#[tokio::test]
async fn an_attachment_is_kept_once_under_its_id_with_its_bytes_exactly() {
    for (store, _dir) in stores().await {
        let bytes: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
        let kept = StoredAttachment { id: "a".repeat(64), media_type: "image/png".into(), bytes: bytes.clone() };
        assert_eq!(store.attachment(&kept.id).await.unwrap(), None);
        assert_eq!(store.attachment_meta(&kept.id).await.unwrap(), None);
        store.put_attachment(&kept, 1).await.unwrap();
        // Kept again (the same bytes from another upload): nothing changes, nothing fails.
        store.put_attachment(&StoredAttachment { media_type: "text/plain".into(), ..kept.clone() }, 2).await.unwrap();
        assert_eq!(store.attachment(&kept.id).await.unwrap(), Some(kept.clone()));
        let meta = store.attachment_meta(&kept.id).await.unwrap();
        assert_eq!(meta, Some(AttachmentMeta { media_type: "image/png".into(), size: 70_000 }));
    }
}
