//! Frames batched per two animation frames: however many arrive meanwhile are handed on together, so the page
//! applies them in one snapshot update and redraws once, at most ~30 times a second.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::protocol::ChatFrame;

/// Collects frames and hands them to the sink on the second animation frame after the first of them arrived.
///
/// Every other frame rather than every frame: each hand-over costs the page a snapshot update, a sync of the
/// transcript's rows, a layout and a paint, and text appearing 30 times a second reads as smooth as 60.
#[derive(Clone)]
pub struct FrameBatcher {
    shared: Rc<Shared>,
}

struct Shared {
    pending: RefCell<Vec<ChatFrame>>,
    scheduled: Cell<bool>,
    sink: Box<dyn Fn(Vec<ChatFrame>)>,
}

impl FrameBatcher {
    pub fn new(sink: impl Fn(Vec<ChatFrame>) + 'static) -> Self {
        FrameBatcher {
            shared: Rc::new(Shared {
                pending: RefCell::new(Vec::new()),
                scheduled: Cell::new(false),
                sink: Box::new(sink),
            }),
        }
    }

    /// Queues frames for the animation frame after next.
    pub fn push(&self, frames: Vec<ChatFrame>) {
        self.shared.pending.borrow_mut().extend(frames);
        if self.shared.scheduled.replace(true) {
            return;
        }
        let shared = self.shared.clone();
        // Background tabs get no animation frames; their frames wait (cheaply) until the tab is shown,
        // or until `flush` needs them applied, e.g. before a re-attach reads the last `seq`.
        leptos::prelude::request_animation_frame(move || {
            leptos::prelude::request_animation_frame(move || Self::deliver(&shared));
        });
    }

    /// Hands queued frames to the sink now.
    pub fn flush(&self) {
        Self::deliver(&self.shared);
    }

    /// Drops queued frames (the page switched to another session).
    pub fn clear(&self) {
        self.shared.pending.borrow_mut().clear();
    }

    fn deliver(shared: &Shared) {
        shared.scheduled.set(false);
        let batch = std::mem::take(&mut *shared.pending.borrow_mut());
        if !batch.is_empty() {
            (shared.sink)(batch);
        }
    }
}
