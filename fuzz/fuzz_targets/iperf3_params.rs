//! Parameter JSON: parse never panics; what parses re-emits and parses to the same value.
#![no_main]
use libfuzzer_sys::fuzz_target;
use routerbench::wire::iperf3::TestParams;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = TestParams::parse(data) {
        let _ = p.validate();
        let again = TestParams::parse(p.emit().as_bytes()).expect("emitted parameters parse");
        assert_eq!(again.protocol, p.protocol);
        assert_eq!(again.parallel, p.parallel);
        assert_eq!(again.reverse, p.reverse);
    }
});
