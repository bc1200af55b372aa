//! The line model of a diff: a unified diff parsed into lines with their old and new line numbers, and the
//! replacement view of an edit whose diff is not known yet. Pure, so it is tested natively.

use crate::highlight::DiffSide;
use crate::i18n::{Key, t};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    /// `--- a/…` / `+++ b/…`.
    File,
    /// `@@ -a,b +c,d @@`.
    Hunk,
    Context,
    Added,
    Removed,
    /// `\ No newline at end of file` and anything else that is not a diff line.
    Note,
}

impl LineKind {
    pub fn class(self) -> &'static str {
        match self {
            LineKind::File => "diff-line diff-line--file",
            LineKind::Hunk => "diff-line diff-line--hunk",
            LineKind::Context => "diff-line diff-line--context",
            LineKind::Added => "diff-line diff-line--added",
            LineKind::Removed => "diff-line diff-line--removed",
            LineKind::Note => "diff-line diff-line--note",
        }
    }

    /// The sign shown in front of the line.
    /// What a screen reader says for the sign, which is drawn as `+` or `−` (read out as "plus" or not at all).
    pub fn spoken(self) -> Option<&'static str> {
        match self {
            LineKind::Added => Some(t(Key::LineAdded)),
            LineKind::Removed => Some(t(Key::LineRemoved)),
            LineKind::Context | LineKind::File | LineKind::Hunk | LineKind::Note => None,
        }
    }

    /// Which file of the diff the line's text is from, for highlighting each file as its own run of lines.
    pub fn side(self) -> DiffSide {
        match self {
            LineKind::Context => DiffSide::Both,
            LineKind::Added => DiffSide::New,
            LineKind::Removed => DiffSide::Old,
            LineKind::File | LineKind::Hunk | LineKind::Note => DiffSide::Neither,
        }
    }

    pub fn sign(self) -> &'static str {
        match self {
            LineKind::Added => "+",
            LineKind::Removed => "−",
            LineKind::Context => " ",
            LineKind::File | LineKind::Hunk | LineKind::Note => "",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine {
    pub kind: LineKind,
    pub old: Option<usize>,
    pub new: Option<usize>,
    /// The line without its `+`/`-`/` ` marker.
    pub text: String,
}

/// Parses a unified diff. Lines outside a hunk, or a hunk header that does not parse, become notes: a diff from
/// another tool never fails the row.
pub fn parse_unified(diff: &str) -> Vec<DiffLine> {
    let mut lines = Vec::new();
    // Lines still expected in the current hunk, and the next line numbers.
    let mut old_left = 0usize;
    let mut new_left = 0usize;
    let (mut old_no, mut new_no) = (0usize, 0usize);
    for line in diff.lines() {
        let in_hunk = old_left > 0 || new_left > 0;
        let line_of = |kind, old, new, text: &str| DiffLine { kind, old, new, text: text.to_owned() };
        if in_hunk {
            if let Some(text) = line.strip_prefix('+') {
                lines.push(line_of(LineKind::Added, None, Some(new_no), text));
                new_no += 1;
                new_left = new_left.saturating_sub(1);
                continue;
            }
            if let Some(text) = line.strip_prefix('-') {
                lines.push(line_of(LineKind::Removed, Some(old_no), None, text));
                old_no += 1;
                old_left = old_left.saturating_sub(1);
                continue;
            }
            if let Some(text) = line.strip_prefix(' ').or((line.is_empty()).then_some("")) {
                lines.push(line_of(LineKind::Context, Some(old_no), Some(new_no), text));
                old_no += 1;
                new_no += 1;
                old_left = old_left.saturating_sub(1);
                new_left = new_left.saturating_sub(1);
                continue;
            }
        }
        if let Some((old_start, old_len, new_start, new_len)) = hunk_header(line) {
            (old_no, new_no, old_left, new_left) = (old_start, new_start, old_len, new_len);
            lines.push(line_of(LineKind::Hunk, None, None, line));
        } else if line.starts_with("--- ") || line.starts_with("+++ ") {
            lines.push(line_of(LineKind::File, None, None, line));
        } else {
            lines.push(line_of(LineKind::Note, None, None, line));
        }
    }
    lines
}

/// `@@ -a[,b] +c[,d] @@…` → (a, b, c, d); a missing length is 1.
fn hunk_header(line: &str) -> Option<(usize, usize, usize, usize)> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |range: &str| -> Option<(usize, usize)> {
        match range.split_once(',') {
            Some((start, len)) => Some((start.parse().ok()?, len.parse().ok()?)),
            None => Some((range.parse().ok()?, 1)),
        }
    };
    let (old_start, old_len) = range(old)?;
    let (new_start, new_len) = range(new)?;
    Some((old_start, old_len, new_start, new_len))
}

/// Line pairs above which the middle of an edit is shown as all removed, then all added, instead of being diffed:
/// the line diff is quadratic, and it runs in the browser on every redraw of a proposal.
const MAX_DIFF_CELLS: usize = 250_000;

/// The lines of an edit that replaces `old` with `new`, before the tool has said where in the file: common leading
/// and trailing lines as context, the middle as a line diff (longest common subsequence; removals before additions).
/// Line numbers count from the start of the snippet.
pub fn replacement(old: &str, new: &str) -> Vec<DiffLine> {
    let old: Vec<&str> = old.lines().collect();
    let new: Vec<&str> = new.lines().collect();
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..].iter().rev().zip(new[prefix..].iter().rev()).take_while(|(a, b)| a == b).count();
    let (old_mid, new_mid) = (&old[prefix..old.len() - suffix], &new[prefix..new.len() - suffix]);
    let mut steps = vec![Step::Both; prefix];
    if old_mid.len().saturating_mul(new_mid.len()) > MAX_DIFF_CELLS {
        steps.extend(std::iter::repeat_n(Step::Old, old_mid.len()));
        steps.extend(std::iter::repeat_n(Step::New, new_mid.len()));
    } else {
        steps.extend(lcs_steps(old_mid, new_mid));
    }
    steps.extend(std::iter::repeat_n(Step::Both, suffix));

    let (mut i, mut j) = (0, 0);
    let mut lines = Vec::with_capacity(steps.len());
    for step in steps {
        let line = match step {
            Step::Both => DiffLine { kind: LineKind::Context, old: Some(i + 1), new: Some(j + 1), text: old[i].into() },
            Step::Old => DiffLine { kind: LineKind::Removed, old: Some(i + 1), new: None, text: old[i].into() },
            Step::New => DiffLine { kind: LineKind::Added, old: None, new: Some(j + 1), text: new[j].into() },
        };
        match step {
            Step::Both => (i, j) = (i + 1, j + 1),
            Step::Old => i += 1,
            Step::New => j += 1,
        }
        lines.push(line);
    }
    lines
}

/// Which side a line of a computed diff comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Both,
    Old,
    New,
}

fn lcs_steps(old: &[&str], new: &[&str]) -> Vec<Step> {
    let (n, m) = (old.len(), new.len());
    // common[i][j]: the length of the longest common subsequence of old[i..] and new[j..].
    let mut common = vec![vec![0_u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            common[i][j] =
                if old[i] == new[j] { common[i + 1][j + 1] + 1 } else { common[i + 1][j].max(common[i][j + 1]) };
        }
    }
    let mut steps = Vec::with_capacity(n + m);
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && old[i] == new[j] {
            steps.push(Step::Both);
            (i, j) = (i + 1, j + 1);
        } else if i < n && (j == m || common[i + 1][j] >= common[i][j + 1]) {
            steps.push(Step::Old);
            i += 1;
        } else {
            steps.push(Step::New);
            j += 1;
        }
    }
    steps
}

/// Added and removed line counts.
pub fn counts(lines: &[DiffLine]) -> (usize, usize) {
    let added = lines.iter().filter(|line| line.kind == LineKind::Added).count();
    let removed = lines.iter().filter(|line| line.kind == LineKind::Removed).count();
    (added, removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(lines: &[DiffLine]) -> Vec<(LineKind, Option<usize>, Option<usize>, &str)> {
        lines.iter().map(|l| (l.kind, l.old, l.new, l.text.as_str())).collect()
    }

    #[test]
    fn unified_diff_lines_carry_old_and_new_numbers() {
        let diff = "--- a/f.txt\n+++ b/f.txt\n@@ -4,4 +4,4 @@\n line 4\n line 5\n-line 6\n+FIVE\n line 7\n";
        use LineKind::*;
        assert_eq!(
            summary(&parse_unified(diff)),
            vec![
                (File, None, None, "--- a/f.txt"),
                (File, None, None, "+++ b/f.txt"),
                (Hunk, None, None, "@@ -4,4 +4,4 @@"),
                (Context, Some(4), Some(4), "line 4"),
                (Context, Some(5), Some(5), "line 5"),
                (Removed, Some(6), None, "line 6"),
                (Added, None, Some(6), "FIVE"),
                (Context, Some(7), Some(7), "line 7"),
            ]
        );
        assert_eq!(counts(&parse_unified(diff)), (1, 1));
    }

    #[test]
    fn hunks_renumber_and_lengths_default_to_one() {
        let diff = "@@ -1 +1,2 @@\n-a\n+b\n+c\n@@ -10,2 +11,1 @@\n x\n-y\n\\ No newline at end of file\n";
        use LineKind::*;
        assert_eq!(
            summary(&parse_unified(diff)),
            vec![
                (Hunk, None, None, "@@ -1 +1,2 @@"),
                (Removed, Some(1), None, "a"),
                (Added, None, Some(1), "b"),
                (Added, None, Some(2), "c"),
                (Hunk, None, None, "@@ -10,2 +11,1 @@"),
                (Context, Some(10), Some(11), "x"),
                (Removed, Some(11), None, "y"),
                (Note, None, None, "\\ No newline at end of file"),
            ]
        );
    }

    #[test]
    fn a_line_starting_with_dashes_inside_a_hunk_is_a_removal_and_garbage_is_a_note() {
        let diff = "@@ -1,2 +1,1 @@\n---x\n keep\nnot a diff\n@@ broken @@\n";
        use LineKind::*;
        assert_eq!(
            summary(&parse_unified(diff)),
            vec![
                (Hunk, None, None, "@@ -1,2 +1,1 @@"),
                (Removed, Some(1), None, "--x"),
                (Context, Some(2), Some(1), "keep"),
                (Note, None, None, "not a diff"),
                (Note, None, None, "@@ broken @@"),
            ]
        );
    }

    #[test]
    fn replacement_keeps_common_lines_as_context() {
        use LineKind::*;
        assert_eq!(
            summary(&replacement("a\nb\nc\nd", "a\nB\nB2\nd")),
            vec![
                (Context, Some(1), Some(1), "a"),
                (Removed, Some(2), None, "b"),
                (Removed, Some(3), None, "c"),
                (Added, None, Some(2), "B"),
                (Added, None, Some(3), "B2"),
                (Context, Some(4), Some(4), "d"),
            ]
        );
        assert_eq!(summary(&replacement("same", "same")), vec![(Context, Some(1), Some(1), "same")]);
        assert_eq!(summary(&replacement("", "new")), vec![(Added, None, Some(1), "new")]);
        assert_eq!(
            summary(&replacement("x\ny\nz\nw", "x\nz\nW\nw")),
            vec![
                (Context, Some(1), Some(1), "x"),
                (Removed, Some(2), None, "y"),
                (Context, Some(3), Some(2), "z"),
                (Added, None, Some(3), "W"),
                (Context, Some(4), Some(4), "w"),
            ],
            "lines shared inside the changed middle stay context"
        );
    }

    #[test]
    fn a_large_edit_is_shown_removed_then_added() {
        let old: String = (0..600).map(|i| format!("old {i}\n")).collect();
        let new: String = (0..600).map(|i| format!("new {i}\n")).collect();
        let lines = replacement(&old, &new);
        assert_eq!(lines.len(), 1200);
        assert!(lines[..600].iter().all(|l| l.kind == LineKind::Removed));
        assert!(lines[600..].iter().all(|l| l.kind == LineKind::Added));
    }
}
