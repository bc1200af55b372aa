//! How often the page redraws what a stream brings: every other animation frame while a redraw is cheap, less often
//! as redraws grow costly, so that a long answer streaming in keeps the main thread (and a phone's battery) mostly
//! free.
//!
//! A redraw's cost is what the page measured it to take, its own code and the browser's style, layout and paint
//! together (two tasks, the apply and the frame that draws it: `client::FrameBatcher`); it grows with the answer on
//! screen. The page waits `gap_ms` from the start of one redraw to the start of the next, so that redraws take at
//! most one part in `SHARE` of the main thread.

/// Redraws take at most one part in this many of the main thread.
const SHARE: f64 = 8.0;

/// Every other animation frame at 60 Hz: text appearing 30 times a second reads as smooth as 60.
pub const MIN_GAP_MS: f64 = 32.0;

/// Text never waits longer than this to appear, however slow the device: beyond it, streaming reads as stalling.
pub const MAX_GAP_MS: f64 = 250.0;

/// How much a new measurement moves the estimate: a few redraws' worth of memory, so one slow frame (a garbage
/// collection, a tab switch) does not slow the next second of text.
const WEIGHT: f64 = 0.25;

/// The page's running estimate of what one redraw costs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RedrawPace {
    cost_ms: Option<f64>,
}

impl RedrawPace {
    /// Takes in how long a redraw took, from its frames being applied to the browser having painted them.
    pub fn record(&mut self, cost_ms: f64) {
        if !cost_ms.is_finite() || cost_ms < 0.0 {
            return;
        }
        // A redraw that took longer than the longest gap would allow says little more than that it was slow.
        let cost_ms = cost_ms.min(MAX_GAP_MS / SHARE * 2.0);
        self.cost_ms = Some(match self.cost_ms {
            Some(previous) => previous + WEIGHT * (cost_ms - previous),
            None => cost_ms,
        });
    }

    /// How long to wait from the start of one redraw to the start of the next.
    pub fn gap_ms(&self) -> f64 {
        self.cost_ms.map_or(MIN_GAP_MS, |cost| (cost * SHARE).clamp(MIN_GAP_MS, MAX_GAP_MS))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cheap_redraws_come_every_other_frame() {
        let mut pace = RedrawPace::default();
        assert_eq!(pace.gap_ms(), MIN_GAP_MS);
        pace.record(2.0);
        assert_eq!(pace.gap_ms(), MIN_GAP_MS);
    }

    #[test]
    fn costly_redraws_are_spaced_to_an_eighth_of_the_main_thread() {
        let mut pace = RedrawPace::default();
        pace.record(10.0);
        assert_eq!(pace.gap_ms(), 80.0);
        for _ in 0..40 {
            pace.record(20.0);
        }
        assert!((pace.gap_ms() - 160.0).abs() < 0.5, "{}", pace.gap_ms());
    }

    #[test]
    fn one_slow_redraw_moves_the_pace_a_quarter_of_the_way() {
        let mut pace = RedrawPace::default();
        pace.record(8.0);
        pace.record(16.0);
        assert_eq!(pace.gap_ms(), 80.0);
    }

    #[test]
    fn the_gap_never_exceeds_the_longest_wait() {
        let mut pace = RedrawPace::default();
        for _ in 0..10 {
            pace.record(5_000.0);
        }
        assert_eq!(pace.gap_ms(), MAX_GAP_MS);
        // Capped on the way in too: the estimate comes back down within a few cheap redraws.
        for _ in 0..8 {
            pace.record(2.0);
        }
        assert!(pace.gap_ms() < 100.0, "{}", pace.gap_ms());
    }

    #[test]
    fn nonsense_measurements_are_ignored() {
        let mut pace = RedrawPace::default();
        pace.record(f64::NAN);
        pace.record(-3.0);
        pace.record(f64::INFINITY);
        assert_eq!(pace, RedrawPace::default());
    }
}
