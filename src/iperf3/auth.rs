//! iperf3's RSA authorised-users scheme, wire-compatible with iperf3 3.12 (iperf_auth.c): the
//! client encrypts `"user: U\npwd:  P\nts:   T"` with the server's RSA public key (PKCS#1 v1.5
//! padding in 3.12; OAEP-SHA1 from 3.17 on), base64 without newlines, as the `authtoken`
//! parameter. The server decrypts it, checks that `T` is within the skew threshold (10 s) of its
//! clock, and looks for the line `U,sha256hex("{U}P")` in the authorised-users file.
//!
//! The client does not say which padding it used (iperf3 3.17+ sets `use_pkcs1_padding` from its
//! own option only, never from the params), so a server that accepts both must tell them apart
//! by the plaintext: it tries each padding and takes the one whose plaintext parses as iperf3's
//! credentials. Stopping at the first padding that merely *decrypts* is wrong: an OAEP block
//! starts with 0x00 and its second byte is 0x02 in 1 of 256 cases, and then PKCS#1 v1.5 decoding
//! often "succeeds" on garbage (about 1 OAEP login in 500 was refused that way).
//!
//! Beyond iperf3: a token is accepted **once**. Each test's token carries fresh random padding,
//! so a second test with the very same ciphertext within the token's validity window is a replay
//! (a captured token sent again, from anywhere): refused. The replay cache keeps the SHA-256 of
//! each accepted ciphertext until its time plus the skew threshold has passed. Failed logins
//! slow their address down ([`crate::service::backoff`]).

use base64ct::{Base64, Encoding};
use rsa::pkcs1::{DecodeRsaPrivateKey, DecodeRsaPublicKey};
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey};
use rsa::{Oaep, Pkcs1v15Encrypt, RsaPrivateKey, RsaPublicKey};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Accepted tokens remembered at most (far above what a server accepts within 2 × the skew).
const MAX_REMEMBERED: usize = 65536;

/// iperf3's default `--time-skew-threshold`, seconds.
pub const DEFAULT_SKEW: u64 = 10;

/// Padding of the RSA-encrypted token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Padding {
    /// PKCS#1 v1.5: iperf3 up to 3.16 (Debian 12's 3.12), and `--use-pkcs1-padding` later.
    Pkcs1,
    /// OAEP with SHA-1 (OpenSSL's default): iperf3 3.17 and later.
    Oaep,
}

impl Padding {
    fn name(self) -> &'static str {
        match self {
            Padding::Pkcs1 => "PKCS#1 v1.5",
            Padding::Oaep => "OAEP",
        }
    }
}

/// Which paddings the server accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ServerPadding {
    /// Either (the default): iperf3 3.12 clients and 3.17+ clients alike.
    #[default]
    Auto,
    /// Only this one, as an iperf3 server does (3.17+: OAEP, or v1.5 with `--use-pkcs1-padding`).
    Only(Padding),
}

impl std::str::FromStr for ServerPadding {
    type Err = String;
    fn from_str(s: &str) -> Result<ServerPadding, String> {
        match s {
            "auto" => Ok(ServerPadding::Auto),
            "pkcs1" => Ok(ServerPadding::Only(Padding::Pkcs1)),
            "oaep" => Ok(ServerPadding::Only(Padding::Oaep)),
            _ => Err(format!(
                "unknown RSA padding {s:?}: auto (either), pkcs1 (iperf3 up to 3.16, or \
                 --use-pkcs1-padding) or oaep (iperf3 3.17+)"
            )),
        }
    }
}

/// The server's half: private key, users file, skew threshold, accepted paddings, the replay
/// cache and the failure back-off.
#[derive(Debug, Clone)]
pub struct ServerAuth {
    key: RsaPrivateKey,
    users: PathBuf,
    pub skew: u64,
    pub padding: ServerPadding,
    /// SHA-256 of each accepted ciphertext → the Unix second after which it is forgotten.
    used: Arc<Mutex<HashMap<[u8; 32], i64>>>,
    backoff: Arc<crate::service::backoff::Backoff>,
}

fn read(path: &Path, what: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{what} {}: {e}", path.display()))
}

impl ServerAuth {
    /// Loads the private key (PKCS#8 `PRIVATE KEY` or PKCS#1 `RSA PRIVATE KEY` PEM, not
    /// encrypted) and checks the users file can be read.
    pub fn load(key: &Path, users: &Path) -> Result<ServerAuth, String> {
        let pem = read(key, "--rsa-private-key-path")?;
        let key = RsaPrivateKey::from_pkcs8_pem(&pem)
            .or_else(|_| RsaPrivateKey::from_pkcs1_pem(&pem))
            .map_err(|e| {
                format!(
                    "--rsa-private-key-path {}: not an unencrypted RSA private key in PEM ({e}); \
                     make one with `openssl rsa -in private.pem -out private_not_protected.pem`",
                    key.display()
                )
            })?;
        read(users, "--authorized-users-path")?;
        Ok(ServerAuth {
            key,
            users: users.to_path_buf(),
            skew: DEFAULT_SKEW,
            padding: ServerPadding::Auto,
            used: Arc::new(Mutex::new(HashMap::new())),
            backoff: Arc::new(crate::service::backoff::Backoff::default()),
        })
    }

    /// [`ServerAuth::check`] for a client at `ip`, slowed after failures: during the wait a
    /// token is refused without being looked at.
    pub fn check_from(&self, ip: IpAddr, token: &str, now: i64) -> Result<String, String> {
        if let Err(wait) = self.backoff.check(ip) {
            return Err(crate::service::backoff::wait_message("login", wait));
        }
        match self.check_inner(token, now) {
            Ok(user) => {
                self.backoff.succeeded(ip);
                Ok(user)
            }
            Err(Refusal::Guess(why)) => {
                let wait = self.backoff.failed(ip);
                Err(format!(
                    "{why} (next try from this address in {:.1} s)",
                    wait.as_secs_f64()
                ))
            }
            // A token that does not decrypt (another padding: our client's `--rsa-padding
            // auto` then retries at once with PKCS#1 v1.5), is too old or is a replay was never
            // compared with the users file: it guessed nothing, so it costs no wait.
            Err(Refusal::Other(why)) => Err(why),
        }
    }

    /// Checks an `authtoken` at time `now` (Unix seconds); the user name on success. The users
    /// file is read on every check, so edits apply without a restart (as iperf3 does).
    pub fn check(&self, token: &str, now: i64) -> Result<String, String> {
        self.check_inner(token, now).map_err(|r| match r {
            Refusal::Guess(m) | Refusal::Other(m) => m,
        })
    }

    fn check_inner(&self, token: &str, now: i64) -> Result<String, Refusal> {
        let creds = self.decrypt(token).map_err(Refusal::Other)?;
        if (now - creds.ts).unsigned_abs() > self.skew {
            return Err(Refusal::Other(format!(
                "user {}: token time {} is {} s away from the server's clock (threshold {} s)",
                creds.user,
                creds.ts,
                now - creds.ts,
                self.skew
            )));
        }
        let users = read(&self.users, "authorized users file").map_err(Refusal::Other)?;
        if users_file_accepts(&users, &creds.user, &creds.password) {
            self.first_use(token, creds.ts, now)
                .map_err(Refusal::Other)?;
            Ok(creds.user)
        } else {
            Err(Refusal::Guess(format!(
                "user {}: unknown user or wrong password",
                creds.user
            )))
        }
    }

    /// Records an accepted token; a token seen before within its window is a replay.
    fn first_use(&self, token: &str, ts: i64, now: i64) -> Result<(), String> {
        let ct = Base64::decode_vec(token.trim()).map_err(|_| "authtoken is not base64")?;
        let key: [u8; 32] = Sha256::digest(&ct).into();
        let mut used = self
            .used
            .lock()
            .map_err(|_| "replay cache poisoned".to_string())?;
        used.retain(|_, until| *until >= now);
        if used.contains_key(&key) {
            return Err(
                "authtoken already used: a replay (every iperf3 test sends a fresh token)".into(),
            );
        }
        if used.len() >= MAX_REMEMBERED {
            return Err(
                "too many logins within the time-skew window: retry in a few seconds".into(),
            );
        }
        let skew = i64::try_from(self.skew).unwrap_or(i64::MAX);
        used.insert(key, ts.saturating_add(skew).saturating_add(1));
        Ok(())
    }

    /// The credentials in `token`: the first accepted padding whose plaintext parses as
    /// iperf3's format (OAEP first: a v1.5 block passes OAEP's checks with probability ~2^-160,
    /// while garbage passes v1.5's about once in a few hundred).
    fn decrypt(&self, token: &str) -> Result<Credentials, String> {
        let ct = Base64::decode_vec(token.trim()).map_err(|_| "authtoken is not base64")?;
        let paddings: &[Padding] = match self.padding {
            ServerPadding::Auto => &[Padding::Oaep, Padding::Pkcs1],
            ServerPadding::Only(Padding::Oaep) => &[Padding::Oaep],
            ServerPadding::Only(Padding::Pkcs1) => &[Padding::Pkcs1],
        };
        let mut unparsed = None;
        for &padding in paddings {
            let plain = match padding {
                Padding::Pkcs1 => self.key.decrypt(Pkcs1v15Encrypt, &ct),
                Padding::Oaep => self.key.decrypt(Oaep::new::<sha1::Sha1>(), &ct),
            };
            let Ok(plain) = plain else { continue };
            match Credentials::parse(&String::from_utf8_lossy(&plain)) {
                Ok(creds) => return Ok(creds),
                Err(e) => unparsed = Some(e),
            }
        }
        let tried = paddings
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(" or ");
        Err(match unparsed {
            Some(e) => format!("{e} (decrypted with {tried})"),
            None => format!(
                "authtoken does not decrypt with the server's key ({tried}): the client has \
                 another public key, or uses a padding this server does not accept"
            ),
        })
    }
}

/// Why a token was refused: a guess (the users file said no: it costs its address a wait), or
/// anything else.
enum Refusal {
    Guess(String),
    Other(String),
}

/// What the token carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    pub user: String,
    pub password: String,
    pub ts: i64,
}

impl Credentials {
    /// iperf3's `auth_text_format`: `"user: %s\npwd:  %s\nts:   %ld"`.
    pub fn text(&self) -> String {
        format!(
            "user: {}\npwd:  {}\nts:   {}",
            self.user, self.password, self.ts
        )
    }

    /// Parses like iperf3's `sscanf` with that format (`%s` stops at whitespace).
    pub fn parse(text: &str) -> Result<Credentials, String> {
        let bad = || "authtoken plaintext is not iperf3's user/pwd/ts format".to_string();
        let word = |rest: &str, prefix: &str| -> Option<String> {
            let r = rest.trim_start().strip_prefix(prefix)?;
            let w: String = r
                .trim_start()
                .chars()
                .take_while(|c| !c.is_whitespace())
                .collect();
            (!w.is_empty()).then_some(w)
        };
        let mut lines = text.splitn(3, '\n');
        let user = lines
            .next()
            .and_then(|l| word(l, "user:"))
            .ok_or_else(bad)?;
        let password = lines.next().and_then(|l| word(l, "pwd:")).ok_or_else(bad)?;
        let ts = lines
            .next()
            .and_then(|l| word(l, "ts:"))
            .and_then(|t| t.parse().ok())
            .ok_or_else(bad)?;
        Ok(Credentials { user, password, ts })
    }
}

/// `sha256("{user}password")` in lower-case hex: the second column of the users file.
pub fn password_hash(user: &str, password: &str) -> String {
    let d = Sha256::digest(format!("{{{user}}}{password}").as_bytes());
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// iperf3's check_authentication over the file's text: lines `user,hash`; empty lines, lines
/// without a comma and lines starting with `#` are skipped.
pub fn users_file_accepts(text: &str, user: &str, password: &str) -> bool {
    let want = password_hash(user, password);
    text.lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let mut f = l.split(',').filter(|f| !f.is_empty());
            Some((f.next()?, f.next()?))
        })
        .any(|(u, h)| u == user && crate::service::same_token(&want, h))
}

/// The client's half: the `authtoken` for `user`/`password` at time `ts`, encrypted with the
/// server's public key (SPKI `PUBLIC KEY` or PKCS#1 `RSA PUBLIC KEY` PEM).
pub fn client_token(
    public_key_pem: &str,
    creds: &Credentials,
    padding: Padding,
) -> Result<String, String> {
    client_token_with_rng(public_key_pem, creds, padding, &mut rsa::rand_core::OsRng)
}

/// [`client_token`] with the padding's randomness from `rng` (tests use a seeded one, so a run
/// that fails can be repeated token for token).
pub fn client_token_with_rng<R: rsa::rand_core::CryptoRngCore>(
    public_key_pem: &str,
    creds: &Credentials,
    padding: Padding,
    rng: &mut R,
) -> Result<String, String> {
    let key = RsaPublicKey::from_public_key_pem(public_key_pem)
        .or_else(|_| RsaPublicKey::from_pkcs1_pem(public_key_pem))
        .map_err(|e| format!("--rsa-public-key-path: not an RSA public key in PEM ({e})"))?;
    let text = creds.text();
    let ct = match padding {
        Padding::Pkcs1 => key.encrypt(rng, Pkcs1v15Encrypt, text.as_bytes()),
        Padding::Oaep => key.encrypt(rng, Oaep::new::<sha1::Sha1>(), text.as_bytes()),
    }
    .map_err(|e| {
        format!("cannot encrypt the credentials: {e} (user name or password too long?)")
    })?;
    Ok(Base64::encode_string(&ct))
}

/// Unix seconds now (iperf3 uses `mktime(localtime(time()))`, which is the same number).
pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_matches_iperf3_docs() {
        // iperf3's README: S_USER=mario S_PASSWD=rossi; echo -n "{$S_USER}$S_PASSWD" | sha256sum
        assert_eq!(
            password_hash("mario", "rossi"),
            "bf7a49a846d44b454a5d11e7acfaf13d138bbe0b7483aa3e050879700572709b"
        );
    }

    #[test]
    fn users_file_format() {
        let h = password_hash("mario", "rossi");
        let file = format!("# comment\n\nnocomma\r\nluigi,{h}\r\nmario,{h}\n");
        assert!(users_file_accepts(&file, "mario", "rossi"));
        assert!(!users_file_accepts(&file, "mario", "verdi"));
        assert!(!users_file_accepts(&file, "peach", "rossi"));
        assert!(!users_file_accepts(
            &format!("#mario,{h}\n"),
            "mario",
            "rossi"
        ));
    }

    #[test]
    fn credentials_text_roundtrip() {
        let c = Credentials {
            user: "mario".into(),
            password: "rossi".into(),
            ts: 1_700_000_000,
        };
        assert_eq!(c.text(), "user: mario\npwd:  rossi\nts:   1700000000");
        assert_eq!(Credentials::parse(&c.text()), Ok(c));
        assert!(Credentials::parse("user: a\npwd:  b\nts:   x").is_err());
        assert!(Credentials::parse("garbage").is_err());
    }

    const TEST_KEY: &str = include_str!("../../tests/fixtures/auth/test-private.pem");
    const TEST_PUB: &str = include_str!("../../tests/fixtures/auth/test-public.pem");

    /// A server with the test key and its own users file (one per call: tests run in parallel).
    fn test_auth(padding: ServerPadding) -> (ServerAuth, std::path::PathBuf) {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let users =
            std::env::temp_dir().join(format!("rb-auth-unit-{}-{n}.csv", std::process::id()));
        std::fs::write(
            &users,
            format!("mario,{}\n", password_hash("mario", "rossi")),
        )
        .unwrap();
        let auth = ServerAuth {
            key: RsaPrivateKey::from_pkcs8_pem(TEST_KEY).unwrap(),
            users: users.clone(),
            skew: DEFAULT_SKEW,
            padding,
            used: Arc::new(Mutex::new(HashMap::new())),
            backoff: Arc::new(crate::service::backoff::Backoff::new(
                std::time::Duration::from_millis(200),
                std::time::Duration::from_secs(1),
            )),
        };
        (auth, users)
    }

    fn mario(ts: i64) -> Credentials {
        Credentials {
            user: "mario".into(),
            password: "rossi".into(),
            ts,
        }
    }

    /// Many tokens of each padding, from a seeded RNG, are all accepted.
    #[test]
    fn every_token_of_either_padding_is_accepted() {
        use rand_chacha::rand_core::SeedableRng;
        let n = if cfg!(debug_assertions) { 100 } else { 1000 };
        let (auth, users) = test_auth(ServerPadding::Auto);
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0x2025_1201);
        let now = 1_764_600_000;
        for padding in [Padding::Oaep, Padding::Pkcs1] {
            for i in 0..n {
                let creds = mario(now + (i % 7) as i64);
                let token = client_token_with_rng(TEST_PUB, &creds, padding, &mut rng).unwrap();
                assert_eq!(
                    auth.check(&token, now),
                    Ok("mario".to_string()),
                    "{padding:?} token {i}"
                );
            }
        }
        let _ = std::fs::remove_file(users);
    }

    /// The OAEP tokens that PKCS#1 v1.5 also "decrypts" (to garbage) are accepted: these are
    /// what the old decrypt-v1.5-first code refused (~1 OAEP login in 500). They are searched
    /// for with a seeded RNG, a bounded number of tries, and the test insists on finding some.
    #[test]
    fn oaep_tokens_that_v15_also_decodes_are_accepted() {
        use rand_chacha::rand_core::SeedableRng;
        let (auth, users) = test_auth(ServerPadding::Auto);
        let key = RsaPrivateKey::from_pkcs8_pem(TEST_KEY).unwrap();
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(25);
        let now = 1_764_600_000;
        let mut found = 0;
        for _ in 0..6000 {
            let token =
                client_token_with_rng(TEST_PUB, &mario(now), Padding::Oaep, &mut rng).unwrap();
            let ct = Base64::decode_vec(&token).unwrap();
            if key.decrypt(Pkcs1v15Encrypt, &ct).is_err() {
                continue;
            }
            found += 1;
            assert_eq!(auth.check(&token, now), Ok("mario".to_string()));
            if found == 3 {
                break;
            }
        }
        assert_eq!(found, 3, "too few v1.5-decodable OAEP tokens in 6000 tries");
        let _ = std::fs::remove_file(users);
    }

    /// A server that insists on one padding refuses the other, with the reason.
    #[test]
    fn a_server_can_insist_on_one_padding() {
        use rand_chacha::rand_core::SeedableRng;
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
        let now = 1_764_600_000;
        let creds = mario(now);
        for (only, other) in [
            (Padding::Oaep, Padding::Pkcs1),
            (Padding::Pkcs1, Padding::Oaep),
        ] {
            let (auth, users) = test_auth(ServerPadding::Only(only));
            for _ in 0..20 {
                let good = client_token_with_rng(TEST_PUB, &creds, only, &mut rng).unwrap();
                assert_eq!(auth.check(&good, now), Ok("mario".to_string()));
                let bad = client_token_with_rng(TEST_PUB, &creds, other, &mut rng).unwrap();
                let err = auth.check(&bad, now).unwrap_err();
                assert!(
                    err.contains(only.name()) && !err.contains(other.name()),
                    "{only:?} only, {other:?} token: {err}"
                );
            }
            let _ = std::fs::remove_file(users);
        }
        assert_eq!("auto".parse(), Ok(ServerPadding::Auto));
        assert_eq!("oaep".parse(), Ok(ServerPadding::Only(Padding::Oaep)));
        assert_eq!("pkcs1".parse(), Ok(ServerPadding::Only(Padding::Pkcs1)));
        assert!("rsa".parse::<ServerPadding>().unwrap_err().contains("oaep"));
    }

    /// Our client's `--rsa-padding auto` tries OAEP, then at once PKCS#1 v1.5: against a
    /// server that takes v1.5 only, the refused OAEP token guessed nothing and costs no wait.
    #[test]
    fn a_token_of_another_padding_costs_no_wait() {
        use rand_chacha::rand_core::SeedableRng;
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(25);
        let now = 1_764_600_000;
        let ip: IpAddr = "10.0.0.3".parse().unwrap();
        let (auth, users) = test_auth(ServerPadding::Only(Padding::Pkcs1));
        let oaep = client_token_with_rng(TEST_PUB, &mario(now), Padding::Oaep, &mut rng).unwrap();
        let e = auth.check_from(ip, &oaep, now).unwrap_err();
        assert!(
            e.contains("does not decrypt") && !e.contains("next try"),
            "{e}"
        );
        let v15 = client_token_with_rng(TEST_PUB, &mario(now), Padding::Pkcs1, &mut rng).unwrap();
        assert_eq!(auth.check_from(ip, &v15, now), Ok("mario".to_string()));
        let _ = std::fs::remove_file(users);
    }

    /// Garbage of the right length decrypts under neither padding or parses under neither.
    #[test]
    fn a_foreign_token_is_refused_with_a_reason() {
        let (auth, users) = test_auth(ServerPadding::Auto);
        let err = auth
            .check(&Base64::encode_string(&[0x5a; 256]), 0)
            .unwrap_err();
        assert!(err.contains("OAEP or PKCS#1 v1.5"), "{err}");
        assert!(auth.check("not base64!", 0).unwrap_err().contains("base64"));
        let _ = std::fs::remove_file(users);
    }

    /// A token is accepted once: the same ciphertext again within its window is a replay,
    /// refused from any address; a fresh token of the same user and second is accepted.
    #[test]
    fn a_replayed_token_is_refused_and_failures_slow_their_address() {
        use rand_chacha::rand_core::SeedableRng;
        let (auth, users) = test_auth(ServerPadding::Auto);
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(20);
        let now = 1_764_600_000;
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let token = client_token_with_rng(TEST_PUB, &mario(now), Padding::Pkcs1, &mut rng).unwrap();
        assert_eq!(auth.check_from(a, &token, now), Ok("mario".to_string()));
        let e = auth.check_from(b, &token, now + 2).unwrap_err();
        assert!(e.contains("replay"), "{e}");
        let fresh = client_token_with_rng(TEST_PUB, &mario(now), Padding::Oaep, &mut rng).unwrap();
        assert_eq!(auth.check(&fresh, now), Ok("mario".to_string()));
        // Past its window the token is too old anyway, and the cache forgets it.
        let e = auth.check(&token, now + 30).unwrap_err();
        assert!(e.contains("away from the server's clock"), "{e}");
        let later =
            client_token_with_rng(TEST_PUB, &mario(now + 30), Padding::Oaep, &mut rng).unwrap();
        assert_eq!(auth.check(&later, now + 30), Ok("mario".to_string()));
        assert_eq!(
            auth.used.lock().unwrap().len(),
            1,
            "expired entries are forgotten"
        );
        // A wrong password: the address waits before its next try, even with a good token.
        let wrong = Credentials {
            password: "verdi".into(),
            ..mario(now)
        };
        let bad = client_token_with_rng(TEST_PUB, &wrong, Padding::Oaep, &mut rng).unwrap();
        let e = auth.check_from(b, &bad, now).unwrap_err();
        assert!(
            e.contains("wrong password") && e.contains("next try"),
            "{e}"
        );
        let good = client_token_with_rng(TEST_PUB, &mario(now), Padding::Oaep, &mut rng).unwrap();
        let e = auth.check_from(b, &good, now).unwrap_err();
        assert!(e.contains("too many wrong logins"), "{e}");
        std::thread::sleep(std::time::Duration::from_millis(250));
        assert_eq!(auth.check_from(b, &good, now), Ok("mario".to_string()));
        let _ = std::fs::remove_file(users);
    }
}
