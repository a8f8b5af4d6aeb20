//! `--uplink IFACE`: an existing interface of this machine (a real NIC to a client on another
//! machine) becomes the lab's wire, as `--pf` lends a PF. Before anything changes, who it is (its
//! index and hardware address) and everything a lab or a move between namespaces can change are
//! read and journaled: MTU, queue length, up or down, every address with its flags, every route
//! through it in every table, its root and ingress qdiscs with their handles, its changeable
//! offloads, ring sizes and receive/transmit steering masks. `down` (and `cleanup` after a crash)
//! moves it back only from the lab's own namespace, or finds it by that identity, and puts every
//! setting back; an uplink that is gone is said to be gone, and the rest of the lab still goes.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::process::Command;

use super::hostcmd::{self, HostCmd, IpCmd};
use super::Error;

/// An uplink as it was before the lab took it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct UplinkState {
    /// Who it is: its index in this machine's namespace and its hardware address.
    pub ifindex: u32,
    pub mac: String,
    pub mtu: u32,
    pub up: bool,
    pub txqlen: Option<u32>,
    /// Every address but the kernel's own (IPv6 link-local and router-advertised), as the arguments of
    /// `ip addr add … dev IFACE`, flags included (nodad, noprefixroute, …).
    pub addrs: Vec<Vec<String>>,
    /// Every route through it in every table but those the kernel makes for its addresses, as
    /// the arguments of `ip route replace … dev IFACE`.
    pub routes: Vec<Vec<String>>,
    /// Its root and ingress (or clsact) qdiscs as the arguments of `tc qdisc add dev IFACE …`,
    /// with their handles; the kernel's defaults are not listed (they come back by themselves).
    pub qdiscs: Vec<Vec<String>>,
    /// The offloads that can be changed (`ethtool -k`, not fixed): feature → on.
    pub features: BTreeMap<String, bool>,
    /// Current ring sizes (`ethtool -g`): rx, tx, rx-mini, rx-jumbo.
    pub rings: BTreeMap<String, u32>,
    /// Receive and transmit steering masks per queue (queues/rx-N/rps_cpus, tx-N/xps_cpus).
    pub masks: BTreeMap<String, String>,
    /// Its per-device sysctls (`net/ipv4/conf/IFACE/*`, `net/ipv6/conf/IFACE/*`: rp_filter,
    /// accept_ra, arp_ignore, forwarding, …), which a move between namespaces resets.
    #[serde(default)]
    pub sysctls: BTreeMap<String, String>,
    /// Its permanent neighbour entries, as the arguments of `ip neigh replace … dev IFACE`.
    #[serde(default)]
    pub neighbours: Vec<Vec<String>>,
}

fn ip_json(args: &[&str]) -> Result<serde_json::Value, Error> {
    let out = hostcmd::read(args)?;
    serde_json::from_str(&out)
        .map_err(|e| Error::Failed(format!("cannot read `{}`: {e}", args.join(" "))))
}

/// Whether `name` may be the uplink: it exists in this (the root) namespace, may move between
/// namespaces (a bridge may not), carries no default route (unless `force`), is no bridge's or
/// bond's port and has no devices stacked on it.
pub fn check(name: &str, force: bool) -> Result<(), Error> {
    super::names::check_uplink_name(name)?;
    let link = ip_json(&["ip", "-j", "-d", "link", "show", "dev", name]).map_err(|_| {
        Error::Input(format!(
            "--uplink {name}: no such interface in this machine's namespace"
        ))
    })?;
    let l = &link[0];
    if let Some(m) = l["master"].as_str() {
        return Err(Error::Input(format!(
            "--uplink {name}: it is a port of {m}: give vnetlab a free interface (take it out of {m} first)"
        )));
    }
    if let Some(kind) = l["linkinfo"]["info_kind"].as_str() {
        if matches!(kind, "bridge" | "bond" | "team" | "vrf") {
            return Err(Error::Input(format!(
                "--uplink {name}: it is a {kind}, which cannot leave this machine's namespace: give vnetlab a NIC (or a veth) instead"
            )));
        }
    }
    let k = hostcmd::read(&["ethtool", "-k", name]).unwrap_or_default();
    if hostcmd::features(&k)
        .get("netns-local")
        .is_some_and(|(on, _)| *on)
    {
        return Err(Error::Input(format!(
            "--uplink {name}: the kernel keeps it in this namespace (netns-local): give vnetlab another interface"
        )));
    }
    let tc = ip_json(&["tc", "-j", "qdisc", "show", "dev", name]).unwrap_or_default();
    if let Some(kind) = qdisc_refused(&tc) {
        return Err(Error::Input(format!(
            "--uplink {name}: its root qdisc is {kind}, whose settings vnetlab cannot give back whole ({} it can): remove it (`tc qdisc del dev {name} root`) or use one of those",
            GIVEN_BACK.join(", ")
        )));
    }
    let lost = losses(name);
    if !lost.is_empty() {
        return Err(Error::Input(format!(
            "--uplink {name}: it has {}, which vnetlab cannot give back whole after the lab: remove them first (and put them back after), or give vnetlab another interface",
            lost.join(" and ")
        )));
    }
    if let Some(u) = uppers(name).first() {
        return Err(Error::Input(format!(
            "--uplink {name}: {u} is stacked on it (a VLAN, macvlan or bond): give vnetlab a free interface"
        )));
    }
    let routes = ip_json(&["ip", "-j", "route", "show", "default"])?;
    let default = routes
        .as_array()
        .into_iter()
        .flatten()
        .any(|r| r["dev"].as_str() == Some(name));
    if default && !force {
        return Err(Error::Input(format!(
            "--uplink {name}: this machine's default route leaves through it, and the lab would take it away (you would lose this machine's network): pick another interface, or add --force-uplink if that is meant"
        )));
    }
    Ok(())
}

/// The devices stacked on `name` (its `upper_*` links in sysfs).
fn uppers(name: &str) -> Vec<String> {
    std::fs::read_dir(format!("/sys/class/net/{name}"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_prefix("upper_")
                .map(str::to_string)
        })
        .collect()
}

/// Reads who the uplink is and everything a lab (or a move) can change, before it changes any.
pub fn read_state(name: &str) -> Result<UplinkState, Error> {
    let link = ip_json(&["ip", "-j", "-d", "link", "show", "dev", name])?;
    let l = &link[0];
    let up = l["flags"]
        .as_array()
        .is_some_and(|f| f.iter().any(|x| x == "UP"));
    let k = hostcmd::read(&["ethtool", "-k", name]).unwrap_or_default();
    let g = hostcmd::read(&["ethtool", "-g", name]).unwrap_or_default();
    Ok(UplinkState {
        ifindex: l["ifindex"].as_u64().unwrap_or(0) as u32,
        mac: l["address"].as_str().unwrap_or_default().to_string(),
        mtu: l["mtu"].as_u64().unwrap_or(1500) as u32,
        up,
        txqlen: l["txqlen"].as_u64().map(|q| q as u32),
        addrs: addr_args(&ip_json(&["ip", "-j", "addr", "show", "dev", name])?),
        routes: route_args(&routes_of(name)?),
        qdiscs: qdisc_args(
            &ip_json(&["tc", "-j", "qdisc", "show", "dev", name]).unwrap_or_default(),
        ),
        features: changeable(&k),
        rings: rings(&g),
        masks: masks(name),
        sysctls: sysctls(name),
        neighbours: neighbour_args(name),
    })
}

/// The writable per-device sysctls of `name`, by their path under /proc/sys/net.
fn sysctls(name: &str) -> BTreeMap<String, String> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = BTreeMap::new();
    for fam in ["ipv4", "ipv6"] {
        let dir = std::path::Path::new("/proc/sys/net")
            .join(fam)
            .join("conf")
            .join(name);
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let writable = e
                .metadata()
                .is_ok_and(|m| m.permissions().mode() & 0o200 != 0);
            let key = format!("{fam}/conf/{name}/{}", e.file_name().to_string_lossy());
            if let (true, Ok(v)) = (writable, std::fs::read_to_string(e.path())) {
                out.insert(key, v.trim().to_string());
            }
        }
    }
    out
}

/// `ip neigh replace` arguments of each permanent neighbour entry on `name`, IPv4 and IPv6.
fn neighbour_args(name: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for fam in ["-4", "-6"] {
        let j = ip_json(&[
            "ip",
            fam,
            "-j",
            "neigh",
            "show",
            "dev",
            name,
            "nud",
            "permanent",
        ])
        .unwrap_or_default();
        for n in j.as_array().into_iter().flatten() {
            if let (Some(dst), Some(ll)) = (n["dst"].as_str(), n["lladdr"].as_str()) {
                out.push(
                    [dst, "lladdr", ll, "nud", "permanent"]
                        .map(str::to_string)
                        .to_vec(),
                );
            }
        }
    }
    out
}

/// What a lab could not give back whole, read before it takes the uplink: tc filters on its
/// ingress, egress or root (a qdisc comes back; its filters do not), an XDP program.
fn losses(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for at in ["ingress", "egress", "root"] {
        let f = ip_json(&["tc", "-j", "filter", "show", "dev", name, at]).unwrap_or_default();
        // One filter is several entries (a u32 table and its keys): count its priorities. Asked
        // for egress or root, tc lists an ingress qdisc's filters again, marked: left out.
        let prefs: std::collections::BTreeSet<u64> = f
            .as_array()
            .into_iter()
            .flatten()
            .filter(|x| x["kind"].is_string() && (at == "ingress" || x["ingress"] != true))
            .filter_map(|x| x["pref"].as_u64())
            .collect();
        if !prefs.is_empty() {
            out.push(format!("{} tc filter(s) at its {at}", prefs.len()));
        }
    }
    let l = ip_json(&["ip", "-j", "-d", "link", "show", "dev", name]).unwrap_or_default();
    if l[0].get("xdp").is_some() {
        out.push("an XDP program".into());
    }
    out
}

/// Every route through `name`, IPv4 and IPv6, in every table.
fn routes_of(name: &str) -> Result<Vec<serde_json::Value>, Error> {
    let mut all = Vec::new();
    for fam in ["-4", "-6"] {
        let r = ip_json(&[
            "ip", fam, "-j", "route", "show", "table", "all", "dev", name,
        ])?;
        all.extend(r.as_array().cloned().unwrap_or_default());
    }
    Ok(all)
}

/// `ip addr add` arguments of each address a person (not the kernel) gave it.
pub fn addr_args(addr_json: &serde_json::Value) -> Vec<Vec<String>> {
    let infos = addr_json[0]["addr_info"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    infos
        .iter()
        // An IPv6 address with a lifetime came from a router advertisement and comes back
        // with the next one; an IPv4 one was given (by a person or DHCP) and is put back.
        .filter(|a| !(a["family"] == "inet6" && a["dynamic"] == true))
        .filter(|a| !(a["family"] == "inet6" && a["scope"] == "link"))
        .filter_map(|a| {
            let mut v = vec![format!(
                "{}/{}",
                a["local"].as_str()?,
                a["prefixlen"].as_u64()?
            )];
            let mut opt = |key: &str, arg: &str| {
                if let Some(x) = a[key].as_str() {
                    v.extend([arg.to_string(), x.to_string()]);
                }
            };
            opt("address", "peer");
            opt("broadcast", "broadcast");
            opt("scope", "scope");
            opt("label", "label");
            for flag in ["nodad", "noprefixroute", "mngtmpaddr", "home", "optimistic"] {
                if a[flag] == true {
                    v.push(flag.to_string());
                }
            }
            // An address a person gave a lifetime keeps what is left of it (forever: none).
            const FOREVER: u64 = 4_294_967_295;
            for (key, arg) in [
                ("valid_life_time", "valid_lft"),
                ("preferred_life_time", "preferred_lft"),
            ] {
                if let Some(t) = a[key].as_u64().filter(|t| *t < FOREVER) {
                    v.extend([arg.to_string(), t.to_string()]);
                }
            }
            Some(v)
        })
        .collect()
}

/// `ip route replace` arguments of each route a person (not the kernel) gave it: the kernel's
/// own (for an address: proto kernel, the local table) come back with the addresses.
pub fn route_args(routes: &[serde_json::Value]) -> Vec<Vec<String>> {
    routes
        .iter()
        .filter(|r| r["protocol"] != "kernel" && r["table"] != "local")
        .filter(|r| {
            !matches!(
                r["type"].as_str(),
                Some("local" | "broadcast" | "multicast")
            )
        })
        .filter_map(|r| {
            let mut v = Vec::new();
            if let Some(t) = r["type"].as_str().filter(|t| *t != "unicast") {
                v.push(t.to_string());
            }
            v.push(r["dst"].as_str()?.to_string());
            let mut opt = |key: &str, arg: &str| match &r[key] {
                serde_json::Value::String(x) => v.extend([arg.to_string(), x.clone()]),
                serde_json::Value::Number(n) => v.extend([arg.to_string(), n.to_string()]),
                _ => {}
            };
            opt("gateway", "via");
            opt("table", "table");
            opt("protocol", "proto");
            opt("scope", "scope");
            opt("prefsrc", "src");
            opt("metric", "metric");
            if r["flags"]
                .as_array()
                .is_some_and(|f| f.iter().any(|x| x == "onlink"))
            {
                v.push("onlink".into());
            }
            Some(v)
        })
        .collect()
}

/// `tc qdisc add` arguments of its root and ingress/clsact qdiscs, handles and options as `tc`
/// prints them; the defaults a device gets back by itself (handle 0: at the root, mq's
/// children) are not listed.
pub fn qdisc_args(tc_json: &serde_json::Value) -> Vec<Vec<String>> {
    tc_json
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|q| {
            let kind = q["kind"].as_str()?;
            let handle = q["handle"].as_str()?;
            let at = match (q["root"] == true, kind) {
                (_, "ingress" | "clsact") => kind.to_string(),
                (true, _) if handle == "0:" => return None,
                (true, _) => "root".to_string(),
                _ => return None,
            };
            let mut v = vec![at.clone(), "handle".into(), handle.into()];
            if at == "root" {
                v.push(kind.into());
                v.extend(qdisc_options(kind, &q["options"]));
            }
            Some(v)
        })
        .collect()
}

/// The root qdisc kinds whose settings vnetlab reads and gives back whole.
const GIVEN_BACK: [&str; 3] = ["pfifo", "bfifo", "fq_codel"];

/// The options of a root qdisc, as `tc qdisc add` takes them (`tc -j` prints times in µs and
/// sizes in bytes).
fn qdisc_options(kind: &str, o: &serde_json::Value) -> Vec<String> {
    let mut v = Vec::new();
    let mut num = |k: &str, arg: &str, unit: &str| {
        if let Some(x) = o[k].as_u64() {
            v.extend([arg.to_string(), format!("{x}{unit}")]);
        }
    };
    match kind {
        "pfifo" | "bfifo" => num("limit", "limit", ""),
        "fq_codel" => {
            num("limit", "limit", "");
            num("flows", "flows", "");
            num("quantum", "quantum", "");
            num("target", "target", "us");
            num("interval", "interval", "us");
            num("memory_limit", "memory_limit", "b");
            num("drop_batch", "drop_batch", "");
            if o["ecn"] == true {
                v.push("ecn".into());
            }
        }
        _ => {}
    }
    v
}

/// Why the uplink's root qdisc could not be given back whole, if so: a kind other than the
/// kernel's default or one of `GIVEN_BACK`.
fn qdisc_refused(tc_json: &serde_json::Value) -> Option<String> {
    qdisc_args(tc_json)
        .into_iter()
        .filter(|q| q[0] == "root")
        .find_map(|q| (!GIVEN_BACK.contains(&q[3].as_str())).then(|| q[3].clone()))
}

/// The features `ethtool -k` shows that are not fixed: feature → on.
fn changeable(ethtool_k: &str) -> BTreeMap<String, bool> {
    hostcmd::features(ethtool_k)
        .into_iter()
        .filter(|(_, (_, fixed))| !fixed)
        .map(|(f, (on, _))| (f, on))
        .collect()
}

/// The current ring sizes from `ethtool -g` (the section after "Current hardware settings").
fn rings(ethtool_g: &str) -> BTreeMap<String, u32> {
    let current = ethtool_g
        .split("Current hardware settings:")
        .nth(1)
        .unwrap_or_default();
    current
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            let key = match k.trim() {
                "RX" => "rx",
                "RX Mini" => "rx-mini",
                "RX Jumbo" => "rx-jumbo",
                "TX" => "tx",
                _ => return None,
            };
            Some((key.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

/// Each queue's steering mask file under /sys/class/net/NAME/queues and its content.
fn masks(name: &str) -> BTreeMap<String, String> {
    let dir = std::path::Path::new("/sys/class/net")
        .join(name)
        .join("queues");
    let mut out = BTreeMap::new();
    for q in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let qn = q.file_name().to_string_lossy().to_string();
        let file = if qn.starts_with("rx-") {
            "rps_cpus"
        } else {
            "xps_cpus"
        };
        if let Ok(m) = std::fs::read_to_string(q.path().join(file)) {
            out.insert(format!("{qn}/{file}"), m.trim().to_string());
        }
    }
    out
}

/// Runs a command in the root namespace; one line of what failed.
fn run(argv: &[&str]) -> Result<(), Error> {
    let mut c = Command::new(argv[0]);
    c.args(&argv[1..]);
    let out = hostcmd::run_child(&mut c, None, hostcmd::TIMEOUT)?;
    if out.status != 0 {
        return Err(Error::Failed(format!(
            "`{}` failed: {}",
            argv.join(" "),
            hostcmd::one_line(&out.stderr)
        )));
    }
    Ok(())
}

/// The index and hardware address of `name` in namespace `netns` (None: this machine's).
fn who(name: &str, netns: Option<&str>) -> Option<(u32, String)> {
    let mut argv = vec!["ip"];
    if let Some(n) = netns {
        argv.extend(["-n", n]);
    }
    argv.extend(["-j", "link", "show", "dev", name]);
    let l = ip_json(&argv).ok()?;
    let l = &l[0];
    Some((
        l["ifindex"].as_u64()? as u32,
        l["address"].as_str()?.to_string(),
    ))
}

/// What giving the uplink back found.
#[derive(Debug, PartialEq)]
pub enum GivenBack {
    /// Moved back from the lab's namespace and every setting put back.
    Whole,
    /// It was back already (its namespace went); found by its identity, its settings put back.
    Settings,
    /// Never moved into the lab (the build stopped before): nothing to give back.
    NeverTaken,
    /// Nowhere to be found by its identity: said, and the rest of the lab still goes.
    Gone(String),
}

/// Gives the uplink back: from the lab's namespace `netns` (which the caller has checked is the
/// lab's own, `lab_ns`) if it is there with its hardware address, then every setting of
/// `before` put back; or, if `moved` says the lab had it and it is back in this machine's
/// namespace already, found there by its index and hardware address. Never by its name alone.
pub fn give_back(
    name: &str,
    netns: &str,
    lab_ns: bool,
    moved: bool,
    before: &UplinkState,
) -> Result<GivenBack, Error> {
    let in_lab = lab_ns && who(name, Some(netns)).is_some_and(|(_, mac)| mac == before.mac);
    if in_lab {
        HostCmd::ip(
            Some(netns),
            vec![IpCmd::ToNetns {
                dev: name.into(),
                netns: "1".into(),
            }],
        )
        .run()?;
        return match who(name, None) {
            Some((_, mac)) if mac == before.mac => restore(name, before).map(|_| GivenBack::Whole),
            _ => Ok(GivenBack::Gone(format!(
                "the uplink {name} left the lab's namespace and then was not in this machine's (unplugged, or its peer's namespace went): nothing to give back"
            ))),
        };
    }
    if !moved {
        return Ok(GivenBack::NeverTaken);
    }
    match who(name, None) {
        Some((i, mac)) if i == before.ifindex && mac == before.mac => {
            restore(name, before).map(|_| GivenBack::Settings)
        }
        Some(_) => Ok(GivenBack::Gone(format!(
            "an interface named {name} is here, but not the uplink the lab took (index {}, {}): left as it is",
            before.ifindex, before.mac
        ))),
        None => Ok(GivenBack::Gone(format!(
            "the uplink {name} is neither in the lab's namespace nor in this machine's (unplugged, or its peer's namespace went): nothing to give back"
        ))),
    }
}

/// Puts back each setting of `before` on `name` (in the root namespace), down first, up last.
fn restore(name: &str, s: &UplinkState) -> Result<(), Error> {
    run(&["ip", "link", "set", "dev", name, "down"])?;
    let mtu = s.mtu.to_string();
    run(&["ip", "link", "set", "dev", name, "mtu", &mtu])?;
    if let Some(q) = s.txqlen {
        run(&[
            "ip",
            "link",
            "set",
            "dev",
            name,
            "txqueuelen",
            &q.to_string(),
        ])?;
    }
    restore_offloads(name, s);
    restore_qdiscs(name, s)?;
    for (file, mask) in &s.masks {
        let p = std::path::Path::new("/sys/class/net")
            .join(name)
            .join("queues")
            .join(file);
        let _ = std::fs::write(p, mask);
    }
    restore_sysctls(s);
    run(&["ip", "addr", "flush", "dev", name, "scope", "global"])?;
    for a in &s.addrs {
        let mut argv = vec!["ip", "addr", "add"];
        argv.extend(a.iter().map(String::as_str));
        argv.extend(["dev", name]);
        run(&argv)?;
    }
    if s.up {
        run(&["ip", "link", "set", "dev", name, "up"])?;
    }
    // Routes need their addresses and the link up (a gateway must be reachable).
    for r in &s.routes {
        let mut argv = vec!["ip", "route", "replace"];
        argv.extend(r.iter().map(String::as_str));
        argv.extend(["dev", name]);
        run(&argv)?;
    }
    for n in &s.neighbours {
        let mut argv = vec!["ip", "neigh", "replace"];
        argv.extend(n.iter().map(String::as_str));
        argv.extend(["dev", name]);
        run(&argv)?;
    }
    Ok(())
}

/// The per-device sysctls as they were: IPv6 switched on or off first (the others of IPv6 take
/// no writes while it is off), each only where it differs now.
fn restore_sysctls(s: &UplinkState) {
    let first = |k: &&String| !k.ends_with("/disable_ipv6");
    let mut keys: Vec<&String> = s.sysctls.keys().collect();
    keys.sort_by_key(|k| first(k));
    for k in keys {
        let p = std::path::Path::new("/proc/sys/net").join(k);
        let v = &s.sysctls[k];
        if std::fs::read_to_string(&p).is_ok_and(|now| now.trim() != v) {
            let _ = std::fs::write(&p, v);
        }
    }
}

/// Offloads and ring sizes as they were; what the driver refuses now is left (it was changeable).
fn restore_offloads(name: &str, s: &UplinkState) {
    let now = changeable(&hostcmd::read(&["ethtool", "-k", name]).unwrap_or_default());
    for (f, &on) in &s.features {
        if now.get(f).is_some_and(|&n| n != on) {
            let _ = run(&["ethtool", "-K", name, f, if on { "on" } else { "off" }]);
        }
    }
    let now = rings(&hostcmd::read(&["ethtool", "-g", name]).unwrap_or_default());
    for (r, &n) in &s.rings {
        if now.get(r).is_some_and(|&x| x != n) {
            let _ = run(&["ethtool", "-G", name, r, &n.to_string()]);
        }
    }
}

/// The root and ingress qdiscs as they were, with their handles.
fn restore_qdiscs(name: &str, s: &UplinkState) -> Result<(), Error> {
    let now = qdisc_args(&ip_json(&["tc", "-j", "qdisc", "show", "dev", name]).unwrap_or_default());
    for q in now.iter().filter(|q| !s.qdiscs.contains(q)) {
        let at = if q[0] == "root" { "root" } else { "ingress" };
        let _ = run(&["tc", "qdisc", "del", "dev", name, at]);
    }
    for q in s.qdiscs.iter().filter(|q| !now.contains(q)) {
        let mut argv = vec!["tc", "qdisc", "replace", "dev", name];
        argv.extend(q.iter().map(String::as_str));
        run(&argv)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_uplink_state_round_trips_through_the_journal() {
        let s = UplinkState {
            ifindex: 7,
            mac: "02:00:00:00:00:07".into(),
            mtu: 9000,
            up: true,
            txqlen: Some(500),
            addrs: vec![vec!["fd00::7/64".into(), "nodad".into()]],
            routes: vec![vec![
                "198.51.100.0/24".into(),
                "via".into(),
                "192.0.2.1".into(),
            ]],
            qdiscs: vec![vec!["ingress".into(), "handle".into(), "ffff:".into()]],
            features: [("gro".to_string(), true)].into(),
            rings: [("rx".to_string(), 256)].into(),
            masks: [("rx-0/rps_cpus".to_string(), "1".to_string())].into(),
            sysctls: [("ipv4/conf/x/rp_filter".to_string(), "2".to_string())].into(),
            neighbours: vec![[
                "192.0.2.99",
                "lladdr",
                "02:00:00:00:00:99",
                "nud",
                "permanent",
            ]
            .map(str::to_string)
            .to_vec()],
        };
        let back: UplinkState = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn addresses_keep_their_flags_and_the_kernels_own_are_left_to_it() {
        let j = json!([{"addr_info": [
            {"family": "inet", "local": "192.0.2.7", "prefixlen": 24, "broadcast": "192.0.2.255", "scope": "global", "label": "vlu"},
            {"family": "inet6", "local": "fd00::7", "prefixlen": 64, "scope": "global", "nodad": true, "noprefixroute": true},
            {"family": "inet6", "local": "fe80::1", "prefixlen": 64, "scope": "link"},
            {"family": "inet6", "local": "2001:db8::9", "prefixlen": 64, "scope": "global", "dynamic": true},
            {"family": "inet", "local": "192.0.2.8", "prefixlen": 24, "scope": "global", "dynamic": true,
             "valid_life_time": 3590, "preferred_life_time": 1790}
        ]}]);
        let a = addr_args(&j);
        assert_eq!(a.len(), 3);
        assert_eq!(
            a[2],
            [
                "192.0.2.8/24",
                "scope",
                "global",
                "valid_lft",
                "3590",
                "preferred_lft",
                "1790"
            ]
        );
        assert_eq!(
            a[0],
            [
                "192.0.2.7/24",
                "broadcast",
                "192.0.2.255",
                "scope",
                "global",
                "label",
                "vlu"
            ]
        );
        assert_eq!(
            a[1],
            ["fd00::7/64", "scope", "global", "nodad", "noprefixroute"]
        );
    }

    #[test]
    fn routes_of_every_table_are_kept_and_the_kernels_are_not() {
        let r = vec![
            json!({"dst": "198.51.100.0/24", "gateway": "192.0.2.1", "table": "100", "protocol": "static", "metric": 5, "flags": ["onlink"]}),
            json!({"dst": "192.0.2.0/24", "protocol": "kernel", "scope": "link", "prefsrc": "192.0.2.7", "flags": []}),
            json!({"type": "local", "dst": "192.0.2.7", "table": "local", "protocol": "kernel", "flags": []}),
            json!({"type": "blackhole", "dst": "203.0.113.0/24", "flags": []}),
        ];
        let a = route_args(&r);
        assert_eq!(a.len(), 2);
        assert_eq!(
            a[0],
            [
                "198.51.100.0/24",
                "via",
                "192.0.2.1",
                "table",
                "100",
                "proto",
                "static",
                "metric",
                "5",
                "onlink"
            ]
        );
        assert_eq!(a[1], ["blackhole", "203.0.113.0/24"]);
    }

    #[test]
    fn qdiscs_keep_their_handles_and_defaults_are_left() {
        let q = json!([
            {"kind": "pfifo", "handle": "8001:", "root": true, "options": {"limit": 500}},
            {"kind": "ingress", "handle": "ffff:", "parent": "ffff:fff1", "options": {}},
            {"kind": "fq_codel", "handle": "0:", "root": true, "options": {"limit": 10240}}
        ]);
        let a = qdisc_args(&q);
        assert_eq!(a[0], ["root", "handle", "8001:", "pfifo", "limit", "500"]);
        assert_eq!(a[1], ["ingress", "handle", "ffff:"]);
        assert_eq!(a.len(), 2, "the default root qdisc comes back by itself");
        assert_eq!(qdisc_refused(&q), None);
        let tbf = json!([{"kind": "tbf", "handle": "1:", "root": true, "options": {}}]);
        assert_eq!(qdisc_refused(&tbf).as_deref(), Some("tbf"));
    }

    #[test]
    fn ring_sizes_are_read_from_the_current_settings() {
        let g = "Ring parameters for x:\nPre-set maximums:\nRX:\t4096\nTX:\t4096\nCurrent hardware settings:\nRX:\t256\nRX Mini:\tn/a\nTX:\t512\n";
        let r = rings(g);
        assert_eq!(r.get("rx"), Some(&256));
        assert_eq!(r.get("tx"), Some(&512));
        assert_eq!(r.len(), 2);
    }
}
