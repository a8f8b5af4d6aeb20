//! The lab's CPU plan: which cores stand for the client machine and which for the host, where
//! each guest and backend may run, and how receive processing on each end of the wire is steered
//! to the receiving side's cores. Pure: it reads nothing from the host.

use crate::lab::Error;
use crate::records::cpu::{CpuPlan, Steering};

use crate::units::CpuList;

/// The client's default share: ⌈ncpu/4⌉ cores, at least 1, taken from the top.
pub fn default_client(online: &[usize]) -> CpuList {
    let n = online.len().div_ceil(4).max(1).min(online.len());
    CpuList(online[online.len() - n..].to_vec())
}

/// A CPU list given with `flag`: not empty, and only online CPUs.
fn check_list(flag: &str, l: &CpuList, online: &[usize]) -> Result<(), Error> {
    if l.is_empty() {
        return Err(Error::Input(format!(
            "{flag}: the list is empty: name at least one CPU"
        )));
    }
    if let Some(c) = l.0.iter().find(|c| !online.contains(c)) {
        return Err(Error::Input(format!(
            "{flag} {l}: CPU {c} is not online here (online: {}): use CPUs from that list",
            CpuList(online.to_vec())
        )));
    }
    Ok(())
}

/// Builds the CPU plan from the online CPUs and the lab's requests. `no_cpuset` says why the
/// host cannot confine processes (no cpuset controller); then the plan is unplaced.
pub fn plan(
    online: &[usize],
    client: Option<&CpuList>,
    host: Option<&CpuList>,
    pin: bool,
    no_cpuset: Option<String>,
) -> Result<CpuPlan, Error> {
    for (flag, list) in [("--client-cpus", client), ("--host-cpus", host)] {
        if let Some(l) = list {
            check_list(flag, l, online)?;
        }
    }
    let client = client.cloned().unwrap_or_else(|| default_client(online));
    let host = match host {
        Some(h) => h.clone(),
        None => CpuList(
            online
                .iter()
                .copied()
                .filter(|c| !client.contains(*c))
                .collect(),
        ),
    };
    if let Some(c) = host.0.iter().find(|c| client.contains(**c)) {
        return Err(Error::Input(format!("--host-cpus {host} and --client-cpus {client} share CPU {c}: the client stands for another machine, so give them disjoint CPUs")));
    }
    let unplaced = |why: String| CpuPlan {
        host: CpuList(online.to_vec()),
        client: CpuList(online.to_vec()),
        placed: false,
        steering: Steering::None,
        unplaced_because: Some(why),
        pin,
    };
    if host.is_empty() {
        if online.len() == 1 {
            return Ok(unplaced(
                "this host has one CPU, so the client and the host share it".into(),
            ));
        }
        return Err(Error::Input(format!("--client-cpus {client} takes every CPU and leaves none for the host: give the client fewer")));
    }
    if let Some(why) = no_cpuset {
        if pin {
            return Err(Error::Input(format!(
                "--pin needs a cpuset cgroup, and this host has none ({why}): run without --pin"
            )));
        }
        return Ok(unplaced(format!(
            "no cpuset controller ({why}), so processes run on any core"
        )));
    }
    Ok(CpuPlan {
        host,
        client,
        placed: true,
        steering: Steering::Rps,
        unplaced_because: None,
        pin,
    })
}

/// The plan when the client is another machine (`--client`): every core (or `--host-cpus`) is
/// the host's, none the client's, and nothing needs steering across a wire inside this machine.
pub fn remote_plan(
    online: &[usize],
    host: Option<&CpuList>,
    pin: bool,
    no_cpuset: Option<String>,
) -> Result<CpuPlan, Error> {
    if let Some(l) = host {
        check_list("--host-cpus", l, online)?;
    }
    if pin && no_cpuset.is_some() {
        return Err(Error::Input(
            "--pin needs a cpuset cgroup, and this host has none: run without --pin".into(),
        ));
    }
    Ok(CpuPlan {
        host: host.cloned().unwrap_or_else(|| CpuList(online.to_vec())),
        client: CpuList(vec![]),
        placed: no_cpuset.is_none(),
        steering: Steering::None,
        unplaced_because: no_cpuset
            .map(|why| format!("no cpuset controller ({why}), so processes run on any core")),
        pin,
    })
}

impl CpuPlan {
    /// Whether the client is another machine (it has no cores here).
    pub fn remote_client(&self) -> bool {
        self.client.is_empty()
    }

    /// The cores of guest `i` (1-based): every host core, or with `--pin` one of them.
    pub fn guest(&self, i: u32) -> CpuList {
        self.pinned(2 * (i as usize - 1))
    }
    /// The cores of guest `i`'s backend: with `--pin` the host core after its guest's.
    pub fn backend(&self, i: u32) -> CpuList {
        self.pinned(2 * (i as usize - 1) + 1)
    }
    fn pinned(&self, k: usize) -> CpuList {
        if self.pin && self.placed {
            CpuList(vec![self.host.0[k % self.host.len()]])
        } else {
            self.host.clone()
        }
    }
    /// One line for `up`, `status` and results.
    pub fn describe(&self) -> String {
        if !self.placed {
            return format!(
                "unplaced: {}",
                self.unplaced_because.as_deref().unwrap_or("no CPU plan")
            );
        }
        let steering = match self.steering {
            Steering::ThreadedNapiRps => "threaded NAPI + RPS/XPS",
            Steering::Rps => "RPS/XPS",
            Steering::None => "none",
        };
        let pin = if self.pin { ", guests pinned" } else { "" };
        if self.remote_client() {
            return format!(
                "host cores {}{pin} (the client is another machine)",
                self.host
            );
        }
        format!(
            "host cores {}, client cores {}{pin}; receive steering: {steering}",
            self.host, self.client
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(s: &str) -> CpuList {
        s.parse().unwrap()
    }

    #[test]
    fn default_gives_the_client_a_quarter_from_the_top() {
        let p = plan(&[0, 1], None, None, false, None).unwrap();
        assert_eq!(
            (p.host.0.clone(), p.client.0.clone(), p.placed),
            (vec![0], vec![1], true)
        );
        let p = plan(&[0, 1, 2, 3, 4, 5, 6, 7], None, None, false, None).unwrap();
        assert_eq!(
            (p.host.to_string(), p.client.to_string()),
            ("0-5".into(), "6-7".into())
        );
        let p = plan(&[0, 1, 2, 3, 4], None, None, false, None).unwrap();
        assert_eq!(p.client.to_string(), "3-4");
    }

    #[test]
    fn lists_are_checked() {
        let e = plan(&[0, 1], Some(&l("1")), Some(&l("0-1")), false, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("share CPU 1"), "{e}");
        let e = plan(&[0, 1], Some(&l("7")), None, false, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("CPU 7 is not online"), "{e}");
        let e = plan(&[0, 1], Some(&l("0-1")), None, false, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("leaves none for the host"), "{e}");
        let p = plan(&[0, 1, 2], Some(&l("0")), Some(&l("2")), false, None).unwrap();
        assert_eq!((p.host.0.clone(), p.client.0.clone()), (vec![2], vec![0]));
    }

    #[test]
    fn without_a_cpuset_or_a_second_cpu_the_lab_is_unplaced() {
        let p = plan(&[0, 1], None, None, false, Some("not mounted".into())).unwrap();
        assert!(!p.placed && p.unplaced_because.unwrap().contains("no cpuset"));
        assert!(plan(&[0, 1], None, None, true, Some("not mounted".into()))
            .unwrap_err()
            .to_string()
            .contains("--pin"));
        let p = plan(&[0], None, None, false, None).unwrap();
        assert!(!p.placed && p.describe().contains("one CPU"));
    }

    #[test]
    fn a_remote_client_leaves_every_core_to_the_host() {
        let p = remote_plan(&[0, 1], None, false, None).unwrap();
        assert_eq!((p.host.to_string(), p.client.len()), ("0-1".into(), 0));
        assert!(p.placed && p.remote_client() && p.steering == Steering::None);
        assert!(p.describe().contains("the client is another machine"));
        let p = remote_plan(&[0, 1, 2], Some(&l("1-2")), false, None).unwrap();
        assert_eq!(p.host.to_string(), "1-2");
        let p = remote_plan(&[0, 1], None, false, Some("no cpuset".into())).unwrap();
        assert!(!p.placed);
    }

    #[test]
    fn pin_spreads_guests_and_backends_over_the_host() {
        let p = plan(&[0, 1, 2, 3], None, None, true, None).unwrap();
        assert_eq!(p.host.to_string(), "0-2");
        assert_eq!(
            (
                p.guest(1).0.clone(),
                p.backend(1).0.clone(),
                p.guest(2).0.clone()
            ),
            (vec![0], vec![1], vec![2])
        );
        let free = plan(&[0, 1, 2, 3], None, None, false, None).unwrap();
        assert_eq!(free.guest(3), free.host);
    }
}
