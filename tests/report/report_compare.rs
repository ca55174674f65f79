//! End-to-end: `routerbench compare` on the seed's rows (a file in the wiki's format, and the
//! built-in reference rows with their loopback figures): v2/v1 per figure, DES as "not
//! measured", the wiki and markdown layouts; a row ranked among the reference rows; two `run`
//! results of different settings with the right not-like-for-like markers; a directory of ten
//! results as one table; inputs it cannot compare, each skipped with one line.
#![cfg(feature = "plots")]

use crate::support::{rb, streams};
use std::path::{Path, PathBuf};

const SEED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/seed-ea7500.txt"
);
const SPEED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/openssl/openssl-3.0.19-stdout.txt"
);

fn line<'a>(text: &'a str, start: &str) -> &'a str {
    text.lines()
        .find(|l| l.trim_start().starts_with(start))
        .unwrap_or_else(|| panic!("no line {start:?} in\n{text}"))
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rb-compare-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn the_seeds_comparison_from_its_rows_and_from_the_reference_set() {
    let o = rb(&["compare", SEED]);
    let (ok, (out, err)) = (o.status.success(), streams(&o));
    assert!(ok, "{err}");
    assert!(
        line(&out, "A ").contains("Linksys EA7500 v1 · IPQ8064"),
        "{out}"
    );
    assert!(line(&out, "MD5").ends_with("0.53×"), "{out}");
    assert!(line(&out, "SHA-512").ends_with("0.14×"), "{out}");
    assert!(
        line(&out, "RSA Sign").contains("111.9/s") && line(&out, "RSA Sign").ends_with("0.09×"),
        "{out}"
    );
    assert_eq!(line(&out, "DES ").matches("not measured").count(), 2);
    assert!(
        !out.contains('⚠'),
        "same semantics, nothing flagged:\n{out}"
    );
    // Long lines are wrapped at 100 columns, continued with four spaces.
    assert!(
        out.replace("\n    ", " ")
            .contains("RSA Sign 0.09×, RSA Verify 0.08×, DSA Sign 0.08×, DSA Verify 0.07×"),
        "{out}"
    );
    assert!(out.lines().all(|l| l.chars().count() <= 100), "{out}");

    // The built-in rows carry the seed's loopback figures too.
    let o = rb(&["compare", "ref:ea7500-v1", "ref:ea7500-v2"]);
    let (ok, (out, err)) = (o.status.success(), streams(&o));
    assert!(ok, "{err}");
    let tcp = line(&out, "TCP");
    assert!(
        tcp.contains("6.20 Gbit/s") && tcp.contains("611 Mbit/s") && tcp.ends_with("0.10×"),
        "{out}"
    );
    assert!(line(&out, "SoC").contains("MediaTek MT7621AT"), "{out}");

    let o = rb(&["compare", SEED, "--format", "wiki"]);
    let (ok, (wiki, _)) = (o.status.success(), streams(&o));
    assert!(ok);
    assert!(
        wiki.contains("| OpenSSL 3.x | 98150740 | 127698940 |"),
        "{wiki}"
    );
    assert!(
        wiki.contains("| ratio | 0.53× |") && wiki.contains("| not measured |"),
        "{wiki}"
    );
    let o = rb(&["compare", SEED, "--format", "markdown"]);
    let (ok, (md, _)) = (o.status.success(), streams(&o));
    assert!(
        ok && md.contains("| RSA Sign | 111.9/s | 10.5/s | 0.09× |"),
        "{md}"
    );
    let o = rb(&["compare", SEED, "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["comparison"]["devices"].as_array().unwrap().len(), 2);
    let o = rb(&["compare", SEED, "--label", "A=v1", "--label", "2=v2"]);
    let (out, _) = streams(&o);
    assert!(line(&out, "B ").starts_with("B  v2"), "{out}");
}

#[test]
fn a_row_is_ranked_among_the_references() {
    let o = rb(&["compare", "ref:ea7500-v2", "--reference"]);
    let (ok, (out, err)) = (o.status.success(), streams(&o));
    assert!(ok, "{err}");
    let rsa = line(&out, "RSA Sign ");
    assert!(rsa.contains("above: ea7500-v1 111.9/s (0.09×)"), "{rsa}");
    assert!(
        rsa.contains("below: -"),
        "the slowest RSA of the set: {rsa}"
    );
    let aes = line(&out, "AES-128 ");
    assert!(
        aes.contains("rank") && aes.contains("not like-for-like"),
        "{aes}"
    );

    // A user's own table, in the wiki's format.
    let dir = scratch("ref");
    let mine = dir.join("mine.txt");
    std::fs::write(
        &mine,
        "| my box | OpenSSL 3.0.13 | 60000000 | 50000000 | 20000000 | 7000000 | 0.00 | 2500000 | 16000000 | 14000000 | 12000000 | 12.0 | 450.0 | 35.0 | 36.0 |\n",
    )
    .unwrap();
    let arg = format!("--reference={}", mine.display());
    let o = rb(&["compare", "ref:ea7500-v2", &arg]);
    let (ok, (out, err)) = (o.status.success(), streams(&o));
    assert!(ok, "{err}");
    assert!(line(&out, "MD5 ").contains("rank  2 of 2"), "{out}");
    assert!(
        line(&out, "RSA Sign ").contains("above: row1 12.0/s (0.88×)"),
        "{out}"
    );

    // A bad table names the file and line.
    std::fs::write(&mine, "| my box | 1 | 2 |\n").unwrap();
    let arg = format!("--reference={}", mine.display());
    let o = rb(&["compare", "ref:ea7500-v2", &arg]);
    let (ok, (_, err)) = (o.status.success(), streams(&o));
    assert!(
        !ok && err.contains("mine.txt line 1") && err.contains("13 numbers"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn two_runs_of_different_settings_are_flagged_where_they_differ() {
    let dir = scratch("runs");
    let run = |sub: &str, extra: &[&str]| {
        let out = dir.join(sub);
        let mut args = vec![
            "run",
            "--quick",
            "-q",
            "--skip",
            "sqm",
            "--out-dir",
            s(&out),
        ];
        args.extend_from_slice(extra);
        let o = rb(&args);
        assert!(o.status.success(), "{:?}", streams(&o));
        out.join("latest.json")
    };
    // The system's default congestion control against another one.
    let default =
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").unwrap_or_default();
    let other = if default.trim() == "reno" {
        "cubic"
    } else {
        "reno"
    };
    let a = run("default", &[]);
    let b = run("rustcrypto-cc", &["--engine", "rustcrypto", "-C", other]);
    let o = rb(&["compare", s(&a), s(&b)]);
    let (ok, (out, err)) = (o.status.success(), streams(&o));
    assert!(ok, "{err}");
    for group in [
        "Identity",
        "In-device loopback",
        "Crypto",
        "WireGuard",
        "Latency under load",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(group)),
            "no {group}:\n{out}"
        );
    }
    // The crypto rows differ by engine, the loopback and the RRUL by congestion control.
    let note = |what: &str| {
        out.lines()
            .find(|l| l.starts_with('⚠') && l.contains(what))
            .and_then(|l| l[3..].split_whitespace().next().map(|n| n.to_string()))
            .unwrap_or_else(|| panic!("no note on {what}:\n{out}"))
    };
    let engine = note("engine");
    let cc = note("congestion control");
    assert!(out.contains("vs RustCrypto (B)"), "{out}");
    assert!(out.contains(&format!("vs {other} (B)")), "{out}");
    assert!(line(&out, "MD5").contains(&format!("⚠{engine}")), "{out}");
    assert!(line(&out, "TCP").contains(&format!("⚠{cc}")), "{out}");
    assert!(
        line(&out, "loaded latency").contains(&format!("⚠{cc}")),
        "{out}"
    );
    assert!(!line(&out, "TCP").contains(&format!("⚠{engine}")), "{out}");
    assert!(!line(&out, "CPUs").contains('⚠'), "{out}");
    assert!(out.lines().all(|l| l.chars().count() <= 100), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_directory_of_ten_results_is_one_table_with_ranks() {
    let dir = scratch("fleet");
    let base = dir.join("base.json.tmp");
    let o = rb(&["crypto", "--import", SPEED, "--json", s(&base)]);
    assert!(o.status.success(), "{:?}", streams(&o));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&base).unwrap()).unwrap();
    for i in 1..=10 {
        let mut d = doc.clone();
        d["device"]["hostname"] = format!("router{i:02}").into();
        for b in d["crypto"]["bulk"].as_array_mut().unwrap() {
            for v in b["bytes_per_sec"].as_array_mut().unwrap() {
                if let Some(x) = v.as_f64() {
                    *v = (x * f64::from(i) / 10.0).into();
                }
            }
        }
        std::fs::write(dir.join(format!("r{i:02}.json")), d.to_string()).unwrap();
    }
    std::fs::write(dir.join("latest.json"), doc.to_string()).unwrap();
    std::fs::write(dir.join("notes.txt"), "not a result").unwrap();
    let o = rb(&["compare", s(&dir), "--sort", "aes-128"]);
    let (ok, (out, err)) = (o.status.success(), streams(&o));
    assert!(ok, "{err}");
    assert!(out.lines().all(|l| l.chars().count() <= 100), "{out}");
    // Sorted by AES-128: router10 first with rank 1, router01 last; latest.json left out.
    assert!(line(&out, "A ").contains("router10"), "{out}");
    assert!(line(&out, "J ").contains("router01"), "{out}");
    assert!(
        !out.contains("K "),
        "latest.json is a copy, not a device:\n{out}"
    );
    let table_rows: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("A  router10") && l.contains(" #1"))
        .collect();
    assert!(!table_rows.is_empty(), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("J  router01") && l.contains(" #10")),
        "{out}"
    );
    let o = rb(&["compare", s(&dir), "--format", "csv"]);
    let (csv, _) = streams(&o);
    assert_eq!(csv.lines().count(), 11, "{csv}");
    let o = rb(&["compare", s(&dir), "--sort", "nothing-like-this"]);
    let (ok, (_, err)) = (o.status.success(), streams(&o));
    assert!(
        !ok && err.contains("--sort nothing-like-this: no such figure"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn inputs_it_cannot_compare_are_skipped_with_one_line_each() {
    let dir = scratch("bad");
    let crypto = dir.join("crypto.json");
    let o = rb(&["crypto", "--import", SPEED, "--json", s(&crypto)]);
    assert!(o.status.success(), "{:?}", streams(&o));
    let text = std::fs::read_to_string(&crypto).unwrap();
    let newer = dir.join("newer.json");
    std::fs::write(
        &newer,
        text.replace("routerbench.run/2", "routerbench.run/9"),
    )
    .unwrap();
    let foreign = dir.join("foreign.json");
    std::fs::write(&foreign, "{\"hello\": 1}\n").unwrap();
    let prose = dir.join("prose.txt");
    std::fs::write(&prose, "a shopping list\n").unwrap();
    let ident = dir.join("device.json");
    let o = rb(&["device", "--json", s(&ident)]);
    assert!(o.status.success(), "{:?}", streams(&o));
    let lo = dir.join("loopback.json");
    let o = rb(&["loopback", "-t", "1", "--json", s(&lo)]);
    assert!(o.status.success(), "{:?}", streams(&o));

    let o = rb(&[
        "compare",
        s(&crypto),
        s(&newer),
        s(&foreign),
        s(&prose),
        s(&ident),
        s(&lo),
        "ref:ea7500-v1",
    ]);
    let (ok, (out, err)) = (o.status.success(), streams(&o));
    assert!(!ok, "inputs were left out: exit 1");
    let skipped: Vec<&str> = err.lines().filter(|l| l.contains("skipping")).collect();
    assert_eq!(skipped.len(), 5, "{err}");
    let reason = |file: &Path| {
        skipped
            .iter()
            .find(|l| l.contains(s(file)))
            .unwrap_or_else(|| panic!("no line on {}:\n{err}", file.display()))
            .to_string()
    };
    assert!(reason(&newer).contains("newer routerbench (schema routerbench.run/9)"));
    assert!(reason(&foreign).contains("not a routerbench result file"));
    assert!(reason(&prose).contains("neither a result file (JSON) nor rows in the wiki's format"));
    assert!(reason(&ident).contains("nothing but its identity"));
    assert!(reason(&lo).contains("no figure in common") && reason(&lo).contains("loopback"));
    // The other two are still compared.
    assert!(line(&out, "MD5").contains("MB/s"), "{out}");
    assert!(line(&out, "B ").contains("EA7500 v1"), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}
