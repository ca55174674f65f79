//! The .ipk and .apk files bench/package.sh made (in `$ROUTERBENCH_PACKAGES`; .ci/run sets it
//! after the cross build), each installed the way its installer does into a scratch root and
//! then served from: the packaged binary under qemu-user with the packaged UCI config
//! (`routerbench server --config SCRATCH/etc/config/routerbench`) serves a native iperf3 client.
//!
//! - .ipk: opkg is not in Debian, so this unpacks it as OpenWrt's opkg (opkg-lede, libbb's
//!   `deb_extract`/`get_header_tar`) does: the outer file must be a gzip'd tar (no ar), every
//!   header must carry the `ustar` magic and a correct checksum, `./control.tar.gz` and
//!   `./data.tar.gz` are found by name, the data is extracted with its modes under the root, and
//!   the control files go to `usr/lib/opkg/info/routerbench.*`. The control fields are checked
//!   (Package, Version, Architecture, Installed-Size, Description, conffiles), and the postinst is
//!   run with IPKG_INSTROOT=SCRATCH against a stub /lib/functions.sh that records the call.
//! - .apk: apk-tools v3 itself (`$APK`, else ../shared/peers/apk-3.0.6):
//!   `apk --root SCRATCH --initdb --allow-untrusted --no-network --arch ARCH add FILE.apk`, with a
//!   static busybox as SCRATCH/bin/sh so apk's chroot runs the post-install script as a router
//!   would; then `apk del` runs the pre-deinstall one.
//!
//! Without `$ROUTERBENCH_PACKAGES` the test says it skipped, except under CI (CI=true), where
//! that is a failure: CI must test the packages.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ARCHES: [(&str, &str); 4] = [
    ("mipsel_24kc", "qemu-mipsel-static"),
    ("mips_24kc", "qemu-mips-static"),
    ("arm_cortex-a15_neon-vfpv4", "qemu-arm-static"),
    ("aarch64_cortex-a53", "qemu-aarch64-static"),
];

/// Records what OpenWrt's default_postinst/default_prerm are called with.
const FUNCTIONS_STUB: &str = r#"default_postinst() { echo "default_postinst root=$root pkgname=$pkgname $*" >> "${IPKG_INSTROOT}/called"; }
default_prerm() { echo "default_prerm root=$root pkgname=$pkgname $*" >> "${IPKG_INSTROOT}/called"; }
add_group_and_user() { echo "add_group_and_user" >> "${IPKG_INSTROOT}/called"; }
"#;

fn packages_dir() -> Option<PathBuf> {
    match std::env::var_os("ROUTERBENCH_PACKAGES") {
        Some(d) => Some(PathBuf::from(d)),
        None if std::env::var("CI").is_ok_and(|v| v == "true") => panic!(
            "CI must test the packages: run bench/package.sh after bench/cross.sh and set \
             ROUTERBENCH_PACKAGES to its output directory (.ci/run does)"
        ),
        None => {
            eprintln!(
                "skipped: ROUTERBENCH_PACKAGES is not set (TARGETS=armv7 bench/cross.sh && \
                 bench/package.sh, then ROUTERBENCH_PACKAGES=target/packages)"
            );
            None
        }
    }
}

fn files_ending(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    v
}

/// `routerbench_0.1.0-1_mipsel_24kc.ipk` / `routerbench-0.1.0-r1_mipsel_24kc.apk` → the arch.
fn arch_of(file: &Path) -> &'static str {
    let name = file.file_name().unwrap().to_string_lossy().to_string();
    ARCHES
        .iter()
        .map(|(a, _)| *a)
        .find(|a| name.ends_with(&format!("_{a}.ipk")) || name.ends_with(&format!("_{a}.apk")))
        .unwrap_or_else(|| panic!("{name}: no OpenWrt architecture in the name"))
}

fn qemu_of(arch: &str) -> &'static str {
    ARCHES.iter().find(|(a, _)| *a == arch).unwrap().1
}

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("pkg-root-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

// ---- opkg's tar reader (opkg-lede libbb/unarchive.c) ----

#[derive(Debug)]
struct TarEntry {
    name: String,
    mode: u32,
    uid: u64,
    gid: u64,
    typeflag: u8,
    data: Vec<u8>,
}

fn octal(field: &[u8]) -> u64 {
    let s: String = field
        .iter()
        .take_while(|&&b| b != 0)
        .map(|&b| b as char)
        .collect();
    u64::from_str_radix(s.trim(), 8).unwrap_or(0)
}

fn gunzip(bytes: &[u8], what: &str) -> Vec<u8> {
    assert_eq!(
        bytes.get(..2),
        Some(&[0x1f, 0x8b][..]),
        "{what}: not gzip (opkg's reader gunzips the outer file and both members)"
    );
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    out
}

/// Walks a tar as `get_header_tar` does: stops at the first block without the `ustar` magic
/// (the end blocks); a wrong checksum is an error; GNU long names are not supported there, so
/// none may be needed.
fn read_tar(tar: &[u8], what: &str) -> Vec<TarEntry> {
    let mut out = Vec::new();
    let mut off = 0;
    while off + 512 <= tar.len() {
        let h = &tar[off..off + 512];
        if &h[257..262] != b"ustar" {
            break;
        }
        let sum: u64 = h[..148].iter().map(|&b| b as u64).sum::<u64>()
            + 8 * b' ' as u64
            + h[156..].iter().map(|&b| b as u64).sum::<u64>();
        assert_eq!(
            sum,
            octal(&h[148..156]),
            "{what}: bad tar checksum at {off}"
        );
        let typeflag = h[156];
        assert!(
            matches!(typeflag, b'0' | 0 | b'5' | b'2'),
            "{what}: entry type {} that opkg does not extract",
            typeflag as char
        );
        let mut name: String = String::from_utf8_lossy(&h[..100])
            .trim_end_matches('\0')
            .to_string();
        let prefix = String::from_utf8_lossy(&h[345..500])
            .trim_end_matches('\0')
            .to_string();
        if !prefix.is_empty() {
            name = format!("{prefix}/{name}");
        }
        let size = octal(&h[124..136]) as usize;
        let data = tar[off + 512..off + 512 + size].to_vec();
        out.push(TarEntry {
            name,
            mode: (octal(&h[100..108]) & 0o7777) as u32,
            uid: octal(&h[108..116]),
            gid: octal(&h[116..124]),
            typeflag,
            data,
        });
        off += 512 + size.div_ceil(512) * 512;
    }
    assert!(!out.is_empty(), "{what}: no tar entries");
    out
}

fn member<'a>(entries: &'a [TarEntry], name: &str) -> Option<&'a TarEntry> {
    entries
        .iter()
        .find(|e| e.name.strip_prefix("./").unwrap_or(&e.name) == name)
}

/// Extracts `entries` under `root` (names without their `./`), as opkg's data_extract_all_prefix.
fn extract(entries: &[TarEntry], root: &Path) {
    use std::os::unix::fs::PermissionsExt;
    for e in entries {
        let rel = e.name.trim_start_matches("./").trim_end_matches('/');
        assert!(
            !rel.starts_with('/') && !rel.contains(".."),
            "unsafe path {}",
            e.name
        );
        let path = root.join(rel);
        match e.typeflag {
            b'5' => std::fs::create_dir_all(&path).unwrap(),
            b'2' => panic!("{}: the package has no symlinks", e.name),
            _ => {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, &e.data).unwrap();
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(e.mode)).unwrap();
            }
        }
    }
}

fn control_fields(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// Installs an .ipk as opkg would; returns the root.
fn opkg_install(ipk: &Path, arch: &str) -> PathBuf {
    let what = ipk.display().to_string();
    let outer = read_tar(&gunzip(&std::fs::read(ipk).unwrap(), &what), &what);
    let db = member(&outer, "debian-binary").expect("no debian-binary");
    assert_eq!(db.data, b"2.0\n", "{what}: debian-binary");
    for e in &outer {
        assert_eq!(
            (e.uid, e.gid),
            (0, 0),
            "{what}: {} not owned by root",
            e.name
        );
    }
    let control = read_tar(
        &gunzip(
            &member(&outer, "control.tar.gz")
                .expect("no control.tar.gz")
                .data,
            "control",
        ),
        "control.tar.gz",
    );
    let data_tar = gunzip(
        &member(&outer, "data.tar.gz").expect("no data.tar.gz").data,
        "data",
    );
    let data = read_tar(&data_tar, "data.tar.gz");
    let text = String::from_utf8(member(&control, "control").unwrap().data.clone()).unwrap();
    let fields = control_fields(&text);
    let field = |k: &str| {
        fields
            .iter()
            .find(|(f, _)| f == k)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("{what}: control has no {k}: {text}"))
    };
    assert_eq!(field("Package"), "routerbench");
    let version = field("Version");
    let (upstream, release) = version
        .rsplit_once('-')
        .expect("Version is UPSTREAM-RELEASE");
    assert_eq!(upstream, env!("CARGO_PKG_VERSION"), "{what}");
    assert!(release.parse::<u32>().is_ok(), "{what}: release {release}");
    assert_eq!(field("Architecture"), arch, "{what}");
    assert_eq!(
        field("Installed-Size"),
        data_tar.len().to_string(),
        "{what}: Installed-Size is the data tar's size, as ipkg-build writes it"
    );
    assert!(field("Description").len() > 40, "{what}");
    assert!(
        !text.contains("Depends:"),
        "a static binary depends on nothing: {text}"
    );
    let conffiles = member(&control, "conffiles").expect("no conffiles");
    assert_eq!(conffiles.data, b"/etc/config/routerbench\n");
    for script in ["postinst", "prerm"] {
        let s = member(&control, script).unwrap_or_else(|| panic!("no {script}"));
        assert_eq!(s.mode, 0o755, "{script} mode");
        let body = String::from_utf8_lossy(&s.data);
        assert!(body.starts_with("#!/bin/sh\n"), "{body}");
        assert!(body.contains(&format!("default_{script} $0 $@")), "{body}");
    }
    // The data: exactly the three files, with OpenWrt's modes, owned by root.
    let files: Vec<(String, u32)> = data
        .iter()
        .filter(|e| e.typeflag != b'5')
        .map(|e| (e.name.trim_start_matches("./").to_string(), e.mode))
        .collect();
    assert_eq!(
        files,
        vec![
            ("etc/config/routerbench".to_string(), 0o600),
            ("etc/init.d/routerbench".to_string(), 0o755),
            ("usr/bin/routerbench".to_string(), 0o755),
        ],
        "{what}"
    );
    assert!(data.iter().all(|e| (e.uid, e.gid) == (0, 0)));
    let root = scratch(&format!("ipk-{arch}"));
    extract(&data, &root);
    // opkg keeps the control files as usr/lib/opkg/info/PKG.FILE and the file list as .list.
    let info = root.join("usr/lib/opkg/info");
    std::fs::create_dir_all(&info).unwrap();
    for e in control.iter().filter(|e| e.typeflag != b'5') {
        let n = e.name.trim_start_matches("./");
        let p = info.join(format!("routerbench.{n}"));
        std::fs::write(&p, &e.data).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(e.mode)).unwrap();
    }
    let list: String = files.iter().map(|(f, _)| format!("/{f}\n")).collect();
    std::fs::write(info.join("routerbench.list"), list).unwrap();
    // The postinst as opkg runs it for an offline root: IPKG_INSTROOT set.
    std::fs::create_dir_all(root.join("lib")).unwrap();
    std::fs::write(root.join("lib/functions.sh"), FUNCTIONS_STUB).unwrap();
    let st = Command::new(info.join("routerbench.postinst"))
        .arg("configure")
        .env("IPKG_INSTROOT", &root)
        .status()
        .unwrap();
    assert!(st.success(), "postinst failed");
    let called = std::fs::read_to_string(root.join("called")).unwrap_or_default();
    assert!(
        called.contains("default_postinst") && called.contains("routerbench.postinst configure"),
        "{called}"
    );
    root
}

fn apk_tool() -> PathBuf {
    if let Some(p) = std::env::var_os("APK") {
        return PathBuf::from(p);
    }
    let peer = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/peers/apk-3.0.6");
    assert!(
        peer.exists(),
        "no apk-tools v3 to install the .apk with: set APK=/path/to/apk (apk-tools >= 3.0) or \
         keep ../shared/peers/apk-3.0.6 beside the checkout"
    );
    peer
}

/// A static busybox to be the scratch root's /bin/sh (Debian: busybox-static).
fn static_busybox() -> PathBuf {
    let p = PathBuf::from("/bin/busybox");
    let out = Command::new("file").arg("-b").arg(&p).output();
    let ok = out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("statically linked"));
    assert!(
        ok,
        "apk runs the package's scripts chrooted into the root, which needs a /bin/sh there: \
         apt-get install busybox-static"
    );
    p
}

fn apk_install(apk_file: &Path, arch: &str) -> PathBuf {
    let apk = apk_tool();
    let root = scratch(&format!("apk-{arch}"));
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::fs::copy(static_busybox(), root.join("bin/sh")).unwrap();
    std::fs::create_dir_all(root.join("lib")).unwrap();
    std::fs::write(root.join("lib/functions.sh"), FUNCTIONS_STUB).unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(&apk)
            .arg("--root")
            .arg(&root)
            .args(args)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "apk {args:?}: {text}");
        text
    };
    let text = run(&[
        "--initdb",
        "--allow-untrusted",
        "--no-network",
        "--arch",
        arch,
        "add",
        apk_file.to_str().unwrap(),
    ]);
    assert!(text.contains("Installing routerbench"), "{text}");
    let called = std::fs::read_to_string(root.join("called")).unwrap_or_default();
    assert!(
        called.contains("default_postinst root= pkgname=routerbench"),
        "post-install did not run as OpenWrt's does: {called}"
    );
    let info = run(&["--no-network", "info", "-L", "routerbench"]);
    for f in [
        "usr/bin/routerbench",
        "etc/init.d/routerbench",
        "etc/config/routerbench",
        "lib/apk/packages/routerbench.list",
        "lib/apk/packages/routerbench.conffiles",
    ] {
        assert!(info.contains(f), "{f} not in the package: {info}");
    }
    let conf =
        std::fs::read_to_string(root.join("lib/apk/packages/routerbench.conffiles")).unwrap();
    assert_eq!(conf, "/etc/config/routerbench\n");
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &str| {
        std::fs::metadata(root.join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    assert_eq!(mode("usr/bin/routerbench"), 0o755);
    assert_eq!(mode("etc/config/routerbench"), 0o600);
    root
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// The packaged binary under qemu, with the packaged config, serves a native iperf3.
fn serve_from(root: &Path, arch: &str) {
    let bin = root.join("usr/bin/routerbench");
    let config = root.join("etc/config/routerbench");
    let port = free_port().to_string();
    let mut server = Command::new(qemu_of(arch))
        .arg(&bin)
        .args(["server", "--config"])
        .arg(&config)
        .args(["-p", &port, "--bind", "127.0.0.1", "-1"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e} (apt-get install qemu-user-static)", qemu_of(arch)));
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut client = None;
    while Instant::now() < deadline {
        let out = Command::new("iperf3")
            .args(["-c", "127.0.0.1", "-p", &port, "-t", "2"])
            .output()
            .expect("iperf3 (apt-get install iperf3)");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        if out.status.success() || !text.contains("Connection refused") {
            client = Some((out.status.success(), text));
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = server.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = server.kill();
            let _ = server.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut log = String::new();
    let _ = server.stderr.take().unwrap().read_to_string(&mut log);
    let (ok, text) = client.unwrap_or_else(|| panic!("iperf3 never reached the server: {log}"));
    assert!(
        ok,
        "{arch}: iperf3 against the packaged server failed: {text}\nserver: {log}"
    );
    assert!(text.contains("receiver"), "{text}");
    assert!(status.is_some_and(|s| s.success()), "{arch}: server: {log}");
}

#[test]
fn every_package_installs_and_its_server_serves_iperf3() {
    let Some(dir) = packages_dir() else { return };
    let ipks = files_ending(&dir, "ipk");
    let apks = files_ending(&dir, "apk");
    assert!(
        !ipks.is_empty(),
        "{}: no .ipk files (bench/package.sh writes them)",
        dir.display()
    );
    // ROUTERBENCH_NO_APK=1: .ci/run found no apk-tools v3 and made the .ipk files only.
    let no_apk = std::env::var_os("ROUTERBENCH_NO_APK").is_some_and(|v| v == "1");
    if no_apk {
        eprintln!(
            "ROUTERBENCH_NO_APK=1: no apk-tools v3 on this machine, the .apk files are not tested"
        );
    }
    for ipk in &ipks {
        let arch = arch_of(ipk);
        assert!(
            no_apk || apks.iter().any(|a| arch_of(a) == arch),
            "{arch}: an .ipk but no .apk in {}",
            dir.display()
        );
        let root = opkg_install(ipk, arch);
        serve_from(&root, arch);
        eprintln!("{}: unpacked as opkg does, served iperf3", ipk.display());
    }
    for apk in &apks {
        let arch = arch_of(apk);
        let root = apk_install(apk, arch);
        serve_from(&root, arch);
        // Removal runs the pre-deinstall script and takes the binary away.
        let out = Command::new(apk_tool())
            .arg("--root")
            .arg(&root)
            .args(["--no-network", "del", "routerbench"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let called = std::fs::read_to_string(root.join("called")).unwrap_or_default();
        assert!(
            called.contains("default_prerm root= pkgname=routerbench"),
            "{called}"
        );
        assert!(!root.join("usr/bin/routerbench").exists());
        eprintln!(
            "{}: installed with apk, served iperf3, removed",
            apk.display()
        );
    }
}
