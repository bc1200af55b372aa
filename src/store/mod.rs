//! The session store: sessions, runs, request ids and each session's frame log, in embedded SQLite (WAL) under the data dir.
//!
//! Frames are stored as the exact JSON line sent to viewers, so a replay is
//! byte-identical to the live stream. Calls are synchronous and short; the
//! connection sits behind a mutex.

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, params};

use crate::protocol::{Seq, SessionStatus, SessionSummary};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("creating {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("no session {0}")]
    NoSession(String),
}

/// One logged frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedFrame {
    pub seq: Seq,
    /// The frame's `type`.
    pub kind: String,
    pub run_id: Option<String>,
    /// The frame as one JSON line, without the line ending.
    pub line: String,
}

impl LoggedFrame {
    /// `done` or `error` of the given run.
    pub fn ends_run(&self, run_id: &str) -> bool {
        (self.kind == "done" || self.kind == "error") && self.run_id.as_deref() == Some(run_id)
    }
}

/// What a request id was used for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    pub session_id: String,
    pub body_hash: String,
    pub run_id: String,
    /// The session's last `seq` when the request was taken: its answer is the run's frames after it.
    pub after_seq: Seq,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    Running,
    Done,
    Failed,
    Interrupted,
}

impl RunStatus {
    /// What the session shows once its run ended so.
    fn session_status(self) -> SessionStatus {
        match self {
            RunStatus::Running => SessionStatus::Running,
            RunStatus::Done => SessionStatus::Idle,
            RunStatus::Failed => SessionStatus::Failed,
            RunStatus::Interrupted => SessionStatus::Interrupted,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Done => "done",
            RunStatus::Failed => "failed",
            RunStatus::Interrupted => "interrupted",
        }
    }
}

/// A run that was active when the server stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterruptedRun {
    pub run_id: String,
    pub session_id: String,
}

/// What the log is told about a frame it appends.
#[derive(Debug, Clone, Copy)]
pub struct NewFrame<'a> {
    pub session_id: &'a str,
    /// The frame's `type`.
    pub kind: &'a str,
    pub run_id: Option<&'a str>,
    /// `message` and `done` frames count towards the session's message count.
    pub counts_as_message: bool,
    pub now: u64,
    /// Set on a run's terminal frame: the run ends so, in the same transaction.
    pub ends_run: Option<RunStatus>,
}

#[derive(Clone)]
pub struct Store {
    connection: Arc<Mutex<Connection>>,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    title_is_set INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    status TEXT NOT NULL DEFAULT 'idle',
    last_seq INTEGER NOT NULL DEFAULT 0,
    message_count INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS frames (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    run_id TEXT,
    line TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    status TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    ended_at INTEGER
);
CREATE INDEX IF NOT EXISTS runs_by_status ON runs(status);
CREATE TABLE IF NOT EXISTS requests (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    body_hash TEXT NOT NULL,
    run_id TEXT NOT NULL,
    after_seq INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
";

fn status_from(text: &str) -> SessionStatus {
    match text {
        "running" => SessionStatus::Running,
        "interrupted" => SessionStatus::Interrupted,
        "failed" => SessionStatus::Failed,
        _ => SessionStatus::Idle,
    }
}

impl Store {
    /// Opens (or creates) `chatwire.db` in `data_dir`.
    pub fn open(data_dir: &Path) -> Result<Store, StoreError> {
        std::fs::create_dir_all(data_dir)
            .map_err(|source| StoreError::Io { path: data_dir.display().to_string(), source })?;
        let connection = Connection::open(data_dir.join("chatwire.db"))?;
        // WAL: readers never block the writer; NORMAL: a commit survives a process crash (not a power cut).
        connection.pragma_update(None, "journal_mode", "WAL")?;
        connection.pragma_update(None, "synchronous", "NORMAL")?;
        connection.pragma_update(None, "foreign_keys", "ON")?;
        connection.busy_timeout(std::time::Duration::from_secs(5))?;
        connection.execute_batch(SCHEMA)?;
        Ok(Store { connection: Arc::new(Mutex::new(connection)) })
    }

    fn with<T>(&self, work: impl FnOnce(&mut Connection) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let mut connection = self.connection.lock().expect("a panic never happens while the store lock is held");
        work(&mut connection)
    }

    pub fn create_session(&self, id: &str, title: &str, now: u64) -> Result<SessionSummary, StoreError> {
        self.with(|c| {
            c.execute(
                "INSERT INTO sessions (id, title, title_is_set, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?4)",
                params![id, title, !title.is_empty(), now as i64],
            )?;
            Ok(())
        })?;
        self.session(id)?.ok_or_else(|| StoreError::NoSession(id.to_owned()))
    }

    pub fn session(&self, id: &str) -> Result<Option<SessionSummary>, StoreError> {
        self.with(|c| {
            Ok(c.query_row(
                "SELECT id, title, created_at, updated_at, status, message_count, last_seq FROM sessions WHERE id = ?1",
                params![id],
                summary_from_row,
            )
            .optional()?)
        })
    }

    /// Every session, most recently updated first.
    pub fn sessions(&self) -> Result<Vec<SessionSummary>, StoreError> {
        self.with(|c| {
            let mut statement = c.prepare(
                "SELECT id, title, created_at, updated_at, status, message_count, last_seq FROM sessions \
                 ORDER BY updated_at DESC, id",
            )?;
            let rows = statement.query_map([], summary_from_row)?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }

    pub fn rename_session(&self, id: &str, title: &str, now: u64) -> Result<bool, StoreError> {
        self.with(|c| {
            let changed = c.execute(
                "UPDATE sessions SET title = ?2, title_is_set = 1, updated_at = ?3 WHERE id = ?1",
                params![id, title, now as i64],
            )?;
            Ok(changed == 1)
        })
    }

    /// Names an unnamed session after its first message.
    pub fn title_if_unset(&self, id: &str, title: &str) -> Result<(), StoreError> {
        self.with(|c| {
            c.execute(
                "UPDATE sessions SET title = ?2, title_is_set = 1 WHERE id = ?1 AND title_is_set = 0",
                params![id, title],
            )?;
            Ok(())
        })
    }

    pub fn delete_session(&self, id: &str) -> Result<bool, StoreError> {
        self.with(|c| Ok(c.execute("DELETE FROM sessions WHERE id = ?1", params![id])? == 1))
    }

    /// Appends a frame, giving it the session's next `seq`; `line_for` encodes the frame with that seq.
    pub fn append(
        &self,
        frame: &NewFrame<'_>,
        line_for: impl FnOnce(Seq) -> String,
    ) -> Result<LoggedFrame, StoreError> {
        let NewFrame { session_id, kind, run_id, counts_as_message, now, ends_run } = *frame;
        self.with(|c| {
            let transaction = c.transaction()?;
            let last: Option<i64> = transaction
                .query_row("SELECT last_seq FROM sessions WHERE id = ?1", params![session_id], |row| row.get(0))
                .optional()?;
            let Some(last) = last else { return Err(StoreError::NoSession(session_id.to_owned())) };
            let seq = last as Seq + 1;
            let line = line_for(seq);
            transaction.execute(
                "INSERT INTO frames (session_id, seq, kind, run_id, line) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![session_id, seq as i64, kind, run_id, line],
            )?;
            transaction.execute(
                "UPDATE sessions SET last_seq = ?2, updated_at = ?3, message_count = message_count + ?4 WHERE id = ?1",
                params![session_id, seq as i64, now as i64, i64::from(counts_as_message)],
            )?;
            // The terminal frame and the end of its run commit together: a crash between the two would leave a
            // run that looks active after its `done`, and the next start would give it a second terminal frame.
            if let (Some(status), Some(run_id)) = (ends_run, run_id) {
                finish_run(&transaction, run_id, session_id, status, now)?;
            }
            transaction.commit()?;
            Ok(LoggedFrame { seq, kind: kind.to_owned(), run_id: run_id.map(str::to_owned), line })
        })
    }

    /// Logged frames with `seq > after`, oldest first, at most `limit`.
    pub fn frames_after(&self, session_id: &str, after: Seq, limit: usize) -> Result<Vec<LoggedFrame>, StoreError> {
        self.with(|c| {
            let mut statement = c.prepare_cached(
                "SELECT seq, kind, run_id, line FROM frames WHERE session_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
            )?;
            // Seqs are stored as i64: a cursor beyond that is beyond every frame (and must not wrap to -1).
            let after = i64::try_from(after).unwrap_or(i64::MAX);
            let rows = statement.query_map(params![session_id, after, limit as i64], |row| {
                Ok(LoggedFrame {
                    seq: row.get::<_, i64>(0)? as Seq,
                    kind: row.get(1)?,
                    run_id: row.get(2)?,
                    line: row.get(3)?,
                })
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }

    pub fn last_seq(&self, session_id: &str) -> Result<Option<Seq>, StoreError> {
        self.with(|c| {
            Ok(c.query_row("SELECT last_seq FROM sessions WHERE id = ?1", params![session_id], |row| {
                row.get::<_, i64>(0)
            })
            .optional()?
            .map(|seq| seq as Seq))
        })
    }

    pub fn start_run(&self, run_id: &str, session_id: &str, now: u64) -> Result<(), StoreError> {
        self.with(|c| {
            c.execute(
                "INSERT INTO runs (id, session_id, status, started_at) VALUES (?1, ?2, 'running', ?3)",
                params![run_id, session_id, now as i64],
            )?;
            c.execute("UPDATE sessions SET status = 'running' WHERE id = ?1", params![session_id])?;
            Ok(())
        })
    }

    /// Records the end of a run whose terminal frame is already logged (or could not be).
    pub fn finish_run(&self, run_id: &str, session_id: &str, status: RunStatus, now: u64) -> Result<(), StoreError> {
        self.with(|c| finish_run(c, run_id, session_id, status, now))
    }

    /// The type of the terminal frame (`done` or `error`) the log holds for a run, if it holds one.
    pub fn run_terminal_kind(&self, session_id: &str, run_id: &str) -> Result<Option<String>, StoreError> {
        self.with(|c| {
            Ok(c.query_row(
                "SELECT kind FROM frames WHERE session_id = ?1 AND run_id = ?2 AND kind IN ('done', 'error') \
                 ORDER BY seq LIMIT 1",
                params![session_id, run_id],
                |row| row.get(0),
            )
            .optional()?)
        })
    }

    pub fn run_status(&self, run_id: &str) -> Result<Option<String>, StoreError> {
        self.with(|c| {
            Ok(c.query_row("SELECT status FROM runs WHERE id = ?1", params![run_id], |row| row.get(0)).optional()?)
        })
    }

    /// Runs still marked running: on start-up, these were cut off by a crash.
    pub fn running_runs(&self) -> Result<Vec<InterruptedRun>, StoreError> {
        self.with(|c| {
            let mut statement =
                c.prepare("SELECT id, session_id FROM runs WHERE status = 'running' ORDER BY started_at")?;
            let rows =
                statement.query_map([], |row| Ok(InterruptedRun { run_id: row.get(0)?, session_id: row.get(1)? }))?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }

    pub fn request(&self, request_id: &str) -> Result<Option<RequestRecord>, StoreError> {
        self.with(|c| {
            Ok(c.query_row(
                "SELECT session_id, body_hash, run_id, after_seq FROM requests WHERE id = ?1",
                params![request_id],
                |row| {
                    Ok(RequestRecord {
                        session_id: row.get(0)?,
                        body_hash: row.get(1)?,
                        run_id: row.get(2)?,
                        after_seq: row.get::<_, i64>(3)? as Seq,
                    })
                },
            )
            .optional()?)
        })
    }

    pub fn record_request(&self, request_id: &str, record: &RequestRecord, now: u64) -> Result<(), StoreError> {
        self.with(|c| {
            c.execute(
                "INSERT INTO requests (id, session_id, body_hash, run_id, after_seq, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    request_id,
                    record.session_id,
                    record.body_hash,
                    record.run_id,
                    record.after_seq as i64,
                    now as i64
                ],
            )?;
            Ok(())
        })
    }

    /// Forgets request ids older than `cutoff` (ms since the epoch); they are kept at least 24 h.
    pub fn forget_requests_before(&self, cutoff: u64) -> Result<usize, StoreError> {
        self.with(|c| Ok(c.execute("DELETE FROM requests WHERE created_at < ?1", params![cutoff as i64])?))
    }
}

fn finish_run(
    connection: &Connection,
    run_id: &str,
    session_id: &str,
    status: RunStatus,
    now: u64,
) -> Result<(), StoreError> {
    connection.execute(
        "UPDATE runs SET status = ?2, ended_at = ?3 WHERE id = ?1",
        params![run_id, status.as_str(), now as i64],
    )?;
    connection.execute(
        "UPDATE sessions SET status = ?2 WHERE id = ?1",
        params![session_id, status.session_status().as_str()],
    )?;
    Ok(())
}

fn summary_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<SessionSummary> {
    Ok(SessionSummary {
        session_id: row.get(0)?,
        title: row.get(1)?,
        created_at: row.get::<_, i64>(2)? as u64,
        updated_at: row.get::<_, i64>(3)? as u64,
        status: status_from(&row.get::<_, String>(4)?),
        message_count: row.get::<_, i64>(5)? as u64,
        last_seq: row.get::<_, i64>(6)? as Seq,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta<'a>(session_id: &'a str, run_id: Option<&'a str>) -> NewFrame<'a> {
        NewFrame { session_id, kind: "delta", run_id, counts_as_message: false, now: 1, ends_run: None }
    }

    #[test]
    fn a_terminal_frame_ends_its_run_in_the_same_commit() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            store.create_session("s1", "", 1).unwrap();
            store.start_run("r1", "s1", 1).unwrap();
            store.append(&delta("s1", Some("r1")), |seq| format!("{{\"seq\":{seq}}}")).unwrap();
            let done = NewFrame {
                kind: "done",
                counts_as_message: true,
                ends_run: Some(RunStatus::Done),
                ..delta("s1", Some("r1"))
            };
            store.append(&done, |seq| format!("{{\"seq\":{seq}}}")).unwrap();
        }
        // Nothing after the append ran: what a crash right after it leaves behind.
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.running_runs().unwrap(), []);
        assert_eq!(store.run_status("r1").unwrap().as_deref(), Some("done"));
        assert_eq!(store.session("s1").unwrap().unwrap().status, SessionStatus::Idle);
        assert_eq!(store.run_terminal_kind("s1", "r1").unwrap().as_deref(), Some("done"));
    }

    #[test]
    fn a_cursor_beyond_every_seq_reads_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store.create_session("s1", "", 1).unwrap();
        store.append(&delta("s1", None), |_| "{}".into()).unwrap();
        assert_eq!(store.frames_after("s1", u64::MAX, 10).unwrap(), []);
        assert_eq!(store.frames_after("s1", i64::MAX as u64 + 1, 10).unwrap(), []);
        assert_eq!(store.frames_after("s1", 0, 10).unwrap().len(), 1);
    }

    #[test]
    fn frames_get_consecutive_seqs_and_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            store.create_session("s1", "", 1).unwrap();
            for i in 0..3 {
                let frame = store.append(&delta("s1", Some("r1")), |seq| format!("{{\"seq\":{seq},\"i\":{i}}}"));
                assert_eq!(frame.unwrap().seq, i + 1);
            }
        }
        let store = Store::open(dir.path()).unwrap();
        let frames = store.frames_after("s1", 1, 10).unwrap();
        assert_eq!(frames.iter().map(|f| f.seq).collect::<Vec<_>>(), [2, 3]);
        assert_eq!(frames[0].line, "{\"seq\":2,\"i\":1}");
        assert_eq!(store.session("s1").unwrap().unwrap().last_seq, 3);
    }

    #[test]
    fn appending_to_a_missing_session_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert!(matches!(store.append(&delta("nope", None), |_| String::new()), Err(StoreError::NoSession(_))));
    }

    #[test]
    fn deleting_a_session_deletes_its_log() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store.create_session("s1", "t", 1).unwrap();
        store.append(&delta("s1", None), |_| "{}".into()).unwrap();
        assert!(store.delete_session("s1").unwrap());
        assert!(store.frames_after("s1", 0, 10).unwrap().is_empty());
        assert!(store.session("s1").unwrap().is_none());
    }
}
