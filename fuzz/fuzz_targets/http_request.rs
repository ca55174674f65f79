//! The server's HTTP/1.1 request parser and route table: nothing panics, whatever the bytes; a
//! parsed head stays within the limits; a request answers with a status it can emit.
#![no_main]
use libfuzzer_sys::fuzz_target;
use routerbench::server::http::{HttpConfig, Reply, answer};
use routerbench::wire::http::{Limits, Parsed, RequestHead};

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        max_request_line: 256,
        max_field_line: 256,
        max_fields: 16,
        max_head: 1024,
        max_body: 512,
    };
    // Every prefix parses the way the connection loop feeds it, byte after byte arriving.
    for cut in [data.len() / 3, data.len() / 2, data.len()] {
        if let Ok(Parsed::Head(h)) = RequestHead::parse(&data[..cut], &limits) {
            assert!(h.head_len <= cut && h.head_len <= limits.max_head);
            assert!(h.fields.len() <= limits.max_fields);
            assert!(h.content_length <= limits.max_body as u64);
            let _ = h.keep_alive();
            let _ = h.query_param("token");
            let _ = h.bearer_token();
            let end = (h.head_len + h.content_length as usize).min(cut);
            let peer = "192.0.2.1:1".parse().unwrap();
            if let Reply::Full(r) = answer(&HttpConfig::default(), &h, &data[h.head_len..end], peer) {
                let bytes = r.emit(h.keep_alive(), false);
                assert!(bytes.starts_with(b"HTTP/1.1 "));
            }
        }
    }
});
