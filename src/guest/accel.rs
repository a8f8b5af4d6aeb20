//! Which acceleration guests get: KVM when `/dev/kvm` boots a stock kernel, else TCG. The probe
//! boots the guest kernel under KVM with no root (it must panic, and `-no-reboot` ends QEMU);
//! its verdict is cached per boot of this host and kernel, so only the first guest pays for it.

use super::qemu::{Accel, QEMU};
use super::Error;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a KVM boot to the kernel's first panic may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// The acceleration and, for TCG, why not KVM.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub accel: Accel,
    pub why_not_kvm: Option<String>,
}

/// Probes once per boot and kernel; the verdict is kept in `cache`.
pub fn probe(kernel: &Path, cache: &Path) -> Result<Verdict, Error> {
    if !Path::new("/dev/kvm").exists() {
        return Ok(tcg("no /dev/kvm"));
    }
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let key = format!("{} {}", boot.trim(), kernel.display());
    let file = cache.join("kvm-probe");
    if let Ok(text) = std::fs::read_to_string(&file) {
        if let Some(v) = parse_cached(&text, &key) {
            return Ok(v);
        }
    }
    let v = boot_under_kvm(kernel, cache)?;
    let word = match &v.why_not_kvm {
        None => "kvm".to_string(),
        Some(why) => format!("tcg {why}"),
    };
    let _ = crate::sys::file::replace(&file, format!("{key}\n{word}\n").as_bytes(), 0o644);
    Ok(v)
}

fn tcg(why: &str) -> Verdict {
    Verdict {
        accel: Accel::Tcg,
        why_not_kvm: Some(why.to_string()),
    }
}

/// The cached verdict, if it was made for `key` (this boot, this kernel).
fn parse_cached(text: &str, key: &str) -> Option<Verdict> {
    let mut lines = text.lines();
    if lines.next()? != key {
        return None;
    }
    let word = lines.next()?;
    match word.split_once(' ') {
        None if word == "kvm" => Some(Verdict {
            accel: Accel::Kvm,
            why_not_kvm: None,
        }),
        Some(("tcg", why)) => Some(tcg(why)),
        _ => None,
    }
}

fn boot_under_kvm(kernel: &Path, cache: &Path) -> Result<Verdict, Error> {
    let console = cache.join("kvm-probe.console");
    let mut child = Command::new(QEMU)
        .args(["-M", "q35", "-accel", "kvm", "-cpu", "host", "-m", "128"])
        .args(["-nodefaults", "-display", "none", "-no-reboot", "-kernel"])
        .arg(kernel)
        .args([
            "-append",
            "console=ttyS0 panic=-1 rdinit=/none root=/dev/none",
        ])
        .arg("-serial")
        .arg(format!("file:{}", console.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| {
            Error::Qemu(format!(
                "cannot run {QEMU} ({e}): apt-get install qemu-system-x86"
            ))
        })?;
    let t0 = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if t0.elapsed() < PROBE_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(50))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let text = std::fs::read_to_string(&console).unwrap_or_default();
    let _ = std::fs::remove_file(&console);
    Ok(match status {
        None => tcg(&format!(
            "/dev/kvm did not boot a stock kernel within {} s",
            PROBE_TIMEOUT.as_secs()
        )),
        Some(_) if text.contains("Kernel panic") => Verdict {
            accel: Accel::Kvm,
            why_not_kvm: None,
        },
        Some(st) => tcg(&format!("/dev/kvm did not boot a stock kernel (QEMU {st})")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cached_verdict_counts_only_for_its_boot_and_kernel() {
        let text = "b1 /k\ntcg /dev/kvm did not boot a stock kernel within 10 s\n";
        let v = parse_cached(text, "b1 /k").unwrap();
        assert_eq!(v.accel, Accel::Tcg);
        assert!(v.why_not_kvm.unwrap().contains("within 10 s"));
        assert_eq!(parse_cached(text, "b2 /k"), None);
        assert_eq!(
            parse_cached("b1 /k\nkvm\n", "b1 /k").unwrap().accel,
            Accel::Kvm
        );
        assert_eq!(parse_cached("b1 /k\nmaybe\n", "b1 /k"), None);
        assert_eq!(parse_cached("", "b1 /k"), None);
    }
}
