//! Search across a session's branches, through the routes the page calls (`GET /api/search`, then `POST
//! /api/sessions/{id}/branch` with the hit's message id), on SQLite and on PostgreSQL: an edited or regenerated
//! message is still found, each hit opens the branch it is on, and a deleted session leaves no row in the index.

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;

use super::app::{TestApp, chat_over, chat_request, get, json_body, post, request, until_idle};
use crate::protocol::*;
use crate::runtime::builtin::AgentRuntime;
use crate::server::chat::Chat;
use crate::store::tests::{RawDatabase, raw_stores};

/// Every answer says the same, so a regenerated answer is found by the same words as the one it replaced.
const SCRIPT: &str = r#"{"delayMs": 1, "turns": [{"text": "They dig platypus burrows"}, {"text": "And sleep there"}]}"#;

struct Searched {
    app: TestApp,
    chat: Arc<Chat>,
    raw: RawDatabase,
}

impl Searched {
    /// A new session with a title of its own (else the first prompt would title it, and be found twice).
    async fn titled(&self, title: &str) -> String {
        self.chat.create_session(Some(title.into()), None).await.unwrap().session_id
    }

    /// Sends `message` (an edit or a regeneration with `rerun`) and waits for its run to end.
    async fn run(&self, session_id: &str, message: &str, rerun: Option<Rerun>) {
        self.chat.send(ChatRequest { rerun, ..chat_request(session_id, message) }).await.expect("a run starts");
        until_idle(&self.chat.live(session_id).await.unwrap()).await;
    }

    async fn search(&self, query: &str) -> Vec<SearchHit> {
        let response = self.app.call(get(&format!("/api/search?q={query}&limit=50"))).await;
        assert_eq!(response.status(), StatusCode::OK);
        serde_json::from_value::<SearchResponse>(json_body(response).await).expect("a search answer").hits
    }

    /// What the page gets when it opens the session.
    async fn detail(&self, session_id: &str) -> SessionDetail {
        let response = self.app.call(get(&format!("/api/sessions/{session_id}"))).await;
        assert_eq!(response.status(), StatusCode::OK);
        serde_json::from_value(json_body(response).await).expect("a session detail")
    }

    /// Opens `hit` as the page does when its message is not on the branch shown: asks for the branch through the
    /// hit's message id. Answers the transcript then shown.
    async fn open_branch_of(&self, hit: &SearchHit) -> SessionDetail {
        let message_id = hit.message_id.as_deref().expect("a message hit names its message");
        let body = serde_json::json!({ "messageId": message_id }).to_string();
        let response = self.app.call(post(&format!("/api/sessions/{}/branch", hit.session_id), &body)).await;
        assert_eq!(response.status(), StatusCode::OK);
        self.detail(&hit.session_id).await
    }
}

/// One app per store, each with its database to count rows in.
async fn searched() -> Vec<Searched> {
    let mut all = Vec::new();
    for (store, raw, dir) in raw_stores().await {
        let runtime = |models| Arc::new(AgentRuntime::new(models)) as Arc<dyn crate::runtime::Runtime>;
        let chat = chat_over(store, SCRIPT, dir.path(), Duration::from_secs(15), runtime).await;
        all.push(Searched { app: TestApp::over(chat.clone(), dir), chat, raw });
    }
    all
}

fn ids(detail: &SessionDetail) -> Vec<&str> {
    detail.messages.iter().map(|message| message.id.as_str()).collect()
}

/// The message of `hit` as the transcript shows it, lower-cased.
fn shown_text(detail: &SessionDetail, hit: &SearchHit) -> String {
    let id = hit.message_id.as_deref().expect("a message hit");
    let message = detail.messages.iter().find(|message| message.id == id);
    message.unwrap_or_else(|| panic!("{id} is on the branch shown: {:?}", ids(detail))).text().to_lowercase()
}

#[tokio::test]
async fn an_edited_message_is_found_and_its_hit_opens_the_branch_it_is_on() {
    for at in searched().await {
        let session = at.titled("Marsupials").await;
        at.run(&session, "Where do wombats sleep?", None).await;
        let first = at.search("wombats").await;
        assert_eq!(first.len(), 1, "{first:?}");
        let old = first[0].message_id.clone().expect("the prompt's hit names it");

        at.run(&session, "Where do koalas sleep?", Some(Rerun { kind: RerunKind::Edit, message_id: old.clone() }))
            .await;
        let edited = at.detail(&session).await;
        let new = at.search("koalas").await;
        assert_eq!(new.len(), 1, "the new version is found: {new:?}");
        assert_eq!(shown_text(&edited, &new[0]), "where do koalas sleep?", "and it is on the branch shown");
        let wombats = at.search("wombats").await;
        assert_eq!(wombats.len(), 1, "the replaced version is still found: {wombats:?}");
        assert_eq!(wombats[0].message_id.as_deref(), Some(old.as_str()), "under its own message");
        assert!(!ids(&edited).contains(&old.as_str()), "which is on a branch not shown");

        let opened = at.open_branch_of(&wombats[0]).await;
        assert_eq!(shown_text(&opened, &wombats[0]), "where do wombats sleep?");
        assert_eq!(opened.messages.len(), 2, "the old branch, with its answer: {:?}", ids(&opened));
        let back = at.open_branch_of(&new[0]).await;
        assert_eq!(ids(&back), ids(&edited), "the new version's hit opens the new branch again");
    }
}

#[tokio::test]
async fn each_hit_of_a_regenerated_answer_opens_its_own_version() {
    for at in searched().await {
        let session = at.titled("Marsupials").await;
        at.run(&session, "Where do wombats sleep?", None).await;
        let question = at.detail(&session).await.messages[0].id.clone();
        let regenerate = || Some(Rerun { kind: RerunKind::Regenerate, message_id: question.clone() });
        at.run(&session, "", regenerate()).await;
        at.run(&session, "", regenerate()).await;
        let shown = at.detail(&session).await;

        let hits = at.search("platypus").await;
        let mut answers: Vec<&str> = hits.iter().filter_map(|hit| hit.message_id.as_deref()).collect();
        answers.sort_unstable();
        answers.dedup();
        assert_eq!((hits.len(), answers.len()), (3, 3), "three versions, one hit each: {hits:?}");
        let off_screen = hits.iter().filter(|hit| !ids(&shown).contains(&hit.message_id.as_deref().unwrap()));
        assert_eq!(off_screen.count(), 2, "two of them on branches not shown");
        for hit in &hits {
            let opened = at.open_branch_of(hit).await;
            assert_eq!(shown_text(&opened, hit), "they dig platypus burrows");
            assert_eq!(opened.messages[0].id, question, "each version answers the same question");
        }
    }
}

#[tokio::test]
async fn a_deleted_session_with_branches_leaves_no_row_in_the_search_index() {
    for at in searched().await {
        let kept = at.titled("Wombat facts").await;
        at.run(&kept, "Where do wombats sleep?", None).await;
        let gone = at.titled("Wombat branches").await;
        at.run(&gone, "Where do wombats sleep?", None).await;
        let question = at.detail(&gone).await.messages[0].id.clone();
        at.run(&gone, "And koalas?", Some(Rerun { kind: RerunKind::Edit, message_id: question.clone() })).await;
        at.run(&gone, "", Some(Rerun { kind: RerunKind::Regenerate, message_id: question })).await;
        // The regeneration answers the first prompt again without logging it a second time.
        assert_eq!(at.raw.index_rows(&gone).await, (6, 9), "a title, two prompts and three answers");

        let delete = request("DELETE", &format!("/api/sessions/{gone}")).body(axum::body::Body::empty()).unwrap();
        let response = at.app.call(delete).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(at.raw.index_rows(&gone).await, (0, 3), "the other session's title, prompt and answer stay");
        assert!(at.search("koalas").await.is_empty());
        assert!(at.search("wombat").await.iter().all(|hit| hit.session_id == kept));
    }
}
