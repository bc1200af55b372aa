//! Fuzzy matching of a typed query against a short label (a session title, an action's name), for the quick
//! switcher: every character of each query word must appear in the label in order, and the score says how well.
//!
//! Words of the query are matched independently (so "bug login" finds "Fix the login bug"), each by a small dynamic
//! programme over the label that picks the best placement, not the first one: "rep" in "draft report" scores the
//! word start of "report", not the "r" of "draft". A match scores a base amount per character, more at the start of
//! a word and for runs of consecutive characters, less for every character skipped in between. Comparison ignores
//! case (per character, so "É" matches "é"). Labels are titles, so the programme's O(query × label) cost is small.

/// Where a query matched a label, and how well.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FuzzyMatch {
    /// Higher is better; only comparable between matches of the same query.
    pub score: i32,
    /// The matched characters of the label, as `char` indexes, ascending and without repeats (for highlighting).
    pub positions: Vec<usize>,
}

/// Each matched character.
const MATCH: i32 = 16;
/// A matched character that starts a word (the label's first character, one after a space or punctuation, or an
/// upper-case letter after a lower-case one).
const WORD_START: i32 = 10;
/// A matched character right after the previous matched one.
const CONSECUTIVE: i32 = 8;
/// The first label character skipped between two matched ones: a run broken in two costs more than either run is
/// worth less for being shorter.
const GAP_START: i32 = 3;
/// Each further skipped character.
const GAP: i32 = 1;
/// Each label character before the first match, up to [`MAX_LEADING`] of them.
const LEADING: i32 = 1;
const MAX_LEADING: i32 = 8;

/// Matches `query` against `label`. An empty (or all-blank) query matches everything with score 0; `None` when a
/// word of the query cannot be found in order in the label.
pub fn fuzzy_match(query: &str, label: &str) -> Option<FuzzyMatch> {
    let text: Vec<char> = label.chars().collect();
    let folded: Vec<char> = text.iter().map(|c| fold(*c)).collect();
    let mut score = 0;
    let mut positions = Vec::new();
    for word in query.split_whitespace() {
        let word: Vec<char> = word.chars().map(fold).collect();
        let found = match_word(&word, &text, &folded)?;
        score += found.score;
        positions.extend(found.positions);
    }
    positions.sort_unstable();
    positions.dedup();
    Some(FuzzyMatch { score, positions })
}

/// One character compared without case: its first lower-case form (enough for titles; "ß" stays "ß").
fn fold(c: char) -> char {
    c.to_lowercase().next().unwrap_or(c)
}

fn word_start(text: &[char], at: usize) -> bool {
    match at.checked_sub(1).map(|before| text[before]) {
        None => true,
        Some(before) => !before.is_alphanumeric() || (before.is_lowercase() && text[at].is_uppercase()),
    }
}

/// The best placement of one query word (non-empty, folded) in the label.
fn match_word(word: &[char], text: &[char], folded: &[char]) -> Option<FuzzyMatch> {
    let (m, n) = (word.len(), text.len());
    if m > n {
        return None;
    }
    // best[i][j]: the best score of word[..=i] with word[i] placed on text[j]; `from[i][j]` where word[i - 1] went.
    let mut best = vec![vec![None::<i32>; n]; m];
    let mut from = vec![vec![0_usize; n]; m];
    for (i, &wanted) in word.iter().enumerate() {
        // The best `best[i - 1][k] + GAP * k` over k < j - 1, so a placement after a gap is O(1): its score is that
        // minus `GAP_START + GAP * (j - 2)` (j - k - 1 characters skipped).
        let mut before_gap: Option<(i32, usize)> = None;
        for j in i..n {
            if i > 0 && j >= 2 {
                let k = j - 2;
                if let Some(score) = best[i - 1][k] {
                    let keyed = score + GAP * k as i32;
                    if before_gap.is_none_or(|(top, _)| keyed > top) {
                        before_gap = Some((keyed, k));
                    }
                }
            }
            if folded[j] != wanted {
                continue;
            }
            let here = MATCH + if word_start(text, j) { WORD_START } else { 0 };
            let placed = if i == 0 {
                Some((here - LEADING * (j as i32).min(MAX_LEADING), 0))
            } else {
                let adjacent = best[i - 1][j - 1].map(|score| (score + here + CONSECUTIVE, j - 1));
                let gapped = before_gap.map(|(keyed, k)| (keyed - GAP_START - GAP * (j as i32 - 2) + here, k));
                match (adjacent, gapped) {
                    (Some(a), Some(g)) => Some(if g.0 > a.0 { g } else { a }),
                    (a, g) => a.or(g),
                }
            };
            if let Some((score, previous)) = placed {
                best[i][j] = Some(score);
                from[i][j] = previous;
            }
        }
    }
    let (score, mut j) = (0..n).filter_map(|j| best[m - 1][j].map(|score| (score, j))).max_by_key(|&(score, j)| {
        // Equal scores: the earlier end wins (`max_by_key` keeps the last maximum, so compare on reversed j).
        (score, std::cmp::Reverse(j))
    })?;
    let mut positions = vec![0; m];
    for i in (0..m).rev() {
        positions[i] = j;
        j = from[i][j];
    }
    Some(FuzzyMatch { score, positions })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{FuzzyMatch, fuzzy_match};

    fn score(query: &str, label: &str) -> i32 {
        fuzzy_match(query, label).map_or(i32::MIN, |found| found.score)
    }

    #[test]
    fn every_character_must_appear_in_order() {
        assert!(fuzzy_match("gmr", "Gamma release").is_some());
        assert!(fuzzy_match("rmg", "Gamma release").is_none(), "order matters within a word");
        assert!(fuzzy_match("gammas", "Gamma").is_none(), "longer than the label");
        assert!(fuzzy_match("x", "Gamma release").is_none());
    }

    #[test]
    fn a_blank_query_matches_everything_equally() {
        assert_eq!(fuzzy_match("", "anything"), Some(FuzzyMatch { score: 0, positions: vec![] }));
        assert_eq!(fuzzy_match("   ", ""), Some(FuzzyMatch { score: 0, positions: vec![] }));
    }

    #[test]
    fn case_is_ignored_and_positions_are_characters_not_bytes() {
        let found = fuzzy_match("ÉTÉ", "un été à Paris").expect("matches without case");
        assert_eq!(found.positions, vec![3, 4, 5], "char indexes, though é takes two bytes");
        assert!(fuzzy_match("paris", "PARIS").is_some());
    }

    #[test]
    fn the_best_placement_is_found_not_the_first() {
        let found = fuzzy_match("rep", "draft report").expect("matches");
        assert_eq!(found.positions, vec![6, 7, 8], "the word start of \"report\", not the r of \"draft\"");
    }

    #[test]
    fn word_starts_and_runs_rank_above_scattered_matches() {
        assert!(score("log", "Login page") > score("log", "Catalog"), "word start beats the middle of a word");
        assert!(score("lp", "Login page") > score("lp", "Help"), "two word starts beat a run inside a word");
        assert!(score("report", "Weekly report") > score("report", "Reply to the port"), "one run beats pieces");
        assert!(score("fix", "Fix tests") > score("fix", "Please fix tests"), "earlier beats later");
        assert!(score("dt", "deployTarget") > score("dt", "dotted"), "camel case starts a word");
    }

    #[test]
    fn words_of_the_query_match_independently_in_any_order() {
        let found = fuzzy_match("bug login", "Fix the login bug").expect("both words are there");
        assert_eq!(found.positions, vec![8, 9, 10, 11, 12, 14, 15, 16]);
        assert!(fuzzy_match("bug logout", "Fix the login bug").is_none(), "every word must match");
    }

    proptest! {
        #[test]
        fn a_match_marks_characters_of_the_label_that_spell_the_query(
            label in "[a-zA-Zé ]{0,24}",
            picks in proptest::collection::vec(any::<proptest::sample::Index>(), 0..6),
        ) {
            // A subsequence of the label always matches, and its positions spell it.
            let chars: Vec<char> = label.chars().filter(|c| !c.is_whitespace()).collect();
            let mut taken: Vec<usize> = picks.iter().filter(|_| !chars.is_empty()).map(|p| p.index(chars.len())).collect();
            taken.sort_unstable();
            taken.dedup();
            let query: String = taken.iter().map(|&i| chars[i]).collect();
            let found = fuzzy_match(&query, &label);
            prop_assert!(found.is_some(), "{query:?} in {label:?}");
            let found = found.expect("checked above");
            let label_chars: Vec<char> = label.chars().collect();
            let spelled: String = found.positions.iter().map(|&i| label_chars[i]).collect();
            prop_assert_eq!(spelled.to_lowercase(), query.to_lowercase());
            prop_assert!(found.positions.windows(2).all(|pair| pair[0] < pair[1]));
        }
    }
}
