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
}

impl TestKind {
    /// The plot flent draws for this test by default (its `.conf` DEFAULTS).
    pub fn flent_default_plot(self) -> &'static str {
        match self {
            Self::Rrul | Self::RrulBe | Self::RrulVar => "all_scaled",
            Self::Voip => "voip_delay",
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
}

/// Flows and probes of one test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub kind: TestKind,
    pub flows: Vec<FlowPlan>,
    pub probes: Vec<ProbePlan>,
}

fn flow(name: String, label: &str, direction: Direction, tos: u8) -> FlowPlan {
    FlowPlan {
        name,
        label: label.into(),
        direction,
        tos,
    }
}

fn probe(name: &str, kind: ProbeKind, tos: u8) -> ProbePlan {
    ProbePlan {
        name: name.into(),
        kind,
        tos,
    }
}

impl Plan {
    /// The plan of `kind`; `streams` is N for tcp_nup/tcp_ndown (ignored otherwise).
    pub fn new(kind: TestKind, streams: u8) -> Self {
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
                    probes.push(ProbePlan {
                        name: format!("Ping (ms)::UDP {label}"),
                        kind: ProbeKind::Udp,
                        tos: TOS_CS0,
                    });
                }
                probes.push(probe("Ping (ms)::ICMP", ProbeKind::Icmp, TOS_CS0));
                probes
            }
            TestKind::Voip => vec![probe("VoIP", ProbeKind::Udp, TOS_CS0)],
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
        }
    }

    /// True if the plan has any load (every test but `ping` and `voip`).
    pub fn has_load(&self) -> bool {
        !self.flows.is_empty()
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
}
