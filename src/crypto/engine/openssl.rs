//! The OpenSSL engine (cargo feature `openssl`): EVP loops on the system libcrypto, the way
//! `openssl speed` runs them. Each algorithm is fetched once (`EVP_MD_fetch`/`EVP_CIPHER_fetch`)
//! and one context is reused, because an implicit fetch per call costs ~20 % at 1 KiB
//! (spec/crypto.md §4 note ¹). Single DES comes from the legacy provider when it loads; otherwise
//! it is reported as unavailable (0 with a note), as `openssl speed` prints 0.00.

use std::hint::black_box;

use foreign_types::ForeignType;
use openssl_sys as ffi;

use openssl::cipher::Cipher;
use openssl::cipher_ctx::CipherCtx;
use openssl::md::Md;
use openssl::pkey::{PKey, Private};
use openssl::pkey_ctx::PkeyCtx;
use openssl::provider::Provider;

use super::{
    BulkOp, DSA_MESSAGE_LEN, Engine, EngineError, MAX_BLOCK, RSA_MESSAGE_LEN, SignOp, test_buffer,
};
use crate::crypto::keys;
use crate::results::crypto::{Algorithm, EngineInfo};

/// The libcrypto engine. Holds the legacy provider (for single DES) while it lives.
pub struct OpensslEngine {
    legacy: Result<Provider, String>,
}

/// Each measuring thread gets its own key object: OpenSSL serialises threads that share one RSA
/// key (its blinding state is per key), and `openssl speed -multi` uses separate processes.
fn load_rsa() -> Result<PKey<Private>, EngineError> {
    PKey::private_key_from_pem(keys::RSA2048_PKCS8_PEM.as_bytes())
        .map_err(failed("cannot load the embedded RSA key"))
}

fn load_dsa() -> Result<PKey<Private>, EngineError> {
    let bn = |lines: &[&str]| openssl::bn::BigNum::from_slice(&keys::hex_bytes(lines));
    (|| {
        let d = openssl::dsa::Dsa::from_private_components(
            bn(keys::dsa2048::P)?,
            bn(keys::dsa2048::Q)?,
            bn(keys::dsa2048::G)?,
            bn(keys::dsa2048::X)?,
            bn(keys::dsa2048::Y)?,
        )?;
        PKey::from_dsa(d)
    })()
    .map_err(failed("cannot load the embedded DSA key"))
}

fn failed(what: &str) -> impl Fn(openssl::error::ErrorStack) -> EngineError + '_ {
    move |e| EngineError::Failed(format!("OpenSSL {what}: {e}"))
}

impl OpensslEngine {
    /// Loads the keys, and the legacy provider when single DES is requested.
    pub fn new(algorithms: &[Algorithm]) -> Result<Self, EngineError> {
        let legacy = if algorithms.contains(&Algorithm::DesCbc) {
            // Keep the default provider as a fallback next to legacy.
            Provider::try_load(None, "legacy", true).map_err(|e| e.to_string())
        } else {
            Err("not requested".into())
        };
        // Parse once here so a broken key fails before any measuring starts.
        load_rsa()?;
        load_dsa()?;
        Ok(Self { legacy })
    }
}

/// `OpenSSL 3.0.19` from `OpenSSL 3.0.19 27 Jan 2026`.
pub fn short_version() -> String {
    openssl::version::version()
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

impl Engine for OpensslEngine {
    fn info(&self) -> EngineInfo {
        EngineInfo {
            name: "openssl".into(),
            version: short_version(),
        }
    }

    fn bulk(&self, alg: Algorithm) -> Result<Box<dyn BulkOp>, EngineError> {
        let md = |name: &str| -> Result<Box<dyn BulkOp>, EngineError> {
            let md = Md::fetch(None, name, None).map_err(failed("digest fetch"))?;
            Ok(Box::new(Digest::new(md)?))
        };
        match alg {
            Algorithm::Md5 => md("MD5"),
            Algorithm::Sha1 => md("SHA1"),
            Algorithm::Sha256 => md("SHA256"),
            Algorithm::Sha512 => md("SHA512"),
            Algorithm::DesCbc => {
                if let Err(why) = &self.legacy {
                    return Err(EngineError::Unavailable(format!(
                        "single DES is only in OpenSSL 3's legacy provider, which did not load \
                         ({why}); reported as 0 (install the legacy provider, e.g. OpenWrt's \
                         libopenssl-legacy)"
                    )));
                }
                Ok(Box::new(CbcEncrypt::new("DES-CBC")?))
            }
            Algorithm::DesEde3 => Ok(Box::new(CbcEncrypt::new("DES-EDE3-CBC")?)),
            Algorithm::Aes128Cbc => Ok(Box::new(CbcEncrypt::new("AES-128-CBC")?)),
            Algorithm::Aes192Cbc => Ok(Box::new(CbcEncrypt::new("AES-192-CBC")?)),
            Algorithm::Aes256Cbc => Ok(Box::new(CbcEncrypt::new("AES-256-CBC")?)),
            Algorithm::Rsa2048 | Algorithm::Dsa2048 => Err(EngineError::Failed(format!(
                "{} is a signature algorithm, not a hash or cipher",
                alg.cli_name()
            ))),
        }
    }

    fn signer(&self, alg: Algorithm) -> Result<Box<dyn SignOp>, EngineError> {
        match alg {
            Algorithm::Rsa2048 => Ok(Box::new(PkeySign::new(&load_rsa()?, RSA_MESSAGE_LEN)?)),
            Algorithm::Dsa2048 => Ok(Box::new(PkeySign::new(&load_dsa()?, DSA_MESSAGE_LEN)?)),
            other => Err(EngineError::Failed(format!(
                "{} is not a signature algorithm",
                other.cli_name()
            ))),
        }
    }
}

/// One-shot `EVP_Digest` per block with a pre-fetched `EVP_MD`, exactly the loop `openssl speed`
/// runs (`EVP_Digest_loop`): it sets up a fresh context per call, and so do we.
struct Digest {
    md: Md,
    buf: Vec<u8>,
    out: [u8; 64],
}

impl Digest {
    fn new(md: Md) -> Result<Self, EngineError> {
        Ok(Self {
            md,
            buf: test_buffer(MAX_BLOCK),
            out: [0; 64],
        })
    }
}

unsafe extern "C" {
    /// libcrypto's one-shot digest (not exported by openssl-sys; libcrypto is linked through it).
    fn EVP_Digest(
        data: *const std::ffi::c_void,
        count: usize,
        md: *mut u8,
        size: *mut std::ffi::c_uint,
        kind: *const ffi::EVP_MD,
        engine: *mut ffi::ENGINE,
    ) -> std::ffi::c_int;
}

impl BulkOp for Digest {
    fn run(&mut self, len: usize, n: u64) -> Result<(), EngineError> {
        let data = self
            .buf
            .get(..len)
            .ok_or_else(|| EngineError::Failed(format!("block of {len} bytes too long")))?;
        let md = self.md.as_ptr();
        let mut out_len: std::ffi::c_uint = 0;
        for _ in 0..n {
            // SAFETY: md is a live fetched EVP_MD owned by self; data is valid for len bytes;
            // out holds 64 bytes, the largest digest here (SHA-512).
            let ok = unsafe {
                EVP_Digest(
                    data.as_ptr().cast(),
                    data.len(),
                    self.out.as_mut_ptr(),
                    &mut out_len,
                    md,
                    std::ptr::null_mut(),
                )
            };
            if ok != 1 {
                return Err(failed("digest")(openssl::error::ErrorStack::get()));
            }
        }
        black_box(&self.out);
        Ok(())
    }
}

/// CBC encryption in place, chaining across calls, padding off (as `openssl speed`).
struct CbcEncrypt {
    ctx: CipherCtx,
    buf: Vec<u8>,
}

impl CbcEncrypt {
    fn new(name: &str) -> Result<Self, EngineError> {
        let cipher = Cipher::fetch(None, name, None).map_err(|e| {
            EngineError::Unavailable(format!("libcrypto has no {name}: {e}; reported as 0"))
        })?;
        let key = test_buffer(cipher.key_length());
        let iv = test_buffer(cipher.iv_length());
        let mut ctx = CipherCtx::new().map_err(failed("cipher context"))?;
        ctx.encrypt_init(Some(&cipher), Some(&key), Some(&iv))
            .map_err(failed("cipher init"))?;
        ctx.set_padding(false);
        // One spare block: EVP_CipherUpdate may need room for a block beyond the input.
        Ok(Self {
            ctx,
            buf: test_buffer(MAX_BLOCK + 32),
        })
    }
}

unsafe extern "C" {
    /// The low-level cipher call `openssl speed` times for `aes-128-cbc`, `des-ede3` … (not
    /// exported by openssl-sys; libcrypto is linked through it).
    fn EVP_Cipher(
        ctx: *mut ffi::EVP_CIPHER_CTX,
        out: *mut u8,
        input: *const u8,
        len: std::ffi::c_uint,
    ) -> std::ffi::c_int;
}

impl BulkOp for CbcEncrypt {
    fn run(&mut self, len: usize, n: u64) -> Result<(), EngineError> {
        if len > MAX_BLOCK || len % 16 != 0 {
            return Err(EngineError::Failed(format!(
                "block of {len} bytes is not a multiple of 16 up to {MAX_BLOCK}"
            )));
        }
        let ctx = self.ctx.as_ptr();
        let buf = self.buf.as_mut_ptr();
        for _ in 0..n {
            // SAFETY: ctx is an initialised encryption context owned by self; buf holds at
            // least len bytes; in-place operation is allowed for CBC, as openssl speed does.
            let rc = unsafe { EVP_Cipher(ctx, buf, buf, len as std::ffi::c_uint) };
            if rc <= 0 {
                return Err(failed("encrypt")(openssl::error::ErrorStack::get()));
            }
        }
        black_box(&self.buf);
        Ok(())
    }
}

/// `EVP_PKEY_sign`/`EVP_PKEY_verify` on reused contexts over a fixed short message (36 bytes
/// PKCS#1 v1.5 for RSA, 20 bytes for DSA), as `openssl speed rsa2048 dsa2048`.
struct PkeySign {
    sign_ctx: PkeyCtx<Private>,
    verify_ctx: PkeyCtx<Private>,
    msg: Vec<u8>,
    sig: Vec<u8>,
    sig_len: usize,
}

impl PkeySign {
    fn new(key: &PKey<Private>, msg_len: usize) -> Result<Self, EngineError> {
        let mut sign_ctx = PkeyCtx::new(key).map_err(failed("sign context"))?;
        sign_ctx.sign_init().map_err(failed("sign init"))?;
        let mut verify_ctx = PkeyCtx::new(key).map_err(failed("verify context"))?;
        verify_ctx.verify_init().map_err(failed("verify init"))?;
        let msg = test_buffer(msg_len);
        let mut sig = vec![0u8; key.size()];
        let sig_len = sign_ctx
            .sign(&msg, Some(&mut sig))
            .map_err(failed("sign"))?;
        Ok(Self {
            sign_ctx,
            verify_ctx,
            msg,
            sig,
            sig_len,
        })
    }
}

impl SignOp for PkeySign {
    fn sign(&mut self, n: u64) -> Result<(), EngineError> {
        let mut out = vec![0u8; self.sig.len()];
        for _ in 0..n {
            self.sign_ctx
                .sign(&self.msg, Some(&mut out))
                .map_err(failed("sign"))?;
        }
        black_box(&out);
        Ok(())
    }

    fn verify(&mut self, n: u64) -> Result<(), EngineError> {
        let sig = &self.sig[..self.sig_len];
        for _ in 0..n {
            let ok = self
                .verify_ctx
                .verify(&self.msg, sig)
                .map_err(failed("verify"))?;
            if !ok {
                return Err(EngineError::Failed(
                    "OpenSSL rejected its own signature".into(),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_algorithm_runs() {
        let e = OpensslEngine::new(&Algorithm::ALL).unwrap();
        assert!(e.info().version.starts_with("OpenSSL "));
        for alg in Algorithm::ALL {
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
    fn digest_matches_known_value() {
        let md = Md::fetch(None, "MD5", None).unwrap();
        let mut d = Digest::new(md).unwrap();
        d.buf[..3].copy_from_slice(b"abc");
        d.run(3, 1).unwrap();
        let hex: String = d.out[..16].iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "900150983cd24fb0d6963f7d28e17f72");
    }
}
