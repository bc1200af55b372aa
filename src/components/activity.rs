//! The activity line between the transcript and the composer: what the running agent is doing, in words
//! ("Retrying 2/3 in 4 s", "Compacting context…"), or "Reconnecting…" while the page re-attaches. It exists only
//! while a run does. Beside it, for screen readers only, a line that says how the run ended: the transcript itself
//! is not a live region, so streamed text is not read out token by token.

use leptos::prelude::*;

use crate::chat_state::Activity;
use crate::i18n::{Key, fill, t};
use crate::protocol::LifecycleName;

#[component]
pub fn ActivityLine(
    /// What the agent is doing, as the reducer keeps it.
    #[prop(into)]
    activity: Signal<Option<Activity>>,
    /// True while a run is active.
    #[prop(into)]
    running: Signal<bool>,
    /// True while output streams into the transcript: the dot holds still, as the output shows the agent at work.
    #[prop(into)]
    output_streaming: Signal<bool>,
    /// While the page re-attaches to the run, the attempt it is on; `None` while it is attached or has no run.
    #[prop(into)]
    reconnecting: Signal<Option<u32>>,
    /// The error the last run ended with, if it failed.
    #[prop(into)]
    last_error: Signal<Option<String>>,
) -> impl IntoView {
    let label = move || activity.with(|activity| activity_label(activity.as_ref(), running.get(), reconnecting.get()));
    // How the last run ended (`Some(error)` if it failed), kept rather than its words, which follow the language.
    let ending = RwSignal::new(None::<Option<String>>);
    Effect::new(move |was_running: Option<bool>| {
        let now_running = running.get();
        match (was_running, now_running) {
            (Some(true), false) => ending.set(Some(last_error.get_untracked())),
            (_, true) => ending.set(None),
            (None | Some(false), false) => {}
        }
        now_running
    });
    view! {
        <p class="visually-hidden" data-testid="announcer" role="status" aria-live="polite">
            {move || ending.with(|ended| ended.as_ref().map(|error| run_ending(error.as_deref())))}
        </p>
        <p class="activity" data-testid="activity" role="status" aria-live="polite">
            {move || {
                label()
                    .map(|(text, reconnecting)| {
                        view! {
                            <span
                                class="activity__dot"
                                class:activity__dot--warning=reconnecting
                                class:activity__dot--still=move || output_streaming.get() && !reconnecting
                                aria-hidden="true"
                            ></span>
                            <span class="activity__text">{text}</span>
                        }
                    })
            }}
        </p>
    }
}

/// What a screen reader is told when a run ends.
pub fn run_ending(error: Option<&str>) -> String {
    match error {
        Some(error) => fill(Key::RunFailed, &[("error", error)]),
        None => t(Key::AnswerComplete).to_owned(),
    }
}

/// The line's text, and whether it is about the connection rather than the agent; `None` hides the line.
pub fn activity_label(activity: Option<&Activity>, running: bool, reconnecting: Option<u32>) -> Option<(String, bool)> {
    match reconnecting {
        Some(attempt) if attempt > 1 => Some((fill(Key::ReconnectingAttempt, &[("n", &attempt.to_string())]), true)),
        Some(_) => Some((t(Key::Reconnecting).to_owned(), true)),
        None if running => Some((activity.map_or_else(|| t(Key::Working).to_owned(), describe), false)),
        None => None,
    }
}

/// What the agent is doing, in words.
fn describe(activity: &Activity) -> String {
    match activity {
        Activity::Working => t(Key::Working).to_owned(),
        Activity::Phase { status: Some(status), .. } => status.clone(),
        Activity::Phase { phase: LifecycleName::MessageStart, status: None } => t(Key::ThinkingNow).to_owned(),
        Activity::Phase {
            phase:
                LifecycleName::AgentStart
                | LifecycleName::AgentEnd
                | LifecycleName::AgentSettled
                | LifecycleName::TurnStart
                | LifecycleName::TurnEnd
                | LifecycleName::MessageEnd,
            status: None,
        } => t(Key::Working).to_owned(),
        Activity::Compacting => t(Key::Compacting).to_owned(),
        Activity::Retrying { attempt, max_attempts, delay_ms } => {
            // Whole seconds, rounded up: "in 0 s" would read as if the retry were already under way.
            let (attempt, most) = (attempt.to_string(), max_attempts.to_string());
            let seconds = delay_ms.div_ceil(1000).to_string();
            fill(Key::Retrying, &[("attempt", &attempt), ("most", &most), ("seconds", &seconds)])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{activity_label, run_ending};
    use crate::chat_state::Activity;
    use crate::protocol::LifecycleName;

    #[test]
    fn a_run_ending_is_told_in_words() {
        assert_eq!(run_ending(None), "The answer is complete.");
        assert_eq!(
            run_ending(Some("the model returned an empty response")),
            "The run failed: the model returned an empty response"
        );
    }

    fn words(activity: Activity) -> Option<String> {
        activity_label(Some(&activity), true, None).map(|(text, _)| text)
    }

    #[test]
    fn each_activity_has_its_words() {
        assert_eq!(words(Activity::Working).as_deref(), Some("Working…"));
        assert_eq!(words(Activity::Compacting).as_deref(), Some("Compacting context…"));
        let retry = Activity::Retrying { attempt: 2, max_attempts: 3, delay_ms: 3500 };
        assert_eq!(words(retry).as_deref(), Some("Retrying 2/3 in 4 s"));
        let soon = Activity::Retrying { attempt: 1, max_attempts: 3, delay_ms: 200 };
        assert_eq!(words(soon).as_deref(), Some("Retrying 1/3 in 1 s"));
        let thinking = Activity::Phase { phase: LifecycleName::MessageStart, status: None };
        assert_eq!(words(thinking).as_deref(), Some("Thinking…"));
        for phase in
            [LifecycleName::AgentStart, LifecycleName::TurnStart, LifecycleName::TurnEnd, LifecycleName::MessageEnd]
        {
            assert_eq!(words(Activity::Phase { phase, status: None }).as_deref(), Some("Working…"), "{phase:?}");
        }
        let status = Activity::Phase { phase: LifecycleName::MessageStart, status: Some("Indexing 3 files".into()) };
        assert_eq!(words(status).as_deref(), Some("Indexing 3 files"), "the runtime's own words win");
        assert_eq!(activity_label(None, true, None), Some(("Working…".into(), false)), "a run with nothing said yet");
    }

    #[test]
    fn the_line_shows_reconnecting_over_the_agent_and_nothing_without_a_run() {
        let retry = Activity::Retrying { attempt: 2, max_attempts: 3, delay_ms: 4000 };
        assert_eq!(activity_label(Some(&retry), true, Some(1)), Some(("Reconnecting…".into(), true)));
        assert_eq!(activity_label(None, false, Some(3)), Some(("Reconnecting… (attempt 3)".into(), true)));
        assert_eq!(activity_label(Some(&retry), false, None), None, "no line once the run is over");
        assert_eq!(activity_label(None, false, None), None);
    }
}
