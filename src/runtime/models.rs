//! The models a server offers: each a name the browser picks by, with the agent that runs on it.

use std::sync::Arc;

use super::agent::Agent;

/// One model the user can pick.
pub struct ModelEntry {
    /// What the model picker shows and `POST /api/chat` names as `model`.
    pub name: String,
    /// `scripted`, `openai` or `anthropic`.
    pub provider: String,
    /// The model id the provider knows (e.g. `qwen2.5-coder`).
    pub model: String,
    pub context_window: u64,
    pub agent: Arc<Agent>,
}

/// The configured models; the first is the default.
pub struct ModelCatalog {
    entries: Vec<ModelEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    #[error("no model is configured")]
    Empty,
    #[error("the model name {0:?} is configured twice")]
    Duplicate(String),
}

impl ModelCatalog {
    pub fn new(entries: Vec<ModelEntry>) -> Result<Self, CatalogError> {
        if entries.is_empty() {
            return Err(CatalogError::Empty);
        }
        for (at, entry) in entries.iter().enumerate() {
            if entries[..at].iter().any(|earlier| earlier.name == entry.name) {
                return Err(CatalogError::Duplicate(entry.name.clone()));
            }
        }
        Ok(ModelCatalog { entries })
    }

    pub fn entries(&self) -> &[ModelEntry] {
        &self.entries
    }

    pub fn default_entry(&self) -> &ModelEntry {
        &self.entries[0]
    }

    /// The model named `name`, or the default when no name is given; `None` for a name not configured.
    pub fn pick(&self, name: Option<&str>) -> Option<&ModelEntry> {
        match name.map(str::trim).filter(|name| !name.is_empty()) {
            None => Some(self.default_entry()),
            Some(name) => self.entries.iter().find(|entry| entry.name == name),
        }
    }

    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|entry| entry.name.as_str()).collect()
    }
}
