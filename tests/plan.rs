//! The capacity planner from the command line: the paper preset, bad input, and costs from a run.

mod common;
use common::*;

#[test]
fn the_preset_prints_table_v_and_json() {
    let o = std::process::Command::new(BIN)
        .args(["plan", "--preset", "icsnc2013"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(t.contains("      16 |          8.70         24.07   15.37 |          0.40          0.96    0.56 |   15.93"), "{t}");
    assert!(t.contains("buys 6 more desktops"));
    let o = std::process::Command::new(BIN)
        .args([
            "plan",
            "--preset",
            "icsnc2013",
            "--buffer",
            "16,253",
            "--json",
        ])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert!((rows[0]["datapaths"]["GNIC"]["vm_net_pct"].as_f64().unwrap() - 24.068).abs() < 1e-9);
    assert!((rows[1]["saving_pct"].as_f64().unwrap() - 1.5327).abs() < 1e-3);
}

#[test]
fn bad_input_is_one_line_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["plan", "--preset", "icsnc2013", "--buffer", "0"],
            "more than 0",
        ),
        (
            &["plan", "--preset", "icsnc2013", "--vm-net-gbit", "-1"],
            "0 to",
        ),
        (
            &["plan", "--preset", "icsnc2013", "--vm-net-gbit", "1e308"],
            "0 to",
        ),
        (
            &["plan", "--preset", "icsnc2013", "--desktop-share", "1e-300"],
            "0.01 to 100",
        ),
        (
            &["plan", "--preset", "icsnc2013", "--play-s=-5"],
            "play time",
        ),
        (&["plan", "--preset", "nosuch"], "unknown preset"),
        (&["plan"], "no datapaths"),
        (&["plan", "--datapath", "X:1"], "NAME:VDI_1G:VM_1G"),
        (
            &["plan", "--preset", "icsnc2013", "--buffer", "a,b"],
            "--buffer",
        ),
        (
            &[
                "plan",
                "--from-run",
                "latest",
                "--db",
                "/nonexistent/v.sqlite",
            ],
            "no store",
        ),
    ];
    for (args, want) in cases {
        let o = std::process::Command::new(BIN)
            .args(*args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want) && one_line(&err), "{args:?}: {err}");
    }
}

#[test]
fn costs_come_from_a_stored_run_or_the_run_is_refused() {
    let c = ctx("plan");
    let exp = c.state.join("p.toml");
    std::fs::write(&exp, "name = \"p\"\n[matrix]\nmodes = [\"bridge\", \"macvlan\"]\nmessages = [\"8K\"]\ndirections = [\"guest-to-client\", \"host-to-client\"]\nloads = [\"300mbit\"]\n[point]\nduration = 1.0\nwarmup = 0.3\n").unwrap();
    let rr = c.state.join("rr.toml");
    std::fs::write(&rr, "name = \"rr\"\n[matrix]\nmodes = [\"bridge\"]\ntests = [\"TCP_RR\"]\n[point]\nduration = 0.3\nwarmup = 0.1\n").unwrap();
    let db = c.state.join("p.sqlite");
    let dbs = db.to_str().unwrap();
    let out = c.state.join("o");
    let outs = out.to_str().unwrap();
    c.ok(&["run", rr.to_str().unwrap(), "--db", dbs, "--out", outs]);
    // A run without the needed points is refused in one line.
    let o = c.run(&["plan", "--from-run", "1", "--db", dbs]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no guest-to-client TCP_STREAM points") && one_line(&err),
        "{err}"
    );
    // The streams' run. A point whose host CPU the meter could not tell (steal past its
    // tolerance on a shared CI machine) gives no cost: the plan then names the meter's reason,
    // and the run is made again, at most twice.
    let mut run = 1;
    let v = loop {
        c.ok(&["run", exp.to_str().unwrap(), "--db", dbs, "--out", outs]);
        run += 1;
        let told = untold(dbs, run);
        let o = c.run(&[
            "plan",
            "--from-run",
            &run.to_string(),
            "--db",
            dbs,
            "--json",
        ]);
        if told.is_empty() || run == 4 {
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(0), "{err}");
            break serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap();
        }
        let said = match o.status.code() {
            Some(0) => String::from_utf8_lossy(&o.stdout).into_owned(),
            _ => String::from_utf8_lossy(&o.stderr).into_owned(),
        };
        // The plan names the streams it passed over with the meter's reason; points of the run
        // it does not read (other directions) may be untold too, for their own reasons.
        assert!(
            said.contains("could not be told")
                && told.iter().any(|why| said.contains(why.as_str())),
            "the plan names the meter's reason for the streams it passed over: {said} vs {told:?}"
        );
    };
    let dps = v["scenario"]["datapaths"].as_array().unwrap();
    assert_eq!(dps.len(), 2, "{v}");
    assert!(dps
        .iter()
        .all(|d| d["vm_net_pct_per_gbps"].as_f64().unwrap() > 0.0
            && d["vdi_net_pct_per_gbps"].as_f64().unwrap() > 0.0));
    assert!(v["source"]
        .as_str()
        .unwrap()
        .starts_with(&format!("run {run}")));
    assert!(v["points_used"].as_array().unwrap().len() >= 3);
    // The report of that run has the capacity section.
    let html = std::fs::read_to_string(out.join(format!("run-{run}.html"))).unwrap();
    assert!(html.contains("Desktops per server"));
    let o = c.run(&[
        "plan",
        "--from-run",
        &run.to_string(),
        "--db",
        dbs,
        "--vdi-offload",
        "off",
    ]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("offloads off"));
}
