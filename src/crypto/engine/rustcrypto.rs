//! The pure-Rust engine: md-5, sha1, sha2, des, aes + cbc, rsa, dsa, chacha20poly1305 and aes-gcm
//! from RustCrypto. Hashes are one-shot per block; ciphers keep one CBC encryptor per thread so
//! chaining continues across calls (as in OpenSSL); RSA signs 36 bytes with PKCS#1 v1.5
//! (blinded), DSA signs 20 bytes; the AEADs run the loops `openssl speed -evp` runs
//! (crate::crypto::engine::libcrypto's `AeadLoop`, docs/crypto.md): ChaCha20-Poly1305 as one
//! stream (the keystream from block 1 on, Poly1305 over the ciphertext, no tag per block),
//! AES-128-GCM one whole message per block with the key set up again (a fixed zero nonce, no
//! associated data, the tag computed).

use std::hint::black_box;

use aes_gcm::aead::AeadInPlace;
use cbc::cipher::{self, BlockCipher, BlockEncryptMut, KeyInit, KeyIvInit};
use dsa::signature::hazmat::{PrehashVerifier, RandomizedPrehashSigner};
use rsa::pkcs8::DecodePrivateKey;
// rsa and dsa want an `RngCore`: their `OsRng` is the getrandom crate, the same source as
// `crate::util::random`.
use rsa::rand_core::OsRng;
use sha2::Digest;

use super::{
    BulkOp, DSA_MESSAGE_LEN, Engine, EngineError, MAX_BLOCK, RSA_MESSAGE_LEN, SignOp, test_buffer,
};
use crate::crypto::keys;
use crate::results::crypto::{Algorithm, EngineInfo};

/// The RustCrypto engine (stateless; every thread builds its own state).
#[derive(Debug, Default)]
pub struct RustCryptoEngine {
    /// Why `--engine auto` fell back to this engine (`no libcrypto found`, `static build`);
    /// shown in the row's Engine cell so the row is never mistaken for an OpenSSL one.
    pub fallback: Option<String>,
}

impl Engine for RustCryptoEngine {
    fn info(&self) -> EngineInfo {
        EngineInfo {
            name: "rustcrypto".into(),
            version: match &self.fallback {
                Some(why) => format!("RustCrypto ({why})"),
                None => "RustCrypto".into(),
            },
        }
    }

    fn bulk(&self, alg: Algorithm) -> Result<Box<dyn BulkOp>, EngineError> {
        Ok(match alg {
            Algorithm::Md5 => Box::new(Hash::<md5::Md5>::new()),
            Algorithm::Sha1 => Box::new(Hash::<sha1::Sha1>::new()),
            Algorithm::Sha256 => Box::new(Hash::<sha2::Sha256>::new()),
            Algorithm::Sha512 => Box::new(Hash::<sha2::Sha512>::new()),
            Algorithm::DesCbc => Box::new(Cbc::<des::Des>::new(8)?),
            Algorithm::DesEde3 => Box::new(Cbc::<des::TdesEde3>::new(24)?),
            Algorithm::Aes128Cbc => Box::new(Cbc::<aes::Aes128>::new(16)?),
            Algorithm::Aes192Cbc => Box::new(Cbc::<aes::Aes192>::new(24)?),
            Algorithm::Aes256Cbc => Box::new(Cbc::<aes::Aes256>::new(32)?),
            Algorithm::Chacha20Poly1305 => Box::new(ChachaStream::new()),
            Algorithm::Aes128Gcm => Box::new(PerMessage::<aes_gcm::Aes128Gcm>::new()),
            Algorithm::Rsa2048 | Algorithm::Dsa2048 => {
                return Err(EngineError::Failed(format!(
                    "{} is a signature algorithm, not a hash or cipher",
                    alg.cli_name()
                )));
            }
        })
    }

    fn signer(&self, alg: Algorithm) -> Result<Box<dyn SignOp>, EngineError> {
        match alg {
            Algorithm::Rsa2048 => Ok(Box::new(RsaOp::new()?)),
            Algorithm::Dsa2048 => Ok(Box::new(DsaOp::new()?)),
            other => Err(EngineError::Failed(format!(
                "{} is not a signature algorithm",
                other.cli_name()
            ))),
        }
    }
}

/// One-shot digest (init + update + final) of the first `len` bytes.
struct Hash<D> {
    buf: Vec<u8>,
    _d: std::marker::PhantomData<D>,
}

impl<D: Digest> Hash<D> {
    fn new() -> Self {
        Self {
            buf: test_buffer(MAX_BLOCK),
            _d: std::marker::PhantomData,
        }
    }
}

impl<D: Digest> BulkOp for Hash<D> {
    fn run(&mut self, len: usize, n: u64) -> Result<(), EngineError> {
        let data = self.buf.get(..len).ok_or_else(|| too_long(len))?;
        for _ in 0..n {
            black_box(D::digest(black_box(data)));
        }
        Ok(())
    }
}

fn too_long(len: usize) -> EngineError {
    EngineError::Failed(format!("block of {len} bytes exceeds {MAX_BLOCK}"))
}

/// CBC encryption in place on one persistent encryptor (chaining continues across calls).
struct Cbc<C: BlockCipher + BlockEncryptMut> {
    enc: cbc::Encryptor<C>,
    blocks: Vec<cipher::Block<C>>,
}

impl<C: BlockCipher + BlockEncryptMut + KeyInit> Cbc<C> {
    fn new(key_len: usize) -> Result<Self, EngineError> {
        let key = test_buffer(key_len);
        let iv = test_buffer(C::block_size());
        let enc = cbc::Encryptor::<C>::new_from_slices(&key, &iv)
            .map_err(|e| EngineError::Failed(format!("cipher key set-up failed: {e}")))?;
        let blocks = vec![cipher::Block::<C>::default(); MAX_BLOCK / C::block_size()];
        Ok(Self { enc, blocks })
    }
}

impl<C: BlockCipher + BlockEncryptMut + KeyInit> BulkOp for Cbc<C> {
    fn run(&mut self, len: usize, n: u64) -> Result<(), EngineError> {
        let nb = len / C::block_size();
        let blocks = self.blocks.get_mut(..nb).ok_or_else(|| too_long(len))?;
        for _ in 0..n {
            self.enc.encrypt_blocks_mut(blocks);
        }
        black_box(&self.blocks);
        Ok(())
    }
}

/// ChaCha20-Poly1305 as `openssl speed -evp` streams it (`EVP_Update_loop` on one context):
/// the AEAD's set-up once (key, zero nonce, block 0 of the keystream as the Poly1305 key), then
/// per block the keystream continued in place and Poly1305 over the ciphertext. When the 32-bit
/// block counter runs out (256 GiB), the stream starts again, as speed.c sets the IV again.
struct ChachaStream {
    cipher: chacha20::ChaCha20,
    mac: poly1305::Poly1305,
    buf: Vec<u8>,
}

impl ChachaStream {
    fn new() -> Self {
        use chacha20::cipher::{KeyIvInit, StreamCipher};
        use poly1305::universal_hash::KeyInit;
        let key = test_buffer(32);
        let mut cipher =
            chacha20::ChaCha20::new(chacha20::Key::from_slice(&key), &chacha20::Nonce::default());
        let mut block0 = [0u8; 64];
        cipher.apply_keystream(&mut block0);
        let mac = poly1305::Poly1305::new(poly1305::Key::from_slice(&block0[..32]));
        Self {
            cipher,
            mac,
            buf: test_buffer(MAX_BLOCK),
        }
    }
}

impl BulkOp for ChachaStream {
    fn run(&mut self, len: usize, n: u64) -> Result<(), EngineError> {
        use chacha20::cipher::{StreamCipher, StreamCipherSeek};
        use poly1305::universal_hash::UniversalHash;
        let block = self.buf.get_mut(..len).ok_or_else(|| too_long(len))?;
        for _ in 0..n {
            if self.cipher.try_apply_keystream(block).is_err() {
                self.cipher.seek(64u64);
                continue;
            }
            self.mac.update_padded(block);
        }
        black_box(&self.buf);
        Ok(())
    }
}

/// An AE mode as `openssl speed -evp` times it (`EVP_Update_loop_aead_enc`): per block the key
/// set up again, the fixed nonce, the whole message encrypted in place and its tag computed.
struct PerMessage<A> {
    key: Vec<u8>,
    buf: Vec<u8>,
    _aead: std::marker::PhantomData<A>,
}

impl<A: AeadInPlace + aes_gcm::KeyInit> PerMessage<A> {
    fn new() -> Self {
        Self {
            key: test_buffer(A::key_size()),
            buf: test_buffer(MAX_BLOCK),
            _aead: std::marker::PhantomData,
        }
    }
}

impl<A: AeadInPlace + aes_gcm::KeyInit> BulkOp for PerMessage<A> {
    fn run(&mut self, len: usize, n: u64) -> Result<(), EngineError> {
        let block = self.buf.get_mut(..len).ok_or_else(|| too_long(len))?;
        let nonce = aes_gcm::aead::Nonce::<A>::default();
        for _ in 0..n {
            let aead = A::new_from_slice(&self.key)
                .map_err(|e| EngineError::Failed(format!("AEAD key set-up failed: {e}")))?;
            let tag = aead
                .encrypt_in_place_detached(&nonce, b"", block)
                .map_err(|_| EngineError::Failed("AEAD encrypt failed".into()))?;
            black_box(tag);
        }
        black_box(&self.buf);
        Ok(())
    }
}

fn failed(what: &str) -> impl Fn(rsa::Error) -> EngineError + '_ {
    move |e| EngineError::Failed(format!("{what}: {e}"))
}

/// RSA-2048 PKCS#1 v1.5 without a DigestInfo prefix over 36 bytes, as `openssl speed rsa2048`.
struct RsaOp {
    key: rsa::RsaPrivateKey,
    public: rsa::RsaPublicKey,
    msg: [u8; RSA_MESSAGE_LEN],
    sig: Vec<u8>,
}

impl RsaOp {
    fn new() -> Result<Self, EngineError> {
        let key = rsa::RsaPrivateKey::from_pkcs8_pem(keys::RSA2048_PKCS8_PEM)
            .map_err(|e| EngineError::Failed(format!("embedded RSA key does not parse: {e}")))?;
        let public = key.to_public_key();
        let mut msg = [0u8; RSA_MESSAGE_LEN];
        msg.copy_from_slice(&test_buffer(RSA_MESSAGE_LEN));
        let sig = key
            .sign_with_rng(&mut OsRng, rsa::Pkcs1v15Sign::new_unprefixed(), &msg)
            .map_err(failed("RSA sign"))?;
        Ok(Self {
            key,
            public,
            msg,
            sig,
        })
    }
}

impl SignOp for RsaOp {
    fn sign(&mut self, n: u64) -> Result<(), EngineError> {
        for _ in 0..n {
            let sig = self
                .key
                .sign_with_rng(&mut OsRng, rsa::Pkcs1v15Sign::new_unprefixed(), &self.msg)
                .map_err(failed("RSA sign"))?;
            black_box(sig);
        }
        Ok(())
    }

    fn verify(&mut self, n: u64) -> Result<(), EngineError> {
        for _ in 0..n {
            self.public
                .verify(rsa::Pkcs1v15Sign::new_unprefixed(), &self.msg, &self.sig)
                .map_err(failed("RSA verify"))?;
        }
        Ok(())
    }
}

/// DSA-2048/160 over a 20-byte "digest", randomized k, as `openssl speed dsa2048`.
struct DsaOp {
    key: dsa::SigningKey,
    msg: [u8; DSA_MESSAGE_LEN],
    sig: dsa::Signature,
}

impl DsaOp {
    fn new() -> Result<Self, EngineError> {
        let bad = |what: &str| EngineError::Failed(format!("embedded DSA key: {what} rejected"));
        let big = |lines: &[&str]| dsa::BigUint::from_bytes_be(&keys::hex_bytes(lines));
        let (p, q, g) = (
            big(keys::dsa2048::P),
            big(keys::dsa2048::Q),
            big(keys::dsa2048::G),
        );
        // dsa 0.6 checks only that p, q, g are in range, so 2048/160 (not a FIPS 186-4 size) is
        // accepted as `openssl speed dsa2048` uses it.
        let components = dsa::Components::from_components(p, q, g).map_err(|_| bad("p, q, g"))?;
        let y = big(keys::dsa2048::Y);
        let x = big(keys::dsa2048::X);
        let public = dsa::VerifyingKey::from_components(components, y).map_err(|_| bad("y"))?;
        let key = dsa::SigningKey::from_components(public, x).map_err(|_| bad("x"))?;
        let mut msg = [0u8; DSA_MESSAGE_LEN];
        msg.copy_from_slice(&test_buffer(DSA_MESSAGE_LEN));
        let sig = key
            .sign_prehash_with_rng(&mut OsRng, &msg)
            .map_err(|e| EngineError::Failed(format!("DSA sign: {e}")))?;
        Ok(Self { key, msg, sig })
    }
}

impl SignOp for DsaOp {
    fn sign(&mut self, n: u64) -> Result<(), EngineError> {
        for _ in 0..n {
            let sig = self
                .key
                .sign_prehash_with_rng(&mut OsRng, &self.msg)
                .map_err(|e| EngineError::Failed(format!("DSA sign: {e}")))?;
            let _ = black_box(sig);
        }
        Ok(())
    }

    fn verify(&mut self, n: u64) -> Result<(), EngineError> {
        for _ in 0..n {
            self.key
                .verifying_key()
                .verify_prehash(&self.msg, &self.sig)
                .map_err(|e| EngineError::Failed(format!("DSA verify: {e}")))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_match_known_digests() {
        // One-shot digest of "abc" through the same crates the engine uses.
        let hex: String = md5::Md5::digest(b"abc")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(hex, "900150983cd24fb0d6963f7d28e17f72");
        let mut h = Hash::<sha2::Sha256>::new();
        h.run(16384, 3).unwrap();
        assert!(h.run(16385, 1).is_err());
    }

    #[test]
    fn cbc_chains_across_calls() {
        let mut c = Cbc::<aes::Aes128>::new(16).unwrap();
        c.run(16, 1).unwrap();
        let first = c.blocks[0];
        // Encrypting the ciphertext again with the chained IV gives a different block.
        c.run(16, 1).unwrap();
        assert_ne!(first, c.blocks[0]);
        let mut d = Cbc::<des::TdesEde3>::new(24).unwrap();
        d.run(8192, 1).unwrap();
        let mut e = Cbc::<des::Des>::new(8).unwrap();
        e.run(64, 2).unwrap();
    }

    #[test]
    fn aeads_run_the_loops_of_openssl_speed() {
        use chacha20::cipher::{KeyIvInit, StreamCipher};
        // ChaCha20-Poly1305 streams: two blocks are the AEAD's ciphertext of the two blocks
        // back to back (keystream from block 1 on), each in place.
        let mut s = ChachaStream::new();
        s.run(1456, 2).unwrap();
        let key = test_buffer(32);
        let mut c =
            chacha20::ChaCha20::new(chacha20::Key::from_slice(&key), &chacha20::Nonce::default());
        let mut ks = vec![0u8; 64 + 2 * 1456];
        c.apply_keystream(&mut ks);
        let twice: Vec<u8> = test_buffer(1456)
            .iter()
            .zip(&ks[64..64 + 1456])
            .zip(&ks[64 + 1456..])
            .map(|((p, a), b)| p ^ a ^ b)
            .collect();
        assert_eq!(&twice[..], &s.buf[..1456]);
        // The first block alone is exactly the AEAD's ciphertext under nonce 0.
        let mut first = ChachaStream::new();
        first.run(1456, 1).unwrap();
        let aead = chacha20poly1305::ChaCha20Poly1305::new_from_slice(&key).unwrap();
        let mut sealed = test_buffer(1456);
        aead.encrypt_in_place_detached(&chacha20poly1305::Nonce::default(), b"", &mut sealed)
            .unwrap();
        assert_eq!(&sealed[..], &first.buf[..1456]);
        // GCM per message: the same key and nonce each block, so two in place give back the
        // plaintext, and one is the AEAD's ciphertext.
        let mut g = PerMessage::<aes_gcm::Aes128Gcm>::new();
        g.run(1456, 1).unwrap();
        let gk = test_buffer(16);
        let ga = aes_gcm::Aes128Gcm::new_from_slice(&gk).unwrap();
        let mut gs = test_buffer(1456);
        ga.encrypt_in_place_detached(&Default::default(), b"", &mut gs)
            .unwrap();
        assert_eq!(&gs[..], &g.buf[..1456]);
        g.run(1456, 1).unwrap();
        assert_eq!(&test_buffer(1456)[..], &g.buf[..1456]);
        assert!(g.run(MAX_BLOCK + 1, 1).is_err());
        assert!(s.run(MAX_BLOCK + 1, 1).is_err());
    }

    #[test]
    fn rsa_and_dsa_sign_and_verify_with_the_embedded_keys() {
        let mut r = RsaOp::new().unwrap();
        r.sign(1).unwrap();
        r.verify(2).unwrap();
        let mut d = DsaOp::new().unwrap();
        d.sign(1).unwrap();
        d.verify(1).unwrap();
        // A tampered message must not verify.
        d.msg[0] ^= 1;
        assert!(d.verify(1).is_err());
    }
}
