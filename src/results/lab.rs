//! The lab's part of the result model: how the lab was configured, what theory predicts for it,
//! and what was measured through it (forwarding capacity, queue-delay accuracy runs, status).

use serde::{Deserialize, Serialize};

/// The bottleneck qdisc on each direction's egress of the router namespace.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Shaper {
    /// `tbf rate R burst B limit BUFFER`: segments GSO packets itself, so offloads do not matter.
    Tbf,
    /// `htb` class (rate = ceil = R) with a `bfifo limit BUFFER` leaf; overshoots with offloads on.
    Htb,
}

impl std::fmt::Display for Shaper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Shaper::Tbf => "tbf",
            Shaper::Htb => "htb",
        })
    }
}

/// The lab as `routerbench lab up` built it (also saved in `/run/routerbench-lab/<name>.json`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LabConfig {
    /// The lab's name; its namespaces are `<name>-lan`, `<name>-rtr`, `<name>-wan`.
    pub name: String,
    pub ns_lan: String,
    pub ns_rtr: String,
    pub ns_wan: String,
    /// LAN host address (in `ns_lan`, device `lan0`).
    pub lan_ip: String,
    /// Router's LAN-side address (`rtr-lan` in `ns_rtr`), the LAN host's default gateway.
    pub rtr_lan_ip: String,
    /// Router's WAN-side address (`rtr-wan` in `ns_rtr`): the masquerade source with NAT.
    pub rtr_wan_ip: String,
    /// WAN host address (in `ns_wan`, device `wan0`).
    pub wan_ip: String,
    /// Upload bottleneck (egress of `rtr-wan`) in bit/s; `None` = unshaped.
    pub up_rate_bps: Option<u64>,
    /// Download bottleneck (egress of `rtr-lan`) in bit/s; `None` = unshaped.
    pub down_rate_bps: Option<u64>,
    /// Queue limit of each bottleneck, bytes (tbf `limit`, or the bfifo leaf of htb).
    pub buffer_bytes: u64,
    /// Token bucket depth of the shaper, bytes.
    pub burst_bytes: u64,
    pub shaper: Shaper,
    /// nftables masquerade on `rtr-wan`; the WAN host then has no route back to the LAN.
    pub nat: bool,
    /// GSO/TSO on (GRO always off) on all four lab veths; off = MTU-sized packets everywhere.
    pub offloads: bool,
    /// The congestion control the lab was asked for (`--cc`), used per socket by lab tests.
    pub cc: String,
    /// The default congestion control actually set in the three namespaces. A non-initial netns
    /// may only pick one listed in the host's `tcp_allowed_congestion_control`, so this can be
    /// `reno` when `cc` is `cubic`.
    pub ns_cc: String,
    /// The lab's device names (files from before this field: the names every lab has used).
    #[serde(default)]
    pub devices: LabDevices,
    /// The router is a VM with its own kernel (`lab up --router vm`), not the router namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router_vm: Option<RouterVm>,
}

/// The VM router's WireGuard tunnel: the kernel module in the VM, wireguard-go (userspace)
/// on the WAN host, whose kernel has no wireguard.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct VmWireguard {
    /// The router's tunnel address (its `wg0`).
    pub rtr_tunnel_ip: String,
    /// The WAN host's tunnel address: tests through the tunnel go to it.
    pub wan_tunnel_ip: String,
    pub tunnel_net: String,
    /// The WAN host's WireGuard interface (wireguard-go's TUN device).
    pub wan_ifname: String,
    pub wan_implementation: String,
    pub listen_port: u16,
    pub mtu: u32,
    pub wireguard_go_pid: i32,
}

/// A Debian package the VM router was built from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct VmPackage {
    pub package: String,
    pub version: String,
    pub sha256: String,
}

/// The VM router of a lab: what it runs, on what budget, and what it said when it came up.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct RouterVm {
    /// `qemu-system-arm -M virt -cpu cortex-a15` and its version line.
    pub emulator: String,
    /// Kernel release, e.g. 6.1.0-57-armmp.
    pub kernel: String,
    pub packages: Vec<VmPackage>,
    /// SHA-256 of the static armv7 routerbench put in the initramfs.
    pub routerbench_sha256: String,
    pub vcpus: u32,
    pub memory_mib: u32,
    /// CPU budget of the whole qemu process, percent of one host core (None: unlimited).
    pub cpu_budget_pct: Option<u32>,
    /// How the budget is enforced (e.g. `cgroup v1 cpu.cfs_quota_us 50000/100000`).
    #[serde(default)]
    pub cpu_budget_how: String,
    /// Root qdisc of each router egress inside the VM: `cake`, `htb+fq_codel`, … or the
    /// kernel's default (`default`).
    pub qdisc_up: String,
    pub qdisc_down: String,
    /// The router's agent and test server inside the VM (`server --monitor`), host:port.
    pub agent: String,
    pub agent_token: String,
    pub qemu_pid: i32,
    /// The serial console's log.
    pub console: String,
    /// Seconds from starting qemu to the router's ready line.
    pub boot_s: f64,
    /// What `routerbench device` says inside the VM.
    pub identity: Option<crate::results::device::DeviceInfo>,
    /// The configuration steps the router reported.
    #[serde(default)]
    pub steps: Vec<String>,
    /// A WireGuard tunnel from the router to the WAN host (`lab up --router vm --wireguard`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wireguard: Option<VmWireguard>,
    /// Which Debian kernel the VM booted: `stable` (bookworm's) or `backports`
    /// (bookworm-backports', the Wi-Fi router's). Absent in older results (stable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_suite: Option<String>,
    /// The Wi-Fi router's access point and stations (`lab up --router vm --wifi N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wifi: Option<VmWifi>,
}

/// The Wi-Fi VM router: mac80211_hwsim radios, hostapd on the first as the access point, one
/// station per other radio, each in its own network namespace inside the VM.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct VmWifi {
    pub ssid: String,
    /// 2.4 GHz channel number.
    pub channel: u32,
    /// `open, 11n, WMM`.
    pub security: String,
    pub ap_phy: String,
    pub ap_dev: String,
    /// The AP interface's address: the stations' gateway (`10.201.3.1/24`).
    pub ap_ip: String,
    pub stations: Vec<VmStation>,
    /// The Debian programs in the image (`hostapd (/usr/sbin/hostapd from hostapd 2:2.10-…)`).
    #[serde(default)]
    pub programs: Vec<String>,
    /// What the emulated Wi-Fi hop is not: every figure of it that is not a radio's.
    pub emulation: String,
}

/// One station of the Wi-Fi VM router.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct VmStation {
    /// 1..N (`lab run --station K`, `lab exec --station K`).
    pub station: u32,
    pub phy: String,
    pub dev: String,
    pub mac: String,
    pub ip: String,
    /// Seconds from `iw connect` to associated.
    pub assoc_s: f64,
}

/// One station's share of a test run from Wi-Fi stations (`lab run TEST --station K`, `lab
/// run rtt_fair`): its throughput and latency, and the AP's counters against its bytes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct StationRun {
    pub station: u32,
    pub mac: String,
    pub ip: String,
    /// The test it ran (`rrul`, `tcp_bidirectional`, …).
    pub test: String,
    /// Mean goodput over the load, Mbit/s (None: no flow that way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub download_mbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upload_mbps: Option<f64>,
    /// Latency while idle and under load (median of its probes), and the loaded p99, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded_p99_ms: Option<f64>,
    /// The AP's counters for this station (read before and after the test) against the
    /// test's own bytes, per direction.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bytes_check: Vec<crate::results::wifi::StationBytesCheck>,
    /// Its full result when several stations ran at once (a single station's is the
    /// envelope's `latency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Box<crate::results::latency::LatencyResult>>,
}

/// The four veth ends of a lab, the same in every lab (each lab has its own namespaces).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LabDevices {
    /// The LAN host's device (in `ns_lan`).
    pub lan: String,
    /// The router's LAN side (in `ns_rtr`): the download bottleneck's egress.
    pub rtr_lan: String,
    /// The router's WAN side (in `ns_rtr`): the upload bottleneck's egress.
    pub rtr_wan: String,
    /// The WAN host's device (in `ns_wan`).
    pub wan: String,
}

impl Default for LabDevices {
    /// `lan0`, `rtr-lan`, `rtr-wan`, `wan0`: what `lab up` has always created (`crate::lab`
    /// checks that its names match).
    fn default() -> Self {
        Self {
            lan: "lan0".into(),
            rtr_lan: "rtr-lan".into(),
            rtr_wan: "rtr-wan".into(),
            wan: "wan0".into(),
        }
    }
}

/// What the lab should show, from its configuration alone.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LabTheory {
    /// buffer·8/up_rate: the standing-queue delay a loss-based TCP upload adds, ms.
    pub up_queue_delay_ms: Option<f64>,
    /// buffer·8/down_rate, ms.
    pub down_queue_delay_ms: Option<f64>,
    /// TCP payload per Ethernet frame that tc counts: 1448/1514 with timestamps at MTU 1500.
    pub goodput_ratio: f64,
    /// goodput_ratio × up rate, bit/s.
    pub up_goodput_bps: Option<f64>,
    /// goodput_ratio × down rate, bit/s.
    pub down_goodput_bps: Option<f64>,
}

/// One unshaped forwarding-capacity measurement through the router namespace.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CapacityPoint {
    pub nat: bool,
    /// Parallel TCP flows, LAN host → WAN host.
    pub flows: u32,
    pub offloads: bool,
    /// Receiver-side goodput, bit/s.
    pub goodput_bps: f64,
    /// Length of the measured transfer, s.
    pub seconds: f64,
    /// Sender retransmits, if the load generator reports them.
    pub retransmits: Option<u64>,
}

/// `routerbench lab capacity`: what the router namespace forwards when nothing shapes it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct CapacityResult {
    /// Which client/server moved the bytes (e.g. "iperf3 3.12 (external)", "routerbench").
    pub generator: String,
    pub points: Vec<CapacityPoint>,
    /// The VM router's CPU budget the points were measured at (percent of one host core;
    /// None = no limit, or the namespace router).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_budget_pct: Option<u32>,
    /// Through the VM router's WireGuard tunnel, beside the crypto row's prediction, per flow
    /// count (`lab capacity --router vm --wireguard`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wireguard: Vec<WireguardCheck>,
}

/// The tunnel's measured goodput against the model (docs/vm-router.md, "WireGuard"): per
/// packet, the router spends its unencrypted forwarding time plus the AEAD's time for one
/// 1456-byte packet, both measured on the same VM at the same CPU budget.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct WireguardCheck {
    pub flows: u32,
    /// Unencrypted goodput on the same boot, bit/s, and the packets per second it means.
    pub plain_goodput_bps: f64,
    pub plain_packets_per_s: f64,
    /// Forwarding time per packet, µs (1 / plain_packets_per_s).
    pub forward_us_per_packet: f64,
    /// The crypto row inside the VM: engine, algorithm, bytes/s at 1456 B (per wall second).
    pub crypto_engine: String,
    pub crypto_algorithm: String,
    pub crypto_bytes_per_s: f64,
    /// AEAD time for one 1456-byte packet, µs.
    pub crypto_us_per_packet: f64,
    /// The model's goodput: TCP payload per tunnel packet / (forward + crypto time).
    pub predicted_goodput_bps: f64,
    /// Through the tunnel, bit/s.
    pub measured_goodput_bps: f64,
    pub measured_seconds: f64,
    pub retransmits: Option<u64>,
    /// (measured − predicted) / predicted, percent.
    pub error_pct: f64,
    pub cpu_budget_pct: Option<u32>,
}

/// Latency samples of one probe series, ms.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct RttSummary {
    pub sent: u32,
    pub received: u32,
    pub median_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub min_ms: Option<f64>,
    pub max_ms: Option<f64>,
}

/// One bulk-TCP run through the bottleneck with RTT probes alongside (`routerbench lab measure`):
/// how close the measured queue delay and goodput come to theory.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AccuracyPoint {
    /// "up" (LAN → WAN, queue on rtr-wan) or "down" (WAN → LAN, queue on rtr-lan).
    pub direction: String,
    pub flows: u32,
    pub cc: String,
    /// The router masqueraded (nftables NAT) during the run.
    #[serde(default)]
    pub nat: bool,
    pub rate_bps: u64,
    pub buffer_bytes: u64,
    pub goodput_bps: f64,
    /// goodput / rate (theory: [`LabTheory::goodput_ratio`]).
    pub goodput_ratio: f64,
    /// What theory expects for goodput / rate: 1448/1514 (files from before this field: that
    /// value, the only one used then).
    #[serde(default = "single_direction_goodput_ratio")]
    pub goodput_theory_ratio: f64,
    pub idle: RttSummary,
    pub loaded: RttSummary,
    /// buffer·8/rate, ms.
    pub theory_ms: f64,
    /// loaded median − idle median, ms: the queue delay the probes saw.
    pub median_increase_ms: Option<f64>,
    /// loaded p99 − idle median, ms.
    pub p99_increase_ms: Option<f64>,
    /// (loaded median − idle median) / theory.
    pub median_ratio: Option<f64>,
    /// (loaded p99 − idle median) / theory.
    pub p99_ratio: Option<f64>,
    pub retransmits: Option<u64>,
    /// Drops of the bottleneck qdisc during the run.
    pub qdisc_drops: Option<u64>,
    /// Which load generator and probe were used.
    pub method: String,
}

/// TCP payload per Ethernet frame with one direction loaded, 1448/1514: the default of
/// [`AccuracyPoint::goodput_theory_ratio`] (`crate::lab::theory` computes it and checks they match).
pub fn single_direction_goodput_ratio() -> f64 {
    1448.0 / 1514.0
}

/// A latency test's queue delay (and goodput) in one direction against theory (`lab run`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct QueueCheck {
    /// "up", "down", "both" (round trip through both queues) or "idle".
    pub direction: String,
    /// What was compared: "UDP one-way delay", "round trip (all probes)", "goodput".
    pub metric: String,
    /// The direction's bottleneck, bit/s (None for round trips and unshaped directions).
    pub rate_bps: Option<u64>,
    pub buffer_bytes: u64,
    /// buffer·8/rate (for round trips: the sum over the loaded directions), ms.
    pub theory_ms: f64,
    /// Median before the load started, ms.
    pub idle_median_ms: Option<f64>,
    /// From the end of the warm-up to the end of the load.
    pub loaded: RttSummary,
    pub median_increase_ms: Option<f64>,
    pub p99_increase_ms: Option<f64>,
    pub median_ratio: Option<f64>,
    pub p99_ratio: Option<f64>,
    /// Goodput in this direction over the same window as the delays (after the warm-up, so slow
    /// start does not count), all flows summed, bit/s.
    pub goodput_bps: Option<f64>,
    /// goodput / rate.
    pub goodput_ratio: Option<f64>,
    /// The kernel's view: the bottleneck qdisc's backlog·8/rate, sampled every 0.1 s over the
    /// same window, median and p99, ms (per direction only).
    #[serde(default)]
    pub qdisc_median_ms: Option<f64>,
    #[serde(default)]
    pub qdisc_p99_ms: Option<f64>,
    /// What theory expects for goodput / rate: 1448/1514 = 0.957 with one direction loaded,
    /// 1448/(1514 + 66/2) = 0.936 when the link also carries the other direction's ACKs.
    pub goodput_theory_ratio: Option<f64>,
    /// The phase the check covers (`download`, `upload`, `both`) for a test with phases
    /// (`lab run phases`): its window is that phase's load, not the whole test's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
}

/// Counters of one qdisc on a router-namespace device (from `tc -s -j qdisc show`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct QdiscStats {
    pub dev: String,
    pub kind: String,
    pub handle: String,
    pub root: bool,
    pub bytes: u64,
    pub packets: u64,
    pub drops: u64,
    pub overlimits: u64,
    pub backlog_bytes: u64,
    pub qlen: u64,
}

/// One namespace of the lab as `routerbench lab status` sees it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct NamespaceStatus {
    pub name: String,
    pub exists: bool,
    /// `dev addr/prefix` for each IPv4 address.
    pub addresses: Vec<String>,
    pub routes: Vec<String>,
    pub tcp_congestion_control: Option<String>,
    pub ip_forward: Option<bool>,
}

/// `routerbench lab status`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct LabStatus {
    pub name: String,
    /// All three namespaces and both router veths exist.
    pub up: bool,
    pub config: Option<LabConfig>,
    /// What theory predicts for `config`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theory: Option<LabTheory>,
    pub namespaces: Vec<NamespaceStatus>,
    pub qdiscs: Vec<QdiscStats>,
    /// `dev: gso=on tso=off gro=off` for the router's two devices.
    pub offloads: Vec<String>,
    /// The router namespace's nftables ruleset (empty without NAT).
    pub nft_ruleset: Option<String>,
    /// A UDP echo from the LAN host to the WAN host came back.
    pub reachable: Option<bool>,
    /// Its round trip, ms.
    pub reach_rtt_ms: Option<f64>,
    /// The AQM `lab up --qdisc` installed (None: the plain FIFO shaper).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aqm: Option<AqmState>,
    /// With a VM router: whether its qemu still runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm_running: Option<bool>,
}

/// One rate tried by the SQM capacity search.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct SqmPoint {
    pub rate_bps: u64,
    pub goodput_bps: f64,
    /// goodput / (1448/1514 × rate): 1.0 = the shaper delivered its whole rate.
    pub goodput_of_theory: f64,
    /// Loaded p99 − idle median of the UDP round-trip probes, ms.
    pub p99_increase_ms: Option<f64>,
    pub pass: bool,
    /// Measured twice (the first try missed, the re-measure decided).
    #[serde(default)]
    pub remeasured: bool,
    /// Userspace forwarder: CPU time (both directions' threads) per frame received, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forwarder_cpu_us_per_packet: Option<f64>,
}

/// `lab capacity --qdisc Q`: the highest shaped rate this CPU sustains with the qdisc.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct SqmCapacity {
    /// cake or fq_codel (or codel/fifo).
    pub qdisc: String,
    /// "kernel" or "userspace" (routerbench shape).
    pub place: String,
    /// The pass criteria, in words.
    pub criteria: String,
    /// Highest passing rate, bit/s (None: even the lowest rate tried failed).
    pub capacity_bps: Option<u64>,
    pub points: Vec<SqmPoint>,
    /// Flows, seconds per point, buffer rule.
    pub method: String,
    /// The router it ran on, with its CPU budget (the VM router: vCPUs, budget, how).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router: Option<String>,
    /// What ended the search (None: a result written before routerbench recorded it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<SearchStop>,
}

/// What ended an SQM capacity search. Only `Bracketed` means the capacity was found between a
/// passing and a failing rate; the others leave a lower bound (`Budget`, `MaxRate`, `StepLimit`
/// with no failure) or nothing (`MinRate`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum SearchStop {
    /// A rate failed and the refinement narrowed the step to 1/16 of the capacity (or used up
    /// its steps).
    Bracketed,
    /// The time budget ran out before the next rate (`failed`: a rate had failed by then).
    Budget { seconds: u64, failed: bool },
    /// The highest rate allowed (`--max-rate`) passed.
    MaxRate { bps: u64 },
    /// The lowest rate allowed failed.
    MinRate { bps: u64 },
    /// The doubling used all its steps without a failure.
    StepLimit,
}

/// Which AQM a lab runs and where (`lab up --qdisc Q --aqm kernel|userspace`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct AqmState {
    /// fifo, codel, fq_codel or cake.
    pub qdisc: String,
    /// "kernel" (tc qdiscs) or "userspace" (`routerbench shape`, the aqm crate).
    pub place: String,
    /// The forwarder's supervisor and worker processes (userspace only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forwarder_pid: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_pid: Option<i32>,
    /// Kernel forwarding of rtr-lan and rtr-wan (off while the userspace forwarder runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_forwarding: Option<bool>,
    pub note: String,
}

/// `routerbench lab up`: the lab built, its theory, and the AQM put on it (None: the shaper's
/// own FIFO in the kernel).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LabUp {
    pub config: LabConfig,
    pub theory: LabTheory,
    pub aqm: Option<AqmState>,
}

/// The lab section of a [`super::RunResult`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LabResult {
    pub config: LabConfig,
    pub theory: LabTheory,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityResult>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accuracy: Vec<AccuracyPoint>,
    /// The latency test run inside the lab (`routerbench lab run <test>`), if any; its full
    /// result is the envelope's `latency` section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<String>,
    /// That test's queue delays and goodput against theory.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<QueueCheck>,
    /// With a VM router: the host-side taps' queues (in front of the router), sampled every
    /// 0.1 s during the test.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tap_queues: Vec<TapQueue>,
    /// With a VM router: did it run out of CPU, and where did the queue build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router_verdict: Option<RouterVerdict>,
    /// The Wi-Fi station the test ran from (`lab run TEST --station K`); None: the LAN host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub station: Option<u32>,
    /// Per station: its throughput, latency and byte check (one for `--station K`, all of
    /// them for `rtt_fair`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stations: Vec<StationRun>,
    /// Jain's fairness index over the stations' throughputs (download + upload), with two or
    /// more stations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_jain: Option<f64>,
    /// The Wi-Fi hop is emulated: what that means for the figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wifi_emulated: Option<String>,
}

/// The root qdisc of a tap on the host side of the VM router: packets wait here when the VM
/// does not take them fast enough (the NIC ring in front of the router).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct TapQueue {
    pub ns: String,
    pub dev: String,
    /// "upload" (LAN tap: packets towards the router's LAN NIC) or "download" (WAN tap).
    pub direction: String,
    pub qdisc: String,
    pub samples: u32,
    pub backlog_max_bytes: u64,
    pub backlog_p95_bytes: u64,
    /// Drops of the tap's root qdisc during the test.
    pub drops: u64,
    /// The tun device's own ring behind the qdisc (`tx_queue_len` packets; qemu reads from
    /// it): packets the qdisc handed on minus packets qemu read minus packets the ring dropped,
    /// from the qdisc's counters and /proc/net/dev, every 0.1 s. Absent in older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ring: Option<TunRing>,
}

/// What sat in a tap's tun ring during a test (estimated from counters, see `TapQueue::ring`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct TunRing {
    /// The ring's size, packets (the tap's `tx_queue_len` when qemu attached).
    pub capacity_packets: Option<u64>,
    pub max_packets: u64,
    pub max_bytes: u64,
    pub p95_bytes: u64,
    /// Packets the tun device dropped because its ring was full (`tx_drop` delta).
    pub drops: u64,
}

/// One place a queue can build on the VM router's path.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct QueuePlace {
    /// "router qdisc", "tun ring in front of the router", "tap qdisc in front of the router".
    pub place: String,
    pub dev: String,
    pub peak_bytes: u64,
}

/// One line's worth of judgement on the VM router during a test.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct RouterVerdict {
    /// The busiest core was ≥ 95 % busy at the 95th percentile of the load.
    pub cpu_saturated: Option<bool>,
    pub busiest_cpu_p95_pct: Option<f64>,
    pub softirq_max_pct: Option<f64>,
    pub time_squeeze_total: Option<u64>,
    /// Where the largest queue built: "router qdisc", "tun ring in front of the router",
    /// "tap qdisc in front of the router" or "none" (older results: also "both").
    pub queue_at: String,
    /// Every place whose queue held at least ~10 full frames, largest first, with its peak.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queues_built: Vec<QueuePlace>,
    /// The router's own fullest qdisc (device, peak bytes).
    pub router_queue_dev: Option<String>,
    pub router_queue_peak_bytes: Option<u64>,
    /// The fuller tap (device, peak bytes).
    pub tap_queue_dev: Option<String>,
    pub tap_queue_peak_bytes: Option<u64>,
    /// The VM died during the test (seconds after the test's start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm_died_at_s: Option<f64>,
    pub line: String,
}

impl LabResult {
    /// The section of a lab that is only up (configured, nothing measured in it yet).
    pub fn new(config: LabConfig, theory: LabTheory) -> Self {
        LabResult {
            config,
            theory,
            capacity: None,
            accuracy: Vec::new(),
            test: None,
            checks: Vec::new(),
            tap_queues: Vec::new(),
            router_verdict: None,
            station: None,
            stations: Vec::new(),
            throughput_jain: None,
            wifi_emulated: None,
        }
    }
}
