//! Thin, safe wrappers over the system calls vnetlab needs that the standard library lacks. Every
//! `unsafe` block of these lives here, each with the reason it is sound.

use std::io;

pub mod bpf;
pub mod file;
pub mod ident;
pub mod perf;
pub mod signals;
pub mod sock;
pub mod spawn;
pub mod tap;
pub mod uring;

/// A CPU affinity mask of the kernel's size (CPU_SETSIZE bits).
fn cpu_set(cpus: &[usize]) -> io::Result<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {c} is beyond CPU_SETSIZE"),
            ));
        }
        // SAFETY: c < CPU_SETSIZE was checked above, so the bit is inside `set`.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    Ok(set)
}

/// Restricts thread `tid` (0: the calling thread) to `cpus`. Threads it creates later inherit it.
pub fn set_affinity(tid: i32, cpus: &[usize]) -> io::Result<()> {
    let set = cpu_set(cpus)?;
    // SAFETY: `set` is a valid cpu_set_t and the size passed is its size.
    let r = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The CPUs thread `tid` (0: the calling thread) may run on.
pub fn affinity(tid: i32) -> io::Result<Vec<usize>> {
    let mut set = cpu_set(&[])?;
    // SAFETY: the kernel writes at most size_of::<cpu_set_t>() bytes into `set`.
    let r =
        unsafe { libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: every c is below CPU_SETSIZE, so each bit read is inside `set`.
    Ok((0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// The machine's online CPUs (/sys/devices/system/cpu/online), else this process's affinity.
/// Not the affinity first: a driver placed on the client's cores must still see every core.
pub fn online_cpus() -> Vec<usize> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    match parse_cpu_list(text.trim()) {
        Some(v) if !v.is_empty() => v,
        _ => affinity(0)
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| vec![0]),
    }
}

/// `0-3,6` as the kernel writes CPU lists (surrounding blanks ignored; empty: no CPU).
pub fn parse_cpu_list(s: &str) -> Option<Vec<usize>> {
    let mut v = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
        if a > b || b >= libc::CPU_SETSIZE as usize {
            return None;
        }
        v.extend(a..=b);
    }
    Some(v)
}

/// Field `n` of /proc/PID/stat counted after the command's name (state is 0), which may hold
/// spaces and parentheses.
fn stat_field(pid: u32, n: usize) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(n)?.parse().ok()
}

/// When process `pid` started (clock ticks after boot, /proc/PID/stat field 22): with its pid,
/// it names one process for good, where a pid alone may be reused.
pub fn start_time(pid: u32) -> Option<u64> {
    stat_field(pid, 19)
}

/// The parent of process `pid` (/proc/PID/stat field 4).
pub fn parent_of(pid: u32) -> Option<u32> {
    stat_field(pid, 1).and_then(|p| u32::try_from(p).ok())
}

/// Whether the process that started at `start` with this pid still runs (None: any process with
/// this pid).
pub fn alive(pid: u32, start: Option<u64>) -> bool {
    match (start_time(pid), start) {
        (Some(now), Some(then)) => now == then,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// Whether this process runs as root (the lab needs CAP_NET_ADMIN and cgroups).
pub fn is_root() -> bool {
    euid() == 0
}

/// This process's effective user id.
pub fn euid() -> u32 {
    // SAFETY: geteuid takes no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

/// A namespace that could not be entered.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("namespace {ns}: {source}")]
    OpenNetns { ns: String, source: io::Error },
    #[error("cannot enter namespace {ns}: {source}")]
    EnterNetns { ns: String, source: io::Error },
}

/// Moves the calling thread into the network namespace `/run/netns/NS`.
pub fn enter_netns(ns: &str) -> Result<(), Error> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(std::path::Path::new("/run/netns").join(ns)).map_err(|source| {
        Error::OpenNetns {
            ns: ns.to_string(),
            source,
        }
    })?;
    // SAFETY: `f` is an open namespace file that outlives the call; setns reads only the fd.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(Error::EnterNetns {
            ns: ns.to_string(),
            source: io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// The index of interface `dev` in the calling thread's network namespace.
pub fn if_index(dev: &str) -> io::Result<u32> {
    let name =
        std::ffi::CString::new(dev).map_err(|_| io::Error::other("a NUL in a device name"))?;
    // SAFETY: `name` is a NUL-terminated string living across the call.
    let i = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if i == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(i)
}

/// Sends SIGKILL to process `pid`; a process already gone is no error worth reporting.
pub fn kill9(pid: i32) {
    if pid <= 0 {
        return; // 0 and negatives name process groups: never ours to kill here.
    }
    // SAFETY: kill takes plain integers and touches no memory of ours.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

/// Sends SIGKILL to process `pid` only if `still(pid)` holds once a pidfd pins the process: a
/// pid the kernel recycled after the caller chose it (another program's process) is never
/// signalled, since the signal goes to the process the pidfd pinned, and one that died in
/// between gets none. Kernels before 5.3 (no pidfd): checked, then killed by pid. Whether it was
/// signalled.
pub fn kill9_if(pid: i32, still: impl Fn(i32) -> bool) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as libc::c_int;
    if fd < 0 {
        if io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) && still(pid) {
            kill9(pid);
            return true;
        }
        return false;
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    if !still(pid) {
        return false;
    }
    // SAFETY: the pidfd is open for the call; a null siginfo and zero flags are allowed.
    let r = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            libc::SIGKILL,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    r == 0
}

/// CPU time the calling thread has used, seconds.
pub fn thread_cpu_s() -> f64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID) as f64 / 1e9
}

/// The calling thread's user and system CPU seconds so far (getrusage RUSAGE_THREAD): the first
/// is the program's own work, the second the kernel's on its behalf (system calls).
pub fn thread_user_sys_s() -> (f64, f64) {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid rusage the kernel writes into.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (s(ru.ru_utime), s(ru.ru_stime))
}

/// CLOCK_MONOTONIC in nanoseconds: one clock for every process on this kernel (a lab's
/// namespaces included), so a time sent by one side can be compared on the other.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// Clock `id` in nanoseconds.
fn clock_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec the kernel writes into.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC_RAW in nanoseconds: the kernel's clock without NTP's slewing, to time a
/// hardware counter against.
pub fn monotonic_raw_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC_RAW)
}

/// The CPU's time-stamp counter (RDTSC); None where the host is not x86-64.
pub fn tsc() -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: RDTSC exists on every x86-64 CPU, takes no memory operand and only reads a counter.
    return Some(unsafe { core::arch::x86_64::_rdtsc() });
    #[cfg(not(target_arch = "x86_64"))]
    None
}

/// The kernel's clock ticks per second (USER_HZ), as /proc/stat counts them.
pub fn clock_ticks_per_s() -> f64 {
    // SAFETY: sysconf takes a constant and touches no memory of ours.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// Whether this process may write `path` (and make files beside it, as SQLite's -wal and -shm):
/// the file if it exists, and its folder. A read-only mount says no even to root.
pub fn writable(path: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let can = |p: &std::path::Path| {
        let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
            return false;
        };
        // SAFETY: `c` is a NUL-terminated path that outlives the call; access only reads it.
        unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    can(dir) && (!path.exists() || can(path))
}

/// statfs f_type of a cgroup v1 and a cgroup v2 file system (linux/magic.h).
pub const CGROUP_MAGIC: i64 = 0x0027_e0eb;
pub const CGROUP2_MAGIC: i64 = 0x6367_7270;

/// The file system type (statfs f_type) of the file system holding `path`.
pub fn fs_magic(path: &std::path::Path) -> io::Result<i64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: statfs is plain old data; zeroed is a valid value for it.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a statfs the kernel fills; both outlive the call.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st.f_type as i64)
}

/// An epoll instance that closes itself, watching fds edge-triggered for input, each under a tag.
pub struct Epoll(std::os::fd::OwnedFd);

impl Epoll {
    pub fn new() -> io::Result<Epoll> {
        use std::os::fd::FromRawFd;
        // SAFETY: epoll_create1 takes a flag and returns a new fd or -1.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nobody else.
        Ok(Epoll(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }))
    }

    /// Watches `fd` for input, edge-triggered; events for it carry `tag`.
    pub fn add_input(&self, fd: std::os::fd::RawFd, tag: u64) -> io::Result<()> {
        self.add(fd, tag, (libc::EPOLLIN | libc::EPOLLET) as u32)
    }

    /// Watches `fd` for input, level-triggered: every wait reports it while it has input.
    pub fn add_input_level(&self, fd: std::os::fd::RawFd, tag: u64) -> io::Result<()> {
        self.add(fd, tag, libc::EPOLLIN as u32)
    }

    fn add(&self, fd: std::os::fd::RawFd, tag: u64, events: u32) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let mut ev = libc::epoll_event { events, u64: tag };
        // SAFETY: both fds are open; `ev` is a valid epoll_event the kernel only reads.
        if unsafe { libc::epoll_ctl(self.0.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Waits up to `timeout_ms` and returns the tags that became ready (none on EINTR).
    pub fn wait(&self, timeout_ms: i32, tags: &mut Vec<u64>) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 8];
        // SAFETY: the kernel writes at most events.len() entries into `events`.
        let n = unsafe {
            libc::epoll_wait(
                self.0.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as i32,
                timeout_ms,
            )
        };
        tags.clear();
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(())
            } else {
                Err(e)
            };
        }
        tags.extend(events[..n as usize].iter().map(|e| e.u64));
        Ok(())
    }
}

/// Makes a child die with the thread that spawns it (PR_SET_PDEATHSIG), so a killed vnetlab
/// leaves no command still building and no agent running.
pub fn die_with_parent(cmd: &mut std::process::Command) {
    // SAFETY: the hook runs in the child between fork and exec and calls only prctl, which is async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(cmd, || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_lists_parse_as_the_kernel_writes_them() {
        use super::parse_cpu_list;
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("\t5"), Some(vec![5]));
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("0-99999"), None);
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn this_process_is_alive_and_a_stale_start_is_not() {
        let me = std::process::id();
        let t = super::start_time(me).unwrap();
        assert!(super::alive(me, Some(t)));
        assert!(!super::alive(me, Some(t + 1)));
        assert!(!super::alive(u32::MAX, None));
    }

    #[test]
    fn affinity_round_trips_on_a_thread() {
        let all = super::online_cpus();
        std::thread::spawn(move || {
            super::set_affinity(0, &all[..1]).unwrap();
            assert_eq!(super::affinity(0).unwrap(), all[..1].to_vec());
            assert!(super::set_affinity(0, &[1 << 20]).is_err());
        })
        .join()
        .unwrap();
    }
}
