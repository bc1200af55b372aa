//! Frames batched per redraw: however many arrive meanwhile are handed on together, just after an animation frame, so
//! the page applies them in one snapshot update and redraws once, at most ~30 times a second and less often as each
//! redraw grows costly (`crate::pace`).
//!
//! A batch is applied in a task of its own, queued from an animation frame, and drawn by the next frame: the apply
//! (the reducer, the rows' DOM, the layout read to follow the output) and the drawing (pre-paint, paint) of a long
//! answer take up to ~15 ms each on a desktop, and in one task together they made a stream's longest tasks, 30–55 ms
//! (docs/decisions.md, "Streaming").

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use crate::pace::RedrawPace;
use crate::protocol::ChatFrame;

/// Collects frames and hands them to the sink just after an animation frame, once the pace's gap since the last
/// hand-over has passed.
///
/// Each hand-over costs the page a snapshot update, a sync of the transcript's rows, a layout and a paint, which
/// grow with the answer on screen: a 64 KB answer took ~10 ms a redraw on a desktop, a third of the main thread at
/// 30 redraws a second.
#[derive(Clone)]
pub struct FrameBatcher {
    shared: Rc<Shared>,
}

struct Shared {
    pending: RefCell<Vec<ChatFrame>>,
    scheduled: Cell<bool>,
    pace: Cell<RedrawPace>,
    /// When the last hand-over started (`Date.now()`, ms).
    last_delivery: Cell<f64>,
    sink: Box<dyn Fn(Vec<ChatFrame>)>,
}

/// Within this much of the gap's end, an animation frame is late enough: frames come every ~16.7 ms.
const FRAME_SLACK_MS: f64 = 8.0;

impl FrameBatcher {
    pub fn new(sink: impl Fn(Vec<ChatFrame>) + 'static) -> Self {
        FrameBatcher {
            shared: Rc::new(Shared {
                pending: RefCell::new(Vec::new()),
                scheduled: Cell::new(false),
                pace: Cell::new(RedrawPace::default()),
                last_delivery: Cell::new(f64::NEG_INFINITY),
                sink: Box::new(sink),
            }),
        }
    }

    /// Queues frames for the first animation frame the pace allows.
    pub fn push(&self, frames: Vec<ChatFrame>) {
        self.shared.pending.borrow_mut().extend(frames);
        if self.shared.scheduled.replace(true) {
            return;
        }
        Self::schedule(self.shared.clone());
    }

    /// Hands queued frames to the sink now.
    pub fn flush(&self) {
        Self::deliver(&self.shared);
    }

    /// Drops queued frames (the page switched to another session).
    pub fn clear(&self) {
        self.shared.pending.borrow_mut().clear();
    }

    /// Asks for the animation frame that ends the pace's gap: a timer up to the frame before it, rather than a chain
    /// of frames, since even an idle frame costs the page its work. Background tabs get no animation frames; their
    /// frames wait (cheaply) until the tab is shown, or until `flush` needs them applied, e.g. before a re-attach
    /// reads the last `seq`.
    fn schedule(shared: Rc<Shared>) {
        let wait = Self::wait_ms(&shared);
        if wait < 2.0 * FRAME_SLACK_MS {
            leptos::prelude::request_animation_frame(move || Self::on_frame(shared));
        } else {
            let until_frame_before = Duration::from_millis((wait - 2.0 * FRAME_SLACK_MS) as u64);
            leptos::prelude::set_timeout(
                move || leptos::prelude::request_animation_frame(move || Self::on_frame(shared)),
                until_frame_before,
            );
        }
    }

    fn on_frame(shared: Rc<Shared>) {
        // `flush` may have delivered meanwhile.
        if !shared.scheduled.get() {
            return;
        }
        if Self::wait_ms(&shared) <= FRAME_SLACK_MS {
            // Not in this frame's callbacks but in a task after its paint: the apply then has the whole frame's
            // time before the next one, which draws it as a task of its own.
            leptos::prelude::set_timeout(
                move || {
                    if shared.scheduled.get() {
                        Self::deliver(&shared);
                    }
                },
                Duration::ZERO,
            );
        } else {
            Self::schedule(shared);
        }
    }

    /// How long until the pace allows the next hand-over.
    fn wait_ms(shared: &Shared) -> f64 {
        shared.last_delivery.get() + shared.pace.get().gap_ms() - js_sys::Date::now()
    }

    fn deliver(shared: &Rc<Shared>) {
        shared.scheduled.set(false);
        let batch = std::mem::take(&mut *shared.pending.borrow_mut());
        if batch.is_empty() {
            return;
        }
        let started = js_sys::Date::now();
        shared.last_delivery.set(started);
        (shared.sink)(batch);
        // The redraw's cost is the apply's and the drawing's, not the idle time between them. A task queued now runs
        // after this one's microtasks, where the views' effects update the rows: the apply. The next animation
        // frame's callbacks run before its style, layout and paint, and a task queued from them runs after: the
        // drawing.
        let shared = shared.clone();
        leptos::prelude::set_timeout(
            move || {
                let applied = js_sys::Date::now() - started;
                leptos::prelude::request_animation_frame(move || {
                    let frame_started = js_sys::Date::now();
                    leptos::prelude::set_timeout(
                        move || {
                            let mut pace = shared.pace.get();
                            pace.record(applied + (js_sys::Date::now() - frame_started));
                            shared.pace.set(pace);
                        },
                        Duration::ZERO,
                    );
                });
            },
            Duration::ZERO,
        );
    }
}
