//! The system libcrypto, loaded at run time (dlopen through `libloading`): the 28 EVP/PKEY
//! functions the speed suite calls, resolved once. One binary thus gives the wiki-comparable
//! OpenSSL row on a router that has libcrypto (openssl-util) and still runs where there is none.
//! OpenSSL 3.x (`libcrypto.so.3`) and 1.1.1 (`libcrypto.so.1.1`) export every function used here
//! under the same name; the 3.x-only fetch and provider calls are optional.

mod ops;

pub use ops::LibcryptoEngine;

use std::ffi::{CStr, c_char, c_int, c_uint, c_ulong, c_void};
use std::sync::OnceLock;

/// The libraries tried in order when `ROUTERBENCH_LIBCRYPTO` is not set.
pub const DEFAULT_CANDIDATES: [&str; 2] = ["libcrypto.so.3", "libcrypto.so.1.1"];

/// Environment variable naming the one libcrypto to load (a path or a soname) instead of the
/// defaults; `none` means do not load any (the pure-Rust engine is used).
pub const ENV_LIBCRYPTO: &str = "ROUTERBENCH_LIBCRYPTO";

/// An opaque OpenSSL object (`EVP_MD`, `EVP_CIPHER_CTX`, `EVP_PKEY`, …).
pub type Obj = *mut c_void;

/// The functions of libcrypto the suite calls. Field names are the C names.
#[allow(non_snake_case)]
pub struct Api {
    /// `OpenSSL 3.0.19 27 Jan 2026`, from `OpenSSL_version(OPENSSL_VERSION)`.
    pub version_text: String,
    pub EVP_get_digestbyname: unsafe extern "C" fn(*const c_char) -> Obj,
    pub EVP_get_cipherbyname: unsafe extern "C" fn(*const c_char) -> Obj,
    pub EVP_MD_fetch: Option<unsafe extern "C" fn(Obj, *const c_char, *const c_char) -> Obj>,
    pub EVP_MD_free: Option<unsafe extern "C" fn(Obj)>,
    pub EVP_CIPHER_fetch: Option<unsafe extern "C" fn(Obj, *const c_char, *const c_char) -> Obj>,
    pub EVP_CIPHER_free: Option<unsafe extern "C" fn(Obj)>,
    pub OSSL_PROVIDER_try_load: Option<unsafe extern "C" fn(Obj, *const c_char, c_int) -> Obj>,
    pub EVP_Digest:
        unsafe extern "C" fn(*const c_void, usize, *mut u8, *mut c_uint, Obj, Obj) -> c_int,
    pub EVP_CIPHER_CTX_new: unsafe extern "C" fn() -> Obj,
    pub EVP_CIPHER_CTX_free: unsafe extern "C" fn(Obj),
    pub EVP_EncryptInit_ex: unsafe extern "C" fn(Obj, Obj, Obj, *const u8, *const u8) -> c_int,
    pub EVP_CIPHER_CTX_set_padding: unsafe extern "C" fn(Obj, c_int) -> c_int,
    pub EVP_Cipher: unsafe extern "C" fn(Obj, *mut u8, *const u8, c_uint) -> c_int,
    pub EVP_EncryptUpdate:
        unsafe extern "C" fn(Obj, *mut u8, *mut c_int, *const u8, c_int) -> c_int,
    pub EVP_EncryptFinal_ex: unsafe extern "C" fn(Obj, *mut u8, *mut c_int) -> c_int,
    pub EVP_CIPHER_CTX_ctrl: unsafe extern "C" fn(Obj, c_int, c_int, *mut c_void) -> c_int,
    pub BIO_new_mem_buf: unsafe extern "C" fn(*const c_void, c_int) -> Obj,
    pub BIO_free: unsafe extern "C" fn(Obj) -> c_int,
    pub PEM_read_bio_PrivateKey: unsafe extern "C" fn(Obj, *mut Obj, Obj, Obj) -> Obj,
    pub EVP_PKEY_free: unsafe extern "C" fn(Obj),
    pub EVP_PKEY_CTX_new: unsafe extern "C" fn(Obj, Obj) -> Obj,
    pub EVP_PKEY_CTX_free: unsafe extern "C" fn(Obj),
    pub EVP_PKEY_sign_init: unsafe extern "C" fn(Obj) -> c_int,
    pub EVP_PKEY_sign: unsafe extern "C" fn(Obj, *mut u8, *mut usize, *const u8, usize) -> c_int,
    pub EVP_PKEY_verify_init: unsafe extern "C" fn(Obj) -> c_int,
    pub EVP_PKEY_verify: unsafe extern "C" fn(Obj, *const u8, usize, *const u8, usize) -> c_int,
    pub ERR_get_error: unsafe extern "C" fn() -> c_ulong,
    pub ERR_error_string_n: unsafe extern "C" fn(c_ulong, *mut c_char, usize),
    /// Keeps the library mapped while the function pointers above are in use.
    _lib: libloading::Library,
}

/// Why no libcrypto could be used.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LoadError {
    /// A statically linked binary cannot dlopen.
    #[error("static build: cannot load libcrypto")]
    StaticBuild,
    /// Loading was switched off with ROUTERBENCH_LIBCRYPTO=none.
    #[error("libcrypto disabled by {ENV_LIBCRYPTO}=none")]
    Disabled,
    /// None of the candidates could be opened.
    #[error("no libcrypto found (tried {tried})")]
    NotFound { tried: String },
    /// A library opened but lacks a function the suite needs (not OpenSSL ≥ 1.1.1?).
    #[error("{library} lacks {symbol}: not OpenSSL 1.1.1 or 3.x")]
    MissingSymbol { library: String, symbol: String },
}

impl LoadError {
    /// The short reason shown in the row's Engine cell: `RustCrypto (no libcrypto found)`.
    pub fn short(&self) -> &'static str {
        match self {
            LoadError::StaticBuild => "static build",
            LoadError::Disabled => "libcrypto disabled",
            LoadError::NotFound { .. } => "no libcrypto found",
            LoadError::MissingSymbol { .. } => "libcrypto unusable",
        }
    }
}

/// True when this binary is statically linked (`-C target-feature=+crt-static`): dlopen of a
/// glibc library from a static executable is unsupported, so the pure-Rust engine is used.
pub const fn static_build() -> bool {
    cfg!(target_feature = "crt-static")
}

/// The candidates for this process: `ROUTERBENCH_LIBCRYPTO` if set, else the defaults.
pub fn candidates() -> Result<Vec<String>, LoadError> {
    match std::env::var(ENV_LIBCRYPTO) {
        Ok(v) if v.trim() == "none" => Err(LoadError::Disabled),
        Ok(v) if !v.trim().is_empty() => Ok(vec![v.trim().to_string()]),
        _ => Ok(DEFAULT_CANDIDATES.iter().map(|s| s.to_string()).collect()),
    }
}

/// The process-wide libcrypto, loaded on first use (never unloaded: OpenSSL keeps state and
/// atexit handlers that outlive any one engine).
pub fn system() -> Result<&'static Api, LoadError> {
    static API: OnceLock<Result<Api, LoadError>> = OnceLock::new();
    API.get_or_init(|| {
        if static_build() {
            return Err(LoadError::StaticBuild);
        }
        load(&candidates()?)
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Opens the first candidate that loads and resolves every function from it. The error says
/// what was tried, so a missing library reads as such.
pub fn load(candidates: &[String]) -> Result<Api, LoadError> {
    let mut tried = Vec::new();
    for name in candidates {
        // SAFETY: loading libcrypto runs its constructors, which only initialise its own state.
        match unsafe { libloading::Library::new(name) } {
            Ok(lib) => return resolve(lib, name),
            Err(e) => tried.push(format!("{name}: {e}")),
        }
    }
    Err(LoadError::NotFound {
        tried: tried.join("; "),
    })
}

/// Copies each function pointer out of the library (the library is kept in the Api).
fn resolve(lib: libloading::Library, name: &str) -> Result<Api, LoadError> {
    let missing = |symbol: &str| LoadError::MissingSymbol {
        library: name.to_string(),
        symbol: symbol.to_string(),
    };
    macro_rules! need {
        ($sym:literal) => {
            // SAFETY: the field's type is the C prototype of this OpenSSL function.
            *unsafe { lib.get(concat!($sym, "\0").as_bytes()) }.map_err(|_| missing($sym))?
        };
    }
    macro_rules! optional {
        ($sym:literal) => {
            // SAFETY: as above; absent in OpenSSL 1.1.1.
            unsafe { lib.get(concat!($sym, "\0").as_bytes()) }
                .ok()
                .map(|s| *s)
        };
    }
    let version: unsafe extern "C" fn(c_int) -> *const c_char = need!("OpenSSL_version");
    // SAFETY: OpenSSL_version(OPENSSL_VERSION = 0) returns a static NUL-terminated string.
    let version_text = unsafe {
        let p = version(0);
        if p.is_null() {
            return Err(missing("OpenSSL_version"));
        }
        CStr::from_ptr(p).to_string_lossy().into_owned()
    };
    Ok(Api {
        version_text,
        EVP_get_digestbyname: need!("EVP_get_digestbyname"),
        EVP_get_cipherbyname: need!("EVP_get_cipherbyname"),
        EVP_MD_fetch: optional!("EVP_MD_fetch"),
        EVP_MD_free: optional!("EVP_MD_free"),
        EVP_CIPHER_fetch: optional!("EVP_CIPHER_fetch"),
        EVP_CIPHER_free: optional!("EVP_CIPHER_free"),
        OSSL_PROVIDER_try_load: optional!("OSSL_PROVIDER_try_load"),
        EVP_Digest: need!("EVP_Digest"),
        EVP_CIPHER_CTX_new: need!("EVP_CIPHER_CTX_new"),
        EVP_CIPHER_CTX_free: need!("EVP_CIPHER_CTX_free"),
        EVP_EncryptInit_ex: need!("EVP_EncryptInit_ex"),
        EVP_CIPHER_CTX_set_padding: need!("EVP_CIPHER_CTX_set_padding"),
        EVP_Cipher: need!("EVP_Cipher"),
        EVP_EncryptUpdate: need!("EVP_EncryptUpdate"),
        EVP_EncryptFinal_ex: need!("EVP_EncryptFinal_ex"),
        EVP_CIPHER_CTX_ctrl: need!("EVP_CIPHER_CTX_ctrl"),
        BIO_new_mem_buf: need!("BIO_new_mem_buf"),
        BIO_free: need!("BIO_free"),
        PEM_read_bio_PrivateKey: need!("PEM_read_bio_PrivateKey"),
        EVP_PKEY_free: need!("EVP_PKEY_free"),
        EVP_PKEY_CTX_new: need!("EVP_PKEY_CTX_new"),
        EVP_PKEY_CTX_free: need!("EVP_PKEY_CTX_free"),
        EVP_PKEY_sign_init: need!("EVP_PKEY_sign_init"),
        EVP_PKEY_sign: need!("EVP_PKEY_sign"),
        EVP_PKEY_verify_init: need!("EVP_PKEY_verify_init"),
        EVP_PKEY_verify: need!("EVP_PKEY_verify"),
        ERR_get_error: need!("ERR_get_error"),
        ERR_error_string_n: need!("ERR_error_string_n"),
        _lib: lib,
    })
}

impl Api {
    /// `OpenSSL 3.0.19` from `OpenSSL 3.0.19 27 Jan 2026`: what the row's Engine cell shows.
    pub fn short_version(&self) -> String {
        self.version_text
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The oldest queued OpenSSL error as text (empties the queue), for error messages.
    pub fn last_error(&self) -> String {
        let mut first = None;
        // Bounded: the queue holds at most 16 entries.
        for _ in 0..16 {
            // SAFETY: ERR_get_error takes no arguments and only reads this thread's queue.
            let code = unsafe { (self.ERR_get_error)() };
            if code == 0 {
                break;
            }
            first.get_or_insert(code);
        }
        let Some(code) = first else {
            return "no error detail from libcrypto".into();
        };
        let mut buf = [0 as c_char; 256];
        // SAFETY: buf is writable for its length; the function NUL-terminates within it.
        unsafe { (self.ERR_error_string_n)(code, buf.as_mut_ptr(), buf.len()) };
        // SAFETY: NUL-terminated by ERR_error_string_n (buf was zeroed as well).
        unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_library_is_a_not_found_error_naming_what_was_tried() {
        let e = load(&[
            "/nonexistent/libcrypto.so.3".into(),
            "libnot-a-crypto.so.9".into(),
        ])
        .err()
        .unwrap();
        assert_eq!(e.short(), "no libcrypto found");
        let text = e.to_string();
        assert!(text.contains("/nonexistent/libcrypto.so.3"), "{text}");
        assert!(text.contains("libnot-a-crypto.so.9"), "{text}");
    }

    #[test]
    fn a_library_without_the_functions_is_rejected() {
        // libc opens fine but is not libcrypto.
        let e = load(&["libc.so.6".into()]).err().unwrap();
        assert!(matches!(e, LoadError::MissingSymbol { .. }), "{e}");
        assert_eq!(e.short(), "libcrypto unusable");
    }

    #[test]
    fn system_libcrypto_loads_here() {
        // This machine (and CI) has libssl3; a dynamic test binary must find it.
        if static_build() {
            return;
        }
        let api = load(&DEFAULT_CANDIDATES.map(String::from)).unwrap();
        assert!(
            api.short_version().starts_with("OpenSSL "),
            "{}",
            api.version_text
        );
    }
}
