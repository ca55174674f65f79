//! End-to-end tests of `routerbench crypto` on the real binary: the OpenWrt row of a short
//! measured run, JSON and openssl-format output, import from a file and from stdin, and errors
//! for bad input that name the line and what was expected.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn routerbench(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_routerbench"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run routerbench");
    if let Some(data) = stdin {
        child.stdin.take().unwrap().write_all(data).unwrap();
    } else {
        drop(child.stdin.take());
    }
    child.wait_with_output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn fixture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/openssl/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn cells(row: &str) -> Vec<String> {
    let t = row.trim();
    assert!(t.starts_with("| ") && t.ends_with(" |"), "not a row: {t}");
    t[1..t.len() - 1]
        .split('|')
        .map(|c| c.trim().to_string())
        .collect()
}

/// A measured row with `env` set; returns its cells after checking the shape.
fn measured_row(env: &[(&str, &str)]) -> (Vec<String>, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_routerbench"))
        .args(["crypto", "--format", "openwrt", "--seconds", "0.05"])
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "one row: {out}");
    let c = cells(lines[0]);
    assert!(c.len() >= 15, "identity + engine + 13: {c:?}");
    let numbers = &c[c.len() - 13..];
    for (i, n) in numbers.iter().enumerate() {
        let v: f64 = n
            .parse()
            .unwrap_or_else(|_| panic!("cell {i} `{n}` is not a number: {c:?}"));
        assert!(v > 0.0, "cell {i} is {v}: every algorithm runs");
    }
    // Bulk cells are integers (bytes/s), RSA/DSA have one decimal.
    assert!(numbers[..9].iter().all(|n| !n.contains('.')), "{c:?}");
    assert!(
        numbers[9..]
            .iter()
            .all(|n| n.split('.').nth(1).map(str::len) == Some(1))
    );
    (c, stderr(&o))
}

/// The default (`--engine auto`) row comes from the system libcrypto, loaded at run time, and
/// says so in its Engine cell; no warning.
#[test]
fn default_row_names_openssl_when_libcrypto_loads() {
    let (c, err) = measured_row(&[]);
    let engine = &c[c.len() - 14];
    assert!(
        engine.starts_with("OpenSSL "),
        "Engine cell `{engine}`: {c:?}"
    );
    assert!(!err.contains("warning"), "{err}");
}

/// With no libcrypto to load, auto falls back to RustCrypto, names it and the reason in the
/// Engine cell, and warns that the row is not comparable with the wiki's OpenSSL rows.
#[test]
fn without_libcrypto_the_row_names_rustcrypto_and_warns() {
    // No `openssl` program either (that fallback has tests/crypto/crypto_program.rs).
    let (c, err) = measured_row(&[
        ("ROUTERBENCH_LIBCRYPTO", "/nonexistent/libcrypto.so.3"),
        ("ROUTERBENCH_OPENSSL", "none"),
    ]);
    assert_eq!(c[c.len() - 14], "RustCrypto (no libcrypto found)", "{c:?}");
    assert!(
        err.contains("warning: this row comes from RustCrypto"),
        "{err}"
    );
}

#[test]
fn json_and_openssl_formats_agree_with_the_row() {
    let o = routerbench(
        &[
            "crypto",
            "--engine",
            "rustcrypto",
            "--algorithms",
            "sha256,aes-128-cbc",
            "--seconds",
            "0.02",
            "--json",
            "-q",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(v["schema"], "routerbench.run/2");
    let crypto = &v["crypto"];
    assert_eq!(crypto["engine"]["version"], "RustCrypto");
    assert_eq!(crypto["time_base"], "user-cpu");
    assert_eq!(crypto["bulk"].as_array().unwrap().len(), 2);
    assert_eq!(crypto["bulk"][0]["algorithm"], "sha256");
    assert_eq!(crypto["block_sizes"].as_array().unwrap().len(), 6);

    // The openssl-format text of a run imports back to the same row.
    let o = routerbench(
        &[
            "crypto",
            "--engine",
            "rustcrypto",
            "--algorithms",
            "md5,des-ede3,rsa2048",
            "--seconds",
            "0.02",
            "--format",
            "openssl",
            "-q",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.starts_with("OpenSSL-format RustCrypto "), "{text}");
    assert!(
        text.contains("\ntype             16 bytes     64 bytes"),
        "{text}"
    );
    let back = routerbench(
        &[
            "crypto",
            "--import",
            "-",
            "--format",
            "openwrt",
            "--no-identity",
        ],
        Some(text.as_bytes()),
    );
    assert!(back.status.success(), "{}", stderr(&back));
    let c = cells(&stdout(&back));
    assert_eq!(c.len(), 14, "{c:?}");
    assert_eq!(c[0], "RustCrypto");
}

#[test]
fn import_prints_the_row_with_given_identity() {
    let o = routerbench(
        &[
            "crypto",
            "--import",
            &fixture("openssl-3.0.19-with-stderr.txt"),
            "--format",
            "openwrt",
            "--revision",
            "r23633",
            "--cpu-field",
            "MediaTek MT7621 ver:1 eco:3",
            "--cpu-field",
            "586.13",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "| r23633 | MediaTek MT7621 ver:1 eco:3 | 586.13 | OpenSSL 3.0.19 | 545674970 | 1268176980 \
         | 1170388560 | 519599860 | 0 | 25600000 | 1447058290 | 1220164830 | 1040298410 | 2880.0 \
         | 53242.6 | 3791.2 | 4136.2 |\n"
    );
    // The DES note reaches the user.
    assert!(stderr(&o).contains("legacy provider"), "{}", stderr(&o));
}

#[test]
fn import_table_shows_notes_and_row() {
    let o = routerbench(
        &[
            "crypto",
            "--import",
            &fixture("openssl-1.0.2u-mips.txt"),
            "--no-identity",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("OpenSSL 1.0.2u (openssl-speed)"), "{out}");
    assert!(
        out.contains("md5                     4.30      14.16      33.32      51.85      61.25"),
        "{out}"
    );
    assert!(out.contains("rsa 2048            10.5      413.5"), "{out}");
    assert!(out.contains("| OpenSSL 1.0.2u | 51849560 |"), "{out}");
}

fn import_error(input: &[u8]) -> String {
    let o = routerbench(
        &["crypto", "--import", "-", "--format", "openwrt"],
        Some(input),
    );
    assert_eq!(o.status.code(), Some(1), "must fail: {}", stdout(&o));
    assert!(stdout(&o).is_empty());
    let e = stderr(&o);
    assert!(!e.contains("panicked"), "{e}");
    e
}

#[test]
fn bad_imports_name_the_line_and_what_was_expected() {
    let e = import_error(b"");
    assert!(e.contains("the input is empty"), "{e}");

    let e = import_error(b"\x7fELF\x02\x01\x01\x00\x00\x00binary");
    assert!(
        e.contains("line 1") && e.contains("binary data") && e.contains("0x00"),
        "{e}"
    );

    let e = import_error(b"root:x:0:0:root:/root:/bin/bash\n");
    assert!(
        e.contains("line 1: this is not a line of `openssl speed` output"),
        "{e}"
    );
    assert!(
        e.contains("expected a line of `openssl speed` output"),
        "{e}"
    );

    let sample = std::fs::read_to_string(fixture("openssl-3.0.19-stdout.txt")).unwrap();
    // Cut in the middle of the sha256 row (line 9).
    let cut = sample.find("304224.53k").unwrap() + "304224.53k".len();
    let e = import_error(&sample.as_bytes()[..cut]);
    assert!(e.contains("line 10"), "{e}");
    assert!(
        e.contains("the `sha256` row has 2 values instead of 6"),
        "{e}"
    );
    assert!(e.contains("`type` header on line 7"), "{e}");

    // Cut right after the header.
    let cut = sample.find("md5 ").unwrap();
    let e = import_error(&sample.as_bytes()[..cut]);
    assert!(
        e.contains("line 7") && e.contains("not followed by any result row"),
        "{e}"
    );

    // Cut inside the rsa line.
    let cut = sample.find("0.000019s").unwrap();
    let e = import_error(&sample.as_bytes()[..cut]);
    assert!(e.contains("line 18: the rsa line has 4 fields"), "{e}");

    let e = import_error(b"+H:16:64\n+F:3:md5:1.00:x\n");
    assert!(
        e.contains("line 2: malformed machine-readable (-mr) line"),
        "{e}"
    );

    let e = import_error(b"version: 3.0.19\n");
    assert!(e.contains("no `openssl speed` results found"), "{e}");

    // A stderr-only capture (`2> file`): the results went to stdout.
    let stderr_only: String = std::fs::read_to_string(fixture("openssl-3.0.19-with-stderr.txt"))
        .unwrap()
        .lines()
        .take_while(|l| !l.starts_with("version:"))
        .map(|l| format!("{l}\n"))
        .collect();
    let e = import_error(stderr_only.as_bytes());
    assert!(e.contains("only the progress (`Doing …`) lines"), "{e}");

    let mut mixed = sample.clone();
    mixed.insert_str(
        sample.find("sha1").unwrap(),
        "<html><body>oops</body></html>\n",
    );
    let e = import_error(mixed.as_bytes());
    assert!(e.contains("line 9") && e.contains("<html>"), "{e}");
}

#[test]
fn missing_import_file_is_named() {
    let o = routerbench(&["crypto", "--import", "/nonexistent/sslspeed"], None);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("cannot read /nonexistent/sslspeed"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn unknown_algorithm_lists_the_valid_ones() {
    let o = routerbench(&["crypto", "--algorithms", "md5,chacha20", "-q"], None);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("unknown algorithm `chacha20`"), "{e}");
    assert!(
        e.contains(
            "md5, sha1, sha256, sha512, des, des-ede3, aes-128-cbc, aes-192-cbc, aes-256-cbc, \
             rsa2048, dsa2048"
        ),
        "{e}"
    );
}

#[test]
fn bad_numbers_are_usage_errors() {
    for args in [
        &["crypto", "--seconds", "0", "-q"][..],
        &["crypto", "--seconds", "nan", "-q"][..],
        &["crypto", "--multi", "0", "-q"][..],
    ] {
        let o = routerbench(args, None);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(stderr(&o).contains("must be"), "{}", stderr(&o));
    }
    let o = routerbench(&["crypto", "--cipher-block", "4096"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not 1024 or 8192"), "{}", stderr(&o));
}

/// `--engine openssl` takes libcrypto or fails saying what to do; no silent fallback.
#[test]
fn openssl_engine_loads_libcrypto_or_explains() {
    let args = [
        "crypto",
        "--engine",
        "openssl",
        "--algorithms",
        "md5",
        "--seconds",
        "0.01",
        "-q",
    ];
    let o = routerbench(&args, None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("OpenSSL 3"), "{}", stdout(&o));
    let o = Command::new(env!("CARGO_BIN_EXE_routerbench"))
        .args(args)
        .env("ROUTERBENCH_LIBCRYPTO", "none")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("libcrypto disabled"), "{}", stderr(&o));
    assert!(stderr(&o).contains("--engine rustcrypto"), "{}", stderr(&o));
}

#[test]
fn multi_threads_sum_and_use_wall_time() {
    let o = routerbench(
        &[
            "crypto",
            "--algorithms",
            "sha1",
            "--seconds",
            "0.02",
            "--multi",
            "2",
            "--json",
            "-q",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["crypto"]["threads"], 2);
    assert_eq!(v["crypto"]["time_base"], "elapsed");
}

/// The wiki's summary awk + sed (docs/protocols/openssl-speed.md §1.1), applied to `--format openssl` output,
/// yields the same 13 numbers as `--format openwrt` for either cipher column.
#[test]
fn wiki_awk_reads_the_openssl_format_like_the_row() {
    let awk_prog = r#"$1 ~ /OpenSSL/ {print "| " $2 " |"} $1 ~ /(md5|sha)/ {print " " $5 " |"} $1 ~ /(des|aes)/ {b = b " " $6 " |"} $1 ~ /(rsa|dsa)/ {print b " " $6 " | " $7 " | ";b=""}"#;
    if Command::new("awk").arg("BEGIN{}").output().is_err() {
        eprintln!("skipped: no awk on this host");
        return;
    }
    for (name, version) in [
        ("openssl-1.1.1m-aarch64.txt", "1.1.1m"),
        ("openssl-3.5.6-rsa4.txt", "3.5.6"),
    ] {
        for cb in ["1024", "8192"] {
            let base = [
                "crypto",
                "--import",
                &fixture(name),
                "--cipher-block",
                cb,
                "-q",
            ];
            let text = routerbench(&[&base[..], &["--format", "openssl"]].concat(), None);
            let row = routerbench(
                &[&base[..], &["--format", "openwrt", "--no-identity"]].concat(),
                None,
            );
            let mut awk = Command::new("awk")
                .args(["-v", "ORS=", awk_prog])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            awk.stdin.take().unwrap().write_all(&text.stdout).unwrap();
            let awk_out = String::from_utf8(awk.wait_with_output().unwrap().stdout).unwrap();
            // sed -e 's/\.\(..\)k/\10/g': `12345.67k` -> `12345670`.
            let mut awk_cells: Vec<String> = awk_out
                .split('|')
                .map(|c| c.trim().to_string())
                .filter(|c| !c.is_empty())
                .map(|c| match c.strip_suffix('k') {
                    Some(v) => v.replace('.', "") + "0",
                    None => c,
                })
                .collect();
            assert_eq!(awk_cells.remove(0), version, "{name} {cb}: {awk_out}");
            let row_cells = cells(&stdout(&row));
            assert_eq!(
                awk_cells,
                row_cells[1..].to_vec(),
                "{name} cipher block {cb}"
            );
        }
    }
}

/// With the WireGuard columns in it (a table of its own after the rsa/dsa lines, EVP names), the
/// openssl-format text still gives the wiki awk exactly the row, and imports back with the AEADs;
/// a `--row-only` text (its unmeasured sizes print `n/a`) imports back too.
#[test]
fn wireguard_columns_stay_out_of_the_wiki_awk_and_import_back() {
    let awk_prog = r#"$1 ~ /OpenSSL/ {print "| " $2 " |"} $1 ~ /(md5|sha)/ {print " " $5 " |"} $1 ~ /(des|aes)/ {b = b " " $6 " |"} $1 ~ /(rsa|dsa)/ {print b " " $6 " | " $7 " | ";b=""}"#;
    let o = routerbench(
        &[
            "crypto",
            "--engine",
            "rustcrypto",
            "--seconds",
            "0.01",
            "--format",
            "openssl",
            "-q",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("\ntype           1456 bytes\nChaCha20-Poly1305"),
        "{text}"
    );
    assert!(text.contains("\nAES-128-GCM  "), "{text}");
    let back = |t: &str, fmt: &str| {
        let o = routerbench(
            &[
                "crypto",
                "--import",
                "-",
                "--format",
                fmt,
                "--no-identity",
                "-q",
            ],
            Some(t.as_bytes()),
        );
        assert!(o.status.success(), "{}\n{t}", stderr(&o));
        stdout(&o)
    };
    let row = cells(&back(&text, "openwrt"));
    let mut awk = Command::new("awk")
        .args(["-v", "ORS=", awk_prog])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    awk.stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let awk_out = String::from_utf8(awk.wait_with_output().unwrap().stdout).unwrap();
    let awk_cells: Vec<String> = awk_out
        .split('|')
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .map(|c| match c.strip_suffix('k') {
            Some(v) => v.replace('.', "") + "0",
            None => c,
        })
        .collect();
    assert_eq!(awk_cells.len(), 1 + 13, "{awk_out}");
    assert_eq!(awk_cells[1..], row[1..], "{awk_out}");
    let table = back(&text, "table");
    assert!(table.contains("chacha20-poly1305"), "{table}");
    assert!(table.contains("aes-128-gcm"), "{table}");
    // --row-only: one size per algorithm, `n/a` elsewhere.
    let o = routerbench(
        &[
            "crypto",
            "--engine",
            "rustcrypto",
            "--seconds",
            "0.01",
            "--row-only",
            "--format",
            "openssl",
            "-q",
        ],
        None,
    );
    let text = stdout(&o);
    assert!(text.contains(" n/a "), "{text}");
    let row = cells(&back(&text, "openwrt"));
    assert_eq!(row.len(), 14, "{row:?}");
    assert!(
        row[1..]
            .iter()
            .all(|c| c.parse::<f64>().is_ok_and(|v| v > 0.0)),
        "{row:?}"
    );
}

/// Without the legacy provider, single DES reads 0 with a note (as `openssl speed` prints 0.00);
/// the other algorithms still run.
#[test]
fn openssl_engine_without_legacy_provider_reports_des_as_zero() {
    let o = Command::new(env!("CARGO_BIN_EXE_routerbench"))
        .args([
            "crypto",
            "--engine",
            "openssl",
            "--algorithms",
            "des,des-ede3",
            "--seconds",
            "0.01",
            "--row-only",
            "--format",
            "openwrt",
            "--no-identity",
        ])
        .env("OPENSSL_MODULES", "/nonexistent-routerbench-test")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let c = cells(&stdout(&o));
    assert_eq!(c[5], "0", "DES cell: {c:?}");
    assert!(c[6].parse::<f64>().unwrap() > 0.0, "3DES runs: {c:?}");
    assert!(stderr(&o).contains("legacy provider"), "{}", stderr(&o));
}

#[test]
fn json_file_is_written_next_to_the_table() {
    let dir = std::env::temp_dir().join(format!("rb-crypto-json-{}", std::process::id()));
    let path = dir.join("crypto.json");
    // --json FILE never creates directories (tests/cli/cli_outputs.rs): the directory exists.
    std::fs::create_dir_all(&dir).unwrap();
    let o = routerbench(
        &[
            "crypto",
            "--import",
            &fixture("openssl-3.0.19-stdout.txt"),
            "--json",
            path.to_str().unwrap(),
            "-q",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("MB/s"),
        "the table still goes to stdout"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(v["crypto"]["engine"]["version"], "OpenSSL 3.0.19");
    assert_eq!(v["crypto"]["source"]["kind"], "imported");
    assert_eq!(v["crypto"]["source"]["layout"], "3.0-3.1");
    assert_eq!(v["crypto"]["public_key"][0]["sign_per_sec"], 2880.0);
    std::fs::remove_dir_all(&dir).unwrap();
}
