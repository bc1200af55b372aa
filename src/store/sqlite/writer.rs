//! The writer: SQLite's one write connection, fed by a queue. Whoever finds the queue idle starts one task on
//! tokio's blocking pool that drains it; appends that queue up while it commits go out together in its next
//! transaction (a group commit), so under load there is one blocking task and one commit per batch, not per frame.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, TransactionBehavior};
use tokio::sync::oneshot;

use crate::store::{Append, Appended, StoreError, StoreFuture};

/// Most appends one transaction takes; the rest wait for the next.
const MAX_GROUP: usize = 256;

type Reply<T> = oneshot::Sender<Result<T, StoreError>>;
/// One append, inside the group's transaction.
pub(super) type AppendIn = fn(&Connection, Append) -> Result<Vec<Appended>, StoreError>;

enum Write {
    Append(Append, Reply<Vec<Appended>>),
    Job(Box<dyn FnOnce(&mut Connection) + Send>),
}

#[derive(Default)]
struct Queue {
    writes: VecDeque<Write>,
    /// A blocking task is draining the queue; it clears this when it finds the queue empty.
    draining: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    connection: Mutex<Connection>,
    append_in: AppendIn,
}

pub(super) struct Writer {
    shared: Arc<Shared>,
}

fn stopped() -> StoreError {
    StoreError::Task("the database writer stopped".into())
}

impl Writer {
    pub fn new(connection: Connection, append_in: AppendIn) -> Writer {
        Writer { shared: Arc::new(Shared { queue: Mutex::default(), connection: Mutex::new(connection), append_in }) }
    }

    pub fn append(&self, append: Append) -> StoreFuture<'static, Vec<Appended>> {
        let (reply, answer) = oneshot::channel();
        self.submit(Write::Append(append, reply), answer)
    }

    /// Runs `work` on the write connection, in turn with every other write.
    pub fn job<T, F>(&self, work: F) -> StoreFuture<'static, T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job = Write::Job(Box::new(move |connection| {
            let _ = reply.send(work(connection));
        }));
        self.submit(job, answer)
    }

    fn submit<T: Send + 'static>(
        &self,
        write: Write,
        answer: oneshot::Receiver<Result<T, StoreError>>,
    ) -> StoreFuture<'static, T> {
        let shared = self.shared.clone();
        Box::pin(async move {
            let start_draining = {
                let mut queue = shared.queue.lock().expect("the write queue lock is never poisoned");
                queue.writes.push_back(write);
                !std::mem::replace(&mut queue.draining, true)
            };
            if start_draining {
                tokio::task::spawn_blocking(move || shared.drain());
            }
            answer.await.map_err(|_| stopped())?
        })
    }
}

impl Shared {
    fn drain(&self) {
        let mut connection = self.connection.lock().expect("a panic never happens while the writer is held");
        let mut group = Vec::new();
        loop {
            let writes: Vec<Write> = {
                let mut queue = self.queue.lock().expect("the write queue lock is never poisoned");
                if queue.writes.is_empty() {
                    queue.draining = false;
                    return;
                }
                let take = queue.writes.len().min(MAX_GROUP);
                queue.writes.drain(..take).collect()
            };
            for write in writes {
                match write {
                    Write::Append(append, reply) => group.push((append, reply)),
                    // Writes keep their order: the appends before a job commit before it runs.
                    Write::Job(job) => {
                        self.commit(&mut connection, &mut group);
                        job(&mut connection);
                    }
                }
            }
            self.commit(&mut connection, &mut group);
        }
    }

    /// Commits the group in one transaction. Each append has a savepoint of its own, so one that fails (its session
    /// was deleted meanwhile) fails alone; a transaction that fails fails every append in it.
    fn commit(&self, connection: &mut Connection, group: &mut Vec<(Append, Reply<Vec<Appended>>)>) {
        if group.is_empty() {
            return;
        }
        let (appends, replies): (Vec<_>, Vec<_>) = group.drain(..).unzip();
        let committed = (|| {
            let mut transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let mut results = Vec::with_capacity(appends.len());
            for append in appends {
                let savepoint = transaction.savepoint()?;
                match (self.append_in)(&savepoint, append) {
                    Ok(appended) => {
                        savepoint.commit()?;
                        results.push(Ok(appended));
                    }
                    // Dropping the savepoint rolls this append back.
                    Err(error) => results.push(Err(error)),
                }
            }
            transaction.commit()?;
            Ok::<_, StoreError>(results)
        })();
        match committed {
            Ok(results) => {
                for (reply, result) in replies.into_iter().zip(results) {
                    let _ = reply.send(result);
                }
            }
            Err(error) => {
                let message = error.to_string();
                for reply in replies {
                    let _ = reply.send(Err(StoreError::Task(format!("committing frames failed: {message}"))));
                }
            }
        }
    }
}
