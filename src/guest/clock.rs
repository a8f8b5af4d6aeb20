//! The rate of the host's time-stamp counter, told to TCG guests so their kernels need not
//! calibrate it. Under TCG a guest's RDTSC reads the host's counter, so its rate is the host's.
//! A guest kernel otherwise calibrates the TSC against the PIT in windows of a few
//! milliseconds; on a busy host the vCPU's thread is descheduled inside one now and then, the
//! calibration fails, and a `microvm` (no HPET, no ACPI PM timer to fall back on) then hung
//! before its `/init` printed a line: 4 of 80 boots on the 2-core development host, none of 80
//! with the rate given as `tsc_early_khz`.

use std::time::Duration;

/// How long the counter is timed against CLOCK_MONOTONIC_RAW.
const SPAN: Duration = Duration::from_millis(20);

/// How many reads of the clock are bracketed by two of the counter; the tightest is kept.
const TRIES: usize = 8;

/// One reading: the counter at the middle of a bracket, the clock's nanoseconds within it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Reading {
    tsc: u64,
    ns: u64,
}

/// The host's TSC rate in kHz, where the counter is invariant (`constant_tsc` and
/// `nonstop_tsc`) and the host is x86-64; None elsewhere, and the guest kernel calibrates.
pub fn host_tsc_khz() -> Option<u64> {
    let info = read_cpuinfo()?;
    if !invariant(&info) {
        return None;
    }
    let a = reading()?;
    std::thread::sleep(SPAN);
    let b = reading()?;
    khz(a, b)
}

/// The first 64 KiB of /proc/cpuinfo (the first CPU's flags are in its first lines).
fn read_cpuinfo() -> Option<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open("/proc/cpuinfo")
        .ok()?
        .take(64 << 10)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

/// Whether the first CPU's flags say the counter ticks at one rate in every power state.
fn invariant(cpuinfo: &str) -> bool {
    cpuinfo
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "flags").then_some(v)
        })
        .is_some_and(|flags| {
            let has = |f: &str| flags.split_whitespace().any(|x| x == f);
            has("constant_tsc") && has("nonstop_tsc")
        })
}

/// The tightest of `TRIES` counter–clock–counter brackets.
fn reading() -> Option<Reading> {
    let mut best: Option<(u64, Reading)> = None;
    for _ in 0..TRIES {
        let t0 = crate::sys::tsc()?;
        let ns = crate::sys::monotonic_raw_ns();
        let t1 = crate::sys::tsc()?;
        let width = t1.wrapping_sub(t0);
        if t1 >= t0 && best.is_none_or(|(w, _)| width < w) {
            let tsc = t0 + width / 2;
            best = Some((width, Reading { tsc, ns }));
        }
    }
    best.map(|(_, r)| r)
}

/// The rate between two readings in kHz, if it is a plausible CPU's (10 MHz to 20 GHz).
fn khz(a: Reading, b: Reading) -> Option<u64> {
    let ticks = b.tsc.checked_sub(a.tsc)?;
    let ns = b.ns.checked_sub(a.ns).filter(|&n| n > 0)?;
    let khz = (u128::from(ticks) * 1_000_000 / u128::from(ns)) as u64;
    (10_000..=20_000_000).contains(&khz).then_some(khz)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_invariant_counter_is_told() {
        let both = "processor\t: 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc rdtscp\n";
        assert!(invariant(both));
        assert!(!invariant("flags\t\t: fpu tsc constant_tsc\n"));
        assert!(!invariant(
            "flags\t\t: fpu tsc nonstop_tsc_x constant_tsc\n"
        ));
        assert!(!invariant("processor\t: 0\n"));
    }

    #[test]
    fn the_rate_is_ticks_over_time_and_implausible_rates_are_refused() {
        let r = |tsc, ns| Reading { tsc, ns };
        assert_eq!(khz(r(0, 0), r(2_596_130, 1_000_000)), Some(2_596_130));
        assert_eq!(
            khz(r(10, 5), r(10, 1_000_005)),
            None,
            "a counter that stood still"
        );
        assert_eq!(
            khz(r(10, 5), r(5, 1_000_005)),
            None,
            "a counter that went back"
        );
        assert_eq!(khz(r(0, 5), r(1_000, 5)), None, "no time passed");
        assert_eq!(khz(r(0, 0), r(u64::MAX, 1)), None);
    }

    #[test]
    fn two_measurements_of_this_host_agree() {
        let Some(a) = host_tsc_khz() else {
            return; // not x86-64, or the counter is not invariant: nothing is told.
        };
        let b = host_tsc_khz().unwrap();
        let off = a.abs_diff(b) as f64 / a as f64;
        assert!(off < 0.01, "{a} vs {b} kHz");
    }
}
