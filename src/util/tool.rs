//! External tools (iproute2's `ip` and `tc`, `nft`) run with a deadline, and root checks: used by
//! the lab and by the monitor's queue reader, so they live outside the `lab` feature.

use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// Why an external tool could not be run, or failed: the command, the cause, and what to do.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("{tool} not found: apt-get install {package}")]
    NotFound { tool: String, package: &'static str },
    #[error("not root: the lab needs CAP_NET_ADMIN; run as root")]
    NotRoot,
    #[error("cannot start {tool}: {cause}")]
    Start { tool: String, cause: std::io::Error },
    #[error("cannot write to {tool}'s stdin: {cause}")]
    Stdin { tool: String, cause: std::io::Error },
    #[error("{command} did not finish within {limit:?}; killed it")]
    TimedOut { command: String, limit: Duration },
    #[error("`{command}` failed ({status}): {stderr}{hint}")]
    Failed {
        command: String,
        status: ExitStatus,
        stderr: String,
        /// " (not root? …)" when the tool said "Operation not permitted".
        hint: &'static str,
    },
    #[error("waiting for a child process: {cause}")]
    Wait { cause: std::io::Error },
}

/// Results of this module.
pub type Result<T, E = ToolError> = std::result::Result<T, E>;

/// Which Debian package provides a tool, for the "not found" message.
fn package_of(tool: &str) -> &'static str {
    match tool {
        "ip" | "tc" => "iproute2",
        "nft" => "nftables",
        "iperf3" => "iperf3",
        _ => "the package that provides it",
    }
}

/// Finds `tool` in PATH, or in /usr/sbin and /sbin (root's tools are often not in a user PATH).
pub fn tool_path(tool: &str) -> Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let extra = [PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")];
    for dir in std::env::split_paths(&path).chain(extra) {
        let p = dir.join(tool);
        if p.is_file() {
            return Ok(p);
        }
    }
    Err(ToolError::NotFound {
        tool: tool.to_string(),
        package: package_of(tool),
    })
}

/// True if this process is root (the lab needs CAP_NET_ADMIN and CAP_SYS_ADMIN for setns/mounts).
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Fails with a clear message when not root.
pub fn require_root() -> Result<()> {
    if !is_root() {
        return Err(ToolError::NotRoot);
    }
    Ok(())
}

/// Checks that every tool is installed, naming the package of the first missing one.
pub fn require_tools(tools: &[&str]) -> Result<()> {
    for t in tools {
        tool_path(t)?;
    }
    Ok(())
}

/// Runs `tool args...`, returns stdout; on failure the error carries the command and its stderr.
pub fn run_tool(tool: &str, args: &[&str]) -> Result<String> {
    let out = output_of(tool, args, None)?;
    check(tool, args, &out)?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs `tool args...` with `input` on stdin (for `nft -f -`).
pub fn run_tool_stdin(tool: &str, args: &[&str], input: &str) -> Result<String> {
    let out = output_of(tool, args, Some(input))?;
    check(tool, args, &out)?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs `tool args...` and reports only whether it succeeded (for "delete if present").
pub fn try_tool(tool: &str, args: &[&str]) -> bool {
    output_of(tool, args, None)
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// The longest any `ip`/`tc`/`nft` call may take; they normally finish in milliseconds.
const TOOL_TIMEOUT: Duration = Duration::from_secs(20);

fn output_of(tool: &str, args: &[&str], input: Option<&str>) -> Result<Output> {
    let mut cmd = Command::new(tool_path(tool)?);
    cmd.args(args)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|cause| ToolError::Start {
        tool: tool.to_string(),
        cause,
    })?;
    if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
        use std::io::Write;
        stdin
            .write_all(text.as_bytes())
            .map_err(|cause| ToolError::Stdin {
                tool: tool.to_string(),
                cause,
            })?;
    }
    // Output is small; read it in threads so a full pipe never blocks the deadline wait.
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let t_out = std::thread::spawn(move || read_all(stdout.as_mut()));
    let t_err = std::thread::spawn(move || read_all(stderr.as_mut()));
    let status = wait_deadline(&mut child, TOOL_TIMEOUT)?.ok_or_else(|| ToolError::TimedOut {
        command: format!("{tool} {}", args.join(" ")),
        limit: TOOL_TIMEOUT,
    })?;
    Ok(Output {
        status,
        stdout: t_out.join().unwrap_or_default(),
        stderr: t_err.join().unwrap_or_default(),
    })
}

fn read_all<R: std::io::Read>(r: Option<&mut R>) -> Vec<u8> {
    let mut buf = Vec::new();
    if let Some(r) = r {
        let _ = r.read_to_end(&mut buf);
    }
    buf
}

fn check(tool: &str, args: &[&str], out: &Output) -> Result<()> {
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let hint = if err.contains("Operation not permitted") {
        " (not root? the lab needs CAP_NET_ADMIN; run as root)"
    } else {
        ""
    };
    Err(ToolError::Failed {
        command: format!("{tool} {}", args.join(" ")),
        status: out.status,
        stderr: err.trim().to_string(),
        hint,
    })
}

/// Waits for `child` up to `limit`; on timeout kills it (by its own PID) and returns `Ok(None)`.
pub fn wait_deadline(child: &mut Child, limit: Duration) -> Result<Option<ExitStatus>> {
    let start = Instant::now();
    loop {
        if let Some(st) = child
            .try_wait()
            .map_err(|cause| ToolError::Wait { cause })?
        {
            return Ok(Some(st));
        }
        if start.elapsed() >= limit {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_tool_names_package() {
        let err = tool_path("routerbench-no-such-tool").unwrap_err();
        assert!(err.to_string().contains("not found"), "{err}");
    }

    #[test]
    fn failing_command_reports_stderr() {
        // `ip` exists on every machine that can run the lab; skip quietly where it does not.
        if tool_path("ip").is_err() {
            eprintln!("skip: ip not installed");
            return;
        }
        let err = run_tool("ip", &["link", "show", "dev", "rb-no-such-dev0"]).unwrap_err();
        assert!(err.to_string().contains("rb-no-such-dev0"), "{err}");
    }
}
