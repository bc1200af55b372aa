//! `PostgresStore`: the store on a PostgreSQL server (`--database-url postgres://…`), the one system several chatwire
//! instances share. `seq` is assigned inside the append transaction under a lock on the session's row, so two
//! instances can never write the same one; the same lock checks the appending run's lease. Lease times are the
//! database's clock, so the instances' clocks need not agree.

mod listener;
mod schema;
#[cfg(test)]
#[path = "../../../tests/support/postgres.rs"]
pub(crate) mod test_server;

use std::time::Duration;

use deadpool_postgres::{Pool, Runtime};
use tokio_postgres::NoTls;
use tokio_postgres::types::ToSql;

use super::{
    Append, Appended, AttachmentMeta, InterruptedRun, Lease, LeaseHolder, LoggedFrame, PostedControl, RequestClaim,
    RequestRecord, RunStart, RunStatus, Store, StoreError, StoreFuture, StoredAttachment, WakeSink, seq_cursor,
    session_status_from,
};
use crate::ndjson::encode_frame;
use crate::protocol::{ChatFrame, SearchHit, Seq, SessionSummary, TokenUsage};
use crate::store::search;

#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    config: tokio_postgres::Config,
}

/// The database's clock in ms since the epoch; `clock_timestamp`, not `now`, which stands still in a transaction.
const DB_NOW: &str = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

impl From<deadpool_postgres::PoolError> for StoreError {
    fn from(error: deadpool_postgres::PoolError) -> StoreError {
        StoreError::Pool(error.to_string())
    }
}

impl PostgresStore {
    /// Connects to `url` (a `postgres://` URL or a `key=value` connection string) and brings the schema up to date.
    pub async fn open(url: &str) -> Result<PostgresStore, StoreError> {
        let config: tokio_postgres::Config =
            url.parse().map_err(|error: tokio_postgres::Error| StoreError::Pool(format!("{url}: {error}")))?;
        let manager = deadpool_postgres::Manager::from_config(
            config.clone(),
            NoTls,
            deadpool_postgres::ManagerConfig { recycling_method: deadpool_postgres::RecyclingMethod::Fast },
        );
        let pool = Pool::builder(manager)
            .runtime(Runtime::Tokio1)
            .max_size(16)
            .build()
            .map_err(|error| StoreError::Pool(error.to_string()))?;
        let mut client = pool.get().await?;
        schema::migrate(&mut client).await?;
        Ok(PostgresStore { pool, config })
    }
}

fn ms(duration: Duration) -> i64 {
    duration.as_millis().min(i64::MAX as u128) as i64
}

fn holder_from_row(row: &tokio_postgres::Row) -> Option<LeaseHolder> {
    let owner: Option<String> = row.get(0);
    owner.map(|owner| LeaseHolder {
        owner,
        run_id: row.get(1),
        generation: row.get::<_, i64>(2) as u64,
        expired: row.get(3),
    })
}

const HOLDER_COLUMNS: &str = "lease_owner, lease_run_id, lease_generation, lease_expires_at < ";

const REQUEST_BY_ID: &str = "SELECT session_id, body_hash, run_id, after_seq FROM requests WHERE id = $1";

const SUMMARY_COLUMNS: &str = "id, title, created_at, updated_at, status, message_count, last_seq, input_tokens, \
     output_tokens, cache_read_tokens, cache_write_tokens, cost, agent";

fn summary_from_row(row: &tokio_postgres::Row) -> SessionSummary {
    let usage = TokenUsage {
        input: row.get::<_, i64>(7) as u64,
        output: row.get::<_, i64>(8) as u64,
        cache_read: row.get::<_, i64>(9) as u64,
        cache_write: row.get::<_, i64>(10) as u64,
        cost: row.get(11),
    };
    SessionSummary {
        session_id: row.get(0),
        title: row.get(1),
        created_at: row.get::<_, i64>(2) as u64,
        updated_at: row.get::<_, i64>(3) as u64,
        status: session_status_from(row.get(4)),
        message_count: row.get::<_, i64>(5) as u64,
        last_seq: row.get::<_, i64>(6) as Seq,
        usage: (!usage.is_empty()).then_some(usage),
        agent: row.get(12),
    }
}

fn request_from_row(row: &tokio_postgres::Row) -> RequestRecord {
    RequestRecord {
        session_id: row.get(0),
        body_hash: row.get(1),
        run_id: row.get(2),
        after_seq: row.get::<_, i64>(3) as Seq,
    }
}

async fn finish_run(
    client: &impl deadpool_postgres::GenericClient,
    run_id: &str,
    session_id: &str,
    status: RunStatus,
    now: u64,
) -> Result<(), StoreError> {
    let now = now as i64;
    client
        .execute("UPDATE runs SET status = $2, ended_at = $3 WHERE id = $1", &[&run_id, &status.as_str(), &now])
        .await?;
    client
        .execute(
            "UPDATE sessions SET status = $2, \
             lease_owner = CASE WHEN lease_run_id = $3 THEN NULL ELSE lease_owner END, \
             lease_run_id = CASE WHEN lease_run_id = $3 THEN NULL ELSE lease_run_id END WHERE id = $1",
            &[&session_id, &status.session_status().as_str(), &run_id],
        )
        .await?;
    Ok(())
}

/// Adds a document to the search index: a title (no `seq`) or a logged message.
async fn insert_doc(
    client: &impl deadpool_postgres::GenericClient,
    session_id: &str,
    seq: Option<i64>,
    message_id: Option<&str>,
    body: &str,
) -> Result<(), StoreError> {
    let statement = client
        .prepare_cached(
            "INSERT INTO search_docs (session_id, seq, message_id, body, terms) \
             VALUES ($1, $2, $3, $4, to_tsvector('simple', $5))",
        )
        .await?;
    client.execute(&statement, &[&session_id, &seq, &message_id, &body, &search::index_terms(body)]).await?;
    Ok(())
}

/// Replaces the session's title in the search index.
async fn index_title(
    client: &impl deadpool_postgres::GenericClient,
    session_id: &str,
    title: &str,
) -> Result<(), StoreError> {
    client.execute("DELETE FROM search_docs WHERE session_id = $1 AND seq IS NULL", &[&session_id]).await?;
    if !title.is_empty() {
        insert_doc(client, session_id, None, None, title).await?;
    }
    Ok(())
}

impl Store for PostgresStore {
    fn create_session<'a>(
        &'a self,
        id: &'a str,
        title: &'a str,
        agent: Option<&'a str>,
        now: u64,
    ) -> StoreFuture<'a, SessionSummary> {
        Box::pin(async move {
            let mut client = self.pool.get().await?;
            let transaction = client.transaction().await?;
            let now = now as i64;
            let row = transaction
                .query_one(
                    &format!(
                        "INSERT INTO sessions (id, title, title_is_set, created_at, updated_at, agent) \
                         VALUES ($1, $2, $3, $4, $4, $5) RETURNING {SUMMARY_COLUMNS}"
                    ),
                    &[&id, &title, &!title.is_empty(), &now, &agent],
                )
                .await?;
            index_title(&transaction, id, title).await?;
            transaction.commit().await?;
            Ok(summary_from_row(&row))
        })
    }

    fn bind_agent<'a>(&'a self, id: &'a str, agent: &'a str) -> StoreFuture<'a, Option<String>> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            let row = client
                .query_opt(
                    "UPDATE sessions SET agent = coalesce(agent, $2) WHERE id = $1 RETURNING agent",
                    &[&id, &agent],
                )
                .await?;
            Ok(row.map(|row| row.get(0)))
        })
    }

    fn session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<SessionSummary>> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            let row =
                client.query_opt(&format!("SELECT {SUMMARY_COLUMNS} FROM sessions WHERE id = $1"), &[&id]).await?;
            Ok(row.as_ref().map(summary_from_row))
        })
    }

    fn sessions(&self) -> StoreFuture<'_, Vec<SessionSummary>> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            let rows = client
                .query(&format!("SELECT {SUMMARY_COLUMNS} FROM sessions ORDER BY updated_at DESC, id"), &[])
                .await?;
            Ok(rows.iter().map(summary_from_row).collect())
        })
    }

    fn rename_session<'a>(&'a self, id: &'a str, title: &'a str, now: u64) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let mut client = self.pool.get().await?;
            let transaction = client.transaction().await?;
            let changed = transaction
                .execute(
                    "UPDATE sessions SET title = $2, title_is_set = TRUE, updated_at = $3 WHERE id = $1",
                    &[&id, &title, &(now as i64)],
                )
                .await?;
            if changed == 1 {
                index_title(&transaction, id, title).await?;
            }
            transaction.commit().await?;
            Ok(changed == 1)
        })
    }

    fn title_if_unset<'a>(&'a self, id: &'a str, title: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut client = self.pool.get().await?;
            let transaction = client.transaction().await?;
            let changed = transaction
                .execute(
                    "UPDATE sessions SET title = $2, title_is_set = TRUE WHERE id = $1 AND NOT title_is_set",
                    &[&id, &title],
                )
                .await?;
            if changed == 1 {
                index_title(&transaction, id, title).await?;
            }
            transaction.commit().await?;
            Ok(())
        })
    }

    fn delete_session<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            Ok(client.execute("DELETE FROM sessions WHERE id = $1", &[&id]).await? == 1)
        })
    }

    fn append(&self, append: Append) -> StoreFuture<'_, Vec<Appended>> {
        Box::pin(async move {
            let Append { session_id, run_id, frames, ends_run, lease, now } = append;
            let mut client = self.pool.get().await?;
            let transaction = client.transaction().await?;
            // The row lock orders appends to one session across instances (the primary key would refuse a
            // duplicate `seq` even without it) and holds the lease still while it is checked.
            let Some(row) = transaction
                .query_opt(
                    "SELECT last_seq, lease_owner, lease_generation FROM sessions WHERE id = $1 FOR UPDATE",
                    &[&session_id],
                )
                .await?
            else {
                return Err(StoreError::NoSession(session_id));
            };
            if let Some(lease) = &lease
                && (row.get::<_, Option<&str>>(1) != Some(lease.owner.as_str())
                    || row.get::<_, i64>(2) as u64 != lease.generation)
            {
                return Err(StoreError::LeaseLost(session_id));
            }
            let mut seq = row.get::<_, i64>(0) as Seq;
            let mut appended = Vec::with_capacity(frames.len());
            let mut messages = 0_i64;
            let mut used = TokenUsage::default();
            let (mut seqs, mut kinds, mut lines) = (Vec::new(), Vec::new(), Vec::new());
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
                seqs.push(seq as i64);
                kinds.push(kind);
                lines.push(line.clone());
                if let Some(doc) = search::indexed(&frame) {
                    insert_doc(&transaction, &session_id, Some(seq as i64), Some(&doc.message_id), &doc.body).await?;
                }
                let logged = LoggedFrame { seq, kind: kind.to_owned(), run_id: run_id.clone(), line };
                appended.push(Appended { logged, frame });
            }
            // The whole batch in one statement: a round trip per frame was most of an append's time.
            let insert = transaction
                .prepare_cached(
                    "INSERT INTO frames (session_id, seq, kind, run_id, line) \
                     SELECT $1, seq, kind, $2, line FROM unnest($3::bigint[], $4::text[], $5::text[]) AS f(seq, kind, line)",
                )
                .await?;
            let params: [&(dyn ToSql + Sync); 5] = [&session_id, &run_id, &seqs, &kinds, &lines];
            transaction.execute(&insert, &params).await?;
            let counts = [used.input, used.output, used.cache_read, used.cache_write].map(|count| count as i64);
            transaction
                .execute(
                    "UPDATE sessions SET last_seq = $2, updated_at = $3, message_count = message_count + $4, \
                     input_tokens = input_tokens + $5, output_tokens = output_tokens + $6, \
                     cache_read_tokens = cache_read_tokens + $7, cache_write_tokens = cache_write_tokens + $8, \
                     cost = CASE WHEN $9::float8 IS NULL THEN cost ELSE coalesce(cost, 0) + $9 END WHERE id = $1",
                    &[
                        &session_id,
                        &(seq as i64),
                        &(now as i64),
                        &messages,
                        &counts[0],
                        &counts[1],
                        &counts[2],
                        &counts[3],
                        &used.cost,
                    ],
                )
                .await?;
            if let (Some(status), Some(run_id)) = (ends_run, &run_id) {
                finish_run(&transaction, run_id, &session_id, status, now).await?;
            }
            // One wake-up per batch, delivered to the listening instances when the transaction commits.
            transaction
                .execute(
                    "SELECT pg_notify($1, $2)",
                    &[&listener::APPENDED, &listener::appended_payload(&session_id, seq)],
                )
                .await?;
            transaction.commit().await?;
            Ok(appended)
        })
    }

    fn frames_after<'a>(&'a self, session_id: &'a str, after: Seq, limit: usize) -> StoreFuture<'a, Vec<LoggedFrame>> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            let statement = client
                .prepare_cached(
                    "SELECT seq, kind, run_id, line FROM frames WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                )
                .await?;
            let rows = client.query(&statement, &[&session_id, &seq_cursor(after), &(limit as i64)]).await?;
            Ok(rows
                .iter()
                .map(|row| LoggedFrame {
                    seq: row.get::<_, i64>(0) as Seq,
                    kind: row.get(1),
                    run_id: row.get(2),
                    line: row.get(3),
                })
                .collect())
        })
    }

    fn last_seq<'a>(&'a self, session_id: &'a str) -> StoreFuture<'a, Option<Seq>> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            let row = client.query_opt("SELECT last_seq FROM sessions WHERE id = $1", &[&session_id]).await?;
            Ok(row.map(|row| row.get::<_, i64>(0) as Seq))
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
        Box::pin(async move {
            let mut client = self.pool.get().await?;
            let transaction = client.transaction().await?;
            let row = transaction
                .query_opt(
                    &format!("SELECT {HOLDER_COLUMNS}{DB_NOW} FROM sessions WHERE id = $1 FOR UPDATE"),
                    &[&session_id],
                )
                .await?
                .ok_or_else(|| StoreError::NoSession(session_id.to_owned()))?;
            if let Some(holder) = holder_from_row(&row) {
                return Ok(RunStart::Busy(holder));
            }
            let row = transaction
                .query_one(
                    &format!(
                        "UPDATE sessions SET lease_owner = $2, lease_run_id = $3, \
                         lease_generation = lease_generation + 1, lease_expires_at = {DB_NOW} + $4, \
                         status = 'running' WHERE id = $1 RETURNING lease_generation, last_seq"
                    ),
                    &[&session_id, &owner, &run_id, &ms(ttl)],
                )
                .await?;
            transaction
                .execute(
                    "INSERT INTO runs (id, session_id, status, started_at) VALUES ($1, $2, 'running', $3)",
                    &[&run_id, &session_id, &(now as i64)],
                )
                .await?;
            transaction.commit().await?;
            let lease = Lease { owner: owner.to_owned(), generation: row.get::<_, i64>(0) as u64 };
            Ok(RunStart::Started { lease, last_seq: row.get::<_, i64>(1) as Seq })
        })
    }

    fn finish_run<'a>(
        &'a self,
        run_id: &'a str,
        session_id: &'a str,
        status: RunStatus,
        now: u64,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut client = self.pool.get().await?;
            let transaction = client.transaction().await?;
            finish_run(&transaction, run_id, session_id, status, now).await?;
            transaction.commit().await?;
            Ok(())
        })
    }

    fn run_status<'a>(&'a self, run_id: &'a str) -> StoreFuture<'a, Option<RunStatus>> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            let row = client.query_opt("SELECT status FROM runs WHERE id = $1", &[&run_id]).await?;
            Ok(row.and_then(|row| RunStatus::parse(row.get(0))))
        })
    }

    fn stale_runs(&self) -> StoreFuture<'_, Vec<InterruptedRun>> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            let rows = client
                .query(
                    &format!(
                        "SELECT runs.id, runs.session_id FROM runs JOIN sessions ON sessions.id = runs.session_id \
                         WHERE runs.status = 'running' \
                         AND (sessions.lease_owner IS NULL OR sessions.lease_expires_at < {DB_NOW}) \
                         ORDER BY runs.started_at"
                    ),
                    &[],
                )
                .await?;
            Ok(rows.iter().map(|row| InterruptedRun { run_id: row.get(0), session_id: row.get(1) }).collect())
        })
    }

    fn lease_holder<'a>(&'a self, session_id: &'a str) -> StoreFuture<'a, Option<LeaseHolder>> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            let row = client
                .query_opt(&format!("SELECT {HOLDER_COLUMNS}{DB_NOW} FROM sessions WHERE id = $1"), &[&session_id])
                .await?;
            Ok(row.as_ref().and_then(holder_from_row))
        })
    }

    fn renew_leases<'a>(&'a self, owner: &'a str, ttl: Duration) -> StoreFuture<'a, Vec<String>> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            let rows = client
                .query(
                    &format!(
                        "UPDATE sessions SET lease_expires_at = {DB_NOW} + $2 WHERE lease_owner = $1 RETURNING id"
                    ),
                    &[&owner, &ms(ttl)],
                )
                .await?;
            Ok(rows.iter().map(|row| row.get(0)).collect())
        })
    }

    fn take_over<'a>(
        &'a self,
        run_id: &'a str,
        session_id: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> StoreFuture<'a, Option<Lease>> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            let row = client
                .query_opt(
                    &format!(
                        "UPDATE sessions SET lease_owner = $3, lease_run_id = $2, \
                         lease_generation = lease_generation + 1, lease_expires_at = {DB_NOW} + $4 \
                         WHERE id = $1 AND (lease_owner IS NULL OR lease_expires_at < {DB_NOW}) \
                         AND EXISTS (SELECT 1 FROM runs WHERE runs.id = $2 AND runs.status = 'running') \
                         RETURNING lease_generation"
                    ),
                    &[&session_id, &run_id, &owner, &ms(ttl)],
                )
                .await?;
            Ok(row.map(|row| Lease { owner: owner.to_owned(), generation: row.get::<_, i64>(0) as u64 }))
        })
    }

    fn expire_leases<'a>(&'a self, owner: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            client.execute("UPDATE sessions SET lease_expires_at = 0 WHERE lease_owner = $1", &[&owner]).await?;
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
        Box::pin(async move {
            let mut client = self.pool.get().await?;
            let transaction = client.transaction().await?;
            let row = transaction
                .query_one(
                    "INSERT INTO controls (session_id, run_id, owner, body, created_at) VALUES ($1, $2, $3, $4, $5) \
                     RETURNING id",
                    &[&session_id, &run_id, &owner, &body, &(now as i64)],
                )
                .await?;
            transaction.execute("SELECT pg_notify($1, $2)", &[&listener::CONTROL, &owner]).await?;
            transaction.commit().await?;
            Ok(row.get(0))
        })
    }

    fn pending_controls<'a>(&'a self, owner: &'a str) -> StoreFuture<'a, Vec<PostedControl>> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            let rows = client
                .query(
                    "SELECT id, session_id, run_id, body FROM controls WHERE owner = $1 AND reply IS NULL ORDER BY id",
                    &[&owner],
                )
                .await?;
            Ok(rows
                .iter()
                .map(|row| PostedControl {
                    id: row.get(0),
                    session_id: row.get(1),
                    run_id: row.get(2),
                    body: row.get(3),
                })
                .collect())
        })
    }

    fn answer_control<'a>(&'a self, id: i64, reply: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut client = self.pool.get().await?;
            let transaction = client.transaction().await?;
            transaction.execute("UPDATE controls SET reply = $2 WHERE id = $1", &[&id, &reply]).await?;
            transaction.execute("SELECT pg_notify($1, $2)", &[&listener::REPLIED, &id.to_string()]).await?;
            transaction.commit().await?;
            Ok(())
        })
    }

    fn take_control_reply(&self, id: i64) -> StoreFuture<'_, Option<String>> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            let row = client
                .query_opt("DELETE FROM controls WHERE id = $1 AND reply IS NOT NULL RETURNING reply", &[&id])
                .await?;
            Ok(row.map(|row| row.get(0)))
        })
    }

    fn listen(&self, sink: WakeSink) -> bool {
        tokio::spawn(listener::listen(self.config.clone(), sink));
        true
    }

    fn run_terminal_kind<'a>(&'a self, session_id: &'a str, run_id: &'a str) -> StoreFuture<'a, Option<String>> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            let row = client
                .query_opt(
                    "SELECT kind FROM frames WHERE session_id = $1 AND run_id = $2 AND kind IN ('done', 'error') \
                     ORDER BY seq LIMIT 1",
                    &[&session_id, &run_id],
                )
                .await?;
            Ok(row.map(|row| row.get(0)))
        })
    }

    fn request<'a>(&'a self, request_id: &'a str) -> StoreFuture<'a, Option<RequestRecord>> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            let row = client.query_opt(REQUEST_BY_ID, &[&request_id]).await?;
            Ok(row.as_ref().map(request_from_row))
        })
    }

    fn claim_request<'a>(
        &'a self,
        request_id: &'a str,
        record: &'a RequestRecord,
        now: u64,
    ) -> StoreFuture<'a, RequestClaim> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            let inserted = client
                .execute(
                    "INSERT INTO requests (id, session_id, body_hash, run_id, after_seq, created_at) \
                     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING",
                    &[
                        &request_id,
                        &record.session_id,
                        &record.body_hash,
                        &record.run_id,
                        &(record.after_seq as i64),
                        &(now as i64),
                    ],
                )
                .await?;
            if inserted == 1 {
                return Ok(RequestClaim::Claimed);
            }
            let row = client.query_opt(REQUEST_BY_ID, &[&request_id]).await?;
            row.as_ref()
                .map(request_from_row)
                .map(RequestClaim::Taken)
                .ok_or_else(|| StoreError::NoRequest(request_id.to_owned()))
        })
    }

    fn release_request<'a>(&'a self, request_id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            client.execute("DELETE FROM requests WHERE id = $1", &[&request_id]).await?;
            Ok(())
        })
    }

    fn set_request_run<'a>(&'a self, request_id: &'a str, run_id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            client.execute("UPDATE requests SET run_id = $2 WHERE id = $1", &[&request_id, &run_id]).await?;
            Ok(())
        })
    }

    fn forget_requests_before(&self, cutoff: u64) -> StoreFuture<'_, usize> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            client.execute("DELETE FROM controls WHERE created_at < $1", &[&(cutoff as i64)]).await?;
            Ok(client.execute("DELETE FROM requests WHERE created_at < $1", &[&(cutoff as i64)]).await? as usize)
        })
    }

    fn put_attachment<'a>(&'a self, attachment: &'a StoredAttachment, now: u64) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            client
                .execute(
                    "INSERT INTO attachments (id, media_type, size, bytes, created_at) VALUES ($1, $2, $3, $4, $5) \
                     ON CONFLICT (id) DO NOTHING",
                    &[
                        &attachment.id,
                        &attachment.media_type,
                        &(attachment.bytes.len() as i64),
                        &attachment.bytes,
                        &(now as i64),
                    ],
                )
                .await?;
            Ok(())
        })
    }

    fn attachment_meta<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<AttachmentMeta>> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            let row = client.query_opt("SELECT media_type, size FROM attachments WHERE id = $1", &[&id]).await?;
            Ok(row.map(|row| AttachmentMeta { media_type: row.get(0), size: row.get::<_, i64>(1) as u64 }))
        })
    }

    fn attachment<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<StoredAttachment>> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            let row = client.query_opt("SELECT media_type, bytes FROM attachments WHERE id = $1", &[&id]).await?;
            Ok(row.map(|row| StoredAttachment { id: id.to_owned(), media_type: row.get(0), bytes: row.get(1) }))
        })
    }

    fn search<'a>(&'a self, query: &'a str, limit: usize) -> StoreFuture<'a, Vec<SearchHit>> {
        Box::pin(async move {
            let words = search::query_words(query);
            if words.is_empty() {
                return Ok(Vec::new());
            }
            let client = self.pool.get().await?;
            // The newest matches, bucket by bucket from the newest (schema migration 5): the nested loop asks a
            // bucket only while fewer than `$3` were found, so a common word reads one or two buckets' matches and
            // a rare one asks each bucket's index and reads little. A title match counts double, as in SQLite.
            let statement = client
                .prepare_cached(
                    "WITH query AS (SELECT to_tsquery('simple', $1) AS q), \
                     recent AS (SELECT found.id FROM generate_series(\
                     chatwire_search_bucket((SELECT coalesce(max(id), 0) FROM search_docs)), 0, -1) AS bucket, \
                     LATERAL (SELECT d.id FROM search_docs d \
                     WHERE d.bucket_terms @@ chatwire_search_query(bucket, $4) ORDER BY d.id DESC) found LIMIT $3) \
                     SELECT d.session_id, s.title, d.seq, d.message_id, d.body, \
                     (ts_rank(d.terms, query.q) * CASE WHEN d.seq IS NULL THEN 2 ELSE 1 END)::float8 AS score \
                     FROM recent JOIN search_docs d ON d.id = recent.id JOIN sessions s ON s.id = d.session_id, query \
                     ORDER BY score DESC, d.session_id, d.seq LIMIT $2",
                )
                .await?;
            let ranked = search::ranked_at_most(&words);
            let params: [&(dyn ToSql + Sync); 4] = [&search::tsquery(&words), &(limit as i64), &ranked, &words];
            let rows = client.query(&statement, &params).await?;
            Ok(rows
                .iter()
                .map(|row| SearchHit {
                    session_id: row.get(0),
                    title: row.get(1),
                    seq: row.get::<_, Option<i64>>(2).map(|seq| seq as Seq),
                    message_id: row.get(3),
                    snippet: search::snippet(row.get(4), &words),
                    rank: row.get(5),
                })
                .collect())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_database_from_a_newer_chatwire_is_refused() {
        let url = test_server::server().fresh_database().await;
        drop(PostgresStore::open(&url).await.unwrap());
        let (client, connection) = tokio_postgres::connect(&url, NoTls).await.unwrap();
        tokio::spawn(connection);
        let newer = schema::current_version() as i32 + 1;
        client.execute("UPDATE chatwire_schema SET version = $1", &[&newer]).await.unwrap();
        let opened = PostgresStore::open(&url).await;
        assert!(
            matches!(opened, Err(StoreError::NewerSchema { found, .. }) if found == newer as u32),
            "{:?}",
            opened.err()
        );
    }

    #[tokio::test]
    async fn the_search_migration_indexes_an_existing_database() {
        let url = test_server::server().fresh_database().await;
        let (client, connection) = tokio_postgres::connect(&url, NoTls).await.unwrap();
        tokio::spawn(connection);
        // A database of version 2, with a titled session and a logged prompt.
        client.batch_execute(&schema::MIGRATIONS[..2].join(";")).await.unwrap();
        client
            .batch_execute(
                "CREATE TABLE chatwire_schema (version INTEGER NOT NULL); INSERT INTO chatwire_schema VALUES (2);
                 INSERT INTO sessions (id, title, created_at, updated_at) VALUES ('s1', 'Old title', 1, 1);",
            )
            .await
            .unwrap();
        let line = crate::store::tests::prompt_line(1, "m1", "remember the zeppelin");
        client
            .execute("INSERT INTO frames (session_id, seq, kind, line) VALUES ('s1', 1, 'message', $1)", &[&line])
            .await
            .unwrap();
        let store = PostgresStore::open(&url).await.unwrap();
        let hits = store.search("zeppelin", 10).await.unwrap();
        assert_eq!((hits.len(), hits[0].seq, hits[0].message_id.as_deref()), (1, Some(1), Some("m1")));
        assert_eq!(store.search("old", 10).await.unwrap()[0].seq, None, "the title is indexed");
    }

    #[tokio::test]
    async fn a_search_finds_matches_in_every_bucket_newest_first() {
        let url = test_server::server().fresh_database().await;
        let store = PostgresStore::open(&url).await.unwrap();
        store.create_session("s1", "", None, 1).await.unwrap();
        store.append(crate::store::tests::prompt("s1", "old", "zeppelin in the first bucket")).await.unwrap();
        // The next documents land three buckets on (8,192 ids each), with empty buckets between.
        let client = store.pool.get().await.unwrap();
        client.execute("SELECT setval('search_docs_id_seq', 3 * 8192 + 5)", &[]).await.unwrap();
        store.append(crate::store::tests::prompt("s1", "new", "zeppelin zeppelin, three buckets on")).await.unwrap();
        store.append(crate::store::tests::prompt("s1", "other", "nothing to find")).await.unwrap();
        let hits = store.search("zepp", 10).await.unwrap();
        let found: Vec<Option<&str>> = hits.iter().map(|hit| hit.message_id.as_deref()).collect();
        assert_eq!(found, [Some("new"), Some("old")], "{hits:?}");
        assert!(store.search("zeppelin first", 10).await.unwrap().len() == 1);
        assert!(store.search("buckets first", 10).await.unwrap().is_empty(), "every word in one document");
    }

    #[tokio::test]
    async fn the_usage_migration_starts_existing_sessions_at_nothing_counted() {
        let url = test_server::server().fresh_database().await;
        let (client, connection) = tokio_postgres::connect(&url, NoTls).await.unwrap();
        tokio::spawn(connection);
        client.batch_execute(&schema::MIGRATIONS[..3].join(";")).await.unwrap();
        client
            .batch_execute(
                "CREATE TABLE chatwire_schema (version INTEGER NOT NULL); INSERT INTO chatwire_schema VALUES (3);
                 INSERT INTO sessions (id, title, created_at, updated_at) VALUES ('s1', 'Before usage', 1, 1);",
            )
            .await
            .unwrap();
        let store = PostgresStore::open(&url).await.unwrap();
        let before = store.session("s1").await.unwrap().unwrap();
        assert_eq!((before.title.as_str(), before.usage), ("Before usage", None));
        let usage = crate::protocol::TokenUsage { input: 7, output: 3, cache_read: 0, cache_write: 0, cost: Some(0.5) };
        store.append(crate::store::tests::calls_used("s1", usage.clone(), 1)).await.unwrap();
        assert_eq!(store.session("s1").await.unwrap().unwrap().usage, Some(usage));
    }
}
