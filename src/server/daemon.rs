//! iperf3's `-D` (run in the background) and `-I FILE` (pid file) for the server.
//!
//! The listener is bound *before* detaching, so "port in use" reaches the user's terminal;
//! the fork happens before any thread starts.

use super::ServerError;
use std::path::{Path, PathBuf};

/// Detaches from the terminal: fork, new session, cwd `/`, stdin/stdout/stderr to /dev/null
/// (what iperf3's `-D` does through daemon(3)). Only the child returns.
/// Call before this process starts any thread: daemon(3) forks, and only the calling thread
/// lives on in the child.
pub fn detach() -> Result<(), ServerError> {
    nix::unistd::daemon(false, false)
        .map_err(|errno| ServerError::Detach(std::io::Error::from(errno)))
}

/// A written pid file, removed when dropped (the server's normal exit).
pub struct PidFile {
    path: PathBuf,
}

impl PidFile {
    /// Refuses when `path` names a live process (another server), else writes our pid.
    pub fn check(path: &Path) -> Result<PathBuf, ServerError> {
        let abs = if path.is_absolute() {
            path.to_path_buf()
        } else {
            std::env::current_dir()
                .map_err(|e| ServerError::io("pid file: current directory", e))?
                .join(path)
        };
        let running = std::fs::read_to_string(&abs)
            .ok()
            .and_then(|text| text.trim().parse::<i32>().ok())
            .filter(|&pid| {
                pid > 0
                    && pid != std::process::id() as i32
                    && Path::new(&format!("/proc/{pid}")).exists()
            });
        if let Some(pid) = running {
            return Err(ServerError::PidFileLive {
                path: abs.display().to_string(),
                pid,
            });
        }
        if let Some(dir) = abs.parent().filter(|d| !d.is_dir()) {
            return Err(ServerError::PidFileDir {
                path: abs.display().to_string(),
                dir: dir.display().to_string(),
            });
        }
        Ok(abs)
    }

    /// Writes this process's pid to `path` (made absolute by [`PidFile::check`]) atomically
    /// ([`crate::util::fs::write_atomic`]: a temporary file renamed over it), so a reader that
    /// sees the file (a service manager, a script waiting for it) never reads it empty.
    pub fn write(path: PathBuf) -> Result<PidFile, ServerError> {
        crate::util::fs::write_atomic(&path, format!("{}\n", std::process::id())).map_err(
            |source| ServerError::PidFileWrite {
                path: path.display().to_string(),
                source,
            },
        )?;
        Ok(PidFile { path })
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_file_written_refused_when_live_and_removed() {
        let path = std::env::temp_dir().join(format!("rb-pid-{}", std::process::id()));
        let abs = PidFile::check(&path).unwrap();
        let pf = PidFile::write(abs.clone()).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.trim(), std::process::id().to_string());
        // pid 1 is always alive: a file naming it is refused.
        std::fs::write(&path, "1\n").unwrap();
        let err = PidFile::check(&path).unwrap_err().to_string();
        assert!(err.contains("running process (1)"), "{err}");
        drop(pf);
        assert!(!path.exists(), "removed on drop");
        assert!(PidFile::check(Path::new("/nonexistent-dir/x.pid")).is_err());
    }
}
