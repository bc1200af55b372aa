//! Custom tool renderers, registered by tool name: a build of chatwire that adds its own tools can show them its own
//! way. Built-in and `mcp__` renderers come first; a tool nobody registered gets the generic view.

use std::collections::HashMap;
use std::sync::Arc;

use leptos::prelude::*;

use crate::protocol::ChatToolPart;

/// Draws the body of a tool row from the call's part (a signal: it changes while the call streams and runs).
#[derive(Clone)]
pub struct CustomRenderer(Arc<dyn Fn(ReadSignal<ChatToolPart>) -> AnyView + Send + Sync>);

impl CustomRenderer {
    pub fn render(&self, part: ReadSignal<ChatToolPart>) -> AnyView {
        (self.0)(part)
    }
}

/// The custom renderers, provided as context by the app (`provide_context(ToolRenderers::default().register(…))`).
#[derive(Clone, Default)]
pub struct ToolRenderers(Arc<HashMap<String, CustomRenderer>>);

impl ToolRenderers {
    /// Adds the renderer of the tool part named `tool_name` (the `<Name>` of `tool-<Name>`).
    pub fn register(
        self,
        tool_name: impl Into<String>,
        render: impl Fn(ReadSignal<ChatToolPart>) -> AnyView + Send + Sync + 'static,
    ) -> Self {
        let mut renderers = Arc::unwrap_or_clone(self.0);
        renderers.insert(tool_name.into(), CustomRenderer(Arc::new(render)));
        ToolRenderers(Arc::new(renderers))
    }

    pub fn get(&self, tool_name: &str) -> Option<CustomRenderer> {
        self.0.get(tool_name).cloned()
    }
}
