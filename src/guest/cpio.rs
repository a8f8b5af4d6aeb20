//! The initramfs archive: the kernel's "newc" cpio format (`Documentation/driver-api/
//! early-userspace/buffer-format.rst`), written by hand because it is a few dozen lines and the
//! guest image is the product. Directories, regular files and symlinks only.

/// One entry of the archive.
pub enum Entry<'a> {
    Dir {
        path: &'a str,
        mode: u32,
    },
    File {
        path: &'a str,
        mode: u32,
        data: &'a [u8],
    },
    Symlink {
        path: &'a str,
        target: &'a str,
    },
}

/// An archive being written, in memory.
#[derive(Default)]
pub struct Archive {
    out: Vec<u8>,
    ino: u32,
}

const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;

impl Archive {
    /// Appends one entry; paths are relative (`bin/busybox`), parents added before children.
    pub fn add(&mut self, e: &Entry) {
        let (path, mode, data): (&str, u32, &[u8]) = match e {
            Entry::Dir { path, mode } => (path, S_IFDIR | (mode & 0o7777), &[]),
            Entry::File { path, mode, data } => (path, S_IFREG | (mode & 0o7777), data),
            Entry::Symlink { path, target } => (path, S_IFLNK | 0o777, target.as_bytes()),
        };
        self.ino += 1;
        let nlink = if matches!(e, Entry::Dir { .. }) { 2 } else { 1 };
        self.header(self.ino, mode, nlink, data.len(), path);
        self.out.extend_from_slice(data);
        self.pad();
    }

    /// Ends the archive (the `TRAILER!!!` entry) and returns its bytes.
    pub fn finish(mut self) -> Vec<u8> {
        self.header(0, 0, 1, 0, "TRAILER!!!");
        self.out
    }

    fn header(&mut self, ino: u32, mode: u32, nlink: u32, size: usize, name: &str) {
        let fields = [
            ino,
            mode,
            0, // uid
            0, // gid
            nlink,
            0, // mtime: fixed, so the same inputs make the same bytes
            size as u32,
            0,
            0,
            0,
            0,
            name.len() as u32 + 1,
            0, // check
        ];
        self.out.extend_from_slice(b"070701");
        for f in fields {
            self.out.extend_from_slice(format!("{f:08x}").as_bytes());
        }
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(0);
        self.pad();
    }

    fn pad(&mut self) {
        while !self.out.len().is_multiple_of(4) {
            self.out.push(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads an archive back: (name, mode, data) per entry, checking the layout on the way.
    fn read(mut b: &[u8]) -> Vec<(String, u32, Vec<u8>)> {
        let total = b.len();
        let mut v = Vec::new();
        loop {
            assert_eq!(&b[..6], b"070701");
            let field = |i: usize| {
                let s = std::str::from_utf8(&b[6 + 8 * i..14 + 8 * i]).unwrap();
                u32::from_str_radix(s, 16).unwrap() as usize
            };
            let (mode, size, namesize) = (field(1), field(6), field(11));
            let name = std::str::from_utf8(&b[110..110 + namesize - 1])
                .unwrap()
                .to_string();
            assert_eq!(b[110 + namesize - 1], 0);
            let data_at = (110 + namesize).div_ceil(4) * 4;
            let data = b[data_at..data_at + size].to_vec();
            b = &b[(data_at + size).div_ceil(4) * 4..];
            assert_eq!((total - b.len()) % 4, 0, "entries are 4-byte aligned");
            if name == "TRAILER!!!" {
                assert!(b.is_empty());
                return v;
            }
            v.push((name, mode as u32, data));
        }
    }

    #[test]
    fn entries_round_trip_aligned_with_their_types() {
        let mut a = Archive::default();
        a.add(&Entry::Dir {
            path: "bin",
            mode: 0o755,
        });
        a.add(&Entry::File {
            path: "bin/busybox",
            mode: 0o755,
            data: b"12345",
        });
        a.add(&Entry::Symlink {
            path: "bin/sh",
            target: "busybox",
        });
        a.add(&Entry::File {
            path: "init",
            mode: 0o755,
            data: b"",
        });
        let got = read(&a.finish());
        assert_eq!(got.len(), 4);
        assert_eq!(got[0], ("bin".into(), 0o040755, vec![]));
        assert_eq!(got[1], ("bin/busybox".into(), 0o100755, b"12345".to_vec()));
        assert_eq!(got[2], ("bin/sh".into(), 0o120777, b"busybox".to_vec()));
        assert_eq!(got[3].0, "init");
    }

    #[test]
    fn the_same_inputs_make_the_same_bytes() {
        let make = || {
            let mut a = Archive::default();
            a.add(&Entry::File {
                path: "x",
                mode: 0o644,
                data: b"abc",
            });
            a.finish()
        };
        assert_eq!(make(), make());
    }
}
