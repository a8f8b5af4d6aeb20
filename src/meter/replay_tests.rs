//! The meter replayed on made trees of /proc and /sys, named as production hosts name them: a
//! 64-core host on cgroup v1 with systemd's slices, a systemd host on cgroup v2 with the cpu
//! controller and QEMU VMs under `machine.slice/machine-qemu…scope`, and a Kubernetes node's
//! `kubepods.slice/…pod<uid>.slice/cri-containerd-<id>.scope`. The files each 10 Hz sample and
//! each window edge reads are the same for 100 host tasks as for 10,000, and a window's parts
//! come out right: the lab's guest, its task that left its cgroup, and another cgroup's work.

use super::account::{self, Traffic};
use super::fs::Fs;
use super::{Part, PartId, PartKind, Reader, Setup, Side, Sides};
use crate::vocab::Role;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    V1,
    V2Systemd,
    V2Kube,
}

/// The tree's folder, removed when dropped.
struct Tree(PathBuf);

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const NETNS: u64 = 4_026_532_000;

impl Tree {
    fn put(&self, p: &str, t: &str) {
        let f = self.0.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, t).unwrap();
    }

    /// The accounting root and the other top-level folders the kind has, beside `vnetlab`.
    fn layout(kind: Kind) -> (&'static str, Vec<&'static str>) {
        match kind {
            Kind::V1 => ("sys/fs/cgroup/cpuacct", vec!["system.slice", "user.slice"]),
            Kind::V2Systemd => (
                "sys/fs/cgroup",
                vec![
                    "init.scope",
                    "system.slice",
                    "user.slice",
                    "machine.slice",
                    "machine.slice/machine-qemu\\x2d1\\x2dvm1.scope",
                ],
            ),
            Kind::V2Kube => (
                "sys/fs/cgroup",
                vec![
                    "system.slice",
                    "kubepods.slice",
                    "kubepods.slice/kubepods-burstable.slice",
                    "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0b9e3c1a_7f2d_4c5e_9a8b_1c2d3e4f5a6b.slice/cri-containerd-5f0c9e8d7b6a.scope",
                ],
            ),
        }
    }

    /// A host of `cpus` cores and `tasks` user tasks (in system.slice), one lab guest `g1`.
    fn new(kind: Kind, cpus: usize, tasks: usize) -> Tree {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let t = Tree(std::env::temp_dir().join(format!("vl-replay-{}-{n}", std::process::id())));
        let mounts = match kind {
            Kind::V1 => "cgroup /sys/fs/cgroup/cpuacct cgroup rw,cpuacct 0 0\ncgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\n",
            _ => "cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n",
        };
        t.put("proc/mounts", mounts);
        t.put("proc/softirqs", "CPU0\nNET_RX: 0\n");
        t.put("proc/interrupts", "CPU0\n 1: 0\n");
        let kthreads: Vec<u32> = (0..cpus as u32).map(|c| 100 + c).chain([50]).collect();
        let list: Vec<String> = kthreads.iter().map(u32::to_string).collect();
        t.put("proc/2/task/2/children", &(list.join(" ") + " "));
        for c in 0..cpus {
            let tid = 100 + c;
            t.put(&format!("proc/{tid}/comm"), &format!("ksoftirqd/{c}\n"));
            t.put(
                &format!("proc/{tid}/status"),
                &format!("Cpus_allowed_list:\t{c}\n"),
            );
            t.put(&format!("proc/{tid}/schedstat"), "0 0 0\n");
        }
        t.put("proc/50/comm", "napi/eth0-8193\n");
        t.put(
            "proc/50/status",
            &format!("Cpus_allowed_list:\t0-{}\n", cpus - 1),
        );
        t.put("proc/50/schedstat", "0 0 0\n");
        for i in 0..tasks {
            let pid = 10_000 + i;
            t.put(
                &format!("proc/{pid}/stat"),
                &format!("{pid} (sleep) S 1 {pid} 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0\n"),
            );
        }
        let (root, tops) = Tree::layout(kind);
        for top in &tops {
            t.put(&format!("{root}/{top}/cgroup.procs"), "");
        }
        let crowd: String = (0..tasks).map(|i| format!("{}\n", 10_000 + i)).collect();
        t.put(&format!("{root}/system.slice/cgroup.procs"), &crowd);
        if kind != Kind::V1 {
            t.put(&format!("{root}/cgroup.threads"), &(list.join("\n") + "\n"));
        }
        t.put(&format!("{root}/vnetlab/l/g1/cgroup.procs"), "700\n");
        t.put(
            "sys/fs/cgroup/cpuset/vnetlab/l/g1/cgroup.procs",
            "700\n777\n",
        );
        // The lab's task 777 left g1's accounting cgroup for the root, staying in its namespace.
        t.put("proc/777/cgroup", "4:cpuacct:/\n0::/\n");
        std::fs::create_dir_all(t.0.join("proc/777/ns")).unwrap();
        std::os::unix::fs::symlink(format!("net:[{NETNS}]"), t.0.join("proc/777/ns/net")).unwrap();
        t.edge(kind, cpus, Edge::default());
        t
    }

    /// Writes one instant's counters: seconds per CPU of the root (every task), of system.slice,
    /// of g1, the stray's, and each CPU's idle.
    fn edge(&self, kind: Kind, cpus: usize, e: Edge) {
        let (root, _) = Tree::layout(kind);
        let per = |v: &[f64]| -> String {
            (0..cpus)
                .map(|c| format!("{}", (v.get(c).copied().unwrap_or(0.0) * 1e9) as u64))
                .collect::<Vec<_>>()
                .join(" ")
                + " \n"
        };
        let mut stat = "cpu  0 0 0 0 0 0 0 0 0 0\n".to_string();
        for c in 0..cpus {
            let idle = e.idle.get(c).copied().unwrap_or(0.0);
            stat += &format!(
                "cpu{c} 0 0 0 {} 0 0 0 0 0 0\n",
                (idle * 100.0).round() as u64
            );
            for (s, share) in [(0, 0.0), (1, 1.0)] {
                let us = (idle * share * 1e6).round() as u64;
                self.put(
                    &format!("sys/devices/system/cpu/cpu{c}/cpuidle/state{s}/time"),
                    &format!("{us}\n"),
                );
            }
        }
        self.put("proc/stat", &stat);
        let stat_of = |pid: u32, s: f64| {
            format!(
                "{pid} (burn) R 1 {pid} 1 0 -1 4194560 0 0 0 0 {} 0 0 0 20 0 1 0 5 0 0\n",
                (s * 100.0).round() as u64
            )
        };
        self.put("proc/777/stat", &stat_of(777, e.stray));
        match kind {
            Kind::V1 => {
                self.put(&format!("{root}/cpuacct.usage_percpu"), &per(&e.root));
                self.put(
                    &format!("{root}/system.slice/cpuacct.usage_percpu"),
                    &per(&e.system),
                );
                self.put(
                    &format!("{root}/user.slice/cpuacct.usage_percpu"),
                    &per(&[]),
                );
                self.put(
                    &format!("{root}/vnetlab/l/g1/cpuacct.usage_percpu"),
                    &per(&e.g1),
                );
            }
            _ => {
                let stat = |s: f64| {
                    format!(
                        "usage_usec {}\nuser_usec 0\nsystem_usec 0\n",
                        (s * 1e6) as u64
                    )
                };
                for top in Tree::layout(kind).1 {
                    self.put(&format!("{root}/{top}/cpu.stat"), &stat(0.0));
                }
                self.put(
                    &format!("{root}/system.slice/cpu.stat"),
                    &stat(e.system.iter().sum()),
                );
                self.put(
                    &format!("{root}/vnetlab/cpu.stat"),
                    &stat(e.g1.iter().sum()),
                );
                self.put(
                    &format!("{root}/vnetlab/l/g1/cpu.stat"),
                    &stat(e.g1.iter().sum()),
                );
            }
        }
    }
}

/// One instant's counters, seconds.
#[derive(Default)]
struct Edge {
    root: Vec<f64>,
    system: Vec<f64>,
    g1: Vec<f64>,
    stray: f64,
    idle: Vec<f64>,
}

fn setup(kind: Kind, cpus: usize) -> Setup {
    assert!(cpus >= 2);
    let (root, _) = Tree::layout(kind);
    let mut cgroups = vec![PathBuf::from(format!("/{root}/vnetlab/l/g1"))];
    if kind == Kind::V1 {
        cgroups.push("/sys/fs/cgroup/cpuset/vnetlab/l/g1".into());
    }
    g1_lab(cgroups, NETNS, 1.min(cpus - 1))
}

/// The files one sample and one edge read on this tree.
fn reads(dir: &Path, setup: &Setup) -> (u64, u64) {
    let mut rd = Reader::new(Fs::at(dir), setup);
    let r0 = rd.fs.reads();
    rd.sample(setup);
    let r1 = rd.fs.reads();
    rd.full(setup, None);
    (r1 - r0, rd.fs.reads() - r1)
}

#[test]
fn the_files_read_per_sample_do_not_grow_with_the_hosts_tasks() {
    for (kind, cpus) in [
        (Kind::V1, 64),
        (Kind::V1, 2),
        (Kind::V2Systemd, 8),
        (Kind::V2Kube, 8),
    ] {
        let s = setup(kind, cpus);
        let few = Tree::new(kind, cpus, 100);
        let many = Tree::new(kind, cpus, 10_000);
        let (a, b) = (reads(&few.0, &s), reads(&many.0, &s));
        assert_eq!(
            a, b,
            "reads (per sample, per edge) with 100 and 10,000 tasks, {cpus} cores"
        );
        assert!(a.0 > 0 && a.1 > a.0, "{a:?}");
        // A sample reads the lab's cores' idle time, not every core's.
        assert!(a.0 < 40, "{cpus} cores: {a:?} reads a sample");
    }
}

#[test]
fn a_window_on_a_made_host_bills_the_guest_its_stray_and_other_cgroups() {
    let kind = Kind::V1;
    let t = Tree::new(kind, 2, 100);
    let s = setup(kind, 2);
    let mut rd = Reader::new(Fs::at(&t.0), &s);
    let (a, _) = rd.full(&s, None);
    // Over one second on the host's core 0: g1 0.25 s, its stray 0.25 s, system.slice 0.5 s.
    t.edge(
        kind,
        2,
        Edge {
            root: vec![1.0, 0.0],
            system: vec![0.5, 0.0],
            g1: vec![0.25, 0.0],
            stray: 0.25,
            idle: vec![0.0, 1.0],
        },
    );
    let (b, _) = rd.full(&s, None);
    let r = window(&s, &rd, a, b, 1.0);
    let pct = |name: &str| {
        r.parts
            .iter()
            .find(|p| p.name == name && p.side == Side::Host)
            .map(|p| p.busy_pct)
            .unwrap_or_else(|| panic!("no part {name}: {:?}", r.parts))
    };
    let near = |x: f64, want: f64| (x - want).abs() < 0.5;
    assert!(near(pct("g1"), 25.0), "{:?}", r.parts);
    assert!(near(pct("g1, outside its cgroup"), 25.0), "{:?}", r.parts);
    assert!(near(pct("other cgroups"), 50.0), "{:?}", r.parts);
    assert!(
        near(r.foreign_pct, 50.0) && near(r.host_busy_pct, 50.0),
        "{r:?}"
    );
}

/// The meter's report, with no traffic, of the window between edges `a` and `b`, `window_s`
/// apart, read by `rd` for the lab `s`.
pub(super) fn window(
    s: &Setup,
    rd: &Reader,
    a: super::Full,
    mut b: super::Full,
    window_s: f64,
) -> crate::records::cpu::CpuReport {
    b.light.at = a.light.at + std::time::Duration::from_secs_f64(window_s);
    let d = super::MeterData {
        parts: s.parts.clone(),
        acct: super::kernel::Accounting::this().clone(),
        source: rd.source.clone(),
        raw: vec![],
        sides: s.sides.clone(),
        series: vec![],
        edges: vec![a, b],
        counters_unsupported: None,
        counter_notes: vec![],
        softirq_untraced: None,
        own_cpu_s: 0.0,
        own_wall_s: window_s,
        ticks_per_s: rd.hz,
        reads_per_sample: 0,
        reads_per_edge: 0,
    };
    let none = Traffic {
        gbps: None,
        transactions_per_s: None,
        send_parts: &[],
        recv_parts: &[],
    };
    account::build(&d, &none).unwrap()
}

/// A lab of one guest, g1, in `cgroups` and network namespace `netns`, placed on the host's core
/// 0 and the client's core `client`, as on a farm's server.
pub(super) fn g1_lab(cgroups: Vec<PathBuf>, netns: u64, client: usize) -> Setup {
    Setup {
        parts: vec![Part {
            name: "g1".into(),
            id: PartId {
                kind: PartKind::Guest,
                side: Side::Host,
                role: Some(Role::Guest(1)),
            },
            cgroups,
            pid: None,
            threads: None,
            netns: Some(netns),
        }],
        sides: Some(Sides {
            host: vec![0],
            client: vec![client],
        }),
    }
}
