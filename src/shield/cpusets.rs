//! Moving other cgroups' cpusets off the shielded cores. In v1 a child's cpus must lie inside its
//! parent's, so every folder that holds a shielded core shrinks, children before parents (and
//! grows back parents first, as the journal gives back in reverse). In v2 a child's effective
//! cpus follow its parent's, so only the top folders (or `--shield-root`) are written, with the
//! cpuset controller enabled on the way down where it was not. Tasks whose own affinity is
//! narrower than their cpuset are recorded first: kernels before 6.2 lose it when a cpuset
//! shrinks.

use super::{Change, Error, Host, Plan, Tree};
use crate::units::CpuList;
use std::path::{Path, PathBuf};

/// The deepest folder the shield walks (systemd and Kubernetes trees are a handful deep).
const MAX_DEPTH: usize = 12;
/// The most folders it walks.
const MAX_FOLDERS: usize = 20_000;

/// Plans the cpuset moves of `tree` (see the module's doc).
pub fn plan(
    h: &dyn Host,
    tree: &Tree,
    cores: &[usize],
    rest: &[usize],
    only: Option<&Path>,
    p: &mut Plan,
) -> Result<(), Error> {
    let (root, v1) = match tree {
        Tree::V1(r) => (r.as_path(), true),
        Tree::V2(r) => (r.as_path(), false),
    };
    let tops = match only {
        Some(o) => vec![named_root(h, root, o)?],
        None => {
            refuse_root_tasks(h, root, v1)?;
            h.folders(root)
                .into_iter()
                .filter(|n| n != "vnetlab" && !n.starts_with("vl-"))
                .map(|n| root.join(n))
                .collect()
        }
    };
    // Every folder's tasks are watched; v1 writes every folder, v2 only the tops.
    let (mut written, mut watched) = (Vec::new(), Vec::new());
    for t in &tops {
        let mut under = Vec::new();
        walk(h, t, 0, &mut under)?;
        match v1 {
            true => written.extend(under.iter().cloned()),
            false => {
                enable_down_to(h, root, t, p);
                written.push(t.clone());
            }
        }
        watched.extend(under);
    }
    // Affinities first: the journal gives back in reverse, so they come back after the cpusets.
    for f in &watched {
        record_affinities(h, f, v1, cores, rest, p);
    }
    for f in written.iter().rev() {
        shrink(h, f, cores, rest, p);
    }
    Ok(())
}

/// `--shield-root CGROUP` as a folder of the tree: relative, inside it, not vnetlab's, there.
fn named_root(h: &dyn Host, root: &Path, o: &Path) -> Result<PathBuf, Error> {
    let rel = o.strip_prefix(root).unwrap_or(o);
    let rel = rel.strip_prefix("/").unwrap_or(rel);
    let ok = rel
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)))
        && rel.components().next().is_some()
        && !rel.starts_with("vnetlab");
    let dir = root.join(rel);
    if !ok || !h.exists(&dir.join("cgroup.procs")) {
        return Err(Error::Input(format!(
            "--shield-root {}: no such cgroup under {}: name a folder there (e.g. system.slice)",
            o.display(),
            root.display()
        )));
    }
    Ok(dir)
}

/// Refuses where user tasks sit in the root cgroup: no cpuset moves them.
fn refuse_root_tasks(h: &dyn Host, root: &Path, v1: bool) -> Result<(), Error> {
    let list = if v1 { "tasks" } else { "cgroup.threads" };
    let text = h.read(&root.join(list)).unwrap_or_default();
    let users: Vec<u32> = text
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .filter(|t| !h.kernel_thread(*t))
        .collect();
    match users.first() {
        None => Ok(()),
        Some(t) => Err(Error::Input(format!(
            "--shield: {} tasks sit in the root cgroup {} (task {t} among them), which no cpuset moves: name the cgroup the shield may move with --shield-root CGROUP",
            users.len(),
            root.display()
        ))),
    }
}

/// Every folder under `dir` (with it), parents before children.
fn walk(h: &dyn Host, dir: &Path, depth: usize, out: &mut Vec<PathBuf>) -> Result<(), Error> {
    if depth > MAX_DEPTH || out.len() >= MAX_FOLDERS {
        return Err(Error::Failed(format!(
            "{} is deeper or wider than the shield walks ({MAX_DEPTH} levels, {MAX_FOLDERS} folders)",
            dir.display()
        )));
    }
    out.push(dir.to_path_buf());
    for n in h.folders(dir) {
        walk(h, &dir.join(n), depth + 1, out)?;
    }
    Ok(())
}

/// v2: the cpuset controller enabled in each folder's subtree_control from the root down to
/// `dir`'s parent, where it is not.
fn enable_down_to(h: &dyn Host, root: &Path, dir: &Path, p: &mut Plan) {
    let mut at = root.to_path_buf();
    let rel = dir.strip_prefix(root).unwrap_or(dir);
    for c in rel.components() {
        let ctl = at.join("cgroup.subtree_control");
        let on = h.read(&ctl).unwrap_or_default();
        if !on.split_whitespace().any(|c| c == "cpuset") {
            p.changes.push(Change::Controller { path: ctl });
        }
        at = at.join(c);
    }
}

/// A folder's cpus, as written (v2: empty where it inherits).
fn cpus(h: &dyn Host, dir: &Path) -> Option<String> {
    h.read(&dir.join("cpuset.cpus"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// The CPUs a folder's tasks may use: its cpus, else (v2, inherited) every online CPU.
fn effective(h: &dyn Host, dir: &Path, cores: &[usize], rest: &[usize]) -> Vec<usize> {
    match cpus(h, dir).as_deref().and_then(crate::sys::parse_cpu_list) {
        Some(v) if !v.is_empty() => v,
        _ => {
            let mut all = [cores, rest].concat();
            all.sort_unstable();
            all
        }
    }
}

/// The folder's cpus without the shielded cores, where it holds one; a folder held on those
/// cores alone stays, said in the summary.
fn shrink(h: &dyn Host, dir: &Path, cores: &[usize], rest: &[usize], p: &mut Plan) {
    let previous = cpus(h, dir).unwrap_or_default();
    let had = effective(h, dir, cores, rest);
    if !had.iter().any(|c| cores.contains(c)) {
        return;
    }
    let keep: Vec<usize> = had.iter().copied().filter(|c| !cores.contains(c)).collect();
    if keep.is_empty() {
        p.summary.left.push(format!(
            "{} (its cpuset is CPU {previous} alone)",
            dir.display()
        ));
        return;
    }
    p.changes.push(Change::Value {
        path: dir.join("cpuset.cpus"),
        previous,
        set: CpuList(keep).to_string(),
    });
    p.summary.cgroups += 1;
}

/// The tasks in `dir` whose own affinity is narrower than the folder's cpus.
fn record_affinities(
    h: &dyn Host,
    dir: &Path,
    v1: bool,
    cores: &[usize],
    rest: &[usize],
    p: &mut Plan,
) {
    let had = effective(h, dir, cores, rest);
    if !had.iter().any(|c| cores.contains(c)) {
        return;
    }
    let keep: Vec<usize> = had.iter().copied().filter(|c| !cores.contains(c)).collect();
    let list = if v1 { "tasks" } else { "cgroup.threads" };
    let text = h.read(&dir.join(list)).unwrap_or_default();
    for tid in text.lines().filter_map(|l| l.trim().parse::<u32>().ok()) {
        let (Some(mine), Some(start)) = (h.affinity(tid), h.start_time(tid)) else {
            continue;
        };
        if mine == had || h.kernel_thread(tid) {
            continue;
        }
        let without: Vec<usize> = mine
            .iter()
            .copied()
            .filter(|c| !cores.contains(c))
            .collect();
        let mut left: Vec<CpuList> = Vec::new();
        for l in [without, keep.clone(), had.clone()] {
            if !l.is_empty() && !left.iter().any(|x| x.0 == l) {
                left.push(CpuList(l));
            }
        }
        p.changes.push(Change::Affinity {
            tid,
            start,
            previous: CpuList(mine),
            left,
        });
        p.summary.affinities += 1;
    }
}
