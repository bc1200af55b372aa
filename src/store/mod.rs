//! The session store: sessions, each session's frame log (where `append` gives a frame its `seq`), runs, request
//! ids, run leases and relayed controls, behind one async trait. SQLite (embedded) is the default; nothing in the
//! trait assumes one process: PostgreSQL is shared by several instances.
//!
//! Frames are stored as the exact JSON line sent to viewers, so a replay is byte-identical to the live stream.

pub mod postgres;
pub mod search;
pub mod sqlite;
#[cfg(test)]
pub(crate) mod tests;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::protocol::{ChatFrame, SearchHit, Seq, SessionStatus, SessionSummary};

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
    #[error("the run's lease on session {0} is lost: another instance took the session over")]
    LeaseLost(String),
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
    /// The lease the appending run holds: the append is refused (`LeaseLost`) unless it is still the session's.
    /// `None` only for frames logged outside any run (the server never does that).
    pub lease: Option<Lease>,
    pub now: u64,
}

/// A run's hold on its session. Only the holder of the session's current generation may append to its log, so an
/// instance that lost its lease (paused, cut off) cannot write after another took the session over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub owner: String,
    pub generation: u64,
}

/// Who holds a session's lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseHolder {
    pub owner: String,
    pub run_id: Option<String>,
    pub generation: u64,
    /// Not renewed in time: its owner is gone (or cut off), and its run is to be ended by whoever notices.
    pub expired: bool,
}

/// The answer to starting a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunStart {
    /// The run is recorded as running under this lease; `last_seq` is the session's last `seq` before it.
    Started { lease: Lease, last_seq: Seq },
    /// Another run holds the session's lease (perhaps an expired one, whose run must be ended first).
    Busy(LeaseHolder),
}

/// A control (Stop, a queued message, an answer, a decision) posted for the instance that runs a session's run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostedControl {
    pub id: i64,
    pub session_id: String,
    pub run_id: String,
    /// The control as JSON (the server's `Control`).
    pub body: String,
}

/// What a shared store tells the instances listening to it. Wake-ups only say where to look again: a lost one costs
/// latency, never data, because whoever is woken re-reads the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wake {
    /// A session's log grew to `last_seq`.
    Appended { session_id: String, last_seq: Seq },
    /// Controls were posted for `owner`.
    Control { owner: String },
    /// The owner of a run answered control `id`.
    Replied { id: i64 },
    /// The listener (re)connected: wake-ups may have been missed, so everything is worth a look.
    Resync,
}

/// Where a store delivers its wake-ups; it answers false once nobody wants them any more (its chat is gone), and
/// the store stops listening.
pub type WakeSink = Arc<dyn Fn(Wake) -> bool + Send + Sync>;

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

/// A file a user attached, kept under the SHA-256 of its bytes (hex): the same bytes attached twice are kept once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredAttachment {
    pub id: String,
    pub media_type: String,
    pub bytes: Vec<u8>,
}

/// An attachment without its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachmentMeta {
    pub media_type: String,
    pub size: u64,
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

/// A run still marked running whose lease expired (its instance died or stopped): it is to be ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterruptedRun {
    pub run_id: String,
    pub session_id: String,
}

/// Where sessions, logs, runs and request ids are kept.
pub trait Store: Send + Sync + 'static {
    /// `agent` binds the session to an agent for life; `None` leaves that to its first send (`bind_agent`).
    fn create_session<'a>(
        &'a self,
        id: &'a str,
        title: &'a str,
        agent: Option<&'a str>,
        now: u64,
    ) -> StoreFuture<'a, SessionSummary>;

    /// Binds a session that has no agent yet to `agent`, and returns the agent the session has then: `agent`, or
    /// the one it already had (a session's agent never changes; of two instances binding at once, one wins and both
    /// learn which). `None` when there is no such session.
    fn bind_agent<'a>(&'a self, id: &'a str, agent: &'a str) -> StoreFuture<'a, Option<String>>;

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

    /// Records a run as running under a new lease of `owner` on its session, valid for `ttl` unless renewed; `Busy`
    /// when the session's lease is held (even an expired one: its run is ended first, with its one terminal frame).
    fn start_run<'a>(
        &'a self,
        run_id: &'a str,
        session_id: &'a str,
        owner: &'a str,
        ttl: Duration,
        now: u64,
    ) -> StoreFuture<'a, RunStart>;

    /// Records the end of a run whose terminal frame is already logged (or could not be), releasing its lease.
    fn finish_run<'a>(
        &'a self,
        run_id: &'a str,
        session_id: &'a str,
        status: RunStatus,
        now: u64,
    ) -> StoreFuture<'a, ()>;

    fn run_status<'a>(&'a self, run_id: &'a str) -> StoreFuture<'a, Option<RunStatus>>;

    /// Runs still marked running whose lease expired: their instance is gone.
    fn stale_runs(&self) -> StoreFuture<'_, Vec<InterruptedRun>>;

    /// Who holds the session's lease, if anyone.
    fn lease_holder<'a>(&'a self, session_id: &'a str) -> StoreFuture<'a, Option<LeaseHolder>>;

    /// Extends every lease `owner` holds by `ttl`; returns the sessions it still holds.
    fn renew_leases<'a>(&'a self, owner: &'a str, ttl: Duration) -> StoreFuture<'a, Vec<String>>;

    /// Takes the lease of a stale run (expired, its run still running) for `owner`, to end that run; `None` when the
    /// run ended or its lease is live after all (another instance got there first).
    fn take_over<'a>(
        &'a self,
        run_id: &'a str,
        session_id: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> StoreFuture<'a, Option<Lease>>;

    /// Lets every lease of `owner` expire now (it is shutting down), so that other instances end its runs at once.
    fn expire_leases<'a>(&'a self, owner: &'a str) -> StoreFuture<'a, ()>;

    /// Posts a control for the instance `owner` that runs `run_id`; returns its id.
    fn post_control<'a>(
        &'a self,
        session_id: &'a str,
        run_id: &'a str,
        owner: &'a str,
        body: &'a str,
        now: u64,
    ) -> StoreFuture<'a, i64>;

    /// Controls posted for `owner` that it has not answered yet, oldest first.
    fn pending_controls<'a>(&'a self, owner: &'a str) -> StoreFuture<'a, Vec<PostedControl>>;

    /// The owner's answer to control `id` (JSON).
    fn answer_control<'a>(&'a self, id: i64, reply: &'a str) -> StoreFuture<'a, ()>;

    /// The answer to control `id` once there is one; the control is then forgotten.
    fn take_control_reply(&self, id: i64) -> StoreFuture<'_, Option<String>>;

    /// Starts delivering wake-ups from other instances to `sink`; false for a store only this process writes (its
    /// own appends wake its viewers directly).
    fn listen(&self, sink: WakeSink) -> bool;

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

    /// Forgets request ids (and unanswered controls) older than `cutoff` (ms since the epoch); returns how many
    /// request ids.
    fn forget_requests_before(&self, cutoff: u64) -> StoreFuture<'_, usize>;

    /// Session titles and logged messages that hold every word of `query` as the start of one of their words
    /// (`search::query_words`), best first, at most `limit`; none for a query without a word. The index is kept in
    /// the same transaction as what it indexes (appends, renames, deletes).
    fn search<'a>(&'a self, query: &'a str, limit: usize) -> StoreFuture<'a, Vec<SearchHit>>;

    /// Keeps an attachment; keeping the same bytes again changes nothing.
    fn put_attachment<'a>(&'a self, attachment: &'a StoredAttachment, now: u64) -> StoreFuture<'a, ()>;

    /// An attachment's media type and size, without reading its bytes.
    fn attachment_meta<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<AttachmentMeta>>;

    fn attachment<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<StoredAttachment>>;
}
