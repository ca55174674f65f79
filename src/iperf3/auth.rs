//! iperf3's RSA authorised-users scheme, wire-compatible with iperf3 3.12 (iperf_auth.c): the
//! client encrypts `"user: U\npwd:  P\nts:   T"` with the server's RSA public key (PKCS#1 v1.5
//! padding in 3.12; OAEP-SHA1 from 3.17 on), base64 without newlines, as the `authtoken`
//! parameter. The server decrypts it, checks that `T` is within the skew threshold (10 s) of its
//! clock, and looks for the line `U,sha256hex("{U}P")` in the authorised-users file.

use base64ct::{Base64, Encoding};
use rsa::pkcs1::{DecodeRsaPrivateKey, DecodeRsaPublicKey};
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey};
use rsa::{Oaep, Pkcs1v15Encrypt, RsaPrivateKey, RsaPublicKey};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

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

/// The server's half: private key, users file, skew threshold.
#[derive(Debug, Clone)]
pub struct ServerAuth {
    key: RsaPrivateKey,
    users: PathBuf,
    pub skew: u64,
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
        })
    }

    /// Checks an `authtoken` at time `now` (Unix seconds); the user name on success. The users
    /// file is read on every check, so edits apply without a restart (as iperf3 does).
    pub fn check(&self, token: &str, now: i64) -> Result<String, String> {
        let creds = self.decrypt(token)?;
        if (now - creds.ts).unsigned_abs() > self.skew {
            return Err(format!(
                "user {}: token time {} is {} s away from the server's clock (threshold {} s)",
                creds.user,
                creds.ts,
                now - creds.ts,
                self.skew
            ));
        }
        let users = read(&self.users, "authorized users file")?;
        if users_file_accepts(&users, &creds.user, &creds.password) {
            Ok(creds.user)
        } else {
            Err(format!(
                "user {}: unknown user or wrong password",
                creds.user
            ))
        }
    }

    fn decrypt(&self, token: &str) -> Result<Credentials, String> {
        let ct = Base64::decode_vec(token.trim()).map_err(|_| "authtoken is not base64")?;
        let plain = self
            .key
            .decrypt(Pkcs1v15Encrypt, &ct)
            .or_else(|_| self.key.decrypt(Oaep::new::<sha1::Sha1>(), &ct))
            .map_err(|_| "authtoken does not decrypt with the server's key")?;
        Credentials::parse(&String::from_utf8_lossy(&plain))
    }
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
        .any(|(u, h)| u == user && h == want)
}

/// The client's half: the `authtoken` for `user`/`password` at time `ts`, encrypted with the
/// server's public key (SPKI `PUBLIC KEY` or PKCS#1 `RSA PUBLIC KEY` PEM).
pub fn client_token(
    public_key_pem: &str,
    creds: &Credentials,
    padding: Padding,
) -> Result<String, String> {
    let key = RsaPublicKey::from_public_key_pem(public_key_pem)
        .or_else(|_| RsaPublicKey::from_pkcs1_pem(public_key_pem))
        .map_err(|e| format!("--rsa-public-key-path: not an RSA public key in PEM ({e})"))?;
    let mut rng = rsa::rand_core::OsRng;
    let text = creds.text();
    let ct = match padding {
        Padding::Pkcs1 => key.encrypt(&mut rng, Pkcs1v15Encrypt, text.as_bytes()),
        Padding::Oaep => key.encrypt(&mut rng, Oaep::new::<sha1::Sha1>(), text.as_bytes()),
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
}
