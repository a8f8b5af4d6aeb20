//! The shield on made hosts: a v1 systemd tree, a v2 tree with QEMU scopes and kubepods, and
//! /proc/irq and /sys/class/net made by hand; planned, applied and given back.

use super::*;
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;

/// A made host: files under a temporary root (v1's rule that a child's cpus lie inside its
/// parent's enforced on writes), affinities and kernel threads in maps.
struct Fake {
    real: RealHost,
    aff: RefCell<HashMap<u32, Vec<usize>>>,
    kthreads: Vec<u32>,
    v1: bool,
}

impl Fake {
    fn new(name: &str, v1: bool) -> Fake {
        // One folder per made host: tests that make the same kind run side by side.
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let root =
            std::env::temp_dir().join(format!("vl-shield-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        Fake {
            real: RealHost { root },
            aff: RefCell::new(HashMap::new()),
            kthreads: vec![2, 3],
            v1,
        }
    }
    fn put(&self, path: &str, text: &str) {
        let p = self.real.root.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    fn get(&self, path: &str) -> String {
        self.read(Path::new(path)).unwrap().trim().to_string()
    }
    /// A cgroup folder with its cpus and tasks.
    fn cg(&self, dir: &str, cpus: &str, tasks: &[u32]) {
        let t: String = tasks.iter().map(|t| format!("{t}\n")).collect();
        self.put(&format!("{dir}/cpuset.cpus"), cpus);
        self.put(&format!("{dir}/cgroup.procs"), &t);
        self.put(&format!("{dir}/tasks"), &t);
        self.put(&format!("{dir}/cgroup.threads"), &t);
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.real.root);
    }
}

impl Host for Fake {
    fn read(&self, path: &Path) -> Result<String, Error> {
        self.real.read(path)
    }
    fn write(&self, path: &Path, value: &str) -> Result<(), Error> {
        if self.v1 && path.ends_with("cpuset.cpus") {
            let want = crate::sys::parse_cpu_list(value).unwrap();
            for child in self.folders(path.parent().unwrap()) {
                let c = path.parent().unwrap().join(child).join("cpuset.cpus");
                let has = crate::sys::parse_cpu_list(&self.read(&c)?).unwrap();
                if has.iter().any(|x| !want.contains(x)) {
                    return Err(Error::Failed(format!("{} busy", path.display())));
                }
            }
        }
        // A made file is truncated as a kernel value file never needs to be.
        assert!(self.real.exists(path), "{} was never made", path.display());
        let at = self.real.root.join(path.strip_prefix("/").unwrap());
        std::fs::write(at, value).map_err(|e| Error::Failed(e.to_string()))
    }
    fn folders(&self, dir: &Path) -> Vec<String> {
        self.real.folders(dir)
    }
    fn exists(&self, path: &Path) -> bool {
        self.real.exists(path)
    }
    fn affinity(&self, tid: u32) -> Option<Vec<usize>> {
        self.aff.borrow().get(&tid).cloned()
    }
    fn set_affinity(&self, tid: u32, cpus: &[usize]) -> Result<(), Error> {
        self.aff.borrow_mut().insert(tid, cpus.to_vec());
        Ok(())
    }
    fn start_time(&self, tid: u32) -> Option<u64> {
        self.aff
            .borrow()
            .contains_key(&tid)
            .then_some(1000 + tid as u64)
    }
    fn kernel_thread(&self, tid: u32) -> bool {
        self.kthreads.contains(&tid)
    }
}

fn apply_all(h: &dyn Host, p: &Plan) {
    for c in &p.changes {
        apply(h, c).unwrap();
    }
}

fn give_back_all(h: &dyn Host, p: &Plan) -> Vec<String> {
    p.changes
        .iter()
        .rev()
        .filter_map(|c| give_back(h, c).unwrap())
        .collect()
}

const V1: &str = "/sys/fs/cgroup/cpuset";

/// A 4-core v1 systemd host: system.slice with a service pinned to 2-3, user.slice, vnetlab's
/// own folder; a task with its own narrower affinity.
fn v1_host(root_tasks: &[u32]) -> Fake {
    let h = Fake::new("v1", true);
    h.cg(V1, "0-3", root_tasks);
    h.cg(&format!("{V1}/system.slice"), "0-3", &[]);
    h.cg(&format!("{V1}/system.slice/sshd.service"), "0-3", &[100]);
    h.cg(&format!("{V1}/system.slice/db.service"), "2-3", &[101]);
    h.cg(&format!("{V1}/user.slice"), "0-3", &[200, 201]);
    h.cg(&format!("{V1}/vnetlab"), "0-3", &[]);
    h.cg(&format!("{V1}/vnetlab/lab/host"), "2", &[300]);
    h.cg(&format!("{V1}/pinned"), "2", &[400]);
    for (t, a) in [
        (100, vec![0, 1, 2, 3]),
        (101, vec![2, 3]),
        (200, vec![0, 1, 2, 3]),
    ] {
        h.aff.borrow_mut().insert(t, a);
    }
    h.aff.borrow_mut().insert(201, vec![2]); // narrower than user.slice's 0-3
    h.aff.borrow_mut().insert(400, vec![2]);
    h
}

/// The shield of core 2 of the 4-core v1 host, as `ask` says.
fn v1_plan(h: &Fake, ask: &Ask) -> Result<Plan, Error> {
    plan(h, &Tree::V1(V1.into()), &[2], &[0, 1, 2, 3], ask, "vlx")
}

#[test]
fn v1_cgroups_shrink_children_first_and_come_back_as_they_were() {
    let h = v1_host(&[2, 3]);
    let tree = Tree::V1(V1.into());
    let p = plan(&h, &tree, &[2], &[0, 1, 2, 3], &Ask::default(), "vlx").unwrap();
    apply_all(&h, &p);
    assert_eq!(h.get(&format!("{V1}/system.slice/cpuset.cpus")), "0-1,3");
    assert_eq!(
        h.get(&format!("{V1}/system.slice/sshd.service/cpuset.cpus")),
        "0-1,3"
    );
    assert_eq!(
        h.get(&format!("{V1}/system.slice/db.service/cpuset.cpus")),
        "3"
    );
    assert_eq!(h.get(&format!("{V1}/user.slice/cpuset.cpus")), "0-1,3");
    // vnetlab's own folders and a cgroup held on the shielded core alone stay.
    assert_eq!(h.get(&format!("{V1}/vnetlab/lab/host/cpuset.cpus")), "2");
    assert_eq!(h.get(&format!("{V1}/pinned/cpuset.cpus")), "2");
    assert!(
        p.summary.left.iter().any(|l| l.contains("pinned")),
        "{:?}",
        p.summary
    );
    assert_eq!(p.summary.cgroups, 4);
    // The kernel (before 6.2) widens a narrower affinity when the cpuset changes.
    h.aff.borrow_mut().insert(201, vec![0, 1, 3]);
    let notes = give_back_all(&h, &p);
    assert!(notes.is_empty(), "{notes:?}");
    for d in ["system.slice", "system.slice/sshd.service", "user.slice"] {
        assert_eq!(h.get(&format!("{V1}/{d}/cpuset.cpus")), "0-3", "{d}");
    }
    assert_eq!(
        h.get(&format!("{V1}/system.slice/db.service/cpuset.cpus")),
        "2-3"
    );
    assert_eq!(
        h.affinity(201),
        Some(vec![2]),
        "the narrower affinity came back"
    );
}

#[test]
fn v1_the_system_cgroup_file_is_never_written_but_system_slice_is() {
    let h = v1_host(&[2]);
    let p = v1_plan(&h, &Ask::default()).unwrap();
    assert!(p.changes.iter().all(|c| match c {
        Change::Value { path, .. } => path != Path::new(&format!("{V1}/cpuset.cpus")),
        _ => true,
    }));
}

#[test]
fn user_tasks_in_the_root_cgroup_refuse_the_shield_unless_a_root_is_named() {
    let h = v1_host(&[2, 3, 555]);
    let tree = Tree::V1(V1.into());
    let e = plan(&h, &tree, &[2], &[0, 1, 2, 3], &Ask::default(), "vlx").unwrap_err();
    assert!(e.to_string().contains("--shield-root"), "{e}");
    let ask = Ask {
        root: Some("user.slice".into()),
        irqs: None,
    };
    let p = plan(&h, &tree, &[2], &[0, 1, 2, 3], &ask, "vlx").unwrap();
    apply_all(&h, &p);
    assert_eq!(h.get(&format!("{V1}/user.slice/cpuset.cpus")), "0-1,3");
    assert_eq!(
        h.get(&format!("{V1}/system.slice/cpuset.cpus")),
        "0-3",
        "only the named root moves"
    );
    for bad in ["vnetlab", "../etc", "nosuch", "/"] {
        let ask = Ask {
            root: Some(bad.into()),
            irqs: None,
        };
        let e = plan(&h, &tree, &[2], &[0, 1, 2, 3], &ask, "vlx").unwrap_err();
        assert!(e.to_string().contains("--shield-root"), "{bad}: {e}");
    }
    give_back_all(&h, &p);
}

#[test]
fn a_value_changed_since_is_left_and_said() {
    let h = v1_host(&[2]);
    let p = v1_plan(&h, &Ask::default()).unwrap();
    apply_all(&h, &p);
    h.put(&format!("{V1}/user.slice/cpuset.cpus"), "1");
    h.aff.borrow_mut().insert(201, vec![1]); // someone pinned it since
    let notes = give_back_all(&h, &p);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("user.slice") && notes[0].contains("left"),
        "{notes:?}"
    );
    assert_eq!(h.get(&format!("{V1}/user.slice/cpuset.cpus")), "1");
    assert_eq!(h.affinity(201), Some(vec![1]));
    // A second give-back (cleanup after down) changes nothing.
    assert_eq!(give_back_all(&h, &p).len(), 1);
}

const V2: &str = "/sys/fs/cgroup";

#[test]
fn v2_machine_slice_and_kubepods_move_at_the_top_with_the_controller_enabled() {
    let h = Fake::new("v2", false);
    h.cg(V2, "", &[2, 3]);
    h.put(&format!("{V2}/cgroup.subtree_control"), "cpu memory");
    let scope = format!("{V2}/machine.slice/machine-qemu\\x2d1\\x2dvm.scope");
    h.cg(&format!("{V2}/machine.slice"), "", &[]);
    h.cg(&scope, "", &[700, 701]);
    let pod = format!("{V2}/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/cri-containerd-ab.scope");
    h.cg(&format!("{V2}/kubepods.slice"), "", &[]);
    h.cg(
        &format!("{V2}/kubepods.slice/kubepods-burstable.slice"),
        "",
        &[],
    );
    h.cg(&pod, "", &[800]);
    h.cg(&format!("{V2}/vnetlab"), "", &[]);
    h.aff.borrow_mut().insert(700, vec![0, 1, 2, 3]);
    h.aff.borrow_mut().insert(701, vec![1]);
    h.aff.borrow_mut().insert(800, vec![0, 1, 2, 3]);
    h.aff.borrow_mut().insert(801, vec![0]); // narrower, deep in a pod
    h.put(&format!("{pod}/cgroup.threads"), "800\n801\n");
    let tree = Tree::V2(V2.into());
    let p = plan(&h, &tree, &[0], &[0, 1, 2, 3], &Ask::default(), "vlx").unwrap();
    apply_all(&h, &p);
    assert!(p.changes.contains(&Change::Controller {
        path: format!("{V2}/cgroup.subtree_control").into()
    }));
    assert_eq!(h.get(&format!("{V2}/machine.slice/cpuset.cpus")), "1-3");
    assert_eq!(h.get(&format!("{V2}/kubepods.slice/cpuset.cpus")), "1-3");
    assert_eq!(h.get(&format!("{V2}/vnetlab/cpuset.cpus")), "");
    assert_eq!(p.summary.cgroups, 2);
    // v2 writes only the tops, but the tasks below them keep their own affinity too.
    assert!(p
        .changes
        .iter()
        .any(|c| matches!(c, Change::Affinity { tid: 801, .. })));
    assert!(p
        .changes
        .iter()
        .any(|c| matches!(c, Change::Affinity { tid: 701, .. })));
    give_back_all(&h, &p);
    assert_eq!(h.get(&format!("{V2}/machine.slice/cpuset.cpus")), "");
    // A named root deep in kubepods enables the controller on the way down.
    let ask = Ask {
        root: Some("kubepods.slice/kubepods-burstable.slice".into()),
        irqs: None,
    };
    let p = plan(&h, &tree, &[0], &[0, 1, 2, 3], &ask, "vlx").unwrap();
    let ctl = p
        .changes
        .iter()
        .filter(|c| matches!(c, Change::Controller { .. }))
        .count();
    assert_eq!(ctl, 2, "{:?}", p.changes);
}

#[test]
fn irqs_and_masks_move_off_the_core_but_never_the_labs_own_or_a_lone_one() {
    let h = Fake::new("irq", true);
    h.put("/proc/interrupts", "           CPU0       CPU1\n 24:  10  0  PCI-MSI  eth0-rx-0\n 25:  0 0 PCI-MSI eth0-tx-0\n 26: 5 5 PCI-MSI  nvme0q1\n  0: 1 0 IO-APIC timer\n");
    for (n, a) in [(24, "0-3"), (25, "1"), (26, "1-2"), (0, "1")] {
        h.put(&format!("/proc/irq/{n}/smp_affinity_list"), a);
    }
    h.put("/sys/class/net/eth0/queues/rx-0/rps_cpus", "0000000e");
    h.put("/sys/class/net/eth0/queues/tx-0/xps_cpus", "00000002");
    h.put("/sys/class/net/vlx-host/queues/rx-0/rps_cpus", "f");
    h.put("/sys/class/net/lo/queues/rx-0/rps_cpus", "0");
    let mut p = Plan::default();
    devices::plan(&h, &Irqs::All, &[1], "vlx", &mut p).unwrap();
    apply_all(&h, &p);
    assert_eq!(h.get("/proc/irq/24/smp_affinity_list"), "0,2-3");
    assert_eq!(h.get("/proc/irq/26/smp_affinity_list"), "2");
    assert_eq!(
        h.get("/proc/irq/25/smp_affinity_list"),
        "1",
        "alone on the core: stays"
    );
    assert_eq!(
        h.get("/sys/class/net/eth0/queues/rx-0/rps_cpus"),
        "0000000c"
    );
    assert_eq!(
        h.get("/sys/class/net/eth0/queues/tx-0/xps_cpus"),
        "00000002"
    );
    assert_eq!(h.get("/sys/class/net/vlx-host/queues/rx-0/rps_cpus"), "f");
    assert_eq!((p.summary.irqs, p.summary.masks), (2, 1));
    assert_eq!(p.summary.left.len(), 3, "{:?}", p.summary.left);
    give_back_all(&h, &p);
    assert_eq!(h.get("/proc/irq/24/smp_affinity_list"), "0-3");
    assert_eq!(
        h.get("/sys/class/net/eth0/queues/rx-0/rps_cpus"),
        "0000000e"
    );
    // Named devices: only their IRQs and masks; the lab's own and unknown ones are refused.
    let mut p = Plan::default();
    devices::plan(&h, &Irqs::Devices(vec!["eth0".into()]), &[1], "vlx", &mut p).unwrap();
    assert_eq!((p.summary.irqs, p.summary.masks), (1, 1), "{:?}", p.changes);
    for bad in ["vlx-host", "nosuch0"] {
        let mut p = Plan::default();
        let e =
            devices::plan(&h, &Irqs::Devices(vec![bad.into()]), &[1], "vlx", &mut p).unwrap_err();
        assert!(e.to_string().contains("--shield-irqs"), "{e}");
    }
}

#[test]
fn masks_parse_as_the_kernel_prints_them() {
    assert_eq!(devices::mask_cpus("0000000e"), Some(vec![1, 2, 3]));
    assert_eq!(devices::mask_cpus("00000001,00000000"), Some(vec![32]));
    assert_eq!(devices::mask_cpus("0"), Some(vec![]));
    for bad in ["", "xyz", "1,,2", "123456789"] {
        assert_eq!(devices::mask_cpus(bad), None, "{bad}");
    }
    let devs = vec!["eth0".to_string(), "virtio0".to_string()];
    let t = " 1: 0 IO eth0\n 2: 0 IO eth0-rx-1\n 3: 0 IO eth01\n 4: 0 IO virtio0-input.0\n x: y\n";
    assert_eq!(devices::of_devices(t, &devs), vec![1, 2, 4]);
}

#[test]
fn the_cpuset_tree_is_found_in_mounts() {
    let v1 = "cgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n";
    assert_eq!(
        tree_of(v1, |_| String::new()),
        Some(Tree::V1("/sys/fs/cgroup/cpuset".into()))
    );
    let v2 = "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n";
    assert_eq!(
        tree_of(v2, |_| "cpu cpuset".into()),
        Some(Tree::V2("/sys/fs/cgroup".into()))
    );
    assert_eq!(tree_of(v2, |_| "cpu memory".into()), None);
    assert!(plan(
        &Fake::new("none", true),
        &Tree::V1(V1.into()),
        &[0, 1],
        &[0, 1],
        &Ask::default(),
        "vlx"
    )
    .is_err());
}

#[test]
fn a_planted_journal_change_is_refused() {
    let ok = Change::Value {
        path: "/sys/fs/cgroup/cpuset/system.slice/cpuset.cpus".into(),
        previous: "0-3".into(),
        set: "1-3".into(),
    };
    assert!(valid(&ok));
    let v2_inherit = Change::Value {
        path: "/sys/fs/cgroup/machine.slice/cpuset.cpus".into(),
        previous: "".into(),
        set: "1-3".into(),
    };
    assert!(valid(&v2_inherit));
    for (path, previous) in [
        ("/etc/passwd", "0"),
        ("/sys/fs/cgroup/../../etc/cpuset.cpus", "0"),
        ("/sys/fs/cgroup/x/cpuset.cpus", "0; rm -rf /"),
        ("/proc/irq/5/smp_affinity", "1"),
        ("/sys/class/net/eth0/queues/rx-0/rps_cpus", "zz"),
        ("relative/cpuset.cpus", "0"),
    ] {
        let c = Change::Value {
            path: path.into(),
            previous: previous.into(),
            set: "1".into(),
        };
        assert!(!valid(&c), "{path} {previous}");
    }
    assert!(!valid(&Change::Controller {
        path: "/etc/cgroup.subtree_control".into()
    }));
}
