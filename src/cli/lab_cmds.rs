//! The lab commands: up, down, status, exec, probe, cleanup.

use clap::Args;

use super::fail::{CmdResult, Fail};
use super::shared::{need_lab_root, need_root, print_json};
use crate::lab::owned::Lab;
use crate::lab::topology::{self, Topology, TopologyFile};
use crate::lab::{build, exec as lexec, folder, probe as lprobe, state, status as lstatus};
use crate::units::{Delay, Loss, Rate};
use crate::vocab::{Gro, Mode};

/// `--mode`: parsed as every mode is (an unknown one names the choices), with the values and
/// their help lines read from the datapath registry.
#[derive(Clone)]
struct Modes;

impl clap::builder::TypedValueParser for Modes {
    type Value = Mode;
    fn parse_ref(
        &self,
        _cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Mode, clap::Error> {
        value
            .to_str()
            .unwrap_or_default()
            .parse::<Mode>()
            .map_err(|e| clap::Error::raw(clap::error::ErrorKind::InvalidValue, format!("{e}\n")))
    }
    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(crate::lab::plan::datapath::all().map(|d| {
            clap::builder::PossibleValue::new(d.mode().name()).help(d.about())
        })))
    }
}

#[derive(Args)]
pub struct UpArgs {
    /// Lab name: 1–6 lowercase letters/digits [default: lab]
    #[arg(long)]
    name: Option<String>,
    /// Build a lab of more than 64 guests
    #[arg(long)]
    force: bool,
    /// Read the topology from a TOML file (same keys as these flags; see docs/labs.md)
    #[arg(long, short = 'f')]
    file: Option<String>,
    /// How guests' NICs reach the wire (the datapath) [default: bridge]
    #[arg(long, value_parser = Modes)]
    mode: Option<Mode>,
    /// Number of guests [default: 1]
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=9999))]
    guests: Option<u32>,
    /// MTU of every lab interface [default: 1500]
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(576..=9000))]
    mtu: Option<u32>,
    /// Where receive GRO runs: off, host (physical side), guest (virtual side), both [default: both]
    #[arg(long)]
    gro: Option<Gro>,
    /// TSO/GSO on the guests' and host ports: on or off [default: on]
    #[arg(long, value_parser = crate::units::parse_on_off)]
    tso: Option<bool>,
    /// Wire rate, e.g. 1gbit (paper 1's GNIC) or 10gbit [default: unshaped]
    #[arg(long)]
    wire_rate: Option<Rate>,
    /// One-way wire delay, e.g. 5ms
    #[arg(long)]
    wire_delay: Option<Delay>,
    /// Wire packet loss, e.g. 0.1%
    #[arg(long)]
    wire_loss: Option<Loss>,
    /// Segment to MTU frames at both wire ends (no TSO/GSO across the wire): on or off [default: on]
    #[arg(long, value_parser = crate::units::parse_on_off)]
    wire_segment: Option<bool>,
    /// Private IPv4 range for the lab [default: 10.213.0.0/16]
    #[arg(long)]
    subnet: Option<crate::lab::addr::Subnet>,
    /// Each guest and its backend on its own host core, round-robin over the host's cores
    #[arg(long)]
    pin: bool,
    /// The client's cores, e.g. 3 or 6-7 [default: the top ⌈ncpu/4⌉ cores]; it stands for another machine
    #[arg(long, value_name = "LIST")]
    client_cpus: Option<crate::units::CpuList>,
    /// The host's cores, e.g. 0-2 [default: every core the client does not have]
    #[arg(long, value_name = "LIST")]
    host_cpus: Option<crate::units::CpuList>,
    /// SR-IOV physical function to take VFs from (modes sriov and qemu-vfio: the host and client take VFs 0 and 1, each guest the next)
    #[arg(long)]
    pf: Option<String>,
    /// Software LRO in the paravirt backend toward the guest (paper 2's guest2): guest or off
    #[arg(long)]
    lro: Option<crate::lab::topology::LroPlace>,
    /// vCPUs of each QEMU guest (qemu-* modes) [default: 1]
    #[arg(long, allow_negative_numbers = true)]
    vcpus: Option<u32>,
    /// Memory of each QEMU guest, e.g. 256M or 1G [default: 256M]
    #[arg(long, value_parser = crate::lab::topology::parse_memory)]
    memory: Option<u32>,
    /// An existing interface of this machine, a real NIC to the client machine, becomes the
    /// wire's host end (its state is journaled and given back on `down`); needs --client
    #[arg(long, value_name = "IFACE")]
    uplink: Option<String>,
    /// Take the uplink even though this machine's default route leaves through it
    #[arg(long)]
    force_uplink: bool,
    /// The client machine beyond the uplink: its address (the lab's client address, e.g.
    /// 10.213.0.2) and the port of its `vnetlab serve` [default port: 12866]
    #[arg(long, value_name = "HOST[:PORT]")]
    client: Option<String>,
    /// The token the client machine's `vnetlab serve` printed (without it, only `test --peer
    /// iperf3` reaches the client)
    #[arg(long)]
    token: Option<String>,
    /// A file holding the token (its first line; not readable by others), as an alternative to
    /// --token, which other users see in `ps`; VNETLAB_TOKEN in the environment is a third way
    #[arg(long, value_name = "FILE", conflicts_with = "token")]
    token_file: Option<std::path::PathBuf>,
    /// Clear the lab's host cores (and the client's, where cores are left beyond both) of the
    /// host's other work while the lab lives: other cgroups' cpusets move off them and come back
    /// at `down` (see docs/shield.md); refused where user tasks sit in the root cgroup
    #[arg(long)]
    shield: bool,
    /// With --shield: move only this cgroup (a path under the cpuset hierarchy, e.g.
    /// system.slice); tasks in the root cgroup then stay where they are
    #[arg(long, value_name = "CGROUP", requires = "shield")]
    shield_root: Option<std::path::PathBuf>,
    /// With --shield: also move IRQs and other devices' RPS/XPS masks off the cores: every
    /// movable one (--shield-irqs), or only these devices' (--shield-irqs=eth1,eth2)
    #[arg(long, value_name = "DEVICES", num_args = 0..=1, require_equals = true, default_missing_value = "all", requires = "shield")]
    shield_irqs: Option<String>,
    /// Print the iproute2/tc/ethtool/nft commands instead of running them
    #[arg(long)]
    dry_run: bool,
    /// Print the lab record as JSON
    #[arg(long)]
    json: bool,
}

impl UpArgs {
    /// The flags as the file's keys: one door (`TopologyFile::into_topology`) for both, so a
    /// rule is written once.
    fn as_file(&self) -> Result<TopologyFile, Fail> {
        let token_given = self.token.is_some() || self.token_file.is_some();
        if token_given && self.client.is_none() {
            return Err(Fail::Input(
                "--token is the client machine's serve token: give --client HOST[:PORT] too".into(),
            ));
        }
        let wire = topology::WireFile {
            rate: self.wire_rate,
            delay: self.wire_delay,
            loss: self.wire_loss,
            segment: self.wire_segment,
        };
        Ok(TopologyFile {
            name: None,
            mode: self.mode,
            guests: self.guests,
            mtu: self.mtu,
            gro: self.gro,
            tso: self.tso,
            subnet: self.subnet,
            pin: self.pin.then_some(true),
            client_cpus: self.client_cpus.clone(),
            host_cpus: self.host_cpus.clone(),
            pf: self.pf.clone(),
            lro: self.lro,
            kind: None,
            vcpus: self.vcpus,
            memory: self.memory,
            uplink: self.uplink.clone(),
            client: self.client.clone(),
            token: match &self.client {
                Some(_) => super::shared::resolve_token(&self.token, &self.token_file)?,
                None => None,
            },
            wire: (!wire.is_empty()).then_some(wire),
        })
    }

    /// What --shield, --shield-root and --shield-irqs ask.
    fn shield(&self) -> Result<Option<crate::shield::Ask>, Fail> {
        use crate::shield::{Ask, Irqs};
        if !self.shield {
            return Ok(None);
        }
        let irqs = match self.shield_irqs.as_deref() {
            None => None,
            Some("all") => Some(Irqs::All),
            Some(list) => {
                let devs: Vec<String> = list.split(',').map(str::to_string).collect();
                let bad = devs.iter().find(|d| {
                    d.is_empty()
                        || d.len() > 15
                        || d.contains(|c: char| c == '/' || c.is_whitespace())
                });
                if devs.len() > 64 || bad.is_some() {
                    return Err(Fail::Input(format!(
                        "--shield-irqs={}: name up to 64 devices, comma-separated (e.g. eth1,eth2), or give --shield-irqs alone for all",
                        crate::text::clip(list)
                    )));
                }
                Some(Irqs::Devices(devs))
            }
        };
        Ok(Some(Ask {
            root: self.shield_root.clone(),
            irqs,
        }))
    }

    fn topology(&self) -> Result<Topology, Fail> {
        let flags = self.as_file()?;
        let mut t = match &self.file {
            Some(_) if !flags.is_empty() => {
                return Err(Fail::Input("--file describes the whole lab: put the other settings in the file (only --name may be given with it)".into()));
            }
            Some(f) => {
                let text =
                    crate::text::read_capped(std::path::Path::new(f), crate::text::MAX_FILE)?;
                TopologyFile::parse(&text, &crate::text::clip(f))?.into_topology()?
            }
            None => flags.into_topology()?,
        };
        if let Some(n) = &self.name {
            t.name = n.clone();
        }
        t.force_uplink = self.force_uplink;
        t.shield = self.shield()?;
        crate::lab::plan::validate(&t)?;
        Ok(t)
    }
}

/// One line on a guest's VM: device, acceleration (and why not KVM), size, boot, process.
fn vm_line(name: &str, vm: &lstatus::VmStatus) -> String {
    let i = &vm.info;
    let accel = match &i.why_not_kvm {
        Some(why) => format!("{} ({why}: the guest's CPU is emulated)", i.accel.name()),
        None => i.accel.name().to_string(),
    };
    let boot = i
        .boot_s
        .map(|s| format!("booted to agent-ready in {s:.1} s"))
        .unwrap_or_else(|| "not booted".into());
    let proc_ = match (vm.running, vm.pid) {
        (true, Some(p)) => format!("QEMU pid {p} running"),
        _ => format!("QEMU NOT running (console: {})", vm.console.display()),
    };
    format!(
        "{name} VM: {} under {accel}, {} vCPU(s), {} MiB; {boot}; {proc_}",
        i.mode, i.vcpus, i.memory_mib
    )
}

/// Past this many guests a lab is built only with --force: each is a namespace (and in userspace
/// modes a process), and a slip of a digit should not build hundreds.
const MANY_GUESTS: u32 = 64;

pub fn up(a: UpArgs) -> CmdResult {
    let t = a.topology()?;
    if t.guests > MANY_GUESTS && !a.force && !a.dry_run {
        return Err(Fail::Input(format!(
            "--guests {}: a lab of {} guests builds {} network namespaces; pass --force to build it (over {MANY_GUESTS} guests)",
            t.guests,
            t.guests,
            t.guests + 2
        )));
    }
    if a.dry_run {
        let p = build::prepare(&t)?;
        for line in crate::lab::plan::shell(&p.steps) {
            crate::outln!("{line}");
        }
        return Ok(());
    }
    need_lab_root("vnetlab up")?;
    crate::sys::signals::install();
    let r = Lab::up(&t, !a.json)?;
    if a.json {
        print_json(&r);
        return Ok(());
    }
    crate::outln!(
        "lab {} is up: mode {}, {} guest(s), subnet {}",
        t.name,
        t.mode,
        t.guests,
        t.subnet
    );
    for e in &r.endpoints {
        let place = match &e.remote {
            Some(_) => "(another machine)",
            None => e.netns.as_str(),
        };
        crate::outln!(
            "  {:<7} {:<16} {:<15} {}",
            e.role.to_string(),
            place,
            e.address.to_string(),
            e.iface
        );
    }
    crate::outln!("  cpus: {}", r.cpus.describe());
    for n in &r.notes {
        crate::outln!("  note: {n}");
    }
    if let Some(vm) = r.guests().find_map(|g| g.vm.as_ref()) {
        let boots: Vec<f64> = r.guests().filter_map(|g| g.vm.as_ref()?.boot_s).collect();
        let worst = boots.iter().cloned().fold(0.0, f64::max);
        crate::outln!(
            "  VMs: {} under {}{}; boot to agent-ready {worst:.1} s for the slowest of {}",
            vm.mode,
            vm.accel.name(),
            vm.why_not_kvm
                .as_ref()
                .map(|w| format!(" ({w}: the guests' CPU is emulated, so their figures are bound by emulation; device and host-side costs are real)"))
                .unwrap_or_default(),
            boots.len()
        );
        crate::outln!(
            "next: vnetlab status | vnetlab test --lab {} --from g1 --to client | vnetlab down {}",
            t.name,
            t.name
        );
        return Ok(());
    }
    crate::outln!(
        "next: vnetlab status | vnetlab exec --lab {} g1 -- CMD | vnetlab down {}",
        t.name,
        t.name
    );
    Ok(())
}

#[derive(Args)]
pub struct DownArgs {
    /// The lab to remove (default: the only lab)
    lab: Option<String>,
    /// Print what would be removed instead of removing it
    #[arg(long)]
    dry_run: bool,
}

pub fn down(a: DownArgs) -> CmdResult {
    let lab = state::resolve(a.lab.as_deref())?;
    if a.dry_run {
        for l in build::teardown_plan(&lab)? {
            crate::outln!("{l}");
        }
        return Ok(());
    }
    need_root("vnetlab down")?;
    if !folder::journal_path(&lab).exists() {
        build::teardown_plan(&lab)?;
    }
    let left = Lab::down(&lab)?;
    if !left.is_empty() {
        return Err(Fail::Partial(format!(
            "lab {lab} removed, but: {}",
            left.join("; ")
        )));
    }
    crate::errln!("lab {lab} removed");
    Ok(())
}

#[derive(Args)]
pub struct StatusArgs {
    /// Only this lab
    lab: Option<String>,
    /// One JSON document on stdout
    #[arg(long)]
    json: bool,
}

/// `vnetlab status`: every lab, its state and each object read back.
// Long on purpose: one printed section per field of a lab's status, in the order shown.
pub fn status(a: StatusArgs) -> CmdResult {
    let s = lstatus::status(a.lab.as_deref())?;
    if a.json {
        print_json(&s);
        return Ok(());
    }
    if s.labs.is_empty() && s.broken.is_empty() {
        crate::outln!("no labs (make one with `vnetlab up`)");
    }
    for l in &s.labs {
        let state = match (&l.damaged, l.complete) {
            (Some(d), _) => format!("DAMAGED: {d} (`vnetlab down {}` removes the rest)", l.name),
            (None, true) => "complete".into(),
            (None, false) => format!("INCOMPLETE (`vnetlab down {}` removes it)", l.name),
        };
        crate::outln!(
            "lab {}  mode {}  subnet {}  {state}  {}  cpu accounting: {}",
            l.name,
            l.mode,
            l.subnet,
            l.usage,
            l.cgroups
        );
        crate::outln!(
            "  {:<7} {:<15} {:<16} {:<13} {:>5} {:<5} {:<4} {:<4} {:<4} {}",
            "part",
            "namespace",
            "address",
            "interface",
            "mtu",
            "state",
            "gro",
            "tso",
            "gso",
            "host port / qdisc"
        );
        let row = |e: &lstatus::EndpointStatus| {
            let i = e.interface.as_ref();
            let off = |k: &str| {
                i.and_then(|i| i.offloads.get(k))
                    .map(|v| v.split(' ').next().unwrap_or("").to_string())
                    .unwrap_or("-".into())
            };
            let extra = match (&e.host_port, i.and_then(|i| i.qdisc.clone())) {
                (Some(p), _) => format!(
                    "{} gro {} tso {}",
                    p.name,
                    p.offloads.get("gro").map(String::as_str).unwrap_or("-"),
                    p.offloads.get("tso").map(String::as_str).unwrap_or("-")
                ),
                (None, Some(q)) => format!("qdisc {q}"),
                _ => String::new(),
            };
            crate::outln!(
                "  {:<7} {:<15} {:<16} {:<13} {:>5} {:<5} {:<4} {:<4} {:<4} {}",
                e.name,
                e.namespace,
                e.address,
                match (i, &e.vm) {
                    (Some(i), _) => i.name.as_str(),
                    (None, Some(_)) => "eth0 (in VM)",
                    (None, None) => "(missing)",
                },
                i.map(|i| i.mtu).unwrap_or(0),
                i.map(|i| i.state.as_str()).unwrap_or("-"),
                off("gro"),
                off("tso"),
                off("gso"),
                extra
            );
        };
        row(&l.host);
        match &l.client.remote {
            Some(r) => crate::outln!("  {:<7} {:<15} {:<16} {r}", "client", "-", l.client.address),
            None => row(&l.client),
        }
        for g in &l.guests {
            row(g);
        }
        for (g, vm) in l.guests.iter().filter_map(|g| Some((g, g.vm.as_ref()?))) {
            crate::outln!("  {}", vm_line(&g.name, vm));
        }
        for i in &l.host_interfaces {
            crate::outln!(
                "  host interface {} ({}): mtu {} gro {} tso {}{}",
                i.name,
                i.kind,
                i.mtu,
                i.offloads.get("gro").map(String::as_str).unwrap_or("-"),
                i.offloads.get("tso").map(String::as_str).unwrap_or("-"),
                i.qdisc
                    .as_ref()
                    .map(|q| format!(" qdisc {q}"))
                    .unwrap_or_default()
            );
        }
        crate::outln!("  cpus: {}", l.cpus.describe());
        for st in &l.steering {
            let napi: Vec<String> = st
                .napi_threads
                .iter()
                .map(|t| format!("{} on {}", t.pid, crate::units::CpuList(t.cpus.clone())))
                .collect();
            crate::outln!(
                "  wire end {} ({:?} side): rps {} xps {} threaded NAPI {}{} — {}",
                st.iface,
                st.side,
                st.rps_cpus.join(","),
                st.xps_cpus.join(","),
                if st.threaded { "on" } else { "off" },
                if napi.is_empty() {
                    String::new()
                } else {
                    format!(" (threads {})", napi.join(", "))
                },
                if st.as_planned {
                    "as planned"
                } else {
                    "NOT as planned: `vnetlab down` and `up` again"
                }
            );
        }
        for n in &l.notes {
            crate::outln!("  note: {n}");
        }
    }
    for b in &s.broken {
        crate::outln!("lab {b}: its record or journal cannot be read (an `up` interrupted before it was recorded?); `vnetlab cleanup` removes what its journal names, or says why it cannot");
    }
    Ok(())
}

#[derive(Args)]
pub struct ExecArgs {
    /// The lab (default: the only lab)
    #[arg(long)]
    lab: Option<String>,
    /// Where to run: g1…gN, client or host
    target: crate::vocab::Role,
    /// The command and its arguments, after `--`
    #[arg(last = true, required = true)]
    cmd: Vec<String>,
}

pub fn exec(a: ExecArgs) -> CmdResult {
    need_root("vnetlab exec")?;
    let lab = state::resolve(a.lab.as_deref())?;
    let r = state::load(&lab)?;
    let ep = r.endpoint(a.target)?;
    Err(Fail::Run(lexec::exec(ep, &a.cmd)))
}

#[derive(Args)]
pub struct ProbeArgs {
    /// The lab (default: the only lab)
    #[arg(long)]
    lab: Option<String>,
    /// From where (g1…, client, host); with TO. Without both: every guest ↔ client and g1 ↔ g2
    from: Option<crate::vocab::Role>,
    to: Option<crate::vocab::Role>,
    /// One JSON document on stdout
    #[arg(long)]
    json: bool,
}

pub fn probe(a: ProbeArgs) -> CmdResult {
    need_root("vnetlab probe")?;
    let lab = state::resolve(a.lab.as_deref())?;
    let r = state::load(&lab)?;
    let pairs = match (&a.from, &a.to) {
        (Some(f), Some(t)) => vec![(*f, *t)],
        (None, None) => lprobe::default_pairs(&r),
        _ => return Err(Fail::Input("give both FROM and TO, or neither".into())),
    };
    let mut results = Vec::new();
    for (f, t) in pairs {
        let (fe, te) = (r.endpoint(f)?, r.endpoint(t)?);
        results.push(lprobe::tcp(&r, fe, te));
    }
    let failed = results.iter().filter(|x| !x.ok).count();
    if a.json {
        print_json(&serde_json::json!({ "lab": lab, "probes": results }));
    } else {
        for x in &results {
            match &x.error {
                None => crate::outln!(
                    "{:>7} → {:<7} TCP ok   {:>7.3} ms  via {}",
                    x.from,
                    x.to,
                    x.ms,
                    x.target
                ),
                Some(e) => crate::outln!("{:>7} → {:<7} FAILED   {e}", x.from, x.to),
            }
        }
    }
    if failed > 0 {
        return Err(Fail::Run(format!(
            "{failed} of {} probes failed",
            results.len()
        )));
    }
    Ok(())
}

#[derive(Args)]
pub struct CleanupArgs {
    /// Print what would be removed instead of removing it
    #[arg(long)]
    dry_run: bool,
    /// Also remove this lab though it is in use or kept (repeatable)
    #[arg(long, value_name = "LAB")]
    force: Vec<String>,
}

/// `vnetlab cleanup`: removes the labs nobody uses any more (a run or `up` that died, an
/// interrupted build), leaves labs in use and labs made by `up` alone unless named with --force,
/// and removes vnetlab's shared cgroup folders once no lab is left.
pub fn cleanup(a: CleanupArgs) -> CmdResult {
    if !a.dry_run {
        need_root("vnetlab cleanup")?;
    }
    let labs = folder::labs();
    for f in &a.force {
        if !labs.contains(f) {
            return Err(Fail::Input(format!(
                "--force {}: there is no such lab{}",
                crate::text::clip(f),
                if labs.is_empty() {
                    String::new()
                } else {
                    format!(" (the labs are {})", labs.join(", "))
                }
            )));
        }
    }
    let (mut errors, mut notes) = (Vec::new(), Vec::new());
    let mut removed = 0;
    for lab in &labs {
        let entries = match crate::lab::journal::read(&folder::journal_path(lab), lab) {
            Ok(e) => e,
            Err(e) => {
                errors.push(e.to_string());
                continue;
            }
        };
        let forced = a.force.contains(lab);
        match crate::lab::journal::usage(&entries, crate::sys::alive) {
            crate::lab::journal::Usage::Owned { pid } if !forced => {
                crate::errln!("left lab {lab}: in use by pid {pid} (`vnetlab cleanup --force {lab}` removes it anyway)");
                continue;
            }
            crate::lab::journal::Usage::Kept if !forced => {
                crate::errln!(
                    "left lab {lab}: made by `vnetlab up`, it lives until `vnetlab down {lab}`"
                );
                continue;
            }
            _ => {}
        }
        if a.dry_run {
            for l in build::teardown_plan(lab)? {
                crate::outln!("{l}");
            }
            continue;
        }
        match Lab::down(lab) {
            Ok(left) => {
                removed += 1;
                crate::errln!("removed lab {lab}");
                notes.extend(left.into_iter().map(|l| format!("{lab}: {l}")));
            }
            Err(e) => errors.push(format!("{lab}: {e}")),
        }
    }
    if !a.dry_run {
        for d in crate::bench::crowd::remove_stale() {
            removed += 1;
            crate::errln!("removed a dead crowd's cgroup {}", d.display());
        }
    }
    if removed == 0 && errors.is_empty() && !a.dry_run {
        crate::errln!("nothing to remove");
    }
    let strays: Vec<String> = build::netns_list()
        .into_iter()
        .filter(|n| n.starts_with("vl"))
        .filter(|n| {
            !folder::labs()
                .iter()
                .any(|l| n.starts_with(&format!("vl{l}-")))
        })
        .collect();
    if !strays.is_empty() && !a.dry_run {
        crate::errln!("left alone (no journal names them): {}", strays.join(" "));
    }
    if !errors.is_empty() {
        return Err(Fail::Run(errors.join("; ")));
    }
    if !notes.is_empty() {
        return Err(Fail::Partial(format!("removed, but: {}", notes.join("; "))));
    }
    Ok(())
}
