//! What the quick switcher lists — the sessions, most recently changed first, then the actions (new chat, the
//! other mode, each configured model, the other theme) — and how a typed query ranks them (see [`crate::fuzzy`]).

use crate::components::sidebar::status_label;
use crate::fuzzy::fuzzy_match;
use crate::i18n::{Key, fill, t};
use crate::protocol::{AgentMode, ModelInfo, SessionSummary};

/// At most this many entries are shown; a query narrows dozens of sessions down.
pub const MAX_SHOWN: usize = 50;

/// The page's colour theme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Theme {
    #[default]
    Light,
    Dark,
}

impl Theme {
    pub fn as_str(self) -> &'static str {
        match self {
            Theme::Light => "light",
            Theme::Dark => "dark",
        }
    }

    pub fn parse(text: &str) -> Option<Theme> {
        match text {
            "light" => Some(Theme::Light),
            "dark" => Some(Theme::Dark),
            _ => None,
        }
    }

    /// The theme the toggle switches to.
    pub fn other(self) -> Theme {
        match self {
            Theme::Light => Theme::Dark,
            Theme::Dark => Theme::Light,
        }
    }
}

/// What choosing an entry does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PaletteChoice {
    /// Opens the session with this id.
    Open(String),
    NewChat,
    /// Sets the mode of the next messages.
    Mode(AgentMode),
    /// Picks the model of the next messages, by name.
    Model(String),
    Theme(Theme),
}

/// Whether an entry goes somewhere or does something; shown beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    Session,
    Action,
}

impl EntryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::Session => "session",
            EntryKind::Action => "action",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            EntryKind::Session => t(Key::KindSession),
            EntryKind::Action => t(Key::KindAction),
        }
    }
}

/// One line of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaletteEntry {
    pub choice: PaletteChoice,
    /// What the query is matched against, and what the line says.
    pub label: String,
    pub kind: EntryKind,
    /// A word after the label: "current", "running", a model's provider.
    pub detail: Option<String>,
}

/// An entry the query matched, with the label's matched characters (char indexes) to highlight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ranked {
    pub entry: PaletteEntry,
    pub positions: Vec<usize>,
}

/// What the page knows that the entries come from.
pub struct PaletteSource<'a> {
    pub sessions: &'a [SessionSummary],
    /// The session on screen.
    pub current: Option<&'a str>,
    pub models: &'a [ModelInfo],
    /// The model the next message runs on.
    pub model: Option<&'a str>,
    pub mode: AgentMode,
    /// The theme shown now.
    pub theme: Theme,
}

/// Every entry, in the order shown for an empty query: sessions most recently changed first, except that the one on
/// screen comes after the others (so Enter on an empty query goes back to the previous session, as Alt+Tab does),
/// then the actions.
pub fn entries(source: &PaletteSource<'_>) -> Vec<PaletteEntry> {
    let mut sessions: Vec<&SessionSummary> = source.sessions.iter().collect();
    let is_current = |session: &SessionSummary| source.current == Some(session.session_id.as_str());
    sessions.sort_by(|a, b| is_current(a).cmp(&is_current(b)).then(b.updated_at.cmp(&a.updated_at)));
    let mut entries: Vec<PaletteEntry> = sessions
        .into_iter()
        .map(|session| PaletteEntry {
            choice: PaletteChoice::Open(session.session_id.clone()),
            label: if session.title.is_empty() { t(Key::NewChat).to_owned() } else { session.title.clone() },
            kind: EntryKind::Session,
            detail: if is_current(session) {
                Some(t(Key::Current).to_owned())
            } else {
                Some(status_label(session.status)).filter(|label| !label.is_empty()).map(str::to_owned)
            },
        })
        .collect();
    let action =
        |choice, label: String, detail: Option<String>| PaletteEntry { choice, label, kind: EntryKind::Action, detail };
    entries.push(action(PaletteChoice::NewChat, t(Key::NewChat).to_owned(), None));
    let other_mode = match source.mode {
        AgentMode::Agent => AgentMode::Plan,
        AgentMode::Plan => AgentMode::Agent,
    };
    let mode_label = match other_mode {
        AgentMode::Agent => t(Key::SwitchToAgentMode),
        AgentMode::Plan => t(Key::SwitchToPlanMode),
    };
    entries.push(action(PaletteChoice::Mode(other_mode), mode_label.to_owned(), None));
    // With one model there is nothing to pick, as in the composer.
    if source.models.len() > 1 {
        for model in source.models {
            let detail = if source.model == Some(model.name.as_str()) {
                t(Key::Current).to_owned()
            } else {
                format!("{} · {}", model.provider, model.model)
            };
            entries.push(action(
                PaletteChoice::Model(model.name.clone()),
                fill(Key::UseModel, &[("name", &model.name)]),
                Some(detail),
            ));
        }
    }
    let theme = source.theme.other();
    let theme_label = match theme {
        Theme::Light => t(Key::SwitchToLight),
        Theme::Dark => t(Key::SwitchToDark),
    };
    entries.push(action(PaletteChoice::Theme(theme), theme_label.to_owned(), None));
    entries
}

/// The entries `query` matches, best first (equal scores keep the order of [`entries`]), at most [`MAX_SHOWN`].
pub fn rank(entries: Vec<PaletteEntry>, query: &str) -> Vec<Ranked> {
    let mut matched: Vec<(i32, Ranked)> = entries
        .into_iter()
        .filter_map(|entry| {
            let found = fuzzy_match(query, &entry.label)?;
            Some((found.score, Ranked { entry, positions: found.positions }))
        })
        .collect();
    matched.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
    matched.into_iter().take(MAX_SHOWN).map(|(_, ranked)| ranked).collect()
}

/// The label cut into runs of matched (`true`) and unmatched characters, for highlighting.
pub fn segments(label: &str, positions: &[usize]) -> Vec<(String, bool)> {
    let mut runs: Vec<(String, bool)> = Vec::new();
    let mut marked = positions.iter().peekable();
    for (index, c) in label.chars().enumerate() {
        let hit = marked.next_if_eq(&&index).is_some();
        match runs.last_mut() {
            Some((run, was)) if *was == hit => run.push(c),
            Some(_) | None => runs.push((c.to_string(), hit)),
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::{EntryKind, PaletteChoice, PaletteSource, Theme, entries, rank, segments};
    use crate::protocol::{AgentMode, ModelInfo, SessionStatus, SessionSummary};

    fn session(id: &str, title: &str, updated_at: u64, status: SessionStatus) -> SessionSummary {
        SessionSummary {
            session_id: id.into(),
            title: title.into(),
            created_at: 0,
            updated_at,
            status,
            message_count: 1,
            last_seq: 1,
            usage: None,
            agent: None,
        }
    }

    fn model(name: &str) -> ModelInfo {
        ModelInfo {
            name: name.into(),
            provider: "openai".into(),
            model: format!("{name}-1"),
            context_window: 1000,
            images: true,
        }
    }

    fn labels(source: &PaletteSource<'_>, query: &str) -> Vec<String> {
        rank(entries(source), query).into_iter().map(|ranked| ranked.entry.label).collect()
    }

    #[test]
    fn sessions_come_most_recent_first_with_the_one_on_screen_last_then_the_actions() {
        let sessions = [
            session("a", "Alpha report", 10, SessionStatus::Idle),
            session("b", "", 30, SessionStatus::Running),
            session("c", "Gamma release", 20, SessionStatus::Idle),
        ];
        let source = PaletteSource {
            sessions: &sessions,
            current: Some("b"),
            models: &[],
            model: None,
            mode: AgentMode::Agent,
            theme: Theme::Light,
        };
        let all = entries(&source);
        let shown: Vec<(&str, EntryKind, Option<&str>)> =
            all.iter().map(|e| (e.label.as_str(), e.kind, e.detail.as_deref())).collect();
        assert_eq!(
            shown,
            [
                ("Gamma release", EntryKind::Session, None),
                ("Alpha report", EntryKind::Session, None),
                ("New chat", EntryKind::Session, Some("current")),
                ("New chat", EntryKind::Action, None),
                ("Switch to Plan mode", EntryKind::Action, None),
                ("Switch to dark theme", EntryKind::Action, None),
            ]
        );
        assert_eq!(all[2].choice, PaletteChoice::Open("b".into()));
        assert_eq!(all[4].choice, PaletteChoice::Mode(AgentMode::Plan));
        assert_eq!(all[5].choice, PaletteChoice::Theme(Theme::Dark));
    }

    #[test]
    fn a_running_session_says_so() {
        let sessions = [session("a", "Alpha", 10, SessionStatus::Running)];
        let source = PaletteSource {
            sessions: &sessions,
            current: None,
            models: &[],
            model: None,
            mode: AgentMode::Plan,
            theme: Theme::Dark,
        };
        let all = entries(&source);
        assert_eq!(all[0].detail.as_deref(), Some("running"));
        assert!(
            all.iter().any(|e| e.label == "Switch to Agent mode" && e.choice == PaletteChoice::Mode(AgentMode::Agent))
        );
        assert!(all.iter().any(|e| e.label == "Switch to light theme"));
    }

    #[test]
    fn each_configured_model_is_an_action_when_there_are_several() {
        let models = [model("local"), model("gpt")];
        let mut source = PaletteSource {
            sessions: &[],
            current: None,
            models: &models,
            model: Some("gpt"),
            mode: AgentMode::Agent,
            theme: Theme::Light,
        };
        let picks: Vec<(String, Option<String>)> = entries(&source)
            .into_iter()
            .filter(|e| matches!(e.choice, PaletteChoice::Model(_)))
            .map(|e| (e.label, e.detail))
            .collect();
        assert_eq!(
            picks,
            [
                ("Use model local".to_owned(), Some("openai · local-1".to_owned())),
                ("Use model gpt".to_owned(), Some("current".to_owned())),
            ]
        );
        let single = [model("local")];
        source.models = &single;
        assert!(!entries(&source).iter().any(|e| matches!(e.choice, PaletteChoice::Model(_))));
    }

    #[test]
    fn a_query_keeps_what_it_matches_best_first() {
        let sessions = [
            session("a", "Alpha report", 30, SessionStatus::Idle),
            session("b", "Beta notes", 20, SessionStatus::Idle),
            session("c", "Gamma release", 10, SessionStatus::Idle),
        ];
        let source = PaletteSource {
            sessions: &sessions,
            current: None,
            models: &[],
            model: None,
            mode: AgentMode::Agent,
            theme: Theme::Light,
        };
        assert_eq!(labels(&source, "gmr"), ["Gamma release"]);
        assert_eq!(labels(&source, "plan"), ["Switch to Plan mode"]);
        let ranked = rank(entries(&source), "rel");
        assert_eq!(ranked[0].entry.label, "Gamma release");
        assert_eq!(ranked[0].positions, [6, 7, 8], "the characters to highlight");
        assert_eq!(labels(&source, "zzz"), Vec::<String>::new());
        assert_eq!(labels(&source, "").len(), 6, "an empty query lists everything in order");
    }

    #[test]
    fn matched_characters_are_cut_into_runs() {
        let runs = |label: &str, positions: &[usize]| -> Vec<(String, bool)> { segments(label, positions) };
        assert_eq!(
            runs("Gamma release", &[0, 6, 7]),
            [("G".to_owned(), true), ("amma ".to_owned(), false), ("re".to_owned(), true), ("lease".to_owned(), false)]
        );
        assert_eq!(runs("été", &[1]), [("é".to_owned(), false), ("t".to_owned(), true), ("é".to_owned(), false)]);
        assert_eq!(runs("abc", &[]), [("abc".to_owned(), false)]);
        assert_eq!(runs("", &[]), Vec::<(String, bool)>::new());
    }

    #[test]
    fn the_list_is_capped() {
        let sessions: Vec<SessionSummary> =
            (0..80).map(|i| session(&format!("s{i}"), &format!("Session {i}"), i, SessionStatus::Idle)).collect();
        let source = PaletteSource {
            sessions: &sessions,
            current: None,
            models: &[],
            model: None,
            mode: AgentMode::Agent,
            theme: Theme::Light,
        };
        let ranked = rank(entries(&source), "");
        assert_eq!(ranked.len(), super::MAX_SHOWN);
        assert_eq!(ranked[0].entry.label, "Session 79", "the most recent first");
    }
}
