//! The SQLite schema as numbered migrations, applied in order on open; the database's `user_version` says how many
//! it has had.

use rusqlite::Connection;

use crate::store::StoreError;

/// Each entry is one migration; never edit one that has shipped, add the next instead.
pub(super) const MIGRATIONS: &[&str] = &[
    // 1: the first schema. `IF NOT EXISTS`: databases made before versions were counted already have it.
    "CREATE TABLE IF NOT EXISTS sessions (
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
    );",
    // 2: request ids by age, for the periodic purge.
    "CREATE INDEX requests_by_age ON requests(created_at);",
    // 3: run leases, and controls relayed to a run's owner (the shape the PostgreSQL store shares between
    // instances). A run left running by an older version gets an expired lease, so it is ended as before.
    "ALTER TABLE sessions ADD COLUMN lease_owner TEXT;
    ALTER TABLE sessions ADD COLUMN lease_run_id TEXT;
    ALTER TABLE sessions ADD COLUMN lease_generation INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN lease_expires_at INTEGER NOT NULL DEFAULT 0;
    UPDATE sessions SET lease_owner = '', lease_run_id = (
        SELECT id FROM runs WHERE runs.session_id = sessions.id AND runs.status = 'running' LIMIT 1
    ) WHERE EXISTS (SELECT 1 FROM runs WHERE runs.session_id = sessions.id AND runs.status = 'running');
    CREATE TABLE controls (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        run_id TEXT NOT NULL,
        owner TEXT NOT NULL,
        body TEXT NOT NULL,
        reply TEXT,
        created_at INTEGER NOT NULL
    );
    CREATE INDEX controls_by_owner ON controls(owner, id);",
];

/// The schema version this build writes.
pub fn current_version() -> u32 {
    MIGRATIONS.len() as u32
}

/// Brings the database up to the current version, one transaction per migration.
pub fn migrate(connection: &mut Connection) -> Result<(), StoreError> {
    let found: u32 = connection.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if found > current_version() {
        return Err(StoreError::NewerSchema { found, known: current_version() });
    }
    for (done, migration) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        let transaction = connection.transaction()?;
        transaction.execute_batch(migration)?;
        transaction.pragma_update(None, "user_version", done as u32 + 1)?;
        transaction.commit()?;
    }
    Ok(())
}
