//! A classic BPF socket filter for the shared UDP port: the kernel keeps only datagrams that
//! can be an iperf3 stream hello (4 bytes, `9876` or `6789`) or a routerbench probe (the
//! `RBPR` magic, version 1, kind probe, 56–1200 bytes), and drops everything else before it is
//! queued, so a flood of garbage never wakes the port's reader thread nor fills its buffer.
//!
//! For a UDP socket the filter sees the packet from the UDP header on (the IP header is already
//! pulled; `udp_queue_rcv_one_skb` runs `sk_filter_trim_cap` there), so the payload starts at
//! byte 8 and `len` is 8 + the payload length. nix has no wrapper for `SO_ATTACH_FILTER`.

use std::io;
use std::os::fd::AsRawFd;

/// The UDP header the filter skips.
const UDP_HDR: u32 = 8;

/// Probe bounds and bytes (`wire::rb::probe`), as the filter compares them.
fn probe_magic_word() -> u32 {
    u32::from_be_bytes(crate::wire::rb::PROBE_MAGIC)
}

const BPF_LD: u16 = 0x00;
const BPF_JMP: u16 = 0x05;
const BPF_RET: u16 = 0x06;
const BPF_W: u16 = 0x00;
const BPF_H: u16 = 0x08;
const BPF_ABS: u16 = 0x20;
const BPF_LEN: u16 = 0x80;
const BPF_JEQ: u16 = 0x10;
const BPF_JGT: u16 = 0x20;
const BPF_JGE: u16 = 0x30;
const BPF_K: u16 = 0x00;

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The program. A jump at index i to index t has the offset t − i − 1.
pub fn program() -> Vec<libc::sock_filter> {
    use crate::wire::rb::{KIND_PROBE, PROBE_HEADER_LEN, PROBE_MAX_LEN, PROBE_VERSION};
    let hello_a = u32::from_be_bytes(crate::wire::iperf3::UDP_CONNECT_MSG);
    let hello_b = u32::from_be_bytes(crate::wire::iperf3::UDP_CONNECT_REPLY);
    vec![
        /* 0 */ stmt(BPF_LD | BPF_W | BPF_LEN, 0),
        /* 1: a 4-byte payload → 2, else → 5 */
        jump(BPF_JMP | BPF_JEQ | BPF_K, UDP_HDR + 4, 0, 3),
        /* 2 */ stmt(BPF_LD | BPF_W | BPF_ABS, UDP_HDR),
        /* 3: "9876" → keep (11), else → 4 */
        jump(BPF_JMP | BPF_JEQ | BPF_K, hello_a, 7, 0),
        /* 4: "6789" → keep (11), else → drop (12) */
        jump(BPF_JMP | BPF_JEQ | BPF_K, hello_b, 6, 7),
        /* 5: at least a probe header → 6, else → drop */
        jump(
            BPF_JMP | BPF_JGE | BPF_K,
            UDP_HDR + PROBE_HEADER_LEN as u32,
            0,
            6,
        ),
        /* 6: longer than a probe may be → drop, else → 7 */
        jump(
            BPF_JMP | BPF_JGT | BPF_K,
            UDP_HDR + PROBE_MAX_LEN as u32,
            5,
            0,
        ),
        /* 7 */ stmt(BPF_LD | BPF_W | BPF_ABS, UDP_HDR),
        /* 8: the magic → 9, else → drop */
        jump(BPF_JMP | BPF_JEQ | BPF_K, probe_magic_word(), 0, 3),
        /* 9: version and kind, one 16-bit load */
        stmt(BPF_LD | BPF_H | BPF_ABS, UDP_HDR + 4),
        /* 10: version 1, kind probe → keep, else → drop */
        jump(
            BPF_JMP | BPF_JEQ | BPF_K,
            (u32::from(PROBE_VERSION) << 8) | u32::from(KIND_PROBE),
            0,
            1,
        ),
        /* 11 */ stmt(BPF_RET | BPF_K, u32::MAX),
        /* 12 */ stmt(BPF_RET | BPF_K, 0),
    ]
}

/// Attaches [`program`] to a UDP socket.
pub fn attach_port_filter<S: AsRawFd>(sock: &S) -> io::Result<()> {
    let mut prog = program();
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_mut_ptr(),
    };
    // SAFETY: `fprog` points at `prog`, which lives until the call returns; the kernel copies
    // the program and only reads the struct.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            (&fprog as *const libc::sock_fprog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::time::Duration;

    /// Runs the program on `payload` as the kernel would (a tiny interpreter of the opcodes it
    /// uses), so its logic is checked without a socket.
    fn run(payload: &[u8]) -> u32 {
        let mut pkt = vec![0u8; 8];
        pkt.extend_from_slice(payload);
        let prog = program();
        let (mut a, mut pc) = (0u32, 0usize);
        loop {
            let i = prog[pc];
            let load = |size: usize| -> Option<u32> {
                let k = i.k as usize;
                let b = pkt.get(k..k + size)?;
                Some(b.iter().fold(0u32, |acc, x| acc << 8 | u32::from(*x)))
            };
            match i.code {
                c if c == BPF_RET | BPF_K => return i.k,
                c if c == BPF_LD | BPF_W | BPF_LEN => a = pkt.len() as u32,
                c if c == BPF_LD | BPF_W | BPF_ABS => match load(4) {
                    Some(v) => a = v,
                    None => return 0,
                },
                c if c == BPF_LD | BPF_H | BPF_ABS => match load(2) {
                    Some(v) => a = v,
                    None => return 0,
                },
                c => {
                    let hit = match c & 0xf0 {
                        BPF_JEQ => a == i.k,
                        BPF_JGT => a > i.k,
                        BPF_JGE => a >= i.k,
                        _ => panic!("opcode {c:#x}"),
                    };
                    pc += usize::from(if hit { i.jt } else { i.jf });
                }
            }
            pc += 1;
        }
    }

    fn probe(len: usize) -> Vec<u8> {
        let mut p = vec![0u8; len];
        p[..4].copy_from_slice(b"RBPR");
        p[4] = 1;
        p[5] = 1;
        p
    }

    #[test]
    fn keeps_hellos_and_probes_drops_the_rest() {
        assert_ne!(run(b"9876"), 0);
        assert_ne!(run(b"6789"), 0);
        assert_eq!(run(b"9875"), 0);
        assert_eq!(run(b"98765"), 0);
        assert_eq!(run(b""), 0);
        assert_ne!(run(&probe(56)), 0);
        assert_ne!(run(&probe(1200)), 0);
        assert_eq!(run(&probe(55)), 0, "shorter than the header");
        assert_eq!(run(&probe(1201)), 0, "longer than the limit");
        let mut reply = probe(64);
        reply[5] = 2;
        assert_eq!(run(&reply), 0, "a reply is not a probe");
        let mut old = probe(64);
        old[4] = 2;
        assert_eq!(run(&old), 0, "another version");
        let mut junk = probe(64);
        junk[0] = b'X';
        assert_eq!(run(&junk), 0);
        assert_eq!(run(&[0u8; 1400]), 0);
    }

    #[test]
    fn the_kernel_applies_it() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        attach_port_filter(&rx).unwrap();
        rx.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = rx.local_addr().unwrap();
        tx.send_to(&[7u8; 300], to).unwrap();
        tx.send_to(b"junk", to).unwrap();
        tx.send_to(b"9876", to).unwrap();
        tx.send_to(&probe(80), to).unwrap();
        let mut buf = [0u8; 2048];
        let (n, _) = rx.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"9876", "the garbage never arrived");
        let (n, _) = rx.recv_from(&mut buf).unwrap();
        assert_eq!(n, 80);
        assert!(rx.recv_from(&mut buf).is_err(), "nothing else");
    }
}
