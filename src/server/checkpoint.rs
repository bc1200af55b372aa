//! The sessions' side of workspace checkpoints (DESIGN §11): which checkpoint store a session's workspace has, the
//! checkpoint taken before each run, and Restore.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::chat::{Chat, ChatError, new_id, now_ms};
use crate::checkpoints::{Changes, Checkpoints, FileStatus, SkipReason};
use crate::protocol::*;
use crate::store::RunStatus;

/// What the server notes of one run's checkpoints beside the shadow repository (`runs/<key>.json`): when its
/// `before` was taken, and once the run ended, the paths it changed. Restore puts back only what runs changed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RunNote {
    /// Milliseconds since the epoch: orders the runs of every session sharing the workspace.
    before_at: u64,
    /// `None` until the run ended (a run whose server died never gets them).
    changed: Option<Vec<String>>,
}

impl Chat {
    /// The directory a session's runs work in: the shared `--workspace`, or one of its own under the data dir.
    pub(super) fn workspace_of(&self, session_id: &str) -> PathBuf {
        match &self.config.workspace {
            Some(shared) => shared.clone(),
            None => self.config.data_dir.join("workspaces").join(session_id),
        }
    }

    /// The checkpoint store of the session's workspace, kept under the data dir (never in the workspace, so never
    /// in the user's own `.git`); `None` when checkpoints are off.
    fn checkpoints_of(&self, session_id: &str) -> Option<Arc<Checkpoints>> {
        if self.config.checkpoint_file_limit == 0 {
            return None;
        }
        let shadow = self.shadow_of(session_id);
        let mut stores = self.checkpoints.lock().expect("the checkpoint stores' lock is never poisoned");
        let store = stores.entry(shadow.clone()).or_insert_with(|| {
            Arc::new(Checkpoints::new(shadow, self.workspace_of(session_id), self.config.checkpoint_file_limit))
        });
        Some(store.clone())
    }

    pub(super) fn shadow_of(&self, session_id: &str) -> PathBuf {
        match &self.config.workspace {
            Some(_) => self.config.data_dir.join("checkpoints").join("shared-workspace"),
            None => self.config.data_dir.join("checkpoints").join(session_id),
        }
    }

    /// Removes a deleted session's checkpoints, which only it could restore (a shared workspace's stay, for the other
    /// sessions). Its workspace is left on disk: those files are the user's.
    pub(super) async fn forget_checkpoints(&self, session_id: &str) {
        if self.config.workspace.is_some() {
            return;
        }
        let shadow = self.shadow_of(session_id);
        self.checkpoints.lock().expect("the checkpoint stores' lock is never poisoned").remove(&shadow);
        let removed = tokio::task::spawn_blocking(move || match std::fs::remove_dir_all(&shadow) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err((shadow, error)),
            Ok(()) | Err(_) => Ok(()),
        });
        if let Ok(Err((shadow, error))) = removed.await {
            tracing::warn!(session = %session_id, "removing the checkpoints in {}: {error}", shadow.display());
        }
    }

    /// Whether the session's workspace has the checkpoint taken before `key`'s run.
    pub(super) async fn has_checkpoint(&self, session_id: &str, key: &str) -> bool {
        let Some(store) = self.checkpoints_of(session_id) else { return false };
        let name = format!("before/{key}");
        off_the_clock(async move { store.exists(&name).await }).await
    }

    fn note_path(&self, session_id: &str, key: &str) -> PathBuf {
        self.shadow_of(session_id).join("runs").join(format!("{key}.json"))
    }

    fn write_note(&self, session_id: &str, key: &str, note: &RunNote) {
        let path = self.note_path(session_id, key);
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, serde_json::to_vec(note).expect("a note serializes")));
        if let Err(error) = written {
            tracing::warn!(session = %session_id, "noting the checkpoint {key} in {}: {error}", path.display());
        }
    }

    fn notes(&self, session_id: &str) -> Vec<(String, RunNote)> {
        let Ok(entries) = std::fs::read_dir(self.shadow_of(session_id).join("runs")) else { return Vec::new() };
        entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let key = entry.file_name().to_str()?.strip_suffix(".json")?.to_owned();
                Some((key, read_note(&entry.path())?))
            })
            .collect()
    }

    /// Records the workspace's files as checkpoint `before/<key>`: `key` is the prompt's message id, so that Restore
    /// finds it from the message. A run goes on without one if it fails (git missing, a disk error), and says so in
    /// the server's log.
    pub(super) async fn checkpoint_before(&self, session_id: &str, key: &str) {
        let Some(store) = self.checkpoints_of(session_id) else { return };
        let name = format!("before/{key}");
        match off_the_clock(async move { store.record(&name).await }).await {
            Ok(_) => self.write_note(session_id, key, &RunNote { before_at: now_ms(), changed: None }),
            Err(error) => tracing::warn!(session = %session_id, "no checkpoint of the workspace before {key}: {error}"),
        }
    }

    /// Records the files as the run left them (`after/<key>`) and what it changed; `None` without a `before`.
    pub(super) async fn checkpoint_after(&self, session_id: &str, key: &str) -> Option<Changes> {
        let store = self.checkpoints_of(session_id)?;
        let (before, after) = (format!("before/{key}"), format!("after/{key}"));
        let changes = off_the_clock(async move {
            if !store.exists(&before).await {
                return None;
            }
            Some(match store.record(&after).await {
                Ok(_) => store.changes(&before, &after).await,
                Err(error) => Err(error),
            })
        })
        .await?;
        match changes {
            Ok(changes) => {
                let mut note = self.notes_of(session_id, key).unwrap_or_default();
                note.changed = Some(changes.files.iter().map(|file| file.path.clone()).collect());
                self.write_note(session_id, key, &note);
                Some(changes)
            }
            Err(error) => {
                tracing::warn!(session = %session_id, "no record of what the run {key} changed: {error}");
                None
            }
        }
    }

    /// `GET /api/sessions/{id}/changes/{key}`: what the run with checkpoint `key` changed, with the unified diff,
    /// read from its checkpoints before and after it. 404 for a key without both (an unknown one, or a run still
    /// going).
    pub async fn run_changes(&self, session_id: &str, key: &str) -> Result<ChangesResponse, ChatError> {
        self.live(session_id).await?;
        let store = self.checkpoints_of(session_id).ok_or_else(|| ChatError::NoChanges(key.to_owned()))?;
        let (before, after) = (format!("before/{key}"), format!("after/{key}"));
        let changes = off_the_clock(async move {
            if !store.exists(&before).await || !store.exists(&after).await {
                return None;
            }
            Some(store.changes(&before, &after).await)
        })
        .await
        .ok_or_else(|| ChatError::NoChanges(key.to_owned()))??;
        let summary = summary_of(key, &changes);
        let (diff, truncated) = capped(changes.diff, MAX_DIFF_BYTES);
        Ok(ChangesResponse {
            files: summary.files,
            additions: summary.additions,
            deletions: summary.deletions,
            diff,
            truncated,
            skipped: changes.skipped.into_iter().map(skipped_file).collect(),
        })
    }

    fn notes_of(&self, session_id: &str, key: &str) -> Option<RunNote> {
        read_note(&self.note_path(session_id, key))
    }

    /// The paths the runs from `key`'s on changed, all sessions on the workspace included; `None` when one of them
    /// has no record of it (its server died), and everything changed since is then put back.
    fn touched_since(&self, session_id: &str, key: &str) -> Option<BTreeSet<String>> {
        let since = self.notes_of(session_id, key)?.before_at;
        let mut touched = BTreeSet::new();
        for (_, note) in self.notes(session_id).into_iter().filter(|(_, note)| note.before_at >= since) {
            touched.extend(note.changed?);
        }
        Some(touched)
    }

    /// `POST /api/sessions/{id}/restore`: puts the workspace's files back as they were before `message_id` started
    /// its run. Refused while a run is going; the state before the restore is kept as a checkpoint of its own.
    pub async fn restore_files(
        self: &Arc<Self>,
        session_id: &str,
        message_id: &str,
    ) -> Result<RestoreResponse, ChatError> {
        let live = self.live(session_id).await?;
        let _one_at_a_time = live.sending.lock().await;
        if live.active_run_id().is_some() {
            return Err(ChatError::RestoreWhileRunning);
        }
        let name = format!("before/{message_id}");
        let store = match self.checkpoints_of(session_id) {
            Some(store) if self.has_checkpoint(session_id, message_id).await => store,
            Some(_) | None => return Err(ChatError::NoCheckpoint(message_id.to_owned())),
        };
        // Like a run, a restore holds the session's lease: no run of another instance starts under it.
        let restore_id = new_id("restore");
        let (_lease, _) = self.take_lease(&live, &restore_id).await.map_err(|error| match error {
            ChatError::RunInProgress => ChatError::RestoreWhileRunning,
            other => other,
        })?;
        let touched = self.touched_since(session_id, message_id);
        let (restored, left_out) = off_the_clock(async move {
            let restored = match touched {
                Some(touched) => store.restore_touched(&name, &touched).await,
                None => store.restore(&name).await,
            };
            let left_out = match &restored {
                Ok(restored) => store.changes(&name, &restored.backup).await.map(|changes| changes.skipped),
                Err(_) => Ok(Vec::new()),
            };
            (restored, left_out)
        })
        .await;
        if let Err(error) = self.store.finish_run(&restore_id, live.id(), RunStatus::Done, now_ms()).await {
            tracing::error!(session = %session_id, "recording the end of a restore failed: {error}");
        }
        let restored = restored?;
        let skipped = left_out?.into_iter().map(skipped_file).collect();
        Ok(RestoreResponse {
            changed: restored.changed,
            removed: restored.removed,
            recreated: restored.recreated,
            backup: restored.backup,
            skipped,
        })
    }
}

/// The longest diff `GET /api/sessions/{id}/changes/{key}` answers with: a run that rewrote a tree of generated
/// files must not make the page draw (or the server send) megabytes of lines; the file list still has them all.
pub(super) const MAX_DIFF_BYTES: usize = 1024 * 1024;

/// The summary of a run's changes that its `changes` frame logs and its answer keeps: the files and counts, not the
/// diff.
pub(super) fn summary_of(key: &str, changes: &Changes) -> RunChanges {
    let files = changes
        .files
        .iter()
        .map(|file| ChangedFile {
            path: file.path.clone(),
            status: match file.status {
                FileStatus::Added => ChangeStatus::Added,
                FileStatus::Modified => ChangeStatus::Modified,
                FileStatus::Deleted => ChangeStatus::Deleted,
            },
            additions: file.additions,
            deletions: file.deletions,
            binary: file.binary,
        })
        .collect();
    RunChanges { checkpoint: key.to_owned(), files, additions: changes.additions, deletions: changes.deletions }
}

/// `diff` cut to at most `limit` bytes at the end of a line (so no hunk line is drawn half), and whether it was cut.
fn capped(mut diff: String, limit: usize) -> (String, bool) {
    if diff.len() <= limit {
        return (diff, false);
    }
    let mut end = limit;
    while !diff.is_char_boundary(end) {
        end -= 1;
    }
    let end = diff[..end].rfind('\n').map_or(0, |at| at + 1);
    diff.truncate(end);
    (diff, true)
}

fn skipped_file(skipped: crate::checkpoints::Skipped) -> SkippedFile {
    SkippedFile {
        path: skipped.path,
        reason: match skipped.reason {
            SkipReason::TooLarge { bytes } => format!("larger than the checkpoint limit ({bytes} bytes)"),
            SkipReason::Repository => "a git repository of its own".to_owned(),
        },
    }
}

/// A run's note; `None` when it is missing or unreadable (a run without a record of its changes).
fn read_note(path: &std::path::Path) -> Option<RunNote> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// Runs checkpoint work (git processes) on a blocking thread. Git takes real time whatever the clock says, and tokio
/// does not move a paused test clock on while blocking work is in flight: awaited on the runtime itself, every timer
/// due (keepalives, leases) would fire while git runs.
async fn off_the_clock<T: Send + 'static>(work: impl std::future::Future<Output = T> + Send + 'static) -> T {
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || runtime.block_on(work)).await.expect("checkpoint work does not panic")
}

#[cfg(test)]
mod tests {
    use super::capped;

    #[test]
    fn a_long_diff_is_cut_at_the_end_of_a_line_and_says_so() {
        let diff = "+one\n+two\n+three\n".to_owned();
        assert_eq!(capped(diff.clone(), 100), (diff.clone(), false));
        assert_eq!(capped(diff.clone(), diff.len()), (diff.clone(), false));
        assert_eq!(capped(diff.clone(), 11), ("+one\n+two\n".to_owned(), true));
        assert_eq!(capped(diff.clone(), 9), ("+one\n".to_owned(), true));
        assert_eq!(capped("+é\n+é\n".to_owned(), 6), ("+é\n".to_owned(), true), "never inside a character");
    }
}
