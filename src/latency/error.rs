//! The errors of the latency family: [`LatencyError`] for a client run (why a test could not
//! run or was aborted), [`ServiceError`] for the server side (why a session or a load flow
//! ended; the service logs it and frees the slot). Each message names the cause and, where
//! there is one, what to do.

use super::conn::ConnError;
use std::net::SocketAddr;
use std::time::Duration;

/// Why a test could not run.
#[derive(Debug, thiserror::Error)]
pub enum LatencyError {
    #[error("cannot resolve {host}: {why}")]
    Resolve { host: String, why: String },
    #[error(
        "cannot connect to {addr}: {error} (is `routerbench latency-server` running there, and the port open?)"
    )]
    Connect {
        addr: SocketAddr,
        error: std::io::Error,
    },
    #[error("server {addr} refused the test: {message}")]
    Refused { addr: SocketAddr, message: String },
    #[error("invalid settings: {0}")]
    Config(String),
    #[error("load flow {flow}: cannot connect to {server}: {error}")]
    FlowConnect {
        flow: String,
        server: SocketAddr,
        error: std::io::Error,
    },
    #[error("server refused load flow {flow}: {message}")]
    FlowRefused { flow: String, message: String },
    /// `answer` is the unexpected message, as debug text.
    #[error("server answered load flow {flow} with {answer}")]
    FlowAnswer { flow: String, answer: String },
    #[error("no answer to load flow {flow}: {error}")]
    FlowNoAnswer { flow: String, error: ConnError },
    #[error("probe size {size} outside {min}..={max}")]
    ProbeSize { size: usize, min: usize, max: usize },
    /// The server or the control connection ended the test (the reason follows).
    #[error("test aborted: {0}")]
    Aborted(String),
    #[error("{0} thread panicked")]
    Panicked(&'static str),
    #[error("{0} poisoned")]
    Poisoned(&'static str),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Why the service refused to start, or a session or load flow ended early.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// Every address family failed (the reasons, joined).
    #[error("cannot bind the UDP reflector ({0}); choose another --udp-port")]
    ReflectorBind(String),
    #[error("session exceeded its time limit")]
    TimeLimit,
    #[error("client vanished (connection closed)")]
    Vanished,
    #[error("client silent for {0:?}")]
    Silent(Duration),
    #[error("bad control message: {0}")]
    BadMessage(ConnError),
    /// A request the service answered with an error message (the same text).
    #[error("{0}")]
    Rejected(String),
    #[error("aborted")]
    Aborted,
    #[error("client vanished during the load phase ({0})")]
    VanishedInLoad(std::io::Error),
    #[error("{0} poisoned")]
    Poisoned(&'static str),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
