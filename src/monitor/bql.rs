//! Byte queue limits (docs/protocols/router-signals.md §A7): per device and TX queue,
//! `/sys/class/net/<dev>/queues/tx-<n>/byte_queue_limits/{inflight,limit}` — the bytes handed to
//! the driver and not yet completed (TX ring occupancy) and the current dynamic limit. Both are
//! gauges. Devices without BQL (veth, lo) have no such directory: that is normal and gives no
//! entry.

use std::path::Path;

/// At most this many devices are read per sample.
pub const MAX_DEVICES: usize = 64;
/// At most this many TX queues per device.
pub const MAX_TX_QUEUES: usize = 64;
/// At most this many TX queues per reading over all devices (two small files each).
pub const MAX_TOTAL_QUEUES: usize = 256;

/// One TX queue's reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxQueue {
    pub queue: u32,
    pub inflight: u64,
    pub limit: u64,
}

/// Every BQL queue of one device, sorted by queue number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceBql {
    pub dev: String,
    pub queues: Vec<TxQueue>,
}

impl DeviceBql {
    /// Bytes in flight over all TX queues.
    pub fn inflight(&self) -> u64 {
        self.queues.iter().map(|q| q.inflight).sum()
    }
    /// Sum of the queues' limits.
    pub fn limit(&self) -> u64 {
        self.queues.iter().map(|q| q.limit).sum()
    }
}

/// A BQL file's value: one decimal number and a newline.
pub fn parse_value(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

/// `tx-<n>` → n.
fn tx_index(name: &str) -> Option<u32> {
    name.strip_prefix("tx-")?.parse().ok()
}

/// Reads every device under `<root>/sys/class/net` that has BQL, sorted by device name.
/// `None` when the directory itself is missing (no sysfs); devices without BQL are left out.
pub fn read(root: &Path) -> Option<Vec<DeviceBql>> {
    let net = root.join("sys/class/net");
    let dir = std::fs::read_dir(&net).ok()?;
    let mut names: Vec<String> = dir
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    let mut out = Vec::new();
    let mut total = 0usize;
    for dev in names {
        if out.len() >= MAX_DEVICES || total >= MAX_TOTAL_QUEUES {
            break;
        }
        let Ok(qdir) = std::fs::read_dir(net.join(&dev).join("queues")) else {
            continue;
        };
        let mut queues: Vec<TxQueue> = Vec::new();
        for e in qdir.flatten() {
            if queues.len() >= MAX_TX_QUEUES || total + queues.len() >= MAX_TOTAL_QUEUES {
                break;
            }
            let Some(n) = e.file_name().to_str().and_then(tx_index) else {
                continue;
            };
            let bql = e.path().join("byte_queue_limits");
            let get = |f: &str| {
                std::fs::read_to_string(bql.join(f))
                    .ok()
                    .and_then(|t| parse_value(&t))
            };
            if let (Some(inflight), Some(limit)) = (get("inflight"), get("limit")) {
                queues.push(TxQueue {
                    queue: n,
                    inflight,
                    limit,
                });
            }
        }
        if !queues.is_empty() {
            total += queues.len();
            queues.sort_by_key(|q| q.queue);
            out.push(DeviceBql { dev, queues });
        }
    }
    Some(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A fixture tree: eth0 with two BQL TX queues (and an rx queue), veth0 with a TX queue
    /// but no byte_queue_limits (as on this host), lo with no queues at all.
    pub(crate) fn fixture(tag: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("rb-bql-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let net = root.join("sys/class/net");
        let w = |rel: &str, v: &str| {
            let p = net.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, v).unwrap();
        };
        // Values as this 6.18 host prints them (docs/protocols/router-signals.md §A7), tx-1 under load.
        for (k, v) in [
            ("hold_time", "1000\n"),
            ("inflight", "0\n"),
            ("limit", "2465\n"),
            ("limit_max", "1879048192\n"),
            ("limit_min", "0\n"),
        ] {
            w(&format!("eth0/queues/tx-0/byte_queue_limits/{k}"), v);
        }
        w("eth0/queues/tx-1/byte_queue_limits/inflight", "9084\n");
        w("eth0/queues/tx-1/byte_queue_limits/limit", "12112\n");
        w("eth0/queues/rx-0/rps_cpus", "0\n");
        w("veth0/queues/tx-0/xps_cpus", "0\n");
        std::fs::create_dir_all(net.join("lo")).unwrap();
        root
    }

    #[test]
    fn reads_fixture_tree_exactly() {
        let root = fixture("read");
        let got = read(&root).expect("sys/class/net exists");
        assert_eq!(
            got,
            vec![DeviceBql {
                dev: "eth0".into(),
                queues: vec![
                    TxQueue {
                        queue: 0,
                        inflight: 0,
                        limit: 2465
                    },
                    TxQueue {
                        queue: 1,
                        inflight: 9084,
                        limit: 12112
                    },
                ],
            }]
        );
        assert_eq!(got[0].inflight(), 9084);
        assert_eq!(got[0].limit(), 14577);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn missing_sysfs_and_bad_values() {
        let root = std::env::temp_dir().join(format!("rb-bql-none-{}", std::process::id()));
        assert_eq!(read(&root), None);
        assert_eq!(parse_value("2465\n"), Some(2465));
        assert_eq!(parse_value(""), None);
        assert_eq!(parse_value("-1\n"), None);
        assert_eq!(tx_index("tx-12"), Some(12));
        assert_eq!(tx_index("rx-0"), None);
    }

    #[test]
    fn queues_are_bounded_per_reading() {
        let root = std::env::temp_dir().join(format!("rb-bql-many-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for d in 0..5 {
            for n in 0..70 {
                let b = root.join(format!(
                    "sys/class/net/d{d}/queues/tx-{n}/byte_queue_limits"
                ));
                std::fs::create_dir_all(&b).unwrap();
                std::fs::write(b.join("inflight"), "1\n").unwrap();
                std::fs::write(b.join("limit"), "10\n").unwrap();
            }
        }
        let got = read(&root).unwrap();
        assert_eq!(
            got.iter().map(|d| d.queues.len()).collect::<Vec<_>>(),
            [MAX_TX_QUEUES, MAX_TX_QUEUES, MAX_TX_QUEUES, MAX_TX_QUEUES]
        );
        assert_eq!(got.iter().map(DeviceBql::inflight).sum::<u64>(), 256);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
