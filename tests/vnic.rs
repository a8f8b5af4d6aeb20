//! Integration tests of the userspace vNIC device models (root): a known 256 MB pattern through
//! every mode and direction (and through the paravirtual model's read/write fallback), LRO
//! merging, a backend's death, and malformed guest frames.

mod common;
use common::*;

#[test]
fn a_256_mb_pattern_crosses_every_mode_in_both_directions_intact() {
    let c = ctx("vnicdata");
    let before = host_snapshot();
    let labs: [(&str, &[&str]); 4] = [
        ("tvb", &["--mode", "bridge"]),
        ("tve", &["--mode", "emulated"]),
        ("tvp", &["--mode", "paravirt"]),
        (
            "tvl",
            &["--mode", "paravirt", "--lro", "guest", "--gro", "off"],
        ),
    ];
    for (lab, args) in labs {
        let mut up = vec!["up", "--name", lab];
        up.extend_from_slice(args);
        c.ok(&up);
        for (from, to) in [("g1", "client"), ("client", "g1")] {
            let r = c.json(&[
                "test", "--lab", lab, "--from", from, "--to", to, "--bytes", "256M", "--verify",
                "-m", "64K", "-l", "120", "--json",
            ]);
            let t = &r["transfer"];
            assert_eq!(
                t["bytes_received"], 268_435_456u64,
                "{lab} {from}→{to}: {t}"
            );
            assert_eq!(t["match"], true, "{lab} {from}→{to}: {t}");
            assert_eq!(t["sent_sha256"], t["received_sha256"]);
        }
        c.ok(&["down", lab]);
    }
    assert_eq!(before, host_snapshot());
}

#[test]
fn the_read_write_fallback_moves_a_pattern_intact_and_says_so() {
    let c = ctx("vnicrw");
    let before = host_snapshot();
    let up = |lab: &str, io: &str| {
        c.cmd(&["up", "--name", lab, "--mode", "paravirt"])
            .env("VNETLAB_VNIC_IO", io)
            .output()
            .unwrap()
    };
    let o = up("tvr", "rw");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for (from, to) in [("g1", "client"), ("client", "g1")] {
        let r = c.json(&[
            "test", "--lab", "tvr", "--from", from, "--to", to, "--bytes", "64M", "--verify", "-m",
            "64K", "-l", "60", "--json",
        ]);
        assert_eq!(
            r["transfer"]["match"], true,
            "{from}→{to}: {}",
            r["transfer"]
        );
        assert_eq!(r["vnic"]["g1"]["io"], "readwrite", "{}", r["vnic"]);
        assert!(r["vnic"]["g1"]["syscalls"].as_u64().unwrap() > 0);
    }
    c.ok(&["down", "tvr"]);
    // A loop it does not know is refused before anything is built.
    let o = up("tvx", "epoll");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("VNETLAB_VNIC_IO=epoll: use uring or rw"),
        "{err}"
    );
    assert_eq!(before, host_snapshot());
}

#[test]
fn lro_merges_a_bulk_stream_toward_the_guest() {
    let c = ctx("vniclro");
    c.ok(&[
        "up", "--name", "tlro", "--mode", "paravirt", "--lro", "guest", "--gro", "off",
    ]);
    let r = c.json(&[
        "test", "--lab", "tlro", "--from", "client", "--to", "g1", "-m", "64K", "-l", "1", "--json",
    ]);
    let lro = &r["vnic"]["g1"]["lro"];
    assert!(lro["superframes_out"].as_u64().unwrap() > 100, "{lro}");
    assert!(lro["lro_ratio"].as_f64().unwrap() >= 4.0, "{lro}");
    assert!(r["vnic"]["g1"]["to_guest"]["gso_frames"].as_u64().unwrap() > 0);
    // The backend is a CPU part of its own.
    let parts = r["cpu"]["parts"].as_array().unwrap();
    assert!(
        parts
            .iter()
            .any(|p| p["name"] == "vNIC backend g1" && p["busy_pct"].as_f64().unwrap() > 1.0),
        "{parts:?}"
    );
    c.ok(&["down", "tlro"]);
}

#[test]
fn a_dead_backend_takes_the_link_down_and_the_test_fails_cleanly() {
    let c = ctx("vnicdead");
    let before = host_snapshot();
    c.ok(&[
        "up", "--name", "tdead", "--mode", "paravirt", "--guests", "2",
    ]);
    let st = c.json(&["status", "tdead", "--json"]);
    let pid = st["labs"][0]["guests"][0]["vnic"]["pid"].as_u64().unwrap();
    assert_eq!(st["labs"][0]["guests"][0]["vnic"]["running"], true);
    // SAFETY: kill takes plain integers (a pid this test started, and a signal) and touches no memory.
    unsafe { kill(pid as i32, 9) };
    std::thread::sleep(std::time::Duration::from_millis(300));
    // The guest's NIC lost its carrier with its backend.
    let link = c.ok(&[
        "exec",
        "--lab",
        "tdead",
        "g1",
        "--",
        "ip",
        "-br",
        "link",
        "show",
        "vltdeadg1",
    ]);
    assert!(
        link.contains("NO-CARRIER") || link.contains("DOWN"),
        "{link}"
    );
    let t0 = std::time::Instant::now();
    let o = c.run(&[
        "test", "--lab", "tdead", "--from", "g1", "--to", "client", "-l", "1",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("vNIC backend of g1 died"), "{err}");
    assert!(t0.elapsed() < std::time::Duration::from_secs(10));
    // g2's backend still works.
    c.ok(&[
        "test", "--lab", "tdead", "--from", "g2", "--to", "client", "-l", "0.5", "--warmup", "0.2",
    ]);
    c.ok(&["down", "tdead"]);
    assert_eq!(
        before,
        host_snapshot(),
        "down removed the taps and backends"
    );
}

extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}

/// The guest's kernel only hands its tap well-formed Ethernet frames (it refuses runts and checks
/// vnet headers; the coalescer's and the checks' handling of malformed frames is unit-tested and
/// fuzzed). What a guest can do is raise its own MTU and send frames the lab's wire cannot carry.
#[test]
fn oversize_frames_from_the_guest_are_dropped_and_counted() {
    let c = ctx("vnicbig");
    for (lab, model) in [("tbige", "emulated"), ("tbigp", "paravirt")] {
        c.ok(&["up", "--name", lab, "--mode", model]);
        let dev = format!("vl{lab}g1");
        let py = format!(
            "import socket, subprocess\nsubprocess.run(['ip', 'link', 'set', '{dev}', 'mtu', '9000'], check=True)\n\
             s=socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\ns.bind(('{dev}', 0))\n\
             f=b'\\xff'*6 + b'\\x02'*6 + b'\\x08\\x00' + b'\\x45' + b'\\x00'*5000\nfor _ in range(5): s.send(f)\n\
             subprocess.run(['ip', 'link', 'set', '{dev}', 'mtu', '1500'], check=True)\n"
        );
        c.ok(&["exec", "--lab", lab, "g1", "--", "python3", "-c", &py]);
        // The backend publishes its counters within a moment of going idle; a loaded CI host
        // may take longer to schedule it, so wait for the count rather than a fixed time.
        let path = c.state.join(format!("{lab}.vnic-g1.json"));
        let oversize = |s: &serde_json::Value| s["from_guest"]["oversize"].as_u64().unwrap_or(0);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let stats = loop {
            let s: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            if oversize(&s) >= 5 || std::time::Instant::now() > deadline {
                break s;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        };
        assert_eq!(oversize(&stats), 5, "{model}: {stats}");
        // The backend carries on.
        c.ok(&[
            "test", "--lab", lab, "--from", "g1", "--to", "client", "-l", "0.3", "--warmup", "0.1",
        ]);
        c.ok(&["down", lab]);
    }
}

/// `bench vnic` builds its five labs side by side, runs every one in each round, prices one more
/// hop on the host first, and removes everything it made.
#[test]
fn the_vnic_bench_runs_every_lab_prices_the_hop_and_leaves_nothing() {
    let c = ctx("vnicbench");
    let before = host_snapshot();
    let v = c.json(&[
        "bench",
        "vnic",
        "--seconds",
        "0.5",
        "--repeat",
        "1",
        "--json",
    ]);
    let rows = v["rows"].as_array().unwrap();
    // bridge, paravirt, emulated: two loads both ways; the two GRO-off paravirt labs: one row.
    assert_eq!(rows.len(), 14, "{v}");
    for lab in ["bridge", "paravirt", "emulated"] {
        let paced: Vec<_> = rows
            .iter()
            .filter(|r| r["lab"] == lab && r["test"] == "8K 250M")
            .collect();
        assert_eq!(paced.len(), 2, "{lab}: {v}");
        for r in paced {
            assert!(r["gbps"].as_f64().unwrap() > 0.1, "{r}");
            let woke = r["wakeups_per_gbit"].as_f64();
            assert_eq!(woke.is_some(), lab != "bridge", "{r}");
        }
    }
    let hop = &v["hop"];
    assert_eq!(hop["setup"]["rounds"], 5, "{v}");
    assert_eq!(hop["hop_us"]["n"], 5, "{hop}");
    assert!(hop["relayed_us"]["median"].as_f64().unwrap() > 0.0, "{hop}");
    assert_eq!(before, host_snapshot());
}
