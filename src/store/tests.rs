//! What every `Store` must do, written against the trait so that each implementation runs the same checks.

use std::sync::Arc;

use super::*;
use crate::protocol::{ChatMessage, DeltaFrame, DoneFrame, Role};

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
    let message = ChatMessage { id: "m1".into(), role: Role::Assistant, parts: Vec::new(), created_at: None };
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
    let dir = tempfile::tempdir().unwrap();
    let sqlite: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path()).unwrap());
    let url = super::postgres::test_server::server().fresh_database().await;
    let postgres: Arc<dyn Store> = Arc::new(PostgresStore::open(&url).await.unwrap());
    vec![(sqlite, dir), (postgres, tempfile::tempdir().unwrap())]
}

#[tokio::test]
async fn appends_get_consecutive_seqs_across_batches_and_lines_carry_them() {
    for (store, _dir) in stores().await {
        store.create_session("s1", "", 1).await.unwrap();
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
        store.create_session("s1", "t", 1).await.unwrap();
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
        store.create_session("s1", "", 1).await.unwrap();
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
        store.create_session("s1", "", 1).await.unwrap();
        store.append(deltas("s1", None, 1)).await.unwrap();
        assert_eq!(store.frames_after("s1", u64::MAX, 10).await.unwrap(), []);
        assert_eq!(store.frames_after("s1", i64::MAX as u64 + 1, 10).await.unwrap(), []);
        assert_eq!(store.frames_after("s1", 0, 10).await.unwrap().len(), 1);
    }
}

#[tokio::test]
async fn of_many_concurrent_claims_of_one_request_id_exactly_one_wins() {
    for (store, _dir) in stores().await {
        store.create_session("s1", "", 1).await.unwrap();
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
        store.create_session("s1", "", 1).await.unwrap();
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
        store.create_session("a", "", 1).await.unwrap();
        store.create_session("b", "Named", 2).await.unwrap();
        store.title_if_unset("a", "From the first message").await.unwrap();
        store.title_if_unset("b", "Not this").await.unwrap();
        assert!(store.rename_session("a", "Renamed", 5).await.unwrap());
        assert!(!store.rename_session("zz", "x", 5).await.unwrap());
        let listed = store.sessions().await.unwrap();
        let titles: Vec<(&str, &str)> = listed.iter().map(|s| (s.session_id.as_str(), s.title.as_str())).collect();
        assert_eq!(titles, [("a", "Renamed"), ("b", "Named")]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_appends_keep_every_log_gap_free_and_a_bad_one_fails_alone() {
    for (store, _dir) in stores().await {
        for i in 0..8 {
            store.create_session(&format!("s{i}"), "", 1).await.unwrap();
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
        store.create_session("s1", "", 1).await.unwrap();
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
        store.create_session("s1", "", 1).await.unwrap();
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
        store.create_session("s1", "", 1).await.unwrap();
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
