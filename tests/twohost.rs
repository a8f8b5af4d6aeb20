//! Integration tests of two machines (root): the "client machine" is a network namespace the test
//! makes, running `vnetlab serve` (and a stock iperf3 server), joined to this one by a veth pair
//! whose root end the test names as the lab's uplink. An uplink lab reaches it, moves verified
//! bytes both ways, measures the client's CPU there, times VDI frames across the two clocks, runs
//! iperf3 as the far end, and gives the uplink back exactly after `down`, SIGKILL + `cleanup` and
//! Ctrl-C. A PostgreSQL store (Debian's, started by the test) holds two hosts' runs.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "two-machine-token";
const SERVE_PORT: u16 = 12866;

/// The second machine: a namespace with the far end of a veth pair, its address and a serve.
struct Peer {
    ns: String,
    uplink: String,
    serve: Option<Child>,
    iperf: Option<Child>,
    /// Dropped after the processes are stopped (fields drop after `Drop::drop`).
    _machine: Machine,
}

fn run(args: &[&str]) {
    must(args)
}

impl Peer {
    /// `tag` keeps the names apart between tests.
    fn new(tag: &str) -> Peer {
        let (ns, uplink, far) = (
            format!("tpeer{tag}"),
            format!("tup{tag}0"),
            format!("tup{tag}1"),
        );
        let machine = Machine::new(&ns, &uplink, &far, "10.213.0.2/16");
        Peer {
            ns,
            uplink,
            serve: None,
            iperf: None,
            _machine: machine,
        }
    }

    /// `vnetlab serve` on the client machine, allowed to reach the lab's subnet.
    fn serve(&mut self) {
        let c = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.ns,
                BIN,
                "serve",
                "--bind",
                "10.213.0.2",
                "--allow",
                "10.213.0.0/16",
                "--token",
                TOKEN,
            ])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.serve = Some(c);
        self.wait_port(SERVE_PORT);
    }

    fn iperf3(&mut self) {
        let c = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.ns,
                "iperf3",
                "-s",
                "-B",
                "10.213.0.2",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.iperf = Some(c);
        self.wait_port(5201);
    }

    fn wait_port(&self, port: u16) {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(5) {
            let o = Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    &self.ns,
                    "ss",
                    "-ltnH",
                    &format!("sport = :{port}"),
                ])
                .output()
                .unwrap();
            if !o.stdout.is_empty() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("nothing listens on port {port} in {}", self.ns);
    }

    /// Everything `down` must give back, as text: the link with its details, its addresses,
    /// offloads and qdisc, and the namespace it is in.
    fn uplink_state(&self) -> String {
        let u = &self.uplink;
        [
            format!("ip -d link show {u} | sed 's/ qlen.*//'"),
            format!("ip -br addr show {u}"),
            format!("ethtool -k {u} | grep -E '^(generic-receive|tcp-segmentation|generic-segmentation)-offload'"),
            format!("tc qdisc show dev {u}"),
        ]
        .iter()
        .map(|c| sh(c))
        .collect::<Vec<_>>()
        .join("\n")
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        for c in [self.serve.as_mut(), self.iperf.as_mut()]
            .into_iter()
            .flatten()
        {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Gives the uplink settings the lab changes, so putting them back is visible.
fn dress(u: &str) {
    run(&["ip", "link", "set", u, "mtu", "1400"]);
    run(&["ip", "addr", "add", "192.0.2.7/24", "dev", u]);
    run(&["ethtool", "-K", u, "gro", "off"]);
    run(&[
        "tc", "qdisc", "replace", "dev", u, "root", "pfifo", "limit", "77",
    ]);
    run(&["ip", "link", "set", u, "up"]);
}

fn up_args<'a>(lab: &'a str, mode: &'a str, uplink: &'a str) -> Vec<&'a str> {
    vec![
        "up",
        "--name",
        lab,
        "--mode",
        mode,
        "--guests",
        "1",
        "--uplink",
        uplink,
        "--client",
        "10.213.0.2",
        "--token",
        TOKEN,
    ]
}

#[test]
fn an_uplink_lab_reaches_a_client_machine_and_gives_the_uplink_back() {
    let c = ctx("uplink");
    let before = host_snapshot();
    let mut p = Peer::new("a");
    dress(&p.uplink);
    p.serve();
    p.iperf3();
    let state0 = p.uplink_state();
    for mode in ["bridge", "macvlan"] {
        c.ok(&up_args("tup", mode, &p.uplink));
        let st = c.ok(&["status", "tup"]);
        assert!(
            st.contains("another machine: vnetlab serve at 10.213.0.2"),
            "{st}"
        );
        // A verified pattern both ways.
        for (from, to) in [("g1", "client"), ("client", "g1")] {
            let r = c.json(&[
                "test", "--lab", "tup", "--from", from, "--to", to, "--bytes", "8M", "--verify",
                "-l", "20", "--json",
            ]);
            assert_eq!(r["transfer"]["match"], true, "{mode} {from}→{to}: {r}");
        }
        // The client's CPU is measured on the client machine, as a part on the client's side.
        let r = c.json(&[
            "test", "--lab", "tup", "--from", "g1", "--to", "client", "-m", "64K", "-l", "1",
            "--json",
        ]);
        let parts = r["cpu"]["parts"].as_array().unwrap();
        let remote: Vec<_> = parts
            .iter()
            .filter(|p| {
                p["name"]
                    .as_str()
                    .unwrap()
                    .starts_with("client (another machine")
            })
            .collect();
        assert_eq!(remote.len(), 1, "{mode}: {parts:?}");
        assert_eq!(remote[0]["side"], "client");
        assert!(remote[0]["busy_pct"].as_f64().unwrap() > 0.0);
        assert!(
            parts
                .iter()
                .all(|p| !(p["side"] == "host" && p["name"].as_str().unwrap().contains("client"))),
            "{parts:?}"
        );
        // Nothing of this machine is the client's: its only part is the one measured there.
        assert!(
            parts
                .iter()
                .all(|p| p["side"] == "host" || p["name"] == remote[0]["name"]),
            "{parts:?}"
        );
        assert_eq!(
            r["cpu"]["client_cores"].as_array().unwrap().len(),
            0,
            "every core here is the host's"
        );
        c.ok(&["probe", "--lab", "tup"]);
        c.ok(&["down", "tup"]);
        assert_eq!(
            state0,
            p.uplink_state(),
            "{mode}: the uplink came back changed"
        );
    }
    drop(p);
    assert_eq!(before, host_snapshot());
}

#[test]
fn vdi_frames_and_iperf3_cross_the_two_machines() {
    let c = ctx("uplinkvdi");
    let before = host_snapshot();
    let mut p = Peer::new("b");
    p.serve();
    p.iperf3();
    let mut args = up_args("tuv", "bridge", &p.uplink);
    args.extend(["--wire-rate", "1gbit"]);
    c.ok(&args);
    let r = c.json(&[
        "test",
        "--lab",
        "tuv",
        "-t",
        "VDI",
        "--profile",
        "office",
        "--desktops",
        "1",
        "-l",
        "2",
        "--json",
    ]);
    let v = &r["vdi"];
    assert!(v["total"]["fps"].as_f64().unwrap() > 0.0, "{v}");
    assert_eq!(v["clock"]["shared"], false, "{v}");
    let u = v["clock"]["uncertainty_ns"].as_u64().unwrap();
    assert!(u > 0 && u < 5_000_000, "the clocks were set within {u} ns");
    assert!(
        v["total"]["frame_delay_us"]["p50"].as_f64().unwrap() < 1e6,
        "{v}"
    );
    // iperf3 as the far end, beside vnetlab's own engine, both at the wire's rate.
    let gbps = |extra: &[&str]| {
        let mut a = vec![
            "test", "--lab", "tuv", "--from", "g1", "--to", "client", "-m", "64K", "-l", "2",
            "--json",
        ];
        a.extend_from_slice(extra);
        let r = c.json(&a);
        (
            r["throughput_gbps"].as_f64().unwrap(),
            r["engine"].as_str().unwrap().to_string(),
        )
    };
    let (ours, e1) = gbps(&[]);
    let (theirs, e2) = gbps(&["--peer", "iperf3"]);
    assert_eq!((e1.as_str(), e2.as_str()), ("vnetlab", "iperf3"));
    assert!(
        (ours / theirs - 1.0).abs() <= 0.05,
        "vnetlab {ours} vs iperf3 {theirs} Gb/s"
    );
    c.ok(&["down", "tuv"]);
    drop(p);
    assert_eq!(before, host_snapshot());
}

/// The newest journal line naming the uplink, waited for (the build claims it early).
fn wait_claimed(state: &Path, lab: &str) {
    let j = state.join(format!("{lab}.journal"));
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(20) {
        if std::fs::read_to_string(&j).is_ok_and(|t| t.contains("\"kind\":\"uplink\"")) {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("the build never claimed the uplink");
}

#[test]
fn the_uplink_comes_back_after_sigkill_and_after_ctrl_c() {
    let c = ctx("uplinkkill");
    let before = host_snapshot();
    let mut p = Peer::new("c");
    dress(&p.uplink);
    p.serve();
    let state0 = p.uplink_state();
    for (sig, how) in [(9, "SIGKILL + cleanup"), (2, "Ctrl-C")] {
        let mut cmd = c.cmd(&up_args("tuk", "paravirt", &p.uplink));
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_claimed(&c.state, "tuk");
        signal(-(child.id() as i32), sig);
        let o = child.wait_with_output().unwrap();
        if sig == 9 {
            c.ok(&["cleanup"]);
        } else {
            assert_eq!(
                o.status.code(),
                Some(130),
                "{}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        assert!(
            !c.state.join("tuk.journal").exists(),
            "{how}: the lab is still there"
        );
        assert_eq!(
            state0,
            p.uplink_state(),
            "{how}: the uplink came back changed"
        );
    }
    drop(p);
    assert_eq!(before, host_snapshot());
}

#[test]
fn an_uplink_is_refused_where_it_would_cut_this_machine_off_or_is_not_free() {
    let c = ctx("uplinkbad");
    let p = Peer::new("d");
    let default_dev =
        sh("ip -j route show default | sed -n 's/.*\"dev\":\"\\([^\"]*\\)\".*/\\1/p' | head -1");
    let default_dev = default_dev.trim();
    let mut cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["up", "--name", "tub", "--uplink", &p.uplink],
            "needs --client",
        ),
        (
            vec![
                "up",
                "--name",
                "tub",
                "--uplink",
                "nosuch0",
                "--client",
                "10.213.0.2",
            ],
            "no such interface",
        ),
        (
            vec![
                "up",
                "--name",
                "tub",
                "--uplink",
                &p.uplink,
                "--client",
                "10.213.0.9",
            ],
            "the lab's client address 10.213.0.2",
        ),
        (
            vec![
                "up",
                "--name",
                "tub",
                "--uplink",
                "lo",
                "--client",
                "10.213.0.2",
            ],
            "other than lo",
        ),
    ];
    if !default_dev.is_empty() {
        cases.push((
            vec![
                "up",
                "--name",
                "tub",
                "--uplink",
                default_dev,
                "--client",
                "10.213.0.2",
            ],
            "default route",
        ));
    }
    for (args, says) in cases {
        c.refused(&args, says);
    }
    assert!(!c.state.join("tub.journal").exists());
}

#[test]
fn a_run_takes_the_uplink_for_every_lab_and_gives_it_back() {
    let c = ctx("uprun");
    let before = host_snapshot();
    let mut p = Peer::new("r");
    dress(&p.uplink);
    p.serve();
    let state0 = p.uplink_state();
    let exp = c.state.join("two.toml");
    std::fs::write(&exp, "name = \"two\"\n[matrix]\nmodes = [\"bridge\", \"macvlan\"]\ndirections = [\"guest-to-client\"]\nmessages = [\"64K\"]\nloads = [\"200mbit\"]\n[point]\nduration = 0.5\nwarmup = 0.2\n").unwrap();
    let (db, out) = (c.state.join("two.sqlite"), c.state.join("o"));
    let (es, ds, os) = (
        exp.to_str().unwrap(),
        db.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let site = [
        "--uplink",
        &p.uplink,
        "--client",
        "10.213.0.2",
        "--token",
        TOKEN,
    ];
    let mut args = vec!["run", es, "--db", ds, "--out", os, "--json"];
    args.extend(site);
    let r = c.json(&args);
    let pts = r["points"].as_array().unwrap();
    assert_eq!(pts.len(), 2, "{r}");
    for pt in pts {
        assert!(pt["error"].is_null(), "{pt}");
        assert!(pt["throughput_gbps"].as_f64().unwrap() > 0.1, "{pt}");
        // The client's CPU was measured on its machine; none of this machine's parts is its.
        assert!(pt["client_busy_pct"].as_f64().unwrap() > 0.0, "{pt}");
        let parts = pt["parts"].as_array().unwrap();
        assert!(
            parts
                .iter()
                .all(|x| !x["name"].as_str().unwrap().contains("client")),
            "{parts:?}"
        );
    }
    let runs = c.json(&["runs", "--db", ds, "--json"]);
    assert!(
        runs.to_string().contains(&format!(
            "run over uplink {} to the client machine 10.213.0.2",
            p.uplink
        )),
        "the stored run says where the client was: {runs}"
    );
    assert_eq!(state0, p.uplink_state(), "the uplink came back changed");
    // Nothing to measure, nothing to take; a client without an uplink is refused by clap.
    let mut args = vec!["reproduce", "--from-runs", "--db", ds, "--out", os];
    args.extend(site);
    assert_eq!(c.run(&args).status.code(), Some(2));
    let o = c.run(&["run", es, "--db", ds, "--client", "10.213.0.2"]);
    assert_eq!(o.status.code(), Some(2));
    drop(p);
    assert_eq!(before, host_snapshot());
}

#[test]
fn a_postgresql_store_holds_two_hosts_runs_and_compare_reads_both() {
    let c = ctx("pgstore");
    let before = host_snapshot();
    let pg_dir = PathBuf::from(format!("/tmp/vnetlab-pg-{}", std::process::id()));
    let _pg = Postgres::start(&pg_dir, 54329, "127.0.0.1");
    let url = "postgresql://postgres@127.0.0.1:54329/postgres";
    let exp = c.state.join("one.toml");
    std::fs::write(&exp, "name = \"one\"\n[matrix]\nmodes = [\"bridge\"]\ndirections = [\"guest-to-client\", \"host-to-client\"]\nmessages = [\"64K\"]\nloads = [\"200mbit\"]\n[point]\nduration = 0.5\nwarmup = 0.2\n").unwrap();
    let out = c.state.join("o");
    let (es, os) = (exp.to_str().unwrap(), out.to_str().unwrap());
    c.ok(&["run", es, "--store", url, "--out", os]);
    // The second host: the same machine under another host name (a UTS namespace of its own).
    let o = Command::new("unshare")
        .args([
            "--uts",
            "sh",
            "-c",
            &format!("hostname vl-second-host && {BIN} run {es} --store {url} --out {os}"),
        ])
        .env("VNETLAB_STATE_DIR", &c.state)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc = c.json(&["runs", "--store", url, "--json"]);
    let runs = &doc["runs"];
    let hosts: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["host"].as_str().unwrap())
        .collect();
    assert_eq!(hosts.len(), 2, "{runs}");
    assert!(
        hosts[0] != hosts[1] && hosts.contains(&"vl-second-host"),
        "{hosts:?}"
    );
    let cmp = c.json(&["compare", "1", "2", "--store", url, "--json"]);
    assert_eq!(cmp["rows"].as_array().unwrap().len(), 2, "{cmp}");
    assert_eq!(cmp["b_host"], "vl-second-host");
    let rep = c.json(&["report", "2", "--store", url, "--json"]);
    assert_eq!(rep["points"][0]["host"], "vl-second-host");
    // The planner reads the run from PostgreSQL: a plan, or (where steal on a shared machine hid
    // the point's host CPU) a refusal naming that point of the stored run and the meter's reason.
    let o = c.run(&["plan", "--from-run", "1", "--store", url, "--allow-bound"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success()
            || (o.status.code() == Some(2)
                && err.contains("(point ")
                && err.contains("host CPU could not be told")),
        "{err}"
    );
    // The password never shows; a bad URL is one line.
    let o = c.run(&["runs", "--store", "postgresql://u:s3cret@127.0.0.1:1/x"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && !err.contains("s3cret") && one_line(&err),
        "{err}"
    );
    drop(_pg);
    assert_eq!(before, host_snapshot());
}

/// Two machines with no lab: namespaces the test makes, joined by a veth, on the benchmarking
/// range 198.18.0.0/24 (RFC 2544), one running `vnetlab serve`, the other `vnetlab test -H`.
struct Pair2 {
    serve: Option<Child>,
    /// Dropped after the serve is stopped.
    _machines: Machine,
}

impl Pair2 {
    fn new() -> Pair2 {
        let machines = Machine::pair(
            "tvhc",
            "tvh0",
            "198.18.0.1/24",
            "tvhs",
            "tvh1",
            "198.18.0.2/24",
        );
        let serve = Command::new("ip")
            .args([
                "netns",
                "exec",
                &machines.ns,
                BIN,
                "serve",
                "--bind",
                "198.18.0.2",
            ])
            .args([
                "--allow",
                "198.18.0.0/24",
                "--token",
                TOKEN,
                "--port",
                "12867",
            ])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while sh(&format!(
            "ip netns exec {} ss -ltnH 'sport = :12867'",
            machines.ns
        ))
        .is_empty()
        {
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "serve did not listen"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Pair2 {
            serve: Some(serve),
            _machines: machines,
        }
    }

    /// `vnetlab test -H` the serve from the near machine, with `args`.
    fn test(&self, c: &Ctx, args: &[&str]) -> std::process::Output {
        Command::new("ip")
            .args(["netns", "exec", "tvhc", BIN, "test", "-H", "198.18.0.2"])
            .args(["-p", "12867", "--token", TOKEN, "-l", "1"])
            .args(args)
            .env("VNETLAB_STATE_DIR", &c.state)
            .output()
            .unwrap()
    }
}

impl Drop for Pair2 {
    fn drop(&mut self) {
        if let Some(s) = self.serve.as_mut() {
            let _ = s.kill();
            let _ = s.wait();
        }
    }
}

#[test]
fn an_iperf3_users_flags_reach_a_serve_on_another_machine() {
    let c = ctx("hostflags");
    let before = host_snapshot();
    let p = Pair2::new();
    // No lab holds 198.18.0.2: refused before any packet unless the user says so.
    let o = p.test(&c, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--allow-remote"), "{err}");
    let json = |args: &[&str]| -> serde_json::Value {
        let mut a = vec!["--allow-remote", "-J"];
        a.extend_from_slice(args);
        let o = p.test(&c, &a);
        assert!(
            o.status.success(),
            "{a:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        // iperf3's shape, and vnetlab's own document beside it.
        let got = doc["end"]["sum_received"]["bits_per_second"]
            .as_f64()
            .unwrap();
        let own = doc["vnetlab"]["throughput_gbps"].as_f64().unwrap();
        assert!((got - own * 1e9).abs() < 1.0, "{doc}");
        assert!(
            doc["intervals"][0]["sum"]["bytes"].as_u64().unwrap() > 0,
            "{doc}"
        );
        assert!(
            doc["start"]["timestamp"]["timesecs"].as_i64().is_some(),
            "{doc}"
        );
        doc["vnetlab"].clone()
    };
    let paced = json(&["-b", "100M"]);
    let g = paced["throughput_gbps"].as_f64().unwrap();
    assert!((0.09..=0.11).contains(&g), "-b 100M gave {g} Gb/s");
    // The far machine's CPU, measured there by its serve.
    assert_eq!(paced["remote_cpu"][0]["agent"], "198.18.0.2", "{paced}");
    let back = json(&["-R"]);
    assert_eq!(back["test"], "TCP_MAERTS");
    assert_eq!(back["streams"][0]["from"], "198.18.0.2", "{back}");
    let both = json(&["--bidir", "-b", "50M"]);
    assert_eq!(both["bidir"], true);
    let each = &both["per_source_gbps"];
    for side in ["local", "198.18.0.2"] {
        let g = each[side].as_f64().unwrap_or(0.0);
        assert!((0.045..=0.055).contains(&g), "{side}: {g} Gb/s in {both}");
    }
    for r in [&paced, &back, &both] {
        assert_eq!(r["version"], 4, "one versioned shape: {r}");
    }
    drop(p);
    assert_eq!(before, host_snapshot());
}
