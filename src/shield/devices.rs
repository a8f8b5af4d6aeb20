//! `--shield-irqs`: movable IRQs (/proc/irq/N/smp_affinity_list) and other devices' RPS and XPS
//! masks (/sys/class/net/DEV/queues/{rx,tx}-N/{rps,xps}_cpus) moved off the shielded cores. An
//! IRQ or mask on the shielded cores alone stays (emptying an RPS mask would send the work back
//! to the interrupted core), said in the summary. The lab's own devices are never moved.

use super::{Change, Error, Host, Irqs, Plan};
use crate::units::CpuList;
use std::path::{Path, PathBuf};

/// The most IRQs, devices and queues the shield looks at.
const MAX_ENTRIES: usize = 8192;

/// Plans the moves of `irqs`; devices whose names begin with `own` (the lab's) never move.
pub fn plan(
    h: &dyn Host,
    irqs: &Irqs,
    cores: &[usize],
    own: &str,
    p: &mut Plan,
) -> Result<(), Error> {
    let wanted = |dev: &str| match irqs {
        Irqs::All => !dev.starts_with(own),
        Irqs::Devices(d) => d.iter().any(|x| x == dev),
    };
    if let Irqs::Devices(d) = irqs {
        for dev in d {
            if dev.starts_with(own) || !h.exists(&net(dev)) {
                return Err(Error::Input(format!(
                    "--shield-irqs={dev}: no such device of the host's (the lab's own are never moved): name devices in /sys/class/net"
                )));
            }
        }
    }
    plan_irqs(h, irqs, cores, p)?;
    for dev in h
        .folders(Path::new("/sys/class/net"))
        .iter()
        .take(MAX_ENTRIES)
    {
        if wanted(dev) {
            plan_masks(h, dev, cores, p);
        }
    }
    Ok(())
}

fn net(dev: &str) -> PathBuf {
    Path::new("/sys/class/net").join(dev)
}

/// The IRQs to move: every one with an affinity file (All), or those /proc/interrupts names
/// with one of the devices.
fn plan_irqs(h: &dyn Host, irqs: &Irqs, cores: &[usize], p: &mut Plan) -> Result<(), Error> {
    let numbers: Vec<u32> = match irqs {
        Irqs::All => h
            .folders(Path::new("/proc/irq"))
            .iter()
            .filter_map(|n| n.parse().ok())
            .collect(),
        Irqs::Devices(d) => {
            let text = h.read(Path::new("/proc/interrupts"))?;
            of_devices(&text, d)
        }
    };
    for n in numbers.into_iter().take(MAX_ENTRIES) {
        let path = PathBuf::from(format!("/proc/irq/{n}/smp_affinity_list"));
        let Ok(now) = h.read(&path) else { continue };
        let Some(had) = crate::sys::parse_cpu_list(&now) else {
            continue;
        };
        if let Some(keep) = without(&had, cores) {
            p.changes.push(Change::Value {
                path,
                previous: now.trim().to_string(),
                set: CpuList(keep).to_string(),
            });
            p.summary.irqs += 1;
        } else if had.iter().any(|c| cores.contains(c)) {
            p.summary
                .left
                .push(format!("IRQ {n} (on CPU {} alone)", now.trim()));
        }
    }
    Ok(())
}

/// The IRQ numbers whose /proc/interrupts line ends with a name of one of `devs` (`eth0`,
/// `eth0-rx-0`, `virtio0-input.0` for `virtio0`).
pub fn of_devices(text: &str, devs: &[String]) -> Vec<u32> {
    text.lines()
        .take(MAX_ENTRIES)
        .filter_map(|l| {
            let (n, rest) = l.trim_start().split_once(':')?;
            let n: u32 = n.parse().ok()?;
            let last = rest.split_whitespace().last()?;
            let named = devs.iter().any(|d| {
                last == d
                    || last
                        .strip_prefix(d.as_str())
                        .is_some_and(|t| t.starts_with(['-', '.', '@', ':']))
            });
            named.then_some(n)
        })
        .collect()
}

/// `had` without `cores`, where it held one of them and something is left.
fn without(had: &[usize], cores: &[usize]) -> Option<Vec<usize>> {
    let keep: Vec<usize> = had.iter().copied().filter(|c| !cores.contains(c)).collect();
    (had.iter().any(|c| cores.contains(c)) && !keep.is_empty()).then_some(keep)
}

/// A device's RPS and XPS masks that hold a shielded core.
fn plan_masks(h: &dyn Host, dev: &str, cores: &[usize], p: &mut Plan) {
    let queues = net(dev).join("queues");
    for q in h.folders(&queues).iter().take(MAX_ENTRIES) {
        let file = match q.split_once('-') {
            Some(("rx", _)) => "rps_cpus",
            Some(("tx", _)) => "xps_cpus",
            _ => continue,
        };
        let path = queues.join(q).join(file);
        let Ok(now) = h.read(&path) else { continue };
        let Some(had) = mask_cpus(&now) else { continue };
        match without(&had, cores) {
            Some(keep) => {
                p.changes.push(Change::Value {
                    path,
                    previous: now.trim().to_string(),
                    set: CpuList(keep).mask(),
                });
                p.summary.masks += 1;
            }
            None if had.iter().any(|c| cores.contains(c)) => p
                .summary
                .left
                .push(format!("{dev} {q} {file} (CPU {} alone)", CpuList(had))),
            None => {}
        }
    }
}

/// The CPUs of a sysfs hex mask (`00000000,0000000f`: 32-bit groups, most significant first).
pub fn mask_cpus(s: &str) -> Option<Vec<usize>> {
    let s = s.trim();
    if s.is_empty() || s.len() > 4096 {
        return None;
    }
    let words: Vec<&str> = s.split(',').collect();
    let mut v = Vec::new();
    for (i, w) in words.iter().rev().enumerate() {
        if w.is_empty() || w.len() > 8 {
            return None;
        }
        let bits = u32::from_str_radix(w, 16).ok()?;
        v.extend((0..32).filter(|b| bits & (1 << b) != 0).map(|b| i * 32 + b));
    }
    Some(v)
}
