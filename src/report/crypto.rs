//! Rendering of a crypto result: the readable table, the OpenWrt wiki row (docs/protocols/openssl-speed.md §1,
//! §6.5) and `openssl speed`'s own summary text (§2, §6.4) so existing awk scripts keep working.
//! Nothing here measures.

use crate::results::crypto::{
    Algorithm, AlgorithmKind, BulkResult, CryptoResult, CryptoSource, TimeBase, WIREGUARD_BLOCK,
};
use crate::results::device::DeviceInfo;

/// The 13 numeric column titles of the OpenWrt table, in order.
pub const ROW_TITLES: [&str; 13] = [
    "MD5",
    "SHA-1",
    "SHA-256",
    "SHA-512",
    "DES",
    "3DES",
    "AES-128",
    "AES-192",
    "AES-256",
    "RSA Sign",
    "RSA Verify",
    "DSA Sign",
    "DSA Verify",
];

/// The identity cells that start a row: see [`crate::report::device::row_identity_cells`]
/// (revision, then the cpuinfo values the wiki awk picks, or CPU model and BogoMIPS where it
/// picks none).
pub fn identity_cells(info: &DeviceInfo) -> Vec<String> {
    crate::report::device::row_identity_cells(info)
}

/// The 13 numbers of the row: hashes at 1024 bytes and ciphers at `cipher_block` bytes in
/// bytes/s (integers), RSA/DSA sign and verify per second with one decimal; `-` when absent.
pub fn row_numbers(result: &CryptoResult, cipher_block: u32) -> Vec<String> {
    let mut cells = Vec::with_capacity(13);
    for alg in Algorithm::ALL {
        match alg.row_block(cipher_block) {
            Some(size) => {
                cells.push(match result.rate(alg, size) {
                    Some(v) => format!("{:.0}", v.round()),
                    None => "-".into(),
                });
            }
            None => match result.public_key(alg) {
                Some(p) => {
                    cells.push(format!("{:.1}", p.sign_per_sec));
                    cells.push(format!("{:.1}", p.verify_per_sec));
                }
                None => cells.extend(["-".to_string(), "-".to_string()]),
            },
        }
    }
    cells
}

/// One row of the OpenWrt benchmark table:
/// The one-line warning for a row that must not sit next to the OpenWrt wiki's OpenSSL rows
/// (`None` for an OpenSSL row).
pub fn comparability_warning(result: &CryptoResult) -> Option<String> {
    if result.engine.wiki_comparable() {
        return None;
    }
    Some(format!(
        "this row comes from {}, not OpenSSL: do not compare it with the OpenWrt wiki's OpenSSL \
         rows (install openssl-util: its `openssl` program gives OpenSSL's row to any build, and \
         its libcrypto to a dynamically linked one; or import real `openssl speed` output with \
         `routerbench crypto --import`)",
        result.engine.version
    ))
}

/// The Engine cell: the engine's version, with ` -multi N` when N threads or processes were
/// summed (the wiki script's own mark for a multi-core row).
pub fn engine_cell(result: &CryptoResult) -> String {
    if result.threads > 1 {
        format!("{} -multi {}", result.engine.version, result.threads)
    } else {
        result.engine.version.clone()
    }
}

/// `| rev | cpu fields… | engine version | MD5 | … | DSA Verify |`.
pub fn openwrt_row(result: &CryptoResult, identity: &[String], cipher_block: u32) -> String {
    let mut cells: Vec<String> = identity.iter().map(|c| clean_cell(c)).collect();
    cells.push(clean_cell(&engine_cell(result)));
    cells.extend(row_numbers(result, cipher_block));
    format!("| {} |", cells.join(" | "))
}

/// The header line matching [`openwrt_row`]: `labels` name the identity cells (see
/// [`crate::report::device::row_identity_labels`]).
pub fn openwrt_header(labels: &[String]) -> String {
    let mut cells: Vec<&str> = labels.iter().map(String::as_str).collect();
    cells.push("Engine");
    cells.extend(ROW_TITLES);
    format!("| {} |", cells.join(" | "))
}

fn clean_cell(s: &str) -> String {
    s.replace('|', "/")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn size_title(s: u32) -> String {
    if s >= 1024 && s % 1024 == 0 {
        format!("{} KiB", s / 1024)
    } else {
        format!("{s} B")
    }
}

/// A readable table: MB/s (10^6 bytes/s) per block size, sign/s and verify/s, then notes.
pub fn render_table(result: &CryptoResult) -> String {
    let mut out = String::new();
    let base = match result.time_base {
        TimeBase::UserCpu => "per user-CPU second",
        TimeBase::Elapsed => "per wall-clock second",
        TimeBase::Imported => "as printed by openssl speed",
    };
    let how = match &result.source {
        CryptoSource::Measured {
            seconds_bulk,
            seconds_pkey,
            commands,
        } => {
            let ran = if commands.is_empty() {
                String::new()
            } else {
                format!(" (ran: {})", commands.join("; "))
            };
            format!("{seconds_bulk} s per block size, {seconds_pkey} s per sign/verify run{ran}")
        }
        CryptoSource::Imported { file, layout } => {
            format!("imported from {file} (openssl speed {layout} layout)")
        }
    };
    out.push_str(&format!(
        "Engine: {} ({}), {}, {}, {} thread{}\n\n",
        result.engine.version,
        result.engine.name,
        base,
        how,
        result.threads,
        if result.threads == 1 { "" } else { "s" }
    ));
    let (table, aead): (Vec<&BulkResult>, Vec<&BulkResult>) = result
        .bulk
        .iter()
        .partition(|b| b.algorithm.kind() != AlgorithmKind::Aead);
    out.push_str(&bulk_table(result, &table, "MB/s"));
    if !aead.is_empty() {
        if !table.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!(
            "WireGuard AEADs, {WIREGUARD_BLOCK}-byte packets:\n"
        ));
        out.push_str(&bulk_table(result, &aead, "MB/s"));
    }
    if !result.public_key.is_empty() {
        if !result.bulk.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!("{:<13} {:>10} {:>10}\n", "", "sign/s", "verify/s"));
        for p in &result.public_key {
            out.push_str(&format!(
                "{:<13} {:>10.1} {:>10.1}\n",
                format!("{} {}", p.algorithm.label_v3(), p.bits),
                p.sign_per_sec,
                p.verify_per_sec
            ));
        }
    }
    if !result.notes.is_empty() {
        out.push_str("\nNotes:\n");
        for n in &result.notes {
            out.push_str(&format!("  - {n}\n"));
        }
    }
    out
}

/// The block-size columns (indices into `result.block_sizes`) where one of `rows` has a value.
fn columns_of(result: &CryptoResult, rows: &[&BulkResult]) -> Vec<usize> {
    (0..result.block_sizes.len())
        .filter(|&i| {
            rows.iter()
                .any(|b| b.bytes_per_sec.get(i).is_some_and(Option::is_some))
        })
        .collect()
}

/// `rows` in MB/s at the sizes they were measured at.
fn bulk_table(result: &CryptoResult, rows: &[&BulkResult], title: &str) -> String {
    let mut out = String::new();
    if rows.is_empty() {
        return out;
    }
    let cols = columns_of(result, rows);
    out.push_str(&format!("{title:<17}"));
    for &i in &cols {
        out.push_str(&format!(" {:>10}", size_title(result.block_sizes[i])));
    }
    out.push('\n');
    for b in rows {
        out.push_str(&format!("{:<17}", b.algorithm.cli_name()));
        for &i in &cols {
            match b.bytes_per_sec.get(i).copied().flatten() {
                Some(v) => out.push_str(&format!(" {:>10.2}", v / 1e6)),
                None => out.push_str(&format!(" {:>10}", "-")),
            }
        }
        out.push('\n');
    }
    out
}

/// `openssl speed`'s summary text. Cipher labels follow `cipher_block` so the wiki awk's `$6`
/// reads that column: two words (`des cbc`, 1.1.1 style) for 1024, one word (`des-cbc`, 3.x
/// style) for 8192. The first line starts with `OpenSSL` so the awk finds a version in `$2`.
pub fn render_openssl(result: &CryptoResult, cipher_block: u32) -> String {
    let mut out = String::new();
    let tool = format!("routerbench {}", env!("CARGO_PKG_VERSION"));
    if result.engine.version.starts_with("OpenSSL ") {
        out.push_str(&format!(
            "{} ({tool}, engine {})\n",
            result.engine.version, result.engine.name
        ));
    } else {
        out.push_str(&format!(
            "OpenSSL-format {} ({tool}, engine {})\n",
            result.engine.version.replace(' ', "-"),
            result.engine.name
        ));
    }
    out.push_str(&format!("built on: {tool}\n"));
    let base = match result.time_base {
        TimeBase::UserCpu => "rates per user-CPU second",
        TimeBase::Elapsed => "rates per wall-clock second",
        TimeBase::Imported => "rates as imported from openssl speed",
    };
    out.push_str(&format!("options: {base}, {} thread(s)\n", result.threads));
    let (table, aead): (Vec<&BulkResult>, Vec<&BulkResult>) = result
        .bulk
        .iter()
        .partition(|b| b.algorithm.kind() != AlgorithmKind::Aead);
    let label = |a: Algorithm| {
        if cipher_block == 1024 {
            a.label_v1()
        } else {
            a.label_v3()
        }
    };
    if !table.is_empty() {
        out.push_str("The 'numbers' are in 1000s of bytes per second processed.\n");
        out.push_str(&openssl_table(result, &table, &label));
    }
    for p in &result.public_key {
        out.push_str(&format!("{:18}sign    verify    sign/s verify/s\n", ""));
        let t = |r: f64| if r > 0.0 { 1.0 / r } else { 0.0 };
        out.push_str(&format!(
            "{} {:4} bits {:8.6}s {:8.6}s {:8.1} {:8.1}\n",
            p.algorithm.label_v3(),
            p.bits,
            t(p.sign_per_sec),
            t(p.verify_per_sec),
            p.sign_per_sec,
            p.verify_per_sec
        ));
    }
    // The AEADs last, as `openssl speed -evp NAME -bytes 1456` prints them (upper-case EVP
    // names): after the rsa/dsa lines the wiki awk has flushed its cipher buffer, so they never
    // become row cells.
    if !aead.is_empty() {
        out.push_str(&openssl_table(result, &aead, &|a| a.evp_name()));
    }
    out
}

/// A `type … bytes` header and `%-13s` rows with ` %11.2fk` cells (` %11.2f ` up to 10000 B/s),
/// over the sizes `rows` were measured at.
fn openssl_table(
    result: &CryptoResult,
    rows: &[&BulkResult],
    label: &dyn Fn(Algorithm) -> &'static str,
) -> String {
    let mut out = String::new();
    let cols = columns_of(result, rows);
    out.push_str("type        ");
    for &i in &cols {
        out.push_str(&format!("{:7} bytes", result.block_sizes[i]));
    }
    out.push('\n');
    for b in rows {
        out.push_str(&format!("{:<13}", label(b.algorithm)));
        for &i in &cols {
            match b.bytes_per_sec.get(i).copied().flatten() {
                Some(v) if v > 10000.0 => out.push_str(&format!(" {:11.2}k", v / 1e3)),
                Some(v) => out.push_str(&format!(" {v:11.2} ")),
                None => out.push_str(&format!(" {:>11} ", "n/a")),
            }
        }
        out.push('\n');
    }
    out
}
