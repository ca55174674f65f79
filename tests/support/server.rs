//! Helpers for the hostile-client tests: a routerbench server on a port of our own, its
//! threads/fds/RSS from /proc, connections from another loopback address (127.0.0.2, a
//! different "host" for the per-host limits), and a scripted iperf3 control connection.

pub use super::iperf3::*;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// The "other host" of the tests: hostile clients connect from here.
pub const ATTACKER: &str = "127.0.0.2";

/// A routerbench server on 127.0.0.1:`port` with `extra` options, once it listens.
pub fn server(port: u16, extra: &[&str], tag: &str) -> Proc {
    let p = port.to_string();
    // -V: the attack tests read the server's log lines (refusals, cuts) on stderr.
    let mut args = vec!["server", "-V", "-p", &p, "-B", "127.0.0.1"];
    args.extend_from_slice(extra);
    let s = Proc::start(std::path::Path::new(ROUTERBENCH), &args, tag);
    wait_listening(port);
    s
}

/// (threads, open fds, RSS in KiB) of a process.
pub fn usage(pid: u32) -> (usize, usize, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |k: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0);
    (field("Threads:") as usize, fds, field("VmRSS:"))
}

/// Samples `usage` every 100 ms while `f` runs; returns f's value and the peak of each.
pub fn peak_while<T>(pid: u32, f: impl FnOnce() -> T) -> (T, (usize, usize, u64)) {
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut peak = (0, 0, 0);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let u = usage(pid);
                peak = (peak.0.max(u.0), peak.1.max(u.1), peak.2.max(u.2));
                std::thread::sleep(Duration::from_millis(100));
            }
            peak
        });
        let v = f();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        (v, sampler.join().expect("sampler"))
    })
}

/// Waits (up to `limit`) until the server's threads and fds are back at `idle` (+ slack).
pub fn back_to_idle(pid: u32, idle: (usize, usize, u64), limit: Duration) -> (usize, usize, u64) {
    let end = Instant::now() + limit;
    loop {
        let u = usage(pid);
        if (u.0 <= idle.0 && u.1 <= idle.1) || Instant::now() > end {
            return u;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A TCP connection to 127.0.0.1:`port` from `src` (another loopback address).
pub fn connect_from(src: &str, port: u16) -> std::io::Result<TcpStream> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    let from: SocketAddr = format!("{src}:0").parse().expect("address");
    s.bind(&from.into())?;
    let to: SocketAddr = format!("127.0.0.1:{port}").parse().expect("address");
    s.connect_timeout(&to.into(), Duration::from_secs(2))?;
    let t: TcpStream = s.into();
    t.set_read_timeout(Some(Duration::from_secs(5)))?;
    t.set_write_timeout(Some(Duration::from_secs(5)))?;
    Ok(t)
}

/// Whether the server closed `s` (EOF or reset) within `limit`.
pub fn closed_within(s: &mut TcpStream, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    let mut b = [0u8; 256];
    while Instant::now() < end {
        let _ = s.set_read_timeout(Some(Duration::from_millis(100)));
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return true,
        }
    }
    false
}

/// A well-formed cookie (36 letters of iperf3's alphabet and a NUL), distinct per `n`.
pub fn cookie(n: u64) -> [u8; 37] {
    let alphabet = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut c = [0u8; 37];
    let mut x = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ std::process::id() as u64;
    for b in c.iter_mut().take(36) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = alphabet[(x % 32) as usize];
    }
    c
}

/// Reads one byte (a state) within 5 s.
pub fn read_state(s: &mut TcpStream) -> Option<u8> {
    let mut b = [0u8; 1];
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.read_exact(&mut b).ok().map(|_| b[0])
}

/// A scripted iperf3 client up to the parameters: cookie, PARAM_EXCHANGE (9), `params`.
pub fn control_with_params(src: &str, port: u16, n: u64, params: &str) -> Option<TcpStream> {
    let mut s = connect_from(src, port).ok()?;
    s.write_all(&cookie(n)).ok()?;
    if read_state(&mut s)? != 9 {
        return None;
    }
    s.write_all(&(params.len() as u32).to_be_bytes()).ok()?;
    s.write_all(params.as_bytes()).ok()?;
    Some(s)
}

pub const PARAM_EXCHANGE: u8 = 9;
pub const CREATE_STREAMS: u8 = 10;
pub const TEST_START: u8 = 1;
pub const TEST_RUNNING: u8 = 2;
pub const SERVER_ERROR: u8 = 0xfe;
pub const ACCESS_DENIED: u8 = 0xff;

/// Runs an iperf3 client from 127.0.0.1 to `port` with `args`; (exit ok, stdout+stderr).
pub fn iperf3_client(port: u16, args: &[&str], limit: Duration, tag: &str) -> (bool, String) {
    let p = port.to_string();
    let mut all = vec!["-c", "127.0.0.1", "-p", &p];
    all.extend_from_slice(args);
    let mut c = Proc::start(&iperf3(), &all, tag);
    let st = c.wait(limit);
    let text = format!("{}{}", c.stdout_text(), c.stderr_text());
    (st.is_some_and(|s| s.success()), text)
}

/// The "honest" host of the fairness tests, an address no attacker uses.
pub const HONEST: &str = "127.0.0.12";

/// The `i`-th of up to ten attacking hosts: 127.0.0.2 … 127.0.0.11.
pub fn attacker(i: usize) -> String {
    format!("127.0.0.{}", 2 + i % 10)
}

/// A routerbench server on 127.0.0.1 and a port it picks (`-p 0`), with `extra` options; the
/// port is read from its banner (what `-p 0` must print).
pub fn server_any(extra: &[&str], tag: &str) -> (Proc, u16) {
    server_any_with(std::path::Path::new(ROUTERBENCH), extra, tag)
}

/// [`server_any`] with another routerbench binary (the figures compare builds).
pub fn server_any_with(program: &std::path::Path, extra: &[&str], tag: &str) -> (Proc, u16) {
    let mut args = vec!["server", "-V", "-p", "0", "-B", "127.0.0.1"];
    args.extend_from_slice(extra);
    let s = Proc::start(program, &args, tag);
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        let out = s.stdout_text();
        let port = out
            .lines()
            .find_map(|l| l.strip_prefix("Server listening on "))
            .and_then(|r| r.split_whitespace().next())
            .and_then(|p| p.parse::<u16>().ok());
        if let Some(port) = port {
            assert!(port != 0, "-p 0 must print the port it got:\n{out}");
            wait_listening(port);
            return (s, port);
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!(
        "no banner from `server -p 0`:\n{}\n{}",
        s.stdout_text(),
        s.stderr_text()
    );
}

/// iperf3 3.21 (the newest release) when the shared peers are there; CI may lack them.
pub fn iperf3_321() -> Option<std::path::PathBuf> {
    let p = std::path::PathBuf::from("/work/shared/peers/iperf3-3.21");
    p.exists().then_some(p)
}

/// Runs `program -c 127.0.0.1 -B src -p port args`: (exit ok, stdout+stderr, seconds it took).
pub fn client_from(
    program: &std::path::Path,
    src: &str,
    port: u16,
    args: &[&str],
    limit: Duration,
    tag: &str,
) -> (bool, String, f64) {
    let p = port.to_string();
    let mut all = vec!["-c", "127.0.0.1", "-B", src, "-p", &p];
    all.extend_from_slice(args);
    let t = Instant::now();
    let mut c = Proc::start(program, &all, tag);
    let st = c.wait(limit);
    let text = format!("{}{}", c.stdout_text(), c.stderr_text());
    (
        st.is_some_and(|s| s.success()),
        text,
        t.elapsed().as_secs_f64(),
    )
}

/// Runs routerbench with `args` (a client command), bounded: (exit ok, output, seconds).
pub fn routerbench(args: &[&str], limit: Duration, tag: &str) -> (bool, String, f64) {
    let t = Instant::now();
    let mut c = Proc::start(std::path::Path::new(ROUTERBENCH), args, tag);
    let st = c.wait(limit);
    let text = format!("{}{}", c.stdout_text(), c.stderr_text());
    (
        st.is_some_and(|s| s.success()),
        text,
        t.elapsed().as_secs_f64(),
    )
}

/// CPU seconds (user + system) a process has used, from /proc/PID/stat.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the ")" that ends the command name: utime is the 12th, stime the 13th.
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    (ticks(11) + ticks(12)) / hz
}

/// A stop flag the attack threads poll, set on drop (so a failing test stops them too).
pub struct Stop(pub std::sync::Arc<std::sync::atomic::AtomicBool>);

impl Stop {
    pub fn new() -> Stop {
        Stop(std::sync::Arc::new(std::sync::atomic::AtomicBool::new(
            false,
        )))
    }
    pub fn set(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
    pub fn raise(&self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed)
    }
}

impl Drop for Stop {
    fn drop(&mut self) {
        self.raise();
    }
}

/// One response's head read from `s`: status, head, Content-Length. It reads a byte at a time,
/// never past the head.
#[track_caller]
pub fn http_head(s: &mut TcpStream) -> (u16, String, usize) {
    let mut buf = Vec::new();
    let mut b = [0u8; 1];
    let end = Instant::now() + Duration::from_secs(5);
    while !buf.ends_with(b"\r\n\r\n") {
        assert!(Instant::now() < end, "no response head: {buf:?}");
        let n = s.read(&mut b).unwrap();
        assert!(n > 0, "closed before a response: {buf:?}");
        buf.push(b[0]);
    }
    let head = String::from_utf8(buf).unwrap();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    (head[9..12].parse().unwrap(), head, len)
}

/// One response read from `s`: status, head, body (by its Content-Length), never past it: a
/// pipelined response that follows stays in the socket for the next call.
#[track_caller]
pub fn http_response(s: &mut TcpStream) -> (u16, String, String) {
    let (status, head, len) = http_head(s);
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).expect("closed in the body");
    (status, head, String::from_utf8_lossy(&body).into_owned())
}
