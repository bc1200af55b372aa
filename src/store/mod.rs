//! The session store: sessions, each session's frame log (where `append` gives a frame its `seq`), runs and request
//! ids, behind one async trait. SQLite (embedded) is the default; nothing in the trait assumes one process.
//!
//! Frames are stored as the exact JSON line sent to viewers, so a replay is byte-identical to the live stream.

pub mod postgres;
pub mod sqlite;
#[cfg(test)]
mod tests;

use std::future::Future;
use std::pin::Pin;

use crate::protocol::{ChatFrame, Seq, SessionStatus, SessionSummary};

pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("database: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    #[error("database connection: {0}")]
    Pool(String),
    #[error(
        "another chatwire instance is using this database; several instances on one database are not supported yet"
    )]
    InstanceTaken,
    #[error("creating {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("no session {0}")]
    NoSession(String),
    #[error("the database has schema version {found}, newer than this chatwire knows ({known}): use a newer chatwire")]
    NewerSchema { found: u32, known: u32 },
    #[error("request id {0} vanished while it was claimed")]
    NoRequest(String),
    #[error("a storage task failed: {0}")]
    Task(String),
}

/// What every store call returns: a future that may fail.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

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

/// Frames to append to one session's log, in one transaction.
#[derive(Debug, Clone)]
pub struct Append {
    pub session_id: String,
    pub run_id: Option<String>,
    pub frames: Vec<ChatFrame>,
    /// Set when the batch ends with its run's terminal frame: the run ends so, in the same transaction, so that no
    /// crash can leave a run that looks active after its `done` (the next start would give it a second end).
    pub ends_run: Option<RunStatus>,
    pub now: u64,
}

/// An appended frame: its logged line, and the frame itself with its `seq` set.
#[derive(Debug, Clone)]
pub struct Appended {
    pub logged: LoggedFrame,
    pub frame: ChatFrame,
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

/// The answer to claiming a request id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestClaim {
    /// The id was new and is now this request's.
    Claimed,
    /// Another request took the id first.
    Taken(RequestRecord),
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
    pub fn session_status(self) -> SessionStatus {
        match self {
            RunStatus::Running => SessionStatus::Running,
            RunStatus::Done => SessionStatus::Idle,
            RunStatus::Failed => SessionStatus::Failed,
            RunStatus::Interrupted => SessionStatus::Interrupted,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Done => "done",
            RunStatus::Failed => "failed",
            RunStatus::Interrupted => "interrupted",
        }
    }

    pub fn parse(text: &str) -> Option<RunStatus> {
        [RunStatus::Running, RunStatus::Done, RunStatus::Failed, RunStatus::Interrupted]
            .into_iter()
            .find(|status| status.as_str() == text)
    }
}

/// Seqs are stored as signed 64-bit integers: a cursor beyond that is beyond every frame (and must not wrap to -1).
fn seq_cursor(after: Seq) -> i64 {
    i64::try_from(after).unwrap_or(i64::MAX)
}

/// A session's status as a store keeps it (`SessionStatus::as_str`); anything else reads as idle.
fn session_status_from(text: &str) -> SessionStatus {
    match text {
        "running" => SessionStatus::Running,
        "interrupted" => SessionStatus::Interrupted,
        "failed" => SessionStatus::Failed,
        _ => SessionStatus::Idle,
    }
}

/// A run that was active when the server stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterruptedRun {
    pub run_id: String,
    pub session_id: String,
}

/// Where sessions, logs, runs and request ids are kept.
pub trait Store: Send + Sync + 'static {
    fn create_session<'a>(&'a self, id: &'a str, title: &'a str, now: u64) -> StoreFuture<'a, SessionSummary>;

    fn session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<SessionSummary>>;

    /// Every session, most recently updated first.
    fn sessions(&self) -> StoreFuture<'_, Vec<SessionSummary>>;

    /// False when there is no such session.
    fn rename_session<'a>(&'a self, id: &'a str, title: &'a str, now: u64) -> StoreFuture<'a, bool>;

    /// Names an unnamed session after its first message.
    fn title_if_unset<'a>(&'a self, id: &'a str, title: &'a str) -> StoreFuture<'a, ()>;

    /// Deletes the session with its log, runs and request ids; false when there was none.
    fn delete_session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool>;

    /// Appends frames to a session's log, giving each the session's next `seq` (strictly +1, never reused).
    fn append(&self, append: Append) -> StoreFuture<'_, Vec<Appended>>;

    /// Logged frames with `seq > after`, oldest first, at most `limit`.
    fn frames_after<'a>(&'a self, session_id: &'a str, after: Seq, limit: usize) -> StoreFuture<'a, Vec<LoggedFrame>>;

    /// The `seq` of the session's last frame (0 for an empty log); `None` when there is no such session.
    fn last_seq<'a>(&'a self, session_id: &'a str) -> StoreFuture<'a, Option<Seq>>;

    /// Records a run as running, and its session with it.
    fn start_run<'a>(&'a self, run_id: &'a str, session_id: &'a str, now: u64) -> StoreFuture<'a, ()>;

    /// Records the end of a run whose terminal frame is already logged (or could not be).
    fn finish_run<'a>(
        &'a self,
        run_id: &'a str,
        session_id: &'a str,
        status: RunStatus,
        now: u64,
    ) -> StoreFuture<'a, ()>;

    fn run_status<'a>(&'a self, run_id: &'a str) -> StoreFuture<'a, Option<RunStatus>>;

    /// Runs still marked running: on start-up, these were cut off by a crash.
    fn running_runs(&self) -> StoreFuture<'_, Vec<InterruptedRun>>;

    /// The type of the terminal frame (`done` or `error`) the log holds for a run, if it holds one.
    fn run_terminal_kind<'a>(&'a self, session_id: &'a str, run_id: &'a str) -> StoreFuture<'a, Option<String>>;

    /// What a request id was used for, if it was.
    fn request<'a>(&'a self, request_id: &'a str) -> StoreFuture<'a, Option<RequestRecord>>;

    /// Takes a request id for `record` unless another request has it (a unique insert: of two requests with one id,
    /// however concurrent, exactly one gets `Claimed`).
    fn claim_request<'a>(
        &'a self,
        request_id: &'a str,
        record: &'a RequestRecord,
        now: u64,
    ) -> StoreFuture<'a, RequestClaim>;

    /// Gives a claimed request id up again (its send made no run).
    fn release_request<'a>(&'a self, request_id: &'a str) -> StoreFuture<'a, ()>;

    /// Points a claimed request id at the run that took its message after all.
    fn set_request_run<'a>(&'a self, request_id: &'a str, run_id: &'a str) -> StoreFuture<'a, ()>;

    /// Forgets request ids taken before `cutoff` (ms since the epoch); returns how many.
    fn forget_requests_before(&self, cutoff: u64) -> StoreFuture<'_, usize>;
}
