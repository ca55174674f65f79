//! Debian programs for the VM router's image, with the shared libraries they need: hostapd and
//! iw for the Wi-Fi router; any other dynamically linked program of the VM's architecture the
//! same way. Adding a program is one [`Program`] line: its name in the image (`/bin/NAME`), its
//! path in its package, and the packages it and its libraries come from.
//!
//! The packages are fetched with the private apt (apt.rs: `apt-get download` into
//! `<cache>/extras-<deb arch>/`), unpacked with `dpkg-deb -x` into its `root/`, and recorded
//! (package, version, SHA-256 of each .deb) in `<cache>/extras-<deb arch>/manifest.json`, as the
//! kernel and busybox are (assets.rs). Which libraries go into the image is read from the
//! programs themselves: each ELF's `DT_NEEDED`, then each library's, until nothing new (elf.rs).
//! The libraries go to `/lib/<multiarch>/` (the dynamic loader's own directory, which it searches
//! without an ld.so.cache) and the loader to the path the programs name (`PT_INTERP`,
//! `/lib/ld-linux-armhf.so.3` on armhf). A library no listed package has is an error that names
//! the library and the program that needs it.

use super::arch::VmArch;
use super::assets::PackageRecord;
use crate::lab::error::{LabError, Result};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// A program from a Debian package and the packages its libraries come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Program {
    /// Its name in the image: `/bin/<name>`.
    pub name: &'static str,
    /// Its path inside the package (as `dpkg-deb -x` unpacks it).
    pub path: &'static str,
    /// The packages of the program and of every library it needs (without architecture).
    pub packages: &'static [&'static str],
}

/// hostapd 2.10 (bookworm): the Wi-Fi router's access point.
pub const HOSTAPD: Program = Program {
    name: "hostapd",
    path: "usr/sbin/hostapd",
    packages: &[
        "hostapd",
        "libc6",
        "libnl-3-200",
        "libnl-genl-3-200",
        "libnl-route-3-200",
        "libssl3",
    ],
};
/// iw 5.19 (bookworm): stations connect with `iw dev … connect` (no wpa_supplicant on an open
/// network) and radios move into the stations' namespaces with `iw phy … set netns`.
pub const IW: Program = Program {
    name: "iw",
    path: "sbin/iw",
    packages: &["iw", "libc6", "libnl-3-200", "libnl-genl-3-200"],
};
/// What `lab up --router vm --wifi N` adds to the image.
pub const WIFI: &[Program] = &[HOSTAPD, IW];
/// iperf3 3.12 (bookworm), the seed's `iperf3 -s -D && iperf3 -c 127.0.0.1`, for comparing
/// `routerbench loopback` with it on the router's CPU (`lab up --extras iperf3`).
pub const IPERF3: Program = Program {
    name: "iperf3",
    path: "usr/bin/iperf3",
    // libatomic1: mipsel's libcrypto needs it (32-bit MIPS has no 64-bit atomics); unused on armhf.
    packages: &[
        "iperf3",
        "libiperf0",
        "libc6",
        "libsctp1",
        "libssl3",
        "libatomic1",
    ],
};
/// openssl 3.0 (bookworm), the seed's `openssl speed`, for comparing the crypto row with it on
/// the router's CPU (`lab up --extras openssl`; the static routerbench's openssl engine runs it).
pub const OPENSSL: Program = Program {
    name: "openssl",
    path: "usr/bin/openssl",
    packages: &["openssl", "libc6", "libssl3", "libatomic1"],
};
/// Files a program opens by path rather than through `DT_NEEDED`, kept at their path in the
/// package: OpenSSL 3's legacy provider (`openssl speed -provider legacy des`, single DES), in
/// the module directory libcrypto was built with. Its own libraries are openssl's.
pub fn loaded_files(p: &Program, arch: VmArch) -> Vec<String> {
    match p.name {
        "openssl" => vec![format!(
            "usr/lib/{}/ossl-modules/legacy.so",
            arch.multiarch()
        )],
        _ => Vec::new(),
    }
}

/// The programs `lab up --extras NAME,…` can add (the control port's allow-list runs them).
pub const NAMED: &[Program] = &[IPERF3, OPENSSL];

/// The program `lab up --extras` names, or an error listing those it knows.
pub fn by_name(name: &str) -> Result<Program> {
    NAMED
        .iter()
        .copied()
        .find(|p| p.name == name)
        .ok_or_else(|| {
            LabError::Input(format!(
                "--extras {name}: not a program the VM's image can carry (known: {})",
                NAMED.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
            ))
        })
}

/// One entry of the image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageEntry {
    File {
        /// Relative to the image's root (`bin/hostapd`).
        path: String,
        data: Vec<u8>,
        executable: bool,
    },
}

impl ImageEntry {
    pub fn path(&self) -> &str {
        match self {
            ImageEntry::File { path, .. } => path,
        }
    }
}

/// The programs, their libraries and loader, and the packages they came from.
#[derive(Debug, Clone, Default)]
pub struct Extras {
    pub entries: Vec<ImageEntry>,
    pub packages: Vec<PackageRecord>,
    /// `hostapd (usr/sbin/hostapd from hostapd 2:2.10-12+deb12u3)`, one per program.
    pub programs: Vec<String>,
}

/// The packages `programs` need, each once, in order.
pub fn packages_of(programs: &[Program]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for p in programs {
        for pkg in p.packages {
            if !out.contains(pkg) {
                out.push(pkg);
            }
        }
    }
    out
}

fn sys(what: &str, p: &Path, e: std::io::Error) -> LabError {
    LabError::Sys(format!("cannot {what} {}: {e}", p.display()))
}

/// `path` inside `root` with its symbolic links followed inside `root` (absolute targets are
/// taken relative to `root`).
pub fn resolve_in_root(root: &Path, rel: &str) -> Option<PathBuf> {
    let mut cur = rel.trim_start_matches('/').to_string();
    for _ in 0..16 {
        let p = root.join(&cur);
        let meta = std::fs::symlink_metadata(&p).ok()?;
        if !meta.file_type().is_symlink() {
            return Some(p);
        }
        let target = std::fs::read_link(&p).ok()?;
        let t = target.to_string_lossy();
        cur = if let Some(abs) = t.strip_prefix('/') {
            abs.to_string()
        } else {
            let parent = Path::new(&cur)
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default();
            normalize(&parent.join(&*t))
        };
    }
    None
}

/// `a/b/../c` → `a/c` (no file system access).
fn normalize(p: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                parts.pop();
            }
            std::path::Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
            _ => {}
        }
    }
    parts.join("/")
}

/// The directories a library is looked for in, inside the unpacked packages.
fn lib_dirs(arch: VmArch) -> [String; 4] {
    let m = arch.multiarch();
    [
        format!("lib/{m}"),
        format!("usr/lib/{m}"),
        "lib".into(),
        "usr/lib".into(),
    ]
}

/// The image entries for `programs` from the packages unpacked in `root`: each program at
/// `bin/NAME`, the libraries they need (transitively) in `lib/<multiarch>/`, and the loader at
/// its `PT_INTERP` path.
pub fn collect(root: &Path, arch: VmArch, programs: &[Program]) -> Result<Vec<ImageEntry>> {
    let mut entries = Vec::new();
    let mut have: BTreeSet<String> = BTreeSet::new();
    let read = |p: &Path| std::fs::read(p).map_err(|e| sys("read", p, e));
    for prog in programs {
        let exe = resolve_in_root(root, prog.path).ok_or_else(|| {
            LabError::State(format!(
                "{} is not in the unpacked packages ({}): is {} intact? delete {} and retry",
                prog.path,
                root.display(),
                prog.packages.first().copied().unwrap_or("its package"),
                root.display()
            ))
        })?;
        let data = read(&exe)?;
        let dynamic = super::elf::dynamic(&data)
            .map_err(|e| LabError::State(format!("{}: {e}", exe.display())))?;
        super::assets::check_elf(&data, arch).map_err(|why| {
            LabError::State(format!(
                "{} is not for the {} VM: {why}",
                exe.display(),
                arch.name()
            ))
        })?;
        entries.push(ImageEntry::File {
            path: format!("bin/{}", prog.name),
            data,
            executable: true,
        });
        if let Some(interp) = &dynamic.interp {
            let rel = interp.trim_start_matches('/').to_string();
            if have.insert(rel.clone()) {
                let p = resolve_in_root(root, &rel).ok_or_else(|| {
                    LabError::State(format!(
                        "{}'s loader {interp} is in no listed package (add libc6)",
                        prog.name
                    ))
                })?;
                entries.push(ImageEntry::File {
                    path: rel,
                    data: read(&p)?,
                    executable: true,
                });
            }
        }
        // Breadth first over DT_NEEDED (bounded: a loop of names ends, each is taken once).
        let mut todo: Vec<(String, String)> = dynamic
            .needed
            .iter()
            .map(|n| (n.clone(), prog.name.to_string()))
            .collect();
        let mut steps = 0;
        while let Some((lib, by)) = todo.pop() {
            steps += 1;
            if steps > 1000 {
                return Err(LabError::Unexpected(format!(
                    "{}'s libraries do not end",
                    prog.name
                )));
            }
            let dest = format!("lib/{}/{lib}", arch.multiarch());
            if !have.insert(dest.clone()) {
                continue;
            }
            let found = lib_dirs(arch)
                .iter()
                .find_map(|d| resolve_in_root(root, &format!("{d}/{lib}")))
                .ok_or_else(|| {
                    LabError::State(format!(
                        "{lib} (needed by {by}, for {}) is in none of the packages {}: add the \
                         package that has it to the program's list (src/lab/vm/extras.rs)",
                        prog.name,
                        prog.packages.join(", ")
                    ))
                })?;
            let data = read(&found)?;
            let d = super::elf::dynamic(&data)
                .map_err(|e| LabError::State(format!("{}: {e}", found.display())))?;
            for n in d.needed {
                todo.push((n, lib.clone()));
            }
            entries.push(ImageEntry::File {
                path: dest,
                data,
                executable: true,
            });
        }
    }
    Ok(entries)
}

/// Fetches (once; cached) and unpacks the packages of `programs` for `arch`, and collects
/// their image entries.
pub fn fetch(cache: &Path, arch: VmArch, programs: &[Program]) -> Result<Extras> {
    let deb_arch = arch.deb_arch();
    let dir = cache.join(format!("extras-{deb_arch}"));
    let root = dir.join("root");
    std::fs::create_dir_all(&root).map_err(|e| sys("create", &root, e))?;
    let mut apt = None;
    let mut packages = Vec::new();
    for pkg in packages_of(programs) {
        let deb = match super::assets::find_deb_named(&dir, pkg, deb_arch) {
            Some(d) => d,
            None => {
                let a = match &apt {
                    Some(a) => a,
                    None => apt.insert(super::apt::PrivateApt::new(cache, arch)?),
                };
                a.download(&format!("{pkg}:{deb_arch}"), &dir)?;
                super::assets::find_deb_named(&dir, pkg, deb_arch).ok_or_else(|| {
                    LabError::Unexpected(format!(
                        "apt-get download {pkg}:{deb_arch} left no {pkg}_*_{deb_arch}.deb in {}",
                        dir.display()
                    ))
                })?
            }
        };
        packages.push(super::assets::unpack(&deb, &root)?);
    }
    super::assets::write_manifest(&dir.join("manifest.json"), &packages)?;
    let mut entries = collect(&root, arch, programs)?;
    for p in programs {
        for rel in loaded_files(p, arch) {
            let f = resolve_in_root(&root, &rel).ok_or_else(|| {
                LabError::State(format!(
                    "{rel} (loaded by {}) is not in {}: delete {} and retry",
                    p.name,
                    p.packages.join(", "),
                    dir.display()
                ))
            })?;
            let data = std::fs::read(&f).map_err(|e| sys("read", &f, e))?;
            entries.push(ImageEntry::File {
                path: rel,
                data,
                executable: false,
            });
        }
    }
    let programs = programs
        .iter()
        .map(|p| {
            let v = packages
                .iter()
                .find(|r| r.package == p.packages[0])
                .map(|r| r.version.as_str())
                .unwrap_or("?");
            format!("{} (/{} from {} {v})", p.name, p.path, p.packages[0])
        })
        .collect();
    Ok(Extras {
        entries,
        packages,
        programs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packages_once_in_order() {
        assert_eq!(
            packages_of(WIFI),
            [
                "hostapd",
                "libc6",
                "libnl-3-200",
                "libnl-genl-3-200",
                "libnl-route-3-200",
                "libssl3",
                "iw"
            ]
        );
    }

    #[test]
    fn named_programs_are_the_control_ports_allow_list() {
        let names: Vec<&str> = NAMED.iter().map(|p| p.name).collect();
        assert_eq!(names, super::super::guest_run::EXTRA_PROGRAMS);
        assert_eq!(by_name("iperf3").unwrap(), IPERF3);
        assert_eq!(
            loaded_files(&OPENSSL, VmArch::Armv7),
            ["usr/lib/arm-linux-gnueabihf/ossl-modules/legacy.so"]
        );
        assert!(loaded_files(&IPERF3, VmArch::Mipsel).is_empty());
        let e = by_name("sh").unwrap_err().to_string();
        assert!(e.contains("iperf3, openssl"), "{e}");
        assert_eq!(
            packages_of(&[IPERF3, OPENSSL]),
            [
                "iperf3",
                "libiperf0",
                "libc6",
                "libsctp1",
                "libssl3",
                "libatomic1",
                "openssl"
            ]
        );
    }

    #[test]
    fn links_resolve_inside_the_root() {
        let dir = std::env::temp_dir().join(format!("rb-extras-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("lib/arm-linux-gnueabihf")).unwrap();
        std::fs::write(
            dir.join("lib/arm-linux-gnueabihf/ld-linux-armhf.so.3"),
            b"ld",
        )
        .unwrap();
        std::os::unix::fs::symlink(
            "arm-linux-gnueabihf/ld-linux-armhf.so.3",
            dir.join("lib/ld-linux-armhf.so.3"),
        )
        .unwrap();
        std::os::unix::fs::symlink("/lib/ld-linux-armhf.so.3", dir.join("lib/abs")).unwrap();
        std::os::unix::fs::symlink("loop", dir.join("lib/loop")).unwrap();
        let got = resolve_in_root(&dir, "/lib/ld-linux-armhf.so.3").unwrap();
        assert_eq!(std::fs::read(got).unwrap(), b"ld");
        assert!(resolve_in_root(&dir, "lib/abs").is_some());
        assert!(resolve_in_root(&dir, "lib/loop").is_none());
        assert!(resolve_in_root(&dir, "lib/none").is_none());
        let e = collect(&dir, VmArch::Armv7, &[IW]).unwrap_err().to_string();
        assert!(e.contains("sbin/iw"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
