//! Integration tests of VDI sessions (root): desktops' sessions between a bridge lab's host (the
//! protocol engine) and its client deliver their profile's frames with finite latencies, and
//! input that makes no sense is refused in one line.

mod common;
use common::*;

#[test]
fn two_office_desktops_get_their_frames_with_finite_latencies() {
    let c = ctx("vdi");
    let before = host_snapshot();
    c.ok(&["up", "--name", "tvd", "--guests", "1"]);
    let r = c.json(&[
        "test",
        "--lab",
        "tvd",
        "-t",
        "VDI",
        "--profile",
        "office",
        "--desktops",
        "2",
        "-l",
        "4",
        "--json",
    ]);
    let v = &r["vdi"];
    let desktops = v["desktops"].as_array().unwrap();
    assert_eq!(desktops.len(), 2, "{v}");
    for d in desktops {
        let (fps, target) = (
            d["fps"].as_f64().unwrap(),
            d["target_fps"].as_f64().unwrap(),
        );
        assert_eq!(target, 5.0, "{d}");
        assert!((fps - target).abs() <= 0.05 * target, "{d}");
        for k in ["frame_delay_us", "input_latency_us"] {
            let p99 = d[k]["p99"].as_f64().unwrap();
            assert!(p99.is_finite() && p99 > 0.0, "{k}: {d}");
        }
        // Input is answered by the next frame: within one frame interval and the frame's delay.
        assert!(
            d["input_latency_us"]["p50"].as_f64().unwrap() < 200_000.0 + 50_000.0,
            "{d}"
        );
        assert!(d["bytes_screen"].as_u64().unwrap() > 0 && d["bytes_input"].as_u64().unwrap() > 0);
    }
    let t = &v["total"];
    assert_eq!(t["desktops"], 2);
    assert!(
        (t["target_fps"].as_f64().unwrap() - 10.0).abs() < 1e-9,
        "{t}"
    );
    // The office profile is ~0.2 Mb/s per desktop.
    let mbps = t["screen_gbps"].as_f64().unwrap() * 1e3;
    assert!((0.2..=0.8).contains(&mbps), "{t}");
    assert!(r["cpu"]["parts"].as_array().is_some_and(|p| !p.is_empty()));
    // A profile file of one's own joins the built-in ones; a bad one is refused in one line.
    let dir = std::env::temp_dir().join(format!("vnetlab-vdi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mine = dir.join("mine.toml");
    std::fs::write(
        &mine,
        "[tiny]\nfps = 20\nframe_bytes = [[300, 1]]\nmouse_per_s = 40\n",
    )
    .unwrap();
    let m = mine.to_str().unwrap();
    let r = c.json(&[
        "test",
        "--lab",
        "tvd",
        "-t",
        "VDI",
        "--profiles",
        m,
        "--profile",
        "tiny",
        "-l",
        "2",
        "--json",
    ]);
    assert_eq!(r["vdi"]["profile"], "tiny");
    std::fs::write(&mine, "[tiny]\nfps = 20\nframe_byte = [[300, 1]]\n").unwrap();
    for (args, says) in [
        (vec!["--profiles", m, "--profile", "tiny"], "mine.toml:3:1"),
        (vec!["--profile", "nope"], "video-1080p"),
        (vec![], "needs --profile"),
        (vec!["--profile", "office", "-P", "2"], "--desktops"),
    ] {
        let mut a = vec!["test", "--lab", "tvd", "-t", "VDI", "-l", "1"];
        a.extend(args);
        let o = c.run(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{a:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(says), "{a:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    c.ok(&["down", "tvd"]);
    assert_eq!(before, host_snapshot());
}
