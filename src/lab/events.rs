//! What the lab has to say while it works, outside its results (a cleanup that failed …): the lab
//! never prints, it hands these to a [`LabEvents`] that the command layer renders.

/// Something the user should hear about.
#[derive(Debug, Clone, PartialEq)]
pub enum LabEvent {
    /// Deleting lab `lab` (a [`super::LabGuard`] going out of scope) failed; `error` is the whole
    /// cause chain.
    CleanupFailed { lab: String, error: String },
}

/// Receives the lab's events.
pub trait LabEvents: Send + Sync {
    fn event(&self, e: &LabEvent);
}

/// Drops every event (tests, callers that check the lab's state themselves).
pub struct NoEvents;

impl LabEvents for NoEvents {
    fn event(&self, _: &LabEvent) {}
}

impl<F: Fn(&LabEvent) + Send + Sync> LabEvents for F {
    fn event(&self, e: &LabEvent) {
        self(e)
    }
}
