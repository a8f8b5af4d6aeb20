//! Integration tests of QEMU guests (root; TCG here, KVM where the host has it): one-guest labs
//! of each testable device boot, reach the client and carry a verified pattern both ways with
//! their vCPU and device-emulation CPU measured apart; a killed VM fails the running test; the
//! modes this host cannot give are refused before anything is made.

mod common;
use common::*;

fn part<'a>(r: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    r["cpu"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no part {name}: {}", r["cpu"]["parts"]))
}

fn vm_folders(c: &Ctx) -> Vec<String> {
    std::fs::read_dir(&c.state)
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.contains(".vm-"))
        .collect()
}

#[test]
fn qemu_guests_boot_reach_the_client_and_carry_a_verified_pattern_both_ways() {
    let c = ctx("qemu");
    let before = host_snapshot();
    for (lab, mode) in [
        ("tqv", "qemu-virtio"),
        ("tqe", "qemu-e1000"),
        ("tqm", "qemu-macvtap"),
    ] {
        let rec = c.json(&["up", "--name", lab, "--mode", mode, "--json"]);
        let vm = &rec["endpoints"][2]["vm"];
        assert_eq!(vm["mode"], mode, "{rec}");
        assert!(vm["boot_s"].as_f64().unwrap() > 0.0, "{vm}");
        assert!(
            ["kvm", "tcg"].contains(&vm["accel"].as_str().unwrap()),
            "{vm}"
        );
        for (from, to) in [("g1", "client"), ("client", "g1")] {
            let r = c.json(&[
                "test", "--lab", lab, "--from", from, "--to", to, "--bytes", "8M", "--verify",
                "-m", "64K", "-l", "60", "--json",
            ]);
            let t = &r["transfer"];
            assert_eq!(t["bytes_received"], 8_388_608u64, "{mode} {from}→{to}: {t}");
            assert_eq!(t["match"], true, "{mode} {from}→{to}: {t}");
            // The VM's CPU is split: its vCPUs ran the guest's stack, QEMU's main loop its NIC.
            // Two runs in one process: the guest's agent serves a session after a session.
            let r = c.json(&[
                "test", "--lab", lab, "--from", from, "--to", to, "-m", "64K", "-l", "2",
                "--repeat", "2", "--json",
            ]);
            let vcpu = part(&r, "g1");
            let emu = part(&r, "g1 emulation");
            assert_eq!(
                (vcpu["kind"].as_str(), emu["kind"].as_str()),
                (Some("vcpu"), Some("emulation"))
            );
            assert!(vcpu["busy_pct"].as_f64().unwrap() > 5.0, "{mode}: {vcpu}");
            assert!(emu["busy_pct"].as_f64().unwrap() > 0.5, "{mode}: {emu}");
        }
        let st = c.json(&["status", lab, "--json"]);
        assert_eq!(st["labs"][0]["guests"][0]["vm"]["running"], true, "{st}");
        c.ok(&["down", lab]);
        assert!(vm_folders(&c).is_empty(), "{:?}", vm_folders(&c));
    }
    assert_eq!(before, host_snapshot());
}

#[test]
fn a_killed_vm_fails_the_running_test_with_its_console_and_down_cleans_up() {
    let c = ctx("qemukill");
    let before = host_snapshot();
    c.ok(&["up", "--name", "tqk", "--mode", "qemu-virtio"]);
    let st = c.json(&["status", "tqk", "--json"]);
    let pid = st["labs"][0]["guests"][0]["vm"]["pid"].as_u64().unwrap();
    let mut test = c
        .cmd(&[
            "test", "--lab", "tqk", "--from", "g1", "--to", "client", "-l", "30",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert!(measuring(&mut test, 3600), "the test ended before it began");
    std::thread::sleep(std::time::Duration::from_secs(4));
    signal(pid as i32, 9);
    let out = test.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("g1's QEMU VM is gone"), "{err}");
    assert!(err.contains("vnetlab guest:"), "the console's tail: {err}");
    let st = c.json(&["status", "tqk", "--json"]);
    assert_eq!(st["labs"][0]["guests"][0]["vm"]["running"], false, "{st}");
    c.ok(&["down", "tqk"]);
    assert!(vm_folders(&c).is_empty());
    assert_eq!(before, host_snapshot());
}

#[test]
fn modes_this_host_cannot_give_are_refused_before_anything_is_made() {
    let c = ctx("qemuno");
    let before = host_snapshot();
    let mut refused = 0;
    for (mode, needs, closest) in [
        ("qemu-vhost", "/dev/vhost-net", "use qemu-virtio"),
        ("qemu-vfio", "an IOMMU", "use qemu-macvtap"),
    ] {
        let host_has = match mode {
            "qemu-vhost" => std::path::Path::new("/dev/vhost-net").exists(),
            _ => {
                std::fs::read_dir("/sys/kernel/iommu_groups").is_ok_and(|mut d| d.next().is_some())
            }
        };
        let mut args = vec!["up", "--name", "tqn", "--mode", mode];
        if mode == "qemu-vfio" {
            args.extend(["--pf", "vlnopf0"]); // no such PF: the host check comes first
        }
        let o = c.run(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        if host_has {
            eprintln!("this host has {needs}: {mode} is built, not refused");
            c.ok(&["down", "tqn"]);
            continue;
        }
        refused += 1;
        assert_eq!(o.status.code(), Some(2), "{mode}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.contains(needs) && err.contains(closest),
            "{mode}: {err}"
        );
        assert!(!c.state.join("tqn.journal").exists());
    }
    assert!(refused >= 1);
    let o = c.run(&["up", "--name", "tqn", "--mode", "qemu-vfio"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("needs --pf IFACE"), "{err}");
    assert!(vm_folders(&c).is_empty());
    assert_eq!(before, host_snapshot());
}
