//! The lab's errors: one enum for every lab module, each variant naming the cause (a tool that
//! failed, a bad value, a lab in the wrong state, a system call, a step of a command) with a
//! message that says what to do. The command layer shows them with `{:#}` (the whole chain).

use crate::util::tool::ToolError;

// Any error another module returns (a load generator, the latency test, a closure run inside a
// namespace) is a BoxError, so `?` works on all of them; `chain` prints it with its causes.
pub use crate::util::error::{BoxError, chain};

/// Everything that can go wrong in the lab.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// `ip`, `tc` or `nft` is missing, failed (command, exit status, stderr) or hung; or we are
    /// not root.
    #[error(transparent)]
    Tool(#[from] ToolError),
    /// A value given to the lab (name, rate, size, congestion control, plan) is out of range.
    #[error("{0}")]
    Input(String),
    /// The lab is not in the state the command needs (not up, already exists, unshaped, the
    /// kernel lacks a qdisc, the forwarder did not start …).
    #[error("{0}")]
    State(String),
    /// A file, socket or process operation failed.
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A system call failed; the message names it, the errno and what to do.
    #[error("{0}")]
    Sys(String),
    /// A tool's output or a file is not what the lab expects (no JSON, a field missing …).
    #[error("{0}")]
    Unexpected(String),
    /// A measurement through the lab failed (the load generator, the latency test); the
    /// message names which side and why.
    #[error("{0}")]
    Measure(String),
    /// A thread the lab started panicked.
    #[error("{0}")]
    Panicked(&'static str),
    /// A step failed because of an error below it (another lab error or another module's).
    #[error("{what}")]
    Step {
        what: String,
        #[source]
        source: BoxError,
    },
    /// Another module's error, passed on as it is.
    #[error(transparent)]
    Other(BoxError),
}

/// `Result` with [`LabError`].
pub type Result<T, E = LabError> = std::result::Result<T, E>;

impl LabError {
    /// Wraps another module's error unchanged.
    pub fn other(e: impl Into<BoxError>) -> Self {
        LabError::Other(e.into())
    }
}

/// `.context(…)` for results inside the lab: names the step that failed, keeps the cause.
pub trait Context<T> {
    fn context(self, what: impl Into<String>) -> Result<T>;
    fn with_context<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T>;
}

impl<T, E: Into<BoxError>> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl Into<String>) -> Result<T> {
        self.map_err(|e| LabError::Step {
            what: what.into(),
            source: e.into(),
        })
    }

    fn with_context<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T> {
        self.map_err(|e| LabError::Step {
            what: what().into(),
            source: e.into(),
        })
    }
}

/// `.context(…)` for a value that must be there: None is a [`LabError::Unexpected`].
impl<T> Context<T> for Option<T> {
    fn context(self, what: impl Into<String>) -> Result<T> {
        self.ok_or_else(|| LabError::Unexpected(what.into()))
    }

    fn with_context<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T> {
        self.ok_or_else(|| LabError::Unexpected(what().into()))
    }
}

/// `.context(…)` for an I/O result: a [`LabError::Io`].
pub trait IoContext<T> {
    fn io_context(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn io_context(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| LabError::Io {
            what: what(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_lists_every_cause() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        let e: Result<()> = Err(io).io_context(|| "cannot read x".into());
        let e = e.context("cannot start").unwrap_err();
        assert_eq!(e.to_string(), "cannot start");
        assert_eq!(chain(&e), "cannot start: cannot read x: gone");
        let t = LabError::from(ToolError::NotRoot);
        assert_eq!(
            chain(&t),
            "not root: the lab needs CAP_NET_ADMIN; run as root"
        );
    }
}
