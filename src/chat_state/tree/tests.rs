//! Branches in the reducer (DESIGN §11), one rule per test: what edits, regenerations, steering and branch
//! switches do to the shown branch and to the tree.

use crate::chat_state::{ChatSnapshot, apply};
use crate::protocol::*;

fn start(seq: Seq, id: &str, branch: Option<Option<&str>>) -> ChatFrame {
    ChatFrame::Start(StartFrame {
        seq: Some(seq),
        id: id.into(),
        run_id: format!("run-{id}"),
        session_id: "s".into(),
        session_file: None,
        session_reset: None,
        diagnostics: None,
        branch: branch.map(|parent| BranchPoint { parent_id: parent.map(str::to_owned) }),
    })
}

fn user(seq: Seq, id: &str, text: &str) -> ChatFrame {
    ChatFrame::Message(MessageFrame {
        seq: Some(seq),
        message: ChatMessage {
            id: id.into(),
            role: Role::User,
            parts: vec![ChatMessagePart::text(text)],
            created_at: None,
            changes: None,
            usage: None,
        },
    })
}

fn done(seq: Seq, id: &str, text: &str) -> ChatFrame {
    ChatFrame::Done(DoneFrame {
        seq: Some(seq),
        run_id: format!("run-{id}"),
        message: ChatMessage {
            id: id.into(),
            role: Role::Assistant,
            parts: vec![ChatMessagePart::text(text)],
            created_at: None,
            changes: None,
            usage: None,
        },
        session_id: "s".into(),
        session_file: None,
        session_reset: None,
    })
}

fn switch(seq: Seq, last: &str) -> ChatFrame {
    ChatFrame::Branch(BranchFrame { seq: Some(seq), message_id: last.into() })
}

fn summary(last_seq: Seq) -> SessionSummary {
    SessionSummary {
        session_id: "s".into(),
        title: "t".into(),
        created_at: 0,
        updated_at: 0,
        status: SessionStatus::Idle,
        message_count: 0,
        last_seq,
        usage: None,
        agent: None,
    }
}

fn reduce(frames: &[ChatFrame]) -> ChatSnapshot {
    let mut snapshot = ChatSnapshot::default();
    for frame in frames {
        apply(&mut snapshot, frame);
    }
    snapshot
}

fn shown(snapshot: &ChatSnapshot) -> Vec<&str> {
    snapshot.messages.iter().map(|message| message.id.as_str()).collect()
}

fn siblings(snapshot: &ChatSnapshot, id: &str) -> (usize, Vec<String>) {
    let siblings = snapshot.tree.siblings(id).expect("the message is in the tree");
    (siblings.position, siblings.ids.to_vec())
}

/// Two runs: u1 → a1, u2 → a2.
fn two_runs() -> Vec<ChatFrame> {
    vec![
        start(1, "a1", None),
        user(2, "u1", "first"),
        done(3, "a1", "one"),
        start(4, "a2", None),
        user(5, "u2", "second"),
        done(6, "a2", "two"),
    ]
}

#[test]
fn runs_without_a_branch_chain_each_message_to_the_one_before() {
    let s = reduce(&two_runs());
    assert_eq!(shown(&s), ["u1", "a1", "u2", "a2"]);
    assert_eq!(s.tree.path_to(Some("a2")), ["u1", "a1", "u2", "a2"]);
    assert_eq!(s.tree.parent("u1"), Some(&None));
    assert!(!s.tree.has_branches());
}

#[test]
fn editing_the_first_message_starts_a_sibling_at_the_session_start_and_keeps_the_old_branch() {
    let mut frames = two_runs();
    frames.extend([start(7, "a3", Some(None)), user(8, "u3", "first, edited"), done(9, "a3", "three")]);
    let s = reduce(&frames);
    assert_eq!(shown(&s), ["u3", "a3"]);
    assert_eq!(siblings(&s, "u3"), (1, vec!["u1".into(), "u3".into()]));
    assert_eq!(s.tree.shelved("a2").map(|m| m.text()), Some("two".into()), "the old branch is kept whole");
    assert!(s.message("u1").is_none(), "the old branch is not shown");
}

#[test]
fn editing_a_later_message_keeps_what_came_before_it() {
    let mut frames = two_runs();
    frames.extend([start(7, "a3", Some(Some("a1"))), user(8, "u3", "second, edited"), done(9, "a3", "three")]);
    let s = reduce(&frames);
    assert_eq!(shown(&s), ["u1", "a1", "u3", "a3"]);
    assert_eq!(siblings(&s, "u3"), (1, vec!["u2".into(), "u3".into()]));
}

#[test]
fn regenerating_adds_a_sibling_answer_to_the_same_user_message() {
    let mut frames = two_runs();
    frames.extend([start(7, "a3", Some(Some("u2"))), done(8, "a3", "two again")]);
    let s = reduce(&frames);
    assert_eq!(shown(&s), ["u1", "a1", "u2", "a3"]);
    assert_eq!(siblings(&s, "a3"), (1, vec!["a2".into(), "a3".into()]));
    let (position, ids) = siblings(&s, "a3");
    let at = s.tree.siblings("a3").unwrap();
    assert_eq!((at.previous(), at.next()), (Some("a2"), None));
    assert_eq!((position, ids.len()), (1, 2));
}

#[test]
fn a_branch_frame_shows_the_branch_down_to_the_message_it_names() {
    let mut frames = two_runs();
    frames.extend([start(7, "a3", Some(None)), user(8, "u3", "edited"), done(9, "a3", "three"), switch(10, "a2")]);
    let s = reduce(&frames);
    assert_eq!(shown(&s), ["u1", "a1", "u2", "a2"]);
    assert_eq!(s.tree.shelved("u3").map(|m| m.text()), Some("edited".into()));
    // Back again, and the tree remembers which sibling each message showed.
    let mut s = s;
    apply(&mut s, &switch(11, "a3"));
    assert_eq!(shown(&s), ["u3", "a3"]);
    assert_eq!(s.tree.leaf_from("u1"), "a2");
}

#[test]
fn a_new_run_after_a_switch_continues_the_branch_on_screen() {
    let mut frames = two_runs();
    frames.extend([
        start(7, "a3", Some(None)),
        user(8, "u3", "edited"),
        done(9, "a3", "three"),
        switch(10, "a2"),
        start(11, "a4", None),
        user(12, "u4", "more"),
        done(13, "a4", "four"),
    ]);
    let s = reduce(&frames);
    assert_eq!(shown(&s), ["u1", "a1", "u2", "a2", "u4", "a4"]);
    assert_eq!(s.tree.leaf_from("u3"), "a3");
}

#[test]
fn steering_during_a_branching_run_goes_before_its_answer() {
    let mut frames = two_runs();
    frames.extend([
        start(7, "a3", Some(Some("a1"))),
        user(8, "u3", "edited"),
        user(9, "s3", "and also"),
        done(10, "a3", "three"),
    ]);
    let s = reduce(&frames);
    assert_eq!(shown(&s), ["u1", "a1", "u3", "s3", "a3"]);
    assert_eq!(s.tree.path_to(Some("a3")), ["u1", "a1", "u3", "s3", "a3"]);
    assert_eq!(siblings(&s, "u3").1, ["u2", "u3"]);
}

#[test]
fn a_branch_frame_during_a_run_or_naming_an_unknown_message_changes_nothing_shown() {
    let mut frames = two_runs();
    frames.extend([start(7, "a3", Some(None)), user(8, "u3", "edited"), switch(9, "a2")]);
    let s = reduce(&frames);
    assert_eq!(shown(&s), ["u3", "a3"], "the streaming answer stays on screen");
    let mut s = s;
    apply(&mut s, &done(10, "a3", "three"));
    apply(&mut s, &switch(11, "nope"));
    assert_eq!(shown(&s), ["u3", "a3"]);
    assert_eq!(s.last_seq, 11);
}

#[test]
fn a_renamed_answer_keeps_its_place_in_the_tree() {
    let frames = vec![
        start(1, "a1", None),
        user(2, "u1", "first"),
        done(3, "final-a1", "one"),
        start(4, "a2", Some(Some("u1"))),
        done(5, "a2", "again"),
    ];
    let s = reduce(&frames);
    assert_eq!(siblings(&s, "a2").1, ["final-a1", "a2"]);
    assert!(!s.tree.contains("a1"));
}

#[test]
fn the_detail_of_a_branched_session_rebuilds_the_same_tree() {
    let mut frames = two_runs();
    frames.extend([
        start(7, "a3", Some(None)),
        user(8, "u3", "edited"),
        done(9, "a3", "three"),
        start(10, "a4", Some(Some("u3"))),
        done(11, "a4", "three again"),
        switch(12, "a2"),
    ]);
    let s = reduce(&frames);
    let detail = s.to_detail(summary(s.last_seq));
    let json = serde_json::to_string(&detail).unwrap();
    let rebuilt = ChatSnapshot::from_detail(serde_json::from_str(&json).unwrap());
    assert_eq!(rebuilt.tree, s.tree);
    assert_eq!(rebuilt.messages, s.messages);
    let mut rebuilt = rebuilt;
    let mut s = s;
    apply(&mut s, &switch(13, "a4"));
    apply(&mut rebuilt, &switch(13, "a4"));
    assert_eq!(shown(&rebuilt), ["u3", "a4"]);
    assert_eq!(rebuilt.tree, s.tree);
}

#[test]
fn a_session_without_branches_sends_no_tree() {
    let s = reduce(&two_runs());
    assert_eq!(s.to_detail(summary(6)).branches, None);
}
