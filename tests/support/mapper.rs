//! An `EventMapper` with a fixed clock and numbered ids, so mapped frames compare exactly.

use chatwire::mapper::EventMapper;

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
