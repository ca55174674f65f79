//! Who am I: pure parsers for /proc/cpuinfo, /etc/os-release, /etc/openwrt_release and
//! /tmp/sysinfo, and a reader that gathers them below a root directory (tests use fixture trees).
//! Every file is optional: a missing one becomes a note, never an error.

pub mod cpuinfo;
pub mod release;

use crate::results::device::DeviceInfo;
use std::path::Path;

/// Reads this machine's identity.
pub fn detect() -> DeviceInfo {
    let mut info = detect_from(Path::new("/"));
    note_emulation(&mut info, binary_arch_family());
    info
}

/// The architecture family this binary was built for, in cpuinfo's words (`arm`, `mips`, …).
pub fn binary_arch_family() -> &'static str {
    match std::env::consts::ARCH {
        "x86" | "x86_64" => "x86",
        "mips" | "mips64" => "mips",
        other => other,
    }
}

/// Under qemu-user /proc/cpuinfo is the host's: when it names another architecture than the one
/// this binary runs as, the arch is the binary's and a note says the CPU cells are the host's.
fn note_emulation(info: &mut DeviceInfo, binary: &'static str) {
    let Some(seen) = info.arch.clone() else {
        return;
    };
    if seen != binary {
        info.arch = Some(binary.to_string());
        info.notes.push(format!(
            "running as {binary} but /proc/cpuinfo describes a {seen} CPU: emulated (qemu-user?); \
             the CPU, BogoMIPS and core cells are the host's, and no figure is the device's"
        ));
    }
}

/// Reads a file below `root` as text; a trailing NUL and white space are trimmed
/// (/tmp/sysinfo/model and device-tree strings end in NUL).
fn read_trimmed(root: &Path, rel: &str) -> Option<String> {
    let bytes = std::fs::read(root.join(rel)).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let text = text.trim_matches(|c: char| c == '\0' || c.is_whitespace());
    (!text.is_empty()).then(|| text.to_string())
}

/// The identity of the system whose files live below `root` (`/` for this machine).
pub fn detect_from(root: &Path) -> DeviceInfo {
    let mut info = DeviceInfo::default();

    match std::fs::read(root.join("proc/cpuinfo")) {
        Ok(bytes) => {
            let cpu = cpuinfo::parse(&String::from_utf8_lossy(&bytes));
            info.soc = cpu.soc;
            info.model = cpu.machine;
            info.cpu_model = cpu.cpu_model;
            info.bogomips = cpu.bogomips;
            info.cores = (cpu.processors > 0).then_some(cpu.processors);
            info.arch = cpu.arch.map(str::to_string);
            info.wiki_cpu_fields = cpu.wiki_fields;
        }
        Err(e) => info.notes.push(format!(
            "/proc/cpuinfo unreadable ({e}): no SoC, CPU or BogoMIPS"
        )),
    }

    // Board model: OpenWrt's sysinfo first, then the device tree, then DMI (x86).
    let sysinfo_model = read_trimmed(root, "tmp/sysinfo/model");
    let dt_model = read_trimmed(root, "proc/device-tree/model");
    let dmi_model = match (
        read_trimmed(root, "sys/class/dmi/id/sys_vendor"),
        read_trimmed(root, "sys/class/dmi/id/product_name"),
    ) {
        (Some(v), Some(p)) if !p.starts_with(&v) => Some(format!("{v} {p}")),
        (_, Some(p)) => Some(p),
        (Some(v), None) => Some(v),
        (None, None) => None,
    };
    if let Some(m) = sysinfo_model.or(dt_model) {
        info.model = Some(m);
    } else if info.model.is_none() {
        info.model = dmi_model;
    }
    info.board_name = read_trimmed(root, "tmp/sysinfo/board_name").or_else(|| {
        // First string of the device tree's `compatible` list.
        std::fs::read(root.join("proc/device-tree/compatible"))
            .ok()
            .and_then(|b| {
                let first = b.split(|&c| c == 0).next().unwrap_or(&[]);
                let s = String::from_utf8_lossy(first).trim().to_string();
                (!s.is_empty()).then_some(s)
            })
    });

    let os = std::fs::read_to_string(root.join("etc/os-release"))
        .or_else(|_| std::fs::read_to_string(root.join("usr/lib/os-release")))
        .map(|t| release::parse(&t))
        .unwrap_or_else(|e| {
            info.notes.push(format!(
                "/etc/os-release unreadable ({e}): no OS name or BUILD_ID"
            ));
            Vec::new()
        });
    let owrt = std::fs::read_to_string(root.join("etc/openwrt_release"))
        .map(|t| release::parse(&t))
        .unwrap_or_default();

    info.os = release::get(&os, "PRETTY_NAME")
        .or_else(|| release::get(&owrt, "DISTRIB_DESCRIPTION"))
        .map(str::to_string);
    let is_openwrt = release::get(&os, "ID").is_some_and(|id| id == "openwrt" || id == "lede")
        || release::get(&owrt, "DISTRIB_ID").is_some();
    if is_openwrt {
        info.openwrt_release = release::get(&os, "VERSION_ID")
            .or_else(|| release::get(&owrt, "DISTRIB_RELEASE"))
            .map(str::to_string);
    }
    info.build_id = release::get(&os, "BUILD_ID")
        .or_else(|| release::get(&owrt, "DISTRIB_REVISION"))
        .map(str::to_string);
    info.revision = info.build_id.as_deref().map(release::revision_of);
    info.target = release::get(&os, "OPENWRT_BOARD")
        .or_else(|| release::get(&os, "LEDE_BOARD"))
        .or_else(|| release::get(&owrt, "DISTRIB_TARGET"))
        .map(str::to_string);

    info.kernel = read_trimmed(root, "proc/sys/kernel/osrelease");
    info.hostname = read_trimmed(root, "proc/sys/kernel/hostname");
    info
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, bytes: &[u8]) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }

    fn tempdir(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("rb-device-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn openwrt_mt7621_tree() {
        let root = tempdir("owrt");
        write(
            &root,
            "proc/cpuinfo",
            include_bytes!("../../tests/fixtures/cpuinfo/mt7621-ex15.txt"),
        );
        write(&root, "etc/os-release", b"NAME=\"OpenWrt\"\nID=\"openwrt\"\nPRETTY_NAME=\"OpenWrt SNAPSHOT\"\nVERSION_ID=\"snapshot\"\nBUILD_ID=\"r23633-c7b6cfac40\"\nOPENWRT_BOARD=\"ramips/mt7621\"\n");
        write(&root, "tmp/sysinfo/model", b"Linksys EA7500 v2\0");
        write(&root, "tmp/sysinfo/board_name", b"linksys,ea7500-v2\n");
        write(&root, "proc/sys/kernel/osrelease", b"5.15.137\n");
        let d = detect_from(&root);
        assert_eq!(d.revision.as_deref(), Some("r23633"));
        assert_eq!(d.build_id.as_deref(), Some("r23633-c7b6cfac40"));
        assert_eq!(d.model.as_deref(), Some("Linksys EA7500 v2"));
        assert_eq!(d.board_name.as_deref(), Some("linksys,ea7500-v2"));
        assert_eq!(d.soc.as_deref(), Some("MediaTek MT7621 ver:1 eco:3"));
        assert_eq!(d.cores, Some(4));
        assert_eq!(d.openwrt_release.as_deref(), Some("snapshot"));
        assert_eq!(d.target.as_deref(), Some("ramips/mt7621"));
        assert_eq!(d.kernel.as_deref(), Some("5.15.137"));
        assert!(d.notes.is_empty(), "{:?}", d.notes);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn openwrt_release_only_and_dt_compatible() {
        let root = tempdir("lede");
        write(
            &root,
            "proc/cpuinfo",
            include_bytes!("../../tests/fixtures/cpuinfo/ipq8064-c2600.txt"),
        );
        write(&root, "etc/openwrt_release", b"DISTRIB_ID='LEDE'\nDISTRIB_RELEASE='17.01-SNAPSHOT'\nDISTRIB_REVISION='r3000-abc'\nDISTRIB_TARGET='ipq806x/generic'\nDISTRIB_DESCRIPTION='LEDE Reboot 17.01-SNAPSHOT r3000-abc'\n");
        write(
            &root,
            "proc/device-tree/compatible",
            b"tplink,c2600\0qcom,ipq8064\0",
        );
        write(&root, "proc/device-tree/model", b"TP-Link Archer C2600\0");
        let d = detect_from(&root);
        assert_eq!(d.revision.as_deref(), Some("r3000"));
        assert_eq!(
            d.os.as_deref(),
            Some("LEDE Reboot 17.01-SNAPSHOT r3000-abc")
        );
        assert_eq!(d.openwrt_release.as_deref(), Some("17.01-SNAPSHOT"));
        assert_eq!(d.board_name.as_deref(), Some("tplink,c2600"));
        assert_eq!(d.model.as_deref(), Some("TP-Link Archer C2600"));
        assert_eq!(d.arch.as_deref(), Some("arm"));
        // os-release missing is a note, not a failure
        assert_eq!(d.notes.len(), 1, "{:?}", d.notes);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn empty_root_gives_notes_not_errors() {
        let root = tempdir("empty");
        let d = detect_from(&root);
        assert_eq!(d.soc, None);
        assert_eq!(d.revision, None);
        assert_eq!(d.notes.len(), 2, "{:?}", d.notes);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn this_machine_has_an_identity() {
        let d = detect();
        assert!(d.kernel.is_some());
        assert!(d.cores.unwrap_or(0) >= 1);
    }

    #[test]
    fn an_emulated_binary_reports_its_own_arch_and_says_so() {
        let mut info = DeviceInfo {
            arch: Some("x86".into()),
            ..DeviceInfo::default()
        };
        note_emulation(&mut info, "arm");
        assert_eq!(info.arch.as_deref(), Some("arm"));
        assert!(
            info.notes.iter().any(|n| n.contains("emulated")),
            "{:?}",
            info.notes
        );
        let mut native = DeviceInfo {
            arch: Some("arm".into()),
            ..DeviceInfo::default()
        };
        note_emulation(&mut native, "arm");
        assert!(native.notes.is_empty());
    }
}
