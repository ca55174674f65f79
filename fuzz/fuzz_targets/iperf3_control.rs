//! Control-connection parsers: cookie, state byte, JSON length framing, SERVER_ERROR payload.
#![no_main]
use libfuzzer_sys::fuzz_target;
use routerbench::wire::iperf3::{self as wire, Cookie, ErrorPayload, State};

fuzz_target!(|data: &[u8]| {
    if let Ok(c) = Cookie::parse(data) {
        assert_eq!(c.as_bytes().len(), wire::COOKIE_SIZE);
        let _ = c.text();
    }
    if let Some(&b) = data.first()
        && let Ok(s) = State::from_byte(b)
    {
        assert_eq!(s.to_byte(), b);
    }
    if let Ok(len) = wire::parse_json_len(data, wire::MAX_PARAMS_LEN) {
        assert!(len > 0 && len <= wire::MAX_PARAMS_LEN);
    }
    if let Ok((body, used)) = wire::parse_json_frame(data, wire::MAX_RESULTS_LEN) {
        assert_eq!(used, body.len() + 4);
    }
    if let Ok(p) = ErrorPayload::parse(data) {
        let _ = p.message();
        let _ = p.emit();
    }
});
