//! The chat page's state — the signals the browser client writes and the views read — and the requests the page
//! makes of the client (`client::connect` answers them), with the pure rules the client applies.

use leptos::prelude::*;

use crate::chat_state::ChatSnapshot;
use crate::components::{
    Answer, ChangesLoad, Decision, FileReply, NotifyPermission, Outgoing, OwnSessions, Theme, Upload,
};
use crate::draft::ExportFormat;
use crate::i18n::{Key, LiveText, fill, plural, t};
use crate::protocol::{
    AgentInfo, AgentMode, AgentsResponse, AttachmentLimits, ChatFrame, ForkResponse, ForkedWorkspace, ModelInfo,
    ModelsResponse, RestoreResponse, SearchHit, SessionSummary,
};

/// The page's connection to the run of the session on screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Link {
    /// No run is being followed.
    #[default]
    Idle,
    /// A stream of the run is open.
    Live,
    /// The stream broke off; the page is attaching again (this many attempts so far).
    Reconnecting { attempt: u32 },
}

/// The page's state: what the transcript, the sidebar, the activity line and the composer show.
#[derive(Clone, Copy)]
pub struct PageState {
    /// The page's path (`/` or `/s/{id}`): the session it names is opened (`client::location` keeps it).
    pub path: RwSignal<String>,
    pub chat: RwSignal<ChatSnapshot>,
    pub sessions: RwSignal<Vec<SessionSummary>>,
    pub session_id: RwSignal<Option<String>>,
    /// The last request that failed, shown above the composer.
    pub problem: RwSignal<Option<String>>,
    /// True while the server cannot be reached (the app opened offline, or the server is down): the page says so
    /// and loads what failed again once the server answers.
    pub unreachable: RwSignal<bool>,
    /// What the last request that did something out of sight did (a restore of files), shown above the composer.
    pub notice: RwSignal<Option<LiveText>>,
    /// Text handed to the composer to edit and send (a fork at a user message hands that message back); the
    /// composer takes it and clears it.
    pub handed: RwSignal<Option<String>>,
    pub link: RwSignal<Link>,
    /// The browser's clock (ms since the epoch), ticking slowly for the sidebar's relative times; 0 until hydrated.
    pub now: RwSignal<f64>,
    /// The models the server offers (`GET /api/models`); empty until loaded.
    pub models: RwSignal<Vec<ModelInfo>>,
    /// The model sends name: the one this browser picked last if the server still offers it, else the server's
    /// default; `None` until the list is loaded (the server then uses its default).
    pub model: RwSignal<Option<String>>,
    /// The mode the next message is sent in (the composer's Agent/Plan switch).
    pub mode: RwSignal<AgentMode>,
    /// The theme shown: the one picked in this browser, else the system's.
    pub theme: RwSignal<Theme>,
    /// True when system notifications are on (the setting, with the browser's permission).
    pub notify: RwSignal<bool>,
    pub notify_permission: RwSignal<NotifyPermission>,
    /// Events of runs (finished, failed, waiting) that happened while the user was not looking at their session (the
    /// tab hidden, or another session on screen) and have not been seen since; the tab title shows the count.
    pub unseen: RwSignal<u32>,
    /// The sessions those events happened in, whose rows in the sidebar are marked until they are opened.
    pub unseen_sessions: RwSignal<Vec<String>>,
    /// The hits of the sidebar's search; `None` while nothing is searched for.
    pub search_hits: RwSignal<Option<Vec<SearchHit>>>,
    /// Why this server cannot edit or regenerate messages (`GET /api/models`), if it cannot.
    pub rerun_unavailable: RwSignal<Option<String>>,
    /// What a message may attach on this server (`GET /api/models`).
    pub attachment_limits: RwSignal<AttachmentLimits>,
    /// The agents the server offers (`GET /api/agents`); `None` until loaded.
    pub agents: RwSignal<Option<AgentsResponse>>,
    /// The agent a new chat runs on: the one this browser picked last if the server still offers it, else the
    /// server's default; `None` until the list is loaded (the server then binds its default).
    pub agent: RwSignal<Option<String>>,
}

impl PageState {
    pub fn new(path: String) -> Self {
        PageState {
            session_id: RwSignal::new(super::session_in_path(&path)),
            path: RwSignal::new(path),
            chat: RwSignal::new(ChatSnapshot::default()),
            sessions: RwSignal::new(Vec::new()),
            problem: RwSignal::new(None),
            unreachable: RwSignal::new(false),
            notice: RwSignal::new(None),
            handed: RwSignal::new(None),
            link: RwSignal::new(Link::Idle),
            now: RwSignal::new(0.0),
            models: RwSignal::new(Vec::new()),
            model: RwSignal::new(None),
            mode: RwSignal::new(AgentMode::Agent),
            theme: RwSignal::new(Theme::default()),
            notify: RwSignal::new(false),
            notify_permission: RwSignal::new(NotifyPermission::default()),
            unseen: RwSignal::new(0),
            unseen_sessions: RwSignal::new(Vec::new()),
            search_hits: RwSignal::new(None),
            rerun_unavailable: RwSignal::new(None),
            attachment_limits: RwSignal::new(AttachmentLimits::default()),
            agents: RwSignal::new(None),
            agent: RwSignal::new(None),
        }
    }

    /// The agent of what is on screen (see [`agent_on_screen`]), with what it can do; `None` until that is known.
    pub fn agent_info(self) -> Option<AgentInfo> {
        self.agents.with(|agents| {
            let agents = agents.as_ref()?;
            let name = self.sessions.with(|sessions| {
                self.session_id.with(|current| {
                    self.agent.with(|picked| {
                        agent_on_screen(agents, sessions, current.as_deref(), picked.as_deref()).map(str::to_owned)
                    })
                })
            })?;
            agents.agents.iter().find(|agent| agent.name == name).cloned()
        })
    }

    /// True when the server offers more than one agent: only then does the page name them.
    pub fn several_agents(self) -> bool {
        self.agents.with(|agents| agents.as_ref().is_some_and(|agents| agents.agents.len() > 1))
    }

    /// True while a run is active or the page is re-attaching to one: Stop is offered, sends steer or follow up.
    pub fn busy(self) -> bool {
        self.chat.with(ChatSnapshot::is_running) || self.link.with(|link| *link != Link::Idle)
    }

    /// [`PageState::busy`], read without subscribing (in the client's tasks).
    pub fn busy_untracked(self) -> bool {
        self.chat.with_untracked(ChatSnapshot::is_running) || self.link.with_untracked(|link| *link != Link::Idle)
    }

    /// The attempt the page is on while it re-attaches to the run.
    pub fn reconnecting(self) -> Option<u32> {
        match self.link.get() {
            Link::Reconnecting { attempt } => Some(attempt),
            Link::Idle | Link::Live => None,
        }
    }
}

/// What the page asks of the browser client. The server renders the page once and runs none of them (effects and
/// event handlers run only in the browser); in the browser, `client::connect` makes them.
#[derive(Clone, Copy)]
pub struct PageRequests {
    /// Starts the client once the page is interactive: the sessions list, the models, the clock, and the listeners
    /// that re-attach when the tab comes back or the network returns.
    pub start: Callback<()>,
    /// Shows a session (or, with `None`, a new empty chat): loads its transcript and follows its run if one is
    /// active. Opening the session already shown does nothing.
    pub open: Callback<Option<String>>,
    /// Sends a message: starts a run, or steers or follows up the running one.
    pub send: Callback<Outgoing>,
    /// Fetches the code a send needs, if it is not there: the user is about to write one.
    pub prefetch: Callback<()>,
    pub stop: Callback<()>,
    /// Answers a question card; its `sending` flag is cleared again if the answer was not taken (the problem line
    /// says why); on success the card changes with the run's frames.
    pub answer: Callback<Answer>,
    /// Approves or denies a call waiting for approval, as `answer` does for questions.
    pub decide: Callback<Decision>,
    /// Renames a session: (session id, new title).
    pub rename: Callback<(String, String)>,
    pub delete: Callback<String>,
    /// Sets one of the options the session's agent offers: (option id, value). The new value comes back as an
    /// `agent_options` frame; a refusal is said on the problem line.
    pub set_option: Callback<(String, String)>,
    /// Picks the model later sends run on, and remembers it in this browser.
    pub pick_model: Callback<String>,
    /// Picks the agent the next new chat runs on, and remembers it in this browser.
    pub pick_agent: Callback<String>,
    /// Goes to a session's URL through the router (`None`: a new chat), which then opens it.
    pub go_to: Callback<Option<String>>,
    /// Shows the theme and remembers it in this browser.
    pub set_theme: Callback<Theme>,
    /// Turns system notifications on (asking the browser's permission, so only from a user's gesture) or off, and
    /// remembers the setting in this browser.
    pub set_notify: Callback<bool>,
    /// Searches sessions and messages (an empty query ends the search); the hits land in `search_hits`, an answer
    /// to an older query than the last is dropped.
    pub search: Callback<String>,
    /// Opens a search hit's session, scrolled to its message.
    pub open_hit: Callback<SearchHit>,
    /// Shows the branch through a message (a sibling version the user picked), down to its last message.
    pub show_branch: Callback<String>,
    /// Puts the workspace's files back as they were before a user message ran; `notice` says what changed.
    pub restore: Callback<String>,
    /// Restores the files to before a message, then, if that worked, sends (an edit or a regeneration of it).
    pub restore_then_send: Callback<(String, Outgoing)>,
    /// Forks the session at a message into a new session, and opens that.
    pub fork: Callback<String>,
    /// Lists an agent's own conversations (`GET /api/agents/{name}/conversations`) into the signal.
    pub list_conversations: Callback<(String, RwSignal<OwnSessions>)>,
    /// Opens one of an agent's own conversations as a new session: (agent, conversation id).
    pub open_conversation: Callback<(String, String)>,
    /// Fetches the diff of a run's changes (`GET /api/sessions/{id}/changes/{key}`) into the signal: (the run's
    /// checkpoint key, where it goes).
    pub load_changes: Callback<(String, RwSignal<ChangesLoad>)>,
    /// Lists the workspace paths matching an `@` mention's query (`GET /api/files`) for the session on screen, and
    /// hands the answer to the reply.
    pub find_files: Callback<(String, FileReply)>,
    /// Downloads the session on screen (`GET /api/sessions/{id}/export`), as the sidebar's MD and JSON links do.
    pub export: Callback<ExportFormat>,
    /// Uploads a file attached in the composer (`POST /api/attachments`) and hands the outcome to the reply.
    pub upload: Upload,
}

/// What a fork's files are, for the notice line of the new session (said in the page's language when drawn).
pub fn fork_summary(fork: &ForkResponse) -> LiveText {
    let (workspace, draft) = (fork.workspace.clone(), fork.draft.is_some());
    LiveText::new(move || {
        let files = match &workspace {
            ForkedWorkspace::Shared => t(Key::ForkShared).to_owned(),
            ForkedWorkspace::Copied { restored: Some(restored) } => {
                match restored.changed.len() + restored.removed.len() + restored.recreated.len() {
                    0 => t(Key::ForkCopiedAsThen).to_owned(),
                    n => fill(Key::ForkCopiedPutBack, &[("files", &plural(Key::FilesOne, Key::FilesOther, n as u64))]),
                }
            }
            ForkedWorkspace::Copied { restored: None } => t(Key::ForkCopiedAsNow).to_owned(),
        };
        let draft = if draft { t(Key::ForkDraft) } else { "" };
        fill(Key::Forked, &[("files", &files), ("draft", draft)])
    })
}

/// What a restore did, in a sentence for the notice line (said in the page's language when drawn): counts, and the
/// files left alone by name (a few).
pub fn restore_summary(restored: RestoreResponse) -> LiveText {
    LiveText::new(move || restore_sentence(&restored))
}

fn restore_sentence(restored: &RestoreResponse) -> String {
    let done = [
        (restored.changed.len(), Key::FilesPutBackOne, Key::FilesPutBackOther),
        (restored.removed.len(), Key::FilesRemovedOne, Key::FilesRemovedOther),
        (restored.recreated.len(), Key::FilesBroughtBackOne, Key::FilesBroughtBackOther),
    ];
    let said: Vec<String> =
        done.iter().filter(|(n, ..)| *n > 0).map(|(n, one, other)| plural(*one, *other, *n as u64)).collect();
    let mut summary = if said.is_empty() {
        t(Key::RestoredNothing).to_owned()
    } else {
        fill(Key::Restored, &[("done", &said.join(t(Key::ListSeparator)))])
    };
    if !restored.skipped.is_empty() {
        const NAMED: usize = 3;
        let names: Vec<&str> = restored.skipped.iter().take(NAMED).map(|skipped| skipped.path.as_str()).collect();
        let more = restored.skipped.len().saturating_sub(NAMED);
        let more = if more > 0 { fill(Key::AndMore, &[("n", &more.to_string())]) } else { String::new() };
        summary.push_str(&fill(Key::LeftAlone, &[("names", &names.join(t(Key::ListSeparator))), ("more", &more)]));
    }
    summary
}

/// The model to preselect: the remembered one if the server still offers it, else the server's default.
pub fn preselected_model(models: &ModelsResponse, remembered: Option<&str>) -> String {
    remembered
        .filter(|name| models.models.iter().any(|model| model.name == *name))
        .unwrap_or(&models.default)
        .to_owned()
}

/// The agent to preselect in New chat: the remembered one if the server still offers it, else the server's default.
pub fn preselected_agent(agents: &AgentsResponse, remembered: Option<&str>) -> String {
    remembered
        .filter(|name| agents.agents.iter().any(|agent| agent.name == *name))
        .unwrap_or(&agents.default)
        .to_owned()
}

/// The agent of what is on screen: in New chat (`current` is `None`) the one `picked`, else the session's own, or the
/// server's default for a session not bound yet (it runs on the default); `None` while the session is not listed.
pub fn agent_on_screen<'a>(
    agents: &'a AgentsResponse,
    sessions: &'a [SessionSummary],
    current: Option<&str>,
    picked: Option<&'a str>,
) -> Option<&'a str> {
    match current {
        None => Some(picked.unwrap_or(&agents.default)),
        Some(current) => sessions
            .iter()
            .find(|session| session.session_id == current)
            .map(|session| session.agent.as_deref().unwrap_or(&agents.default)),
    }
}

/// The models a send may pick for `agent`: those of the server's it names, none for an agent that picks its own
/// model, all of them while the agents are not known yet.
pub fn models_of(models: &[ModelInfo], agent: Option<&AgentInfo>) -> Vec<ModelInfo> {
    match agent.map(|agent| agent.models.as_deref()) {
        None => models.to_vec(),
        Some(None) => Vec::new(),
        Some(Some(names)) => models.iter().filter(|model| names.contains(&model.name)).cloned().collect(),
    }
}

/// True when a frame's `seq` leaves a hole after the snapshot's last one. Two streams of one run (a steering
/// send's answer and the run's own stream) may run ahead of each other; applying the one ahead would make the
/// reducer drop the frames in between as already seen. Such frames wait: the stream behind, or a re-attach
/// from the last applied `seq`, brings everything in order.
pub fn skips_ahead(snapshot: &ChatSnapshot, frame: &ChatFrame) -> bool {
    frame.seq().is_some_and(|seq| seq > snapshot.last_seq + 1)
}

#[cfg(test)]
mod tests {
    use super::skips_ahead;
    use super::{agent_on_screen, fork_summary, models_of, preselected_agent, preselected_model, restore_summary};
    use crate::protocol::{AgentInfo, AgentsResponse};
    use crate::protocol::{ForkResponse, ForkedWorkspace, RestoreResponse, SessionStatus, SessionSummary, SkippedFile};
    use leptos::prelude::{Owner, provide_context};

    #[test]
    fn a_fork_says_what_files_it_works_on_and_where_its_message_went() {
        let restored = RestoreResponse {
            changed: vec!["a.txt".into()],
            removed: vec!["b.txt".into()],
            recreated: Vec::new(),
            backup: "restore-backup/1".into(),
            skipped: Vec::new(),
        };
        let session = SessionSummary {
            session_id: "s".into(),
            title: "t (fork)".into(),
            created_at: 0,
            updated_at: 0,
            status: SessionStatus::Idle,
            message_count: 2,
            last_seq: 3,
            usage: None,
            agent: None,
        };
        let copied = ForkResponse {
            session: session.clone(),
            draft: Some("again".into()),
            workspace: ForkedWorkspace::Copied { restored: Some(restored) },
        };
        let summary = fork_summary(&copied);
        assert_eq!(
            summary.text(),
            "Forked into a new session. It has its own copy of the workspace, with 2 files put back as at that point. \
             The message you forked at is in the message box, to edit and send."
        );
        // Kept as how to say it: read in another language, the same notice says it in that one.
        let owner = Owner::new();
        let chinese = owner.with(|| {
            provide_context(crate::i18n::Lang::ZhCn);
            summary.text()
        });
        assert_eq!(
            chinese,
            "已分叉为新会话。它有自己的工作区副本，其中 2 个文件已恢复为那一刻的状态。分叉处的消息已放入输入框，可编辑后发送。"
        );
        let shared = ForkResponse { session, draft: None, workspace: ForkedWorkspace::Shared };
        assert_eq!(
            fork_summary(&shared).text(),
            "Forked into a new session. It works in the same shared workspace as the session it came from: their \
             runs change the same files."
        );
    }

    #[test]
    fn a_restore_is_told_in_counts_with_what_was_left_alone() {
        let mut restored = RestoreResponse {
            changed: vec!["a.txt".into()],
            removed: vec!["b.txt".into(), "c.txt".into()],
            recreated: Vec::new(),
            backup: "restore-backup/1".into(),
            skipped: Vec::new(),
        };
        assert_eq!(restore_summary(restored.clone()).text(), "Files restored: 1 file put back, 2 files removed.");
        restored.skipped =
            (0..5).map(|i| SkippedFile { path: format!("big{i}.bin"), reason: "large".into() }).collect();
        assert_eq!(
            restore_summary(restored.clone()).text(),
            "Files restored: 1 file put back, 2 files removed. Left alone (not in the checkpoint): big0.bin, \
             big1.bin, big2.bin and 2 more."
        );
        let nothing = RestoreResponse { changed: Vec::new(), removed: Vec::new(), skipped: Vec::new(), ..restored };
        assert_eq!(restore_summary(nothing).text(), "Files restored: nothing had changed since that message.");
    }
    use crate::chat_state::{ChatSnapshot, apply};
    use crate::protocol::{ChatFrame, DeltaFrame, ModelInfo, ModelsResponse};

    #[test]
    fn the_remembered_model_is_preselected_only_while_the_server_offers_it() {
        let model = |name: &str| ModelInfo {
            name: name.into(),
            provider: "scripted".into(),
            model: "demo".into(),
            context_window: 1000,
            images: true,
        };
        let models = ModelsResponse {
            default: "a".into(),
            models: vec![model("a"), model("b")],
            rerun_unavailable: None,
            attachment_limits: Default::default(),
        };
        assert_eq!(preselected_model(&models, None), "a");
        assert_eq!(preselected_model(&models, Some("b")), "b");
        assert_eq!(preselected_model(&models, Some("gone")), "a", "a model no longer configured");
    }

    fn agents() -> AgentsResponse {
        let agent = |name: &str, models: Option<Vec<String>>| AgentInfo {
            name: name.into(),
            models,
            rerun_unavailable: None,
            compact_unavailable: None,
            steer_unavailable: None,
            open_unavailable: None,
        };
        AgentsResponse {
            default: "agent".into(),
            agents: vec![agent("agent", Some(vec!["a".into()])), agent("pi", None), agent("opencode", Some(vec![]))],
        }
    }

    #[test]
    fn new_chat_preselects_the_remembered_agent_only_while_the_server_offers_it() {
        assert_eq!(preselected_agent(&agents(), None), "agent");
        assert_eq!(preselected_agent(&agents(), Some("pi")), "pi");
        assert_eq!(preselected_agent(&agents(), Some("goose")), "agent", "an agent no longer offered");
    }

    #[test]
    fn the_agent_on_screen_is_the_sessions_own_the_default_for_an_unbound_one_or_the_pick_in_new_chat() {
        let session = |id: &str, agent: Option<&str>| SessionSummary {
            session_id: id.into(),
            title: String::new(),
            created_at: 0,
            updated_at: 0,
            status: SessionStatus::Idle,
            message_count: 0,
            last_seq: 0,
            usage: None,
            agent: agent.map(str::to_owned),
        };
        let (agents, sessions) = (agents(), [session("bound", Some("pi")), session("old", None)]);
        assert_eq!(agent_on_screen(&agents, &sessions, Some("bound"), Some("opencode")), Some("pi"));
        assert_eq!(agent_on_screen(&agents, &sessions, Some("old"), Some("opencode")), Some("agent"));
        assert_eq!(agent_on_screen(&agents, &sessions, Some("unlisted"), Some("opencode")), None);
        assert_eq!(agent_on_screen(&agents, &sessions, None, Some("opencode")), Some("opencode"));
        assert_eq!(agent_on_screen(&agents, &sessions, None, None), Some("agent"), "nothing picked yet");
    }

    #[test]
    fn an_agent_offers_the_models_it_names_and_one_that_picks_its_own_offers_none() {
        let model = |name: &str| ModelInfo {
            name: name.into(),
            provider: "scripted".into(),
            model: "demo".into(),
            context_window: 1000,
            images: true,
        };
        let models = [model("a"), model("b")];
        let names = |models: Vec<ModelInfo>| models.into_iter().map(|model| model.name).collect::<Vec<_>>();
        let agents = agents();
        assert_eq!(names(models_of(&models, Some(&agents.agents[0]))), ["a"]);
        assert!(models_of(&models, Some(&agents.agents[1])).is_empty(), "pi picks its own");
        assert_eq!(names(models_of(&models, None)), ["a", "b"], "before the agents are known");
    }

    fn delta(seq: u64) -> ChatFrame {
        ChatFrame::Delta(DeltaFrame { seq: Some(seq), text: format!("{seq} "), message_id: None })
    }

    #[test]
    fn only_the_next_seq_or_an_older_one_is_applied_in_order() {
        let mut snapshot = ChatSnapshot::default();
        assert!(!skips_ahead(&snapshot, &delta(1)), "a new session starts at 1");
        assert!(skips_ahead(&snapshot, &delta(3)), "2 is missing");
        apply(&mut snapshot, &delta(1));
        assert!(!skips_ahead(&snapshot, &delta(1)), "an old frame is left to the reducer, which ignores it");
        assert!(!skips_ahead(&snapshot, &delta(2)));
        assert!(skips_ahead(&snapshot, &delta(3)));
        assert!(!skips_ahead(&snapshot, &ChatFrame::Ping), "frames without a seq are never held back");
    }
}
