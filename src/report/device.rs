//! The device identity as text, and the identity cells that open an OpenWrt benchmark-table row.

use crate::results::device::DeviceInfo;

/// `key: value` lines for the fields that are known, then the notes.
pub fn render_text(info: &DeviceInfo) -> String {
    let cores = info.cores.map(|c| c.to_string());
    let fields: [(&str, Option<&String>); 13] = [
        ("Model", info.model.as_ref()),
        ("Board", info.board_name.as_ref()),
        ("SoC", info.soc.as_ref()),
        ("CPU", info.cpu_model.as_ref()),
        ("Arch", info.arch.as_ref()),
        ("Cores", cores.as_ref()),
        ("BogoMIPS", info.bogomips.as_ref()),
        ("OS", info.os.as_ref()),
        ("OpenWrt", info.openwrt_release.as_ref()),
        ("Revision", info.build_id.as_ref()),
        ("Target", info.target.as_ref()),
        ("Kernel", info.kernel.as_ref()),
        ("Hostname", info.hostname.as_ref()),
    ];
    let mut out = String::new();
    for (k, v) in fields {
        if let Some(v) = v {
            out.push_str(&format!("{k:<10} {v}\n"));
        }
    }
    for n in &info.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

/// The cells before the engine in an OpenWrt table row: the revision (`r23633`, or `unknown`
/// off OpenWrt, as the wiki's script would print an empty one), then the cpuinfo values the
/// wiki's awk picks. Where it picks none (x86, most aarch64 without `Hardware`), the CPU model
/// and BogoMIPS stand in, so a row always says what ran it.
pub fn row_identity_cells(info: &DeviceInfo) -> Vec<String> {
    let mut cells = vec![info.revision.clone().unwrap_or_else(|| "unknown".into())];
    if info.wiki_cpu_fields.is_empty() {
        cells.extend(info.cpu_model.iter().cloned());
        cells.extend(info.bogomips.iter().cloned());
    } else {
        cells.extend(info.wiki_cpu_fields.iter().cloned());
    }
    cells
}

/// Column titles for [`row_identity_cells`], named after the /proc/cpuinfo line each value
/// came from as the wiki's table names them: `Revision`, `SoC`, `Board`, `CPU`, `BogoMIPS`.
/// `--cpu-field` values that match none of them are `CPU`.
pub fn row_identity_labels(info: &DeviceInfo, cells: &[String]) -> Vec<String> {
    cells
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let is = |v: &Option<String>| v.as_deref() == Some(c.as_str());
            if i == 0 {
                "Revision"
            } else if is(&info.bogomips) {
                "BogoMIPS"
            } else if is(&info.soc) {
                "SoC"
            } else if is(&info.model) {
                "Board"
            } else {
                "CPU"
            }
            .to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_cells_mt7621_and_x86() {
        let mips = DeviceInfo {
            revision: Some("r23633".into()),
            wiki_cpu_fields: vec![
                "MediaTek MT7621 ver:1 eco:3".into(),
                "Linksys EA7500 v2".into(),
                "MIPS 1004Kc V2.15".into(),
                "586.13".into(),
            ],
            ..Default::default()
        };
        assert_eq!(
            row_identity_cells(&mips),
            [
                "r23633",
                "MediaTek MT7621 ver:1 eco:3",
                "Linksys EA7500 v2",
                "MIPS 1004Kc V2.15",
                "586.13"
            ]
        );
        let x86 = DeviceInfo {
            cpu_model: Some("Intel(R) Xeon(R) Processor".into()),
            bogomips: Some("4200.00".into()),
            ..Default::default()
        };
        assert_eq!(
            row_identity_cells(&x86),
            ["unknown", "Intel(R) Xeon(R) Processor", "4200.00"]
        );
        assert_eq!(
            row_identity_labels(&x86, &row_identity_cells(&x86)),
            ["Revision", "CPU", "BogoMIPS"]
        );
        let mips = DeviceInfo {
            soc: Some("MediaTek MT7621 ver:1 eco:3".into()),
            model: Some("Linksys EA7500 v2".into()),
            cpu_model: Some("MIPS 1004Kc V2.15".into()),
            bogomips: Some("586.13".into()),
            ..mips
        };
        assert_eq!(
            row_identity_labels(&mips, &row_identity_cells(&mips)),
            ["Revision", "SoC", "Board", "CPU", "BogoMIPS"],
            "the BogoMIPS column is not a second CPU column"
        );
    }

    #[test]
    fn text_lists_known_fields_and_notes() {
        let d = DeviceInfo {
            soc: Some("MediaTek MT7621 ver:1 eco:3".into()),
            notes: vec!["/etc/os-release unreadable".into()],
            ..Default::default()
        };
        let t = render_text(&d);
        assert!(
            t.contains("SoC        MediaTek MT7621 ver:1 eco:3\n"),
            "{t}"
        );
        assert!(t.contains("note: /etc/os-release unreadable"));
        assert!(!t.contains("Kernel"));
    }
}
