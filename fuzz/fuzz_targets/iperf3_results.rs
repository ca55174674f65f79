//! Results JSON: parse never panics; what parses round-trips through emit.
#![no_main]
use libfuzzer_sys::fuzz_target;
use routerbench::wire::iperf3::TestResults;

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = TestResults::parse(data) {
        let again = TestResults::parse(r.emit().as_bytes()).expect("emitted results parse");
        assert_eq!(again.streams.len(), r.streams.len());
    }
});
