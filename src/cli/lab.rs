//! `routerbench lab`: build, inspect and remove the netns router lab, and measure through it.

use crate::lab::{self, LabGuard, LabSpec, load::ExternalIperf3, load::LoadGenerator, tc_shaper};
use crate::report::export::{Exporter, flent::Flent};
use crate::results::RunResult;
use crate::results::lab::{LabResult, Shaper};
use clap::{Args, Subcommand, ValueEnum};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct LabArgs {
    #[command(subcommand)]
    pub command: LabCommand,
}

#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// Create or reconfigure the lab (idempotent): namespaces, veths, shaping, NAT, offloads, cc.
    Up(UpArgs),
    /// Stop processes inside the lab's namespaces and delete them (safe to run twice).
    Down(NameArg),
    /// Show the lab: addresses, routes, qdisc counters, NAT rules, reachability. Exit 1 if down.
    Status(StatusArgs),
    /// One bulk TCP run through the bottleneck with UDP probes: measured queue delay vs theory.
    Measure(MeasureArgs),
    /// Unshaped forwarding capacity through the router namespace, NAT off/on, 1 and 4 flows.
    Capacity(CapacityArgs),
    /// A latency test through the lab (server in the WAN host, client in the LAN host, monitor
    /// in the router), compared with theory.
    Run(RunArgs),
    /// Run routerbench inside the lab's VM router (`lab up --router vm`) through its control
    /// port, e.g. `lab exec --name N -- crypto --algorithms wireguard`; its output is printed.
    Exec(ExecArgs),
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    #[command(flatten)]
    pub name: NameArg,
    /// Seconds before the command is killed inside the VM.
    #[arg(long, default_value_t = 600.0)]
    pub timeout: f64,
    /// Run it in Wi-Fi station K's namespaces (`lab up --router vm --wifi N`).
    #[arg(long, value_name = "K")]
    pub station: Option<u32>,
    /// Run this Debian program of the image instead of routerbench: iperf3 or openssl (`speed`,
    /// `version`), put there by `lab up --extras` (never a shell).
    #[arg(long, value_name = "NAME")]
    pub program: Option<String>,
    /// Start the command and return at once with its PID; it is killed inside the VM when
    /// --timeout ends (e.g. iperf3's server: `--background --program iperf3 -- -s -1`).
    #[arg(long)]
    pub background: bool,
    /// Print the whole reply as JSON (status, stdout, stderr, the VM's CPU seconds while the
    /// command ran, its wall time) instead of the command's output.
    #[arg(long)]
    pub reply_json: bool,
    /// The command's arguments inside the VM (after `--`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    pub args: Vec<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TestArg {
    Rrul,
    #[value(name = "rrul_be")]
    RrulBe,
    #[value(name = "tcp_nup")]
    TcpNup,
    #[value(name = "tcp_ndown")]
    TcpNdown,
    Ping,
    #[value(name = "rrul_icmp")]
    RrulIcmp,
    #[value(name = "tcp_bidirectional")]
    TcpBidirectional,
    /// crusader's phases: download, then upload, then both (`-n` flows per loaded direction),
    /// each phase's queue delays against theory.
    Phases,
    /// With a Wi-Fi lab (`--wifi N`): every station at once (flent's rtt_fair style: an
    /// upload, a download and a ping from each), per-station throughput and latency side by
    /// side with Jain's index over their throughputs.
    #[value(name = "rtt_fair")]
    RttFair,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[arg(value_enum)]
    pub test: TestArg,
    #[command(flatten)]
    pub name: NameArg,
    /// Load length in seconds.
    #[arg(allow_negative_numbers = true, short, long, default_value_t = 30.0)]
    pub length: f64,
    /// Idle time before and after the load, seconds.
    #[arg(allow_negative_numbers = true, long, default_value_t = 2.0)]
    pub delay: f64,
    /// Sampling step, seconds.
    #[arg(allow_negative_numbers = true, short, long, default_value_t = 0.1)]
    pub step: f64,
    /// Probe interval, seconds (default: the step).
    #[arg(allow_negative_numbers = true, long)]
    pub interval: Option<f64>,
    /// Flows for tcp_nup / tcp_ndown, and per loaded direction for phases.
    #[arg(short = 'n', long, default_value_t = 4)]
    pub streams: u8,
    /// Congestion control of every flow (default: the lab's --cc).
    #[arg(long)]
    pub cc: Option<String>,
    /// Seconds of load skipped before queue delays are compared with theory.
    #[arg(allow_negative_numbers = true, long, default_value_t = 2.0)]
    pub warmup: f64,
    /// The result (routerbench JSON: latency, lab, monitor): `--json [FILE|-]`, see
    /// `crate::cli::common::json_arg`.
    #[command(flatten)]
    pub json: crate::cli::common::json_arg::JsonArg,
    /// Write flent's data format to FILE.flent.gz (from several Wi-Fi stations: one file per
    /// station, FILE-stationK.flent.gz).
    #[arg(long, value_name = "FILE")]
    pub flent: Option<std::path::PathBuf>,
    /// No progress line.
    #[arg(short, long)]
    pub quiet: bool,
    /// Print only the comparison rows (no header, no latency report): for bench scripts.
    #[arg(long)]
    pub rows: bool,
    /// Through the VM router's WireGuard tunnel (`lab up --router vm --wireguard`): the test
    /// goes to the WAN host's tunnel address.
    #[arg(long)]
    pub tunnel: bool,
    /// With a Wi-Fi lab (`lab up --router vm --wifi N`): run the client in station K (inside
    /// the VM, through the emulated Wi-Fi hop, the AP and the router) instead of the LAN host.
    #[arg(long, value_name = "K", conflicts_with = "stations")]
    pub station: Option<u32>,
    /// With a Wi-Fi lab: run the client in these stations at once (`1,2` or `all`).
    #[arg(long, value_name = "K,L|all")]
    pub stations: Option<String>,
}

#[derive(Debug, Args)]
pub struct NameArg {
    /// Lab name: namespaces are <name>-lan, <name>-rtr, <name>-wan.
    #[arg(long, default_value = lab::DEFAULT_NAME)]
    pub name: String,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ShaperArg {
    Tbf,
    Htb,
}

#[derive(Debug, Args)]
pub struct UpArgs {
    #[command(flatten)]
    pub name: NameArg,
    /// Upload bottleneck (router -> WAN), e.g. 20mbit, 50M, 1gbit; none = unshaped (default
    /// 50mbit, or none with --router vm: the VM router's own ceiling).
    #[arg(long, allow_hyphen_values = true)]
    pub rate: Option<String>,
    /// Download bottleneck (router -> LAN); default: same as --rate.
    #[arg(long, allow_hyphen_values = true)]
    pub down_rate: Option<String>,
    /// Queue limit of each bottleneck in bytes (k = 1000, m = 1000000).
    #[arg(long, allow_hyphen_values = true, default_value = "300000")]
    pub buffer: String,
    /// Token bucket depth in bytes.
    #[arg(long, allow_hyphen_values = true, default_value = "15360")]
    pub burst: String,
    #[arg(long, value_enum, default_value = "tbf")]
    pub shaper: ShaperArg,
    /// Masquerade on the router's WAN side (nftables); the WAN host gets no route to the LAN.
    #[arg(long)]
    pub nat: bool,
    /// GSO/TSO on the lab's veths (GRO stays off).
    #[arg(long, value_enum, default_value = "off")]
    pub offloads: OnOff,
    /// TCP congestion control for the lab (loss-based cubic/reno fill the queue; bbr does not).
    #[arg(long, default_value = "cubic")]
    pub cc: String,
    /// The bottleneck's queue discipline (fifo = the --shaper's FIFO of --buffer bytes).
    #[arg(long, value_enum, default_value = "fifo")]
    pub qdisc: crate::cli::common::qdisc_arg::QdiscArg,
    /// Where the qdisc runs: the kernel's if it has it (auto), or routerbench's userspace
    /// forwarder (`routerbench shape`).
    #[arg(long, value_enum, default_value = "auto")]
    pub aqm: AqmArg,
    /// The configuration as JSON: `--json [FILE|-]`, see `crate::cli::common::json_arg`.
    #[command(flatten)]
    pub json: crate::cli::common::json_arg::JsonArg,
    #[command(flatten)]
    pub vm: VmArgs,
}

/// What the lab's router is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RouterArg {
    /// The router namespace: this host's kernel and CPU.
    Netns,
    /// An emulated ARM router with its own kernel (qemu-system-arm, Debian's armmp kernel).
    Vm,
}

/// The VM router's knobs (`lab up --router vm`).
#[derive(Debug, Args)]
pub struct VmArgs {
    /// The router: the namespace (this host's kernel) or a VM with its own ARM kernel.
    #[arg(long, value_enum, default_value = "netns")]
    pub router: RouterArg,
    /// With --router vm: virtual CPUs (default 2; 1 with --vm-arch mipsel).
    #[arg(long)]
    pub vcpus: Option<u32>,
    /// With --router vm: memory, MiB.
    #[arg(long, default_value_t = 256)]
    pub vm_memory: u32,
    /// With --router vm: CPU budget of the whole VM, percent of one host core (a cgroup's
    /// cpu.max / cfs quota on qemu), to make a weaker router. Default: no limit.
    #[arg(long)]
    pub cpu_budget: Option<u32>,
    /// With --router vm: where the Debian packages are downloaded and unpacked
    /// (default ~/.cache/routerbench/vm).
    #[arg(long, value_name = "DIR")]
    pub cache: Option<std::path::PathBuf>,
    /// With --router vm: the static armv7 routerbench to run inside (default: what
    /// `TARGETS=armv7 bench/cross.sh` built under target/cross-std).
    #[arg(long, value_name = "FILE")]
    pub router_bin: Option<std::path::PathBuf>,
    /// With --router vm: a WireGuard tunnel from the router (its kernel's module) to the WAN
    /// host (wireguard-go + wg there); `lab run/measure --tunnel` go through it, `lab
    /// capacity` adds the tunnel's throughput and its prediction from the crypto row.
    #[arg(long)]
    pub wireguard: bool,
    /// With --router vm: the emulated router's CPU. armv7: qemu-system-arm, Debian's armmp
    /// kernel. mipsel: qemu-system-mipsel -M malta -cpu 34Kf (MT7621-like), Debian's 4kc-malta
    /// kernel, the `TARGETS=mipsel bench/cross.sh` build (--vcpus 1, --vm-memory up to 256).
    #[arg(long, value_enum, default_value = "armv7")]
    pub vm_arch: VmArchArg,
    /// With --router vm: a Wi-Fi router with N stations (1-8): mac80211_hwsim radios, hostapd
    /// on the first (open network, 2.4 GHz channel 1, 11n, WMM, 10.201.3.1/24), station K in
    /// its own namespace in the VM at 10.201.3.(10+K). `lab run TEST --station K`, `lab run
    /// rtt_fair`, `lab exec --station K`. The Wi-Fi hop is emulated (docs/vm-router.md).
    #[arg(long, value_name = "N")]
    pub wifi: Option<u32>,
    /// With --wifi: seconds each station may take to associate.
    #[arg(long, default_value_t = 30.0, value_name = "S")]
    pub wifi_assoc_timeout: f64,
    /// With --router vm: Debian's kernel: stable (bookworm's 6.1) or backports
    /// (bookworm-backports' 6.12: mac80211's fq_codel queues for hwsim). Default: backports
    /// with --wifi, else stable.
    #[arg(long, value_enum)]
    pub vm_kernel: Option<VmKernelArg>,
    /// With --router vm: Debian programs in the image with their libraries, for `lab exec
    /// --program`: iperf3, openssl (the seed's tools beside routerbench on the router's CPU;
    /// bench/vm-loopback-vs-iperf3.sh).
    #[arg(long, value_delimiter = ',', value_name = "NAME,…")]
    pub extras: Vec<String>,
}

/// `--vm-kernel`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VmKernelArg {
    Stable,
    Backports,
}

/// `--vm-arch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VmArchArg {
    Armv7,
    Mipsel,
}

impl VmArgs {
    pub fn spec(&self, qdisc: aqm::QdiscKind, userspace: bool) -> lab::vm::VmSpec {
        let arch = match self.vm_arch {
            VmArchArg::Armv7 => lab::vm::VmArch::Armv7,
            VmArchArg::Mipsel => lab::vm::VmArch::Mipsel,
        };
        let mut v = lab::vm::VmSpec {
            vcpus: self.vcpus.unwrap_or(arch.default_vcpus()),
            memory_mib: self.vm_memory,
            cpu_budget_pct: self.cpu_budget,
            router_bin: self.router_bin.clone(),
            qdisc,
            userspace_aqm: userspace,
            wireguard: self.wireguard,
            arch,
            kernel: self.vm_kernel.map(|k| match k {
                VmKernelArg::Stable => lab::vm::assets::VmKernel::Stable,
                VmKernelArg::Backports => lab::vm::assets::VmKernel::Backports,
            }),
            wifi: self.wifi.map(|n| lab::vm::WifiSpec {
                stations: n,
                assoc_timeout: Duration::from_secs_f64(
                    if self.wifi_assoc_timeout.is_finite() && self.wifi_assoc_timeout > 0.0 {
                        self.wifi_assoc_timeout
                    } else {
                        0.0
                    },
                ),
            }),
            extras: self.extras.clone(),
            ..Default::default()
        };
        if let Some(c) = &self.cache {
            v.cache = c.clone();
        }
        v
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum AqmArg {
    Auto,
    Kernel,
    Userspace,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub name: NameArg,
    #[command(flatten)]
    pub json: crate::cli::common::json_arg::JsonArg,
}

/// Who moves the bytes.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LoadArg {
    /// routerbench's own iperf3 client and server, threads inside the namespaces.
    Routerbench,
    /// Debian's iperf3 binary through `ip netns exec` (a cross-check with an independent tool).
    Iperf3,
}

fn generator(l: LoadArg) -> Arc<dyn LoadGenerator> {
    match l {
        LoadArg::Routerbench => Arc::new(lab::native_load::NativeIperf3),
        LoadArg::Iperf3 => Arc::new(ExternalIperf3::default()),
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Direction {
    Up,
    Down,
}

#[derive(Debug, Args)]
pub struct MeasureArgs {
    #[command(flatten)]
    pub name: NameArg,
    #[arg(long, value_enum, default_value = "up")]
    pub dir: Direction,
    #[arg(long, default_value_t = 1)]
    pub flows: u32,
    /// Seconds of load.
    #[arg(long, default_value_t = 10)]
    pub length: u32,
    /// Seconds before the loaded probes start.
    #[arg(long, default_value_t = 2.0)]
    pub warmup: f64,
    /// Congestion control of the load (default: the lab's --cc).
    #[arg(long)]
    pub cc: Option<String>,
    #[arg(long, value_enum, default_value = "routerbench")]
    pub load: LoadArg,
    /// Print only the markdown table row (for bench scripts).
    #[arg(long)]
    pub row: bool,
    #[command(flatten)]
    pub json: crate::cli::common::json_arg::JsonArg,
    /// Through the VM router's WireGuard tunnel (`lab up --router vm --wireguard`).
    #[arg(long)]
    pub tunnel: bool,
}

#[derive(Debug, Args)]
pub struct CapacityArgs {
    /// Lab name to build for the measurement (deleted afterwards unless --keep); an existing
    /// lab of that name is refused, never rebuilt.
    #[arg(long, default_value = "rbcap")]
    pub name: String,
    #[arg(long, value_enum, default_value = "off")]
    pub offloads: OnOff,
    /// Seconds per point.
    #[arg(long, default_value_t = 5)]
    pub length: u32,
    /// Flow counts to measure.
    #[arg(long, value_delimiter = ',', default_value = "1,4")]
    pub flows: Vec<u32>,
    #[arg(long, default_value = "cubic")]
    pub cc: String,
    #[arg(long, value_enum, default_value = "routerbench")]
    pub load: LoadArg,
    /// Leave the lab up afterwards.
    #[arg(long)]
    pub keep: bool,
    /// SQM capacity instead: the highest shaped rate this CPU sustains with this qdisc
    /// (goodput >= 0.95 of the rate's TCP goodput, p99 latency increase < 15 ms).
    #[arg(long, value_enum)]
    pub qdisc: Option<crate::cli::common::qdisc_arg::QdiscArg>,
    /// With --qdisc: kernel qdisc if present (auto), or force kernel / userspace.
    #[arg(long, value_enum, default_value = "auto")]
    pub aqm: AqmArg,
    /// With --qdisc: highest rate to try (default: no real ceiling; doubling goes on until a
    /// rate fails or the budget is spent).
    #[arg(long, default_value = "100gbit")]
    pub max_rate: String,
    /// With --qdisc: seconds after which no new point starts.
    #[arg(long, default_value_t = 300)]
    pub budget: u64,
    /// With --router vm: SQM capacity of kernel cake, kernel fq_codel+htb and routerbench's
    /// userspace cake (inside the VM) on the same VM and CPU budget, one after the other in
    /// one run, as one table (--budget applies to each).
    #[arg(long)]
    pub side_by_side: bool,
    #[command(flatten)]
    pub json: crate::cli::common::json_arg::JsonArg,
    #[command(flatten)]
    pub vm: VmArgs,
}

pub fn run(args: LabArgs) -> anyhow::Result<i32> {
    match args.command {
        LabCommand::Up(a) => cmd_up(a),
        LabCommand::Down(a) => cmd_down(a),
        LabCommand::Status(a) => cmd_status(a),
        LabCommand::Measure(a) => cmd_measure(a),
        LabCommand::Capacity(a) => cmd_capacity(a),
        LabCommand::Run(a) => cmd_run(a),
        LabCommand::Exec(a) => cmd_exec(a),
    }
}

fn cmd_exec(a: ExecArgs) -> anyhow::Result<i32> {
    lab::sys::require_root()?;
    if !(a.timeout.is_finite() && (1.0..=7200.0).contains(&a.timeout)) {
        anyhow::bail!("--timeout must be 1-7200 s");
    }
    let cfg = lab::load_config(&a.name.name)?;
    if let Some(k) = a.station {
        let have = lab::wifi_run::stations(&cfg)?;
        lab::wifi_run::parse_stations(&k.to_string(), &have)?;
    }
    let r = lab::vm::control::exec_with(
        &cfg,
        a.station,
        a.program.as_deref(),
        a.background,
        &a.args,
        Duration::from_secs_f64(a.timeout),
    )?;
    if a.reply_json {
        crate::outln!("{}", serde_json::to_string(&r)?);
        return Ok(if a.background || r.status == Some(0) {
            0
        } else {
            1
        });
    }
    if a.background {
        crate::outln!(
            "started in the VM: PID {} (killed after {} s)",
            r.pid.unwrap_or(0),
            a.timeout
        );
        return Ok(0);
    }
    crate::out!("{}", r.stdout);
    if !r.stderr.is_empty() {
        crate::err!("{}", r.stderr);
    }
    if r.timed_out {
        anyhow::bail!("the command was killed inside the VM after {} s", a.timeout);
    }
    Ok(r.status.unwrap_or(1))
}

fn spec_from(a: &UpArgs) -> anyhow::Result<LabSpec> {
    let default_rate = if a.vm.router == RouterArg::Vm {
        "none"
    } else {
        "50mbit"
    };
    let up_rate = tc_shaper::parse_rate(a.rate.as_deref().unwrap_or(default_rate))?;
    let down_rate = match &a.down_rate {
        Some(r) => tc_shaper::parse_rate(r)?,
        None => up_rate,
    };
    Ok(LabSpec {
        name: a.name.name.clone(),
        up_rate_bps: up_rate,
        down_rate_bps: down_rate,
        buffer_bytes: tc_shaper::parse_bytes(&a.buffer)?,
        burst_bytes: tc_shaper::parse_bytes(&a.burst)?,
        shaper: match a.shaper {
            ShaperArg::Tbf => Shaper::Tbf,
            ShaperArg::Htb => Shaper::Htb,
        },
        nat: a.nat,
        offloads: matches!(a.offloads, OnOff::On),
        cc: a.cc.clone(),
    })
}

/// Seconds of queueing a full buffer adds at `rate_bps` above which a lab is surely a typo.
const SLOW_QUEUE_S: f64 = 10.0;

fn cmd_up(a: UpArgs) -> anyhow::Result<i32> {
    a.json.check()?;
    let spec = spec_from(&a)?;
    for (dir, rate) in [
        ("upload", spec.up_rate_bps),
        ("download", spec.down_rate_bps),
    ] {
        if let Some(bps) = rate {
            let queue_s = spec.buffer_bytes as f64 * 8.0 / bps as f64;
            if queue_s > SLOW_QUEUE_S {
                crate::errln!(
                    "routerbench lab: warning: a full {} B buffer at the {dir} rate {} adds \
                     {queue_s:.0} s of delay (over {SLOW_QUEUE_S:.0} s): is the rate or \
                     --buffer a typo?",
                    spec.buffer_bytes,
                    crate::util::units::human_rate(bps as f64)
                );
            }
        }
    }
    let vm = a.vm.router == RouterArg::Vm;
    if a.vm.wireguard && !vm {
        anyhow::bail!("--wireguard needs --router vm (this host's kernel has no wireguard)");
    }
    if (a.vm.wifi.is_some() || a.vm.vm_kernel.is_some() || !a.vm.extras.is_empty()) && !vm {
        anyhow::bail!(
            "--wifi, --vm-kernel and --extras need --router vm (the Wi-Fi router's radios are \
             mac80211_hwsim in the VM's own kernel; the extras go into the VM's image)"
        );
    }
    let cfg = if vm {
        let userspace = matches!(a.aqm, AqmArg::Userspace);
        lab::vm::up(&spec, &a.vm.spec(a.qdisc.kind(), userspace))?
    } else {
        lab::up(&spec)?
    };
    let th = lab::theory::theory(&cfg);
    let aqm = if vm {
        None
    } else {
        apply_aqm(&cfg, a.qdisc, a.aqm)?
    };
    if !a.json.on_stdout() {
        crate::out!("{}", crate::report::lab::config(&cfg, &th));
        if let Some(q) = &aqm {
            crate::outln!("{}", crate::report::lab::aqm_line(q));
        }
        if let Some(r) = &cfg.router_vm {
            crate::out!("{}", crate::report::lab::router_vm(r));
        }
    }
    let up = crate::results::lab::LabUp {
        config: cfg,
        theory: th,
        aqm,
    };
    if let Some(path) = a.json.write(&up)? {
        crate::outln!("saved {}", path.display());
    }
    Ok(0)
}

/// `--qdisc`/`--aqm` on a lab that is up; None for the plain kernel FIFO.
fn apply_aqm(
    cfg: &crate::results::lab::LabConfig,
    qdisc: crate::cli::common::qdisc_arg::QdiscArg,
    place: AqmArg,
) -> anyhow::Result<Option<crate::results::lab::AqmState>> {
    use lab::aqm_forwarder::{AqmPlace, AqmSpec};
    let place = match place {
        AqmArg::Auto => None,
        AqmArg::Kernel => Some(AqmPlace::Kernel),
        AqmArg::Userspace => Some(AqmPlace::Userspace),
    };
    let spec = AqmSpec {
        qdisc: qdisc.kind(),
        place,
    };
    if spec.qdisc == aqm::QdiscKind::Fifo && place != Some(AqmPlace::Userspace) {
        return Ok(None);
    }
    let exe = lab::aqm_forwarder::routerbench_exe()?;
    Ok(Some(lab::aqm_forwarder::apply(cfg, &spec, &exe)?))
}

fn cmd_down(a: NameArg) -> anyhow::Result<i32> {
    let r = lab::down(&a.name)?;
    if r.removed.is_empty() {
        crate::outln!("lab {}: nothing to remove (already down)", a.name);
    } else {
        crate::outln!(
            "lab {}: removed {} (veth pairs go with them){}",
            a.name,
            r.removed.join(", "),
            if r.killed.is_empty() {
                String::new()
            } else {
                format!("; stopped PIDs {:?}", r.killed)
            }
        );
    }
    Ok(0)
}

fn cmd_status(a: StatusArgs) -> anyhow::Result<i32> {
    a.json.check()?;
    let st = lab::status(&a.name.name)?;
    if !a.json.on_stdout() {
        crate::out!("{}", crate::report::lab::status(&st));
    }
    if let Some(path) = a.json.write(&st)? {
        crate::outln!("saved {}", path.display());
    }
    Ok(if st.up && st.reachable == Some(true) {
        0
    } else {
        1
    })
}

/// Deletes lab `name` when dropped; a failed cleanup is said on stderr.
pub(crate) fn guard(name: &str) -> LabGuard {
    LabGuard::with_events(name, Arc::new(render_event))
}

/// Renders the lab's events on stderr.
pub(crate) fn render_event(e: &lab::LabEvent) {
    match e {
        lab::LabEvent::CleanupFailed { lab, error } => {
            crate::errln!("routerbench lab: cleanup of {lab} failed: {error}");
        }
    }
}

fn envelope(lab: LabResult, started: String) -> RunResult {
    let mut r = RunResult::new(started);
    r.lab = Some(lab);
    r.finished_at = crate::util::time::now_rfc3339();
    r
}

fn cmd_measure(a: MeasureArgs) -> anyhow::Result<i32> {
    a.json.check()?;
    lab::sys::require_root()?;
    let started = crate::util::time::now_rfc3339();
    let cfg = lab::load_config(&a.name.name)?;
    let cfg = if a.tunnel {
        lab::vm::via_tunnel(&cfg)?
    } else {
        cfg
    };
    if !(0.0..=60.0).contains(&a.warmup) {
        anyhow::bail!("--warmup must be 0-60 s");
    }
    let plan = lab::accuracy::MeasurePlan {
        download: matches!(a.dir, Direction::Down),
        flows: a.flows,
        seconds: a.length,
        warmup: Duration::from_secs_f64(a.warmup),
        cc: a.cc.clone().unwrap_or_else(|| cfg.cc.clone()),
        ..Default::default()
    };
    let point = lab::accuracy::measure(&cfg, &plan, generator(a.load))?;
    if a.row {
        crate::out!("{}", crate::report::lab::accuracy_row(&point));
    } else if !a.json.on_stdout() {
        crate::out!(
            "{}",
            crate::report::lab::accuracy(std::slice::from_ref(&point))
        );
    }
    if a.json.is_set() {
        let lab = LabResult {
            accuracy: vec![point],
            ..lab::theory::result(cfg)
        };
        if let Some(path) = a.json.write(&envelope(lab, started))? {
            crate::outln!("saved {}", path.display());
        }
    }
    Ok(0)
}

fn cmd_sqm_side_by_side(a: &CapacityArgs) -> anyhow::Result<i32> {
    use crate::cli::common::qdisc_arg::QdiscArg;
    if a.vm.router != RouterArg::Vm {
        anyhow::bail!(
            "--side-by-side needs --router vm: this host's kernel has neither cake nor fq_codel"
        );
    }
    if a.qdisc.is_some() || !matches!(a.aqm, AqmArg::Auto) {
        anyhow::bail!("--side-by-side picks its own qdiscs: leave out --qdisc and --aqm");
    }
    lab::capacity::check_lab_is_free(&a.name)?;
    let guard = (!a.keep).then(|| guard(&a.name));
    let quiet = a.json.on_stdout();
    let mut all = Vec::new();
    for (q, userspace) in [
        (QdiscArg::Cake, false),
        (QdiscArg::FqCodel, false),
        (QdiscArg::Cake, true),
    ] {
        let mut plan = sqm_plan(a, q)?;
        plan.place = Some(if userspace {
            lab::aqm_forwarder::AqmPlace::Userspace
        } else {
            lab::aqm_forwarder::AqmPlace::Kernel
        });
        plan.vm = Some(a.vm.spec(q.kind(), userspace));
        if !quiet {
            crate::errln!(
                "SQM capacity: {} in {}",
                q.kind().name(),
                if userspace { "userspace" } else { "kernel" }
            );
        }
        let sqm = lab::sqm_capacity::search(&plan, generator(a.load), &mut |p| {
            if !quiet {
                crate::err!("{}", crate::report::lab::sqm_point(p));
            }
        })?;
        all.push(sqm);
    }
    drop(guard);
    if !quiet {
        crate::out!("{}", crate::report::lab::sqm_side_by_side(&all));
    }
    if a.json.is_set() {
        let mut r = RunResult::new(crate::util::time::now_rfc3339());
        r.sqm_side_by_side = all;
        if let Some(path) = a.json.write(&r)? {
            crate::outln!("saved {}", path.display());
        }
    }
    Ok(0)
}

/// The search plan from `lab capacity`'s flags, for qdisc `q`.
fn sqm_plan(
    a: &CapacityArgs,
    q: crate::cli::common::qdisc_arg::QdiscArg,
) -> anyhow::Result<lab::sqm_capacity::SqmPlan> {
    let mut plan =
        lab::sqm_capacity::SqmPlan::new(&a.name, q.kind(), lab::aqm_forwarder::routerbench_exe()?);
    plan.seconds = a.length.max(5);
    plan.flows = a.flows.iter().copied().max().unwrap_or(4);
    plan.cc = a.cc.clone();
    plan.max_bps = tc_shaper::parse_rate(&a.max_rate)?
        .ok_or_else(|| anyhow::anyhow!("--max-rate must be a rate, not none"))?;
    plan.budget = Duration::from_secs(a.budget.clamp(10, 3600));
    Ok(plan)
}

fn cmd_sqm_capacity(
    a: &CapacityArgs,
    q: crate::cli::common::qdisc_arg::QdiscArg,
) -> anyhow::Result<i32> {
    use lab::aqm_forwarder::AqmPlace;
    let mut plan =
        lab::sqm_capacity::SqmPlan::new(&a.name, q.kind(), lab::aqm_forwarder::routerbench_exe()?);
    plan.place = match a.aqm {
        AqmArg::Auto => None,
        AqmArg::Kernel => Some(AqmPlace::Kernel),
        AqmArg::Userspace => Some(AqmPlace::Userspace),
    };
    plan.seconds = a.length.max(5);
    plan.flows = a.flows.iter().copied().max().unwrap_or(4);
    plan.cc = a.cc.clone();
    plan.max_bps = tc_shaper::parse_rate(&a.max_rate)?
        .ok_or_else(|| anyhow::anyhow!("--max-rate must be a rate, not none"))?;
    plan.budget = Duration::from_secs(a.budget.clamp(10, 3600));
    if a.vm.router == RouterArg::Vm {
        lab::capacity::check_lab_is_free(&a.name)?;
        plan.vm = Some(a.vm.spec(q.kind(), matches!(a.aqm, AqmArg::Userspace)));
    }
    let guard = (!a.keep).then(|| guard(&a.name));
    let quiet = a.json.on_stdout();
    let sqm = lab::sqm_capacity::search(&plan, generator(a.load), &mut |p| {
        if !quiet {
            crate::err!("{}", crate::report::lab::sqm_point(p));
        }
    })?;
    drop(guard);
    if !a.json.on_stdout() {
        crate::out!("{}", crate::report::lab::sqm_capacity(&sqm));
    }
    if a.json.is_set() {
        let mut r = RunResult::new(crate::util::time::now_rfc3339());
        r.sqm_capacity = Some(sqm);
        if let Some(path) = a.json.write(&r)? {
            crate::outln!("saved {}", path.display());
        }
    }
    Ok(0)
}

fn cmd_capacity(a: CapacityArgs) -> anyhow::Result<i32> {
    a.json.check()?;
    lab::sys::require_root()?;
    if a.side_by_side {
        return cmd_sqm_side_by_side(&a);
    }
    if let Some(q) = a.qdisc {
        return cmd_sqm_capacity(&a, q);
    }
    let started = crate::util::time::now_rfc3339();
    if a.flows.is_empty() || a.flows.iter().any(|&f| f == 0 || f > 64) {
        anyhow::bail!("--flows takes 1-64 per point, e.g. --flows 1,4");
    }
    if a.length == 0 {
        anyhow::bail!("--length must be positive (seconds per point)");
    }
    lab::capacity::check_lab_is_free(&a.name)?;
    let guard = (!a.keep).then(|| guard(&a.name));
    let plan = lab::capacity::CapacityPlan {
        name: a.name.clone(),
        offloads: matches!(a.offloads, OnOff::On),
        seconds: a.length,
        flows: a.flows.clone(),
        cc: a.cc.clone(),
        vm: (a.vm.router == RouterArg::Vm).then(|| a.vm.spec(aqm::QdiscKind::Fifo, false)),
    };
    let cap = lab::capacity::run(&plan, generator(a.load).as_ref())?;
    let cfg = lab::load_config(&a.name)?;
    drop(guard);
    if !a.json.on_stdout() {
        crate::out!("{}", crate::report::lab::capacity(&cap));
    }
    if a.json.is_set() {
        let lab = LabResult {
            capacity: Some(cap),
            ..lab::theory::result(cfg)
        };
        if let Some(path) = a.json.write(&envelope(lab, started))? {
            crate::outln!("saved {}", path.display());
        }
    }
    Ok(0)
}

fn secs(what: &str, v: f64, lo: f64, hi: f64) -> anyhow::Result<Duration> {
    if v < 0.0 || (v == 0.0 && lo > 0.0) {
        anyhow::bail!("--{what} must be positive ({lo}-{hi} s), got {v}");
    }
    if !(lo..=hi).contains(&v) {
        anyhow::bail!("--{what} must be {lo}-{hi} s, got {v}");
    }
    Ok(Duration::from_secs_f64(v))
}

fn cmd_run(a: RunArgs) -> anyhow::Result<i32> {
    use crate::latency::{TestConfig, TestKind};
    lab::sys::require_root()?;
    let started = crate::util::time::now_rfc3339();
    // Inputs first: a typo is reported before the lab is even looked at.
    let step = secs("step", a.step, 0.01, 10.0)?;
    let length = secs("length", a.length, 1.0, 3600.0)?;
    let delay = secs("delay", a.delay, 0.0, 60.0)?;
    let probe_interval = match a.interval {
        Some(i) => secs("interval", i, 0.005, 10.0)?,
        None => step,
    };
    let cfg = lab::load_config(&a.name.name)?;
    let cfg = if a.tunnel {
        lab::vm::via_tunnel(&cfg)?
    } else {
        cfg
    };
    let kind = match a.test {
        TestArg::Rrul => TestKind::Rrul,
        TestArg::RrulBe => TestKind::RrulBe,
        TestArg::TcpNup => TestKind::TcpNup,
        TestArg::TcpNdown => TestKind::TcpNdown,
        TestArg::Ping => TestKind::Ping,
        TestArg::RrulIcmp => TestKind::RrulIcmp,
        TestArg::TcpBidirectional => TestKind::TcpBidirectional,
        TestArg::Phases => TestKind::Phases,
        TestArg::RttFair => TestKind::TcpBidirectional,
    };
    let wifi_run =
        a.station.is_some() || a.stations.is_some() || matches!(a.test, TestArg::RttFair);
    if wifi_run && a.tunnel {
        anyhow::bail!(
            "--station/--stations/rtt_fair and --tunnel: the stations' tests go through the AP, not the tunnel"
        );
    }
    if kind == TestKind::Phases && a.streams > 16 {
        anyhow::bail!("-n must be at most 16 for phases (2N flows in its last phase)");
    }
    let test = TestConfig {
        kind,
        streams: a.streams.max(1),
        length,
        delay,
        step,
        probe_interval,
        cc: Some(a.cc.clone().unwrap_or_else(|| cfg.cc.clone())),
        ..TestConfig::default()
    };
    let warmup = secs("warmup", a.warmup, 0.0, a.length)?;
    if let Some(p) = &a.flent {
        super::check_output_file(p, "--flent")?;
    }
    a.json.check()?;
    // Ctrl-C ends the test early; what was measured is still printed and saved.
    crate::util::signals::install();
    let signal = crate::cli::common::signal_flag::SignalFlag::default();
    let mut test = test;
    test.interrupt = Some(signal.0.clone());
    let progress: Box<dyn crate::util::progress::Progress> = if a.quiet {
        Box::new(crate::util::progress::NoProgress)
    } else {
        Box::new(crate::util::progress::BarProgress::new())
    };
    if wifi_run {
        drop(progress);
        return cmd_run_stations(&a, &cfg, &test, started);
    }
    let run = lab::run::run(&cfg, &test, warmup, progress)?;
    let th = lab::theory::theory(&cfg);
    let name = kind.flent_name();
    if a.json.on_stdout() {
        // The JSON below is the whole of standard output.
    } else if a.rows {
        crate::out!(
            "{}",
            crate::report::lab::checks_rows(name, cfg.nat, &run.checks)
        );
    } else {
        crate::out!("{}", crate::report::latency::render_text(&run.latency));
        crate::outln!();
        crate::out!("{}", crate::report::lab::config(&cfg, &th));
        match (&cfg.router_vm, lab::aqm_forwarder::load_state(&cfg.name)) {
            (Some(r), _) => crate::out!("{}", crate::report::lab::router_vm(r)),
            (None, Some(q)) => crate::outln!("{}", crate::report::lab::aqm_line(&q)),
            (None, None) => crate::outln!("aqm: fifo in the kernel (the shaper's FIFO)"),
        }
        crate::outln!();
        crate::out!("{}", crate::report::lab::checks(name, cfg.nat, &run.checks));
        if let Some(v) = &run.router_verdict {
            crate::out!("{}", crate::report::lab::router_verdict(v, &run.tap_queues));
        }
    }
    let interrupted = run.latency.interrupted;
    if let Some(path) = &a.flent {
        let title = if interrupted {
            format!("lab {} (interrupted)", cfg.name)
        } else {
            format!("lab {}", cfg.name)
        };
        let agent = cfg
            .router_vm
            .as_ref()
            .map_or(cfg.rtr_lan_ip.as_str(), |v| v.agent.as_str());
        Flent::new(&title)
            .with_router(run.monitor.as_ref().map(|m| (agent, m)))
            .write_to_file(&run.latency, path)?;
        a.json.say(&format!("saved {}", path.display()));
    }
    if a.json.is_set() {
        let lab = LabResult {
            test: Some(name.to_string()),
            checks: run.checks,
            tap_queues: run.tap_queues,
            router_verdict: run.router_verdict.clone(),
            ..lab::theory::result(cfg.clone())
        };
        let mut env = envelope(lab, started);
        env.latency = Some(run.latency);
        env.monitor = run.monitor;
        if let Some(path) = a.json.write(&env)? {
            a.json.say(&format!("saved {}", path.display()));
        }
    }
    if let Some(t) = run.router_verdict.as_ref().and_then(|v| v.vm_died_at_s) {
        let console = cfg
            .router_vm
            .as_ref()
            .map(|r| lab::vm::qemu::console_tail(std::path::Path::new(&r.console), 10))
            .unwrap_or_default();
        anyhow::bail!(
            "the VM router died {t:.1} s into the test; the partial result is above (and in the \
             files); its console's last lines:\n{console}\nrun `routerbench lab down --name {}`",
            cfg.name
        );
    }
    if interrupted {
        crate::errln!("routerbench lab: interrupted: the result above and the files are partial");
        return Ok(1);
    }
    Ok(0)
}

/// Station `k`'s flent file of `--flent FILE` when several stations ran: `-stationK` before
/// the `.flent.gz` (or `.gz`, or at the end).
fn station_file(path: &std::path::Path, k: u32) -> std::path::PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (stem, ext) = [".flent.gz", ".gz"]
        .iter()
        .find_map(|e| name.strip_suffix(e).map(|s| (s.to_string(), *e)))
        .unwrap_or((name.clone(), ""));
    path.with_file_name(format!("{stem}-station{k}{ext}"))
}

/// `lab run TEST --station K | --stations K,L|all`, `lab run rtt_fair`: the clients in Wi-Fi
/// stations inside the VM (lab/wifi_run.rs).
fn cmd_run_stations(
    a: &RunArgs,
    cfg: &crate::results::lab::LabConfig,
    test: &crate::latency::TestConfig,
    started: String,
) -> anyhow::Result<i32> {
    let have = lab::wifi_run::stations(cfg)?;
    let which = match (a.station, &a.stations) {
        (Some(k), _) => lab::wifi_run::parse_stations(&k.to_string(), &have)?,
        (None, Some(l)) => lab::wifi_run::parse_stations(l, &have)?,
        (None, None) => have.iter().map(|s| s.station).collect(),
    };
    let rtt_fair = matches!(a.test, TestArg::RttFair);
    let name = if rtt_fair {
        "rtt_fair"
    } else {
        test.kind.flent_name()
    };
    if !a.json.on_stdout() && !a.quiet {
        crate::errln!(
            "routerbench lab: {name} from station(s) {} inside the VM ({} s)…",
            which
                .iter()
                .map(|k| k.to_string())
                .collect::<Vec<_>>()
                .join(","),
            (test.length + test.delay * 2).as_secs_f64()
        );
    }
    let runs = lab::wifi_run::run(cfg, test, &which)?;
    let summaries: Vec<crate::results::lab::StationRun> =
        runs.iter().map(|r| r.summary.clone()).collect();
    let note = lab::vm::WIFI_EMULATION.to_string();
    let agent = cfg
        .router_vm
        .as_ref()
        .and_then(|v| v.wifi.as_ref())
        .map(|w| {
            format!(
                "{}:{}",
                w.ap_ip.split('/').next().unwrap_or(""),
                lab::vm::AGENT_PORT
            )
        });
    let single = runs.len() == 1;
    let jain = lab::wifi_run::throughput_jain(&summaries);
    if !a.json.on_stdout() {
        if single {
            if let Some(l) = &runs[0].result.latency {
                crate::out!("{}", crate::report::latency::render_text(l));
            }
            if let Some(m) = &runs[0].result.router {
                crate::outln!(
                    "\nRouter (agent {}, sampled from station {}):",
                    agent.as_deref().unwrap_or("?"),
                    which[0]
                );
                crate::out!("{}", crate::report::monitor::render_text(m));
            }
            crate::outln!();
        }
        crate::out!("{}", crate::report::lab::stations(&summaries, jain));
        crate::outln!("note: {note}");
        if let Some(r) = &cfg.router_vm {
            crate::out!("{}", crate::report::lab::router_vm(r));
        }
    }
    if let Some(path) = &a.flent {
        // One flent file per station (each its own test on its own clock): FILE itself for
        // one station, FILE with `-stationK` before `.flent.gz` for several.
        for (k, run) in which.iter().zip(&runs) {
            let Some(l) = &run.result.latency else {
                continue;
            };
            let file = if single {
                path.clone()
            } else {
                station_file(path, *k)
            };
            Flent::new(&format!("lab {} station {k}", cfg.name))
                .with_router(
                    run.result
                        .router
                        .as_ref()
                        .map(|m| (agent.as_deref().unwrap_or("?"), m)),
                )
                .write_to_file(l, &file)?;
            a.json.say(&format!("saved {}", file.display()));
        }
    }
    let interrupted = runs
        .iter()
        .any(|r| r.result.latency.as_ref().is_some_and(|l| l.interrupted));
    if a.json.is_set() {
        let mut stations = summaries.clone();
        if !single {
            for (s, r) in stations.iter_mut().zip(&runs) {
                s.latency = r.result.latency.clone().map(Box::new);
            }
        }
        let lab = LabResult {
            test: Some(name.to_string()),
            station: single.then(|| which[0]),
            throughput_jain: jain,
            stations,
            wifi_emulated: Some(note.clone()),
            ..lab::theory::result(cfg.clone())
        };
        let mut env = envelope(lab, started);
        if single {
            env.latency = runs[0].result.latency.clone();
            env.router = runs[0].result.router.clone();
            env.device = runs[0].result.device.clone();
        }
        env.notes.push(note);
        if let Some(path) = a.json.write(&env)? {
            a.json.say(&format!("saved {}", path.display()));
        }
    }
    for (k, c) in summaries
        .iter()
        .flat_map(|r| r.bytes_check.iter().map(move |c| (r.station, c)))
        .filter(|(_, c)| c.matches() == Some(false))
    {
        crate::errln!("routerbench lab: {}", crate::report::lab::bytes_line(k, c));
    }
    if interrupted {
        crate::errln!("routerbench lab: interrupted: the result above and the files are partial");
        return Ok(1);
    }
    Ok(0)
}

#[derive(Debug, Args)]
pub struct VmRouterArgs {
    /// The router's configuration (JSON from `lab up --router vm`).
    #[arg(long, default_value = "/etc/routerbench/router.json")]
    pub config: std::path::PathBuf,
    /// Internal: serve the control port (`lab exec`).
    #[arg(long, hide = true)]
    pub control: bool,
    /// Internal: run the userspace AQM forwarder.
    #[arg(long, hide = true)]
    pub shape: bool,
    /// Print the userspace forwarder's counters (qdisc, both directions; JSON), read with
    /// `lab exec --name N -- vm-router --shape-stats`.
    #[arg(long, hide = true)]
    pub shape_stats: bool,
    /// Time the VM's clocks and timers as the forwarder's loop uses them (JSON), read with
    /// `lab exec --name N -- vm-router --timer-probe`.
    #[arg(long, hide = true)]
    pub timer_probe: bool,
    /// Internal: hold a Wi-Fi station's network and mount namespaces.
    #[arg(long, hide = true, value_name = "K")]
    pub station_holder: Option<u32>,
    /// Run routerbench with the arguments after `--` in these Wi-Fi stations at once
    /// (`lab run rtt_fair`); prints their replies as a JSON array.
    #[arg(long, hide = true, value_delimiter = ',', value_name = "K,L")]
    pub in_stations: Vec<u32>,
    /// Seconds before each of `--in-stations`' commands is killed.
    #[arg(long, hide = true, default_value_t = 600.0)]
    pub in_stations_timeout: f64,
    /// The command for `--in-stations`.
    #[arg(last = true, hide = true)]
    pub rest: Vec<String>,
}

/// Waits (at most `limit`) until the kernel's forwarding of `devs` is off: the forwarder's
/// sign that its sockets are open.
fn forwarding_off(devs: &[&str], limit: Duration) -> bool {
    let t0 = std::time::Instant::now();
    while t0.elapsed() < limit {
        if devs.iter().all(|d| {
            std::fs::read_to_string(format!("/proc/sys/net/ipv4/conf/{d}/forwarding"))
                .is_ok_and(|v| v.trim() == "0")
        }) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// `routerbench vm-router` inside the VM: configure, start the control port (and the userspace
/// forwarder when asked), say ready (or failed) on the console, then become `routerbench server
/// --monitor` (exec, so the server is the agent's process).
pub fn vm_router(a: VmRouterArgs) -> anyhow::Result<i32> {
    use lab::vm::{guest, guest_run};
    if a.control {
        guest_run::serve_control()?;
        return Ok(0);
    }
    if a.station_holder.is_some() {
        lab::vm::guest_wifi::own_namespaces()?;
        // The parent waits for this line, then moves the station's radio in.
        crate::outln!("ready");
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    if !a.in_stations.is_empty() {
        let exe = std::env::current_exe()?;
        let handles: Vec<_> = a
            .in_stations
            .iter()
            .map(|&k| {
                let req = guest_run::ExecRequest {
                    id: u64::from(k),
                    program: None,
                    background: false,
                    args: a.rest.clone(),
                    timeout_s: a.in_stations_timeout,
                    station: Some(k),
                };
                let exe = exe.clone();
                std::thread::spawn(move || guest_run::run_request(&exe, &req))
            })
            .collect();
        let replies: Vec<guest_run::ExecReply> = handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| guest_run::ExecReply {
                    error: Some("a station's thread panicked".into()),
                    ..Default::default()
                })
            })
            .collect();
        crate::outln!("{}", serde_json::to_string(&replies)?);
        return Ok(0);
    }
    if a.timer_probe {
        crate::outln!("{}", serde_json::to_string(&guest_run::timer_probe())?);
        return Ok(0);
    }
    if a.shape_stats {
        let p = guest_run::SHAPE_STATS;
        let text = std::fs::read_to_string(p).map_err(|e| {
            anyhow::anyhow!(
                "cannot read {p} ({e}): is the router running routerbench's userspace forwarder (lab up --router vm --aqm userspace)?"
            )
        })?;
        crate::outln!("{}", text.trim());
        return Ok(0);
    }
    if a.shape {
        let cfg = guest::load(&a.config).and_then(|c| guest::resolve(&c))?;
        guest_run::serve_shape(&guest::shape_plan(&cfg)?)?;
        return Ok(0);
    }
    let failed = |e: String| {
        crate::outln!("{}{}", guest::FAILED, e);
        Ok(1)
    };
    let applied = guest::load(&a.config).and_then(|cfg| guest::apply(&cfg));
    let (cfg, mut steps) = match applied {
        Ok(x) => x,
        Err(e) => return failed(lab::error::chain(&e)),
    };
    let wifi = match &cfg.wifi {
        Some(w) => match lab::vm::guest_wifi::setup(w, cfg.prefix_len) {
            Ok((ready, more)) => {
                steps.extend(more);
                Some(ready)
            }
            Err(e) => return failed(format!("Wi-Fi: {}", lab::error::chain(&e))),
        },
        None => None,
    };
    let exe = std::env::current_exe()?;
    let config = a.config.display().to_string();
    let spawn = |flag: &str| {
        std::process::Command::new(&exe)
            .args(["vm-router", "--config", &config, flag])
            .stdin(std::process::Stdio::null())
            .spawn()
    };
    match spawn("--control") {
        Ok(_) => steps.push(format!("control port {}", guest_run::CONTROL_PORT)),
        Err(e) => return failed(format!("cannot start the control port: {e}")),
    }
    if let Some(q) = &cfg.userspace_aqm {
        let mut child = match spawn("--shape") {
            Ok(c) => c,
            Err(e) => return failed(format!("cannot start the userspace forwarder: {e}")),
        };
        let off = forwarding_off(&[&cfg.lan_dev, &cfg.wan_dev], Duration::from_secs(10));
        if !off || child.try_wait().ok().flatten().is_some() {
            return failed(format!(
                "the userspace forwarder ({q}) did not come up within 10 s"
            ));
        }
        steps.push(format!(
            "routerbench's userspace {q} forwarding {} <-> {} (kernel forwarding of both off)",
            cfg.lan_dev, cfg.wan_dev
        ));
    }
    let ready = guest::GuestReady {
        identity: crate::device::detect(),
        steps,
        wifi,
    };
    crate::outln!("{}{}", guest::READY, serde_json::to_string(&ready)?);
    let err = std::os::unix::process::CommandExt::exec(std::process::Command::new(exe).args([
        "server",
        "-p",
        &cfg.agent_port.to_string(),
        "--monitor",
        "--monitor-token",
        &cfg.agent_token,
    ]));
    anyhow::bail!("cannot start the router's agent: {err}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_flent_file_per_station() {
        let f = |p: &str, k| station_file(std::path::Path::new(p), k);
        assert_eq!(
            f("out/rtt.flent.gz", 2),
            std::path::PathBuf::from("out/rtt-station2.flent.gz")
        );
        assert_eq!(f("a.gz", 1), std::path::PathBuf::from("a-station1.gz"));
        assert_eq!(f("plain", 3), std::path::PathBuf::from("plain-station3"));
    }
}
