//! Files taken out of a Debian package without dpkg-deb or a shell: the package is an `ar`
//! archive whose `data.tar.xz` (or `.gz`) member holds the files; those a caller wants are
//! written under a folder, each checked to stay inside it.

use std::io::Read;
use std::path::{Component, Path};

use super::Error;

/// The most a wanted file may hold (a kernel or a module is far smaller).
const MAX_FILE: u64 = 512 << 20;

fn fail(what: String) -> Error {
    Error::Image(what)
}

/// Writes under `dest` every file of `deb`'s data whose path (without a leading `./`, e.g.
/// `boot/vmlinuz-6.1.0-amd64`) `want` takes; returns how many.
pub fn extract(deb: &Path, dest: &Path, want: impl Fn(&str) -> bool) -> Result<usize, Error> {
    let file = std::fs::File::open(deb).map_err(|e| fail(format!("{}: {e}", deb.display())))?;
    let mut ar = ar::Archive::new(file);
    while let Some(member) = ar.next_entry() {
        let member = member.map_err(|e| fail(format!("{}: {e}", deb.display())))?;
        let name = String::from_utf8_lossy(member.header().identifier()).into_owned();
        let data: Box<dyn Read> = match name.as_str() {
            "data.tar.xz" => Box::new(xz2::read::XzDecoder::new(member)),
            "data.tar.gz" => Box::new(flate2::read::GzDecoder::new(member)),
            "data.tar" => Box::new(member),
            n if n.starts_with("data.tar") => {
                return Err(fail(format!(
                    "{}: its data is {n}, which vnetlab does not unpack (xz or gzip)",
                    deb.display()
                )))
            }
            _ => continue,
        };
        return untar(data, dest, &want).map_err(|e| fail(format!("{}: {e}", deb.display())));
    }
    Err(fail(format!(
        "{}: no data.tar member: not a Debian package",
        deb.display()
    )))
}

/// The wanted regular files of a tar stream, written under `dest`.
fn untar(data: impl Read, dest: &Path, want: &impl Fn(&str) -> bool) -> std::io::Result<usize> {
    let mut n = 0;
    for entry in tar::Archive::new(data).entries()? {
        let mut entry = entry?;
        let path = entry.path()?.into_owned();
        let name = path.to_string_lossy();
        let name = name.trim_start_matches("./").to_string();
        if !entry.header().entry_type().is_file() || !want(&name) {
            continue;
        }
        let rel: std::path::PathBuf = path
            .components()
            .filter(|c| !matches!(c, Component::CurDir))
            .collect();
        if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Err(std::io::Error::other(format!(
                "{name}: a path outside the package"
            )));
        }
        if entry.size() > MAX_FILE {
            return Err(std::io::Error::other(format!(
                "{name}: larger than {MAX_FILE} bytes"
            )));
        }
        let out = dest.join(&rel);
        if let Some(dir) = out.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut bytes = Vec::new();
        (&mut entry).take(MAX_FILE).read_to_end(&mut bytes)?;
        crate::sys::file::replace(&out, &bytes, 0o644)?;
        n += 1;
    }
    Ok(n)
}

/// Whether `name` matches `pattern`, where `*` stands for any run of characters (tar's
/// `--wildcards`, which crosses `/`).
pub fn matches(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, rest)) => {
            let Some(tail) = name.strip_prefix(head) else {
                return false;
            };
            (0..=tail.len())
                .filter(|&i| tail.is_char_boundary(i))
                .any(|i| matches(rest, &tail[i..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_as_tars_do() {
        assert!(matches(
            "*/virtio_net.ko",
            "./lib/modules/6.1/kernel/drivers/net/virtio_net.ko"
        ));
        assert!(!matches(
            "*/virtio_net.ko",
            "./lib/modules/6.1/virtio_net.ko.xz"
        ));
        assert!(matches("./boot/vmlinuz-6.1", "./boot/vmlinuz-6.1"));
        assert!(!matches("./boot/vmlinuz-6.1", "./boot/vmlinuz-6.1.0"));
        assert!(matches("a*b*c", "axxbyyc"));
    }

    #[test]
    fn a_package_gives_up_only_the_files_asked_for() {
        let dir = std::env::temp_dir().join(format!("vnetlab-deb-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut tar = tar::Builder::new(Vec::new());
        for (name, body) in [("./boot/k", &b"kernel"[..]), ("./etc/x", b"no")] {
            let mut h = tar::Header::new_gnu();
            h.set_size(body.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            tar.append_data(&mut h, name, body).unwrap();
        }
        let data = tar.into_inner().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &data).unwrap();
        let gz = gz.finish().unwrap();
        let deb = dir.join("p.deb");
        let mut ar = ar::Builder::new(std::fs::File::create(&deb).unwrap());
        ar.append(
            &ar::Header::new(b"debian-binary".to_vec(), 4),
            &b"2.0\n"[..],
        )
        .unwrap();
        ar.append(
            &ar::Header::new(b"data.tar.gz".to_vec(), gz.len() as u64),
            &gz[..],
        )
        .unwrap();
        drop(ar);
        let out = dir.join("out");
        assert_eq!(extract(&deb, &out, |n| matches("boot/*", n)).unwrap(), 1);
        assert_eq!(std::fs::read(out.join("boot/k")).unwrap(), b"kernel");
        assert!(!out.join("etc/x").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
