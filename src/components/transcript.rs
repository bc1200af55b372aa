//! The transcript: keyed message rows that follow new output while the reader is at the bottom, or an empty state
//! with prompt suggestions and, for a returning user, the sessions they worked in last.

use leptos::either::Either;
use leptos::prelude::*;

use super::client_only::{ClientOnly, IntoRowView};
#[cfg(not(feature = "hydrate"))]
use super::groups::GroupPlace;
use super::groups::{
    GroupHeights, GroupLayout, UNMEASURED_MESSAGE_HEIGHT, anchor_group, estimate_moved, groups_in_view, groups_near,
    next_near,
};
use super::message::{message_row, render_markdown, sync_rows, track_message_rows};
use super::rows::{TranscriptRows, track_parser};
use super::sidebar::relative_time;
use crate::chat_state::ChatSnapshot;
use crate::i18n::{Key, t, tr};
use crate::protocol::{ChatMessagePart, SessionSummary, fixed};

const SUGGESTIONS: [Key; 3] = [Key::SuggestExplain, Key::SuggestFix, Key::SuggestReadme];

/// How many of the latest sessions the empty state offers to go back to; the sidebar lists them all.
const RECENT_SESSIONS: usize = 5;

/// Messages are built into the page in groups of this many (a question and its answer), and only the groups near
/// the viewport are, one more each frame: the others are empty boxes of the height they had when last drawn, so a
/// session of thousands of messages opens as fast as a short one, a fling builds a little each frame, and the scroll
/// bar does not jump (docs/decisions.md, "Long sessions").
const MESSAGE_GROUP: usize = 2;

/// The last groups are always built: the answer that streams is in them, and a session opens at its end.
const ALWAYS_BUILT: usize = 2;

/// How close to the bottom, in pixels, still counts as "at the bottom" (a wheel notch or rounding).
const BOTTOM_SLACK: i32 = 48;

#[component]
pub fn Transcript(
    /// The session as the reducer has built it.
    chat: ReadSignal<ChatSnapshot>,
    /// Called with a suggestion's text when the user picks one.
    on_suggestion: Callback<String>,
    /// Every session, newest first: the empty state offers the latest.
    #[prop(into)]
    sessions: Signal<Vec<SessionSummary>>,
    /// The session on screen, which the empty state does not offer to open.
    #[prop(into)]
    current: Signal<Option<String>>,
    /// The browser's clock in ms since the epoch, for the sessions' ages.
    #[prop(into)]
    now: Signal<f64>,
) -> impl IntoView {
    // The groups built because they are near the viewport (the last `ALWAYS_BUILT` are built anyway), sorted; the
    // signals that say which groups are built; and the height each group had when it was last drawn.
    let near = StoredValue::new(Vec::<usize>::new());
    let flags = StoredValue::new(BuiltFlags::default());
    let heights = StoredValue::new(GroupHeights::new(UNMEASURED_MESSAGE_HEIGHT * MESSAGE_GROUP as f64));
    // The height every box of a group never drawn has: one CSS variable on the rows, so that when the average of the
    // drawn groups moves, one write moves them all (not an effect per box) and the scroll bar is right from the open.
    let unmeasured_height = StoredValue::new(heights.with_value(GroupHeights::unmeasured_estimate));
    let is_built = move |group: usize, count: usize| {
        group + ALWAYS_BUILT >= count || near.with_value(|near| near.binary_search(&group).is_ok())
    };
    // Which of a snapshot's messages (by position) are built, as the rows' sync asks: their text is parsed now,
    // the others' when their group is built.
    let built_in = move |snapshot: &ChatSnapshot| {
        let count = snapshot.messages.len().div_ceil(MESSAGE_GROUP);
        move |message: usize| is_built(message / MESSAGE_GROUP, count)
    };
    let rows = StoredValue::new(chat.with_untracked(|snapshot| {
        let mut rows = TranscriptRows::default();
        sync_rows(&mut rows, snapshot, &built_in(snapshot));
        rows
    }));
    let message_rows = RwSignal::from(rows.with_value(TranscriptRows::view));
    let scroller = NodeRef::<leptos::html::Section>::new();
    let rows_box = NodeRef::<leptos::html::Div>::new();
    let give_unmeasured_height = move |height: f64| {
        unmeasured_height.set_value(height);
        if let Some(rows) = rows_box.get_untracked() {
            set_unmeasured_height(&rows, height);
        }
    };
    // Whether the view sticks to new output: true until the reader scrolls up, again once they are back at the bottom.
    let follow = RwSignal::new(true);
    let last_scroll_top = StoredValue::new(0);
    // Where the view's own scroll to the bottom left it: the scroll event that echoes it places no groups (below).
    let own_scroll_top = StoredValue::new(None::<i32>);
    let stick_to_bottom = move |element: &leptos::web_sys::HtmlElement| {
        element.set_scroll_top(element.scroll_height());
        own_scroll_top.set_value(Some(element.scroll_top()));
    };
    let group_count_now = move || message_rows.with_untracked(|rows| rows.len().div_ceil(MESSAGE_GROUP));
    // Brings the groups' signals to what is built now: after the groups near changed, or the number of groups did.
    let refresh_built = move || {
        let count = group_count_now();
        let near_now = near.get_value();
        flags.update_value(|flags| {
            flags.refresh(near_now.into_iter().chain(count.saturating_sub(ALWAYS_BUILT)..count), |group| {
                is_built(group, count)
            })
        });
    };
    // Once the views have applied what just changed (their effects run as tasks on the microtask queue, before the
    // frame renders), in that same frame: a scroll one animation frame later made the browser lay out and paint twice.
    let scroll_to_bottom = move || {
        leptos::task::spawn_local(async move {
            leptos::task::tick().await;
            if follow.get_untracked()
                && let Some(element) = scroller.get_untracked()
            {
                stick_to_bottom(&element);
            }
        })
    };
    // What keeps the reader's place: the first group that reaches below the viewport's top `top`, and its distance
    // from it.
    let anchor_at = |layout: &GroupBoxes, top: f64| {
        anchor_group(layout, top).and_then(|group| Some((group, layout.place(group)?.top - top)))
    };
    // After groups above the viewport changed height: the view back at the bottom while it follows, else the anchor
    // at its distance from the viewport's top again.
    let keep_place =
        move |element: &leptos::web_sys::HtmlElement, layout: &GroupBoxes, anchor: Option<(usize, f64)>| {
            if follow.get_untracked() {
                stick_to_bottom(element);
                return;
            }
            let Some((group, offset)) = anchor else { return };
            let Some(place) = layout.place(group) else { return };
            let wanted_top = place.top - offset;
            // The browser's own scroll anchoring may have done it already.
            if (f64::from(element.scroll_top()) - wanted_top).abs() > 1.0 {
                element.set_scroll_top(wanted_top.round() as i32);
            }
        };
    // Builds the groups near the viewport and lets go of the others, keeping what the reader looks at in place: the
    // first group that reaches into the viewport keeps its distance from the viewport's top, whatever was built or
    // let go above it. Each build forces a layout, so groups are built only by the frame's own placing (`may_build`,
    // an animation frame callback asked for while groups are missing), one a frame (`next_near`); a scroll event, or
    // rows added, let go of what is far and ask for that placing.
    let place_again = Trigger::new();
    let place_pending = StoredValue::new(false);
    let place_groups = move |may_build: bool| {
        let (Some(element), Some(rows)) = (scroller.get_untracked(), rows_box.get_untracked()) else { return };
        let layout = GroupBoxes::of(&rows);
        let count = layout.len();
        let lit = flags.with_value(|flags| flags.lit.clone());
        heights.update_value(|heights| {
            for group in lit {
                if let Some(height) = layout.drawn_height(group) {
                    heights.record(group, height);
                }
            }
        });
        let estimate = heights.with_value(GroupHeights::unmeasured_estimate);
        if estimate_moved(unmeasured_height.get_value(), estimate) {
            // Boxes above the viewport change height too: what the reader looks at stays where it is.
            let anchor = anchor_at(&layout, f64::from(element.scroll_top()));
            give_unmeasured_height(estimate);
            keep_place(&element, &layout, anchor);
        }
        let top = f64::from(element.scroll_top());
        let view_height = f64::from(element.client_height());
        let wanted = groups_near(&layout, top, view_height);
        let in_view = groups_in_view(&layout, top, view_height);
        let always = count.saturating_sub(ALWAYS_BUILT)..count;
        let (next, more) = near.with_value(|near| next_near(near, wanted, in_view, always, may_build));
        if more && !place_pending.get_value() {
            place_pending.set_value(true);
            request_animation_frame(move || {
                place_pending.set_value(false);
                place_again.notify();
            });
        }
        if near.with_value(|near| *near == next) {
            return;
        }
        let anchor = anchor_at(&layout, top);
        near.set_value(next);
        refresh_built();
        leptos::task::spawn_local(async move {
            leptos::task::tick().await;
            if let (Some(element), Some(rows)) = (scroller.get_untracked(), rows_box.get_untracked()) {
                keep_place(&element, &GroupBoxes::of(&rows), anchor);
            }
        });
    };
    Effect::new(move |_| {
        place_again.track();
        untrack(|| place_groups(true));
    });
    // The rows grow after they changed, too: markdown blocks are laid out at their size only once on screen, the
    // highlighter colours code when its chunk arrives. While following, the view stays at the bottom through that.
    on_resize(rows_box, move || {
        if follow.get_untracked()
            && let Some(element) = scroller.get_untracked()
            && element.scroll_top() + element.client_height() < element.scroll_height() - 1
        {
            stick_to_bottom(&element);
        }
    });
    // Stream frames reach the snapshot at most every other animation frame (`client::FrameBatcher`), so the rows
    // are brought up to date as the snapshot changes, in the same frame: one markdown re-parse of the open tail,
    // one DOM update, layout and paint per batch. A hidden tab waits for its next animation frame, when shown.
    let sync_scheduled = StoredValue::new(false);
    let sync_rows = move || {
        sync_scheduled.set_value(false);
        let report = chat
            .with_untracked(|snapshot| rows.try_update_value(|rows| sync_rows(rows, snapshot, &built_in(snapshot))))
            .unwrap_or_default();
        if report.session_replaced {
            near.set_value(Vec::new());
            heights.update_value(GroupHeights::clear);
            give_unmeasured_height(heights.with_value(GroupHeights::unmeasured_estimate));
            if !follow.get_untracked() {
                follow.set(true);
            }
        }
        let changed = report.rows_changed || !report.parts_updated.is_empty();
        if changed && follow.get_untracked() {
            scroll_to_bottom();
        }
        if report.rows_changed {
            refresh_built();
            leptos::task::spawn_local(async move {
                leptos::task::tick().await;
                place_groups(false);
            });
        }
    };
    Effect::new(move |_| {
        chat.track();
        // Text that came before the markdown parser's chunk is rendered when the chunk arrives, and a session whose
        // rows' chunk came after it is drawn then.
        track_parser();
        track_message_rows();
        if sync_scheduled.get_value() {
            return;
        }
        if page_is_hidden() {
            sync_scheduled.set_value(true);
            request_animation_frame(sync_rows);
        } else {
            // Only the snapshot (and the parser's arrival) should re-run this effect, not what the sync reads.
            untrack(sync_rows);
        }
    });
    let on_scroll = move |_| {
        let Some(element) = scroller.get_untracked() else { return };
        let top = element.scroll_top();
        let at_bottom = element.scroll_height() - top - element.client_height() <= BOTTOM_SLACK;
        // Content growing below never moves `scrollTop`; only the reader scrolling up does.
        let scrolled_up = top < last_scroll_top.get_value();
        last_scroll_top.set_value(top);
        let next = if at_bottom {
            true
        } else if scrolled_up {
            false
        } else {
            follow.get_untracked()
        };
        if next != follow.get_untracked() {
            follow.set(next);
        }
        // The view following new output scrolls on every redraw; the groups near the bottom are placed when rows
        // are added (`sync_rows`), and the streamed answer is in the last groups, which are always built. Placing
        // them again on each echo measured every group for nothing.
        let echo = own_scroll_top.get_value() == Some(top);
        own_scroll_top.set_value(None);
        if !(echo && next) {
            place_groups(false);
        }
    };
    let jump_to_latest = move |_| {
        follow.set(true);
        scroll_to_bottom();
    };
    let unshown_error = move || {
        chat.with(|c| {
            let error = c.last_error.as_ref()?;
            let shown = c
                .messages
                .last()
                .and_then(|m| m.parts.last())
                .is_some_and(|part| matches!(part, ChatMessagePart::Error(shown) if &shown.message == error));
            (!shown).then(|| error.clone())
        })
    };
    // The session's, not the rows': a session is not an empty chat while the rows' chunk is on its way.
    let has_messages = move || chat.with(|chat| !chat.messages.is_empty());
    // The rows or the empty state are drawn again only when that changes, not at every new message.
    let shows_messages = Memo::new(move |_| has_messages());
    let group_count = move || message_rows.with(|rows| rows.len().div_ceil(MESSAGE_GROUP));
    // A group keeps its place while messages are added after it, so its finished rows are never rebuilt.
    let group_rows = move |group: usize| {
        message_rows
            .with(|rows| rows.iter().skip(group * MESSAGE_GROUP).take(MESSAGE_GROUP).cloned().collect::<Vec<_>>())
    };
    // What finds an unbuilt group's messages: a search hit scrolls its box into view, which builds it.
    let group_message_ids = move |group: usize| {
        message_rows.with(|rows| {
            rows.iter()
                .skip(group * MESSAGE_GROUP)
                .take(MESSAGE_GROUP)
                .map(|row| row.id.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
    };

    view! {
        <section
            class="transcript"
            data-testid="transcript"
            aria-label=tr(Key::Conversation)
            node_ref=scroller
            on:scroll=on_scroll
            on:click=move |event| copy(event, chat)
        >
            // Not `Show`: its fallback is an `AnyView`, which keeps a second (async) hydration of the empty state.
            {move || if shows_messages.get() {
                // The server renders an empty transcript; the rows are only ever built in the browser.
                Either::Left(ClientOnly(view! {
                    <div class="transcript__rows" node_ref=rows_box style=(UNMEASURED_HEIGHT_VARIABLE, pixels(unmeasured_height.get_value()))>
                    <For each=move || 0..group_count() key=|group| *group let:group>
                        {
                            let count = group_count_now();
                            let built =
                                flags.try_update_value(|flags| flags.flag(group, is_built(group, count))).unwrap_or_default();
                            move || if built.get() {
                                let messages = group * MESSAGE_GROUP..(group + 1) * MESSAGE_GROUP;
                                untrack(|| chat.with(|snapshot| {
                                    rows.try_update_value(|rows| render_markdown(rows, snapshot, messages))
                                }));
                                view! {
                                    <div class="message-group">
                                        <For each=move || group_rows(group) key=|row| row.id.clone() let:row>
                                            {message_row(row)}
                                        </For>
                                    </div>
                                }
                                .into_row_view()
                            } else {
                                view! {
                                    <div
                                        class="message-group message-group--unbuilt"
                                        data-messages=move || group_message_ids(group)
                                        style:height=heights.with_value(|heights| heights.measured(group)).map_or_else(
                                            || UNMEASURED_HEIGHT.to_owned(),
                                            pixels,
                                        )
                                    ></div>
                                }
                                .into_row_view()
                            }
                        }
                    </For>
                    </div>
                }))
            } else {
                Either::Right(view! { <EmptyState on_suggestion sessions current now/> })
            }}
            {move || unshown_error().map(|message| view! { <p class="part part--error transcript__error" role="alert">{message}</p> })}
            <Show when=move || !follow.get() && has_messages()>
                <button class="button jump-latest" type="button" data-testid="jump-latest" on:click=jump_to_latest>
                    {tr(Key::JumpToLatest)}
                </button>
            </Show>
        </section>
    }
}

/// One signal per group saying whether it is built, and which are: a change of what is near the viewport sets only
/// the groups it builds or lets go, rather than waking a memo per group of thousands.
#[derive(Default)]
struct BuiltFlags {
    flags: Vec<ArcRwSignal<bool>>,
    /// The groups whose signal says built, sorted.
    lit: Vec<usize>,
}

impl BuiltFlags {
    /// The signal of `group`, saying `built`.
    fn flag(&mut self, group: usize, built: bool) -> ArcRwSignal<bool> {
        while self.flags.len() <= group {
            self.flags.push(ArcRwSignal::new(false));
        }
        self.set(group, built);
        self.flags[group].clone()
    }

    fn set(&mut self, group: usize, built: bool) {
        let flag = &self.flags[group];
        if flag.get_untracked() != built {
            flag.set(built);
        }
        match (built, self.lit.binary_search(&group)) {
            (true, Err(at)) => self.lit.insert(at, group),
            (false, Ok(at)) => {
                self.lit.remove(at);
            }
            (true, Ok(_)) | (false, Err(_)) => {}
        }
    }

    /// Brings the signals of the groups lit and of `candidates` to `is_built`; no other can have changed.
    fn refresh(&mut self, candidates: impl Iterator<Item = usize>, is_built: impl Fn(usize) -> bool) {
        let groups: Vec<usize> =
            self.lit.iter().copied().chain(candidates).filter(|group| *group < self.flags.len()).collect();
        for group in groups {
            self.set(group, is_built(group));
        }
    }
}

#[cfg(not(feature = "hydrate"))]
struct GroupBoxes;

/// The server renders no rows: there is nothing to place.
#[cfg(not(feature = "hydrate"))]
impl GroupBoxes {
    fn of(_rows: &leptos::web_sys::HtmlDivElement) -> Self {
        GroupBoxes
    }

    fn drawn_height(&self, _group: usize) -> Option<f64> {
        None
    }
}

#[cfg(not(feature = "hydrate"))]
impl GroupLayout for GroupBoxes {
    fn len(&self) -> usize {
        0
    }

    fn place(&self, _group: usize) -> Option<GroupPlace> {
        None
    }
}

/// The rows' CSS variable that every box standing in for a group never drawn takes its height from. Set through the
/// style object, not the `style` attribute, which the page's content security policy does not let scripts write.
const UNMEASURED_HEIGHT_VARIABLE: &str = "--unmeasured-group-height";
const UNMEASURED_HEIGHT: &str = "var(--unmeasured-group-height)";

fn pixels(height: f64) -> String {
    format!("{}px", fixed(height, 2))
}

/// Gives every box of a group never drawn in `rows` the height `height`.
fn set_unmeasured_height(rows: &leptos::web_sys::HtmlDivElement, height: f64) {
    let _ = leptos::web_sys::HtmlElement::style(rows).set_property(UNMEASURED_HEIGHT_VARIABLE, &pixels(height));
}

/// Calls `on_resize` after each layout in which the element `target` holds changed its size.
fn on_resize(target: NodeRef<leptos::html::Div>, on_resize: impl Fn() + 'static) {
    #[cfg(feature = "hydrate")]
    browser::on_resize(target, on_resize);
    #[cfg(not(feature = "hydrate"))]
    let _ = (target, on_resize);
}

/// Whether the tab is in the background, where the browser draws nothing.
fn page_is_hidden() -> bool {
    #[cfg(feature = "hydrate")]
    return document().hidden();
    #[cfg(not(feature = "hydrate"))]
    false
}

/// The transcript's Copy buttons, on one listener: a code block's copies its code, a message's copies the message
/// as Markdown (`crate::export`).
fn copy(event: leptos::ev::MouseEvent, chat: ReadSignal<ChatSnapshot>) {
    #[cfg(feature = "hydrate")]
    browser::copy(event, chat);
    #[cfg(not(feature = "hydrate"))]
    let _ = (event, chat);
}

#[cfg(feature = "hydrate")]
use browser::GroupBoxes;

#[cfg(feature = "hydrate")]
mod browser {
    use std::time::Duration;

    use js_sys::{Function, Promise, Reflect};
    use leptos::prelude::*;
    use wasm_bindgen::{JsCast, JsValue, closure::Closure};
    use wasm_bindgen_futures::JsFuture;
    use web_sys::Element;

    use crate::chat_state::ChatSnapshot;
    use crate::components::groups::{GroupLayout, GroupPlace};
    use crate::i18n::{Key, t};

    /// The message groups' boxes: the children of the rows' box. Offsets are from the transcript, which is the
    /// groups' offset parent (`position: relative`). The box's own children, not a search of the transcript by
    /// class: that walked every element of every message on each scroll event, since the streamed text keeps
    /// changing the tree (0.4 ms a scroll at 64 KB of markdown); and read one at a time, as a binary search asks.
    pub struct GroupBoxes(web_sys::HtmlCollection);

    impl GroupBoxes {
        pub fn of(rows: &leptos::web_sys::HtmlDivElement) -> Self {
            GroupBoxes(rows.children())
        }

        fn element(&self, group: usize) -> Option<web_sys::HtmlElement> {
            self.0.item(u32::try_from(group).ok()?)?.dyn_into().ok()
        }

        /// The group's height, if it is built rather than a box standing in for it.
        pub fn drawn_height(&self, group: usize) -> Option<f64> {
            let element = self.element(group)?;
            let built = !element.class_list().contains("message-group--unbuilt");
            built.then(|| f64::from(element.offset_height()))
        }
    }

    impl GroupLayout for GroupBoxes {
        fn len(&self) -> usize {
            self.0.length() as usize
        }

        fn place(&self, group: usize) -> Option<GroupPlace> {
            let element = self.element(group)?;
            Some(GroupPlace { top: f64::from(element.offset_top()), height: f64::from(element.offset_height()) })
        }
    }

    pub fn on_resize(target: NodeRef<leptos::html::Div>, on_resize: impl Fn() + 'static) {
        let callback = Closure::<dyn FnMut()>::new(on_resize);
        let Ok(observer) = web_sys::ResizeObserver::new(callback.as_ref().unchecked_ref()) else { return };
        let observing = StoredValue::new_local((observer, callback));
        // The element comes and goes with the transcript's rows (an empty session shows the empty state instead).
        Effect::new(move |_| {
            let Some(element) = target.get() else { return };
            observing.with_value(|(observer, _)| {
                observer.disconnect();
                observer.observe(&element);
            });
        });
        on_cleanup(move || {
            observing.try_with_value(|(observer, _)| observer.disconnect());
        });
    }

    pub fn copy(event: leptos::ev::MouseEvent, chat: ReadSignal<ChatSnapshot>) {
        let Some(button) = event
            .target()
            .and_then(|target| target.dyn_into::<Element>().ok())
            .and_then(|element| element.closest("[data-copy], [data-copy-message]").ok().flatten())
        else {
            return;
        };
        let text = if button.has_attribute("data-copy-message") {
            let Some(id) =
                button.closest("[data-message-id]").ok().flatten().and_then(|m| m.get_attribute("data-message-id"))
            else {
                return;
            };
            let markdown = chat.with_untracked(|snapshot| {
                snapshot.messages.iter().find(|message| message.id == id).map(crate::export::message_markdown)
            });
            let Some(markdown) = markdown else { return };
            markdown
        } else {
            let Some(code) =
                button.closest(".code").ok().flatten().and_then(|block| block.query_selector("code").ok().flatten())
            else {
                return;
            };
            code.text_content().unwrap_or_default()
        };
        leptos::task::spawn_local(async move {
            let label = match write_clipboard(&text).await {
                Ok(()) => t(Key::Copied),
                Err(_) => t(Key::CopyFailed),
            };
            button.set_text_content(Some(label));
            set_timeout(move || button.set_text_content(Some(t(Key::Copy))), Duration::from_millis(1500));
        });
    }

    /// `navigator.clipboard.writeText`, which exists only in secure contexts (https or localhost).
    async fn write_clipboard(text: &str) -> Result<(), JsValue> {
        let navigator = Reflect::get(&window(), &"navigator".into())?;
        let clipboard = Reflect::get(&navigator, &"clipboard".into())?;
        let write: Function = Reflect::get(&clipboard, &"writeText".into())?.dyn_into()?;
        let promise: Promise = write.call1(&clipboard, &text.into())?.dyn_into()?;
        JsFuture::from(promise).await.map(drop)
    }
}

#[component]
fn EmptyState(
    on_suggestion: Callback<String>,
    sessions: Signal<Vec<SessionSummary>>,
    current: Signal<Option<String>>,
    now: Signal<f64>,
) -> impl IntoView {
    let recent = Memo::new(move |_| {
        let current = current.get();
        sessions.with(|sessions| {
            sessions
                .iter()
                .filter(|session| current.as_deref() != Some(session.session_id.as_str()))
                .take(RECENT_SESSIONS)
                .cloned()
                .collect::<Vec<_>>()
        })
    });
    view! {
        <div class="empty-state">
            <h2>{tr(Key::EmptyHeading)}</h2>
            <ul class="empty-state__suggestions">
                {SUGGESTIONS
                    .iter()
                    .map(|key| {
                        view! {
                            <li>
                                <button class="button button--suggestion" type="button" on:click=move |_| on_suggestion.run(t(*key).to_owned())>
                                    {tr(*key)}
                                </button>
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
            // The sessions are loaded after the page: the server lists none, so nothing of the list is hydrated.
            {ClientOnly(view! {
            <Show when=move || recent.with(|recent| !recent.is_empty())>
                <section class="empty-state__recent" aria-labelledby="recent-sessions" data-testid="recent-sessions">
                    <h3 id="recent-sessions">{tr(Key::RecentHeading)}</h3>
                    <ul>
                        <For
                            each=move || recent.get()
                            key=|session| (session.session_id.clone(), session.title.clone(), session.updated_at)
                            let:session
                        >
                            <li>
                                <a class="empty-state__session" href=format!("/s/{}", session.session_id)>
                                    <span class="empty-state__title">{session.title}</span>
                                    <time class="empty-state__time">{move || relative_time(session.updated_at, now.get())}</time>
                                </a>
                            </li>
                        </For>
                    </ul>
                </section>
            </Show>
            })}
        </div>
    }
}
