//! The machine-readable lines of `openssl speed -mr` (and of `-multi`, whose parent echoes every
//! child line as `Got: <line> from <n>`): `+H:16:64:…` sizes, `+F:<k>:<name>:<bytes/s>…` rates,
//! `+F2:<k>:<bits>:<sign>:<verify>[:<encrypt>:<decrypt>]` RSA, `+F3:<k>:<bits>:<sign>:<verify>`
//! DSA. Progress lines (`+DT:`, `+DTP:`, `+R:`, `+R2:` …) and other key types (`+F4:` …) are
//! recognised and skipped.

use super::tokens::{parse_number, parse_rate_cell};

/// One machine-readable line.
#[derive(Debug, Clone, PartialEq)]
pub enum MrLine {
    /// `+H`: the block sizes of the `+F` lines.
    Header(Vec<u32>),
    /// `+F`: bytes per second at each size.
    Bulk { name: String, values: Vec<f64> },
    /// `+F2`: RSA sign and verify figures (rates from 1.1.0 on, seconds per op in 1.0.x).
    Rsa { bits: u32, sign: f64, verify: f64 },
    /// `+F3`: DSA, same units as `+F2`.
    Dsa { bits: u32, sign: f64, verify: f64 },
    /// Progress or a key type the table does not show.
    Skipped,
}

/// Splits `Got: +F:… from 3` into the child number and the line; `None` if not such a line.
pub fn split_got(line: &str) -> Option<(u32, &str)> {
    let rest = line.strip_prefix("Got: ")?;
    let (inner, child) = rest.rsplit_once(" from ")?;
    Some((child.trim().parse().ok()?, inner))
}

/// Parses one line starting with `+`. The error says what was expected.
pub fn parse_mr(line: &str) -> Result<MrLine, String> {
    let line = line.trim_end();
    let (tag, rest) = line
        .split_once(':')
        .ok_or_else(|| "a `+TAG:` machine-readable line".to_string())?;
    let fields: Vec<&str> = rest.split(':').collect();
    match tag {
        "+H" => {
            let sizes: Option<Vec<u32>> = fields.iter().map(|f| f.trim().parse().ok()).collect();
            match sizes {
                Some(s) if !s.is_empty() && s.iter().all(|&x| x > 0) => Ok(MrLine::Header(s)),
                _ => Err("`+H:16:64:…` followed by block sizes".into()),
            }
        }
        "+F" => {
            if fields.len() < 3 {
                return Err("`+F:<index>:<name>:<bytes/s>:…`".into());
            }
            let values: Option<Vec<f64>> = fields[2..].iter().map(|f| parse_rate_cell(f)).collect();
            let values =
                values.ok_or_else(|| "`+F:<index>:<name>:` followed by numbers".to_string())?;
            Ok(MrLine::Bulk {
                name: fields[1].to_string(),
                values,
            })
        }
        "+F2" | "+F3" => {
            let expected = if tag == "+F2" {
                "`+F2:<index>:<bits>:<sign>:<verify>` (3.2+: also `:<encrypt>:<decrypt>`)"
            } else {
                "`+F3:<index>:<bits>:<sign>:<verify>`"
            };
            let ok_len = if tag == "+F2" {
                fields.len() == 4 || fields.len() == 6
            } else {
                fields.len() == 4
            };
            if !ok_len {
                return Err(expected.into());
            }
            let bits: u32 = fields[1].parse().map_err(|_| expected.to_string())?;
            let sign = parse_number(fields[2]).ok_or_else(|| expected.to_string())?;
            let verify = parse_number(fields[3]).ok_or_else(|| expected.to_string())?;
            Ok(if tag == "+F2" {
                MrLine::Rsa { bits, sign, verify }
            } else {
                MrLine::Dsa { bits, sign, verify }
            })
        }
        t if t.len() > 1 && t[1..].bytes().all(|b| b.is_ascii_alphanumeric()) => {
            Ok(MrLine::Skipped)
        }
        _ => Err("a `+TAG:` machine-readable line".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_kind() {
        assert_eq!(
            parse_mr("+H:16:64:256:1024:8192:16384"),
            Ok(MrLine::Header(vec![16, 64, 256, 1024, 8192, 16384]))
        );
        assert_eq!(
            parse_mr("+F:2:des cbc:100.00:200.50"),
            Ok(MrLine::Bulk {
                name: "des cbc".into(),
                values: vec![100.0, 200.5]
            })
        );
        assert_eq!(
            parse_mr("+F2:4:2048:2880.012000:53242.600000:50000.0:2900.0"),
            Ok(MrLine::Rsa {
                bits: 2048,
                sign: 2880.012,
                verify: 53242.6
            })
        );
        assert_eq!(
            parse_mr("+F3:1:2048:3791.2:4136.2"),
            Ok(MrLine::Dsa {
                bits: 2048,
                sign: 3791.2,
                verify: 4136.2
            })
        );
        assert_eq!(parse_mr("+DT:md5:3:16"), Ok(MrLine::Skipped));
        assert_eq!(parse_mr("+R:123:md5:3.000000"), Ok(MrLine::Skipped));
        assert_eq!(parse_mr("+F4:0:256:1.0:2.0"), Ok(MrLine::Skipped));
    }

    #[test]
    fn rejects_malformed() {
        assert!(parse_mr("+H:16:x").is_err());
        assert!(parse_mr("+H").is_err());
        assert!(parse_mr("+F:0:md5:1.0:abc").is_err());
        assert!(parse_mr("+F2:0:2048:1.0").is_err());
        assert!(parse_mr("+F3:0:2048:1.0:2.0:3.0:4.0").is_err());
        assert!(parse_mr("+:x").is_err());
    }

    #[test]
    fn got_lines() {
        assert_eq!(
            split_got("Got: +F:0:md5:1.00:2.00 from 3"),
            Some((3, "+F:0:md5:1.00:2.00"))
        );
        assert_eq!(split_got("Got: +H:16 from x"), None);
        assert_eq!(split_got("+H:16"), None);
    }
}
