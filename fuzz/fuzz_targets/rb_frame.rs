//! routerbench protocol v1 control frames: a frame that parses re-emits byte for byte.
#![no_main]
use libfuzzer_sys::fuzz_target;
use routerbench::wire::rb::{FRAME_HEADER_LEN, frame_payload_len, parse_frame};

fuzz_target!(|data: &[u8]| {
    if data.len() >= FRAME_HEADER_LEN {
        let _ = frame_payload_len(&[data[0], data[1], data[2]]);
    }
    if let Ok(msg) = parse_frame(data) {
        assert_eq!(msg.emit(), data, "parse → emit must give the same bytes");
    }
});
