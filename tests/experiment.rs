//! Integration tests of experiments, the store and reports (root; the browser test needs chromium).

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const SMALL: &str = r#"
name = "small"
description = "two datapaths, two sizes"
[matrix]
modes = ["bridge", "macvlan"]
messages = ["1K", "64K"]
[point]
duration = 0.4
warmup = 0.2
"#;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn a_run_is_stored_reported_exported_and_compared() {
    let c = ctx("exp");
    let before = host_snapshot();
    let f = write(&c.state, "small.toml", SMALL);
    let db = c.state.join("r.sqlite");
    let out = c.state.join("out");
    let (fs, dbs, outs) = (
        f.to_str().unwrap(),
        db.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let listed = c.ok(&["run", "--list", fs]);
    assert!(listed.starts_with("small: 4 points"), "{listed}");
    let o = c.ok(&["run", fs, "--db", dbs, "--out", outs]);
    assert!(
        o.contains("4 of 4 points, 0 failed, status complete"),
        "{o}"
    );
    assert_eq!(before, host_snapshot(), "the run's labs were removed");
    let html = std::fs::read_to_string(out.join("run-1.html")).unwrap();
    for want in [
        "Bandwidth vs message size",
        "Host CPU vs message size",
        "Host CPU per Gb/s",
        "Host CPU by part",
        "macvlan",
        "<svg",
    ] {
        assert!(html.contains(want), "report lacks {want}");
    }
    assert!(
        !html.contains("src=\"http") && !html.contains("href=\"http"),
        "the report fetches nothing"
    );
    let r = c.json(&["report", "latest", "--db", dbs, "--json"]);
    assert_eq!(r["run"]["status"], "complete");
    let pts = r["points"].as_array().unwrap();
    assert_eq!(pts.len(), 4);
    for p in pts {
        assert!(p["throughput_gbps"].as_f64().unwrap() > 0.0);
        // A figure, or the meter's reason it could not tell one (steal on a shared machine).
        assert!(
            p["host_busy_pct"].as_f64().is_some_and(|b| b > 0.0)
                || p["unmeasurable"].as_str().is_some_and(|w| !w.is_empty()),
            "{p}"
        );
        assert!(!p["samples"].as_array().unwrap().is_empty());
        assert!(p["parts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["name"] == "g1" && x["kind"] == "guest"));
        assert!(p["lab_facts"]["host_interfaces"].is_array());
        // How its TCP ran is kept with the point.
        assert_eq!(p["congestion"], "cubic", "{p}");
        assert!(p["tcp_retransmits"].is_u64(), "{p}");
    }
    assert!(r["run"]["host_facts"]["kernel"].as_str().unwrap().len() > 1);
    assert_eq!(r["version"], 4, "the report's JSON says its schema version");
    let csv = c.ok(&["export", "1", "--csv", "--db", dbs]);
    assert_eq!(csv.lines().count(), 5);
    let parts = c.ok(&["export", "1", "--format", "parts-csv", "--db", dbs]);
    assert!(
        parts.starts_with("run,host,seq,") && parts.contains(",g1,guest,"),
        "{parts}"
    );
    // OpenMetrics, read back by Prometheus' own Python client's OpenMetrics parser.
    let om = c.state.join("run.om");
    c.ok(&[
        "export",
        "1",
        "--format",
        "openmetrics",
        "--db",
        dbs,
        "-o",
        om.to_str().unwrap(),
    ]);
    let parsed = sh(&format!(
        "/usr/bin/python3 -c 'import sys; from prometheus_client.openmetrics.parser import text_string_to_metric_families as p; fams = list(p(open(sys.argv[1]).read())); print(sum(len(f.samples) for f in fams), [f.name for f in fams])' {}",
        om.display()
    ));
    assert!(
        parsed.contains("vnetlab_throughput_bits_per_second")
            && parsed.contains("vnetlab_part_busy_ratio")
            && parsed.contains("'target'"),
        "{parsed}"
    );
    let samples: usize = parsed.split_whitespace().next().unwrap().parse().unwrap();
    assert!(samples >= 4 * 4, "{parsed}");
    // A stored run backfilled by Prometheus' own promtool, every sample at the run's end.
    let bf = c.state.join("backfill.om");
    let (bfs, tsdb) = (bf.to_str().unwrap(), c.state.join("tsdb"));
    c.ok(&[
        "export",
        "1",
        "--format",
        "openmetrics",
        "--timestamps",
        "--db",
        dbs,
        "-o",
        bfs,
    ]);
    let o = Command::new("promtool")
        .args(["tsdb", "create-blocks-from", "openmetrics", bfs])
        .arg(&tsdb)
        .output()
        .expect("promtool is needed for this test: `make deps` installs it");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let listed = sh(&format!("promtool tsdb list {}", tsdb.display()));
    let blocks = listed
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .count();
    assert!(blocks >= 1, "{listed}");
    // node_exporter's textfile: Prometheus' text format, one file per host, no timestamps.
    let tf = c.state.join("textfiles");
    std::fs::create_dir_all(&tf).unwrap();
    c.ok(&[
        "export",
        "1",
        "--format",
        "openmetrics",
        "--textfile-dir",
        tf.to_str().unwrap(),
        "--db",
        dbs,
    ]);
    let prom = std::fs::read_dir(&tf)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    assert!(
        prom.to_string_lossy().ends_with(".prom"),
        "{}",
        prom.display()
    );
    let parsed = sh(&format!(
        "/usr/bin/python3 -c 'import sys; from prometheus_client.parser import text_string_to_metric_families as p; fams = list(p(open(sys.argv[1]).read())); print(len(fams), all(s.timestamp is None for f in fams for s in f.samples))' {}",
        prom.display()
    ));
    assert!(parsed.trim().ends_with("True"), "{parsed}");
    assert!(c.ok(&["runs", "--db", dbs]).contains("small"));
    let cmp = c.json(&["compare", "1", "1", "--db", dbs, "--json"]);
    assert_eq!(cmp["rows"].as_array().unwrap().len(), 4);
    assert_eq!(cmp["rows"][0]["ratio"], 1.0);
    // Two runs side by side as a page: the bars with whiskers and every shared point's row.
    let side = c.state.join("compare.html");
    c.ok(&[
        "compare",
        "1",
        "1",
        "--db",
        dbs,
        "--html",
        side.to_str().unwrap(),
    ]);
    let page = std::fs::read_to_string(&side).unwrap();
    assert!(
        page.contains("<svg") && page.matches("<tr><td>").count() == 4,
        "{page}"
    );
    // Every mark on the run's page says its exact value and conditions when hovered.
    assert!(
        html.contains("<title>") && html.contains(" repeats); "),
        "no hover tips"
    );
}

#[test]
fn bad_experiment_files_are_refused_before_anything_is_built() {
    let c = ctx("expbad");
    let before = host_snapshot();
    let db = c.state.join("never.sqlite");
    let cases = [
        (
            "name = \"q\"\n[matrix]\nmodes = [\"bridge\"]\nsizes = [\"1K\"]\n",
            "4:1",
            "unknown field",
        ),
        (
            "name = \"q\"\n[matrix]\nmodes = [\"bridge\"]\nguests = \"one\"\n",
            "4:10",
            "invalid type",
        ),
        (
            "name = \"q\"\n[matrix]\nmodes = [\"hub\"]\n",
            "3:9",
            "bridge",
        ),
        (
            "name = \"q\"\n[matrix]\nmodes = [\"bridge\"]\nmessages = []\n",
            "4:12",
            "empty matrix",
        ),
        (
            "name = \"q\"\n[matrix]\nmodes = [\"bridge\"]\nmessages = [\"2G\"]\n",
            "4:",
            "out of range",
        ),
    ];
    for (i, (text, at, says)) in cases.iter().enumerate() {
        let f = write(&c.state, &format!("bad{i}.toml"), text);
        let o = c.run(&["run", f.to_str().unwrap(), "--db", db.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{text}: {err}");
        assert!(
            err.contains(&format!("bad{i}.toml:{at}")) && err.contains(says) && one_line(&err),
            "{text}: {err}"
        );
    }
    assert!(!db.exists(), "a bad file made a store");
    assert_eq!(before, host_snapshot());
    // A store file that is not a vnetlab database is refused and left as it was.
    let f = write(&c.state, "small.toml", SMALL);
    let foreign = write(&c.state, "notes.sqlite", "my notes, not a database\n");
    let o = c.run(&[
        "run",
        f.to_str().unwrap(),
        "--db",
        foreign.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a vnetlab database"));
    assert_eq!(
        std::fs::read_to_string(&foreign).unwrap(),
        "my notes, not a database\n"
    );
    assert_eq!(before, host_snapshot());
}

const LONGER: &str = r#"
name = "longer"
[matrix]
modes = ["bridge"]
messages = ["1K", "2K", "4K", "8K", "16K", "32K", "64K", "128K"]
[point]
duration = 0.5
warmup = 0.1
"#;

/// A datapath the host cannot build (here: nftables refuses NAT's rules, through a stand-in `nft`
/// first on PATH) fails its own points with the reason; the other datapaths are still measured.
#[test]
fn rounds_measure_each_point_in_labs_taken_in_turn_and_kept_between_rounds() {
    let c = ctx("exprounds");
    let before = host_snapshot();
    let text = SMALL.replace("warmup = 0.2", "warmup = 0.2\nrounds = 2");
    let f = write(&c.state, "rounds.toml", &text);
    let db = c.state.join("rounds.sqlite");
    let (fs, dbs) = (f.to_str().unwrap(), db.to_str().unwrap());
    let listed = c.ok(&["run", "--list", fs]);
    assert!(
        listed.starts_with("small: 4 points in 2 rounds, the labs taken in turn"),
        "{listed}"
    );
    let o = c
        .cmd(&[
            "run",
            fs,
            "--db",
            dbs,
            "--out",
            c.state.join("o").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    // Each lab built once, in turn, and kept for the second round.
    let built: Vec<&str> = err
        .lines()
        .filter_map(|l| l.split("building ").nth(1))
        .collect();
    assert_eq!(built, ["bridge lab", "macvlan lab"], "{err}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("4 of 4 points, 0 failed"), "{out}");
    let r = c.json(&["report", "latest", "--db", dbs, "--json"]);
    let pts = r["points"].as_array().unwrap();
    assert_eq!(pts.len(), 4, "one record per point, not one per round");
    for p in pts {
        assert_eq!(p["repeat"], 2, "{p}");
        let each = p["repeats"].as_array().unwrap();
        assert_eq!(each.len(), 2, "a repeat from each round: {p}");
        assert!(each
            .iter()
            .all(|x| x["throughput_gbps"].as_f64().unwrap() > 0.0));
    }
    assert_eq!(before, host_snapshot(), "every kept lab was removed");
}

#[test]
fn a_lab_that_cannot_be_built_fails_its_points_and_the_run_goes_on() {
    let c = ctx("expbuild");
    let before = host_snapshot();
    let fake = c.state.join("bin");
    std::fs::create_dir_all(&fake).unwrap();
    write(
        &fake,
        "nft",
        "#!/bin/sh\necho 'nft: refused by the test' >&2\nexit 1\n",
    );
    let sh = format!("chmod +x {}/nft", fake.display());
    assert!(std::process::Command::new("sh")
        .args(["-c", &sh])
        .status()
        .unwrap()
        .success());
    let text = SMALL
        .replace("\"macvlan\"]", "\"nat\"]")
        .replace("[\"1K\", \"64K\"]", "[\"1K\"]");
    let f = write(&c.state, "bn.toml", &text);
    let db = c.state.join("bn.sqlite");
    let path = format!(
        "{}:{}",
        fake.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = c
        .cmd(&[
            "run",
            f.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
            "--json",
        ])
        .env("PATH", path)
        .output()
        .unwrap();
    // It ran to its end, with a hole: exit 3, so a script notices.
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let pts = r["points"].as_array().unwrap();
    assert_eq!(pts.len(), 2, "{r}");
    let err = |i: usize| pts[i]["error"].as_str().unwrap_or("").to_string();
    assert_eq!(err(0), "", "the bridge point was measured: {r}");
    assert!(pts[0]["throughput_gbps"].as_f64().unwrap() > 0.0);
    assert!(
        err(1).contains("building the nat lab failed") && err(1).contains("refused by the test"),
        "{r}"
    );
    assert_eq!(r["run"]["status"], "complete", "{r}");
    assert_eq!(before, host_snapshot(), "the half-built lab was removed");
}

fn wait_points(db: &Path, n: usize) {
    let t0 = std::time::Instant::now();
    loop {
        let o = std::process::Command::new(BIN)
            .args(["report", "latest", "--db", db.to_str().unwrap(), "--json"])
            .output()
            .unwrap();
        if o.status.success() {
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            if v["points"].as_array().map(|a| a.len()).unwrap_or(0) >= n {
                return;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no {n} points stored in time"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_killed_run_leaves_an_open_store_with_its_points_and_cleanup_restores_the_host() {
    let c = ctx("expkill");
    let before = host_snapshot();
    let f = write(&c.state, "longer.toml", LONGER);
    let db = c.state.join("k.sqlite");
    let mut child = c
        .cmd(&[
            "run",
            f.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
            "--out",
            c.state.join("o").to_str().unwrap(),
        ])
        .spawn()
        .unwrap();
    wait_points(&db, 2);
    child.kill().unwrap(); // SIGKILL
    let _ = child.wait();
    let r = c.json(&["report", "latest", "--db", db.to_str().unwrap(), "--json"]);
    assert_eq!(r["run"]["status"], "incomplete");
    let n = r["points"].as_array().unwrap().len();
    assert!((2..8).contains(&n), "{n} points");
    assert!(r["points"][0]["throughput_gbps"].as_f64().unwrap() > 0.0);
    c.ok(&["cleanup"]);
    assert_eq!(before, host_snapshot());
}

#[test]
fn ctrl_c_keeps_finished_points_and_removes_the_lab() {
    let c = ctx("expint");
    let before = host_snapshot();
    let f = write(&c.state, "longer.toml", LONGER);
    let db = c.state.join("i.sqlite");
    let child = c
        .cmd(&[
            "run",
            f.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
            "--out",
            c.state.join("o").to_str().unwrap(),
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_points(&db, 2);
    // SAFETY: kill takes plain integers (a pid this test started, and a signal) and touches no memory.
    unsafe { kill(child.id() as i32, 2) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130));
    assert!(String::from_utf8_lossy(&o.stderr).contains("interrupted"));
    let r = c.json(&["report", "latest", "--db", db.to_str().unwrap(), "--json"]);
    assert_eq!(r["run"]["status"], "interrupted");
    assert!(r["points"].as_array().unwrap().len() >= 2);
    assert_eq!(before, host_snapshot(), "the lab was not removed");
}

extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}

/// Opens the report in headless Chromium: the charts render and the console shows no errors.
#[test]
fn the_report_renders_in_a_real_browser() {
    let c = ctx("browser");
    let f = write(&c.state, "small.toml", SMALL);
    let db = c.state.join("b.sqlite");
    c.ok(&[
        "run",
        f.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
        "--out",
        c.state.join("o").to_str().unwrap(),
    ]);
    let html = c.state.join("report.html");
    c.ok(&[
        "report",
        "latest",
        "--db",
        db.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    let (charts, rendered, console_errors) = in_browser(&html, &c.state);
    assert!(
        charts >= 4 && rendered == charts,
        "{rendered} of {charts} charts rendered"
    );
    assert!(
        console_errors.is_empty(),
        "console errors: {console_errors:?}"
    );
}

/// Paper 3's flood goes to the other guest, in a lab of its own beside the measured one (its own
/// wire, bridge and device model): the flood arrives there, the measured guest's namespace
/// counts not one UDP datagram, and both labs are gone after the run.
#[test]
fn the_other_guests_flood_reaches_it_and_not_the_measured_guest() {
    let c = ctx("expother");
    let before = host_snapshot();
    let text = "name = \"other\"\n[matrix]\nmodes = [\"macvlan\", \"paravirt\"]\nother = \"paravirt\"\ninterference = [\"udp-flood@other,100mbit\"]\nmessages = [\"16K\"]\ndirections = [\"client-to-guest\"]\n[point]\nduration = 1.0\nwarmup = 0.2\n";
    let f = write(&c.state, "other.toml", text);
    let db = c.state.join("other.sqlite");
    let o = c.run(&[
        "run",
        f.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
        "--out",
        c.state.join("o").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mut q = conn
        .prepare("SELECT mode, result FROM points ORDER BY seq")
        .unwrap();
    let rows: Vec<(String, String)> = q
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows.len(), 2);
    for (mode, result) in rows {
        let r: serde_json::Value = serde_json::from_str(&result).unwrap();
        let flood = &r["loads"][0];
        assert_eq!(flood["kind"], "flood", "{mode}: {r}");
        // Most of the 100 Mb/s arrived at the other guest...
        let arrived = flood["arrived_gbps"].as_f64().unwrap();
        assert!(arrived > 0.05, "{mode}: {flood}");
        // ...and none of it at the measured one.
        assert_eq!(flood["measured_guest_udp_in"], 0, "{mode}: {flood}");
        assert!(r["throughput_gbps"].as_f64().unwrap() > 0.0, "{r}");
    }
    assert_eq!(
        before,
        host_snapshot(),
        "both labs of every round were removed"
    );
}
