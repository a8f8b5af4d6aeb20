//! A farm on one machine, driven by Ansible: three fake hosts, each a network namespace with its
//! own sshd (Debian's openssh-server) on the test's own network (a bridge `vlfbr`,
//! 10.251.0.0/24), its own state folder, spool and host label; a PostgreSQL server on that
//! network; `deploy/ansible/farm.yml` runs a small experiment on all three and `plan --farm`
//! answers for the farm. Then the faults: a host dropping out mid-run (its sshd and its run
//! killed), the database stopped mid-run, and hosts lacking the datapath an experiment needs.
//! The three hosts share this machine, so their runs take turns on its lock (`--wait`), as two
//! runs on one kernel must.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const NET: &str = "10.251.0";
const PG_PORT: u16 = 54331;
const EXPERIMENT: &str = "name = \"farm\"\n[matrix]\nmodes = [\"bridge\", \"macvlan\"]\ndirections = [\"guest-to-client\", \"host-to-client\"]\nmessages = [\"8K\"]\nloads = [\"100mbit\"]\n[point]\nduration = 0.5\nwarmup = 0.2\n";
const VHOST: &str = "name = \"vhost\"\n[matrix]\nmodes = [\"qemu-vhost\"]\nmessages = [\"8K\"]\n[point]\nduration = 0.5\n";

/// A fake host: its namespace, label, address and sshd.
struct FakeHost {
    ns: String,
    label: String,
    addr: String,
    dir: PathBuf,
    sshd: Option<Child>,
}

impl FakeHost {
    fn new(i: u32, farm: &Path) -> FakeHost {
        let ns = format!("vlfh{i}");
        let dir = farm.join(format!("h{i}"));
        for d in ["state", "spool", "work", "tmp", "async", "bin"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        must(&["ip", "netns", "add", &ns]);
        let (near, far) = (format!("vlfh{i}r"), format!("vlfh{i}n"));
        must(&[
            "ip", "link", "add", &near, "type", "veth", "peer", "name", &far, "netns", &ns,
        ]);
        must(&["ip", "link", "set", &near, "master", "vlfbr", "up"]);
        let addr = format!("{NET}.1{i}");
        must(&[
            "ip",
            "-n",
            &ns,
            "addr",
            "add",
            &format!("{addr}/24"),
            "dev",
            &far,
        ]);
        must(&["ip", "-n", &ns, "link", "set", &far, "up"]);
        must(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
        let config = format!(
            "ListenAddress {addr}\nPort 22\nHostKey {k}/hostkey\nAuthorizedKeysFile {k}/key.pub\nPermitRootLogin prohibit-password\nPasswordAuthentication no\nUsePAM no\nStrictModes no\nPidFile {d}/sshd.pid\nSubsystem sftp internal-sftp\n",
            k = farm.display(),
            d = dir.display()
        );
        std::fs::write(dir.join("sshd_config"), config).unwrap();
        let mut h = FakeHost {
            ns,
            label: format!("h{i}"),
            addr,
            dir,
            sshd: None,
        };
        h.start_sshd();
        h
    }

    /// The host's sshd, in its namespace (only the network one: the host shares this machine's
    /// files, as the fake hosts share its kernel).
    fn start_sshd(&mut self) {
        let child = Command::new("nsenter")
            .arg(format!("--net=/run/netns/{}", self.ns))
            .args(["/usr/sbin/sshd", "-D", "-e", "-f"])
            .arg(self.dir.join("sshd_config"))
            .stderr(std::fs::File::create(self.dir.join("sshd.log")).unwrap())
            .spawn()
            .unwrap();
        self.sshd = Some(child);
        let t0 = Instant::now();
        let to: std::net::SocketAddr = format!("{}:22", self.addr).parse().unwrap();
        while std::net::TcpStream::connect_timeout(&to, Duration::from_millis(200)).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "sshd of {} did not listen",
                self.label
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The host drops out: every sshd process in its namespace is killed (its listener and the
    /// sessions Ansible holds).
    fn kill_sshd(&mut self) {
        let pids = sh(&format!("ip netns pids {}", self.ns));
        for pid in pids.split_whitespace() {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            if comm.trim() == "sshd" {
                signal(pid.parse().unwrap(), 9);
            }
        }
        if let Some(mut c) = self.sshd.take() {
            let _ = c.wait();
        }
    }

    fn inventory(&self) -> String {
        let d = self.dir.display();
        format!(
            "    {l}:\n      ansible_host: {a}\n      vnetlab_prefix: {d}\n      vnetlab_state_dir: {d}/state\n      vnetlab_spool_dir: {d}/spool\n      vnetlab_work_dir: {d}/work\n      ansible_remote_tmp: {d}/tmp\n      ansible_async_dir: {d}/async\n      vnetlab_labels: [fake=yes]\n",
            l = self.label,
            a = self.addr
        )
    }
}

impl Drop for FakeHost {
    fn drop(&mut self) {
        self.kill_sshd();
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).status();
    }
}

/// The farm: the network, the database, the hosts, and the controller's folders.
struct Farm {
    dir: PathBuf,
    pg: Postgres,
    hosts: Vec<FakeHost>,
    made_run_sshd: bool,
}

impl Farm {
    fn new(dir: &Path) -> Farm {
        for tool in [
            "ansible-playbook",
            "ssh",
            "/usr/sbin/sshd",
            "ssh-keygen",
            "nsenter",
        ] {
            assert!(
                !sh(&format!("command -v {tool}")).trim().is_empty(),
                "{tool} is needed for this test: `make deps` installs it"
            );
        }
        std::fs::create_dir_all(dir).unwrap();
        for k in ["key", "hostkey"] {
            must(&[
                "ssh-keygen",
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-f",
                dir.join(k).to_str().unwrap(),
            ]);
        }
        // sshd's privilege separation folder, made if missing and removed after.
        let made_run_sshd = std::fs::create_dir("/run/sshd").is_ok();
        must(&["ip", "link", "add", "vlfbr", "type", "bridge"]);
        must(&["ip", "addr", "add", &format!("{NET}.1/24"), "dev", "vlfbr"]);
        must(&["ip", "link", "set", "vlfbr", "up"]);
        let pg = Postgres::start(&dir.join("pg"), PG_PORT, &format!("{NET}.1"));
        let hosts = (1..=3).map(|i| FakeHost::new(i, dir)).collect();
        std::fs::write(dir.join("farm.toml"), EXPERIMENT).unwrap();
        std::fs::write(dir.join("vhost.toml"), VHOST).unwrap();
        Farm {
            dir: dir.into(),
            pg,
            hosts,
            made_run_sshd,
        }
    }

    fn url(&self) -> String {
        format!("postgresql://postgres@{NET}.1:{PG_PORT}/postgres")
    }

    /// The inventory of a farm run: the three hosts, the run id, the experiment, the store.
    fn inventory(&self, run: &str, experiment: &str) -> PathBuf {
        let mut s = String::from("vnetlab:\n  hosts:\n");
        for h in &self.hosts {
            s += &h.inventory();
        }
        s += &format!(
            "  vars:\n    ansible_user: root\n    ansible_ssh_private_key_file: {d}/key\n    ansible_python_interpreter: /usr/bin/python3\n    vnetlab_binary: {BIN}\n    vnetlab_install_packages: false\n    vnetlab_run_id: {run}\n    vnetlab_experiment: {d}/{experiment}\n    vnetlab_store: {url}\n    vnetlab_poll: 1\n    vnetlab_lock_wait: 900\n",
            d = self.dir.display(),
            url = self.url()
        );
        let p = self.dir.join(format!("{run}.yml"));
        std::fs::write(&p, s).unwrap();
        p
    }

    fn playbook(&self, run: &str, experiment: &str) -> Command {
        let mut c = Command::new("ansible-playbook");
        c.arg("-i")
            .arg(self.inventory(run, experiment))
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/ansible/farm.yml"))
            .env("ANSIBLE_HOME", self.dir.join("ansible"))
            .env("ANSIBLE_LOCAL_TEMP", self.dir.join("ansible/tmp"))
            .env("ANSIBLE_NOCOLOR", "1")
            .env("ANSIBLE_RETRY_FILES_ENABLED", "false")
            .env("ANSIBLE_HOST_KEY_CHECKING", "false")
            .env(
                "ANSIBLE_SSH_ARGS",
                "-o ControlMaster=no -o ControlPersist=no -o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no -o ConnectTimeout=5",
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// Runs the playbook to its end: its output, and whether it succeeded.
    fn play(&self, run: &str, experiment: &str) -> (bool, String) {
        let o = self.playbook(run, experiment).output().unwrap();
        let text = self.keep(run, &o);
        (o.status.success(), text)
    }

    /// Keeps a play's output in the build's scratch folder (docs/fleet.md shows them) and
    /// returns it.
    fn keep(&self, run: &str, o: &Output) -> String {
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        let kept = Path::new(env!("CARGO_TARGET_TMPDIR")).join("farm");
        std::fs::create_dir_all(&kept).unwrap();
        let n = std::fs::read_dir(&kept).unwrap().count();
        std::fs::write(kept.join(format!("{n:02}-{run}.txt")), &text).unwrap();
        text
    }

    fn vnetlab(&self, args: &[&str]) -> Output {
        Command::new(BIN).args(args).output().unwrap()
    }

    /// The store's runs of a farm run id: (host label, points, planned, status).
    fn stored(&self, run: &str) -> Vec<(String, u64, u64, String)> {
        let o = self.vnetlab(&["runs", "--store", &self.url(), "--json"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let mut rows: Vec<_> = doc["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["fleet"]["run"] == run)
            .map(|r| {
                (
                    r["fleet"]["host"].as_str().unwrap().to_string(),
                    r["points"].as_u64().unwrap(),
                    r["planned_points"].as_u64().unwrap(),
                    r["status"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        rows.sort();
        rows
    }

    /// Waits for a host's `vnetlab run` to be measuring (its first lab built: the hosts take
    /// turns on this one machine); its pid.
    fn run_of(&self, host: &str, within: Duration) -> i32 {
        let t0 = Instant::now();
        let state = self.dir.join(host).join("state");
        loop {
            let building = std::fs::read_dir(&state)
                .map(|d| {
                    d.flatten()
                        .any(|e| e.file_name().to_string_lossy().ends_with(".journal"))
                })
                .unwrap_or(false);
            if !building {
                assert!(t0.elapsed() < within, "{host}'s run did not start");
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
            // [b]: the pattern does not match the shell that runs pgrep.
            let pids = sh(&format!(
                "pgrep -f '[b]in/vnetlab run .*--host-label {host} '"
            ));
            if let Some(p) = pids.split_whitespace().next() {
                return p.parse().unwrap();
            }
            assert!(t0.elapsed() < within, "{host}'s run did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Every host's run holds every point once, complete.
    fn all_stored(&self, run: &str) {
        let rows = self.stored(run);
        let hosts: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
        assert_eq!(hosts, ["h1", "h2", "h3"], "{rows:?}");
        for (h, points, planned, status) in &rows {
            assert_eq!(
                (points, status.as_str()),
                (planned, "complete"),
                "{h}: {rows:?}"
            );
        }
    }
}

impl Drop for Farm {
    fn drop(&mut self) {
        // A failed test leaves the hosts' runs that Ansible started apart (async jobs): stop them
        // as Ctrl-C would, so they remove their labs and let go of the machine lock, which the
        // next tests' measurements wait for.
        let runs = format!("{}/h.*/bin/vnetlab run", self.dir.display());
        let _ = Command::new("pkill").args(["-TERM", "-f", &runs]).status();
        let t0 = Instant::now();
        let running = || {
            Command::new("pgrep")
                .args(["-f", &runs])
                .output()
                .is_ok_and(|o| !o.stdout.is_empty())
        };
        while running() && t0.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(100));
        }
        let jobs = format!("{}/h.*/tmp/ansible-tmp", self.dir.display());
        let _ = Command::new("pkill").args(["-KILL", "-f", &jobs]).status();
        self.hosts.clear();
        let _ = Command::new("ip").args(["link", "del", "vlfbr"]).status();
        if self.made_run_sshd {
            let _ = std::fs::remove_dir("/run/sshd");
        }
    }
}

#[test]
fn ansible_runs_a_farm_into_one_store_and_one_plan_through_its_faults() {
    let c = ctx("farm");
    let before = host_snapshot();
    let dir = std::env::temp_dir().join(format!("vnetlab-farm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(Path::new(env!("CARGO_TARGET_TMPDIR")).join("farm"));
    {
        let mut farm = Farm::new(&dir);
        every_host_runs_and_the_farm_is_planned(&farm);
        eprintln!("farm: three hosts ran and the farm is planned");
        faults_are_completed_by_the_rerun(&mut farm);
    }
    drop(c);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(before, host_snapshot());
}

/// Three hosts, one run id: every host's points and facts in the store, and the farm's plan.
fn every_host_runs_and_the_farm_is_planned(farm: &Farm) {
    let (ok, out) = farm.play("farm-a", "farm.toml");
    assert!(ok, "{out}");
    for h in ["h1", "h2", "h3"] {
        assert!(out.contains(&format!("\"msg\": \"{h}: done\"")), "{out}");
    }
    farm.all_stored("farm-a");
    let o = farm.vnetlab(&["runs", "--store", &farm.url(), "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for r in doc["runs"].as_array().unwrap() {
        assert!(!r["host_facts"]["cpu_accounting"]
            .as_str()
            .unwrap()
            .is_empty());
        assert_eq!(r["fleet"]["labels"][0]["value"], "yes");
    }
    let o = farm.vnetlab(&[
        "plan",
        "--farm",
        "--run-id",
        "farm-a",
        "--store",
        &farm.url(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(plan["hosts"].as_array().unwrap().len(), 3, "{plan}");
    // Every host has both datapaths' costs, or says why one is missing (a point bound by a
    // core this machine's fake hosts share with Ansible's polling).
    for h in plan["hosts"].as_array().unwrap() {
        let cells = h["cells"].as_array().unwrap().len();
        let notes = h["notes"].to_string();
        assert!(cells == 2 || notes.contains("bound by"), "{h}");
    }
    assert!(out.contains("the farm's desktops per datapath"), "{out}");
    // The farm's page: hosts side by side per datapath, drawn by Chromium, and its screenshot.
    let kept = Path::new(env!("CARGO_TARGET_TMPDIR")).join("farm");
    let page = kept.join("farm-a.html");
    let o = farm.vnetlab(&[
        "report",
        "--run-id",
        "farm-a",
        "--store",
        &farm.url(),
        "--html",
        page.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (charts, rendered, errors) = in_browser(&page, &farm.dir);
    assert!(
        charts >= 3 && rendered == charts && errors.is_empty(),
        "{charts} {rendered} {errors:?}"
    );
    let shot = kept.join("farm-a.png");
    let _ = std::fs::remove_file(&shot);
    must(&[
        "chromium",
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--window-size=1280,1600",
        &format!(
            "--user-data-dir={}",
            farm.dir.join("chromium-shot").display()
        ),
        &format!("--screenshot={}", shot.display()),
        &format!("file://{}", page.display()),
    ]);
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "{} bytes",
        png.len()
    );
}

/// The faults, each completed by running the play again under the same run id.
fn faults_are_completed_by_the_rerun(farm: &mut Farm) {
    // h2 drops out mid-run: its sshd (listener and sessions) and its run are killed, as a host
    // that loses power would be; the play reports it and goes on with h3.
    let child = farm.playbook("farm-b", "farm.toml").spawn().unwrap();
    let run = farm.run_of("h2", Duration::from_secs(180));
    std::thread::sleep(Duration::from_millis(2500));
    eprintln!("farm: h2 drops out (its run, pid {run}, and its sshd killed)");
    farm.hosts[1].kill_sshd();
    signal(run, 9);
    let o = child.wait_with_output().unwrap();
    let out = farm.keep("farm-b", &o);
    assert!(!o.status.success(), "{out}");
    assert!(out.contains("h2: failed or unreachable"), "{out}");
    assert!(out.contains("\"msg\": \"h3: done\""), "{out}");
    let journals = |farm: &Farm| {
        std::fs::read_dir(farm.hosts[1].dir.join("state"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".journal"))
            .count()
    };
    assert!(journals(farm) > 0, "the killed run left no lab to clean up");
    // The rerun: h2's leftover lab is removed, its stored points skipped, the rest measured.
    farm.hosts[1].start_sshd();
    let (ok, out) = farm.play("farm-b", "farm.toml");
    assert!(ok, "{out}");
    farm.all_stored("farm-b");
    assert_eq!(journals(farm), 0, "a lab of h2 was left");

    // The database stops while h1 runs: h1 finishes into its spool, and a host whose turn comes
    // after runs into its own; the play says so. With the database back, the rerun sends them.
    let child = farm.playbook("farm-c", "farm.toml").spawn().unwrap();
    // h1 may wait for two hosts' turns first: as long as h2's wait above on a busy machine.
    farm.run_of("h1", Duration::from_secs(180));
    std::thread::sleep(Duration::from_millis(2500));
    farm.pg.halt();
    let o = child.wait_with_output().unwrap();
    let out = farm.keep("farm-c", &o);
    // h1 was measuring when the database went; a host whose turn came before may be done.
    assert!(out.contains("\"msg\": \"h1: spooled\""), "{out}");
    for h in ["h2", "h3"] {
        let ended = |how: &str| out.contains(&format!("\"msg\": \"{h}: {how}\""));
        assert!(ended("spooled") || ended("done"), "{out}");
    }
    for h in &farm.hosts {
        let spooled = std::fs::read_dir(h.dir.join("spool/farm-c--".to_string() + &h.label))
            .unwrap()
            .count();
        assert_eq!(
            spooled,
            4 + 2,
            "{}: run.json, end.json and 4 points",
            h.label
        );
    }
    farm.pg.resume();
    let (ok, out) = farm.play("farm-c", "farm.toml");
    assert!(ok, "{out}");
    farm.all_stored("farm-c");

    // A datapath no host has: every host is skipped, none failed, nothing stored.
    if Path::new("/dev/vhost-net").exists() {
        skip("this host has /dev/vhost-net: the skipped-host case needs a host without it");
        return;
    }
    let (ok, out) = farm.play("farm-d", "vhost.toml");
    assert!(ok, "{out}");
    for h in ["h1", "h2", "h3"] {
        assert!(out.contains(&format!("\"msg\": \"{h}: skipped\"")), "{out}");
    }
    assert!(out.contains("skipped, nothing run"), "{out}");
    assert!(farm.stored("farm-d").is_empty());
}
