//! Integration tests of the lab's CPU plan (root): the wire is steered as planned, a client's
//! burnt core is the client's and not the host's, points say what bound them, and the planner
//! takes costs only from points nothing bound.

mod common;
use common::*;

fn part_pct(cpu: &serde_json::Value, name: &str, side: &str) -> f64 {
    cpu["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == name && p["side"] == side)
        .map(|p| p["busy_pct"].as_f64().unwrap())
        .sum()
}

#[test]
fn the_cpu_plan_and_the_wire_steering_read_back_as_planned() {
    let c = ctx("cpus");
    let before = host_snapshot();
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    assert!(online.trim() != "0", "these tests need 2 CPUs or more");
    c.ok(&[
        "up",
        "--name",
        "tcpu",
        "--guests",
        "1",
        "--client-cpus",
        "1",
        "--host-cpus",
        "0",
    ]);
    let st = c.json(&["status", "tcpu", "--json"]);
    let l = &st["labs"][0];
    assert_eq!(l["cpus"]["host"], serde_json::json!([0]));
    assert_eq!(l["cpus"]["client"], serde_json::json!([1]));
    assert_eq!(l["cpus"]["placed"], true);
    let ends = l["steering"].as_array().unwrap();
    assert_eq!(ends.len(), 2, "{l}");
    for e in ends {
        assert_eq!(e["as_planned"], true, "{e}");
        let want = if e["side"] == "host" { "1" } else { "2" };
        assert!(
            e["rps_cpus"].as_array().unwrap().iter().all(|m| m
                .as_str()
                .unwrap()
                .trim_start_matches('0')
                == want),
            "{e}"
        );
        assert!(
            e["xps_cpus"].as_array().unwrap().iter().all(|m| m
                .as_str()
                .unwrap()
                .trim_start_matches('0')
                == want),
            "{e}"
        );
    }
    // The host's end receives the client's MTU frames with GRO: its NAPI thread runs on core 0.
    let host_end = ends.iter().find(|e| e["side"] == "host").unwrap();
    if host_end["threaded"] == true {
        assert!(
            host_end["napi_threads"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t["cpus"] == serde_json::json!([0])),
            "{host_end}"
        );
    }
    // Every process the lab starts runs in its side's cpuset.
    let out = c.ok(&[
        "exec",
        "--lab",
        "tcpu",
        "client",
        "--",
        "grep",
        "Cpus_allowed_list",
        "/proc/self/status",
    ]);
    assert!(out.trim().ends_with('1'), "{out}");
    let out = c.ok(&[
        "exec",
        "--lab",
        "tcpu",
        "g1",
        "--",
        "grep",
        "Cpus_allowed_list",
        "/proc/self/status",
    ]);
    assert!(out.trim().ends_with('0'), "{out}");
    // Overlapping or absent CPUs are refused in one line, before anything is made; so is a test
    // between an endpoint and itself.
    for (args, says) in [
        (
            vec!["test", "--lab", "tcpu", "--from", "g1", "--to", "g1"],
            "two different endpoints",
        ),
        (
            vec![
                "up",
                "--name",
                "tbad",
                "--client-cpus",
                "0",
                "--host-cpus",
                "0",
            ],
            "share CPU 0",
        ),
        (
            vec!["up", "--name", "tbad", "--client-cpus", "999"],
            "not online",
        ),
        (
            vec!["up", "--name", "tbad", "--client-cpus", "x"],
            "bad CPU list",
        ),
    ] {
        c.refused(&args, says);
    }
    c.ok(&["down", "tcpu"]);
    assert_eq!(before, host_snapshot());
}

#[test]
fn a_core_burnt_by_the_client_is_the_clients_and_not_the_hosts() {
    let c = ctx("cpuburn");
    let before = host_snapshot();
    c.ok(&["up", "--name", "tburn", "--guests", "1"]);
    let mut burner = c.burn("tburn", "client");
    let v = c.json(&["meter", "--lab", "tburn", "-l", "2", "--json"]);
    burner.kill().unwrap();
    let _ = burner.wait();
    let cpu = &v["cpu"];
    let client = cpu["client_busy_pct"].as_f64().unwrap();
    let host = cpu["host_busy_pct"].as_f64().unwrap();
    assert!(client >= 90.0, "the client's core: {client} % ({cpu})");
    assert!(host <= 15.0, "the host's cores stayed quiet: {host} %");
    // The burner had the client's core but for what other tenants ran there (a busy machine's
    // other cgroups and unconfined tasks), which the meter names apart.
    let others =
        part_pct(cpu, "other cgroups", "client") + part_pct(cpu, "unconfined tasks", "client");
    assert!(part_pct(cpu, "client", "client") + others >= 85.0, "{cpu}");
    assert!(part_pct(cpu, "client (leak)", "host") < 1.0);
    assert!(
        cpu["leak_pct"].as_f64().unwrap() < 2.0 || host < 1.0,
        "{}",
        cpu["leak_pct"]
    );
    // Each side's parts add up to its busy share (the host's: everything on its cores, the work
    // of tasks that are not the lab's included; `host_busy_pct` leaves that out), none negative,
    // past it by no more than the meter's tolerance (sources read a hair apart in time).
    let total = cpu["host_total_pct"].as_f64().unwrap();
    assert!(total >= host && total - host - cpu["foreign_pct"].as_f64().unwrap() < 1e-6);
    for (side, want) in [("host", total), ("client", client)] {
        let parts: Vec<f64> = cpu["parts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["side"] == side)
            .map(|p| p["busy_pct"].as_f64().unwrap())
            .collect();
        assert!(parts.iter().all(|&p| p >= 0.0), "{side}: {parts:?}");
        let sum: f64 = parts.iter().sum();
        let tol = (0.1 * want).max(1.0);
        assert!(
            sum >= want - 1e-6 && sum - want <= tol,
            "{side}: {sum} vs {want}"
        );
    }
    c.ok(&["down", "tburn"]);
    assert_eq!(before, host_snapshot());
}

#[test]
fn points_say_what_bound_them_and_the_planner_takes_only_unbound_costs() {
    let c = ctx("bound");
    let before = host_snapshot();
    c.ok(&["up", "--name", "tbnd", "--guests", "1"]);
    // Paced far below every limit: nothing bound it.
    let v = c.json(&[
        "test", "--lab", "tbnd", "--from", "g1", "--to", "client", "-m", "64K", "-l", "1",
        "--rate", "200mbit", "--json",
    ]);
    // Far below every limit nothing binds it, unless other work saturated the host's core (a
    // compiler beside `make test`): then the bound is the host's and the point says whose work
    // filled it.
    let cpu = &v["cpu"];
    let foreign = cpu["foreign_pct"].as_f64().unwrap();
    assert!(
        cpu["bound_by"].is_null()
            || (cpu["bound_by"].as_str().unwrap().starts_with("host") && foreign >= 20.0),
        "bound by {} with {foreign:.1} % foreign: {cpu}",
        cpu["bound_by"]
    );
    assert_eq!(v["cpus"]["placed"], true);
    // As fast as it goes on a 2-core host: something bound it (a saturated side's core, or the
    // waits between the sides when neither core quite saturates).
    let v = c.json(&[
        "test", "--lab", "tbnd", "--from", "g1", "--to", "client", "-m", "64K", "-l", "1", "--json",
    ]);
    let b = v["cpu"]["bound_by"]
        .as_str()
        .unwrap_or_else(|| panic!("unbound at full speed: {}", v["cpu"]));
    assert!(
        ["host", "client", "host core 0", "client core 1", "latency"].contains(&b),
        "{b}"
    );
    c.ok(&["down", "tbnd"]);
    // The planner: a run with only full-speed points is refused; --allow-bound takes them.
    let exp = c.state.join("b.toml");
    std::fs::write(&exp, "name = \"b\"\n[matrix]\nmodes = [\"bridge\"]\nmessages = [\"64K\"]\ndirections = [\"guest-to-client\", \"host-to-client\"]\nloads = [\"max\", \"200mbit\"]\n[point]\nduration = 0.5\nwarmup = 0.2\n").unwrap();
    let db = c.state.join("b.sqlite");
    let dbs = db.to_str().unwrap();
    c.ok(&[
        "run",
        exp.to_str().unwrap(),
        "--db",
        dbs,
        "--out",
        c.state.join("o").to_str().unwrap(),
    ]);
    let v = c.json(&[
        "plan",
        "--from-run",
        "1",
        "--db",
        dbs,
        "--load",
        "200mbit",
        "--json",
    ]);
    assert!(
        v["points_used"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u.as_str().unwrap().contains("at 200mbit")),
        "{}",
        v["points_used"]
    );
    let o = c.run(&["plan", "--from-run", "1", "--db", dbs, "--load", "max"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--allow-bound") && one_line(&err), "{err}");
    let v = c.json(&[
        "plan",
        "--from-run",
        "1",
        "--db",
        dbs,
        "--load",
        "max",
        "--allow-bound",
        "--json",
    ]);
    assert!(
        v["points_used"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u.as_str().unwrap().contains("at max")),
        "{}",
        v["points_used"]
    );
    // The stored points keep every repeat and what bound each.
    let r = c.json(&["report", "1", "--db", dbs, "--json"]);
    let pts = r["points"].as_array().unwrap();
    assert!(
        pts.iter().any(|p| p["bound_by"].is_string())
            && pts.iter().any(|p| p["bound_by"].is_null())
    );
    assert!(pts
        .iter()
        .all(|p| p["placed"] == true && p["host_cpus"].is_string()));
    assert_eq!(before, host_snapshot());
}
