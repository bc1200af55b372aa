//! Going back in pi's conversation for an edit or a regeneration: pi's `fork` copies its session file up to just
//! before one user message into a new file and switches to it, so the earlier branch's file stays as it was. A fork
//! to a new chatwire session makes that cut, then has `pi --fork` copy it into the new session's workspace.

use std::path::Path;

use serde::Deserialize;
use serde_json::json;

use super::{PiConfig, PiFailure, PiProcess};
use crate::runtime::seam::{ConversationRef, ConversationStart, SessionSetup, UserMessageAt};

/// One user message pi can fork before, as `get_fork_messages` lists them.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ForkEntry {
    entry_id: String,
    text: String,
}

#[derive(Debug, Deserialize)]
struct ForkEntries {
    messages: Vec<ForkEntry>,
}

#[derive(Debug, Deserialize)]
struct Forked {
    #[serde(default)]
    cancelled: bool,
}

/// Moves `process` onto a new session file holding what came before the user message `at`; pi's `get_state` after
/// it says which file that is.
pub(super) async fn go_back_before(
    process: &mut PiProcess,
    config: &PiConfig,
    at: &UserMessageAt,
) -> Result<(), PiFailure> {
    let listed = process.request(json!({"type": "get_fork_messages"}), config.timeout).await?;
    let entries: ForkEntries = answer_data(&listed, "get_fork_messages")?;
    let entry = entry_for(&entries.messages, at).ok_or_else(|| {
        PiFailure::CannotFork(format!(
            "pi's session has no user message {} reading {:?} (it lists {})",
            at.index + 1,
            at.text,
            entries.messages.len()
        ))
    })?;
    let answer = process.request(json!({"type": "fork", "entryId": entry}), config.timeout).await?;
    let forked: Forked = answer_data(&answer, "fork")?;
    if forked.cancelled {
        return Err(PiFailure::CannotFork("a pi extension cancelled the fork".into()));
    }
    process.request(json!({"type": "get_state"}), config.timeout).await?;
    Ok(())
}

/// A pi session file for a chatwire session forked from `from`: `from`'s file cut at `from.start`, carried into
/// `workspace` by `pi --fork` (pi records the directory a session works in, and a copy made by `fork` alone would
/// go on working in the first session's). `None` when the cut leaves an empty conversation.
pub(super) async fn fork_into(
    config: &PiConfig,
    from: &SessionSetup,
    workspace: &Path,
) -> Result<Option<String>, PiFailure> {
    let file = from.conversation.as_ref().map(ConversationRef::as_str).filter(|file| Path::new(file).is_file());
    let cut = match (&from.start, file) {
        (ConversationStart::BeforeUserMessage(at), _) if at.index == 0 => return Ok(None),
        (_, None) => return Err(PiFailure::CannotFork("pi kept no session file for that branch".into())),
        (ConversationStart::Whole, Some(file)) => file.to_owned(),
        (ConversationStart::BeforeUserMessage(at), Some(file)) => {
            let mut slot = None;
            let started = super::start(&mut slot, config, &from.workspace, Some(file)).await?;
            let process = slot.as_mut().expect("a process was just started");
            if started.is_some_and(|started| started.reset) {
                return Err(PiFailure::CannotFork(format!("pi could not reopen {file}")));
            }
            go_back_before(process, config, at).await?;
            let cut = process.session().file.clone();
            cut.ok_or_else(|| PiFailure::CannotFork("pi named no file for the cut conversation".into()))?
        }
    };
    let mut forking = config.clone();
    forking.args.extend(["--fork".to_owned(), cut.clone()]);
    let mut slot = None;
    super::start(&mut slot, &forking, workspace, None).await?;
    let forked = slot.as_ref().and_then(|process| process.session().file.clone());
    if Some(cut.as_str()) != file {
        // The cut was only the way to the fork: no branch of the first session is in it.
        if let Err(error) = std::fs::remove_file(&cut) {
            tracing::warn!(target: "chatwire::pi", "removing the intermediate pi session file {cut}: {error}");
        }
    }
    forked.map(Some).ok_or_else(|| PiFailure::CannotFork("pi named no file for the forked session".into()))
}

/// The entry at the message's place when its text agrees; otherwise the entry of that text nearest the place (pi
/// and chatwire may count a message differently, a compaction for one), and failing that the place alone.
fn entry_for<'a>(entries: &'a [ForkEntry], at: &UserMessageAt) -> Option<&'a str> {
    let same_text = |entry: &&ForkEntry| entry.text.trim() == at.text.trim();
    if let Some(entry) = entries.get(at.index).filter(same_text) {
        return Some(&entry.entry_id);
    }
    let nearest =
        entries.iter().enumerate().filter(|(_, entry)| same_text(entry)).min_by_key(|(i, _)| i.abs_diff(at.index));
    nearest.map(|(_, entry)| entry).or_else(|| entries.get(at.index)).map(|entry| entry.entry_id.as_str())
}

fn answer_data<T: serde::de::DeserializeOwned>(
    answer: &crate::runtime::event::RpcResponse,
    command: &str,
) -> Result<T, PiFailure> {
    if !answer.success {
        return Err(PiFailure::CannotFork(format!(
            "pi refused `{command}`: {}",
            answer.error.as_deref().unwrap_or("no reason given")
        )));
    }
    let data = answer.data.as_ref().map_or("null", |raw| raw.0.get());
    serde_json::from_str(data).map_err(|error| PiFailure::Malformed(format!("pi's answer to `{command}`: {error}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(texts: &[&str]) -> Vec<ForkEntry> {
        texts
            .iter()
            .enumerate()
            .map(|(i, text)| ForkEntry { entry_id: format!("e{i}"), text: (*text).into() })
            .collect()
    }

    fn at(index: usize, text: &str) -> UserMessageAt {
        UserMessageAt { index, text: text.into() }
    }

    #[test]
    fn the_place_wins_when_its_text_agrees() {
        let listed = entries(&["same", "other", "same"]);
        assert_eq!(entry_for(&listed, &at(2, "same")), Some("e2"));
        assert_eq!(entry_for(&listed, &at(0, "same")), Some("e0"));
    }

    #[test]
    fn a_message_counted_differently_is_found_by_its_text() {
        let listed = entries(&["one", "two", "three"]);
        assert_eq!(entry_for(&listed, &at(1, "three")), Some("e2"));
        assert_eq!(entry_for(&listed, &at(2, "one")), Some("e0"));
    }

    #[test]
    fn without_its_text_the_place_alone_decides_and_past_the_end_nothing_does() {
        let listed = entries(&["one", "two"]);
        assert_eq!(entry_for(&listed, &at(1, "edited elsewhere")), Some("e1"));
        assert_eq!(entry_for(&listed, &at(2, "gone")), None);
    }
}
