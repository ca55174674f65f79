//! The VM router's initramfs: a `newc` cpio archive (the format the kernel unpacks into its
//! rootfs), gzip-compressed, with busybox, the static routerbench (armv7 or mipsel), the kernel
//! modules the router needs in load order, `/init`, and the router's configuration. Kernel
//! modules come with their dependencies, read from each module's own `.modinfo` (`depends=`):
//! Debian's package carries no `modules.dep` (depmod writes it at install time).

use crate::lab::error::{LabError, Result};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A `newc` cpio archive being written.
#[derive(Default)]
pub struct Cpio {
    buf: Vec<u8>,
    ino: u32,
}

impl Cpio {
    fn entry(&mut self, name: &str, mode: u32, data: &[u8]) {
        self.ino += 1;
        let name_z = name.len() + 1;
        let fields = [
            self.ino,
            mode,
            0,
            0,
            1,
            0,
            data.len() as u32,
            0,
            0,
            0,
            0,
            name_z as u32,
            0,
        ];
        self.buf.extend_from_slice(b"070701");
        for f in fields {
            self.buf.extend_from_slice(format!("{f:08X}").as_bytes());
        }
        self.buf.extend_from_slice(name.as_bytes());
        self.buf.push(0);
        while self.buf.len() % 4 != 0 {
            self.buf.push(0);
        }
        self.buf.extend_from_slice(data);
        while self.buf.len() % 4 != 0 {
            self.buf.push(0);
        }
    }

    pub fn dir(&mut self, name: &str) {
        self.entry(name, 0o040_755, &[]);
    }

    pub fn file(&mut self, name: &str, data: &[u8], executable: bool) {
        let mode = if executable { 0o100_755 } else { 0o100_644 };
        self.entry(name, mode, data);
    }

    pub fn symlink(&mut self, name: &str, target: &str) {
        self.entry(name, 0o120_777, target.as_bytes());
    }

    /// The archive with its trailer.
    pub fn finish(mut self) -> Vec<u8> {
        self.entry("TRAILER!!!", 0, &[]);
        self.buf
    }
}

/// gzip of `data` (the kernel's initramfs decompressor reads it).
pub fn gzip(data: &[u8]) -> Result<Vec<u8>> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data)
        .and_then(|_| e.finish())
        .map_err(|e| LabError::Sys(format!("cannot compress the initramfs: {e}")))
}

/// The `depends=` list of a kernel module file (from its `.modinfo` strings).
pub fn module_depends(ko: &[u8]) -> Vec<String> {
    const KEY: &[u8] = b"\0depends=";
    let Some(at) = ko.windows(KEY.len()).position(|w| w == KEY) else {
        return Vec::new();
    };
    let rest = &ko[at + KEY.len()..];
    let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    String::from_utf8_lossy(&rest[..end])
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Every `*.ko` under `dir`, by module name (`-` and `_` are the same to the kernel).
pub fn index_modules(dir: &Path) -> Result<BTreeMap<String, PathBuf>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    let mut seen = 0usize;
    while let Some(d) = stack.pop() {
        let rd = std::fs::read_dir(&d)
            .map_err(|e| LabError::Sys(format!("cannot read {}: {e}", d.display())))?;
        for ent in rd.flatten() {
            seen += 1;
            if seen > 200_000 {
                return Err(LabError::Unexpected(format!(
                    "{} holds more than 200000 files: not a kernel module tree",
                    dir.display()
                )));
            }
            let p = ent.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Some(n) = p.file_name().and_then(|n| n.to_str()) {
                // 6.12's modules are xz-compressed (`.ko.xz`), 6.1's plain.
                if let Some(stem) = n.strip_suffix(".ko").or_else(|| n.strip_suffix(".ko.xz")) {
                    out.insert(stem.replace('-', "_"), p.clone());
                }
            }
        }
    }
    Ok(out)
}

/// A module file's bytes: `.ko` as it is, `.ko.xz` decompressed with `xz -dc` (busybox's
/// `insmod` and the kernel's `init_module` want the plain ELF).
pub fn module_bytes(p: &Path) -> Result<Vec<u8>> {
    if p.extension().is_some_and(|e| e == "xz") {
        let out = std::process::Command::new("xz")
            .arg("-dc")
            .arg(p)
            .output()
            .map_err(|e| {
                LabError::State(format!(
                    "cannot run xz to unpack {} ({e}): install xz-utils",
                    p.display()
                ))
            })?;
        if !out.status.success() {
            return Err(LabError::State(format!(
                "xz -dc {} failed: {}",
                p.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        return Ok(out.stdout);
    }
    std::fs::read(p).map_err(|e| LabError::Sys(format!("cannot read {}: {e}", p.display())))
}

/// The modules built into the kernel (`modules.builtin` beside the module tree: one
/// `kernel/…/name.ko` a line), by module name. None is an empty set.
pub fn builtin_modules(modules_dir: &Path) -> std::collections::BTreeSet<String> {
    std::fs::read_to_string(modules_dir.join("modules.builtin"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let n = l.trim().rsplit('/').next()?;
            Some(n.strip_suffix(".ko")?.replace('-', "_"))
        })
        .collect()
}

/// `wanted` and everything they depend on, dependencies first (each once).
pub fn load_order(
    index: &BTreeMap<String, PathBuf>,
    wanted: &[&str],
) -> Result<Vec<(String, PathBuf)>> {
    load_order_with(index, &Default::default(), wanted)
}

/// [`load_order`] with the kernel's built-in modules left out (wanted or depended on).
pub fn load_order_with(
    index: &BTreeMap<String, PathBuf>,
    builtin: &std::collections::BTreeSet<String>,
    wanted: &[&str],
) -> Result<Vec<(String, PathBuf)>> {
    fn visit(
        name: &str,
        index: &BTreeMap<String, PathBuf>,
        builtin: &std::collections::BTreeSet<String>,
        out: &mut Vec<(String, PathBuf)>,
        path: &mut Vec<String>,
    ) -> Result<()> {
        let key = name.replace('-', "_");
        if out.iter().any(|(n, _)| *n == key) || builtin.contains(&key) {
            return Ok(());
        }
        if path.contains(&key) || path.len() > 64 {
            return Err(LabError::Unexpected(format!(
                "kernel module dependency loop: {} -> {key}",
                path.join(" -> ")
            )));
        }
        let p = index.get(&key).ok_or_else(|| {
            LabError::State(format!(
                "kernel module {key} is not in the kernel package (is it built in, or is this \
                 not the VM router's kernel: armmp for armv7, 4kc-malta for mipsel?)"
            ))
        })?;
        let bytes = module_bytes(p)?;
        path.push(key.clone());
        for dep in module_depends(&bytes) {
            visit(&dep, index, builtin, out, path)?;
        }
        path.pop();
        out.push((key, p.clone()));
        Ok(())
    }
    let mut out = Vec::new();
    for w in wanted {
        visit(w, index, builtin, &mut out, &mut Vec::new())?;
    }
    Ok(out)
}

/// The busybox applets `/init` uses.
pub const APPLETS: &[&str] = &[
    "sh", "mount", "mkdir", "insmod", "cat", "echo", "poweroff", "sleep", "ip", "ps", "uname",
];

/// `/init`: mount the pseudo file systems, load the modules in order, then hand over to
/// `routerbench vm-router`, which configures the router and runs its agent. If that ends, the
/// VM powers off (qemu runs with -no-reboot, so it exits).
pub fn init_script() -> String {
    "#!/bin/sh\n\
     export PATH=/bin\n\
     mkdir -p /proc /sys /dev /tmp /run\n\
     mount -t proc proc /proc\n\
     mount -t sysfs sysfs /sys\n\
     mount -t devtmpfs devtmpfs /dev\n\
     echo \"routerbench-vm: kernel $(uname -r), loading modules\"\n\
     mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null\n\
     while read m p; do\n\
     \x20 insmod /lib/modules/$m.ko $p || echo \"routerbench-vm: insmod $m failed\"\n\
     done < /etc/routerbench/modules\n\
     /bin/routerbench vm-router --config /etc/routerbench/router.json\n\
     echo \"routerbench-vm: vm-router exited with status $?\"\n\
     poweroff -f\n"
        .to_string()
}

/// What goes into the image.
pub struct ImageParts<'a> {
    pub busybox: &'a [u8],
    pub routerbench: &'a [u8],
    pub modules: &'a [(String, PathBuf)],
    /// Parameters of a module by name (`mac80211_hwsim` → `radios=3`).
    pub module_params: &'a [(String, String)],
    /// Programs, libraries and loader from Debian packages (extras.rs).
    pub extras: &'a [super::extras::ImageEntry],
    pub config_json: &'a str,
}

/// The whole initramfs, gzip-compressed.
pub fn build(parts: &ImageParts<'_>) -> Result<Vec<u8>> {
    let mut c = Cpio::default();
    for d in ["bin", "etc", "etc/routerbench", "lib", "lib/modules"] {
        c.dir(d);
    }
    c.file("init", init_script().as_bytes(), true);
    c.file("bin/busybox", parts.busybox, true);
    for a in APPLETS {
        c.symlink(&format!("bin/{a}"), "busybox");
    }
    c.file("bin/routerbench", parts.routerbench, true);
    let mut order = String::new();
    for (name, path) in parts.modules {
        let data = module_bytes(path)?;
        c.file(&format!("lib/modules/{name}.ko"), &data, false);
        order.push_str(name);
        if let Some((_, p)) = parts.module_params.iter().find(|(n, _)| n == name) {
            order.push(' ');
            order.push_str(p);
        }
        order.push('\n');
    }
    let mut dirs: std::collections::BTreeSet<String> =
        ["bin", "etc", "etc/routerbench", "lib", "lib/modules"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    for e in parts.extras {
        let super::extras::ImageEntry::File {
            path,
            data,
            executable,
        } = e;
        let mut parents = Vec::new();
        let mut p = Path::new(path.as_str()).parent();
        while let Some(d) = p.filter(|d| !d.as_os_str().is_empty()) {
            parents.push(d.to_string_lossy().into_owned());
            p = d.parent();
        }
        for d in parents.into_iter().rev() {
            if dirs.insert(d.clone()) {
                c.dir(&d);
            }
        }
        c.file(path, data, *executable);
    }
    c.file("etc/routerbench/modules", order.as_bytes(), false);
    c.file(
        "etc/routerbench/router.json",
        parts.config_json.as_bytes(),
        false,
    );
    gzip(&c.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newc_header_and_alignment() {
        let mut c = Cpio::default();
        c.file("init", b"abc", true);
        let b = c.finish();
        assert_eq!(&b[..6], b"070701");
        assert_eq!(b.len() % 4, 0);
        // mode field (2nd) and file size (7th).
        assert_eq!(&b[14..22], b"000081ED");
        assert_eq!(&b[54..62], b"00000003");
        // name "init\0" right after the 110-byte header, data 4-aligned after it.
        assert_eq!(&b[110..115], b"init\0");
        assert_eq!(&b[116..119], b"abc");
        assert!(b.windows(10).any(|w| w == b"TRAILER!!!"));
    }

    #[test]
    fn depends_from_modinfo() {
        let ko = b"\x7fELF....\0license=GPL\0depends=nf_tables,nf_nat\0intree=Y\0";
        assert_eq!(module_depends(ko), vec!["nf_tables", "nf_nat"]);
        assert!(module_depends(b"\0depends=\0").is_empty());
        assert!(module_depends(b"nothing here").is_empty());
    }

    #[test]
    fn order_puts_dependencies_first_and_names_a_missing_module() {
        let dir = std::env::temp_dir().join(format!("rb-mods-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("kernel/net")).unwrap();
        std::fs::write(dir.join("kernel/net/a.ko"), b"\0depends=b,c-d\0").unwrap();
        std::fs::write(dir.join("kernel/net/b.ko"), b"\0depends=c_d\0").unwrap();
        std::fs::write(dir.join("kernel/net/c-d.ko"), b"\0depends=\0").unwrap();
        let idx = index_modules(&dir).unwrap();
        let order: Vec<String> = load_order(&idx, &["a"])
            .unwrap()
            .into_iter()
            .map(|x| x.0)
            .collect();
        assert_eq!(order, ["c_d", "b", "a"]);
        let e = load_order(&idx, &["zz"]).unwrap_err().to_string();
        assert!(e.contains("zz"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn builtin_modules_are_skipped_and_xz_modules_indexed() {
        let dir = std::env::temp_dir().join(format!("rb-mods-bi-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("kernel/net")).unwrap();
        std::fs::write(
            dir.join("modules.builtin"),
            "kernel/drivers/virtio/virtio_pci.ko\nkernel/lib/crc-ccitt.ko\n",
        )
        .unwrap();
        std::fs::write(dir.join("kernel/net/a.ko.xz"), b"not read").unwrap();
        std::fs::write(
            dir.join("kernel/net/b.ko"),
            b"\0depends=virtio_pci,crc_ccitt\0",
        )
        .unwrap();
        let idx = index_modules(&dir).unwrap();
        assert!(idx["a"].to_string_lossy().ends_with("a.ko.xz"));
        let bi = builtin_modules(&dir);
        assert!(
            bi.contains("virtio_pci") && bi.contains("crc_ccitt"),
            "{bi:?}"
        );
        let order: Vec<String> = load_order_with(&idx, &bi, &["b", "virtio_pci"])
            .unwrap()
            .into_iter()
            .map(|x| x.0)
            .collect();
        assert_eq!(order, ["b"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
