//! What an agent offers in a session beside the conversation (issue 38, item 3): its own slash commands and its
//! configuration options (model, mode, thought level …), as the `agent_options` frame carries them. A state, not a
//! delta: each frame says all of it, and the latest one is what the session offers.

use serde::{Deserialize, Serialize};

use super::frame::Seq;

/// The agent's commands and options as it last said them. Logged, so a reload, a second instance and a replay of
/// the log all show the same.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentOptionsFrame {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
    /// The slash commands the agent runs when a prompt starts with `/name`.
    #[serde(default)]
    pub commands: Vec<AgentCommand>,
    /// Its settings of one value among choices, each with the value now in force.
    #[serde(default)]
    pub options: Vec<AgentOption>,
}

impl AgentOptionsFrame {
    /// The option of `id`, if the agent offers it.
    pub fn option(&self, id: &str) -> Option<&AgentOption> {
        self.options.iter().find(|option| option.id == id)
    }

    /// The agent's command of `name` (as typed after `/`, any case).
    pub fn command(&self, name: &str) -> Option<&AgentCommand> {
        self.commands.iter().find(|command| command.name.eq_ignore_ascii_case(name))
    }
}

/// A slash command of the agent's own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCommand {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// What to type after the name, when the command takes text (ACP's `input.hint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// One setting the agent offers: a value chosen among `choices`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentOption {
    /// What setting it names it by (`configId` in ACP).
    pub id: String,
    /// What the picker is labelled.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub category: OptionCategory,
    /// The value in force.
    pub current: String,
    pub choices: Vec<OptionChoice>,
}

impl AgentOption {
    pub fn offers(&self, value: &str) -> bool {
        self.choices.iter().any(|choice| choice.value == value)
    }
}

/// One value an option may take.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OptionChoice {
    pub value: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// What kind of setting an option is, as ACP names them; the page puts the model and mode pickers first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum OptionCategory {
    Model,
    Mode,
    ThoughtLevel,
    /// None said.
    #[default]
    Unnamed,
    Other(String),
}

impl OptionCategory {
    pub fn as_str(&self) -> &str {
        match self {
            OptionCategory::Model => "model",
            OptionCategory::Mode => "mode",
            OptionCategory::ThoughtLevel => "thought_level",
            OptionCategory::Unnamed => "",
            OptionCategory::Other(name) => name,
        }
    }
}

impl From<String> for OptionCategory {
    fn from(text: String) -> OptionCategory {
        match text.as_str() {
            "model" => OptionCategory::Model,
            "mode" => OptionCategory::Mode,
            "thought_level" => OptionCategory::ThoughtLevel,
            "" => OptionCategory::Unnamed,
            _ => OptionCategory::Other(text),
        }
    }
}

impl From<OptionCategory> for String {
    fn from(category: OptionCategory) -> String {
        category.as_str().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_keep_words_they_do_not_know() {
        let option: AgentOption = serde_json::from_str(
            r#"{"id":"x","name":"X","category":"_vendor_speed","current":"a","choices":[{"value":"a","name":"A"}]}"#,
        )
        .unwrap();
        assert_eq!(option.category, OptionCategory::Other("_vendor_speed".into()));
        assert!(option.offers("a") && !option.offers("b"));
        let json = serde_json::to_string(&option).unwrap();
        assert!(json.contains(r#""category":"_vendor_speed""#), "{json}");
        let model: OptionCategory = serde_json::from_str(r#""model""#).unwrap();
        assert_eq!(model, OptionCategory::Model);
    }
}
