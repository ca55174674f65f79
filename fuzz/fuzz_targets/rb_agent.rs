//! The monitor agent's frames and the rtnetlink qdisc parser: nothing panics; an agent frame
//! that parses re-emits byte for byte.
#![no_main]
use libfuzzer_sys::fuzz_target;
use routerbench::monitor::tc_stats::parse_qdisc;
use routerbench::wire::rb_agent::AgentMessage;

fuzz_target!(|data: &[u8]| {
    let _ = parse_qdisc(data);
    if data.len() >= 3 {
        let len = u16::from_be_bytes([data[1], data[2]]) as usize;
        if data.len() == 3 + len {
            if let Ok(m) = AgentMessage::parse(data[0], &data[3..]) {
                assert_eq!(m.emit(), data, "parse → emit must give the same bytes");
            }
        }
    }
});
