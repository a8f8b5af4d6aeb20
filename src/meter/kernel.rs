//! How this kernel counts CPU time, read once from its configuration (/proc/config.gz or
//! /boot/config-RELEASE) and command line: whether /proc/stat's busy columns are tick samples or
//! exact, whether interrupt time is kept apart from tasks' time, whether paravirtual steal is
//! taken out of tasks' clocks, and its tick rate. The meter's sources mean different things on
//! different kernels; these facts say which, and every stored run carries them.

use serde::{Deserialize, Serialize};

/// How /proc/stat's user/system/irq/softirq columns are kept.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CpuTime {
    /// CONFIG_TICK_CPU_ACCOUNTING: one tick's worth charged to whatever ran at the tick.
    Tick,
    /// CONFIG_VIRT_CPU_ACCOUNTING_GEN or _NATIVE: charged at every kernel entry and exit.
    Precise,
    #[default]
    Unknown,
}

/// The kernel's CPU-time accounting, as far as its configuration says.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Accounting {
    pub cputime: CpuTime,
    /// CONFIG_IRQ_TIME_ACCOUNTING: interrupt time kept apart from tasks' run time, exactly.
    pub irq_time: Option<bool>,
    /// CONFIG_PARAVIRT_TIME_ACCOUNTING (and no `no-steal-acc`): time the hypervisor stole is
    /// taken out of tasks' run time.
    pub steal_out_of_tasks: Option<bool>,
    /// CONFIG_NO_HZ_COMMON: idle kept in nanoseconds (and the tick stopped while idle).
    pub nohz: Option<bool>,
    /// CONFIG_HZ.
    pub hz: Option<u32>,
    /// Where these facts came from ("/proc/config.gz", "/boot/config-6.1.0", or "not found").
    pub from: String,
}

impl Accounting {
    /// The facts from a kernel configuration's text and the kernel command line.
    pub fn parse(config: &str, cmdline: &str, from: &str) -> Accounting {
        let get = |k: &str| -> Option<&str> {
            config
                .lines()
                .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
                .or_else(|| {
                    config
                        .lines()
                        .any(|l| l == format!("# {k} is not set"))
                        .then_some("n")
                })
        };
        let yes = |k: &str| get(k).map(|v| v == "y");
        // VIRT_CPU_ACCOUNTING_GEN counts exactly only on the CPUs `nohz_full=` names; the
        // others still count ticks.
        let nohz_full = cmdline
            .split_whitespace()
            .any(|w| w.starts_with("nohz_full="));
        let gen = yes("CONFIG_VIRT_CPU_ACCOUNTING_GEN") == Some(true);
        let cputime =
            if yes("CONFIG_VIRT_CPU_ACCOUNTING_NATIVE") == Some(true) || (gen && nohz_full) {
                CpuTime::Precise
            } else if yes("CONFIG_TICK_CPU_ACCOUNTING") == Some(true) || gen {
                CpuTime::Tick
            } else {
                CpuTime::Unknown
            };
        let no_steal_acc = cmdline.split_whitespace().any(|w| w == "no-steal-acc");
        Accounting {
            cputime,
            irq_time: yes("CONFIG_IRQ_TIME_ACCOUNTING"),
            steal_out_of_tasks: yes("CONFIG_PARAVIRT_TIME_ACCOUNTING").map(|y| y && !no_steal_acc),
            nohz: yes("CONFIG_NO_HZ_COMMON"),
            hz: get("CONFIG_HZ").and_then(|v| v.parse().ok()),
            from: from.into(),
        }
    }

    /// This kernel's facts.
    pub fn read() -> Accounting {
        let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let boot = format!("/boot/config-{}", release.trim());
        let (text, from) = match gunzip_file("/proc/config.gz") {
            Some(t) => (t, "/proc/config.gz".to_string()),
            None => match read_bounded(&boot) {
                Some(t) => (t, boot),
                None => (String::new(), "not found".to_string()),
            },
        };
        Accounting::parse(&text, &cmdline, &from)
    }

    /// This kernel's facts, read once per process.
    pub fn this() -> &'static Accounting {
        static THIS: std::sync::OnceLock<Accounting> = std::sync::OnceLock::new();
        THIS.get_or_init(Accounting::read)
    }

    /// Whether tasks' run time holds the time stolen while they ran (unknown: assume it may).
    pub fn steal_in_task_clock(&self) -> bool {
        self.steal_out_of_tasks != Some(true)
    }

    /// One line: "tick accounting, HZ 250, no IRQ time accounting, paravirt steal out of tasks".
    pub fn describe(&self) -> String {
        let yn = |v: Option<bool>, y: &str, n: &str| match v {
            Some(true) => y.to_string(),
            Some(false) => n.to_string(),
            None => format!("{y}: unknown"),
        };
        let mut s = vec![
            match self.cputime {
                CpuTime::Tick => "tick accounting".into(),
                CpuTime::Precise => "precise (virt) accounting".into(),
                CpuTime::Unknown => "accounting unknown".to_string(),
            },
            self.hz.map_or("HZ unknown".into(), |h| format!("HZ {h}")),
            yn(self.nohz, "NO_HZ idle", "periodic tick"),
            yn(
                self.irq_time,
                "IRQ time accounting",
                "no IRQ time accounting",
            ),
            yn(
                self.steal_out_of_tasks,
                "paravirt steal out of tasks' time",
                "steal not taken out of tasks' time",
            ),
        ];
        if self.from == "not found" {
            s.push("(kernel configuration not found)".into());
        }
        s.join(", ")
    }
}

/// A kernel configuration is some 300 KB; anything past 16 MiB is not one.
const MAX_CONFIG: u64 = 16 << 20;

fn read_bounded(path: &str) -> Option<String> {
    use std::io::Read;
    let mut s = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_CONFIG)
        .read_to_string(&mut s)
        .ok()?;
    Some(s)
}

fn gunzip_file(path: &str) -> Option<String> {
    use std::io::Read;
    let f = std::fs::File::open(path).ok()?;
    let mut s = String::new();
    flate2::read::GzDecoder::new(f)
        .take(MAX_CONFIG)
        .read_to_string(&mut s)
        .ok()?;
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This development host's configuration (the lines that matter), and a distribution kernel's.
    const TICK: &str = "CONFIG_NO_HZ_COMMON=y\nCONFIG_TICK_CPU_ACCOUNTING=y\n# CONFIG_VIRT_CPU_ACCOUNTING_GEN is not set\n# CONFIG_IRQ_TIME_ACCOUNTING is not set\nCONFIG_PARAVIRT_TIME_ACCOUNTING=y\nCONFIG_HZ=250\n";
    const DISTRO: &str = "CONFIG_NO_HZ_COMMON=y\n# CONFIG_TICK_CPU_ACCOUNTING is not set\nCONFIG_VIRT_CPU_ACCOUNTING_GEN=y\nCONFIG_IRQ_TIME_ACCOUNTING=y\nCONFIG_PARAVIRT_TIME_ACCOUNTING=y\nCONFIG_HZ=250\n";

    #[test]
    fn a_configuration_says_how_the_kernel_counts() {
        let a = Accounting::parse(TICK, "console=ttyS0", "/proc/config.gz");
        assert_eq!(a.cputime, CpuTime::Tick);
        assert_eq!(
            (a.irq_time, a.steal_out_of_tasks, a.nohz, a.hz),
            (Some(false), Some(true), Some(true), Some(250))
        );
        assert!(!a.steal_in_task_clock());
        assert_eq!(
            a.describe(),
            "tick accounting, HZ 250, NO_HZ idle, no IRQ time accounting, paravirt steal out of tasks' time"
        );
        let d = Accounting::parse(DISTRO, "quiet no-steal-acc", "/boot/config-6.1.0");
        // Without nohz_full= a virt-gen kernel still counts ticks.
        assert_eq!(d.cputime, CpuTime::Tick);
        let d = Accounting::parse(
            DISTRO,
            "quiet nohz_full=1-3 no-steal-acc",
            "/boot/config-6.1.0",
        );
        assert_eq!(d.cputime, CpuTime::Precise);
        assert_eq!(d.irq_time, Some(true));
        // The command line turns paravirtual steal accounting off.
        assert_eq!(d.steal_out_of_tasks, Some(false));
        let none = Accounting::parse("", "", "not found");
        assert_eq!(none.cputime, CpuTime::Unknown);
        assert!(none.steal_in_task_clock());
        assert!(none
            .describe()
            .ends_with("(kernel configuration not found)"));
    }
}
