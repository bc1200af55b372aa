//! What an ACP agent offers beside the conversation, kept as it says it: its slash commands
//! (`available_commands_update`) and its session's configuration options (the `configOptions` of `session/new`,
//! `session/load` and `session/set_config_option`'s answers, `config_option_update`), with the older `modes`
//! (`session/set_mode`, `current_mode_update`) and the draft `models` (`session/set_model`) read as options of their
//! own where the agent has no config option of that category. Pure: the session feeds it what the agent says and
//! sends the requests it makes; the mapping is in docs/decisions.md.

use serde_json::{Value, json};

use super::schema::{AvailableCommand, SessionUpdate};
use crate::protocol::{AgentCommand, AgentOption, AgentOptionsFrame, OptionCategory, OptionChoice};
use crate::runtime::event::AgentEvent;
use crate::runtime::seam::OptionError;

/// How an option is set on the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Setter {
    /// `session/set_config_option {configId, value}`: the protocol's config options.
    ConfigOption,
    /// `session/set_mode {modeId}`: the older session modes.
    Mode,
    /// `session/set_model {modelId}`: the draft session models.
    Model,
}

/// The option chatwire makes of the older `modes`, and of the draft `models`.
const MODE_ID: &str = "mode";
const MODEL_ID: &str = "model";

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Offered {
    commands: Vec<AgentCommand>,
    /// Each with how it is set.
    options: Vec<(AgentOption, Setter)>,
    /// Whether the agent has said anything of it yet: an agent that offers nothing gets no frame.
    known: bool,
}

/// A request that sets an option on the agent: its method, and its params but the session id.
#[derive(Debug, Clone, PartialEq)]
pub struct SetRequest {
    pub method: &'static str,
    pub params: Value,
}

impl Offered {
    /// Reads the answer to `session/new`, `session/load`, `session/resume` or `session/set_config_option`: the
    /// options it carries (all of them), the older `modes` and the draft `models`.
    pub fn answered(&mut self, answer: &Value) {
        if let Some(options) = answer.get("configOptions") {
            self.config_options(options);
        }
        if let Some(modes) = answer.get("modes").filter(|modes| modes.is_object()) {
            let choices = choices_of(modes.get("availableModes"), "id");
            let current = text(modes, "currentModeId");
            self.legacy(MODE_ID, "Mode", OptionCategory::Mode, Setter::Mode, current, choices);
        }
        if let Some(models) = answer.get("models").filter(|models| models.is_object()) {
            let choices = choices_of(models.get("availableModels"), "modelId");
            let current = text(models, "currentModelId");
            self.legacy(MODEL_ID, "Model", OptionCategory::Model, Setter::Model, current, choices);
        }
    }

    /// Takes an update that concerns what the agent offers; false for any other, which the turn translates.
    pub fn update(&mut self, update: &SessionUpdate) -> bool {
        match update {
            SessionUpdate::AvailableCommands(commands) => {
                self.commands = commands.iter().map(command).collect();
                self.known = true;
            }
            SessionUpdate::ConfigOptions(options) => self.config_options(options),
            SessionUpdate::CurrentMode(mode) => {
                let set_by_mode = self.options.iter_mut().find(|(_, setter)| *setter == Setter::Mode);
                if let Some((option, _)) = set_by_mode {
                    option.current = mode.clone();
                }
            }
            SessionUpdate::AgentMessageChunk(_)
            | SessionUpdate::AgentThoughtChunk(_)
            | SessionUpdate::UserMessageChunk(_)
            | SessionUpdate::ToolCall(_)
            | SessionUpdate::ToolCallUpdate(_)
            | SessionUpdate::Plan(_)
            | SessionUpdate::Usage { .. }
            | SessionUpdate::Other(_) => return false,
        }
        true
    }

    /// The request that sets option `id` to `value`, if the agent offers both.
    pub fn request(&self, id: &str, value: &str) -> Result<SetRequest, OptionError> {
        let Some((option, setter)) = self.options.iter().find(|(option, _)| option.id == id) else {
            return Err(OptionError::UnknownOption {
                id: id.to_owned(),
                offered: self.options.iter().map(|(option, _)| option.id.clone()).collect(),
            });
        };
        if !option.offers(value) {
            return Err(OptionError::UnknownValue {
                id: id.to_owned(),
                value: value.to_owned(),
                choices: option.choices.iter().map(|choice| choice.value.clone()).collect(),
            });
        }
        Ok(match setter {
            Setter::ConfigOption => {
                SetRequest { method: "session/set_config_option", params: json!({"configId": id, "value": value}) }
            }
            Setter::Mode => SetRequest { method: "session/set_mode", params: json!({"modeId": value}) },
            Setter::Model => SetRequest { method: "session/set_model", params: json!({"modelId": value}) },
        })
    }

    /// The agent accepted `value` for option `id`: `session/set_mode` and `session/set_model` answer with nothing, and
    /// an agent may not send the update, so the value is taken as set. (`session/set_config_option` answers with
    /// every option, which [`Self::answered`] reads.)
    pub fn accepted(&mut self, id: &str, value: &str) {
        if let Some((option, _)) = self.options.iter_mut().find(|(option, _)| option.id == id) {
            option.current = value.to_owned();
        }
    }

    /// The value the agent has for option `id`.
    pub fn current(&self, id: &str) -> Option<&str> {
        self.options.iter().find(|(option, _)| option.id == id).map(|(option, _)| option.current.as_str())
    }

    /// Everything it offers, as the event the mapper makes an `agent_options` frame of; `None` before the agent said
    /// anything of it.
    pub fn event(&self) -> Option<AgentEvent> {
        self.known.then(|| {
            AgentEvent::AgentOptions(AgentOptionsFrame {
                seq: None,
                commands: self.commands.clone(),
                options: self.options.iter().map(|(option, _)| option.clone()).collect(),
            })
        })
    }

    /// The protocol's config options, all of them (an agent always sends the whole list). Those of type `select`
    /// are kept; an option of another type (none is in the stable protocol yet) is left out.
    fn config_options(&mut self, options: &Value) {
        let read: Vec<AgentOption> = options.as_array().into_iter().flatten().filter_map(config_option).collect();
        // The config options replace the older modes and models when they cover them, as the protocol asks.
        let covers = |category: &OptionCategory| read.iter().any(|option| &option.category == category);
        let (modes, models) = (covers(&OptionCategory::Mode), covers(&OptionCategory::Model));
        self.options.retain(|(_, setter)| match setter {
            Setter::ConfigOption => false,
            Setter::Mode => !modes,
            Setter::Model => !models,
        });
        self.options.extend(read.into_iter().map(|option| (option, Setter::ConfigOption)));
        self.known = true;
    }

    /// An option made of the older `modes` or the draft `models`, unless a config option covers its category.
    fn legacy(
        &mut self,
        id: &str,
        name: &str,
        category: OptionCategory,
        setter: Setter,
        current: String,
        choices: Vec<OptionChoice>,
    ) {
        self.known = true;
        if choices.is_empty()
            || self.options.iter().any(|(option, kept)| *kept == Setter::ConfigOption && option.category == category)
        {
            return;
        }
        let option =
            AgentOption { id: id.to_owned(), name: name.to_owned(), description: None, category, current, choices };
        match self.options.iter_mut().find(|(_, kept)| *kept == setter) {
            Some(kept) => *kept = (option, setter),
            None => self.options.push((option, setter)),
        }
    }
}

fn command(command: &AvailableCommand) -> AgentCommand {
    AgentCommand {
        name: command.name.clone(),
        description: command.description.clone(),
        hint: command.input.as_ref().and_then(|input| input.hint.clone()),
    }
}

fn text(value: &Value, key: &str) -> String {
    value.get(key).and_then(Value::as_str).unwrap_or_default().to_owned()
}

/// One config option of type `select`: its choices flat, or in groups (`{group, name, options}`), which the
/// picker shows one after the other.
fn config_option(option: &Value) -> Option<AgentOption> {
    if option.get("type").and_then(Value::as_str).is_some_and(|kind| kind != "select") {
        return None;
    }
    let id = option.get("id")?.as_str()?.to_owned();
    let mut choices = Vec::new();
    for choice in option.get("options").and_then(Value::as_array).into_iter().flatten() {
        match choice.get("options") {
            Some(group) => choices.extend(choices_of(Some(group), "value")),
            None => choices.extend(choices_of(Some(&Value::Array(vec![choice.clone()])), "value")),
        }
    }
    Some(AgentOption {
        name: option.get("name").and_then(Value::as_str).unwrap_or(&id).to_owned(),
        id,
        description: option.get("description").and_then(Value::as_str).map(str::to_owned),
        category: OptionCategory::from(text(option, "category")),
        current: option.get("currentValue").map(value_text).unwrap_or_default(),
        choices,
    })
}

/// The choices of a list whose items name their value under `key`.
fn choices_of(items: Option<&Value>, key: &str) -> Vec<OptionChoice> {
    items
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|item| {
            let value = item.get(key).map(value_text)?;
            Some(OptionChoice {
                name: item.get("name").and_then(Value::as_str).unwrap_or(&value).to_owned(),
                value,
                description: item.get("description").and_then(Value::as_str).map(str::to_owned),
            })
        })
        .collect()
}

/// A value as the picker and the request carry it: ids are strings in the protocol, but a number is read too.
fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// opencode 1.18.33's `session/new` answer, shortened (tests/fixtures/acp/NOTES.md §3).
    fn opencode_opened() -> Value {
        json!({"sessionId": "ses_1", "configOptions": [
            {"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": "fake/fake-model",
             "options": [{"value": "fake/fake-model", "name": "Fake/Fake Model"},
                         {"value": "fake/fake-model-2", "name": "Fake/Fake Model Two"}]},
            {"id": "effort", "name": "Effort", "description": "Available effort levels for this model",
             "category": "thought_level", "type": "select", "currentValue": "low",
             "options": [{"value": "low", "name": "Low"}, {"value": "high", "name": "High"}]},
            {"id": "mode", "name": "Session Mode", "category": "mode", "type": "select", "currentValue": "build",
             "options": [{"value": "build", "name": "build", "description": "The default agent."},
                         {"value": "plan", "name": "plan"}]}]})
    }

    fn frame(offered: &Offered) -> AgentOptionsFrame {
        match offered.event() {
            Some(AgentEvent::AgentOptions(frame)) => frame,
            other => panic!("expected agent options, got {other:?}"),
        }
    }

    #[test]
    fn nothing_is_offered_before_the_agent_says_so() {
        assert_eq!(Offered::default().event(), None);
    }

    #[test]
    fn config_options_become_options_set_with_set_config_option() {
        let mut offered = Offered::default();
        offered.answered(&opencode_opened());
        let options = frame(&offered).options;
        let ids: Vec<&str> = options.iter().map(|option| option.id.as_str()).collect();
        assert_eq!(ids, ["model", "effort", "mode"]);
        assert_eq!(options[1].category, OptionCategory::ThoughtLevel);
        assert_eq!(options[1].description.as_deref(), Some("Available effort levels for this model"));
        assert_eq!(options[0].current, "fake/fake-model");
        assert_eq!(options[0].choices[1].name, "Fake/Fake Model Two");
        assert_eq!(
            offered.request("model", "fake/fake-model-2").unwrap(),
            SetRequest {
                method: "session/set_config_option",
                params: json!({"configId": "model", "value": "fake/fake-model-2"})
            }
        );
    }

    #[test]
    fn an_unknown_option_or_value_is_refused_naming_what_there_is() {
        let mut offered = Offered::default();
        offered.answered(&opencode_opened());
        let error = offered.request("speed", "fast").unwrap_err();
        assert_eq!(
            error,
            OptionError::UnknownOption {
                id: "speed".into(),
                offered: vec!["model".into(), "effort".into(), "mode".into()]
            }
        );
        let error = offered.request("effort", "extreme").unwrap_err();
        assert!(error.to_string().contains("low, high"), "{error}");
    }

    #[test]
    fn an_update_replaces_the_whole_list_and_drops_what_it_no_longer_has() {
        let mut offered = Offered::default();
        offered.answered(&opencode_opened());
        // After switching to a model without reasoning, opencode's list has no `effort`.
        let update = SessionUpdate::parse(&json!({"sessionUpdate": "config_option_update", "configOptions": [
            {"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": "fake/fake-model-2",
             "options": [{"value": "fake/fake-model", "name": "A"}, {"value": "fake/fake-model-2", "name": "B"}]}]}))
        .unwrap();
        assert!(offered.update(&update));
        let options = frame(&offered).options;
        assert_eq!(options.len(), 1);
        assert_eq!(offered.current("model"), Some("fake/fake-model-2"));
    }

    #[test]
    fn commands_keep_their_input_hint() {
        let mut offered = Offered::default();
        let update = SessionUpdate::parse(&json!({"sessionUpdate": "available_commands_update", "availableCommands": [
            {"name": "review", "description": "review changes", "input": {"hint": "commit|branch|pr"}},
            {"name": "init", "description": "guided AGENTS.md setup"}]}))
        .unwrap();
        assert!(offered.update(&update));
        let commands = frame(&offered).commands;
        assert_eq!(commands[0].hint.as_deref(), Some("commit|branch|pr"));
        assert_eq!(
            commands[1],
            AgentCommand { name: "init".into(), description: "guided AGENTS.md setup".into(), hint: None }
        );
        let chunk = SessionUpdate::parse(
            &json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}),
        );
        assert!(!offered.update(&chunk.unwrap()));
    }

    #[test]
    fn older_modes_and_draft_models_are_options_set_their_own_way() {
        let mut offered = Offered::default();
        offered.answered(&json!({"sessionId": "s",
            "modes": {"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]},
            "models": {"currentModelId": "m1", "availableModels": [{"modelId": "m1", "name": "One"}, {"modelId": "m2", "name": "Two"}]}}));
        assert_eq!(
            offered.request("mode", "code").unwrap(),
            SetRequest { method: "session/set_mode", params: json!({"modeId": "code"}) }
        );
        assert_eq!(
            offered.request("model", "m2").unwrap(),
            SetRequest { method: "session/set_model", params: json!({"modelId": "m2"}) }
        );
        assert!(offered.update(&SessionUpdate::CurrentMode("code".into())));
        assert_eq!(offered.current("mode"), Some("code"));
        offered.accepted("model", "m2");
        assert_eq!(offered.current("model"), Some("m2"));
        // An agent with both says config options win (the protocol asks clients to prefer them).
        offered.answered(&opencode_opened());
        let ids: Vec<String> = frame(&offered).options.into_iter().map(|option| option.id).collect();
        assert_eq!(ids, ["model", "effort", "mode"]);
        assert_eq!(offered.request("mode", "plan").unwrap().method, "session/set_config_option");
    }

    #[test]
    fn grouped_choices_are_listed_one_group_after_the_other() {
        let mut offered = Offered::default();
        offered.answered(
            &json!({"configOptions": [{"id": "model", "name": "Model", "type": "select", "currentValue": "b",
            "options": [{"group": "g1", "name": "First", "options": [{"value": "a", "name": "A"}]},
                        {"group": "g2", "name": "Second", "options": [{"value": "b", "name": "B"}]}]},
            {"id": "fast", "name": "Fast", "type": "boolean", "currentValue": true}]}),
        );
        let options = frame(&offered).options;
        assert_eq!(options.len(), 1, "a boolean option is not a picker (yet)");
        let values: Vec<&str> = options[0].choices.iter().map(|choice| choice.value.as_str()).collect();
        assert_eq!(values, ["a", "b"]);
        assert_eq!(options[0].category, OptionCategory::Unnamed);
    }
}
