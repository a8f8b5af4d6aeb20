//! The JSON users see keeps its shape: a test's `--json` in a paravirt lab (a stream with
//! repeats, request/response with repeats, a verified transfer with zero-copy, software LRO)
//! names exactly the keys listed in tests/fixtures/result_keys.txt, which were read off the
//! vnetlab before results became typed structs (plus `.version` and `.cpu.parts[].role`, added
//! with the versioned Measured document, and the CPU series' named `t` and `busy_pct` of
//! version 3, and a backend's `syscalls` and `io`, optional fields added in issue 51). Maps keyed by names (guests, cores, softirqs, flush reasons) count as one
//! `<name>` key.

mod common;
use common::*;
use std::collections::BTreeSet;

/// Maps whose keys are names, not fields.
const NAMED: [&str; 8] = [
    "per_source_gbps",
    "vnic",
    "per_core_busy_pct",
    "per_core_steal_pct",
    "softirq_per_s",
    "split_pct",
    "flush_reasons",
    "merge_hist",
];

fn paths(v: &serde_json::Value, pre: &str, named: bool, out: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{pre}.{}", if named { "<name>" } else { k });
                out.insert(p.clone());
                paths(x, &p, !named && NAMED.contains(&k.as_str()), out);
            }
        }
        serde_json::Value::Array(a) => a
            .iter()
            .for_each(|x| paths(x, &format!("{pre}[]"), false, out)),
        _ => {}
    }
}

#[test]
fn a_results_json_keeps_its_keys() {
    let c = ctx("shape");
    let before = host_snapshot();
    c.ok(&[
        "up", "--name", "tshp", "--mode", "paravirt", "--guests", "1", "--gro", "guest", "--lro",
        "guest",
    ]);
    let mut keys = BTreeSet::new();
    for args in [
        vec![
            "--from", "g1", "--to", "client", "-m", "64K", "--repeat", "2",
        ],
        vec![
            "--from", "client", "--to", "g1", "-t", "TCP_RR", "--repeat", "2",
        ],
        vec![
            "--from",
            "g1",
            "--to",
            "client",
            "--bytes",
            "1M",
            "--verify",
            "--zerocopy",
        ],
    ] {
        let mut a = vec!["test", "--lab", "tshp", "-l", "0.5", "--json"];
        a.extend(args);
        paths(&c.json(&a), "", false, &mut keys);
    }
    c.ok(&["down", "tshp"]);
    let want: BTreeSet<String> = include_str!("fixtures/result_keys.txt")
        .lines()
        .map(str::to_string)
        .collect();
    let missing: Vec<_> = want.difference(&keys).collect();
    let extra: Vec<_> = keys.difference(&want).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing {missing:?}, new {extra:?}"
    );
    assert_eq!(before, host_snapshot());
}
