//! routerbench UDP probe packets: the checked view never reads out of bounds.
#![no_main]
use libfuzzer_sys::fuzz_target;
use routerbench::wire::rb::ProbePacket;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = ProbePacket::new_checked(data) {
        let _ = (p.kind(), p.stream(), p.flags(), p.session(), p.seq(), p.prev_seq());
        let _ = (p.client_tx_ns(), p.server_rx_ns(), p.server_tx_ns(), p.server_prev_tx_ns());
        assert_eq!(p.len(), data.len());
    }
});
