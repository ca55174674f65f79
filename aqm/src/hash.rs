//! SipHash-1-3 with a per-boot key: the flow and host hashes computed once on receive.

/// A keyed hash (SipHash-1-3, the same function std's `HashMap` uses) over a few header bytes.
#[derive(Debug, Clone, Copy)]
pub struct FlowHasher {
    k0: u64,
    k1: u64,
}

#[inline(always)]
fn sip_round(v: &mut [u64; 4]) {
    v[0] = v[0].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(13);
    v[1] ^= v[0];
    v[0] = v[0].rotate_left(32);
    v[2] = v[2].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(16);
    v[3] ^= v[2];
    v[0] = v[0].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(21);
    v[3] ^= v[0];
    v[2] = v[2].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(17);
    v[1] ^= v[2];
    v[2] = v[2].rotate_left(32);
}

impl FlowHasher {
    /// A hasher with the given 128-bit key (take it from a random source once per run, so a
    /// remote sender cannot aim many flows at one queue).
    pub fn new(k0: u64, k1: u64) -> Self {
        Self { k0, k1 }
    }

    /// SipHash-1-3 of `data`, folded to 32 bits.
    pub fn hash(&self, data: &[u8]) -> u32 {
        let mut v = [
            self.k0 ^ 0x736f_6d65_7073_6575,
            self.k1 ^ 0x646f_7261_6e64_6f6d,
            self.k0 ^ 0x6c79_6765_6e65_7261,
            self.k1 ^ 0x7465_6462_7974_6573,
        ];
        let mut chunks = data.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            let m = u64::from_le_bytes(w);
            v[3] ^= m;
            sip_round(&mut v);
            v[0] ^= m;
        }
        let rest = chunks.remainder();
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        let m = u64::from_le_bytes(last) | ((data.len() as u64 & 0xff) << 56);
        v[3] ^= m;
        sip_round(&mut v);
        v[0] ^= m;
        v[2] ^= 0xff;
        for _ in 0..3 {
            sip_round(&mut v);
        }
        let h = v[0] ^ v[1] ^ v[2] ^ v[3];
        (h ^ (h >> 32)) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_and_deterministic() {
        let a = FlowHasher::new(1, 2);
        let b = FlowHasher::new(3, 4);
        assert_eq!(a.hash(b"10.0.0.1:5201"), a.hash(b"10.0.0.1:5201"));
        assert_ne!(a.hash(b"10.0.0.1:5201"), a.hash(b"10.0.0.1:5202"));
        assert_ne!(a.hash(b"10.0.0.1:5201"), b.hash(b"10.0.0.1:5201"));
    }

    #[test]
    fn spreads_over_1024_buckets() {
        let h = FlowHasher::new(0x0123_4567, 0x89ab_cdef);
        let mut used = vec![0u32; 1024];
        for port in 0u16..4096 {
            used[(h.hash(&port.to_be_bytes()) % 1024) as usize] += 1;
        }
        // 4096 keys into 1024 buckets: a uniform hash leaves about e^-4 = 2 % empty and no
        // bucket near 20 (Poisson(4) tail).
        let empty = used.iter().filter(|&&n| n == 0).count();
        assert!(empty < 60, "{empty} empty buckets");
        assert!(used.iter().all(|&n| n < 20));
    }
}
