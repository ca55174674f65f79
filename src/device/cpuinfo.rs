//! `/proc/cpuinfo` in all its dialects (MIPS, ARM32 old and new, aarch64, x86): a pure parser.
//!
//! Rule (docs/protocols/router-signals.md §A15): split each line at the first `:`, trim both sides (tabs and
//! spaces vary), a blank line ends a CPU block, keys outside a `processor` block are global.

/// The keys whose values the OpenWrt wiki's awk prints (case-sensitive, in file order).
pub const WIKI_KEYS: [&str; 6] = [
    "Processor",
    "Hardware",
    "machine",
    "cpu model",
    "system type",
    "BogoMIPS",
];

/// What routerbench takes from /proc/cpuinfo.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CpuInfo {
    /// MIPS `system type` or ARM `Hardware`.
    pub soc: Option<String>,
    /// MIPS `machine` (the device-tree model).
    pub machine: Option<String>,
    /// MIPS `cpu model`, ARM/x86 `model name`, or legacy ARM `Processor`.
    pub cpu_model: Option<String>,
    /// The first `BogoMIPS` (or x86 `bogomips`) value, as printed.
    pub bogomips: Option<String>,
    /// Number of `processor` entries.
    pub processors: u32,
    /// `mips`, `arm`, `aarch64`, `x86` or `None` when the text does not tell.
    pub arch: Option<&'static str>,
    /// Values of the lines the wiki awk picks, de-duplicated by whole line, in file order.
    pub wiki_fields: Vec<String>,
}

/// Splits `key : value` at the first colon; `None` for lines without one.
fn split_line(line: &str) -> Option<(&str, &str)> {
    let (k, v) = line.split_once(':')?;
    Some((k.trim(), v.trim()))
}

/// Parses the text of /proc/cpuinfo. Never fails: unknown lines are ignored.
pub fn parse(text: &str) -> CpuInfo {
    let mut info = CpuInfo::default();
    let mut seen_lines: Vec<&str> = Vec::new();
    let mut arm_arch: Option<String> = None;
    let mut has_x86_flags = false;
    for raw in text.lines() {
        let line = raw.trim_end_matches('\r');
        let Some((key, value)) = split_line(line) else {
            continue;
        };
        // The wiki awk's `!a[$0]++`: each identical line once.
        if WIKI_KEYS.contains(&key) && !value.is_empty() && !seen_lines.contains(&line) {
            seen_lines.push(line);
            info.wiki_fields.push(value.to_string());
        }
        let set = |slot: &mut Option<String>| {
            if slot.is_none() && !value.is_empty() {
                *slot = Some(value.to_string());
            }
        };
        match key {
            "processor" => info.processors += 1,
            "system type" | "Hardware" => set(&mut info.soc),
            "machine" => set(&mut info.machine),
            "cpu model" | "model name" | "Processor" => set(&mut info.cpu_model),
            "BogoMIPS" | "bogomips" => set(&mut info.bogomips),
            "CPU architecture" => set(&mut arm_arch),
            "vendor_id" | "flags" => has_x86_flags = true,
            _ => {}
        }
    }
    info.arch = guess_arch(text, arm_arch.as_deref(), has_x86_flags, &info);
    info
}

fn guess_arch(
    text: &str,
    arm_arch: Option<&str>,
    x86: bool,
    info: &CpuInfo,
) -> Option<&'static str> {
    if text.contains("system type")
        || info
            .cpu_model
            .as_deref()
            .is_some_and(|m| m.starts_with("MIPS"))
    {
        return Some("mips");
    }
    match arm_arch {
        Some("8") | Some("AArch64") => return Some("aarch64"),
        Some(_) => return Some("arm"),
        None => {}
    }
    if x86 {
        return Some("x86");
    }
    if info
        .cpu_model
        .as_deref()
        .is_some_and(|m| m.starts_with("ARM"))
    {
        return Some("arm");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const ERX: &str = include_str!("../../tests/fixtures/cpuinfo/mt7621-erx.txt");
    const EX15: &str = include_str!("../../tests/fixtures/cpuinfo/mt7621-ex15.txt");
    const C2600: &str = include_str!("../../tests/fixtures/cpuinfo/ipq8064-c2600.txt");
    const LEGACY: &str = include_str!("../../tests/fixtures/cpuinfo/ipq4018-legacy.txt");

    #[test]
    fn mt7621_with_tabs() {
        let c = parse(ERX);
        assert_eq!(c.soc.as_deref(), Some("MediaTek MT7621 ver:1 eco:3"));
        assert_eq!(c.machine.as_deref(), Some("Ubiquiti EdgeRouter"));
        assert_eq!(c.cpu_model.as_deref(), Some("MIPS 1004Kc V2.15"));
        assert_eq!(c.bogomips.as_deref(), Some("581.63"));
        assert_eq!(c.processors, 2);
        assert_eq!(c.arch, Some("mips"));
        // The awk prints system type, machine, cpu model, BogoMIPS once each (lines identical).
        assert_eq!(
            c.wiki_fields,
            [
                "MediaTek MT7621 ver:1 eco:3",
                "Ubiquiti EdgeRouter",
                "MIPS 1004Kc V2.15",
                "581.63"
            ]
        );
    }

    #[test]
    fn mt7621_four_vpes_spaces() {
        let c = parse(EX15);
        assert_eq!(c.processors, 4);
        assert_eq!(c.soc.as_deref(), Some("MediaTek MT7621 ver:1 eco:3"));
        assert_eq!(c.machine.as_deref(), Some("Digi EX15"));
        assert_eq!(c.bogomips.as_deref(), Some("586.13"));
        assert_eq!(c.wiki_fields.len(), 4);
    }

    #[test]
    fn ipq8064_modern_arm() {
        let c = parse(C2600);
        assert_eq!(c.soc.as_deref(), Some("Qualcomm (Flattened Device Tree)"));
        assert_eq!(c.cpu_model.as_deref(), Some("ARMv7 Processor rev 0 (v7l)"));
        assert_eq!(c.bogomips.as_deref(), Some("21.87"));
        assert_eq!(c.processors, 2);
        assert_eq!(c.arch, Some("arm"));
        // Two different BogoMIPS lines: the awk prints both, then Hardware.
        assert_eq!(
            c.wiki_fields,
            ["21.87", "45.57", "Qualcomm (Flattened Device Tree)"]
        );
    }

    #[test]
    fn legacy_arm_processor_line() {
        let c = parse(LEGACY);
        assert_eq!(c.cpu_model.as_deref(), Some("ARMv7 Processor rev 5 (v7l)"));
        assert_eq!(c.processors, 4);
        assert_eq!(c.bogomips.as_deref(), Some("1430.32"));
        assert_eq!(c.arch, Some("arm"));
        assert_eq!(
            c.wiki_fields,
            [
                "ARMv7 Processor rev 5 (v7l)",
                "1430.32",
                "Qualcomm (Flattened Device Tree)"
            ]
        );
    }

    #[test]
    fn x86_and_aarch64() {
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\nbogomips\t: 4200.00\nflags\t\t: fpu sse\n\nprocessor\t: 1\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\nbogomips\t: 4200.00\n";
        let c = parse(x86);
        assert_eq!(c.arch, Some("x86"));
        assert_eq!(c.processors, 2);
        assert_eq!(c.cpu_model.as_deref(), Some("Intel(R) Xeon(R) Processor"));
        assert_eq!(c.bogomips.as_deref(), Some("4200.00"));
        assert!(
            c.wiki_fields.is_empty(),
            "no wiki key matches on x86: {:?}",
            c.wiki_fields
        );
        let a64 = "processor\t: 0\nBogoMIPS\t: 48.00\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\nCPU architecture: 8\n";
        let c = parse(a64);
        assert_eq!(c.arch, Some("aarch64"));
        assert_eq!(c.wiki_fields, ["48.00"]);
    }

    #[test]
    fn garbage_and_empty_never_fail() {
        assert_eq!(parse(""), CpuInfo::default());
        let c = parse("\u{0}\u{1}:::\n:\nno colon here\n   :   \n");
        assert_eq!(c.processors, 0);
        assert!(c.wiki_fields.is_empty());
    }
}
