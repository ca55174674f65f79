//! Import of saved `openssl speed` output, one fixture per format (docs/protocols/openssl-speed.md §2): the real
//! OpenSSL 3.0.19 captures of this machine (stdout only, with stderr mixed in, -evp, legacy DES,
//! -mr, -multi 2) and fixtures written from the documented formats (1.0.2, 1.1.1, 3.5 with the
//! 4-column RSA line). Parsed values and rendered rows are compared byte for byte.

use routerbench::crypto::import::parse;
use routerbench::report::crypto::{openwrt_row, render_openssl};
use routerbench::results::crypto::{Algorithm, CryptoResult, CryptoSource};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/openssl/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn import(name: &str) -> CryptoResult {
    parse(&fixture(name), name).unwrap_or_else(|e| panic!("{e}"))
}

fn layout(r: &CryptoResult) -> &str {
    match &r.source {
        CryptoSource::Imported { layout, .. } => layout,
        other => panic!("not imported: {other:?}"),
    }
}

fn rates(r: &CryptoResult, alg: Algorithm) -> Vec<Option<f64>> {
    r.bulk
        .iter()
        .find(|b| b.algorithm == alg)
        .map(|b| b.bytes_per_sec.clone())
        .unwrap_or_else(|| panic!("{alg:?} missing"))
}

fn all(v: &[f64]) -> Vec<Option<f64>> {
    v.iter().copied().map(Some).collect()
}

fn id() -> Vec<String> {
    vec!["r23633".into(), "Qualcomm Atheros IPQ8064".into()]
}

#[test]
fn openssl_3_0_stdout_capture_the_real_sample() {
    let r = import("openssl-3.0.19-stdout.txt");
    assert_eq!(r.engine.version, "OpenSSL 3.0.19");
    assert_eq!(layout(&r), "3.0-3.1");
    assert_eq!(r.block_sizes, vec![16, 64, 256, 1024, 8192, 16384]);
    assert_eq!(
        rates(&r, Algorithm::Md5),
        all(&[
            73980020.0,
            201180730.0,
            410523550.0,
            545674970.0,
            617139770.0,
            616922030.0
        ])
    );
    assert_eq!(rates(&r, Algorithm::DesCbc), all(&[0.0; 6]));
    let des = r
        .bulk
        .iter()
        .find(|b| b.algorithm == Algorithm::DesCbc)
        .unwrap();
    assert!(des.note.as_deref().unwrap().contains("legacy provider"));
    let rsa = r.public_key(Algorithm::Rsa2048).unwrap();
    assert_eq!((rsa.sign_per_sec, rsa.verify_per_sec), (2880.0, 53242.6));
    let dsa = r.public_key(Algorithm::Dsa2048).unwrap();
    assert_eq!((dsa.sign_per_sec, dsa.verify_per_sec), (3791.2, 4136.2));
    // The wiki awk's row of this sample (docs/protocols/openssl-speed.md §1.3), with the version cell the awk loses and DES as 0.
    assert_eq!(
        openwrt_row(&r, &id(), 8192),
        "| r23633 | Qualcomm Atheros IPQ8064 | OpenSSL 3.0.19 | 545674970 | 1268176980 | \
         1170388560 | 519599860 | 0 | 25600000 | 1447058290 | 1220164830 | 1040298410 | 2880.0 | \
         53242.6 | 3791.2 | 4136.2 |"
    );
    // §1.4's version-robust awk with CB=1024 on the same sample.
    assert_eq!(
        openwrt_row(&r, &[], 1024),
        "| OpenSSL 3.0.19 | 545674970 | 1268176980 | 1170388560 | 519599860 | 0 | 25993220 | \
         1431272110 | 1207683460 | 1061419040 | 2880.0 | 53242.6 | 3791.2 | 4136.2 |"
    );
}

#[test]
fn stderr_lines_mixed_in_give_the_same_result() {
    let plain = import("openssl-3.0.19-stdout.txt");
    let mixed = import("openssl-3.0.19-with-stderr.txt");
    assert_eq!(plain.bulk, mixed.bulk);
    assert_eq!(plain.public_key, mixed.public_key);
    assert!(
        mixed.notes.iter().any(|n| n.contains("DES-CBC")),
        "the stderr fetch error is kept as a note: {:?}",
        mixed.notes
    );
}

#[test]
fn openssl_1_0_2_has_five_sizes_and_hmac_is_skipped() {
    let r = import("openssl-1.0.2u-mips.txt");
    assert_eq!(r.engine.version, "OpenSSL 1.0.2u");
    assert_eq!(layout(&r), "1.0.2");
    assert_eq!(r.block_sizes, vec![16, 64, 256, 1024, 8192]);
    assert_eq!(
        rates(&r, Algorithm::DesCbc),
        all(&[5520220.0, 6010500.0, 6140330.0, 6170340.0, 6180860.0])
    );
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("hmac(md5)") && n.contains("rc4"))
    );
    assert_eq!(
        openwrt_row(&r, &[], 8192),
        "| OpenSSL 1.0.2u | 51849560 | 38844420 | 18651480 | 6513660 | 6180860 | 2408450 | \
         15174310 | 12962470 | 11313150 | 10.5 | 413.5 | 31.4 | 33.2 |"
    );
    // There is no 16384 column in 1.0.2.
    assert_eq!(r.rate(Algorithm::Md5, 16384), None);
}

#[test]
fn openssl_1_1_1_two_word_labels_reproduce_the_public_row() {
    let r = import("openssl-1.1.1m-aarch64.txt");
    assert_eq!(r.engine.version, "OpenSSL 1.1.1m");
    assert_eq!(layout(&r), "1.1.1");
    // The public 1.1.1m row (docs/protocols/openssl-speed.md §1.3) reads ciphers at 1024 bytes.
    assert_eq!(
        openwrt_row(&r, &[], 1024),
        "| OpenSSL 1.1.1m | 743024330 | 1877378050 | 1706296320 | 672873810 | 86692520 | \
         32900100 | 304238930 | 257782440 | 240953340 | 1799.9 | 61001.0 | 4351.5 | 4701.4 |"
    );
    assert_eq!(r.rate(Algorithm::Aes128Cbc, 8192), Some(316408490.0));
}

#[test]
fn openssl_3_2_plus_rsa_line_with_encrypt_and_decrypt() {
    let r = import("openssl-3.5.6-rsa4.txt");
    assert_eq!(r.engine.version, "OpenSSL 3.5.6");
    assert_eq!(layout(&r), "3.2+");
    let rsa = r.public_key(Algorithm::Rsa2048).unwrap();
    // sign/s and verify/s, not the encrypt/decrypt times the old awk took; the KEM `rsa2048`
    // row after it is not RSA's row.
    assert_eq!((rsa.sign_per_sec, rsa.verify_per_sec), (247.7, 9764.1));
    assert_eq!(
        openwrt_row(&r, &["r28000".to_string(), "RK3588S".to_string()], 8192),
        "| r28000 | RK3588S | OpenSSL 3.5.6 | 422395900 | 988246990 | 998605140 | 305033220 | \
         59561300 | 21678760 | 1822285820 | 1520061100 | 1303369050 | 247.7 | 9764.1 | 706.9 | \
         742.6 |"
    );
}

#[test]
fn evp_upper_case_labels() {
    let r = import("openssl-3.0.19-evp.txt");
    assert_eq!(layout(&r), "3.0-3.1 (-evp)");
    assert_eq!(
        rates(&r, Algorithm::Aes128Cbc),
        all(&[
            1076620270.0,
            1392824960.0,
            1427764220.0,
            1433394180.0,
            1434681340.0,
            1431846910.0
        ])
    );
    assert_eq!(
        openwrt_row(&r, &[], 8192),
        "| OpenSSL 3.0.19 | - | - | - | - | - | - | 1434681340 | - | - | - | - | - | - |"
    );
}

#[test]
fn legacy_provider_des_run() {
    let r = import("openssl-3.0.19-legacy-des.txt");
    assert_eq!(r.rate(Algorithm::DesCbc, 8192), Some(66215940.0));
    assert_eq!(r.rate(Algorithm::DesEde3, 1024), Some(25902080.0));
    assert!(r.bulk.iter().all(|b| b.note.is_none()));
}

#[test]
fn machine_readable_mr_lines() {
    for name in ["openssl-3.0.19-mr.txt", "openssl-3.0.19-mr-with-stderr.txt"] {
        let r = import(name);
        assert_eq!(layout(&r), "mr", "{name}");
        assert_eq!(r.threads, 1);
        assert_eq!(
            rates(&r, Algorithm::Md5),
            all(&[
                72548782.80,
                200051873.68,
                438622720.00,
                588831030.30,
                661384016.16,
                659685376.00
            ])
        );
        let rsa = r.public_key(Algorithm::Rsa2048).unwrap();
        assert_eq!(
            (rsa.sign_per_sec, rsa.verify_per_sec),
            (1493.939394, 52039.393939)
        );
        assert_eq!(
            openwrt_row(&r, &[], 8192),
            "| OpenSSL unknown | 588831030 | - | - | - | - | 26892929 | 1194866540 | - \
             | - | 1493.9 | 52039.4 | 3397.0 | 3500.0 |"
        );
    }
}

#[test]
fn multi_parent_output_uses_the_summed_summary() {
    for name in [
        "openssl-3.0.19-multi2.txt",
        "openssl-3.0.19-multi2-with-stderr.txt",
    ] {
        let r = import(name);
        assert_eq!(r.threads, 2, "{name}");
        assert_eq!(layout(&r), "3.0-3.1");
        // The 3.0 -multi summary has no `type` header: sizes come from the children's +H line.
        assert_eq!(r.block_sizes, vec![16, 64, 256, 1024, 8192, 16384]);
        // The summary equals the sum of the two children's +F values (574176256 + 563570688).
        assert_eq!(r.rate(Algorithm::Md5, 1024), Some(1137746940.0));
        assert_eq!(
            openwrt_row(&r, &[], 8192),
            "| OpenSSL 3.0.19 -multi 2 | 1137746940 | - | - | - | - | 35165420 | 1708924930 | - | \
             - | 1625.8 | 48013.0 | 3474.0 | 7737.9 |"
        );
    }
}

#[test]
fn multi_children_lines_alone_are_summed() {
    // Only the `Got:` lines (the summary cut off): the children's rates are summed.
    let text = String::from_utf8(fixture("openssl-3.0.19-multi2.txt")).unwrap();
    let got: String = text
        .lines()
        .filter(|l| l.starts_with("Got:") || l.starts_with("Forked"))
        .map(|l| format!("{l}\n"))
        .collect();
    let r = parse(got.as_bytes(), "got-only").unwrap();
    assert_eq!(r.threads, 2);
    assert_eq!(
        r.rate(Algorithm::Md5, 1024),
        Some(574176256.0 + 563570688.0)
    );
    let dsa = r.public_key(Algorithm::Dsa2048).unwrap();
    assert_eq!(dsa.sign_per_sec, 1883.0 + 1591.0);
}

#[test]
fn openssl_format_round_trips_through_the_importer() {
    for name in [
        "openssl-3.0.19-stdout.txt",
        "openssl-1.1.1m-aarch64.txt",
        "openssl-1.0.2u-mips.txt",
        "openssl-3.5.6-rsa4.txt",
    ] {
        let r = import(name);
        for cb in [1024, 8192] {
            let text = render_openssl(&r, cb);
            let back = parse(text.as_bytes(), "rendered").unwrap_or_else(|e| panic!("{e}"));
            for alg in Algorithm::ALL {
                for &size in &r.block_sizes {
                    assert_eq!(
                        back.rate(alg, size),
                        r.rate(alg, size),
                        "{name} {cb} {alg:?}"
                    );
                }
            }
            assert_eq!(
                openwrt_row(&back, &[], cb),
                openwrt_row(&r, &[], cb),
                "{name} {cb}"
            );
        }
    }
}

#[test]
fn the_3_0_sample_renders_as_openssl_text_byte_for_byte() {
    let r = import("openssl-3.0.19-stdout.txt");
    let text = render_openssl(&r, 8192);
    let sample = String::from_utf8(fixture("openssl-3.0.19-stdout.txt")).unwrap();
    // The table and the rsa/dsa blocks are exactly openssl's own lines.
    let table: Vec<&str> = sample.lines().skip(6).collect();
    let ours: Vec<&str> = text.lines().skip(4).collect();
    assert_eq!(ours, table);
}

#[test]
fn no_panic_on_any_prefix_or_mutation() {
    for name in [
        "openssl-3.0.19-with-stderr.txt",
        "openssl-3.0.19-multi2.txt",
        "openssl-1.0.2u-mips.txt",
        "openssl-3.5.6-rsa4.txt",
    ] {
        let data = fixture(name);
        for end in 0..=data.len() {
            let _ = parse(&data[..end], name);
        }
        // Deterministic byte mutations (xorshift), one at a time.
        let mut x: u64 = 0x9e3779b97f4a7c15;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut m = data.clone();
            let at = (x % m.len() as u64) as usize;
            m[at] = (x >> 32) as u8;
            if let Err(e) = parse(&m, name) {
                assert!(!e.to_string().is_empty());
            }
        }
    }
}

#[test]
fn single_size_bytes_option_output() {
    // `openssl speed -bytes 1024 md5 sha256` (3.x): the `type` header has one size.
    let text = "version: 3.0.19\n\
                The 'numbers' are in 1000s of bytes per second processed.\n\
                type           1024 bytes\n\
                md5             596641.36k\n\
                sha256         1257400.00k\n";
    let r = parse(text.as_bytes(), "bytes1024").unwrap();
    assert_eq!(r.block_sizes, vec![1024]);
    assert_eq!(r.rate(Algorithm::Md5, 1024), Some(596641360.0));
    assert_eq!(
        openwrt_row(&r, &[], 8192),
        "| OpenSSL 3.0.19 | 596641360 | - | 1257400000 | - | - | - | - | - | - | - | - | - | - |"
    );
}

#[test]
fn mr_import_renders_openssl_text_that_imports_again() {
    let r = import("openssl-3.0.19-mr.txt");
    let text = render_openssl(&r, 8192);
    assert!(text.starts_with("OpenSSL unknown (routerbench "), "{text}");
    let back = parse(text.as_bytes(), "rendered").unwrap_or_else(|e| panic!("{e}"));
    // openssl's `%.2fk` keeps 10 B/s: 26892929.29 B/s prints as 26892.93k.
    assert_eq!(
        openwrt_row(&back, &[], 8192),
        "| OpenSSL unknown | 588831030 | - | - | - | - | 26892930 | 1194866540 | - | - | 1493.9 \
         | 52039.4 | 3397.0 | 3500.0 |"
    );
}
