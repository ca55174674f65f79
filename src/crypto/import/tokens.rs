//! The small pieces of `openssl speed` text: rate cells (`73980.02k`, `0.00`), times (`0.000347s`),
//! row labels of every version (`des cbc`, `des-cbc`, `DES-CBC`, `aes-128 cbc`, `AES-128-CBC`),
//! and the `type 16 bytes 64 bytes …` header.

use crate::results::crypto::Algorithm;

/// A byte-rate cell of the summary table, in bytes per second.
///
/// OpenSSL prints `%11.2fk` (thousands of bytes/s) above 10000 B/s and `%11.2f` (bytes/s) below.
/// The decimal is parsed exactly, so `545674.97k` is 545674970 and not 545674969.99….
pub fn parse_rate_cell(tok: &str) -> Option<f64> {
    let (digits, scale) = match tok.strip_suffix('k') {
        Some(d) => (d, 1000u32),
        None => (tok, 1),
    };
    parse_decimal_scaled(digits, scale)
}

/// `digits` (`123.45`) times `scale`, exact when the result is an integer.
pub fn parse_decimal_scaled(digits: &str, scale: u32) -> Option<f64> {
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if int.len() + frac.len() > 30 {
        return None;
    }
    let mantissa: u128 = format!("{int}{frac}").parse().ok()?;
    let scaled = mantissa.checked_mul(u128::from(scale))?;
    let div = 10u128.checked_pow(u32::try_from(frac.len()).ok()?)?;
    if scaled % div == 0 {
        Some((scaled / div) as f64)
    } else {
        Some(scaled as f64 / div as f64)
    }
}

/// A plain non-negative number (`2880.0`, `53242.6`, `%f` values of `-mr`).
pub fn parse_number(tok: &str) -> Option<f64> {
    parse_decimal_scaled(tok, 1)
}

/// A time cell `0.000347s`.
pub fn parse_seconds(tok: &str) -> Option<f64> {
    tok.strip_suffix('s').and_then(parse_number)
}

/// Maps a summary-table label of any OpenSSL version (or `-evp` name) to the table's algorithm
/// or one of the WireGuard AEADs (`-evp chacha20-poly1305` / `aes-128-gcm`).
/// Unknown labels (`hmac(md5)`, `rc4`, `ghash` …) give `None`.
pub fn algorithm_for_label(label: &str) -> Option<Algorithm> {
    let l = label.trim().to_ascii_lowercase().replace(' ', "-");
    Some(match l.as_str() {
        "md5" => Algorithm::Md5,
        "sha1" | "sha-1" => Algorithm::Sha1,
        "sha256" | "sha-256" | "sha2-256" => Algorithm::Sha256,
        "sha512" | "sha-512" | "sha2-512" => Algorithm::Sha512,
        "des-cbc" | "des" => Algorithm::DesCbc,
        "des-ede3" | "des-ede3-cbc" => Algorithm::DesEde3,
        "aes-128-cbc" => Algorithm::Aes128Cbc,
        "aes-192-cbc" => Algorithm::Aes192Cbc,
        "aes-256-cbc" => Algorithm::Aes256Cbc,
        "chacha20-poly1305" => Algorithm::Chacha20Poly1305,
        "aes-128-gcm" | "id-aes128-gcm" => Algorithm::Aes128Gcm,
        _ => return None,
    })
}

/// Parses `type 16 bytes 64 bytes … 16384 bytes` into the sizes, or says what is wrong.
pub fn parse_type_header(line: &str) -> Result<Vec<u32>, String> {
    let mut toks = line.split_whitespace();
    if toks.next() != Some("type") {
        return Err("it does not start with `type`".into());
    }
    let rest: Vec<&str> = toks.collect();
    if rest.is_empty() || rest.len() % 2 != 0 {
        return Err("it is not a list of `<size> bytes` pairs".into());
    }
    let mut sizes = Vec::new();
    for pair in rest.chunks(2) {
        let size: u32 = pair[0]
            .parse()
            .map_err(|_| format!("`{}` is not a block size", pair[0]))?;
        if pair[1] != "bytes" || size == 0 {
            return Err(format!("`{} {}` is not `<size> bytes`", pair[0], pair[1]));
        }
        if sizes.last().is_some_and(|&last| last >= size) {
            return Err("the sizes are not increasing".into());
        }
        sizes.push(size);
    }
    Ok(sizes)
}

/// Shortens a line for an error message.
pub fn excerpt(line: &str) -> String {
    let clean: String = line
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if clean.chars().count() > 90 {
        format!("{}…", clean.chars().take(90).collect::<String>())
    } else {
        clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_cells_are_exact() {
        assert_eq!(parse_rate_cell("545674.97k"), Some(545_674_970.0));
        assert_eq!(parse_rate_cell("1268176.98k"), Some(1_268_176_980.0));
        assert_eq!(parse_rate_cell("25600.00k"), Some(25_600_000.0));
        assert_eq!(parse_rate_cell("0.00"), Some(0.0));
        assert_eq!(parse_rate_cell("9876.54"), Some(9876.54));
        assert_eq!(parse_rate_cell("12.5k"), Some(12_500.0));
        for bad in ["", "k", "-1.00", "1.2.3k", "abc", "nan", "1e5", "12kk"] {
            assert_eq!(parse_rate_cell(bad), None, "{bad}");
        }
    }

    #[test]
    fn times_and_numbers() {
        assert_eq!(parse_seconds("0.000347s"), Some(0.000347));
        assert_eq!(parse_seconds("0.000347"), None);
        assert_eq!(parse_number("2880.0"), Some(2880.0));
        assert_eq!(parse_number("53242.612000"), Some(53242.612));
    }

    #[test]
    fn labels_of_every_version() {
        assert_eq!(algorithm_for_label("des cbc"), Some(Algorithm::DesCbc));
        assert_eq!(algorithm_for_label("des-cbc"), Some(Algorithm::DesCbc));
        assert_eq!(
            algorithm_for_label("DES-EDE3-CBC"),
            Some(Algorithm::DesEde3)
        );
        assert_eq!(algorithm_for_label("des ede3"), Some(Algorithm::DesEde3));
        assert_eq!(
            algorithm_for_label("aes-128 cbc"),
            Some(Algorithm::Aes128Cbc)
        );
        assert_eq!(
            algorithm_for_label("AES-256-CBC"),
            Some(Algorithm::Aes256Cbc)
        );
        assert_eq!(algorithm_for_label("SHA2-256"), Some(Algorithm::Sha256));
        assert_eq!(algorithm_for_label("hmac(md5)"), None);
        assert_eq!(
            algorithm_for_label("AES-128-GCM"),
            Some(Algorithm::Aes128Gcm)
        );
        assert_eq!(
            algorithm_for_label("ChaCha20-Poly1305"),
            Some(Algorithm::Chacha20Poly1305)
        );
        assert_eq!(algorithm_for_label("aes-256-gcm"), None);
    }

    #[test]
    fn type_headers() {
        assert_eq!(
            parse_type_header(
                "type             16 bytes     64 bytes    256 bytes   1024 bytes   8192 bytes"
            ),
            Ok(vec![16, 64, 256, 1024, 8192])
        );
        assert!(parse_type_header("type 16 bytes 64").is_err());
        assert!(parse_type_header("type 64 bytes 16 bytes").is_err());
        assert!(parse_type_header("type x bytes").is_err());
        assert!(parse_type_header("type").is_err());
    }
}
