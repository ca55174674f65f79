//! TCP_INFO decoding from arbitrary kernel-returned lengths.
#![no_main]
use libfuzzer_sys::fuzz_target;
use routerbench::net::tcp_info::TcpInfo;

fuzz_target!(|data: &[u8]| {
    if let Some(i) = TcpInfo::parse(data) {
        let _ = i.snd_cwnd_bytes();
    }
});
