//! Helpers for integration tests that build real labs (they need root, as CI has).

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

pub const BIN: &str = env!("CARGO_BIN_EXE_vnetlab");

/// Tests that compare the host before and after run one at a time.
static HOST: Mutex<()> = Mutex::new(());

pub struct Ctx {
    pub state: PathBuf,
    _guard: MutexGuard<'static, ()>,
}

pub fn ctx(name: &str) -> Ctx {
    assert!(
        // SAFETY: geteuid takes no arguments and cannot fail.
        unsafe { libc_geteuid() } == 0,
        "the lab integration tests build real namespaces and need root: run `make test` as root"
    );
    let guard = HOST.lock().unwrap_or_else(|e| e.into_inner());
    let state = std::env::temp_dir().join(format!("vnetlab-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&state);
    std::fs::create_dir_all(&state).unwrap();
    Ctx {
        state,
        _guard: guard,
    }
}

extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

/// Sends signal `sig` to process `pid`.
pub fn signal(pid: i32, sig: i32) {
    // SAFETY: kill takes plain integers and touches no memory.
    unsafe { libc_kill(pid, sig) };
}

impl Ctx {
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        // Measuring commands take the machine one at a time: a test's wait for each other's.
        c.args(args)
            .env("VNETLAB_STATE_DIR", &self.state)
            .env("VNETLAB_LOCK_WAIT", "3600");
        c
    }
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }
    /// Runs and requires success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert!(
            o.status.success(),
            "vnetlab {args:?} failed ({}): {}{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    }
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        serde_json::from_str(&self.ok(args)).unwrap()
    }
    /// Runs and requires a refusal: exit 2 with one line of error that contains `says`.
    #[allow(dead_code)]
    pub fn refused(&self, args: &[&str], says: &str) {
        let o = self.run(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says) && one_line(&err), "{args:?}: {err}");
    }
}

/// Whether a refusal is one line of error. A measuring command that first waited for the machine's
/// lock (another test held it) said so on a line of its own; that notice is progress, not error.
#[allow(dead_code)]
pub fn one_line(err: &str) -> bool {
    let waited = "vnetlab: waiting for the run that holds this host";
    err.trim()
        .lines()
        .filter(|l| !l.starts_with(waited))
        .count()
        == 1
}

impl Drop for Ctx {
    fn drop(&mut self) {
        // A failed test may leave vnetlab processes of its own running (runs it started): stop
        // them as Ctrl-C would, so they remove their labs, before their journals go.
        self.stop_own_processes();
        // Whatever a failed test left, its journal names: remove it, kept (`up`) labs too.
        let _ = self.run(&["cleanup"]);
        for lab in self.journaled_labs() {
            let _ = self.run(&["down", &lab]);
        }
        let _ = std::fs::remove_dir_all(&self.state);
    }
}

impl Ctx {
    /// A shell spinning on one core inside `at` (`g1`, `client`, …) of `lab`, through `vnetlab
    /// exec`, given 300 ms to start; the caller kills it.
    #[allow(dead_code)]
    pub fn burn(&self, lab: &str, at: &str) -> std::process::Child {
        let b = self
            .cmd(&[
                "exec",
                "--lab",
                lab,
                at,
                "--",
                "sh",
                "-c",
                "while :; do :; done",
            ])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        b
    }

    /// vnetlab processes started with this test's state folder.
    fn own_processes(&self) -> Vec<i32> {
        let want = format!("VNETLAB_STATE_DIR={}", self.state.display());
        let me = std::process::id() as i32;
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|&pid| pid != me)
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/environ"))
                    .map(|env| env.split(|&b| b == 0).any(|v| v == want.as_bytes()))
                    .unwrap_or(false)
            })
            .collect()
    }

    /// The labs this test's state folder still has journals of.
    fn journaled_labs(&self) -> Vec<String> {
        std::fs::read_dir(&self.state)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let n = e.file_name().to_str()?.to_string();
                n.strip_suffix(".journal").map(str::to_string)
            })
            .collect()
    }

    /// SIGTERMs this test's own vnetlab processes and waits up to 30 s for them to end.
    fn stop_own_processes(&self) {
        let pids = self.own_processes();
        for &p in &pids {
            // SAFETY: kill takes plain integers (a pid started with this test's state) and touches no memory.
            unsafe { libc_kill(p, 15) };
        }
        let t0 = std::time::Instant::now();
        while !self.own_processes().is_empty() && t0.elapsed() < std::time::Duration::from_secs(30)
        {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

/// Polls `done` every 50 ms until it holds or `secs` pass; whether it held. For waits on a busy
/// host, where a fixed sleep guesses how long another task takes to get there.
pub fn wait_until(secs: u64, mut done: impl FnMut() -> bool) -> bool {
    let t0 = std::time::Instant::now();
    while t0.elapsed() < std::time::Duration::from_secs(secs) {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    done()
}

/// Waits (up to `secs`) until `child`, a measuring command, holds the machine's lock, or has
/// ended; whether it holds it. Tests run side by side, so a measurement may first wait its turn.
pub fn measuring(child: &mut std::process::Child, secs: u64) -> bool {
    let me = format!("pid {}:", child.id());
    wait_until(secs, || {
        let lock = std::fs::read_to_string("/run/vnetlab/run.lock").unwrap_or_default();
        lock.starts_with(&me) || child.try_wait().unwrap().is_some()
    }) && child.try_wait().unwrap().is_none()
}

/// Another lab's stream, not a measuring command: `vnetlab exec --lab LAB g1 -- iperf3` to that
/// lab's client at `rate` (e.g. "300M") for `secs`, in a process group of its own (signal
/// `-pid` to stop or end all of it). The lab's client must run `iperf3 -s`.
#[allow(dead_code)]
pub fn lab_stream(c: &Ctx, lab: &str, rate: &str, secs: u32) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let t = secs.to_string();
    c.cmd(&[
        "exec",
        "--lab",
        lab,
        "g1",
        "--",
        "iperf3",
        "-c",
        "10.213.0.2",
        "-b",
        rate,
        "-l",
        "8K",
        "-t",
        &t,
    ])
    .process_group(0)
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap()
}

/// A crowd of the test's own (`vnetlab bench crowd`: `tasks` light tasks, a hog at `hog_pct` on
/// each of cores 0 and 1) in a process group of its own, once it runs; with the cgroup that
/// `up --shield --shield-root` names to move it.
pub fn crowd(tasks: u32, hog_pct: u32) -> (std::process::Child, String) {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(BIN)
        .args(["bench", "crowd", "--tasks", &tasks.to_string(), "--hog-pct"])
        .args([&hog_pct.to_string(), "--hog-cores", "0,1"])
        .process_group(0)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(c.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let root = line
        .split("--shield-root ")
        .nth(1)
        .and_then(|r| r.split('`').next())
        .unwrap_or_default()
        .to_string();
    (c, root)
}

pub fn sh(cmd: &str) -> String {
    let o = Command::new("sh").args(["-c", cmd]).output().unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// What the host shows of its network and cgroups: equal before and after a lab.
pub fn host_snapshot() -> String {
    [
        "ip -o link | sed 's/ qlen.*//'",
        "ip netns list",
        "nft list ruleset",
        "tc qdisc",
        "ip -4 route show table all",
        "ls /sys/fs/cgroup/cpuacct/vnetlab /sys/fs/cgroup/cpuset/vnetlab /sys/fs/cgroup/vnetlab 2>/dev/null",
    ]
    .iter()
    .map(|c| format!("## {c}\n{}", sh(c)))
    .collect()
}

/// Opens `html` in headless Chromium: (charts on the page, charts rendered, console errors).
#[allow(dead_code)]
pub fn in_browser(
    html: &std::path::Path,
    scratch: &std::path::Path,
) -> (usize, usize, Vec<String>) {
    let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("chromium is needed for this test: `make deps` installs it");
    let profile = scratch.join("chromium-profile");
    let o = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=3000",
            &format!("--user-data-dir={}", profile.display()),
            "--dump-dom",
            &format!("file://{}", html.display()),
        ])
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&o.stdout);
    let log = String::from_utf8_lossy(&o.stderr);
    let attr = |name: &str| -> usize {
        dom.split(&format!("{name}=\""))
            .nth(1)
            .and_then(|s| s.split('"').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let errors = log
        .lines()
        .filter(|l| l.contains("CONSOLE") && (l.contains("ERROR") || l.contains("Uncaught")))
        .map(str::to_string)
        .collect();
    (attr("data-charts"), attr("data-charts-rendered"), errors)
}

/// Runs a command and requires success, naming it and its error otherwise.
pub fn must(args: &[&str]) {
    let o = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A "second machine" a test makes: namespace `ns` holding the far end of a veth, with an
/// address; the near end `near` stays in this machine's namespace, or in a namespace of its own
/// (`pair`). Removed when dropped: the namespaces, and a near end left in this namespace (one a
/// lab took as its uplink and gave back is this machine's again).
pub struct Machine {
    pub ns: String,
    pub near: String,
    near_ns: Option<String>,
}

impl Machine {
    /// `ns` with `far` at `addr` (CIDR); `near` in this machine's namespace, no address.
    pub fn new(ns: &str, near: &str, far: &str, addr: &str) -> Machine {
        Machine::make(None, ns, near, far, addr)
    }

    /// Two machines, neither this one: `near_ns` with `near` at `near_addr`, `ns` with `far` at
    /// `addr`.
    pub fn pair(
        near_ns: &str,
        near: &str,
        near_addr: &str,
        ns: &str,
        far: &str,
        addr: &str,
    ) -> Machine {
        must(&["ip", "netns", "add", near_ns]);
        let m = Machine::make(Some(near_ns), ns, near, far, addr);
        must(&["ip", "-n", near_ns, "addr", "add", near_addr, "dev", near]);
        must(&["ip", "-n", near_ns, "link", "set", near, "up"]);
        must(&["ip", "-n", near_ns, "link", "set", "lo", "up"]);
        m
    }

    fn make(near_ns: Option<&str>, ns: &str, near: &str, far: &str, addr: &str) -> Machine {
        must(&["ip", "netns", "add", ns]);
        let m = Machine {
            ns: ns.to_string(),
            near: near.to_string(),
            near_ns: near_ns.map(str::to_string),
        };
        let mut add = vec!["ip", "link", "add", near];
        if let Some(n) = near_ns {
            add.extend(["netns", n]);
        }
        add.extend(["type", "veth", "peer", "name", far, "netns", ns]);
        must(&add);
        must(&["ip", "-n", ns, "addr", "add", addr, "dev", far]);
        must(&["ip", "-n", ns, "link", "set", far, "up"]);
        must(&["ip", "-n", ns, "link", "set", "lo", "up"]);
        m
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        let del = |args: &[&str]| {
            let _ = Command::new("ip").args(args).status();
        };
        match &self.near_ns {
            Some(n) => del(&["netns", "del", n]),
            None => del(&["link", "del", &self.near]),
        }
        del(&["netns", "del", &self.ns]);
    }
}

/// Debian's PostgreSQL, started by the test in a folder of its own on a port of its own,
/// listening on `listen` (one address of this machine or of the test's own network) and trusting
/// the /24 around it. Stopped and removed when dropped.
pub struct Postgres {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
    listen: String,
}

impl Postgres {
    fn as_pg(argv: Vec<String>) {
        let o = Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .args(&argv)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{argv:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    pub fn start(dir: &std::path::Path, port: u16, listen: &str) -> Postgres {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .expect("PostgreSQL is needed for this test: `make deps` installs it")
            .flatten()
            .map(|e| e.path().join("bin"))
            .find(|b| b.join("initdb").exists())
            .expect("no initdb under /usr/lib/postgresql");
        std::fs::create_dir_all(dir).unwrap();
        must(&["chown", "postgres", dir.to_str().unwrap()]);
        let data = dir.join("data");
        Self::as_pg(vec![
            bin.join("initdb").display().to_string(),
            "-D".into(),
            data.display().to_string(),
            "--auth=trust".into(),
            "-U".into(),
            "postgres".into(),
        ]);
        let net = listen.rsplit_once('.').map(|(a, _)| a).unwrap_or(listen);
        let hba = data.join("pg_hba.conf");
        let mut rules = std::fs::read_to_string(&hba).unwrap();
        rules += &format!("host all all {net}.0/24 trust\n");
        std::fs::write(&hba, rules).unwrap();
        let pg = Postgres {
            dir: dir.to_path_buf(),
            bin,
            port,
            listen: listen.into(),
        };
        pg.resume();
        pg
    }

    /// Starts the server (again).
    pub fn resume(&self) {
        Self::as_pg(vec![
            self.bin.join("pg_ctl").display().to_string(),
            "-D".into(),
            self.dir.join("data").display().to_string(),
            "-l".into(),
            self.dir.join("log").display().to_string(),
            "-w".into(),
            "-o".into(),
            format!(
                "-p {} -k {} -c listen_addresses={}",
                self.port,
                self.dir.display(),
                self.listen
            ),
            "start".into(),
        ]);
    }

    /// Stops the server at once, as a crash or a lost database host would.
    pub fn halt(&self) {
        let _ = Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(self.bin.join("pg_ctl"))
            .args([
                "-D",
                &self.dir.join("data").display().to_string(),
                "-m",
                "immediate",
                "stop",
            ])
            .output();
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.halt();
        // Also when the test failed: nothing of the cluster stays behind.
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Where skipped tests are listed, a line each; `make test` totals and prints it.
pub const SKIPS: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/skipped.txt");

/// Records that the calling test skipped what it checks, and why (its environment lacks
/// something): a SKIP line in `SKIPS`, and on stderr.
pub fn skip(why: &str) {
    use std::io::Write;
    let name = std::thread::current().name().unwrap_or("?").to_string();
    let line = format!("SKIP {name}: {why}\n");
    eprint!("{line}");
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(SKIPS)
    {
        let _ = f.write_all(line.as_bytes());
    }
}

/// The meter's reasons, from the store `db`, for each point of run `run` whose host CPU it could
/// not tell (steal on a shared machine, sources that disagree).
pub fn untold(db: &str, run: i64) -> Vec<String> {
    let c = rusqlite::Connection::open(db).unwrap();
    let mut q = c
        .prepare("SELECT unmeasurable FROM points WHERE run_id = ?1 AND unmeasurable IS NOT NULL")
        .unwrap();
    let rows = q.query_map([run], |x| x.get::<_, String>(0)).unwrap();
    rows.map(Result::unwrap).collect()
}
