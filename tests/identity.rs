//! Integration tests of identity (root): vnetlab acts only on what it provably made. Objects of
//! the tester's — a veth named in a planted journal, a cgroup folder and a namespace that take a
//! lab's names first, a namespace and a file a planted record points at — survive every command
//! byte for byte; an uplink comes back whole (addresses with their flags, routes of every table,
//! root and ingress qdiscs, offloads, rings) after `down`, after a hundred SIGKILLs of `up` at
//! random moments and `cleanup`, and a lab whose uplink vanished is still removed; a FIFO where
//! a journal should be hangs nothing; output paths into the machine are refused; one `serve`
//! keeps all its sessions within one memory budget.

mod common;
use common::*;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn run(args: &[&str]) {
    must(args)
}

/// A veth pair the test owns: `root` in this machine's namespace, its peer in namespace `ns` (the
/// "client machine"); both removed when dropped.
struct Pair {
    ns: String,
    root: String,
    _machine: Machine,
}

impl Pair {
    fn new(tag: &str) -> Pair {
        let (ns, root, far) = (
            format!("tid{tag}"),
            format!("tid{tag}0"),
            format!("tid{tag}1"),
        );
        let machine = Machine::new(&ns, &root, &far, "10.213.0.2/16");
        Pair {
            ns,
            root,
            _machine: machine,
        }
    }

    /// Settings of every kind a lab or a move between namespaces changes or loses: MTU, queue
    /// length, an IPv4 address with a label, an IPv6 address with nodad, a static route in the
    /// main table and one in table 100, a root pfifo and an ingress qdisc with their handles, an
    /// offload turned off. Given while the link is down, then up (the order `down` restores in).
    fn dress(&self) {
        let u = self.root.as_str();
        run(&["ip", "link", "set", u, "mtu", "1400", "txqueuelen", "700"]);
        run(&[
            "ip",
            "addr",
            "add",
            "192.0.2.7/24",
            "dev",
            u,
            "label",
            &format!("{u}:a"),
        ]);
        run(&[
            "ip",
            "-6",
            "addr",
            "add",
            "fd00:ab::7/64",
            "dev",
            u,
            "nodad",
        ]);
        run(&["ethtool", "-K", u, "gro", "off"]);
        run(&[
            "tc", "qdisc", "replace", "dev", u, "root", "handle", "8001:", "pfifo", "limit", "77",
        ]);
        run(&["tc", "qdisc", "add", "dev", u, "handle", "ffff:", "ingress"]);
        run(&["ip", "link", "set", u, "up"]);
        run(&[
            "ip",
            "route",
            "add",
            "198.51.100.0/24",
            "via",
            "192.0.2.1",
            "dev",
            u,
        ]);
        run(&[
            "ip",
            "route",
            "add",
            "203.0.113.0/24",
            "dev",
            u,
            "table",
            "100",
        ]);
        // What a move between namespaces resets or drops: per-device sysctls, a permanent
        // neighbour, an address with a lifetime.
        for (k, v) in [
            ("ipv4.conf.{u}.rp_filter", "2"),
            ("ipv4.conf.{u}.arp_ignore", "1"),
            ("ipv4.conf.{u}.forwarding", "1"),
            ("ipv6.conf.{u}.accept_ra", "2"),
        ] {
            run(&["sysctl", "-qw", &format!("net.{}={v}", k.replace("{u}", u))]);
        }
        run(&[
            "ip",
            "neigh",
            "replace",
            "192.0.2.99",
            "lladdr",
            "02:00:00:00:00:99",
            "nud",
            "permanent",
            "dev",
            u,
        ]);
        run(&[
            "ip",
            "addr",
            "add",
            "192.0.2.8/24",
            "dev",
            u,
            "valid_lft",
            "3600",
            "preferred_lft",
            "1800",
        ]);
    }

    /// Everything `ip -d link`, `ip addr`, `ip route` (every table), `tc qdisc` and
    /// `ethtool -k`/`-g` show of the interface.
    fn state(&self) -> String {
        let u = &self.root;
        // An address is `tentative` while the kernel's duplicate detection runs again after the
        // link changed; on a busy host that can outlast the cleanup. Let it finish.
        let dad = format!("ip addr show {u} | grep -w tentative");
        wait_until(30, || sh(&dad).is_empty());
        [
            format!("ip -d link show {u}"),
            format!("ip addr show {u}"),
            format!("ip -4 route show table all dev {u}"),
            format!("ip -6 route show table all dev {u}"),
            format!("tc qdisc show dev {u}"),
            format!("ethtool -k {u}"),
            format!("ethtool -g {u} 2>&1"),
            format!("sysctl -a 2>/dev/null | grep -E 'conf\\.{u}\\.' | sort"),
            format!("ip neigh show dev {u} nud permanent"),
        ]
        .iter()
        // Lifetimes count down: whether one is there is the state, not how much is left.
        .map(|c| format!("## {c}\n{}", lifetimes(&sh(c))))
        .collect()
    }
}

/// `valid_lft 3599sec` and `preferred_lft 1799sec` as `valid_lft Nsec`.
fn lifetimes(s: &str) -> String {
    s.split_inclusive(char::is_whitespace)
        .map(|w| {
            let word = w.trim_end();
            match word.strip_suffix("sec") {
                Some(n) if n.parse::<u64>().is_ok() => format!("Nsec{}", &w[word.len()..]),
                _ => w.to_string(),
            }
        })
        .collect()
}

fn up_uplink<'a>(lab: &'a str, uplink: &'a str) -> Vec<&'a str> {
    vec![
        "up",
        "--name",
        lab,
        "--mode",
        "bridge",
        "--guests",
        "1",
        "--uplink",
        uplink,
        "--client",
        "10.213.0.2",
    ]
}

/// A journal line for an uplink of the given identity.
fn uplink_line(name: &str, ns: &str, ifindex: u32, mac: &str) -> String {
    format!(
        "{{\"kind\":\"uplink\",\"name\":\"{name}\",\"netns\":\"{ns}\",\"before\":{{\"ifindex\":{ifindex},\"mac\":\"{mac}\",\"mtu\":1280,\"up\":false,\"txqlen\":1,\"addrs\":[[\"203.0.113.9/32\"]],\"routes\":[],\"qdiscs\":[],\"features\":{{\"tso\":false}},\"rings\":{{}},\"masks\":{{}}}}}}"
    )
}

#[test]
fn a_planted_uplink_entry_touches_no_interface_the_lab_did_not_take() {
    let c = ctx("idplant");
    let before = host_snapshot();
    let p = Pair::new("p");
    p.dress();
    let state0 = p.state();
    // The tester's veth, named in journals of labs that never took it: with a made-up identity,
    // and with the move said done (the entry any crash of `up` could have left).
    let lines = [
        uplink_line(&p.root, "vlqa-host", 4242, "02:00:00:00:42:42"),
        "{\"kind\":\"uplink_moved\",\"name\":\"".to_string() + &p.root + "\"}",
    ];
    std::fs::write(c.state.join("qa.journal"), lines.join("\n") + "\n").unwrap();
    std::fs::write(
        c.state.join("qb.journal"),
        uplink_line(&p.root, "vlqb-host", 4242, "02:00:00:00:42:42") + "\n",
    )
    .unwrap();
    // A journal that takes an uplink must record the state folder it was started in: these,
    // written by hand, are refused whole, the interface they name untouched.
    let o = c.run(&["cleanup"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("takes an uplink but records no state folder"),
        "{err}"
    );
    assert_eq!(state0, p.state(), "the tester's veth was touched");
    // With the folder recorded (a journal this folder could have written), the identity still
    // decides: an interface of that name is here but not the uplink the lab took: said, left.
    let folder = sh(&format!(
        "stat -c '{{\"dev\":%d,\"ino\":%i}}' {}",
        c.state.display()
    ));
    let owner = format!(
        "{{\"kind\":\"owner\",\"pid\":4194000,\"start\":null,\"kept\":true,\"folder\":{}}}",
        folder.trim()
    );
    std::fs::write(
        c.state.join("qa.journal"),
        [owner.clone(), lines[0].clone(), lines[1].clone()].join("\n") + "\n",
    )
    .unwrap();
    std::fs::remove_file(c.state.join("qb.journal")).unwrap();
    let plan = c.ok(&["cleanup", "--dry-run"]);
    assert!(plan.contains("if there with 02:00:00:00:42:42"), "{plan}");
    let o = c.run(&["cleanup"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("not the uplink the lab took"), "{err}");
    assert_eq!(state0, p.state(), "the tester's veth was touched");
    drop(p);
    assert_eq!(before, host_snapshot());
}

#[test]
fn a_rollback_removes_nothing_it_did_not_make() {
    let c = ctx("idroll");
    let before = host_snapshot();
    // A cgroup folder with the lab's name, made beforehand, with a process in it.
    let acct = Path::new("/sys/fs/cgroup/cpuacct");
    let shared = acct.join("vnetlab");
    let made_shared = !shared.exists();
    if made_shared {
        std::fs::create_dir(&shared).unwrap();
    }
    let theirs = shared.join("vlrq");
    std::fs::create_dir(&theirs).unwrap();
    let mut sleeper = Command::new("sleep").arg("600").spawn().unwrap();
    std::fs::write(theirs.join("cgroup.procs"), sleeper.id().to_string()).unwrap();
    let o = c.run(&["up", "--name", "rq", "--guests", "1"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("exists and is not this lab's"), "{err}");
    assert!(theirs.is_dir(), "their folder was removed");
    assert!(
        sleeper.try_wait().unwrap().is_none(),
        "their process was killed"
    );
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    while std::fs::remove_dir(&theirs).is_err() {
        std::thread::sleep(Duration::from_millis(10));
    }
    if made_shared {
        let _ = std::fs::remove_dir(&shared);
    }
    // A namespace with a guest's name, made by another program while `up` runs: whoever makes
    // it first keeps it; vnetlab never removes the other program's (three tries).
    for k in 0..3 {
        let child = c
            .cmd(&["up", "--name", "rr", "--guests", "2"])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(4 + 2 * k));
        let theirs_made = Command::new("ip")
            .args(["netns", "add", "vlrr-g1"])
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success();
        let out = child.wait_with_output().unwrap();
        let ours = out.status.success();
        assert!(
            !(ours && theirs_made),
            "both made vlrr-g1: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if ours {
            c.ok(&["down", "rr"]);
        }
        let exists = Path::new("/run/netns/vlrr-g1").exists();
        assert_eq!(
            exists, theirs_made,
            "try {k}: the other program's namespace went"
        );
        if theirs_made {
            run(&["ip", "netns", "del", "vlrr-g1"]);
        }
    }
    assert_eq!(before, host_snapshot());
}

#[test]
fn a_planted_record_is_trusted_no_more_than_a_journal() {
    let c = ctx("idrecord");
    let before = host_snapshot();
    c.ok(&["up", "--name", "rs", "--guests", "1"]);
    // The record is edited to aim g1 at a namespace and a cgroup folder of the tester's, the
    // folder's cgroup.procs a symlink to an unrelated file.
    run(&["ip", "netns", "add", "tidrs"]);
    let decoy = c.state.join("decoy.txt");
    std::fs::write(&decoy, "untouched\n").unwrap();
    let folder = c.state.join("cg");
    std::fs::create_dir(&folder).unwrap();
    std::os::unix::fs::symlink(&decoy, folder.join("cgroup.procs")).unwrap();
    let rec_path = c.state.join("rs.json");
    let rec = std::fs::read_to_string(&rec_path).unwrap();
    let planted = rec.replacen("\"netns\": \"vlrs-g1\"", "\"netns\": \"tidrs\"", 1);
    assert_ne!(planted, rec);
    std::fs::write(&rec_path, &planted).unwrap();
    for args in [
        vec!["exec", "--lab", "rs", "g1", "--", "true"],
        vec![
            "test", "--lab", "rs", "--from", "g1", "--to", "client", "-l", "1",
        ],
    ] {
        let o = c.run(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} acted: {err}");
        assert!(err.contains("does not record as made"), "{args:?}: {err}");
    }
    // The same with only the folder swapped.
    let cg = rec
        .lines()
        .find(|l| l.contains("/vlrs/g1\""))
        .unwrap()
        .trim()
        .trim_end_matches(',')
        .to_string();
    let planted = rec.replacen(&cg, &format!("\"{}\"", folder.display()), 1);
    std::fs::write(&rec_path, &planted).unwrap();
    let o = c.run(&["exec", "--lab", "rs", "g1", "--", "true"]);
    assert!(!o.status.success());
    assert_eq!(std::fs::read_to_string(&decoy).unwrap(), "untouched\n");
    // A state folder others can write: exec and test refuse as down does.
    std::fs::write(&rec_path, &rec).unwrap();
    c.ok(&["exec", "--lab", "rs", "g1", "--", "true"]);
    let mode = |m: u32| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&c.state, std::fs::Permissions::from_mode(m)).unwrap();
    };
    mode(0o777);
    for args in [
        vec!["exec", "--lab", "rs", "g1", "--", "true"],
        vec![
            "test", "--lab", "rs", "--from", "g1", "--to", "client", "-l", "1",
        ],
    ] {
        c.refused(&args, "writable by others");
    }
    mode(0o755);
    c.ok(&["down", "rs"]);
    assert!(
        Path::new("/run/netns/tidrs").exists(),
        "the tester's namespace went"
    );
    run(&["ip", "netns", "del", "tidrs"]);
    assert_eq!(before, host_snapshot());
}

#[test]
fn an_uplink_comes_back_whole_and_a_vanished_one_does_not_keep_its_lab() {
    let c = ctx("idwhole");
    let before = host_snapshot();
    let p = Pair::new("w");
    p.dress();
    let state0 = p.state();
    c.ok(&up_uplink("uw", &p.root));
    c.ok(&["down", "uw"]);
    assert_eq!(state0, p.state(), "the uplink came back changed");
    // Its peer's namespace goes mid-lab: the veth goes with it; down says so and still removes
    // the lab (exit 3), and nothing is left to clean up.
    c.ok(&up_uplink("uw", &p.root));
    run(&["ip", "netns", "del", &p.ns]);
    let o = c.run(&["down", "uw"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("nothing to give back"), "{err}");
    assert!(!c.state.join("uw.journal").exists());
    assert!(c.run(&["cleanup"]).status.success());
    drop(p);
    // A bridge cannot leave this namespace: refused before anything is made, its state intact.
    run(&["ip", "link", "add", "tidbr0", "type", "bridge"]);
    run(&["ip", "addr", "add", "192.0.2.9/24", "dev", "tidbr0"]);
    run(&["ip", "link", "set", "tidbr0", "up"]);
    run(&[
        "ip",
        "route",
        "add",
        "198.51.100.0/24",
        "via",
        "192.0.2.1",
        "dev",
        "tidbr0",
    ]);
    let br = || sh("ip addr show tidbr0; ip route show dev tidbr0");
    let br0 = br();
    c.refused(
        &up_uplink("uw", "tidbr0"),
        "cannot leave this machine's namespace",
    );
    assert_eq!(br0, br());
    run(&["ip", "link", "del", "tidbr0"]);
    // An interface with a tc filter on its ingress: refused before anything changes, naming what
    // a lab would lose (the qdisc comes back, its filters would not).
    let p = Pair::new("f");
    run(&["tc", "qdisc", "add", "dev", &p.root, "ingress"]);
    run(&[
        "tc", "filter", "add", "dev", &p.root, "ingress", "protocol", "all", "u32", "match", "u32",
        "0", "0", "classid", "1:1",
    ]);
    let state0 = p.state();
    c.refused(&up_uplink("uw", &p.root), "tc filter(s) at its ingress");
    assert_eq!(state0, p.state());
    drop(p);
    assert_eq!(before, host_snapshot());
}

#[test]
fn a_hundred_sigkills_of_up_leave_the_uplink_whole_after_cleanup() {
    let c = ctx("idkill");
    let before = host_snapshot();
    let p = Pair::new("k");
    p.dress();
    let state0 = p.state();
    let mut seed = 0x9e37_79b9_u64;
    let mut rnd = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    // How long a whole `up` takes here, so the kills land all through it.
    let t0 = Instant::now();
    c.ok(&up_uplink("uk", &p.root));
    let whole = t0.elapsed().as_millis() as u64;
    c.ok(&["down", "uk"]);
    for k in 0..100 {
        let mut child = c
            .cmd(&up_uplink("uk", &p.root))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(rnd(whole + 20)));
        let _ = child.kill();
        let _ = child.wait();
        let o = c.run(&["cleanup", "--force", "uk"]);
        assert!(
            o.status.success() || !c.state.join("uk.journal").exists(),
            "kill {k}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let _ = c.run(&["cleanup"]);
        assert_eq!(state0, p.state(), "kill {k}: the uplink came back changed");
    }
    drop(p);
    assert_eq!(before, host_snapshot());
}

#[test]
fn a_fifo_journal_hangs_nothing_and_output_paths_into_the_machine_are_refused() {
    let c = ctx("idfifo");
    let before = host_snapshot();
    let fifo = c.state.join("ff.journal");
    run(&["mkfifo", fifo.to_str().unwrap()]);
    for args in [
        vec!["cleanup"],
        vec!["down", "ff"],
        vec!["down", "ff", "--dry-run"],
        vec!["status"],
    ] {
        let mut child = c.cmd(&args).stderr(Stdio::piped()).spawn().unwrap();
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "{args:?} hangs on a FIFO journal"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        if args[0] != "status" {
            assert!(!status.success(), "{args:?}: {err}");
        }
    }
    std::fs::remove_file(&fifo).unwrap();
    // Output paths into /proc, /sys or a device write into the machine, not a file.
    let host0 = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let db = c.state.join("o.sqlite");
    let dbs = db.to_str().unwrap();
    let exp = c.state.join("e.toml");
    std::fs::write(
        &exp,
        "name = \"e\"\n[matrix]\nmodes = [\"bridge\"]\n[point]\nduration = 0.5\nwarmup = 0.1\n",
    )
    .unwrap();
    c.ok(&[
        "run",
        exp.to_str().unwrap(),
        "--db",
        dbs,
        "--out",
        c.state.join("o").to_str().unwrap(),
    ]);
    c.refused(
        &[
            "report",
            "latest",
            "--db",
            dbs,
            "--html",
            "/proc/sys/kernel/hostname",
        ],
        "not a file",
    );
    for out in ["/sys/fs/cgroup", "/dev", "/proc"] {
        c.refused(
            &["run", exp.to_str().unwrap(), "--db", dbs, "--out", out],
            "--out",
        );
    }
    c.refused(
        &["export", "latest", "--csv", "--db", dbs, "-o", "/dev/null"],
        "not a file",
    );
    assert_eq!(
        host0,
        std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap()
    );
    let page = c.ok(&["report", "latest", "--db", dbs, "--html", "-"]);
    assert!(
        page.starts_with("<!DOCTYPE html>") || page.contains("<html"),
        "{}",
        &page[..page.len().min(200)]
    );
    assert_eq!(before, host_snapshot());
}

/// One raw control session to a serve: its hello, then each request line, returning each reply
/// once every session has sent its own (`all`), so their reservations are held at once.
fn raw_session(
    port: u16,
    token: &str,
    lines: &[String],
    all: &std::sync::Barrier,
) -> Vec<serde_json::Value> {
    use std::io::{BufRead, Write};
    let s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut w = s.try_clone().unwrap();
    let mut r = std::io::BufReader::new(s);
    let mut replies = Vec::new();
    let hello = serde_json::to_string(&vnetlab::engine::proto::Request::Hello {
        token: token.into(),
        nonce: None,
    })
    .unwrap();
    for l in std::iter::once(&hello).chain(lines) {
        w.write_all(l.as_bytes()).unwrap();
        w.write_all(b"\n").unwrap();
        let mut reply = String::new();
        if r.read_line(&mut reply).unwrap_or(0) == 0 {
            break;
        }
        replies.push(serde_json::from_str(&reply).unwrap_or(serde_json::Value::Null));
    }
    all.wait();
    replies
}

#[test]
fn one_serve_keeps_every_session_within_one_memory_budget() {
    // A memory cgroup of 1 GiB for the serve (cgroup v1's memory controller, or v2's).
    let v1 = Path::new("/sys/fs/cgroup/memory");
    let (cg, limit_file) = if v1.join("memory.limit_in_bytes").exists() {
        (v1.join("vltserve"), "memory.limit_in_bytes")
    } else {
        (
            Path::new("/sys/fs/cgroup/vltserve").to_path_buf(),
            "memory.max",
        )
    };
    let _ = std::fs::remove_dir(&cg);
    std::fs::create_dir(&cg).unwrap();
    std::fs::write(cg.join(limit_file), (1u64 << 30).to_string()).unwrap();
    let port = 15298;
    let token = "budget-token-0001";
    let mut srv = Served(
        Command::new(BIN)
            .args(["serve", "--port", &port.to_string(), "--token", token])
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
        cg.clone(),
    );
    std::fs::write(cg.join("cgroup.procs"), srv.0.id().to_string()).unwrap();
    let t0 = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err()
        && t0.elapsed() < Duration::from_secs(5)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    // The most a client can ask: sessions each preparing listens of the largest buffers
    // (64 MiB messages x 4 streams), then running them all.
    let listen = |id: u32| {
        let spec = vnetlab::engine::spec::Spec {
            msg: 64 << 20,
            parallel: 4,
            duration: 0.5,
            warmup: 0.0,
            ..Default::default()
        };
        serde_json::to_string(&vnetlab::engine::proto::Request::Listen {
            spec,
            bind: "127.0.0.1".parse().unwrap(),
            ports: None,
            streams: 4,
            first_id: id,
        })
        .unwrap()
    };
    let all = std::sync::Arc::new(std::sync::Barrier::new(8));
    let sessions: Vec<_> = (0..8)
        .map(|k| {
            let lines: Vec<String> = (0..4).map(|i| listen(k * 16 + i * 4)).collect();
            let all = all.clone();
            std::thread::spawn(move || raw_session(port, token, &lines, &all))
        })
        .collect();
    let replies: Vec<Vec<serde_json::Value>> =
        sessions.into_iter().map(|h| h.join().unwrap()).collect();
    let listening = replies
        .iter()
        .flatten()
        .filter(|r| r["reply"] == "listening")
        .count();
    let refused: Vec<&serde_json::Value> = replies
        .iter()
        .flatten()
        .filter(|r| r["reply"] == "error")
        .collect();
    // 512 MiB: two of the 32 requests of 256 MiB fit at once; the rest are refused, saying why.
    assert!(
        (1..=2).contains(&listening),
        "{listening} listening: {replies:?}"
    );
    assert!(refused.len() >= 30, "{refused:?}");
    assert!(
        refused
            .iter()
            .all(|r| r["error"].as_str().unwrap().contains("memory budget")),
        "{refused:?}"
    );
    // Eight clients at once each ask for the largest buffers a test may have (4 streams of
    // 64 MiB messages: 256 MiB at the serve): those within the budget run, the others are told
    // why, and the serve, in its 1 GiB, survives them all.
    let clients: Vec<_> = (0..8)
        .map(|_| {
            Command::new(BIN)
                .args([
                    "test",
                    "-H",
                    "127.0.0.1",
                    "-p",
                    &port.to_string(),
                    "--token",
                    token,
                    "-m",
                    "64M",
                    "-P",
                    "4",
                    "-l",
                    "1",
                    "--warmup",
                    "0.1",
                    "--json",
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<_> = clients
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let ran = outs.iter().filter(|o| o.status.success()).count();
    assert!(ran >= 1, "none ran");
    for o in outs.iter().filter(|o| !o.status.success()) {
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("memory budget"), "{err}");
    }
    assert!(srv.0.try_wait().unwrap().is_none(), "the serve died");
}

/// A serve the test started in a cgroup of its own: killed, and the cgroup removed, when dropped.
struct Served(std::process::Child, std::path::PathBuf);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        let t0 = Instant::now();
        while std::fs::remove_dir(&self.1).is_err() && t0.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
