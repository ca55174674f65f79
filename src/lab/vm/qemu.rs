//! Running the VM router: tap devices opened inside the LAN and WAN namespaces (their fds go to
//! qemu, so the taps live exactly as long as qemu and never appear in the root namespace),
//! `qemu-system-arm` started inside the lab's router namespace (so `lab down` finds it by
//! `ip netns pids`), an optional CPU budget through a cgroup, the serial console in a file, and
//! the wait for the router's ready line.

use crate::lab::error::{LabError, Result};
use crate::lab::netns;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TAP: libc::c_short = 0x0002;
const IFF_NO_PI: libc::c_short = 0x1000;
const IFF_VNET_HDR: libc::c_short = 0x4000;

/// Opens `/dev/net/tun` as tap `name` in the calling thread's namespace.
fn open_tap_here(name: &str, vnet_hdr: bool) -> std::io::Result<OwnedFd> {
    let path = c"/dev/net/tun";
    // SAFETY: a NUL-terminated path; the returned fd is owned below.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return Err(std::io::Error::new(
            e.kind(),
            format!("cannot open /dev/net/tun: {e} (the tun module, and root)"),
        ));
    }
    // SAFETY: fd was just opened and is owned by nothing else.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    #[repr(C)]
    struct IfReq {
        name: [u8; 16],
        flags: libc::c_short,
        pad: [u8; 22],
    }
    let mut req = IfReq {
        name: [0; 16],
        flags: IFF_TAP | IFF_NO_PI | if vnet_hdr { IFF_VNET_HDR } else { 0 },
        pad: [0; 22],
    };
    for (d, s) in req.name.iter_mut().zip(name.bytes().take(15)) {
        *d = s;
    }
    // SAFETY: TUNSETIFF reads and writes a struct ifreq, which IfReq lays out (40 bytes).
    let r = unsafe { libc::ioctl(owned.as_raw_fd(), TUNSETIFF as _, &mut req) };
    if r < 0 {
        let e = std::io::Error::last_os_error();
        return Err(std::io::Error::new(
            e.kind(),
            format!("TUNSETIFF {name}: {e}"),
        ));
    }
    Ok(owned)
}

/// Opens tap `name` inside namespace `ns`.
pub fn open_tap(ns: &str, name: &str, vnet_hdr: bool) -> Result<OwnedFd> {
    let n = name.to_string();
    netns::run_in(ns, move || Ok(open_tap_here(&n, vnet_hdr)?))
}

/// A CPU budget on a process: percent of one host core, through the cgroup v2 `cpu.max` or the
/// v1 `cpu.cfs_quota_us` of a cgroup of its own.
#[derive(Debug, Clone)]
pub struct CpuBudget {
    pub dir: PathBuf,
    pub how: String,
}

const PERIOD_US: u64 = 100_000;

/// Creates the cgroup for lab `name` with `pct` % of one core.
pub fn make_budget(name: &str, pct: u32) -> Result<CpuBudget> {
    let quota = u64::from(pct) * PERIOD_US / 100;
    let cg = format!("routerbench-{name}");
    let v2 = Path::new("/sys/fs/cgroup/cgroup.controllers");
    let sys = |e: std::io::Error, p: &Path| {
        LabError::Sys(format!("cannot set the CPU budget in {}: {e}", p.display()))
    };
    if std::fs::read_to_string(v2).is_ok_and(|c| c.split_whitespace().any(|x| x == "cpu")) {
        let dir = Path::new("/sys/fs/cgroup").join(&cg);
        std::fs::create_dir_all(&dir).map_err(|e| sys(e, &dir))?;
        let f = dir.join("cpu.max");
        std::fs::write(&f, format!("{quota} {PERIOD_US}")).map_err(|e| sys(e, &f))?;
        return Ok(CpuBudget {
            dir,
            how: format!("cgroup v2 cpu.max {quota} {PERIOD_US}"),
        });
    }
    let v1 = Path::new("/sys/fs/cgroup/cpu");
    if v1.join("cpu.cfs_quota_us").exists() {
        let dir = v1.join(&cg);
        std::fs::create_dir_all(&dir).map_err(|e| sys(e, &dir))?;
        for (f, v) in [
            ("cpu.cfs_period_us", PERIOD_US),
            ("cpu.cfs_quota_us", quota),
        ] {
            let p = dir.join(f);
            std::fs::write(&p, v.to_string()).map_err(|e| sys(e, &p))?;
        }
        return Ok(CpuBudget {
            dir,
            how: format!("cgroup v1 cpu.cfs_quota_us {quota} / cpu.cfs_period_us {PERIOD_US}"),
        });
    }
    Err(LabError::State(
        "--cpu-budget needs the cgroup cpu controller (cgroup v2 with `cpu` in \
         /sys/fs/cgroup/cgroup.controllers, or v1 /sys/fs/cgroup/cpu): mount it, or use --vcpus 1"
            .into(),
    ))
}

impl CpuBudget {
    /// Puts `pid` (all its threads) under the budget.
    pub fn add(&self, pid: i32) -> Result<()> {
        let p = self.dir.join("cgroup.procs");
        std::fs::write(&p, pid.to_string())
            .map_err(|e| LabError::Sys(format!("cannot write {}: {e}", p.display())))
    }
}

/// Removes lab `name`'s cgroup (its processes must be gone; retried for a second).
pub fn remove_budget(name: &str) {
    let cg = format!("routerbench-{name}");
    for base in ["/sys/fs/cgroup", "/sys/fs/cgroup/cpu"] {
        let dir = Path::new(base).join(&cg);
        if !dir.exists() {
            continue;
        }
        for _ in 0..20 {
            if std::fs::remove_dir(&dir).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// How to start qemu.
#[derive(Debug, Clone)]
pub struct QemuPlan {
    pub qemu: PathBuf,
    pub kernel: PathBuf,
    pub initrd: PathBuf,
    pub console: PathBuf,
    pub vcpus: u32,
    pub memory_mib: u32,
    pub macs: [String; 2],
    pub vnet_hdr: bool,
    /// qemu's listening socket for the VM's control port (a virtio-serial port).
    pub control: PathBuf,
    /// The machine, CPU and console follow the architecture.
    pub arch: super::arch::VmArch,
}

impl QemuPlan {
    /// The arguments; the taps are fds 3 (LAN) and 4 (WAN).
    pub fn args(&self) -> Vec<String> {
        let mut a: Vec<String> = self
            .arch
            .machine()
            .iter()
            .chain(&[
                "-nodefaults",
                "-no-reboot",
                "-display",
                "none",
                "-monitor",
                "none",
            ])
            .map(|s| s.to_string())
            .collect();
        a.extend([
            "-smp".into(),
            self.vcpus.to_string(),
            "-m".into(),
            self.memory_mib.to_string(),
            "-kernel".into(),
            self.kernel.display().to_string(),
            "-initrd".into(),
            self.initrd.display().to_string(),
            "-append".into(),
            format!("console={} panic=-1 quiet", self.arch.console()),
            "-serial".into(),
            format!("file:{}", self.console.display()),
        ]);
        a.extend([
            "-device".into(),
            "virtio-serial-pci".into(),
            "-chardev".into(),
            format!(
                "socket,id=ctl,path={},server=on,wait=off",
                self.control.display()
            ),
            "-device".into(),
            format!(
                "virtserialport,chardev=ctl,name={}",
                super::guest_run::CONTROL_PORT
            ),
        ]);
        // With fd= qemu takes the vnet header from how the tap was opened (IFF_VNET_HDR).
        for (i, fd) in [3, 4].iter().enumerate() {
            a.push("-netdev".into());
            a.push(format!("tap,id=n{i},fd={fd}"));
            a.push("-device".into());
            a.push(format!("virtio-net-pci,netdev=n{i},mac={}", self.macs[i]));
        }
        a
    }
}

/// Starts qemu inside namespace `rtr_ns` with the two taps as fds 3 and 4. Returns the child.
pub fn spawn(
    plan: &QemuPlan,
    rtr_ns: &str,
    taps: [&OwnedFd; 2],
    log: &Path,
) -> Result<std::process::Child> {
    let log = std::fs::File::create(log)
        .map_err(|e| LabError::Sys(format!("cannot create {}: {e}", log.display())))?;
    use std::os::unix::process::CommandExt;
    let ns = std::fs::File::open(netns::ns_path(rtr_ns))
        .map_err(|e| LabError::Sys(format!("cannot open namespace {rtr_ns}: {e}")))?;
    let (ns_fd, lan, wan) = (ns.as_raw_fd(), taps[0].as_raw_fd(), taps[1].as_raw_fd());
    let mut cmd = std::process::Command::new(&plan.qemu);
    cmd.args(plan.args())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .process_group(0);
    // SAFETY: between fork and exec only async-signal-safe calls: setns, dup2, fcntl.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setns(ns_fd, libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Both taps move above 10 first, so neither is clobbered if it sits at 3 or 4;
            // dup2 then puts them at 3 and 4 without FD_CLOEXEC.
            let l = libc::fcntl(lan, libc::F_DUPFD, 10);
            let w = libc::fcntl(wan, libc::F_DUPFD, 10);
            if l < 0 || w < 0 || libc::dup2(l, 3) < 0 || libc::dup2(w, 4) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            for fd in [3, 4] {
                let fl = libc::fcntl(fd, libc::F_GETFD);
                libc::fcntl(fd, libc::F_SETFD, fl & !libc::FD_CLOEXEC);
            }
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .map_err(|e| LabError::Sys(format!("cannot start {}: {e}", plan.qemu.display())))?;
    drop(ns);
    Ok(child)
}

/// The last `n` lines of the console log (for errors).
pub fn console_tail(console: &Path, n: usize) -> String {
    let text = std::fs::read(console)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| !l.trim().is_empty())
        .collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// What the wait for the router found.
#[derive(Debug, PartialEq)]
pub enum Boot {
    /// The ready line's JSON.
    Ready(String),
    /// The router reported a failure (its message).
    Failed(String),
}

/// Waits until the console shows the ready (or failed) line, qemu exits, or `limit` passes.
/// The router's ready or failed line in the console text so far. Only whole lines count: the
/// guest writes its long ready line through the emulated serial port a piece at a time, and on a
/// loaded host the console file was read mid-line (the JSON cut off at column 780).
pub fn boot_outcome(text: &str) -> Option<Boot> {
    for line in text.split_inclusive('\n').filter(|l| l.ends_with('\n')) {
        let line = line.trim_end_matches(['\n', '\r']);
        if let Some(j) = line.find(super::guest::READY) {
            return Some(Boot::Ready(
                line[j + super::guest::READY.len()..].to_string(),
            ));
        }
        if let Some(j) = line.find(super::guest::FAILED) {
            return Some(Boot::Failed(
                line[j + super::guest::FAILED.len()..].to_string(),
            ));
        }
    }
    None
}

pub fn wait_ready(
    child: &mut std::process::Child,
    console: &Path,
    log: &Path,
    limit: Duration,
) -> Result<Boot> {
    let t0 = Instant::now();
    loop {
        let text = std::fs::read(console)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        if let Some(b) = boot_outcome(&text) {
            return Ok(b);
        }
        if let Ok(Some(status)) = child.try_wait() {
            let err = std::fs::read_to_string(log).unwrap_or_default();
            return Err(LabError::State(format!(
                "the VM router's qemu exited ({status}) before the router came up; qemu said: {}; \
                 console's last lines:\n{}",
                err.trim(),
                console_tail(console, 15)
            )));
        }
        if t0.elapsed() > limit {
            return Err(LabError::State(format!(
                "the VM router did not come up within {} s (a CPU budget too small, or a kernel \
                 that does not boot); console's last lines:\n{}",
                limit.as_secs(),
                console_tail(console, 15)
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// True if `pid` is a live qemu-system process (guards against PID reuse).
pub fn qemu_alive(pid: i32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).contains("qemu-system"))
        .unwrap_or(false)
        && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z "))
}

/// `qemu-system-arm --version`'s first line.
pub fn version(qemu: &Path) -> String {
    std::process::Command::new(qemu)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(str::to_string)
        })
        .unwrap_or_else(|| "unknown version".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_line_only_when_whole() {
        let r = super::super::guest::READY;
        let f = super::super::guest::FAILED;
        // Written so far: the ready line without its end. Not yet.
        let part = format!("[    1.2] virtio_net\r\n{r}{{\"identity\":{{\"arch\":\"ar");
        assert_eq!(boot_outcome(&part), None);
        let whole = format!("{part}m\"}}}}\r\nmore");
        assert_eq!(
            boot_outcome(&whole),
            Some(Boot::Ready("{\"identity\":{\"arch\":\"arm\"}}".into()))
        );
        assert_eq!(
            boot_outcome(&format!("x\n{f}no eth1\n")),
            Some(Boot::Failed("no eth1".into()))
        );
        assert_eq!(boot_outcome(""), None);
    }

    #[test]
    fn qemu_arguments() {
        let p = QemuPlan {
            qemu: "qemu-system-arm".into(),
            kernel: "/c/vmlinuz".into(),
            initrd: "/r/i.gz".into(),
            console: "/r/c.log".into(),
            vcpus: 2,
            memory_mib: 256,
            macs: ["52:54:00:00:00:01".into(), "52:54:00:00:00:02".into()],
            vnet_hdr: false,
            control: "/r/x.ctl".into(),
            arch: super::super::arch::VmArch::Armv7,
        };
        let a = p.args().join(" ");
        let m = QemuPlan {
            arch: super::super::arch::VmArch::Mipsel,
            ..p.clone()
        }
        .args()
        .join(" ");
        assert!(m.starts_with("-M malta -cpu 34Kf -nodefaults"), "{m}");
        assert!(m.contains("console=ttyS0 panic=-1"), "{m}");
        assert!(m.contains("virtio-net-pci,netdev=n1,mac=52:54:00:00:00:02"));
        assert!(a.contains("-M virt,highmem=off -cpu cortex-a15"), "{a}");
        assert!(a.contains("-smp 2 -m 256"));
        assert!(a.contains("tap,id=n0,fd=3 "));
        assert!(a.contains("virtio-net-pci,netdev=n1,mac=52:54:00:00:00:02"));
        assert!(a.contains("-serial file:/r/c.log"));
        assert!(
            a.contains("socket,id=ctl,path=/r/x.ctl,server=on,wait=off -device virtserialport,chardev=ctl,name=routerbench.ctl"),
            "{a}"
        );
    }

    #[test]
    fn console_tail_keeps_the_last_lines() {
        let p = std::env::temp_dir().join(format!("rb-console-{}", std::process::id()));
        std::fs::write(&p, "a\r\n\r\nb\nc\n").unwrap();
        assert_eq!(console_tail(&p, 2), "b\nc");
        std::fs::remove_file(&p).unwrap();
        assert_eq!(console_tail(&p, 2), "");
    }
}
