//! An `EventMapper` with a fixed clock and numbered ids, so mapped frames compare exactly, and the loop that maps a
//! run's events as they come.

use chatwire::mapper::EventMapper;
use chatwire::protocol::ChatFrame;
use chatwire::runtime::event::AgentEvent;
use tokio::sync::mpsc;

pub fn deterministic_mapper(session_id: &str) -> EventMapper {
    let mut counter = 0;
    EventMapper::new(
        session_id,
        Box::new(|| 1_800_000_000_000),
        Box::new(move |kind| {
            counter += 1;
            format!("{kind}-{counter}")
        }),
    )
}

/// Maps events as the agent sends them until its run has settled; `react` sees each event first (to answer, steer or
/// stop the run while it goes on).
pub async fn map_until_settled(
    events: &mut mpsc::UnboundedReceiver<AgentEvent>,
    mapper: &mut EventMapper,
    frames: &mut Vec<ChatFrame>,
    mut react: impl FnMut(&AgentEvent),
) {
    while let Some(event) = events.recv().await {
        react(&event);
        let settled = event == AgentEvent::AgentSettled;
        frames.extend(mapper.map(event));
        if settled {
            break;
        }
    }
}
