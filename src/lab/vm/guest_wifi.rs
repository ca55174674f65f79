//! Inside the Wi-Fi VM router (`lab up --router vm --wifi N`): mac80211_hwsim has made N+1
//! radios (phy0..phyN, one interface each). hostapd makes phy0's interface the access point
//! (open network, 2.4 GHz, 11n, WMM) with the stations' gateway address; the router forwards
//! between it and the WAN NIC as between its LAN and WAN. Station K (1..N) gets radio phyK in a
//! network namespace of its own, held by a small process (`vm-router --station-holder K`) that
//! also has its own mount namespace with /sys mounted afresh (so the station's sysfs shows its
//! own radio and interface) and debugfs. The radio moves with `iw phy phyK set netns PID`, the
//! station connects with `iw dev wlanK connect SSID` (no wpa_supplicant on an open network),
//! and gets address 10.201.3.(10+K). Commands run in a station by entering the holder's two
//! namespaces (setns) between fork and exec.

use crate::lab::error::{LabError, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Where the stations' holders are recorded for the control port (`lab exec --station K`).
pub const STATIONS_FILE: &str = "/run/routerbench-stations.json";
/// The libraries of hostapd and iw (extras.rs puts them there).
const LD_PATH: &str = "/lib/arm-linux-gnueabihf:/lib/mipsel-linux-gnu";

/// What the host asks for (router.json's `wifi`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GuestWifi {
    pub stations: u32,
    pub ssid: String,
    pub channel: u32,
    /// The AP interface's address and the stations' gateway.
    pub ap_ip: String,
    pub prefix_len: u8,
    /// Station K's address is `<net>.(station_ip_offset + K)`.
    pub station_ip_offset: u8,
    /// How long a station may take to associate.
    pub assoc_timeout_s: f64,
}

/// One station as set up.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct GuestStation {
    pub station: u32,
    pub phy: String,
    pub dev: String,
    pub mac: String,
    pub ip: String,
    pub assoc_s: f64,
    /// The process that holds its namespaces.
    pub holder_pid: i32,
}

/// What the Wi-Fi setup did (the ready line's `wifi`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct GuestWifiReady {
    pub ap_phy: String,
    pub ap_dev: String,
    pub stations: Vec<GuestStation>,
}

impl GuestWifi {
    /// Station `k`'s address.
    pub fn station_ip(&self, k: u32) -> Result<String> {
        let ap: std::net::Ipv4Addr = self
            .ap_ip
            .parse()
            .map_err(|_| LabError::Input(format!("bad AP address {:?}", self.ap_ip)))?;
        let o = ap.octets();
        let last = u32::from(self.station_ip_offset) + k;
        if last > 254 {
            return Err(LabError::Input(format!("station {k}: no address left")));
        }
        Ok(format!("{}.{}.{}.{last}", o[0], o[1], o[2]))
    }

    /// hostapd's configuration for interface `dev`.
    pub fn hostapd_conf(&self, dev: &str) -> String {
        format!(
            "interface={dev}\ndriver=nl80211\nssid={}\nhw_mode=g\nchannel={}\nieee80211n=1\n\
             wmm_enabled=1\nauth_algs=1\nignore_broadcast_ssid=0\n",
            self.ssid, self.channel
        )
    }
}

/// phyN → its network interface (`/sys/class/net/*/phy80211/name`).
fn dev_of_phy(phy: &str) -> Option<String> {
    let rd = std::fs::read_dir("/sys/class/net").ok()?;
    rd.flatten().take(256).find_map(|e| {
        let n = std::fs::read_to_string(e.path().join("phy80211/name")).ok()?;
        (n.trim() == phy).then(|| e.file_name().to_string_lossy().into_owned())
    })
}

/// The radios, in wiphy index order.
fn phys() -> Vec<(u32, String)> {
    let mut v: Vec<(u32, String)> = std::fs::read_dir("/sys/class/ieee80211")
        .map(|rd| {
            rd.flatten()
                .take(64)
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let idx = std::fs::read_to_string(e.path().join("index")).ok()?;
                    Some((idx.trim().parse().ok()?, name))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn read_mac(dev: &str) -> String {
    std::fs::read_to_string(format!("/sys/class/net/{dev}/address"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Runs `prog args` (in station `holder`'s namespaces when given) and returns its output;
/// killed after `timeout`.
pub fn run(prog: &str, args: &[&str], holder: Option<i32>, timeout: Duration) -> Result<String> {
    let mut c = Command::new(prog);
    c.args(args)
        .env("LD_LIBRARY_PATH", LD_PATH)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(pid) = holder {
        enter(&mut c, pid)?;
    }
    let what = format!("{prog} {}", args.join(" "));
    let child = c
        .spawn()
        .map_err(|e| LabError::Sys(format!("cannot run {what}: {e}")))?;
    let out = wait_output(child, timeout).map_err(|e| LabError::State(format!("{what}: {e}")))?;
    if !out.status.success() {
        return Err(LabError::State(format!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim(),
            String::from_utf8_lossy(&out.stdout).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn wait_output(
    mut child: std::process::Child,
    timeout: Duration,
) -> std::result::Result<std::process::Output, String> {
    let t0 = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return child.wait_with_output().map_err(|e| e.to_string()),
            Ok(None) if t0.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer within {} s", timeout.as_secs_f64()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Makes `c` enter holder `pid`'s network and mount namespaces before it runs.
pub fn enter(c: &mut Command, pid: i32) -> Result<()> {
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::os::unix::process::CommandExt;
    let open = |kind: &str| -> Result<OwnedFd> {
        let p = format!("/proc/{pid}/ns/{kind}");
        std::fs::File::open(&p).map(OwnedFd::from).map_err(|e| {
            LabError::State(format!("station namespace {p}: {e} (is its holder gone?)"))
        })
    };
    let (net, mnt) = (open("net")?, open("mnt")?);
    let (n, m) = (net.as_raw_fd(), mnt.as_raw_fd());
    // SAFETY: between fork and exec only async-signal-safe calls (setns); the fds stay open
    // until the closure is dropped with the Command.
    unsafe {
        c.pre_exec(move || {
            let _keep = (&net, &mnt);
            if libc::setns(n, libc::CLONE_NEWNET) != 0 || libc::setns(m, libc::CLONE_NEWNS) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(())
}

/// `vm-router --station-holder K`: new network and mount namespaces, /sys and debugfs mounted
/// afresh in them (the command then says "ready" on standard output and sleeps until killed).
pub fn own_namespaces() -> Result<()> {
    use nix::mount::{MsFlags, mount};
    use nix::sched::{CloneFlags, unshare};
    unshare(CloneFlags::CLONE_NEWNET | CloneFlags::CLONE_NEWNS)
        .map_err(|e| LabError::Sys(format!("unshare(net, mount): {e}")))?;
    mount::<str, str, str, str>(None, "/", None, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None)
        .map_err(|e| LabError::Sys(format!("make / private: {e}")))?;
    mount::<str, str, str, str>(Some("sysfs"), "/sys", Some("sysfs"), MsFlags::empty(), None)
        .map_err(|e| LabError::Sys(format!("mount /sys: {e}")))?;
    let _ = mount::<str, str, str, str>(
        Some("debugfs"),
        "/sys/kernel/debug",
        Some("debugfs"),
        MsFlags::empty(),
        None,
    );
    Ok(())
}

fn sh_in(holder: i32, script: &str) -> Result<String> {
    run(
        "/bin/busybox",
        &["sh", "-c", script],
        Some(holder),
        Duration::from_secs(10),
    )
}

/// Sets up the access point and the stations; returns what was done and the steps to report.
pub fn setup(w: &GuestWifi, lan_prefix_len: u8) -> Result<(GuestWifiReady, Vec<String>)> {
    let _ = lan_prefix_len;
    let mut steps = Vec::new();
    let radios = phys();
    let want = w.stations as usize + 1;
    if radios.len() < want {
        return Err(LabError::State(format!(
            "mac80211_hwsim made {} radios, {want} wanted (radios={want}): is the module loaded? \
             (/sys/class/ieee80211 has {:?})",
            radios.len(),
            radios.iter().map(|r| &r.1).collect::<Vec<_>>()
        )));
    }
    let ap_phy = radios[0].1.clone();
    let ap_dev = dev_of_phy(&ap_phy)
        .ok_or_else(|| LabError::State(format!("{ap_phy} has no network interface")))?;
    let conf = Path::new("/tmp/hostapd.conf");
    std::fs::write(conf, w.hostapd_conf(&ap_dev))
        .map_err(|e| LabError::Sys(format!("cannot write {}: {e}", conf.display())))?;
    let log = std::fs::File::create("/tmp/hostapd.log")
        .map_err(|e| LabError::Sys(format!("cannot create /tmp/hostapd.log: {e}")))?;
    let log2 = log
        .try_clone()
        .map_err(|e| LabError::Sys(format!("hostapd log: {e}")))?;
    Command::new("/bin/hostapd")
        .arg(conf)
        .env("LD_LIBRARY_PATH", LD_PATH)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2)
        .spawn()
        .map_err(|e| LabError::Sys(format!("cannot start hostapd: {e}")))?;
    let t0 = Instant::now();
    loop {
        let text = std::fs::read_to_string("/tmp/hostapd.log").unwrap_or_default();
        if text.contains("AP-ENABLED") {
            break;
        }
        if t0.elapsed() > Duration::from_secs(20) {
            return Err(LabError::State(format!(
                "hostapd did not enable the AP on {ap_dev} within 20 s; its log:\n{}",
                text.lines()
                    .rev()
                    .take(12)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect::<Vec<_>>()
                    .join("\n")
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let ap_ip: std::net::Ipv4Addr = w
        .ap_ip
        .parse()
        .map_err(|_| LabError::Input(format!("bad AP address {:?}", w.ap_ip)))?;
    let _ = std::fs::write(
        format!("/proc/sys/net/ipv6/conf/{ap_dev}/disable_ipv6"),
        "1",
    );
    let mut nl = super::nlconf::Netlink::route().map_err(|e| LabError::Sys(e.to_string()))?;
    super::nlconf::addr_add(&mut nl, &ap_dev, ap_ip, w.prefix_len)
        .map_err(|e| LabError::Sys(format!("address on {ap_dev}: {e}")))?;
    steps.push(format!(
        "hostapd AP on {ap_phy}/{ap_dev}: ssid {}, open, 2.4 GHz channel {}, 11n, WMM, {}/{} ({:.1} s)",
        w.ssid,
        w.channel,
        w.ap_ip,
        w.prefix_len,
        t0.elapsed().as_secs_f64()
    ));
    let exe = std::env::current_exe().map_err(|e| LabError::Sys(e.to_string()))?;
    let mut stations = Vec::new();
    for k in 1..=w.stations {
        let phy = radios[k as usize].1.clone();
        let dev = dev_of_phy(&phy)
            .ok_or_else(|| LabError::State(format!("{phy} has no network interface")))?;
        let mac = read_mac(&dev);
        let mut holder = Command::new(&exe)
            .args(["vm-router", "--station-holder", &k.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| LabError::Sys(format!("cannot start station {k}'s holder: {e}")))?;
        let pid = holder.id() as i32;
        {
            use std::io::BufRead;
            let mut line = String::new();
            let out = holder.stdout.take();
            let ok = out.is_some_and(|o| {
                std::io::BufReader::new(o).read_line(&mut line).is_ok() && line.trim() == "ready"
            });
            if !ok {
                return Err(LabError::State(format!(
                    "station {k}'s namespace holder did not start (said {:?})",
                    line.trim()
                )));
            }
        }
        run(
            "/bin/iw",
            &["phy", &phy, "set", "netns", &pid.to_string()],
            None,
            Duration::from_secs(10),
        )?;
        let ip = w.station_ip(k)?;
        sh_in(
            pid,
            &format!(
                "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6; \
                 echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6; \
                 echo 1 > /proc/sys/net/ipv6/conf/{dev}/disable_ipv6; \
                 /bin/busybox ip link set lo up && /bin/busybox ip link set {dev} up"
            ),
        )?;
        let t0 = Instant::now();
        run(
            "/bin/iw",
            &["dev", &dev, "connect", &w.ssid],
            Some(pid),
            Duration::from_secs(10),
        )?;
        let limit = Duration::from_secs_f64(w.assoc_timeout_s.clamp(1.0, 600.0));
        loop {
            let link = run(
                "/bin/iw",
                &["dev", &dev, "link"],
                Some(pid),
                Duration::from_secs(10),
            )
            .unwrap_or_default();
            if link.contains("Connected to") {
                break;
            }
            if t0.elapsed() > limit {
                return Err(LabError::State(format!(
                    "station {k} ({dev}, {mac}) did not associate with {:?} within {:.0} s \
                     (--wifi-assoc-timeout); iw dev {dev} link says: {}; hostapd's log ends:\n{}",
                    w.ssid,
                    limit.as_secs_f64(),
                    link.trim(),
                    std::fs::read_to_string("/tmp/hostapd.log")
                        .unwrap_or_default()
                        .lines()
                        .rev()
                        .take(8)
                        .collect::<Vec<_>>()
                        .join(" | ")
                )));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let assoc_s = t0.elapsed().as_secs_f64();
        sh_in(
            pid,
            &format!(
                "/bin/busybox ip addr add {ip}/{p} dev {dev} && \
                 /bin/busybox ip route add default via {ap} && \
                 /bin/busybox ping -c 1 -W 5 {ap} >/dev/null",
                p = w.prefix_len,
                ap = w.ap_ip
            ),
        )?;
        steps.push(format!(
            "station {k}: {phy}/{dev} {mac} in its own namespace, associated in {assoc_s:.1} s, {ip}/{}",
            w.prefix_len
        ));
        stations.push(GuestStation {
            station: k,
            phy,
            dev,
            mac,
            ip,
            assoc_s,
            holder_pid: pid,
        });
        // The holder runs on; its pipe's end is dropped (it writes nothing more).
        std::mem::forget(holder);
    }
    let ready = GuestWifiReady {
        ap_phy,
        ap_dev,
        stations,
    };
    let text =
        serde_json::to_string(&ready.stations).map_err(|e| LabError::Unexpected(e.to_string()))?;
    std::fs::write(STATIONS_FILE, text)
        .map_err(|e| LabError::Sys(format!("cannot write {STATIONS_FILE}: {e}")))?;
    Ok((ready, steps))
}

/// The holder of station `k` (from [`STATIONS_FILE`]).
pub fn holder_of(k: u32) -> Result<i32> {
    let text = std::fs::read_to_string(STATIONS_FILE).map_err(|e| {
        LabError::State(format!(
            "no Wi-Fi stations in this VM ({STATIONS_FILE}: {e}): `lab up --router vm --wifi N`"
        ))
    })?;
    let list: Vec<GuestStation> = serde_json::from_str(&text)
        .map_err(|e| LabError::Unexpected(format!("{STATIONS_FILE}: {e}")))?;
    list.iter()
        .find(|s| s.station == k)
        .map(|s| s.holder_pid)
        .ok_or_else(|| {
            LabError::Input(format!(
                "no station {k}: this VM has stations 1-{}",
                list.len()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_hostapd_config() {
        let w = GuestWifi {
            stations: 2,
            ssid: "routerbench".into(),
            channel: 1,
            ap_ip: "10.201.3.1".into(),
            prefix_len: 24,
            station_ip_offset: 10,
            assoc_timeout_s: 30.0,
        };
        assert_eq!(w.station_ip(1).unwrap(), "10.201.3.11");
        assert_eq!(w.station_ip(2).unwrap(), "10.201.3.12");
        assert!(w.station_ip(250).is_err());
        let c = w.hostapd_conf("wlan0");
        for l in [
            "interface=wlan0",
            "driver=nl80211",
            "ssid=routerbench",
            "hw_mode=g",
            "channel=1",
            "ieee80211n=1",
            "wmm_enabled=1",
        ] {
            assert!(c.lines().any(|x| x == l), "{l} in {c}");
        }
    }
}
