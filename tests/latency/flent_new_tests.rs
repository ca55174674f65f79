//! The flent tests added after rrul: `rrul_var --flows N`, `tcp_nup`/`tcp_ndown --flows N`,
//! `voip`, `rrul46` (IPv4 and IPv6 servers), `rtt_fair` (two hosts), `phases`, each run by the binary over loopback, written as .flent.gz with flent's own series
//! names and metadata, and read back by flent (`flent -i FILE -p <its default plot>`), which
//! must draw the plot. Skips (passing) when flent is not installed.

use routerbench::latency::server::Bounds;
use routerbench::server::latency_only::spawn_in_process;
use std::process::Command;

fn flent_available() -> bool {
    Command::new("flent")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Runs `routerbench <args>` writing FILE.flent.gz, then `flent -i FILE -p plot -o PNG`.
fn run_and_plot(name: &str, args: &[&str], plot: &str, series: &[&str]) {
    run_and_plot_at(name, args, &[], plot, series);
}

/// The same against a server on 127.0.0.1 and one more on each of `also` (same port), passed
/// as `--also ADDR`. Returns the flent document.
fn run_and_plot_at(
    name: &str,
    args: &[&str],
    also: &[&str],
    plot: &str,
    series: &[&str],
) -> serde_json::Value {
    let (addr, _service) =
        spawn_in_process("127.0.0.1:0".parse().unwrap(), Bounds::default()).unwrap();
    let port = addr.port().to_string();
    let _more: Vec<_> = also
        .iter()
        .map(|ip| {
            let ip: std::net::IpAddr = ip.parse().unwrap();
            spawn_in_process((ip, addr.port()).into(), Bounds::default()).unwrap()
        })
        .collect();
    let dir = std::env::temp_dir().join(format!("rb-flent-new-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{name}.flent.gz"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_routerbench"));
    cmd.args(args)
        .args(["127.0.0.1", "-p", &port, "-q", "--flent"])
        .arg(&file);
    for ip in also {
        cmd.args(["--also", ip]);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{name}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = {
        let f = std::fs::File::open(&file).unwrap();
        serde_json::from_reader(flate2::read::GzDecoder::new(f)).unwrap()
    };
    for s in series {
        let v = doc["results"][s].as_array();
        assert!(
            v.is_some_and(|v| v.iter().any(|x| x.is_number())),
            "{name}: series {s:?} has values; have {:?}",
            doc["results"]
                .as_object()
                .map(|o| o.keys().collect::<Vec<_>>())
        );
    }
    if !flent_available() {
        eprintln!("skip flent read-back: flent not installed (apt-get install flent)");
        return doc;
    }
    let png = dir.join(format!("{name}.png"));
    let f = Command::new("flent")
        .arg("-i")
        .arg(&file)
        .args(["-p", plot, "-o"])
        .arg(&png)
        .output()
        .unwrap();
    assert!(
        f.status.success(),
        "flent -p {plot} on {name}: {}\n{}",
        String::from_utf8_lossy(&f.stdout),
        String::from_utf8_lossy(&f.stderr)
    );
    let size = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
    assert!(size > 5_000, "{name}: flent drew {png:?} ({size} bytes)");
    doc
}

#[test]
fn rrul_var_is_flent_readable() {
    run_and_plot(
        "rrul_var",
        &["rrul_var", "--flows", "3", "--length", "3", "--delay", "1"],
        "all_scaled",
        &[
            "TCP upload::0 (CS0)",
            "TCP download::2 (CS0)",
            "Ping (ms)::UDP 1 (CS0)",
            "Ping (ms)::ICMP",
            "TCP totals",
            "Ping (ms) avg",
        ],
    );
}

#[test]
fn tcp_nup_and_ndown_take_flows() {
    run_and_plot(
        "tcp_nup",
        &["tcp_nup", "--flows", "3", "--length", "3", "--delay", "1"],
        "totals",
        &["TCP upload::3", "TCP upload sum"],
    );
    run_and_plot(
        "tcp_ndown",
        &["tcp_ndown", "--flows", "2", "--length", "3", "--delay", "1"],
        "totals",
        &["TCP download::2", "TCP download sum"],
    );
}

#[test]
fn voip_is_flent_readable() {
    run_and_plot(
        "voip",
        &["voip", "--length", "4"],
        "voip_delay",
        &["VoIP::delay", "VoIP::jitter", "VoIP::loss", "VoIP::rtt"],
    );
}

#[test]
fn rrul46_runs_ipv4_and_ipv6_at_once() {
    let doc = run_and_plot_at(
        "rrul46",
        &["rrul46", "--length", "3", "--delay", "1"],
        &["::1"],
        "all_scaled",
        &[
            "TCP upload BE",
            "TCP download EF",
            "Ping (ms) UDP BE",
            "Ping (ms) UDP6 BK",
            "Ping (ms) ICMP",
            "TCP totals",
        ],
    );
    let hosts = doc["metadata"]["HOSTS"].to_string();
    assert!(
        hosts.contains("127.0.0.1") && hosts.contains("::1"),
        "{hosts}"
    );
}

#[test]
fn rtt_fair_spreads_streams_over_hosts_with_fairness() {
    let doc = run_and_plot_at(
        "rtt_fair",
        &["rtt_fair", "--length", "3", "--delay", "1"],
        &["127.0.0.2"],
        "all_scaled",
        &[
            "TCP upload BE1 127.0.0.1",
            "TCP download BE2 127.0.0.2",
            "TCP upload BK2 127.0.0.2",
            "Ping (ms) ICMP3 127.0.0.1",
            "TCP download fairness",
        ],
    );
    assert_eq!(
        doc["metadata"]["HOSTS"],
        serde_json::json!(["127.0.0.1", "127.0.0.2", "127.0.0.1", "127.0.0.2"])
    );
    // Jain's index: between 1/n and 1 wherever defined.
    for dir in ["upload", "download"] {
        let f = doc["results"][format!("TCP {dir} fairness")]
            .as_array()
            .unwrap();
        let vals: Vec<f64> = f.iter().filter_map(|v| v.as_f64()).collect();
        assert!(!vals.is_empty());
        assert!(
            vals.iter().all(|v| (0.25 - 1e-9..=1.0 + 1e-9).contains(v)),
            "{dir}: {vals:?}"
        );
    }
}

#[test]
fn phases_download_then_upload_then_both() {
    let doc = run_and_plot_at(
        "phases",
        &["phases", "--length", "2", "--delay", "1"],
        &[],
        "totals",
        &["TCP download", "TCP upload", "Ping (ms) ICMP"],
    );
    assert_eq!(doc["metadata"]["NAME"], "tcp_bidirectional");
    // Download only in the first phase, upload only in the second, both in the third (each
    // 2 s, 2 s apart, after 1 s idle: loads at 1–3, 5–7, 9–11 s).
    let x: Vec<f64> = doc["x_values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let loaded = |name: &str, t: f64| {
        let i = x.iter().position(|&v| v >= t).unwrap();
        doc["results"][name][i].as_f64().is_some_and(|v| v > 0.0)
    };
    let series = |name: &str| {
        x.iter()
            .zip(doc["results"][name].as_array().unwrap())
            .map(|(t, v)| format!("{t:.1}:{v}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let why = || {
        format!(
            "download {}\nupload {}\nnotes {}",
            series("TCP download"),
            series("TCP upload"),
            doc["metadata"]["NOTES"]
        )
    };
    assert!(
        loaded("TCP download", 2.0) && !loaded("TCP upload", 2.0),
        "{}",
        why()
    );
    assert!(
        !loaded("TCP download", 6.0) && loaded("TCP upload", 6.0),
        "{}",
        why()
    );
    assert!(
        loaded("TCP download", 10.0) && loaded("TCP upload", 10.0),
        "{}",
        why()
    );
    // One ping series across the whole timeline (each phase's session probes its part).
    let ping = doc["results"]["Ping (ms) ICMP"].as_array().unwrap();
    for t in [0.5, 4.0, 8.0, 11.5] {
        let i = x.iter().position(|&v| v >= t).unwrap();
        assert!(ping[i].is_number(), "no ping at {t} s");
    }
}
