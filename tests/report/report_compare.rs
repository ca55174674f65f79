//! End-to-end: `routerbench compare` on the seed's two rows (a file in the wiki's format): the
//! v1/v2 ratio per column, the order of magnitude where the seed saw it, DES as "not measured",
//! the wiki and markdown layouts, and a row ranked among the reference rows (built in, or a
//! user's own table).
#![cfg(feature = "plots")]

use crate::support::{rb, streams};

const SEED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/seed-ea7500.txt"
);

fn line<'a>(text: &'a str, start: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line {start:?} in\n{text}"))
}

#[test]
fn seed_rows_compare_with_the_order_of_magnitude_and_des_not_measured() {
    let o = rb(&["compare", SEED]);
    let (ok, (out, err)) = (o.status.success(), streams(&o));
    assert!(ok, "{err}");
    assert!(line(&out, "MD5").ends_with("1.89×"), "{out}");
    assert!(line(&out, "AES-128").ends_with("4.34×"), "{out}");
    assert!(
        line(&out, "RSA Sign").contains("111.9/s") && line(&out, "RSA Sign").contains("10.5/s"),
        "{out}"
    );
    assert!(
        line(&out, "RSA Sign").ends_with("10.66× (order of magnitude)"),
        "{out}"
    );
    assert!(
        line(&out, "SHA-512").ends_with("7.09×"),
        "7× is not an order of magnitude"
    );
    let des = line(&out, "DES ");
    assert_eq!(des.matches("not measured").count(), 3, "{des}");
    assert!(
        !out.contains('⚠'),
        "same semantics, nothing flagged:\n{out}"
    );
    assert!(out.contains("RSA Sign 10.66×, RSA Verify 13.16×, DSA Sign 12.86×, DSA Verify 14.86×"));

    let o = rb(&["compare", SEED, "--format", "wiki"]);
    let (ok, (wiki, _)) = (o.status.success(), streams(&o));
    assert!(ok);
    assert!(
        wiki.contains("| OpenSSL 3.x | 98150740 | 127698940 |"),
        "{wiki}"
    );
    assert!(
        wiki.contains("| ratio | 1.89× |") && wiki.contains("| not measured |"),
        "{wiki}"
    );
    let o = rb(&["compare", SEED, "--format", "markdown"]);
    let (ok, (md, _)) = (o.status.success(), streams(&o));
    assert!(
        ok && md.contains("| RSA Sign | 111.9/s | 10.5/s | 10.66× (order of magnitude) |"),
        "{md}"
    );
}

#[test]
fn a_row_is_ranked_among_the_references() {
    let o = rb(&["compare", "ref:ea7500-v2", "--reference"]);
    let (ok, (out, err)) = (o.status.success(), streams(&o));
    assert!(ok, "{err}");
    let rsa = line(&out, "  RSA Sign");
    assert!(rsa.contains("above: ea7500-v1 111.9/s (0.09×)"), "{rsa}");
    assert!(
        rsa.contains("below: -"),
        "the slowest RSA of the set: {rsa}"
    );
    let aes = line(&out, "  AES-128");
    assert!(
        aes.contains("rank") && aes.contains("not like-for-like"),
        "{aes}"
    );

    // A user's own table, in the wiki's format.
    let dir = std::env::temp_dir().join(format!("rb-compare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
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
    assert!(line(&out, "  MD5").contains("rank  2 of 2"), "{out}");
    assert!(
        line(&out, "  RSA Sign").contains("above: row1 12.0/s (0.88×)"),
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
    let o = rb(&["compare", "ref:nope", "ref:ea7500-v1"]);
    let (ok, (_, err)) = (o.status.success(), streams(&o));
    assert!(
        !ok && err.contains("no built-in reference row `nope`"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
