//! Which groups of a long transcript's messages are built: those near the viewport, found by a binary search of
//! the groups' places, one more each frame, and the heights that stand in for the others.
//!
//! Pure, so the rules are tested natively; `components/transcript.rs` reads the page's layout and applies them.

use std::ops::Range;

/// How far beyond the viewport, above and below, groups are built before the reader reaches them, in viewport
/// heights: a fling covers about one viewport height per frame.
const BUILD_MARGIN: f64 = 1.5;

/// The height of a message never drawn, while no group has been measured yet: half a question and a long answer.
pub const UNMEASURED_MESSAGE_HEIGHT: f64 = 400.0;

/// Where a message group is in the transcript's scrolled content, in pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupPlace {
    pub top: f64,
    pub height: f64,
}

/// The groups' places, in order, stacked from the top; read one group at a time, so that finding the groups near
/// the viewport reads a few of thousands.
pub trait GroupLayout {
    fn len(&self) -> usize;
    fn place(&self, group: usize) -> Option<GroupPlace>;
}

impl GroupLayout for [GroupPlace] {
    fn len(&self) -> usize {
        <[GroupPlace]>::len(self)
    }

    fn place(&self, group: usize) -> Option<GroupPlace> {
        self.get(group).copied()
    }
}

/// The first group for which `before` is false, `before` being true for a leading run of groups.
fn first_not(layout: &(impl GroupLayout + ?Sized), before: impl Fn(GroupPlace) -> bool) -> usize {
    let (mut low, mut high) = (0, layout.len());
    while low < high {
        let middle = low + (high - low) / 2;
        match layout.place(middle) {
            Some(place) if before(place) => low = middle + 1,
            Some(_) | None => high = middle,
        }
    }
    low
}

/// The groups that reach into `from..to` of the scrolled content.
fn groups_within(layout: &(impl GroupLayout + ?Sized), from: f64, to: f64) -> Range<usize> {
    let start = first_not(layout, |place| place.top + place.height < from);
    let end = first_not(layout, |place| place.top <= to).max(start);
    start..end
}

/// The groups to build for a viewport `view_height` tall scrolled to `top`: those that reach within `BUILD_MARGIN`
/// viewport heights of it.
pub fn groups_near(layout: &(impl GroupLayout + ?Sized), top: f64, view_height: f64) -> Range<usize> {
    let margin = BUILD_MARGIN * view_height;
    groups_within(layout, top - margin, top + view_height + margin)
}

/// The groups in the viewport itself.
pub fn groups_in_view(layout: &(impl GroupLayout + ?Sized), top: f64, view_height: f64) -> Range<usize> {
    groups_within(layout, top, top + view_height)
}

/// The first group that reaches below `top`: the one whose distance from the viewport's top is kept when groups
/// above it are built or let go.
pub fn anchor_group(layout: &(impl GroupLayout + ?Sized), top: f64) -> Option<usize> {
    let group = first_not(layout, |place| place.top + place.height <= top);
    (group < layout.len()).then_some(group)
}

/// The groups built for being near after this frame, given those built so far (sorted) and those built anyway
/// (`always`): what left `wanted` is let go at once, since that is cheap, and of what `wanted` lacks at most
/// `may_build` (one a frame, none once the frame built one) are built, nearest `in_view` first, since building is not;
/// the next frame builds the next. Returns the new set, sorted, and whether `wanted` still lacks some.
pub fn next_near(
    built: &[usize],
    wanted: Range<usize>,
    in_view: Range<usize>,
    always: Range<usize>,
    may_build: bool,
) -> (Vec<usize>, bool) {
    let mut near: Vec<usize> = built.iter().copied().filter(|group| wanted.contains(group)).collect();
    let distance = |group: usize| {
        if in_view.contains(&group) {
            0
        } else if group < in_view.start {
            in_view.start - group
        } else {
            group + 1 - in_view.end
        }
    };
    let missing: Vec<usize> =
        wanted.filter(|group| !always.contains(group) && near.binary_search(group).is_err()).collect();
    let nearest = missing.iter().copied().min_by_key(|&group| distance(group)).filter(|_| may_build);
    if let Some(group) = nearest {
        let at = near.binary_search(&group).unwrap_or_else(|at| at);
        near.insert(at, group);
    }
    (near, missing.len() > usize::from(nearest.is_some()))
}

/// How far the average of the drawn groups may drift from the height given to the boxes of groups never drawn
/// before they take the new one: each change moves every such box, so it is not made for every group drawn.
const ESTIMATE_SLACK: f64 = 0.1;

/// Whether the boxes of groups never drawn, `applied` tall, should take the height `estimate` instead.
pub fn estimate_moved(applied: f64, estimate: f64) -> bool {
    (estimate - applied).abs() > ESTIMATE_SLACK * applied
}

/// Each group's height when it was last drawn, and their running average for a group never drawn.
#[derive(Debug)]
pub struct GroupHeights {
    heights: Vec<Option<f64>>,
    sum: f64,
    measured: usize,
    /// A group's height while none has been measured.
    unmeasured: f64,
}

impl GroupHeights {
    pub fn new(unmeasured: f64) -> Self {
        GroupHeights { heights: Vec::new(), sum: 0.0, measured: 0, unmeasured }
    }

    pub fn record(&mut self, group: usize, height: f64) {
        if self.heights.len() <= group {
            self.heights.resize(group + 1, None);
        }
        match self.heights[group].replace(height) {
            Some(old) => self.sum += height - old,
            None => {
                self.sum += height;
                self.measured += 1;
            }
        }
    }

    /// The group's height when it was last drawn.
    pub fn measured(&self, group: usize) -> Option<f64> {
        self.heights.get(group).copied().flatten()
    }

    /// How tall a group never drawn is taken to be: the average of those drawn.
    pub fn unmeasured_estimate(&self) -> f64 {
        if self.measured > 0 { self.sum / self.measured as f64 } else { self.unmeasured }
    }

    pub fn clear(&mut self) {
        *self = GroupHeights::new(self.unmeasured);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Groups of the given heights, stacked from the top.
    fn stacked(heights: &[f64]) -> Vec<GroupPlace> {
        let mut top = 0.0;
        heights
            .iter()
            .map(|&height| {
                let place = GroupPlace { top, height };
                top += height;
                place
            })
            .collect()
    }

    #[test]
    fn builds_the_groups_within_a_margin_of_the_viewport() {
        let layout = stacked(&[1000.0; 20]);
        // Viewport 800 px at 10,000, margin 1,200 px: what reaches into 8,800..12,000, groups 8 to 12.
        assert_eq!(groups_near(layout.as_slice(), 10_000.0, 800.0), 8..13);
        assert_eq!(groups_near(layout.as_slice(), 0.0, 800.0), 0..3);
        assert_eq!(groups_near(layout.as_slice(), 19_200.0, 800.0), 17..20);
        assert_eq!(groups_in_view(layout.as_slice(), 10_100.0, 800.0), 10..11);
        assert_eq!(groups_in_view(layout.as_slice(), 9_500.0, 800.0), 9..11);
    }

    #[test]
    fn an_empty_or_passed_layout_builds_nothing_near() {
        let empty: &[GroupPlace] = &[];
        assert_eq!(groups_near(empty, 0.0, 800.0), 0..0);
        let layout = stacked(&[100.0, 100.0]);
        let near = groups_near(layout.as_slice(), 50_000.0, 800.0);
        assert!(near.is_empty(), "{near:?}");
    }

    #[test]
    fn the_anchor_is_the_first_group_reaching_below_the_top() {
        let layout = stacked(&[100.0, 300.0, 50.0]);
        assert_eq!(anchor_group(layout.as_slice(), 0.0), Some(0));
        assert_eq!(anchor_group(layout.as_slice(), 100.0), Some(1));
        assert_eq!(anchor_group(layout.as_slice(), 399.0), Some(1));
        assert_eq!(anchor_group(layout.as_slice(), 420.0), Some(2));
        assert_eq!(anchor_group(layout.as_slice(), 450.0), None);
    }

    #[test]
    fn one_group_is_built_a_frame_nearest_the_viewport_first_and_the_far_are_let_go_at_once() {
        // In view: 10 and 11; wanted 8..14; built so far: 3 (far above) and 11.
        let (near, more) = next_near(&[3, 11], 8..14, 10..12, 18..20, true);
        assert_eq!(near, [10, 11]);
        assert!(more);
        let (near, more) = next_near(&near, 8..14, 10..12, 18..20, true);
        assert_eq!(near.len(), 3);
        assert!(near == [9, 10, 11] || near == [10, 11, 12], "{near:?}");
        assert!(more);
        let mut near = near;
        for _ in 0..10 {
            let (next, more) = next_near(&near, 8..14, 10..12, 18..20, true);
            near = next;
            if !more {
                break;
            }
        }
        assert_eq!(near, [8, 9, 10, 11, 12, 13]);
        assert_eq!(next_near(&near, 8..14, 10..12, 18..20, true), (vec![8, 9, 10, 11, 12, 13], false));
    }

    #[test]
    fn a_frame_that_built_one_only_lets_go() {
        assert_eq!(next_near(&[3, 11], 8..14, 10..12, 18..20, false), (vec![11], true));
        assert_eq!(next_near(&[11], 11..12, 11..12, 18..20, false), (vec![11], false));
    }

    #[test]
    fn the_groups_built_anyway_take_no_frame() {
        // At the end: the last two are always built, the two above them are wanted.
        let (near, more) = next_near(&[], 16..20, 18..20, 18..20, true);
        assert_eq!(near, [17]);
        assert!(more);
        assert_eq!(next_near(&near, 16..20, 18..20, 18..20, true), (vec![16, 17], false));
    }

    #[test]
    fn the_boxes_of_groups_never_drawn_change_height_only_when_the_average_moved_by_a_tenth() {
        assert!(estimate_moved(800.0, 1441.0));
        assert!(!estimate_moved(1441.0, 1500.0));
        assert!(!estimate_moved(1441.0, 1300.0));
        assert!(estimate_moved(1441.0, 1200.0));
    }

    #[test]
    fn a_group_never_drawn_is_as_tall_as_the_average_of_those_drawn() {
        let mut heights = GroupHeights::new(800.0);
        assert_eq!((heights.measured(4), heights.unmeasured_estimate()), (None, 800.0));
        heights.record(1, 100.0);
        heights.record(3, 300.0);
        assert_eq!((heights.measured(4), heights.unmeasured_estimate()), (None, 200.0));
        assert_eq!(heights.measured(3), Some(300.0));
        heights.record(3, 500.0);
        assert_eq!(heights.unmeasured_estimate(), 300.0);
        heights.clear();
        assert_eq!((heights.measured(1), heights.unmeasured_estimate()), (None, 800.0));
    }
}
