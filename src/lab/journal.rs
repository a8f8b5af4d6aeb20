//! The journal: one file per lab naming every object before it is made, so `down` and
//! `cleanup` remove exactly what the lab made, in reverse, and nothing else.

use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    /// A network namespace (removing it removes every interface, qdisc and nft table in it).
    Netns { name: String },
    /// An object inside one of the lab's namespaces: it goes with the namespace.
    InNetns { netns: String, object: String },
    /// A cgroup folder; `shared` ones (vnetlab's parent folder) are removed only when empty.
    Cgroup { path: PathBuf, shared: bool },
    /// An SR-IOV VF moved into a lab namespace and renamed; it goes back under its own name.
    Vf { pf: String, ifname: String, netns: String, lab_name: String },
    /// sriov_numvfs of a PF that the lab changed from `previous`.
    NumVfs { pf: String, previous: u32 },
    /// The lab was built completely.
    Complete,
}

pub struct Journal {
    path: PathBuf,
    file: File,
}

impl Journal {
    /// Starts a new journal; refuses if one exists (the lab exists or was interrupted).
    pub fn create(path: &Path) -> Result<Journal, String> {
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("cannot start journal {}: {e}", path.display()))?;
        Ok(Journal { path: path.to_path_buf(), file })
    }

    /// Records entries durably; called before the objects are made.
    pub fn record(&mut self, entries: &[Entry]) -> Result<(), String> {
        let mut buf = String::new();
        for e in entries {
            buf.push_str(&serde_json::to_string(e).unwrap());
            buf.push('\n');
        }
        self.file
            .write_all(buf.as_bytes())
            .and_then(|_| self.file.sync_data())
            .map_err(|e| format!("cannot write journal {}: {e}", self.path.display()))
    }
}

/// Reads a journal. A torn last line (a crash mid-write) is ignored: its object was not made.
pub fn read(path: &Path) -> Result<Vec<Entry>, String> {
    let f = File::open(path).map_err(|e| format!("cannot read journal {}: {e}", path.display()))?;
    let lines: Vec<String> = BufReader::new(f).lines().map_while(Result::ok).collect();
    parse(&lines).map_err(|(n, e)| format!("{}:{n}: bad journal line: {e}", path.display()))
}

/// Parses journal lines; the error names the 1-based line.
pub fn parse(lines: &[String]) -> Result<Vec<Entry>, (usize, String)> {
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(e) => out.push(e),
            Err(_) if i + 1 == lines.len() => {}
            Err(e) => return Err((i + 1, e.to_string())),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_round_trips_and_survives_a_torn_line() {
        let dir = std::env::temp_dir().join(format!("vljt{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("x.journal");
        let _ = std::fs::remove_file(&p);
        let mut j = Journal::create(&p).unwrap();
        let es = vec![
            Entry::Netns { name: "vlx-host".into() },
            Entry::InNetns { netns: "vlx-host".into(), object: "link vlxw".into() },
            Entry::Cgroup { path: "/sys/fs/cgroup/x".into(), shared: false },
        ];
        j.record(&es).unwrap();
        assert!(Journal::create(&p).is_err(), "a second journal for one lab is refused");
        std::fs::OpenOptions::new().append(true).open(&p).unwrap().write_all(b"{\"kind\":\"net").unwrap();
        assert_eq!(read(&p).unwrap(), es);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
