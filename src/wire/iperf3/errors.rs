//! SERVER_ERROR (`0xfe`) payloads and iperf3's `i_errno` codes (docs/protocols/iperf3.md §3, §11).

use super::WireError;

/// Test duration above the server's limit (`--server-max-duration`).
pub const IEMAXSERVERTESTDURATIONEXCEEDED: i32 = 37;
/// Test duration too long (above 86400 s).
pub const IEDURATION: i32 = 5;
/// More parallel streams than allowed.
pub const IENUMSTREAMS: i32 = 6;
/// Block size too large.
pub const IEBLOCKSIZE: i32 = 7;
/// Protocol not supported (SCTP here).
pub const IEPROTOCOL: i32 = 131;
/// Unable to set CPU affinity (`-A` names a CPU the server cannot use).
pub const IEAFFINITY: i32 = 132;
/// Requested total rate above the server's limit.
pub const IETOTALRATE: i32 = 27;
/// Authentication failed (missing token, bad credentials, or clock skew).
pub const IEAUTHTEST: i32 = 142;
pub const IENEWTEST: i32 = 100;
pub const IERECVCOOKIE: i32 = 106;
pub const IECTRLCLOSE: i32 = 109;
pub const IEMESSAGE: i32 = 110;
pub const IERECVMESSAGE: i32 = 112;
pub const IERECVPARAMS: i32 = 114;
pub const IERECVRESULTS: i32 = 117;
pub const IECLIENTTERM: i32 = 119;
pub const IESERVERTERM: i32 = 120;
pub const IEACCESSDENIED: i32 = 121;
pub const IESETCONGESTION: i32 = 134;
pub const IENOMSG: i32 = 144;
pub const IESERVERTESTDURATIONEXPIRED: i32 = 160;
pub const IESTREAMLISTEN: i32 = 202;
pub const IESTREAMACCEPT: i32 = 204;
pub const IESTREAMID: i32 = 208;

/// What follows a SERVER_ERROR byte: big-endian `i_errno`, then (usually) the C `errno`.
/// 3.12's authentication failure sends only the first int32, so `errno` is optional.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorPayload {
    pub i_errno: i32,
    pub errno: Option<i32>,
}

impl ErrorPayload {
    /// Parses the 4 or 8 bytes after `0xfe`.
    pub fn parse(buf: &[u8]) -> Result<ErrorPayload, WireError> {
        let first: [u8; 4] =
            buf.get(..4)
                .and_then(|b| b.try_into().ok())
                .ok_or(WireError::Truncated {
                    what: "SERVER_ERROR i_errno",
                    needed: 4,
                    got: buf.len(),
                })?;
        let errno = buf
            .get(4..8)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(i32::from_be_bytes);
        Ok(ErrorPayload {
            i_errno: i32::from_be_bytes(first),
            errno,
        })
    }

    /// The 9 bytes a server sends: `fe`, i_errno, errno (0 when absent).
    pub fn emit(&self) -> [u8; 9] {
        let mut out = [0u8; 9];
        out[0] = super::State::ServerError.to_byte();
        out[1..5].copy_from_slice(&self.i_errno.to_be_bytes());
        out[5..9].copy_from_slice(&self.errno.unwrap_or(0).to_be_bytes());
        out
    }

    /// What the iperf3 client would print for this error.
    pub fn message(&self) -> String {
        let mut s = strerror(self.i_errno);
        if let Some(e) = self.errno.filter(|&e| e != 0) {
            s.push_str(&format!(": {}", std::io::Error::from_raw_os_error(e)));
        }
        s
    }
}

/// iperf3's `iperf_strerror` text for the codes a server sends; other codes print like
/// iperf3 does for codes it does not know: `int_errno=N`.
pub fn strerror(i_errno: i32) -> String {
    let s = match i_errno {
        IEDURATION => "test duration too long (maximum = 86400 seconds)",
        IENUMSTREAMS => "number of parallel streams too large (maximum = 128)",
        IEBLOCKSIZE => "block size too large",
        IEPROTOCOL => "protocol does not exist",
        IETOTALRATE => "total required bandwidth is larger than server limit",
        IEMAXSERVERTESTDURATIONEXCEEDED => {
            "client's requested duration exceeds the server's maximum permitted limit"
        }
        IENEWTEST => "unable to create a new test",
        IERECVCOOKIE => "unable to receive cookie at server",
        IECTRLCLOSE => "control socket has closed unexpectedly",
        IEMESSAGE => "received an unknown control message",
        IERECVMESSAGE => "unable to receive control message",
        IERECVPARAMS => "unable to receive parameters from client",
        IERECVRESULTS => "unable to receive results",
        IECLIENTTERM => "the client has terminated",
        IESERVERTERM => "the server has terminated",
        IEACCESSDENIED => "the server is busy running a test. try again later",
        IESETCONGESTION => {
            "unable to set TCP_CONGESTION: supplied congestion control algorithm not supported on this host"
        }
        IEAUTHTEST => "test authorization failed",
        IENOMSG => "idle timeout for receiving data",
        IESERVERTESTDURATIONEXPIRED => "server test duration expired",
        IESTREAMLISTEN => "unable to start stream listener",
        IESTREAMACCEPT => "unable to accept stream connection",
        IESTREAMID => "stream has an invalid id",
        _ => return format!("int_errno={i_errno}"),
    };
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_parse_auth_failure_one_int() {
        // §13.6, 3.12 auth failure: fe 0000008e, then FIN.
        let p = ErrorPayload::parse(&[0x00, 0x00, 0x00, 0x8e]).unwrap();
        assert_eq!(
            p,
            ErrorPayload {
                i_errno: 142,
                errno: None
            }
        );
        assert_eq!(p.message(), "test authorization failed");
    }

    #[test]
    fn test_parse_and_emit_max_duration() {
        // §13.6, 3.21 --server-max-duration: fe 00000025 00000000.
        let wire = [0xfe, 0, 0, 0, 0x25, 0, 0, 0, 0];
        let p = ErrorPayload::parse(&wire[1..]).unwrap();
        assert_eq!(p.i_errno, IEMAXSERVERTESTDURATIONEXCEEDED);
        assert_eq!(p.errno, Some(0));
        assert_eq!(p.emit(), wire);
        assert!(ErrorPayload::parse(&wire[1..3]).is_err());
    }

    #[test]
    fn test_unknown_code_prints_like_iperf3() {
        assert_eq!(strerror(9999), "int_errno=9999");
        assert_eq!(
            strerror(IEACCESSDENIED),
            "the server is busy running a test. try again later"
        );
    }
}
