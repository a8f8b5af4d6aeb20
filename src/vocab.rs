//! The shared vocabulary of every stage: how a guest's NIC reaches the wire (mode), where GRO
//! runs, the netperf-class tests, who sends to whom (direction), which endpoint of a lab (role),
//! which machine a core stands for (side) and how a run ended. Plain enums with their names.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A word that names none of a vocabulary's values. Its `Display` is the one line users see:
/// `unknown mode 'x': use one of native, …`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    #[error("unknown {what} '{value}'{choices}")]
    Unknown {
        what: &'static str,
        value: String,
        /// `: use one of …`, or empty where the word is not typed by users.
        choices: String,
    },
}

fn unknown(what: &'static str, value: &str, choices: &str) -> Error {
    Error::Unknown {
        what,
        value: crate::text::clip(value),
        choices: if choices.is_empty() {
            String::new()
        } else {
            format!(": use {choices}")
        },
    }
}

/// How a guest's NIC reaches the wire (docs/labs.md, "What a lab is").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Mode {
    Native,
    Bridge,
    Nat,
    Macvlan,
    Sriov,
    Emulated,
    Paravirt,
    /// QEMU guests (kind `qemu`) with the device each names.
    QemuE1000,
    QemuVirtio,
    QemuVhost,
    QemuMacvtap,
    QemuVfio,
}

impl Mode {
    /// Every mode, in the order users read them (a new datapath adds its variant here and its
    /// name below; what it builds lives in its module under `lab/plan/datapath/`).
    pub const ALL: [Mode; 12] = [
        Mode::Native,
        Mode::Bridge,
        Mode::Nat,
        Mode::Macvlan,
        Mode::Sriov,
        Mode::Emulated,
        Mode::Paravirt,
        Mode::QemuE1000,
        Mode::QemuVirtio,
        Mode::QemuVhost,
        Mode::QemuMacvtap,
        Mode::QemuVfio,
    ];

    /// The mode's one name: typed on the command line, stored, and shown.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Native => "native",
            Mode::Bridge => "bridge",
            Mode::Nat => "nat",
            Mode::Macvlan => "macvlan",
            Mode::Sriov => "sriov",
            Mode::Emulated => "emulated",
            Mode::Paravirt => "paravirt",
            Mode::QemuE1000 => "qemu-e1000",
            Mode::QemuVirtio => "qemu-virtio",
            Mode::QemuVhost => "qemu-vhost",
            Mode::QemuMacvtap => "qemu-macvtap",
            Mode::QemuVfio => "qemu-vfio",
        }
    }

    /// Every mode's name, comma-separated (for errors and help).
    pub fn names() -> String {
        Mode::ALL.map(Mode::name).join(", ")
    }

    /// Whether the mode's guests are QEMU VMs (kind `qemu`) rather than namespaces: by the
    /// naming rule every QEMU device's mode follows.
    pub fn is_qemu(self) -> bool {
        self.name().starts_with("qemu-")
    }
}

impl FromStr for Mode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| unknown("mode", s, &format!("one of {}", Mode::names())))
    }
}

impl TryFrom<String> for Mode {
    type Error = Error;
    fn try_from(s: String) -> Result<Self, Error> {
        s.parse()
    }
}

impl From<Mode> for String {
    fn from(m: Mode) -> String {
        m.name().to_string()
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether the guest's CPU is the host's (KVM) or emulated (TCG).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Accel {
    Kvm,
    Tcg,
}

impl Accel {
    pub fn name(self) -> &'static str {
        match self {
            Accel::Kvm => "KVM",
            Accel::Tcg => "TCG",
        }
    }
}

/// Where receive-side GRO runs: paper 2's physical-driver (host) and virtual-driver (guest) places.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Gro {
    Off,
    Host,
    Guest,
    Both,
}

impl Gro {
    pub fn name(self) -> &'static str {
        match self {
            Gro::Off => "off",
            Gro::Host => "host",
            Gro::Guest => "guest",
            Gro::Both => "both",
        }
    }
    pub fn host(self) -> bool {
        matches!(self, Gro::Host | Gro::Both)
    }
    pub fn guest(self) -> bool {
        matches!(self, Gro::Guest | Gro::Both)
    }
}

impl fmt::Display for Gro {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Gro {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Ok(match s {
            "off" => Gro::Off,
            "host" => Gro::Host,
            "guest" => Gro::Guest,
            "both" => Gro::Both,
            _ => return Err(unknown("gro setting", s, "off, host, guest or both")),
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TestKind {
    #[serde(rename = "TCP_STREAM")]
    TcpStream,
    #[serde(rename = "TCP_MAERTS")]
    TcpMaerts,
    #[serde(rename = "UDP_STREAM")]
    UdpStream,
    #[serde(rename = "TCP_RR")]
    TcpRr,
    #[serde(rename = "UDP_RR")]
    UdpRr,
    #[serde(rename = "TCP_CRR")]
    TcpCrr,
    /// Remote-desktop sessions: screen frames to each desktop's client, its input and USB back.
    #[serde(rename = "VDI")]
    Vdi,
}

pub const TEST_NAMES: &str = "TCP_STREAM, TCP_MAERTS, UDP_STREAM, TCP_RR, UDP_RR, TCP_CRR, VDI";

impl TestKind {
    pub fn is_rr(self) -> bool {
        matches!(self, TestKind::TcpRr | TestKind::UdpRr | TestKind::TcpCrr)
    }
    pub fn is_udp(self) -> bool {
        matches!(self, TestKind::UdpStream | TestKind::UdpRr)
    }
    /// Whether the initiator (the side that connects, `--from`) is the one sending bulk data.
    pub fn initiator_sends(self) -> bool {
        !matches!(self, TestKind::TcpMaerts)
    }
    /// The same stream the other way (iperf3's -R, and --bidir's second direction): TCP_STREAM
    /// and TCP_MAERTS swap; other tests have no reverse.
    pub fn reversed(self) -> Option<TestKind> {
        match self {
            TestKind::TcpStream => Some(TestKind::TcpMaerts),
            TestKind::TcpMaerts => Some(TestKind::TcpStream),
            _ => None,
        }
    }
}

impl FromStr for TestKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        serde_json::from_value(serde_json::Value::String(s.to_ascii_uppercase()))
            .map_err(|_| unknown("test", s, &format!("one of {TEST_NAMES}")))
    }
}

impl fmt::Display for TestKind {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(serde_json::to_value(self).unwrap().as_str().unwrap())
    }
}

/// How a paced stream (`--rate`) meets its rate (docs/traffic.md, "Pacing").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pacing {
    /// The application's own timer: every 1 ms tick it writes what is due since the start, back
    /// to back (as iperf3 `-b` does): an application that sends from a timer or a frame clock.
    #[default]
    App,
    /// The kernel's: SO_MAX_PACING_RATE on the socket, written as fast as the socket takes;
    /// TCP's internal pacing (or fq on the sending device, which a lab puts there for the test)
    /// spaces the packets: a server that sets a pacing rate (a video or CDN server over fq).
    Kernel,
}

impl Pacing {
    pub fn name(self) -> &'static str {
        match self {
            Pacing::App => "app",
            Pacing::Kernel => "kernel",
        }
    }
}

impl FromStr for Pacing {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "app" => Ok(Pacing::App),
            "kernel" => Ok(Pacing::Kernel),
            _ => Err(unknown("pacing", s, "app or kernel")),
        }
    }
}

impl fmt::Display for Pacing {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The TCP congestion control every data connection of a test uses (docs/traffic.md, "Congestion
/// control"), set on each socket (TCP_CONGESTION) rather than taken from the machine's default: a
/// lab's guest stands for its own OS, whose TCP is not the host's (a host defaulting to bbr paced
/// every guest's segments apart and cost the host up to 5x per Gb/s at 1 KB). Default: cubic,
/// Linux's own default and what a stock guest kernel runs.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Congestion(String);

/// The kernel's limit on an algorithm's name (TCP_CA_NAME_MAX less its NUL).
pub const CONGESTION_NAME_MAX: usize = 15;

impl Congestion {
    pub fn name(&self) -> &str {
        &self.0
    }
}

impl Default for Congestion {
    fn default() -> Self {
        Congestion("cubic".into())
    }
}

impl FromStr for Congestion {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let ok = (1..=CONGESTION_NAME_MAX).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if ok {
            Ok(Congestion(s.to_string()))
        } else {
            Err(unknown(
                "congestion control",
                s,
                "a name the kernel lists in net.ipv4.tcp_available_congestion_control, e.g. cubic, reno or bbr",
            ))
        }
    }
}

impl TryFrom<String> for Congestion {
    type Error = Error;
    fn try_from(s: String) -> Result<Self, Error> {
        s.parse()
    }
}

impl From<Congestion> for String {
    fn from(c: Congestion) -> String {
        c.0
    }
}

impl fmt::Display for Congestion {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Which program moved a test's bytes: vnetlab's own engine, or a stock iperf3 (`--peer`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    #[default]
    Vnetlab,
    Iperf3,
}

/// Who sends to whom: `guest-to-client` (g1 → client), `client-to-guest`, `guest-to-guest`
/// (g1 → g2), `guests-to-client` (every guest at once), `host-to-client` (the VDI network).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    GuestToClient,
    ClientToGuest,
    GuestToGuest,
    GuestsToClient,
    HostToClient,
}

pub const DIRECTIONS: &str =
    "guest-to-client, client-to-guest, guest-to-guest, guests-to-client, host-to-client";

impl FromStr for Direction {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Ok(match s {
            "guest-to-client" => Direction::GuestToClient,
            "client-to-guest" => Direction::ClientToGuest,
            "guest-to-guest" => Direction::GuestToGuest,
            "guests-to-client" => Direction::GuestsToClient,
            "host-to-client" => Direction::HostToClient,
            _ => return Err(unknown("direction", s, &format!("one of {DIRECTIONS}"))),
        })
    }
}

impl Direction {
    pub fn name(self) -> &'static str {
        match self {
            Direction::GuestToClient => "guest-to-client",
            Direction::ClientToGuest => "client-to-guest",
            Direction::GuestToGuest => "guest-to-guest",
            Direction::GuestsToClient => "guests-to-client",
            Direction::HostToClient => "host-to-client",
        }
    }
    /// The lab endpoints: `--from`, `--to`.
    pub fn endpoints(self) -> (Senders, Role) {
        let (g1, g2) = (Role::Guest(1), Role::Guest(2));
        match self {
            Direction::GuestToClient => (Senders::One(g1), Role::Client),
            Direction::ClientToGuest => (Senders::One(Role::Client), g1),
            Direction::GuestToGuest => (Senders::One(g1), g2),
            Direction::GuestsToClient => (Senders::AllGuests, Role::Client),
            Direction::HostToClient => (Senders::One(Role::Host), Role::Client),
        }
    }
}

impl<'de> Deserialize<'de> for Direction {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Direction {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// Which machine a core, a process or an interface stands for: the host (the hypervisor's
/// machine) or the client (the far end of the wire, another machine).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Host,
    Client,
}

impl Side {
    pub fn name(self) -> &'static str {
        match self {
            Side::Host => "host",
            Side::Client => "client",
        }
    }
}

/// How a run ended (or that it is still under way).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Running,
    Complete,
    Interrupted,
    Failed,
    /// Its process died without saying (SIGKILL, a crash): its finished points are kept.
    Incomplete,
}

impl RunStatus {
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
            RunStatus::Incomplete => "incomplete",
        }
    }
}

impl FromStr for RunStatus {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Ok(match s {
            "running" => RunStatus::Running,
            "complete" => RunStatus::Complete,
            "interrupted" => RunStatus::Interrupted,
            "failed" => RunStatus::Failed,
            "incomplete" => RunStatus::Incomplete,
            _ => return Err(unknown("run status", s, "")),
        })
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One endpoint of a lab: its host, its client, or guest n (1-based), named `host`, `client`, `gN`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    Host,
    Client,
    Guest(u32),
}

impl Role {
    pub fn is_guest(self) -> bool {
        matches!(self, Role::Guest(_))
    }
    /// The side of the wire it stands on: the client, or the host (its guests too).
    pub fn side(self) -> Side {
        if self == Role::Client {
            Side::Client
        } else {
            Side::Host
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Role::Host => f.write_str("host"),
            Role::Client => f.write_str("client"),
            Role::Guest(n) => write!(f, "g{n}"),
        }
    }
}

const ROLE_CHOICES: &str = "host, client or g1, g2, …";

impl FromStr for Role {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let guest = s
            .strip_prefix('g')
            .and_then(|n| n.parse::<u32>().ok())
            .filter(|&n| n >= 1 && s == format!("g{n}"));
        match (s, guest) {
            ("host", _) => Ok(Role::Host),
            ("client", _) => Ok(Role::Client),
            (_, Some(n)) => Ok(Role::Guest(n)),
            _ => Err(unknown("endpoint", s, ROLE_CHOICES)),
        }
    }
}

impl Serialize for Role {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Role {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// Who initiates a test: one endpoint, or every guest of the lab at once (`guests`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Senders {
    One(Role),
    AllGuests,
}

impl Senders {
    /// The side of the wire the senders stand on.
    pub fn side(&self) -> Side {
        match self {
            Senders::One(r) => r.side(),
            Senders::AllGuests => Role::Guest(1).side(),
        }
    }
}

impl FromStr for Senders {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        if s == "guests" {
            return Ok(Senders::AllGuests);
        }
        s.parse().map(Senders::One).map_err(|_| {
            let choices = format!("{ROLE_CHOICES}, or guests (every guest at once)");
            unknown("endpoint", s, &choices)
        })
    }
}

impl fmt::Display for Senders {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Senders::One(r) => r.fmt(f),
            Senders::AllGuests => f.write_str("guests"),
        }
    }
}

/// A resource at its limit during the measured window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// The wire carried at least 95 % of its shaped rate.
    Wire,
    /// Every host core (on average) was at least 95 % busy.
    Host,
    /// Every client core (on average) was at least 95 % busy.
    Client,
    /// One host core was saturated while the host as a whole was not.
    HostCore(usize),
    ClientCore(usize),
    /// A guest's vNIC backend (one thread) used at least 95 % of a core.
    Backend(Role),
    /// Nothing was saturated, yet the load was not carried in full (a full-speed stream, a
    /// request/response test, a paced load that fell short): waits between the sides, windows.
    Latency,
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Bound::Wire => f.write_str("wire"),
            Bound::Host => f.write_str("host"),
            Bound::Client => f.write_str("client"),
            Bound::HostCore(c) => write!(f, "host core {c}"),
            Bound::ClientCore(c) => write!(f, "client core {c}"),
            Bound::Backend(g) => write!(f, "backend {g}"),
            Bound::Latency => f.write_str("latency"),
        }
    }
}

impl FromStr for Bound {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let core = |rest: &str| rest.parse::<usize>().ok();
        Ok(match s {
            "wire" => Bound::Wire,
            "host" => Bound::Host,
            "client" => Bound::Client,
            "latency" => Bound::Latency,
            _ => match (
                s.strip_prefix("host core "),
                s.strip_prefix("client core "),
                s.strip_prefix("backend "),
            ) {
                (Some(c), _, _) if core(c).is_some() => Bound::HostCore(core(c).unwrap()),
                (_, Some(c), _) if core(c).is_some() => Bound::ClientCore(core(c).unwrap()),
                (_, _, Some(g)) if g.parse::<Role>().is_ok_and(|r| r.is_guest()) => {
                    Bound::Backend(g.parse()?)
                }
                _ => return Err(unknown("bound", s, "")),
            },
        })
    }
}

impl Serialize for Bound {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Bound {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// What a measured part of the machine is.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum PartKind {
    Guest,
    Host,
    Client,
    /// A vNIC backend (device model) process.
    Backend,
    /// vnetlab's own driver and meter.
    Driver,
    /// Other processes (outside the lab).
    Process,
    /// Kernel threads outside the lab (ksoftirqd, kworkers).
    Kernel,
    /// A wire end's threaded-NAPI kernel thread (its side says which end).
    Napi,
    /// Tasks outside the lab that may run on any core (their time on this side's cores).
    Unconfined,
    /// Kernel time no task was charged for (interrupts, softirqs outside a thread).
    Unattributed,
    /// A QEMU guest's vCPU threads: the guest's own CPU.
    Vcpu,
    /// A QEMU guest's device emulation: its main loop (the userspace NIC backend) and I/O threads.
    Emulation,
    /// A QEMU guest's vhost-net workers (in-kernel virtio backend).
    Vhost,
}

impl PartKind {
    /// Whether a part of this kind is an endpoint's own CPU (the process side of a sender or a
    /// receiver): a namespace endpoint's cgroup, or a QEMU guest's vCPUs.
    pub fn is_endpoint(self) -> bool {
        matches!(
            self,
            PartKind::Guest | PartKind::Host | PartKind::Client | PartKind::Vcpu
        )
    }
}

/// Who a measured part is: what it is, the side whose cores its time was spent on, and the lab
/// endpoint it belongs to (a guest's cgroup, vCPUs or vNIC backend; None for the driver, the
/// kernel and processes outside the lab). Parts are found by this, never by their display name.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PartId {
    pub kind: PartKind,
    pub side: Side,
    pub role: Option<Role>,
}

impl PartId {
    /// An endpoint's own part (a namespace's cgroup or a guest's vCPUs) on its own side.
    pub fn endpoint(kind: PartKind, role: Role) -> PartId {
        PartId {
            kind,
            side: role.side(),
            role: Some(role),
        }
    }

    /// A part that belongs to no endpoint (the driver, kernel threads, other processes).
    pub fn other(kind: PartKind, side: Side) -> PartId {
        PartId {
            kind,
            side,
            role: None,
        }
    }
}

/// What a lab interface (`vl<lab><suffix>`) is by its role, for names that outlive the lab (a
/// metric's part name): the wire's host or client end, the bridge, a guest's NIC or its port.
pub fn role_of_iface(name: &str) -> Option<String> {
    let rest = name.strip_prefix("vl")?;
    // The lab name is 1 to 6 of [a-z0-9] from a letter; the suffix is what follows it.
    (1..=6.min(rest.len())).rev().find_map(|n| {
        let (lab, suffix) = rest.split_at(n);
        let named = lab.starts_with(|c: char| c.is_ascii_lowercase())
            && lab
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        named.then_some(())?;
        let guest = |s: &str| {
            s.strip_prefix('g')
                .filter(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()))
                .map(str::to_string)
        };
        match suffix {
            "w" => Some("wire host end".into()),
            "c" => Some("wire client end".into()),
            "br" => Some("bridge".into()),
            s if s.ends_with('h') => guest(&s[..s.len() - 1]).map(|g| format!("g{g} port")),
            s => guest(s).map(|g| format!("g{g} NIC")),
        }
    })
}

/// A text with every lab interface name in it told by its role ("NAPI vlx1w" → "NAPI wire host end").
pub fn by_role(text: &str) -> String {
    text.split(' ')
        .map(|w| role_of_iface(w).unwrap_or_else(|| w.to_string()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lab_interface_is_told_by_its_role() {
        assert_eq!(by_role("NAPI vlx1w"), "NAPI wire host end");
        assert_eq!(by_role("NAPI vlx12c"), "NAPI wire client end");
        assert_eq!(role_of_iface("vlx1g1h").as_deref(), Some("g1 port"));
        assert_eq!(role_of_iface("vlag1g12").as_deref(), Some("g12 NIC"));
        assert_eq!(role_of_iface("vlx1br").as_deref(), Some("bridge"));
        assert_eq!(role_of_iface("eth0"), None);
        assert_eq!(by_role("ksoftirqd/1"), "ksoftirqd/1");
    }

    #[test]
    fn roles_and_senders_round_trip() {
        for r in [Role::Host, Role::Client, Role::Guest(1), Role::Guest(12)] {
            assert_eq!(r.to_string().parse::<Role>().unwrap(), r);
        }
        for bad in ["g0", "g01", "g", "x1", "g-1", "g1x", "guests"] {
            assert!(bad.parse::<Role>().is_err(), "{bad}");
        }
        assert_eq!("guests".parse::<Senders>().unwrap(), Senders::AllGuests);
        assert_eq!(
            "g3".parse::<Senders>().unwrap(),
            Senders::One(Role::Guest(3))
        );
        assert_eq!(Role::Guest(2).side(), Side::Host);
        assert_eq!(serde_json::to_string(&Role::Guest(7)).unwrap(), "\"g7\"");
        for b in [
            Bound::Wire,
            Bound::Host,
            Bound::HostCore(3),
            Bound::ClientCore(1),
            Bound::Backend(Role::Guest(2)),
            Bound::Latency,
        ] {
            assert_eq!(b.to_string().parse::<Bound>().unwrap(), b);
        }
        for s in ["running", "complete", "interrupted", "failed", "incomplete"] {
            assert_eq!(s.parse::<RunStatus>().unwrap().to_string(), s);
        }
    }

    #[test]
    fn test_names_parse_and_print() {
        assert_eq!("tcp_rr".parse::<TestKind>().unwrap(), TestKind::TcpRr);
        assert_eq!(TestKind::TcpMaerts.to_string(), "TCP_MAERTS");
        assert!("TCP_SENDFILE"
            .parse::<TestKind>()
            .unwrap_err()
            .to_string()
            .contains("TCP_STREAM"));
        assert!(!TestKind::TcpMaerts.initiator_sends());
        assert_eq!(TestKind::TcpStream.reversed(), Some(TestKind::TcpMaerts));
        assert_eq!(TestKind::TcpMaerts.reversed(), Some(TestKind::TcpStream));
        assert_eq!(TestKind::TcpRr.reversed(), None);
    }

    #[test]
    fn congestion_names_are_checked_before_they_reach_a_socket() {
        assert_eq!(Congestion::default().name(), "cubic");
        assert_eq!("bbr".parse::<Congestion>().unwrap().to_string(), "bbr");
        for bad in [
            "",
            "Cubic",
            "cu bic",
            "cubic\0",
            "a_very_long_name16",
            "../x",
        ] {
            assert!(bad.parse::<Congestion>().is_err(), "{bad:?}");
        }
        assert!(serde_json::from_str::<Congestion>("\"x;y\"").is_err());
        let c: Congestion = serde_json::from_str("\"reno\"").unwrap();
        assert_eq!(serde_json::to_string(&c).unwrap(), "\"reno\"");
    }
}
