//! The summary of a whole `routerbench run`: identity, the OpenWrt row, throughput, latency,
//! and the machine's own view, section by section, only for what was measured.

use crate::results::RunResult;

pub fn render_run(r: &RunResult) -> String {
    let mut out = String::new();
    if let Some(d) = &r.device {
        out.push_str("== Device\n");
        out.push_str(&super::device::render_text(d));
    }
    if let Some(c) = &r.crypto {
        out.push_str("\n== Crypto (");
        out.push_str(&c.engine.name);
        out.push_str(")\n");
        out.push_str(&super::crypto::render_table(c));
        let identity = r
            .device
            .as_ref()
            .map(super::device::row_identity_cells)
            .unwrap_or_else(|| vec!["unknown".into()]);
        let block = crate::results::crypto::ROW_CIPHER_BLOCK;
        out.push_str("\nOpenWrt table row:\n");
        let labels = match &r.device {
            Some(d) => super::device::row_identity_labels(d, &identity),
            None => vec!["Revision".into()],
        };
        out.push_str(&super::crypto::openwrt_header(&labels));
        out.push('\n');
        out.push_str(&super::crypto::openwrt_row(c, &identity, block));
        out.push('\n');
    }
    if let Some(t) = &r.throughput {
        out.push_str("\n== Loopback throughput (the seed's iperf3 -s -D && iperf3 -c 127.0.0.1)\n");
        out.push_str(&super::iperf3::render_final_verbose(t));
    }
    if let Some(lab) = &r.lab {
        out.push_str("\n== Netns lab\n");
        #[cfg(feature = "lab")]
        out.push_str(&super::lab::render_result(lab));
        #[cfg(not(feature = "lab"))]
        {
            let _ = lab;
            out.push_str(
                "a lab result is recorded; this build has no `lab` feature to render it\n",
            );
        }
    }
    if let Some(l) = &r.latency {
        out.push_str("\n== Latency under load over loopback (RRUL)\n");
        out.push_str(&super::latency::render_text(l));
    }
    if let Some(m) = &r.monitor {
        out.push_str("\n== This machine during the network tests\n");
        out.push_str(&super::monitor::render_text(m));
    }
    if !r.notes.is_empty() {
        out.push('\n');
        for n in &r.notes {
            out.push_str(&format!("note: {n}\n"));
        }
    }
    out
}
