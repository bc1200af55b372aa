//! What in a run needs the user when they are not looking — it finished, it failed, or it waits for an approval or an
//! answer — read from the frames as they arrive, and the count of such events not yet seen, per session, that the
//! tab title shows as "(N) …".
//!
//! Pure, so the rules are tested natively; the browser client decides when the page is not looking (the tab is
//! hidden) and what to show (docs/decisions.md, "Quick switcher and notifications").

use rustc_hash::FxHashSet;

use crate::protocol::{ChatFrame, ToolKind, ToolState};

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

impl Attention {
    /// The event a frame is, if it is one.
    pub fn of(frame: &ChatFrame) -> Option<AttentionEvent> {
        let (attention, key) = match frame {
            ChatFrame::Done(done) => (Attention::Finished, format!("end:{}", done.run_id)),
            ChatFrame::Error(error) => {
                let key = match (&error.run_id, error.seq) {
                    (Some(run), _) => format!("end:{run}"),
                    (None, Some(seq)) => format!("error:{seq}"),
                    // Unlogged (a send refused before any run): it is this request's answer, seen once.
                    (None, None) => format!("error:{}", error.message),
                };
                (Attention::Failed { message: error.message.clone() }, key)
            }
            ChatFrame::Tool(tool) => {
                let part = &tool.part;
                match part.state {
                    ToolState::ApprovalRequested => (
                        Attention::AwaitsApproval { tool: part.tool_name().into_owned() },
                        format!("approval:{}", part.tool_call_id),
                    ),
                    ToolState::InputAvailable if matches!(part.kind, ToolKind::Question) => {
                        let question = part.input_str("question").or_else(|| part.input_str("title"));
                        (
                            Attention::AwaitsAnswer { question: question.map(str::to_owned) },
                            format!("question:{}", part.tool_call_id),
                        )
                    }
                    ToolState::InputAvailable
                    | ToolState::InputStreaming
                    | ToolState::OutputAvailable
                    | ToolState::OutputError
                    | ToolState::OutputDenied => return None,
                }
            }
            ChatFrame::Start(_)
            | ChatFrame::Message(_)
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
        };
        Some(AttentionEvent { attention, key })
    }

    /// The notification's text under the session's title.
    pub fn body(&self) -> String {
        match self {
            Attention::Finished => "The answer is complete.".to_owned(),
            Attention::Failed { message } => format!("The run failed: {message}"),
            Attention::AwaitsApproval { tool } => format!("{tool} waits for your approval."),
            Attention::AwaitsAnswer { question: Some(question) } => format!("The agent asks: {question}"),
            Attention::AwaitsAnswer { question: None } => "The agent asks you a question.".to_owned(),
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

    use super::{Attention, AttentionEvent, Unseen, counted_title};
    use crate::protocol::ChatFrame;

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
    fn the_title_carries_the_count_only_when_there_is_one() {
        assert_eq!(counted_title("chatwire", 0), "chatwire");
        assert_eq!(counted_title("chatwire", 1), "(1) chatwire");
        assert_eq!(counted_title("chatwire", 12), "(12) chatwire");
    }
}
