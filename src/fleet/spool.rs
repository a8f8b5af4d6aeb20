//! The spool: every finished point of a farm's run written to the host's disk, atomically (a new
//! file renamed into place, `sys::file`), before it is sent to the store, so a store that drops
//! out loses nothing. One folder per (run id, host label) holds the run (`run.json`), a file per
//! point (`point-000001.json`) and, once the run ends, how it ended (`end.json`). Every file read
//! back is bounded before it is read, and the folder's listing too.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

use super::Error;
use crate::records::{measured, Fleet, HostFacts, PointRecord};
use crate::vocab::RunStatus;

/// The version of the spool's documents.
pub const VERSION: u32 = 1;
/// The most files a run's spool folder may list (points and its two documents).
const MAX_FILES: usize = 100_000;
/// The most run folders a spool may hold.
const MAX_RUNS: usize = 10_000;

/// A spooled run: what its row in the store holds.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct SpooledRun {
    pub version: u32,
    pub fleet: Fleet,
    pub name: String,
    pub description: String,
    pub text: String,
    pub hash: String,
    pub facts: HostFacts,
    pub planned: u32,
    pub started_at: String,
}

/// A spooled point: its record and its full result, each the store's versioned document.
#[derive(Serialize, Deserialize, Clone, Debug)]
struct SpooledPoint {
    version: u32,
    record: String,
    result: Option<String>,
}

/// How a spooled run ended.
#[derive(Serialize, Deserialize, Clone, Debug)]
struct SpooledEnd {
    version: u32,
    status: RunStatus,
    finished_at: String,
}

/// A run's spool folder, open for writing.
#[derive(Debug)]
pub struct Spool {
    pub dir: PathBuf,
}

/// A run's spool read back: the run, its points (with their results) by sequence, how it ended.
#[derive(Debug)]
pub struct Spooled {
    pub dir: PathBuf,
    pub run: SpooledRun,
    pub points: Vec<PointRecord>,
    pub end: Option<(RunStatus, String)>,
}

fn io(what: &str, path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Spool(format!("cannot {what} {}: {e}", path.display()))
}

/// Makes a folder (mode 0700) unless it is there; one that is there must be a real folder, not a
/// link to one.
fn folder(path: &Path) -> Result<(), Error> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(Error::Input(format!(
            "--spool {}: it is not a folder (a file or a link): name a folder, or a new one",
            path.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::DirBuilder::new()
            .mode(0o700)
            .create(path)
            .map_err(|e| io("make the spool folder", path, e)),
        Err(e) => Err(io("read", path, e)),
    }
}

/// The folder of one farm run on one host inside a spool.
pub fn run_dir(root: &Path, f: &Fleet) -> PathBuf {
    root.join(format!("{}--{}", f.run, f.host))
}

impl Spool {
    /// Opens (making if missing) the run's folder in `root` and writes the run's document.
    pub fn open(root: &Path, run: &SpooledRun) -> Result<Spool, Error> {
        folder(root)?;
        let dir = run_dir(root, &run.fleet);
        folder(&dir)?;
        let s = Spool { dir };
        s.write(
            "run.json",
            &serde_json::to_vec_pretty(run).expect("a run serializes"),
        )?;
        Ok(s)
    }

    fn write(&self, name: &str, bytes: &[u8]) -> Result<(), Error> {
        let path = self.dir.join(name);
        crate::sys::file::replace(&path, bytes, 0o600).map_err(|e| io("write", &path, e))
    }

    /// Writes a finished point, whole, before it is sent anywhere.
    pub fn point(&self, p: &PointRecord) -> Result<(), Error> {
        let doc = SpooledPoint {
            version: VERSION,
            record: p.encode(),
            result: p.result.as_ref().map(|m| m.encode()),
        };
        self.write(
            &format!("point-{:06}.json", p.seq),
            &serde_json::to_vec(&doc).expect("a point serializes"),
        )
    }

    /// Says how the run ended.
    pub fn end(&self, status: RunStatus, at: &str) -> Result<(), Error> {
        let doc = SpooledEnd {
            version: VERSION,
            status,
            finished_at: at.into(),
        };
        self.write(
            "end.json",
            &serde_json::to_vec(&doc).expect("an end serializes"),
        )
    }
}

/// A spool document read back: bounded, then parsed, its version one this build reads.
fn doc<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, Error> {
    let text = crate::text::read_capped(path, measured::MAX_DOCUMENT as u64 * 2 + 4096)
        .map_err(|e| io("read", path, e))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| io("read the spooled document", path, e))?;
    match v.get("version").and_then(|v| v.as_u64()) {
        Some(n) if n as u32 == VERSION => {}
        n => {
            return Err(io(
                "read",
                path,
                format!("its version is {n:?}, and this vnetlab reads {VERSION}: import it with the vnetlab that wrote it"),
            ))
        }
    }
    serde_json::from_value(v).map_err(|e| io("read the spooled document", path, e))
}

/// A spooled point's record with its result.
fn read_point(path: &Path) -> Result<PointRecord, Error> {
    let d: SpooledPoint = doc(path)?;
    let mut p = PointRecord::decode(&d.record).map_err(|e| io("read", path, e))?;
    if let Some(r) = d.result {
        p.result = Some(Box::new(
            measured::Measured::decode(&r).map_err(|e| io("read", path, e))?,
        ));
    }
    Ok(p)
}

/// Names in a folder, at most `max` of them (more is an error: not a spool).
fn listing(dir: &Path, max: usize) -> Result<Vec<String>, Error> {
    let mut names = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| io("list", dir, e))? {
        let e = e.map_err(|e| io("list", dir, e))?;
        if names.len() == max {
            return Err(Error::Input(format!(
                "{} holds more than {max} entries: it is not a vnetlab spool",
                dir.display()
            )));
        }
        names.push(e.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    Ok(names)
}

/// One run's spool folder read back.
pub fn read_run(dir: &Path) -> Result<Spooled, Error> {
    let run: SpooledRun = doc(&dir.join("run.json"))?;
    let mut points = Vec::new();
    for name in listing(dir, MAX_FILES)? {
        if name.starts_with("point-") && name.ends_with(".json") {
            points.push(read_point(&dir.join(&name))?);
        }
    }
    points.sort_by_key(|p| p.seq);
    let end = dir.join("end.json");
    let end = match end.exists() {
        true => {
            let e: SpooledEnd = doc(&end)?;
            Some((e.status, e.finished_at))
        }
        false => None,
    };
    Ok(Spooled {
        dir: dir.into(),
        run,
        points,
        end,
    })
}

/// Every run a spool holds: each folder with a `run.json`.
pub fn read(root: &Path) -> Result<Vec<Spooled>, Error> {
    match std::fs::symlink_metadata(root) {
        Ok(m) if m.is_dir() => {}
        _ => {
            return Err(Error::Input(format!(
                "{}: not a spool folder (give the folder `run --spool` wrote)",
                root.display()
            )))
        }
    }
    listing(root, MAX_RUNS)?
        .into_iter()
        .map(|n| root.join(n))
        .filter(|d| d.join("run.json").is_file())
        .map(|d| read_run(&d))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::PointKey;

    fn run() -> SpooledRun {
        SpooledRun {
            version: VERSION,
            fleet: crate::fleet::fleet("r1", "h1", &[]).unwrap(),
            name: "e".into(),
            description: String::new(),
            text: "x".into(),
            hash: "h".into(),
            facts: HostFacts::default(),
            planned: 2,
            started_at: "2026-11-27T00:00:00Z".into(),
        }
    }

    #[test]
    fn a_spooled_run_reads_back_whole_and_refuses_other_versions() {
        let root = std::env::temp_dir().join(format!("vl-spool-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let s = Spool::open(&root, &run()).unwrap();
        for seq in [2, 1] {
            s.point(&PointRecord {
                seq,
                key: PointKey::default(),
                throughput_gbps: Some(seq as f64),
                ..Default::default()
            })
            .unwrap();
        }
        s.end(RunStatus::Complete, "t").unwrap();
        let all = read(&root).unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].run, run());
        let seqs: Vec<u32> = all[0].points.iter().map(|p| p.seq).collect();
        assert_eq!(seqs, [1, 2]);
        assert_eq!(all[0].points[1].throughput_gbps, Some(2.0));
        assert_eq!(all[0].end.as_ref().unwrap().0, RunStatus::Complete);
        std::fs::write(s.dir.join("end.json"), r#"{"version":9}"#).unwrap();
        let e = read(&root).unwrap_err().to_string();
        assert!(e.contains("version"), "{e}");
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_spool_that_is_a_link_is_refused() {
        let d = std::env::temp_dir().join(format!("vl-spool-link-{}", std::process::id()));
        let _ = std::fs::remove_file(&d);
        std::os::unix::fs::symlink("/tmp", &d).unwrap();
        assert!(Spool::open(&d, &run()).is_err());
        assert!(read(&d).is_err());
        let _ = std::fs::remove_file(&d);
    }
}
