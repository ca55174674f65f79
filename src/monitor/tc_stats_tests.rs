//! Byte fixtures built the way the kernel emits them (`nla_put`, `gnet_stats_copy_*`,
//! `fq_codel_dump_stats`, `cake_dump_stats` in net/sched/), since this host has neither
//! fq_codel nor CAKE loaded: one message per qdisc, host byte order, 4-byte aligned NLAs.

use super::*;

const NESTED: u16 = 0x8000;

/// `nla_put`: header, payload, zero padding to 4 bytes.
pub(crate) fn nla(ty: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&((4 + payload.len()) as u16).to_ne_bytes());
    v.extend_from_slice(&ty.to_ne_bytes());
    v.extend_from_slice(payload);
    while v.len() % 4 != 0 {
        v.push(0);
    }
    v
}

fn u32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

/// `nla_put_u64_64bit`: on 64-bit hosts the kernel may first put a TCA_*_PAD attribute so the
/// u64 is 8-byte aligned; the parser must skip it.
fn nla_u64(ty: u16, pad_ty: u16, v: u64) -> Vec<u8> {
    let mut out = nla(pad_ty, &[]);
    out.extend(nla(ty, &v.to_ne_bytes()));
    out
}

pub(crate) fn tcmsg(ifindex: i32, handle: u32, parent: u32) -> Vec<u8> {
    let mut v = vec![0u8; 4]; // family AF_UNSPEC, pad
    v.extend_from_slice(&ifindex.to_ne_bytes());
    v.extend_from_slice(&handle.to_ne_bytes());
    v.extend_from_slice(&parent.to_ne_bytes());
    v.extend_from_slice(&1u32.to_ne_bytes()); // tcm_info (refcnt)
    v
}

/// TCA_STATS2 {BASIC (gnet_stats_basic, 16 bytes with ABI padding), QUEUE, APP} as
/// `gnet_stats_start_copy_compat` + `gnet_stats_copy_*` + `gnet_stats_copy_app` emit it.
fn stats2(bytes: u64, packets: u32, queue: [u32; 5], app: Option<&[u8]>) -> Vec<u8> {
    let mut basic = bytes.to_ne_bytes().to_vec();
    basic.extend_from_slice(&packets.to_ne_bytes());
    basic.extend_from_slice(&[0; 4]);
    let mut inner = nla(TCA_STATS_BASIC, &basic);
    inner.extend(nla(TCA_STATS_QUEUE, &u32s(&queue)));
    if let Some(a) = app {
        inner.extend(nla(TCA_STATS_APP, a));
    }
    nla(TCA_STATS2 | NESTED, &inner)
}

/// Legacy `struct tc_stats` (36 bytes + pad), also emitted by the compat path.
fn legacy(bytes: u64, packets: u32, queue: [u32; 5]) -> Vec<u8> {
    let mut s = bytes.to_ne_bytes().to_vec();
    // packets, drops, overlimits, bps, pps, qlen, backlog
    s.extend(u32s(&[
        packets, queue[2], queue[4], 0, 0, queue[0], queue[1],
    ]));
    s.extend_from_slice(&[0; 4]);
    nla(TCA_STATS, &s)
}

pub(crate) fn fq_codel_message() -> Vec<u8> {
    // type 0 (qdisc) then tc_fq_codel_qd_stats; the union is 36 bytes.
    let x = u32s(&[0, 1514, 7, 42, 311, 1, 3, 2, 1_048_576, 0]);
    let queue = [31, 45_200, 96, 0, 12];
    let mut m = tcmsg(2, 0, TC_H_ROOT);
    m.extend(nla(TCA_KIND, b"fq_codel\0"));
    // TCA_OPTIONS: TCA_FQ_CODEL_TARGET (1) = 5000 us, nested.
    m.extend(nla(TCA_OPTIONS | NESTED, &nla(1, &5000u32.to_ne_bytes())));
    m.extend(stats2(987_654_321, 650_000, queue, Some(&x)));
    m.extend(legacy(987_654_321, 650_000, queue));
    m.extend(nla(TCA_XSTATS, &x));
    m
}

fn cake_tin_bytes(i: u32) -> Vec<u8> {
    let mut t = Vec::new();
    t.extend(nla(2, &(1000 * i).to_ne_bytes())); // SENT_PACKETS
    t.extend(nla_u64(3, 1, 1_500_000 * u64::from(i))); // SENT_BYTES64
    t.extend(nla(4, &i.to_ne_bytes())); // DROPPED_PACKETS
    t.extend(nla_u64(5, 1, 1514 * u64::from(i)));
    t.extend(nla(6, &0u32.to_ne_bytes())); // ACKS_DROPPED_PACKETS
    t.extend(nla(8, &(2 * i).to_ne_bytes())); // ECN_MARKED_PACKETS
    t.extend(nla(10, &(10 * i).to_ne_bytes())); // BACKLOG_PACKETS
    t.extend(nla(11, &(15_140 * i).to_ne_bytes())); // BACKLOG_BYTES
    t.extend(nla_u64(12, 1, 2_500_000 / u64::from(i))); // THRESHOLD_RATE64
    t.extend(nla(13, &5000u32.to_ne_bytes())); // TARGET_US
    t.extend(nla(14, &100_000u32.to_ne_bytes())); // INTERVAL_US
    for (ty, v) in [(15, 0u32), (16, 3), (17, 0)] {
        t.extend(nla(ty, &v.to_ne_bytes())); // WAY_* counters
    }
    t.extend(nla(18, &(9000 * i).to_ne_bytes())); // PEAK_DELAY_US
    t.extend(nla(19, &(3000 * i).to_ne_bytes())); // AVG_DELAY_US
    t.extend(nla(20, &(100 * i).to_ne_bytes())); // BASE_DELAY_US
    for (ty, v) in [(21, 1u32), (22, i), (23, 0), (24, 1514), (25, 1514)] {
        t.extend(nla(ty, &v.to_ne_bytes()));
    }
    t
}

pub(crate) fn cake_app() -> Vec<u8> {
    let mut a = nla_u64(2, 1, 2_500_000); // CAPACITY_ESTIMATE64
    a.extend(nla(3, &4_194_304u32.to_ne_bytes())); // MEMORY_LIMIT
    a.extend(nla(4, &123_456u32.to_ne_bytes())); // MEMORY_USED
    for ty in 5..=9 {
        a.extend(nla(ty, &0u32.to_ne_bytes())); // AVG_NETOFF .. MAX_ADJLEN
    }
    let mut tins = Vec::new();
    for i in 1..=4u32 {
        tins.extend(nla(i as u16 | NESTED, &cake_tin_bytes(i)));
    }
    a.extend(nla(TCA_CAKE_STATS_TIN_STATS | NESTED, &tins));
    a
}

pub(crate) fn cake_message() -> Vec<u8> {
    let app = cake_app();
    let queue = [100, 151_400, 10, 0, 77];
    let mut m = tcmsg(3, 0x8001_0000, TC_H_ROOT);
    m.extend(nla(TCA_KIND, b"cake\0"));
    let mut opts = nla_u64(TCA_CAKE_BASE_RATE64, 1, 2_500_000);
    opts.extend(nla(3, &4u32.to_ne_bytes())); // DIFFSERV_MODE
    m.extend(nla(TCA_OPTIONS | NESTED, &opts));
    m.extend(stats2(5_000_000, 4000, queue, Some(&app)));
    m.extend(legacy(5_000_000, 4000, queue));
    m.extend(nla(TCA_XSTATS, &app));
    m
}

pub(crate) fn tbf_message(rate32: u32, rate64: Option<u64>, backlog: u32) -> Vec<u8> {
    // struct tc_tbf_qopt: rate ratespec (12), peakrate ratespec (12), limit, buffer, mtu.
    let mut qopt = vec![0u8; 8];
    qopt.extend_from_slice(&rate32.to_ne_bytes());
    qopt.extend_from_slice(&[0u8; 12]);
    qopt.extend(u32s(&[64_000, 12_000, 1514]));
    let mut opts = nla(TCA_TBF_PARMS, &qopt);
    if let Some(r) = rate64 {
        opts.extend(nla_u64(TCA_TBF_RATE64, 8, r));
    }
    let mut m = tcmsg(8, 0x0001_0000, TC_H_ROOT);
    m.extend(nla(TCA_KIND, b"tbf\0"));
    m.extend(nla(TCA_OPTIONS | NESTED, &opts));
    m.extend(stats2(868_926, 709, [92, backlog, 0, 0, 2022], None));
    m
}

#[test]
fn fq_codel_qdisc_and_xstats() {
    let q = parse_qdisc(&fq_codel_message()).unwrap();
    assert_eq!(q.kind, "fq_codel");
    assert!(q.is_root());
    assert_eq!((q.ifindex, q.handle_text()), (2, "0:".to_string()));
    assert_eq!((q.bytes, q.packets), (987_654_321, 650_000));
    assert_eq!(
        (q.qlen, q.backlog_bytes, q.drops, q.requeues, q.overlimits),
        (31, 45_200, 96, 0, 12)
    );
    assert_eq!(q.rate_bytes_per_s, None, "fq_codel does not shape");
    assert_eq!(
        q.xstats,
        Some(Xstats::FqCodel(FqCodelXstats {
            maxpacket: 1514,
            drop_overlimit: 7,
            ecn_mark: 42,
            new_flow_count: 311,
            new_flows_len: 1,
            old_flows_len: 3,
            ce_mark: 2,
            memory_usage: Some(1_048_576),
            drop_overmemory: Some(0),
        }))
    );
}

#[test]
fn fq_codel_xstats_of_an_older_kernel_and_of_a_class() {
    // Before 4.15 the struct ended after ce_mark (7 fields).
    let old = fq_codel_xstats(&u32s(&[0, 1514, 7, 42, 311, 1, 3, 2])).unwrap();
    assert_eq!((old.ce_mark, old.memory_usage), (2, None));
    assert_eq!(fq_codel_xstats(&u32s(&[0, 1514, 7])), None, "too short");
    assert_eq!(
        fq_codel_xstats(&u32s(&[1, 0, 0, 0, 0, 0, 0])),
        None,
        "class"
    );
}

#[test]
fn cake_tins_and_rate() {
    let q = parse_qdisc(&cake_message()).unwrap();
    assert_eq!((q.kind.as_str(), q.handle_text()), ("cake", "8001:".into()));
    assert_eq!((q.backlog_bytes, q.qlen, q.drops), (151_400, 100, 10));
    assert_eq!(q.rate_bytes_per_s, Some(2_500_000));
    let Some(Xstats::Cake(c)) = q.xstats else {
        panic!("no cake xstats: {:?}", q.xstats)
    };
    assert_eq!(c.capacity_estimate_bytes_per_s, Some(2_500_000));
    assert_eq!(c.memory_used_bytes, Some(123_456));
    assert_eq!(c.tins.len(), 4);
    let t3 = &c.tins[2];
    assert_eq!(
        (t3.sent_packets, t3.sent_bytes, t3.dropped_packets),
        (3000, 4_500_000, 3)
    );
    assert_eq!((t3.backlog_packets, t3.backlog_bytes), (30, 45_420));
    assert_eq!(
        (t3.peak_delay_us, t3.avg_delay_us, t3.base_delay_us),
        (27_000, 9000, 300)
    );
    assert_eq!(
        (t3.ecn_marked_packets, t3.threshold_rate_bytes_per_s),
        (6, 833_333)
    );
    assert_eq!((t3.target_us, t3.bulk_flows, t3.sparse_flows), (5000, 3, 1));
}

#[test]
fn cake_tins_are_bounded() {
    let mut tins = Vec::new();
    for i in 1..=20u16 {
        tins.extend(nla(i | NESTED, &cake_tin_bytes(1)));
    }
    let c = cake_xstats(&nla(TCA_CAKE_STATS_TIN_STATS | NESTED, &tins));
    assert_eq!(c.tins.len(), MAX_CAKE_TINS);
}

#[test]
fn tbf_rate_32_and_64_bit() {
    let q = parse_qdisc(&tbf_message(2_500_000, None, 114_264)).unwrap();
    assert_eq!((q.kind.as_str(), q.handle_text()), ("tbf", "1:".into()));
    assert_eq!(q.rate_bytes_per_s, Some(2_500_000));
    assert_eq!((q.backlog_bytes, q.qlen, q.overlimits), (114_264, 92, 2022));
    assert_eq!(q.xstats, None);
    // Above 34 Gbit/s the u32 field saturates and TCA_TBF_RATE64 carries the rate.
    let q = parse_qdisc(&tbf_message(u32::MAX, Some(6_250_000_000), 0)).unwrap();
    assert_eq!(q.rate_bytes_per_s, Some(6_250_000_000));
}

#[test]
fn legacy_stats_only() {
    let mut m = tcmsg(1, 0, TC_H_ROOT);
    m.extend(nla(TCA_KIND, b"pfifo_fast\0"));
    m.extend(legacy(702_948, 7244, [3, 4542, 9, 0, 1]));
    let q = parse_qdisc(&m).unwrap();
    assert_eq!((q.bytes, q.packets, q.drops), (702_948, 7244, 9));
    assert_eq!((q.qlen, q.backlog_bytes, q.overlimits), (3, 4542, 1));
}

#[test]
fn malformed_bytes_never_panic() {
    assert_eq!(parse_qdisc(&[0; 10]), Err(TcParseError::Short(10)));
    let full = cake_message();
    for cut in TCMSG_LEN..full.len() {
        let _ = parse_qdisc(&full[..cut]);
    }
    // An attribute claiming more bytes than there are ends the walk.
    let mut m = tcmsg(1, 0, TC_H_ROOT);
    m.extend_from_slice(&[0xFF, 0x00, 0x01, 0x00, b'x']);
    assert_eq!(parse_qdisc(&m).unwrap().kind, "");
    // A zero-length attribute cannot loop forever.
    assert_eq!(attrs(&[0, 0, 1, 0, 0, 0, 0, 0]).count(), 0);
}
