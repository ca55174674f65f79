//! The project's one file writer: a temporary file next to the target, renamed over it, so a
//! reader never sees half a file (result documents, reports, flent files, pid files); a device
//! or a pipe (`/dev/stdout`, which every output option accepts) is written in place.

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to a temporary file next to `path` (its directory created), synced, then
/// renames it over `path`, so a reader never sees half a document. The temporary name carries
/// the whole file name and this process's id (`.NAME.tmp-PID`: any kind of file, two processes
/// never share one), and it is removed if the write fails.
pub fn write_atomic(path: &Path, bytes: impl AsRef<[u8]>) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "result".into());
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let written = std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(bytes.as_ref()).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Writes `bytes` to `path`: replaced atomically ([`write_atomic`]) when it is a regular file
/// or new (through a symlink: its target), written in place when it is a device, a pipe or one
/// of this process's descriptors (`/dev/stdout`, `/dev/fd/1`: links into `/proc`, even when
/// the descriptor is a redirected file), which cannot be renamed over.
pub fn write_output(path: &Path, bytes: impl AsRef<[u8]>) -> std::io::Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return write_atomic(path, bytes);
    };
    if meta.file_type().is_symlink() {
        let into_proc = std::fs::read_link(path).is_ok_and(|t| t.starts_with("/proc"))
            || path
                .parent()
                .and_then(|d| std::fs::canonicalize(d).ok())
                .is_some_and(|d| d.starts_with("/proc"));
        let target = std::fs::canonicalize(path).ok();
        let regular = std::fs::metadata(path).is_ok_and(|m| m.is_file());
        return match target {
            Some(t) if regular && !into_proc => write_atomic(&t, bytes),
            _ => write_in_place(path, bytes.as_ref()),
        };
    }
    if !meta.is_file() && !meta.is_dir() {
        return write_in_place(path, bytes.as_ref());
    }
    write_atomic(path, bytes)
}

fn write_in_place(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
    f.write_all(bytes)?;
    f.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("rb-fs-{}", std::process::id()));
        let path = dir.join("sub").join("a.json");
        write_atomic(&path, "one\n").unwrap();
        write_atomic(&path, b"two\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two\n");
        let names: Vec<_> = std::fs::read_dir(dir.join("sub"))
            .unwrap()
            .flatten()
            .collect();
        assert_eq!(names.len(), 1, "no temporary file is left");
        write_output(Path::new("/dev/null"), "in place\n").unwrap();
        let link = dir.join("link.json");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        write_output(&link, "through the link\n").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "through the link\n"
        );
        assert!(write_output(Path::new("/dev/full"), "x").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
