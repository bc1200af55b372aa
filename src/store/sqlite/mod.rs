//! `SqliteStore`: the embedded store, one SQLite file (`chatwire.db`, WAL) under the data dir.
//!
//! SQLite calls block, so none runs on an async worker: all run on tokio's blocking pool. Writes queue for the one
//! write connection (SQLite has one writer at a time anyway), and appends that queue up commit together; reads
//! each take a connection of their own from a small pool, and in WAL mode they never wait for the writer.

mod schema;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};

use super::{
    Append, Appended, AttachmentMeta, InterruptedRun, Lease, LeaseHolder, LoggedFrame, PostedControl, RequestClaim,
    RequestRecord, RunStart, RunStatus, Store, StoreError, StoreFuture, StoredAttachment, WakeSink, seq_cursor,
    session_status_from,
};
use crate::ndjson::encode_frame;
use crate::protocol::{ChatFrame, SearchHit, Seq, SessionSummary, TokenUsage};
use crate::store::search;

/// Reader connections kept open between reads; more are opened when more reads run at once.
const IDLE_READERS: usize = 4;

#[derive(Clone)]
pub struct SqliteStore {
    path: PathBuf,
    writer: Arc<writer::Writer>,
    readers: Arc<Mutex<Vec<Connection>>>,
}

/// Write transactions begin `IMMEDIATE`: they take the write lock up front, waiting out another writer (the busy
/// timeout), instead of failing when a read transaction cannot be upgraded.
fn configure(connection: &Connection) -> Result<(), StoreError> {
    // NORMAL: a commit survives a process crash (not a power cut).
    connection.pragma_update(None, "synchronous", "NORMAL")?;
    connection.pragma_update(None, "foreign_keys", "ON")?;
    connection.busy_timeout(std::time::Duration::from_secs(5))?;
    Ok(())
}

impl SqliteStore {
    /// Opens (or creates) `chatwire.db` in `data_dir` and brings its schema up to date.
    pub fn open(data_dir: &Path) -> Result<SqliteStore, StoreError> {
        std::fs::create_dir_all(data_dir)
            .map_err(|source| StoreError::Io { path: data_dir.display().to_string(), source })?;
        let path = data_dir.join("chatwire.db");
        let mut writer = Connection::open(&path)?;
        // WAL: readers never block the writer, nor it them.
        writer.pragma_update(None, "journal_mode", "WAL")?;
        configure(&writer)?;
        schema::migrate(&mut writer)?;
        // The embedded store belongs to one process at a time: leases held by a process before this one are void,
        // and their runs are ended as soon as the chat opens.
        writer.execute("UPDATE sessions SET lease_expires_at = 0 WHERE lease_owner IS NOT NULL", [])?;
        let writer = Arc::new(writer::Writer::new(writer, append_in));
        Ok(SqliteStore { path, writer, readers: Arc::new(Mutex::new(Vec::new())) })
    }

    /// Runs `work` on the write connection, in turn with the other writes.
    fn write<T, F>(&self, work: F) -> StoreFuture<'static, T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        self.writer.job(work)
    }

    /// Runs `work` on a reader connection, on a blocking thread.
    fn read<T, F>(&self, work: F) -> StoreFuture<'static, T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (path, readers) = (self.path.clone(), self.readers.clone());
        read_blocking(move || {
            let pooled = readers.lock().expect("the reader pool lock is never poisoned").pop();
            let connection = match pooled {
                Some(connection) => connection,
                None => {
                    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
                    let connection = Connection::open_with_flags(&path, flags)?;
                    configure(&connection)?;
                    connection
                }
            };
            let result = work(&connection);
            let mut idle = readers.lock().expect("the reader pool lock is never poisoned");
            if idle.len() < IDLE_READERS {
                idle.push(connection);
            }
            result
        })
    }
}

fn read_blocking<T, F>(work: F) -> StoreFuture<'static, T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, StoreError> + Send + 'static,
{
    Box::pin(
        async move { tokio::task::spawn_blocking(work).await.map_err(|error| StoreError::Task(error.to_string()))? },
    )
}

impl Store for SqliteStore {
    fn create_session<'a>(
        &'a self,
        id: &'a str,
        title: &'a str,
        agent: Option<&'a str>,
        now: u64,
    ) -> StoreFuture<'a, SessionSummary> {
        let (id, title, agent) = (id.to_owned(), title.to_owned(), agent.map(str::to_owned));
        self.write(move |c| {
            c.execute(
                "INSERT INTO sessions (id, title, title_is_set, created_at, updated_at, agent) \
                 VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                params![id, title, !title.is_empty(), now as i64, agent],
            )?;
            session(c, &id)?.ok_or(StoreError::NoSession(id))
        })
    }

    fn bind_agent<'a>(&'a self, id: &'a str, agent: &'a str) -> StoreFuture<'a, Option<String>> {
        let (id, agent) = (id.to_owned(), agent.to_owned());
        self.write(move |c| {
            Ok(c.query_row(
                "UPDATE sessions SET agent = coalesce(agent, ?2) WHERE id = ?1 RETURNING agent",
                params![id, agent],
                |row| row.get(0),
            )
            .optional()?)
        })
    }

    fn session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<SessionSummary>> {
        let id = id.to_owned();
        self.read(move |c| session(c, &id))
    }

    fn sessions(&self) -> StoreFuture<'_, Vec<SessionSummary>> {
        self.read(|c| {
            let mut statement =
                c.prepare_cached(&format!("SELECT {SUMMARY_COLUMNS} FROM sessions ORDER BY updated_at DESC, id"))?;
            let rows = statement.query_map([], summary_from_row)?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }

    fn rename_session<'a>(&'a self, id: &'a str, title: &'a str, now: u64) -> StoreFuture<'a, bool> {
        let (id, title) = (id.to_owned(), title.to_owned());
        self.write(move |c| {
            let changed = c.execute(
                "UPDATE sessions SET title = ?2, title_is_set = 1, updated_at = ?3 WHERE id = ?1",
                params![id, title, now as i64],
            )?;
            Ok(changed == 1)
        })
    }

    fn title_if_unset<'a>(&'a self, id: &'a str, title: &'a str) -> StoreFuture<'a, ()> {
        let (id, title) = (id.to_owned(), title.to_owned());
        self.write(move |c| {
            c.execute(
                "UPDATE sessions SET title = ?2, title_is_set = 1 WHERE id = ?1 AND title_is_set = 0",
                params![id, title],
            )?;
            Ok(())
        })
    }

    fn delete_session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        let id = id.to_owned();
        self.write(move |c| Ok(c.execute("DELETE FROM sessions WHERE id = ?1", params![id])? == 1))
    }

    fn append(&self, append: Append) -> StoreFuture<'_, Vec<Appended>> {
        self.writer.append(append)
    }

    fn frames_after<'a>(&'a self, session_id: &'a str, after: Seq, limit: usize) -> StoreFuture<'a, Vec<LoggedFrame>> {
        let session_id = session_id.to_owned();
        self.read(move |c| {
            let mut statement = c.prepare_cached(
                "SELECT seq, kind, run_id, line FROM frames WHERE session_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
            )?;
            let rows = statement.query_map(params![session_id, seq_cursor(after), limit as i64], |row| {
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

    fn last_seq<'a>(&'a self, session_id: &'a str) -> StoreFuture<'a, Option<Seq>> {
        let session_id = session_id.to_owned();
        self.read(move |c| {
            Ok(c.query_row("SELECT last_seq FROM sessions WHERE id = ?1", params![session_id], |row| {
                row.get::<_, i64>(0)
            })
            .optional()?
            .map(|seq| seq as Seq))
        })
    }

    fn start_run<'a>(
        &'a self,
        run_id: &'a str,
        session_id: &'a str,
        owner: &'a str,
        ttl: Duration,
        now: u64,
    ) -> StoreFuture<'a, RunStart> {
        let (run_id, session_id, owner) = (run_id.to_owned(), session_id.to_owned(), owner.to_owned());
        self.write(move |c| {
            let transaction = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let holder =
                lease_holder(&transaction, &session_id)?.ok_or_else(|| StoreError::NoSession(session_id.clone()))?;
            if let Some(holder) = holder {
                return Ok(RunStart::Busy(holder));
            }
            let (generation, last_seq): (i64, i64) = transaction.query_row(
                "UPDATE sessions SET lease_owner = ?2, lease_run_id = ?3, lease_generation = lease_generation + 1, \
                 lease_expires_at = ?4, status = 'running' WHERE id = ?1 RETURNING lease_generation, last_seq",
                params![session_id, owner, run_id, expiry(ttl)],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )?;
            transaction.execute(
                "INSERT INTO runs (id, session_id, status, started_at) VALUES (?1, ?2, 'running', ?3)",
                params![run_id, session_id, now as i64],
            )?;
            transaction.commit()?;
            Ok(RunStart::Started { lease: Lease { owner, generation: generation as u64 }, last_seq: last_seq as Seq })
        })
    }

    fn finish_run<'a>(
        &'a self,
        run_id: &'a str,
        session_id: &'a str,
        status: RunStatus,
        now: u64,
    ) -> StoreFuture<'a, ()> {
        let (run_id, session_id) = (run_id.to_owned(), session_id.to_owned());
        self.write(move |c| {
            let transaction = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            finish_run(&transaction, &run_id, &session_id, status, now)?;
            transaction.commit()?;
            Ok(())
        })
    }

    fn run_status<'a>(&'a self, run_id: &'a str) -> StoreFuture<'a, Option<RunStatus>> {
        let run_id = run_id.to_owned();
        self.read(move |c| {
            let status: Option<String> =
                c.query_row("SELECT status FROM runs WHERE id = ?1", params![run_id], |row| row.get(0)).optional()?;
            Ok(status.as_deref().and_then(RunStatus::parse))
        })
    }

    fn stale_runs(&self) -> StoreFuture<'_, Vec<InterruptedRun>> {
        self.read(|c| {
            let mut statement = c.prepare_cached(
                "SELECT runs.id, runs.session_id FROM runs JOIN sessions ON sessions.id = runs.session_id \
                 WHERE runs.status = 'running' AND (sessions.lease_owner IS NULL OR sessions.lease_expires_at < ?1) \
                 ORDER BY runs.started_at",
            )?;
            let rows = statement
                .query_map([clock_ms()], |row| Ok(InterruptedRun { run_id: row.get(0)?, session_id: row.get(1)? }))?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }

    fn lease_holder<'a>(&'a self, session_id: &'a str) -> StoreFuture<'a, Option<LeaseHolder>> {
        let session_id = session_id.to_owned();
        self.read(move |c| Ok(lease_holder(c, &session_id)?.flatten()))
    }

    fn renew_leases<'a>(&'a self, owner: &'a str, ttl: Duration) -> StoreFuture<'a, Vec<String>> {
        let owner = owner.to_owned();
        self.write(move |c| {
            let mut statement =
                c.prepare_cached("UPDATE sessions SET lease_expires_at = ?2 WHERE lease_owner = ?1 RETURNING id")?;
            let rows = statement.query_map(params![owner, expiry(ttl)], |row| row.get(0))?;
            Ok(rows.collect::<Result<Vec<String>, _>>()?)
        })
    }

    fn take_over<'a>(
        &'a self,
        run_id: &'a str,
        session_id: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> StoreFuture<'a, Option<Lease>> {
        let (run_id, session_id, owner) = (run_id.to_owned(), session_id.to_owned(), owner.to_owned());
        self.write(move |c| {
            let transaction = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let generation: Option<i64> = transaction
                .query_row(
                    "UPDATE sessions SET lease_owner = ?3, lease_run_id = ?2, lease_generation = lease_generation + 1, \
                     lease_expires_at = ?4 WHERE id = ?1 AND (lease_owner IS NULL OR lease_expires_at < ?5) \
                     AND EXISTS (SELECT 1 FROM runs WHERE runs.id = ?2 AND runs.status = 'running') \
                     RETURNING lease_generation",
                    params![session_id, run_id, owner, expiry(ttl), clock_ms()],
                    |row| row.get(0),
                )
                .optional()?;
            transaction.commit()?;
            Ok(generation.map(|generation| Lease { owner, generation: generation as u64 }))
        })
    }

    fn expire_leases<'a>(&'a self, owner: &'a str) -> StoreFuture<'a, ()> {
        let owner = owner.to_owned();
        self.write(move |c| {
            c.execute("UPDATE sessions SET lease_expires_at = 0 WHERE lease_owner = ?1", params![owner])?;
            Ok(())
        })
    }

    fn post_control<'a>(
        &'a self,
        session_id: &'a str,
        run_id: &'a str,
        owner: &'a str,
        body: &'a str,
        now: u64,
    ) -> StoreFuture<'a, i64> {
        let (session_id, run_id, owner, body) =
            (session_id.to_owned(), run_id.to_owned(), owner.to_owned(), body.to_owned());
        self.write(move |c| {
            Ok(c.query_row(
                "INSERT INTO controls (session_id, run_id, owner, body, created_at) VALUES (?1, ?2, ?3, ?4, ?5) \
                 RETURNING id",
                params![session_id, run_id, owner, body, now as i64],
                |row| row.get(0),
            )?)
        })
    }

    fn pending_controls<'a>(&'a self, owner: &'a str) -> StoreFuture<'a, Vec<PostedControl>> {
        let owner = owner.to_owned();
        self.read(move |c| {
            let mut statement = c.prepare_cached(
                "SELECT id, session_id, run_id, body FROM controls WHERE owner = ?1 AND reply IS NULL ORDER BY id",
            )?;
            let rows = statement.query_map(params![owner], |row| {
                Ok(PostedControl { id: row.get(0)?, session_id: row.get(1)?, run_id: row.get(2)?, body: row.get(3)? })
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }

    fn answer_control<'a>(&'a self, id: i64, reply: &'a str) -> StoreFuture<'a, ()> {
        let reply = reply.to_owned();
        self.write(move |c| {
            c.execute("UPDATE controls SET reply = ?2 WHERE id = ?1", params![id, reply])?;
            Ok(())
        })
    }

    fn take_control_reply(&self, id: i64) -> StoreFuture<'_, Option<String>> {
        self.write(move |c| {
            Ok(c.query_row(
                "DELETE FROM controls WHERE id = ?1 AND reply IS NOT NULL RETURNING reply",
                params![id],
                |row| row.get(0),
            )
            .optional()?)
        })
    }

    fn listen(&self, _sink: WakeSink) -> bool {
        false
    }

    fn run_terminal_kind<'a>(&'a self, session_id: &'a str, run_id: &'a str) -> StoreFuture<'a, Option<String>> {
        let (session_id, run_id) = (session_id.to_owned(), run_id.to_owned());
        self.read(move |c| {
            Ok(c.query_row(
                "SELECT kind FROM frames WHERE session_id = ?1 AND run_id = ?2 AND kind IN ('done', 'error') \
                 ORDER BY seq LIMIT 1",
                params![session_id, run_id],
                |row| row.get(0),
            )
            .optional()?)
        })
    }

    fn request<'a>(&'a self, request_id: &'a str) -> StoreFuture<'a, Option<RequestRecord>> {
        let request_id = request_id.to_owned();
        self.read(move |c| request(c, &request_id))
    }

    fn claim_request<'a>(
        &'a self,
        request_id: &'a str,
        record: &'a RequestRecord,
        now: u64,
    ) -> StoreFuture<'a, RequestClaim> {
        let (request_id, record) = (request_id.to_owned(), record.clone());
        self.write(move |c| {
            let inserted = c.execute(
                "INSERT INTO requests (id, session_id, body_hash, run_id, after_seq, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (id) DO NOTHING",
                params![
                    request_id,
                    record.session_id,
                    record.body_hash,
                    record.run_id,
                    record.after_seq as i64,
                    now as i64
                ],
            )?;
            if inserted == 1 {
                return Ok(RequestClaim::Claimed);
            }
            let taken = request(c, &request_id)?.ok_or_else(|| StoreError::NoRequest(request_id.clone()))?;
            Ok(RequestClaim::Taken(taken))
        })
    }

    fn release_request<'a>(&'a self, request_id: &'a str) -> StoreFuture<'a, ()> {
        let request_id = request_id.to_owned();
        self.write(move |c| {
            c.execute("DELETE FROM requests WHERE id = ?1", params![request_id])?;
            Ok(())
        })
    }

    fn set_request_run<'a>(&'a self, request_id: &'a str, run_id: &'a str) -> StoreFuture<'a, ()> {
        let (request_id, run_id) = (request_id.to_owned(), run_id.to_owned());
        self.write(move |c| {
            c.execute("UPDATE requests SET run_id = ?2 WHERE id = ?1", params![request_id, run_id])?;
            Ok(())
        })
    }

    fn forget_requests_before(&self, cutoff: u64) -> StoreFuture<'_, usize> {
        self.write(move |c| {
            c.execute("DELETE FROM controls WHERE created_at < ?1", params![cutoff as i64])?;
            Ok(c.execute("DELETE FROM requests WHERE created_at < ?1", params![cutoff as i64])?)
        })
    }

    fn put_attachment<'a>(&'a self, attachment: &'a StoredAttachment, now: u64) -> StoreFuture<'a, ()> {
        let attachment = attachment.clone();
        self.write(move |c| {
            c.execute(
                "INSERT INTO attachments (id, media_type, size, bytes, created_at) VALUES (?1, ?2, ?3, ?4, ?5) \
                 ON CONFLICT (id) DO NOTHING",
                params![
                    attachment.id,
                    attachment.media_type,
                    attachment.bytes.len() as i64,
                    attachment.bytes,
                    now as i64
                ],
            )?;
            Ok(())
        })
    }

    fn attachment_meta<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<AttachmentMeta>> {
        let id = id.to_owned();
        self.read(move |c| {
            let meta = c
                .prepare_cached("SELECT media_type, size FROM attachments WHERE id = ?1")?
                .query_row(params![id], |row| {
                    Ok(AttachmentMeta { media_type: row.get(0)?, size: row.get::<_, i64>(1)? as u64 })
                })
                .optional()?;
            Ok(meta)
        })
    }

    fn attachment<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<StoredAttachment>> {
        let id = id.to_owned();
        self.read(move |c| {
            let found = c
                .prepare_cached("SELECT media_type, bytes FROM attachments WHERE id = ?1")?
                .query_row(params![id], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()?;
            Ok(found.map(|(media_type, bytes)| StoredAttachment { id, media_type, bytes }))
        })
    }

    fn search<'a>(&'a self, query: &'a str, limit: usize) -> StoreFuture<'a, Vec<SearchHit>> {
        let words = search::query_words(query);
        self.read(move |c| {
            if words.is_empty() {
                return Ok(Vec::new());
            }
            let expression = search::fts5_query(&words);
            // Walking the matches newest first costs no ranking: it finds the oldest that is still ranked.
            let oldest: Option<i64> = c
                .prepare_cached(
                    "SELECT rowid FROM search_fts WHERE search_fts MATCH ?1 ORDER BY rowid DESC LIMIT 1 OFFSET ?2",
                )?
                .query_row(params![expression, search::ranked_at_most(&words) - 1], |row| row.get(0))
                .optional()?;
            // bm25 is lower for better matches; a title match counts double.
            let mut statement = c.prepare_cached(
                "SELECT d.session_id, s.title, d.seq, d.message_id, d.body, \
                 bm25(search_fts) * CASE WHEN d.seq IS NULL THEN 2.0 ELSE 1.0 END AS score \
                 FROM search_fts JOIN search_docs d ON d.id = search_fts.rowid JOIN sessions s ON s.id = d.session_id \
                 WHERE search_fts MATCH ?1 AND search_fts.rowid >= ?3 ORDER BY score, d.session_id, d.seq LIMIT ?2",
            )?;
            let params = params![expression, limit as i64, oldest.unwrap_or(i64::MIN)];
            let rows = statement.query_map(params, |row| {
                let body: String = row.get(4)?;
                Ok(SearchHit {
                    session_id: row.get(0)?,
                    title: row.get(1)?,
                    seq: row.get::<_, Option<i64>>(2)?.map(|seq| seq as Seq),
                    message_id: row.get(3)?,
                    snippet: search::snippet(&body, &words),
                    rank: -row.get::<_, f64>(5)?,
                })
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }
}

/// One append, inside the writer's transaction.
fn append_in(connection: &Connection, append: Append) -> Result<Vec<Appended>, StoreError> {
    let Append { session_id, run_id, frames, ends_run, lease, now } = append;
    let last: Option<(i64, Option<String>, i64)> = connection
        .query_row(
            "SELECT last_seq, lease_owner, lease_generation FROM sessions WHERE id = ?1",
            params![session_id],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .optional()?;
    let Some((last, owner, generation)) = last else { return Err(StoreError::NoSession(session_id)) };
    if let Some(lease) = &lease
        && (owner.as_deref() != Some(lease.owner.as_str()) || generation as u64 != lease.generation)
    {
        return Err(StoreError::LeaseLost(session_id));
    }
    let mut seq = last as Seq;
    let mut appended = Vec::with_capacity(frames.len());
    let mut messages = 0_i64;
    let mut used = TokenUsage::default();
    let mut insert = connection
        .prepare_cached("INSERT INTO frames (session_id, seq, kind, run_id, line) VALUES (?1, ?2, ?3, ?4, ?5)")?;
    let mut index = connection
        .prepare_cached("INSERT INTO search_docs (session_id, seq, message_id, body) VALUES (?1, ?2, ?3, ?4)")?;
    for mut frame in frames {
        seq += 1;
        frame.set_seq(seq);
        let kind = frame.frame_type().as_str();
        messages += i64::from(matches!(frame, ChatFrame::Message(_) | ChatFrame::Done(_)));
        if let ChatFrame::Usage(usage) = &frame {
            used.add(&usage.usage);
        }
        let mut line = encode_frame(&frame);
        line.pop();
        insert.execute(params![session_id, seq as i64, kind, run_id, line])?;
        if let Some(doc) = search::indexed(&frame) {
            index.execute(params![session_id, seq as i64, doc.message_id, doc.body])?;
        }
        let logged = LoggedFrame { seq, kind: kind.to_owned(), run_id: run_id.clone(), line };
        appended.push(Appended { logged, frame });
    }
    connection.execute(
        "UPDATE sessions SET last_seq = ?2, updated_at = ?3, message_count = message_count + ?4, \
         input_tokens = input_tokens + ?5, output_tokens = output_tokens + ?6, \
         cache_read_tokens = cache_read_tokens + ?7, cache_write_tokens = cache_write_tokens + ?8, \
         cost = CASE WHEN ?9 IS NULL THEN cost ELSE coalesce(cost, 0) + ?9 END WHERE id = ?1",
        params![
            session_id,
            seq as i64,
            now as i64,
            messages,
            used.input as i64,
            used.output as i64,
            used.cache_read as i64,
            used.cache_write as i64,
            used.cost
        ],
    )?;
    if let (Some(status), Some(run_id)) = (ends_run, &run_id) {
        finish_run(connection, run_id, &session_id, status, now)?;
    }
    Ok(appended)
}

fn session(connection: &Connection, id: &str) -> Result<Option<SessionSummary>, StoreError> {
    Ok(connection
        .query_row(&format!("SELECT {SUMMARY_COLUMNS} FROM sessions WHERE id = ?1"), params![id], summary_from_row)
        .optional()?)
}

fn request(connection: &Connection, request_id: &str) -> Result<Option<RequestRecord>, StoreError> {
    Ok(connection
        .query_row(
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
        "UPDATE sessions SET status = ?2, \
         lease_owner = CASE WHEN lease_run_id = ?3 THEN NULL ELSE lease_owner END, \
         lease_run_id = CASE WHEN lease_run_id = ?3 THEN NULL ELSE lease_run_id END WHERE id = ?1",
        params![session_id, status.session_status().as_str(), run_id],
    )?;
    Ok(())
}

/// The session's lease holder; `None` when there is no such session.
fn lease_holder(connection: &Connection, session_id: &str) -> Result<Option<Option<LeaseHolder>>, StoreError> {
    Ok(connection
        .query_row(
            "SELECT lease_owner, lease_run_id, lease_generation, lease_expires_at < ?2 FROM sessions WHERE id = ?1",
            params![session_id, clock_ms()],
            |row| {
                let owner: Option<String> = row.get(0)?;
                Ok(match owner {
                    Some(owner) => Some(LeaseHolder {
                        owner,
                        run_id: row.get(1)?,
                        generation: row.get::<_, i64>(2)? as u64,
                        expired: row.get(3)?,
                    }),
                    None => None,
                })
            },
        )
        .optional()?)
}

/// Lease times are this process's clock: the embedded store has no other writer.
fn clock_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

fn expiry(ttl: Duration) -> i64 {
    clock_ms().saturating_add(ttl.as_millis() as i64)
}

const SUMMARY_COLUMNS: &str = "id, title, created_at, updated_at, status, message_count, last_seq, input_tokens, \
     output_tokens, cache_read_tokens, cache_write_tokens, cost, agent";

fn summary_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<SessionSummary> {
    let usage = TokenUsage {
        input: row.get::<_, i64>(7)? as u64,
        output: row.get::<_, i64>(8)? as u64,
        cache_read: row.get::<_, i64>(9)? as u64,
        cache_write: row.get::<_, i64>(10)? as u64,
        cost: row.get(11)?,
    };
    Ok(SessionSummary {
        session_id: row.get(0)?,
        title: row.get(1)?,
        created_at: row.get::<_, i64>(2)? as u64,
        updated_at: row.get::<_, i64>(3)? as u64,
        status: session_status_from(&row.get::<_, String>(4)?),
        message_count: row.get::<_, i64>(5)? as u64,
        last_seq: row.get::<_, i64>(6)? as Seq,
        usage: (!usage.is_empty()).then_some(usage),
        agent: row.get(12)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_bring_an_unversioned_database_up_to_date_and_keep_its_data() {
        let dir = tempfile::tempdir().unwrap();
        {
            // A database of the first version, before schema versions were counted.
            let connection = Connection::open(dir.path().join("chatwire.db")).unwrap();
            connection.execute_batch(schema::MIGRATIONS[0]).unwrap();
            connection
                .execute("INSERT INTO sessions (id, title, created_at, updated_at) VALUES ('s1', 't', 1, 1)", [])
                .unwrap();
        }
        let _store = SqliteStore::open(dir.path()).unwrap();
        let connection = Connection::open(dir.path().join("chatwire.db")).unwrap();
        let version: u32 = connection.pragma_query_value(None, "user_version", |row| row.get(0)).unwrap();
        assert_eq!(version, schema::current_version());
        let sessions: i64 = connection.query_row("SELECT count(*) FROM sessions", [], |row| row.get(0)).unwrap();
        assert_eq!(sessions, 1);
        let index: i64 = connection
            .query_row("SELECT count(*) FROM sqlite_master WHERE name = 'requests_by_age'", [], |row| row.get(0))
            .unwrap();
        assert_eq!(index, 1, "migration 2 ran");
    }

    #[test]
    fn a_database_from_a_newer_chatwire_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let future = schema::current_version() + 1;
        Connection::open(dir.path().join("chatwire.db")).unwrap().pragma_update(None, "user_version", future).unwrap();
        assert!(matches!(SqliteStore::open(dir.path()), Err(StoreError::NewerSchema { found, .. }) if found == future));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_call_that_waits_for_the_database_leaves_the_async_thread_free() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open(dir.path()).unwrap());
        store.create_session("s1", "", None, 1).await.unwrap();
        let blocker = Connection::open(dir.path().join("chatwire.db")).unwrap();
        blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
        let append = tokio::spawn({
            let store = store.clone();
            async move { store.append(super::super::tests::deltas("s1", None, 1)).await }
        });
        // The one async thread must get to this task while the append waits for the lock.
        let (answered, answer) = tokio::sync::oneshot::channel();
        tokio::spawn(async move { answered.send(()).unwrap() });
        answer.await.unwrap();
        assert!(!append.is_finished(), "the append waited for the other writer");
        blocker.execute_batch("COMMIT").unwrap();
        assert_eq!(append.await.unwrap().unwrap()[0].logged.seq, 1);
    }

    /// A database in `dir` as a chatwire of schema `version` left it, with one session `s1` titled `title`.
    fn database_of_version(dir: &std::path::Path, version: usize, title: &str) -> Connection {
        let connection = Connection::open(dir.join("chatwire.db")).unwrap();
        connection.execute_batch(&schema::MIGRATIONS[..version].join(";")).unwrap();
        connection.pragma_update(None, "user_version", version as u32).unwrap();
        connection
            .execute("INSERT INTO sessions (id, title, created_at, updated_at) VALUES ('s1', ?1, 1, 1)", [title])
            .unwrap();
        connection
    }

    #[tokio::test]
    async fn the_search_migration_indexes_an_existing_database() {
        let dir = tempfile::tempdir().unwrap();
        {
            // A database of version 3, with a titled session and a logged prompt.
            let connection = database_of_version(dir.path(), 3, "Old title");
            let line = super::super::tests::prompt_line(1, "m1", "remember the zeppelin");
            connection
                .execute("INSERT INTO frames (session_id, seq, kind, line) VALUES ('s1', 1, 'message', ?1)", [line])
                .unwrap();
            connection
                .execute("INSERT INTO frames (session_id, seq, kind, line) VALUES ('s1', 2, 'message', 'not json')", [])
                .unwrap();
        }
        let store = SqliteStore::open(dir.path()).unwrap();
        let hits = store.search("zeppelin", 10).await.unwrap();
        assert_eq!((hits.len(), hits[0].seq, hits[0].message_id.as_deref()), (1, Some(1), Some("m1")));
        assert_eq!(store.search("old", 10).await.unwrap()[0].seq, None, "the title is indexed");
    }

    #[tokio::test]
    async fn the_prefix_migration_rebuilds_the_index_and_keeps_it_current() {
        let dir = tempfile::tempdir().unwrap();
        {
            // A database of version 4, its index built the old way.
            let connection = database_of_version(dir.path(), 4, "Zeppelin notes");
            connection
                .execute(
                    "INSERT INTO search_docs (session_id, seq, message_id, body) \
                     VALUES ('s1', 1, 'm1', 'remember the dirigible')",
                    [],
                )
                .unwrap();
        }
        let store = SqliteStore::open(dir.path()).unwrap();
        assert_eq!(store.search("dirigi", 10).await.unwrap()[0].message_id.as_deref(), Some("m1"));
        assert_eq!(store.search("zeppel", 10).await.unwrap()[0].seq, None, "the title is still found");
        store.rename_session("s1", "Airship notes", 2).await.unwrap();
        assert!(store.search("zeppel", 10).await.unwrap().is_empty(), "the triggers keep the new index current");
        assert_eq!(store.search("airshi", 10).await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn the_usage_migration_starts_existing_sessions_at_nothing_counted() {
        let dir = tempfile::tempdir().unwrap();
        drop(database_of_version(dir.path(), 5, "Before usage"));
        let store = SqliteStore::open(dir.path()).unwrap();
        let before = store.session("s1").await.unwrap().unwrap();
        assert_eq!((before.title.as_str(), before.usage), ("Before usage", None));
        store.append(super::super::tests::deltas("s1", None, 1)).await.unwrap();
        let usage = crate::protocol::TokenUsage { input: 7, output: 3, cache_read: 0, cache_write: 0, cost: None };
        store.append(super::super::tests::calls_used("s1", usage.clone(), 1)).await.unwrap();
        assert_eq!(store.session("s1").await.unwrap().unwrap().usage, Some(usage));
    }

    #[tokio::test]
    async fn the_agent_migration_leaves_existing_sessions_to_the_default_agent_until_bound() {
        let dir = tempfile::tempdir().unwrap();
        drop(database_of_version(dir.path(), 7, "Before agents"));
        let store = SqliteStore::open(dir.path()).unwrap();
        let before = store.session("s1").await.unwrap().unwrap();
        assert_eq!((before.title.as_str(), before.agent), ("Before agents", None));
        assert_eq!(store.bind_agent("s1", "agent").await.unwrap().as_deref(), Some("agent"));
    }
}
