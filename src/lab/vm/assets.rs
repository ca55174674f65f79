//! What the VM router is made of, from Debian packages: the kernel (for armv7 the armmp kernel,
//! `linux-image-armmp:armhf` names the exact version; for mipsel the 4kc-malta kernel,
//! `linux-image-4kc-malta:mipsel`) and `busybox-static` of the same architecture, fetched with
//! `apt-get download` into a cache directory the user can see (`~/.cache/routerbench/vm`,
//! `--cache DIR`), unpacked with `dpkg-deb -x` (armv7 into `root/`, mipsel into
//! `root-mipsel/`), and recorded (package, version, SHA-256 of each .deb) in the
//! architecture's manifest there. Nothing else is downloaded. Plus the static routerbench of
//! that architecture from `bench/cross.sh`.

use super::arch::VmArch;
use crate::lab::error::{LabError, Result};
use crate::lab::sys::{run_tool, tool_path};
use serde::{Deserialize, Serialize};
use sha2::Digest;
use std::path::{Path, PathBuf};

/// The meta package whose dependency names the kernel.
pub const KERNEL_META: &str = "linux-image-armmp:armhf";
pub const BUSYBOX: &str = "busybox-static:armhf";

/// One downloaded package.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PackageRecord {
    pub package: String,
    pub version: String,
    pub file: String,
    pub sha256: String,
}

/// The cache's record of what it holds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Manifest {
    pub packages: Vec<PackageRecord>,
    /// e.g. 6.1.0-57-armmp.
    pub kernel_release: String,
}

/// The unpacked parts, ready to build an image from.
#[derive(Debug, Clone)]
pub struct Assets {
    pub dir: PathBuf,
    pub vmlinuz: PathBuf,
    pub busybox: PathBuf,
    pub modules_dir: PathBuf,
    pub manifest: Manifest,
}

/// `~/.cache/routerbench/vm` (`$XDG_CACHE_HOME` if set).
pub fn default_cache() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/var/cache"));
    base.join("routerbench").join("vm")
}

fn sha256_file(p: &Path) -> Result<String> {
    let data =
        std::fs::read(p).map_err(|e| LabError::Sys(format!("cannot read {}: {e}", p.display())))?;
    let d = sha2::Sha256::digest(&data);
    Ok(d.iter().map(|b| format!("{b:02x}")).collect())
}

/// The kernel package `linux-image-armmp:armhf` depends on (`linux-image-6.1.0-57-armmp:armhf`).
pub fn kernel_package() -> Result<String> {
    kernel_package_for(VmArch::Armv7)
}

/// The kernel package `arch`'s meta package depends on (`linux-image-6.1.0-57-armmp:armhf`,
/// `linux-image-6.1.0-50-4kc-malta:mipsel`).
pub fn kernel_package_for(arch: VmArch) -> Result<String> {
    let (meta, deb) = (arch.kernel_meta(), arch.deb_arch());
    let out = run_tool("apt-cache", &["depends", &meta]).map_err(|e| {
        LabError::State(format!(
            "apt does not know {meta} ({e}): add the architecture with \
             `dpkg --add-architecture {deb} && apt-get update`"
        ))
    })?;
    parse_kernel_dependency_for(&out, deb).ok_or_else(|| {
        LabError::State(format!(
            "apt-cache depends {meta} names no linux-image package: add the {deb} \
             architecture (`dpkg --add-architecture {deb} && apt-get update`)"
        ))
    })
}

/// The `Depends: linux-image-…:armhf` line of `apt-cache depends`.
pub fn parse_kernel_dependency(text: &str) -> Option<String> {
    parse_kernel_dependency_for(text, "armhf")
}

/// The `Depends: linux-image-…` line of `apt-cache depends`, with `:deb_arch` added if apt
/// left it off.
pub fn parse_kernel_dependency_for(text: &str, deb_arch: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let dep = l.trim().strip_prefix("Depends:")?.trim();
        dep.starts_with("linux-image-").then(|| {
            if dep.contains(':') {
                dep.to_string()
            } else {
                format!("{dep}:{deb_arch}")
            }
        })
    })
}

fn deb_field(deb: &Path, field: &str) -> Result<String> {
    let p = deb.to_string_lossy().into_owned();
    Ok(run_tool("dpkg-deb", &["-f", &p, field])?.trim().to_string())
}

/// Downloads (if not cached yet) and unpacks the armv7 kernel and busybox into `cache`.
pub fn fetch(cache: &Path) -> Result<Assets> {
    fetch_for(cache, VmArch::Armv7)
}

/// Writes a cache manifest (what was downloaded, with versions and SHA-256) as JSON.
pub fn write_manifest<T: Serialize>(path: &Path, what: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(what)
        .map_err(|e| LabError::Unexpected(format!("manifest: {e}")))?;
    std::fs::write(path, text + "\n")
        .map_err(|e| LabError::Sys(format!("cannot write {}: {e}", path.display())))
}

/// Which Debian kernel the VM router boots (`--vm-kernel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VmKernel {
    /// bookworm's own (6.1 armmp / 4kc-malta), through the host's apt: the wired router's.
    #[default]
    Stable,
    /// bookworm-backports' (6.12 armmp), through the private apt (apt.rs): mac80211_hwsim's
    /// traffic crosses mac80211's fq_codel TXQs only from 6.2 on (docs/vm-router.md).
    Backports,
}

impl VmKernel {
    pub fn name(self) -> &'static str {
        match self {
            VmKernel::Stable => "stable",
            VmKernel::Backports => "backports",
        }
    }
}

/// The `.deb` of package `pkg` (no architecture) for `deb_arch` in `dir`, if there.
pub fn find_deb_named(dir: &Path, pkg: &str, deb_arch: &str) -> Option<PathBuf> {
    let prefix = format!("{pkg}_");
    let suffixes = [format!("_{deb_arch}.deb"), "_all.deb".to_string()];
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with(&prefix) && suffixes.iter().any(|s| n.ends_with(s.as_str()))
        })
        .map(|e| e.path())
        .collect();
    found.sort();
    found.pop()
}

/// Unpacks `deb` into `root` (once: a stamp named by its SHA-256 says it was) and returns its
/// record.
pub fn unpack(deb: &Path, root: &Path) -> Result<PackageRecord> {
    let rec = PackageRecord {
        package: deb_field(deb, "Package")?,
        version: deb_field(deb, "Version")?,
        file: deb
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        sha256: sha256_file(deb)?,
    };
    let stamp = root.join(format!(".unpacked-{}", rec.sha256));
    if !stamp.exists() {
        std::fs::create_dir_all(root)
            .map_err(|e| LabError::Sys(format!("cannot create {}: {e}", root.display())))?;
        let (d, o) = (
            deb.to_string_lossy().into_owned(),
            root.to_string_lossy().into_owned(),
        );
        run_tool("dpkg-deb", &["-x", &d, &o])?;
        std::fs::write(&stamp, b"")
            .map_err(|e| LabError::Sys(format!("cannot write {}: {e}", stamp.display())))?;
    }
    Ok(rec)
}

/// [`fetch_for`] with a choice of kernel. Backports: the kernel (the backports suite's
/// `linux-image-<flavour>` meta package names it) and busybox come through the private apt
/// into `<cache>/kernel-backports-<deb arch>/`, unpacked into its `root/`, recorded in its
/// `manifest.json`; the host's apt need not know the architecture.
pub fn fetch_kernel(cache: &Path, arch: VmArch, kernel: VmKernel) -> Result<Assets> {
    if kernel == VmKernel::Stable {
        return fetch_for(cache, arch);
    }
    for (tool, pkg) in [("apt-get", "apt"), ("dpkg-deb", "dpkg"), ("xz", "xz-utils")] {
        tool_path(tool).map_err(|_| {
            LabError::State(format!(
                "{tool} not found: the VM router's backports kernel needs it (install {pkg})"
            ))
        })?;
    }
    let deb_arch = arch.deb_arch();
    let dir = cache.join(format!("kernel-backports-{deb_arch}"));
    let root = dir.join("root");
    std::fs::create_dir_all(&root)
        .map_err(|e| LabError::Sys(format!("cannot create {}: {e}", root.display())))?;
    let mut apt: Option<super::apt::PrivateApt> = None;
    let mut get_apt = || -> Result<super::apt::PrivateApt> {
        match &apt {
            Some(a) => Ok(a.clone()),
            None => {
                let a = super::apt::PrivateApt::new(cache, arch)?;
                apt = Some(a.clone());
                Ok(a)
            }
        }
    };
    let kernel_deb = match find_kernel_deb(&dir, arch) {
        Some(k) => k,
        None => {
            let a = get_apt()?;
            let out = a.depends(&arch.kernel_meta(), Some("bookworm-backports"))?;
            let pkg = parse_kernel_dependency_for(&out, deb_arch).ok_or_else(|| {
                LabError::State(format!(
                    "bookworm-backports names no kernel for {}: {}",
                    arch.kernel_meta(),
                    out.trim()
                ))
            })?;
            a.download(&pkg, &dir)?;
            find_kernel_deb(&dir, arch).ok_or_else(|| {
                LabError::Unexpected(format!(
                    "apt-get download {pkg} left no kernel in {}",
                    dir.display()
                ))
            })?
        }
    };
    let busybox_pkg = arch.busybox();
    let bb_base = busybox_pkg.split(':').next().unwrap_or("busybox-static");
    let bb_deb = match find_deb_named(&dir, bb_base, deb_arch) {
        Some(d) => d,
        None => {
            get_apt()?.download(&busybox_pkg, &dir)?;
            find_deb_named(&dir, bb_base, deb_arch).ok_or_else(|| {
                LabError::Unexpected(format!(
                    "apt-get download {busybox_pkg} left no .deb in {}",
                    dir.display()
                ))
            })?
        }
    };
    let mut manifest = Manifest::default();
    for deb in [&kernel_deb, &bb_deb] {
        manifest.packages.push(unpack(deb, &root)?);
    }
    let (vmlinuz, release) = find_kernel(&root)?;
    manifest.kernel_release = release.clone();
    let text = serde_json::to_string_pretty(&manifest)
        .map_err(|e| LabError::Unexpected(format!("manifest: {e}")))?;
    let mp = dir.join("manifest.json");
    std::fs::write(&mp, text + "\n")
        .map_err(|e| LabError::Sys(format!("cannot write {}: {e}", mp.display())))?;
    let busybox = root.join("bin/busybox");
    if !busybox.exists() {
        return Err(LabError::State(format!(
            "{} has no bin/busybox: delete {} and retry",
            root.display(),
            dir.display()
        )));
    }
    Ok(Assets {
        dir,
        vmlinuz,
        busybox,
        modules_dir: root.join("lib/modules").join(&release),
        manifest,
    })
}

/// Downloads (if not cached yet) and unpacks `arch`'s kernel and busybox into `cache`.
pub fn fetch_for(cache: &Path, arch: VmArch) -> Result<Assets> {
    for (tool, pkg) in [("apt-get", "apt"), ("dpkg-deb", "dpkg")] {
        tool_path(tool).map_err(|_| {
            LabError::State(format!(
                "{tool} not found: the VM router is built from Debian packages (install {pkg})"
            ))
        })?;
    }
    std::fs::create_dir_all(cache)
        .map_err(|e| LabError::Sys(format!("cannot create {}: {e}", cache.display())))?;
    let manifest_path = match arch {
        VmArch::Armv7 => cache.join("manifest.json"),
        a => cache.join(format!("manifest-{}.json", a.name())),
    };
    // A kernel already in the cache is used as it is: asking apt which one the meta package
    // names takes `apt-cache` seconds to tens of seconds on a loaded host, and `lab capacity`
    // boots the VM once per point. Delete the cache to pick up a newer kernel.
    let cached_kernel = find_kernel_deb(cache, arch);
    let kernel_pkg = match &cached_kernel {
        Some(_) => String::new(),
        None => kernel_package_for(arch)?,
    };
    let busybox_pkg = arch.busybox();
    let mut manifest = Manifest::default();
    for pkg in [kernel_pkg.as_str(), busybox_pkg.as_str()] {
        let deb = match (&cached_kernel, pkg.is_empty()) {
            (Some(k), true) => k.clone(),
            _ => {
                let base = pkg.split(':').next().unwrap_or(pkg);
                find_deb(cache, base, arch).map_or_else(|| download(cache, pkg, base, arch), Ok)?
            }
        };
        let rec = PackageRecord {
            package: deb_field(&deb, "Package")?,
            version: deb_field(&deb, "Version")?,
            file: deb
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            sha256: sha256_file(&deb)?,
        };
        let out = cache.join(arch.root_dir());
        let stamp = out.join(format!(".unpacked-{}", rec.sha256));
        if !stamp.exists() {
            let (d, o) = (
                deb.to_string_lossy().into_owned(),
                out.to_string_lossy().into_owned(),
            );
            run_tool("dpkg-deb", &["-x", &d, &o])?;
            std::fs::write(&stamp, b"")
                .map_err(|e| LabError::Sys(format!("cannot write {}: {e}", stamp.display())))?;
        }
        manifest.packages.push(rec);
    }
    let root = cache.join(arch.root_dir());
    let (vmlinuz, release) = find_kernel(&root)?;
    manifest.kernel_release = release.clone();
    let text = serde_json::to_string_pretty(&manifest)
        .map_err(|e| LabError::Unexpected(format!("manifest: {e}")))?;
    std::fs::write(&manifest_path, text + "\n")
        .map_err(|e| LabError::Sys(format!("cannot write {}: {e}", manifest_path.display())))?;
    let busybox = root.join("bin/busybox");
    if !busybox.exists() {
        return Err(LabError::State(format!(
            "{} has no bin/busybox: is {busybox_pkg} intact? delete {} and retry",
            root.display(),
            cache.display()
        )));
    }
    Ok(Assets {
        dir: cache.to_path_buf(),
        vmlinuz,
        busybox,
        modules_dir: root.join("lib/modules").join(&release),
        manifest,
    })
}

/// The newest-named `linux-image-*-armmp_*_armhf.deb` (for mipsel
/// `linux-image-*-4kc-malta_*_mipsel.deb`) in the cache.
fn find_kernel_deb(cache: &Path, arch: VmArch) -> Option<PathBuf> {
    let mut debs: Vec<PathBuf> = std::fs::read_dir(cache)
        .ok()?
        .flatten()
        .filter(|e| is_kernel_deb_for(&e.file_name().to_string_lossy(), arch))
        .map(|e| e.path())
        .collect();
    debs.sort();
    debs.pop()
}

fn is_kernel_deb_for(n: &str, arch: VmArch) -> bool {
    // linux-image-6.1.0-57-armmp_…, not the meta package linux-image-armmp_… (nor
    // linux-image-4kc-malta_…, whose flavour starts with a digit too).
    let flavour = arch.kernel_flavour();
    n.strip_prefix("linux-image-").is_some_and(|r| {
        r.starts_with(|c: char| c.is_ascii_digit()) && !r.starts_with(&format!("{flavour}_"))
    }) && n.contains(&format!("-{flavour}_"))
        && n.ends_with(&format!("_{}.deb", arch.deb_arch()))
}

fn find_deb(cache: &Path, base: &str, arch: VmArch) -> Option<PathBuf> {
    let prefix = format!("{base}_");
    let suffix = format!("_{}.deb", arch.deb_arch());
    std::fs::read_dir(cache).ok()?.flatten().find_map(|e| {
        let n = e.file_name().to_string_lossy().into_owned();
        (n.starts_with(&prefix) && n.ends_with(&suffix)).then(|| e.path())
    })
}

fn download(cache: &Path, pkg: &str, base: &str, arch: VmArch) -> Result<PathBuf> {
    let deb = arch.deb_arch();
    let out = std::process::Command::new("apt-get")
        .args(["download", "-q", pkg])
        .current_dir(cache)
        .output()
        .map_err(|e| LabError::Sys(format!("cannot run apt-get download {pkg}: {e}")))?;
    if !out.status.success() {
        return Err(LabError::State(format!(
            "apt-get download {pkg} failed ({}): {}; the {deb} architecture must be known to apt \
             (`dpkg --add-architecture {deb} && apt-get update`)",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    find_deb(cache, base, arch).ok_or_else(|| {
        LabError::Unexpected(format!(
            "apt-get download {pkg} left no {base}_*_{deb}.deb in {}",
            cache.display()
        ))
    })
}

fn find_kernel(root: &Path) -> Result<(PathBuf, String)> {
    let boot = root.join("boot");
    let rd = std::fs::read_dir(&boot).map_err(|e| {
        LabError::State(format!(
            "no {} ({e}): the kernel package did not unpack",
            boot.display()
        ))
    })?;
    let mut found: Vec<(PathBuf, String)> = rd
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            let rel = n.strip_prefix("vmlinuz-")?.to_string();
            Some((e.path(), rel))
        })
        .collect();
    found.sort();
    found
        .pop()
        .ok_or_else(|| LabError::State(format!("no vmlinuz-* in {}", boot.display())))
}

/// The static armv7 routerbench for the VM: `explicit` (`--router-bin`), `$ROUTERBENCH_ARMV7_BIN`,
/// or what `bench/cross.sh` leaves under `target/cross-std` (searched from the working directory
/// and from this executable's target directory). It must be a static 32-bit ARM ELF.
pub fn router_binary(explicit: Option<&Path>) -> Result<PathBuf> {
    router_binary_for(explicit, VmArch::Armv7)
}

/// The static routerbench for a VM of `arch`, found as [`router_binary`] finds armv7's: for
/// mipsel `$ROUTERBENCH_MIPSEL_BIN` or `target/cross-std/mipsel-unknown-linux-musl/router/`
/// (`TARGETS=mipsel bench/cross.sh`). Its ELF header must match `arch`.
pub fn router_binary_for(explicit: Option<&Path>, arch: VmArch) -> Result<PathBuf> {
    let rel = format!("cross-std/{}/router/routerbench", arch.triple());
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(p) = explicit {
        candidates.push(p.to_path_buf());
    } else {
        if let Some(p) = std::env::var_os(arch.bin_env()) {
            candidates.push(PathBuf::from(p));
        }
        candidates.push(PathBuf::from("target").join(&rel));
        if let Ok(exe) = std::env::current_exe() {
            // target/release/routerbench → target/cross-std/…
            if let Some(t) = exe.parent().and_then(Path::parent) {
                candidates.push(t.join(&rel));
            }
        }
    }
    for c in &candidates {
        if let Ok(head) = read_head(c) {
            check_elf(&head, arch).map_err(|why| {
                LabError::State(format!(
                    "{} is not the VM's routerbench: {why}",
                    c.display()
                ))
            })?;
            return Ok(c.clone());
        }
    }
    Err(LabError::State(format!(
        "no static {a} routerbench for the VM router (looked at {}): build it with \
         `TARGETS={a} SMOKE=0 bench/cross.sh`, or pass --router-bin FILE",
        candidates
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        a = arch.name()
    )))
}

fn read_head(p: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut f = std::fs::File::open(p)?;
    let mut b = vec![0u8; 64];
    let n = f.read(&mut b)?;
    b.truncate(n);
    Ok(b)
}

/// A 32-bit little-endian ARM executable (EM_ARM = 40).
pub fn check_arm_elf(head: &[u8]) -> std::result::Result<(), String> {
    check_elf(head, VmArch::Armv7)
}

/// A 32-bit little-endian executable for `arch` (EM_ARM = 40, EM_MIPS = 8).
pub fn check_elf(head: &[u8], arch: VmArch) -> std::result::Result<(), String> {
    if head.len() < 20 || &head[..4] != b"\x7fELF" {
        return Err("not an ELF file".into());
    }
    if head[4] != 1 || head[5] != 1 {
        return Err("not a 32-bit little-endian ELF".into());
    }
    let machine = u16::from_le_bytes([head[18], head[19]]);
    let want = arch.elf_machine();
    if machine != want {
        let what = match arch {
            VmArch::Armv7 => "ARM",
            VmArch::Mipsel => "MIPS",
        };
        return Err(format!(
            "ELF machine {machine}, not {what} ({want}): the {} VM needs the {} build",
            arch.name(),
            arch.triple()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_kernel_deb(n: &str) -> bool {
        is_kernel_deb_for(n, VmArch::Armv7)
    }

    #[test]
    fn mipsel_packages_and_elf() {
        let m = VmArch::Mipsel;
        assert!(is_kernel_deb_for(
            "linux-image-6.1.0-50-4kc-malta_6.1.176-1_mipsel.deb",
            m
        ));
        assert!(!is_kernel_deb_for(
            "linux-image-4kc-malta_6.1.176-1_mipsel.deb",
            m
        ));
        assert!(!is_kernel_deb_for(
            "linux-image-6.1.0-57-armmp_6.1.192-3_armhf.deb",
            m
        ));
        let out = "linux-image-4kc-malta:mipsel\n  Depends: linux-image-6.1.0-50-4kc-malta\n";
        assert_eq!(
            parse_kernel_dependency_for(out, "mipsel").as_deref(),
            Some("linux-image-6.1.0-50-4kc-malta:mipsel")
        );
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = 1;
        h[5] = 1;
        h[18] = 8;
        assert!(check_elf(&h, m).is_ok());
        let e = check_elf(&h, VmArch::Armv7).unwrap_err();
        assert!(e.contains("not ARM"), "{e}");
        h[18] = 40;
        let e = check_elf(&h, m).unwrap_err();
        assert!(e.contains("mipsel-unknown-linux-musl"), "{e}");
        // Big-endian MIPS is not the mipsel VM's.
        h[18] = 0;
        h[19] = 8;
        h[5] = 2;
        assert!(check_elf(&h, m).unwrap_err().contains("little-endian"));
    }

    #[test]
    fn cached_kernel_package_names() {
        assert!(is_kernel_deb(
            "linux-image-6.1.0-57-armmp_6.1.192-3_armhf.deb"
        ));
        assert!(!is_kernel_deb("linux-image-armmp_6.1.192-3_armhf.deb"));
        assert!(!is_kernel_deb(
            "linux-image-6.1.0-57-armmp_6.1.192-3_arm64.deb"
        ));
        assert!(!is_kernel_deb("busybox-static_1.35.0-4_armhf.deb"));
    }

    #[test]
    fn kernel_dependency_line() {
        let out = "linux-image-armmp:armhf\n  Depends: linux-image-6.1.0-57-armmp:armhf\n";
        assert_eq!(
            parse_kernel_dependency(out).as_deref(),
            Some("linux-image-6.1.0-57-armmp:armhf")
        );
        assert_eq!(parse_kernel_dependency("E: No packages found\n"), None);
    }

    #[test]
    fn arm_elf_check() {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = 1;
        h[5] = 1;
        h[18] = 40;
        assert!(check_arm_elf(&h).is_ok());
        h[18] = 62;
        assert!(check_arm_elf(&h).unwrap_err().contains("62"));
        assert!(check_arm_elf(b"#!/bin/sh\n").is_err());
    }
}
