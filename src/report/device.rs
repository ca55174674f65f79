//! The device identity as text.

use crate::results::device::DeviceInfo;

/// `key: value` lines for the fields that are known.
pub fn render_text(info: &DeviceInfo) -> String {
    let mut out = String::new();
    let fields: [(&str, &Option<String>); 4] = [
        ("SoC", &info.soc),
        ("Model", &info.model),
        ("CPU", &info.cpu_model),
        ("BogoMIPS", &info.bogomips),
    ];
    for (k, v) in fields {
        if let Some(v) = v {
            out.push_str(&format!("{k:<10} {v}\n"));
        }
    }
    out
}
