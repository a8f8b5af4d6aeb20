//! Integration test of `vnetlab reproduce` (root): the smallest paper's quick suite runs end to
//! end, its claims get computed verdicts, its page and the index are written, and re-rendering
//! from the stored run measures nothing and agrees.

mod common;
use common::*;

#[test]
fn the_smallest_paper_reproduces_end_to_end_and_re_renders_from_its_run() {
    let c = ctx("repro");
    let before = host_snapshot();
    let db = c.state.join("r.sqlite");
    let out = c.state.join("pages");
    let (db, out) = (db.to_str().unwrap(), out.to_str().unwrap());
    let r = c.json(&[
        "reproduce",
        "xen-lro",
        "--quick",
        "--db",
        db,
        "--out",
        out,
        "--json",
    ]);
    let p = &r["papers"][0];
    assert_eq!(p["paper"], "xen-lro", "{r}");
    assert_eq!(
        p["runs"].as_array().unwrap().len(),
        2,
        "the throughput and cost suites"
    );
    let claims = p["claims"].as_array().unwrap();
    assert_eq!(claims.len(), 10, "{p}");
    // Every claim gets a computed verdict. A cost is "not measurable" for one of two reasons,
    // each of which the stored run must show: this host did not carry its paced load in most
    // rounds (a CI machine's guest1 once fell short in two of four), or the meter could not tell
    // its host CPU (a CI machine's steal of 3 % once hid guest2's in every unit).
    let mut measured = 0;
    for cl in claims {
        let v = cl["verdict"].as_str().unwrap();
        if v == "not measurable" {
            let why = cl["why"].as_str().unwrap();
            if why.contains("could not be told on this host") {
                let stored: Vec<String> = p["runs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .flat_map(|r| untold(db, r.as_i64().unwrap()))
                    .collect();
                assert!(
                    stored.iter().any(|s| why.ends_with(s.as_str())),
                    "the reason is a stored point's: {cl} vs {stored:?}"
                );
            } else {
                assert!(
                    why.contains(" of 4 rounds")
                        && why.contains("a cost compares only points nothing bound"),
                    "only a cost the host bound or could not tell goes unmeasured: {cl}"
                );
                assert!(bound_paced_repeats(db, &p["runs"]) > 0, "{cl}");
            }
            assert!(cl["figures"].as_array().unwrap().is_empty(), "{cl}");
            continue;
        }
        measured += 1;
        assert!(
            [
                "holds",
                "holds, stronger than the paper",
                "tie",
                "does not hold",
                "within the spread"
            ]
            .contains(&v),
            "every quick point was measured: {cl}"
        );
        assert!(cl["ours"].as_str().unwrap().contains("Gb/s"), "{cl}");
        // Beside each verdict its size: ours always, the paper's on the paper's own claims (and
        // those read from its figures), pair by pair where the claim names a size per pair.
        let pairs = cl["size"]["pairs"].as_array().unwrap();
        let sizes: Vec<&serde_json::Value> = match pairs.as_slice() {
            [] => vec![&cl["size"]],
            each => each.iter().map(|p| &p["size"]).collect(),
        };
        let beyond = cl["origin"] == "beyond";
        for size in sizes {
            assert!(size["ours"].as_f64().is_some(), "{cl}");
            assert_eq!(size["paper"].is_null(), beyond, "{cl}");
        }
        assert!(!cl["note"].as_str().unwrap().is_empty() || beyond, "{cl}");
        assert!(!cl["stand_in"].as_str().unwrap().is_empty(), "{cl}");
    }
    let page = std::fs::read_to_string(p["page"].as_str().unwrap()).unwrap();
    assert!(
        page.contains("Software LRO") && page.contains("guest2"),
        "page"
    );
    // Every figure of the paper file is redrawn, with the paper's values marked, and the page
    // says which guests ran: backend LRO keeps paper 2 in namespaces.
    for fig in [
        "Table 2: receive throughput",
        "Table 2: LRO ratio",
        "Table 3: host CPU per Gb/s",
        "Fig. 2: the receiver",
    ] {
        assert!(page.contains(&format!("data-chart=\"{fig}")), "{fig}");
    }
    // The paper's values in our units sit on our axis; its clock cycles are no host CPU per
    // Gb/s, so that figure draws each side as a ratio to its own first series.
    assert!(
        page.contains("each side is drawn as a ratio to its own")
            && !page.contains("the paper&apos;s (right axis)"),
        "paper values in another unit drawn as ratios, on one axis"
    );
    assert!(
        !page.contains("no window trace"),
        "every receiver's window was sampled"
    );
    assert_eq!(p["guests"]["kind"], "netns", "{p}");
    assert!(p["guests"]["why_not_qemu"]
        .as_str()
        .unwrap()
        .contains("LRO"));
    // The claims beyond the paper have a section of their own; the coverage table names the
    // paper's items.
    assert!(page.contains("Beyond the paper") && page.contains("Coverage: the paper"));
    // The page renders in a real browser: four figures and a chart per measured claim, no
    // console errors.
    let (charts, rendered, errors) =
        in_browser(std::path::Path::new(p["page"].as_str().unwrap()), &c.state);
    assert!(
        charts == 4 + measured && rendered == charts,
        "{rendered} of {charts} charts rendered ({measured} claims measured)"
    );
    assert!(errors.is_empty(), "console errors: {errors:?}");
    let run = p["runs"][0].as_i64().unwrap();
    assert!(std::path::Path::new(out)
        .join(format!("run-{run}.html"))
        .exists());
    assert!(std::path::Path::new(out).join("index.html").exists());
    // Re-rendered from the store: the same run and verdicts, nothing measured.
    let again = c.json(&[
        "reproduce",
        "xen-lro",
        "--quick",
        "--from-runs",
        "--db",
        db,
        "--out",
        out,
        "--json",
    ]);
    assert_eq!(again["papers"][0]["runs"], p["runs"]);
    let verdicts = |x: &serde_json::Value| -> Vec<String> {
        x["claims"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["verdict"].to_string())
            .collect()
    };
    assert_eq!(verdicts(&again["papers"][0]), verdicts(p));
    // Papers with no stored run render as not measured, not as a crash, and say so.
    let all = c.run(&[
        "reproduce",
        "all",
        "--quick",
        "--from-runs",
        "--db",
        db,
        "--out",
        out,
        "--json",
    ]);
    let warned = String::from_utf8_lossy(&all.stderr);
    assert_eq!(all.status.code(), Some(0), "{warned}");
    let all: serde_json::Value = serde_json::from_slice(&all.stdout).unwrap();
    for p in all["papers"].as_array().unwrap() {
        let measured = p["paper"] == "xen-lro";
        let nc = p["claims"].as_array().unwrap();
        assert_eq!(
            nc.iter().all(|c| c["verdict"] == "not measurable"),
            !measured,
            "{p}"
        );
    }
    assert!(
        warned.contains("vmware-esx35: no stored run of vmware-esx35-quick"),
        "{warned}"
    );
    // A store with no run of any asked suite is the wrong --db or a missing --quick: refused.
    for (args, hint) in [
        (
            vec!["vmware-esx35", "--quick"],
            "run `vnetlab reproduce --quick` first",
        ),
        (vec!["xen-lro"], "add --quick"),
    ] {
        let fresh = c.state.join("fresh-pages");
        let mut argv = vec!["reproduce", "--from-runs", "--db", db, "--out"];
        argv.push(fresh.to_str().unwrap());
        argv.extend(args);
        let o = c.run(&argv);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(hint) && one_line(&err), "{err}");
        assert!(!fresh.exists(), "no pages are written");
    }
    let o = c.run(&["reproduce", "nope", "--from-runs", "--db", db, "--out", out]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("xen-passthrough"), "{err}");
    assert_eq!(before, host_snapshot());
}

/// How many repeats of paced points in these runs something bound (a load not carried in full,
/// a saturated core), read from the store itself.
fn bound_paced_repeats(db: &str, runs: &serde_json::Value) -> i64 {
    let c = rusqlite::Connection::open(db).unwrap();
    let q = "SELECT count(*) FROM repeats r JOIN points p ON p.id = r.point_id \
             WHERE p.run_id = ?1 AND p.load_bps IS NOT NULL AND r.bound_by IS NOT NULL";
    runs.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            c.query_row(q, [r.as_i64().unwrap()], |x| x.get::<_, i64>(0))
                .unwrap()
        })
        .sum()
}

/// A cost compared between points something bound is not a cost: a claim on host CPU per Gb/s
/// over points a saturated host core bound is "not measurable", with the reason, on the page and
/// in --json. The points are real: a burner fills the host core while the paced streams run.
#[test]
fn a_cost_claim_over_bound_points_is_not_measurable_with_the_reason() {
    let c = ctx("reprobound");
    let before = host_snapshot();
    let db = c.state.join("r.sqlite");
    let out = c.state.join("pages");
    let exp = c.state.join("icsnc2013-costs.toml");
    // The suite the claim reads, run under a burner on the host core (an interference the claim's
    // selectors do not name, so its points are the ones read).
    std::fs::write(
        &exp,
        "name = \"icsnc2013-costs\"\n[matrix]\nmodes = [\"macvlan\", \"emulated\"]\nguests = [1]\ntests = [\"TCP_STREAM\"]\nmessages = [\"8K\"]\ndirections = [\"guest-to-client\"]\ntso = [true]\nloads = [\"200mbit\"]\ninterference = [\"cpu@host\"]\n[point]\nduration = 1.0\nwarmup = 0.3\n",
    )
    .unwrap();
    let (db, out) = (db.to_str().unwrap(), out.to_str().unwrap());
    c.ok(&["run", exp.to_str().unwrap(), "--db", db, "--out", out]);
    let r = c.json(&[
        "reproduce",
        "icsnc2013",
        "--quick",
        "--from-runs",
        "--db",
        db,
        "--out",
        out,
        "--json",
    ]);
    let claims = r["papers"][0]["claims"].as_array().unwrap();
    let cl = claims
        .iter()
        .find(|c| {
            c["claim"]
                .as_str()
                .unwrap()
                .starts_with("Emulating the vNIC costs host CPU")
        })
        .unwrap();
    assert_eq!(cl["verdict"], "not measurable", "{cl}");
    let why = cl["why"].as_str().unwrap();
    assert!(
        why.contains("was bound by host")
            && why.contains("a cost compares only points nothing bound"),
        "{why}"
    );
    let page = std::fs::read_to_string(r["papers"][0]["page"].as_str().unwrap()).unwrap();
    assert!(page.contains("a cost compares only points nothing bound"));
    assert_eq!(before, host_snapshot());
}
