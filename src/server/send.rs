//! `POST /api/chat`: a send starts a run, joins the active one (steer, follow-up; relayed to the instance that runs
//! it), or finds the run its request id already made. One session's sends are serialized on an instance, and across
//! instances by the session's lease; sends to different sessions never wait for each other.

use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::chat::{Chat, ChatError, new_id, now_ms};
use super::relay::Control;
use super::sessions::{SessionLive, Tail};
use crate::protocol::*;
use crate::store::{LeaseHolder, RequestClaim, RequestRecord};

/// What a send is going to do, decided before its request id is claimed so that the claim names the run.
enum Plan {
    StartRun,
    Join {
        run_id: String,
    },
    /// Join a run another instance drives.
    Relay {
        run_id: String,
        holder: LeaseHolder,
    },
}

impl Chat {
    pub async fn send(self: &Arc<Self>, request: ChatRequest) -> Result<Tail, ChatError> {
        let regenerates = request.rerun.as_ref().is_some_and(|rerun| rerun.kind == RerunKind::Regenerate);
        let refs = request.attachments.as_deref().unwrap_or_default();
        if request.message.trim().is_empty()
            && request.plan_action.is_none()
            && !regenerates
            && request.command.is_none()
            && refs.is_empty()
        {
            return Err(ChatError::EmptyMessage);
        }
        if !refs.is_empty() && (request.streaming_behavior.is_some() || request.command.is_some()) {
            return Err(ChatError::AttachmentsWhileStreaming);
        }
        // A regeneration answers the message with the files it had; its own are not asked for.
        let files = match regenerates {
            true => Vec::new(),
            false => self.attachment_parts(refs).await?,
        };
        if let Some(command) = request.command
            && (request.streaming_behavior.is_some() || request.rerun.is_some() || request.plan_action.is_some())
        {
            return Err(ChatError::CommandMixed(command.as_str()));
        }
        if request.rerun.is_some() && request.streaming_behavior.is_some() {
            return Err(ChatError::RerunWhileStreaming);
        }
        if self.models.pick(request.model.as_deref()).is_none() {
            let requested = request.model.clone().unwrap_or_default();
            return Err(ChatError::UnknownModel { requested, known: self.models.names().join(", ") });
        }
        let live = self.live(&request.session_id).await?;
        let _one_at_a_time = live.sending.lock().await;
        // Before anything else the session's agent decides (the command's availability, the run's runtime).
        self.bind_agent(&live, request.agent.as_deref()).await?;
        if let Some(command) = request.command {
            let capabilities = self.runtime_of(&live).await?.capabilities();
            let availability = match command {
                ChatCommand::Compact => capabilities.compact,
            };
            if let Some(why) = availability.reason() {
                return Err(ChatError::Unsupported(why.to_owned()));
            }
        }
        let body_hash = body_hash(&request);
        // A retry is answered from what its first send made, whatever the session does now.
        if let Some(tail) = self.claimed(&request, &body_hash).await? {
            return Ok(tail);
        }
        // From the store, not this instance's view of it: another instance may have appended a moment ago.
        let Some(after) = self.store.last_seq(live.id()).await? else {
            // Deleted on another instance since this one first saw it.
            self.sessions.forget(live.id()).await;
            return Err(ChatError::UnknownSession(live.id().to_owned()));
        };
        let local = live.with_active(|active| active.map(|run| (run.run_id.clone(), run.control.is_closing())));
        let plan = match (local, request.streaming_behavior) {
            // A run that is only finishing up (its `done` may already be out) is waited for, not refused.
            (Some((_, true)), None) => Plan::StartRun,
            (Some(_), None) => return self.refuse_unless_claimed(&request, &body_hash).await,
            (Some((run_id, _)), Some(_)) => Plan::Join { run_id },
            (None, behavior) => match self.store.lease_holder(live.id()).await? {
                Some(holder) if holder.owner != self.instance && !holder.expired => match (behavior, &holder.run_id) {
                    (None, _) => return self.refuse_unless_claimed(&request, &body_hash).await,
                    (Some(_), Some(run_id)) => Plan::Relay { run_id: run_id.clone(), holder },
                    (Some(_), None) => Plan::StartRun,
                },
                // Free, ours (a run of this instance ending), or expired (its run is ended first): a new run.
                Some(_) | None => Plan::StartRun,
            },
        };
        let run_id = match &plan {
            Plan::StartRun => new_id("run"),
            Plan::Join { run_id } | Plan::Relay { run_id, .. } => run_id.clone(),
        };
        if let Some(request_id) = &request.request_id {
            let record =
                RequestRecord { session_id: live.id().to_owned(), body_hash, run_id: run_id.clone(), after_seq: after };
            // A unique insert: of two sends with one id, however concurrent (another session, another instance),
            // exactly one goes on; the other attaches to what the first made.
            if let RequestClaim::Taken(taken) = self.store.claim_request(request_id, &record, now_ms()).await? {
                return attach(request_id, &taken, &record.session_id, &record.body_hash);
            }
        }
        let joined = match &plan {
            Plan::Join { .. } => self.join(&live, &request),
            Plan::Relay { holder, .. } => {
                let steer = request.streaming_behavior == Some(StreamingBehavior::Steer);
                let control = Control::Enqueue { message: request.message.clone(), steer };
                match self.relay(live.id(), holder, &control).await {
                    Ok(joined) => joined,
                    Err(error) => {
                        if let Some(request_id) = &request.request_id {
                            self.store.release_request(request_id).await?;
                        }
                        return Err(error);
                    }
                }
            }
            Plan::StartRun => false,
        };
        let started = match plan {
            Plan::Join { run_id } | Plan::Relay { run_id, .. } if joined => Ok(run_id),
            // The run began to end after the plan was made: the message starts the next run, once that run has
            // released the session (`start_run` waits for it).
            Plan::Join { .. } | Plan::Relay { .. } => {
                let run_id = new_id("run");
                if let Some(request_id) = &request.request_id {
                    self.store.set_request_run(request_id, &run_id).await?;
                }
                self.start_run(&live, &request, &files, run_id.clone()).await.map(|()| run_id)
            }
            Plan::StartRun => self.start_run(&live, &request, &files, run_id.clone()).await.map(|()| run_id),
        };
        match started {
            Ok(run_id) => Ok(Tail { after, until_run: Some(run_id) }),
            Err(error) => {
                // No run came of it: the id is free again, so a retry of this very send can still succeed.
                if let Some(request_id) = &request.request_id {
                    self.store.release_request(request_id).await?;
                }
                Err(error)
            }
        }
    }

    /// A send that finds a run going is refused, unless that run is the one its own request id made: a twin of this
    /// send on another instance claimed the id and started the run after this send first looked.
    async fn refuse_unless_claimed(&self, request: &ChatRequest, body_hash: &str) -> Result<Tail, ChatError> {
        self.claimed(request, body_hash).await?.ok_or(ChatError::RunInProgress)
    }

    /// The run an earlier send with this request's id made, if one did (422 for the id with another body).
    async fn claimed(&self, request: &ChatRequest, body_hash: &str) -> Result<Option<Tail>, ChatError> {
        let Some(request_id) = &request.request_id else { return Ok(None) };
        match self.store.request(request_id).await? {
            Some(taken) => attach(request_id, &taken, &request.session_id, body_hash).map(Some),
            None => Ok(None),
        }
    }

    /// Queues the message into the active run; false when that run has already decided to stop.
    fn join(&self, live: &SessionLive, request: &ChatRequest) -> bool {
        let steer = request.streaming_behavior == Some(StreamingBehavior::Steer);
        live.with_active(|active| {
            active.is_some_and(|run| run.control.enqueue(request.message.clone(), steer, &run.events))
        })
    }
}

/// The answer to a send whose request id an earlier send took: that send's run, or 422 for another body.
fn attach(request_id: &str, taken: &RequestRecord, session_id: &str, body_hash: &str) -> Result<Tail, ChatError> {
    if taken.session_id != session_id || taken.body_hash != body_hash {
        return Err(ChatError::RequestIdReused(request_id.to_owned()));
    }
    Ok(Tail { after: taken.after_seq, until_run: Some(taken.run_id.clone()) })
}

/// Identifies a request body for request-id reuse: the same id must come with the same request.
fn body_hash(request: &ChatRequest) -> String {
    let canonical = serde_json::to_vec(request).expect("a ChatRequest serializes");
    Sha256::digest(&canonical).iter().map(|b| format!("{b:02x}")).collect()
}
