//! Running code inside a network namespace: a thread that joins the namespace with setns(2), or
//! an external command started through `ip netns exec`.
//!
//! Only the calling thread changes namespace with `setns(CLONE_NEWNET)`, so one process can have a
//! server thread in the WAN namespace and a client thread in the LAN namespace at the same time.
//!
//! The code run inside returns any error (`Result<T, BoxError>`, so `?` works on every kind);
//! it comes back as [`LabError::Other`].

use super::error::{BoxError, IoContext, LabError, Result};
use nix::sched::{CloneFlags, setns};
use std::fs::File;
use std::path::PathBuf;
use std::process::Command;
use std::thread::JoinHandle;

/// Where `ip netns add` keeps its named namespaces (bind mounts of `/proc/<pid>/ns/net`).
pub const NETNS_DIR: &str = "/run/netns";

/// The path of a named namespace.
pub fn ns_path(ns: &str) -> PathBuf {
    PathBuf::from(NETNS_DIR).join(ns)
}

/// True if a named network namespace exists.
pub fn exists(ns: &str) -> bool {
    ns_path(ns).exists()
}

/// Checks that a namespace name is safe to use as a file name and in `ip netns` commands.
pub fn check_name(ns: &str) -> Result<()> {
    let ok = !ns.is_empty()
        && ns.len() <= 64
        && ns
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        && !ns.starts_with('.');
    if !ok {
        return Err(LabError::Input(format!(
            "bad namespace name {ns:?}: use 1-64 characters from [A-Za-z0-9._-], not starting with '.'"
        )));
    }
    Ok(())
}

/// Opens the namespace file, with an error that says how to create it.
fn open_ns(ns: &str) -> Result<File> {
    check_name(ns)?;
    let path = ns_path(ns);
    File::open(&path).io_context(|| {
        format!(
            "cannot open network namespace {} (is the lab up? `routerbench lab up`)",
            path.display()
        )
    })
}

/// Spawns a thread that enters network namespace `ns` and runs `f` there.
///
/// The namespace file is opened before the thread starts, so a missing namespace is reported
/// here rather than from inside the thread.
pub fn spawn_in<T, F>(ns: &str, f: F) -> Result<JoinHandle<Result<T>>>
where
    T: Send + 'static,
    F: FnOnce() -> std::result::Result<T, BoxError> + Send + 'static,
{
    let file = open_ns(ns)?;
    let name = ns.to_string();
    std::thread::Builder::new()
        .name(format!("netns-{name}"))
        .spawn(move || {
            setns(&file, CloneFlags::CLONE_NEWNET).map_err(|e| {
                LabError::Sys(format!("setns into network namespace {name} failed: {e} (needs CAP_NET_ADMIN: run as root)"))
            })?;
            drop(file);
            f().map_err(LabError::Other)
        })
        .io_context(|| "cannot spawn a thread for the network namespace".into())
}

/// Joins a thread from [`spawn_in`], turning a panic into an error.
pub fn join<T>(handle: JoinHandle<Result<T>>) -> Result<T> {
    handle
        .join()
        .map_err(|_| LabError::Panicked("a thread inside a lab namespace panicked"))?
}

/// Runs `f` in a thread inside network namespace `ns` and returns its value.
pub fn run_in<T, F>(ns: &str, f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> std::result::Result<T, BoxError> + Send + 'static,
{
    join(spawn_in(ns, f)?)
}

/// A command that runs inside namespace `ns` (`ip netns exec NS PROGRAM ARGS...`).
///
/// `ip netns exec` also mounts the namespace's own /sys, so tools that read /sys/class/net work.
/// It `exec`s the program, so the child's PID is the program's PID.
pub fn command_in(ns: &str, program: &str) -> Result<Command> {
    check_name(ns)?;
    if !exists(ns) {
        return Err(LabError::State(format!(
            "network namespace {ns} does not exist (is the lab up? `routerbench lab up`)"
        )));
    }
    let mut cmd = Command::new(super::sys::tool_path("ip")?);
    cmd.args(["netns", "exec", ns, program]);
    Ok(cmd)
}

/// PIDs of the processes whose network namespace is `ns` (what `ip netns pids` lists).
pub fn pids(ns: &str) -> Result<Vec<i32>> {
    let out = super::sys::run_tool("ip", &["netns", "pids", ns])?;
    Ok(parse_pids(&out))
}

/// Parses the output of `ip netns pids`: one PID per line; anything else is ignored.
pub fn parse_pids(text: &str) -> Vec<i32> {
    text.lines()
        .filter_map(|l| l.trim().parse::<i32>().ok())
        .filter(|&p| p > 1)
        .collect()
}

/// Writes a sysctl (`net.ipv4.ip_forward` style name) inside namespace `ns`.
///
/// /proc/sys/net is resolved against the network namespace of the thread that opens it, so the
/// write happens in a thread that joined `ns`.
pub fn sysctl_write(ns: &str, key: &str, value: &str) -> Result<()> {
    let path = sysctl_path(key)?;
    let (ns_s, key_s, value_s) = (ns.to_string(), key.to_string(), value.to_string());
    run_in(ns, move || {
        Ok(std::fs::write(&path, value_s.as_bytes())
            .io_context(|| format!("cannot set {key_s}={value_s} in namespace {ns_s}"))?)
    })
}

/// Reads a sysctl inside namespace `ns`.
pub fn sysctl_read(ns: &str, key: &str) -> Result<String> {
    let path = sysctl_path(key)?;
    let (ns_s, key_s) = (ns.to_string(), key.to_string());
    run_in(ns, move || {
        Ok(std::fs::read_to_string(&path)
            .map(|s| s.trim().to_string())
            .io_context(|| format!("cannot read {key_s} in namespace {ns_s}"))?)
    })
}

fn sysctl_path(key: &str) -> Result<PathBuf> {
    if key.is_empty()
        || key.contains("..")
        || !key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-')
    {
        return Err(LabError::Input(format!("bad sysctl name {key:?}")));
    }
    Ok(PathBuf::from("/proc/sys").join(key.replace('.', "/")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(check_name("rb-lan").is_ok());
        assert!(check_name("rbt_12.3-wan").is_ok());
        assert!(check_name("").is_err());
        assert!(check_name("../etc").is_err());
        assert!(check_name("a b").is_err());
        assert!(check_name(".hidden").is_err());
        assert!(check_name(&"x".repeat(65)).is_err());
    }

    #[test]
    fn pid_lines() {
        assert_eq!(parse_pids("123\n456\n\nnot\n1\n"), vec![123, 456]);
        assert!(parse_pids("").is_empty());
    }

    #[test]
    fn sysctl_paths() {
        assert_eq!(
            sysctl_path("net.ipv4.ip_forward").unwrap(),
            PathBuf::from("/proc/sys/net/ipv4/ip_forward")
        );
        assert!(sysctl_path("net/../../etc").is_err());
        assert!(sysctl_path("").is_err());
    }

    #[test]
    fn missing_namespace_is_an_error() {
        let err = run_in("routerbench-no-such-ns", || Ok(1)).unwrap_err();
        assert!(err.to_string().contains("routerbench-no-such-ns"), "{err}");
    }
}
