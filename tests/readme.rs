//! The README's walk, run as a new user would, so the guide cannot rot: every `vnetlab` command in
//! its `sh` blocks names a command and flags that `--help` lists, and each runs, in order, in a
//! folder of its own (the store and pages land there) — except `reproduce`, whose quarter of an
//! hour the paper tests cover; its flags are checked like the others'.

mod common;
use common::*;

/// The `vnetlab …` lines of the README's `sh` blocks, `sudo` and trailing comments dropped.
fn readme_commands(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut in_sh = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            in_sh = t == "```sh";
            continue;
        }
        let t = t.strip_prefix("sudo ").unwrap_or(t);
        if in_sh && t.starts_with("vnetlab ") {
            let t = t.split(" #").next().unwrap_or(t);
            out.push(t.split_whitespace().skip(1).map(str::to_string).collect());
        }
    }
    out
}

#[test]
fn the_readme_walk_runs_in_order() {
    let c = ctx("readme");
    let before = host_snapshot();
    let cmds = readme_commands(include_str!("../README.md"));
    assert!(
        cmds.len() >= 6,
        "the README's walk has {} commands",
        cmds.len()
    );
    let cwd = c.state.join("cwd");
    std::fs::create_dir_all(cwd.join("experiments")).unwrap();
    std::fs::copy("experiments/quick.toml", cwd.join("experiments/quick.toml")).unwrap();
    for args in &cmds {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let help = c.ok(&[a[0], "--help"]);
        for flag in a.iter().filter(|x| x.starts_with('-')) {
            let flag = flag.split('=').next().unwrap();
            assert!(
                help.contains(flag),
                "`vnetlab {a:?}`: {flag} is not in its --help"
            );
        }
        if a[0] == "reproduce" {
            continue;
        }
        let mut o = c.cmd(&a).current_dir(&cwd).output().unwrap();
        // The guide says so: a plan from costs whose interval is wider than asked is refused,
        // naming them, unless allowed.
        let said = String::from_utf8_lossy(&o.stderr).to_string();
        if a[0] == "plan" && o.status.code() == Some(2) && said.contains("--allow-wide") {
            o = c
                .cmd(&[&a[..], &["--allow-wide"]].concat())
                .current_dir(&cwd)
                .output()
                .unwrap();
        }
        assert!(
            o.status.success(),
            "the README's `vnetlab {}` failed: {}",
            a.join(" "),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert!(cwd.join("vnetlab.sqlite").exists() && cwd.join("report.html").exists());
    assert_eq!(before, host_snapshot());
}

#[test]
fn commands_are_read_from_sh_blocks_only() {
    let text = "vnetlab up\n```sh\nsudo vnetlab up --name x   # a lab\nls\n```\n```toml\nvnetlab = 1\n```\n";
    assert_eq!(readme_commands(text), vec![vec!["up", "--name", "x"]]);
}
