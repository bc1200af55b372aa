//! The server out of reach: a request that got no answer at all puts the page in its "server unreachable" state,
//! which asks `/api/health` again with back-off (at once when the browser says it is online again) and, once the
//! server answers, loads again what the page could not.

use std::rc::Rc;
use std::time::Duration;

use leptos::prelude::*;

use crate::app::PageState;
use crate::client::{self as api, ClientError, Pause};

/// The first pause between two health checks; it doubles up to `LONGEST_PAUSE`, so a server that comes back is
/// noticed within about five seconds.
const FIRST_PAUSE: Duration = Duration::from_secs(1);
const LONGEST_PAUSE: Duration = Duration::from_secs(5);

/// True when the error says the server was not reached: no answer at all, or a proxy in front of it answering
/// that it is down.
fn means_unreachable(error: &ClientError) -> bool {
    match error {
        ClientError::Network(_) => true,
        ClientError::Stalled => false,
        ClientError::Status { status, .. } => matches!(status, 502..=504),
    }
}

/// Puts the page in the unreachable state when `error` means that; false when it does not, and the caller
/// shows the error itself.
pub fn lost(state: PageState, error: &ClientError) -> bool {
    if !means_unreachable(error) {
        return false;
    }
    // Set once: every set wakes `watch`, and one wait for the server is enough.
    if !state.unreachable.get_untracked() {
        state.unreachable.set(true);
    }
    true
}

/// Each time the page finds the server unreachable, waits for it to answer and then runs `reload`.
pub fn watch(state: PageState, reload: impl Fn() + Clone + 'static) {
    Effect::new(move |_| {
        if state.unreachable.get() {
            let reload = reload.clone();
            leptos::task::spawn_local(async move {
                wait_for_server().await;
                state.unreachable.set(false);
                reload();
            });
        }
    });
}

async fn wait_for_server() {
    let pause = Rc::new(Pause::new());
    let woken = pause.clone();
    let online = window_event_listener_untyped("online", move |_| woken.wake());
    let mut next_pause = FIRST_PAUSE;
    while api::health().await.is_err() {
        pause.sleep(next_pause).await;
        next_pause = (next_pause * 2).min(LONGEST_PAUSE);
    }
    online.remove();
}
