//! Queue disciplines for a userspace forwarder: CoDel (RFC 8289), FQ-CoDel (RFC 8290) and a
//! CAKE-style qdisc (set-associative flow hashing, host fairness, COBALT, deficit-mode shaper,
//! diffserv tins), plus a byte-limited FIFO as the baseline.
//!
//! Every packet carries a [`PktMeta`] filled once on receive: the receive timestamp (the time the
//! forwarder takes it in, which is its enqueue, as the kernel's qdiscs stamp at enqueue;
//! docs/protocols/router-signals.md B4, docs/aqm.md "Which sojourn the AQM sees"), the keyed flow
//! hash and the host hashes, lengths, DSCP and ECN. Enqueue and dequeue never parse headers again. Time is
//! plain `u64` nanoseconds of one monotonic clock chosen by the caller; the crate does no I/O and
//! reads no clock, so it can be driven by a simulated clock in tests and benchmarks.

pub mod cake;
pub mod codel;
pub mod fifo;
pub mod fq_codel;
pub mod hash;
pub mod meta;
pub mod qdisc;
pub mod shaper;

pub use cake::{Cake, CakeConfig, DiffservMode, FlowMode};
pub use codel::{Codel, CodelParams};
pub use fifo::Fifo;
pub use fq_codel::{FqCodel, FqCodelConfig};
pub use hash::FlowHasher;
pub use meta::{Ecn, Packet, ParseError, PktMeta};
pub use qdisc::{Dequeued, Qdisc, QdiscKind, QdiscStats};
pub use shaper::{Overhead, Shaped, VirtualClock};

/// Nanoseconds per millisecond, for readable constants.
pub const MS: u64 = 1_000_000;
