//! What in a run needs the user when they are not looking — it finished, it failed, or it waits for an approval or an
//! answer — read from the frames as they arrive, and the count of such events not yet seen, per session, that the
//! tab title shows as "(N) …".
//!
//! Pure, so the rules are tested natively; the browser client decides when the page is not looking (the tab is
//! hidden) and what to show (docs/decisions.md, "Quick switcher and notifications").

use rustc_hash::FxHashSet;

use crate::i18n::{Key, fill, t};
use crate::protocol::{
    Activity, ApprovalActivity, ChatFrame, FailedActivity, QuestionActivity, RunActivity, ToolKind, ToolState,
};

/// An event of a run that asks for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attention {
    /// The run ended with its answer (`done`).
    Finished,
    /// The run ended with an error.
    Failed { message: String },
    /// A tool call waits for Approve or Deny.
    AwaitsApproval { tool: String },
    /// The agent asked a question and waits for the answer.
    AwaitsAnswer { question: Option<String> },
}

/// One event, with what identifies it: the same event seen again (on a second stream of the run, or in a repeated
/// tool frame with the same state) has the same key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttentionEvent {
    pub attention: Attention,
    pub key: String,
}

/// What a frame of `session_id` tells the activity feed (`GET /api/activity`), if anything: the server reads its
/// logs with this, and the page reads the frames of the session it follows with it, so both name an event alike.
pub fn activity_of(session_id: &str, frame: &ChatFrame) -> Option<Activity> {
    let session_id = session_id.to_owned();
    Some(match frame {
        ChatFrame::Start(start) => Activity::Started(RunActivity { session_id, run_id: start.run_id.clone() }),
        ChatFrame::Done(done) => Activity::Finished(RunActivity { session_id, run_id: done.run_id.clone() }),
        ChatFrame::Error(error) => Activity::Failed(FailedActivity {
            session_id,
            run_id: error.run_id.clone(),
            seq: error.seq,
            message: error.message.clone(),
        }),
        ChatFrame::Tool(tool) => {
            let part = &tool.part;
            match part.state {
                ToolState::ApprovalRequested => Activity::Approval(ApprovalActivity {
                    session_id,
                    tool_call_id: part.tool_call_id.clone(),
                    tool: part.tool_name().into_owned(),
                }),
                ToolState::InputAvailable if matches!(part.kind, ToolKind::Question) => {
                    let question = part.input_str("question").or_else(|| part.input_str("title"));
                    Activity::Question(QuestionActivity {
                        session_id,
                        tool_call_id: part.tool_call_id.clone(),
                        question: question.map(str::to_owned),
                    })
                }
                ToolState::InputAvailable
                | ToolState::InputStreaming
                | ToolState::OutputAvailable
                | ToolState::OutputError
                | ToolState::OutputDenied => return None,
            }
        }
        ChatFrame::Message(_)
        | ChatFrame::Delta(_)
        | ChatFrame::Thinking(_)
        | ChatFrame::ToolDraft(_)
        | ChatFrame::ToolArgsDelta(_)
        | ChatFrame::Plan(_)
        | ChatFrame::State(_)
        | ChatFrame::Queue(_)
        | ChatFrame::Branch(_)
        | ChatFrame::Changes(_)
        | ChatFrame::Usage(_)
        | ChatFrame::AgentOptions(_)
        | ChatFrame::Compaction(_)
        | ChatFrame::Retry(_)
        | ChatFrame::Ping => return None,
    })
}

impl Attention {
    /// The event a frame is, if it is one.
    pub fn of(frame: &ChatFrame) -> Option<AttentionEvent> {
        activity_of("", frame).as_ref().and_then(Attention::of_activity)
    }

    /// The event an activity is, if it is one (a run that starts needs no one). Its key is the same whether the
    /// activity came from the feed or from the frames of the session on screen, so an event brought by both counts
    /// once.
    pub fn of_activity(activity: &Activity) -> Option<AttentionEvent> {
        let (attention, key) = match activity {
            Activity::Finished(run) => (Attention::Finished, format!("end:{}", run.run_id)),
            Activity::Failed(failed) => {
                let key = match (&failed.run_id, failed.seq) {
                    (Some(run), _) => format!("end:{run}"),
                    (None, Some(seq)) => format!("error:{seq}"),
                    // Unlogged (a send refused before any run): it is this request's answer, seen once.
                    (None, None) => format!("error:{}", failed.message),
                };
                (Attention::Failed { message: failed.message.clone() }, key)
            }
            Activity::Approval(approval) => (
                Attention::AwaitsApproval { tool: approval.tool.clone() },
                format!("approval:{}", approval.tool_call_id),
            ),
            Activity::Question(question) => (
                Attention::AwaitsAnswer { question: question.question.clone() },
                format!("question:{}", question.tool_call_id),
            ),
            Activity::Started(_) | Activity::Ping => return None,
        };
        Some(AttentionEvent { attention, key })
    }

    /// The notification's text under the session's title.
    pub fn body(&self) -> String {
        match self {
            Attention::Finished => t(Key::AnswerComplete).to_owned(),
            Attention::Failed { message } => fill(Key::RunFailed, &[("error", message)]),
            Attention::AwaitsApproval { tool } => fill(Key::AwaitsApproval, &[("tool", tool)]),
            Attention::AwaitsAnswer { question: Some(question) } => fill(Key::AgentAsks, &[("question", question)]),
            Attention::AwaitsAnswer { question: None } => t(Key::AgentAsksSomething).to_owned(),
        }
    }
}

/// Events the user has not seen yet, per session, and every event already noted (so none counts twice).
#[derive(Debug, Clone, Default)]
pub struct Unseen {
    counts: Vec<(String, u32)>,
    counted: FxHashSet<(String, String)>,
}

impl Unseen {
    /// Takes note of the event; it counts as unseen when it is new and the user was not `looking` (an event seen as
    /// it happened is remembered too, so that it does not count when a second stream brings it again). True when
    /// it counts.
    pub fn note(&mut self, session_id: &str, event: &AttentionEvent, looking: bool) -> bool {
        if !self.counted.insert((session_id.to_owned(), event.key.clone())) || looking {
            return false;
        }
        match self.counts.iter_mut().find(|(id, _)| id == session_id) {
            Some((_, count)) => *count += 1,
            None => self.counts.push((session_id.to_owned(), 1)),
        }
        true
    }

    /// The user has looked at the session: its events are seen (and stay counted, so a replay does not bring them
    /// back).
    pub fn seen(&mut self, session_id: &str) {
        self.counts.retain(|(id, _)| id != session_id);
    }

    /// Whether the session has events the user has not seen (its row in the sidebar is marked).
    pub fn has(&self, session_id: &str) -> bool {
        self.counts.iter().any(|(id, _)| id == session_id)
    }

    /// The sessions with unseen events, in the order their first one came.
    pub fn sessions(&self) -> Vec<String> {
        self.counts.iter().map(|(id, _)| id.clone()).collect()
    }

    /// Unseen events over all sessions.
    pub fn total(&self) -> u32 {
        self.counts.iter().map(|(_, count)| count).sum()
    }
}

/// The tab title with the unseen count in front: "(2) chatwire", or the title alone when nothing is unseen.
pub fn counted_title(title: &str, unseen: u32) -> String {
    match unseen {
        0 => title.to_owned(),
        count => format!("({count}) {title}"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Attention, AttentionEvent, Unseen, activity_of, counted_title};
    use crate::protocol::{Activity, ChatFrame, RunActivity};

    fn frame(value: serde_json::Value) -> ChatFrame {
        serde_json::from_value(value).expect("a valid frame")
    }

    fn done(run: &str) -> ChatFrame {
        frame(json!({
            "type": "done", "seq": 9, "runId": run, "sessionId": "s",
            "message": { "id": "m", "role": "assistant", "parts": [] }
        }))
    }

    fn tool(id: &str, name: &str, state: &str, input: serde_json::Value) -> ChatFrame {
        frame(json!({
            "type": "tool", "seq": 5,
            "part": { "type": format!("tool-{name}"), "toolCallId": id, "state": state, "input": input }
        }))
    }

    #[test]
    fn a_run_ending_needs_the_user_either_way() {
        let finished = Attention::of(&done("r1")).expect("done is an event");
        assert_eq!(finished, AttentionEvent { attention: Attention::Finished, key: "end:r1".into() });
        let failed =
            Attention::of(&frame(json!({ "type": "error", "seq": 4, "runId": "r1", "message": "bad key" }))).unwrap();
        assert_eq!(failed.attention.body(), "The run failed: bad key");
        assert_eq!(failed.key, "end:r1", "a run ends once, however it ends");
    }

    #[test]
    fn waiting_calls_need_the_user_and_running_ones_do_not() {
        let approval = Attention::of(&tool("c1", "Bash", "approval-requested", json!({ "command": "ls" }))).unwrap();
        assert_eq!(approval.attention, Attention::AwaitsApproval { tool: "Bash".into() });
        assert_eq!(approval.key, "approval:c1");
        let question =
            Attention::of(&tool("c2", "Question", "input-available", json!({ "question": "Which one?" }))).unwrap();
        assert_eq!(question.attention.body(), "The agent asks: Which one?");
        assert_eq!(question.key, "question:c2");
        assert_eq!(Attention::of(&tool("c3", "Bash", "input-available", json!({}))), None, "running, not waiting");
        assert_eq!(Attention::of(&tool("c2", "Question", "output-available", json!({}))), None, "answered");
        let delta = frame(json!({ "type": "delta", "seq": 2, "text": "hi" }));
        assert_eq!(Attention::of(&delta), None);
    }

    #[test]
    fn each_event_counts_once_until_its_session_is_seen() {
        let mut unseen = Unseen::default();
        let finished = Attention::of(&done("r1")).unwrap();
        assert!(unseen.note("a", &finished, false));
        assert!(!unseen.note("a", &finished, false), "the same done on a second stream");
        assert!(unseen.note("b", &finished, false), "another session's own event");
        assert_eq!(unseen.total(), 2);
        unseen.seen("a");
        assert_eq!(unseen.total(), 1);
        assert!(!unseen.note("a", &finished, false), "a replay after it was seen does not come back");
        unseen.seen("b");
        assert_eq!(unseen.total(), 0);
    }

    #[test]
    fn an_event_seen_as_it_happens_never_counts() {
        let mut unseen = Unseen::default();
        let approval = Attention::of(&tool("c1", "Bash", "approval-requested", json!({}))).unwrap();
        assert!(!unseen.note("a", &approval, true));
        assert!(!unseen.note("a", &approval, false), "brought again by another stream once the tab is hidden");
        assert_eq!(unseen.total(), 0);
    }

    #[test]
    fn the_feed_names_an_event_as_the_frames_on_screen_do() {
        let frames = [
            done("r1"),
            frame(json!({ "type": "error", "seq": 4, "runId": "r2", "message": "bad key" })),
            frame(json!({ "type": "error", "seq": 6, "message": "interrupted before it began" })),
            tool("c1", "Bash", "approval-requested", json!({ "command": "ls" })),
            tool("c2", "Question", "input-available", json!({ "title": "Pick one" })),
        ];
        for frame in &frames {
            let activity = activity_of("b", frame).expect("each is an activity");
            assert_eq!(activity.session_id(), Some("b"));
            let line = serde_json::to_string(&activity).unwrap();
            let read: Activity = serde_json::from_str(&line).unwrap();
            assert_eq!(Attention::of_activity(&read), Attention::of(frame), "{line}");
            assert!(Attention::of(frame).is_some());
        }
        let started = activity_of(
            "b",
            &frame(json!({
                "type": "start", "seq": 1, "id": "m", "runId": "r3", "sessionId": "b"
            })),
        );
        assert_eq!(started, Some(Activity::Started(RunActivity { session_id: "b".into(), run_id: "r3".into() })));
        assert!(started.as_ref().is_some_and(Activity::changes_status));
        assert_eq!(Attention::of_activity(&started.unwrap()), None, "a run that starts needs no one");
        assert_eq!(activity_of("b", &tool("c3", "Bash", "input-available", json!({}))), None);
    }

    #[test]
    fn the_sessions_with_unseen_events_are_the_marked_rows() {
        let mut unseen = Unseen::default();
        let finished = Attention::of(&done("r1")).unwrap();
        unseen.note("b", &finished, false);
        unseen.note("a", &finished, true);
        assert!(unseen.has("b") && !unseen.has("a"));
        assert_eq!(unseen.sessions(), ["b"]);
        unseen.seen("b");
        assert!(unseen.sessions().is_empty());
    }

    #[test]
    fn the_title_carries_the_count_only_when_there_is_one() {
        assert_eq!(counted_title("chatwire", 0), "chatwire");
        assert_eq!(counted_title("chatwire", 1), "(1) chatwire");
        assert_eq!(counted_title("chatwire", 12), "(12) chatwire");
    }
}
