//! Integration tests of robustness (root): Ctrl-C at any moment leaves nothing behind, cleanup
//! leaves live labs alone, concurrent runs share a store, planted journals are refused, `serve`
//! distrusts its port, outputs are checked before work starts, readers never write.

mod common;
use common::*;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}

const TWO_LABS: &str = "name = \"two\"\n[matrix]\nmodes = [\"bridge\", \"macvlan\"]\nmessages = [\"1K\", \"8K\", \"64K\"]\n[point]\nduration = 0.6\nwarmup = 0.2\n";

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// `vnetlab run` as a terminal would start it: the leader of its own process group, so a signal
/// to the group reaches it and everything it did not move out of the group.
fn run_in_group(c: &Ctx, exp: &Path, db: &Path) -> Child {
    let mut cmd = c.cmd(&[
        "run",
        exp.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
        "--out",
        c.state.join("o").to_str().unwrap(),
    ]);
    cmd.process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.spawn().unwrap()
}

fn points_in(db: &Path) -> usize {
    let o = std::process::Command::new(BIN)
        .args(["report", "latest", "--db", db.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    serde_json::from_slice::<serde_json::Value>(&o.stdout)
        .ok()
        .and_then(|v| v["points"].as_array().map(|a| a.len()))
        .unwrap_or(0)
}

fn lab_journals(state: &Path) -> usize {
    std::fs::read_dir(state)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".journal"))
        .count()
}

/// Ctrl-C (SIGINT to the whole process group) while a lab is being built, while a point runs and
/// between points: the run ends in one line, marked interrupted with its finished points, and
/// the host is as before, without `cleanup`.
#[test]
fn ctrl_c_to_the_process_group_at_any_moment_leaves_nothing() {
    let c = ctx("ctrlc");
    let before = host_snapshot();
    let exp = write(&c.state, "two.toml", TWO_LABS);
    for (k, moment) in ["building", "in a point", "between labs"]
        .iter()
        .enumerate()
    {
        let db = c.state.join(format!("c{k}.sqlite"));
        let child = run_in_group(&c, &exp, &db);
        let pid = child.id() as i32;
        let t0 = Instant::now();
        match *moment {
            // The first lab's journal appears: its build is under way.
            "building" => {
                while lab_journals(&c.state) == 0 && t0.elapsed() < Duration::from_secs(20) {
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
            "in a point" => {
                while points_in(&db) < 1 && t0.elapsed() < Duration::from_secs(30) {
                    std::thread::sleep(Duration::from_millis(50));
                }
                std::thread::sleep(Duration::from_millis(300));
            }
            _ => {
                while points_in(&db) < 3 && t0.elapsed() < Duration::from_secs(40) {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
        // SAFETY: kill takes plain integers (a pid this test started, and a signal) and touches no memory.
        unsafe { kill(-pid, 2) };
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        let last = err.lines().last().unwrap_or_default();
        assert_eq!(o.status.code(), Some(130), "{moment}: {err}");
        assert!(last.contains("interrupted"), "{moment}: {err}");
        assert_eq!(lab_journals(&c.state), 0, "{moment}: a journal is left");
        assert_eq!(before, host_snapshot(), "{moment}: the host changed");
        let r = c.json(&["report", "latest", "--db", db.to_str().unwrap(), "--json"]);
        assert_eq!(r["run"]["status"], "interrupted", "{moment}");
    }
}

/// A closed output (`vnetlab run … 2>&1 | head`) stops the run cleanly, too.
#[test]
fn a_closed_output_stops_the_run_cleanly() {
    let c = ctx("epipe");
    let before = host_snapshot();
    let exp = write(&c.state, "two.toml", TWO_LABS);
    let db = c.state.join("p.sqlite");
    let mut child = c
        .cmd(&[
            "run",
            exp.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
            "--out",
            c.state.join("o").to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read two lines of its progress, then go away as `head -2` would.
    let mut err = child.stderr.take().unwrap();
    let mut seen = Vec::new();
    let mut b = [0u8; 1];
    while seen.iter().filter(|&&x| x == b'\n').count() < 2 && err.read(&mut b).unwrap_or(0) == 1 {
        seen.push(b[0]);
    }
    drop(err);
    drop(child.stdout.take());
    let st = child.wait().unwrap();
    assert_eq!(
        st.code(),
        Some(141),
        "a closed output ends quietly with 141"
    );
    assert_eq!(lab_journals(&c.state), 0);
    assert_eq!(before, host_snapshot());
    assert_eq!(
        c.json(&["report", "latest", "--db", db.to_str().unwrap(), "--json"])["run"]["status"],
        "interrupted"
    );
}

/// `cleanup` removes only what nobody uses: a running run's lab and an `up` lab stay, the run's
/// lab goes once its process is killed, and `--force` names a lab to remove anyway. Two runs at
/// once on one new store both complete, in labs of their own.
#[test]
fn cleanup_leaves_live_labs_and_concurrent_runs_share_a_store() {
    let c = ctx("owners");
    let before = host_snapshot();
    let exp = write(&c.state, "two.toml", TWO_LABS);
    let db = c.state.join("shared.sqlite");
    let a = run_in_group(&c, &exp, &db);
    let b = run_in_group(&c, &exp, &db);
    c.ok(&["up", "--name", "keep"]);
    let t0 = Instant::now();
    while lab_journals(&c.state) < 3 && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = c.run(&["cleanup"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("left lab keep"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Every lab at this moment is live (two runs' and keep): cleanup removed none of them. (A
    // count of journals would race with the runs moving from one lab to the next, or ending.)
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        !said.contains("removed lab"),
        "cleanup removed a live lab: {said}"
    );
    for child in [a, b] {
        let o = child.wait_with_output().unwrap();
        assert!(
            o.status.success(),
            "a concurrent run failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let doc = c.json(&["runs", "--db", db.to_str().unwrap(), "--json"]);
    assert_eq!(doc["version"], 1, "{doc}");
    let runs = &doc["runs"];
    assert_eq!(runs.as_array().unwrap().len(), 2);
    assert!(runs
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["status"] == "complete" && r["points"] == 6));
    // A run killed outright leaves its lab; cleanup then removes it, and still not `keep`.
    let mut k = run_in_group(&c, &exp, &db);
    let t0 = Instant::now();
    while lab_journals(&c.state) < 2 && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    k.kill().unwrap();
    let _ = k.wait();
    c.ok(&["cleanup"]);
    assert_eq!(lab_journals(&c.state), 1, "only keep is left");
    c.ok(&["cleanup", "--force", "keep"]);
    assert_eq!(before, host_snapshot());
}

/// A journal naming objects that are not the lab's is reported and not acted on.
#[test]
fn a_planted_journal_is_refused() {
    let c = ctx("planted");
    let before = host_snapshot();
    let j = c.state.join("evil.journal");
    std::fs::write(
        &j,
        "{\"kind\":\"netns\",\"name\":\"vlevil-host\"}\n{\"kind\":\"cgroup\",\"path\":\"/sys/fs/cgroup/cpuacct/system.slice\",\"shared\":false}\n",
    )
    .unwrap();
    let o = c.run(&["cleanup"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("not one of lab evil's objects"),
        "{err}"
    );
    assert!(j.exists(), "the journal is left for a person to look at");
    let o = c.run(&["down", "evil"]);
    assert!(!o.status.success());
    std::fs::write(&j, "{\"kind\":\"netns\",\"name\":\"vlevil-../../x\"}\n").unwrap();
    assert!(!c.run(&["cleanup"]).status.success());
    std::fs::remove_file(&j).unwrap();
    assert_eq!(before, host_snapshot());
}

/// `up a; up b; down a; down b` leaves no shared cgroup folder behind.
#[test]
fn the_shared_cgroup_folder_goes_with_the_last_lab() {
    let c = ctx("shared");
    let before = host_snapshot();
    c.ok(&["up", "--name", "sha"]);
    c.ok(&["up", "--name", "shb"]);
    c.ok(&["down", "sha"]);
    c.ok(&["down", "shb"]);
    assert_eq!(before, host_snapshot());
}

fn rss_kb(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// `serve` shows nothing to a connection without the token, bounds every line, the number of
/// sessions and every size, and `--once` waits for an authenticated session.
#[test]
fn serve_distrusts_its_control_port() {
    let o = std::process::Command::new(BIN)
        .args(["serve", "--token", ""])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let port = 15299;
    let mut srv = std::process::Command::new(BIN)
        .args([
            "serve",
            "--port",
            &port.to_string(),
            "--token",
            "s3cret-token-0123",
            "--once",
        ])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addr = format!("127.0.0.1:{port}");
    let t0 = Instant::now();
    while std::net::TcpStream::connect(&addr).is_err() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    // A stranger with a wrong token is refused and does not end `--once`.
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.write_all(b"{\"op\":\"hello\",\"token\":\"guess\"}\n")
        .unwrap();
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    assert!(reply.contains("wrong token"), "{reply}");
    assert!(
        srv.try_wait().unwrap().is_none(),
        "--once ended after a stranger"
    );
    // A serving `serve`: 64 MB without a newline before the token is refused without growing
    // the server, and 200 idle connections hold a bounded number of threads.
    let mut many = std::process::Command::new(BIN)
        .args(["serve", "--port", "15298", "--token", "s3cret-token-0123"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let maddr = "127.0.0.1:15298";
    let t0 = Instant::now();
    while std::net::TcpStream::connect(maddr).is_err() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let rss0 = rss_kb(many.id());
    let mut big = std::net::TcpStream::connect(maddr).unwrap();
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..64 {
        if big.write_all(&chunk).is_err() {
            break;
        }
    }
    drop(big);
    let idle: Vec<_> = (0..200)
        .filter_map(|_| std::net::TcpStream::connect(maddr).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let (th, rss) = (threads(many.id()), rss_kb(many.id()));
    drop(idle);
    many.kill().unwrap();
    let _ = many.wait();
    assert!(th <= 20, "{th} threads for 200 idle connections");
    assert!(
        rss < rss0 + 32 * 1024,
        "serve grew from {rss0} KB to {rss} KB"
    );
    // With the token: absurd sizes and rates are refused, one line each, and the server lives on.
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut r = std::io::BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    let mut say = |s: &mut std::net::TcpStream, req: &str| -> String {
        s.write_all(req.as_bytes()).unwrap();
        s.write_all(b"\n").unwrap();
        line.clear();
        std::io::BufRead::read_line(&mut r, &mut line).unwrap();
        line.clone()
    };
    assert!(say(&mut s, "{\"op\":\"hello\",\"token\":\"s3cret-token-0123\"}").contains("ok"));
    let base = serde_json::json!({"test": "TCP_RR", "msg": 1024, "req": 1, "resp": 1, "local_buf": null, "remote_buf": null,
        "duration": 1.0, "warmup": 0.0, "parallel": 1, "rate": null, "nodelay": false, "zerocopy": false, "interval": 1.0});
    for (field, value, says) in [
        ("msg", serde_json::json!(1u64 << 62), "-m and -r sizes"),
        ("req", serde_json::json!(1u64 << 40), "-m and -r sizes"),
        ("req", serde_json::json!(0), "-m and -r sizes"),
        ("rate", serde_json::json!(0), "--rate"),
    ] {
        let mut spec = base.clone();
        spec[field] = value;
        if field == "req" && spec["req"] == 0 {
            spec["resp"] = serde_json::json!(0);
        }
        let req = serde_json::json!({"op": "listen", "spec": spec, "bind": "127.0.0.1", "ports": null, "streams": 1, "first_id": 0});
        let reply = say(&mut s, &req.to_string());
        assert!(
            reply.contains("error") && reply.contains(says),
            "{field}: {reply}"
        );
    }
    let _ = say(&mut s, "{\"op\":\"quit\"}");
    let t0 = Instant::now();
    while srv.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        srv.try_wait().unwrap().and_then(|s| s.code()),
        Some(0),
        "--once ends after the authenticated session"
    );
}

/// Outputs are checked before any work; huge or endless inputs are refused before they are read
/// whole; readers of the store never write it (and work for an unprivileged user).
#[test]
fn inputs_outputs_and_the_store_are_checked_first() {
    let c = ctx("inputs");
    let before = host_snapshot();
    let exp = write(&c.state, "one.toml", "name = \"one\"\n[matrix]\nmodes = [\"bridge\"]\nmessages = [\"8K\"]\n[point]\nduration = 0.3\nwarmup = 0.1\n");
    let db = c.state.join("r.sqlite");
    let (es, dbs) = (exp.to_str().unwrap(), db.to_str().unwrap());
    let t0 = Instant::now();
    for (args, says) in [
        (
            vec!["run", es, "--db", dbs, "--out", "/dev/null"],
            "not a file",
        ),
        (
            vec!["run", es, "--db", dbs, "--out", "/nonexistent/out"],
            "parent must exist",
        ),
        (vec!["run", "/dev/zero", "--db", dbs], "not a regular file"),
        (vec!["run", es, "--db", "/tmp"], "is a folder"),
    ] {
        c.refused(&args, says);
    }
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "refused before running anything"
    );
    let big = write(&c.state, "big.toml", &format!(
        "name = \"big\"\n[matrix]\nmodes = [\"bridge\"]\nmessages = [{}]\nsocket_buffers = [{}]\nloads = [{}]\nmtu = [{}]\n",
        (1..=100).map(|i| format!("\"{i}K\"")).collect::<Vec<_>>().join(","),
        (1..=100).map(|i| format!("\"{}K\"", 64 + i)).collect::<Vec<_>>().join(","),
        (1..=100).map(|i| format!("\"{}mbit\"", 10 + i)).collect::<Vec<_>>().join(","),
        (0..100).map(|i| (1500 + i).to_string()).collect::<Vec<_>>().join(","),
    ));
    let o = c.run(&["run", big.to_str().unwrap(), "--db", dbs, "--list"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("100000000 points"));
    c.ok(&[
        "run",
        es,
        "--db",
        dbs,
        "--out",
        c.state.join("o").to_str().unwrap(),
    ]);
    let o = c.run(&[
        "report",
        "latest",
        "--db",
        dbs,
        "--html",
        "/nonexistent/x.html",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        !Path::new("/nonexistent").exists(),
        "a folder nobody asked for was made"
    );
    // Reading never writes: the file is unchanged after every reader.
    let sum = |p: &Path| std::fs::read(p).unwrap();
    let (s0, w0) = (
        sum(&db),
        std::fs::read(c.state.join("r.sqlite-wal")).unwrap_or_default(),
    );
    for args in [
        vec!["runs", "--db", dbs],
        vec!["report", "1", "--db", dbs, "--json"],
        vec!["export", "1", "--csv", "--db", dbs],
        vec!["compare", "1", "1", "--db", dbs],
    ] {
        c.ok(&args);
    }
    assert_eq!(sum(&db), s0);
    assert_eq!(
        std::fs::read(c.state.join("r.sqlite-wal")).unwrap_or_default(),
        w0
    );
    // An unprivileged user reads a world-readable store in a folder it cannot write.
    let o = std::process::Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            BIN,
            "runs",
            "--db",
            dbs,
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("one"));
    assert_eq!(before, host_snapshot());
}

/// A bench's bad flag is refused at once (exit 2), even while another measurement holds the
/// machine; a good one meets the lock (exit 6 when told not to wait).
#[test]
fn a_bench_checks_its_flags_before_it_waits_for_the_machine() {
    let c = ctx("benchlock");
    let mut holder = c
        .cmd(&["meter", "--machine", "-l", "60"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        measuring(&mut holder, 3600),
        "the holder ended before it held the machine"
    );
    let now = |args: &[&str]| {
        let o = c.cmd(args).env("VNETLAB_LOCK_WAIT", "0").output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    for (args, says) in [
        (&["bench", "meter", "--seconds", "0"][..], "--seconds"),
        (
            &["bench", "engine", "--paths", "nowhere"][..],
            "unknown path",
        ),
        (&["bench", "store", "--points", "0"][..], "--points"),
        (&["bench", "labs", "--modes", "nosuch"][..], "unknown mode"),
    ] {
        let (code, err) = now(args);
        assert!(
            code == Some(2) && err.contains(says) && one_line(&err),
            "{args:?}: {code:?} {err}"
        );
    }
    let (code, err) = now(&["bench", "store", "--points", "10"]);
    assert!(
        code == Some(6) && err.contains("holds this machine"),
        "{code:?} {err}"
    );
    signal(holder.id() as i32, 2);
    let _ = holder.wait();
}
