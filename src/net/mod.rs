//! Socket set-up shared by all tests, one file per topic: `sockopt` (DSCP/TOS, congestion
//! control, buffers, MSS, pacing), `timestamp` (kernel software timestamps and the control
//! messages that carry them), `tcp_info` (the one TCP_INFO reader), `netlink` (the one
//! netlink socket, message builder and attribute walk), `poll` (waiting on several
//! sockets), `addr` (peer addresses). nix where it has the call; raw libc, with its SAFETY note,
//! only where it does not.
//!
//! The latency tests use the items re-exported here as `crate::net::…`.

pub mod addr;
pub mod bpf;
pub mod deadline;
pub mod netlink;
pub mod poll;
pub mod sockopt;
pub mod tcp_info;
pub mod timestamp;
pub mod udp_batch;
pub mod zerocopy;

pub use addr::{display_ip, same_ip};
pub use poll::poll_readable;
pub use sockopt::{congestion, enable_recv_dst, enable_recv_tos, set_congestion, set_tos, tos};
pub use tcp_info::tcp_rtt_us;
pub use timestamp::{
    Received, TimestampMode, enable_timestamps, read_tx_timestamps, realtime_ns, recv_timestamped,
};

/// A socket read or write that hit its SO_RCVTIMEO/SO_SNDTIMEO (Linux reports EAGAIN), as
/// opposed to a real error: every test loop with a timeout treats it as "nothing yet".
pub fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}
