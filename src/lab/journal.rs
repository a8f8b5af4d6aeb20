//! The journal: one file per lab naming every object before it is made and, once made, what it
//! is (its identity: a namespace's nsfs inode, a folder's inode, an uplink's index and hardware
//! address), so `down`, `cleanup` and a failed build's rollback remove exactly what the lab
//! made, in reverse, and nothing that merely carries its name.

use crate::lab::Error;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    /// The process that builds the lab (pid and start time), and whether the lab is kept after it
    /// ends (`up`); a run's or a bench's lab belongs to its process and is abandoned when it dies.
    Owner {
        pid: u32,
        start: Option<u64>,
        kept: bool,
        /// The state folder the journal was started in (its identity): a journal copied into
        /// another folder names objects that folder did not make, and is refused there.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        folder: Option<crate::sys::ident::FileId>,
        /// The boot the owner ran in (/proc/sys/kernel/random/boot_id): after a reboot a pid and
        /// start time can match another process.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        boot: Option<String>,
    },
    /// A network namespace about to be made (removing it removes every interface, qdisc and nft
    /// table in it).
    Netns { name: String },
    /// The namespace the lab made under that name: only a namespace of this identity is entered,
    /// emptied or removed as the lab's.
    NetnsMade {
        name: String,
        id: crate::sys::ident::FileId,
        /// Its cookie (Linux 5.14 on): the inode alone the kernel reuses at once, the cookie
        /// never; journals of older kernels (and of vnetlab before) have none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cookie: Option<u64>,
    },
    /// An object inside one of the lab's namespaces: it goes with the namespace.
    InNetns { netns: String, object: NsObject },
    /// A cgroup folder about to be made; `shared` ones (vnetlab's parent folder) are removed only
    /// when empty, and only by a lab that made or shares it. `temp` is the unique name it is made
    /// under first and renamed from (so a crash between making it and journaling what it is
    /// leaves a name only this lab could have made).
    Cgroup {
        path: PathBuf,
        shared: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        temp: Option<PathBuf>,
    },
    /// The folder the lab made at that path: only a folder of this identity is joined, emptied or
    /// removed as the lab's (one that existed before is never journaled as made).
    CgroupMade {
        path: PathBuf,
        id: crate::sys::ident::FileId,
    },
    /// An SR-IOV VF moved into a lab namespace and renamed; it goes back under its own name.
    Vf {
        pf: String,
        ifname: String,
        netns: String,
        lab_name: String,
    },
    /// The physical function `up --pf` named, recorded before anything is written to it: every
    /// VF entry must name this PF.
    Pf { name: String },
    /// sriov_numvfs of a PF that the lab changed from `previous` to `set` (`down` writes `previous`
    /// back only while the PF still has `set`).
    NumVfs {
        pf: String,
        previous: u32,
        #[serde(default)]
        set: Option<u32>,
    },
    /// VF `vf` of `pf`, PCI device `device`, bound to vfio-pci for a QEMU guest; it was bound
    /// to `driver` before (the kernel probes it again when it is given back).
    VfioVf {
        pf: String,
        vf: u32,
        device: String,
        driver: Option<String>,
    },
    /// A QEMU guest's folder (sockets, console, pidfile) in the state folder; its QEMU runs in
    /// the lab's namespace and cgroup, so it goes with the lab's processes.
    VmFolder { path: PathBuf },
    /// An interface of this machine's (`--uplink`) about to move into the lab's namespace `netns`
    /// as the wire's host end; `before` is who it is and how it was, which `down` puts back.
    Uplink {
        name: String,
        netns: String,
        before: super::uplink::UplinkState,
    },
    /// The uplink is in the lab's namespace (the move succeeded).
    UplinkMoved { name: String },
    /// A change `up --shield` makes outside the lab (a cpuset, an affinity, an IRQ's or a
    /// device's mask), given back when the lab goes.
    Shield { change: crate::shield::Change },
    /// The lab was built completely.
    Complete,
}

/// An object made inside a lab namespace. Written in the journal as text ("link vl…",
/// "qdisc root dev vl…", "nft table ip vl…"), as journals have always been.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(into = "String", try_from = "String")]
pub enum NsObject {
    Link(String),
    RootQdisc(String),
    NftTable(String),
}

impl std::fmt::Display for NsObject {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            NsObject::Link(n) => write!(f, "link {n}"),
            NsObject::RootQdisc(d) => write!(f, "qdisc root dev {d}"),
            NsObject::NftTable(t) => write!(f, "nft table ip {t}"),
        }
    }
}

impl From<NsObject> for String {
    fn from(o: NsObject) -> String {
        o.to_string()
    }
}

impl TryFrom<String> for NsObject {
    type Error = Error;
    fn try_from(s: String) -> Result<NsObject, Error> {
        let named = |n: &str| {
            let ok = !n.is_empty() && n.len() <= 64 && !n.contains(['\n', '/', ' ']);
            ok.then(|| n.to_string()).ok_or_else(|| {
                Error::Failed(format!("bad object name in '{}'", crate::text::clip(&s)))
            })
        };
        if let Some(n) = s.strip_prefix("link ") {
            Ok(NsObject::Link(named(n)?))
        } else if let Some(d) = s.strip_prefix("qdisc root dev ") {
            Ok(NsObject::RootQdisc(named(d)?))
        } else if let Some(t) = s.strip_prefix("nft table ip ") {
            Ok(NsObject::NftTable(named(t)?))
        } else {
            Err(Error::Failed(format!(
                "unknown object '{}'",
                crate::text::clip(&s)
            )))
        }
    }
}

pub struct Journal {
    path: PathBuf,
    file: File,
    /// What was recorded so far (this process wrote every line of its journal).
    written: Vec<Entry>,
}

impl Journal {
    /// Starts a new journal, owned by this process, its first line naming it; refuses atomically
    /// if one exists (the name is taken: the lab exists, is being built, or was interrupted).
    pub fn create(path: &Path, kept: bool) -> Result<Journal, Error> {
        let lab = path.file_stem().unwrap_or_default().to_string_lossy();
        use std::os::unix::fs::OpenOptionsExt;
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => Error::Taken(format!(
                    "lab '{lab}' already exists: remove it with `vnetlab down {lab}` or pick another --name"
                )),
                _ => Error::Failed(format!("cannot start journal {}: {e}", path.display())),
            })?;
        let mut j = Journal {
            path: path.to_path_buf(),
            file,
            written: Vec::new(),
        };
        let pid = std::process::id();
        j.record(&[Entry::Owner {
            pid,
            start: crate::sys::start_time(pid),
            kept,
            folder: folder_of(path),
            boot: boot_id(),
        }])?;
        Ok(j)
    }

    /// What this journal holds so far.
    pub fn entries(&self) -> Result<Vec<Entry>, Error> {
        Ok(self.written.clone())
    }

    /// Records entries; called before the objects are made. The lines reach the file (the
    /// kernel's page cache) before this returns, so they outlive vnetlab's death; they are
    /// synced to the disk only where an object would outlive the machine's (a folder on disk):
    /// every other object a lab makes (namespaces, links, cgroups, taps, folders under /run)
    /// is gone after a reboot, and a journal of an earlier boot is known by its boot id.
    pub fn record(&mut self, entries: &[Entry]) -> Result<(), Error> {
        let mut buf = String::new();
        for e in entries {
            buf.push_str(&serde_json::to_string(e).unwrap());
            buf.push('\n');
        }
        let durable = entries.iter().any(Entry::outlives_reboot);
        self.file
            .write_all(buf.as_bytes())
            .and_then(|_| {
                if durable {
                    self.file.sync_data()
                } else {
                    Ok(())
                }
            })
            .map_err(|e| {
                Error::Failed(format!("cannot write journal {}: {e}", self.path.display()))
            })?;
        self.written.extend_from_slice(entries);
        Ok(())
    }
}

impl Entry {
    /// Whether the object named would still be there after the machine restarts.
    fn outlives_reboot(&self) -> bool {
        match self {
            Entry::VmFolder { path } => !path.starts_with("/run") && !path.starts_with("/dev/shm"),
            _ => false,
        }
    }
}

/// Whether a lab is in use, from its journal.
#[derive(Clone, Debug, PartialEq)]
pub enum Usage {
    /// Its owner (the process building it, or the run or bench using it) still runs.
    Owned { pid: u32 },
    /// Made by `up` and complete: it lives until `vnetlab down`.
    Kept,
    /// Its owner is gone and it was not kept: `cleanup` removes it.
    Abandoned { why: String },
}

/// Who uses a lab. `alive(pid, start)` says whether a process still runs.
pub fn usage(entries: &[Entry], alive: impl Fn(u32, Option<u64>) -> bool) -> Usage {
    let complete = entries.contains(&Entry::Complete);
    let this_boot = boot_id();
    match entries.iter().find_map(|e| {
        if let Entry::Owner {
            pid,
            start,
            kept,
            boot,
            ..
        } = e
        {
            // An owner of another boot is gone, whatever now runs under its pid.
            let same_boot = boot.is_none() || *boot == this_boot;
            Some((*pid, start.filter(|_| same_boot), *kept, same_boot))
        } else {
            None
        }
    }) {
        Some((pid, start, _, true)) if alive(pid, start) => Usage::Owned { pid },
        Some((_, _, true, _)) if complete => Usage::Kept,
        Some((pid, _, true, _)) => Usage::Abandoned {
            why: format!("`vnetlab up` (pid {pid}) died before it was complete"),
        },
        Some((pid, _, false, _)) => Usage::Abandoned {
            why: format!("the run that used it (pid {pid}) is gone"),
        },
        None => Usage::Abandoned {
            why: "its journal names no owner (an older vnetlab)".into(),
        },
    }
}

/// The identity of the folder a journal lives in.
fn folder_of(path: &Path) -> Option<crate::sys::ident::FileId> {
    let d = path.parent().filter(|d| !d.as_os_str().is_empty())?;
    crate::sys::ident::id_of(d).ok()
}

/// This boot's id.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
}

/// A journal belongs to the folder it was started in: one whose owner recorded another folder
/// (copied, or moved, from another state folder) names objects this folder never made.
fn check_folder(path: &Path, entries: &[Entry]) -> Result<(), Error> {
    let here = folder_of(path);
    // Every owner line counts (a planted one need not come first).
    let folders: Vec<Option<crate::sys::ident::FileId>> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Owner { folder, .. } => Some(*folder),
            _ => None,
        })
        .collect();
    if let Some(f) = folders.iter().flatten().find(|f| Some(**f) != here) {
        return Err(Error::Failed(format!(
            "{}: this journal was started in another state folder ({f}, this one is {}): it names that folder's lab, not one of this folder's; vnetlab will not act on it",
            path.display(),
            here.map_or("unknown".into(), |h| h.to_string())
        )));
    }
    // A journal that takes a real interface must say where it was started: the machine's own
    // NIC is given back (flushed, set down, moved) only for a journal this folder wrote.
    let takes_uplink = entries.iter().any(|e| matches!(e, Entry::Uplink { .. }));
    if takes_uplink && (folders.is_empty() || folders.iter().any(Option::is_none)) {
        return Err(Error::Failed(format!(
            "{}: this journal takes an uplink but records no state folder (not written by this vnetlab, or planted): vnetlab will not touch the interface it names; look at the file and remove it by hand",
            path.display()
        )));
    }
    Ok(())
}

/// The largest journal vnetlab reads (a lab of 9 999 guests writes well under 4 MB).
pub const MAX_BYTES: u64 = 16 << 20;

/// Reads a journal and checks that it names only vnetlab's own objects of lab `lab`. A torn last
/// line (a crash mid-write) is ignored: its object was not made. Any other line that is not text
/// or does not parse refuses the whole journal, which is kept for a person to look at. Anything
/// but a regular file (a FIFO would block for ever) is refused before it is read.
pub fn read(path: &Path, lab: &str) -> Result<Vec<Entry>, Error> {
    if let Some(d) = path.parent() {
        super::folder::check_trusted(d)?;
    }
    let bytes = crate::text::read_own_bytes_capped(path, MAX_BYTES)
        .map_err(|e| Error::Failed(format!("cannot read journal: {e}")))?;
    let lines = text_lines(&bytes).map_err(|n| {
        Error::Failed(format!(
            "{}:{n}: the journal line is not text: vnetlab will not act on it; look at the file and remove it by hand",
            path.display()
        ))
    })?;
    let torn = !bytes.is_empty() && !bytes.ends_with(b"\n");
    let entries = parse(&lines, torn).map_err(|(n, e)| {
        Error::Failed(format!(
            "{}:{n}: bad journal line ({e}): vnetlab will not act on it; look at the file and remove it by hand",
            path.display()
        ))
    })?;
    check_folder(path, &entries)?;
    let roots = super::cgroup::vnetlab_roots(&super::cgroup::detect());
    validate(lab, &entries, &roots).map_err(|e| {
        Error::Failed(format!(
            "{}: {e}: vnetlab will not act on it; look at the file and remove it by hand",
            path.display()
        ))
    })?;
    Ok(entries)
}

/// The journal's lines; Err(n): line n (1-based) is not UTF-8. A torn last line (the file does
/// not end in a newline: a crash mid-write) is kept as it is (`parse` passes over it); a last
/// line that ends in a newline was written whole, and is held to the rules of every line.
fn text_lines(bytes: &[u8]) -> Result<Vec<String>, usize> {
    let torn = !bytes.ends_with(b"\n");
    let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let n = lines.len();
    lines
        .into_iter()
        .enumerate()
        .map(|(i, l)| match std::str::from_utf8(l) {
            Ok(s) => Ok(s.to_string()),
            // A crash mid-write can tear a multi-byte character in the last line only.
            Err(_) if torn && i + 1 == n => Ok(String::new()),
            Err(_) => Err(i + 1),
        })
        .collect()
}

/// A journal may name only this lab's namespaces, cgroup folders inside vnetlab's own folder of a
/// hierarchy it uses (`roots`: the cgroup mounts), VFs given a `vl` name of the PF the journal
/// claimed first: anything else (a planted or corrupted journal) is refused, not executed.
pub fn validate(lab: &str, entries: &[Entry], roots: &[PathBuf]) -> Result<(), Error> {
    let prefix = format!("vl{lab}-");
    let plain = |s: &str| {
        !s.is_empty()
            && s.len() <= 64
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.@".contains(c))
            && s != "."
            && s != ".."
    };
    let ours_ns = |n: &str| n.starts_with(&prefix) && plain(n);
    let mut claimed: Option<&str> = None;
    for e in entries {
        // A VF entry is the lab's only for the PF `up --pf` claimed before it.
        let claimed_pf = |pf: &str| plain(pf) && claimed == Some(pf);
        let ok = match e {
            Entry::Owner { .. } | Entry::Complete => true,
            Entry::Pf { name } => {
                let first = claimed.is_none() && plain(name);
                claimed = Some(name);
                first
            }
            Entry::Netns { name } | Entry::NetnsMade { name, .. } => ours_ns(name),
            Entry::InNetns { netns, .. } => ours_ns(netns),
            Entry::Cgroup { path, shared, temp } => {
                cgroup_ok(path, lab, *shared, roots)
                    && temp.as_ref().is_none_or(|t| temp_of(t, path))
            }
            Entry::CgroupMade { path, .. } => {
                let named =
                    |p: &Path| cgroup_ok(p, lab, false, roots) || cgroup_ok(p, lab, true, roots);
                named(path)
                    || entries.iter().any(|e| {
                        matches!(e, Entry::Cgroup { path: f, temp: Some(t), .. } if t == path && named(f))
                    })
            }
            Entry::Vf {
                pf,
                ifname,
                netns,
                lab_name,
            } => {
                claimed_pf(pf)
                    && plain(ifname)
                    && ours_ns(netns)
                    && lab_name.starts_with("vl")
                    && plain(lab_name)
            }
            Entry::NumVfs { pf, set, .. } => claimed_pf(pf) && set.is_some(),
            Entry::VfioVf {
                pf, device, driver, ..
            } => {
                claimed_pf(pf) && super::vfio::is_bdf(device) && driver.as_deref().is_none_or(plain)
            }
            Entry::VmFolder { path } => vm_folder_ok(path, lab),
            Entry::Shield { change } => crate::shield::valid(change),
            Entry::Uplink {
                name,
                netns,
                before,
            } => {
                super::names::check_uplink_name(name).is_ok()
                    && ours_ns(netns)
                    && before.ifindex > 0
                    && !before.mac.is_empty()
            }
            Entry::UplinkMoved { name } => entries
                .iter()
                .any(|e| matches!(e, Entry::Uplink { name: n, .. } if n == name)),
        };
        if !ok {
            return Err(Error::Failed(format!(
                "it names {}, which is not one of lab {lab}'s objects",
                crate::text::clip(&serde_json::to_string(e).unwrap_or_default())
            )));
        }
    }
    Ok(())
}

/// Whether `temp` is a folder's unique temporary name beside it: `.<name>-<hex>` in its folder.
fn temp_of(temp: &Path, path: &Path) -> bool {
    let (Some(name), Some(t)) = (
        path.file_name().and_then(|n| n.to_str()),
        temp.file_name().and_then(|n| n.to_str()),
    ) else {
        return false;
    };
    temp.parent() == path.parent()
        && t.strip_prefix(&format!(".{name}-")).is_some_and(|h| {
            !h.is_empty() && h.len() <= 16 && h.chars().all(|c| c.is_ascii_hexdigit())
        })
}

/// A QEMU guest's folder: `<state dir>/<lab>.vm-g<N>`.
fn vm_folder_ok(path: &Path, lab: &str) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let guest = name.strip_prefix(&format!("{lab}.vm-g")).unwrap_or("");
    path.parent() == Some(super::folder::dir().as_path())
        && !guest.is_empty()
        && guest.chars().all(|c| c.is_ascii_digit())
}

/// A cgroup folder of the lab: `<root>/vnetlab` (shared) or `<root>/vnetlab/vl<lab>[/part]`, an
/// absolute path without `..`, where `<root>` is the mount point of a cgroup hierarchy vnetlab
/// uses (what is on disk there is checked again before anything is done to it: `cgroup::owned`).
fn cgroup_ok(path: &Path, lab: &str, shared: bool, roots: &[PathBuf]) -> bool {
    use std::path::Component;
    if !path.is_absolute()
        || path
            .components()
            .any(|c| !matches!(c, Component::RootDir | Component::Normal(_)))
    {
        return false;
    }
    roots.iter().any(|root| {
        let Ok(below) = path.strip_prefix(root.join("vnetlab")) else {
            return false;
        };
        let parts: Vec<&str> = below.iter().filter_map(|c| c.to_str()).collect();
        match (shared, parts.as_slice()) {
            (true, []) => true,
            (false, [l]) | (false, [l, _]) => *l == format!("vl{lab}"),
            _ => false,
        }
    })
}

/// Parses journal lines; the error names the 1-based line.
pub fn parse(lines: &[String], torn: bool) -> Result<Vec<Entry>, (usize, String)> {
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(e) => out.push(e),
            Err(_) if torn && i + 1 == lines.len() => {}
            Err(e) => return Err((i + 1, e.to_string())),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_in_a_namespace_are_written_as_text_and_read_back_typed() {
        let line = r#"{"kind":"in_netns","netns":"vlx-host","object":"qdisc root dev vlxw"}"#;
        let e: Entry = serde_json::from_str(line).unwrap();
        assert_eq!(
            e,
            Entry::InNetns {
                netns: "vlx-host".into(),
                object: NsObject::RootQdisc("vlxw".into())
            }
        );
        assert_eq!(serde_json::to_string(&e).unwrap(), line);
        for bad in ["route vlxw", "link ", "link a/b", "nft table ip x y"] {
            let line = format!(r#"{{"kind":"in_netns","netns":"vlx-host","object":"{bad}"}}"#);
            assert!(serde_json::from_str::<Entry>(&line).is_err(), "{bad}");
        }
    }

    #[test]
    fn journal_round_trips_and_survives_a_torn_line() {
        let dir = std::env::temp_dir().join(format!("vljt{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("x.journal");
        let _ = std::fs::remove_file(&p);
        let mut j = Journal::create(&p, false).unwrap();
        let es = vec![
            Entry::Netns {
                name: "vlx-host".into(),
            },
            Entry::InNetns {
                netns: "vlx-host".into(),
                object: NsObject::Link("vlxw".into()),
            },
            Entry::Cgroup {
                path: "/sys/fs/cgroup/cpuacct/vnetlab/vlx/g1".into(),
                shared: false,
                temp: None,
            },
        ];
        j.record(&es).unwrap();
        assert!(
            matches!(Journal::create(&p, false), Err(Error::Taken(_))),
            "a second journal for one lab is refused"
        );
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"{\"kind\":\"net")
            .unwrap();
        let back = read(&p, "x").unwrap();
        assert!(
            matches!(back[0], Entry::Owner { pid, kept: false, .. } if pid == std::process::id())
        );
        assert_eq!(back[1..], es[..]);
        // A bad last line that ends in a newline was written whole: not torn, refused (it was
        // dropped as torn, and the lab reported removed).
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"\n{\"kind\":\"nonsense\"}\n")
            .unwrap();
        let e = read(&p, "x").unwrap_err().to_string();
        assert!(e.contains("bad journal line"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_line_that_is_not_text_refuses_the_journal_and_keeps_it() {
        assert_eq!(text_lines(b"a\nb\n").unwrap(), vec!["a", "b"]);
        assert_eq!(text_lines(b"a\n\xff\xfeb\nc\n"), Err(2));
        // Torn inside a character on the last line: a crash mid-write, passed over.
        assert_eq!(text_lines(b"a\nb\xe2\x82").unwrap(), vec!["a", ""]);
        let dir = std::env::temp_dir().join(format!("vljutf{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("y.journal");
        std::fs::write(
            &p,
            b"{\"kind\":\"complete\"}\n\xff\n{\"kind\":\"complete\"}\n",
        )
        .unwrap();
        let e = read(&p, "y").unwrap_err().to_string();
        assert!(e.contains(":2: the journal line is not text"), "{e}");
        assert!(p.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A journal that takes an uplink is acted on only with every owner line naming this
    /// folder, wherever the lines sit in the file.
    #[test]
    fn an_uplink_journal_must_name_this_folder_in_every_owner_line() {
        let dir = std::env::temp_dir().join(format!("vl-jf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("qa.journal");
        let here = folder_of(&path);
        let owner = |folder| Entry::Owner {
            pid: 7,
            start: None,
            kept: true,
            folder,
            boot: None,
        };
        let uplink = Entry::Uplink {
            name: "eth9".into(),
            netns: "vlqa-host".into(),
            before: Default::default(),
        };
        let elsewhere = Some(crate::sys::ident::FileId { dev: 1, ino: 2 });
        assert!(check_folder(&path, std::slice::from_ref(&uplink)).is_err());
        assert!(check_folder(&path, &[uplink.clone(), owner(None)]).is_err());
        assert!(check_folder(&path, &[owner(here), uplink.clone(), owner(None)]).is_err());
        assert!(check_folder(&path, &[owner(here), uplink.clone(), owner(elsewhere)]).is_err());
        assert!(check_folder(&path, &[uplink.clone(), owner(here)]).is_ok());
        // Without an uplink an old journal (no folder recorded) is still read; a copied one is not.
        assert!(check_folder(&path, &[owner(None), Entry::Complete]).is_ok());
        assert!(check_folder(&path, &[owner(elsewhere), Entry::Complete]).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_lab_is_in_use_while_its_owner_lives_or_up_kept_it() {
        let owner = |kept| Entry::Owner {
            pid: 7,
            start: Some(1),
            kept,
            folder: None,
            boot: None,
        };
        let live = |_: u32, _: Option<u64>| true;
        let dead = |_: u32, _: Option<u64>| false;
        assert_eq!(usage(&[owner(false)], live), Usage::Owned { pid: 7 });
        assert!(matches!(
            usage(&[owner(false), Entry::Complete], dead),
            Usage::Abandoned { .. }
        ));
        assert_eq!(usage(&[owner(true), Entry::Complete], dead), Usage::Kept);
        assert!(
            matches!(usage(&[owner(true)], dead), Usage::Abandoned { why } if why.contains("died"))
        );
        assert!(matches!(
            usage(&[Entry::Complete], dead),
            Usage::Abandoned { .. }
        ));
    }

    #[test]
    fn a_journal_naming_foreign_objects_is_refused() {
        let ok = [
            Entry::Netns {
                name: "vlx-g1".into(),
            },
            Entry::Cgroup {
                path: "/sys/fs/cgroup/cpuacct/vnetlab".into(),
                shared: true,
                temp: None,
            },
            Entry::Cgroup {
                path: "/sys/fs/cgroup/cpuacct/vnetlab/vlx".into(),
                shared: false,
                temp: None,
            },
            Entry::VmFolder {
                path: super::super::folder::vm_dir("x", "g12"),
            },
            Entry::Pf {
                name: "enp1s0f0".into(),
            },
            Entry::NumVfs {
                pf: "enp1s0f0".into(),
                previous: 0,
                set: Some(4),
            },
            Entry::VfioVf {
                pf: "enp1s0f0".into(),
                vf: 2,
                device: "0000:03:10.4".into(),
                driver: Some("ixgbevf".into()),
            },
        ];
        let roots = [
            PathBuf::from("/sys/fs/cgroup/cpuacct"),
            PathBuf::from("/sys/fs/cgroup/cpuset"),
        ];
        validate("x", &ok, &roots).unwrap();
        let state = super::super::folder::dir();
        let bad = [
            Entry::Netns {
                name: "default".into(),
            },
            Entry::Netns {
                name: "vly-host".into(),
            },
            Entry::Cgroup {
                path: "/sys/fs/cgroup/cpuacct/system.slice".into(),
                shared: false,
                temp: None,
            },
            Entry::Cgroup {
                path: "/sys/fs/cgroup/cpuacct/vnetlab/vlx/../../system.slice".into(),
                shared: false,
                temp: None,
            },
            Entry::Cgroup {
                path: "/sys/fs/cgroup/cpuacct/vnetlab/vly".into(),
                shared: false,
                temp: None,
            },
            Entry::Cgroup {
                path: "/etc/vnetlab/vlx".into(),
                shared: false,
                temp: None,
            },
            Entry::Cgroup {
                path: "/sys/fs/cgroup/cpuacct".into(),
                shared: true,
                temp: None,
            },
            Entry::InNetns {
                netns: "other".into(),
                object: NsObject::Link("eth0".into()),
            },
            Entry::Vf {
                pf: "../x".into(),
                ifname: "e".into(),
                netns: "vlx-host".into(),
                lab_name: "vlxw".into(),
            },
            Entry::Vf {
                pf: "p".into(),
                ifname: "e".into(),
                netns: "vlx-host".into(),
                lab_name: "eth0".into(),
            },
            Entry::VmFolder {
                path: state.join("y.vm-g1"),
            },
            Entry::VmFolder {
                path: state.join("x.vm-g1/.."),
            },
            Entry::VmFolder {
                path: state.join("x.vm-"),
            },
            Entry::VmFolder {
                path: "/etc/x.vm-g1".into(),
            },
            Entry::VfioVf {
                pf: "p".into(),
                vf: 2,
                device: "../../../kernel".into(),
                driver: None,
            },
            Entry::VfioVf {
                pf: "p".into(),
                vf: 2,
                device: "0000:03:10.4".into(),
                driver: Some("a/b".into()),
            },
            // Decoys: a folder named vnetlab deeper in a hierarchy, in a hierarchy vnetlab does
            // not use, on the tmpfs above the hierarchies, and a PF nobody claimed.
            Entry::Cgroup {
                path: "/sys/fs/cgroup/cpuacct/decoy1/vnetlab/vlx".into(),
                shared: false,
                temp: None,
            },
            Entry::Cgroup {
                path: "/sys/fs/cgroup/memory/vnetlab/vlx".into(),
                shared: false,
                temp: None,
            },
            Entry::Cgroup {
                path: "/sys/fs/cgroup/decoyfs/vnetlab/vlx".into(),
                shared: false,
                temp: None,
            },
            Entry::NumVfs {
                pf: "veth0".into(),
                previous: 0,
                set: Some(4),
            },
        ];
        for b in bad {
            assert!(
                validate("x", std::slice::from_ref(&b), &roots).is_err(),
                "{b:?} was accepted"
            );
        }
        // A VF entry names the PF the journal claimed first, and only one PF is claimed.
        let pf = |n: &str| Entry::Pf { name: n.into() };
        let vfs = |n: &str| Entry::NumVfs {
            pf: n.into(),
            previous: 0,
            set: Some(2),
        };
        assert!(validate("x", &[pf("a0"), vfs("b0")], &roots).is_err());
        assert!(validate("x", &[vfs("a0"), pf("a0")], &roots).is_err());
        assert!(validate("x", &[pf("a0"), pf("b0")], &roots).is_err());
        // An older journal's NumVfs without the value it set is not acted on.
        let old = Entry::NumVfs {
            pf: "a0".into(),
            previous: 0,
            set: None,
        };
        assert!(validate("x", &[pf("a0"), old], &roots).is_err());
    }
}
