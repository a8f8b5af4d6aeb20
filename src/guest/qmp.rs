//! A small QMP client: the one question vnetlab asks a running QEMU is which host threads are
//! its vCPUs (`query-cpus-fast`), so the meter can tell guest CPU from device emulation.

use super::Error;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// The longest QMP line read (a reply for hundreds of vCPUs fits well within it).
const MAX_LINE: u64 = 1 << 20;
const TIMEOUT: Duration = Duration::from_secs(5);

/// The host thread ids of the vCPUs of the QEMU listening on `sock`, in vCPU order.
pub fn vcpu_threads(sock: &Path) -> Result<Vec<u32>, Error> {
    let fail = |e: std::io::Error| Error::Qmp(format!("{}: {e}", sock.display()));
    let s = UnixStream::connect(sock).map_err(fail)?;
    s.set_read_timeout(Some(TIMEOUT)).map_err(fail)?;
    s.set_write_timeout(Some(TIMEOUT)).map_err(fail)?;
    let mut w = s.try_clone().map_err(fail)?;
    let mut r = BufReader::new(s);
    read_reply(&mut r, "greeting")?;
    for cmd in ["qmp_capabilities", "query-cpus-fast"] {
        let line = serde_json::json!({ "execute": cmd }).to_string() + "\n";
        w.write_all(line.as_bytes()).map_err(fail)?;
        let reply = read_reply(&mut r, cmd)?;
        if cmd == "query-cpus-fast" {
            return parse_cpus(&reply);
        }
    }
    unreachable!("the loop returns on its last command")
}

/// The next line that is not an asynchronous event.
fn read_reply(r: &mut impl BufRead, what: &str) -> Result<String, Error> {
    loop {
        let mut line = String::new();
        let n = r
            .by_ref()
            .take(MAX_LINE)
            .read_line(&mut line)
            .map_err(|e| Error::Qmp(format!("no {what} reply: {e}")))?;
        if n == 0 {
            return Err(Error::Qmp(format!(
                "QEMU closed QMP before the {what} reply"
            )));
        }
        if !is_event(&line) {
            return Ok(line);
        }
    }
}

/// Whether a QMP line is an asynchronous event (an object with an `event` member), read as
/// JSON rather than by how QEMU happens to order its members.
fn is_event(line: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Line {
        event: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_str::<Line>(line).is_ok_and(|l| l.event.is_some())
}

/// Parses `query-cpus-fast`'s reply into thread ids ordered by vCPU index.
pub fn parse_cpus(reply: &str) -> Result<Vec<u32>, Error> {
    #[derive(serde::Deserialize)]
    struct Cpu {
        #[serde(rename = "cpu-index")]
        index: u32,
        #[serde(rename = "thread-id")]
        thread: u32,
    }
    #[derive(serde::Deserialize)]
    struct Reply {
        #[serde(rename = "return")]
        ret: Vec<Cpu>,
    }
    let mut r: Reply = serde_json::from_str(reply).map_err(|e| {
        Error::Qmp(format!(
            "unexpected query-cpus-fast reply ({e}): {}",
            crate::text::clip(reply)
        ))
    })?;
    r.ret.sort_by_key(|c| c.index);
    Ok(r.ret.into_iter().map(|c| c.thread).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vcpu_threads_come_in_index_order() {
        let reply = r#"{"return": [{"thread-id": 812, "props": {"core-id": 0}, "qom-path": "/machine/unattached/device[2]", "cpu-index": 1, "target": "x86_64"}, {"thread-id": 811, "cpu-index": 0, "target": "x86_64"}]}"#;
        assert_eq!(parse_cpus(reply).unwrap(), vec![811, 812]);
    }

    #[test]
    fn an_error_reply_is_an_error_that_quotes_it() {
        let e = parse_cpus(r#"{"error": {"class": "CommandNotFound"}}"#).unwrap_err();
        assert!(e.to_string().contains("CommandNotFound"), "{e}");
    }

    #[test]
    fn events_before_the_reply_are_skipped() {
        let text = "{\"event\": \"NIC_RX_FILTER_CHANGED\"}\n{\"return\": {}}\n";
        let mut r = std::io::Cursor::new(text.as_bytes());
        assert_eq!(read_reply(&mut r, "x").unwrap().trim(), "{\"return\": {}}");
        assert!(read_reply(&mut r, "x").is_err());
    }

    #[test]
    fn events_are_told_from_replies_by_their_members() {
        assert!(is_event(
            r#"{"timestamp": {"seconds": 1}, "event": "STOP"}"#
        ));
        assert!(is_event(r#"{"event": "RESUME", "timestamp": {}}"#));
        assert!(!is_event(r#"{"return": {}}"#));
        assert!(!is_event("not json"));
    }
}
