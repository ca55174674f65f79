//! Fair shares of a capped resource under pressure: connections in their handshake, iperf3 tests,
//! routerbench sessions and monitor subscriptions are each a [`FairPool`] of seats, with a cap
//! over all hosts and a smaller one per host (nginx's `limit_conn`, keyed by the client address).
//!
//! When the pool is full, a newcomer takes the seat of a **not yet running** holder of the host
//! that weighs the most, if that host weighs more than the newcomer's (HAProxy's per-source
//! tables track the same kind of per-address state). A host's weight is the seats it holds plus
//! its *strikes*: handshakes of its that ended without running (timed out, closed, garbage,
//! evicted) within the last `strike_for` (the handshake deadline). Among the seats of equally
//! heavy hosts, the one whose holder made progress the longest ago goes first. A running seat
//! (a test past its set-up) is never taken.
//!
//! Why strikes: without them, a host whose seat was just taken weighs 0 and takes a seat back at
//! once, and a few hosts passing seats around can take an honest client's seat in the few
//! milliseconds its handshake is pending. With them, each host can take a seat from a host that
//! weighs as little as an honest newcomer (1) at most once per `strike_for`, because its own
//! seat then either runs (a real test, bounded by the test limits) or ends as a strike. See
//! docs/throughput.md ("Fair shares") for the guarantee this gives and its conditions.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the pool does to a seat's holder when its seat is taken: wake it (shut the read side
/// of its socket, raise its abort flag) so it ends; the seat itself is already free.
pub type Evictor = Box<dyn FnOnce() + Send>;

/// Hosts whose strikes are remembered at most; beyond it the oldest are forgotten (a flood from
/// many addresses costs bounded memory; it only loses ranking detail).
const MAX_STRUCK_HOSTS: usize = 4096;
/// Strikes remembered per host (its weight saturates there).
const MAX_STRIKES_PER_HOST: usize = 64;

/// A capped pool of seats shared fairly between client addresses.
pub struct FairPool {
    /// What a seat is, for refusal messages ("iperf3 tests", "connections").
    pub what: &'static str,
    pub cap: usize,
    pub per_host: usize,
    strike_for: Duration,
    st: Mutex<State>,
}

impl std::fmt::Debug for FairPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FairPool")
            .field("what", &self.what)
            .field("cap", &self.cap)
            .field("per_host", &self.per_host)
            .finish()
    }
}

#[derive(Default)]
struct State {
    next: u64,
    seats: HashMap<u64, SeatState>,
    strikes: HashMap<IpAddr, Vec<Instant>>,
}

struct SeatState {
    ip: IpAddr,
    running: bool,
    progress: Instant,
    evicted: Arc<AtomicBool>,
    evict: Option<Evictor>,
}

/// One seat, released when dropped. Dropped before it runs (and not [`Seat::succeed`]ed), it
/// counts as a strike for its host.
pub struct Seat {
    pool: Arc<FairPool>,
    id: u64,
    ip: IpAddr,
    evicted: Arc<AtomicBool>,
    ok: AtomicBool,
}

impl std::fmt::Debug for Seat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Seat")
            .field("pool", &self.pool.what)
            .field("ip", &self.ip)
            .field("evicted", &self.is_evicted())
            .finish()
    }
}

/// A granted seat, and whose seat was taken for it (for the log).
#[derive(Debug)]
pub struct Admission {
    pub seat: Seat,
    pub evicted: Option<IpAddr>,
}

impl State {
    fn prune(&mut self, now: Instant, strike_for: Duration) {
        self.strikes.retain(|_, v| {
            v.retain(|t| now.duration_since(*t) < strike_for);
            !v.is_empty()
        });
        if self.strikes.len() > MAX_STRUCK_HOSTS {
            // Keep the hosts struck most recently.
            let mut latest: Vec<(Instant, IpAddr)> = self
                .strikes
                .iter()
                .map(|(ip, v)| (v.iter().max().copied().unwrap_or(now), *ip))
                .collect();
            latest.sort_unstable_by_key(|b| std::cmp::Reverse(b.0));
            for (_, ip) in latest.into_iter().skip(MAX_STRUCK_HOSTS) {
                self.strikes.remove(&ip);
            }
        }
    }

    fn strike(&mut self, ip: IpAddr, now: Instant) {
        let v = self.strikes.entry(ip).or_default();
        if v.len() >= MAX_STRIKES_PER_HOST {
            v.remove(0);
        }
        v.push(now);
    }

    fn held(&self, ip: IpAddr) -> usize {
        self.seats.values().filter(|s| s.ip == ip).count()
    }

    fn weight(&self, ip: IpAddr) -> usize {
        self.held(ip) + self.strikes.get(&ip).map_or(0, Vec::len)
    }
}

impl FairPool {
    /// A pool of `cap` seats, at most `per_host` per address; strikes last `strike_for`.
    pub fn new(what: &'static str, cap: usize, per_host: usize, strike_for: Duration) -> Arc<Self> {
        Arc::new(FairPool {
            what,
            cap: cap.max(1),
            per_host: per_host.max(1),
            strike_for,
            st: Mutex::new(State::default()),
        })
    }

    /// A seat for a client at `ip` (v4-mapped IPv6 counts as its IPv4 address), taking the seat
    /// of a not yet running holder of a heavier host when the pool is full; or why not.
    /// `evict` is called (outside the pool's lock) if this seat is later taken.
    pub fn acquire(self: &Arc<Self>, ip: IpAddr, evict: Evictor) -> Result<Admission, String> {
        let ip = crate::net::addr::canonical_ip(ip);
        let now = Instant::now();
        let mut st = self
            .st
            .lock()
            .map_err(|_| format!("{} table poisoned", self.what))?;
        st.prune(now, self.strike_for);
        let mine = st.held(ip);
        if mine >= self.per_host {
            return Err(format!(
                "{mine} {} from this address already (limit {} per host)",
                self.what, self.per_host
            ));
        }
        let mut victim = None;
        if st.seats.len() >= self.cap {
            let my_weight = mine + st.strikes.get(&ip).map_or(0, Vec::len);
            victim = st
                .seats
                .iter()
                .filter(|(_, s)| !s.running && s.evict.is_some())
                .map(|(id, s)| (st.weight(s.ip), std::cmp::Reverse(s.progress), *id))
                .filter(|(w, _, _)| *w > my_weight)
                .max()
                .map(|(_, _, id)| id);
            if victim.is_none() {
                let running = st.seats.values().filter(|s| s.running).count();
                return Err(format!(
                    "all {} {} in use ({running} running, the rest from hosts holding no more \
                     than this one): retry later",
                    self.cap, self.what
                ));
            }
        }
        let taken = victim.and_then(|id| st.seats.remove(&id));
        if let Some(t) = &taken {
            t.evicted.store(true, Ordering::SeqCst);
            st.strike(t.ip, now);
        }
        let id = st.next;
        st.next += 1;
        let evicted = Arc::new(AtomicBool::new(false));
        st.seats.insert(
            id,
            SeatState {
                ip,
                running: false,
                progress: now,
                evicted: evicted.clone(),
                evict: Some(evict),
            },
        );
        drop(st);
        let evicted_ip = taken.map(|mut t| {
            if let Some(f) = t.evict.take() {
                f();
            }
            t.ip
        });
        Ok(Admission {
            seat: Seat {
                pool: self.clone(),
                id,
                ip,
                evicted,
                ok: AtomicBool::new(false),
            },
            evicted: evicted_ip,
        })
    }

    /// (seats held, running) now.
    pub fn in_use(&self) -> (usize, usize) {
        self.st
            .lock()
            .map(|s| {
                (
                    s.seats.len(),
                    s.seats.values().filter(|x| x.running).count(),
                )
            })
            .unwrap_or((0, 0))
    }

    /// Seats held by `ip` now.
    pub fn held_by(&self, ip: IpAddr) -> usize {
        let ip = crate::net::addr::canonical_ip(ip);
        self.st.lock().map(|s| s.held(ip)).unwrap_or(0)
    }

    fn with_seat(&self, id: u64, f: impl FnOnce(&mut SeatState)) {
        if let Ok(mut st) = self.st.lock() {
            if let Some(s) = st.seats.get_mut(&id) {
                f(s);
            }
        }
    }
}

impl Seat {
    /// The holder completed a step of its handshake (a message, a stream): it is not stale.
    pub fn progress(&self) {
        self.pool
            .with_seat(self.id, |s| s.progress = Instant::now());
    }

    /// The holder runs now (a test past its set-up): never evicted, no strike when it ends.
    pub fn running(&self) {
        self.ok.store(true, Ordering::SeqCst);
        self.pool.with_seat(self.id, |s| {
            s.running = true;
            s.evict = None;
        });
    }

    /// Whether this seat was taken by another host's newcomer.
    pub fn is_evicted(&self) -> bool {
        self.evicted.load(Ordering::SeqCst)
    }

    /// Releases the seat as a success (the handshake did its job, e.g. a connection was
    /// classified and handed on): no strike.
    pub fn succeed(self) {
        self.ok.store(true, Ordering::SeqCst);
    }

    /// The client address the seat is held for.
    pub fn ip(&self) -> IpAddr {
        self.ip
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        if self.is_evicted() {
            return; // already freed, and struck, by the eviction
        }
        let ok = self.ok.load(Ordering::SeqCst);
        if let Ok(mut st) = self.pool.st.lock() {
            if let Some(s) = st.seats.remove(&self.id) {
                if !ok && !s.running {
                    st.strike(s.ip, Instant::now());
                }
            }
        }
    }
}

/// An evictor that wakes a holder blocked reading `stream` (shutdown of the read side: its
/// read returns end-of-file at once) after raising `flag`.
pub fn shut_reader(stream: &std::net::TcpStream, flag: Option<Arc<AtomicBool>>) -> Evictor {
    let clone = stream.try_clone().ok();
    Box::new(move || {
        if let Some(f) = flag {
            f.store(true, Ordering::SeqCst);
        }
        if let Some(s) = clone {
            let _ = s.shutdown(std::net::Shutdown::Read);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn ip(n: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, n])
    }

    fn counting(c: &Arc<AtomicUsize>) -> Evictor {
        let c = c.clone();
        Box::new(move || {
            c.fetch_add(1, Ordering::SeqCst);
        })
    }

    #[test]
    fn per_host_cap_and_release() {
        let p = FairPool::new("tests", 4, 2, Duration::from_secs(10));
        let n = Arc::new(AtomicUsize::new(0));
        let a = p.acquire(ip(1), counting(&n)).unwrap().seat;
        let _b = p.acquire(ip(1), counting(&n)).unwrap().seat;
        let e = p.acquire(ip(1), counting(&n)).unwrap_err();
        assert!(e.contains("limit 2 per host"), "{e}");
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert!(p.acquire(mapped, counting(&n)).is_err(), "v4-mapped = IPv4");
        a.succeed();
        assert!(p.acquire(ip(1), counting(&n)).is_ok());
        assert_eq!(n.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_lighter_host_takes_a_pending_seat_of_the_heaviest_never_a_running_one() {
        let p = FairPool::new("tests", 3, 3, Duration::from_secs(10));
        let n = Arc::new(AtomicUsize::new(0));
        let run = p.acquire(ip(1), counting(&n)).unwrap().seat;
        run.running();
        let old = p.acquire(ip(1), counting(&n)).unwrap().seat;
        std::thread::sleep(Duration::from_millis(5));
        let young = p.acquire(ip(1), counting(&n)).unwrap().seat;
        young.progress();
        let got = p.acquire(ip(2), counting(&n)).unwrap();
        assert_eq!(got.evicted, Some(ip(1)));
        assert!(old.is_evicted(), "the stalest pending seat goes first");
        assert!(!young.is_evicted() && !run.is_evicted());
        assert_eq!(n.load(Ordering::SeqCst), 1, "the evictor ran once");
        // Host 1: 2 seats + 1 strike = 3; host 2: 1. Host 3 (0) takes host 1's other pending.
        let three = p.acquire(ip(3), counting(&n)).unwrap();
        assert_eq!(three.evicted, Some(ip(1)));
        assert!(young.is_evicted());
        // Now host 1 holds only its running seat (weight 1 + 2 strikes); hosts 2 and 3 weigh 1.
        // Host 4 (0) takes nothing running: host 1 has no pending seat, so it takes 2's or 3's.
        let four = p.acquire(ip(4), counting(&n)).unwrap();
        assert!(matches!(four.evicted, Some(x) if x == ip(2) || x == ip(3)));
        assert!(!run.is_evicted());
        drop((old, young));
        assert_eq!(p.in_use(), (3, 1));
        drop((got, three, four));
    }

    #[test]
    fn equals_do_not_evict_each_other_and_strikes_weigh() {
        let p = FairPool::new("sessions", 2, 2, Duration::from_secs(10));
        let n = Arc::new(AtomicUsize::new(0));
        let _a = p.acquire(ip(1), counting(&n)).unwrap().seat;
        let _b = p.acquire(ip(2), counting(&n)).unwrap().seat;
        // Host 3 (0) takes one; the loser (weight 0 + 1 strike) cannot take one back from a
        // host of weight 1.
        let c = p.acquire(ip(3), counting(&n)).unwrap();
        let loser = c.evicted.unwrap();
        let e = p.acquire(loser, counting(&n)).unwrap_err();
        assert!(e.contains("all 2 sessions in use"), "{e}");
        // A seat dropped before running is a strike too.
        let q = FairPool::new("sessions", 1, 1, Duration::from_millis(50));
        drop(q.acquire(ip(9), counting(&n)).unwrap().seat);
        let _x = q.acquire(ip(8), counting(&n)).unwrap().seat;
        assert!(q.acquire(ip(9), counting(&n)).is_err(), "9 weighs 1 = 8");
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(q.acquire(ip(9), counting(&n)).unwrap().evicted, Some(ip(8)));
    }
}
