//! Interval accounting for one side of a test: samples every stream's counters (and the TCP
//! sender's TCP_INFO) once per interval, handles the `-O` omit period (counters restart, jitter
//! resets, omitted intervals are flagged) and produces this side's per-stream totals.

use super::stream::{Counters, UdpRecvStats};
use crate::net::tcp_info::tcp_info;
use crate::results::throughput::{Interval, IntervalStream};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// One stream as the meter sees it.
#[derive(Debug)]
pub struct MeteredStream {
    pub id: i32,
    /// This side sends on the stream.
    pub sender: bool,
    pub udp: bool,
    pub counters: Arc<Counters>,
    /// A clone of the TCP socket for TCP_INFO (TCP senders only).
    pub info: Option<TcpStream>,
    last_bytes: u64,
    last_blocks: u64,
    last_retrans: u32,
    last_udp: UdpRecvStats,
    base_bytes: u64,
    base_blocks: u64,
    base_retrans: u32,
    base_udp: UdpRecvStats,
    rtt_min: u64,
    rtt_max: u64,
    rtt_sum: u64,
    rtt_n: u64,
    max_cwnd: u64,
    max_snd_wnd: u64,
}

impl MeteredStream {
    pub fn new(id: i32, sender: bool, udp: bool, counters: Arc<Counters>) -> Self {
        MeteredStream {
            id,
            sender,
            udp,
            counters,
            info: None,
            last_bytes: 0,
            last_blocks: 0,
            last_retrans: 0,
            last_udp: UdpRecvStats::default(),
            base_bytes: 0,
            base_blocks: 0,
            base_retrans: 0,
            base_udp: UdpRecvStats::default(),
            rtt_min: u64::MAX,
            rtt_max: 0,
            rtt_sum: 0,
            rtt_n: 0,
            max_cwnd: 0,
            max_snd_wnd: 0,
        }
    }
}

/// This side's totals for one stream at the end of the test (net of the omit period).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LocalEnd {
    pub id: i32,
    pub sender: bool,
    pub bytes: u64,
    pub blocks: u64,
    /// TCP sender with TCP_INFO: retransmits; else None (-1 on the wire).
    pub retransmits: Option<i64>,
    /// UDP sender: datagrams sent; UDP receiver: highest sequence seen.
    pub packets: i64,
    pub omitted_packets: i64,
    pub errors: i64,
    pub omitted_errors: i64,
    pub outoforder: i64,
    /// Seconds.
    pub jitter: f64,
    pub end_time: f64,
    pub max_snd_cwnd: Option<u64>,
    pub max_snd_wnd: Option<u64>,
    pub max_rtt: Option<u64>,
    pub min_rtt: Option<u64>,
    pub mean_rtt: Option<u64>,
}

/// Most per-stream interval entries a meter keeps (about 200 B each); later intervals keep
/// only their sums, so `-t 86400 -P 128` cannot exhaust memory.
pub const MAX_STREAM_SAMPLES: usize = 100_000;

/// Samples one side's streams.
#[derive(Debug)]
pub struct Meter {
    start: Instant,
    omit: f64,
    omit_done: bool,
    /// Seconds since the start when the omit period ended (stream times restart there).
    omit_end_t: f64,
    interval: f64,
    last_t: f64,
    /// Streams whose `sender` equals this go into `sum`; the others into `sum_bidir_reverse`.
    main_sender: bool,
    pub streams: Vec<MeteredStream>,
    pub intervals: Vec<Interval>,
    stored_samples: usize,
}

impl Meter {
    /// Starts the clock now (at TEST_START). `interval` of 0 disables periodic samples.
    pub fn new(streams: Vec<MeteredStream>, omit: u32, interval: f64, main_sender: bool) -> Self {
        Meter {
            start: Instant::now(),
            omit: omit as f64,
            omit_done: omit == 0,
            omit_end_t: 0.0,
            interval,
            last_t: 0.0,
            main_sender,
            streams,
            intervals: Vec::new(),
            stored_samples: 0,
        }
    }

    /// Seconds since the test start.
    pub fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// Whether the omit period is still running.
    pub fn omitting(&self) -> bool {
        !self.omit_done
    }

    /// Time until the next interval sample is due.
    pub fn until_next(&self) -> Duration {
        let mut next = if self.interval > 0.0 {
            self.last_t + self.interval
        } else {
            f64::INFINITY
        };
        if !self.omit_done {
            next = next.min(self.omit);
        }
        if !next.is_finite() {
            return Duration::from_secs(3600);
        }
        Duration::from_secs_f64((next - self.elapsed()).max(0.0))
    }

    /// Takes an interval sample if one is due; returns it.
    pub fn tick(&mut self) -> Option<&Interval> {
        let now = self.elapsed();
        let omit_edge = !self.omit_done && now >= self.omit;
        if self.interval <= 0.0 {
            // No reports, but the omit period still ends on time.
            if omit_edge {
                self.last_t = now;
                self.end_omit(now);
            }
            return None;
        }
        if now + 1e-4 < self.last_t + self.interval && !omit_edge {
            return None;
        }
        self.sample(now);
        self.intervals.last()
    }

    fn sample(&mut self, now: f64) {
        let start = self.last_t;
        let seconds = (now - start).max(1e-9);
        let omitted = !self.omit_done;
        let mut iv = Interval::default();
        for s in &mut self.streams {
            let bytes = s.counters.bytes.load(Ordering::Relaxed);
            let blocks = s.counters.blocks.load(Ordering::Relaxed);
            let mut st = IntervalStream {
                socket: s.id,
                start,
                end: now,
                seconds,
                bytes: bytes - s.last_bytes,
                bits_per_second: (bytes - s.last_bytes) as f64 * 8.0 / seconds,
                omitted,
                sender: s.sender,
                ..Default::default()
            };
            let ti = s
                .info
                .as_ref()
                .filter(|_| s.sender && !s.udp)
                .and_then(|sock| tcp_info(sock).ok());
            if let Some(ti) = ti {
                st.retransmits = Some(ti.total_retrans.saturating_sub(s.last_retrans) as i64);
                st.snd_cwnd = Some(ti.snd_cwnd_bytes());
                st.snd_wnd = Some(ti.snd_wnd as u64);
                st.rtt = Some(ti.rtt_us as u64);
                st.rttvar = Some(ti.rttvar_us as u64);
                st.pmtu = Some(ti.pmtu as u64);
                s.last_retrans = ti.total_retrans;
                s.rtt_min = s.rtt_min.min(ti.rtt_us as u64);
                s.rtt_max = s.rtt_max.max(ti.rtt_us as u64);
                s.rtt_sum += ti.rtt_us as u64;
                s.rtt_n += 1;
                s.max_cwnd = s.max_cwnd.max(ti.snd_cwnd_bytes());
                s.max_snd_wnd = s.max_snd_wnd.max(ti.snd_wnd as u64);
            }
            if s.udp {
                if s.sender {
                    st.packets = Some((blocks - s.last_blocks) as i64);
                } else {
                    let u = s.counters.udp_snapshot();
                    let pk = u.packet_count - s.last_udp.packet_count;
                    let lost = u.cnt_error - s.last_udp.cnt_error;
                    st.packets = Some(pk);
                    st.lost_packets = Some(lost);
                    st.jitter_ms = Some(u.jitter * 1000.0);
                    st.lost_percent = Some(if pk > 0 {
                        100.0 * lost as f64 / pk as f64
                    } else {
                        0.0
                    });
                    s.last_udp = u;
                }
            }
            s.last_bytes = bytes;
            s.last_blocks = blocks;
            iv.streams.push(st);
        }
        let main: Vec<&IntervalStream> = iv
            .streams
            .iter()
            .filter(|s| s.sender == self.main_sender)
            .collect();
        iv.sum = sum_interval(&main, start, now, omitted, self.main_sender);
        let rev: Vec<&IntervalStream> = iv
            .streams
            .iter()
            .filter(|s| s.sender != self.main_sender)
            .collect();
        if !rev.is_empty() {
            iv.sum_bidir_reverse = Some(sum_interval(&rev, start, now, omitted, !self.main_sender));
        }
        self.stored_samples += iv.streams.len();
        if self.stored_samples > MAX_STREAM_SAMPLES {
            iv.streams.clear();
        }
        self.intervals.push(iv);
        self.last_t = now;
        if !self.omit_done && now + 1e-4 >= self.omit {
            self.end_omit(now);
        }
    }

    fn end_omit(&mut self, now: f64) {
        self.omit_done = true;
        self.omit_end_t = now;
        for s in &mut self.streams {
            s.base_bytes = s.counters.bytes.load(Ordering::Relaxed);
            s.base_blocks = s.counters.blocks.load(Ordering::Relaxed);
            s.base_retrans = s.last_retrans;
            // The receiving worker keeps its own copy of the figures: it resets it too.
            s.counters.reset_jitter.store(true, Ordering::Relaxed);
            if let Ok(mut u) = s.counters.udp_rx.lock() {
                u.reset_jitter();
                s.base_udp = *u;
            }
        }
    }

    /// Ends the test at `now` (seconds since the start, when the end was decided; counters
    /// may include bytes drained since): a last partial interval if it is over 10 % of an
    /// interval (as iperf3), then this side's totals per stream.
    pub fn finish(&mut self, now: f64) -> Vec<LocalEnd> {
        if self.interval > 0.0 && now - self.last_t > 0.1 * self.interval {
            self.sample(now);
        }
        if !self.omit_done {
            self.end_omit(now);
        }
        // Like iperf3, which resets the stream start when the omit period ends.
        let end_time = (now - self.omit_end_t).max(0.0);
        self.streams
            .iter()
            .map(|s| {
                let bytes = s.counters.bytes.load(Ordering::Relaxed);
                let blocks = s.counters.blocks.load(Ordering::Relaxed);
                let u = s.counters.udp_snapshot();
                let tcp_sender = s.sender && !s.udp && s.info.is_some();
                let final_retrans = s
                    .info
                    .as_ref()
                    .filter(|_| tcp_sender)
                    .and_then(|sock| tcp_info(sock).ok())
                    .map(|t| t.total_retrans)
                    .unwrap_or(s.last_retrans);
                let (packets, omitted_packets, errors, omitted_errors) = match (s.udp, s.sender) {
                    (true, true) => ((blocks - s.base_blocks) as i64, s.base_blocks as i64, 0, 0),
                    (true, false) => (
                        u.packet_count,
                        s.base_udp.packet_count,
                        u.cnt_error,
                        s.base_udp.cnt_error,
                    ),
                    _ => (0, 0, 0, 0),
                };
                LocalEnd {
                    id: s.id,
                    sender: s.sender,
                    bytes: bytes - s.base_bytes,
                    blocks: blocks - s.base_blocks,
                    retransmits: tcp_sender
                        .then(|| final_retrans.saturating_sub(s.base_retrans) as i64),
                    packets,
                    omitted_packets,
                    errors,
                    omitted_errors,
                    outoforder: u.outoforder - s.base_udp.outoforder,
                    jitter: if s.udp && !s.sender { u.jitter } else { 0.0 },
                    end_time,
                    max_snd_cwnd: tcp_sender.then_some(s.max_cwnd),
                    max_snd_wnd: tcp_sender.then_some(s.max_snd_wnd),
                    max_rtt: (tcp_sender && s.rtt_n > 0).then_some(s.rtt_max),
                    min_rtt: (tcp_sender && s.rtt_n > 0).then_some(s.rtt_min),
                    mean_rtt: (tcp_sender && s.rtt_n > 0).then(|| s.rtt_sum / s.rtt_n),
                }
            })
            .collect()
    }

    /// Total bytes (since the start, omit included) over streams this side sends or receives.
    pub fn total_bytes(&self, sending: bool) -> u64 {
        self.streams
            .iter()
            .filter(|s| s.sender == sending)
            .map(|s| s.counters.bytes.load(Ordering::Relaxed))
            .sum()
    }

    /// Total blocks over streams this side sends or receives.
    pub fn total_blocks(&self, sending: bool) -> u64 {
        self.streams
            .iter()
            .filter(|s| s.sender == sending)
            .map(|s| s.counters.blocks.load(Ordering::Relaxed))
            .sum()
    }
}

fn sum_interval(
    parts: &[&IntervalStream],
    start: f64,
    end: f64,
    omitted: bool,
    sender: bool,
) -> IntervalStream {
    let seconds = (end - start).max(1e-9);
    let bytes: u64 = parts.iter().map(|s| s.bytes).sum();
    let opt_sum = |f: fn(&IntervalStream) -> Option<i64>| -> Option<i64> {
        let v: Vec<i64> = parts.iter().filter_map(|s| f(s)).collect();
        (!v.is_empty()).then(|| v.iter().sum())
    };
    let packets = opt_sum(|s| s.packets);
    let lost = opt_sum(|s| s.lost_packets);
    let jitters: Vec<f64> = parts.iter().filter_map(|s| s.jitter_ms).collect();
    IntervalStream {
        socket: 0,
        start,
        end,
        seconds,
        bytes,
        bits_per_second: bytes as f64 * 8.0 / seconds,
        retransmits: opt_sum(|s| s.retransmits),
        packets,
        lost_packets: lost,
        jitter_ms: (!jitters.is_empty())
            .then(|| jitters.iter().sum::<f64>() / jitters.len() as f64),
        lost_percent: match (lost, packets) {
            (Some(l), Some(p)) if p > 0 => Some(100.0 * l as f64 / p as f64),
            (Some(_), Some(_)) => Some(0.0),
            _ => None,
        },
        omitted,
        sender,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_and_omit() {
        let c = Arc::new(Counters::default());
        let mut m = Meter::new(
            vec![MeteredStream::new(1, true, false, c.clone())],
            1,
            0.05,
            true,
        );
        c.bytes.store(1000, Ordering::Relaxed);
        std::thread::sleep(m.until_next());
        assert!(m.tick().is_some());
        c.bytes.store(3000, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(60));
        let iv = m.tick().unwrap().clone();
        assert_eq!(iv.sum.bytes, 2000);
        assert!(iv.streams[0].omitted, "still inside the 1 s omit period");
        assert!(m.omitting());
        let ends = m.finish(m.elapsed());
        assert_eq!(ends[0].bytes, 0, "bytes sent during omit are not counted");
        assert_eq!(ends[0].retransmits, None);
    }
}
