//! A crowd for the meter to be measured beside, as a farm host's other tenants would be: light
//! tasks in a cgroup of vnetlab's own (`vl-crowd-PID` in the accounting hierarchy), half asleep
//! with a pending timer (`busybox sleep`, an hrtimer each: what makes /proc/timer_list slow) and
//! half blocked without one (`busybox cat` on a pipe vnetlab holds), and CPU hogs at a share of
//! given cores (`vnetlab burn`). Every member dies with the thread that started it (a
//! parent-death signal; the pipe's end) and the crowd's cgroup is removed when it is dropped.

use super::Error;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The most tasks a crowd holds (about 60 KB of kernel memory each).
pub const MAX_TASKS: usize = 20_000;

/// What a crowd is made of.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spec {
    pub tasks: usize,
    /// Each hog's share of its core, %, and the cores that get one each.
    pub hog_pct: f64,
    pub hog_cores: Vec<usize>,
}

/// A running crowd; dropping it ends every member and removes its cgroup.
pub struct Crowd {
    members: Vec<Child>,
    dir: Option<PathBuf>,
    /// Its folder in the v1 cpuset hierarchy (`vl-crowd-PID`), where the host has one apart:
    /// what `up --shield --shield-root` names to move the crowd off a lab's cores.
    cpuset: Option<PathBuf>,
    /// The write end of the pipe the blocked half reads: held open while the crowd lives.
    _hold: Option<std::io::PipeWriter>,
}

fn failed(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Failed(format!("crowd: {what}: {e}"))
}

impl Crowd {
    /// Starts the crowd, in a cgroup of its own where the host has an accounting hierarchy.
    pub fn start(spec: &Spec) -> Result<Crowd, Error> {
        if spec.tasks > MAX_TASKS || !(0.0..=100.0).contains(&spec.hog_pct) {
            return Err(Error::Input(format!(
                "a crowd of at most {MAX_TASKS} tasks, hogs at 0 to 100 % of a core"
            )));
        }
        if spec.tasks > 0 && which("busybox").is_none() {
            return Err(Error::Input(
                "the crowd's tasks are busybox's sleep and cat: install busybox-static (`make deps` does)".into(),
            ));
        }
        let dir = crate::meter::sched::accounting_root(&crate::meter::fs::Fs::real())
            .map(|r| r.join(format!("vl-crowd-{}", std::process::id())));
        if let Some(d) = &dir {
            std::fs::create_dir(d).map_err(|e| failed(&d.display().to_string(), e))?;
        }
        let cpuset = match crate::shield::tree() {
            Some(crate::shield::Tree::V1(root)) => Some(cpuset_folder(&root)?),
            _ => None,
        };
        let mut c = Crowd {
            members: Vec::with_capacity(spec.tasks + spec.hog_cores.len()),
            dir,
            cpuset,
            _hold: None,
        };
        c.fill(spec)?;
        Ok(c)
    }

    /// Spawns the members into the crowd's cgroup.
    fn fill(&mut self, spec: &Spec) -> Result<(), Error> {
        let procs = match &self.dir {
            Some(d) => Some(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(d.join("cgroup.procs"))
                    .map_err(|e| failed("its cgroup.procs", e))?,
            ),
            None => None,
        };
        let mut cpuset = match &self.cpuset {
            Some(d) => Some(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(d.join("cgroup.procs"))
                    .map_err(|e| failed("its cpuset's cgroup.procs", e))?,
            ),
            None => None,
        };
        let (reader, writer) = std::io::pipe().map_err(|e| failed("a pipe", e))?;
        self._hold = Some(writer);
        let exe = std::env::current_exe().map_err(|e| failed("vnetlab's own binary", e))?;
        for i in 0..spec.tasks + spec.hog_cores.len() {
            let mut cmd = if i < spec.tasks / 2 {
                let mut c = Command::new("busybox");
                c.args(["sleep", "86400"]).stdin(Stdio::null());
                c
            } else if i < spec.tasks {
                let mut c = Command::new("busybox");
                let r = reader.try_clone().map_err(|e| failed("a pipe", e))?;
                c.arg("cat").stdin(Stdio::from(r));
                c
            } else {
                let mut c = Command::new(&exe);
                c.args([
                    "burn",
                    "--pct",
                    &spec.hog_pct.to_string(),
                    "--seconds",
                    "86400",
                ]);
                c.stdin(Stdio::null());
                c
            };
            cmd.stdout(Stdio::null()).stderr(Stdio::null());
            match &procs {
                Some(f) => crate::sys::spawn::join_dying_with_parent(&mut cmd, f.as_raw_fd()),
                None => crate::sys::die_with_parent(&mut cmd),
            }
            let child = cmd.spawn().map_err(|e| failed("a member", e))?;
            if let Some(f) = &mut cpuset {
                use std::io::Write;
                let _ = f.write_all(child.id().to_string().as_bytes());
            }
            if let Some(&core) = i
                .checked_sub(spec.tasks)
                .and_then(|h| spec.hog_cores.get(h))
            {
                crate::sys::set_affinity(child.id() as i32, &[core])
                    .map_err(|e| failed(&format!("a hog on core {core}"), e))?;
            }
            self.members.push(child);
        }
        Ok(())
    }

    /// Its own cpuset folder, where the host's cpuset hierarchy is apart from the accounting one.
    pub fn cpuset(&self) -> Option<&std::path::Path> {
        self.cpuset.as_deref()
    }

    /// The members' pids.
    pub fn pids(&self) -> Vec<u32> {
        self.members.iter().map(Child::id).collect()
    }
}

impl Drop for Crowd {
    fn drop(&mut self) {
        for m in &mut self.members {
            let _ = m.kill();
        }
        for m in &mut self.members {
            let _ = m.wait();
        }
        for d in self.dir.iter().chain(&self.cpuset) {
            // The cgroup empties as the last members are reaped.
            for _ in 0..100 {
                if std::fs::remove_dir(d).is_ok() || !d.exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    }
}

/// Makes the crowd's folder in the v1 cpuset hierarchy at `root`, on every CPU and memory node
/// the root has.
fn cpuset_folder(root: &std::path::Path) -> Result<PathBuf, Error> {
    let d = root.join(format!("vl-crowd-{}", std::process::id()));
    std::fs::create_dir(&d).map_err(|e| failed(&d.display().to_string(), e))?;
    for f in ["cpuset.cpus", "cpuset.mems"] {
        let v = std::fs::read_to_string(root.join(f)).unwrap_or_default();
        if let Err(e) = std::fs::write(d.join(f), v.trim()) {
            let _ = std::fs::remove_dir(&d);
            return Err(failed(f, e));
        }
    }
    Ok(d)
}

/// Removes the cgroup folders of crowds whose process is gone (killed before it could remove
/// them; their members died with it): only empty `vl-crowd-PID` folders at a hierarchy's root
/// whose PID no longer runs. The folders removed.
pub fn remove_stale() -> Vec<PathBuf> {
    let acct = crate::meter::sched::accounting_root(&crate::meter::fs::Fs::real());
    let set = match crate::shield::tree() {
        Some(crate::shield::Tree::V1(r)) => Some(r),
        _ => None,
    };
    let mut gone = Vec::new();
    for root in acct.iter().chain(&set) {
        for e in std::fs::read_dir(root).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(pid) = name
                .strip_prefix("vl-crowd-")
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            if !crate::sys::alive(pid, None) && std::fs::remove_dir(e.path()).is_ok() {
                gone.push(e.path());
            }
        }
    }
    gone
}

/// A program on the PATH.
fn which(prog: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| PathBuf::from(d).join(prog))
        .find(|p| p.is_file())
}
