//! Receive steering where frames cross the wire: finds and places the threaded-NAPI kernel
//! threads of a lab's wire ends, and reads the RPS/XPS masks and thread placement back from the
//! kernel for `status`, tests and every result.

use crate::lab::Error;
use serde::Serialize;

use super::hostcmd;
use super::state::{LabRecord, Side};
use crate::units::CpuList;

/// Linux keeps 15 characters of a thread's name.
const COMM_LEN: usize = 15;

/// The threaded-NAPI kernel threads of device `dev`: kernel threads named `napi/<dev>-<id>`.
pub fn napi_threads(dev: &str) -> Vec<i32> {
    let want: String = format!("napi/{dev}-").chars().take(COMM_LEN).collect();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        if comm.trim_end().starts_with(&want) && is_kthread(pid) {
            out.push(pid);
        }
    }
    out.sort_unstable();
    out
}

fn is_kthread(pid: i32) -> bool {
    const PF_KTHREAD: u64 = 0x0020_0000;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let flags = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().nth(6))
        .and_then(|f| f.parse::<u64>().ok());
    flags.is_some_and(|f| f & PF_KTHREAD != 0)
}

/// Places `dev`'s NAPI threads on `cpus`; an error if the device has none.
pub fn place_napi(netns: &str, dev: &str, cpus: &CpuList) -> Result<(), Error> {
    let tried = napi_threads(dev)
        .into_iter()
        .map(|pid| (pid, crate::sys::set_affinity(pid, &cpus.0)));
    placed(tried, netns, dev, cpus)
}

/// The verdict on placing a device's NAPI threads. Threads are found by name, and a lab removed
/// moments ago left a device of the same name whose thread the kernel ends in the background: a
/// thread gone before it was placed (ESRCH) was that one, not this device's (a quick run's paravirt
/// lab failed to build on it once in three runs). At least one must be placed.
fn placed(
    tried: impl Iterator<Item = (i32, std::io::Result<()>)>,
    netns: &str,
    dev: &str,
    cpus: &CpuList,
) -> Result<(), Error> {
    let mut n = 0;
    for (pid, r) in tried {
        match r {
            Ok(()) => n += 1,
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
            Err(e) => {
                return Err(Error::Failed(format!(
                    "cannot place the NAPI thread {pid} of {dev} on cores {cpus}: {e}"
                )))
            }
        }
    }
    if n == 0 {
        return Err(Error::Failed(format!(
            "threaded NAPI is on for {dev} in {netns} but it has no NAPI thread"
        )));
    }
    Ok(())
}

/// A NAPI thread of a lab's wire end: which side's frames it receives, and where it may run.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct NapiThread {
    pub iface: String,
    pub side: Side,
    pub pid: i32,
    pub cpus: Vec<usize>,
}

/// Puts every threaded-NAPI wire end's threads back on its side's cores (a device whose NAPI was
/// re-created would get a new thread with no placement) and returns them, for the meter.
pub fn ensure_placed(rec: &LabRecord) -> Result<Vec<NapiThread>, Error> {
    let mut out = Vec::new();
    for s in rec.steered.iter().filter(|s| s.napi_threaded) {
        place_napi(&s.netns, &s.iface, &s.cpus)?;
        for pid in napi_threads(&s.iface) {
            out.push(NapiThread {
                iface: s.iface.clone(),
                side: s.side,
                pid,
                cpus: crate::sys::affinity(pid).unwrap_or_default(),
            });
        }
    }
    Ok(out)
}

/// One wire end's steering as the kernel reports it.
#[derive(Serialize, Clone, Debug)]
pub struct SteerStatus {
    pub iface: String,
    pub side: Side,
    /// Per receive queue, the RPS mask; per transmit queue, the XPS mask (hexadecimal, as sysfs).
    pub rps_cpus: Vec<String>,
    pub xps_cpus: Vec<String>,
    pub threaded: bool,
    pub napi_threads: Vec<NapiThread>,
    /// Whether all of that matches the lab's CPU plan.
    pub as_planned: bool,
}

/// Reads each wire end's RPS/XPS masks, threaded flag and NAPI threads back from the kernel.
pub fn read_back(rec: &LabRecord) -> Vec<SteerStatus> {
    rec.steered
        .iter()
        .map(|s| {
            let script = format!(
                "cd /sys/class/net/{0} && cat threaded queues/rx-*/rps_cpus && echo -- && cat queues/tx-*/xps_cpus",
                s.iface
            );
            let out = hostcmd::read(&["ip", "netns", "exec", &s.netns, "sh", "-c", &script]).unwrap_or_default();
            let mut lines = out.lines().map(str::trim);
            let threaded = lines.next() == Some("1");
            let rest: Vec<&str> = lines.collect();
            let split = rest.iter().position(|l| *l == "--").unwrap_or(rest.len());
            let rps: Vec<String> = rest[..split].iter().map(|x| x.to_string()).collect();
            let xps: Vec<String> = rest.get(split + 1..).unwrap_or(&[]).iter().map(|x| x.to_string()).collect();
            let napi: Vec<NapiThread> = napi_threads(&s.iface)
                .into_iter()
                .map(|pid| NapiThread { iface: s.iface.clone(), side: s.side, pid, cpus: crate::sys::affinity(pid).unwrap_or_default() })
                .collect();
            let same = |m: &String| mask_cpus(m) == s.cpus.0;
            let as_planned = !rps.is_empty()
                && rps.iter().all(same)
                && xps.iter().all(same)
                && threaded == s.napi_threaded
                && (!s.napi_threaded || (!napi.is_empty() && napi.iter().all(|t| t.cpus == s.cpus.0)));
            SteerStatus { iface: s.iface.clone(), side: s.side, rps_cpus: rps, xps_cpus: xps, threaded, napi_threads: napi, as_planned }
        })
        .collect()
}

/// The CPUs of a sysfs hexadecimal mask (`00000002,00000001` = CPUs 0 and 33).
pub fn mask_cpus(mask: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for (k, word) in mask.rsplit(',').enumerate() {
        let Ok(w) = u32::from_str_radix(word.trim(), 16) else {
            return Vec::new();
        };
        out.extend((0..32).filter(|b| w & (1 << b) != 0).map(|b| k * 32 + b));
    }
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_napi_thread_gone_before_placing_is_an_old_devices() {
        let cpus: CpuList = "0".parse().unwrap();
        let gone = || Err(std::io::Error::from_raw_os_error(libc::ESRCH));
        let denied = || Err(std::io::Error::from_raw_os_error(libc::EPERM));
        let try_ =
            |v: Vec<(i32, std::io::Result<()>)>| placed(v.into_iter(), "vlx1-host", "vlx1w", &cpus);
        assert!(try_(vec![(7, gone()), (9, Ok(()))]).is_ok());
        let e = try_(vec![(7, gone())]).unwrap_err().to_string();
        assert!(e.contains("has no NAPI thread"), "{e}");
        assert!(try_(vec![]).is_err());
        let e = try_(vec![(9, Ok(())), (8, denied())])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cannot place the NAPI thread 8 of vlx1w on cores 0"),
            "{e}"
        );
    }

    #[test]
    fn masks_read_back_into_cpus() {
        assert_eq!(mask_cpus("00000002,00000001"), vec![0, 33]);
        assert_eq!(mask_cpus("3"), vec![0, 1]);
        assert_eq!(mask_cpus("zz"), Vec::<usize>::new());
        let l: CpuList = "1,3,40".parse().unwrap();
        assert_eq!(mask_cpus(&l.mask()), l.0);
    }
}
