//! Integration tests of hostile state and hostile peers (root): planted journals never aim
//! vnetlab at what it did not make (foreign cgroups, look-alike folders, symlinks, pid files, a PF
//! nobody claimed, lines that are not text, a state folder others can write); `serve` cannot be
//! locked out by connections without the token nor used to reach anything but loopback and what
//! it was allowed; bad files, loads and stores are refused before anything runs. Every decoy is
//! made by the test and removed after.

mod common;
use common::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A process the test owns, killed when dropped.
struct Decoy(Child);

impl Decoy {
    /// `sleep 600` under another name (`comm`), so it can pass for a QEMU.
    fn named(dir: &Path, comm: &str) -> Decoy {
        let exe = dir.join(comm);
        std::fs::copy("/bin/sleep", &exe).unwrap();
        Decoy(Command::new(&exe).arg("600").spawn().unwrap())
    }
    fn pid(&self) -> u32 {
        self.0.id()
    }
    fn alive(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }
}

impl Drop for Decoy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Folders (and a symlink) the test made outside its state folder, removed when dropped.
struct Made(Vec<PathBuf>);

impl Drop for Made {
    fn drop(&mut self) {
        for p in self.0.iter().rev() {
            if p.is_symlink() || p.is_file() {
                let _ = std::fs::remove_file(p);
            } else {
                let _ = std::fs::remove_dir(p);
            }
        }
    }
}

fn journal(c: &Ctx, lab: &str, lines: &[String]) -> PathBuf {
    let j = c.state.join(format!("{lab}.journal"));
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(&j, text).unwrap();
    j
}

fn cgroup_line(path: &str) -> String {
    format!("{{\"kind\":\"cgroup\",\"path\":\"{path}\",\"shared\":false}}")
}

/// Puts `pid` into a cgroup folder (v1: its cgroup.procs).
fn join_cgroup(dir: &Path, pid: u32) {
    std::fs::write(dir.join("cgroup.procs"), pid.to_string()).unwrap();
}

#[test]
fn planted_journals_touch_nothing_vnetlab_did_not_make() {
    let c = ctx("planted2");
    let before = host_snapshot();
    let mut made = Made(vec![]);
    // 1. A real cgroup of another hierarchy, named like vnetlab's folder but deeper down.
    let cpu = Path::new("/sys/fs/cgroup/cpu");
    let mut d1 = Decoy::named(&c.state, "decoy1");
    let foreign = cpu.join("decoy1/vnetlab/vlpa");
    if cpu.is_dir() {
        for p in [
            cpu.join("decoy1"),
            cpu.join("decoy1/vnetlab"),
            foreign.clone(),
        ] {
            std::fs::create_dir(&p).unwrap();
            made.0.push(p);
        }
        join_cgroup(&foreign, d1.pid());
    }
    journal(&c, "pa", &[cgroup_line(foreign.to_str().unwrap())]);
    // 2. A plain folder on the tmpfs above the hierarchies, with a cgroup.procs of text.
    let mut d2 = Decoy::named(&c.state, "decoy2");
    let fake = Path::new("/sys/fs/cgroup/decoyfs/vnetlab/vlpb");
    for p in [
        "/sys/fs/cgroup/decoyfs",
        "/sys/fs/cgroup/decoyfs/vnetlab",
        fake.to_str().unwrap(),
    ] {
        std::fs::create_dir(p).unwrap();
        made.0.push(p.into());
    }
    std::fs::write(fake.join("cgroup.procs"), d2.pid().to_string()).unwrap();
    made.0.push(fake.join("cgroup.procs"));
    journal(&c, "pb", &[cgroup_line(fake.to_str().unwrap())]);
    // 3. The same through a symlink on the cgroup tmpfs.
    let mut d3 = Decoy::named(&c.state, "decoy3");
    let target = c.state.join("elsewhere/vnetlab/vlpc");
    std::fs::create_dir_all(&target).unwrap();
    std::fs::write(target.join("cgroup.procs"), d3.pid().to_string()).unwrap();
    let link = Path::new("/sys/fs/cgroup/decoyln");
    std::os::unix::fs::symlink(c.state.join("elsewhere"), link).unwrap();
    made.0.push(link.into());
    journal(&c, "pc", &["{\"kind\":\"cgroup\",\"path\":\"/sys/fs/cgroup/decoyln/vnetlab/vlpc\",\"shared\":false}".into()]);
    // 4. A VM folder whose pid file names a process that calls itself qemu.
    let mut d4 = Decoy::named(&c.state, "qemu-system-x86_64");
    let vm = c.state.join("pd.vm-g1");
    std::fs::create_dir(&vm).unwrap();
    std::fs::write(vm.join("qemu.pid"), d4.pid().to_string()).unwrap();
    journal(
        &c,
        "pd",
        &[format!(
            "{{\"kind\":\"vm_folder\",\"path\":\"{}\"}}",
            vm.display()
        )],
    );
    // 5. sriov_numvfs of a device the lab never claimed (a veth the test makes).
    let veth = "vltdecoy0";
    assert!(Command::new("ip")
        .args([
            "link",
            "add",
            veth,
            "type",
            "veth",
            "peer",
            "name",
            "vltdecoy1"
        ])
        .status()
        .unwrap()
        .success());
    let link_before = sh(&format!("ip -d link show {veth}"));
    journal(
        &c,
        "pe",
        &[format!(
            "{{\"kind\":\"num_vfs\",\"pf\":\"{veth}\",\"previous\":0,\"set\":4}}"
        )],
    );
    // 6. A line that is not text hides a later entry.
    let mut d6 = Decoy::named(&c.state, "decoy6");
    let j6 = c.state.join("pf.journal");
    let mut bytes = b"{\"kind\":\"complete\"}\n\xff\xfe not text\n".to_vec();
    bytes.extend(cgroup_line(foreign.to_str().unwrap()).as_bytes());
    bytes.push(b'\n');
    std::fs::write(&j6, &bytes).unwrap();

    for lab in ["pa", "pb", "pc", "pe", "pf"] {
        let o = c.run(&["down", lab]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "down {lab} acted: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{lab}: {err}");
        assert!(
            c.state.join(format!("{lab}.journal")).exists(),
            "{lab}'s journal is kept"
        );
    }
    assert!(String::from_utf8_lossy(&c.run(&["down", "pf"]).stderr)
        .contains(":2: the journal line is not text"));
    // cleanup refuses them too, and acts on none.
    assert!(!c.run(&["cleanup"]).status.success());
    // The VM folder's journal is otherwise sound: down removes the folder, never the decoy.
    let _ = c.run(&["down", "pd"]);
    for (n, d) in [
        (1, &mut d1),
        (2, &mut d2),
        (3, &mut d3),
        (4, &mut d4),
        (6, &mut d6),
    ] {
        assert!(d.alive(), "decoy {n} was killed");
    }
    if cpu.is_dir() {
        assert!(foreign.is_dir(), "the foreign cgroup was removed");
    }
    assert!(fake.is_dir() && target.is_dir() && link.is_symlink());
    assert_eq!(
        link_before,
        sh(&format!("ip -d link show {veth}")),
        "the device was touched"
    );
    let _ = Command::new("ip").args(["link", "del", veth]).status();
    for lab in ["pa", "pb", "pc", "pe", "pf", "pd"] {
        let _ = std::fs::remove_file(c.state.join(format!("{lab}.journal")));
    }
    drop((d1, d2, d3, d4, d6));
    drop(made);
    assert_eq!(before, host_snapshot());
}

#[test]
fn a_state_folder_must_exist_and_be_only_ours() {
    let db = std::env::temp_dir().join(format!(
        "vnetlab-test-nostate-{}.sqlite",
        std::process::id()
    ));
    let db = db.to_str().unwrap();
    let exp = "experiments/papers/xen-lro/quick.toml";
    // Commands that build labs as they go refuse it before the first one, not lab by lab.
    for args in [
        vec!["up", "--name", "tsd"],
        vec!["run", exp, "--db", db],
        vec!["reproduce", "xen-lro", "--quick", "--db", db],
    ] {
        let o = Command::new(BIN)
            .args(&args)
            .env("VNETLAB_STATE_DIR", "/nonexistent/x")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("VNETLAB_STATE_DIR=/nonexistent/x is not a folder") && one_line(&err),
            "{args:?}: {err}"
        );
    }
    assert!(!Path::new("/nonexistent").exists());
    assert!(
        !Path::new(db).exists(),
        "no store is made for a refused run"
    );
    let c = ctx("openstate");
    let open = c.state.join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    std::fs::write(open.join("x.journal"), "{\"kind\":\"complete\"}\n").unwrap();
    for args in [vec!["up", "--name", "tso"], vec!["down", "x"]] {
        let o = Command::new(BIN)
            .args(&args)
            .env("VNETLAB_STATE_DIR", &open)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("writable by others"), "{err}");
    }
    assert!(open.join("x.journal").exists());
}

/// A `serve` on `port` with `token`, waited for.
fn serve(port: u16, token: &str, extra: &[&str]) -> Child {
    let mut args = vec![
        "serve".to_string(),
        "--port".into(),
        port.to_string(),
        "--token".into(),
        token.into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let srv = Command::new(BIN)
        .args(&args)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err()
        && t0.elapsed() < Duration::from_secs(5)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    srv
}

fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// CPU seconds a process has used.
fn cpu_s(pid: u32) -> f64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let f: Vec<&str> = s
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let t = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (t(11) + t(12)) / 100.0
}

#[test]
fn serve_cannot_be_locked_out_by_connections_without_the_token() {
    let port = 15297;
    let mut srv = serve(port, "s3cret-token-0123", &[]);
    let pid = srv.id();
    // 16 slow lorises, one byte a second of a hello that never ends, and 1000 idle connections.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let lorises: Vec<_> = (0..16)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
                    return;
                };
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    if s.write_all(b"{").is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(1000));
                }
            })
        })
        .collect();
    let idle: Vec<_> = (0..1000)
        .filter_map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).ok())
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    // Idle under attack: few threads, next to no CPU.
    let (c0, t0) = (cpu_s(pid), Instant::now());
    std::thread::sleep(Duration::from_secs(2));
    let cpu_pct = (cpu_s(pid) - c0) / t0.elapsed().as_secs_f64() * 100.0;
    let th = threads(pid);
    // A client with the token gets through at once.
    let t0 = Instant::now();
    let o = Command::new(BIN)
        .args([
            "test",
            "-H",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "--token",
            "s3cret-token-0123",
            "-l",
            "0.3",
            "--warmup",
            "0.1",
            "--json",
        ])
        .output()
        .unwrap();
    let took = t0.elapsed();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    drop(idle);
    for l in lorises {
        let _ = l.join();
    }
    srv.kill().unwrap();
    let _ = srv.wait();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(took < Duration::from_secs(4), "the test took {took:?}");
    assert!(th <= 20, "{th} threads under attack");
    assert!(
        cpu_pct < 5.0,
        "serve used {cpu_pct:.1} % of a core while idle"
    );
}

/// Under a flood of connections that never say a hello, every good hello still gets through
/// (5-7 % failed when the newest 64 evicted the oldest, a good one among them); wrong tokens are
/// answered at once only while they are rare, then held until their time is up, so a guesser
/// gets a few answers a second, not thousands.
#[test]
fn a_flood_costs_no_good_hello_and_wrong_tokens_are_slowed() {
    let port = 15296;
    let token = "flood-token-0123456";
    let mut srv = serve(port, token, &[]);
    let hello = move |t: &str| -> Option<String> {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(8))).ok()?;
        s.write_all(format!("{{\"op\":\"hello\",\"token\":\"{t}\"}}\n").as_bytes())
            .ok()?;
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(s), &mut line).ok()?;
        Some(line)
    };
    // 600 silent connections, and 50 good hellos among them.
    let mut silent = Vec::new();
    let mut good = 0;
    for k in 0..650 {
        if k % 13 == 0 {
            good += usize::from(hello(token).is_some_and(|l| l.contains("ok")));
        } else if let Ok(s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            silent.push(s);
        }
    }
    assert_eq!(good, 50, "{good} of 50 good hellos got through the flood");
    drop(silent);
    // 12 wrong tokens at once: a handful answered at once, the rest held for their hello time.
    let t0 = Instant::now();
    let guesses: Vec<_> = (0..12)
        .map(|k| std::thread::spawn(move || (hello(&format!("guess-{k:012}-xyz")), t0.elapsed())))
        .collect();
    let answered: Vec<Duration> = guesses
        .into_iter()
        .filter_map(|g| {
            let (line, at) = g.join().unwrap();
            line.filter(|l| l.contains("wrong token")).map(|_| at)
        })
        .collect();
    let quick = answered
        .iter()
        .filter(|t| **t < Duration::from_secs(1))
        .count();
    srv.kill().unwrap();
    let _ = srv.wait();
    assert!(
        quick <= 6,
        "{quick} of 12 wrong tokens answered within a second"
    );
    assert!(answered.len() >= 10, "{} answered at all", answered.len());
}

#[test]
fn serve_reaches_only_loopback_and_what_it_was_allowed() {
    let o = Command::new(BIN)
        .args(["serve", "--bind", "0.0.0.0", "--token", "s3cret-token-0123"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--bind-any"), "{err}");
    let port = 15296;
    let mut srv = serve(port, "s3cret-token-0123", &["--allow", "192.0.2.0/24"]);
    let pid = srv.id();
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut r = std::io::BufReader::new(s.try_clone().unwrap());
    let mut say = |req: &str| -> String {
        s.write_all(req.as_bytes()).unwrap();
        s.write_all(b"\n").unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut r, &mut line).unwrap();
        line
    };
    assert!(say("{\"op\":\"hello\",\"token\":\"s3cret-token-0123\"}").contains("ok"));
    let spec = |test: &str| {
        serde_json::json!({"test": test, "msg": 1024, "req": 1, "resp": 1, "local_buf": null, "remote_buf": null,
        "duration": 1.0, "warmup": 0.0, "parallel": 1, "rate": null, "nodelay": false, "zerocopy": false, "interval": 1.0})
    };
    for (to, test) in [
        ("10.255.255.1:8080", "TCP_STREAM"),
        ("8.8.8.8:5353", "UDP_STREAM"),
        ("8.8.8.8:5353", "TCP_CRR"),
        ("127.0.0.1:80", "TCP_STREAM"),
        ("0.0.0.0:5001", "TCP_STREAM"),
    ] {
        let req =
            serde_json::json!({"op": "connect", "spec": spec(test), "to": [to], "first_id": 0});
        let reply = say(&req.to_string());
        assert!(
            reply.contains("error") && reply.contains(&format!("connect to {to}")),
            "{to} {test}: {reply}"
        );
    }
    for (bind, ports) in [
        ("0.0.0.0", serde_json::Value::Null),
        ("10.0.0.1", serde_json::Value::Null),
        ("127.0.0.1", serde_json::json!([1, 1])),
    ] {
        let req = serde_json::json!({"op": "listen", "spec": spec("TCP_STREAM"), "bind": bind, "ports": ports, "streams": 1, "first_id": 0});
        let reply = say(&req.to_string());
        assert!(reply.contains("error"), "listen {bind} {ports}: {reply}");
    }
    for (field, value) in [
        ("rate", serde_json::json!(8)),
        ("remote_buf", serde_json::json!(0)),
    ] {
        let mut sp = spec("TCP_STREAM");
        sp[field] = value;
        let req = serde_json::json!({"op": "listen", "spec": sp, "bind": "127.0.0.1", "ports": null, "streams": 1, "first_id": 0});
        assert!(say(&req.to_string()).contains("error"), "{field}");
    }
    // An allowed network is allowed (nothing listens there: the connect itself is what fails).
    let req = serde_json::json!({"op": "connect", "spec": spec("TCP_STREAM"), "to": ["192.0.2.9:5001"], "first_id": 0});
    let reply = say(&req.to_string());
    assert!(!reply.contains("serve reaches only"), "{reply}");
    drop((s, r));
    std::thread::sleep(Duration::from_millis(300));
    // 64 listens in each of 16 sessions hold no thread each, and cost no CPU while they wait.
    let mut sessions = Vec::new();
    for _ in 0..16 {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut r = std::io::BufReader::new(s.try_clone().unwrap());
        let mut line = String::new();
        s.write_all(b"{\"op\":\"hello\",\"token\":\"s3cret-token-0123\"}\n")
            .unwrap();
        std::io::BufRead::read_line(&mut r, &mut line).unwrap();
        for _ in 0..64 {
            let req = serde_json::json!({"op": "listen", "spec": spec("TCP_STREAM"), "bind": "127.0.0.1", "ports": null, "streams": 1, "first_id": 0});
            s.write_all(format!("{req}\n").as_bytes()).unwrap();
            line.clear();
            std::io::BufRead::read_line(&mut r, &mut line).unwrap();
            assert!(line.contains("listening"), "{line}");
        }
        sessions.push((s, r));
    }
    // A 17th authenticated client is told the server is busy.
    let mut extra = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    extra
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    extra
        .write_all(b"{\"op\":\"hello\",\"token\":\"s3cret-token-0123\"}\n")
        .unwrap();
    let mut busy = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(extra), &mut busy).unwrap();
    assert!(busy.contains("busy"), "{busy}");
    let (c0, t0) = (cpu_s(pid), Instant::now());
    std::thread::sleep(Duration::from_secs(2));
    let cpu_pct = (cpu_s(pid) - c0) / t0.elapsed().as_secs_f64() * 100.0;
    let th = threads(pid);
    drop(sessions);
    srv.kill().unwrap();
    let _ = srv.wait();
    assert!(th <= 20, "{th} threads for 16 sessions of 64 listens");
    assert!(cpu_pct < 5.0, "{cpu_pct:.1} % of a core");
}

#[test]
fn bad_files_loads_and_scales_are_refused_before_anything_runs() {
    let c = ctx("badfiles");
    let before = host_snapshot();
    let fifo = c.state.join("exp.toml");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let db = c.state.join("r.sqlite");
    let dbs = db.to_str().unwrap();
    let exp = |name: &str, text: &str| {
        let p = c.state.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let g99 = exp("g99.toml", "name = \"g99\"\n[matrix]\nmodes = [\"bridge\"]\nguests = [1]\ninterference = [\"cpu@g99\"]\n");
    let scale = exp(
        "scale.toml",
        "name = \"scale\"\n[matrix]\nmodes = [\"bridge\"]\n[point]\ntime_scale = 0.0\n",
    );
    let t0 = Instant::now();
    for (args, says) in [
        (
            vec!["run", fifo.to_str().unwrap(), "--db", dbs],
            "not a regular file",
        ),
        (
            vec!["up", "--file", fifo.to_str().unwrap()],
            "not a regular file",
        ),
        (
            vec!["run", g99.to_str().unwrap(), "--db", dbs],
            "runs in g99",
        ),
        (
            vec!["run", scale.to_str().unwrap(), "--db", dbs],
            "time scale 0",
        ),
    ] {
        c.refused(&args, says);
    }
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "refused before building anything"
    );
    assert!(!db.exists(), "no store was made");
    assert_eq!(before, host_snapshot());
}

/// A run whose points fail (here: no `tc` on the PATH, so no lab can be built) stores what it
/// could and exits 3, so a script notices the holes.
#[test]
fn a_run_with_failed_points_exits_3() {
    let c = ctx("partial");
    let before = host_snapshot();
    // Every tool of the usual PATH but tc.
    let bin = c.state.join("bin");
    std::fs::create_dir(&bin).unwrap();
    for dir in [
        "/usr/local/sbin",
        "/usr/local/bin",
        "/usr/sbin",
        "/usr/bin",
        "/sbin",
        "/bin",
    ] {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = e.file_name();
            if name != "tc" && !bin.join(&name).exists() {
                let _ = std::os::unix::fs::symlink(e.path(), bin.join(&name));
            }
        }
    }
    let e = c.state.join("p.toml");
    std::fs::write(&e, "name = \"p\"\n[matrix]\nmodes = [\"bridge\"]\nmessages = [\"8K\"]\n[point]\nduration = 0.3\nwarmup = 0.1\n").unwrap();
    let db = c.state.join("r.sqlite");
    let o = c
        .cmd(&[
            "run",
            e.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
            "--out",
            c.state.join("o").to_str().unwrap(),
        ])
        .env("PATH", &bin)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains("1 of 1 points failed") && err.contains("exit 3"),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("FAILED"));
    assert_eq!(before, host_snapshot());
}

/// A store vnetlab cannot write, a damaged one and an empty file are each said for what they are.
#[test]
fn stores_that_cannot_be_written_are_said_for_what_they_are() {
    let c = ctx("stores");
    let before = host_snapshot();
    let exp = c.state.join("one.toml");
    std::fs::write(&exp, "name = \"one\"\n[matrix]\nmodes = [\"native\"]\nmessages = [\"8K\"]\n[point]\nduration = 0.3\nwarmup = 0.1\n").unwrap();
    let good = c.state.join("good.sqlite");
    c.ok(&[
        "run",
        exp.to_str().unwrap(),
        "--db",
        good.to_str().unwrap(),
        "--out",
        c.state.join("o").to_str().unwrap(),
    ]);
    // On a read-only mount.
    let ro = c.state.join("ro");
    std::fs::create_dir(&ro).unwrap();
    assert!(Command::new("mount")
        .args(["-t", "tmpfs", "tmpfs"])
        .arg(&ro)
        .status()
        .unwrap()
        .success());
    std::fs::copy(&good, ro.join("s.sqlite")).unwrap();
    assert!(Command::new("mount")
        .args(["-o", "remount,ro"])
        .arg(&ro)
        .status()
        .unwrap()
        .success());
    let o = c.run(&["migrate", "--db", ro.join("s.sqlite").to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    let runs_ro = c.run(&["runs", "--db", ro.join("s.sqlite").to_str().unwrap()]);
    let _ = Command::new("umount").arg(&ro).status();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot write") && err.contains("read-only"),
        "{err}"
    );
    assert!(runs_ro.status.success(), "a reader reads a read-only store");
    // Truncated: damaged, not "not a vnetlab database".
    let bytes = std::fs::read(&good).unwrap();
    let cut = c.state.join("cut.sqlite");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let o = c.run(&["migrate", "--db", cut.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("is damaged"), "{err}");
    // An empty file: refused for writing unless --create, and says it holds no store to readers.
    let empty = c.state.join("empty.sqlite");
    std::fs::write(&empty, b"").unwrap();
    let o = c.run(&["migrate", "--db", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--create"));
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);
    c.ok(&["migrate", "--db", empty.to_str().unwrap(), "--create"]);
    // Readers leave nothing beside a store they read.
    for args in [vec!["runs"], vec!["report", "latest"]] {
        let mut a = args.clone();
        a.extend(["--db", good.to_str().unwrap()]);
        c.ok(&a);
    }
    for s in ["-wal", "-shm"] {
        assert!(
            !PathBuf::from(format!("{}{s}", good.display())).exists(),
            "{s} left by a reader"
        );
    }
    assert_eq!(before, host_snapshot());
}

#[test]
fn two_ups_of_one_name_at_once_refuse_the_loser_as_input() {
    let c = ctx("race");
    let before = host_snapshot();
    let spawn = || {
        c.cmd(&["up", "--name", "trace"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let (oa, ob) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let mut codes = [oa.status.code(), ob.status.code()];
    codes.sort();
    assert_eq!(
        codes,
        [Some(0), Some(2)],
        "{} / {}",
        String::from_utf8_lossy(&oa.stderr),
        String::from_utf8_lossy(&ob.stderr)
    );
    c.ok(&["down", "trace"]);
    assert_eq!(before, host_snapshot());
}

/// Ctrl-C during `reproduce` stops it as it stops `run`: exit 130, one line, the run marked
/// interrupted, no verdict computed; `--from-runs` names the interrupted run and passes it over.
#[test]
fn an_interrupted_reproduce_computes_no_verdict() {
    let c = ctx("reproint");
    let before = host_snapshot();
    let db = c.state.join("r.sqlite");
    let out = c.state.join("pages");
    let mut cmd = c.cmd(&[
        "reproduce",
        "xen-lro",
        "--quick",
        "--db",
        db.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the run has begun (it holds the machine, its store exists), Ctrl-C the group a few
    // points in.
    assert!(
        measuring(&mut child, 3600),
        "reproduce ended before it began"
    );
    assert!(wait_until(60, || db.exists()));
    std::thread::sleep(Duration::from_secs(5));
    signal(-(child.id() as i32), 2);
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(
        err.lines()
            .filter(|l| l.starts_with("vnetlab: interrupted"))
            .count()
            == 1,
        "{err}"
    );
    assert!(
        !out.join("xen-lro.html").exists(),
        "a page was written from an interrupted run"
    );
    let o = c.run(&[
        "reproduce",
        "xen-lro",
        "--quick",
        "--from-runs",
        "--db",
        db.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("passed over the newest run") && err.contains("interrupted"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["papers"][0]["claims"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["verdict"] == "not measurable"));
    assert_eq!(before, host_snapshot());
}
