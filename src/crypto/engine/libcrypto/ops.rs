//! The OpenSSL engine on the run-time-loaded libcrypto: EVP loops exactly as `openssl speed`
//! runs them (apps/speed.c): `EVP_Digest` per block with an `EVP_MD` fetched once
//! (`EVP_Digest_loop`), `EVP_Cipher` in place on one CBC context (`EVP_Cipher_loop`), and
//! `EVP_PKEY_sign`/`EVP_PKEY_verify` on reused contexts. The WireGuard AEADs seal one packet per
//! operation on one context (new nonce, `EVP_EncryptUpdate`, `EVP_EncryptFinal_ex`, the tag), as
//! WireGuard does and as the RustCrypto engine does; `openssl speed -evp` 3.0/3.1 streams
//! instead (docs/crypto.md says what that changes). An implicit fetch per call would cost
//! ~20 % at 1 KiB on OpenSSL 3 (docs/protocols/openssl-speed.md §4 note ¹), so 3.x gets `EVP_MD_fetch`; 1.1.1 has
//! no fetch and uses `EVP_get_digestbyname`. Single DES needs OpenSSL 3's legacy provider.

use std::ffi::{CString, c_int, c_uint};
use std::hint::black_box;
use std::ptr::null_mut;

use super::{Api, Obj};
use crate::crypto::engine::{
    BulkOp, DSA_MESSAGE_LEN, Engine, EngineError, MAX_BLOCK, RSA_MESSAGE_LEN, SignOp, test_buffer,
};
use crate::crypto::keys;
use crate::results::crypto::{Algorithm, EngineInfo};

/// The libcrypto engine.
pub struct LibcryptoEngine {
    api: &'static Api,
    /// Why single DES is unavailable, if it is.
    des_unavailable: Option<String>,
}

fn failed(api: &Api, what: &str) -> EngineError {
    EngineError::Failed(format!("OpenSSL {what}: {}", api.last_error()))
}

fn cstring(s: &str) -> Result<CString, EngineError> {
    CString::new(s).map_err(|_| EngineError::Failed(format!("name {s:?} contains a NUL byte")))
}

impl LibcryptoEngine {
    /// Checks the keys load, and loads the legacy provider when single DES is requested
    /// (keeping the default provider as a fallback, as `openssl speed -provider legacy
    /// -provider default` does).
    pub fn new(api: &'static Api, algorithms: &[Algorithm]) -> Result<Self, EngineError> {
        let des_unavailable = if algorithms.contains(&Algorithm::DesCbc) {
            legacy_provider(api).err()
        } else {
            None
        };
        // Parse once here so a broken key fails before any measuring starts.
        drop(Pkey::load(api, keys::RSA2048_PKCS8_PEM)?);
        drop(Pkey::load(api, keys::DSA2048_PKCS8_PEM)?);
        Ok(Self {
            api,
            des_unavailable,
        })
    }
}

/// Loads OpenSSL 3's legacy provider (single DES); 1.1.1 has DES built in.
fn legacy_provider(api: &Api) -> Result<(), String> {
    let Some(try_load) = api.OSSL_PROVIDER_try_load else {
        return Ok(());
    };
    // SAFETY: NULL = the default library context; the name is NUL-terminated; retain_fallbacks=1
    // keeps the default provider. The provider stays loaded for the life of the process.
    let p = unsafe { try_load(null_mut(), c"legacy".as_ptr(), 1) };
    if p.is_null() {
        Err(api.last_error())
    } else {
        Ok(())
    }
}

impl Engine for LibcryptoEngine {
    fn info(&self) -> EngineInfo {
        EngineInfo {
            name: "openssl".into(),
            version: self.api.short_version(),
        }
    }

    fn bulk(&self, alg: Algorithm) -> Result<Box<dyn BulkOp>, EngineError> {
        let api = self.api;
        match alg {
            Algorithm::Md5 => Ok(Box::new(Digest::new(api, "MD5")?)),
            Algorithm::Sha1 => Ok(Box::new(Digest::new(api, "SHA1")?)),
            Algorithm::Sha256 => Ok(Box::new(Digest::new(api, "SHA256")?)),
            Algorithm::Sha512 => Ok(Box::new(Digest::new(api, "SHA512")?)),
            Algorithm::DesCbc => {
                if let Some(why) = &self.des_unavailable {
                    return Err(EngineError::Unavailable(format!(
                        "single DES is only in OpenSSL 3's legacy provider, which did not load \
                         ({why}); reported as 0 (install the legacy provider, e.g. OpenWrt's \
                         libopenssl-legacy)"
                    )));
                }
                Ok(Box::new(CbcEncrypt::new(api, "DES-CBC", 8, 8)?))
            }
            Algorithm::DesEde3 => Ok(Box::new(CbcEncrypt::new(api, "DES-EDE3-CBC", 24, 8)?)),
            Algorithm::Aes128Cbc => Ok(Box::new(CbcEncrypt::new(api, "AES-128-CBC", 16, 16)?)),
            Algorithm::Aes192Cbc => Ok(Box::new(CbcEncrypt::new(api, "AES-192-CBC", 24, 16)?)),
            Algorithm::Aes256Cbc => Ok(Box::new(CbcEncrypt::new(api, "AES-256-CBC", 32, 16)?)),
            Algorithm::Chacha20Poly1305 => Ok(Box::new(AeadSeal::new(api, alg.evp_name(), 32)?)),
            Algorithm::Aes128Gcm => Ok(Box::new(AeadSeal::new(api, alg.evp_name(), 16)?)),
            Algorithm::Rsa2048 | Algorithm::Dsa2048 => Err(EngineError::Failed(format!(
                "{} is a signature algorithm, not a hash or cipher",
                alg.cli_name()
            ))),
        }
    }

    fn signer(&self, alg: Algorithm) -> Result<Box<dyn SignOp>, EngineError> {
        // Each thread gets its own key object: OpenSSL serialises threads that share one RSA key
        // (its blinding state is per key); `openssl speed -multi` uses separate processes.
        match alg {
            Algorithm::Rsa2048 => Ok(Box::new(PkeySign::new(
                Pkey::load(self.api, keys::RSA2048_PKCS8_PEM)?,
                RSA_MESSAGE_LEN,
            )?)),
            Algorithm::Dsa2048 => Ok(Box::new(PkeySign::new(
                Pkey::load(self.api, keys::DSA2048_PKCS8_PEM)?,
                DSA_MESSAGE_LEN,
            )?)),
            other => Err(EngineError::Failed(format!(
                "{} is not a signature algorithm",
                other.cli_name()
            ))),
        }
    }
}

/// A digest method: fetched (3.x, freed on drop) or the built-in table's (1.1.1).
struct Md {
    api: &'static Api,
    ptr: Obj,
    fetched: bool,
}

impl Md {
    fn get(api: &'static Api, name: &str) -> Result<Self, EngineError> {
        let c = cstring(name)?;
        if let Some(fetch) = api.EVP_MD_fetch {
            // SAFETY: default context, NUL-terminated name, no property query.
            let ptr = unsafe { fetch(null_mut(), c.as_ptr(), std::ptr::null()) };
            if !ptr.is_null() {
                return Ok(Self {
                    api,
                    ptr,
                    fetched: true,
                });
            }
        }
        // SAFETY: NUL-terminated name; the result is a static table entry (not to be freed).
        let ptr = unsafe { (api.EVP_get_digestbyname)(c.as_ptr()) };
        if ptr.is_null() {
            return Err(EngineError::Unavailable(format!(
                "libcrypto has no {name}; reported as 0"
            )));
        }
        Ok(Self {
            api,
            ptr,
            fetched: false,
        })
    }
}

impl Drop for Md {
    fn drop(&mut self) {
        if let (true, Some(free)) = (self.fetched, self.api.EVP_MD_free) {
            // SAFETY: ptr came from EVP_MD_fetch and is freed once.
            unsafe { free(self.ptr) };
        }
    }
}

/// `EVP_Digest` once per block, like `EVP_Digest_loop` in apps/speed.c.
struct Digest {
    md: Md,
    buf: Vec<u8>,
    out: [u8; 64],
}

impl Digest {
    fn new(api: &'static Api, name: &str) -> Result<Self, EngineError> {
        Ok(Self {
            md: Md::get(api, name)?,
            buf: test_buffer(MAX_BLOCK),
            out: [0; 64],
        })
    }
}

impl BulkOp for Digest {
    fn run(&mut self, len: usize, n: u64) -> Result<(), EngineError> {
        let data = self
            .buf
            .get(..len)
            .ok_or_else(|| EngineError::Failed(format!("block of {len} bytes too long")))?;
        let api = self.md.api;
        for _ in 0..n {
            // SAFETY: md is a live EVP_MD; data is valid for len bytes; out holds 64 bytes, the
            // largest digest here (SHA-512); the size pointer may be NULL (speed.c passes NULL).
            let ok = unsafe {
                (api.EVP_Digest)(
                    data.as_ptr().cast(),
                    data.len(),
                    self.out.as_mut_ptr(),
                    null_mut(),
                    self.md.ptr,
                    null_mut(),
                )
            };
            if ok != 1 {
                return Err(failed(api, "digest"));
            }
        }
        black_box(&self.out);
        Ok(())
    }
}

/// CBC encryption in place, chaining across calls, padding off (as `openssl speed`).
struct CbcEncrypt {
    api: &'static Api,
    ctx: Obj,
    buf: Vec<u8>,
}

impl CbcEncrypt {
    fn new(
        api: &'static Api,
        name: &str,
        key_len: usize,
        iv_len: usize,
    ) -> Result<Self, EngineError> {
        let c = cstring(name)?;
        let unavailable = || {
            EngineError::Unavailable(format!(
                "libcrypto has no {name}: {}; reported as 0",
                api.last_error()
            ))
        };
        // 3.x: an explicit fetch (freed below: the context keeps its own reference).
        let (cipher, fetched) = match api.EVP_CIPHER_fetch {
            // SAFETY: default context, NUL-terminated name, no property query.
            Some(fetch) => (
                unsafe { fetch(null_mut(), c.as_ptr(), std::ptr::null()) },
                true,
            ),
            // SAFETY: NUL-terminated name; a static table entry.
            None => (unsafe { (api.EVP_get_cipherbyname)(c.as_ptr()) }, false),
        };
        if cipher.is_null() {
            return Err(unavailable());
        }
        // SAFETY: allocates a context; checked for NULL below.
        let ctx = unsafe { (api.EVP_CIPHER_CTX_new)() };
        let op = Self {
            api,
            ctx,
            // One spare block: EVP_Cipher may need room for a block beyond the input.
            buf: test_buffer(MAX_BLOCK + 32),
        };
        let key = test_buffer(key_len);
        let iv = test_buffer(iv_len);
        // SAFETY: ctx (if not NULL) is fresh; key and iv have the cipher's lengths.
        let ok = !ctx.is_null()
            && unsafe {
                (api.EVP_EncryptInit_ex)(ctx, cipher, null_mut(), key.as_ptr(), iv.as_ptr()) == 1
                    && (api.EVP_CIPHER_CTX_set_padding)(ctx, 0) == 1
            };
        if let (true, Some(free)) = (fetched, api.EVP_CIPHER_free) {
            // SAFETY: cipher came from EVP_CIPHER_fetch; the initialised context holds its own
            // reference.
            unsafe { free(cipher) };
        }
        if ok { Ok(op) } else { Err(unavailable()) }
    }
}

impl Drop for CbcEncrypt {
    fn drop(&mut self) {
        if !self.ctx.is_null() {
            // SAFETY: ctx came from EVP_CIPHER_CTX_new and is freed once.
            unsafe { (self.api.EVP_CIPHER_CTX_free)(self.ctx) };
        }
    }
}

impl BulkOp for CbcEncrypt {
    fn run(&mut self, len: usize, n: u64) -> Result<(), EngineError> {
        if len > MAX_BLOCK || len % 16 != 0 {
            return Err(EngineError::Failed(format!(
                "block of {len} bytes is not a multiple of 16 up to {MAX_BLOCK}"
            )));
        }
        let buf = self.buf.as_mut_ptr();
        for _ in 0..n {
            // SAFETY: ctx is an initialised encryption context; buf holds at least len bytes;
            // in-place CBC is allowed, and is what openssl speed does.
            let rc = unsafe { (self.api.EVP_Cipher)(self.ctx, buf, buf, len as c_uint) };
            if rc <= 0 {
                return Err(failed(self.api, "encrypt"));
            }
        }
        black_box(&self.buf);
        Ok(())
    }
}

/// `EVP_CTRL_AEAD_GET_TAG` (include/openssl/evp.h, 1.1.1 and 3.x).
const EVP_CTRL_AEAD_GET_TAG: c_int = 0x10;
/// The AEADs' nonce and tag lengths (OpenSSL's defaults for both ciphers).
const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;

/// One AEAD packet sealed per operation: WireGuard's nonce (32 zero bits, a 64-bit little-endian
/// counter), no associated data, the 16-byte tag taken after `EVP_EncryptFinal_ex`.
struct AeadSeal {
    api: &'static Api,
    ctx: Obj,
    buf: Vec<u8>,
    tag: [u8; TAG_LEN],
    counter: u64,
}

impl AeadSeal {
    fn new(api: &'static Api, name: &str, key_len: usize) -> Result<Self, EngineError> {
        let c = cstring(name)?;
        let unavailable = || {
            EngineError::Unavailable(format!(
                "libcrypto has no {name}: {}; reported as 0",
                api.last_error()
            ))
        };
        let (cipher, fetched) = match api.EVP_CIPHER_fetch {
            // SAFETY: default context, NUL-terminated name, no property query.
            Some(fetch) => (
                unsafe { fetch(null_mut(), c.as_ptr(), std::ptr::null()) },
                true,
            ),
            // SAFETY: NUL-terminated name; a static table entry.
            None => (unsafe { (api.EVP_get_cipherbyname)(c.as_ptr()) }, false),
        };
        if cipher.is_null() {
            return Err(unavailable());
        }
        // SAFETY: allocates a context; checked for NULL below.
        let ctx = unsafe { (api.EVP_CIPHER_CTX_new)() };
        let op = Self {
            api,
            ctx,
            buf: test_buffer(MAX_BLOCK + TAG_LEN),
            tag: [0; TAG_LEN],
            counter: 0,
        };
        let key = test_buffer(key_len);
        let nonce = [0u8; NONCE_LEN];
        // SAFETY: ctx (if not NULL) is fresh; the key has the cipher's length and the nonce the
        // default IV length of both AEADs.
        let ok = !ctx.is_null()
            && unsafe {
                (api.EVP_EncryptInit_ex)(ctx, cipher, null_mut(), key.as_ptr(), nonce.as_ptr()) == 1
            };
        if let (true, Some(free)) = (fetched, api.EVP_CIPHER_free) {
            // SAFETY: cipher came from EVP_CIPHER_fetch; the context holds its own reference.
            unsafe { free(cipher) };
        }
        if ok { Ok(op) } else { Err(unavailable()) }
    }
}

impl Drop for AeadSeal {
    fn drop(&mut self) {
        if !self.ctx.is_null() {
            // SAFETY: ctx came from EVP_CIPHER_CTX_new and is freed once.
            unsafe { (self.api.EVP_CIPHER_CTX_free)(self.ctx) };
        }
    }
}

impl BulkOp for AeadSeal {
    fn run(&mut self, len: usize, n: u64) -> Result<(), EngineError> {
        if len > MAX_BLOCK {
            return Err(EngineError::Failed(format!(
                "packet of {len} bytes exceeds {MAX_BLOCK}"
            )));
        }
        let api = self.api;
        let buf = self.buf.as_mut_ptr();
        let c_len = len as c_int;
        for _ in 0..n {
            let mut nonce = [0u8; NONCE_LEN];
            nonce[4..].copy_from_slice(&self.counter.to_le_bytes());
            self.counter = self.counter.wrapping_add(1);
            let mut out_len: c_int = 0;
            let mut fin_len: c_int = 0;
            // SAFETY: ctx is an initialised AEAD encryption context; a NULL cipher and key with
            // a nonce re-keys only the nonce; buf holds len + TAG_LEN bytes, in-place encryption
            // is allowed for both AEADs, and Final writes nothing for them (at most a block
            // beyond out_len, which the spare room covers); the tag buffer holds TAG_LEN bytes.
            let ok = unsafe {
                (api.EVP_EncryptInit_ex)(
                    self.ctx,
                    null_mut(),
                    null_mut(),
                    null_mut(),
                    nonce.as_ptr(),
                ) == 1
                    && (api.EVP_EncryptUpdate)(self.ctx, buf, &mut out_len, buf, c_len) == 1
                    && (0..=c_len).contains(&out_len)
                    && (api.EVP_EncryptFinal_ex)(self.ctx, buf.add(out_len as usize), &mut fin_len)
                        == 1
                    && (api.EVP_CIPHER_CTX_ctrl)(
                        self.ctx,
                        EVP_CTRL_AEAD_GET_TAG,
                        TAG_LEN as c_int,
                        self.tag.as_mut_ptr().cast(),
                    ) == 1
            };
            if !ok {
                return Err(failed(api, "AEAD seal"));
            }
        }
        black_box(&self.tag);
        black_box(&self.buf);
        Ok(())
    }
}

/// An `EVP_PKEY` read from an embedded PEM, freed on drop.
struct Pkey {
    api: &'static Api,
    ptr: Obj,
}

impl Pkey {
    fn load(api: &'static Api, pem: &str) -> Result<Self, EngineError> {
        let len = c_int::try_from(pem.len())
            .map_err(|_| EngineError::Failed("embedded key too long".into()))?;
        // SAFETY: a read-only memory BIO over the static PEM text, freed below.
        let bio = unsafe { (api.BIO_new_mem_buf)(pem.as_ptr().cast(), len) };
        if bio.is_null() {
            return Err(failed(api, "BIO_new_mem_buf"));
        }
        // SAFETY: bio is live; no password callback (the key is not encrypted).
        let ptr = unsafe { (api.PEM_read_bio_PrivateKey)(bio, null_mut(), null_mut(), null_mut()) };
        // SAFETY: bio came from BIO_new_mem_buf and is freed once.
        unsafe { (api.BIO_free)(bio) };
        if ptr.is_null() {
            return Err(failed(api, "cannot load an embedded key"));
        }
        Ok(Self { api, ptr })
    }
}

impl Drop for Pkey {
    fn drop(&mut self) {
        // SAFETY: ptr came from PEM_read_bio_PrivateKey and is freed once.
        unsafe { (self.api.EVP_PKEY_free)(self.ptr) };
    }
}

/// An `EVP_PKEY_CTX`, freed on drop.
struct PkeyCtx {
    api: &'static Api,
    ptr: Obj,
}

impl PkeyCtx {
    fn new(key: &Pkey, init: unsafe extern "C" fn(Obj) -> c_int) -> Result<Self, EngineError> {
        let api = key.api;
        // SAFETY: key is live; no engine.
        let ptr = unsafe { (api.EVP_PKEY_CTX_new)(key.ptr, null_mut()) };
        if ptr.is_null() {
            return Err(failed(api, "EVP_PKEY_CTX_new"));
        }
        let ctx = Self { api, ptr };
        // SAFETY: ctx is a fresh context for a private key.
        if unsafe { init(ctx.ptr) } != 1 {
            return Err(failed(api, "sign/verify init"));
        }
        Ok(ctx)
    }
}

impl Drop for PkeyCtx {
    fn drop(&mut self) {
        // SAFETY: ptr came from EVP_PKEY_CTX_new and is freed once.
        unsafe { (self.api.EVP_PKEY_CTX_free)(self.ptr) };
    }
}

/// `EVP_PKEY_sign`/`EVP_PKEY_verify` over a fixed short message (36 bytes PKCS#1 v1.5 for RSA,
/// 20 bytes for DSA), as `openssl speed rsa2048 dsa2048`.
struct PkeySign {
    sign_ctx: PkeyCtx,
    verify_ctx: PkeyCtx,
    msg: Vec<u8>,
    sig: Vec<u8>,
    _key: Pkey,
}

/// Room for a 2048-bit RSA signature or a DER DSA signature.
const MAX_SIG: usize = 512;

impl PkeySign {
    fn new(key: Pkey, msg_len: usize) -> Result<Self, EngineError> {
        let api = key.api;
        let sign_ctx = PkeyCtx::new(&key, api.EVP_PKEY_sign_init)?;
        let verify_ctx = PkeyCtx::new(&key, api.EVP_PKEY_verify_init)?;
        let mut op = Self {
            sign_ctx,
            verify_ctx,
            msg: test_buffer(msg_len),
            sig: vec![0; MAX_SIG],
            _key: key,
        };
        let mut sig = vec![0; MAX_SIG];
        let len = op.sign_into(&mut sig)?;
        sig.truncate(len);
        op.sig = sig;
        Ok(op)
    }

    fn sign_into(&self, out: &mut [u8]) -> Result<usize, EngineError> {
        let api = self.sign_ctx.api;
        let mut len = out.len();
        // SAFETY: ctx is initialised for signing; out is writable for len bytes; msg is valid.
        let rc = unsafe {
            (api.EVP_PKEY_sign)(
                self.sign_ctx.ptr,
                out.as_mut_ptr(),
                &mut len,
                self.msg.as_ptr(),
                self.msg.len(),
            )
        };
        if rc != 1 {
            return Err(failed(api, "sign"));
        }
        Ok(len)
    }
}

impl SignOp for PkeySign {
    fn sign(&mut self, n: u64) -> Result<(), EngineError> {
        let mut out = vec![0u8; MAX_SIG];
        for _ in 0..n {
            self.sign_into(&mut out)?;
        }
        black_box(&out);
        Ok(())
    }

    fn verify(&mut self, n: u64) -> Result<(), EngineError> {
        let api = self.verify_ctx.api;
        for _ in 0..n {
            // SAFETY: ctx is initialised for verifying; sig and msg are valid slices.
            let rc = unsafe {
                (api.EVP_PKEY_verify)(
                    self.verify_ctx.ptr,
                    self.sig.as_ptr(),
                    self.sig.len(),
                    self.msg.as_ptr(),
                    self.msg.len(),
                )
            };
            if rc != 1 {
                return Err(EngineError::Failed(format!(
                    "OpenSSL rejected its own signature: {}",
                    api.last_error()
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine() -> Option<LibcryptoEngine> {
        if super::super::static_build() {
            return None;
        }
        let api = super::super::system().unwrap();
        Some(LibcryptoEngine::new(api, &Algorithm::ALL).unwrap())
    }

    #[test]
    fn every_algorithm_runs() {
        let Some(e) = engine() else { return };
        assert!(e.info().version.starts_with("OpenSSL "));
        for alg in Algorithm::EVERY {
            match alg {
                Algorithm::Rsa2048 | Algorithm::Dsa2048 => {
                    let mut s = e.signer(alg).unwrap();
                    s.sign(1).unwrap();
                    s.verify(1).unwrap();
                }
                _ => match e.bulk(alg) {
                    Ok(mut op) => op.run(1024, 2).unwrap(),
                    // Only DES may be missing (no legacy provider installed).
                    Err(EngineError::Unavailable(_)) => assert_eq!(alg, Algorithm::DesCbc),
                    Err(other) => panic!("{alg:?}: {other}"),
                },
            }
        }
    }

    #[test]
    fn aead_seal_matches_the_rustcrypto_engine() {
        // Same key, nonce 0, same plaintext: both engines must give the same ciphertext.
        let Some(e) = engine() else { return };
        for alg in Algorithm::WIREGUARD {
            let key = test_buffer(if alg == Algorithm::Aes128Gcm { 16 } else { 32 });
            let mut seal = AeadSeal::new(e.api, alg.evp_name(), key.len()).unwrap();
            seal.run(1456, 1).unwrap();
            let mut expected = test_buffer(1456);
            let tag = match alg {
                Algorithm::Aes128Gcm => {
                    use aes_gcm::aead::{AeadInPlace, KeyInit};
                    let c = aes_gcm::Aes128Gcm::new_from_slice(&key).unwrap();
                    c.encrypt_in_place_detached(&Default::default(), b"", &mut expected)
                        .unwrap()
                        .to_vec()
                }
                _ => {
                    use aes_gcm::aead::{AeadInPlace, KeyInit};
                    let c = chacha20poly1305::ChaCha20Poly1305::new_from_slice(&key).unwrap();
                    c.encrypt_in_place_detached(&Default::default(), b"", &mut expected)
                        .unwrap()
                        .to_vec()
                }
            };
            assert_eq!(&seal.buf[..1456], &expected[..], "{alg:?}");
            assert_eq!(&seal.tag[..], &tag[..], "{alg:?}");
            assert_eq!(seal.counter, 1);
        }
    }

    #[test]
    fn digest_matches_known_value() {
        let Some(e) = engine() else { return };
        let mut d = Digest::new(e.api, "MD5").unwrap();
        d.buf[..3].copy_from_slice(b"abc");
        d.run(3, 1).unwrap();
        let hex: String = d.out[..16].iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "900150983cd24fb0d6963f7d28e17f72");
    }

    #[test]
    fn dsa_pem_is_the_same_key_as_the_rustcrypto_engine_uses() {
        use dsa::signature::hazmat::PrehashVerifier;
        let Some(e) = engine() else { return };
        let key = Pkey::load(e.api, keys::DSA2048_PKCS8_PEM).unwrap();
        let op = PkeySign::new(key, DSA_MESSAGE_LEN).unwrap();
        let big = |lines: &[&str]| dsa::BigUint::from_bytes_be(&keys::hex_bytes(lines));
        let components = dsa::Components::from_components(
            big(keys::dsa2048::P),
            big(keys::dsa2048::Q),
            big(keys::dsa2048::G),
        )
        .unwrap();
        let public = dsa::VerifyingKey::from_components(components, big(keys::dsa2048::Y)).unwrap();
        let sig = dsa::Signature::try_from(op.sig.as_slice()).unwrap();
        public.verify_prehash(&op.msg, &sig).unwrap();
    }
}
