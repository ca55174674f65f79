//! The VM router (`lab up --router vm`): the netlink configuration it uses inside the VM,
//! checked on this host's kernel; then the VM itself booted, an RRUL through it with the
//! agent's samples from the ARM kernel, an RRUL against the armv7 build's own server in the VM
//! with kernel stamps at both ends, and `lab down` leaving nothing behind; then the same RRUL
//! against the mipsel build's server inside the MIPS VM (`--vm-arch mipsel`: qemu-system-mipsel,
//! malta, Debian's 4kc-malta kernel).

use crate::support::Bounded;
use routerbench::lab::vm::nlconf::{self, Netlink, QdiscPlan};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

fn name(tag: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "rb19{tag}{}{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn sh(args: &[&str]) -> String {
    let o = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

struct Ns(String);
impl Drop for Ns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// Whether a VM router test can run here: root, then `checks` (qemu, the kernel package, the
/// router build, …), each error saying what is missing. `.ci/run` sets ROUTERBENCH_REQUIRE_VM
/// (as root, after bench/cross.sh built the router binaries): under it, or `CI`, a missing one
/// fails the test instead of skipping it.
fn vm_test_can_run(test: &str, checks: impl FnOnce() -> Result<(), String>) -> bool {
    let ci =
        std::env::var_os("CI").is_some() || std::env::var_os("ROUTERBENCH_REQUIRE_VM").is_some();
    let missing = if routerbench::lab::sys::is_root() {
        checks().err()
    } else {
        Some("not root".to_string())
    };
    if let Some(why) = missing {
        assert!(!ci, "CI must run {test}: {why}");
        eprintln!("skip {test}: {why}");
        return false;
    }
    true
}

/// An RRUL (3 s of load) from the LAN host against the routerbench server inside the VM (its
/// agent, 10.201.1.1:5201): every UDP series must say `kernel` for both ends, the far end's
/// stamps coming from the VM's own kernel (`server` names its build in messages). Returns the
/// result and each UDP series' round trips.
fn rrul_against_the_vm_server(
    rb: &str,
    lab: &str,
    server: &str,
) -> (serde_json::Value, Vec<Vec<f64>>) {
    let json = std::env::temp_dir().join(format!("{lab}-vmserver.json"));
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            &format!("{lab}-lan"),
            rb,
            "rrul",
            "10.201.1.1",
        ])
        .args(["-p", "5201", "-l", "3", "--delay", "1", "-q", "--json"])
        .arg(&json)
        .bounded(Duration::from_secs(300));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    let mut series = Vec::new();
    for p in r["latency"]["probes"].as_array().unwrap() {
        if p["kind"] == "udp" {
            assert_eq!(p["timestamps"], "kernel", "this host's stamps: {p}");
            assert_eq!(
                p["server_timestamps"], "kernel",
                "the {server} server's stamps: {p}"
            );
            series.push(
                p["samples"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|x| x["rtt_ms"].as_f64())
                    .collect(),
            );
        }
    }
    assert!(
        !series.is_empty(),
        "no UDP probe series against the VM's server: {r}"
    );
    (r, series)
}

/// What `vm-router` does inside the VM, on this kernel (which has htb, bfifo and nftables
/// masquerade, not cake or fq_codel): addresses, link state, an htb class with a bfifo leaf and
/// the masquerade rule, all over netlink, then read back with iproute2 and nft.
#[test]
fn netlink_configuration_on_this_kernel() {
    if !crate::support::lab::can_run("netlink_configuration_on_this_kernel", &["ip", "tc", "nft"]) {
        return;
    }
    let ns = Ns(name("nl"));
    sh(&["ip", "netns", "add", &ns.0]);
    sh(&[
        "ip", "-n", &ns.0, "link", "add", "rb19a", "type", "veth", "peer", "name", "rb19b",
    ]);
    routerbench::lab::netns::run_in(&ns.0, || {
        let mut nl = Netlink::route()?;
        nlconf::link_up(&mut nl, "lo")?;
        nlconf::link_up(&mut nl, "rb19a")?;
        nlconf::link_up(&mut nl, "rb19b")?;
        nlconf::addr_add(&mut nl, "rb19a", "10.219.1.1".parse()?, 24)?;
        nlconf::addr_add(&mut nl, "rb19b", "10.219.2.1".parse()?, 24)?;
        nlconf::route_add(&mut nl, "10.219.9.0".parse()?, 24, "10.219.2.7".parse()?)?;
        let plan = QdiscPlan::HtbFifo {
            rate_bps: 20_000_000,
            buffer: 64_000,
        };
        nlconf::qdisc_set(&mut nl, "rb19a", plan)?;
        // Twice: replacing works (the old root goes first).
        nlconf::qdisc_set(&mut nl, "rb19a", plan)?;
        nlconf::masquerade("routerbench_lab", "rb19b")?;
        nlconf::masquerade("routerbench_lab", "rb19b")?;
        // A kernel refusal comes back as an error naming the step.
        let e = nlconf::addr_add(&mut nl, "nosuchdev0", "10.219.3.1".parse()?, 24).unwrap_err();
        assert!(e.to_string().contains("nosuchdev0"), "{e}");
        Ok(())
    })
    .unwrap();
    let addrs = sh(&["ip", "-n", &ns.0, "-4", "addr", "show", "dev", "rb19a"]);
    assert!(addrs.contains("10.219.1.1/24"), "{addrs}");
    let routes = sh(&["ip", "-n", &ns.0, "route"]);
    assert!(routes.contains("10.219.9.0/24 via 10.219.2.7"), "{routes}");
    let q = sh(&["tc", "-n", &ns.0, "qdisc", "show", "dev", "rb19a"]);
    assert!(q.contains("qdisc htb 1: root"), "{q}");
    assert!(q.contains("qdisc bfifo 10: parent 1:1 limit 64000b"), "{q}");
    let c = sh(&["tc", "-n", &ns.0, "class", "show", "dev", "rb19a"]);
    assert!(
        c.contains("class htb 1:1 root leaf 10: prio 0 rate 20Mbit ceil 20Mbit"),
        "{c}"
    );
    let rules = sh(&["ip", "netns", "exec", &ns.0, "nft", "list", "ruleset"]);
    assert!(rules.contains("table ip routerbench_lab"), "{rules}");
    assert!(
        rules.contains("type nat hook postrouting priority srcnat; policy accept;"),
        "{rules}"
    );
    assert!(
        rules.contains("oifname \"rb19b\" counter packets 0 bytes 0 masquerade"),
        "{rules}"
    );
    assert_eq!(rules.matches("masquerade").count(), 1, "{rules}");
}

/// The VM router end to end: boot it (`lab up --router vm`, Debian's armmp kernel under
/// qemu-system-arm), a short RRUL through it with the router's agent, then `lab down`: no qemu,
/// namespace, cgroup or state file left. Needs root, qemu-system-arm, the armhf architecture in
/// apt, the static armv7 build (`TARGETS=armv7 bench/cross.sh`) and wireguard-go + wg; CI has
/// all of them, so there (`CI` or `ROUTERBENCH_REQUIRE_VM` set) a missing one fails instead of
/// skipping.
#[test]
fn vm_router_boots_and_carries_an_rrul() {
    let test = "vm_router_boots_and_carries_an_rrul";
    if !vm_test_can_run(test, || {
        routerbench::lab::vm::preflight().map_err(|e| e.to_string())?;
        routerbench::lab::vm::assets::router_binary(None).map_err(|e| e.to_string())?;
        routerbench::lab::vm::wan_wg::preflight().map_err(|e| e.to_string())
    }) {
        return;
    }
    let lab = name("vm");
    // One VM at a time: each emulated router wants the host's two cores, and two or three
    // booting and forwarding at once make their timings (and the tests' bounds) a matter of luck.
    let _one_vm = crate::support::alone();
    let _guard = crate::support::lab::guard(&lab);
    let rb = env!("CARGO_BIN_EXE_routerbench");
    let out = Command::new(rb)
        .args([
            "lab",
            "up",
            "--router",
            "vm",
            "--wireguard",
            "--extras",
            "iperf3,openssl",
            "--name",
            &lab,
            "--json",
        ])
        .bounded(Duration::from_secs(300));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let up: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let vm = &up["config"]["router_vm"];
    assert_eq!(vm["identity"]["arch"], "arm", "{vm}");
    assert!(vm["kernel"].as_str().unwrap().ends_with("-armmp"), "{vm}");
    let pid = vm["qemu_pid"].as_i64().unwrap();
    let wg = &vm["wireguard"];
    assert_eq!(wg["wan_tunnel_ip"], "10.202.0.2", "{vm}");
    let wg_pid = wg["wireguard_go_pid"].as_i64().unwrap();
    assert!(
        vm["steps"]
            .to_string()
            .contains("WireGuard wg0 10.202.0.1/24"),
        "{vm}"
    );
    // The control port: routerbench run inside the VM, its output back on the host.
    let out = Command::new(rb)
        .args(["lab", "exec", "--name", &lab, "--", "device", "--json", "-"])
        .bounded(Duration::from_secs(300));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dev: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(dev["arch"], "arm", "{dev}");
    // A command that fails inside the VM fails here, with its status.
    let out = Command::new(rb)
        .args(["lab", "exec", "--name", &lab, "--", "no-such-command"])
        .bounded(Duration::from_secs(300));
    assert_eq!(out.status.code(), Some(2));
    // Debian's iperf3 and openssl from the image's extras, through the same port; nothing
    // else (a shell is refused, naming what runs), and iperf3's server in the background.
    let exec = |args: &[&str]| {
        Command::new(rb)
            .args(["lab", "exec", "--name", &lab])
            .args(args)
            .bounded(Duration::from_secs(300))
    };
    let out = exec(&["--program", "openssl", "--", "version"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.starts_with("OpenSSL 3"),
        "{text}"
    );
    let out = exec(&["--program", "sh", "--", "-c", "true"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("iperf3, openssl"),
        "{err}"
    );
    let out = exec(&[
        "--program",
        "iperf3",
        "--background",
        "--timeout",
        "60",
        "--",
        "-s",
        "-1",
        "-p",
        "5302",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut reply = serde_json::Value::Null;
    for _ in 0..5 {
        std::thread::sleep(Duration::from_secs(1));
        let out = exec(&[
            "--program",
            "iperf3",
            "--reply-json",
            "--timeout",
            "60",
            "--",
            "-c",
            "127.0.0.1",
            "-p",
            "5302",
            "-t",
            "1",
            "-J",
        ]);
        reply = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if reply["status"] == 0 {
            break;
        }
    }
    assert_eq!(reply["status"], 0, "{reply}");
    assert!(reply["vm_cpu_s"].as_f64().unwrap() > 0.0, "{reply}");
    let iperf: serde_json::Value = serde_json::from_str(reply["stdout"].as_str().unwrap()).unwrap();
    assert!(
        iperf["end"]["sum_received"]["bytes"].as_f64().unwrap() > 0.0,
        "{iperf}"
    );
    // Through the tunnel: a short upload to the WAN host's tunnel address.
    let out = Command::new(rb)
        .args([
            "lab", "run", "tcp_nup", "--name", &lab, "--tunnel", "-l", "3", "--delay", "0.5", "-n",
            "1", "-q", "--json", "-",
        ])
        .bounded(Duration::from_secs(300));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        t["latency"]["summary"]["upload_mbps"].as_f64().unwrap() > 0.5,
        "{}",
        t["latency"]["summary"]
    );
    assert_eq!(
        t["latency"]["host"], "10.202.0.2",
        "{}",
        t["latency"]["host"]
    );
    let json = std::env::temp_dir().join(format!("{lab}.json"));
    let out = Command::new(rb)
        .args([
            "lab", "run", "rrul", "--name", &lab, "-l", "5", "--delay", "1", "-q",
        ])
        .arg("--json")
        .arg(&json)
        .bounded(Duration::from_secs(300));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    // The router's samples came from its own agent, inside the ARM VM, on the test's axis.
    let m = &r["monitor"];
    assert_eq!(m["agent"]["address"], "10.201.1.1:5201", "{m}");
    assert!(m["samples"].as_array().unwrap().len() >= 10, "{m}");
    assert!(m["summary"]["busiest_cpu_max_pct"].as_f64().unwrap() > 0.0);
    assert_eq!(r["lab"]["config"]["router_vm"]["identity"]["arch"], "arm");
    // Traffic went through: both directions moved data, and the verdict was made.
    let s = &r["latency"]["summary"];
    assert!(s["upload_mbps"].as_f64().unwrap() > 1.0, "{s}");
    assert!(s["download_mbps"].as_f64().unwrap() > 1.0, "{s}");
    assert!(
        r["lab"]["router_verdict"]["line"]
            .as_str()
            .unwrap()
            .contains("router CPU")
    );
    // The taps' tun rings were counted (qdisc and /proc/net/dev inside the namespaces).
    for t in r["lab"]["tap_queues"].as_array().unwrap() {
        assert!(t["ring"]["capacity_packets"].as_u64().unwrap() > 0, "{t}");
    }
    // Kernel stamps at both ends of the UDP probes through the router (this host's kernel at
    // both ends: the far end is the WAN namespace's server).
    for p in r["latency"]["probes"].as_array().unwrap() {
        if p["kind"] == "udp" {
            assert_eq!(p["timestamps"], "kernel", "{p}");
            assert_eq!(p["server_timestamps"], "kernel", "{p}");
        }
    }
    // Issue 18 step 4: an RRUL from the LAN host against the armv7 build's own server inside the
    // VM (the VM's agent is also its test server, 10.201.1.1): the far end's stamps come from the
    // ARM kernel through the 32-bit `_NEW` socket options. Each UDP series must say `kernel` for
    // both ends and carry kernel-stamped round trips.
    let (_, series) = rrul_against_the_vm_server(rb, &lab, "armv7");
    for rtts in &series {
        let n = rtts.iter().filter(|&&v| v > 0.0).count();
        assert!(n >= 5, "{n} round trips: {rtts:?}");
    }
    let out = Command::new(rb)
        .args(["lab", "down", "--name", &lab])
        .bounded(Duration::from_secs(300));
    assert!(out.status.success());
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}/cmdline")).exists()
            || !std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                .unwrap_or_default()
                .contains("qemu")
    );
    assert!(
        !std::path::Path::new(&format!("/proc/{wg_pid}")).exists() || {
            let c = std::fs::read_to_string(format!("/proc/{wg_pid}/cmdline")).unwrap_or_default();
            !c.contains("wireguard-go")
        }
    );
    assert!(!std::path::Path::new(&format!("/run/routerbench-lab/{lab}.ctl")).exists());
    for part in ["lan", "rtr", "wan"] {
        assert!(!std::path::Path::new(&format!("/run/netns/{lab}-{part}")).exists());
    }
    assert!(!std::path::Path::new(&format!("/run/routerbench-lab/{lab}.console")).exists());
}

/// Issue 18 step 4 on MIPS: `lab up --router vm --vm-arch mipsel` boots Debian's 4kc-malta kernel
/// under qemu-system-mipsel (malta, 34Kf) with the static mipsel build (`TARGETS=mipsel
/// bench/cross.sh`) inside, and an RRUL from the LAN host against that build's server (the
/// VM's agent, 10.201.1.1) gets kernel stamps at both ends: the MIPS kernel's through the
/// 32-bit `_NEW` socket options (musl's 64-bit `time_t`). Short (3 s of load): TCG
/// emulation of MIPS is slow. Needs root, qemu-system-mipsel (package qemu-system-mips), the
/// mipsel architecture in apt and the mipsel build; CI has all of them, so there a missing one
/// fails instead of skipping.
#[test]
fn vm_router_mipsel_kernel_stamps_at_both_ends() {
    use routerbench::lab::vm::{self, VmArch};
    let arch = VmArch::Mipsel;
    let test = "vm_router_mipsel_kernel_stamps_at_both_ends";
    if !vm_test_can_run(test, || {
        vm::preflight_for(arch).map_err(|e| e.to_string())?;
        vm::assets::router_binary_for(None, arch).map_err(|e| e.to_string())?;
        vm::assets::kernel_package_for(arch)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }) {
        return;
    }
    let lab = name("vmm");
    // One VM at a time: each emulated router wants the host's two cores, and two or three
    // booting and forwarding at once make their timings (and the tests' bounds) a matter of luck.
    let _one_vm = crate::support::alone();
    let _guard = crate::support::lab::guard(&lab);
    let rb = env!("CARGO_BIN_EXE_routerbench");
    // More vCPUs than the malta VM can run is refused before anything is built.
    let out = Command::new(rb)
        .args(["lab", "up", "--router", "vm", "--vm-arch", "mipsel"])
        .args(["--vcpus", "2", "--name", &lab])
        .bounded(Duration::from_secs(60));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--vcpus 2") && err.contains("mipsel"), "{err}");
    let t0 = Instant::now();
    let out = Command::new(rb)
        .args(["lab", "up", "--router", "vm", "--vm-arch", "mipsel"])
        .args(["--name", &lab, "--json"])
        .bounded(Duration::from_secs(600));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let up: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let vmj = &up["config"]["router_vm"];
    assert_eq!(vmj["identity"]["arch"], "mips", "{vmj}");
    assert!(
        vmj["kernel"].as_str().unwrap().ends_with("-4kc-malta"),
        "{vmj}"
    );
    assert!(
        vmj["emulator"]
            .as_str()
            .unwrap()
            .starts_with("qemu-system-mipsel -M malta -cpu 34Kf"),
        "{vmj}"
    );
    assert_eq!(vmj["vcpus"], 1, "{vmj}");
    let pid = vmj["qemu_pid"].as_i64().unwrap();
    eprintln!(
        "mipsel VM up in {:.1} s (boot {} s)",
        t0.elapsed().as_secs_f64(),
        vmj["boot_s"]
    );
    let (r, series) = rrul_against_the_vm_server(rb, &lab, "mipsel");
    // What the run itself said went wrong, for every assertion below.
    let notes = &r["latency"]["notes"];
    for rtts in &series {
        assert!(
            rtts.len() >= 5,
            "{} round trips: {rtts:?}; notes: {notes}",
            rtts.len()
        );
        // Sane: positive, and below the probes' own timeout-scale bound.
        assert!(rtts.iter().all(|&v| v > 0.0 && v < 5000.0), "{rtts:?}");
    }
    let s = &r["latency"]["summary"];
    let idle = s["idle_rtt_ms"]["median"].as_f64().unwrap();
    let loaded = s["loaded_rtt_ms"]["median"].as_f64().unwrap();
    assert!(idle > 0.0 && idle < 500.0, "idle RTT {idle} ms: {s}");
    assert!(
        loaded >= idle * 0.5 && loaded < 5000.0,
        "loaded RTT {loaded} ms: {s}"
    );
    assert!(
        s["upload_mbps"].as_f64().unwrap() > 0.1,
        "{s}; notes: {notes}"
    );
    assert!(
        s["download_mbps"].as_f64().unwrap() > 0.1,
        "{s}; notes: {notes}"
    );
    eprintln!(
        "mipsel VM server: idle {idle:.2} ms, loaded {loaded:.2} ms, up {} / down {} Mbit/s",
        s["upload_mbps"], s["download_mbps"]
    );
    let out = Command::new(rb)
        .args(["lab", "down", "--name", &lab])
        .bounded(Duration::from_secs(300));
    assert!(out.status.success());
    assert!(
        !std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
            .unwrap_or_default()
            .contains("qemu")
    );
    for part in ["lan", "rtr", "wan"] {
        assert!(!std::path::Path::new(&format!("/run/netns/{lab}-{part}")).exists());
    }
}

/// The userspace forwarder inside the VM (`--aqm userspace --router vm`): a short upload through
/// its cake, then its own counters read out of the VM (`lab exec -- vm-router --shape-stats`)
/// must account for what the receiver got, in both directions (data up, ACKs down).
#[test]
fn vm_router_userspace_forwarder_reports_its_counters() {
    let test = "vm_router_userspace_forwarder_reports_its_counters";
    if !vm_test_can_run(test, || {
        routerbench::lab::vm::preflight().map_err(|e| e.to_string())?;
        routerbench::lab::vm::assets::router_binary(None)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }) {
        return;
    }
    let lab = name("q");
    // One VM at a time: each emulated router wants the host's two cores, and two or three
    // booting and forwarding at once make their timings (and the tests' bounds) a matter of luck.
    let _one_vm = crate::support::alone();
    let _guard = crate::support::lab::guard(&lab);
    let rb = env!("CARGO_BIN_EXE_routerbench");
    let out = Command::new(rb)
        .args([
            "lab",
            "up",
            "--router",
            "vm",
            "--rate",
            "5mbit",
            "--qdisc",
            "cake",
            "--aqm",
            "userspace",
            "--name",
            &lab,
            "--json",
        ])
        .bounded(Duration::from_secs(300));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(rb)
        .args([
            "lab", "run", "tcp_nup", "--name", &lab, "-l", "3", "--delay", "0.5", "-n", "1", "-q",
            "--json", "-",
        ])
        .bounded(Duration::from_secs(300));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let up_mbps = t["latency"]["summary"]["upload_mbps"].as_f64().unwrap();
    assert!(up_mbps > 0.1, "{}", t["latency"]["summary"]);
    // The counters are rewritten every second: wait for one written after the test.
    std::thread::sleep(Duration::from_millis(1500));
    let out = Command::new(rb)
        .args([
            "lab",
            "exec",
            "--name",
            &lab,
            "--",
            "vm-router",
            "--shape-stats",
        ])
        .bounded(Duration::from_secs(300));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["qdisc"], "cake", "{s}");
    let (up, down) = (&s["up"], &s["down"]);
    let dirs = [up, down];
    assert_eq!(
        (up["name"].as_str(), down["name"].as_str()),
        (Some("up"), Some("down"))
    );
    for d in dirs {
        let n = |k: &str| d[k].as_u64().unwrap();
        assert!(n("forwarded") > 0, "{d}");
        assert!(n("rx_frames") >= n("forwarded"), "{d}");
        assert!(d["cpu_ms"].as_f64().unwrap() > 0.0, "{d}");
        assert!(!d["io_path"].as_str().unwrap().is_empty(), "{d}");
    }
    // Every byte the receiver counted crossed the forwarder (with its headers on top): at least
    // the measured goodput over the load's 3 s, and not more than the shaped 5 Mbit/s allows
    // over the whole run (the test's 4.5 s plus slack).
    let fwd_bits = up["forwarded_bytes"].as_f64().unwrap() * 8.0;
    assert!(
        fwd_bits >= 0.8 * up_mbps * 1e6 * 3.0,
        "{up} vs {up_mbps} Mbit/s"
    );
    assert!(fwd_bits <= 5e6 * 10.0, "{up}");
    let out = Command::new(rb)
        .args(["lab", "down", "--name", &lab])
        .bounded(Duration::from_secs(300));
    assert!(out.status.success());
    for part in ["lan", "rtr", "wan"] {
        assert!(!std::path::Path::new(&format!("/run/netns/{lab}-{part}")).exists());
    }
}
