//! Byte formats only, no I/O: iperf3's control protocol and UDP header, routerbench's own
//! control messages and probe packets. Each parses and emits, tested on captured bytes.

/// The first 8 bytes of every routerbench-protocol TCP connection. The server tells it from an
/// iperf3 client, whose first 37 bytes are a cookie of `[a-z2-7]` and a NUL: 0xFF never occurs
/// in a cookie, so one byte decides.
pub const ROUTERBENCH_MAGIC: [u8; 8] = [0xFF, b'R', b'B', b'E', b'N', b'C', b'H', 0x00];

/// The one byte a server at its connection limit sends before it closes a connection it has
/// not read: iperf3's ACCESS_DENIED state, which iperf3 clients print as "the server is busy";
/// no routerbench frame starts with it, so routerbench clients read it as "busy" too.
pub const BUSY_BYTE: u8 = 0xff;

pub mod http;
pub mod iperf3;
pub mod nq;
pub mod rb;
pub mod rb_agent;
