//! JSON parsing with one deserializer for every type.
//!
//! serde's `Deserialize` is generic over the deserializer, so a type parsed both from text
//! (`serde_json::from_str`/`from_slice`) and from a `serde_json::Value` (`results::load`, which
//! must see the schema first) is compiled twice, with everything it contains. Parsing through a
//! `Value` everywhere keeps one copy of each: on the mipsel router build the second copies were
//! about 0.7 MB of 4.1 MB (docs/cross-build.md, "Why the MIPS builds are big").

use serde::de::DeserializeOwned;

/// Parses JSON `text` into `T` through a `serde_json::Value`. A syntax error keeps its line and
/// column; a type error names the field, as `serde_json::from_value`'s do.
pub fn from_json<T: DeserializeOwned>(text: &[u8]) -> serde_json::Result<T> {
    let value: serde_json::Value = serde_json::from_slice(text)?;
    serde_json::from_value(value)
}

#[cfg(test)]
mod tests {
    use super::from_json;

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Row {
        name: String,
        bits: Option<u64>,
    }

    #[test]
    fn parses_like_from_slice_and_names_what_is_wrong() {
        let r: Row = from_json(br#"{"name": "eth0", "bits": 18446744073709551615}"#).unwrap();
        assert_eq!(
            r,
            Row {
                name: "eth0".into(),
                bits: Some(u64::MAX)
            }
        );
        let truncated = from_json::<Row>(b"{\"name\": \"eth")
            .unwrap_err()
            .to_string();
        assert!(truncated.contains("line 1"), "{truncated}");
        let wrong = from_json::<Row>(br#"{"name": 3}"#).unwrap_err().to_string();
        assert!(wrong.contains("invalid type"), "{wrong}");
        let missing = from_json::<Row>(br#"{"bits": 1}"#).unwrap_err().to_string();
        assert!(missing.contains("name"), "{missing}");
    }
}
