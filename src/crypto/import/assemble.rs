//! Turning what the parser collected into a `CryptoResult`: the summary table if there is one,
//! else the `-mr` children summed; the layout name; notes for zero rows and skipped rows.

use super::{BulkRow, ImportError, Parser};
use crate::results::crypto::{
    Algorithm, BulkResult, CryptoResult, CryptoSource, EngineInfo, PublicKeyResult, TimeBase,
};

impl Parser {
    pub(super) fn finish(mut self) -> Result<CryptoResult, ImportError> {
        let from_mr = self.rows.is_empty() && self.pkey.is_empty();
        if from_mr
            && self
                .mr
                .values()
                .all(|c| c.bulk.is_empty() && c.pkey.is_empty())
        {
            let (line, problem, expected) = match &self.sizes {
                Some((_, h)) => (
                    *h,
                    "the `type` header is not followed by any result row",
                    "rows such as `md5  73980.02k …` after it; the output looks truncated",
                ),
                None if self.progress_lines > 0 => (
                    0,
                    "only the progress (`Doing …`) lines of `openssl speed` were found: they go \
                     to stderr, the results to stdout",
                    "the standard output of `openssl speed` too (`openssl speed … | tee FILE` \
                     captures it; `2>&1` adds the progress lines, which is fine)",
                ),
                None => (
                    0,
                    "no `openssl speed` results found",
                    "the summary `openssl speed` prints on standard output (`type 16 bytes …`, \
                     `md5 …`, `rsa 2048 bits …`) or its `-mr` lines (`+F:…`)",
                ),
            };
            let text = if line == 0 {
                String::new()
            } else {
                "type …".into()
            };
            return Err(ImportError {
                source_name: self.source_name.clone(),
                line,
                text,
                problem: problem.into(),
                expected: expected.into(),
            });
        }
        let children = self.forked.len().max(1) as u32;
        if from_mr {
            self.take_mr();
        } else if children > 1 {
            self.notes.push(format!(
                "the summary of `-multi {children}` is used (rates summed over the processes)"
            ));
        }
        let layout = self.layout(from_mr);
        let mut sizes: Vec<u32> = self.rows.values().flat_map(|r| r.sizes.clone()).collect();
        sizes.sort();
        sizes.dedup();
        let bulk = self
            .rows
            .iter()
            .map(|(&alg, row)| {
                let values = sizes
                    .iter()
                    .map(|s| {
                        let col = row.sizes.iter().position(|x| x == s)?;
                        row.values.get(col).copied()
                    })
                    .collect::<Vec<_>>();
                let all_zero = row.values.iter().all(|&v| v == 0.0);
                let note = all_zero.then(|| zero_note(alg));
                BulkResult {
                    algorithm: alg,
                    bytes_per_sec: values,
                    note,
                }
            })
            .collect::<Vec<_>>();
        for b in &bulk {
            if let Some(n) = &b.note {
                self.notes.push(format!("{}: {n}", b.algorithm.cli_name()));
            }
        }
        if !self.ignored.is_empty() {
            let names: Vec<&str> = self.ignored.iter().map(String::as_str).collect();
            self.notes.push(format!(
                "rows not in the OpenWrt table were skipped: {}",
                names.join(", ")
            ));
        }
        let public_key = self
            .pkey
            .iter()
            .map(|(&alg, &(sign, verify))| PublicKeyResult {
                algorithm: alg,
                bits: alg.bits(),
                sign_per_sec: sign,
                verify_per_sec: verify,
                note: None,
            })
            .collect();
        Ok(CryptoResult {
            engine: EngineInfo {
                name: "openssl-speed".into(),
                version: self
                    .version
                    .clone()
                    .unwrap_or_else(|| "OpenSSL unknown".into()),
            },
            source: CryptoSource::Imported {
                file: self.source_name.clone(),
                layout,
            },
            time_base: TimeBase::Imported,
            threads: children,
            block_sizes: sizes,
            bulk,
            public_key,
            notes: self.notes,
        })
    }

    /// Sums the `-mr` figures of every child (rates; 1.0.x gave seconds per RSA/DSA op).
    fn take_mr(&mut self) {
        let v1_0 = self
            .version
            .as_deref()
            .is_some_and(|v| v.starts_with("OpenSSL 1.0") || v.starts_with("OpenSSL 0."))
            || (self.version.is_none()
                && self
                    .mr
                    .values()
                    .any(|c| c.sizes.as_ref().is_some_and(|s| s.len() == 5)));
        for child in self.mr.values() {
            for (&alg, (sizes, values)) in &child.bulk {
                let row = self.rows.entry(alg).or_insert_with(|| BulkRow {
                    sizes: sizes.clone(),
                    values: vec![0.0; sizes.len()],
                    line: 0,
                });
                for (acc, v) in row.values.iter_mut().zip(values) {
                    *acc += v;
                }
            }
            for (&alg, &(s, v)) in &child.pkey {
                let (s, v) = if v1_0 { (recip(s), recip(v)) } else { (s, v) };
                let acc = self.pkey.entry(alg).or_insert((0.0, 0.0));
                acc.0 += s;
                acc.1 += v;
            }
        }
        if v1_0 {
            self.notes
                .push("OpenSSL 1.0.x -mr gives seconds per RSA/DSA op; converted to ops/s".into());
        }
    }

    fn layout(&self, from_mr: bool) -> String {
        let v = self.version.as_deref().unwrap_or("");
        let five_sizes = self.sizes.as_ref().is_some_and(|(s, _)| s.len() == 5);
        let l = if from_mr {
            "mr"
        } else if self.rsa_four_columns || v.starts_with("OpenSSL 3.") && !is_3_0_or_3_1(v) {
            "3.2+"
        } else if v.starts_with("OpenSSL 1.0") || five_sizes {
            "1.0.2"
        } else if v.starts_with("OpenSSL 1.") || self.two_word_labels {
            "1.1.1"
        } else if v.starts_with("OpenSSL 3.") || !self.rows.is_empty() {
            "3.0-3.1"
        } else {
            "unknown"
        };
        if self.upper_case_labels && !from_mr {
            format!("{l} (-evp)")
        } else {
            l.to_string()
        }
    }
}

fn is_3_0_or_3_1(v: &str) -> bool {
    v.starts_with("OpenSSL 3.0") || v.starts_with("OpenSSL 3.1")
}

fn recip(x: f64) -> f64 {
    if x > 0.0 { 1.0 / x } else { 0.0 }
}

/// Why a whole row reads 0.00.
fn zero_note(alg: Algorithm) -> String {
    if alg == Algorithm::DesCbc {
        "reads 0.00: OpenSSL 3 has single DES only in the legacy provider (rerun with \
         `-provider legacy -provider default`)"
            .into()
    } else {
        "reads 0.00: openssl could not run it".into()
    }
}
