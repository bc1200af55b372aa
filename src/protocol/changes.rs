//! What a run changed in the workspace's files (issue 18, item 5): the summary a `changes` frame logs and an answer
//! keeps, "N files changed, +a −d". The unified diff is not part of it; `GET /api/sessions/{id}/changes/{key}`
//! serves that.

use serde::{Deserialize, Serialize};

/// How one file changed between the checkpoints before and after a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeStatus {
    Added,
    Modified,
    Deleted,
}

impl ChangeStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeStatus::Added => "added",
            ChangeStatus::Modified => "modified",
            ChangeStatus::Deleted => "deleted",
        }
    }
}

/// One file a run changed, with its line counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangedFile {
    /// Relative to the workspace, `/`-separated.
    pub path: String,
    pub status: ChangeStatus,
    pub additions: u32,
    pub deletions: u32,
    /// Git saw binary content: no line counts, and the diff says only that the file differs.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub binary: bool,
}

/// Everything one run changed: the files, the totals, and the checkpoint pair (`before/<checkpoint>`,
/// `after/<checkpoint>`) its diff is read from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunChanges {
    /// The run's checkpoint key: the id of the message that started it, or the run's id for a regeneration.
    pub checkpoint: String,
    pub files: Vec<ChangedFile>,
    pub additions: u32,
    pub deletions: u32,
}

impl RunChanges {
    /// "2 files changed, +5 −1": what the answer's changes row says.
    pub fn summary(&self) -> String {
        let count = self.files.len();
        let noun = if count == 1 { "file" } else { "files" };
        format!("{count} {noun} changed, +{} −{}", self.additions, self.deletions)
    }
}
