//! One measured point as every stage sees it: `Measured` is what the measuring core returns, what
//! `test --json` prints, what the store keeps beside a point's columns (a versioned document) and
//! what the reproduction reads back: one type from the meter to the page. A document of a version
//! this build does not know, or one that does not parse, is an error that names its point, never a
//! figure quietly missing.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::cpu::{CpuPlan, CpuReport};
use super::repeats::Repeats;
use super::test::TestResult;
use super::vnic::VnicDelta;
use crate::vocab::Role;

/// The version of `Measured` (and of every JSON document vnetlab prints) this build writes. 1 is
/// the document before versions (no `version` field); 2 added parts' roles; 3 writes the CPU
/// series, a point's samples and its parts with named fields; 4 gives every figure over repeats
/// its median's confidence interval (`interval`, where 3 had a t-interval of the mean, `ci`, no
/// longer read), the host's CPU by every source with the bounds steal leaves (`check.
/// host_sources`), the foreign work taken out of it and why a point is unmeasurable. Older ones
/// are read.
///
/// Every type of the stored document is defined under `records/` (the engine's result in
/// `records::test` and `records::vdi`, the meter's report and the lab's CPU plan in
/// `records::cpu`, the vNIC counters in `records::vnic`), and `records` imports nothing above
/// it: the stages fill these types, they do not own them. So a change to any of them is a change
/// of the document: it needs this version bumped, with a reader for the older one.
pub const VERSION: u32 = 4;

/// The largest stored document read back (a point's intervals, TCP samples and CPU series).
pub const MAX_DOCUMENT: usize = 16 << 20;

/// A test's output: the engine's result, the meter's CPU report and, with repeats, the spread.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Measured {
    /// The document's version (`VERSION` when written by this build).
    #[serde(default = "v1")]
    pub version: u32,
    #[serde(flatten)]
    pub result: TestResult,
    /// Where the client and the host ran (the lab's CPU plan); None for standalone tests.
    #[serde(default)]
    pub cpus: Option<CpuPlan>,
    #[serde(default)]
    pub cpu: Option<CpuReport>,
    /// Why there is no CPU report.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cpu_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub repeats: Option<Repeats>,
    /// Per guest with a vNIC backend: its counters over the test (frames, super-frames, LRO ratio…).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub vnic: Option<BTreeMap<String, VnicDelta>>,
    /// What each interfering load did (burners' CPU, the flood's rate).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub loads: Vec<LoadReport>,
    /// VDI's movie scenario: host CPU while buffering and while only playing.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub movie: Option<MoviePhases>,
    /// `--pacing kernel`: who paced each sender (fq on its device, or TCP's internal pacing).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub kernel_pacing: Option<KernelPacing>,
}

fn v1() -> u32 {
    1
}

/// Why a stored document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DocError {
    #[error("its stored result is {0} bytes, more than the {MAX_DOCUMENT} read back")]
    TooLarge(usize),
    #[error("its stored result is version {0}, which this vnetlab does not read (written by a newer one? re-render with that one, or measure the point again)")]
    Unknown(u32),
    #[error(
        "its stored result does not parse as version {version} ({why}): measure the point again"
    )]
    Corrupt { version: u32, why: String },
}

impl Measured {
    /// A new result of this build's version.
    pub fn new(result: TestResult) -> Measured {
        Measured {
            version: VERSION,
            result,
            cpus: None,
            cpu: None,
            cpu_error: None,
            repeats: None,
            vnic: None,
            loads: vec![],
            movie: None,
            kernel_pacing: None,
        }
    }

    /// The document the store keeps.
    pub fn encode(&self) -> String {
        serde_json::to_string(&Measured {
            version: VERSION,
            ..self.clone()
        })
        .expect("a measured result serializes")
    }

    /// A stored document read back: this version or an older one (migrated: version 2 added
    /// `version` and parts' roles, version 3 named the fields of the CPU series, version 4 the
    /// intervals and the meter's sources; every field added since version 1 has a default and
    /// the series reads either form).
    pub fn decode(text: &str) -> Result<Measured, DocError> {
        let (_, mut m) = read_versioned::<Measured>(text)?;
        m.version = VERSION;
        Ok(m)
    }
}

/// The reader of every versioned document the stores keep (a point's `Measured`, PostgreSQL's
/// point record): no larger than `MAX_DOCUMENT`, its `version` (1 where it has none, the form
/// before versions) one this build reads, then the whole of it parsed as `T`, which reads every
/// older version. The version read, and the document.
pub fn read_versioned<T: serde::de::DeserializeOwned>(text: &str) -> Result<(u32, T), DocError> {
    if text.len() > MAX_DOCUMENT {
        return Err(DocError::TooLarge(text.len()));
    }
    #[derive(Deserialize)]
    struct Probe {
        #[serde(default = "v1")]
        version: u32,
    }
    let corrupt = |version: u32, e: serde_json::Error| DocError::Corrupt {
        version,
        why: crate::text::clip(&e.to_string()),
    };
    let probe: Probe = serde_json::from_str(text).map_err(|e| corrupt(0, e))?;
    match probe.version {
        1..=VERSION => {
            let doc: T = serde_json::from_str(text).map_err(|e| corrupt(probe.version, e))?;
            Ok((probe.version, doc))
        }
        v => Err(DocError::Unknown(v)),
    }
}

/// What a load did while the test ran.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LoadReport {
    /// A burner: the share of one core it was to use, and what it used.
    Burner {
        load: String,
        at: Role,
        target_pct: f64,
        cpu_pct: f64,
    },
    /// The downloads: asked and arrived bytes in all, the rate offered per guest and achieved
    /// (all bytes over the slowest download's time).
    Download {
        load: String,
        bytes_asked: u64,
        bytes_arrived: u64,
        offered_gbps_each: f64,
        achieved_gbps: f64,
    },
    /// The UDP flood: offered and arrived (at the receiver, inside its window), and the loss.
    Flood {
        load: String,
        offered_gbps: f64,
        arrived_gbps: f64,
        loss_pct: Option<f64>,
        /// A flood of the other guest: the UDP datagrams the measured lab's first guest received
        /// meanwhile (its namespace's counter), which proves where the flood went.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        measured_guest_udp_in: Option<u64>,
    },
}

/// Who paced each sender of a kernel-paced test.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct KernelPacing {
    /// Senders whose device had fq for the test: "g1 (fq on vlmg1)".
    pub fq: Vec<String>,
    /// Senders paced by TCP's internal pacing, with why not fq.
    pub tcp_internal: Vec<String>,
}

/// The movie scenario of paper 1 (Section IV-F): each desktop buffers a 1.6 Gbit video through
/// the VM network within `t_buffer_s` seconds while its VDI session plays it for 253 s;
/// `time_scale` shortens both (rates stay, sizes and times shrink), so a point takes seconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Movie {
    pub t_buffer_s: f64,
    pub time_scale: f64,
}

/// The paper's video: its size through the VM network (bits) and its play time (seconds).
pub const S_VMNET_BITS: f64 = 1.6e9;
pub const T_PLAY_S: f64 = 253.0;

impl Movie {
    /// The session's measured seconds.
    pub fn play_s(&self) -> f64 {
        T_PLAY_S * self.time_scale
    }
    /// The buffering phase's seconds.
    pub fn buffer_s(&self) -> f64 {
        self.t_buffer_s * self.time_scale
    }
}

/// Host CPU in one phase of the movie.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    pub from_s: f64,
    pub to_s: f64,
    pub host_busy_pct: Option<f64>,
    pub samples: usize,
}

/// The movie's host CPU series split at the end of buffering.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MoviePhases {
    pub movie: Movie,
    pub buffering: Phase,
    pub play_only: Phase,
}

/// A small measured result for tests elsewhere: a 1 Gb/s TCP_STREAM g1 → client.
#[cfg(test)]
pub fn sample() -> Measured {
    Measured::decode(
        r#"{"test":"TCP_STREAM","from":"g1","to":"client","message_bytes":65536,"duration_s":1.0,
            "warmup_s":0.5,"parallel":1,"throughput_gbps":1.0,"streams":[],"per_source_gbps":{},
            "intervals":[],"transactions_per_s":null,"latency_us":null,"udp_loss_pct":null,
            "tcp_retransmits":null,"tcp_info":[],"zerocopy":null}"#,
    )
    .expect("the sample parses")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Results the previous schema (no version) stored, taken from a real quick run: a paravirt
    /// stream with its vNIC counters, an RR with its latency, a movie point with its phases.
    const V1: [&str; 3] = [
        include_str!("../../tests/fixtures/measured-v1/stream-paravirt.json"),
        include_str!("../../tests/fixtures/measured-v1/rr-native.json"),
        include_str!("../../tests/fixtures/measured-v1/movie-macvlan.json"),
    ];

    #[test]
    fn a_result_stored_by_the_previous_schema_is_read() {
        let [stream, rr, movie] = V1.map(|t| Measured::decode(t).expect("a v1 document"));
        assert!(V1.iter().all(|t| !t.contains("\"version\"")));
        assert_eq!(stream.version, VERSION);
        assert!(stream.result.throughput_gbps > 0.0);
        assert!(stream.vnic.is_some_and(|v| !v.is_empty()));
        assert!(stream.cpu.is_some_and(|c| !c.parts.is_empty()));
        assert!(rr.result.latency_us.is_some_and(|l| l.p999 >= l.p99));
        let m = movie.movie.expect("a movie point keeps its phases");
        assert!(m.buffering.host_busy_pct.is_some());
    }

    #[test]
    fn a_result_survives_its_own_document() {
        let m = Measured::decode(V1[0]).unwrap();
        let again = Measured::decode(&m.encode()).unwrap();
        assert_eq!(again.encode(), m.encode());
        assert!(m.encode().starts_with(&format!("{{\"version\":{VERSION},")));
    }

    #[test]
    fn an_unknown_version_or_a_corrupt_document_is_an_error() {
        let newer = V1[0].replacen('{', &format!("{{\"version\":{},", VERSION + 1), 1);
        assert!(matches!(Measured::decode(&newer), Err(DocError::Unknown(v)) if v == VERSION + 1));
        let cut = &V1[0][..V1[0].len() / 2];
        assert!(matches!(
            Measured::decode(cut),
            Err(DocError::Corrupt { .. })
        ));
        let drifted = V1[0].replacen(
            "\"throughput_gbps\":",
            "\"throughput_gbps\":\"fast\",\"x\":",
            1,
        );
        assert!(matches!(
            Measured::decode(&drifted),
            Err(DocError::Corrupt { version: 1, .. })
        ));
        assert!(matches!(
            Measured::decode("[]"),
            Err(DocError::Corrupt { .. })
        ));
        let huge = " ".repeat(MAX_DOCUMENT + 1);
        assert!(matches!(
            Measured::decode(&huge),
            Err(DocError::TooLarge(_))
        ));
    }
}
