//! The lab's plain description: what `vnetlab up` builds, from flags or a TOML file.
//! Parsing and validation only; nothing here touches the host.

use crate::lab::Error;
use serde::{Deserialize, Serialize};
use std::str::FromStr;

use super::addr::Subnet;
use crate::units::{parse_on_off, CpuList, Delay, Loss, Rate};
use crate::vocab::{Gro, Mode};

/// The physical link host ↔ client and its shaping.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Wire {
    pub rate: Option<Rate>,
    pub delay: Option<Delay>,
    pub loss: Option<Loss>,
    /// The wire carries frames of at most the MTU: both ends segment their sends (no TSO/GSO
    /// across the wire), so receive-side GRO has something to merge (docs/labs.md, "What a lab is").
    pub segment: bool,
}

impl Wire {
    /// Whether the wire has a rate, delay or loss (else each end gets a plain queue).
    pub fn shaped(&self) -> bool {
        self.rate.is_some() || self.delay.is_some() || self.loss.is_some()
    }
}

impl Default for Wire {
    fn default() -> Self {
        Wire {
            rate: None,
            delay: None,
            loss: None,
            segment: true,
        }
    }
}

/// Everything `vnetlab up` needs to build one lab.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    pub name: String,
    pub mode: Mode,
    pub guests: u32,
    pub mtu: u32,
    pub gro: Gro,
    pub tso: bool,
    pub subnet: Subnet,
    pub wire: Wire,
    /// `--pin`: each guest and backend on its own host core (round-robin).
    pub pin: bool,
    /// The client's cores (default: ⌈ncpu/4⌉ from the top) and the host's (default: the rest).
    #[serde(default)]
    pub client_cpus: Option<CpuList>,
    #[serde(default)]
    pub host_cpus: Option<CpuList>,
    /// The SR-IOV physical function (modes `sriov` and `qemu-vfio`).
    pub pf: Option<String>,
    /// Software LRO in the paravirt backend, toward the guest (paper 2's "guest2").
    #[serde(default)]
    pub lro: bool,
    /// QEMU guests (qemu-* modes): vCPUs and memory (MiB) of each.
    #[serde(default = "default_vcpus")]
    pub vcpus: u32,
    #[serde(default = "default_memory")]
    pub memory_mib: u32,
    /// `--uplink IFACE`: an existing interface of this machine becomes the wire's host end (a real
    /// NIC to a client on another machine); its state is journaled and given back on `down`.
    #[serde(default)]
    pub uplink: Option<String>,
    /// `--client`: the far end is another machine, reached through the uplink.
    #[serde(default)]
    pub client: Option<RemoteClient>,
    /// `--force-uplink`: take the uplink even though this machine's default route uses it.
    #[serde(default)]
    pub force_uplink: bool,
    /// `up --shield`: the lab's cores cleared of the host's other work while it lives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shield: Option<crate::shield::Ask>,
}

/// The client on another machine: its address on the uplink's link (the lab's client address)
/// and, where it runs `vnetlab serve`, the port and token (without them only `test --peer
/// iperf3` reaches it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RemoteClient {
    pub address: std::net::Ipv4Addr,
    pub port: u16,
    /// The serve's token: a secret, never in a record or a JSON document (the lab keeps it in
    /// `<lab>.token`, readable by root only, and loads it with the record).
    #[serde(skip)]
    pub token: Option<String>,
    /// Whether the client machine runs a serve this lab has the token of.
    #[serde(default)]
    pub has_token: bool,
}

impl RemoteClient {
    /// `HOST[:PORT]` as `--client` takes it (an IPv4 address: the lab's ranges are IPv4).
    pub fn parse(s: &str, token: Option<String>) -> Result<RemoteClient, Error> {
        let bad = || {
            Error::Input(format!(
                "--client '{}': give the client machine's IPv4 address on the uplink's link, optionally with the port of its `vnetlab serve`, e.g. 10.213.0.2:12866",
                crate::text::clip(s)
            ))
        };
        let (a, p) = match s.split_once(':') {
            Some((a, p)) => (a, p.parse::<u16>().map_err(|_| bad())?),
            None => (s, crate::engine::serve::DEFAULT_PORT),
        };
        if let Some(t) = &token {
            crate::engine::serve::check_token(t).map_err(|e| Error::Input(e.to_string()))?;
        }
        Ok(RemoteClient {
            address: a.parse().map_err(|_| bad())?,
            port: p,
            has_token: token.is_some(),
            token,
        })
    }
}

fn default_vcpus() -> u32 {
    1
}

fn default_memory() -> u32 {
    256
}

/// What a guest is: a network namespace (`netns`) or a QEMU VM (`qemu`, the qemu-* modes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuestKind {
    Netns,
    Qemu,
}

impl FromStr for GuestKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "netns" => Ok(GuestKind::Netns),
            "qemu" => Ok(GuestKind::Qemu),
            _ => Err(Error::Input(format!(
                "unknown guest kind '{}': use netns or qemu",
                crate::text::clip(s)
            ))),
        }
    }
}

pub const DEFAULT_NAME: &str = "lab";
pub const DEFAULT_SUBNET: &str = "10.213.0.0/16";

impl Default for Topology {
    fn default() -> Self {
        Topology {
            name: DEFAULT_NAME.into(),
            mode: Mode::Bridge,
            guests: 1,
            mtu: 1500,
            gro: Gro::Both,
            tso: true,
            subnet: DEFAULT_SUBNET.parse().unwrap(),
            wire: Wire::default(),
            pin: false,
            client_cpus: None,
            host_cpus: None,
            pf: None,
            lro: false,
            vcpus: default_vcpus(),
            memory_mib: default_memory(),
            uplink: None,
            client: None,
            force_uplink: false,
            shield: None,
        }
    }
}

impl Topology {
    /// Checks what no single field can check alone, whatever the mode (what a mode asks of the
    /// fields is checked by `lab::plan::validate`, the door every caller goes through). Errors
    /// are one line naming the fix.
    pub(in crate::lab) fn validate(&self) -> Result<(), Error> {
        super::names::check_lab_name(&self.name)?;
        if self.guests == 0 {
            return Err(Error::Input(
                "--guests 0: a lab needs at least 1 guest".into(),
            ));
        }
        if self.guests > super::names::MAX_GUESTS {
            return Err(Error::Input(format!(
                "--guests {}: at most {} guests per lab (interface names are limited to 15 characters)",
                self.guests,
                super::names::MAX_GUESTS
            )));
        }
        if !(576..=9000).contains(&self.mtu) {
            return Err(Error::Input(format!(
                "--mtu {}: use 576 to 9000 (1500 or 9000 as in the papers)",
                self.mtu
            )));
        }
        if !(1..=64).contains(&self.vcpus) {
            return Err(Error::Input(format!(
                "--vcpus {}: a QEMU guest has 1 to 64 vCPUs",
                self.vcpus
            )));
        }
        if !(64..=65536).contains(&self.memory_mib) {
            return Err(Error::Input(format!(
                "--memory {} MiB: give a QEMU guest 64M to 64G (256M is plenty for vnetlab's image)",
                self.memory_mib
            )));
        }
        self.validate_uplink()
    }

    /// An uplink and a remote client go together; the client has the lab's client address.
    fn validate_uplink(&self) -> Result<(), Error> {
        match (&self.uplink, &self.client) {
            (None, None) => return Ok(()),
            (Some(_), None) => return Err(Error::Input("--uplink needs --client HOST[:PORT]: the machine at the other end of the link (with --token if it runs `vnetlab serve`)".into())),
            (None, Some(_)) => return Err(Error::Input("--client is another machine, reached through a real interface: name it with --uplink IFACE".into())),
            (Some(u), Some(_)) => super::names::check_uplink_name(u)?,
        }
        if self.client_cpus.is_some() {
            return Err(Error::Input(
                "--client-cpus: the client is another machine here, with cores of its own: drop it"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Whether the client is another machine (`--client`).
    pub fn remote_client(&self) -> bool {
        self.client.is_some()
    }
}

// ---------- TOML form ----------

/// The TOML form of a topology; every field optional, unknown keys refused.
#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
pub struct TopologyFile {
    pub name: Option<String>,
    #[serde(default, deserialize_with = "de_from_str")]
    pub mode: Option<Mode>,
    pub guests: Option<u32>,
    pub mtu: Option<u32>,
    #[serde(default, deserialize_with = "de_from_str")]
    pub gro: Option<Gro>,
    #[serde(default, deserialize_with = "de_on_off")]
    pub tso: Option<bool>,
    #[serde(default, deserialize_with = "de_from_str")]
    pub subnet: Option<Subnet>,
    pub pin: Option<bool>,
    /// CPU lists: "1", "0-3,6" or [0, 1].
    pub client_cpus: Option<CpuList>,
    pub host_cpus: Option<CpuList>,
    pub pf: Option<String>,
    /// "guest" or "off".
    #[serde(default, deserialize_with = "de_from_str")]
    pub lro: Option<LroPlace>,
    /// "netns" or "qemu": must agree with the mode (qemu-* modes are kind qemu).
    #[serde(default, deserialize_with = "de_from_str")]
    pub kind: Option<GuestKind>,
    pub vcpus: Option<u32>,
    /// Each QEMU guest's memory: "256M", "1G" (or a number of MiB).
    #[serde(default, deserialize_with = "de_memory")]
    pub memory: Option<u32>,
    /// An existing interface to the client machine (`--uplink`).
    pub uplink: Option<String>,
    /// The client machine: "10.213.0.2" or "10.213.0.2:12866", with `token` for its serve.
    pub client: Option<String>,
    pub token: Option<String>,
    pub wire: Option<WireFile>,
}

/// A memory size as MiB: a whole number of MiB, or text with a unit ("512M", "1G").
pub fn parse_memory(s: &str) -> Result<u32, Error> {
    let bytes = crate::units::parse_size(s)?;
    let mib = if s.trim().chars().all(|c| c.is_ascii_digit()) {
        bytes
    } else {
        bytes >> 20
    };
    u32::try_from(mib).map_err(|_| Error::Input(format!("memory {s}: too large; use e.g. 256M")))
}

fn de_memory<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum M {
        N(u32),
        S(String),
    }
    match M::deserialize(d)? {
        M::N(n) => Ok(Some(n)),
        M::S(s) => parse_memory(&s).map(Some).map_err(serde::de::Error::custom),
    }
}

/// Where software LRO runs: `guest` (the paravirt backend, toward the guest) or `off`.
/// (LRO on the physical side is GRO on the host side: `--gro host`.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LroPlace(pub bool);

impl FromStr for LroPlace {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "guest" => Ok(LroPlace(true)),
            "off" => Ok(LroPlace(false)),
            "host" => Err(Error::Input(
                "--lro host: LRO on the physical side is the host's GRO: use --gro host".into(),
            )),
            _ => Err(Error::Input(format!(
                "unknown lro setting '{s}': use guest or off"
            ))),
        }
    }
}

#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
pub struct WireFile {
    #[serde(default, deserialize_with = "de_from_str")]
    pub rate: Option<Rate>,
    #[serde(default, deserialize_with = "de_from_str")]
    pub delay: Option<Delay>,
    #[serde(default, deserialize_with = "de_from_str")]
    pub loss: Option<Loss>,
    #[serde(default, deserialize_with = "de_on_off")]
    pub segment: Option<bool>,
}

impl WireFile {
    /// Whether no key is set.
    pub fn is_empty(&self) -> bool {
        let WireFile {
            rate,
            delay,
            loss,
            segment,
        } = self;
        rate.is_none() && delay.is_none() && loss.is_none() && segment.is_none()
    }
}

impl TopologyFile {
    /// Whether no key is set: every key is named here (the pattern is exhaustive), so a new
    /// key cannot be missed when `up` refuses flags beside `--file`.
    pub fn is_empty(&self) -> bool {
        let TopologyFile {
            name,
            mode,
            guests,
            mtu,
            gro,
            tso,
            subnet,
            pin,
            client_cpus,
            host_cpus,
            pf,
            lro,
            kind,
            vcpus,
            memory,
            uplink,
            client,
            token,
            wire,
        } = self;
        name.is_none()
            && mode.is_none()
            && guests.is_none()
            && mtu.is_none()
            && gro.is_none()
            && tso.is_none()
            && subnet.is_none()
            && pin.is_none()
            && client_cpus.is_none()
            && host_cpus.is_none()
            && pf.is_none()
            && lro.is_none()
            && kind.is_none()
            && vcpus.is_none()
            && memory.is_none()
            && uplink.is_none()
            && client.is_none()
            && token.is_none()
            && wire.as_ref().is_none_or(WireFile::is_empty)
    }
}

fn de_from_str<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: FromStr,
    T::Err: std::fmt::Display,
{
    let s = String::deserialize(d)?;
    s.parse().map(Some).map_err(serde::de::Error::custom)
}

fn de_on_off<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum B {
        B(bool),
        S(String),
    }
    match B::deserialize(d)? {
        B::B(b) => Ok(Some(b)),
        B::S(s) => parse_on_off(&s).map(Some).map_err(serde::de::Error::custom),
    }
}

impl TopologyFile {
    /// Parses TOML text; errors read `FILE:LINE:COL: message`.
    pub fn parse(text: &str, file: &str) -> Result<TopologyFile, Error> {
        toml::from_str(text).map_err(|e| Error::Input(toml_error(&e, text, file)))
    }

    pub fn into_topology(self) -> Result<Topology, Error> {
        let d = Topology::default();
        let w = self.wire.unwrap_or_default();
        let mode = self.mode.unwrap_or(d.mode);
        check_kind(self.kind, mode)?;
        let client =
            match (&self.client, self.token) {
                (Some(c), t) => Some(RemoteClient::parse(c, t)?),
                (None, Some(_)) => return Err(Error::Input(
                    "token is the client machine's serve token: give client = \"HOST[:PORT]\" too"
                        .into(),
                )),
                (None, None) => None,
            };
        Ok(Topology {
            name: self.name.unwrap_or(d.name),
            mode: self.mode.unwrap_or(d.mode),
            guests: self.guests.unwrap_or(d.guests),
            mtu: self.mtu.unwrap_or(d.mtu),
            gro: self.gro.unwrap_or(d.gro),
            tso: self.tso.unwrap_or(d.tso),
            subnet: self.subnet.unwrap_or(d.subnet),
            pin: self.pin.unwrap_or(d.pin),
            client_cpus: self.client_cpus,
            host_cpus: self.host_cpus,
            pf: self.pf,
            lro: self.lro.map(|l| l.0).unwrap_or(false),
            vcpus: self.vcpus.unwrap_or(d.vcpus),
            memory_mib: self.memory.unwrap_or(d.memory_mib),
            uplink: self.uplink,
            client,
            force_uplink: false,
            shield: None,
            wire: Wire {
                rate: w.rate,
                delay: w.delay,
                loss: w.loss,
                segment: w.segment.unwrap_or(true),
            },
        })
    }
}

/// A file's `kind` must agree with its mode.
fn check_kind(kind: Option<GuestKind>, mode: Mode) -> Result<(), Error> {
    match (kind, mode.is_qemu()) {
        (Some(GuestKind::Qemu), false) => Err(Error::Input(format!(
            "kind = \"qemu\" needs a qemu mode (qemu-e1000, qemu-virtio, qemu-vhost, qemu-macvtap, qemu-vfio); mode {mode} guests are namespaces"
        ))),
        (Some(GuestKind::Netns), true) => Err(Error::Input(format!(
            "kind = \"netns\" does not go with mode {mode}, whose guests are QEMU VMs: drop kind or write kind = \"qemu\""
        ))),
        _ => Ok(()),
    }
}

pub use crate::text::{line_col, toml_error};

#[cfg(test)]
mod tests {
    use super::*;

    /// The client's serve token is a secret: never in the record or a JSON document.
    #[test]
    fn a_clients_token_is_kept_out_of_records() {
        let c =
            RemoteClient::parse("10.213.0.2:12866", Some("0123456789abcdef0123".into())).unwrap();
        let j = serde_json::to_string(&c).unwrap();
        assert!(
            !j.contains("0123456789abcdef") && j.contains("\"has_token\":true"),
            "{j}"
        );
        let back: RemoteClient = serde_json::from_str(&j).unwrap();
        assert!(back.token.is_none() && back.has_token);
    }

    #[test]
    fn toml_topology_parses_with_defaults() {
        let t = TopologyFile::parse(
            "name = \"demo\"\nmode = \"nat\"\nguests = 4\ntso = \"off\"\n[wire]\nrate = \"1gbit\"\ndelay = \"5ms\"\n",
            "lab.toml",
        )
        .unwrap()
        .into_topology()
        .unwrap();
        assert_eq!(t.name, "demo");
        assert_eq!(t.mode, Mode::Nat);
        assert_eq!(t.guests, 4);
        assert!(!t.tso);
        assert_eq!(t.wire.rate, Some(Rate(1_000_000_000)));
        assert_eq!(t.wire.delay, Some(Delay(5000)));
        assert!(t.wire.segment);
        assert_eq!(t.mtu, 1500);
        t.validate().unwrap();
    }

    #[test]
    fn qemu_guests_take_kind_vcpus_and_memory() {
        let t = TopologyFile::parse(
            "mode = \"qemu-virtio\"\nkind = \"qemu\"\nvcpus = 2\nmemory = \"512M\"\n",
            "lab.toml",
        )
        .unwrap()
        .into_topology()
        .unwrap();
        assert_eq!((t.mode, t.vcpus, t.memory_mib), (Mode::QemuVirtio, 2, 512));
        let t = TopologyFile::parse("mode = \"qemu-e1000\"\nmemory = 1024\n", "l.toml")
            .unwrap()
            .into_topology()
            .unwrap();
        assert_eq!((t.vcpus, t.memory_mib), (1, 1024));
        assert_eq!(parse_memory("1G").unwrap(), 1024);
        let e = TopologyFile::parse("mode = \"bridge\"\nkind = \"qemu\"\n", "l.toml")
            .unwrap()
            .into_topology()
            .unwrap_err();
        assert!(e.to_string().contains("needs a qemu mode"), "{e}");
        let e = TopologyFile::parse("mode = \"qemu-virtio\"\nkind = \"netns\"\n", "l.toml")
            .unwrap()
            .into_topology()
            .unwrap_err();
        assert!(e.to_string().contains("QEMU VMs"), "{e}");
        assert!(TopologyFile::parse("kind = \"xen\"\n", "l.toml").is_err());
        let t = Topology {
            vcpus: 0,
            ..Default::default()
        };
        assert!(t.validate().unwrap_err().to_string().contains("--vcpus 0"));
        let t = Topology {
            memory_mib: 16,
            ..Default::default()
        };
        assert!(t
            .validate()
            .unwrap_err()
            .to_string()
            .contains("--memory 16"));
    }

    #[test]
    fn toml_errors_name_line_and_column() {
        let e = TopologyFile::parse("guests = 2\ngest = 3\n", "lab.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("lab.toml:2:1:"), "{e}");
        assert!(e.contains("unknown field `gest`"), "{e}");
        let e = TopologyFile::parse("mode = \"hub\"\n", "lab.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("lab.toml:1:8:") && e.contains("bridge, nat"),
            "{e}"
        );
        let e = TopologyFile::parse("guests = \"two\"\n", "x.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("x.toml:1:10:") && e.contains("invalid type"),
            "{e}"
        );
        let e = TopologyFile::parse("[wire]\nrate = \"fast\"\n", "x.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("x.toml:2:8:") && e.contains("bad rate"),
            "{e}"
        );
        let e = TopologyFile::parse("[wire]\njitter = \"1ms\"\n", "x.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x.toml:2:1:"), "{e}");
        let e = TopologyFile::parse("guests = 2\nguests = 3\n", "x.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x.toml:2:"), "{e}");
    }

    #[test]
    fn validation_refuses_impossible_labs() {
        let mut t = Topology {
            guests: 0,
            ..Default::default()
        };
        assert!(t.validate().unwrap_err().to_string().contains("at least 1"));
        t = Topology {
            mtu: 100,
            ..Default::default()
        };
        assert!(t.validate().is_err());
        t = Topology {
            name: "Bad-Name".into(),
            ..Default::default()
        };
        assert!(t.validate().is_err());
    }
}
