//! Interrupt and softirq counts: /proc/softirqs rows (NET_RX, NET_TX, …) and the total of
//! /proc/interrupts, summed over CPUs.

use std::collections::BTreeMap;

/// Softirq counts per kind (summed over CPUs).
pub fn parse_softirqs(text: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for line in text.lines().skip(1) {
        if let Some((name, rest)) = line.split_once(':') {
            let n: u64 = rest
                .split_whitespace()
                .filter_map(|v| v.parse::<u64>().ok())
                .sum();
            m.insert(name.trim().to_string(), n);
        }
    }
    m
}

/// All interrupts (summed over lines and CPUs; the text after the counts is ignored).
pub fn parse_interrupts(text: &str) -> u64 {
    let mut lines = text.lines();
    let ncpu = lines
        .next()
        .map(|h| h.split_whitespace().count())
        .unwrap_or(0);
    lines
        .filter_map(|l| l.split_once(':'))
        .map(|(_, rest)| {
            rest.split_whitespace()
                .take(ncpu)
                .filter_map(|v| v.parse::<u64>().ok())
                .sum::<u64>()
        })
        .sum()
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counts {
    pub softirqs: BTreeMap<String, u64>,
    pub interrupts: u64,
}

pub fn read(fs: &super::fs::Fs) -> Counts {
    Counts {
        softirqs: parse_softirqs(&fs.read("/proc/softirqs").unwrap_or_default()),
        interrupts: parse_interrupts(&fs.read("/proc/interrupts").unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixtures_parse() {
        let s = "                    CPU0       CPU1\n          HI:          0          0\n      NET_TX:         10          5\n      NET_RX:       1000       2000\n";
        let m = parse_softirqs(s);
        assert_eq!(m["NET_RX"], 3000);
        assert_eq!(m["NET_TX"], 15);
        let i = "           CPU0       CPU1\n 24:          1          2  IO-APIC   5-edge      ACPI:Ged\nNMI:          3          4   Non-maskable interrupts\nERR:          0\n";
        assert_eq!(parse_interrupts(i), 10);
    }
}
