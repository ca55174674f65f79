//! Qdisc counters from iproute2's `tc -s -j qdisc show [dev DEV]` (docs/protocols/router-signals.md §A8: the
//! same numbers as the rtnetlink dump; LibreQoS reads them the same way). One `tc` process
//! covers every device of the namespace it runs in. Used by the monitor and by the lab.

use super::error::MonitorError;
use crate::results::lab::QdiscStats;

/// Parses `tc -s -j qdisc show [dev DEV]` output. Without `dev`, tc names each qdisc's device
/// (`"dev"`); with it, tc leaves the name out and `dev` is used.
pub fn parse_qdisc_json(dev: &str, text: &str) -> Result<Vec<QdiscStats>, MonitorError> {
    let v: serde_json::Value =
        serde_json::from_slice(text.trim().as_bytes()).map_err(MonitorError::TcJson)?;
    let Some(list) = v.as_array() else {
        return Err(MonitorError::TcNotArray);
    };
    let num = |q: &serde_json::Value, k: &str| q.get(k).and_then(|x| x.as_u64()).unwrap_or(0);
    let text_of =
        |q: &serde_json::Value, k: &str| q.get(k).and_then(|x| x.as_str()).map(str::to_string);
    Ok(list
        .iter()
        .map(|q| QdiscStats {
            dev: text_of(q, "dev").unwrap_or_else(|| dev.to_string()),
            kind: text_of(q, "kind").unwrap_or_else(|| "?".into()),
            handle: text_of(q, "handle").unwrap_or_default(),
            root: q.get("root").and_then(|x| x.as_bool()).unwrap_or(false),
            bytes: num(q, "bytes"),
            packets: num(q, "packets"),
            drops: num(q, "drops"),
            overlimits: num(q, "overlimits"),
            backlog_bytes: num(q, "backlog"),
            qlen: num(q, "qlen"),
        })
        .collect())
}

/// The root qdisc of each device, in tc's order (by ifindex), at most `max_devices`. The
/// loopback device is left out while it has its default `noqueue` (it never queues then).
/// On a multiqueue device the `mq` root carries the sum of its per-queue children.
pub fn roots(all: Vec<QdiscStats>, max_devices: usize) -> Vec<QdiscStats> {
    all.into_iter()
        .filter(|q| q.root && !(q.dev == "lo" && q.kind == "noqueue"))
        .take(max_devices)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Captured from `tc -n rbx-rtr -s -j qdisc show dev rtr-wan` (iproute2 6.1) after a
    // 20 Mbit/s x 64000 B upload and a download run.
    const TBF_JSON: &str = r#"[{"kind":"tbf","handle":"1:","root":true,"refcnt":3,"options":{"rate":2500000,"burst":15360,"lat":19456},"bytes":25847746,"packets":27243,"drops":19,"overlimits":49877,"requeues":0,"backlog":0,"qlen":0}]"#;

    /// `tc -s -j qdisc show` (iproute2 6.1, no `dev`) in this VM's root namespace.
    pub(crate) const HOST_JSON: &str = r#"[{"kind":"noqueue","handle":"0:","dev":"lo","root":true,"refcnt":2,"options":{},"bytes":0,"packets":0,"drops":0,"overlimits":0,"requeues":0,"backlog":0,"qlen":0},{"kind":"pfifo_fast","handle":"0:","dev":"eth0","root":true,"refcnt":2,"options":{"bands":3,"priomap":[1,2,2,2,1,2,0,0,1,1,1,1,1,1,1,1],"multiqueue":false},"bytes":702948,"packets":7244,"drops":0,"overlimits":0,"requeues":0,"backlog":0,"qlen":0}]"#;

    /// `ip netns exec rbqN tc -s -j qdisc show` in a throwaway namespace with
    /// `tbf rate 10mbit burst 15000 limit 100000` on lo (MTU 1500), 1.5 s into a 40 Mbit/s
    /// iperf3 UDP send over loopback.
    pub(crate) const LO_TBF_LOADED_JSON: &str = r#"[{"kind":"tbf","handle":"1:","dev":"lo","root":true,"refcnt":2,"options":{"rate":1250000,"burst":15000,"lat":68000},"bytes":1885979,"packets":1324,"drops":0,"overlimits":2637,"requeues":0,"backlog":67774,"qlen":47}]"#;

    #[test]
    fn parse_tbf_stats_with_dev_given() {
        let q = parse_qdisc_json("rtr-wan", TBF_JSON).unwrap();
        assert_eq!(q.len(), 1);
        assert_eq!(q[0].dev, "rtr-wan");
        assert_eq!(q[0].kind, "tbf");
        assert!(q[0].root);
        assert_eq!(q[0].bytes, 25_847_746);
        assert_eq!(q[0].drops, 19);
    }

    #[test]
    fn all_devices_of_this_host() {
        let all = parse_qdisc_json("", HOST_JSON).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(
            (all[0].dev.as_str(), all[0].kind.as_str()),
            ("lo", "noqueue")
        );
        let r = roots(all, 64);
        assert_eq!(
            r,
            vec![QdiscStats {
                dev: "eth0".into(),
                kind: "pfifo_fast".into(),
                handle: "0:".into(),
                root: true,
                bytes: 702_948,
                packets: 7244,
                drops: 0,
                overlimits: 0,
                backlog_bytes: 0,
                qlen: 0,
            }]
        );
    }

    #[test]
    fn lo_with_a_tbf_under_load_is_kept() {
        let r = roots(parse_qdisc_json("", LO_TBF_LOADED_JSON).unwrap(), 64);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].dev, "lo");
        assert_eq!(r[0].kind, "tbf");
        assert_eq!((r[0].backlog_bytes, r[0].qlen), (67_774, 47));
        assert_eq!((r[0].packets, r[0].overlimits), (1324, 2637));
        assert!(roots(parse_qdisc_json("", HOST_JSON).unwrap(), 0).is_empty());
    }

    #[test]
    fn non_root_children_are_not_roots() {
        // An mq root and one of its per-queue children (parent 1:1), as tc prints them.
        let t = r#"[{"kind":"mq","handle":"1:","dev":"eth1","root":true,"bytes":10,"packets":1,"drops":3,"overlimits":0,"requeues":0,"backlog":3028,"qlen":2},{"kind":"fq_codel","handle":"0:","dev":"eth1","parent":"1:1","bytes":10,"packets":1,"drops":3,"overlimits":0,"requeues":0,"backlog":3028,"qlen":2}]"#;
        let r = roots(parse_qdisc_json("", t).unwrap(), 64);
        assert_eq!(r.len(), 1);
        assert_eq!(
            (r[0].kind.as_str(), r[0].backlog_bytes, r[0].drops),
            ("mq", 3028, 3)
        );
    }

    #[test]
    fn parse_garbage() {
        assert!(parse_qdisc_json("x", "not json").is_err());
        assert!(parse_qdisc_json("x", "{}").is_err());
        assert!(parse_qdisc_json("x", "[]").unwrap().is_empty());
    }
}
