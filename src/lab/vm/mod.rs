//! `lab up --router vm`: the lab's router is an emulated router with its own kernel —
//! Debian's armmp kernel under `qemu-system-arm` (the default, `--vm-arch armv7`) or its
//! 4kc-malta kernel under `qemu-system-mipsel` (`--vm-arch mipsel`, arch.rs), an initramfs that
//! routerbench assembles from Debian packages (busybox, the kernel's modules) and the static
//! routerbench of that architecture, two virtio NICs on taps in the LAN and WAN namespaces. Inside, `routerbench vm-router`
//! configures the router over netlink (addresses, forwarding, cake / htb+fq_codel, nftables
//! masquerade) and runs the agent. docs/vm-router.md describes it.
//!
//! ```text
//! [<name>-lan] lan0 (tap) 10.201.1.2 ─ virtio eth0 10.201.1.1 [qemu: ARM VM] eth1 10.201.2.1 ─ wan0 (tap) 10.201.2.2 [<name>-wan]
//! qemu itself runs in [<name>-rtr], which has no links: `lab down` finds it there.
//! ```

pub mod apt;
pub mod arch;
pub mod assets;
pub mod control;
pub mod elf;
pub mod extras;
pub mod files;
pub mod guest;
pub mod guest_run;
pub mod guest_wifi;
pub mod initramfs;
pub mod nlconf;
pub mod qemu;
pub mod wan_wg;
pub mod watch;
pub mod wg;

use super::error::{Context, LabError, Result};
use super::router::ip;
use super::sys::{require_root, require_tools, tool_path};
use super::topology::{LabSpec, make_namespaces, names, ns_default_cc};
use super::{DEV_LAN, DEV_WAN, LAN_IP, RTR_LAN_IP, RTR_WAN_IP, WAN_IP, netns, state};
use crate::results::lab::{LabConfig, LabDevices, RouterVm, VmPackage, VmStation, VmWifi};
use aqm::QdiscKind;
pub use arch::VmArch;
use guest::{GuestConfig, GuestQdisc, GuestReady};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use files::initrd_path;
pub use files::{console_path, qemu_log_path, running, stop, stop_pid};

/// MAC addresses of the VM's two NICs (locally administered, qemu's prefix).
pub const LAN_MAC: &str = "52:54:00:19:01:01";
pub const WAN_MAC: &str = "52:54:00:19:02:01";
/// MAC addresses of the host-side taps (set, so the userspace forwarder in the VM knows its
/// next hops without ARP of its own).
pub const LAN_TAP_MAC: &str = "52:54:00:19:01:02";
pub const WAN_TAP_MAC: &str = "52:54:00:19:02:02";
/// The agent and test server inside the VM.
pub const AGENT_PORT: u16 = 5201;
/// The modules the router loads (with their dependencies, found in the package).
pub const MODULES: &[&str] = &[
    "virtio_pci",
    "virtio_net",
    "sch_htb",
    "sch_cake",
    "sch_codel",
    "crc32c_generic",
    "nft_chain_nat",
    "nft_masq",
    "virtio_console",
];
/// Loaded only with `--wireguard` (it pulls the kernel's ChaCha20/Poly1305/Curve25519 code).
pub const WIREGUARD_MODULES: &[&str] = &["wireguard"];
/// Loaded only with `--wifi N` (with `radios=N+1`; it pulls mac80211, cfg80211, rfkill, libarc4).
pub const WIFI_MODULE: &str = "mac80211_hwsim";
/// The Wi-Fi network: the AP's address, its prefix, the stations' offset (station K is
/// `10.201.3.(10+K)`), the SSID and channel.
pub const WIFI_AP_IP: &str = "10.201.3.1";
pub const WIFI_NET: &str = "10.201.3.0/24";
pub const WIFI_STATION_OFFSET: u8 = 10;
pub const WIFI_SSID: &str = "routerbench";
pub const WIFI_CHANNEL: u32 = 1;
/// What the emulated Wi-Fi hop is not (every Wi-Fi lab result carries it).
pub const WIFI_EMULATION: &str = "the Wi-Fi hop is emulated (mac80211_hwsim without a medium \
    simulator: a perfect medium, every frame delivered on its first try): its retries, failed \
    frames and airtime are 0 and its rates (tx/rx bitrate, expected throughput) are labels, not \
    a radio's; throughput and latency through it are the VM's CPU and mac80211's queues, not \
    a channel's capacity; airtime fairness and AQL cannot be observed";

/// The Wi-Fi router's size and patience (`--wifi N`, `--wifi-assoc-timeout`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WifiSpec {
    pub stations: u32,
    pub assoc_timeout: Duration,
}

/// How to build the VM router.
#[derive(Debug, Clone)]
pub struct VmSpec {
    pub vcpus: u32,
    pub memory_mib: u32,
    /// Percent of one host core for the whole qemu process; None = no limit.
    pub cpu_budget_pct: Option<u32>,
    pub cache: PathBuf,
    pub router_bin: Option<PathBuf>,
    /// The router's qdisc on both egresses when shaped (fifo = htb + bfifo).
    pub qdisc: QdiscKind,
    pub boot_timeout: Duration,
    /// routerbench's userspace forwarder inside the VM shapes with `qdisc` (not the kernel).
    pub userspace_aqm: bool,
    /// A WireGuard tunnel from the router to the WAN host.
    pub wireguard: bool,
    /// The emulated router's CPU architecture (armv7 by default).
    pub arch: VmArch,
    /// Which Debian kernel; None: backports with `wifi`, else stable.
    pub kernel: Option<assets::VmKernel>,
    /// A Wi-Fi router with stations (`--wifi N`).
    pub wifi: Option<WifiSpec>,
    /// Debian programs for the image by name (`--extras iperf3,openssl`: extras::NAMED), run
    /// through the control port (`lab exec --program`).
    pub extras: Vec<String>,
}

impl Default for VmSpec {
    fn default() -> Self {
        Self {
            vcpus: 2,
            memory_mib: 256,
            cpu_budget_pct: None,
            cache: assets::default_cache(),
            router_bin: None,
            qdisc: QdiscKind::Fifo,
            boot_timeout: Duration::from_secs(120),
            userspace_aqm: false,
            wireguard: false,
            arch: VmArch::Armv7,
            kernel: None,
            wifi: None,
            extras: Vec::new(),
        }
    }
}

impl VmSpec {
    fn validate(&self) -> Result<()> {
        let (max_cpus, max_mem) = (self.arch.max_vcpus(), self.arch.max_memory_mib());
        if !(1..=max_cpus).contains(&self.vcpus) {
            return Err(LabError::Input(match self.arch {
                VmArch::Armv7 => format!(
                    "--vcpus {} : use 1-8 (qemu's virt machine, emulated cortex-a15)",
                    self.vcpus
                ),
                VmArch::Mipsel => format!(
                    "--vcpus {} : use 1 with --vm-arch mipsel (a second 34Kf VPE stalls the \
                     malta kernel's timer under qemu: RCU stalls and soft lockups)",
                    self.vcpus
                ),
            }));
        }
        if !(64..=max_mem).contains(&self.memory_mib) {
            return Err(LabError::Input(match self.arch {
                VmArch::Armv7 => format!(
                    "--vm-memory {} MiB: use 64-2048 (highmem=off caps the VM below 3 GiB)",
                    self.memory_mib
                ),
                VmArch::Mipsel => format!(
                    "--vm-memory {} MiB: use 64-256 with --vm-arch mipsel (the 4kc-malta \
                     kernel has no HIGHMEM: it sees at most 256 MiB)",
                    self.memory_mib
                ),
            }));
        }
        if let Some(w) = &self.wifi {
            if !(1..=8).contains(&w.stations) {
                return Err(LabError::Input(format!(
                    "--wifi {}: use 1-8 stations (each is a hwsim radio and a namespace in the VM)",
                    w.stations
                )));
            }
            if self.arch != VmArch::Armv7 {
                return Err(LabError::Input(
                    "--wifi needs --vm-arch armv7 (the 6.12 armmp kernel from bookworm-backports; \
                     the mipsel kernel was not checked for mac80211_hwsim)"
                        .into(),
                ));
            }
            if !(1.0..=600.0).contains(&w.assoc_timeout.as_secs_f64()) {
                return Err(LabError::Input("--wifi-assoc-timeout: use 1-600 s".into()));
            }
            if self.kernel == Some(assets::VmKernel::Stable) {
                return Err(LabError::Input(
                    "--wifi with --vm-kernel stable: bookworm's 6.1 kernel puts hwsim's traffic \
                     through an ordinary qdisc, not mac80211's fq_codel queues; use \
                     --vm-kernel backports (the default with --wifi)"
                        .into(),
                ));
            }
        }
        for name in &self.extras {
            extras::by_name(name)?;
        }
        if let Some(p) = self.cpu_budget_pct {
            if !(5..=800).contains(&p) {
                return Err(LabError::Input(format!(
                    "--cpu-budget {p}: use 5-800 (percent of one host core)"
                )));
            }
        }
        Ok(())
    }
}

/// Everything the VM router needs on this machine, checked before anything is built: root,
/// qemu-system-arm, /dev/net/tun, iproute2. Errors say what to install or do.
pub fn preflight() -> Result<PathBuf> {
    preflight_for(VmArch::Armv7)
}

/// [`preflight`] for a VM of `arch` (its qemu: qemu-system-mipsel for mipsel).
pub fn preflight_for(arch: VmArch) -> Result<PathBuf> {
    require_root()?;
    require_tools(&["ip"])?;
    let qemu = tool_path(arch.qemu()).map_err(|_| {
        LabError::State(format!(
            "{q} not found: the {a} VM router needs it (apt-get install {p})",
            q = arch.qemu(),
            a = arch.name(),
            p = arch.qemu_package()
        ))
    })?;
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Err(LabError::State(
            "/dev/net/tun is missing: the VM's NICs are taps (modprobe tun, or create the node)"
                .into(),
        ));
    }
    Ok(qemu)
}

fn qdisc_for(kind: QdiscKind, rate: Option<u64>, buffer: u64) -> Option<GuestQdisc> {
    rate.map(|rate_bps| GuestQdisc {
        kind: kind.name().to_string(),
        rate_bps,
        buffer_bytes: buffer,
    })
}

fn describe(q: &Option<GuestQdisc>, userspace: bool) -> String {
    match q {
        None => "default (unshaped: the kernel's default qdisc)".into(),
        Some(q) if userspace => format!(
            "routerbench's userspace {} at {} (AF_PACKET forwarder in the VM)",
            q.kind,
            crate::util::units::human_rate(q.rate_bps as f64)
        ),
        Some(q) => {
            let what = match q.kind.as_str() {
                "cake" => "cake".to_string(),
                "fifo" => "htb+bfifo".to_string(),
                k => format!("htb+{k}"),
            };
            format!(
                "{what} at {}",
                crate::util::units::human_rate(q.rate_bps as f64)
            )
        }
    }
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Builds (or rebuilds: a running VM router of the same lab is stopped first) lab
/// `spec.name` with a VM router.
pub fn up(spec: &LabSpec, vm: &VmSpec) -> Result<LabConfig> {
    let qemu_bin = preflight_for(vm.arch)?;
    spec.validate()?;
    vm.validate()?;
    if vm.qdisc != QdiscKind::Fifo && spec.up_rate_bps.is_none() && spec.down_rate_bps.is_none() {
        return Err(LabError::Input(format!(
            "--qdisc {} needs a rate to shape to (--rate R): unshaped, the VM uses its kernel's default qdisc",
            vm.qdisc.name()
        )));
    }
    if vm.userspace_aqm {
        if spec.nat {
            return Err(LabError::Input(
                "the userspace forwarder does not do NAT: --aqm userspace without --nat".into(),
            ));
        }
        if spec.offloads {
            return Err(LabError::Input(
                "the userspace forwarder needs MTU-sized frames: --aqm userspace with --offloads off".into(),
            ));
        }
    }
    if vm.wireguard {
        wan_wg::preflight()?;
    }
    let bin = assets::router_binary_for(vm.router_bin.as_deref(), vm.arch)?;
    let bin_bytes = std::fs::read(&bin)
        .map_err(|e| LabError::Sys(format!("cannot read {}: {e}", bin.display())))?;
    let kernel = vm.kernel_choice();
    let assets = assets::fetch_kernel(&vm.cache, vm.arch, kernel)?;
    let index = initramfs::index_modules(&assets.modules_dir)?;
    let builtin = initramfs::builtin_modules(&assets.modules_dir);
    let mut wanted: Vec<&str> = MODULES.to_vec();
    if vm.wireguard {
        wanted.extend_from_slice(WIREGUARD_MODULES);
    }
    let mut params = Vec::new();
    if let Some(w) = &vm.wifi {
        wanted.push(WIFI_MODULE);
        params.push((
            WIFI_MODULE.to_string(),
            format!("radios={}", w.stations + 1),
        ));
    }
    let modules = initramfs::load_order_with(&index, &builtin, &wanted)?;
    let mut programs: Vec<extras::Program> = Vec::new();
    if vm.wifi.is_some() {
        programs.extend_from_slice(extras::WIFI);
    }
    for name in &vm.extras {
        let p = extras::by_name(name)?;
        if !programs.contains(&p) {
            programs.push(p);
        }
    }
    let extras = if programs.is_empty() {
        extras::Extras::default()
    } else {
        extras::fetch(&vm.cache, vm.arch, &programs)?
    };
    let busybox = std::fs::read(&assets.busybox)
        .map_err(|e| LabError::Sys(format!("cannot read {}: {e}", assets.busybox.display())))?;
    let ns_cc = ns_default_cc(&spec.cc)?;

    // A lab of this name (VM or namespaces) goes first: `up` rebuilds.
    super::topology::down(&spec.name)?;
    let image = Image {
        bin_bytes: &bin_bytes,
        busybox: &busybox,
        assets: &assets,
        modules: &modules,
        params: &params,
        extras: &extras,
        kernel,
    };
    let result = build(spec, vm, &qemu_bin, &image, &ns_cc);
    if result.is_err() {
        // Nothing stays behind after a failed start: qemu (in the router namespace) and the
        // namespaces go, and with qemu its taps.
        let _ = super::topology::down(&spec.name);
    }
    result
}

/// What goes into the VM's image.
struct Image<'a> {
    bin_bytes: &'a [u8],
    busybox: &'a [u8],
    assets: &'a assets::Assets,
    modules: &'a [(String, PathBuf)],
    params: &'a [(String, String)],
    extras: &'a extras::Extras,
    kernel: assets::VmKernel,
}

impl VmSpec {
    /// The kernel this VM boots: the one asked for, else backports for a Wi-Fi router.
    pub fn kernel_choice(&self) -> assets::VmKernel {
        self.kernel.unwrap_or(if self.wifi.is_some() {
            assets::VmKernel::Backports
        } else {
            assets::VmKernel::Stable
        })
    }
}

fn build(
    spec: &LabSpec,
    vm: &VmSpec,
    qemu_bin: &std::path::Path,
    img: &Image<'_>,
    ns_cc: &str,
) -> Result<LabConfig> {
    let (bin_bytes, busybox, assets, modules) =
        (img.bin_bytes, img.busybox, img.assets, img.modules);
    let (lan, rtr, wan) = names(&spec.name);
    make_namespaces([&lan, &rtr, &wan])?;
    let lan_tap = qemu::open_tap(&lan, DEV_LAN, spec.offloads)?;
    let wan_tap = qemu::open_tap(&wan, DEV_WAN, spec.offloads)?;
    for (ns, dev, addr, mac) in [
        (&lan, DEV_LAN, LAN_IP, LAN_TAP_MAC),
        (&wan, DEV_WAN, WAN_IP, WAN_TAP_MAC),
    ] {
        ip(ns, &["link", "set", dev, "address", mac])?;
        ip(ns, &["addr", "replace", &format!("{addr}/24"), "dev", dev])?;
        ip(ns, &["link", "set", dev, "up"])?;
        let d = dev.to_string();
        let on = spec.offloads;
        // A tap without a vnet header has no offloads to turn off; with one, GSO/TSO follow
        // --offloads. Best effort: the tap's own feature set decides what sticks.
        let _ = netns::run_in(ns, move || Ok(super::offload::set(&d, on)?));
        netns::sysctl_write(ns, "net.ipv4.tcp_congestion_control", ns_cc)?;
    }
    ip(&lan, &["route", "replace", "default", "via", RTR_LAN_IP])?;
    apply_nat_routes(&wan, spec.nat)?;
    if vm.wifi.is_some() && !spec.nat {
        // The stations' network is behind the router too.
        ip(&wan, &["route", "replace", WIFI_NET, "via", RTR_WAN_IP])?;
    }

    let wg_keys = if vm.wireguard {
        Some(wan_wg::make_keys()?)
    } else {
        None
    };
    let mut token = [0u8; 16];
    crate::util::random::fill(&mut token);
    let token = hex(&token);
    let up_q = qdisc_for(vm.qdisc, spec.up_rate_bps, spec.buffer_bytes);
    let down_q = qdisc_for(vm.qdisc, spec.down_rate_bps, spec.buffer_bytes);
    let gcfg = GuestConfig {
        lan_dev: "eth0".into(),
        wan_dev: "eth1".into(),
        lan_mac: LAN_MAC.into(),
        wan_mac: WAN_MAC.into(),
        lan_ip: RTR_LAN_IP.into(),
        wan_ip: RTR_WAN_IP.into(),
        prefix_len: 24,
        up: up_q.clone(),
        down: down_q.clone(),
        nat: spec.nat,
        offloads: spec.offloads,
        agent_port: AGENT_PORT,
        agent_token: token.clone(),
        userspace_aqm: vm.userspace_aqm.then(|| vm.qdisc.name().to_string()),
        lan_peer_mac: LAN_TAP_MAC.into(),
        wan_peer_mac: WAN_TAP_MAC.into(),
        wireguard: wg_keys.as_ref().map(|k| k.guest()),
        wifi: vm.wifi.map(|w| guest_wifi::GuestWifi {
            stations: w.stations,
            ssid: WIFI_SSID.into(),
            channel: WIFI_CHANNEL,
            ap_ip: WIFI_AP_IP.into(),
            prefix_len: 24,
            station_ip_offset: WIFI_STATION_OFFSET,
            assoc_timeout_s: w.assoc_timeout.as_secs_f64(),
        }),
    };
    let gjson = serde_json::to_string(&gcfg).context("VM router config")?;
    let image = initramfs::build(&initramfs::ImageParts {
        busybox,
        routerbench: bin_bytes,
        modules,
        module_params: img.params,
        extras: &img.extras.entries,
        config_json: &gjson,
    })?;
    std::fs::create_dir_all(state::STATE_DIR)
        .map_err(|e| LabError::Sys(format!("cannot create {}: {e}", state::STATE_DIR)))?;
    let initrd = initrd_path(&spec.name);
    std::fs::write(&initrd, &image)
        .map_err(|e| LabError::Sys(format!("cannot write {}: {e}", initrd.display())))?;
    let console = console_path(&spec.name);
    std::fs::write(&console, b"")
        .map_err(|e| LabError::Sys(format!("cannot write {}: {e}", console.display())))?;
    let budget = vm
        .cpu_budget_pct
        .map(|p| qemu::make_budget(&spec.name, p))
        .transpose()?;
    let plan = qemu::QemuPlan {
        qemu: qemu_bin.to_path_buf(),
        kernel: assets.vmlinuz.clone(),
        initrd,
        console: console.clone(),
        vcpus: vm.vcpus,
        memory_mib: vm.memory_mib,
        macs: [LAN_MAC.into(), WAN_MAC.into()],
        vnet_hdr: spec.offloads,
        control: files::control_path(&spec.name),
        arch: vm.arch,
    };
    let t0 = Instant::now();
    let mut child = qemu::spawn(
        &plan,
        &rtr,
        [&lan_tap, &wan_tap],
        &qemu_log_path(&spec.name),
    )?;
    let pid = child.id() as i32;
    // qemu holds the taps now; ours close, so the taps go when qemu does.
    drop(lan_tap);
    drop(wan_tap);
    if let Some(b) = &budget {
        b.add(pid)?;
    }
    // A smaller budget boots slower: scale the wait.
    let limit = vm
        .boot_timeout
        .mul_f64((100.0 / f64::from(vm.cpu_budget_pct.unwrap_or(100))).clamp(1.0, 8.0));
    let ready = match qemu::wait_ready(&mut child, &console, &qemu_log_path(&spec.name), limit)? {
        qemu::Boot::Ready(json) => json,
        qemu::Boot::Failed(msg) => {
            return Err(LabError::State(format!(
                "the VM router could not configure itself: {msg}; console's last lines:\n{}",
                qemu::console_tail(&console, 15)
            )));
        }
    };
    let boot_s = t0.elapsed().as_secs_f64();
    let ready: GuestReady = crate::util::json::from_json(ready.as_bytes()).map_err(|e| {
        LabError::Unexpected(format!(
            "the VM router's ready line is not JSON ({e}): {ready}"
        ))
    })?;
    // qemu runs on after this command ends (its own process group; `lab down` stops it).
    drop(child);
    let agent = format!("{RTR_LAN_IP}:{AGENT_PORT}");
    wait_agent(&lan, Duration::from_secs(30))?;
    let wireguard = wg_keys
        .as_ref()
        .map(|k| wan_wg::start(&spec.name, &wan, k))
        .transpose()?;
    let cfg = LabConfig {
        name: spec.name.clone(),
        ns_lan: lan,
        ns_rtr: rtr,
        ns_wan: wan,
        lan_ip: LAN_IP.into(),
        rtr_lan_ip: RTR_LAN_IP.into(),
        rtr_wan_ip: RTR_WAN_IP.into(),
        wan_ip: WAN_IP.into(),
        up_rate_bps: spec.up_rate_bps,
        down_rate_bps: spec.down_rate_bps,
        buffer_bytes: spec.buffer_bytes,
        burst_bytes: spec.burst_bytes,
        shaper: crate::results::lab::Shaper::Htb,
        nat: spec.nat,
        offloads: spec.offloads,
        cc: spec.cc.clone(),
        ns_cc: ns_cc.to_string(),
        devices: LabDevices {
            lan: DEV_LAN.into(),
            rtr_lan: "eth0".into(),
            rtr_wan: "eth1".into(),
            wan: DEV_WAN.into(),
        },
        router_vm: Some(RouterVm {
            emulator: match vm.arch {
                // armv7's line as before.
                VmArch::Armv7 => format!(
                    "qemu-system-arm -M virt -cpu cortex-a15 ({})",
                    qemu::version(qemu_bin)
                ),
                a => format!("{} ({})", a.emulator(), qemu::version(qemu_bin)),
            },
            kernel: assets.manifest.kernel_release.clone(),
            packages: assets
                .manifest
                .packages
                .iter()
                .chain(img.extras.packages.iter())
                .map(|p| VmPackage {
                    package: p.package.clone(),
                    version: p.version.clone(),
                    sha256: p.sha256.clone(),
                })
                .collect(),
            routerbench_sha256: {
                use sha2::Digest;
                hex(&sha2::Sha256::digest(bin_bytes))
            },
            vcpus: vm.vcpus,
            memory_mib: vm.memory_mib,
            cpu_budget_pct: vm.cpu_budget_pct,
            cpu_budget_how: budget.map(|b| b.how).unwrap_or_default(),
            qdisc_up: describe(&up_q, vm.userspace_aqm),
            qdisc_down: describe(&down_q, vm.userspace_aqm),
            agent,
            agent_token: token,
            qemu_pid: pid,
            console: console.display().to_string(),
            boot_s,
            identity: Some(ready.identity),
            steps: ready.steps,
            wireguard,
            kernel_suite: Some(img.kernel.name().to_string()),
            wifi: ready.wifi.map(|w| VmWifi {
                ssid: WIFI_SSID.into(),
                channel: WIFI_CHANNEL,
                security: "open, 11n, WMM".into(),
                ap_phy: w.ap_phy,
                ap_dev: w.ap_dev,
                ap_ip: format!("{WIFI_AP_IP}/24"),
                stations: w
                    .stations
                    .into_iter()
                    .map(|s| VmStation {
                        station: s.station,
                        phy: s.phy,
                        dev: s.dev,
                        mac: s.mac,
                        ip: s.ip,
                        assoc_s: s.assoc_s,
                    })
                    .collect(),
                programs: img.extras.programs.clone(),
                emulation: WIFI_EMULATION.into(),
            }),
        }),
    };
    state::save_config(&cfg)?;
    Ok(cfg)
}

/// `cfg` with its tests aimed through the VM router's WireGuard tunnel: the WAN host's tunnel
/// address replaces its lab address (the servers bind to it, the clients send to it).
pub fn via_tunnel(cfg: &LabConfig) -> Result<LabConfig> {
    let wg = cfg
        .router_vm
        .as_ref()
        .and_then(|v| v.wireguard.as_ref())
        .ok_or_else(|| {
            LabError::State(format!(
                "lab {} has no WireGuard tunnel: `lab up --router vm --wireguard`",
                cfg.name
            ))
        })?;
    let mut c = cfg.clone();
    c.wan_ip = wg.wan_tunnel_ip.clone();
    Ok(c)
}

fn apply_nat_routes(wan: &str, nat: bool) -> Result<()> {
    if nat {
        // Only NAT makes the path work: the WAN host knows no route back to the LAN.
        super::sys::try_tool("ip", &["-n", wan, "route", "del", super::LAN_NET]);
        Ok(())
    } else {
        ip(
            wan,
            &["route", "replace", super::LAN_NET, "via", RTR_WAN_IP],
        )?;
        Ok(())
    }
}

/// Waits until the VM's agent accepts TCP connections, from the LAN namespace.
fn wait_agent(lan: &str, limit: Duration) -> Result<()> {
    let addr: std::net::SocketAddr = format!("{RTR_LAN_IP}:{AGENT_PORT}")
        .parse()
        .context("agent address")?;
    netns::run_in(lan, move || {
        let t0 = Instant::now();
        loop {
            match std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
                Ok(_) => return Ok(()),
                Err(e) if t0.elapsed() > limit => {
                    return Err(LabError::State(format!(
                        "the VM router came up but its agent on {addr} does not answer from the LAN host ({e})"
                    ))
                    .into());
                }
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_follow_the_architecture() {
        let arm = VmSpec::default();
        assert!(arm.validate().is_ok());
        assert!(
            VmSpec {
                vcpus: 8,
                ..arm.clone()
            }
            .validate()
            .is_ok()
        );
        let mips = VmSpec {
            arch: VmArch::Mipsel,
            vcpus: 1,
            ..VmSpec::default()
        };
        assert!(mips.validate().is_ok());
        let e = VmSpec {
            vcpus: 2,
            ..mips.clone()
        }
        .validate()
        .unwrap_err();
        assert!(e.to_string().contains("use 1 with --vm-arch mipsel"), "{e}");
        let e = VmSpec {
            memory_mib: 512,
            ..mips.clone()
        }
        .validate()
        .unwrap_err();
        assert!(e.to_string().contains("64-256"), "{e}");
        assert!(
            VmSpec {
                memory_mib: 512,
                ..arm
            }
            .validate()
            .is_ok()
        );
    }
}
