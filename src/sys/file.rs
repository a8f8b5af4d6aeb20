//! Writing a file in place of whatever a path names, without following a link someone planted
//! there: the bytes go to a new file made beside it (`O_CREAT | O_EXCL | O_NOFOLLOW`, so nothing
//! that already exists is opened), checked to be a plain file, synced, then renamed over the
//! path (rename replaces a symlink itself, never what it points to).

use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// Writes `bytes` as the file at `path` (mode `mode`), replacing what was there.
pub fn replace(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let tmp = dir.join(format!(
        ".{}.vnetlab-{}-{}",
        name.to_string_lossy(),
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0)
    ));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&tmp)?;
    let done = (|| {
        let m = f.metadata()?;
        if !m.file_type().is_file() || m.nlink() != 1 {
            return Err(io::Error::other(
                "the new file is not a plain file of its own",
            ));
        }
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planted_link_is_replaced_not_followed() {
        let d = std::env::temp_dir().join(format!("vl-file-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let victim = d.join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let out = d.join("out.txt");
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        replace(&out, b"new", 0o644).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(std::fs::read(&out).unwrap(), b"new");
        assert!(!std::fs::symlink_metadata(&out)
            .unwrap()
            .file_type()
            .is_symlink());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
