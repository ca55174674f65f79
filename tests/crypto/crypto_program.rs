//! The openssl program as the crypto engine (`--engine openssl-speed`, and `--engine auto` where
//! libcrypto cannot be loaded: `ROUTERBENCH_LIBCRYPTO=none` stands in for a static build here).
//! Fake `openssl` scripts on PATH print the real captures of every OpenSSL version's format
//! (tests/fixtures/openssl/), or misbehave: missing, exit 1, hang, garbage, a truncated table, an
//! impostor whose output names another version. A good fake gives OpenSSL's row with the
//! fixture's numbers; every bad one gives a clear note and a RustCrypto row (auto) or an error
//! (openssl-speed), never a wrong row and never a hang. Last, the real `openssl`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/openssl");

/// A fake `openssl`: `version` prints `version.txt`; `list` exits with `list-rc` (default 1:
/// no legacy provider); `speed … -evp NAME` prints `evp-NAME.txt` or fails like an openssl that
/// lacks the cipher; `speed` runs `behave` (if any), prints a progress line on stderr and
/// `speed.txt`. Every call's arguments go to `calls.log`.
const FAKE: &str = r#"#!/bin/sh
PATH=/usr/bin:/bin
d=$(dirname "$0")
case "$1" in
version) cat "$d/version.txt"; exit 0 ;;
list) exit "$(cat "$d/list-rc" 2>/dev/null || echo 1)" ;;
speed) ;;
*) exit 2 ;;
esac
echo "$*" >> "$d/calls.log"
evp=""; prev=""
for a in "$@"; do [ "$prev" = "-evp" ] && evp=$a; prev=$a; done
if [ -n "$evp" ]; then
  [ -f "$d/evp-$evp.txt" ] || { echo "speed: $evp is an unknown cipher or digest" >&2; exit 1; }
  cat "$d/evp-$evp.txt"; exit 0
fi
[ -f "$d/behave" ] && . "$d/behave"
echo "Doing md5 for 1s on 16 size blocks: 100 md5's in 1.00s" >&2
cat "$d/speed.txt"
"#;

struct Fake {
    dir: PathBuf,
}

impl Fake {
    fn new(name: &str, version: &str, speed: &str) -> Fake {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("fake-openssl-{name}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("openssl");
        std::fs::write(&script, FAKE).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(dir.join("version.txt"), format!("{version}\n")).unwrap();
        std::fs::write(dir.join("speed.txt"), speed).unwrap();
        Fake { dir }
    }

    fn file(self, name: &str, text: &str) -> Fake {
        std::fs::write(self.dir.join(name), text).unwrap();
        self
    }

    fn calls(&self) -> String {
        std::fs::read_to_string(self.dir.join("calls.log")).unwrap_or_default()
    }

    /// `routerbench crypto ARGS` with only the fake on PATH and no libcrypto.
    fn run(&self, args: &[&str]) -> Output {
        run_with_path(&self.dir, args, &[])
    }
}

fn run_with_path(path: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_routerbench"));
    cmd.arg("crypto")
        .args(args)
        .env("PATH", path)
        .env("ROUTERBENCH_LIBCRYPTO", "none")
        .env_remove("ROUTERBENCH_OPENSSL");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run routerbench")
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}/{name}")).unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The JSON result's crypto part.
fn crypto_json(o: &Output) -> serde_json::Value {
    let (out, err) = text(o);
    let v: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    v["crypto"].clone()
}

fn rate(c: &serde_json::Value, alg: &str, size: u64) -> Option<f64> {
    let col = c["block_sizes"]
        .as_array()?
        .iter()
        .position(|s| s.as_u64() == Some(size))?;
    c["bulk"]
        .as_array()?
        .iter()
        .find(|b| b["algorithm"] == alg)?["bytes_per_sec"][col]
        .as_f64()
}

fn notes(c: &serde_json::Value) -> String {
    c["notes"]
        .as_array()
        .map(|n| {
            n.iter()
                .filter_map(|x| x.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// The rate in openssl-3.0.22-evp-chacha20-poly1305-1456.txt, in bytes/s.
const CHACHA_FIXTURE: f64 = 1_336_005_220.0;

const QUICK: &[&str] = &["--row-only", "--seconds", "1", "-q", "--json"];

#[test]
fn openssl_3_0_gives_the_wiki_row_and_the_wireguard_columns() {
    let fake = Fake::new(
        "3.0",
        "OpenSSL 3.0.22 25 Aug 2026 (Library: OpenSSL 3.0.22 25 Aug 2026)",
        &fixture("openssl-3.0.22-wiki-legacy.txt"),
    )
    .file("list-rc", "0")
    .file(
        "evp-chacha20-poly1305.txt",
        &fixture("openssl-3.0.22-evp-chacha20-poly1305-1456.txt"),
    )
    .file(
        "evp-aes-128-gcm.txt",
        &fixture("openssl-3.0.22-evp-aes-128-gcm-1456.txt"),
    );
    let o = fake.run(QUICK);
    assert!(o.status.success(), "{:?}", text(&o));
    let c = crypto_json(&o);
    assert_eq!(c["engine"]["version"], "OpenSSL 3.0.22 (openssl speed)");
    assert_eq!(c["engine"]["name"], "openssl-speed");
    assert_eq!(c["threads"], 1);
    assert_eq!(rate(&c, "md5", 1024), Some(471_752_210.0));
    assert_eq!(rate(&c, "des-cbc", 8192), Some(67_753_630.0));
    assert_eq!(rate(&c, "aes-256-cbc", 8192), Some(844_159_460.0));
    assert_eq!(rate(&c, "chacha20-poly1305", 1456), Some(CHACHA_FIXTURE));
    assert!(rate(&c, "aes-128-gcm", 1456).unwrap() > 1e9);
    assert_eq!(c["public_key"][0]["sign_per_sec"], 1314.0);
    let calls = fake.calls();
    assert!(
        calls.contains(
            "speed -seconds 1 -provider legacy -provider default -bytes 8192 des-cbc des-ede3"
        ),
        "{calls}"
    );
    assert!(calls.contains("-bytes 1456 -evp aes-128-gcm"), "{calls}");
    // The table output says what ran, and the row's Engine cell names OpenSSL.
    let o = fake.run(&["--row-only", "--seconds", "1", "-q", "--format", "openwrt"]);
    let (out, _) = text(&o);
    assert!(
        out.contains("| OpenSSL 3.0.22 (openssl speed) | 471752210 |"),
        "{out}"
    );
}

#[test]
fn every_version_format_is_read_and_checked_against_openssl_version() {
    for (name, version, file, md5_1k) in [
        (
            "1.1.1",
            "OpenSSL 1.1.1m  14 Dec 2021",
            "openssl-1.1.1m-aarch64.txt",
            743_024_330.0,
        ),
        (
            "1.0.2",
            "OpenSSL 1.0.2u  20 Dec 2019",
            "openssl-1.0.2u-mips.txt",
            51_849_560.0,
        ),
        (
            "3.5",
            "OpenSSL 3.5.6 1 Jul 2025",
            "openssl-3.5.6-rsa4.txt",
            422_395_900.0,
        ),
    ] {
        let fake = Fake::new(name, version, &fixture(file));
        let o = fake.run(&[
            "--seconds",
            "1",
            "-q",
            "--json",
            "--algorithms",
            "table,wireguard",
        ]);
        assert!(o.status.success(), "{name}: {:?}", text(&o));
        let c = crypto_json(&o);
        let short: String = version
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(
            c["engine"]["version"],
            format!("{short} (openssl speed)"),
            "{name}"
        );
        assert_eq!(rate(&c, "md5", 1024), Some(md5_1k), "{name}");
        let n = notes(&c);
        if name == "1.0.2" {
            // No -seconds/-bytes in 1.0.2: said so, and nothing passed that it would reject.
            assert!(n.contains("no -seconds/-bytes"), "{n}");
            assert!(!fake.calls().contains("-seconds"), "{}", fake.calls());
        } else {
            // The fakes know no AEAD: those columns read 0 with the reason.
            assert_eq!(rate(&c, "aes-128-gcm", 1456), Some(0.0), "{name}");
            assert!(n.contains("unknown cipher"), "{name}: {n}");
        }
        if name == "3.5" {
            // 3.2+'s RSA line: sign/verify from the rate half.
            assert_eq!(c["public_key"][0]["sign_per_sec"], 247.7);
        }
    }
}

#[test]
fn multi_passes_minus_multi_and_reads_the_summed_output() {
    let fake = Fake::new(
        "multi",
        "OpenSSL 3.0.19 27 Jan 2026",
        &fixture("openssl-3.0.19-multi2.txt"),
    );
    let o = fake.run(&[
        "--seconds",
        "1",
        "-q",
        "--json",
        "--multi",
        "2",
        "--algorithms",
        "md5,aes-128-cbc,rsa2048",
    ]);
    assert!(o.status.success(), "{:?}", text(&o));
    let c = crypto_json(&o);
    assert_eq!(c["threads"], 2);
    assert_eq!(c["time_base"], "elapsed");
    assert_eq!(rate(&c, "md5", 1024), Some(1_137_746_940.0));
    assert!(fake.calls().contains("-multi 2"), "{}", fake.calls());
    let o = fake.run(&[
        "--seconds",
        "1",
        "-q",
        "--format",
        "openwrt",
        "--multi",
        "2",
        "--algorithms",
        "md5",
    ]);
    let (out, _) = text(&o);
    assert!(
        out.contains("| OpenSSL 3.0.19 (openssl speed) -multi 2 |"),
        "{out}"
    );
    // A -multi 2 request answered by a single-process output is not taken.
    let single = Fake::new(
        "multi-wrong",
        "OpenSSL 3.0.19",
        &fixture("openssl-3.0.19-stdout.txt"),
    );
    let o = single.run(&[
        "--seconds",
        "1",
        "-q",
        "--json",
        "--multi",
        "2",
        "--algorithms",
        "md5",
    ]);
    let c = crypto_json(&o);
    assert!(
        c["engine"]["version"]
            .as_str()
            .unwrap()
            .starts_with("RustCrypto")
    );
    assert!(notes(&c).contains("-multi 2 was asked"), "{}", notes(&c));
}

/// Runs a bad fake with `auto` (must fall back to RustCrypto with a note naming `expect`) and
/// with `openssl-speed` (must fail with an error naming it).
fn assert_rejected(fake: &Fake, expect: &str, env: &[(&str, &str)]) {
    // 0.05 s per size keeps the RustCrypto fallback quick (the program plan rounds it to 1 s).
    let args = [
        "--seconds",
        "0.05",
        "-q",
        "--json",
        "--algorithms",
        "md5,sha1",
    ];
    let o = run_with_path(&fake.dir, &args, env);
    assert!(o.status.success(), "{expect}: {:?}", text(&o));
    let c = crypto_json(&o);
    assert_eq!(
        c["engine"]["version"], "RustCrypto (libcrypto disabled, openssl speed failed)",
        "{expect}"
    );
    let n = notes(&c);
    assert!(n.contains(expect), "{expect}: {n}");
    assert!(rate(&c, "md5", 1024).unwrap() > 0.0);
    let mut strict: Vec<&str> = args.to_vec();
    strict.extend(["--engine", "openssl-speed"]);
    let o = run_with_path(&fake.dir, &strict, env);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--engine openssl-speed") && err.contains(expect),
        "{err}"
    );
}

#[test]
fn a_failing_openssl_falls_back_with_its_error() {
    let fake = Fake::new("exit1", "OpenSSL 3.0.22", "").file(
        "behave",
        "echo 'speed: unable to load provider legacy' >&2; exit 1\n",
    );
    assert_rejected(&fake, "unable to load provider legacy", &[]);
}

#[test]
fn a_hung_openssl_is_killed_at_its_deadline() {
    let fake = Fake::new("hang", "OpenSSL 3.0.22", "").file("behave", "sleep 600\n");
    let t0 = std::time::Instant::now();
    assert_rejected(
        &fake,
        "did not finish within 2 s",
        &[("ROUTERBENCH_OPENSSL_TIMEOUT", "2")],
    );
    assert!(t0.elapsed().as_secs() < 60, "{:?}", t0.elapsed());
}

#[test]
fn garbage_truncated_and_impostor_output_give_no_row() {
    let passwd = "root:x:0:0:root:/root:/bin/ash\ndaemon:*:1:1:daemon:/var:/bin/false\n";
    assert_rejected(
        &Fake::new("garbage", "OpenSSL 3.0.22", passwd),
        "is not a line of `openssl speed` output",
        &[],
    );
    // Cut inside the table: the sha1 row is missing.
    let full = fixture("openssl-3.0.19-stdout.txt");
    let cut: String = full
        .lines()
        .take_while(|l| !l.starts_with("sha1"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_rejected(
        &Fake::new("truncated", "OpenSSL 3.0.19", &cut),
        "has no sha1 (truncated?)",
        &[],
    );
    // Cut inside a row.
    let mid = full.find("sha1").unwrap() + 30;
    assert_rejected(
        &Fake::new("cut-row", "OpenSSL 3.0.19", &full[..mid]),
        "instead of 6",
        &[],
    );
    // A canned table of another version.
    assert_rejected(
        &Fake::new("impostor", "OpenSSL 3.0.22", &full),
        "the output says OpenSSL 3.0.19",
        &[],
    );
    // `version` itself is wrong.
    assert_rejected(
        &Fake::new("not-openssl", "BusyBox v1.36.1 multi-call binary", &full),
        "not an OpenSSL version",
        &[],
    );
}

#[test]
fn no_openssl_program_says_so() {
    let empty = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("no-openssl-here");
    std::fs::create_dir_all(&empty).unwrap();
    let o = run_with_path(
        &empty,
        &["--seconds", "0.05", "-q", "--json", "--algorithms", "md5"],
        &[],
    );
    assert!(o.status.success(), "{:?}", text(&o));
    let c = crypto_json(&o);
    assert_eq!(c["engine"]["version"], "RustCrypto (libcrypto disabled)");
    assert!(
        notes(&c).contains("no `openssl` program on PATH"),
        "{}",
        notes(&c)
    );
    let o = run_with_path(
        &empty,
        &[
            "--seconds",
            "1",
            "-q",
            "--engine",
            "openssl-speed",
            "--algorithms",
            "md5",
        ],
        &[],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1));
    assert!(err.contains("opkg install openssl-util"), "{err}");
    // ROUTERBENCH_OPENSSL names one that is not there.
    let o = run_with_path(
        &empty,
        &[
            "--seconds",
            "1",
            "-q",
            "--engine",
            "openssl-speed",
            "--algorithms",
            "md5",
        ],
        &[("ROUTERBENCH_OPENSSL", "/nonexistent/openssl")],
    );
    let (_, err) = text(&o);
    assert!(
        err.contains("/nonexistent/openssl: no such executable"),
        "{err}"
    );
}

#[test]
fn the_real_openssl_program() {
    let Some(real) = ["/usr/bin/openssl", "/bin/openssl"]
        .into_iter()
        .find(|p| Path::new(p).exists())
    else {
        eprintln!("skipped: no openssl program (apt-get install openssl)");
        return;
    };
    let o = run_with_path(
        Path::new("/nonexistent"),
        &[
            "--engine",
            "openssl-speed",
            "--row-only",
            "--seconds",
            "1",
            "-q",
            "--json",
            "--algorithms",
            "md5,aes-128-cbc,rsa2048,aes-128-gcm",
        ],
        &[("ROUTERBENCH_OPENSSL", real)],
    );
    assert!(o.status.success(), "{:?}", text(&o));
    let c = crypto_json(&o);
    assert!(
        c["engine"]["version"]
            .as_str()
            .unwrap()
            .ends_with("(openssl speed)"),
        "{c}"
    );
    assert!(rate(&c, "md5", 1024).unwrap() > 1e6);
    assert!(rate(&c, "aes-128-cbc", 8192).unwrap() > 1e6);
    assert!(rate(&c, "aes-128-gcm", 1456).unwrap() > 1e6);
    assert!(c["public_key"][0]["verify_per_sec"].as_f64().unwrap() > 100.0);
    assert_eq!(c["source"]["commands"].as_array().unwrap().len(), 3, "{c}");
}
