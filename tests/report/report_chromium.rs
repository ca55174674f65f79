//! End-to-end: result files the suite makes itself (a measured crypto row, an imported OpenSSL
//! row, `run --quick`'s loopback + RRUL + monitor, and, as root, an RRUL through the netns lab)
//! → `routerbench report` → headless Chromium: the page has no console errors, every plot drew
//! data, and PNG screenshots stay under `target/report-screenshots/` (CI artifacts). Also checks
//! that `run` wrote its report and `.flent.gz`, and `plot` for every kind.
#![cfg(all(feature = "plots", feature = "lab"))]

use crate::support::rb;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs routerbench with `args`; fails the test, with its output, unless it succeeded.
fn rb_ok(args: &[&str]) -> Output {
    let out = rb(args);
    assert!(
        out.status.success(),
        "routerbench {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// The Debian `chromium` binary (CI installs it), or `None` with the reason printed.
fn chromium() -> Option<PathBuf> {
    for dir in std::env::var("PATH").unwrap_or_default().split(':') {
        for name in ["chromium", "chromium-browser"] {
            let p = Path::new(dir).join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    eprintln!("skip the browser checks: no chromium in PATH (apt-get install chromium)");
    None
}

/// Runs headless Chromium on `page` with `extra` flags, bounded by `timeout`, with a fresh
/// profile and every background network feature off.
fn chrome(bin: &Path, page: &Path, extra: &[&str]) -> Output {
    let profile =
        std::env::temp_dir().join(format!("rb-chrome-{}-{}", std::process::id(), extra.len()));
    let _ = std::fs::remove_dir_all(&profile);
    let out = Command::new("timeout")
        .arg("120")
        .arg(bin)
        .args(crate::support::CHROMIUM_FLAGS)
        .args(["--enable-logging=stderr", "--v=0"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("start chromium");
    let _ = std::fs::remove_dir_all(&profile);
    out
}

/// Console messages Chromium logged for the page (`…:CONSOLE(line)] "text", source: …`).
fn console_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect()
}

/// Makes an RRUL result through the lab (root only): 20 Mbit/s × 64000 B, 3 s of load.
fn lab_result(dir: &Path) -> Option<PathBuf> {
    if !crate::support::lab::can_run("report_chromium (lab part)", &["ip", "tc", "nft"]) {
        return None;
    }
    let name = crate::support::lab::unique_name("h");
    let _guard = routerbench::lab::LabGuard::new(&name);
    rb_ok(&[
        "lab", "up", "--name", &name, "--rate", "20mbit", "--buffer", "64000",
    ]);
    let json = dir.join("lab-rrul.json");
    rb_ok(&[
        "lab",
        "run",
        "rrul",
        "--name",
        &name,
        "-l",
        "3",
        "--delay",
        "1",
        "--warmup",
        "0.5",
        "-q",
        "--json",
        s(&json),
    ]);
    Some(json)
}

#[test]
fn report_of_the_suites_own_results_renders_in_chromium() {
    let dir = std::env::temp_dir().join(format!("rb-report-e2e-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();

    // Crypto: measured (RustCrypto) and an imported OpenSSL 3.0 row: mixed engines.
    let measured = dir.join("crypto.json");
    rb_ok(&[
        "crypto",
        "--engine",
        "rustcrypto",
        "--row-only",
        "--seconds",
        "0.05",
        "--json",
        s(&measured),
    ]);
    let imported = dir.join("crypto-openssl.json");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/openssl/openssl-3.0.19-stdout.txt"
    );
    rb_ok(&[
        "crypto",
        "--import",
        fixture,
        "--no-identity",
        "--json",
        s(&imported),
    ]);

    // run --quick: loopback, RRUL and monitor; it writes its own report and .flent.gz.
    let run_dir = dir.join("run");
    let out = rb_ok(&[
        "run",
        "--quick",
        "--quiet",
        "--skip",
        "crypto",
        "--out-dir",
        s(&run_dir),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let names: Vec<String> = std::fs::read_dir(&run_dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().to_string()))
        .collect();
    for (prefix, suffix) in [("report-", ".html"), ("rrul-", ".flent.gz")] {
        let f = names
            .iter()
            .find(|n| n.starts_with(prefix) && n.ends_with(suffix))
            .unwrap_or_else(|| panic!("run wrote no {prefix}*{suffix}: {names:?}"));
        assert!(
            stdout.contains(f.as_str()),
            "run did not print {f}:\n{stdout}"
        );
    }
    let gz = names.iter().find(|n| n.ends_with(".flent.gz")).unwrap();
    let head = std::fs::read(run_dir.join(gz)).unwrap();
    assert_eq!(&head[..2], &[0x1f, 0x8b], "the .flent.gz is gzip");
    let run_json = run_dir.join("latest.json");

    // Every plot kind of the run result, and a clear error for a part the file lacks.
    for kind in ["all_scaled", "cdf", "box", "throughput", "monitor"] {
        let svg = dir.join(format!("{kind}.svg"));
        rb_ok(&["plot", s(&run_json), "--kind", kind, "-o", s(&svg)]);
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(
            text.starts_with("<svg") && text.contains("<polyline"),
            "{kind}"
        );
    }
    let bad = Command::new(env!("CARGO_BIN_EXE_routerbench"))
        .args([
            "plot",
            s(&measured),
            "--kind",
            "cdf",
            "-o",
            s(&dir.join("x.svg")),
        ])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("has no latency result"));

    let mut inputs = vec![measured.clone(), imported.clone(), run_json.clone()];
    inputs.extend(lab_result(&dir));
    let report = dir.join("report.html");
    let mut args: Vec<&str> = vec!["report"];
    args.extend(inputs.iter().map(|p| s(p)));
    args.extend(["-o", s(&report)]);
    rb_ok(&args);

    let html = std::fs::read_to_string(&report).unwrap();
    assert!(!html.contains("<script"), "no script in the report");
    let external = html
        .replace("xmlns=\"http://www.w3.org/2000/svg\"", "")
        .matches("http")
        .count();
    assert_eq!(external, 0, "nothing from the network");
    assert!(
        html.contains("Not like-for-like") && html.contains("engine RustCrypto (A) vs OpenSSL (B)"),
        "mixed engines flagged"
    );
    assert!(
        html.contains("<h2>Side by side</h2>"),
        "the page opens with the comparison"
    );
    let figures = html.matches("<figure>").count();
    // the comparison's crypto and WireGuard bars; throughput; all_scaled, cdf, box; monitor
    // (+ 3 latency and 1 monitor per lab)
    assert!(figures >= 6, "{figures} figures");

    let Some(bin) = chromium() else {
        return;
    };
    // The console check can fail: a page that logs an error is caught.
    let probe = dir.join("probe.html");
    std::fs::write(
        &probe,
        "<html><body><script>console.error('rb-probe')</script></body></html>",
    )
    .unwrap();
    let seen = console_lines(&chrome(&bin, &probe, &["--dump-dom"]));
    assert!(
        seen.iter().any(|l| l.contains("rb-probe")),
        "the console check sees nothing: {seen:?}"
    );

    let out = chrome(&bin, &report, &["--dump-dom"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        console_lines(&out).is_empty(),
        "console: {:?}",
        console_lines(&out)
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    let figs: Vec<&str> = dom.split("<figure>").skip(1).collect();
    assert_eq!(figs.len(), figures, "the browser parsed every figure");
    for (i, f) in figs.iter().enumerate() {
        let f = f.split("</figure>").next().unwrap_or("");
        assert!(f.contains("<svg"), "figure {i} has no svg");
        // Data is drawn in the series colours (the first is #0072B2): lines, bars or boxes.
        let drawn = f.matches("#0072B2").count();
        let shapes = f.matches("<polyline").count() + f.matches("<rect").count();
        assert!(drawn > 0 && shapes > 2, "figure {i} drew no data");
    }

    let shots = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("report-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let height = 1400 + 700 * figures;
    for (name, size) in [
        ("report-top.png", "1100,1400".to_string()),
        ("report-full.png", format!("1100,{height}")),
    ] {
        let png = shots.join(name);
        let _ = std::fs::remove_file(&png);
        let out = chrome(
            &bin,
            &report,
            &[
                &format!("--window-size={size}"),
                &format!("--screenshot={}", png.display()),
            ],
        );
        let bytes = std::fs::read(&png).unwrap_or_else(|e| {
            panic!(
                "no screenshot {}: {e}\n{}",
                png.display(),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        assert!(
            bytes.starts_with(b"\x89PNG") && bytes.len() > 20_000,
            "{name}"
        );
        eprintln!("screenshot: {}", png.display());
    }
    std::fs::copy(&report, shots.join("report.html")).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}
