//! Integration tests of the traffic engine: standalone over loopback against `vnetlab serve`,
//! and inside a real 2-guest lab for every test type and direction (root).

mod common;
use common::*;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `vnetlab serve` on an ephemeral loopback port; returns it and its port.
fn serve(token: &str) -> (Child, u16) {
    let mut c = Command::new(BIN)
        .args(["serve", "--port", "0", "--token", token])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(c.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .split("127.0.0.1:")
        .nth(1)
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    (c, port)
}

fn test_json(args: &[&str]) -> serde_json::Value {
    let o = Command::new(BIN)
        .arg("test")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "test {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

fn agents_running() -> usize {
    let o = Command::new("pgrep")
        .args(["-f", "vnetlab agent"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).lines().count()
}

#[test]
fn paced_stream_holds_100_mbit_over_loopback() {
    let (mut s, port) = serve("pace-token-012345");
    let p = port.to_string();
    let r = test_json(&[
        "-H",
        "127.0.0.1",
        "-p",
        &p,
        "--token",
        "pace-token-012345",
        "-l",
        "2",
        "-m",
        "1K",
        "--rate",
        "100mbit",
    ]);
    let mbit = r["throughput_gbps"].as_f64().unwrap() * 1000.0;
    assert!(
        (95.0..=105.0).contains(&mbit),
        "paced stream measured {mbit} Mb/s"
    );
    // Intervals are all near the rate too, and the window excludes the warm-up.
    for iv in r["intervals"].as_array().unwrap() {
        let g = iv["gbps"].as_f64().unwrap() * 1000.0;
        assert!((90.0..=110.0).contains(&g), "interval {iv}");
    }
    // Request/response paced to 500 transactions a second: an open load, held.
    for t in ["TCP_RR", "UDP_RR"] {
        let r = test_json(&[
            "-H",
            "127.0.0.1",
            "-p",
            &p,
            "--token",
            "pace-token-012345",
            "-l",
            "2",
            "-t",
            t,
            "--tps",
            "500",
        ]);
        let tps = r["transactions_per_s"].as_f64().unwrap();
        assert!((475.0..=525.0).contains(&tps), "{t} paced to 500/s: {tps}");
    }
    s.kill().unwrap();
}

#[test]
fn standalone_runs_every_test_type_and_refuses_a_wrong_token() {
    let (mut s, port) = serve("tok-token-0123456");
    let p = port.to_string();
    for t in [
        "TCP_STREAM",
        "TCP_MAERTS",
        "UDP_STREAM",
        "TCP_RR",
        "UDP_RR",
        "TCP_CRR",
    ] {
        let r = test_json(&[
            "-H",
            "127.0.0.1",
            "-p",
            &p,
            "--token",
            "tok-token-0123456",
            "-t",
            t,
            "-l",
            "0.5",
            "--warmup",
            "0.2",
            "-m",
            "1K",
        ]);
        assert_eq!(r["test"], t);
        if t.contains("RR") {
            assert!(
                r["transactions_per_s"].as_f64().unwrap() > 100.0,
                "{t}: {r}"
            );
            let l = &r["latency_us"];
            assert!(l["p50"].as_f64().unwrap() <= l["p99"].as_f64().unwrap());
            assert!(l["p99"].as_f64().unwrap() <= l["max"].as_f64().unwrap());
        } else {
            assert!(r["throughput_gbps"].as_f64().unwrap() > 0.01, "{t}: {r}");
            assert!(!r["intervals"].as_array().unwrap().is_empty());
        }
    }
    // MSG_ZEROCOPY completes its sends and says how many the kernel copied anyway.
    let r = test_json(&[
        "-H",
        "127.0.0.1",
        "-p",
        &p,
        "--token",
        "tok-token-0123456",
        "-m",
        "64K",
        "-l",
        "0.5",
        "--warmup",
        "0.2",
        "--zerocopy",
    ]);
    assert!(
        r["zerocopy"]["sends_completed"].as_u64().unwrap() > 0,
        "{}",
        r["zerocopy"]
    );
    assert!((0.0..=100.0).contains(&r["zerocopy"]["copied_pct"].as_f64().unwrap()));
    let o = Command::new(BIN)
        .args([
            "test",
            "-H",
            "127.0.0.1",
            "-p",
            &p,
            "--token",
            "nope",
            "-l",
            "0.5",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("wrong token"));
    s.kill().unwrap();
}

#[test]
fn bad_input_and_faults_end_cleanly() {
    let bad: &[(&[&str], &str)] = &[
        (
            &["-H", "127.0.0.1", "--token", "x", "-m", "0"],
            "out of range",
        ),
        (
            &["-H", "127.0.0.1", "--token", "x", "-m", "2G"],
            "out of range",
        ),
        (
            &["-H", "127.0.0.1", "--token", "x", "-t", "TCP_SENDFILE"],
            "unknown test",
        ),
        (
            &["-H", "127.0.0.1", "--token", "x", "-r", "1"],
            "REQUEST,RESPONSE",
        ),
        (
            &["-H", "192.0.2.1", "--token", "x"],
            "neither loopback nor a lab address",
        ),
        (&["-H", "127.0.0.1"], "--token"),
    ];
    for (args, want) in bad {
        let o = Command::new(BIN).arg("test").args(*args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want) && one_line(&err), "{args:?}: {err}");
    }
    // Unreachable: nothing listens on that port.
    let o = Command::new(BIN)
        .args([
            "test",
            "-H",
            "127.0.0.1",
            "-p",
            "9",
            "--token",
            "x",
            "-l",
            "0.5",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot reach"));
    // The server dies mid-test: the test fails within bounded time.
    let (mut s, port) = serve("gone-token-012345");
    let child = Command::new(BIN)
        .args([
            "test",
            "-H",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "--token",
            "gone-token-012345",
            "-l",
            "3",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kill the server once the test has reached it (it may first wait for the machine's lock).
    let flowing = format!("ss -tnH state established '( sport = :{port} )'");
    assert!(wait_until(120, || !sh(&flowing).trim().is_empty()));
    std::thread::sleep(Duration::from_millis(300));
    s.kill().unwrap();
    let t0 = Instant::now();
    let o = child.wait_with_output().unwrap();
    assert!(!o.status.success());
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "took {:?}",
        t0.elapsed()
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("went away") || err.contains("died") || err.contains("gone"),
        "{err}"
    );
}

#[test]
fn every_test_type_and_direction_runs_in_a_lab() {
    let c = ctx("engine");
    let before = host_snapshot();
    c.ok(&["up", "--name", "teng", "--guests", "2"]);
    let run = |args: &[&str]| -> serde_json::Value {
        let mut a = vec![
            "test", "--lab", "teng", "-l", "0.5", "--warmup", "0.2", "--json",
        ];
        a.extend_from_slice(args);
        c.json(&a)
    };
    for t in [
        "TCP_STREAM",
        "TCP_MAERTS",
        "UDP_STREAM",
        "TCP_RR",
        "UDP_RR",
        "TCP_CRR",
    ] {
        for (from, to) in [
            ("g1", "client"),
            ("client", "g1"),
            ("g1", "g2"),
            ("host", "client"),
        ] {
            let r = run(&["-t", t, "--from", from, "--to", to, "-m", "1K"]);
            let v = if t.contains("RR") {
                r["transactions_per_s"].as_f64().unwrap()
            } else {
                r["throughput_gbps"].as_f64().unwrap()
            };
            assert!(v > 0.0, "{t} {from}→{to}: {r}");
        }
    }
    // Every guest at once: one result per guest, adding up to the total.
    let r = run(&["--from", "guests", "--to", "client", "-m", "64K"]);
    let per = r["per_source_gbps"].as_object().unwrap();
    assert_eq!(per.len(), 2);
    let sum: f64 = per.values().map(|v| v.as_f64().unwrap()).sum();
    assert!((sum - r["throughput_gbps"].as_f64().unwrap()).abs() < 1e-9);
    // The receiver's TCP_INFO is sampled about every 10 ms.
    let r = run(&["--from", "client", "--to", "g1", "-m", "64K"]);
    let n = r["tcp_info"].as_array().unwrap().len();
    assert!(n >= 20, "{n} TCP_INFO samples in 0.7 s");
    assert!(r["tcp_info"][5]["rcv_wnd"].as_u64().unwrap() > 0);
    // A guest that does not exist is refused.
    let o = c.run(&["test", "--lab", "teng", "--from", "g7", "--to", "client"]);
    assert_eq!(o.status.code(), Some(2));
    c.ok(&["down", "teng"]);
    assert_eq!(agents_running(), 0, "an agent outlived its test");
    assert_eq!(before, host_snapshot());
}

#[test]
fn nat_guests_are_reached_through_forwarded_ports() {
    let c = ctx("engnat");
    c.ok(&["up", "--name", "tengn", "--mode", "nat", "--guests", "2"]);
    for t in ["TCP_STREAM", "UDP_STREAM", "TCP_CRR"] {
        let r = c.json(&[
            "test", "--lab", "tengn", "--from", "client", "--to", "g2", "-t", t, "-m", "1K", "-l",
            "0.5", "--warmup", "0.2", "-P", "2", "--json",
        ]);
        let v = r["throughput_gbps"].as_f64().unwrap();
        assert!(v > 0.0, "{t}: {r}");
    }
    c.ok(&["down", "tengn"]);
}

/// A paced stream arrives at its rate in each pacing mode: the application's 1 ms ticks (TCP and
/// UDP) and the kernel's (SO_MAX_PACING_RATE: fq on the sending device where the kernel has fq,
/// else TCP's internal pacing, which the result names; UDP without fq is refused).
#[test]
fn paced_streams_arrive_at_their_rate_in_each_pacing_mode() {
    let c = ctx("pacing");
    let before = host_snapshot();
    c.ok(&["up", "--name", "tpace", "--guests", "1"]);
    let qdiscs = || sh("tc -n vltpace-g1 qdisc show; tc -n vltpace-host qdisc show");
    let q0 = qdiscs();
    // `vnetlab test` g1 → client in the lab, with more arguments (split at spaces).
    let g1 = |more: &'static str| -> Vec<&'static str> {
        let lab = "test --lab tpace --from g1 --to client ";
        lab.split_whitespace()
            .chain(more.split_whitespace())
            .collect()
    };
    let run = |args: &[&'static str]| c.json(&[g1("-l 2 --json"), args.to_vec()].concat());
    // The pacer holds the rate asked: what arrived, plus (UDP) what the result says was lost on
    // the way (a receiver beside other work drops datagrams; the loss is reported, not hidden).
    let at_rate = |r: &serde_json::Value, mbit: f64, what: &str| {
        let lost = r["udp_loss_pct"].as_f64().unwrap_or(0.0);
        assert!((0.0..50.0).contains(&lost), "{what}: {lost} % lost");
        let got = r["throughput_gbps"].as_f64().unwrap() * 1000.0 / (1.0 - lost / 100.0);
        assert!(
            (got / mbit - 1.0).abs() <= 0.03,
            "{what}: {got:.1} Mb/s for {mbit} Mb/s asked"
        );
    };
    for (args, mbit) in [
        (vec!["-m", "1K", "--rate", "200mbit"], 200.0),
        (vec!["-m", "64K", "--rate", "300mbit"], 300.0),
        (
            vec!["-t", "UDP_STREAM", "-m", "1K", "--rate", "100mbit"],
            100.0,
        ),
    ] {
        let r = run(&args);
        at_rate(&r, mbit, &format!("app pacing {args:?}"));
        assert_eq!(r["pacing"]["mode"], "app", "{r}");
        assert!(r.get("kernel_pacing").is_none());
        // TCP runs cubic unless told otherwise, whatever this machine's default; UDP has none.
        let tcp = !args.contains(&"UDP_STREAM");
        assert_eq!(r.get("congestion").is_some(), tcp, "{r}");
        if tcp {
            assert_eq!(r["congestion"], "cubic", "{r}");
        }
    }
    // The data connection runs the algorithm asked for, as the kernel itself reports while the
    // test runs; one the kernel cannot give is refused before anything starts.
    let reno = g1("-l 3 --json -m 8K --rate 100mbit --congestion reno");
    let child = c
        .cmd(&reno)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Watch while it runs (it may first wait for the machine's lock, then set up).
    let mut child = child;
    let mut ss = String::new();
    wait_until(120, || {
        ss = sh("ip netns exec vltpace-g1 ss -tin state established");
        ss.contains(" reno ") || child.try_wait().unwrap().is_some()
    });
    let out = child.wait_with_output().unwrap();
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["congestion"], "reno", "{r}");
    assert!(
        ss.contains(" reno "),
        "no reno connection in g1 while the test ran: {ss}"
    );
    c.refused(
        &g1("--congestion nosuchcc"),
        "congestion control 'nosuchcc' is not available",
    );
    let r = run(&["-m", "8K", "--rate", "200mbit", "--pacing", "kernel"]);
    at_rate(&r, 200.0, "kernel pacing, TCP");
    assert_eq!(r["pacing"]["mode"], "kernel");
    let kp = &r["kernel_pacing"];
    let with_fq = !kp["fq"].as_array().unwrap().is_empty();
    assert!(
        with_fq
            || kp["tcp_internal"][0]
                .as_str()
                .unwrap()
                .starts_with("g1: TCP's internal pacing"),
        "{kp}"
    );
    // The sending device has its own qdisc back after the test.
    assert_eq!(q0, qdiscs());
    let udp = g1("-l 2 --json -t UDP_STREAM -m 1K --rate 100mbit --pacing kernel");
    if with_fq {
        at_rate(&c.json(&udp), 100.0, "kernel pacing, UDP through fq");
    } else {
        let o = c.run(&udp);
        assert_eq!(o.status.code(), Some(2));
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains("use --pacing app") && one_line(&e), "{e}");
    }
    assert_eq!(q0, qdiscs());
    // Kernel pacing paces streams only.
    let o = c.run(&g1("-t TCP_RR --tps 100 --pacing kernel"));
    assert_eq!(o.status.code(), Some(2));
    c.ok(&["down", "tpace"]);
    assert_eq!(before, host_snapshot());
}

/// The measuring core's contract, the same for every `TrafficSource`: vnetlab's engine and a
/// stock iperf3, each through `measure()` on one lab, name themselves, report a rate over a
/// window of the length asked (its per-second intervals inside it), get the meter's host CPU
/// over that window with what bound the point, and repeat with the spread kept.
#[test]
fn every_traffic_source_keeps_the_measuring_contract() {
    let c = ctx("contract");
    let before = host_snapshot();
    c.ok(&["up", "--name", "tcon", "--guests", "1"]);
    for (peer, engine) in [(None, "vnetlab"), (Some("iperf3"), "iperf3")] {
        let mut a = vec![
            "test", "--lab", "tcon", "--from", "g1", "--to", "client", "-m", "64K", "-l", "2",
            "--repeat", "2", "--json",
        ];
        a.extend(peer.iter().flat_map(|p| ["--peer", *p]));
        let r = c.json(&a);
        assert_eq!(r["engine"], engine, "{r}");
        assert!(
            r["throughput_gbps"].as_f64().unwrap() > 0.0,
            "{engine}: {r}"
        );
        let d = r["duration_s"].as_f64().unwrap();
        assert!((d - 2.0).abs() < 0.3, "{engine}: a {d} s window for -l 2");
        let last = r["intervals"].as_array().unwrap().last().unwrap()["t"]
            .as_f64()
            .unwrap();
        assert!(last <= d + 0.3, "{engine}: an interval at {last} s of {d}");
        let cpu = &r["cpu"];
        assert!(
            cpu["host_busy_pct"].as_f64().unwrap() > 0.0,
            "{engine}: {cpu}"
        );
        assert!(cpu.get("bound_by").is_some(), "{engine}: {cpu}");
        assert_eq!(
            r["repeats"]["each"].as_array().unwrap().len(),
            2,
            "{engine}"
        );
    }
    c.ok(&["down", "tcon"]);
    assert_eq!(agents_running(), 0, "an agent outlived its test");
    assert_eq!(before, host_snapshot());
}

/// `bench engine` is how the engine's speed is shown beside iperf3 and sockperf: on the veth
/// path both tools run inside the bench's own lab and each row has a figure from each (no
/// ratio is asserted: speed is shown by the bench, not by tests).
#[test]
fn the_engine_bench_runs_both_tools_inside_its_lab() {
    let c = ctx("benchveth");
    let before = host_snapshot();
    let v = c.json(&[
        "bench",
        "engine",
        "--paths",
        "veth",
        "--seconds",
        "1",
        "--repeat",
        "1",
        "--json",
    ]);
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 3, "{v}");
    for r in rows {
        assert_eq!(r["path"], "veth", "{r}");
        for side in ["vnetlab", "peer_result"] {
            let m = &r[side];
            let moved = m["gbps"].as_f64().unwrap() + m["tps"].as_f64().unwrap_or(0.0);
            assert!(moved > 0.0, "{side} moved nothing: {r}");
        }
        assert!(r["throughput_ratio"].as_f64().unwrap() > 0.0, "{r}");
    }
    assert_eq!(before, host_snapshot());
}

#[test]
fn dash_j_is_read_by_jq_as_iperf3s_and_a_failure_is_an_error_document() {
    let (mut s, port) = serve("jq-token-0123456789");
    let p = port.to_string();
    let cmd = format!(
        "{BIN} test -H 127.0.0.1 -p {p} --token jq-token-0123456789 -l 1 --rate 50mbit -J | jq .end.sum_received.bits_per_second"
    );
    let o = Command::new("sh").args(["-c", &cmd]).output().unwrap();
    let bps: f64 = String::from_utf8_lossy(&o.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    assert!(
        (45e6..=55e6).contains(&bps),
        "--rate 50mbit read back as {bps} b/s"
    );
    let _ = s.kill();
    let _ = s.wait();
    // Nothing listens now: iperf3's error document, with its start, and a failing exit.
    let o = Command::new(BIN)
        .args([
            "test",
            "-H",
            "127.0.0.1",
            "-p",
            &p,
            "--token",
            "jq-token-0123456789",
            "-l",
            "1",
            "-J",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(!doc["error"].as_str().unwrap().is_empty(), "{doc}");
    assert_eq!(doc["start"]["connecting_to"]["host"], "127.0.0.1", "{doc}");
}
