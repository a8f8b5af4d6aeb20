//! A started guest, as the host sees it: whether its agent answers on its virtio-serial socket
//! (boot to agent-ready), whether its QEMU still runs, and the last lines of its console.

use super::qemu::Files;
use super::Error;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// The agent protocol's hello (no token: the channel is the host's own socket).
const HELLO: &[u8] = b"{\"op\":\"hello\",\"token\":\"\"}\n";

/// How many console lines a failure shows.
pub const TAIL_LINES: usize = 8;

/// The QEMU's pid, from its pidfile.
pub fn pid(files: &Files) -> Option<u32> {
    std::fs::read_to_string(files.pidfile())
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Whether the guest's QEMU runs (its pidfile names a live process that is QEMU).
pub fn running(files: &Files) -> bool {
    pid(files).is_some_and(|p| {
        std::fs::read_to_string(format!("/proc/{p}/comm"))
            .is_ok_and(|c| c.starts_with("qemu") || c.starts_with("CPU"))
    })
}

/// One attempt: the agent answers hello within `wait`.
fn answers(files: &Files, wait: Duration) -> bool {
    let Ok(mut s) = UnixStream::connect(files.agent()) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(wait));
    let _ = s.set_write_timeout(Some(wait));
    if s.write_all(HELLO).is_err() {
        return false;
    }
    let mut line = String::new();
    let mut r = BufReader::new(s.take(4096));
    r.read_line(&mut line).is_ok() && line.contains("\"ok\"")
}

/// Waits until the guest's agent answers, at most `timeout`; `alive` says whether its QEMU
/// still runs and `stop` whether to give up (a signal). Returns the time it took.
pub fn wait_ready(
    name: &str,
    files: &Files,
    timeout: Duration,
    alive: impl Fn() -> bool,
    stop: impl Fn() -> bool,
) -> Result<Duration, Error> {
    let t0 = Instant::now();
    loop {
        if answers(files, Duration::from_millis(500)) {
            return Ok(t0.elapsed());
        }
        if stop() {
            return Err(Error::Boot(format!("stopped while {name} was booting")));
        }
        if !alive() {
            return Err(Error::Boot(format!(
                "{name}'s QEMU exited while booting; its console ended: {}",
                console_tail(files, TAIL_LINES)
            )));
        }
        if t0.elapsed() > timeout {
            return Err(Error::Boot(format!(
                "{name} did not answer within {} s of starting; its console ended: {}",
                timeout.as_secs(),
                console_tail(files, TAIL_LINES)
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The last `n` non-empty lines of the console, joined with " | " (at most 64 KiB read).
pub fn console_tail(files: &Files, n: usize) -> String {
    let Ok(f) = std::fs::File::open(files.console()) else {
        return "(no console output)".into();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut buf = Vec::new();
    let mut f = f;
    let _ = std::io::Seek::seek(
        &mut f,
        std::io::SeekFrom::Start(len.saturating_sub(64 << 10)),
    );
    let _ = f.take(64 << 10).read_to_end(&mut buf);
    tail(&String::from_utf8_lossy(&buf), n)
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.trim_matches(|c: char| c.is_whitespace() || c.is_control()))
        .filter(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        return "(no console output)".into();
    }
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_lines_without_blanks_or_control_characters() {
        let text = "a\n\n b \r\nc\n\x1b\nd\n";
        assert_eq!(tail(text, 2), "c | d");
        assert_eq!(tail(text, 10), "a | b | c | d");
        assert_eq!(tail("", 3), "(no console output)");
    }

    #[test]
    fn a_guest_that_never_starts_is_reported_with_its_console() {
        let dir = std::env::temp_dir().join(format!("vnetlab-vm-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("console.log"), "Booting\nKernel panic - no init\n").unwrap();
        let files = Files { dir: dir.clone() };
        let e = wait_ready("g1", &files, Duration::from_secs(5), || false, || false).unwrap_err();
        assert!(e.to_string().contains("g1's QEMU exited"), "{e}");
        assert!(e.to_string().contains("Kernel panic - no init"), "{e}");
        let e = wait_ready("g1", &files, Duration::ZERO, || true, || false).unwrap_err();
        assert!(e.to_string().contains("did not answer within 0 s"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
