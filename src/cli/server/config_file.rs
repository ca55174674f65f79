//! `routerbench server --config FILE`: the UCI file of the OpenWrt package
//! (`/etc/config/routerbench`, openwrt/routerbench/files/routerbench.config) turned into the
//! server's own flags before the command line is parsed, so every value goes through the same
//! parsing and checks as a flag would, and flags given after `--config` override the file.

use std::ffi::OsString;

use anyhow::{Context, bail};

use crate::util::uci;

/// The section type the server reads (`config routerbench 'server'`).
pub const SECTION_TYPE: &str = "routerbench";

/// UCI option → `routerbench server` flag (its value follows the flag).
pub const OPTIONS: &[(&str, &str)] = &[
    ("port", "--port"),
    ("bind", "--bind"),
    ("max_concurrent", "--max-concurrent"),
    ("max_duration", "--max-duration"),
    ("max_streams", "--max-streams"),
    ("max_buffer_mib", "--max-buffer-mib"),
    ("max_tests", "--max-tests"),
    ("rcv_timeout", "--rcv-timeout"),
    ("control_timeout", "--control-timeout"),
    ("handshake_timeout", "--handshake-timeout"),
    ("latency_udp_port", "--latency-udp-port"),
    ("affinity", "--affinity"),
    ("max_connections", "--max-connections"),
    ("max_conns_per_host", "--max-conns-per-host"),
    ("max_tests_per_host", "--max-tests-per-host"),
    ("max_total_streams", "--max-total-streams"),
    ("max_total_buffer_mib", "--max-total-buffer-mib"),
    ("max_threads", "--max-threads"),
    ("max_udp_rate", "--max-udp-rate"),
    ("server_bitrate_limit", "--server-bitrate-limit"),
    ("udp_hello_timeout", "--udp-hello-timeout"),
    ("rsa_private_key_path", "--rsa-private-key-path"),
    ("authorized_users_path", "--authorized-users-path"),
    ("time_skew_threshold", "--time-skew-threshold"),
    ("rsa_padding", "--rsa-padding"),
    ("token", "--token"),
    ("max_rb_sessions", "--max-rb-sessions"),
    ("max_rb_flows", "--max-rb-flows"),
    ("max_rb_duration", "--max-rb-duration"),
    ("monitor_token", "--monitor-token"),
    ("max_monitors", "--max-monitors"),
    ("web", "--web"),
    ("web_max_rate", "--web-max-rate"),
    ("metrics_file", "--metrics-file"),
    ("metrics_interval", "--metrics-interval"),
    ("metrics_file_families", "--metrics-file-families"),
    ("results_dir", "--results-dir"),
];

/// UCI boolean option → flag given when it is true (`1`, `yes`, `on`, `true`, `enabled`).
pub const SWITCHES: &[(&str, &str)] = &[("monitor", "--monitor"), ("metrics", "--metrics")];

/// Options only the procd init script reads.
pub const INIT_SCRIPT_ONLY: &[&str] = &["enabled"];

/// The server flags a UCI file stands for (first `routerbench` section; empty values are
/// left out, i.e. the default applies). Unknown options are errors naming file and line.
pub fn flags_from_uci(text: &str, file: &str) -> anyhow::Result<Vec<String>> {
    let sections = uci::parse(text).map_err(|e| anyhow::anyhow!("{file}: {e}"))?;
    let Some(section) = sections.iter().find(|s| s.kind == SECTION_TYPE) else {
        bail!(
            "{file}: no `config {SECTION_TYPE}` section (see the shipped /etc/config/routerbench)"
        );
    };
    let mut flags = Vec::new();
    for e in &section.entries {
        if INIT_SCRIPT_ONLY.contains(&e.key.as_str()) {
            continue;
        }
        if let Some((_, flag)) = SWITCHES.iter().find(|(k, _)| *k == e.key) {
            match e.value.trim() {
                "1" | "yes" | "on" | "true" | "enabled" => flags.push(flag.to_string()),
                "0" | "no" | "off" | "false" | "disabled" | "" => {}
                other => bail!(
                    "{file}: line {}: `{}` is a boolean (0 or 1), not `{other}`",
                    e.line,
                    e.key
                ),
            }
            continue;
        }
        let Some((_, flag)) = OPTIONS.iter().find(|(k, _)| *k == e.key) else {
            let known: Vec<&str> = OPTIONS
                .iter()
                .chain(SWITCHES.iter())
                .map(|(k, _)| *k)
                .chain(INIT_SCRIPT_ONLY.iter().copied())
                .collect();
            bail!(
                "{file}: line {}: unknown option `{}` (known: {})",
                e.line,
                e.key,
                known.join(", ")
            );
        };
        if e.is_list {
            bail!(
                "{file}: line {}: `{}` is an option, not a list",
                e.line,
                e.key
            );
        }
        if e.value.trim().is_empty() {
            continue;
        }
        // `--flag=value`, one word: a value such as `-1` stays a value (as two words clap would
        // take it for a flag and say "a value is required").
        let word = format!("{flag}={}", e.value.trim());
        check_option(&word).map_err(|why| {
            anyhow::anyhow!(
                "{file}: line {}: option {} '{}': {why}",
                e.line,
                e.key,
                e.value.trim()
            )
        })?;
        flags.push(word);
    }
    Ok(flags)
}

/// Checks one option as the server would (clap's parsing, then the server's limits), on its
/// own: an error is the option's. Options that only make sense with another
/// (`rsa_private_key_path` needs `authorized_users_path`) are checked together later.
fn check_option(word: &str) -> Result<(), String> {
    use clap::Parser;
    use clap::error::ErrorKind;
    match crate::cli::Cli::try_parse_from(["routerbench", "server", word]) {
        Ok(cli) => match cli.command {
            crate::cli::Command::Server(args) => {
                crate::cli::server::check(&args).map_err(|e| format!("{e:#}"))
            }
            _ => Ok(()),
        },
        Err(e) if e.kind() == ErrorKind::MissingRequiredArgument => Ok(()),
        Err(e) => {
            // clap's first line, without its "error: " and usage: the cause.
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("invalid value");
            Err(first.trim_start_matches("error: ").to_string())
        }
    }
}

/// Rewrites `routerbench server … --config FILE …` into `routerbench server <flags from FILE>
/// … --config FILE …`; any other command line is returned unchanged.
pub fn expand_argv(argv: Vec<OsString>) -> anyhow::Result<Vec<OsString>> {
    if argv.get(1).and_then(|a| a.to_str()) != Some("server") {
        return Ok(argv);
    }
    let mut file = None;
    for (i, a) in argv.iter().enumerate().skip(2) {
        match a.to_str() {
            Some("--config") => {
                let path = argv
                    .get(i + 1)
                    .context("--config needs a FILE (e.g. /etc/config/routerbench)")?;
                file = Some(path.clone());
            }
            Some(s) if s.starts_with("--config=") => {
                file = Some(OsString::from(&s["--config=".len()..]));
            }
            Some("--") => break,
            _ => {}
        }
    }
    let Some(file) = file else {
        return Ok(argv);
    };
    let shown = file.to_string_lossy().into_owned();
    let meta = std::fs::metadata(&file).with_context(|| format!("cannot read {shown}"))?;
    if meta.len() > uci::MAX_BYTES as u64 {
        bail!("{shown} is larger than 1 MiB: not a UCI file");
    }
    let text = std::fs::read_to_string(&file).with_context(|| format!("cannot read {shown}"))?;
    let flags = flags_from_uci(&text, &shown)?;
    let mut out = argv[..2].to_vec();
    out.extend(flags.into_iter().map(OsString::from));
    out.extend(argv[2..].iter().cloned());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// The file the OpenWrt package installs as /etc/config/routerbench.
    const SHIPPED: &str = include_str!("../../../openwrt/routerbench/files/routerbench.config");

    fn server_args(argv: &[&str]) -> crate::cli::server::ServerArgs {
        let argv = argv.iter().map(OsString::from).collect();
        let argv = expand_argv(argv).unwrap();
        match crate::cli::Cli::try_parse_from(argv).unwrap().command {
            crate::cli::Command::Server(a) => a,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn shipped_defaults_parse_to_the_servers_defaults() {
        let flags = flags_from_uci(SHIPPED, "routerbench.config").unwrap();
        assert!(flags.iter().any(|f| f.starts_with("--port=")), "{flags:?}");
        let dir = std::env::temp_dir().join(format!("rb-uci-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("routerbench");
        std::fs::write(&path, SHIPPED).unwrap();
        let p = path.to_str().unwrap();
        let from_file = crate::cli::server::config(&server_args(&["rb", "server", "--config", p]));
        let plain = crate::cli::server::config(&server_args(&["rb", "server"]));
        assert_eq!(format!("{from_file:?}"), format!("{plain:?}"));
        // A flag after --config overrides the file.
        let a = server_args(&["rb", "server", "--config", p, "-p", "27001"]);
        assert_eq!(a.port, 27001);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn values_map_to_flags_and_bad_ones_are_refused_with_the_line() {
        let text = "config routerbench 'server'\n\toption enabled '1'\n\toption port '27002'\n\
                    \toption bind '127.0.0.1'\n\toption max_concurrent '2'\n";
        let flags = flags_from_uci(text, "f").unwrap();
        assert_eq!(
            flags,
            ["--port=27002", "--bind=127.0.0.1", "--max-concurrent=2"]
        );
        // A bad value names the file, the line, the option and the cause.
        for (text, want) in [
            ("option max_concurrent '-1'", "invalid value '-1'"),
            ("option max_connections '0'", "would refuse every client"),
            ("option max_threads '1'", "below the 16 threads"),
            ("option port 'http'", "invalid value 'http'"),
        ] {
            let e = flags_from_uci(&format!("config routerbench\n\t{text}\n"), "/etc/config/rb")
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with("/etc/config/rb: line 2: option ") && e.contains(want),
                "{text}: {e}"
            );
        }
        let e = flags_from_uci("config routerbench\n\toption prot '1'\n", "f")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 2") && e.contains("`prot`") && e.contains("port"),
            "{e}"
        );
        let flags = flags_from_uci(
            "config routerbench\n\toption monitor '1'\n\toption monitor_token 't'\n",
            "f",
        )
        .unwrap();
        assert_eq!(flags, ["--monitor", "--monitor-token=t"]);
        let e = flags_from_uci("config routerbench\n\toption monitor 'maybe'\n", "f")
            .unwrap_err()
            .to_string();
        assert!(e.contains("boolean"), "{e}");
        let e = flags_from_uci("config other\n", "f")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no `config routerbench`"), "{e}");
    }

    #[test]
    fn other_commands_are_untouched() {
        let argv: Vec<OsString> = ["rb", "client", "--config", "x"]
            .map(OsString::from)
            .to_vec();
        assert_eq!(expand_argv(argv.clone()).unwrap(), argv);
        let argv: Vec<OsString> = ["rb", "server", "--config", "/nonexistent/rb"]
            .map(OsString::from)
            .to_vec();
        let e = expand_argv(argv).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/rb"), "{e}");
    }
}
