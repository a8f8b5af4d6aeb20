//! Small helpers for the text vnetlab shows people: output that never panics when its reader goes
//! away (`| head`), user input echoed in an error clipped, so a hostile or mistaken 50 MB
//! argument never comes back whole, and text escaped for the HTML and SVG pages.

use std::io::Write;

/// Text with every control character but line feed and tab escaped (`\u{1b}`), so a name, a
/// description or a remote serve's error carrying a terminal escape sequence is shown, not
/// obeyed; a carriage return at the very start (a progress line redrawn) is kept.
pub fn plain(s: &str) -> std::borrow::Cow<'_, str> {
    let bad =
        |(i, c): (usize, char)| c.is_control() && c != '\n' && c != '\t' && !(i == 0 && c == '\r');
    if !s.char_indices().any(bad) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for (i, c) in s.char_indices() {
        if bad((i, c)) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Writes to stdout (or stderr), control characters escaped (`plain`); a closed reader is
/// recorded as a stop request, never a panic.
pub fn emit(to_stderr: bool, newline: bool, args: std::fmt::Arguments) {
    let text = std::fmt::format(args);
    let text = plain(&text);
    let r = if to_stderr {
        let mut e = std::io::stderr().lock();
        e.write_all(text.as_bytes()).and_then(|_| {
            if newline {
                e.write_all(b"\n")
            } else {
                e.flush()
            }
        })
    } else {
        let mut o = std::io::stdout().lock();
        o.write_all(text.as_bytes()).and_then(|_| {
            if newline {
                o.write_all(b"\n")
            } else {
                o.flush()
            }
        })
    };
    if let Err(e) = r {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            crate::sys::signals::output_closed();
        }
    }
}

/// `println!` that survives a closed stdout.
#[macro_export]
macro_rules! outln {
    () => { $crate::text::emit(false, true, format_args!("")) };
    ($($a:tt)*) => { $crate::text::emit(false, true, format_args!($($a)*)) };
}

/// `print!` that survives a closed stdout.
#[macro_export]
macro_rules! out {
    ($($a:tt)*) => { $crate::text::emit(false, false, format_args!($($a)*)) };
}

/// `eprintln!` that survives a closed stderr.
#[macro_export]
macro_rules! errln {
    () => { $crate::text::emit(true, true, format_args!("")) };
    ($($a:tt)*) => { $crate::text::emit(true, true, format_args!($($a)*)) };
}

/// `eprint!` that survives a closed stderr.
#[macro_export]
macro_rules! err {
    ($($a:tt)*) => { $crate::text::emit(true, false, format_args!($($a)*)) };
}

/// At most this many characters of user input appear in a message.
pub const CLIP: usize = 80;

/// `s` as a sentence begins: its first letter a capital.
pub fn capital(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map_or(String::new(), |f| f.to_uppercase().chain(c).collect())
}

/// `s` as it may appear in a message: at most `CLIP` characters, control characters escaped.
pub fn clip(s: &str) -> String {
    clip_to(s, CLIP)
}

/// A message from elsewhere (a remote serve's error) as shown: control characters escaped, cut
/// at 1 000 characters.
pub fn clip_long(s: &str) -> String {
    clip_to(s, 1000)
}

fn clip_to(s: &str, max: usize) -> String {
    let mut out = String::new();
    for c in s.chars().take(max) {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if s.chars().count() > max {
        out.push('…');
    }
    out
}

/// The largest input file (experiment, lab or plan TOML) vnetlab reads.
pub const MAX_FILE: u64 = 1 << 20;

/// Why an input file could not be read. Each message names the file (clipped).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {name}: {source}")]
    Read {
        name: String,
        source: std::io::Error,
    },
    #[error("{name} is a directory: give a file")]
    Directory { name: String },
    #[error("{name} is not a regular file (a pipe, a device or a socket): give a file")]
    NotRegular { name: String },
    #[error("{name} is larger than {kb} KB: vnetlab reads input files of at most that size")]
    TooLarge { name: String, kb: u64 },
    #[error("{name} is not UTF-8 text")]
    NotUtf8 { name: String },
    #[error("{name} is not vnetlab's own file (another user's, or a file with other names): vnetlab will not act on it")]
    NotOwn { name: String },
}

/// Reads a text file of at most `max` bytes; a larger one is refused before it is read into
/// memory, and anything but a regular file (a FIFO that would block the open or the read for
/// ever, a device as /dev/zero, a socket) before anything is read.
pub fn read_capped(path: &std::path::Path, max: u64) -> Result<String, Error> {
    let name = clip(&path.display().to_string());
    String::from_utf8(read_bytes_capped(path, max)?).map_err(|_| Error::NotUtf8 { name })
}

/// Reads a regular file of at most `max` bytes, as `read_capped` does, as bytes.
pub fn read_bytes_capped(path: &std::path::Path, max: u64) -> Result<Vec<u8>, Error> {
    read_with(path, max, false)
}

/// Reads one of vnetlab's own files (a journal, a lab record) as `read_bytes_capped` does, but
/// only the file itself: a symlink at the path, a file with other names (a hard link to someone
/// else's) or one another user owns is refused, never read and acted on.
pub fn read_own_bytes_capped(path: &std::path::Path, max: u64) -> Result<Vec<u8>, Error> {
    read_with(path, max, true)
}

/// Reads one of vnetlab's own text files (`read_own_bytes_capped`).
pub fn read_own_capped(path: &std::path::Path, max: u64) -> Result<String, Error> {
    let name = clip(&path.display().to_string());
    String::from_utf8(read_own_bytes_capped(path, max)?).map_err(|_| Error::NotUtf8 { name })
}

fn read_with(path: &std::path::Path, max: u64, own: bool) -> Result<Vec<u8>, Error> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let name = clip(&path.display().to_string());
    let read = |source| Error::Read {
        name: name.clone(),
        source,
    };
    // O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting for one.
    let flags = libc::O_NONBLOCK | if own { libc::O_NOFOLLOW } else { 0 };
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(read)?;
    let meta = f.metadata().map_err(read)?;
    if meta.is_dir() {
        return Err(Error::Directory { name });
    }
    if !meta.is_file() {
        return Err(Error::NotRegular { name });
    }
    if own && (meta.nlink() != 1 || meta.uid() != crate::sys::euid()) {
        return Err(Error::NotOwn { name });
    }
    let mut buf = Vec::new();
    f.take(max + 1).read_to_end(&mut buf).map_err(read)?;
    if buf.len() as u64 > max {
        let kb = max / 1024;
        return Err(Error::TooLarge { name, kb });
    }
    Ok(buf)
}

/// Turns a toml error into one line: `file:line:col: message`.
pub fn toml_error(e: &toml::de::Error, text: &str, file: &str) -> String {
    let msg = e.message().replace('\n', " ");
    match e.span() {
        Some(span) => {
            let (line, col) = line_col(text, span.start);
            format!("{file}:{line}:{col}: {}", msg.trim())
        }
        None => format!("{file}: {}", msg.trim()),
    }
}

pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
    (line, col)
}

/// Text made safe inside HTML or SVG: `&`, `<`, `>` and `"` escaped.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    /// A terminal escape in a name, a description or a remote error is shown, not obeyed.
    #[test]
    fn control_characters_are_shown_not_obeyed() {
        assert_eq!(super::plain("run \u{1b}[2Jgone"), "run \\u{1b}[2Jgone");
        assert_eq!(super::plain("a\tb\nc"), "a\tb\nc");
        assert_eq!(super::plain("\rstep 3/9"), "\rstep 3/9");
        assert_eq!(super::plain("x\ry"), "x\\ry");
        assert_eq!(super::plain("\u{9b}31m"), "\\u{9b}31m");
        assert!(matches!(
            super::plain("plain"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(super::clip_long(&"y".repeat(2000)).chars().count(), 1001);
    }

    #[test]
    fn own_files_are_read_only_through_their_own_name() {
        let d = std::env::temp_dir().join(format!("vnetlab-own-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("rec.json");
        std::fs::write(&f, "{}").unwrap();
        assert!(super::read_own_capped(&f, 100).is_ok());
        let link = d.join("link.json");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        assert!(super::read_own_capped(&link, 100).is_err());
        assert!(super::read_capped(&link, 100).is_ok());
        let hard = d.join("hard.json");
        std::fs::hard_link(&f, &hard).unwrap();
        assert!(matches!(
            super::read_own_capped(&hard, 100),
            Err(super::Error::NotOwn { .. })
        ));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn input_files_are_read_within_a_bound() {
        let big = std::env::temp_dir().join(format!("vnetlab-big-{}", std::process::id()));
        std::fs::write(&big, vec![b'x'; 2048]).unwrap();
        let e = super::read_capped(&big, 1024).unwrap_err();
        std::fs::remove_file(&big).unwrap();
        assert!(matches!(e, super::Error::TooLarge { kb: 1, .. }), "{e}");
        assert!(e.to_string().contains("larger than 1 KB"), "{e}");
        // An endless device, a FIFO nobody writes: refused before a byte is read.
        let e = super::read_capped(std::path::Path::new("/dev/zero"), 1024).unwrap_err();
        assert!(matches!(e, super::Error::NotRegular { .. }), "{e}");
        let fifo = std::env::temp_dir().join(format!("vnetlab-fifo-{}", std::process::id()));
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = super::read_capped(&fifo, 1024).unwrap_err();
        std::fs::remove_file(&fifo).unwrap();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        assert!(super::read_capped(std::path::Path::new("/"), 1024)
            .unwrap_err()
            .to_string()
            .contains("directory"));
        assert!(
            super::read_capped(std::path::Path::new("/nonexistent/x"), 1024)
                .unwrap_err()
                .to_string()
                .starts_with("cannot read")
        );
    }

    #[test]
    fn long_and_odd_input_is_clipped() {
        assert_eq!(super::clip("abc"), "abc");
        let long = "x".repeat(10_000);
        assert_eq!(super::clip(&long).chars().count(), super::CLIP + 1);
        assert_eq!(super::clip("a\nb"), "a\\nb");
    }
}
