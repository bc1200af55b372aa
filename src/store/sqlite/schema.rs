//! The SQLite schema as numbered migrations, applied in order on open; the database's `user_version` says how many
//! it has had.

use rusqlite::{Connection, params};

use crate::protocol::parse_frame;
use crate::store::{StoreError, search};

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
    // 4: the search index. `search_docs` holds what is searched (a session's title, with no `seq`, and the text of
    // each logged `message` and `done` frame); `search_fts` indexes it (external content, kept by triggers, so a
    // cascaded delete of a session's docs takes them out of the index too). Words are cut as
    // `store::search::words` cuts them; diacritics are kept, as PostgreSQL keeps them. The logged frames of an
    // existing database are indexed by `index_logged_frames` in the same transaction.
    "CREATE TABLE search_docs (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq INTEGER,
        message_id TEXT,
        body TEXT NOT NULL
    );
    CREATE INDEX search_docs_by_session ON search_docs(session_id, seq);
    CREATE VIRTUAL TABLE search_fts USING fts5(
        body, content='search_docs', content_rowid='id', tokenize='unicode61 remove_diacritics 0', prefix='2 3'
    );
    CREATE TRIGGER search_docs_added AFTER INSERT ON search_docs BEGIN
        INSERT INTO search_fts (rowid, body) VALUES (new.id, new.body);
    END;
    CREATE TRIGGER search_docs_removed AFTER DELETE ON search_docs BEGIN
        INSERT INTO search_fts (search_fts, rowid, body) VALUES ('delete', old.id, old.body);
    END;
    CREATE TRIGGER sessions_titled AFTER INSERT ON sessions WHEN new.title <> '' BEGIN
        INSERT INTO search_docs (session_id, body) VALUES (new.id, new.title);
    END;
    CREATE TRIGGER sessions_retitled AFTER UPDATE OF title ON sessions WHEN new.title IS NOT old.title BEGIN
        DELETE FROM search_docs WHERE session_id = new.id AND seq IS NULL;
        INSERT INTO search_docs (session_id, body) SELECT new.id, new.title WHERE new.title <> '';
    END;
    INSERT INTO search_docs (session_id, body) SELECT id, title FROM sessions WHERE title <> '';",
    // 5: prefix indexes of two to six characters (two and three before). A query word longer than the longest
    // prefix index makes FTS5 gather every document of every indexed word it starts before the newest can be
    // picked, which for common words is most of the log (benches/search.rs, 500,000 messages: `fix build test`
    // 72–110 ms before, 20–24 ms after; writing a message costs about 1.5 times as much). The index is rebuilt from
    // `search_docs`; the triggers name the table, not its definition, so they carry on.
    "DROP TABLE search_fts;
    CREATE VIRTUAL TABLE search_fts USING fts5(
        body, content='search_docs', content_rowid='id', tokenize='unicode61 remove_diacritics 0',
        prefix='2 3 4 5 6'
    );
    INSERT INTO search_fts (search_fts) VALUES ('rebuild');",
    // 6: what the session's model calls used in all, summed from its `usage` frames as they are logged. Logs
    // written before had no `usage` frames: zero, and no cost.
    "ALTER TABLE sessions ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN cache_read_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN cost REAL;",
    // 7: the files users attach, by the SHA-256 of their bytes. They belong to no session: the same bytes may be
    // attached in several, and a message names them by id.
    "CREATE TABLE attachments (
        id TEXT PRIMARY KEY,
        media_type TEXT NOT NULL,
        size INTEGER NOT NULL,
        bytes BLOB NOT NULL,
        created_at INTEGER NOT NULL
    );",
    // 8: the agent a session runs on, for life (DESIGN §12). Sessions from before have none: they run on the
    // server's default agent, and their next send binds them to it.
    "ALTER TABLE sessions ADD COLUMN agent TEXT;",
];

/// The migration after which the logged frames are indexed.
const SEARCH_INDEX: u32 = 4;

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
        let version = done as u32 + 1;
        if version == SEARCH_INDEX {
            index_logged_frames(&transaction)?;
        }
        transaction.pragma_update(None, "user_version", version)?;
        transaction.commit()?;
    }
    Ok(())
}

/// Indexes every logged `message` and `done` frame, as `append` would have; a line that no longer parses is left
/// out (it is still replayed as it is).
fn index_logged_frames(connection: &Connection) -> Result<(), StoreError> {
    let mut frames = connection.prepare(
        "SELECT session_id, seq, line FROM frames WHERE kind IN ('message', 'done') ORDER BY session_id, seq",
    )?;
    let mut insert =
        connection.prepare("INSERT INTO search_docs (session_id, seq, message_id, body) VALUES (?1, ?2, ?3, ?4)")?;
    let mut rows = frames.query([])?;
    while let Some(row) = rows.next()? {
        let (session_id, seq, line): (String, i64, String) = (row.get(0)?, row.get(1)?, row.get(2)?);
        let Some(doc) = parse_frame(line.as_bytes()).ok().as_ref().and_then(search::indexed) else { continue };
        insert.execute(params![session_id, seq, doc.message_id, doc.body])?;
    }
    Ok(())
}
