//! Why a monitor subscription, its agent or a qdisc reading failed. Each message names the
//! agent or the input and, where there is one, what to do.

use std::io;
use std::net::SocketAddr;

#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    #[error("--monitor {address}: cannot resolve")]
    Resolve {
        address: String,
        #[source]
        error: io::Error,
    },
    #[error("--monitor {address}: no address")]
    NoAddress { address: String },
    #[error("monitor agent {addr}: cannot connect")]
    Connect {
        addr: SocketAddr,
        #[source]
        error: io::Error,
    },
    /// `hint` is empty or says what to check (" — is the server there started with --monitor?").
    #[error("monitor agent {addr} refused (code {code}): {message}{hint}")]
    Refused {
        addr: SocketAddr,
        code: u8,
        message: String,
        hint: &'static str,
    },
    #[error(
        "monitor agent {addr}: no valid reply ({error}); is `routerbench server --monitor` running there?"
    )]
    NoReply { addr: SocketAddr, error: io::Error },
    /// `got` is the message received instead, as debug text.
    #[error("monitor agent {addr}: expected {expected}, got {got}")]
    Unexpected {
        addr: SocketAddr,
        expected: &'static str,
        got: String,
    },
    #[error("the monitor receiver thread failed")]
    ReceiverFailed,
    #[error("monitor agent {addr}: the sample stream broke off: {error}")]
    BrokeOff { addr: SocketAddr, error: io::Error },
    #[error("monitor agent {addr}: a document over 16 MiB")]
    TooLarge { addr: SocketAddr },
    /// `what`: "a sample" or "the final summary".
    #[error("monitor agent {addr}: {what} is not valid JSON")]
    BadJson {
        addr: SocketAddr,
        what: &'static str,
        #[source]
        error: serde_json::Error,
    },
    #[error("monitor agent {addr}: no final summary before the deadline")]
    NoFinal { addr: SocketAddr },
    /// The agent refused a subscriber (the subscriber was told the same).
    #[error("monitor subscription refused: {0}")]
    SubscriptionRefused(String),
    #[error("monitor subscription: bad first message: {0}")]
    BadFirstMessage(io::Error),
    #[error("monitor subscription: no MonitorStart within the handshake time")]
    NoStart,
    #[error(
        "monitor subscription: the handshake (Hello, clock exchanges, Start) was not complete \
         within {0:?} of the connection: the client is too slow or silent"
    )]
    HandshakeTimeout(std::time::Duration),
    #[error("monitor subscriber went away: {0}")]
    SubscriberGone(io::Error),
    #[error("local monitor agent: no subscriber: {0}")]
    NoSubscriber(io::Error),
    #[error("local monitor agent: not the routerbench magic")]
    NotMagic,
    /// A sample or summary could not be encoded for the subscriber.
    #[error("{0}")]
    Encode(serde_json::Error),
    #[error("cannot parse `tc -s -j qdisc show` output: {0}")]
    TcJson(serde_json::Error),
    #[error("`tc -s -j qdisc show` did not print a JSON array")]
    TcNotArray,
    #[error(transparent)]
    Io(#[from] io::Error),
}
