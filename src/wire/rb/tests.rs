//! Byte-level tests of the routerbench protocol: every message against its exact bytes.

use super::*;

// Hello, version 1.
static HELLO: [u8; 5] = [0x01, 0x00, 0x02, 0x00, 0x01];

// LoadHello v1, session 0x0102030405060708, flow 3, download, tos 0xb8, cc "bbr".
static LOAD_HELLO: [u8; 3 + 17] = [
    0x02, 0x00, 0x11, // type, length 17
    0x00, 0x01, // version
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // session
    0x03, // flow
    0x01, // direction: download
    0xb8, // tos
    0x03, b'b', b'b', b'r', // cc
];

// Start in 150 ms, 60 s long, 200 ms steps.
static START: [u8; 13] = [
    0x03, 0x00, 0x0a, 0x00, 0x02, 0x49, 0xf0, 0x00, 0x00, 0xea, 0x60, 0x00, 0xc8,
];

// Welcome v1, session 42, udp port 40000, max 600 s, 16 flows.
static WELCOME: [u8; 20] = [
    0x81, 0x00, 0x11, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 42, 0x9c, 0x40, 0x00, 0x09, 0x27, 0xc0, 16,
];

// StepReport step 7, two flows.
static STEP: [u8; 3 + 5 + 26] = [
    0x83, 0x00, 0x1f, // type, length 31
    0x00, 0x00, 0x00, 0x07, 0x02, // step 7, n 2
    0x00, 0, 0, 0, 0, 0, 0x01, 0x00, 0x00, 0, 0, 0, 0, // flow 0, 65536 bytes, rtt 0
    0x05, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x03, 0xe8, // flow 5, 0 bytes, rtt 1000 us
];

// Error: unsupported version, "v9".
static ERROR: [u8; 7] = [0xee, 0x00, 0x04, 0x01, 0x02, b'v', b'9'];

// Hello, version 1, token "k1".
static HELLO_TOKEN: [u8; 8] = [0x01, 0x00, 0x05, 0x00, 0x01, 0x02, b'k', b'1'];

fn hello(token: &str) -> Message {
    Message::Hello {
        version: 1,
        token: token.into(),
    }
}

#[test]
fn test_parse_hello() {
    assert_eq!(parse_frame(&HELLO), Ok(hello("")));
    assert_eq!(parse_frame(&HELLO_TOKEN), Ok(hello("k1")));
}

#[test]
fn test_emit_hello() {
    assert_eq!(hello("").emit(), HELLO);
    assert_eq!(hello("k1").emit(), HELLO_TOKEN);
}

#[test]
fn test_hello_token_too_long() {
    let mut f = vec![0x01, 0x00, 3 + 200, 0x00, 0x01, 200];
    f.extend(std::iter::repeat_n(b'a', 200));
    assert!(matches!(
        parse_frame(&f),
        Err(WireError::Malformed { what: "Hello", .. })
    ));
}

#[test]
fn test_load_hello_roundtrip_bytes() {
    let m = Message::LoadHello {
        version: 1,
        session: 0x0102030405060708,
        flow: 3,
        direction: Direction::Download,
        tos: 0xb8,
        cc: "bbr".into(),
    };
    assert_eq!(m.emit(), LOAD_HELLO);
    assert_eq!(parse_frame(&LOAD_HELLO), Ok(m));
}

#[test]
fn test_start_bytes() {
    let m = Message::Start {
        start_in_us: 150_000,
        duration_ms: 60_000,
        step_ms: 200,
    };
    assert_eq!(m.emit(), START);
    assert_eq!(parse_frame(&START), Ok(m));
}

#[test]
fn test_welcome_bytes() {
    let m = Message::Welcome {
        version: 1,
        session: 42,
        udp_port: 40000,
        max_duration_ms: 600_000,
        max_flows: 16,
    };
    assert_eq!(m.emit(), WELCOME);
    assert_eq!(parse_frame(&WELCOME), Ok(m));
}

#[test]
fn test_step_report_bytes() {
    let m = Message::StepReport {
        step: 7,
        flows: vec![
            FlowStep {
                flow: 0,
                bytes: 65536,
                tcp_rtt_us: 0,
            },
            FlowStep {
                flow: 5,
                bytes: 0,
                tcp_rtt_us: 1000,
            },
        ],
    };
    assert_eq!(m.emit(), STEP);
    assert_eq!(parse_frame(&STEP), Ok(m));
}

#[test]
fn test_error_bytes() {
    let m = Message::error(ErrorCode::UnsupportedVersion, "v9");
    assert_eq!(m.emit(), ERROR);
    assert_eq!(parse_frame(&ERROR), Ok(m));
}

#[test]
fn test_finish_and_finished() {
    assert_eq!(Message::Finish.emit(), [0x04, 0x00, 0x00]);
    let m = Message::Finished {
        streams: vec![StreamCount {
            stream: 2,
            received: 350,
            reflected: 349,
        }],
    };
    let bytes = m.emit();
    assert_eq!(
        bytes,
        [
            0x84, 0x00, 0x0a, 0x01, 0x02, 0, 0, 0x01, 0x5e, 0, 0, 0x01, 0x5d
        ]
    );
    assert_eq!(parse_frame(&bytes), Ok(m));
}

#[test]
fn test_truncated_every_prefix() {
    // Every strict prefix of a valid frame is an error, never a panic.
    for frame in [
        &LOAD_HELLO[..],
        &START[..],
        &WELCOME[..],
        &STEP[..],
        &ERROR[..],
    ] {
        for cut in 0..frame.len() {
            assert!(
                parse_frame(&frame[..cut]).is_err(),
                "prefix {cut} of {frame:?}"
            );
        }
        // A payload shorter than its type needs, with a consistent length field.
        let short_len = (frame.len() - FRAME_HEADER_LEN - 1) as u16;
        let mut short = vec![frame[0]];
        short.extend_from_slice(&short_len.to_be_bytes());
        short.extend_from_slice(&frame[FRAME_HEADER_LEN..frame.len() - 1]);
        assert!(matches!(
            parse_frame(&short),
            Err(WireError::Truncated { .. }) | Err(WireError::Malformed { .. })
        ));
    }
}

#[test]
fn test_bad_frames() {
    assert_eq!(
        parse_frame(&[0x55, 0, 0]),
        Err(WireError::UnknownType(0x55))
    );
    assert_eq!(
        frame_payload_len(&[0x01, 0xff, 0xff]),
        Err(WireError::TooLong(65535))
    );
    // trailing byte inside the payload
    assert!(matches!(
        parse_frame(&[0x01, 0x00, 0x03, 0x00, 0x01, 0x00]),
        Err(WireError::Malformed { .. })
    ));
    // direction 7
    let mut bad = LOAD_HELLO;
    bad[14] = 7;
    assert!(matches!(
        parse_frame(&bad),
        Err(WireError::Malformed { .. })
    ));
    // cc name longer than 16
    let m = Message::LoadAccept {
        flow: 1,
        tos: 0,
        cc: "x".repeat(16),
    };
    let mut b = m.emit();
    b[5] = 17;
    b.push(b'y');
    b[2] += 1;
    assert!(matches!(parse_frame(&b), Err(WireError::Malformed { .. })));
}

// A probe as the client emits it: stream 1, session 0x1122334455667788, seq 9, client time
// 0x0102030405060708, 64 bytes with fill 0xaa.
fn probe_bytes() -> Vec<u8> {
    let mut b = vec![
        b'R', b'B', b'P', b'R', 0x01, 0x01, 0x01, 0x00, // magic, version, kind, stream, flags
        0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, // session
        0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00, 0x00, // seq, prev_seq
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // client_tx
    ];
    b.extend_from_slice(&[0u8; 24]);
    b.extend_from_slice(&[0xaa; 8]);
    b
}

#[test]
fn test_probe_construct() {
    let mut buf = vec![0xaa; 64];
    let repr = ProbeRepr {
        stream: 1,
        session: 0x1122334455667788,
        seq: 9,
        client_tx_ns: 0x0102030405060708,
    };
    repr.emit(&mut buf).unwrap();
    assert_eq!(buf, probe_bytes());
}

#[test]
fn test_probe_deconstruct_and_reply() {
    let mut bytes = probe_bytes();
    let mut p = ProbePacket::new_checked(&mut bytes[..]).unwrap();
    assert_eq!(
        (p.kind(), p.stream(), p.session(), p.seq()),
        (KIND_PROBE, 1, 0x1122334455667788, 9)
    );
    assert_eq!(p.client_tx_ns(), 0x0102030405060708);
    p.make_reply(1000, true, 2000, Some((8, 1500)));
    assert_eq!(p.flags() & FLAG_SERVER_RX_KERNEL, FLAG_SERVER_RX_KERNEL);
    let p = ProbePacket::new_checked(&bytes[..]).unwrap();
    assert_eq!(p.kind(), KIND_REPLY);
    assert_eq!(p.flags() & FLAG_PREV_TX, FLAG_PREV_TX);
    assert_eq!((p.server_rx_ns(), p.server_tx_ns()), (1000, 2000));
    assert_eq!((p.prev_seq(), p.server_prev_tx_ns()), (8, 1500));
    assert_eq!(p.len(), 64);
    assert_eq!(&bytes[32..40], &[0, 0, 0, 0, 0, 0, 0x03, 0xe8]);
    assert_eq!(&bytes[56..], &[0xaa; 8], "fill untouched");
}

#[test]
fn test_probe_rejects() {
    let b = probe_bytes();
    assert!(matches!(
        ProbePacket::new_checked(&b[..55]),
        Err(WireError::Truncated { .. })
    ));
    let mut bad = b.clone();
    bad[0] = b'X';
    assert_eq!(
        ProbePacket::new_checked(&bad[..]).err(),
        Some(WireError::NotProbe)
    );
    let mut bad = b;
    bad[4] = 2;
    assert_eq!(
        ProbePacket::new_checked(&bad[..]).err(),
        Some(WireError::NotProbe)
    );
    let repr = ProbeRepr {
        stream: 0,
        session: 1,
        seq: 0,
        client_tx_ns: 0,
    };
    assert!(repr.emit(&mut [0u8; 40]).is_err());
    assert!(repr.emit(&mut vec![0u8; PROBE_MAX_LEN + 1]).is_err());
}

#[test]
fn test_random_bytes_never_panic() {
    // 200 000 random inputs (xorshift), of every length up to 64, with and without a valid
    // header: parsing returns Ok or Err, never panics, and what parses re-emits identically.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let types = [
        0x01u8, 0x02, 0x03, 0x04, 0x81, 0x82, 0x83, 0x84, 0xee, 0x00, 0xff,
    ];
    for i in 0..200_000 {
        let len = (next() % 64) as usize;
        let mut b: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        if i % 2 == 0 && len >= 3 {
            b[0] = types[(next() % types.len() as u64) as usize];
            let plen = (len - 3) as u16;
            b[1..3].copy_from_slice(&plen.to_be_bytes());
        }
        if let Ok(m) = parse_frame(&b) {
            assert_eq!(m.emit(), b, "re-emit of {m:?}");
        }
        let _ =
            ProbePacket::new_checked(&b[..]).map(|p| (p.seq(), p.session(), p.server_prev_tx_ns()));
    }
}

#[test]
fn test_rpm_messages_bytes() {
    let cases: Vec<(Message, Vec<u8>)> = vec![
        (
            Message::RpmBegin {
                duration_ms: 60_000,
            },
            vec![0x05, 0, 4, 0, 0, 0xEA, 0x60],
        ),
        (
            Message::RpmLoadHello {
                version: 1,
                session: 2,
                conn: 3,
                direction: Direction::Download,
            },
            vec![0x06, 0, 12, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 3, 1],
        ),
        (
            Message::RpmProbe {
                version: 1,
                session: 2,
                id: 9,
            },
            vec![0x07, 0, 14, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 9],
        ),
        (
            Message::RpmReady {
                max_connections: 32,
                max_duration_ms: 1000,
            },
            vec![0x85, 0, 5, 32, 0, 0, 0x03, 0xE8],
        ),
        (
            Message::RpmProbeReply { id: 9 },
            vec![0x87, 0, 4, 0, 0, 0, 9],
        ),
    ];
    for (m, bytes) in cases {
        assert_eq!(m.emit(), bytes, "{m:?}");
        assert_eq!(parse_frame(&bytes).unwrap(), m);
        for cut in 3..bytes.len() {
            let mut b = bytes[..cut].to_vec();
            b[2] = (cut - 3) as u8;
            assert!(parse_frame(&b).is_err(), "{m:?} cut at {cut}");
        }
    }
    let bad_dir = [0x06, 0, 12, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 3, 7];
    assert!(parse_frame(&bad_dir).is_err());
}
