//! The store's tests: round trips, foreign files, dead runs, migrations.

use super::schema::MIGRATIONS;
use super::*;
use crate::records::{PointKey, PointRecord, Repeat, Repeats};
use crate::vocab::{Bound, Mode, PartKind, TestKind};

/// A store file under the temp folder, removed (with its WAL files) before and after the test.
struct Tmp(PathBuf);

impl Tmp {
    fn remove(&self) {
        for s in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{s}", self.0.display()));
        }
    }
}

impl std::ops::Deref for Tmp {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Tmp {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        self.remove();
    }
}

fn tmp(name: &str) -> Tmp {
    let p = Tmp(std::env::temp_dir().join(format!(
        "vnetlab-store-{name}-{}.sqlite",
        std::process::id()
    )));
    p.remove();
    p
}

#[test]
fn round_trip_of_runs_points_samples_and_parts() {
    let p = tmp("rt");
    let s = Store::open(&p, false).unwrap();
    let facts = HostFacts {
        kernel: "6".into(),
        ..Default::default()
    };
    let run = s
        .begin_run(&NewRun::plain(
            "quick",
            "d",
            "name = \"quick\"",
            "abc",
            &facts,
            2,
        ))
        .unwrap();
    let rep = |g: f64| Repeat {
        throughput_gbps: g,
        bound_by: Some(Bound::HostCore(0)),
        movie_buffering_pct: Some(g - 2.0),
        movie_playing_pct: Some(1.5),
        ..Default::default()
    };
    let spread = crate::stats::spread(&[9.4, 9.5, 9.6], 95);
    let pt = PointRecord {
        seq: 1,
        key: PointKey {
            mode: Mode::Bridge,
            test: TestKind::TcpStream,
            load_bps: Some(500_000_000),
            ..Default::default()
        },
        throughput_gbps: Some(9.5),
        bound_by: Some(Bound::Host),
        samples: vec![(0.5, 9.4), (1.0, 9.6)],
        parts: vec![("g1".into(), PartKind::Guest, 20.0, 0.4)],
        spread: Some(Repeats {
            runs: 3,
            confidence_level: 95,
            confidence_met: None,
            throughput_gbps: spread,
            transactions_per_s: None,
            host_busy_pct: None,
            normalized_pct_per_gbps: None,
            wide: false,
            bound_left_out: 0,
            goal: None,
            unmeasurable: None,
            shown: None,
            each: vec![],
            rounds: Some(crate::records::Rounds { count: 3, run: 1 }),
        }),
        repeats: vec![rep(9.4), rep(9.5), rep(9.6)],
        congestion: Some("bbr".into()),
        pacing: Some(crate::vocab::Pacing::Kernel),
        tcp_retransmits: Some(17),
        ..Default::default()
    };
    s.add_point(run, &pt).unwrap();
    s.finish_run(run, RunStatus::Complete).unwrap();
    drop(s);
    let s = Store::open_read(&p).unwrap();
    let r = s.find_run(RunRef::Latest).unwrap();
    assert_eq!(
        (r.name.as_str(), r.status, r.points),
        ("quick", RunStatus::Complete, 1)
    );
    assert_eq!(r.host_facts.kernel, "6");
    assert!(r.finished_at.unwrap().ends_with('Z'));
    let pts = s.points(run).unwrap();
    let back = &pts[0].1;
    assert_eq!(back.key, pt.key);
    assert_eq!(
        (back.bound_by, back.repeats.clone()),
        (pt.bound_by, pt.repeats.clone())
    );
    assert_eq!(back.spread.as_ref().unwrap().throughput_gbps.median, 9.5);
    assert_eq!(
        back.spread.as_ref().unwrap().rounds,
        Some(crate::records::Rounds { count: 3, run: 1 }),
        "the rounds the repeats came from are kept"
    );
    assert_eq!(back.samples, vec![(0.5, 9.4), (1.0, 9.6)]);
    assert_eq!(
        (
            back.congestion.as_deref(),
            back.pacing,
            back.tcp_retransmits
        ),
        (Some("bbr"), Some(crate::vocab::Pacing::Kernel), Some(17)),
        "a point keeps how its TCP ran"
    );
    assert_eq!(
        back.parts[0],
        ("g1".to_string(), PartKind::Guest, 20.0, 0.4)
    );
    assert!(s
        .find_run(RunRef::Id(99))
        .unwrap_err()
        .to_string()
        .contains("no run '99'"));
}

#[test]
fn a_foreign_file_is_refused_and_left_alone() {
    let p = tmp("foreign");
    std::fs::write(&p, b"hello, not a database").unwrap();
    assert!(Store::open(&p, false)
        .unwrap_err()
        .to_string()
        .contains("not a vnetlab database"));
    assert_eq!(std::fs::read(&p).unwrap(), b"hello, not a database");
    // An SQLite file of someone else's is refused too.
    let q = tmp("other-sqlite");
    {
        let c = Connection::open(&q).unwrap();
        c.execute_batch("CREATE TABLE x (a); INSERT INTO x VALUES (1);")
            .unwrap();
    }
    let before = std::fs::read(&q).unwrap();
    assert!(Store::open(&q, false)
        .unwrap_err()
        .to_string()
        .contains("not a vnetlab database"));
    assert_eq!(std::fs::read(&q).unwrap(), before);
}

#[test]
fn a_run_whose_process_died_is_incomplete() {
    let p = tmp("dead");
    let s = Store::open(&p, false).unwrap();
    let run = s
        .begin_run(&NewRun::plain("q", "", "", "", &HostFacts::default(), 3))
        .unwrap();
    s.conn()
        .execute("UPDATE runs SET pid = 999999999 WHERE id = ?1", [run])
        .unwrap();
    drop(s);
    let s = Store::open(&p, false).unwrap();
    assert_eq!(
        s.find_run(RunRef::Latest).unwrap().status,
        RunStatus::Incomplete
    );
}

#[test]
fn an_older_store_is_migrated_with_its_points() {
    let p = tmp("migrate");
    {
        // A store as the first schema left it, holding one point.
        let c = Connection::open(&p).unwrap();
        c.execute_batch("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO meta VALUES ('app', 'vnetlab'), ('schema_version', '1');").unwrap();
        c.execute_batch(MIGRATIONS[0]).unwrap();
        c.execute_batch("INSERT INTO runs (name, description, experiment_text, experiment_hash, vnetlab_version, started_at, status, pid, planned_points, host_facts)
                         VALUES ('old', '', '', '', '0.0.1', 'then', 'complete', 1, 1, '{}');
                         INSERT INTO points (run_id, seq, mode, guests, direction, test, message_bytes, gro, tso, mtu, parallel, duration_s, repeat, throughput_gbps)
                         VALUES (1, 1, 'bridge', 1, 'guest-to-client', 'TCP_STREAM', 1024, 'both', 1, 1500, 1, 1.0, 1, 3.5);").unwrap();
    }
    let s = Store::open(&p, false).unwrap();
    let v: String = s
        .conn()
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(v, MIGRATIONS.len().to_string());
    let pts = s.points(1).unwrap();
    assert_eq!(
        (pts[0].1.throughput_gbps, pts[0].1.key.lro),
        (Some(3.5), false)
    );
    // A store from a newer vnetlab is refused, not downgraded.
    s.conn()
        .execute(
            "UPDATE meta SET value = '99' WHERE key = 'schema_version'",
            [],
        )
        .unwrap();
    drop(s);
    assert!(Store::open(&p, false)
        .unwrap_err()
        .to_string()
        .contains("newer vnetlab"));
}

#[test]
fn times_are_utc_to_the_second() {
    let t = now();
    assert_eq!(t.len(), 20, "{t}");
    assert!(t.ends_with('Z') && t.as_bytes()[10] == b'T', "{t}");
    let parsed: jiff::Timestamp = t.parse().unwrap();
    assert!((jiff::Timestamp::now() - parsed).as_secs().abs() < 5);
}

#[test]
fn an_empty_file_is_refused_unless_asked_to_make_a_store_in_it() {
    let p = tmp("empty");
    std::fs::write(&p, b"").unwrap();
    let e = Store::open(&p, false).unwrap_err().to_string();
    assert!(
        e.contains("is an empty file") && e.contains("--create"),
        "{e}"
    );
    assert_eq!(std::fs::read(&p).unwrap().len(), 0, "nothing written");
    assert!(Store::open_read(&p)
        .unwrap_err()
        .to_string()
        .contains("holds no store yet"));
    Store::open(&p, true).unwrap();
    Store::open_read(&p).unwrap();
}

#[test]
fn a_damaged_store_is_not_written_and_reads_with_a_warning() {
    let p = tmp("damaged");
    {
        let s = Store::open(&p, false).unwrap();
        for i in 0..200 {
            s.begin_run(&NewRun::plain(
                &format!("r{i}"),
                &"x".repeat(2000),
                "",
                "",
                &HostFacts::default(),
                1,
            ))
            .unwrap();
        }
    }
    // 8 KB of noise over the middle of the file, as a bad disk or a stray write leaves it.
    let mut bytes = std::fs::read(&p).unwrap();
    assert!(bytes.len() > 40_000);
    let mut x: u32 = 7;
    for b in &mut bytes[16_384..24_576] {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        *b = (x >> 16) as u8;
    }
    std::fs::write(&p, &bytes).unwrap();
    let e = Store::open(&p, false).unwrap_err();
    assert!(matches!(e, Error::Damaged { .. }), "{e}");
    assert!(e.to_string().contains("is damaged"));
    assert_eq!(
        std::fs::read(&p).unwrap(),
        bytes,
        "a damaged store is not written"
    );
}

#[test]
fn a_reader_leaves_no_files_beside_the_store() {
    let p = tmp("reader");
    Store::open(&p, false)
        .unwrap()
        .begin_run(&NewRun::plain("q", "", "", "", &HostFacts::default(), 1))
        .unwrap();
    let beside = |s: &str| std::path::PathBuf::from(format!("{}{s}", p.display())).exists();
    assert!(!beside("-wal") && !beside("-shm"), "the writer cleaned up");
    let s = Store::open_read(&p).unwrap();
    assert_eq!(s.runs().unwrap().len(), 1);
    drop(s);
    assert!(!beside("-wal") && !beside("-shm"), "the reader made files");
}

#[test]
fn a_stored_result_reads_back_as_measured_and_a_corrupt_one_names_its_point() {
    let p = tmp("result");
    let s = Store::open(&p, false).unwrap();
    let run = s
        .begin_run(&NewRun::plain(
            "q",
            "d",
            "name = \"q\"",
            "abc",
            &HostFacts::default(),
            2,
        ))
        .unwrap();
    let mut m = crate::records::measured::sample();
    m.result.throughput_gbps = 2.5;
    let point = |seq, m: Option<crate::records::measured::Measured>| PointRecord {
        seq,
        result: m.map(Box::new),
        ..Default::default()
    };
    let a = s.add_point(run, &point(1, Some(m))).unwrap();
    let b = s.add_point(run, &point(2, None)).unwrap();
    let back = s.point_result(a).unwrap().expect("the result was stored");
    assert_eq!(back.result.throughput_gbps, 2.5);
    assert_eq!(back.version, crate::records::measured::VERSION);
    assert!(s.point_result(b).unwrap().is_none());
    s.conn()
        .execute(
            "UPDATE points SET result = '{\"version\":2,\"test\":' WHERE id = ?1",
            [a],
        )
        .unwrap();
    let e = s.point_result(a).unwrap_err().to_string();
    assert!(e.contains(&format!("run {run}, point 1:")), "{e}");
    assert!(e.contains("does not parse"), "{e}");
    s.conn()
        .execute(
            "UPDATE points SET result = '{\"version\":99}' WHERE id = ?1",
            [a],
        )
        .unwrap();
    let e = s.point_result(a).unwrap_err().to_string();
    assert!(e.contains("version 99"), "{e}");
}

#[test]
fn a_store_that_turns_read_only_under_a_writer_is_the_users_to_fix() {
    let f = tmp("turns-ro");
    let s = Store::open(&f, false).unwrap();
    s.conn().pragma_update(None, "query_only", "ON").unwrap();
    let e = s
        .begin_run(&NewRun::plain("q", "", "", "", &HostFacts::default(), 1))
        .unwrap_err();
    assert!(matches!(e, Error::ReadOnly(_)), "{e:?}");
    assert!(e.is_bad_input(), "exit 2, not 1: {e}");
}

#[test]
fn a_farm_run_is_found_again_its_failures_dropped_and_no_point_stored_twice() {
    let p = tmp("fleet");
    let s = Store::open(&p, false).unwrap();
    let f = crate::fleet::fleet("r1", "h1", &["rack=a".into()]).unwrap();
    let facts = HostFacts::default();
    let run = s
        .begin_run(&NewRun {
            fleet: Some(&f),
            ..NewRun::plain("q", "", "t", "abc", &facts, 2)
        })
        .unwrap();
    let ok = PointRecord {
        seq: 1,
        throughput_gbps: Some(1.0),
        ..Default::default()
    };
    let bad = PointRecord {
        seq: 2,
        error: Some("the lab failed".into()),
        ..Default::default()
    };
    s.add_point(run, &ok).unwrap();
    s.add_point(run, &bad).unwrap();
    // The unique index refuses a second point 1.
    assert!(s.add_point(run, &ok).is_err());
    let found = s.fleet_run(&f).unwrap().unwrap();
    assert_eq!(
        (found.row.id, found.measured, found.failed),
        (run, vec![1], vec![2])
    );
    assert_eq!(found.row.fleet.as_ref().unwrap().labels[0].value, "a");
    assert_eq!(s.drop_failed_points(run).unwrap(), 1);
    assert_eq!(s.fleet_run(&f).unwrap().unwrap().failed, Vec::<u32>::new());
    // Another host of the same farm run is another run; a second row for (r1, h1) is refused.
    let other = crate::fleet::fleet("r1", "h2", &[]).unwrap();
    assert!(s.fleet_run(&other).unwrap().is_none());
    assert!(s
        .begin_run(&NewRun {
            fleet: Some(&f),
            ..NewRun::plain("q", "", "t", "abc", &facts, 2)
        })
        .is_err());
    assert_eq!(s.farm_runs("r1").unwrap().len(), 1);
}
