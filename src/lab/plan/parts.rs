//! The lab's parts for CPU accounting: host, client, each guest and each guest's backend, a
//! cgroup folder each, confined to its side's cores when the lab is placed.

use crate::lab::Error;
use std::path::PathBuf;

use super::cx::{backend_part, Cx, Step};
use crate::lab::cgroup::{self, Hierarchy};
use crate::lab::hostcmd::HostCmd;
use crate::records::cpu::CpuPlan;
use crate::units::CpuList;
use crate::vocab::Role;

pub struct Parts {
    /// Per part: its name and CPU list (when placed).
    cpus: Vec<(String, Option<String>)>,
    /// Per part: the folders it joins.
    folders: Vec<(String, Vec<PathBuf>)>,
    /// What makes the folders.
    steps: Vec<cgroup::CgStep>,
    pub notes: Vec<String>,
}

impl Parts {
    pub fn folders(&self, part: &str) -> Vec<PathBuf> {
        self.folders
            .iter()
            .find(|(p, _)| p == part)
            .map(|(_, f)| f.clone())
            .unwrap_or_default()
    }
    pub fn cpus(&self, part: &str) -> Option<String> {
        self.cpus
            .iter()
            .find(|(p, _)| p == part)
            .and_then(|(_, c)| c.clone())
    }
    pub fn steps(&self) -> Vec<Step> {
        self.steps
            .iter()
            .map(|s| match s {
                cgroup::CgStep::Make { path, shared } => Step::MakeCgroup {
                    path: path.clone(),
                    shared: *shared,
                },
                cgroup::CgStep::Write { path, value } => Step::Run {
                    creates: vec![],
                    cmd: HostCmd::Write {
                        path: path.clone(),
                        value: value.clone(),
                    },
                },
            })
            .collect()
    }
}

/// The lab's parts: with `backends`, a part per guest's backend too; `per_core`: how many of
/// this datapath's guests a host core drives at once.
pub(super) fn plan(
    cx: &Cx,
    cg: &Hierarchy,
    cpus: &CpuPlan,
    backends: bool,
    per_core: usize,
) -> Result<Parts, Error> {
    let placed = |l: CpuList| cpus.placed.then(|| l.to_string());
    let mut parts = vec![("host".to_string(), placed(cpus.host.clone()))];
    // A client on another machine is measured there, by its own `vnetlab serve`.
    if !cx.remote {
        parts.push(("client".to_string(), placed(cpus.client.clone())));
    }
    parts.extend(
        cx.guests
            .iter()
            .map(|&i| (Role::Guest(i).to_string(), placed(cpus.guest(i)))),
    );
    if backends {
        parts.extend(
            cx.guests
                .iter()
                .map(|&i| (backend_part(i), placed(cpus.backend(i)))),
        );
    }
    let mut notes = Vec::new();
    if let Some(why) = &cpus.unplaced_because {
        notes.push(format!("unplaced: {why}; every result says so"));
    }
    notes.extend(crowding(cx, cpus, per_core));
    let cgp = cgroup::plan(cg, &cx.n.cgroup(), &parts)?;
    if let Hierarchy::None { why } = cg {
        notes.push(format!("no per-part CPU accounting: {why}"));
    }
    Ok(Parts {
        cpus: parts,
        folders: cgp.folders,
        steps: cgp.steps,
        notes,
    })
}

/// A backend is a process per guest, a kernel datapath is not: past these many guests per host
/// core, a test from every guest at once may leave some with nothing (the result names them).
fn crowding(cx: &Cx, cpus: &CpuPlan, per_core: usize) -> Option<String> {
    (cx.t.guests as usize > per_core * cpus.host.len().max(1)).then(|| {
        format!(
            "{} guests on {} host core(s): more than this host can drive at once in mode {} (about {per_core} per core); a test from every guest may starve some, and says which",
            cx.t.guests,
            cpus.host.len(),
            cx.t.mode
        )
    })
}
