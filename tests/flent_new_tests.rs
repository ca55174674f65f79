//! The flent tests added after rrul: `rrul_var --flows N`, `tcp_nup`/`tcp_ndown --flows N`,
//! `voip`, each run by the binary over loopback, written as .flent.gz with flent's own series
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
    let (addr, _service) =
        spawn_in_process("127.0.0.1:0".parse().unwrap(), Bounds::default()).unwrap();
    let dir = std::env::temp_dir().join(format!("rb-flent-new-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{name}.flent.gz"));
    let out = Command::new(env!("CARGO_BIN_EXE_routerbench"))
        .args(args)
        .args(["127.0.0.1", "-p", &addr.port().to_string(), "-q", "--flent"])
        .arg(&file)
        .output()
        .unwrap();
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
        return;
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
