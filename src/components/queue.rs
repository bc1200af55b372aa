//! The queue chips above the composer: messages waiting to be delivered to the running agent, from `queue` frames.

use leptos::prelude::*;

use crate::i18n::{Key, t, tr};
use crate::protocol::QueueFrame;

#[component]
pub fn QueueChips(
    /// The session's queue as the last `queue` frame left it.
    #[prop(into)]
    queue: Signal<QueueFrame>,
    /// Why the session's agent takes no steering, when it does not: its queued messages are its next prompts.
    #[prop(into)]
    no_steering: Signal<Option<String>>,
) -> impl IntoView {
    let chips = move || {
        let steer = if no_steering.with(Option::is_some) { t(Key::Next) } else { t(Key::Steer) };
        queue.with(|q| {
            let steering = q.steering.iter().map(|text| (steer, text.clone()));
            let follow_up = q.follow_up.iter().map(|text| (t(Key::FollowUp), text.clone()));
            steering.chain(follow_up).collect::<Vec<_>>()
        })
    };
    view! {
        <Show when=move || queue.with(|q| !q.steering.is_empty() || !q.follow_up.is_empty())>
            <ul class="queue" data-testid="queue" aria-label=tr(Key::WaitingDelivery)>
                {move || {
                    chips()
                        .into_iter()
                        .map(|(kind, text)| {
                            let title = text.clone();
                            view! {
                                <li class="queue__chip" title=title>
                                    <span class="queue__kind">{kind}</span>
                                    <span class="queue__text">{text}</span>
                                </li>
                            }
                        })
                        .collect_view()
                }}
            </ul>
            {move || no_steering.get().map(|why| view! { <p class="queue__note" data-testid="queue-note">{why}</p> })}
        </Show>
    }
}
