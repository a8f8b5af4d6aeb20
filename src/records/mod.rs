//! The plain records a run produces and the store keeps: a point's identity (`PointKey`), its
//! figures with the spread over its repeats and every repeat, the facts recorded beside them (the
//! host, the lab's interfaces read back), and a run's row. Typed through and through: the
//! experiment writes them, the store persists them, the report and the planner read them.
//!
//! Every type of a stored document is defined here, the parts the stages fill included: the
//! engine's result (`test`, `vdi`), the meter's report and the lab's CPU plan (`cpu`), the vNIC
//! backend's counters (`vnic`), each repeat's figures and their spread (`repeats`), and the
//! document around them (`measured`). `records` imports only the leaf modules (`vocab`, `stats`,
//! `units`, `named`, `text`), so one `measured::VERSION` guards every stored field.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

pub mod cpu;
pub mod measured;
pub mod repeats;
pub mod test;
pub mod vdi;
pub mod vnic;

pub use repeats::{Repeat, Repeats, Rounds, Unmeasured};

use crate::vocab::{Bound, Direction, Gro, Mode, PartKind, RunStatus, TestKind};

/// What a point asked for: its datapath, test, size, offloads, wire and load. Two points with the
/// same key in two runs are the same experiment (`compare` matches on it).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash)]
pub struct PointKey {
    pub mode: Mode,
    pub guests: u32,
    pub direction: Direction,
    pub test: TestKind,
    pub message_bytes: u64,
    pub socket_buffer: Option<u64>,
    pub gro: Gro,
    pub tso: bool,
    /// Software LRO toward the guest (paravirt).
    #[serde(default)]
    pub lro: bool,
    pub mtu: u32,
    pub wire_rate: Option<u64>,
    pub parallel: u32,
    /// The offered load per stream (paced), bits/s; None: as fast as it goes.
    #[serde(default)]
    pub load_bps: Option<u64>,
    /// VDI: the session profile (`parallel` is the number of desktops).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Interfering load beside the test (`cpu@host`, `udp-flood@client:g1,500mbit`,
    /// `desktop-load 20 %`); None: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interference: Option<String>,
}

impl Default for PointKey {
    fn default() -> Self {
        PointKey {
            mode: Mode::Bridge,
            guests: 1,
            direction: Direction::GuestToClient,
            test: TestKind::TcpStream,
            message_bytes: 0,
            socket_buffer: None,
            gro: Gro::Both,
            tso: true,
            lro: false,
            mtu: 1500,
            wire_rate: None,
            parallel: 1,
            load_bps: None,
            profile: None,
            interference: None,
        }
    }
}

impl fmt::Display for PointKey {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let opt = |v: Option<u64>, none: &str| v.map(|x| x.to_string()).unwrap_or(none.into());
        write!(
            f,
            "{} {} g{} {} {}B buf {} gro {} tso {} lro {} mtu {} wire {} P{} at {}",
            self.mode,
            self.direction.name(),
            self.guests,
            self.test,
            self.message_bytes,
            opt(self.socket_buffer, "default"),
            self.gro.name(),
            self.tso,
            self.lro,
            self.mtu,
            opt(self.wire_rate, "-"),
            self.parallel,
            opt(self.load_bps, "max")
        )?;
        if let Some(p) = &self.profile {
            write!(f, " profile {p}")?;
        }
        if let Some(i) = &self.interference {
            write!(f, " with {i}")?;
        }
        Ok(())
    }
}

/// A CPU part of a stored point: (name, kind, busy % of the host, cores).
pub type PartRecord = (String, PartKind, f64, f64);

/// One interface of a lab as the kernel reported it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct IfaceFacts {
    pub name: String,
    pub mtu: u64,
    /// gro, lro, tso, gso, rx-csum, tx-csum: as ethtool -k printed them.
    #[serde(default)]
    pub offloads: BTreeMap<String, String>,
    pub qdisc: Option<String>,
}

/// An endpoint's interface and its host-side port, read back.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct EndpointFacts {
    pub interface: Option<IfaceFacts>,
    pub host_port: Option<IfaceFacts>,
}

/// A lab's MTU and offloads as the kernel reported them when the run built it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct LabFacts {
    pub mode: Option<Mode>,
    #[serde(default)]
    pub endpoints: BTreeMap<String, EndpointFacts>,
    #[serde(default)]
    pub host_interfaces: Vec<IfaceFacts>,
    /// Why the facts could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The machine a run ran on.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct HostFacts {
    pub kernel: String,
    pub cpu_model: String,
    pub cores: usize,
    pub memory_gib: f64,
    pub cgroups: String,
    pub hardware_counters: String,
    pub vnetlab: String,
    /// How the kernel counts CPU time ("tick accounting, HZ 250, …"): what a figure of this
    /// host's CPU can resolve.
    pub cpu_accounting: String,
    /// The hypervisor beneath this machine ("KVM"), or "none: bare metal".
    pub virtualization: String,
    /// The machine's network devices (those with a device behind them), as `ethtool -i` reads them.
    pub nics: Vec<NicFacts>,
}

/// A network device of the host: its driver and firmware (`ethtool -i`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub struct NicFacts {
    pub name: String,
    pub driver: String,
    pub version: String,
    pub firmware: String,
    pub bus: String,
}

impl NicFacts {
    /// "virtio_net (fw n/a)", as a host's class is told apart.
    pub fn describe(&self) -> String {
        match self.firmware.as_str() {
            "" | "N/A" | "n/a" => self.driver.clone(),
            fw => format!("{} fw {fw}", self.driver),
        }
    }
}

/// A run of a farm, as the fleet engine names it: the id every host's run of it shares, this
/// host's label, and the operator's own labels. (run, host) is one run in the store.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct Fleet {
    pub run: String,
    pub host: String,
    #[serde(default)]
    pub labels: Vec<Label>,
}

/// An operator's label of a run (`--label rack=r12`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct Label {
    pub key: String,
    pub value: String,
}

impl HostFacts {
    /// (name, value) pairs for a table.
    pub fn rows(&self) -> Vec<(&'static str, String)> {
        vec![
            ("kernel", self.kernel.clone()),
            ("cpu_model", self.cpu_model.clone()),
            ("cores", self.cores.to_string()),
            ("memory_gib", self.memory_gib.to_string()),
            ("cgroups", self.cgroups.clone()),
            ("hardware_counters", self.hardware_counters.clone()),
            ("vnetlab", self.vnetlab.clone()),
            ("cpu_accounting", self.cpu_accounting.clone()),
            ("virtualization", self.virtualization.clone()),
            (
                "nics",
                self.nics
                    .iter()
                    .map(|n| format!("{}: {}", n.name, n.describe()))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
        ]
    }
}

/// A stored point: what was asked, what was measured (medians over the repeats), the spread and
/// every repeat, and the facts beside them.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct PointRecord {
    pub seq: u32,
    #[serde(flatten)]
    pub key: PointKey,
    pub duration_s: f64,
    pub repeat: u32,
    pub throughput_gbps: Option<f64>,
    pub transactions_per_s: Option<f64>,
    pub latency_p50_us: Option<f64>,
    pub latency_p99_us: Option<f64>,
    pub host_busy_pct: Option<f64>,
    pub machine_busy_pct: Option<f64>,
    pub normalized_pct_per_gbps: Option<f64>,
    pub sd_host: Option<f64>,
    pub sd_send: Option<f64>,
    pub sd_recv: Option<f64>,
    /// min/median/max/CI of throughput and host CPU over the repetitions.
    pub spread: Option<Repeats>,
    /// Offloads and MTU read back from the kernel for this point's lab.
    pub lab_facts: Option<LabFacts>,
    /// The whole measured result (the test's --json), kept by the store as a versioned document
    /// beside the columns and read back on demand (`Store::point_result`).
    #[serde(skip)]
    pub result: Option<Box<measured::Measured>>,
    pub error: Option<String>,
    /// Throughput per interval of the measured window.
    #[serde(with = "crate::named::rate_samples")]
    pub samples: Vec<(f64, f64)>,
    /// The host's CPU parts.
    #[serde(with = "crate::named::parts")]
    pub parts: Vec<PartRecord>,
    /// The client's busy share of its own cores.
    #[serde(default)]
    pub client_busy_pct: Option<f64>,
    /// What bound the point (a side, a core, a backend, the wire), None when nothing did.
    #[serde(default)]
    pub bound_by: Option<Bound>,
    /// CPU the kernel charged across the host/client boundary, % of host busy.
    #[serde(default)]
    pub leak_pct: Option<f64>,
    /// Whether the lab's processes were confined to their side's cores (None: stored before).
    #[serde(default)]
    pub placed: Option<bool>,
    #[serde(default)]
    pub host_cpus: Option<String>,
    #[serde(default)]
    pub client_cpus: Option<String>,
    /// Throughput or CPU per Gb/s has a confidence interval wider than asked (stored as the
    /// `unstable` column: runs before intervals set it where the repeats varied by over 10 %).
    #[serde(default, alias = "unstable")]
    pub wide: Option<bool>,
    /// Why the point's host CPU could not be told (every repeat unmeasurable, or too few left).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmeasurable: Option<String>,
    /// Work of tasks that are not the lab's on the host's cores, % (the largest over the repeats).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_foreign_pct: Option<f64>,
    /// The TCP congestion control its data connections used (None: UDP, or stored before).
    #[serde(default)]
    pub congestion: Option<String>,
    /// How its paced load was met (None: not paced, or stored before).
    #[serde(default)]
    pub pacing: Option<crate::vocab::Pacing>,
    /// TCP retransmissions over the measured window (None: UDP, or stored before).
    #[serde(default)]
    pub tcp_retransmits: Option<u64>,
    /// CPU the hypervisor beneath this machine stole from the host's cores, % (the largest over
    /// the repeats): above a few percent the figures are unreliable.
    #[serde(default)]
    pub host_steal_pct: Option<f64>,
    /// Every repeat's figures.
    #[serde(default)]
    pub repeats: Vec<Repeat>,
    /// The machine that measured it (its run's host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

impl PointRecord {
    /// What bound this point in any of its runs: the median run's bound, else the first repeat's
    /// that something bound. A cost is read only from a point where this is None.
    pub fn bound_in_any_run(&self) -> Option<Bound> {
        self.bound_by
            .or_else(|| self.repeats.iter().find_map(|r| r.bound_by))
    }

    /// What bound this point's cost: nothing where its units' figures left the bound ones out (at
    /// least three and more than half bound by nothing), else what bound it in any run.
    pub fn cost_bound(&self) -> Option<Bound> {
        if self.spread.as_ref().is_some_and(|r| r.bound_left_out > 0) {
            return None;
        }
        self.bound_in_any_run()
    }

    /// Every repeat's throughput, and every repeat's host CPU per Gb/s where measured.
    pub fn repeat_figures(&self) -> (Vec<f64>, Vec<f64>) {
        let gbps = self.repeats.iter().map(|r| r.throughput_gbps).collect();
        let norm = self
            .repeats
            .iter()
            .filter_map(|r| r.normalized_pct_per_gbps)
            .collect();
        (gbps, norm)
    }

    /// Whether the point moved bulk data (not request/response).
    pub fn is_stream(&self) -> bool {
        !self.key.test.is_rr()
    }

    /// The versioned document a store keeps for the point where it keeps the point whole
    /// (PostgreSQL's `record`): `version` (`measured::VERSION`), then the point's fields as
    /// `report --json` prints them. Its full result is a document of its own (`result`).
    pub fn encode(&self) -> String {
        #[derive(Serialize)]
        struct Doc<'a> {
            version: u32,
            #[serde(flatten)]
            point: &'a PointRecord,
        }
        serde_json::to_string(&Doc {
            version: measured::VERSION,
            point: self,
        })
        .expect("a point serializes")
    }

    /// A point's document read back through the stores' one versioned reader: this version or
    /// an older one, where a record written before versions (no `version`) is version 1.
    pub fn decode(text: &str) -> Result<PointRecord, measured::DocError> {
        measured::read_versioned(text).map(|(_, p)| p)
    }
}

/// A run as `runs` lists it.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct RunRow {
    pub id: i64,
    pub name: String,
    pub description: String,
    pub experiment_hash: String,
    pub vnetlab_version: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub status: RunStatus,
    pub planned_points: u32,
    pub points: u32,
    pub host_facts: HostFacts,
    #[serde(skip)]
    pub experiment_text: String,
    /// The machine that measured it (stores written before hosts were recorded: None).
    #[serde(default)]
    pub host: Option<String>,
    /// The farm's run id and this host's label, when a fleet engine ran it (`--run-id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<Fleet>,
}

impl RunRow {
    /// The host as a farm names it: its fleet label, else the machine's name.
    pub fn host_label(&self) -> String {
        self.fleet
            .as_ref()
            .map(|f| f.host.clone())
            .or_else(|| self.host.clone())
            .unwrap_or_default()
    }

    /// A complete run of that id and name with nothing else recorded, for tests.
    #[cfg(test)]
    pub fn sample(id: i64, name: &str, host: Option<&str>) -> RunRow {
        RunRow {
            id,
            name: name.into(),
            description: String::new(),
            experiment_hash: String::new(),
            vnetlab_version: String::new(),
            started_at: String::new(),
            finished_at: None,
            status: RunStatus::Complete,
            planned_points: 1,
            points: 1,
            host_facts: Default::default(),
            experiment_text: String::new(),
            host: host.map(str::to_string),
            fleet: None,
        }
    }
}

/// Which run a command means: the newest, or one by id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunRef {
    Latest,
    Id(i64),
}

/// A run named by neither an id nor `latest`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    #[error("bad run '{0}': give a run id (see `vnetlab runs`) or latest")]
    BadRun(String),
}

impl FromStr for RunRef {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        if s == "latest" {
            return Ok(RunRef::Latest);
        }
        s.parse()
            .map(RunRef::Id)
            .map_err(|_| Error::BadRun(crate::text::clip(s)))
    }
}

impl fmt::Display for RunRef {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            RunRef::Latest => f.write_str("latest"),
            RunRef::Id(i) => write!(f, "{i}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_serializes_with_its_key_flat_as_before() {
        let p = PointRecord {
            seq: 3,
            key: PointKey {
                mode: Mode::Macvlan,
                direction: Direction::HostToClient,
                message_bytes: 8192,
                load_bps: Some(500_000_000),
                ..Default::default()
            },
            bound_by: Some(Bound::HostCore(0)),
            parts: vec![("g1".into(), PartKind::Guest, 12.5, 0.125)],
            ..Default::default()
        };
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(
            (
                v["mode"].as_str(),
                v["direction"].as_str(),
                v["test"].as_str()
            ),
            (Some("macvlan"), Some("host-to-client"), Some("TCP_STREAM"))
        );
        assert_eq!(
            (
                v["gro"].as_str(),
                v["bound_by"].as_str(),
                v["load_bps"].as_u64()
            ),
            (Some("both"), Some("host core 0"), Some(500_000_000))
        );
        // Parts by name since version 3 (they were positional arrays).
        assert_eq!(
            v["parts"][0],
            serde_json::json!({"name": "g1", "kind": "guest", "busy_pct": 12.5, "cores": 0.125})
        );
        let back: PointRecord = serde_json::from_value(v).unwrap();
        assert_eq!(back.key, p.key);
        assert!(p
            .key
            .to_string()
            .starts_with("macvlan host-to-client g1 TCP_STREAM 8192B"));
    }

    #[test]
    fn a_point_document_carries_its_version_and_reads_back() {
        let p = PointRecord {
            seq: 2,
            key: PointKey {
                mode: Mode::Paravirt,
                message_bytes: 65536,
                ..Default::default()
            },
            throughput_gbps: Some(4.5),
            parts: vec![("g1".into(), PartKind::Guest, 30.0, 0.3)],
            samples: vec![(0.1, 4.4), (0.2, 4.6)],
            wide: Some(false),
            ..Default::default()
        };
        let doc = p.encode();
        let printed = serde_json::to_string(&p).unwrap();
        // The document is the point as printed, after its version.
        assert_eq!(
            doc,
            format!("{{\"version\":{},{}", measured::VERSION, &printed[1..])
        );
        let back = PointRecord::decode(&doc).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), printed);
    }

    /// A record PostgreSQL kept before points were versioned: the point's fields alone, here in
    /// the form of builds before version 3 (parts as positional arrays, `unstable` for `wide`).
    #[test]
    fn a_point_record_from_before_versions_is_read_as_version_1() {
        let old = r#"{"seq":1,"mode":"bridge","guests":1,"direction":"guest-to-client","test":"TCP_STREAM","message_bytes":1024,"socket_buffer":null,"gro":"both","tso":true,"lro":false,"mtu":1500,"wire_rate":null,"parallel":1,"load_bps":null,"duration_s":2.0,"repeat":1,"throughput_gbps":2.5,"transactions_per_s":null,"latency_p50_us":null,"latency_p99_us":null,"host_busy_pct":40.0,"machine_busy_pct":30.0,"normalized_pct_per_gbps":16.0,"sd_host":null,"sd_send":null,"sd_recv":null,"spread":null,"lab_facts":null,"error":null,"samples":[[0.1,2.5]],"parts":[["g1","guest",12.5,0.125]],"unstable":true}"#;
        let (version, p) = measured::read_versioned::<PointRecord>(old).unwrap();
        assert_eq!(version, 1);
        assert_eq!((p.seq, p.key.message_bytes), (1, 1024));
        assert_eq!(p.parts, vec![("g1".into(), PartKind::Guest, 12.5, 0.125)]);
        assert_eq!((p.samples.len(), p.wide), (1, Some(true)));
        assert_eq!(
            PointRecord::decode(old).unwrap().encode(),
            PointRecord::decode(&p.encode()).unwrap().encode()
        );
        let newer = old.replacen('{', &format!("{{\"version\":{},", measured::VERSION + 1), 1);
        assert!(matches!(
            PointRecord::decode(&newer),
            Err(measured::DocError::Unknown(_))
        ));
        assert!(matches!(
            PointRecord::decode(&old[..old.len() / 2]),
            Err(measured::DocError::Corrupt { .. })
        ));
    }

    #[test]
    fn run_refs_parse() {
        assert_eq!("latest".parse::<RunRef>().unwrap(), RunRef::Latest);
        assert_eq!("12".parse::<RunRef>().unwrap(), RunRef::Id(12));
        assert!("x"
            .parse::<RunRef>()
            .unwrap_err()
            .to_string()
            .contains("bad run"));
    }
}
