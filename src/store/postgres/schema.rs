//! The PostgreSQL schema as numbered migrations, applied in order on open under an advisory lock, so that instances
//! starting together migrate once; `chatwire_schema` says how many the database has had.

use deadpool_postgres::{Client, GenericClient};

use crate::protocol::parse_frame;
use crate::store::{StoreError, search};

/// Each entry is one migration; never edit one that has shipped, add the next instead.
pub(super) const MIGRATIONS: &[&str] = &[
    // 1: the tables of the SQLite store, with the same meaning.
    "CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        title_is_set BOOLEAN NOT NULL DEFAULT FALSE,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        status TEXT NOT NULL DEFAULT 'idle',
        last_seq BIGINT NOT NULL DEFAULT 0,
        message_count BIGINT NOT NULL DEFAULT 0
    );
    CREATE TABLE frames (
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq BIGINT NOT NULL,
        kind TEXT NOT NULL,
        run_id TEXT,
        line TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    );
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        status TEXT NOT NULL,
        started_at BIGINT NOT NULL,
        ended_at BIGINT
    );
    CREATE INDEX runs_by_status ON runs(status);
    CREATE TABLE requests (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        body_hash TEXT NOT NULL,
        run_id TEXT NOT NULL,
        after_seq BIGINT NOT NULL,
        created_at BIGINT NOT NULL
    );
    CREATE INDEX requests_by_age ON requests(created_at);",
    // 2: run leases (owner, generation, expiry in ms of the database's clock), and controls relayed to a run's
    // owner. A run left running by the first version gets an expired lease, so another instance ends it.
    "ALTER TABLE sessions
        ADD COLUMN lease_owner TEXT,
        ADD COLUMN lease_run_id TEXT,
        ADD COLUMN lease_generation BIGINT NOT NULL DEFAULT 0,
        ADD COLUMN lease_expires_at BIGINT NOT NULL DEFAULT 0;
    UPDATE sessions SET lease_owner = '', lease_run_id = runs.id
        FROM runs WHERE runs.session_id = sessions.id AND runs.status = 'running';
    CREATE INDEX sessions_by_lease_owner ON sessions(lease_owner) WHERE lease_owner IS NOT NULL;
    CREATE TABLE controls (
        id BIGSERIAL PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        run_id TEXT NOT NULL,
        owner TEXT NOT NULL,
        body TEXT NOT NULL,
        reply TEXT,
        created_at BIGINT NOT NULL
    );
    CREATE INDEX controls_by_owner ON controls(owner, id) WHERE reply IS NULL;",
    // 3: the search index: a session's title (no `seq`) and the text of each logged `message` and `done` frame,
    // with `terms` built from the words `store::search::words` cuts (not PostgreSQL's parser, which keeps
    // `src/main.rs` whole), so both stores find the same. Filled for an existing database by `index_existing`.
    "CREATE TABLE search_docs (
        id BIGSERIAL PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq BIGINT,
        message_id TEXT,
        body TEXT NOT NULL,
        terms TSVECTOR NOT NULL
    );
    CREATE INDEX search_docs_by_session ON search_docs(session_id, seq);
    CREATE INDEX search_docs_terms ON search_docs USING GIN (terms);",
    // 4: what the session's model calls used in all, summed from its `usage` frames as they are logged. Logs
    // written before had no `usage` frames: zero, and no cost.
    "ALTER TABLE sessions
        ADD COLUMN input_tokens BIGINT NOT NULL DEFAULT 0,
        ADD COLUMN output_tokens BIGINT NOT NULL DEFAULT 0,
        ADD COLUMN cache_read_tokens BIGINT NOT NULL DEFAULT 0,
        ADD COLUMN cache_write_tokens BIGINT NOT NULL DEFAULT 0,
        ADD COLUMN cost DOUBLE PRECISION;",
    // 5: the search index by recency. Each document's words are indexed again as `bucket.word`, its bucket being
    // its id / 8,192 (`chatwire_search_bucket`), and the GIN index is over those: a search asks the buckets newest
    // first and stops once it has the matches it ranks, so a common word costs one or two buckets' matches, not
    // the 250,000 of the whole index that a GIN bitmap over `terms` yielded before the newest could be picked
    // (see docs/decisions.md, "Search"). `terms` stays for `ts_rank`, which sees the same words and positions.
    // No pending list (`fastupdate`): every bucket asked would scan all of it again.
    r#"CREATE FUNCTION chatwire_search_bucket(id BIGINT) RETURNS BIGINT
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT id >> 13 $$;
    CREATE FUNCTION chatwire_search_quoted(lexeme TEXT) RETURNS TEXT
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT replace(replace(lexeme, '\', '\\'), '''', '''''') $$;
    CREATE FUNCTION chatwire_search_bucketed(terms TSVECTOR, bucket BIGINT) RETURNS TSVECTOR
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT coalesce(string_agg('''' || chatwire_search_quoted(bucket || '.' || lexeme) || '''' ||
            CASE WHEN positions = '{}' THEN '' ELSE ':' || array_to_string(positions, ',') END, ' '), '')::tsvector
        FROM unnest(terms) $$;
    CREATE FUNCTION chatwire_search_query(bucket BIGINT, words TEXT[]) RETURNS TSQUERY
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT string_agg('''' || chatwire_search_quoted(bucket || '.' || word) || ''':*', ' & ')::tsquery
        FROM unnest(words) AS word $$;
    ALTER TABLE search_docs ADD COLUMN bucket_terms TSVECTOR NOT NULL
        GENERATED ALWAYS AS (chatwire_search_bucketed(terms, chatwire_search_bucket(id))) STORED;
    DROP INDEX search_docs_terms;
    CREATE INDEX search_docs_bucket_terms ON search_docs USING GIN (bucket_terms) WITH (fastupdate = off);"#,
    // 6: the files users attach, by the SHA-256 of their bytes. They belong to no session: the same bytes may be
    // attached in several, and a message names them by id.
    "CREATE TABLE attachments (
        id TEXT PRIMARY KEY,
        media_type TEXT NOT NULL,
        size BIGINT NOT NULL,
        bytes BYTEA NOT NULL,
        created_at BIGINT NOT NULL
    );",
    // 7: the agent a session runs on, for life (DESIGN §12). Sessions from before have none: they run on the
    // server's default agent, and their next send binds them to it.
    "ALTER TABLE sessions ADD COLUMN agent TEXT;",
];

/// The migration after which the titles and logged frames are indexed.
const SEARCH_INDEX: usize = 3;

/// Any fixed number: the advisory lock that makes one instance at a time migrate.
const MIGRATION_LOCK: i64 = 0x6368_6174_7769_7265; // "chatwire"

pub fn current_version() -> u32 {
    MIGRATIONS.len() as u32
}

/// Brings the database up to the current version, all in one transaction.
pub async fn migrate(client: &mut Client) -> Result<(), StoreError> {
    let transaction = client.transaction().await?;
    transaction.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).await?;
    transaction.batch_execute("CREATE TABLE IF NOT EXISTS chatwire_schema (version INTEGER NOT NULL)").await?;
    let found: Option<i32> =
        transaction.query_opt("SELECT version FROM chatwire_schema", &[]).await?.map(|row| row.get(0));
    let found = found.unwrap_or(0) as u32;
    if found > current_version() {
        return Err(StoreError::NewerSchema { found, known: current_version() });
    }
    for (done, migration) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        transaction.batch_execute(migration).await?;
        if done + 1 == SEARCH_INDEX {
            index_existing(&transaction).await?;
        }
    }
    let version = current_version() as i32;
    transaction.execute("DELETE FROM chatwire_schema", &[]).await?;
    transaction.execute("INSERT INTO chatwire_schema (version) VALUES ($1)", &[&version]).await?;
    transaction.commit().await?;
    Ok(())
}

/// Indexes every session's title and logged `message` and `done` frame, as the store would have; a line that no
/// longer parses is left out (it is still replayed as it is).
async fn index_existing(client: &impl GenericClient) -> Result<(), StoreError> {
    for row in client.query("SELECT id, title FROM sessions WHERE title <> ''", &[]).await? {
        let (id, title): (&str, &str) = (row.get(0), row.get(1));
        super::insert_doc(client, id, None, None, title).await?;
    }
    let frames = client
        .query(
            "SELECT session_id, seq, line FROM frames WHERE kind IN ('message', 'done') ORDER BY session_id, seq",
            &[],
        )
        .await?;
    for row in frames {
        let (session_id, seq, line): (&str, i64, &str) = (row.get(0), row.get(1), row.get(2));
        let Some(doc) = parse_frame(line.as_bytes()).ok().as_ref().and_then(search::indexed) else { continue };
        super::insert_doc(client, session_id, Some(seq), Some(&doc.message_id), &doc.body).await?;
    }
    Ok(())
}
