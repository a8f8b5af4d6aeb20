//! The host's kernel threads, found once and read by thread id. Every kernel thread is a child of
//! kthreadd (pid 2), whose `children` file lists them in one read however many user tasks the
//! host runs; a thread's name and the CPUs it may run on are read when it first appears, its run
//! time (schedstat, nanoseconds) only when asked. A kernel without that file (no
//! CONFIG_PROC_CHILDREN) gets one scan of /proc when the registry starts, and no later threads.

use super::fs::Fs;
use crate::sys::parse_cpu_list;
use std::collections::BTreeMap;

const KTHREADD: &str = "/proc/2/task/2/children";
/// A host with more kernel threads than this is not one the meter was built for; it keeps these.
const MAX_THREADS: usize = 65_536;

/// One kernel thread: its name and the CPUs it may run on.
#[derive(Clone, Debug, PartialEq)]
pub struct KThread {
    pub comm: String,
    pub cpus: Vec<usize>,
}

impl KThread {
    /// A thread that works for one device or VM rather than for a CPU: a threaded-NAPI poller
    /// (`napi/DEV-ID`) or a vhost worker (`vhost-PID`), with the device or owner it names.
    pub fn serves(&self) -> Option<&str> {
        let c = self.comm.as_str();
        if let Some(rest) = c.strip_prefix("napi/") {
            return Some(rest.rsplit_once('-').map_or(rest, |(dev, _)| dev));
        }
        c.strip_prefix("vhost-")
    }

    /// Whether the thread may run only on `cores` (a per-CPU thread of theirs).
    pub fn confined_to(&self, cores: &[usize]) -> bool {
        !self.cpus.is_empty() && self.cpus.iter().all(|c| cores.contains(c))
    }
}

/// The kernel threads known so far, by thread id.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    pub known: BTreeMap<u32, KThread>,
    /// The list file was missing: the registry holds what one scan found at its start.
    pub scanned: bool,
}

/// A kernel thread's name and CPUs from its files, or None once it is gone.
fn describe(fs: &Fs, tid: u32) -> Option<KThread> {
    let comm = fs.read(format!("/proc/{tid}/comm"))?.trim().to_string();
    let status = fs.read(format!("/proc/{tid}/status"))?;
    let cpus = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .and_then(parse_cpu_list)
        .unwrap_or_default();
    Some(KThread { comm, cpus })
}

/// Whether /proc/PID/stat says the task is a kernel thread (PF_KTHREAD).
fn is_kthread(fs: &Fs, pid: u32) -> bool {
    fs.read(format!("/proc/{pid}/stat"))
        .and_then(|t| super::procs::parse_stat(&t, 100.0))
        .is_some_and(|p| p.kthread)
}

impl Registry {
    /// Finds the host's kernel threads now.
    pub fn start(fs: &Fs) -> Registry {
        let mut r = Registry::default();
        if fs.exists(KTHREADD) {
            r.refresh(fs);
        } else {
            r.scanned = true;
            let pids = fs.names("/proc").into_iter().filter_map(|n| n.parse().ok());
            for pid in pids.filter(|&p| is_kthread(fs, p)).take(MAX_THREADS) {
                if let Some(k) = describe(fs, pid) {
                    r.known.insert(pid, k);
                }
            }
        }
        r
    }

    /// Takes in threads started since (one read of the list, two for each new thread) and drops
    /// those that ended.
    pub fn refresh(&mut self, fs: &Fs) {
        if self.scanned {
            return;
        }
        let Some(text) = fs.read(KTHREADD) else {
            return;
        };
        let now: Vec<u32> = text
            .split_whitespace()
            .filter_map(|t| t.parse().ok())
            .take(MAX_THREADS)
            .collect();
        self.known.retain(|tid, _| now.contains(tid));
        for tid in now {
            if let std::collections::btree_map::Entry::Vacant(e) = self.known.entry(tid) {
                if let Some(k) = describe(fs, tid) {
                    e.insert(k);
                }
            }
        }
    }

    /// The run time so far (seconds) of the threads `want` picks.
    pub fn read(&self, fs: &Fs, want: impl Fn(u32, &KThread) -> bool) -> BTreeMap<u32, f64> {
        self.known
            .iter()
            .filter(|(tid, k)| want(**tid, k))
            .filter_map(|(tid, _)| {
                let t = fs.read(format!("/proc/{tid}/schedstat"))?;
                Some((*tid, super::procs::parse_schedstat(&t)?))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_says_which_device_or_vm_it_serves() {
        let k = |c: &str| KThread {
            comm: c.into(),
            cpus: vec![1],
        };
        assert_eq!(k("napi/eth0-8193").serves(), Some("eth0"));
        assert_eq!(k("napi/vl-a-b-8194").serves(), Some("vl-a-b"));
        assert_eq!(k("vhost-4242").serves(), Some("4242"));
        assert_eq!(k("ksoftirqd/1").serves(), None);
        assert!(k("ksoftirqd/1").confined_to(&[1]));
        assert!(!k("ksoftirqd/1").confined_to(&[0]));
        let free = KThread {
            comm: "kswapd0".into(),
            cpus: vec![],
        };
        assert!(!free.confined_to(&[0, 1]));
    }

    #[test]
    fn the_registry_follows_kthreadds_children_and_reads_only_what_is_asked() {
        let d = std::env::temp_dir().join(format!("vl-kth-{}", std::process::id()));
        let put = |p: &str, t: &str| {
            let f = d.join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, t).unwrap();
        };
        put("proc/2/task/2/children", "10 11 ");
        for (tid, comm, cpus, ns) in [
            (10, "ksoftirqd/1", "1", 5e8),
            (11, "napi/eth0-1", "0-1", 2e9),
        ] {
            put(&format!("proc/{tid}/comm"), &format!("{comm}\n"));
            put(
                &format!("proc/{tid}/status"),
                &format!("Name:\t{comm}\nCpus_allowed_list:\t{cpus}\n"),
            );
            put(
                &format!("proc/{tid}/schedstat"),
                &format!("{} 0 0\n", ns as u64),
            );
        }
        let fs = Fs::at(&d);
        let mut r = Registry::start(&fs);
        assert_eq!(r.known.len(), 2);
        assert_eq!(r.known[&10].cpus, vec![1]);
        let before = fs.reads();
        let got = r.read(&fs, |_, k| k.confined_to(&[1]));
        assert_eq!(got.into_iter().collect::<Vec<_>>(), vec![(10, 0.5)]);
        assert_eq!(fs.reads() - before, 1, "one read per thread asked for");
        // A thread that ended leaves; one known is not described again.
        put("proc/2/task/2/children", "11 ");
        let before = fs.reads();
        r.refresh(&fs);
        assert_eq!(r.known.keys().copied().collect::<Vec<_>>(), vec![11]);
        assert_eq!(fs.reads() - before, 1);
        let _ = std::fs::remove_dir_all(&d);
    }
}
