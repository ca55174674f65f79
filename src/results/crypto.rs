//! The crypto benchmark's results (docs/protocols/openssl-speed.md §2/§6): byte rates per algorithm and block size,
//! RSA/DSA sign and verify operations per second, and where the numbers came from (measured by an
//! engine, or imported from saved `openssl speed` output).

use serde::{Deserialize, Serialize};

/// The block size of the hash columns of the OpenWrt row (the wiki awk's `$5`).
pub const ROW_HASH_BLOCK: u32 = 1024;
/// The default block size of the cipher columns (as OpenSSL 3.x rows of the wiki table read).
pub const ROW_CIPHER_BLOCK: u32 = 8192;
/// The block size of the WireGuard AEAD columns: a full-size WireGuard data packet's payload
/// (1500-byte MTU less the 20 + 8 + 16 bytes of IPv4, UDP and WireGuard header; `openssl speed
/// -bytes 1456`). See docs/crypto.md.
pub const WIREGUARD_BLOCK: u32 = 1456;

/// The eleven algorithms of the OpenWrt benchmark table, in the table's column order, then the
/// two AEADs of WireGuard (extra columns, not in the wiki's row).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Algorithm {
    #[serde(rename = "md5")]
    Md5,
    #[serde(rename = "sha1")]
    Sha1,
    #[serde(rename = "sha256")]
    Sha256,
    #[serde(rename = "sha512")]
    Sha512,
    /// Single DES in CBC mode (`openssl speed des` / `des-cbc`).
    #[serde(rename = "des-cbc")]
    DesCbc,
    /// Triple DES (EDE, three keys) in CBC mode (`des-ede3`).
    #[serde(rename = "des-ede3")]
    DesEde3,
    #[serde(rename = "aes-128-cbc")]
    Aes128Cbc,
    #[serde(rename = "aes-192-cbc")]
    Aes192Cbc,
    #[serde(rename = "aes-256-cbc")]
    Aes256Cbc,
    /// RSA-2048, PKCS#1 v1.5 signature of 36 bytes, e = 65537.
    #[serde(rename = "rsa2048")]
    Rsa2048,
    /// DSA with L = 2048, N = 160, signature of 20 bytes.
    #[serde(rename = "dsa2048")]
    Dsa2048,
    /// ChaCha20-Poly1305 (RFC 8439), WireGuard's data cipher, at [`WIREGUARD_BLOCK`] bytes.
    #[serde(rename = "chacha20-poly1305")]
    Chacha20Poly1305,
    /// AES-128-GCM at [`WIREGUARD_BLOCK`] bytes (what IPsec/TLS offload to AES hardware).
    #[serde(rename = "aes-128-gcm")]
    Aes128Gcm,
}

/// What kind of operation an algorithm is timed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlgorithmKind {
    /// One-shot digest of a block (init + update + final).
    Hash,
    /// CBC encryption continuing on one context.
    Cipher,
    /// Signatures: sign/s and verify/s.
    PublicKey,
    /// Authenticated encryption of one packet of [`WIREGUARD_BLOCK`] bytes.
    Aead,
}

impl Algorithm {
    /// The OpenWrt table's algorithms in its order (the wiki row's 13 columns).
    pub const ALL: [Algorithm; 11] = [
        Algorithm::Md5,
        Algorithm::Sha1,
        Algorithm::Sha256,
        Algorithm::Sha512,
        Algorithm::DesCbc,
        Algorithm::DesEde3,
        Algorithm::Aes128Cbc,
        Algorithm::Aes192Cbc,
        Algorithm::Aes256Cbc,
        Algorithm::Rsa2048,
        Algorithm::Dsa2048,
    ];

    /// The WireGuard columns: extra columns of the result and reports, not of the wiki row.
    pub const WIREGUARD: [Algorithm; 2] = [Algorithm::Chacha20Poly1305, Algorithm::Aes128Gcm];

    /// The table's algorithms, then WireGuard's: what a run measures by default.
    pub const EVERY: [Algorithm; 13] = [
        Algorithm::Md5,
        Algorithm::Sha1,
        Algorithm::Sha256,
        Algorithm::Sha512,
        Algorithm::DesCbc,
        Algorithm::DesEde3,
        Algorithm::Aes128Cbc,
        Algorithm::Aes192Cbc,
        Algorithm::Aes256Cbc,
        Algorithm::Rsa2048,
        Algorithm::Dsa2048,
        Algorithm::Chacha20Poly1305,
        Algorithm::Aes128Gcm,
    ];

    /// The name on the command line (`openssl speed`'s own argument).
    pub fn cli_name(self) -> &'static str {
        match self {
            Algorithm::Md5 => "md5",
            Algorithm::Sha1 => "sha1",
            Algorithm::Sha256 => "sha256",
            Algorithm::Sha512 => "sha512",
            Algorithm::DesCbc => "des",
            Algorithm::DesEde3 => "des-ede3",
            Algorithm::Aes128Cbc => "aes-128-cbc",
            Algorithm::Aes192Cbc => "aes-192-cbc",
            Algorithm::Aes256Cbc => "aes-256-cbc",
            Algorithm::Rsa2048 => "rsa2048",
            Algorithm::Dsa2048 => "dsa2048",
            Algorithm::Chacha20Poly1305 => "chacha20-poly1305",
            Algorithm::Aes128Gcm => "aes-128-gcm",
        }
    }

    /// The name OpenSSL's EVP layer knows the algorithm by (`-evp NAME`, `EVP_CIPHER_fetch`).
    pub fn evp_name(self) -> &'static str {
        match self {
            Algorithm::Md5 => "MD5",
            Algorithm::Sha1 => "SHA1",
            Algorithm::Sha256 => "SHA256",
            Algorithm::Sha512 => "SHA512",
            Algorithm::DesCbc => "DES-CBC",
            Algorithm::DesEde3 => "DES-EDE3-CBC",
            Algorithm::Aes128Cbc => "AES-128-CBC",
            Algorithm::Aes192Cbc => "AES-192-CBC",
            Algorithm::Aes256Cbc => "AES-256-CBC",
            Algorithm::Rsa2048 => "RSA",
            Algorithm::Dsa2048 => "DSA",
            Algorithm::Chacha20Poly1305 => "ChaCha20-Poly1305",
            Algorithm::Aes128Gcm => "AES-128-GCM",
        }
    }

    /// The row label OpenSSL 3.x prints (one word).
    pub fn label_v3(self) -> &'static str {
        match self {
            Algorithm::DesCbc => "des-cbc",
            Algorithm::Rsa2048 => "rsa",
            Algorithm::Dsa2048 => "dsa",
            other => other.cli_name(),
        }
    }

    /// The row label OpenSSL 1.0.2/1.1.1 prints (two words for ciphers).
    pub fn label_v1(self) -> &'static str {
        match self {
            Algorithm::DesCbc => "des cbc",
            Algorithm::DesEde3 => "des ede3",
            Algorithm::Aes128Cbc => "aes-128 cbc",
            Algorithm::Aes192Cbc => "aes-192 cbc",
            Algorithm::Aes256Cbc => "aes-256 cbc",
            other => other.label_v3(),
        }
    }

    /// The OpenWrt table's column title (the public-key ones have two columns).
    pub fn column_title(self) -> &'static str {
        match self {
            Algorithm::Md5 => "MD5",
            Algorithm::Sha1 => "SHA-1",
            Algorithm::Sha256 => "SHA-256",
            Algorithm::Sha512 => "SHA-512",
            Algorithm::DesCbc => "DES",
            Algorithm::DesEde3 => "3DES",
            Algorithm::Aes128Cbc => "AES-128",
            Algorithm::Aes192Cbc => "AES-192",
            Algorithm::Aes256Cbc => "AES-256",
            Algorithm::Rsa2048 => "RSA",
            Algorithm::Dsa2048 => "DSA",
            Algorithm::Chacha20Poly1305 => "ChaCha20-Poly1305",
            Algorithm::Aes128Gcm => "AES-128-GCM",
        }
    }

    pub fn kind(self) -> AlgorithmKind {
        match self {
            Algorithm::Md5 | Algorithm::Sha1 | Algorithm::Sha256 | Algorithm::Sha512 => {
                AlgorithmKind::Hash
            }
            Algorithm::Rsa2048 | Algorithm::Dsa2048 => AlgorithmKind::PublicKey,
            Algorithm::Chacha20Poly1305 | Algorithm::Aes128Gcm => AlgorithmKind::Aead,
            _ => AlgorithmKind::Cipher,
        }
    }

    /// The one block size a row or column reads this algorithm at: 1024 bytes for hashes,
    /// `cipher_block` for the CBC ciphers, [`WIREGUARD_BLOCK`] for the AEADs; `None` for RSA/DSA.
    pub fn row_block(self, cipher_block: u32) -> Option<u32> {
        match self.kind() {
            AlgorithmKind::Hash => Some(ROW_HASH_BLOCK),
            AlgorithmKind::Cipher => Some(cipher_block),
            AlgorithmKind::Aead => Some(WIREGUARD_BLOCK),
            AlgorithmKind::PublicKey => None,
        }
    }

    /// Key size in bits of the public-key algorithms (0 for the others).
    pub fn bits(self) -> u32 {
        match self {
            Algorithm::Rsa2048 | Algorithm::Dsa2048 => 2048,
            _ => 0,
        }
    }
}

/// Which program measured the numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineInfo {
    /// `rustcrypto`, `openssl` (this binary's libcrypto engine) or `openssl-speed` (the output
    /// of the `openssl speed` program: imported, or run by this binary).
    pub name: String,
    /// What the OpenWrt row shows: `RustCrypto`, `OpenSSL 3.0.19`, `OpenSSL 1.1.1w`,
    /// `OpenSSL 3.0.22 (openssl speed)`.
    pub version: String,
}

impl EngineInfo {
    /// True when the rates come from OpenSSL (this binary's libcrypto engine or an imported
    /// `openssl speed`), so the row may sit next to the OpenWrt wiki's OpenSSL rows.
    pub fn wiki_comparable(&self) -> bool {
        matches!(self.name.as_str(), "openssl" | "openssl-speed")
    }
}

/// How a rate's time base was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimeBase {
    /// Operations per second of user CPU time of the measuring thread (openssl speed's default).
    UserCpu,
    /// Operations per second of wall-clock time (`--elapsed`, and always with `--multi`).
    Elapsed,
    /// Taken from a saved `openssl speed` output (user CPU, or elapsed under `-multi`).
    Imported,
}

/// Where the result came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum CryptoSource {
    /// Measured by this binary.
    Measured {
        /// Seconds per block size (hash/cipher) and per sign or verify run (RSA/DSA), as asked.
        seconds_bulk: f64,
        seconds_pkey: f64,
        /// The `openssl speed …` command lines run, when the engine was the openssl program
        /// (`openssl-speed`); empty for the in-process engines.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        commands: Vec<String>,
    },
    /// Parsed from saved `openssl speed` output.
    Imported {
        /// The file name, or `-` for standard input.
        file: String,
        /// The output layout recognised: `1.0.2`, `1.1.1`, `3.0-3.1`, `3.2+`, `mr` (machine
        /// readable `-mr` lines only).
        layout: String,
    },
}

/// Bytes per second of one hash or cipher at every block size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BulkResult {
    pub algorithm: Algorithm,
    /// Bytes per second, one per entry of [`CryptoResult::block_sizes`]; `null` when not
    /// measured at that size. 0 when the engine lacks the algorithm (see `note`).
    pub bytes_per_sec: Vec<Option<f64>>,
    /// Why a value is 0 or missing (e.g. single DES needs OpenSSL 3's legacy provider).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Signatures per second of RSA or DSA.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublicKeyResult {
    pub algorithm: Algorithm,
    pub bits: u32,
    pub sign_per_sec: f64,
    pub verify_per_sec: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One crypto benchmark: the `openssl speed` table in numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CryptoResult {
    pub engine: EngineInfo,
    pub source: CryptoSource,
    pub time_base: TimeBase,
    /// Threads (or `-multi` processes) whose rates are summed; 1 for a single-thread run.
    pub threads: u32,
    /// The block sizes in bytes of the bulk columns (16 … 16384; 1.0.2 stops at 8192).
    pub block_sizes: Vec<u32>,
    /// Hashes and ciphers, in the order measured or printed.
    pub bulk: Vec<BulkResult>,
    /// RSA and DSA.
    pub public_key: Vec<PublicKeyResult>,
    /// Things a reader must know to trust the numbers.
    #[serde(default)]
    pub notes: Vec<String>,
}

impl CryptoResult {
    /// Bytes per second of `alg` at block size `size`, if present.
    pub fn rate(&self, alg: Algorithm, size: u32) -> Option<f64> {
        let col = self.block_sizes.iter().position(|&s| s == size)?;
        self.bulk
            .iter()
            .find(|b| b.algorithm == alg)
            .and_then(|b| b.bytes_per_sec.get(col).copied().flatten())
    }

    /// The RSA or DSA result, if present.
    pub fn public_key(&self, alg: Algorithm) -> Option<&PublicKeyResult> {
        self.public_key.iter().find(|p| p.algorithm == alg)
    }
}
