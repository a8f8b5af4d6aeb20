//! The shield on this host, at the test's own crowd and veths only (root): `up --shield` moves
//! the crowd's cpuset off the lab's host core, its hogs' affinities with it, and a test veth's
//! RPS/XPS masks; a killed `up` leaves them to `cleanup`, which gives every one back.

mod common;
use common::*;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

fn affinity(pid: &str) -> String {
    sh(&format!("taskset -pc {pid} | sed 's/.*: //'"))
        .trim()
        .to_string()
}

/// What the test made: its crowd and its veths, removed even when an assertion fails.
struct Made(Child);

impl Drop for Made {
    fn drop(&mut self) {
        signal(self.0.id() as i32, 15);
        let _ = self.0.wait();
        let _ = Command::new("ip").args(["link", "del", "vlqv0"]).status();
    }
}

#[test]
fn the_shield_moves_only_what_it_was_given_and_cleanup_gives_it_back() {
    let c = ctx("shield");
    if !std::path::Path::new("/sys/fs/cgroup/cpuset/cpuset.cpus").exists()
        || sh("nproc").trim() != "2"
    {
        skip("this test shields core 0 of a 2-core host with a v1 cpuset hierarchy");
        return;
    }
    let before = host_snapshot();
    // With user tasks in the root cpuset (every v1 host), the shield needs a named root.
    c.refused(&["up", "--name", "sx", "--shield"], "--shield-root CGROUP");
    assert_eq!(before, host_snapshot(), "a refused shield left something");
    let (crowd, root) = crowd(20, 10);
    let made = Made(crowd);
    assert!(root.starts_with("vl-crowd-"), "{root}");
    let dir = format!("/sys/fs/cgroup/cpuset/{root}");
    let hogs: Vec<String> = sh(&format!("pgrep -P {} -f burn", made.0.id()))
        .split_whitespace()
        .map(str::to_string)
        .collect();
    assert_eq!(hogs.len(), 2);
    let hog_aff: Vec<String> = hogs.iter().map(|h| affinity(h)).collect();
    must(&[
        "ip", "link", "add", "vlqv0", "type", "veth", "peer", "name", "vlqv1",
    ]);
    let rps = |d: &str| {
        sh(&format!("cat /sys/class/net/{d}/queues/rx-0/rps_cpus"))
            .trim()
            .to_string()
    };
    sh("echo 3 > /sys/class/net/vlqv0/queues/rx-0/rps_cpus; echo 3 > /sys/class/net/vlqv1/queues/rx-0/rps_cpus");
    let state = || {
        let cpus = sh(&format!("cat {dir}/cpuset.cpus")).trim().to_string();
        let aff: Vec<String> = hogs.iter().map(|h| affinity(h)).collect();
        (cpus, aff, rps("vlqv0"), rps("vlqv1"))
    };
    let s0 = state();
    // A shielded `up`, killed once it has moved what it moves.
    let mut up = c
        .cmd(&[
            "up",
            "--name",
            "sx",
            "--host-cpus",
            "0",
            "--client-cpus",
            "1",
            "--shield",
            "--shield-root",
            &root,
            "--shield-irqs=vlqv0",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = String::new();
    let mut err = BufReader::new(up.stderr.take().unwrap());
    while err.read_line(&mut said).unwrap() > 0 && !said.contains("shield:") {}
    let shielded = state();
    let _ = up.kill();
    let _ = up.wait();
    assert!(said.contains("shield: CPU 0 cleared: 1 cgroups"), "{said}");
    assert_eq!(shielded.0, "1", "the crowd's cpuset left core 0");
    assert!(shielded.1.iter().all(|a| a == "1"), "{:?}", shielded.1);
    assert_eq!(shielded.2, "2", "vlqv0's RPS mask left core 0");
    assert_eq!(shielded.3, "3", "a device the shield was not given stays");
    // `cleanup` reads the dead `up`'s journal and gives back each thing it moved.
    c.ok(&["cleanup", "--force", "sx"]);
    let back = state();
    assert_eq!(back, s0, "after cleanup");
    assert_eq!(back.1, hog_aff);
    drop(made);
    assert_eq!(before, host_snapshot());
}

#[test]
fn a_killed_crowds_cgroups_go_with_cleanup() {
    let c = ctx("crowdkill");
    let (mut crowd, _) = crowd(20, 0);
    let name = format!("vl-crowd-{}", crowd.id());
    let dirs = [
        "/sys/fs/cgroup/cpuacct",
        "/sys/fs/cgroup/cpuset",
        "/sys/fs/cgroup",
    ]
    .map(|r| std::path::Path::new(r).join(&name));
    assert!(dirs.iter().any(|d| d.exists()), "the crowd made no cgroup");
    let _ = crowd.kill(); // SIGKILL: it cannot remove its folders
    let _ = crowd.wait();
    // Its members die with it (a parent-death signal); then cleanup removes the empty folders.
    assert!(wait_until(30, || {
        c.ok(&["cleanup"]);
        dirs.iter().all(|d| !d.exists())
    }));
}
