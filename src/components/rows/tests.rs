use leptos::prelude::*;

use super::*;
use crate::chat_state::apply;
use crate::protocol::*;

fn start(seq: Seq, id: &str) -> ChatFrame {
    ChatFrame::Start(StartFrame {
        seq: Some(seq),
        id: id.into(),
        run_id: format!("run-{seq}"),
        session_id: "s".into(),
        session_file: None,
        session_reset: None,
        diagnostics: None,
        branch: None,
    })
}

fn user(seq: Seq, text: &str) -> ChatFrame {
    ChatFrame::Message(MessageFrame {
        seq: Some(seq),
        message: ChatMessage {
            id: format!("u{seq}"),
            role: Role::User,
            parts: vec![ChatMessagePart::text(text)],
            created_at: None,
            changes: None,
            usage: None,
        },
    })
}

fn delta(seq: Seq, text: &str) -> ChatFrame {
    ChatFrame::Delta(DeltaFrame { seq: Some(seq), text: text.into(), message_id: None })
}

fn thinking(seq: Seq, text: &str) -> ChatFrame {
    ChatFrame::Thinking(ThinkingFrame { seq: Some(seq), text: text.into(), message_id: None })
}

fn done(seq: Seq, snapshot: &ChatSnapshot) -> ChatFrame {
    let run = snapshot.run.as_ref().expect("a run in progress");
    ChatFrame::Done(DoneFrame {
        seq: Some(seq),
        run_id: run.run_id.clone().unwrap_or_default(),
        message: snapshot.messages[run.message].clone(),
        session_id: "s".into(),
        session_file: None,
        session_reset: None,
    })
}

fn feed(snapshot: &mut ChatSnapshot, rows: &mut TranscriptRows, frames: &[ChatFrame]) -> SyncReport {
    for frame in frames {
        apply(snapshot, frame);
    }
    rows.sync(snapshot, &|_| true)
}

fn text_signals(rows: &TranscriptRows, message: usize, part: usize) -> MarkdownSignals {
    let parts = rows.view().get_untracked()[message].parts.get_untracked();
    match &parts[part].content {
        PartSignals::Text(signals) => signals.clone(),
        PartSignals::Plain(_)
        | PartSignals::Thinking { .. }
        | PartSignals::Error(_)
        | PartSignals::File(_)
        | PartSignals::Tool(_) => {
            panic!("not a text part")
        }
    }
}

#[test]
fn a_delta_updates_only_the_streaming_part() {
    let owner = Owner::new();
    owner.with(|| {
        let mut snapshot = ChatSnapshot::default();
        let mut rows = TranscriptRows::default();
        feed(&mut snapshot, &mut rows, &[start(1, "a1"), user(2, "first"), delta(3, "Answer one.\n\n")]);
        let done = done(4, &snapshot);
        feed(&mut snapshot, &mut rows, &[done]);
        let first_answer = text_signals(&rows, 1, 0);

        let report = feed(&mut snapshot, &mut rows, &[start(5, "a2"), user(6, "second")]);
        assert!(report.rows_changed);
        assert!(!report.session_replaced);
        let report = feed(&mut snapshot, &mut rows, &[delta(7, "Streaming ")]);
        assert_eq!(
            report,
            SyncReport {
                rows_changed: false,
                session_replaced: false,
                parts_updated: vec![("a2".into(), PartKey::Text(0))],
            }
        );
        let report = feed(&mut snapshot, &mut rows, &[delta(8, "more.\n\nNext line\n")]);
        assert_eq!(report.parts_updated, [("a2".to_owned(), PartKey::Text(0))]);

        let streaming = text_signals(&rows, 3, 0);
        assert_eq!(streaming.tail.get_untracked(), "<p>Next line</p>");
        assert_eq!(streaming.blocks.get_untracked().len(), 1);
        // The earlier answer's signals are the same ones, with the same content.
        assert!(first_answer.blocks.get_untracked().is_empty());
        assert_eq!(first_answer.tail.get_untracked(), "<p>Answer one.</p>");
    });
}

#[test]
fn the_text_of_a_message_not_built_is_parsed_when_it_is() {
    let owner = Owner::new();
    owner.with(|| {
        let mut snapshot = ChatSnapshot::default();
        for frame in [start(1, "a1"), user(2, "first"), delta(3, "# Old\n\nAnswer *one*.")] {
            apply(&mut snapshot, &frame);
        }
        let done = done(4, &snapshot);
        apply(&mut snapshot, &done);
        for frame in [start(5, "a2"), user(6, "second"), delta(7, "Answer two.")] {
            apply(&mut snapshot, &frame);
        }
        let mut rows = TranscriptRows::default();
        let report = rows.sync(&snapshot, &|message| message >= 2);
        assert!(report.rows_changed);

        let old = text_signals(&rows, 1, 0);
        assert!(old.blocks.get_untracked().is_empty(), "a message not built is not parsed");
        assert_eq!(old.tail.get_untracked(), "");
        assert_eq!(text_signals(&rows, 3, 0).tail.get_untracked(), "<p>Answer two.</p>");

        rows.render_markdown(&snapshot, 0..2);
        let html = |signals: &MarkdownSignals| {
            let blocks = signals.blocks.get_untracked();
            blocks.iter().map(|block| block.html.to_string()).collect::<String>() + &signals.tail.get_untracked()
        };
        assert_eq!(html(&old), "<h1>Old</h1><p>Answer <em>one</em>.</p>");
        // Parsed once: a later sync with the message built finds nothing to do.
        let report = rows.sync(&snapshot, &|_| true);
        assert!(report.parts_updated.is_empty(), "{report:?}");
    });
}

#[test]
fn the_done_frame_changes_nothing_when_it_matches_the_stream() {
    let owner = Owner::new();
    owner.with(|| {
        let mut snapshot = ChatSnapshot::default();
        let mut rows = TranscriptRows::default();
        feed(
            &mut snapshot,
            &mut rows,
            &[start(1, "a1"), user(2, "hi"), thinking(3, "hmm"), delta(4, "Hello **there**")],
        );
        let done = done(5, &snapshot);
        let report = feed(&mut snapshot, &mut rows, &[done]);
        // Only the thinking block folds; no row is rebuilt and the text is untouched.
        assert_eq!(report, SyncReport { rows_changed: false, session_replaced: false, parts_updated: vec![] });
    });
}

#[test]
fn thinking_is_open_while_it_streams_and_folds_when_the_message_moves_on() {
    let owner = Owner::new();
    owner.with(|| {
        let mut snapshot = ChatSnapshot::default();
        let mut rows = TranscriptRows::default();
        feed(&mut snapshot, &mut rows, &[start(1, "a1"), user(2, "hi"), thinking(3, "hmm")]);
        let open = match &rows.view().get_untracked()[1].parts.get_untracked()[0].content {
            PartSignals::Thinking { open, .. } => open.clone(),
            PartSignals::Text(_)
            | PartSignals::Plain(_)
            | PartSignals::Error(_)
            | PartSignals::File(_)
            | PartSignals::Tool(_) => {
                panic!("not thinking")
            }
        };
        assert!(open.get_untracked());
        let report = feed(&mut snapshot, &mut rows, &[delta(4, "Answer")]);
        assert!(!open.get_untracked());
        assert_eq!(
            report.parts_updated,
            [("a1".to_owned(), PartKey::Thinking(0)), ("a1".to_owned(), PartKey::Text(1))]
        );
    });
}

#[test]
fn switching_sessions_replaces_the_rows() {
    let owner = Owner::new();
    owner.with(|| {
        let mut rows = TranscriptRows::default();
        let mut first = ChatSnapshot::default();
        let report = feed(&mut first, &mut rows, &[start(1, "a1"), user(2, "one")]);
        assert!(report.session_replaced);
        let mut second = ChatSnapshot::default();
        let report = feed(&mut second, &mut rows, &[start(1, "b1"), user(5, "two")]);
        assert!(report.rows_changed && report.session_replaced);
        assert_eq!(rows.view().get_untracked().iter().map(|row| row.id.clone()).collect::<Vec<_>>(), ["u5", "b1"]);
    });
}

#[test]
fn an_error_frame_adds_an_error_row_to_the_run() {
    let owner = Owner::new();
    owner.with(|| {
        let mut snapshot = ChatSnapshot::default();
        let mut rows = TranscriptRows::default();
        feed(&mut snapshot, &mut rows, &[start(1, "a1"), user(2, "hi"), delta(3, "partial")]);
        let error =
            ChatFrame::Error(ErrorFrame { seq: Some(4), message: "model failed".into(), run_id: None, code: None });
        let report = feed(&mut snapshot, &mut rows, &[error]);
        assert_eq!(report.parts_updated, [("a1".to_owned(), PartKey::Error(1))]);
        match &rows.view().get_untracked()[1].parts.get_untracked()[1].content {
            PartSignals::Error(error) => assert_eq!(error.get_untracked().message, "model failed"),
            PartSignals::Text(_)
            | PartSignals::Plain(_)
            | PartSignals::Thinking { .. }
            | PartSignals::File(_)
            | PartSignals::Tool(_) => {
                panic!("not an error row")
            }
        }
    });
}

#[test]
fn an_answer_row_gets_its_runs_changes_and_keeps_the_same_signal_through_done() {
    let owner = Owner::new();
    owner.with(|| {
        let mut snapshot = ChatSnapshot::default();
        let mut rows = TranscriptRows::default();
        feed(&mut snapshot, &mut rows, &[start(1, "a1"), user(2, "go"), delta(3, "Done.")]);
        let answer = rows.view().get_untracked()[1].changes.clone();
        assert_eq!(answer.get_untracked(), None);
        let file = ChangedFile {
            path: "a.txt".into(),
            status: ChangeStatus::Added,
            additions: 4,
            deletions: 0,
            binary: false,
        };
        let changes = ChatFrame::Changes(ChangesFrame {
            seq: Some(4),
            checkpoint: "u2".into(),
            files: vec![file],
            additions: 4,
            deletions: 0,
            message_id: Some("a1".into()),
        });
        let report = feed(&mut snapshot, &mut rows, &[changes]);
        assert!(!report.rows_changed, "the summary changes the answer's row, not the list of rows");
        assert_eq!(answer.get_untracked().map(|changes| changes.summary()).as_deref(), Some("1 file changed, +4 −0"));
        let done = done(5, &snapshot);
        feed(&mut snapshot, &mut rows, &[done]);
        assert_eq!(answer.get_untracked().map(|changes| changes.checkpoint).as_deref(), Some("u2"));
        assert_eq!(rows.view().get_untracked()[0].changes.get_untracked(), None, "the prompt has none");
    });
}

#[test]
fn an_answer_row_sums_its_runs_calls_and_keeps_them_through_done() {
    let owner = Owner::new();
    owner.with(|| {
        let mut snapshot = ChatSnapshot::default();
        let mut rows = TranscriptRows::default();
        feed(&mut snapshot, &mut rows, &[start(1, "a1"), user(2, "go"), delta(3, "Done.")]);
        let answer = rows.view().get_untracked()[1].usage.clone();
        assert_eq!(answer.get_untracked(), None);
        let call = |seq, input, used| {
            ChatFrame::Usage(UsageFrame {
                seq: Some(seq),
                run_id: Some("run-1".into()),
                message_id: None,
                usage: TokenUsage { input, output: 10, cache_read: 0, cache_write: 0, cost: Some(0.5) },
                context: Some(ContextUse { used, window: Some(1000), compact_at: Some(800) }),
            })
        };
        let report = feed(&mut snapshot, &mut rows, &[call(4, 100, 110), call(5, 200, 320)]);
        assert!(!report.rows_changed, "usage changes the answer's row, not the list of rows");
        let shown = answer.get_untracked().expect("the usage so far");
        assert_eq!((shown.calls, shown.total.input, shown.total.output, shown.total.cost), (2, 300, 20, Some(1.0)));
        assert_eq!(shown.context.map(|context| context.used), Some(320), "the last call's context");
        let done = done(6, &snapshot);
        feed(&mut snapshot, &mut rows, &[done]);
        assert_eq!(answer.get_untracked().map(|usage| usage.calls), Some(2));
        assert_eq!(rows.view().get_untracked()[0].usage.get_untracked(), None, "the prompt has none");
    });
}
