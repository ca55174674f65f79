//! Socket set-up shared by all tests: DSCP/TOS, congestion control, buffers, kernel timestamps,
//! TCP_INFO.

pub mod deadline;
pub mod latency_sockopts;
pub mod sockopt;
pub mod tcp_info;

/// A socket read or write that hit its SO_RCVTIMEO/SO_SNDTIMEO (Linux reports EAGAIN), as
/// opposed to a real error: every test loop with a timeout treats it as "nothing yet".
pub fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}
