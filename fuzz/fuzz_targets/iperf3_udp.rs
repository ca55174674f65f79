//! UDP datagram header (32- and 64-bit counters) and the hello check.
#![no_main]
use libfuzzer_sys::fuzz_target;
use routerbench::wire::iperf3::udp::{UdpHeader, is_connect_reply};

fuzz_target!(|data: &[u8]| {
    for wide in [false, true] {
        if let Ok(h) = UdpHeader::parse(data, wide) {
            let mut out = vec![0u8; h.len()];
            h.emit(&mut out).expect("header fits its own length");
            assert_eq!(&out[..], &data[..h.len()]);
        }
    }
    let _ = is_connect_reply(data);
});
