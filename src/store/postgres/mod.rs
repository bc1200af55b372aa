//! `PostgresStore`: the store on a PostgreSQL server (`--database-url postgres://…`), the one system several chatwire
//! instances share. `seq` is assigned inside the append transaction under a lock on the session's row, so two
//! instances can never write the same one.

mod schema;
#[cfg(test)]
pub(crate) mod test_server;

use deadpool_postgres::{Pool, Runtime};
use tokio_postgres::NoTls;
use tokio_postgres::types::ToSql;

use super::{
    Append, Appended, InterruptedRun, LoggedFrame, RequestClaim, RequestRecord, RunStatus, Store, StoreError,
    StoreFuture, seq_cursor, session_status_from,
};
use crate::ndjson::encode_frame;
use crate::protocol::{ChatFrame, Seq, SessionSummary};

#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    /// Holds the database's instance lock for as long as the store lives (see `open`).
    _instance: std::sync::Arc<tokio_postgres::Client>,
}

/// Any fixed number: the advisory lock one instance holds on the database it uses.
const INSTANCE_LOCK: i64 = 0x6368_6174_7769_7266;

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
        // Runs, their recovery after a crash and the live tails assume one instance per database until instances
        // hold leases on their runs: a second instance would mark the first one's runs interrupted. A session-level
        // advisory lock on a connection of its own makes a second instance refuse to start instead; it is released
        // when this instance's connection ends, however it ends.
        let (instance, connection) = config.connect(NoTls).await?;
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::error!("the database connection holding the instance lock ended: {error}");
            }
        });
        let row = instance.query_one("SELECT pg_try_advisory_lock($1)", &[&INSTANCE_LOCK]).await?;
        if !row.get::<_, bool>(0) {
            return Err(StoreError::InstanceTaken);
        }
        Ok(PostgresStore { pool, _instance: std::sync::Arc::new(instance) })
    }
}

const REQUEST_BY_ID: &str = "SELECT session_id, body_hash, run_id, after_seq FROM requests WHERE id = $1";

const SUMMARY_COLUMNS: &str = "id, title, created_at, updated_at, status, message_count, last_seq";

fn summary_from_row(row: &tokio_postgres::Row) -> SessionSummary {
    SessionSummary {
        session_id: row.get(0),
        title: row.get(1),
        created_at: row.get::<_, i64>(2) as u64,
        updated_at: row.get::<_, i64>(3) as u64,
        status: session_status_from(row.get(4)),
        message_count: row.get::<_, i64>(5) as u64,
        last_seq: row.get::<_, i64>(6) as Seq,
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
        .execute("UPDATE sessions SET status = $2 WHERE id = $1", &[&session_id, &status.session_status().as_str()])
        .await?;
    Ok(())
}

impl Store for PostgresStore {
    fn create_session<'a>(&'a self, id: &'a str, title: &'a str, now: u64) -> StoreFuture<'a, SessionSummary> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            let now = now as i64;
            let row = client
                .query_one(
                    &format!(
                        "INSERT INTO sessions (id, title, title_is_set, created_at, updated_at) \
                         VALUES ($1, $2, $3, $4, $4) RETURNING {SUMMARY_COLUMNS}"
                    ),
                    &[&id, &title, &!title.is_empty(), &now],
                )
                .await?;
            Ok(summary_from_row(&row))
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
            let client = self.pool.get().await?;
            let changed = client
                .execute(
                    "UPDATE sessions SET title = $2, title_is_set = TRUE, updated_at = $3 WHERE id = $1",
                    &[&id, &title, &(now as i64)],
                )
                .await?;
            Ok(changed == 1)
        })
    }

    fn title_if_unset<'a>(&'a self, id: &'a str, title: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            client
                .execute(
                    "UPDATE sessions SET title = $2, title_is_set = TRUE WHERE id = $1 AND NOT title_is_set",
                    &[&id, &title],
                )
                .await?;
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
            let Append { session_id, run_id, frames, ends_run, now } = append;
            let mut client = self.pool.get().await?;
            let transaction = client.transaction().await?;
            // The row lock orders appends to one session across instances; the primary key would refuse a
            // duplicate `seq` even without it.
            let last =
                transaction.query_opt("SELECT last_seq FROM sessions WHERE id = $1 FOR UPDATE", &[&session_id]).await?;
            let Some(mut seq) = last.map(|row| row.get::<_, i64>(0) as Seq) else {
                return Err(StoreError::NoSession(session_id));
            };
            let insert = transaction
                .prepare_cached("INSERT INTO frames (session_id, seq, kind, run_id, line) VALUES ($1, $2, $3, $4, $5)")
                .await?;
            let mut appended = Vec::with_capacity(frames.len());
            let mut messages = 0_i64;
            for mut frame in frames {
                seq += 1;
                frame.set_seq(seq);
                let kind = frame.frame_type().as_str();
                messages += i64::from(matches!(frame, ChatFrame::Message(_) | ChatFrame::Done(_)));
                let mut line = encode_frame(&frame);
                line.pop();
                let params: [&(dyn ToSql + Sync); 5] = [&session_id, &(seq as i64), &kind, &run_id, &line];
                transaction.execute(&insert, &params).await?;
                let logged = LoggedFrame { seq, kind: kind.to_owned(), run_id: run_id.clone(), line };
                appended.push(Appended { logged, frame });
            }
            transaction
                .execute(
                    "UPDATE sessions SET last_seq = $2, updated_at = $3, message_count = message_count + $4 WHERE id = $1",
                    &[&session_id, &(seq as i64), &(now as i64), &messages],
                )
                .await?;
            if let (Some(status), Some(run_id)) = (ends_run, &run_id) {
                finish_run(&transaction, run_id, &session_id, status, now).await?;
            }
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

    fn start_run<'a>(&'a self, run_id: &'a str, session_id: &'a str, now: u64) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut client = self.pool.get().await?;
            let transaction = client.transaction().await?;
            transaction
                .execute(
                    "INSERT INTO runs (id, session_id, status, started_at) VALUES ($1, $2, 'running', $3)",
                    &[&run_id, &session_id, &(now as i64)],
                )
                .await?;
            transaction.execute("UPDATE sessions SET status = 'running' WHERE id = $1", &[&session_id]).await?;
            transaction.commit().await?;
            Ok(())
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

    fn running_runs(&self) -> StoreFuture<'_, Vec<InterruptedRun>> {
        Box::pin(async move {
            let client = self.pool.get().await?;
            let rows = client
                .query("SELECT id, session_id FROM runs WHERE status = 'running' ORDER BY started_at", &[])
                .await?;
            Ok(rows.iter().map(|row| InterruptedRun { run_id: row.get(0), session_id: row.get(1) }).collect())
        })
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
            Ok(client.execute("DELETE FROM requests WHERE created_at < $1", &[&(cutoff as i64)]).await? as usize)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_second_instance_on_one_database_is_refused_until_the_first_is_gone() {
        let url = test_server::server().fresh_database().await;
        let first = PostgresStore::open(&url).await.unwrap();
        assert!(matches!(PostgresStore::open(&url).await, Err(StoreError::InstanceTaken)));
        drop(first);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            match PostgresStore::open(&url).await {
                Ok(_) => break,
                Err(StoreError::InstanceTaken) if std::time::Instant::now() < deadline => {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                Err(error) => panic!("the lock was never released: {error}"),
            }
        }
    }

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
}
