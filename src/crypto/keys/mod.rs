//! The fixed keys embedded in the binary, so every run and every engine signs with the same key
//! (like `openssl speed`'s built-in test keys): RSA-2048 (e = 65537) and DSA-2048/160.

pub mod dsa2048;

/// RSA-2048 private key, PKCS#8 PEM, e = 65537 (generated once with `openssl genpkey`).
pub const RSA2048_PKCS8_PEM: &str = include_str!("rsa2048.pem");

/// The same DSA key as [`dsa2048`]'s components, PKCS#8 PEM, for libcrypto (written once with
/// `openssl asn1parse -genconf` from the components, then `openssl pkey`; the libcrypto engine's
/// tests check a signature made with it against the components).
pub const DSA2048_PKCS8_PEM: &str = include_str!("dsa2048.pem");

/// Joins the hex lines of a component and decodes them to big-endian bytes.
pub fn hex_bytes(lines: &[&str]) -> Vec<u8> {
    let hex: String = lines.concat();
    hex.as_bytes()
        .chunks(2)
        .map(|pair| {
            let digit = |c: u8| match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => 0,
            };
            (digit(pair[0]) << 4) | pair.get(1).map_or(0, |&c| digit(c))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dsa_components_have_the_right_sizes() {
        assert_eq!(hex_bytes(dsa2048::P).len(), 256);
        assert_eq!(hex_bytes(dsa2048::Q).len(), 20);
        assert_eq!(hex_bytes(dsa2048::G).len(), 256);
        assert_eq!(hex_bytes(dsa2048::X).len(), 20);
        assert_eq!(hex_bytes(dsa2048::Y).len(), 256);
        assert_eq!(hex_bytes(&["00ff", "10"]), vec![0, 255, 16]);
    }

    #[test]
    fn rsa_key_is_pem() {
        assert!(RSA2048_PKCS8_PEM.starts_with("-----BEGIN PRIVATE KEY-----"));
    }
}
