//! The lab's CPU plan: which cores stand for the client machine and which for the host, where
//! each guest and backend may run, and how receive processing on each end of the wire is steered
//! to the receiving side's cores. Pure: it reads nothing from the host.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The highest CPU number a list may name (the kernel's CPU_SETSIZE).
pub const MAX_CPU: usize = 1023;

/// A set of CPUs, written as the kernel writes it: `0`, `0-3`, `0,2,4-7`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct CpuList(pub Vec<usize>);

impl CpuList {
    pub fn contains(&self, c: usize) -> bool {
        self.0.contains(&c)
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// A hexadecimal mask as sysfs takes it (rps_cpus, xps_cpus): 32-bit groups joined by commas.
    pub fn mask(&self) -> String {
        let top = self.0.iter().copied().max().unwrap_or(0);
        let mut words = vec![0u32; top / 32 + 1];
        for &c in &self.0 {
            words[c / 32] |= 1 << (c % 32);
        }
        words.iter().rev().map(|w| format!("{w:08x}")).collect::<Vec<_>>().join(",")
    }
}

impl FromStr for CpuList {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("bad CPU list '{}': write CPU numbers and ranges, e.g. 1 or 0-3,6", crate::text::clip(s));
        if s.is_empty() || s.len() > 4096 {
            return Err(bad());
        }
        let mut v = Vec::new();
        for part in s.split(',') {
            let (a, b) = match part.split_once('-') {
                Some((a, b)) => (a, b),
                None => (part, part),
            };
            let a: usize = a.trim().parse().map_err(|_| bad())?;
            let b: usize = b.trim().parse().map_err(|_| bad())?;
            if a > b || b > MAX_CPU {
                return Err(bad());
            }
            v.extend(a..=b);
        }
        v.sort_unstable();
        v.dedup();
        Ok(CpuList(v))
    }
}

impl fmt::Display for CpuList {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let mut parts = Vec::new();
        let mut i = 0;
        while i < self.0.len() {
            let mut j = i;
            while j + 1 < self.0.len() && self.0[j + 1] == self.0[j] + 1 {
                j += 1;
            }
            parts.push(if i == j { self.0[i].to_string() } else { format!("{}-{}", self.0[i], self.0[j]) });
            i = j + 1;
        }
        f.write_str(&parts.join(","))
    }
}

impl Serialize for CpuList {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for CpuList {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            List(Vec<usize>),
            Text(String),
        }
        match Form::deserialize(d)? {
            Form::List(mut v) => {
                if v.iter().any(|&c| c > MAX_CPU) {
                    return Err(serde::de::Error::custom(format!("a CPU number is above {MAX_CPU}")));
                }
                v.sort_unstable();
                v.dedup();
                Ok(CpuList(v))
            }
            Form::Text(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// How receive processing is kept on the receiving side's cores where a frame crosses the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Steering {
    /// RPS and XPS masks on both wire ends, and threaded NAPI (its threads placed on the side's
    /// cores) where the end receives with GRO.
    ThreadedNapiRps,
    /// RPS and XPS masks only (the kernel offers no threaded NAPI).
    Rps,
    /// Nothing steered: the lab is unplaced.
    None,
}

/// Where the client and the host run. Recorded in the lab record and in every result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuPlan {
    pub host: CpuList,
    pub client: CpuList,
    /// Whether every process the lab starts runs inside its side's cpuset.
    pub placed: bool,
    pub steering: Steering,
    /// Why the lab is unplaced, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unplaced_because: Option<String>,
    /// `--pin`: each guest (and its backend) on its own host core, round-robin.
    #[serde(default)]
    pub pin: bool,
}

/// The client's default share: ⌈ncpu/4⌉ cores, at least 1, taken from the top.
pub fn default_client(online: &[usize]) -> CpuList {
    let n = online.len().div_ceil(4).max(1).min(online.len());
    CpuList(online[online.len() - n..].to_vec())
}

/// Builds the CPU plan from the online CPUs and the lab's requests. `cpuset` says whether the
/// host can confine processes (a cpuset controller); without one the plan is unplaced.
pub fn plan(online: &[usize], client: Option<&CpuList>, host: Option<&CpuList>, pin: bool, cpuset: Result<(), String>) -> Result<CpuPlan, String> {
    for (flag, list) in [("--client-cpus", client), ("--host-cpus", host)] {
        if let Some(l) = list {
            if l.is_empty() {
                return Err(format!("{flag}: the list is empty: name at least one CPU"));
            }
            if let Some(c) = l.0.iter().find(|c| !online.contains(c)) {
                return Err(format!("{flag} {l}: CPU {c} is not online here (online: {}): use CPUs from that list", CpuList(online.to_vec())));
            }
        }
    }
    let client = client.cloned().unwrap_or_else(|| default_client(online));
    let host = match host {
        Some(h) => h.clone(),
        None => CpuList(online.iter().copied().filter(|c| !client.contains(*c)).collect()),
    };
    if let Some(c) = host.0.iter().find(|c| client.contains(**c)) {
        return Err(format!("--host-cpus {host} and --client-cpus {client} share CPU {c}: the client stands for another machine, so give them disjoint CPUs"));
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
            return Ok(unplaced("this host has one CPU, so the client and the host share it".into()));
        }
        return Err(format!("--client-cpus {client} takes every CPU and leaves none for the host: give the client fewer"));
    }
    if let Err(why) = cpuset {
        if pin {
            return Err(format!("--pin needs a cpuset cgroup, and this host has none ({why}): run without --pin"));
        }
        return Ok(unplaced(format!("no cpuset controller ({why}), so processes run on any core")));
    }
    Ok(CpuPlan { host, client, placed: true, steering: Steering::Rps, unplaced_because: None, pin })
}

impl CpuPlan {
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
            return format!("unplaced: {}", self.unplaced_because.as_deref().unwrap_or("no CPU plan"));
        }
        let steering = match self.steering {
            Steering::ThreadedNapiRps => "threaded NAPI + RPS/XPS",
            Steering::Rps => "RPS/XPS",
            Steering::None => "none",
        };
        let pin = if self.pin { ", guests pinned" } else { "" };
        format!("host cores {}, client cores {}{pin}; receive steering: {steering}", self.host, self.client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(s: &str) -> CpuList {
        s.parse().unwrap()
    }

    #[test]
    fn lists_parse_and_print_like_the_kernel() {
        assert_eq!(l("0-3,6").0, vec![0, 1, 2, 3, 6]);
        assert_eq!(l("3,1,1").0, vec![1, 3]);
        assert_eq!(l("0-3,6").to_string(), "0-3,6");
        assert_eq!(l("5").to_string(), "5");
        for bad in ["", "a", "3-1", "1,", "-1", "1-", "0-99999", "1.5"] {
            assert!(bad.parse::<CpuList>().is_err(), "{bad}");
        }
        assert_eq!(l("0").mask(), "00000001");
        assert_eq!(l("1,3").mask(), "0000000a");
        assert_eq!(l("0,33").mask(), "00000002,00000001");
    }

    #[test]
    fn default_gives_the_client_a_quarter_from_the_top() {
        let p = plan(&[0, 1], None, None, false, Ok(())).unwrap();
        assert_eq!((p.host.0.clone(), p.client.0.clone(), p.placed), (vec![0], vec![1], true));
        let p = plan(&[0, 1, 2, 3, 4, 5, 6, 7], None, None, false, Ok(())).unwrap();
        assert_eq!((p.host.to_string(), p.client.to_string()), ("0-5".into(), "6-7".into()));
        let p = plan(&[0, 1, 2, 3, 4], None, None, false, Ok(())).unwrap();
        assert_eq!(p.client.to_string(), "3-4");
    }

    #[test]
    fn lists_are_checked() {
        let e = plan(&[0, 1], Some(&l("1")), Some(&l("0-1")), false, Ok(())).unwrap_err();
        assert!(e.contains("share CPU 1"), "{e}");
        let e = plan(&[0, 1], Some(&l("7")), None, false, Ok(())).unwrap_err();
        assert!(e.contains("CPU 7 is not online"), "{e}");
        let e = plan(&[0, 1], Some(&l("0-1")), None, false, Ok(())).unwrap_err();
        assert!(e.contains("leaves none for the host"), "{e}");
        let p = plan(&[0, 1, 2], Some(&l("0")), Some(&l("2")), false, Ok(())).unwrap();
        assert_eq!((p.host.0.clone(), p.client.0.clone()), (vec![2], vec![0]));
    }

    #[test]
    fn without_a_cpuset_or_a_second_cpu_the_lab_is_unplaced() {
        let p = plan(&[0, 1], None, None, false, Err("not mounted".into())).unwrap();
        assert!(!p.placed && p.unplaced_because.unwrap().contains("no cpuset"));
        assert!(plan(&[0, 1], None, None, true, Err("not mounted".into())).unwrap_err().contains("--pin"));
        let p = plan(&[0], None, None, false, Ok(())).unwrap();
        assert!(!p.placed && p.describe().contains("one CPU"));
    }

    #[test]
    fn pin_spreads_guests_and_backends_over_the_host() {
        let p = plan(&[0, 1, 2, 3], None, None, true, Ok(())).unwrap();
        assert_eq!(p.host.to_string(), "0-2");
        assert_eq!((p.guest(1).0.clone(), p.backend(1).0.clone(), p.guest(2).0.clone()), (vec![0], vec![1], vec![2]));
        let free = plan(&[0, 1, 2, 3], None, None, false, Ok(())).unwrap();
        assert_eq!(free.guest(3), free.host);
    }
}
