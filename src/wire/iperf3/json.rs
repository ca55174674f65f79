//! The JSON conventions of iperf3's control messages: lenient number reading (cJSON parses every
//! number with `strtod`; 3.12 prints -1 as 18446744073709551615), case-insensitive keys, and a
//! compact writer that emits keys in iperf3's order and integral numbers as integers.

use serde_json::{Map, Value};

/// Looks a key up case-insensitively, as cJSON's `cJSON_GetObjectItem` does.
pub fn get<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    obj.get(key).or_else(|| {
        obj.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    })
}

/// Reads any JSON number as i64 the way iperf3 ends up with it: integers as is, unsigned values
/// of 2^63 and above as two's complement (3.12's `18446744073709551615` is -1), floats truncated.
/// Non-numbers give `None`.
pub fn lenient_i64(v: &Value) -> Option<i64> {
    if let Some(i) = v.as_i64() {
        return Some(i);
    }
    if let Some(u) = v.as_u64() {
        return Some(u as i64);
    }
    let f = v.as_f64()?;
    if !f.is_finite() {
        return None;
    }
    if f >= 9.223_372_036_854_776e18 {
        // strtod of 18446744073709551615 and friends: saturate, then wrap like C.
        return Some(if f >= 1.844_674_407_370_955e19 {
            -1
        } else {
            i64::MAX
        });
    }
    Some(f.max(i64::MIN as f64) as i64)
}

/// Reads any JSON number as f64 (integers too).
pub fn lenient_f64(v: &Value) -> Option<f64> {
    v.as_f64().filter(|f| f.is_finite())
}

/// A compact JSON object writer with keys in insertion order (serde_json's `Map` sorts them).
#[derive(Debug, Default)]
pub struct ObjWriter {
    out: String,
}

impl ObjWriter {
    pub fn new() -> Self {
        Self {
            out: String::from("{"),
        }
    }

    fn key(&mut self, key: &str) {
        if self.out.len() > 1 {
            self.out.push(',');
        }
        self.out.push('"');
        self.out.push_str(key);
        self.out.push_str("\":");
    }

    /// A value that is already JSON text.
    pub fn raw(&mut self, key: &str, json: &str) -> &mut Self {
        self.key(key);
        self.out.push_str(json);
        self
    }

    pub fn int(&mut self, key: &str, v: i64) -> &mut Self {
        self.raw(key, &v.to_string())
    }

    /// A float the way cJSON prints it: integral values without a fraction; non-finite as 0.
    pub fn float(&mut self, key: &str, v: f64) -> &mut Self {
        let text = fmt_f64(v);
        self.raw(key, &text)
    }

    pub fn boolean(&mut self, key: &str, v: bool) -> &mut Self {
        self.raw(key, if v { "true" } else { "false" })
    }

    pub fn string(&mut self, key: &str, v: &str) -> &mut Self {
        let text = Value::String(v.to_string()).to_string();
        self.raw(key, &text)
    }

    pub fn finish(&mut self) -> String {
        let mut s = std::mem::take(&mut self.out);
        s.push('}');
        s
    }
}

/// Formats a float for iperf3's JSON: shortest round-trip digits, never an exponent-less
/// huge string, integral values as integers, non-finite values as 0.
pub fn fmt_f64(v: f64) -> String {
    if !v.is_finite() {
        return "0".into();
    }
    if v == v.trunc() && v.abs() < 1e15 {
        return format!("{}", v as i64);
    }
    // serde_json gives the shortest digits that round-trip (no exponent for small values).
    Value::from(v).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_numbers() {
        let v: Value = serde_json::from_str(
            r#"[18446744073709551615, -1, 3, 2.9, "7", 1e300, 9223372036854775808]"#,
        )
        .unwrap();
        let a = v.as_array().unwrap();
        assert_eq!(lenient_i64(&a[0]), Some(-1));
        assert_eq!(lenient_i64(&a[1]), Some(-1));
        assert_eq!(lenient_i64(&a[2]), Some(3));
        assert_eq!(lenient_i64(&a[3]), Some(2));
        assert_eq!(lenient_i64(&a[4]), None);
        assert_eq!(lenient_i64(&a[5]), Some(-1));
        assert_eq!(lenient_i64(&a[6]), Some(i64::MIN));
    }

    #[test]
    fn writer_order_and_numbers() {
        let s = ObjWriter::new()
            .boolean("tcp", true)
            .int("omit", 0)
            .float("end_time", 2.000331)
            .float("jitter", 0.0)
            .float("j2", 5.532_243_688_992_486e-5)
            .string("title", "a\"b")
            .finish();
        assert_eq!(
            s,
            r#"{"tcp":true,"omit":0,"end_time":2.000331,"jitter":0,"j2":0.00005532243688992486,"title":"a\"b"}"#
        );
        let m: Map<String, Value> = serde_json::from_str(r#"{"Reverse":true}"#).unwrap();
        assert!(get(&m, "reverse").is_some());
    }
}
