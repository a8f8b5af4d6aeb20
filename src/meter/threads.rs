//! A QEMU process's CPU split by thread: its vCPU threads (the guest's own CPU), its vhost
//! workers (`vhost-<pid>`: threads of QEMU since Linux 6.4, kernel threads before) and the rest,
//! which is device emulation (the main loop runs the userspace NIC backends, plus I/O threads).
//! Thread times come from /proc/<pid>/task/<tid>/schedstat (nanoseconds); emulation is the
//! process's total (its cgroup's, which includes threads that have ended and old kernels' vhost
//! threads, attached to their owner's cgroups) less the other two.

use super::fs::Fs;
use std::path::PathBuf;

/// Which threads of a QEMU a part counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadClass {
    Vcpu,
    Emulation,
    Vhost,
}

/// A part made of some of one QEMU's threads.
#[derive(Clone, Debug, PartialEq)]
pub struct Threads {
    pub pid: u32,
    pub class: ThreadClass,
    /// The vCPUs' thread ids (from QMP); empty: told by their names (`CPU 0/TCG`, `CPU 1/KVM`).
    pub vcpus: Vec<u32>,
    /// Where the whole VM's time is counted (its cgroup folders); empty: the process itself.
    pub cgroups: Vec<PathBuf>,
}

/// The class of thread `tid` named `comm`.
pub fn classify(tid: u32, comm: &str, vcpus: &[u32]) -> ThreadClass {
    let named_vcpu = comm.starts_with("CPU ") && (comm.ends_with("/TCG") || comm.ends_with("/KVM"));
    if vcpus.contains(&tid) || (vcpus.is_empty() && named_vcpu) {
        ThreadClass::Vcpu
    } else if comm.starts_with("vhost-") {
        ThreadClass::Vhost
    } else {
        ThreadClass::Emulation
    }
}

/// Each live thread of `pid`: id, name and CPU seconds.
fn tasks(fs: &Fs, pid: u32) -> Vec<(u32, String, f64)> {
    let dir = format!("/proc/{pid}/task");
    fs.names(&dir)
        .into_iter()
        .take(1 << 16)
        .filter_map(|n| {
            let tid: u32 = n.parse().ok()?;
            let comm = fs.read(format!("{dir}/{tid}/comm"))?;
            let secs = super::procs::parse_schedstat(&fs.read(format!("{dir}/{tid}/schedstat"))?)?;
            Some((tid, comm.trim().to_string(), secs))
        })
        .collect()
}

/// The VM's total CPU seconds: its cgroup's, else its process's (all threads, ended ones too).
fn total(fs: &Fs, t: &Threads, hz: f64) -> f64 {
    super::cgroupstat::read_any(fs, &t.cgroups, hz)
        .ok()
        .or_else(|| super::procs::read_in(fs, t.pid, hz).map(|p| p.cpu_s))
        .unwrap_or(0.0)
}

/// CPU seconds so far of the part's threads. `kernel_vhost` gives the run time of the kernel
/// threads named `vhost-PID` (Linux before 6.4 runs vhost workers so), found by the caller among
/// the host's kernel threads without a scan of every task.
pub fn read(fs: &Fs, t: &Threads, hz: f64, kernel_vhost: impl Fn(u32) -> f64) -> f64 {
    let tasks = tasks(fs, t.pid);
    let sum = |c: ThreadClass| -> f64 {
        tasks
            .iter()
            .filter(|(tid, comm, _)| classify(*tid, comm, &t.vcpus) == c)
            .map(|(_, _, s)| s)
            .sum()
    };
    let in_cgroup = !t.cgroups.is_empty();
    let vhost = || sum(ThreadClass::Vhost) + if in_cgroup { kernel_vhost(t.pid) } else { 0.0 };
    match t.class {
        ThreadClass::Vcpu => sum(ThreadClass::Vcpu),
        ThreadClass::Vhost => sum(ThreadClass::Vhost) + kernel_vhost(t.pid),
        ThreadClass::Emulation => (total(fs, t, hz) - sum(ThreadClass::Vcpu) - vhost()).max(0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_are_told_apart_by_qmp_ids_then_by_name() {
        let vcpus = [101, 102];
        assert_eq!(classify(101, "CPU 0/TCG", &vcpus), ThreadClass::Vcpu);
        assert_eq!(classify(102, "anything", &vcpus), ThreadClass::Vcpu);
        // With QMP's ids known, a name alone does not make a vCPU.
        assert_eq!(classify(103, "CPU 2/KVM", &vcpus), ThreadClass::Emulation);
        assert_eq!(classify(103, "CPU 2/KVM", &[]), ThreadClass::Vcpu);
        assert_eq!(classify(104, "vhost-100", &vcpus), ThreadClass::Vhost);
        for main_loop in ["qemu-system-x86", "IO mon_iothread", "call_rcu", "worker"] {
            assert_eq!(classify(100, main_loop, &vcpus), ThreadClass::Emulation);
        }
        assert_eq!(classify(105, "CPU 0/TCGx", &[]), ThreadClass::Emulation);
    }

    #[test]
    fn schedstat_is_nanoseconds_on_a_cpu() {
        assert_eq!(
            super::super::procs::parse_schedstat("2500000000 120 33\n"),
            Some(2.5)
        );
        assert_eq!(super::super::procs::parse_schedstat(""), None);
        assert_eq!(super::super::procs::parse_schedstat("x 1 2"), None);
    }

    #[test]
    fn this_process_reads_as_emulation_and_its_threads_sum_to_no_more_than_it() {
        let pid = std::process::id();
        let t = |class| Threads {
            pid,
            class,
            vcpus: vec![],
            cgroups: vec![],
        };
        let hz = super::super::ticks_per_s();
        let spin = std::time::Instant::now();
        while spin.elapsed() < std::time::Duration::from_millis(50) {}
        let fs = Fs::real();
        assert_eq!(read(&fs, &t(ThreadClass::Vcpu), hz, |_| 0.0), 0.0);
        assert!(read(&fs, &t(ThreadClass::Emulation), hz, |_| 0.0) > 0.0);
        let all: f64 = tasks(&fs, pid).iter().map(|x| x.2).sum();
        assert!(all > 0.0);
    }
}
