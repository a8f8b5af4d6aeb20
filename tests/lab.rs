//! Integration tests of the lab stage: real namespaces, built and removed (root).

mod common;
use common::*;
use std::time::Duration;

fn probes_ok(c: &Ctx, lab: &str) -> Vec<(String, String)> {
    let v = c.json(&["probe", "--lab", lab, "--json"]);
    v["probes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            assert_eq!(p["ok"], true, "{p}");
            (
                p["from"].as_str().unwrap().to_string(),
                p["to"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn each_mode_builds_connects_and_leaves_the_host_as_it_was() {
    let c = ctx("modes");
    for mode in ["native", "bridge", "nat", "macvlan"] {
        let before = host_snapshot();
        let lab = &mode[..3.min(mode.len())].replace("nat", "na").to_string();
        let lab = format!("t{lab}");
        c.ok(&["up", "--name", &lab, "--mode", mode, "--guests", "2"]);
        let pairs = probes_ok(&c, &lab);
        // Every guest reaches the client and back, and the guests reach each other.
        for want in [
            ("g1", "client"),
            ("client", "g1"),
            ("g2", "client"),
            ("client", "g2"),
            ("g1", "g2"),
            ("g2", "g1"),
        ] {
            assert!(
                pairs.contains(&(want.0.into(), want.1.into())),
                "{mode}: {want:?} not probed"
            );
        }
        let st = c.json(&["status", &lab, "--json"]);
        let l = &st["labs"][0];
        assert_eq!(l["mode"], mode);
        assert_eq!(l["guests"].as_array().unwrap().len(), 2);
        assert_eq!(l["client"]["interface"]["mtu"], 1500);
        assert!(l["client"]["address"]
            .as_str()
            .unwrap()
            .starts_with("10.213."));
        c.ok(&["down", &lab]);
        assert_eq!(before, host_snapshot(), "{mode}: the host changed");
    }
}

#[test]
fn status_reads_offloads_and_mtu_back_from_the_kernel() {
    let c = ctx("offloads");
    let before = host_snapshot();
    c.ok(&[
        "up",
        "--name",
        "toff",
        "--guests",
        "1",
        "--gro",
        "guest",
        "--tso",
        "off",
        "--mtu",
        "9000",
        "--wire-rate",
        "1gbit",
    ]);
    let st = c.json(&["status", "--json"]);
    let l = &st["labs"][0];
    let g1 = &l["guests"][0];
    assert_eq!(g1["interface"]["offloads"]["gro"], "on");
    assert_eq!(g1["interface"]["offloads"]["tso"], "off");
    assert_eq!(g1["interface"]["mtu"], 9000);
    assert_eq!(g1["host_port"]["offloads"]["gro"], "off");
    let wire = l["host_interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "vltoffw")
        .unwrap();
    assert_eq!(wire["offloads"]["gro"], "off");
    assert_eq!(
        wire["offloads"]["tso"], "off",
        "--tso off: the host's NIC does not segment"
    );
    assert_eq!(wire["qdisc"], "tbf");
    assert_eq!(
        l["client"]["interface"]["offloads"]["tso"], "off",
        "the client's end segments its sends"
    );
    // exec runs in the guest's namespace and cgroup and passes the exit code through.
    let out = c.ok(&[
        "exec",
        "--lab",
        "toff",
        "g1",
        "--",
        "sh",
        "-c",
        "ip -br addr show vltoffg1; cat /proc/self/cgroup",
    ]);
    assert!(out.contains("10.213.0.3/16"), "{out}");
    assert!(out.contains("vnetlab/vltoff/g1"), "{out}");
    let o = c.run(&[
        "exec", "--lab", "toff", "client", "--", "sh", "-c", "exit 7",
    ]);
    assert_eq!(o.status.code(), Some(7));
    // vnetlab itself runs inside a lab (as `bench engine` runs its tools, and as a user runs
    // iperf3-style `test -H`): it reads the lab's journal, whose cgroup folders it checks against
    // the mounted hierarchies, so exec keeps them mounted, and the client's address counts as the
    // lab's without --allow-remote.
    let out = c.ok(&["exec", "--lab", "toff", "g1", "--", BIN, "status", "toff"]);
    assert!(out.contains("lab toff"), "{out}");
    let client = l["client"]["address"].as_str().unwrap();
    let token = "a-lab-token-01234";
    let mut serve = c
        .cmd(&[
            "exec", "--lab", "toff", "client", "--", BIN, "serve", "--bind", client, "--port",
            "15298", "--token", token, "--allow", client,
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(serve.stderr.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert!(line.contains("listening"), "{line}");
    let t = c.run(&[
        "exec", "--lab", "toff", "g1", "--", BIN, "test", "-H", client, "-p", "15298", "--token",
        token, "-l", "0.5", "--json",
    ]);
    let _ = serve.kill();
    let _ = serve.wait();
    let err = String::from_utf8_lossy(&t.stderr);
    assert!(t.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&t.stdout).unwrap();
    assert!(v["throughput_gbps"].as_f64().unwrap() > 0.0, "{v}");
    c.ok(&["down", "toff"]);
    assert_eq!(before, host_snapshot());
}

#[test]
fn cleanup_after_a_killed_up_restores_the_host() {
    let c = ctx("kill");
    for delay_ms in [30, 150, 400] {
        let before = host_snapshot();
        let mut child = c
            .cmd(&[
                "up", "--name", "tkill", "--guests", "200", "--force", "--mode", "nat",
            ])
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        let _ = child.kill(); // SIGKILL
        let done = child.wait().unwrap().success();
        if done {
            // It finished before the kill (a kept lab, which cleanup leaves): down restores.
            c.ok(&["down", "tkill"]);
        }
        c.ok(&["cleanup"]);
        assert_eq!(before, host_snapshot(), "after a kill at {delay_ms} ms");
    }
}

#[test]
fn sigint_during_up_removes_what_was_made() {
    let c = ctx("sigint");
    let before = host_snapshot();
    let child = c
        .cmd(&["up", "--name", "tint", "--guests", "40"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    // SAFETY: kill takes plain integers (a pid this test started, and a signal) and touches no memory.
    unsafe { libc_kill(child.id() as i32, 2) };
    let o = child.wait_with_output().unwrap();
    if !o.status.success() {
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("removed what was made"), "{err}");
    } else {
        // It finished before the signal: then down must still restore the host.
        c.ok(&["down", "tint"]);
    }
    assert_eq!(before, host_snapshot());
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

#[test]
fn bad_input_is_one_line_exit_2_and_leaves_nothing() {
    let c = ctx("bad");
    let before = host_snapshot();
    let cases: &[(&[&str], &str)] = &[
        (&["up", "--mode", "hub"], "unknown mode"),
        (&["up", "--guests", "0"], "0 is not in 1..=9999"),
        (&["up", "--guests", "-1"], "-1 is not in 1..=9999"),
        (
            &["up", "--client-cpus", "0", "--host-cpus", "0"],
            "share CPU 0",
        ),
        (&["up", "--file", &"x".repeat(5000)], "cannot read"),
        (
            &["test", "--lab", "nolab", "--from", "g1", "--to", "g1"],
            "no lab",
        ),
        (
            &["up", "--guests", "300", "--subnet", "10.99.0.0/24"],
            "holds at most",
        ),
        (&["up", "--guests", "300"], "pass --force"),
        (&["up", "--wire-rate", "fast"], "bad rate"),
        (&["up", "--wire-delay", "5"], "bad delay"),
        (&["up", "--wire-loss", "2"], "bad loss"),
        (&["up", "--mode", "sriov", "--pf", "vlnosuchnic"], "macvlan"),
        (&["up", "--mode", "sriov"], "--pf"),
        (&["up", "--name", "Bad-Name"], "bad lab name"),
        (&["up", "--subnet", "8.8.8.0/24"], "private"),
        (&["down", "nolab"], "no lab"),
        (&["exec", "--lab", "nolab", "g1", "--", "true"], "no lab"),
    ];
    for (args, want) in cases {
        let o = c.run(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // Not root: refused with the fix named.
    let o = std::process::Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            BIN,
            "up",
        ])
        .env("VNETLAB_STATE_DIR", &c.state)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("needs root"));
    // A lab name already taken is refused.
    c.ok(&["up", "--name", "tdup"]);
    let o = c.run(&["up", "--name", "tdup"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("already exists"));
    c.ok(&["down", "tdup"]);
    assert_eq!(before, host_snapshot());
}

#[test]
fn dry_run_prints_commands_and_makes_nothing() {
    let c = ctx("dry");
    let before = host_snapshot();
    let out = c.ok(&[
        "up",
        "--name",
        "tdry",
        "--mode",
        "nat",
        "--guests",
        "2",
        "--wire-rate",
        "10gbit",
        "--dry-run",
    ]);
    assert!(out.contains("netns add vltdry-g2"));
    assert!(out.contains("tbf rate 10000000000bit"));
    assert!(out.contains("nft -f -"));
    assert_eq!(before, host_snapshot());
}
