//! The meter replayed on hosts a real kernel wrote: `scripts/record-meter-hosts.sh` boots a
//! many-vCPU QEMU guest, makes a systemd host's and a Kubernetes node's cgroup v2 trees by hand
//! (cpu controller on), runs a lab guest's loop, a stray of it and another tenant's loop on CPU 0
//! beside a crowd of 100 and of 10,000 light tasks, and copies /proc, /sys and the cgroups at
//! three instants. Replayed here: the files each sample and each edge read are the same for both
//! crowds, and the window's parts agree with what each loop's own /proc/PID/stat says it ran.

use super::fs::Fs;
use super::{Reader, Setup, Side};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const FIXTURES: &str = "tests/fixtures/meter-hosts";

/// One recorded set, unpacked to a folder of its own (removed when dropped), with the folder
/// the meter reads: common/ with one instant laid over it.
struct Recorded {
    dir: PathBuf,
    meta: BTreeMap<String, String>,
}

impl Drop for Recorded {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Copies the tree `from` into `to`: folders, files and symbolic links.
fn lay(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let t = e.file_type().unwrap();
        if t.is_dir() {
            lay(&src, &dst);
        } else if t.is_symlink() {
            let _ = std::fs::remove_file(&dst);
            std::os::unix::fs::symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

impl Recorded {
    fn open(name: &str) -> Recorded {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("vl-recorded-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let file = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(FIXTURES)
            .join(format!("{name}.tar.gz"));
        let gz = flate2::read::GzDecoder::new(std::fs::File::open(&file).unwrap());
        tar::Archive::new(gz).unpack(dir.join("raw")).unwrap();
        let meta = std::fs::read_to_string(dir.join("raw/meta"))
            .unwrap()
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Recorded { dir, meta }
    }

    /// The folder the meter reads, holding instant `edge` (e0, e1, e2) now.
    fn host(&self) -> PathBuf {
        self.dir.join("host")
    }

    fn at(&self, edge: &str) {
        let host = self.host();
        let _ = std::fs::remove_dir_all(&host);
        lay(&self.dir.join("raw/common"), &host);
        lay(&self.dir.join("raw").join(edge), &host);
    }

    fn pid(&self, k: &str) -> u32 {
        self.meta[k].parse().unwrap()
    }

    fn netns(&self) -> u64 {
        let t = &self.meta["netns"];
        t.trim_start_matches("net:[")
            .trim_end_matches(']')
            .parse()
            .unwrap()
    }

    /// A task's CPU seconds at `edge` by its own /proc/PID/stat (utime + stime, USER_HZ 100).
    fn ran_s(&self, edge: &str, pid: u32) -> f64 {
        let t =
            std::fs::read_to_string(self.dir.join(format!("raw/{edge}/proc/{pid}/stat"))).unwrap();
        let after = &t[t.rfind(')').unwrap() + 2..];
        let f: Vec<&str> = after.split_whitespace().collect();
        (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / 100.0
    }

    /// The kernel threads at e0 bound to the lab's cores (CPU 0 or 1 alone): each is read by
    /// thread id at every edge, and workers on a core come and go between recordings.
    fn lab_kthreads(&self) -> u64 {
        let e0 = self.dir.join("raw/e0/proc");
        let kids = std::fs::read_to_string(e0.join("2/task/2/children")).unwrap();
        kids.split_whitespace()
            .filter(|tid| {
                let st = std::fs::read_to_string(e0.join(tid).join("status")).unwrap_or_default();
                st.lines().any(|l| {
                    l.strip_prefix("Cpus_allowed_list:")
                        .is_some_and(|c| ["0", "1"].contains(&c.trim()))
                })
            })
            .count() as u64
    }

    /// Seconds the machine was up at `edge` (/proc/uptime).
    fn up_s(&self, edge: &str) -> f64 {
        let t = std::fs::read_to_string(self.dir.join(format!("raw/{edge}/proc/uptime"))).unwrap();
        t.split_whitespace().next().unwrap().parse().unwrap()
    }

    /// The lab as the meter is given it: guest g1 in `vnetlab/l/g1`, in its own namespace,
    /// placed on CPU 0 (host) and CPU 1 (client).
    fn setup(&self) -> Setup {
        let g1 = PathBuf::from("/sys/fs/cgroup/vnetlab/l/g1");
        super::replay_tests::g1_lab(vec![g1], self.netns(), 1)
    }
}

/// The files one sample and one edge read at instant e0.
fn reads(r: &Recorded) -> (u64, u64) {
    r.at("e0");
    let s = r.setup();
    let mut rd = Reader::new(Fs::at(&r.host()), &s);
    let r0 = rd.fs.reads();
    rd.sample(&s);
    let r1 = rd.fs.reads();
    rd.full(&s, None);
    (r1 - r0, rd.fs.reads() - r1)
}

#[test]
fn a_recorded_hosts_sample_reads_as_many_files_beside_10000_tasks_as_beside_100() {
    for kind in ["systemd", "kube"] {
        let (few, many) = (
            Recorded::open(&format!("{kind}-100")),
            Recorded::open(&format!("{kind}-10000")),
        );
        assert_eq!(few.meta["cpus"], "64", "recorded on a 64-vCPU guest");
        let crowd = |r: &Recorded| {
            r.meta["crowd"]
                .rsplit(' ')
                .next()
                .unwrap()
                .parse::<usize>()
                .unwrap()
        };
        assert!(
            crowd(&few) >= 100 && crowd(&many) >= 10_000,
            "{:?}",
            many.meta
        );
        let (a, b) = (reads(&few), reads(&many));
        // Per edge, less one read for each kernel thread on the lab's cores.
        let (ka, kb) = (few.lab_kthreads(), many.lab_kthreads());
        assert_eq!(
            (a.0, a.1 - ka),
            (b.0, b.1 - kb),
            "{kind}: reads (per sample, per edge less {ka} and {kb} kernel threads) beside 100 and 10,000 tasks"
        );
        assert!(a.0 > 0 && a.1 > a.0 && a.0 < 40, "{kind}: {a:?}");
    }
}

#[test]
fn a_recorded_window_bills_the_guest_its_stray_and_the_other_tenant_as_they_ran() {
    for name in ["systemd-100", "systemd-10000", "kube-100", "kube-10000"] {
        let r = Recorded::open(name);
        let s = r.setup();
        r.at("e0");
        let mut rd = Reader::new(Fs::at(&r.host()), &s);
        rd.full(&s, None);
        r.at("e1");
        let (a, _) = rd.full(&s, None);
        r.at("e2");
        let (b, _) = rd.full(&s, None);
        let window = r.up_s("e2") - r.up_s("e1");
        let rep = super::replay_tests::window(&s, &rd, a, b, window);
        // What each loop ran, by its own stat, as % of CPU 0.
        let ran = |k: &str| {
            let p = r.pid(k);
            (r.ran_s("e2", p) - r.ran_s("e1", p)) / window * 100.0
        };
        let (g1, stray, other) = (ran("g1") + ran("labsh"), ran("stray"), ran("other"));
        let part = |n: &str| {
            rep.parts
                .iter()
                .find(|p| p.name == n && p.side == Side::Host)
                .map(|p| p.busy_pct)
                .unwrap_or_else(|| panic!("{name}: no part {n}: {:?}", rep.parts))
        };
        // Within the ticks' resolution over the window (two ticks of 10 ms each side) and 1 point.
        let tol = 2.0 * 2.0 / window + 1.0;
        let near = |x: f64, want: f64| (x - want).abs() <= tol;
        let said = format!("{name}: g1 ran {g1:.1} %, its stray {stray:.1} %, the other tenant {other:.1} % (±{tol:.1}): {:?}", rep.parts);
        assert!(g1 > 10.0 && stray > 10.0 && other > 10.0, "{said}");
        assert!(near(part("g1"), g1), "{said}");
        assert!(near(part("g1, outside its cgroup"), stray), "{said}");
        assert!(
            near(rep.host_busy_pct, g1 + stray),
            "{said}: host {}",
            rep.host_busy_pct
        );
        assert!(
            rep.foreign_pct >= other - tol,
            "{said}: foreign {}",
            rep.foreign_pct
        );
    }
}
