//! A private apt for the VM router's foreign packages: its own configuration, sources, lists and
//! package cache under the asset cache (`~/.cache/routerbench/vm/apt-<deb arch>/`), given to
//! `apt-get`/`apt-cache` with `APT_CONFIG`. The host's dpkg never learns the foreign
//! architecture and its apt sources stay untouched, yet the packages come from Debian's own
//! archive through apt (signed indexes, checked by apt against Debian's archive keyring). The
//! sources are bookworm, bookworm-updates, bookworm-security and bookworm-backports (the 6.12
//! armmp kernel the Wi-Fi router uses is in backports). `$ROUTERBENCH_DEBIAN_MIRROR` and
//! `$ROUTERBENCH_DEBIAN_SECURITY` replace deb.debian.org's addresses.

use super::arch::VmArch;
use crate::lab::error::{LabError, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The suites the private apt knows.
pub const SUITES: &[&str] = &["bookworm", "bookworm-updates", "bookworm-backports"];
/// Debian's archive keyring (package debian-archive-keyring).
pub const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";
/// Lists older than this are fetched again before a download.
const LISTS_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);

/// A private apt state for one Debian architecture.
#[derive(Debug, Clone)]
pub struct PrivateApt {
    pub dir: PathBuf,
    pub deb_arch: &'static str,
}

fn sys(what: &str, p: &Path, e: std::io::Error) -> LabError {
    LabError::Sys(format!("cannot {what} {}: {e}", p.display()))
}

/// sources.list for `deb_arch`: the main archive's suites and the security archive.
pub fn sources_list(deb_arch: &str, mirror: &str, security: &str) -> String {
    let opts = format!("[arch={deb_arch} signed-by={KEYRING}]");
    let mut s = String::new();
    for suite in SUITES {
        s.push_str(&format!("deb {opts} {mirror} {suite} main\n"));
    }
    s.push_str(&format!("deb {opts} {security} bookworm-security main\n"));
    s
}

/// apt.conf: only `deb_arch`, every directory under `dir`.
pub fn apt_conf(dir: &Path, deb_arch: &str) -> String {
    let d = dir.display();
    format!(
        "APT::Architecture \"{deb_arch}\";\n\
         APT::Architectures {{ \"{deb_arch}\"; }};\n\
         Dir::State \"{d}/state\";\n\
         Dir::State::Lists \"{d}/lists\";\n\
         Dir::State::status \"{d}/status\";\n\
         Dir::Cache \"{d}/cache\";\n\
         Dir::Etc::SourceList \"{d}/sources.list\";\n\
         Dir::Etc::SourceParts \"{d}/sources.list.d\";\n\
         Dir::Etc::Preferences \"{d}/preferences\";\n\
         Dir::Etc::PreferencesParts \"{d}/preferences.d\";\n\
         Acquire::Languages \"none\";\n"
    )
}

impl PrivateApt {
    /// The private apt of `arch` under `cache` (created, not yet updated).
    pub fn new(cache: &Path, arch: VmArch) -> Result<Self> {
        let deb_arch = arch.deb_arch();
        let dir = cache.join(format!("apt-{deb_arch}"));
        for sub in [
            "state",
            "lists/partial",
            "cache/archives/partial",
            "sources.list.d",
            "preferences.d",
        ] {
            let p = dir.join(sub);
            std::fs::create_dir_all(&p).map_err(|e| sys("create", &p, e))?;
        }
        if !Path::new(KEYRING).exists() {
            return Err(LabError::State(format!(
                "{KEYRING} is missing: the VM router's packages are checked against Debian's \
                 archive keys (apt-get install debian-archive-keyring)"
            )));
        }
        let env = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_string());
        let mirror = env("ROUTERBENCH_DEBIAN_MIRROR", "http://deb.debian.org/debian");
        let security = env(
            "ROUTERBENCH_DEBIAN_SECURITY",
            "http://deb.debian.org/debian-security",
        );
        let write = |name: &str, text: String| {
            let p = dir.join(name);
            if std::fs::read_to_string(&p).ok().as_deref() != Some(text.as_str()) {
                std::fs::write(&p, text).map_err(|e| sys("write", &p, e))?;
            }
            Ok::<_, LabError>(())
        };
        write("sources.list", sources_list(deb_arch, &mirror, &security))?;
        write("apt.conf", apt_conf(&dir, deb_arch))?;
        let status = dir.join("status");
        if !status.exists() {
            std::fs::write(&status, b"").map_err(|e| sys("write", &status, e))?;
        }
        Ok(Self { dir, deb_arch })
    }

    fn command(&self, tool: &str) -> std::process::Command {
        let mut c = std::process::Command::new(tool);
        c.env("APT_CONFIG", self.dir.join("apt.conf"));
        c
    }

    fn run(&self, tool: &str, args: &[&str], cwd: Option<&Path>) -> Result<String> {
        let mut c = self.command(tool);
        c.args(args);
        if let Some(d) = cwd {
            c.current_dir(d);
        }
        let out = c.output().map_err(|e| {
            LabError::State(format!(
                "cannot run {tool} (apt is needed to fetch the VM router's packages): {e}"
            ))
        })?;
        if !out.status.success() {
            return Err(LabError::State(format!(
                "{tool} {} (private apt for {}, {}) failed ({}): {}",
                args.join(" "),
                self.deb_arch,
                self.dir.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The package lists' age, if any were fetched.
    fn lists_age(&self) -> Option<Duration> {
        let rd = std::fs::read_dir(self.dir.join("lists")).ok()?;
        rd.flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with("_Packages"))
            .filter_map(|e| e.metadata().ok()?.modified().ok())
            .max()
            .and_then(|m| m.elapsed().ok())
    }

    /// `apt-get update` unless the lists are fresh (or `force`).
    pub fn update(&self, force: bool) -> Result<()> {
        let fresh = self.lists_age().is_some_and(|a| a < LISTS_MAX_AGE);
        if fresh && !force {
            return Ok(());
        }
        self.run("apt-get", &["update", "-qq"], None).map_err(|e| {
            LabError::State(format!(
                "{e}; the VM router's packages come from Debian's archive: is the network up, \
                 or set ROUTERBENCH_DEBIAN_MIRROR to a reachable mirror"
            ))
        })?;
        Ok(())
    }

    /// What `pkg` depends on (`apt-cache depends`), from `release` when given (`-t
    /// bookworm-backports`: backports' packages are never the default candidate).
    pub fn depends(&self, pkg: &str, release: Option<&str>) -> Result<String> {
        self.update(false)?;
        let mut args = vec!["depends", pkg];
        if let Some(r) = release {
            args = vec!["-t", r, "depends", pkg];
        }
        self.run("apt-cache", &args, None)
    }

    /// Downloads `pkg` into `into` (`apt-get download`); retries once after a fresh update
    /// (a version that left the archive since the lists were fetched).
    pub fn download(&self, pkg: &str, into: &Path) -> Result<()> {
        self.update(false)?;
        let args = ["download", "-q", pkg];
        if self.run("apt-get", &args, Some(into)).is_ok() {
            return Ok(());
        }
        self.update(true)?;
        self.run("apt-get", &args, Some(into)).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_and_config_stay_private() {
        let s = sources_list(
            "armhf",
            "http://deb.debian.org/debian",
            "http://deb.debian.org/debian-security",
        );
        assert_eq!(s.lines().count(), 4);
        assert!(s.contains(
            "deb [arch=armhf signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] \
             http://deb.debian.org/debian bookworm-backports main"
        ));
        assert!(s.contains("debian-security bookworm-security main"));
        let c = apt_conf(Path::new("/c/apt-armhf"), "armhf");
        assert!(c.contains("APT::Architectures { \"armhf\"; };"));
        assert!(c.contains("Dir::State::status \"/c/apt-armhf/status\";"));
        assert!(c.contains("Dir::Etc::SourceList \"/c/apt-armhf/sources.list\";"));
    }
}
