//! Test plans: which load flows and which latency probes a test runs, named exactly as flent
//! names its series (docs/protocols/latency.md §9), so `.flent.gz` files plot with flent's own plots.

use crate::wire::rb::Direction;

/// DSCP classes as TOS bytes (DSCP << 2).
pub const TOS_CS0: u8 = 0x00;
pub const TOS_CS1: u8 = 0x20;
pub const TOS_CS5: u8 = 0xA0;
pub const TOS_EF: u8 = 0xB8;

/// The tests routerbench runs, after flent's tests of the same names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestKind {
    /// 4 up + 4 down, one per class (BE, BK, CS5, EF); UDP EF/BK/BE + ICMP probes.
    Rrul,
    /// 4 up + 4 down, all CS0; UDP BE1–BE3 + ICMP probes.
    RrulBe,
    /// N uploads (CS0) + ICMP probe.
    TcpNup,
    /// N downloads (CS0) + ICMP probe.
    TcpNdown,
    /// Idle latency only: ICMP + UDP probes, no load.
    Ping,
    /// rrul_be's 8 flows with ICMP as the only probe.
    RrulIcmp,
    /// One upload and one download (CS0) with an ICMP probe.
    TcpBidirectional,
    /// flent's rrul_var: N bidirectional streams (one up, one down, one UDP probe each, CS0)
    /// and an ICMP probe.
    RrulVar,
    /// flent's voip: a G.711-like UDP stream (20 ms, 172 bytes) with one-way delay, jitter and
    /// loss; no load.
    Voip,
    /// flent's rrul46: rrul with the BE and BK flows and the UDP BE/BK probes over IPv4, the
    /// CS5 and EF flows, the ICMP probe and UDP6 BE/BK probes over IPv6, all at once (one
    /// session per address family).
    Rrul46,
    /// flent's rtt_fair: four streams (BE1, BE2, BK1, BK2; an upload, a download and a ping
    /// each) to up to four hosts (one session per host), with Jain's fairness between them.
    RttFair,
    /// crusader's phases: download, then upload, then both, each with latency probes throughout
    /// (one session per phase); exported to flent as tcp_bidirectional.
    Phases,
}

/// crusader-style phases, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Download,
    Upload,
    Both,
}

impl Phase {
    pub const ALL: [Phase; 3] = [Phase::Download, Phase::Upload, Phase::Both];
    pub fn word(self) -> &'static str {
        match self {
            Self::Download => "download",
            Self::Upload => "upload",
            Self::Both => "both",
        }
    }
}

/// Idle time between two phases (the queues drain; each side's probes cover half of it).
pub const PHASE_GAP: std::time::Duration = std::time::Duration::from_secs(2);

/// Address family a session asks of its host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Family {
    #[default]
    Any,
    V4,
    V6,
}

/// One session of a test (a control connection to one server address, with its flows and
/// probes): most tests have one; rrul46 one per address family, rtt_fair one per host, phases
/// one per phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionPlan {
    /// Index into the test's hosts.
    pub host: usize,
    pub family: Family,
    pub phase: Option<Phase>,
}

/// When a session probes and loads, from T0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub probe_start: std::time::Duration,
    pub load_start: std::time::Duration,
    pub load_len: std::time::Duration,
    pub probe_end: std::time::Duration,
}

impl TestKind {
    /// The plot flent draws for this test by default (its `.conf` DEFAULTS).
    pub fn flent_default_plot(self) -> &'static str {
        match self {
            Self::Rrul | Self::RrulBe | Self::RrulVar => "all_scaled",
            Self::Voip => "voip_delay",
            Self::Rrul46 | Self::RttFair => "all_scaled",
            Self::Phases => "totals",
            Self::RrulIcmp => "all",
            Self::TcpNup | Self::TcpNdown | Self::TcpBidirectional => "totals",
            Self::Ping => "ping",
        }
    }

    /// flent's test name (metadata NAME).
    pub fn flent_name(self) -> &'static str {
        match self {
            Self::Rrul => "rrul",
            Self::RrulBe => "rrul_be",
            Self::TcpNup => "tcp_nup",
            Self::TcpNdown => "tcp_ndown",
            Self::Ping => "ping",
            Self::RrulIcmp => "rrul_icmp",
            Self::TcpBidirectional => "tcp_bidirectional",
            Self::RrulVar => "rrul_var",
            Self::Voip => "voip",
            Self::Rrul46 => "rrul46",
            Self::RttFair => "rtt_fair",
            Self::Phases => "phases",
        }
    }

    /// The flent test whose plots read this test's file (phases has no flent test of its own:
    /// its series are tcp_bidirectional's).
    pub fn flent_test(self) -> &'static str {
        match self {
            Self::Phases => "tcp_bidirectional",
            k => k.flent_name(),
        }
    }
}

/// One TCP load flow of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowPlan {
    /// flent series name, e.g. `TCP upload BE` or `TCP download::2`.
    pub name: String,
    /// Class label used in plots (`BE`, `BK`, …).
    pub label: String,
    pub direction: Direction,
    /// TOS byte set on both ends.
    pub tos: u8,
    /// Which session of the plan carries it.
    pub session: usize,
}

/// How a probe stream measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeKind {
    Udp,
    Icmp,
}

/// One latency probe stream of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbePlan {
    /// flent series name, e.g. `Ping (ms) UDP EF`.
    pub name: String,
    pub kind: ProbeKind,
    pub tos: u8,
    /// Which session of the plan carries it.
    pub session: usize,
}

/// Flows and probes of one test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub kind: TestKind,
    pub flows: Vec<FlowPlan>,
    pub probes: Vec<ProbePlan>,
    pub sessions: Vec<SessionPlan>,
}

fn flow(name: String, label: &str, direction: Direction, tos: u8) -> FlowPlan {
    FlowPlan {
        name,
        label: label.into(),
        direction,
        tos,
        session: 0,
    }
}

fn probe(name: &str, kind: ProbeKind, tos: u8) -> ProbePlan {
    ProbePlan {
        name: name.into(),
        kind,
        tos,
        session: 0,
    }
}

fn single() -> Vec<SessionPlan> {
    vec![SessionPlan {
        host: 0,
        family: Family::Any,
        phase: None,
    }]
}

impl Plan {
    /// The plan of `kind` against one host; `streams` is N for tcp_nup/tcp_ndown, rrul_var and
    /// phases (ignored otherwise).
    pub fn new(kind: TestKind, streams: u8) -> Self {
        Self::with_hosts(kind, streams, &["HOST".to_string()])
    }

    /// The plan of `kind` against `hosts` (rtt_fair names its series after them; the other
    /// tests use the first).
    pub fn with_hosts(kind: TestKind, streams: u8, hosts: &[String]) -> Self {
        match kind {
            TestKind::Rrul46 => return rrul46(hosts.len() > 1),
            TestKind::RttFair => return rtt_fair(hosts),
            TestKind::Phases => return phases(streams),
            _ => {}
        }
        let classes = [
            ("BE", TOS_CS0),
            ("BK", TOS_CS1),
            ("CS5", TOS_CS5),
            ("EF", TOS_EF),
        ];
        let mut flows = Vec::new();
        let probes = match kind {
            TestKind::Rrul => {
                for dir in [Direction::Upload, Direction::Download] {
                    for (label, tos) in classes {
                        flows.push(flow(
                            format!("TCP {} {label}", dir_word(dir)),
                            label,
                            dir,
                            tos,
                        ));
                    }
                }
                vec![
                    probe("Ping (ms) UDP EF", ProbeKind::Udp, TOS_EF),
                    probe("Ping (ms) UDP BK", ProbeKind::Udp, TOS_CS1),
                    probe("Ping (ms) UDP BE", ProbeKind::Udp, TOS_CS0),
                    probe("Ping (ms) ICMP", ProbeKind::Icmp, TOS_CS0),
                ]
            }
            TestKind::RrulBe | TestKind::RrulIcmp => {
                for dir in [Direction::Upload, Direction::Download] {
                    for label in ["BE", "BE2", "BE3", "BE4"] {
                        flows.push(flow(
                            format!("TCP {} {label}", dir_word(dir)),
                            label,
                            dir,
                            TOS_CS0,
                        ));
                    }
                }
                if kind == TestKind::RrulIcmp {
                    vec![probe("Ping (ms) ICMP", ProbeKind::Icmp, TOS_CS0)]
                } else {
                    vec![
                        probe("Ping (ms) UDP BE1", ProbeKind::Udp, TOS_CS0),
                        probe("Ping (ms) UDP BE2", ProbeKind::Udp, TOS_CS0),
                        probe("Ping (ms) UDP BE3", ProbeKind::Udp, TOS_CS0),
                        probe("Ping (ms) ICMP", ProbeKind::Icmp, TOS_CS0),
                    ]
                }
            }
            TestKind::TcpBidirectional => {
                flows.push(flow(
                    "TCP download".into(),
                    "BE",
                    Direction::Download,
                    TOS_CS0,
                ));
                flows.push(flow("TCP upload".into(), "BE", Direction::Upload, TOS_CS0));
                vec![probe("Ping (ms) ICMP", ProbeKind::Icmp, TOS_CS0)]
            }
            TestKind::TcpNup | TestKind::TcpNdown => {
                let dir = if kind == TestKind::TcpNup {
                    Direction::Upload
                } else {
                    Direction::Download
                };
                for i in 1..=streams.max(1) {
                    flows.push(flow(
                        format!("TCP {}::{i}", dir_word(dir)),
                        "BE",
                        dir,
                        TOS_CS0,
                    ));
                }
                vec![probe("Ping (ms) ICMP", ProbeKind::Icmp, TOS_CS0)]
            }
            TestKind::RrulVar => {
                // flent's rrul_var.conf: for_stream_config labels stream i "i (CS0)", from 0.
                let mut probes = Vec::new();
                for i in 0..streams.max(1) {
                    let label = format!("{i} (CS0)");
                    for dir in [Direction::Upload, Direction::Download] {
                        flows.push(flow(
                            format!("TCP {}::{label}", dir_word(dir)),
                            &label,
                            dir,
                            TOS_CS0,
                        ));
                    }
                    probes.push(probe(
                        &format!("Ping (ms)::UDP {label}"),
                        ProbeKind::Udp,
                        TOS_CS0,
                    ));
                }
                probes.push(probe("Ping (ms)::ICMP", ProbeKind::Icmp, TOS_CS0));
                probes
            }
            TestKind::Voip => vec![probe("VoIP", ProbeKind::Udp, TOS_CS0)],
            TestKind::Rrul46 | TestKind::RttFair | TestKind::Phases => Vec::new(),
            TestKind::Ping => {
                vec![
                    probe("Ping (ms) ICMP", ProbeKind::Icmp, TOS_CS0),
                    probe("Ping (ms) UDP", ProbeKind::Udp, TOS_CS0),
                ]
            }
        };
        Self {
            kind,
            flows,
            probes,
            sessions: single(),
        }
    }

    /// True if the plan has any load (every test but `ping` and `voip`).
    pub fn has_load(&self) -> bool {
        !self.flows.is_empty()
    }

    /// Each session's probing and load window, and the whole test's length (TOTAL_LENGTH). A
    /// test without load probes for `length`; the others have flent's timeline (DELAY idle,
    /// LENGTH load, DELAY idle), and phases three loads of LENGTH, [`PHASE_GAP`] apart, whose
    /// sessions' probe windows tile the timeline.
    pub fn windows(
        &self,
        delay: std::time::Duration,
        length: std::time::Duration,
    ) -> (Vec<Window>, std::time::Duration) {
        use std::time::Duration;
        if !self.has_load() {
            let w = Window {
                probe_start: Duration::ZERO,
                load_start: Duration::ZERO,
                load_len: Duration::ZERO,
                probe_end: length,
            };
            return (vec![w; self.sessions.len()], length);
        }
        if self.kind != TestKind::Phases {
            let total = length + 2 * delay;
            let w = Window {
                probe_start: Duration::ZERO,
                load_start: delay,
                load_len: length,
                probe_end: total,
            };
            return (vec![w; self.sessions.len()], total);
        }
        let n = self.sessions.len() as u32;
        let total = 2 * delay + length * n + PHASE_GAP * n.saturating_sub(1);
        let windows = (0..n)
            .map(|k| {
                let load_start = delay + (length + PHASE_GAP) * k;
                Window {
                    probe_start: if k == 0 {
                        Duration::ZERO
                    } else {
                        load_start - PHASE_GAP / 2
                    },
                    load_start,
                    load_len: length,
                    probe_end: if k + 1 == n {
                        total
                    } else {
                        load_start + length + PHASE_GAP / 2
                    },
                }
            })
            .collect();
        (windows, total)
    }
}

/// flent's rrul46.conf: rrul's flows and probes, BE/BK over IPv4 and CS5/EF over IPv6, the
/// UDP EF probe replaced by UDP6 BE and UDP6 BK, ICMP over IPv6. Session 0 is IPv4, 1 IPv6
/// (to the second host if one is given: a machine whose name has no AAAA record).
fn rrul46(v6_host: bool) -> Plan {
    let classes = [
        ("BE", TOS_CS0, 0),
        ("BK", TOS_CS1, 0),
        ("CS5", TOS_CS5, 1),
        ("EF", TOS_EF, 1),
    ];
    let mut flows = Vec::new();
    for dir in [Direction::Upload, Direction::Download] {
        for (label, tos, session) in classes {
            flows.push(FlowPlan {
                session,
                ..flow(format!("TCP {} {label}", dir_word(dir)), label, dir, tos)
            });
        }
    }
    let p = |name: &str, kind, tos, session| ProbePlan {
        session,
        ..probe(name, kind, tos)
    };
    let probes = vec![
        p("Ping (ms) UDP BK", ProbeKind::Udp, TOS_CS1, 0),
        p("Ping (ms) UDP BE", ProbeKind::Udp, TOS_CS0, 0),
        p("Ping (ms) ICMP", ProbeKind::Icmp, TOS_CS0, 1),
        p("Ping (ms) UDP6 BE", ProbeKind::Udp, TOS_CS0, 1),
        p("Ping (ms) UDP6 BK", ProbeKind::Udp, TOS_CS1, 1),
    ];
    let s = |host, family| SessionPlan {
        host,
        family,
        phase: None,
    };
    Plan {
        kind: TestKind::Rrul46,
        flows,
        probes,
        sessions: vec![s(0, Family::V4), s(usize::from(v6_host), Family::V6)],
    }
}

/// flent's rtt_fair.conf (with rtt_fair.inc): four streams over the hosts (repeated when fewer
/// than four are given, as flent's min_host_count does), labels BE1 BE2 BK1 BK2 marked CS0 CS0
/// CS1 CS1, ping labels ICMP1–ICMP4; series `TCP upload BE1 HOST`, `TCP download BE1 HOST`,
/// `Ping (ms) ICMP1 HOST`, plus a UDP probe per stream (`Ping (ms) UDP1 HOST`, for one-way
/// delays). One session per distinct host.
fn rtt_fair(hosts: &[String]) -> Plan {
    let given: Vec<&String> = if hosts.is_empty() {
        Vec::new()
    } else {
        hosts.iter().take(4).collect()
    };
    let mut distinct: Vec<&String> = Vec::new();
    for h in &given {
        if !distinct.contains(h) {
            distinct.push(h);
        }
    }
    let labels = [
        ("BE1", TOS_CS0),
        ("BE2", TOS_CS0),
        ("BK1", TOS_CS1),
        ("BK2", TOS_CS1),
    ];
    let (mut flows, mut probes) = (Vec::new(), Vec::new());
    for (i, (label, tos)) in labels.iter().enumerate() {
        let Some(host) = given.get(i % given.len().max(1)) else {
            break;
        };
        let session = distinct.iter().position(|h| h == host).unwrap_or(0);
        for dir in [Direction::Upload, Direction::Download] {
            flows.push(FlowPlan {
                session,
                ..flow(
                    format!("TCP {} {label} {host}", dir_word(dir)),
                    label,
                    dir,
                    *tos,
                )
            });
        }
        probes.push(ProbePlan {
            session,
            ..probe(
                &format!("Ping (ms) ICMP{} {host}", i + 1),
                ProbeKind::Icmp,
                TOS_CS0,
            )
        });
        probes.push(ProbePlan {
            session,
            ..probe(
                &format!("Ping (ms) UDP{} {host}", i + 1),
                ProbeKind::Udp,
                *tos,
            )
        });
    }
    let sessions = (0..distinct.len())
        .map(|i| SessionPlan {
            host: hosts.iter().position(|h| h == distinct[i]).unwrap_or(0),
            family: Family::Any,
            phase: None,
        })
        .collect();
    Plan {
        kind: TestKind::RttFair,
        flows,
        probes,
        sessions,
    }
}

/// crusader's phases: session k runs phase k (download, upload, both) with `streams` flows per
/// loaded direction (`TCP download::1 download`, `TCP upload::1 both`, …), and each session
/// probes (ICMP and UDP, merged into `Ping (ms) ICMP` and `Ping (ms) UDP` across the phases)
/// for its part of the timeline.
fn phases(streams: u8) -> Plan {
    let (mut flows, mut probes, mut sessions) = (Vec::new(), Vec::new(), Vec::new());
    for (k, phase) in Phase::ALL.iter().enumerate() {
        let dirs: &[Direction] = match phase {
            Phase::Download => &[Direction::Download],
            Phase::Upload => &[Direction::Upload],
            Phase::Both => &[Direction::Download, Direction::Upload],
        };
        for &dir in dirs {
            for i in 1..=streams.max(1) {
                flows.push(FlowPlan {
                    session: k,
                    ..flow(
                        format!("TCP {}::{i} {}", dir_word(dir), phase.word()),
                        "BE",
                        dir,
                        TOS_CS0,
                    )
                });
            }
        }
        for (name, kind) in [
            ("Ping (ms) ICMP", ProbeKind::Icmp),
            ("Ping (ms) UDP", ProbeKind::Udp),
        ] {
            probes.push(ProbePlan {
                session: k,
                ..probe(name, kind, TOS_CS0)
            });
        }
        sessions.push(SessionPlan {
            host: 0,
            family: Family::Any,
            phase: Some(*phase),
        });
    }
    Plan {
        kind: TestKind::Phases,
        flows,
        probes,
        sessions,
    }
}

/// `upload` or `download`, as in flent's series names.
pub fn dir_word(d: Direction) -> &'static str {
    match d {
        Direction::Upload => "upload",
        Direction::Download => "download",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rrul_matches_flent_series_names() {
        let p = Plan::new(TestKind::Rrul, 0);
        let names: Vec<&str> = p.flows.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "TCP upload BE",
                "TCP upload BK",
                "TCP upload CS5",
                "TCP upload EF",
                "TCP download BE",
                "TCP download BK",
                "TCP download CS5",
                "TCP download EF"
            ]
        );
        let tos: Vec<u8> = p.flows.iter().map(|f| f.tos).collect();
        assert_eq!(tos, [0x00, 0x20, 0xA0, 0xB8, 0x00, 0x20, 0xA0, 0xB8]);
        let probes: Vec<(&str, u8)> = p.probes.iter().map(|p| (p.name.as_str(), p.tos)).collect();
        assert_eq!(
            probes,
            [
                ("Ping (ms) UDP EF", 0xB8),
                ("Ping (ms) UDP BK", 0x20),
                ("Ping (ms) UDP BE", 0),
                ("Ping (ms) ICMP", 0)
            ]
        );
    }

    #[test]
    fn variants() {
        let be = Plan::new(TestKind::RrulBe, 0);
        assert!(be.flows.iter().all(|f| f.tos == 0));
        assert_eq!(be.flows[5].name, "TCP download BE2");
        assert_eq!(be.probes[2].name, "Ping (ms) UDP BE3");
        let up = Plan::new(TestKind::TcpNup, 3);
        assert_eq!(up.flows.len(), 3);
        assert_eq!(up.flows[2].name, "TCP upload::3");
        assert_eq!(
            Plan::new(TestKind::TcpNdown, 2).flows[1].name,
            "TCP download::2"
        );
        let icmp = Plan::new(TestKind::RrulIcmp, 0);
        assert_eq!(icmp.flows, be.flows);
        assert_eq!(icmp.probes.len(), 1);
        let bidir = Plan::new(TestKind::TcpBidirectional, 0);
        let names: Vec<&str> = bidir.flows.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["TCP download", "TCP upload"]);
        let var = Plan::new(TestKind::RrulVar, 2);
        let names: Vec<&str> = var.flows.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "TCP upload::0 (CS0)",
                "TCP download::0 (CS0)",
                "TCP upload::1 (CS0)",
                "TCP download::1 (CS0)"
            ]
        );
        let pnames: Vec<&str> = var.probes.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            pnames,
            [
                "Ping (ms)::UDP 0 (CS0)",
                "Ping (ms)::UDP 1 (CS0)",
                "Ping (ms)::ICMP"
            ]
        );
        let voip = Plan::new(TestKind::Voip, 0);
        assert!(!voip.has_load());
        assert_eq!(voip.probes[0].name, "VoIP");
        let ping = Plan::new(TestKind::Ping, 0);
        assert!(!ping.has_load());
        assert_eq!(ping.probes.len(), 2);
    }

    #[test]
    fn rrul46_follows_flents_conf() {
        let p = Plan::new(TestKind::Rrul46, 0);
        let v4: Vec<&str> = p
            .flows
            .iter()
            .filter(|f| p.sessions[f.session].family == Family::V4)
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(
            v4,
            [
                "TCP upload BE",
                "TCP upload BK",
                "TCP download BE",
                "TCP download BK"
            ]
        );
        let probes: Vec<(&str, Family)> = p
            .probes
            .iter()
            .map(|q| (q.name.as_str(), p.sessions[q.session].family))
            .collect();
        assert_eq!(
            probes,
            [
                ("Ping (ms) UDP BK", Family::V4),
                ("Ping (ms) UDP BE", Family::V4),
                ("Ping (ms) ICMP", Family::V6),
                ("Ping (ms) UDP6 BE", Family::V6),
                ("Ping (ms) UDP6 BK", Family::V6)
            ]
        );
        assert_eq!(p.flows.len(), 8);
    }

    #[test]
    fn rtt_fair_repeats_hosts_and_names_series_after_them() {
        let hosts = vec!["10.0.0.2".to_string(), "10.0.0.3".to_string()];
        let p = Plan::with_hosts(TestKind::RttFair, 0, &hosts);
        assert_eq!(p.sessions.len(), 2, "one session per distinct host");
        let names: Vec<&str> = p
            .flows
            .iter()
            .filter(|f| f.direction == Direction::Download)
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "TCP download BE1 10.0.0.2",
                "TCP download BE2 10.0.0.3",
                "TCP download BK1 10.0.0.2",
                "TCP download BK2 10.0.0.3"
            ]
        );
        assert_eq!(p.flows[4].tos, TOS_CS1);
        assert_eq!(p.probes[0].name, "Ping (ms) ICMP1 10.0.0.2");
        assert_eq!(p.probes[3].session, 1);
        let four: Vec<String> = (2..7).map(|i| format!("10.0.0.{i}")).collect();
        assert_eq!(
            Plan::with_hosts(TestKind::RttFair, 0, &four).sessions.len(),
            4
        );
    }

    #[test]
    fn phases_tile_the_timeline() {
        use std::time::Duration;
        let p = Plan::new(TestKind::Phases, 2);
        assert_eq!(p.sessions.len(), 3);
        assert_eq!(p.flows.len(), 2 + 2 + 4);
        assert_eq!(p.flows[0].name, "TCP download::1 download");
        assert_eq!(p.flows[7].name, "TCP upload::2 both");
        let (w, total) = p.windows(Duration::from_secs(5), Duration::from_secs(10));
        assert_eq!(total, Duration::from_secs(5 + 10 + 2 + 10 + 2 + 10 + 5));
        assert_eq!(w[0].probe_start, Duration::ZERO);
        assert_eq!(w[1].load_start, Duration::from_secs(17));
        for k in 0..2 {
            assert_eq!(w[k].probe_end, w[k + 1].probe_start, "probe windows tile");
            assert!(w[k].load_start + w[k].load_len < w[k].probe_end);
        }
        assert_eq!(w[2].probe_end, total);
        let (rr, t) =
            Plan::new(TestKind::Rrul, 0).windows(Duration::from_secs(5), Duration::from_secs(10));
        assert_eq!(
            (rr[0].load_start, t),
            (Duration::from_secs(5), Duration::from_secs(20))
        );
    }
}
