//! `Activity`, the wire union of `GET /api/activity`: what happens in the runs of every session that the user may
//! want to hear of while looking at another one (a run started, finished, failed, or waits for an approval or an
//! answer), one JSON object per line, discriminated by `type`.

use serde::{Deserialize, Serialize};

use super::frame::Seq;

/// One line of the activity feed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Activity {
    /// A run opened (its `start` frame was logged).
    Started(RunActivity),
    /// A run ended with its answer (`done`).
    Finished(RunActivity),
    /// A run ended with an error.
    Failed(FailedActivity),
    /// A tool call waits for Approve or Deny.
    Approval(ApprovalActivity),
    /// The agent asked a question and waits for the answer.
    Question(QuestionActivity),
    /// Keepalive on a quiet feed.
    Ping,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunActivity {
    pub session_id: String,
    pub run_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedActivity {
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The `seq` of the `error` frame; absent for an error that was never logged (a send refused before any run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalActivity {
    pub session_id: String,
    pub tool_call_id: String,
    /// The tool's name as its row shows it (`Bash`, `mcp__weather__forecast`).
    pub tool: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuestionActivity {
    pub session_id: String,
    pub tool_call_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
}

impl Activity {
    /// The session it happened in; `None` for a keepalive.
    pub fn session_id(&self) -> Option<&str> {
        match self {
            Activity::Started(run) | Activity::Finished(run) => Some(&run.session_id),
            Activity::Failed(failed) => Some(&failed.session_id),
            Activity::Approval(approval) => Some(&approval.session_id),
            Activity::Question(question) => Some(&question.session_id),
            Activity::Ping => None,
        }
    }

    /// True for the end of a run and its start: the session's status in the list changed.
    pub fn changes_status(&self) -> bool {
        match self {
            Activity::Started(_) | Activity::Finished(_) | Activity::Failed(_) => true,
            Activity::Approval(_) | Activity::Question(_) | Activity::Ping => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_one_camel_case_line_tagged_by_type() {
        let cases = [
            (
                Activity::Finished(RunActivity { session_id: "s".into(), run_id: "r".into() }),
                r#"{"type":"finished","sessionId":"s","runId":"r"}"#,
            ),
            (
                Activity::Failed(FailedActivity {
                    session_id: "s".into(),
                    run_id: None,
                    seq: Some(4),
                    message: "no".into(),
                }),
                r#"{"type":"failed","sessionId":"s","seq":4,"message":"no"}"#,
            ),
            (
                Activity::Approval(ApprovalActivity {
                    session_id: "s".into(),
                    tool_call_id: "c".into(),
                    tool: "Bash".into(),
                }),
                r#"{"type":"approval","sessionId":"s","toolCallId":"c","tool":"Bash"}"#,
            ),
            (
                Activity::Question(QuestionActivity {
                    session_id: "s".into(),
                    tool_call_id: "c".into(),
                    question: None,
                }),
                r#"{"type":"question","sessionId":"s","toolCallId":"c"}"#,
            ),
            (Activity::Ping, r#"{"type":"ping"}"#),
        ];
        for (activity, line) in cases {
            assert_eq!(serde_json::to_string(&activity).unwrap(), line);
            assert_eq!(serde_json::from_str::<Activity>(line).unwrap(), activity);
        }
        let newer = r#"{"type":"started","sessionId":"s","runId":"r","by":"someone"}"#;
        assert!(serde_json::from_str::<Activity>(newer).is_ok(), "unknown fields are ignored");
    }
}
