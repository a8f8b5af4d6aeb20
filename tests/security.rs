//! Integration tests of what vnetlab promises the host it runs on (root; docs/security.md), each
//! planting what a hostile or unlucky neighbour would: a namespace the kernel re-made under a
//! lab's name with the lab's old inode, a journal copied into another state folder, links planted
//! where vnetlab writes (by root and by an unprivileged user in a shared folder), a procfs file
//! bound onto an output path, a taken name. Every test leaves the host as it found it.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A second state folder, next to the test's: another user of vnetlab on this machine.
fn other_state(c: &Ctx, tag: &str) -> PathBuf {
    let d = c.state.with_file_name(format!(
        "{}-{tag}",
        c.state.file_name().unwrap().to_string_lossy()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(&d, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    d
}

fn in_state(state: &Path, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args(args)
        .env("VNETLAB_STATE_DIR", state)
        .output()
        .unwrap()
}

/// The lab's cgroup folders, from its record, deepest first.
fn lab_cgroups(state: &Path, lab: &str) -> Vec<PathBuf> {
    let rec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(state.join(format!("{lab}.json"))).unwrap())
            .unwrap();
    let mut v: Vec<PathBuf> = rec["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e["cgroups"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p.as_str().map(PathBuf::from))
        .collect();
    let parents: Vec<PathBuf> = v
        .iter()
        .filter_map(|p| p.parent().map(Path::to_path_buf))
        .collect();
    v.extend(parents);
    v.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    v.dedup();
    v
}

/// A namespace is known by its cookie, not by an inode the kernel hands out again: the lab of
/// folder S1 is removed by hand, folder S2 makes a lab of the same name (its namespaces may take
/// S1's inodes: the kernel gives the lowest free one) and runs a process in it; S1's `down` then
/// touches none of S2's objects and kills none of its processes.
#[test]
fn a_namespace_remade_under_a_labs_name_is_not_taken_for_the_labs() {
    let c = ctx("seccookie");
    let before = host_snapshot();
    let s2 = other_state(&c, "s2");
    c.ok(&["up", "--name", "sc", "--mode", "bridge"]);
    // Someone removes S1's namespaces and cgroup folders by hand.
    for ns in ["vlsc-host", "vlsc-client", "vlsc-g1"] {
        let _ = Command::new("ip").args(["netns", "del", ns]).status();
    }
    for d in lab_cgroups(&c.state, "sc") {
        let _ = std::fs::remove_dir(&d);
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let o = in_state(&s2, &["up", "--name", "sc", "--mode", "bridge"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut sleeper = Command::new(BIN)
        .args(["exec", "--lab", "sc", "host", "--", "sleep", "300"])
        .env("VNETLAB_STATE_DIR", &s2)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let s2_view = sh("ip netns list | grep vlsc- | sort");
    // S1 removes "its" lab: what it finds by its names is S2's.
    let _ = c.run(&["down", "sc"]);
    assert!(
        sleeper.try_wait().unwrap().is_none(),
        "S1's down killed S2's process"
    );
    assert_eq!(
        s2_view,
        sh("ip netns list | grep vlsc- | sort"),
        "S1's down removed S2's namespaces"
    );
    let status = in_state(&s2, &["status", "--json"]);
    assert!(
        status.status.success() && !String::from_utf8_lossy(&status.stdout).contains("DAMAGED")
    );
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let o = in_state(&s2, &["down", "sc"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let _ = c.run(&["cleanup"]);
    for f in std::fs::read_dir(&c.state).unwrap().flatten() {
        let _ = std::fs::remove_file(f.path());
    }
    let _ = std::fs::remove_dir_all(&s2);
    assert_eq!(before, host_snapshot());
}

/// The check itself, deterministic: a namespace opened by its name and inode, with any cookie
/// but its own, is not the one recorded, and is neither entered nor deleted.
#[test]
fn a_namespaces_cookie_is_checked_before_it_is_entered_or_deleted() {
    use vnetlab::sys::ident;
    let _c = ctx("seccookie2");
    let before = host_snapshot();
    must(&["ip", "netns", "add", "vlckt-a"]);
    let id = ident::id_of(Path::new("/run/netns/vlckt-a")).unwrap();
    let cookie = ident::netns_cookie(&ident::open_netns("vlckt-a", id, None).unwrap()).unwrap();
    match cookie {
        Some(k) => {
            let e = ident::open_netns("vlckt-a", id, Some(k ^ 1)).unwrap_err();
            assert!(e.to_string().contains("cookie"), "{e}");
            assert!(ident::del_netns("vlckt-a", id, Some(k ^ 1)).is_err());
            assert!(Path::new("/run/netns/vlckt-a").exists());
            assert!(ident::open_netns("vlckt-a", id, Some(k)).is_ok());
            assert_eq!(
                ident::del_netns("vlckt-a", id, Some(k)).unwrap(),
                ident::Deleted::Ours
            );
        }
        None => {
            eprintln!("this kernel has no namespace cookies (before 5.14): inode only");
            must(&["ip", "netns", "del", "vlckt-a"]);
        }
    }
    assert_eq!(before, host_snapshot());
}

/// A journal belongs to the folder it was started in: copied into another state folder, it is
/// refused there, and the first folder's running lab is untouched.
#[test]
fn a_journal_copied_into_another_state_folder_is_refused_there() {
    let c = ctx("seccopy");
    let before = host_snapshot();
    let s2 = other_state(&c, "copy");
    c.ok(&["up", "--name", "cp", "--mode", "bridge"]);
    let view = sh("ip netns list | grep vlcp- | sort");
    for f in ["cp.journal", "cp.json"] {
        std::fs::copy(c.state.join(f), s2.join(f)).unwrap();
    }
    let o = in_state(&s2, &["down", "cp"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("started in another state folder"), "{err}");
    let o = in_state(&s2, &["cleanup"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("another state folder"));
    assert_eq!(
        view,
        sh("ip netns list | grep vlcp- | sort"),
        "the first folder's lab was touched"
    );
    c.ok(&["down", "cp"]);
    let _ = std::fs::remove_dir_all(&s2);
    assert_eq!(before, host_snapshot());
}

/// Links planted where vnetlab writes are replaced, never written through: by root in the state
/// folder (the lab record, its command log), and by an unprivileged user in a world-writable
/// report folder (run ids are predictable: run-1.html), one of them at a procfs file.
#[test]
fn links_planted_where_vnetlab_writes_are_never_written_through() {
    let c = ctx("seclinks");
    let before = host_snapshot();
    let victim = c.state.with_file_name(format!(
        "{}-victim",
        c.state.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&victim, "root's own\n").unwrap();
    std::fs::set_permissions(&victim, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    // The state folder: the record and the log of a lab about to be made.
    for f in ["ln.json", "ln.commands.log"] {
        std::os::unix::fs::symlink(&victim, c.state.join(f)).unwrap();
    }
    c.ok(&["up", "--name", "ln", "--mode", "native"]);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root's own\n");
    assert!(!std::fs::symlink_metadata(c.state.join("ln.json"))
        .unwrap()
        .file_type()
        .is_symlink());
    c.ok(&["down", "ln"]);
    // A shared report folder: user nobody plants the next run's page.
    let out = c.state.join("shared");
    std::fs::create_dir(&out).unwrap();
    std::fs::set_permissions(&out, std::os::unix::fs::PermissionsExt::from_mode(0o1777)).unwrap();
    let plant = |name: &str, to: &Path| {
        let o = Command::new("runuser")
            .args(["-u", "nobody", "--", "ln", "-s"])
            .arg(to)
            .arg(out.join(name))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    plant("run-1.html", &victim);
    plant("run-2.html", Path::new("/proc/self/comm"));
    let exp = c.state.join("tiny.toml");
    std::fs::write(
        &exp,
        "name = \"tiny\"\n[matrix]\nmodes = [\"native\"]\nmessages = [\"8K\"]\n[point]\nduration = 0.3\nwarmup = 0.1\n",
    )
    .unwrap();
    let db = c.state.join("l.sqlite");
    for _ in 0..2 {
        c.ok(&[
            "run",
            exp.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root's own\n");
    for page in ["run-1.html", "run-2.html"] {
        let m = std::fs::symlink_metadata(out.join(page)).unwrap();
        assert!(m.file_type().is_file(), "{page} is still a link");
    }
    // A procfs file bound onto a plain path is no file to write.
    let target = c.state.join("bound.html");
    std::fs::write(&target, "").unwrap();
    must(&[
        "mount",
        "--bind",
        "/proc/self/comm",
        target.to_str().unwrap(),
    ]);
    let o = c.run(&[
        "report",
        "1",
        "--db",
        db.to_str().unwrap(),
        "--html",
        target.to_str().unwrap(),
    ]);
    let _ = Command::new("umount").arg(&target).status();
    assert_ne!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let _ = std::fs::remove_file(&victim);
    assert_eq!(before, host_snapshot());
}

/// A name that is taken is a refusal of the input (exit 2), and its advice is no invitation to
/// delete another folder's namespace.
#[test]
fn a_taken_name_is_refused_as_input() {
    let c = ctx("sectaken");
    let before = host_snapshot();
    c.ok(&["up", "--name", "tk", "--mode", "native"]);
    c.refused(
        &["up", "--name", "tk", "--mode", "native"],
        "already exists",
    );
    let s2 = other_state(&c, "tk");
    let o = in_state(&s2, &["up", "--name", "tk", "--mode", "native"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("only if you know it is no one's"), "{err}");
    c.ok(&["down", "tk"]);
    let _ = std::fs::remove_dir_all(&s2);
    assert_eq!(before, host_snapshot());
}
