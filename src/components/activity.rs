//! The activity line between the transcript and the composer: what the running agent is doing ("Retrying 2/3 in
//! 4 s", "Compacting context…"), or "Reconnecting…" while the page re-attaches. It exists only while a run does.

use leptos::prelude::*;

use crate::app::Link;

#[component]
pub fn ActivityLine(
    /// The reducer's label for what the agent is doing.
    #[prop(into)]
    activity: Signal<Option<String>>,
    /// True while a run is active.
    #[prop(into)]
    running: Signal<bool>,
    /// True while output streams into the transcript: the dot holds still, as the output shows the agent at work.
    #[prop(into)]
    output_streaming: Signal<bool>,
    /// The page's connection to the run.
    #[prop(into)]
    link: Signal<Link>,
) -> impl IntoView {
    let label = move || activity_label(activity.get(), running.get(), link.get());
    view! {
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

/// The line's text, and whether it is about the connection rather than the agent; `None` hides the line.
pub fn activity_label(activity: Option<String>, running: bool, link: Link) -> Option<(String, bool)> {
    match link {
        Link::Reconnecting { attempt } if attempt > 1 => Some((format!("Reconnecting… (attempt {attempt})"), true)),
        Link::Reconnecting { .. } => Some(("Reconnecting…".to_owned(), true)),
        Link::Idle | Link::Live if running => Some((activity.unwrap_or_else(|| "Working…".to_owned()), false)),
        Link::Idle | Link::Live => None,
    }
}

#[cfg(test)]
mod tests {
    use super::activity_label;
    use crate::app::Link;

    #[test]
    fn the_line_shows_reconnecting_over_the_agent_and_nothing_without_a_run() {
        let retry = Some("Retrying 2/3 in 4 s".to_owned());
        assert_eq!(activity_label(retry.clone(), true, Link::Live), Some(("Retrying 2/3 in 4 s".into(), false)));
        assert_eq!(activity_label(None, true, Link::Idle), Some(("Working…".into(), false)));
        assert_eq!(
            activity_label(retry.clone(), true, Link::Reconnecting { attempt: 1 }),
            Some(("Reconnecting…".into(), true))
        );
        assert_eq!(
            activity_label(None, false, Link::Reconnecting { attempt: 3 }),
            Some(("Reconnecting… (attempt 3)".into(), true))
        );
        assert_eq!(activity_label(retry, false, Link::Live), None, "no line once the run is over");
        assert_eq!(activity_label(None, false, Link::Idle), None);
    }
}
