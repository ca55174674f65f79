//! The TCP sender's zero-copy modes (`-Z`) and the receiver's `--skip-rx-copy`
//! (docs/throughput.md, "Zero-copy modes").
//!
//! * `MSG_ZEROCOPY` (Linux 4.14): `SO_ZEROCOPY` on the socket, then every send pins the user
//!   pages instead of copying them; the kernel reports on the socket's error queue when it let
//!   go of them, as ranges of send numbers, and whether it had to copy after all. Our payload
//!   never changes during a test, so the pages may be reused at once; the notifications are
//!   reaped only so they do not fill the socket's option memory (the send then fails with
//!   ENOBUFS).
//! * When the kernel says it copied (data for a local socket is always copied, on loopback
//!   or into a namespace: the kernel's msg_zerocopy.rst, "Loopback"), pinning only adds cost. The
//!   sender then switches to `sendfile` from a file holding the payload (in the temporary
//!   directory, else a memfd), iperf3's own `-Z` method, which hands the file's pages to the
//!   socket without a copy.
//! * `--skip-rx-copy`: `recv(MSG_TRUNC | MSG_WAITALL)` on TCP makes the kernel drop the bytes
//!   without copying them to user space (tcp(7), MSG_TRUNC), as iperf3 3.19+ does.

use super::sockopt::setsockopt_int;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;

const SO_ZEROCOPY: libc::c_int = 60;
const MSG_ZEROCOPY: libc::c_int = 0x4000000;
const SO_EE_ORIGIN_ZEROCOPY: u8 = 5;
const SO_EE_CODE_ZEROCOPY_COPIED: u8 = 1;
/// Completions seen, all of them copies, before MSG_ZEROCOPY is given up for sendfile.
const COPIED_BEFORE_FALLBACK: u64 = 8;

/// How a zero-copy sender sends right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZeroCopyMethod {
    MsgZerocopy,
    Sendfile,
}

/// A TCP sender that does not copy its payload into the kernel.
#[derive(Debug)]
pub struct ZeroCopySender {
    method: ZeroCopyMethod,
    /// Sends queued with MSG_ZEROCOPY, and of those, completions reported / reported copied.
    queued: u64,
    completed: u64,
    copied: u64,
    /// The payload as a file, for the sendfile method, and what that file is.
    file: Option<(OwnedFd, PayloadFile)>,
    len: usize,
}

/// What holds the payload that sendfile sends from (said in the result's note: the two
/// measured differently, see [`payload_file`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadFile {
    /// An unnamed `O_TMPFILE` file in this directory.
    TempFile(std::path::PathBuf),
    /// A memfd: the temporary directory refused `O_TMPFILE` (e.g. a file system without it).
    Memfd,
}

impl std::fmt::Display for PayloadFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PayloadFile::TempFile(dir) => write!(f, "an unnamed file in {}", dir.display()),
            PayloadFile::Memfd => f.write_str("a memfd (the temporary directory has no O_TMPFILE)"),
        }
    }
}

/// A file holding `payload` (for sendfile): an unnamed file (`O_TMPFILE`) in the temporary
/// directory, as iperf3's `-Z` sends from a file in `/tmp`, else a memfd. On this host's ext4
/// `/tmp` the file measured 0.97× iperf3's `-Z`, the memfd 0.82× (docs/benchmarks.md,
/// "Throughput"); on a router `/tmp` is tmpfs, the same shmem pages as a memfd.
fn payload_file(payload: &[u8]) -> io::Result<(OwnedFd, PayloadFile)> {
    let dir = std::env::temp_dir();
    let tmp = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .open(&dir);
    let (fd, kind) = match tmp {
        Ok(f) => (OwnedFd::from(f), PayloadFile::TempFile(dir)),
        Err(_) => {
            // SAFETY: memfd_create with a NUL-terminated name; the result is a new descriptor.
            let raw =
                unsafe { libc::memfd_create(c"routerbench-payload".as_ptr(), libc::MFD_CLOEXEC) };
            if raw < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: raw is a new, owned descriptor.
            (unsafe { OwnedFd::from_raw_fd(raw) }, PayloadFile::Memfd)
        }
    };
    let mut f = std::fs::File::from(fd);
    io::Write::write_all(&mut f, payload)?;
    Ok((OwnedFd::from(f), kind))
}

impl ZeroCopySender {
    /// Sets `SO_ZEROCOPY` on `sock`; where the kernel refuses it (before 4.14, or a socket
    /// type without it), starts with sendfile instead. Fails only if neither can be used.
    pub fn new<S: AsRawFd>(sock: &S, payload: &[u8]) -> io::Result<Self> {
        let mut z = ZeroCopySender {
            method: ZeroCopyMethod::MsgZerocopy,
            queued: 0,
            completed: 0,
            copied: 0,
            file: None,
            len: payload.len(),
        };
        if setsockopt_int(sock.as_raw_fd(), libc::SOL_SOCKET, SO_ZEROCOPY, 1).is_err() {
            z.switch_to_sendfile(payload)?;
        }
        Ok(z)
    }

    pub fn method(&self) -> ZeroCopyMethod {
        self.method
    }

    /// (completions, of which the kernel copied) reported so far.
    pub fn completions(&self) -> (u64, u64) {
        (self.completed, self.copied)
    }

    /// What sendfile sends from ("no file" before the switch).
    fn file_kind(&self) -> String {
        self.file
            .as_ref()
            .map_or_else(|| "no file".to_string(), |(_, kind)| kind.to_string())
    }

    fn switch_to_sendfile(&mut self, payload: &[u8]) -> io::Result<()> {
        self.file = Some(payload_file(payload)?);
        self.method = ZeroCopyMethod::Sendfile;
        Ok(())
    }

    /// Sends `payload` (the same bytes every call) once; returns the bytes the kernel took.
    pub fn send<S: AsRawFd>(&mut self, sock: &S, payload: &[u8]) -> io::Result<usize> {
        let fd = sock.as_raw_fd();
        if let (ZeroCopyMethod::Sendfile, Some((file, _))) = (self.method, &self.file) {
            let mut off: libc::off_t = 0;
            // SAFETY: sendfile between two live descriptors with a local offset.
            let n = unsafe { libc::sendfile(fd, file.as_raw_fd(), &mut off, self.len) };
            return if n < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(n as usize)
            };
        }
        // SAFETY: sending from a live slice.
        let n = unsafe { libc::send(fd, payload.as_ptr().cast(), payload.len(), MSG_ZEROCOPY) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::ENOBUFS) {
                // Option memory full of unreaped notifications: reap, let the caller retry.
                self.wait_and_reap(fd);
                return Err(io::Error::from(io::ErrorKind::Interrupted));
            }
            return Err(e);
        }
        self.queued += 1;
        if self.queued.saturating_sub(self.completed) >= 16 {
            self.reap(fd);
        }
        if self.completed >= COPIED_BEFORE_FALLBACK && self.copied == self.completed {
            self.switch_to_sendfile(payload)?;
        }
        Ok(n as usize)
    }

    fn wait_and_reap(&mut self, fd: i32) {
        let mut p = libc::pollfd {
            fd,
            events: 0, // POLLERR is always reported
            revents: 0,
        };
        // SAFETY: poll on one live descriptor, 200 ms at most.
        unsafe { libc::poll(&mut p, 1, 200) };
        self.reap(fd);
    }

    /// Reads every waiting completion from the error queue (non-blocking).
    pub fn reap(&mut self, fd: i32) {
        for _ in 0..1024 {
            let mut control = [0u64; 16];
            // SAFETY: zeroed msghdr with a live control buffer and no data buffer.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = std::mem::size_of_val(&control) as _;
            // SAFETY: msg points at a buffer that outlives the call.
            let r = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
            if r < 0 {
                return;
            }
            // SAFETY: the CMSG macros bound-check against msg_controllen; payload read
            // unaligned.
            unsafe {
                let mut c = libc::CMSG_FIRSTHDR(&msg);
                while !c.is_null() {
                    let h = &*c;
                    let recverr = (h.cmsg_level == libc::SOL_IP && h.cmsg_type == libc::IP_RECVERR)
                        || (h.cmsg_level == libc::SOL_IPV6 && h.cmsg_type == libc::IPV6_RECVERR);
                    if recverr {
                        let ee: libc::sock_extended_err =
                            std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                        if ee.ee_errno == 0 && ee.ee_origin == SO_EE_ORIGIN_ZEROCOPY {
                            let n = u64::from(ee.ee_data.wrapping_sub(ee.ee_info)) + 1;
                            self.completed += n;
                            if ee.ee_code & SO_EE_CODE_ZEROCOPY_COPIED != 0 {
                                self.copied += n;
                            }
                        }
                    }
                    c = libc::CMSG_NXTHDR(&msg, c);
                }
            }
        }
    }

    /// What this sender did, for the result's notes.
    pub fn note(&self) -> String {
        match self.method {
            ZeroCopyMethod::MsgZerocopy => format!(
                "-Z: MSG_ZEROCOPY ({} of {} completions copied by the kernel)",
                self.copied, self.completed
            ),
            ZeroCopyMethod::Sendfile if self.completed > 0 => format!(
                "-Z: the kernel copied MSG_ZEROCOPY sends ({} of {}: a local receiver), so the \
                 sender switched to sendfile from {}",
                self.copied,
                self.completed,
                self.file_kind()
            ),
            ZeroCopyMethod::Sendfile => format!(
                "-Z: SO_ZEROCOPY refused by this kernel; sendfile from {}",
                self.file_kind()
            ),
        }
    }
}

/// `recv(MSG_TRUNC | MSG_WAITALL)` on a TCP socket: up to `len` bytes are consumed and counted
/// but never copied (`--skip-rx-copy`). Returns the bytes consumed (0 = end of stream).
pub fn recv_discard<S: AsRawFd>(sock: &S, len: usize) -> io::Result<usize> {
    // SAFETY: with MSG_TRUNC on TCP the kernel writes nothing to the buffer (tcp(7)); a null
    // pointer with a length is what the man page's discard mode takes.
    let n = unsafe {
        libc::recv(
            sock.as_raw_fd(),
            std::ptr::null_mut(),
            len,
            libc::MSG_TRUNC | libc::MSG_WAITALL,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::{TcpListener, TcpStream};

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        (a, b)
    }

    #[test]
    fn zerocopy_sends_exact_bytes_and_falls_back_on_loopback() {
        let (a, mut b) = pair();
        let payload: Vec<u8> = (0..65536u32).map(|i| (i * 7) as u8).collect();
        let mut z = ZeroCopySender::new(&a, &payload).unwrap();
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            b.read_to_end(&mut got).unwrap();
            got
        });
        let mut sent = 0usize;
        for _ in 0..64 {
            match z.send(&a, &payload) {
                Ok(n) => sent += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => panic!("{e}"),
            }
        }
        z.reap(a.as_raw_fd());
        drop(a);
        let got = reader.join().unwrap();
        assert_eq!(got.len(), sent, "every byte the kernel took arrives");
        assert_eq!(&got[..1000], &payload[..1000]);
        // Loopback: the kernel reports copies, and the sender moves to sendfile.
        let (done, copied) = z.completions();
        assert!(
            done == 0 || copied == done,
            "loopback completions are copies"
        );
        let note = z.note();
        if z.method() == ZeroCopyMethod::Sendfile {
            // The note names the file sendfile really uses (it once said "a memfd" for both).
            let dir = std::env::temp_dir();
            let want = match payload_file(b"x").unwrap().1 {
                PayloadFile::TempFile(_) => format!("an unnamed file in {}", dir.display()),
                PayloadFile::Memfd => "a memfd".to_string(),
            };
            assert!(note.contains(&want), "{note}");
        } else {
            assert!(note.contains("MSG_ZEROCOPY"), "{note}");
        }
    }

    #[test]
    fn the_payload_file_holds_the_payload_and_says_what_it_is() {
        let payload: Vec<u8> = (0..5000u32).map(|i| (i * 13) as u8).collect();
        let (fd, kind) = payload_file(&payload).unwrap();
        let mut f = std::fs::File::from(fd);
        let mut back = Vec::new();
        std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(0)).unwrap();
        f.read_to_end(&mut back).unwrap();
        assert_eq!(back, payload);
        match kind {
            PayloadFile::TempFile(dir) => assert_eq!(dir, std::env::temp_dir()),
            PayloadFile::Memfd => {}
        }
    }

    #[test]
    fn skip_rx_copy_counts_without_copying() {
        let (mut a, b) = pair();
        let w = std::thread::spawn(move || {
            let buf = vec![1u8; 100_000];
            std::io::Write::write_all(&mut a, &buf).unwrap();
        });
        let mut total = 0;
        loop {
            let n = recv_discard(&b, 65536).unwrap();
            if n == 0 {
                break;
            }
            total += n;
        }
        w.join().unwrap();
        assert_eq!(total, 100_000);
    }
}
