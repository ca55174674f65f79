//! Which `openssl speed` commands a suite needs (docs/crypto.md, "The openssl program"): the
//! wiki's algorithm names, `-seconds` (whole seconds only), `-bytes` for a row-only run, the
//! legacy provider for single DES on 3.x, `-multi N`, `-elapsed`, and one `-evp NAME -bytes 1456`
//! command per WireGuard AEAD (`openssl speed` takes one `-evp` per run). Each command carries an
//! upper bound of how long it runs, from which its deadline is derived.

use crate::crypto::{SizePlan, SuiteConfig};
use crate::results::crypto::{Algorithm, AlgorithmKind, WIREGUARD_BLOCK};

/// What `openssl version` said, reduced to what the plan depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    /// `OpenSSL 3.0.22`, `OpenSSL 1.1.1w`, `LibreSSL 3.8.2`: the Engine cell's first part.
    pub short: String,
    /// (major, minor) of OpenSSL; `None` for LibreSSL or a version that does not parse.
    pub openssl: Option<(u32, u32)>,
}

impl Version {
    /// Parses the first line of `openssl version` (`OpenSSL 3.0.22 25 Aug 2026 (Library: …)`).
    /// `None` when it is not OpenSSL's or LibreSSL's.
    pub fn parse(line: &str) -> Option<Version> {
        let mut words = line.split_whitespace();
        let vendor = words.next()?;
        let number = words.next()?;
        if !matches!(vendor, "OpenSSL" | "LibreSSL")
            || !number.starts_with(|c: char| c.is_ascii_digit())
        {
            return None;
        }
        let mut parts = number.split('.');
        let major = parts.next().and_then(|p| p.parse().ok());
        let minor = parts
            .next()
            .map(|p| p.trim_end_matches(|c: char| c.is_ascii_alphabetic()))
            .and_then(|p| p.parse().ok());
        let openssl = match (vendor, major, minor) {
            ("OpenSSL", Some(a), Some(b)) => Some((a, b)),
            _ => None,
        };
        Some(Version {
            short: format!("{vendor} {number}"),
            openssl,
        })
    }

    /// `-seconds` and `-bytes` exist from OpenSSL 1.1.0 on (1.0.2 and LibreSSL have neither).
    pub fn has_seconds_and_bytes(&self) -> bool {
        self.openssl.is_some_and(|v| v >= (1, 1))
    }

    /// OpenSSL 3.x keeps single DES in the legacy provider.
    pub fn has_providers(&self) -> bool {
        self.openssl.is_some_and(|v| v.0 >= 3)
    }

    /// From 3.2 `rsa2048` also times encrypt and decrypt, and from 3.5 a KEM table (keygen,
    /// encaps, decaps): an upper bound of its tests for the deadline.
    fn rsa_tests(&self) -> u32 {
        match self.openssl {
            Some(v) if v >= (3, 2) => 7,
            _ => 2,
        }
    }
}

/// One `openssl speed` command.
#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    /// The arguments after the program name, starting with `speed`.
    pub args: Vec<String>,
    /// What this command measures (the rest of its output is ignored).
    pub algorithms: Vec<Algorithm>,
    /// The block sizes its bulk rows must have (`None`: all of openssl's own sizes).
    pub sizes: Option<Vec<u32>>,
    /// True for the `-evp` AEAD commands: a failure there costs only those columns.
    pub optional: bool,
    /// Tests (`Doing …` lines) it runs, for progress.
    pub tests: u32,
    /// Seconds it runs for at most, before start-up (openssl's own timers, in wall time).
    pub expected_secs: f64,
}

impl Command {
    /// `openssl speed -seconds 1 …` for messages.
    pub fn display(&self) -> String {
        format!("openssl {}", self.args.join(" "))
    }
}

/// The commands and the notes a reader needs (rounded seconds, an unsupported option).
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub commands: Vec<Command>,
    pub notes: Vec<String>,
}

/// openssl speed's own defaults (`SECONDS`, `PKEY_SECONDS` in apps/speed.c).
const OPENSSL_SECONDS: (f64, f64) = (3.0, 10.0);
/// openssl's sizes when no `-bytes` is given: 5 in 1.0.2, 6 later.
const OPENSSL_SIZES: u32 = 6;

/// Builds the commands for `cfg`'s `algorithms`; `legacy`: the legacy provider loads (3.x).
pub fn plan(version: &Version, cfg: &SuiteConfig, algorithms: &[Algorithm], legacy: bool) -> Plan {
    let mut notes = Vec::new();
    let bytes_ok = version.has_seconds_and_bytes();
    let secs_of = |s: f64, notes: &mut Vec<String>| -> Option<u32> {
        if !bytes_ok {
            return None;
        }
        let whole = s.ceil().max(1.0) as u32;
        if (whole as f64 - s).abs() > 1e-9 {
            notes.push(format!(
                "openssl speed takes whole seconds: it ran {whole} s per test where {s} s was asked"
            ));
        }
        Some(whole)
    };
    if !bytes_ok {
        notes.push(format!(
            "{} has no -seconds/-bytes: its own 3 s per size and 10 s per RSA/DSA run, all sizes",
            version.short
        ));
    }
    let default_secs = (cfg.seconds_bulk, cfg.seconds_pkey) == OPENSSL_SECONDS;
    let (bulk_secs, pkey_secs) = if default_secs {
        (None, None)
    } else {
        (
            secs_of(cfg.seconds_bulk, &mut notes),
            secs_of(cfg.seconds_pkey, &mut notes),
        )
    };
    notes.dedup();
    let run_secs = |s: Option<u32>, default: f64| s.map_or(default, f64::from);
    let b_secs = run_secs(bulk_secs, OPENSSL_SECONDS.0);
    let p_secs = run_secs(pkey_secs, OPENSSL_SECONDS.1);
    let common = |secs: Option<u32>| {
        let mut a = vec!["speed".to_string()];
        if let Some(s) = secs {
            a.extend(["-seconds".into(), s.to_string()]);
        }
        if cfg.threads > 1 {
            a.extend(["-multi".into(), cfg.threads.to_string()]);
        }
        if cfg.elapsed {
            a.push("-elapsed".into());
        }
        a
    };
    let of_kind = |k: AlgorithmKind| -> Vec<Algorithm> {
        algorithms
            .iter()
            .copied()
            .filter(|a| a.kind() == k)
            .collect()
    };
    let (hashes, ciphers, pkeys, aeads) = (
        of_kind(AlgorithmKind::Hash),
        of_kind(AlgorithmKind::Cipher),
        of_kind(AlgorithmKind::PublicKey),
        of_kind(AlgorithmKind::Aead),
    );
    let des = ciphers.contains(&Algorithm::DesCbc);
    if des && version.has_providers() && !legacy {
        notes.push(
            "single DES reads 0: OpenSSL 3's legacy provider is not installed (OpenWrt: \
             libopenssl-legacy)"
                .into(),
        );
    }
    let providers = |args: &mut Vec<String>, algs: &[Algorithm]| {
        if legacy && version.has_providers() && algs.contains(&Algorithm::DesCbc) {
            args.extend(["-provider", "legacy", "-provider", "default"].map(String::from));
        }
    };
    let names = |algs: &[Algorithm]| -> Vec<String> {
        algs.iter()
            .map(|a| match a {
                // openssl's own `des` means both; name each so a list of one stays one.
                Algorithm::DesCbc => "des-cbc".to_string(),
                other => other.cli_name().to_string(),
            })
            .collect()
    };
    let pkey_tests: u32 = pkeys
        .iter()
        .map(|a| match a {
            Algorithm::Rsa2048 => version.rsa_tests(),
            _ => 2,
        })
        .sum();
    let mut commands = Vec::new();
    // Groups of (algorithms, -bytes) in the table's order.
    let groups: Vec<(Vec<Algorithm>, Option<u32>)> = match cfg.sizes {
        SizePlan::RowOnly { cipher_block } if bytes_ok => vec![
            (hashes.clone(), Some(crate::results::crypto::ROW_HASH_BLOCK)),
            (ciphers.clone(), Some(cipher_block)),
        ],
        _ => vec![([hashes.clone(), ciphers.clone()].concat(), None)],
    };
    if matches!(cfg.sizes, SizePlan::RowOnly { .. }) && !bytes_ok {
        notes.push("without -bytes every block size was measured".into());
    }
    // RSA/DSA join the first bulk command when both use the same -seconds (always the case
    // from the command line), else they get their own.
    let pkey_joins = bulk_secs == pkey_secs;
    let mut pkeys_placed = pkeys.is_empty();
    for (algs, bytes) in groups {
        if algs.is_empty() {
            continue;
        }
        let mut args = common(bulk_secs);
        providers(&mut args, &algs);
        if let Some(b) = bytes {
            args.extend(["-bytes".into(), b.to_string()]);
        }
        let mut all = algs.clone();
        let sizes = bytes.map_or(OPENSSL_SIZES, |_| 1);
        let mut tests = algs.len() as u32 * sizes;
        let mut expected = f64::from(tests) * b_secs;
        if pkey_joins && !pkeys_placed {
            all.extend(&pkeys);
            tests += pkey_tests;
            expected += f64::from(pkey_tests) * p_secs;
            pkeys_placed = true;
        }
        args.extend(names(&all));
        commands.push(Command {
            args,
            algorithms: all,
            sizes: bytes.map(|b| vec![b]),
            optional: false,
            tests,
            expected_secs: expected,
        });
    }
    if !pkeys_placed {
        let mut args = common(pkey_secs);
        args.extend(names(&pkeys));
        commands.push(Command {
            args,
            algorithms: pkeys.clone(),
            sizes: None,
            optional: false,
            tests: pkey_tests,
            expected_secs: f64::from(pkey_tests) * p_secs,
        });
    }
    if !aeads.is_empty() && !bytes_ok {
        notes.push(format!(
            "{} cannot time one {WIREGUARD_BLOCK}-byte block (no -bytes): the AEAD columns are \
             missing",
            version.short
        ));
    }
    for &a in aeads.iter().filter(|_| bytes_ok) {
        let mut args = common(bulk_secs);
        args.extend(["-bytes".into(), WIREGUARD_BLOCK.to_string()]);
        args.extend(["-evp".into(), a.cli_name().to_string()]);
        commands.push(Command {
            args,
            algorithms: vec![a],
            sizes: Some(vec![WIREGUARD_BLOCK]),
            optional: true,
            tests: 1,
            expected_secs: b_secs,
        });
    }
    Plan { commands, notes }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn versions() {
        let a = v("OpenSSL 3.0.22 25 Aug 2026 (Library: OpenSSL 3.0.22 25 Aug 2026)");
        assert_eq!(a.short, "OpenSSL 3.0.22");
        assert_eq!(a.openssl, Some((3, 0)));
        assert!(a.has_providers() && a.has_seconds_and_bytes());
        let b = v("OpenSSL 1.1.1w  11 Sep 2023");
        assert_eq!(b.openssl, Some((1, 1)));
        assert!(!b.has_providers() && b.has_seconds_and_bytes());
        let c = v("OpenSSL 1.0.2u  20 Dec 2019");
        assert!(!c.has_seconds_and_bytes());
        let d = v("LibreSSL 3.8.2");
        assert_eq!(d.openssl, None);
        assert_eq!(v("OpenSSL 3.5.6 1 Jul 2025").rsa_tests(), 7);
        for bad in ["", "OpenSSL", "hello world", "OpenSSL x.y", "openssl 3.0.1"] {
            assert_eq!(Version::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_wiki_command_with_default_seconds() {
        let cfg = SuiteConfig::default();
        let p = plan(&v("OpenSSL 3.0.22"), &cfg, &Algorithm::EVERY, true);
        let main = &p.commands[0];
        assert_eq!(
            main.display(),
            "openssl speed -provider legacy -provider default md5 sha1 sha256 sha512 des-cbc \
             des-ede3 aes-128-cbc aes-192-cbc aes-256-cbc rsa2048 dsa2048"
        );
        assert_eq!(main.tests, 9 * 6 + 4);
        assert_eq!(main.expected_secs, 9.0 * 6.0 * 3.0 + 40.0);
        assert_eq!(
            p.commands[1].display(),
            "openssl speed -bytes 1456 -evp chacha20-poly1305"
        );
        assert!(p.commands[2].optional);
        assert_eq!(p.commands.len(), 3);
        assert!(p.notes.is_empty(), "{:?}", p.notes);
    }

    #[test]
    fn row_only_multi_and_fractional_seconds() {
        let mut cfg = SuiteConfig::row_only(crate::crypto::engine::EngineKind::Auto, 0.2);
        cfg.threads = 2;
        let p = plan(&v("OpenSSL 1.1.1w"), &cfg, &Algorithm::EVERY, false);
        let shown: Vec<String> = p.commands.iter().map(Command::display).collect();
        assert_eq!(
            shown[0],
            "openssl speed -seconds 1 -multi 2 -bytes 1024 md5 sha1 sha256 sha512 rsa2048 dsa2048"
        );
        assert_eq!(
            shown[1],
            "openssl speed -seconds 1 -multi 2 -bytes 8192 des-cbc des-ede3 aes-128-cbc \
             aes-192-cbc aes-256-cbc"
        );
        assert_eq!(p.commands[1].sizes, Some(vec![8192]));
        assert_eq!(shown.len(), 4);
        assert!(p.notes[0].contains("whole seconds"), "{:?}", p.notes);
    }

    #[test]
    fn old_openssl_gets_no_seconds_or_bytes_and_no_aead() {
        let cfg = SuiteConfig::row_only(crate::crypto::engine::EngineKind::Auto, 1.0);
        let p = plan(&v("OpenSSL 1.0.2u"), &cfg, &Algorithm::EVERY, false);
        assert_eq!(p.commands.len(), 1);
        assert!(!p.commands[0].args.iter().any(|a| a.starts_with("-")));
        assert!(p.notes.iter().any(|n| n.contains("AEAD")), "{:?}", p.notes);
        assert_eq!(p.commands[0].expected_secs, 9.0 * 6.0 * 3.0 + 40.0);
    }

    #[test]
    fn des_without_legacy_is_noted_and_pkeys_alone() {
        let cfg = SuiteConfig {
            seconds_bulk: 2.0,
            seconds_pkey: 5.0,
            ..SuiteConfig::default()
        };
        let p = plan(
            &v("OpenSSL 3.0.22"),
            &cfg,
            &[Algorithm::DesCbc, Algorithm::Rsa2048],
            false,
        );
        assert_eq!(p.commands[0].display(), "openssl speed -seconds 2 des-cbc");
        assert_eq!(p.commands[1].display(), "openssl speed -seconds 5 rsa2048");
        assert!(
            p.notes.iter().any(|n| n.contains("legacy")),
            "{:?}",
            p.notes
        );
    }
}
